-- The server clock in whole milliseconds as decimal text, the same text as
-- num(math.floor(now_us() / 1000)), made from TIME's two fields with string
-- operations alone: converting them to numbers and formatting the result
-- with num costs about as much as a redis.call (counted with callgrind:
-- 6k of the 71k instructions an enqueue call took), and a job to run at
-- once needs the time only as text, for its created field.
local function now_ms_text()
  local t = redis.call('TIME')
  -- t[2] is the microseconds, 0 to 999999, unpadded: padded to six
  -- digits, its first three are the milliseconds.
  return t[1] .. string.sub('00000' .. t[2], -6, -4)
end
