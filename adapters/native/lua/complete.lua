-- complete: ends a job that succeeded, if the caller still holds its lease.
-- KEYS: 1 job hash, 2 active, 3 completed, 4 attempts, 5 leases
-- ARGV: 1 id, 2 lease token, 3 retention ms (> 0), 4 most completed jobs kept
--       (-1 = no count limit), 5 metadata (JSON; "" keeps the stored one)
-- Returns {1, finished_ms}; {0} already completed with this token; {-1} the
-- lease is not the caller's (stale worker); {-2} unknown job.
local refused = lease_refused(KEYS[1], KEYS[5], ARGV[1], ARGV[2])
if refused then
  return refused
end
local now = math.floor(now_us() / 1000)
local id = ARGV[1]
local attempts = redis.call('HGET', KEYS[4], id) or '0'
redis.call('ZREM', KEYS[2], id)
redis.call('HDEL', KEYS[5], id)
redis.call('HDEL', KEYS[4], id)
redis.call('HSET', KEYS[1], 'attempts', attempts, 'finished', num(now), 'ftok', ARGV[2])
redis.call('HDEL', KEYS[1], 'fire')
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[1], 'meta', ARGV[5])
end
local keep = tonumber(ARGV[3])
redis.call('ZADD', KEYS[3], num(now), id)
redis.call('PEXPIRE', KEYS[1], keep)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. num(now - keep))
local most = tonumber(ARGV[4])
if most >= 0 then
  redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -(most + 1))
end
return {1, num(now)}
