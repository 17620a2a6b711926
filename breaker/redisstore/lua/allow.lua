-- allow: may a run of a job bound to this dependency start now?
-- KEYS[1] the dependency's breaker hash, KEYS[2] its sorted set of the
-- jobs it deferred, scored by when to forget them.
-- ARGV 1-12 as in lib.lua; 13 the run's kind (0 fresh, 1 retry); 14 the
-- job's ID or ''; 15 how long after a deferral ends to remember the job
-- (ms). A job the set remembers runs as a retry, whatever ARGV[13] says.
-- Returns {decision, until, gen, probe, from, to, lease}: decision 1 run,
-- 2 probe, 3 defer (open), 4 defer (budget); until the deferral's end and
-- lease a probe's lease end (Unix ms).
local key = KEYS[1]
local r = rule()
local now = clock()
local s = load(key, false)
local from = s.state
local kind, job = tonumber(ARGV[13]), ARGV[14]
local remembered = false
if job ~= '' then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('ZSCORE', KEYS[2], job) then
    remembered, kind = true, 1
  end
end

local function reply(decision, untl, probe, to, dirty, lease)
  if dirty then
    save(key, s, r)
  end
  if job ~= '' then
    if decision >= 3 then
      redis.call('ZADD', KEYS[2], untl + tonumber(ARGV[15]), job)
    elseif remembered then
      redis.call('ZREM', KEYS[2], job)
    end
  end
  return {decision, untl, s.gen, probe, from, to, lease or 0}
end

if s.state == 1 or s.state == 2 then
  if s.state == 1 then
    if now < s['until'] then
      return reply(3, s['until'], 0, 1, false)
    end
    s.state = 2
    s.gen = inc(s.gen)
    s.probes, s.successes, s.lease, s.leases = 0, 0, 0, {}
  end
  -- A probe whose lease has ended is presumed lost: its slot is free.
  local leases = live_leases(s, r, now)
  if #leases < r.probes then
    local lease = addms(now, r.lease)
    leases[#leases + 1] = lease
    set_leases(s, leases)
    return reply(2, 0, 1, 2, true, lease)
  end
  set_leases(s, leases)
  return reply(3, s.lease, 0, 2, true)
end

if kind == 1 and r.burst > 0 then
  local ok, nxt = take(s, r, now)
  if not ok then
    return reply(4, nxt, 0, 0, true)
  end
  return reply(1, 0, 0, 0, true)
end
return reply(1, 0, 0, 0, false)
