-- success: a run let through answered.
-- KEYS[1] the dependency's breaker hash.
-- ARGV 1-12 as in lib.lua; 13 the ticket's generation, 14 1 for a probe,
-- 15 1 if an allow let the run through, 16 a probe's lease end.
-- Returns {from, to}.
local key = KEYS[1]
local r = rule()
local now = clock()
local s = load(key, r.rate > 0)
local from = s.state
local gen, probe, admitted = tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15])

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
  s.successes = inc(s.successes)
  if s.successes >= r.close then
    close(s, now)
  end
  save(key, s, r)
  return {from, s.state}
end
if admitted == 1 and gen ~= s.gen then
  return {from, from}
end
s.failures = 0
count(s, r, now, false)
deposit(s, r, now)
save(key, s, r)
return {from, s.state}
