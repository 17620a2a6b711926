-- enqueue: adds one job, to the wait list or, with a delay, to the delayed set.
-- KEYS: 1 jobs, 2 wait, 3 delayed, 4 marker, 5 counter
-- ARGV: 1 id, 2 payload, 3 name, 4 max attempts (0 = the worker's rule),
--       5 delay (microseconds), 6 metadata (packed by the host, "" for none)
-- Returns {0} when the ID is taken, {1, created_ms} when waiting,
-- {2, fire_ms} when delayed.
--
-- include: num now_us fire_ms wake delayed_score schedule rec_encode
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  return {0}
end
local us = now_us()
local created = math.floor(us / 1000)
redis.call('HSET', KEYS[1], ARGV[1], rec_encode({attempts = '0', tok = '', max = ARGV[4], created = num(created),
  finished = '', ftok = '', name = ARGV[3], meta = ARGV[6], err = '', payload = ARGV[2]}))
local delay = tonumber(ARGV[5])
if delay > 0 then
  local fire = fire_ms(us, delay)
  schedule(KEYS[3], KEYS[5], KEYS[4], ARGV[1], fire)
  return {2, num(fire)}
end
redis.call('RPUSH', KEYS[2], ARGV[1])
wake(KEYS[4])
return {1, num(created)}
