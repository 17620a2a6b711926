-- redrive_renew: the process driving a redrive renews its lease while it
-- sends nothing (the redrive paused, or held by its dependency's breaker)
-- and says why it holds (counting the jobs, before it sends any, is one
-- reason), and records the count once made; a lease of 0 lets the
-- redrive go, for another process to resume at once.
-- KEYS: 1 redrive
-- ARGV: 1 owner token, 2 lease (ms from now), 3 why it holds ('' for not),
--       4 the jobs counted ('' for no count yet)
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
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1], 'total', ARGV[4])
end
return {1, r[2]}
