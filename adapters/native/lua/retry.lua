-- retry: an operator sends a failed job back to run: it leaves the failed
-- set for the back of the wait list, its attempts kept or set to 0, its
-- last error kept until an attempt ends.
-- KEYS: 1 jobs, 2 wait, 3 marker, 4 active, 5 delayed, 6 failed,
--       7 completed
-- ARGV: 1 id, 2 reset the attempts (1) or keep them (0)
-- Returns {1, attempts} sent back; {-2} unknown job; {-5, state} the job
-- is not failed.
--
-- include: rec_head rec_ended job_state wake
local id = ARGV[1]
local state, rec = job_state(id)
if not state then
  return {-2}
end
if state ~= 'failed' then
  return {-5, state}
end
local bar, attempts, _, max, created, _, ftok = rec_head(rec, id)
if ARGV[2] == '1' then
  attempts = '0'
end
redis.call('ZREM', KEYS[6], id)
redis.call('HSET', KEYS[1], id, rec_ended(rec, bar, attempts, max, created, '', ftok, nil, '-'))
redis.call('RPUSH', KEYS[2], id)
wake(KEYS[3])
return {1, tonumber(attempts)}
