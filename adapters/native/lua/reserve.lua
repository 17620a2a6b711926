-- reserve: promotes due jobs, then moves up to ARGV[1] jobs from the wait
-- list to the active set with a lease, counting one attempt each.
-- KEYS: 1 wait, 2 active, 3 delayed, 4 marker, 5 attempts, 6 leases, 7 counter
-- ARGV: 1 how many, 2 lease ms
-- Returns {now_us, next_due_ms or -1, id1, attempt1, token1, id2, ...}.
local us = now_us()
local now = math.floor(us / 1000)
promote_due(KEYS[3], KEYS[1], now)
local out = {num(us), 0}
local n = tonumber(ARGV[1])
if n > 0 then
  local ids = redis.call('LPOP', KEYS[1], n)
  if ids then
    local deadline = num(now + tonumber(ARGV[2]))
    for _, id in ipairs(ids) do
      redis.call('ZADD', KEYS[2], deadline, id)
      local attempt = redis.call('HINCRBY', KEYS[5], id, 1)
      local token = num(redis.call('INCR', KEYS[7]))
      redis.call('HSET', KEYS[6], id, token)
      out[#out + 1] = id
      out[#out + 1] = attempt
      out[#out + 1] = token
    end
  end
end
if redis.call('LLEN', KEYS[1]) > 0 then
  -- More work than this worker took: pass the wake-up on.
  wake(KEYS[4])
end
out[2] = num(next_due(KEYS[3]))
return out
