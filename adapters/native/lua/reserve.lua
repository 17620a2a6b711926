-- reserve: promotes due jobs, then moves up to ARGV[1] jobs to the active
-- set with a lease, counting one attempt each, and hands them out with their
-- records. Jobs come from the due list first (retries and delayed first
-- runs whose time has come), then from the wait list: a retry that is due
-- does not queue behind a backlog of fresh jobs.
-- KEYS: 1 wait, 2 active, 3 delayed, 4 marker, 5 jobs, 6 leases, 7 counter,
--       8 due
-- ARGV: 1 how many (at most 1000 are taken), 2 lease ms
-- Returns {now_us, next_due_ms or -1, id1, token1, record1, id2, ...}; a
-- record's attempts count includes the attempt just started.
local us = now_us()
local now = math.floor(us / 1000)
promote_due(KEYS[3], KEYS[8], now)
local out = {num(us), 0}
-- At most 1000 a call, so every variadic call below stays far inside
-- Lua's stack limit; the host asks for no more.
local n = math.min(tonumber(ARGV[1]), 1000)
if n > 0 then
  local ids = redis.call('LPOP', KEYS[8], n) or {}
  if #ids < n then
    local fresh = redis.call('LPOP', KEYS[1], n - #ids)
    if fresh then
      for _, id in ipairs(fresh) do
        ids[#ids + 1] = id
      end
    end
  end
  if #ids > 0 then
    -- One call per command for the whole batch, not one per job: each
    -- redis.call costs about as much as the work it does.
    local deadline = num(now + tonumber(ARGV[2]))
    local recs = redis.call('HMGET', KEYS[5], unpack(ids))
    -- Tokens first+1 .. first+#ids, taken with one INCRBY.
    local first = redis.call('INCRBY', KEYS[7], #ids) - #ids
    local bumped, active, leases = {}, {}, {}
    for i, id in ipairs(ids) do
      local rec = recs[i]
      if rec then
        -- Only the attempts counter changes, and it leads the record: swap
        -- that prefix instead of decoding and re-encoding the whole record.
        -- A malformed record is handed out as it is; the host reports it
        -- and lets the lease expire.
        local comma = string.find(rec, ',', 1, true)
        local attempts = comma and tonumber(string.sub(rec, 1, comma - 1))
        if attempts then
          rec = num(attempts + 1) .. string.sub(rec, comma)
          bumped[#bumped + 1] = id
          bumped[#bumped + 1] = rec
        end
        local token = num(first + i)
        active[#active + 1] = deadline
        active[#active + 1] = id
        leases[#leases + 1] = id
        leases[#leases + 1] = token
        out[#out + 1] = id
        out[#out + 1] = token
        out[#out + 1] = rec
      end
    end
    if #bumped > 0 then
      redis.call('HSET', KEYS[5], unpack(bumped))
    end
    if #active > 0 then
      redis.call('ZADD', KEYS[2], unpack(active))
      redis.call('HSET', KEYS[6], unpack(leases))
    end
  end
end
if redis.call('LLEN', KEYS[8]) > 0 or redis.call('LLEN', KEYS[1]) > 0 then
  -- More work than this worker took: pass the wake-up on.
  wake(KEYS[4])
end
out[2] = num(next_due(KEYS[3]))
return out
