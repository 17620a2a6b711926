-- redrive_start: an operator starts a redrive of the queue's failed jobs
-- (redrive.go): its state is written afresh to the redrive hash, held by
-- the caller's lease, unless a redrive that has not ended (running or
-- paused) is there, whoever holds it: one redrive per queue at a time.
-- KEYS: 1 redrive
-- ARGV: 1 redrive ID, 2 owner token, 3 lease (ms), 4 filter (JSON), 5 rate
--       (jobs/s), 6 dependency ('' for none), 7 reset the attempts (1) or
--       keep them (0), 8 total (jobs the filter picked; -1 until the driver
--       counted them), 9
--       until: the latest finish time (ms) taken
-- Returns {1, now} started; {-1, id, state, owner, lease, now} refused:
-- redrive id has not ended (lease: the end of its holder's lease, ms;
-- now: the server's time, ms).
--
-- include: num now_us
local now = math.floor(now_us() / 1000)
local r = redis.call('HMGET', KEYS[1], 'state', 'id', 'owner', 'lease')
if r[1] == 'running' or r[1] == 'paused' then
  return {-1, r[2] or '', r[1], r[3] or '', r[4] or '0', num(now)}
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'owner', ARGV[2], 'lease', num(now + tonumber(ARGV[3])),
  'filter', ARGV[4], 'rate', ARGV[5], 'dep', ARGV[6], 'reset', ARGV[7], 'total', ARGV[8],
  'until', ARGV[9], 'state', 'running', 'at', '', 'after', '', 'sent', 0, 'skipped', 0,
  'scanned', 0, 'started', num(now), 'updated', num(now), 'held', '')
return {1, num(now)}
