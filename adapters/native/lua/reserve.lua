-- reserve: promotes due jobs, then moves up to ARGV[1] jobs from the wait
-- list to the active set with a lease, counting one attempt each, and hands
-- them out with their records.
-- KEYS: 1 wait, 2 active, 3 delayed, 4 marker, 5 jobs, 6 leases, 7 counter
-- ARGV: 1 how many, 2 lease ms
-- Returns {now_us, next_due_ms or -1, id1, token1, record1, id2, ...}; a
-- record's attempts count includes the attempt just started.
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
      local r = rec_get(KEYS[5], id)
      if r then
        r.attempts = num(tonumber(r.attempts) + 1)
        local rec = rec_encode(r)
        redis.call('HSET', KEYS[5], id, rec)
        redis.call('ZADD', KEYS[2], deadline, id)
        local token = num(redis.call('INCR', KEYS[7]))
        redis.call('HSET', KEYS[6], id, token)
        out[#out + 1] = id
        out[#out + 1] = token
        out[#out + 1] = rec
      end
    end
  end
end
if redis.call('LLEN', KEYS[1]) > 0 then
  -- More work than this worker took: pass the wake-up on.
  wake(KEYS[4])
end
out[2] = num(next_due(KEYS[3]))
return out
