-- enqueue: adds one job, to the wait list or, with a delay, to the delayed set.
-- KEYS: 1 jobs, 2 wait, 3 delayed, 4 marker, 5 counter
-- ARGV: 1 id, 2 payload, 3 name, 4 max attempts (0 = the worker's rule),
--       5 delay (microseconds), 6 metadata (packed by the host, "" for none)
-- Returns 0 when the ID is taken, 1 when the job is waiting, 2 when delayed.
--
-- The record is written with HSETNX, which is the check for a taken ID too:
-- one command instead of HEXISTS then HSET (a redis.call costs about as
-- much as the work it does, and this script runs once per job).
--
-- include: num now_us fire_ms wake delayed_score schedule rec_new
local us = now_us()
if redis.call('HSETNX', KEYS[1], ARGV[1], rec_new(ARGV[4], num(math.floor(us / 1000)), ARGV[3], ARGV[6], ARGV[2])) == 0 then
  return 0
end
local delay = tonumber(ARGV[5])
if delay > 0 then
  schedule(KEYS[3], KEYS[5], KEYS[4], ARGV[1], fire_ms(us, delay))
  return 2
end
redis.call('RPUSH', KEYS[2], ARGV[1])
wake(KEYS[4])
return 1
