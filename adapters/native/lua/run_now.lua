-- run_now: an operator makes a delayed job due at once: it leaves the
-- delayed set for the back of the due list, which workers drain before
-- the wait list, and an idle worker is woken.
-- KEYS: 1 jobs, 2 due, 3 marker, 4 active, 5 delayed, 6 failed,
--       7 completed
-- ARGV: 1 id
-- Returns {1} due now; {-2} unknown job; {-5, state} the job is not
-- delayed.
--
-- include: job_state wake
local id = ARGV[1]
local state = job_state(id)
if not state then
  return {-2}
end
if state ~= 'delayed' then
  return {-5, state}
end
redis.call('ZREM', KEYS[5], id)
redis.call('RPUSH', KEYS[2], id)
wake(KEYS[3])
return {1}
