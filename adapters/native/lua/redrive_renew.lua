-- redrive_renew: the process driving a redrive renews its lease while it
-- sends nothing (the redrive paused, or held by its dependency's breaker)
-- and says why it holds; a lease of 0 lets the redrive go, for another
-- process to resume at once.
-- KEYS: 1 redrive
-- ARGV: 1 owner token, 2 lease (ms from now), 3 why it holds ('' for not)
-- Returns {1, state} renewed; {-1, state, owner} the redrive is not the
-- caller's (or there is none).
--
-- include: num now_us
local r = redis.call('HMGET', KEYS[1], 'owner', 'state')
if r[1] ~= ARGV[1] then
  return {-1, r[2] or '', r[1] or ''}
end
local now = math.floor(now_us() / 1000)
redis.call('HSET', KEYS[1], 'lease', num(now + tonumber(ARGV[2])), 'held', ARGV[3])
return {1, r[2]}
