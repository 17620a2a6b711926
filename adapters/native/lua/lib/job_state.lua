-- job_state finds job id of a queue whose keys are k (jobs, active,
-- delayed, failed, completed): it returns the job's state ('active',
-- 'delayed', 'failed', 'completed', or 'waiting' for a job in none of those
-- sets, which is on the due or the wait list) and its record, or nil when
-- the queue has no such job.
local function job_state(k, id)
  local rec = redis.call('HGET', k.jobs, id)
  if not rec then
    return nil
  end
  if redis.call('ZSCORE', k.active, id) then
    return 'active', rec
  end
  if redis.call('ZSCORE', k.delayed, id) then
    return 'delayed', rec
  end
  if redis.call('ZSCORE', k.failed, id) then
    return 'failed', rec
  end
  if redis.call('ZSCORE', k.completed, id) then
    return 'completed', rec
  end
  return 'waiting', rec
end
