-- Helpers every breaker script starts with. They are the Go core's
-- transitions (package breaker, circuit.go and budget.go) written again in
-- Lua, number for number: every value is a whole number below 2^53, so
-- Lua's doubles hold it exactly; a property test holds the two to the
-- same decisions. No curve is computed here: the cool-down arrives as a
-- literal.
--
-- ARGV shared by every script:
--   1 now (Unix ms) or '' for the server's clock
--   2 failures  3 rate (ppm)  4 min calls  5 window slice (ms)
--   6 probes  7 successes to close  8 lease (ms)
--   9 budget ratio (units/success)  10 floor (units/ms)  11 burst (units)
--   12 the rule's text form

local MAXC = 9007199254740991
local UNIT = 1000000
local BUCKETS = 10

-- The hash's fields: the scalars every script reads, then the window's
-- slices (epoch, successes, failures), read only by rules with a rate.
local SCALARS = {'state', 'gen', 'trips', 'failures', 'until', 'probes', 'successes', 'lease', 'tokens', 'tokens_at'}
local WINDOW = {'e0', 's0', 'f0', 'e1', 's1', 'f1', 'e2', 's2', 'f2', 'e3', 's3', 'f3', 'e4', 's4', 'f4',
  'e5', 's5', 'f5', 'e6', 's6', 'f6', 'e7', 's7', 'f7', 'e8', 's8', 'f8', 'e9', 's9', 'f9'}

local function inc(n)
  return math.min(n + 1, MAXC)
end

local function addms(t, d)
  if d >= MAXC - t then
    return MAXC
  end
  return t + d
end

local function clock()
  if ARGV[1] ~= '' then
    return tonumber(ARGV[1])
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function rule()
  return {
    failures = tonumber(ARGV[2]), rate = tonumber(ARGV[3]), min = tonumber(ARGV[4]),
    bucket = tonumber(ARGV[5]), probes = tonumber(ARGV[6]), close = tonumber(ARGV[7]),
    lease = tonumber(ARGV[8]), ratio = tonumber(ARGV[9]), floor = tonumber(ARGV[10]),
    burst = tonumber(ARGV[11]), text = ARGV[12],
  }
end

-- load reads the circuit: the scalars, and the window too when window is
-- true. It keeps what it read in s.orig, so that save writes only what
-- changed. The tables are built by constructors, which size them once:
-- growing them key by key costs more than the rest of a script.
local function load(key, window)
  local v = redis.call('HMGET', key, 'rule', 'state', 'gen', 'trips', 'failures', 'until', 'probes',
    'successes', 'lease', 'tokens', 'tokens_at', 'leases')
  local s = {
    state = tonumber(v[2]) or 0, gen = tonumber(v[3]) or 0, trips = tonumber(v[4]) or 0,
    failures = tonumber(v[5]) or 0, ['until'] = tonumber(v[6]) or 0, probes = tonumber(v[7]) or 0,
    successes = tonumber(v[8]) or 0, lease = tonumber(v[9]) or 0, tokens = tonumber(v[10]) or 0,
    tokens_at = tonumber(v[11]) or 0, rule = v[1] or '', orig = false,
    leases = {}, leases_text = v[12] or '',
  }
  for l in string.gmatch(s.leases_text, '%d+') do
    s.leases[#s.leases + 1] = tonumber(l)
  end
  s.orig = {
    state = s.state, gen = s.gen, trips = s.trips, failures = s.failures, ['until'] = s['until'],
    probes = s.probes, successes = s.successes, lease = s.lease, tokens = s.tokens, tokens_at = s.tokens_at,
  }
  if window then
    local w = redis.call('HMGET', key, unpack(WINDOW))
    for i, f in ipairs(WINDOW) do
      local n = tonumber(w[i]) or 0
      s[f], s.orig[f] = n, n
    end
  end
  return s
end

-- save writes the fields that changed, each printed as a whole number
-- (tostring would cut large ones to 14 digits), and the rule that wrote
-- them if it is not the one stored.
local function save(key, s, r)
  local args = {}
  for f, was in pairs(s.orig) do
    if s[f] ~= was then
      args[#args + 1] = f
      args[#args + 1] = string.format('%.0f', s[f])
    end
  end
  if s.rule ~= r.text then
    args[#args + 1] = 'rule'
    args[#args + 1] = r.text
  end
  local parts = {}
  for i, l in ipairs(s.leases) do
    parts[i] = string.format('%.0f', l)
  end
  local text = table.concat(parts, ' ')
  if text ~= s.leases_text then
    args[#args + 1] = 'leases'
    args[#args + 1] = text
  end
  if #args > 0 then
    redis.call('HSET', key, unpack(args))
  end
end

-- count adds one call to the window slice of now (Breaker.count).
local function count(s, r, now, failed)
  if r.rate == 0 then
    return
  end
  local e = math.floor(now / r.bucket)
  local i = e % BUCKETS
  local ek, sk, fk = 'e' .. i, 's' .. i, 'f' .. i
  if s[ek] > e then
    return
  end
  if s[ek] < e then
    s[ek], s[sk], s[fk] = e, 0, 0
  end
  if failed then
    s[fk] = inc(s[fk])
  else
    s[sk] = inc(s[sk])
  end
end

-- tripped is Breaker.tripped, just after a failure at now.
local function tripped(s, r, now)
  if r.failures > 0 and s.failures >= r.failures then
    return true
  end
  if r.rate == 0 then
    return false
  end
  local e = math.floor(now / r.bucket)
  local calls, fails = 0, 0
  for i = 0, BUCKETS - 1 do
    local ep = s['e' .. i]
    if ep > e - BUCKETS and ep <= e then
      calls = calls + s['s' .. i] + s['f' .. i]
      fails = fails + s['f' .. i]
    end
  end
  calls, fails = math.min(calls, MAXC), math.min(fails, MAXC)
  if calls < r.min then
    return false
  end
  return fails * UNIT >= r.rate * calls
end

-- refill brings the budget up to now with the floor rate (Budget.refill).
-- A budget never used (tokens_at 0) holds a full burst.
local function refill(s, r, now)
  if r.burst == 0 then
    return
  end
  if s.tokens_at == 0 then
    s.tokens, s.tokens_at = r.burst, math.max(now, 1)
    return
  end
  if now <= s.tokens_at then
    return
  end
  local need = r.burst - s.tokens
  if need <= 0 or (now - s.tokens_at) * r.floor >= need then
    s.tokens = r.burst
  else
    s.tokens = s.tokens + (now - s.tokens_at) * r.floor
  end
  s.tokens_at = now
end

-- take spends one token; without one it returns when the next is due.
local function take(s, r, now)
  if r.burst == 0 then
    return true, 0
  end
  refill(s, r, now)
  if s.tokens >= UNIT then
    s.tokens = s.tokens - UNIT
    return true, 0
  end
  local wait = math.ceil((UNIT - s.tokens) / r.floor)
  return false, addms(math.max(now, s.tokens_at), wait)
end

local function deposit(s, r, now)
  if r.burst == 0 then
    return
  end
  refill(s, r, now)
  s.tokens = math.min(s.tokens + r.ratio, r.burst)
end

-- The probes' leases (Breaker.leasesOf, liveLeases, release, setLeases):
-- one lease end per probe let through and not yet reported.
local MAX_LEGACY_LEASES = 64

-- leases_of returns the probes' leases; a circuit stored before each probe
-- had its own counts probes probes sharing lease.
local function leases_of(s, r)
  if #s.leases > 0 or s.probes <= 0 then
    return s.leases
  end
  local out = {}
  for i = 1, math.min(s.probes, r.probes, MAX_LEGACY_LEASES) do
    out[i] = s.lease
  end
  return out
end

-- live_leases returns the leases that have not ended at now.
local function live_leases(s, r, now)
  local out = {}
  for _, l in ipairs(leases_of(s, r)) do
    if l > now then
      out[#out + 1] = l
    end
  end
  return out
end

-- release returns the leases without one equal to l, and whether there
-- was one.
local function release(leases, l)
  local out, found = {}, false
  for _, x in ipairs(leases) do
    if x == l and not found then
      found = true
    else
      out[#out + 1] = x
    end
  end
  return out, found
end

-- set_leases makes leases the probes': probes counts them, lease is the
-- earliest.
local function set_leases(s, leases)
  s.leases, s.probes, s.lease = leases, #leases, 0
  for i, l in ipairs(leases) do
    if i == 1 or l < s.lease then
      s.lease = l
    end
  end
end

-- reset clears what a change of state starts afresh.
local function reset(s, now)
  s.failures, s.probes, s.successes, s.lease, s.leases = 0, 0, 0, 0, {}
  if s.orig.e0 then
    -- The window was loaded (the rule has a rate): clear it.
    for _, f in ipairs(WINDOW) do
      s[f] = 0
    end
  end
  -- Empty, brought up to date now; tokens_at 0 would read as never used.
  s.tokens, s.tokens_at = 0, math.max(now, 1)
end

-- trip opens the breaker for cd ms, the cool-down of its next trip.
local function trip(s, now, cd)
  s.state = 1
  s.gen = inc(s.gen)
  s.trips = inc(s.trips)
  s['until'] = addms(now, cd)
  reset(s, now)
end

local function close(s, now)
  s.state = 0
  s.gen = inc(s.gen)
  s.trips = 0
  s['until'] = 0
  reset(s, now)
end
