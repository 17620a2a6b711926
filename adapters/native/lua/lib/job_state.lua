-- job_state finds job id of the queue whose keys the script was given in
-- the operators' layout (KEYS 1 jobs, 4 active, 5 delayed, 6 failed,
-- 7 completed; 2 and 3 are the script's own): it returns the job's state
-- ('active', 'delayed', 'failed', 'completed', or 'waiting' for a job in
-- none of those sets, which is on the due or the wait list) and its
-- record, or nil when the queue has no such job.
local function job_state(id)
  local rec = redis.call('HGET', KEYS[1], id)
  if not rec then
    return nil
  end
  for i, state in ipairs({'active', 'delayed', 'failed', 'completed'}) do
    if redis.call('ZSCORE', KEYS[3 + i], id) then
      return state, rec
    end
  end
  return 'waiting', rec
end
