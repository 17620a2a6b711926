-- delete: an operator removes a job that is not running, record and all:
-- from the wait or due list, the delayed set, or the failed or completed
-- set.
-- KEYS: 1 jobs, 2 wait, 3 due, 4 active, 5 delayed, 6 failed, 7 completed
-- ARGV: 1 id
-- Returns {1, state it was in} deleted; {-2} unknown job; {-5, 'active'}
-- the job is running (cancel it instead).
--
-- include: job_state
local id = ARGV[1]
local state = job_state(id)
if not state then
  return {-2}
end
if state == 'active' then
  return {-5, state}
end
if state == 'delayed' then
  redis.call('ZREM', KEYS[5], id)
elseif state == 'failed' then
  redis.call('ZREM', KEYS[6], id)
elseif state == 'completed' then
  redis.call('ZREM', KEYS[7], id)
elseif redis.call('LREM', KEYS[3], 1, id) == 0 then
  redis.call('LREM', KEYS[2], 1, id)
end
redis.call('HDEL', KEYS[1], id)
return {1, state}
