-- redrive_step: one bounded step of a redrive (redrive.go): the failed
-- jobs the host picked, in order after the redrive's cursor, go back to
-- the back of the wait list, as retry sends one, each with the metadata
-- the host packed (its record of the redrive), and the cursor moves past
-- the jobs the host read, all at once: a step is done whole or not at
-- all, so a redrive resumed after its process died sends no job twice and
-- skips none. Nothing changes unless the caller holds the redrive, it is
-- running and its cursor is where the host read from.
-- KEYS: 1 redrive, 2 jobs, 3 failed, 4 wait, 5 marker
-- ARGV: 1 owner token, 2 lease (ms, renewed from now), 3 cursor score
--       and 4 cursor ID the host read after, 5 score and 6 ID of the
--       last job it read, 7 jobs it read, 8 1 when it read the last job
--       to take (the redrive is then done), 9 reset the attempts (1) or
--       keep them (0); then for each job to send: its ID, its score as
--       read (finish ms) and its metadata (packed)
-- Returns {1, sent, skipped, state} (skipped: jobs no longer failed at
-- the score read, left as they are); {-1, state, owner} not done: the
-- redrive is another's, not running, or its cursor moved.
--
-- include: num now_us rec_head rec_ended wake
local r = redis.call('HMGET', KEYS[1], 'owner', 'state', 'at', 'after')
if r[1] ~= ARGV[1] or r[2] ~= 'running' or (r[3] or '') ~= ARGV[3] or (r[4] or '') ~= ARGV[4] then
  return {-1, r[2] or '', r[1] or ''}
end
local now = math.floor(now_us() / 1000)
local reset = ARGV[9] == '1'
local sent, skipped, stored, back = 0, 0, {}, {}
for i = 10, #ARGV, 3 do
  local id, score, meta = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local at = redis.call('ZSCORE', KEYS[3], id)
  local rec = at and tonumber(at) == tonumber(score) and redis.call('HGET', KEYS[2], id)
  if rec then
    local bar, attempts, _, max, created, _, ftok = rec_head(rec, id)
    if reset then
      attempts = '0'
    end
    stored[#stored + 1] = id
    stored[#stored + 1] = rec_ended(rec, bar, attempts, max, created, '', ftok, nil, meta)
    back[#back + 1] = id
    sent = sent + 1
  else
    skipped = skipped + 1
  end
end
if sent > 0 then
  redis.call('ZREM', KEYS[3], unpack(back))
  redis.call('HSET', KEYS[2], unpack(stored))
  redis.call('RPUSH', KEYS[4], unpack(back))
  wake(KEYS[5])
end
redis.call('HINCRBY', KEYS[1], 'sent', sent)
redis.call('HINCRBY', KEYS[1], 'skipped', skipped)
redis.call('HINCRBY', KEYS[1], 'scanned', tonumber(ARGV[7]))
redis.call('HSET', KEYS[1], 'at', ARGV[5], 'after', ARGV[6], 'updated', num(now),
  'lease', num(now + tonumber(ARGV[2])), 'held', '')
local state = 'running'
if ARGV[8] == '1' then
  state = 'done'
  redis.call('HSET', KEYS[1], 'state', state, 'finished', num(now))
end
return {1, sent, skipped, state}
