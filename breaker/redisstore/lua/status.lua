-- status: the dependency's breaker hash and the time, read at once.
-- KEYS[1] the dependency's breaker hash.
-- ARGV[1] now (Unix ms) or '' for the server's clock.
-- Returns {now, rule, the values of lib.lua's SCALARS then WINDOW, the
-- probes' leases}.
local fields = {'rule'}
for _, f in ipairs(SCALARS) do
  fields[#fields + 1] = f
end
for _, f in ipairs(WINDOW) do
  fields[#fields + 1] = f
end
local v = redis.call('HMGET', KEYS[1], unpack(fields))
local out = {clock(), v[1] or ''}
for i = 2, #v do
  out[#out + 1] = v[i] or '0'
end
out[#out + 1] = redis.call('HGET', KEYS[1], 'leases') or ''
return out
