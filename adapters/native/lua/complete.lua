-- complete: ends a job that succeeded, if the caller still holds its lease,
-- and drops the completed jobs past retention (their records included).
-- KEYS: 1 jobs, 2 active, 3 completed, 4 leases
-- ARGV: 1 id, 2 lease token, 3 retention ms (> 0), 4 most completed jobs kept
--       (-1 = no count limit), 5 metadata (JSON; "-" keeps the stored one)
-- Returns {1, finished_ms}; {0} already completed with this token; {-1} the
-- lease is not the caller's (stale worker); {-2} unknown job.
local r, refused = lease_check(KEYS[1], KEYS[4], ARGV[1], ARGV[2])
if refused then
  return refused
end
local now = math.floor(now_us() / 1000)
local id = ARGV[1]
redis.call('ZREM', KEYS[2], id)
redis.call('HDEL', KEYS[4], id)
r.finished, r.ftok = num(now), ARGV[2]
if ARGV[5] ~= '-' then
  r.meta = ARGV[5]
end
redis.call('HSET', KEYS[1], id, rec_encode(r))
redis.call('ZADD', KEYS[3], num(now), id)
-- Retention, at most 100 records a call: older than keepFor, then beyond
-- the count limit, oldest first.
local old = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. num(now - tonumber(ARGV[3])), 'LIMIT', 0, 100)
local most = tonumber(ARGV[4])
if #old == 0 and most >= 0 then
  local over = redis.call('ZCARD', KEYS[3]) - most
  if over > 0 then
    old = redis.call('ZRANGE', KEYS[3], 0, math.min(over, 100) - 1)
  end
end
if #old > 0 then
  redis.call('ZREM', KEYS[3], unpack(old))
  redis.call('HDEL', KEYS[1], unpack(old))
end
return {1, num(now)}
