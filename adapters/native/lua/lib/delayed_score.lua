-- The delayed score: fire time in ms times 0x1000, plus a sequence number
-- (taken from counter_key) that keeps jobs due in the same millisecond in
-- FIFO order. A double holds every integer only up to 2^53, which the
-- score passes with fire times after 2039-09-07T15:47:35.551Z (2^41 ms):
-- from there the score is the fire time alone, still exact, so a job is
-- never due early, and jobs due in the same millisecond run in the order
-- of their IDs instead.
local function delayed_score(fire_ms, seq)
  if fire_ms >= 2199023255552 then
    return num(fire_ms * 4096)
  end
  return num(fire_ms * 4096 + seq % 4096)
end
