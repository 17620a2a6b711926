-- promote: the due-sweep on its own, for callers that want due jobs moved to
-- the due list without reserving any (reserve runs the same sweep first).
-- KEYS: 1 delayed, 2 due, 3 marker
-- Returns {moved, next_due_ms or -1}.
--
-- include: num now_us promote_due next_due wake
local now = math.floor(now_us() / 1000)
local moved = promote_due(KEYS[1], KEYS[2], now)
if moved > 0 then
  wake(KEYS[3])
end
return {moved, num(next_due(KEYS[1]))}
