-- The delayed score: fire time in ms times 0x1000, plus the job's place
-- among the jobs due in that millisecond, which keeps them in FIFO order:
-- one past the highest place the delayed set holds for that millisecond
-- (read with one ZREVRANGEBYSCORE), or past the one this call gave last
-- (placed maps a fire time to the next free place; a call adding many
-- jobs passes the same table for all). The place is not a counter modulo
-- 4096, so it never wraps; it stops at 4095, where the 4096th and later
-- jobs still in the set for one millisecond share the last score and run
-- in the order of their IDs. A double holds every integer only up to
-- 2^53, which the score passes with fire times after
-- 2039-09-07T15:47:35.551Z (2^41 ms): from there the score is the fire
-- time alone, still exact, so a job is never due early, and jobs due in
-- the same millisecond run in the order of their IDs instead. Scores
-- stored by earlier versions (fire_ms*0x1000 plus a sequence modulo
-- 4096) are of the same form, and read the same way.
local function delayed_score(delayed_key, fire_ms, placed)
  local base = fire_ms * 4096
  if fire_ms >= 2199023255552 then
    return num(base)
  end
  local place = placed[fire_ms]
  if not place then
    place = 0
    local last = redis.call('ZREVRANGEBYSCORE', delayed_key, num(base + 4095), num(base), 'WITHSCORES', 'LIMIT', 0, 1)
    if #last > 0 then
      place = tonumber(last[2]) - base + 1
    end
  end
  place = math.min(place, 4095)
  placed[fire_ms] = place + 1
  return num(base + place)
end
