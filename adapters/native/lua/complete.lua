-- complete: ends jobs that succeeded, each only if the caller still holds
-- its lease, then drops the completed jobs past retention (their records
-- included). One call may end many jobs (a worker sends the outcomes that
-- arrive together in one call); each is checked and stored in turn, exactly
-- as if it had been sent alone.
-- KEYS: 1 jobs, 2 active, 3 completed, 4 leases
-- ARGV: 1 retention ms (> 0), 2 most completed jobs kept (-1 = no count
--       limit), then for each job: id, lease token, metadata (JSON; "-"
--       keeps the stored one)
-- Returns one reply per job, in order: {1, finished_ms}; {0} already
-- completed with this token; {-1} the lease is not the caller's (stale
-- worker); {-2} unknown job.
local now = math.floor(now_us() / 1000)
local out = {}
local done = 0
for i = 3, #ARGV, 3 do
  local id, token, meta = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local r, refused = lease_check(KEYS[1], KEYS[4], id, token)
  if refused then
    out[#out + 1] = refused
  else
    redis.call('ZREM', KEYS[2], id)
    redis.call('HDEL', KEYS[4], id)
    r.finished, r.ftok = num(now), token
    if meta ~= '-' then
      r.meta = meta
    end
    redis.call('HSET', KEYS[1], id, rec_encode(r))
    redis.call('ZADD', KEYS[3], num(now), id)
    out[#out + 1] = {1, num(now)}
    done = done + 1
  end
end
if done == 0 then
  return out
end
-- Retention, at most 100 records plus one per job just completed: older
-- than keepFor, then beyond the count limit, oldest first.
local most_trim = 100 + done
local old = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. num(now - tonumber(ARGV[1])), 'LIMIT', 0, most_trim)
local most = tonumber(ARGV[2])
if #old == 0 and most >= 0 then
  local over = redis.call('ZCARD', KEYS[3]) - most
  if over > 0 then
    old = redis.call('ZRANGE', KEYS[3], 0, math.min(over, most_trim) - 1)
  end
end
if #old > 0 then
  redis.call('ZREM', KEYS[3], unpack(old))
  redis.call('HDEL', KEYS[1], unpack(old))
end
return out
