-- extend: renews the leases of running jobs whose token still matches.
-- KEYS: 1 active, 2 jobs
-- ARGV: 1 lease ms, then pairs of id and token
-- Returns one flag per pair: 1 renewed, 0 lost, 2 cancelled by an operator
-- (the record's ftok is '0' followed by the token, see cancel).
--
-- include: num now_us
local now = math.floor(now_us() / 1000)
local deadline = num(now + tonumber(ARGV[1]))
local ids = {}
for i = 2, #ARGV, 2 do
  ids[#ids + 1] = ARGV[i]
end
local out = {}
if #ids == 0 then
  return out
end
-- The lease token is the record's second field, ftok its sixth; both
-- reads and the renewal are one call each for the whole batch.
local recs = redis.call('HMGET', KEYS[2], unpack(ids))
local renew = {}
for k, id in ipairs(ids) do
  local token = ARGV[2 * k + 1]
  local holder, ftok
  if recs[k] then
    holder, ftok = string.match(recs[k], '^%d*,(%d*),%d*,%d*,%d*,(%d*)|')
  end
  if token ~= '' and holder == token then
    renew[#renew + 1] = deadline
    renew[#renew + 1] = id
    out[k] = 1
  elseif token ~= '' and ftok == '0' .. token then
    out[k] = 2
  else
    out[k] = 0
  end
end
if #renew > 0 then
  redis.call('ZADD', KEYS[1], 'XX', unpack(renew))
end
return out
