-- delete: an operator removes a job that is not running, record and all:
-- from the wait or due list, the delayed set, or the failed or completed
-- set. A job cancelled while running whose worker has not yet confirmed
-- that it stopped it (its entry in the cancelling hash, see cancel) is
-- not deleted until then or until the lease the worker held runs out:
-- the worker could still start it meanwhile.
-- KEYS: 1 jobs, 2 wait, 3 due, 4 active, 5 delayed, 6 failed, 7 completed,
--       8 cancelling
-- ARGV: 1 id
-- Returns {1, state it was in} deleted; {-2} unknown job; {-5, 'active'}
-- the job is running (cancel it instead); {-6, token, lease, now} not
-- deleted: the cancel of the reservation token is not confirmed yet, its
-- lease runs out at lease (ms) and the server's time is now (ms).
--
-- include: num now_us job_state
local id = ARGV[1]
local state = job_state(id)
if not state then
  return {-2}
end
if state == 'active' then
  return {-5, state}
end
local entry = redis.call('HGET', KEYS[8], id)
if entry then
  local token, lease = string.match(entry, '^(%d*),(%d+)$')
  local now = math.floor(now_us() / 1000)
  if lease and tonumber(lease) > now then
    return {-6, token, lease, num(now)}
  end
  redis.call('HDEL', KEYS[8], id)
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
