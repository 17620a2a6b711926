-- status: the dependency's breaker hash and the time, read at once.
-- KEYS[1] the dependency's breaker hash.
-- ARGV[1] now (Unix ms) or '' for the server's clock.
-- Returns {now, rule, field values in lib.lua's FIELDS order...}.
local v = redis.call('HMGET', KEYS[1], 'rule', unpack(FIELDS))
local out = {clock(), v[1] or ''}
for i = 2, #v do
  out[#out + 1] = v[i] or '0'
end
return out
