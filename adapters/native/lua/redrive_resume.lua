-- redrive_resume: an operator resumes the queue's redrive: a paused one
-- runs again, and the caller takes it over unless a live lease holds it
-- (its process still drives it, and goes on by itself): after the
-- process that drove it died, the caller goes on from its cursor.
-- KEYS: 1 redrive
-- ARGV: 1 owner token, 2 lease (ms)
-- Returns {1, state before} the caller holds it now; {0, state before,
-- owner, lease, now} a live lease holds it (lease and now in ms); {-2}
-- no redrive; {-5, state} it has ended (done or cancelled).
--
-- include: num now_us
local r = redis.call('HMGET', KEYS[1], 'state', 'owner', 'lease')
if not r[1] then
  return {-2}
end
if r[1] ~= 'running' and r[1] ~= 'paused' then
  return {-5, r[1]}
end
local now = math.floor(now_us() / 1000)
redis.call('HSET', KEYS[1], 'state', 'running', 'updated', num(now))
if r[2] ~= ARGV[1] and tonumber(r[3] or '0') > now then
  return {0, r[1], r[2] or '', r[3], num(now)}
end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'lease', num(now + tonumber(ARGV[2])))
return {1, r[1]}
