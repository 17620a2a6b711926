-- The server clock in microseconds. Doubles hold it exactly (< 2^53).
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
