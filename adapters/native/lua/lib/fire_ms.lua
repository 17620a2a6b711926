-- The fire time, in ms, of a delay given in microseconds: now plus the
-- delay, rounded up to the next whole millisecond, so a job never becomes due
-- before now + delay and is late by less than a millisecond.
local function fire_ms(us, delay_us)
  return math.floor((us + delay_us + 999) / 1000)
end
