-- fail: ends a failed attempt, if the caller still holds the job's lease.
-- The attempts check, the error, and the move to the delayed set (retry)
-- or the failed set (exhausted or permanent) happen in this one step. The
-- delay is the literal one the host computed; no curve is computed here.
-- KEYS: 1 jobs, 2 active, 3 delayed, 4 failed, 5 leases, 6 marker, 7 counter
-- ARGV: 1 id, 2 lease token, 3 delay (microseconds), 4 permanent (1/0),
--       5 max attempts, 6 error text, 7 metadata (JSON; "-" keeps the stored
--       one), 8 reclaim (1: only if the lease has expired)
-- Returns {1, attempts, fire_ms} retried; {2, attempts, finished_ms} failed;
-- {0} already finished with this token; {-1} stale lease; {-2} unknown job;
-- {-3} reclaim refused, the lease is still live.
local r, refused = lease_check(KEYS[1], KEYS[5], ARGV[1], ARGV[2])
if refused then
  return refused
end
local us = now_us()
local now = math.floor(us / 1000)
local id = ARGV[1]
if ARGV[8] == '1' then
  local deadline = redis.call('ZSCORE', KEYS[2], id)
  if deadline and tonumber(deadline) > now then
    return {-3}
  end
end
local attempts = tonumber(r.attempts)
redis.call('ZREM', KEYS[2], id)
redis.call('HDEL', KEYS[5], id)
r.err, r.ftok = ARGV[6], ARGV[2]
if ARGV[7] ~= '-' then
  r.meta = ARGV[7]
end
if ARGV[4] == '1' or attempts >= tonumber(ARGV[5]) then
  r.finished = num(now)
  redis.call('HSET', KEYS[1], id, rec_encode(r))
  redis.call('ZADD', KEYS[4], num(now), id)
  return {2, attempts, num(now)}
end
redis.call('HSET', KEYS[1], id, rec_encode(r))
local fire = fire_ms(us, tonumber(ARGV[3]))
schedule(KEYS[3], KEYS[7], KEYS[6], id, fire)
return {1, attempts, num(fire)}
