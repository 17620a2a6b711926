-- neutral: a run let through says nothing about the dependency; a probe
-- gives its slot back.
-- KEYS[1] the dependency's breaker hash.
-- ARGV 1-12 as in lib.lua; 13 the ticket's generation, 14 1 for a probe,
-- 15 1 if an allow let the run through, 16 a probe's lease end.
-- Returns {from, to}.
local key = KEYS[1]
local r = rule()
local s = load(key, false)
local from = s.state
if s.state == 2 and tonumber(ARGV[15]) == 1 and tonumber(ARGV[14]) == 1 and tonumber(ARGV[13]) == s.gen then
  local leases, found = release(leases_of(s, r), tonumber(ARGV[16]))
  if found then
    set_leases(s, leases)
    save(key, s, r)
  end
end
return {from, from}
