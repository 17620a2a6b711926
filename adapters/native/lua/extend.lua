-- extend: renews the leases of running jobs whose token still matches.
-- KEYS: 1 active, 2 leases
-- ARGV: 1 lease ms, then pairs of id and token
-- Returns one flag per pair: 1 renewed, 0 lost.
local now = math.floor(now_us() / 1000)
local deadline = num(now + tonumber(ARGV[1]))
local out = {}
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  if redis.call('HGET', KEYS[2], id) == ARGV[i + 1] then
    redis.call('ZADD', KEYS[1], 'XX', deadline, id)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
