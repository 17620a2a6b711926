-- enqueue_delayed: adds one job with a delay to the delayed set, due at the
-- server's clock plus the delay, rounded up to the millisecond.
-- KEYS: 1 jobs, 2 delayed, 3 marker, and for a shard of a sharded queue 4
--       the shard's layout epoch
-- ARGV: 1 id, 2 payload, 3 name, 4 max attempts (0 = the worker's rule),
--       5 delay (microseconds, > 0), 6 metadata (packed by the host, "" for
--       none), and with KEYS[4] 7 the epoch of the layout the producer
--       holds
-- Returns 0 when the ID is taken, 2 when the job is delayed; a STALELAYOUT
-- error when the producer's layout is older than the shard's (see fence).
--
-- include: num now_us fire_ms wake delayed_score schedule rec_new fence
if KEYS[4] then
  local stale = fence(KEYS[4], tonumber(ARGV[7]))
  if stale then
    return stale
  end
end
local us = now_us()
if redis.call('HSETNX', KEYS[1], ARGV[1], rec_new(ARGV[4], num(math.floor(us / 1000)), ARGV[3], ARGV[6], ARGV[2])) == 0 then
  return 0
end
schedule(KEYS[2], KEYS[3], ARGV[1], fire_ms(us, tonumber(ARGV[5])))
return 2
