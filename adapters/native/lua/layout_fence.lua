-- layout_fence: raises a shard's layout epoch to the one a change of N
-- wrote, so that from now on the shard refuses every producer holding an
-- older layout (see lib/fence.lua); an epoch already as high is kept.
-- KEYS: 1 the shard's epoch
-- ARGV: 1 the new layout's epoch
-- Returns the shard's epoch after the call.
local have = tonumber(redis.call('GET', KEYS[1]) or '0')
local e = tonumber(ARGV[1])
if have < e then
  redis.call('SET', KEYS[1], e)
  return e
end
return have
