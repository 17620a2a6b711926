-- Scores and times are integers beyond 2^31; tostring would print them in
-- exponent form with 14 digits, so every number sent to Redis goes through
-- num. Every number it is given is an integer below 2^53, which '%d' (a
-- 64-bit long in Redis's Lua) prints exactly, as '%.0f' did, at well under
-- half the cost: glibc formats a double through multi-precision arithmetic
-- (counted with callgrind: about 4.9k instructions a call for '%.0f' on a
-- delayed score, 1.8k for '%d'), and the hot scripts format a token and a
-- score per job.
local function num(x)
  return string.format('%d', x)
end
