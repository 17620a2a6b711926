-- reserve: promotes due jobs, then moves up to ARGV[1] jobs to the active
-- set with a lease, counting one attempt each, and hands them out with their
-- records. Jobs come from the due list first (retries and delayed first
-- runs whose time has come), then from the wait list: a retry that is due
-- does not queue behind a backlog of fresh jobs. It also reads the
-- operator's flags: a paused queue (see pause) hands out no job, but its
-- due jobs are still promoted, so that none is late when it resumes; and
-- the count of running jobs cancelled (see cancel) goes back to the
-- worker, which renews its leases at once when it changed, and so learns
-- whether one of its jobs was cancelled.
-- KEYS: 1 wait, 2 active, 3 delayed, 4 marker, 5 jobs, 6 counter, 7 due,
--       8 control
-- ARGV: 1 how many (at most 1000 are taken), 2 lease ms
-- Returns {now_us, next_due_ms (-1: none delayed; -2: not looked up, the
-- batch was full), cancels, id1, token1, record1, id2, ...}; a record's
-- attempts count includes the attempt just started.
--
-- include: num now_us promote_due next_due wake
local us = now_us()
local now = math.floor(us / 1000)
promote_due(KEYS[3], KEYS[7], now)
local control = redis.call('HMGET', KEYS[8], 'paused', 'cancels')
-- The times go back as integer replies (a Lua number below 2^53 is sent
-- exactly), not as text: no string.format on the hot path.
local out = {us, 0, control[2] or 0}
-- At most 1000 a call, so every variadic call below stays far inside
-- Lua's stack limit; the host asks for no more.
local n = math.min(tonumber(ARGV[1]), 1000)
if control[1] then
  n = 0 -- paused
end
-- more: whether either list may still hold jobs after this call (a list
-- that gave fewer than asked is empty, and needs no LLEN).
local more = false
if n > 0 then
  local ids = redis.call('LPOP', KEYS[7], n) or {}
  if #ids == n then
    more = redis.call('LLEN', KEYS[7]) > 0 or redis.call('LLEN', KEYS[1]) > 0
  else
    local want = n - #ids
    local fresh = redis.call('LPOP', KEYS[1], want)
    if fresh then
      for _, id in ipairs(fresh) do
        ids[#ids + 1] = id
      end
      more = #fresh == want and redis.call('LLEN', KEYS[1]) > 0
    end
  end
  if #ids > 0 then
    -- One call per command for the whole batch, not one per job: each
    -- redis.call costs about as much as the work it does.
    local deadline = num(now + tonumber(ARGV[2]))
    local recs = redis.call('HMGET', KEYS[5], unpack(ids))
    -- Tokens first+1 .. first+#ids, taken with one INCRBY.
    local first = redis.call('INCRBY', KEYS[6], #ids) - #ids
    local bumped, active = {}, {}
    -- succ: the next attempts count as text for the counts most jobs
    -- have, looked up instead of formatted (a number's formatting costs
    -- about 2k instructions, the rest of a job's prefix swap less).
    local succ = {['0'] = '1', ['1'] = '2', ['2'] = '3', ['3'] = '4', ['4'] = '5'}
    for i, id in ipairs(ids) do
      local rec = recs[i]
      if rec then
        local token = num(first + i)
        -- Only the attempts counter and the lease token change, and they
        -- lead the record: swap that prefix instead of decoding and
        -- re-encoding the whole record. A malformed record is handed out
        -- as it is; the host reports it and lets the lease expire.
        local attempts, rest = string.match(rec, '^(%d+),%d*(,.*)$')
        if attempts then
          rec = (succ[attempts] or num(attempts + 1)) .. ',' .. token .. rest
          bumped[#bumped + 1] = id
          bumped[#bumped + 1] = rec
        end
        active[#active + 1] = deadline
        active[#active + 1] = id
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
    end
  end
  if #ids == n then
    -- A full batch: the worker asks again at once and needs no next fire
    -- time, so the lookup is skipped (-2).
    out[2] = -2
  end
end
if more then
  -- More work than this worker took: pass the wake-up on.
  wake(KEYS[4])
end
if out[2] ~= -2 then
  out[2] = next_due(KEYS[3])
end
return out
