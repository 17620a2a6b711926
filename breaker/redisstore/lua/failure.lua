-- failure: a run failed because of the dependency.
-- KEYS[1] the dependency's breaker hash.
-- ARGV 1-12 as in lib.lua; 13 the ticket's generation, 14 1 for a probe,
-- 15 1 if an allow let the run through, 16 a probe's lease end; 17 the trips the caller believes
-- the breaker has made, 18 the cool-down (ms) of the trip after those, or
-- -1 if the caller has none.
-- Returns {from, to}, or {-1, trips} without changing anything when a
-- trip is due and ARGV[17] is not the breaker's trips (the caller computes
-- the right cool-down and calls again) or ARGV[18] is -1.
local key = KEYS[1]
local r = rule()
local now = clock()
local s = load(key, r.rate > 0)
local from = s.state
local gen, probe, admitted = tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15])

local function open()
  if s.trips ~= tonumber(ARGV[17]) or tonumber(ARGV[18]) < 0 then
    return false
  end
  trip(s, now, tonumber(ARGV[18]))
  return true
end

if s.state == 1 then
  return {from, from}
end
if s.state == 2 then
  if admitted ~= 1 or probe ~= 1 or gen ~= s.gen then
    return {from, from}
  end
  local leases, found = release(leases_of(s, r), tonumber(ARGV[16]))
  if not found then
    return {from, from}
  end
  set_leases(s, leases)
  if not open() then
    return {-1, s.trips}
  end
  save(key, s, r)
  return {from, s.state}
end
if admitted == 1 and gen ~= s.gen then
  return {from, from}
end
s.failures = inc(s.failures)
count(s, r, now, true)
if tripped(s, r, now) and not open() then
  return {-1, s.trips}
end
save(key, s, r)
return {from, s.state}
