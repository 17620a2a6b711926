-- fail: ends failed attempts, each only if the caller still holds the job's
-- lease. The attempts check, the error, and the move to the delayed set
-- (retry) or the failed set (exhausted or permanent) happen in this one
-- step. The delay is the literal one the host computed; no curve is
-- computed here. One call may end many jobs (a worker sends the outcomes
-- that arrive together in one call); each is checked and stored in turn,
-- exactly as if it had been sent alone. A job given up (moved to the
-- failed set) while the caller has a give-up hook leaves a record that
-- the hook's call is owed, in this same step: the giveup set holds it
-- until the caller's lease on the call (now plus ARGV[3]) runs out, and
-- the giveup hash what the call tells; the caller clears both once its
-- hook returned (give_up_done), and should it die first, another worker
-- takes the call over (give_up_claim).
-- KEYS: 1 jobs, 2 active, 3 delayed, 4 failed, 5 marker, 6 giveup,
--       7 giveup hash
-- ARGV: 1 failed retention ms (> 0), 2 most failed jobs kept (-1 = no
--       count limit), 3 the lease on an owed give-up call, ms (0: the
--       caller has no hook, nothing is owed), then for each job: id,
--       lease token, delay
--       (microseconds), permanent (1/0), max attempts, error text,
--       metadata (packed by the host; "-" keeps the stored one), reclaim (1: only if the
--       lease has expired)
-- Returns one reply per job, in order: {1, attempts, fire_ms} retried;
-- {2, attempts, finished_ms} failed; {0} already finished with this token;
-- {-1} stale lease; {-2} unknown job; {-3} reclaim refused, the lease is
-- still live.
--
-- include: num now_us fire_ms wake delayed_score schedule_all rec_head claim rec_ended trim_finished batch_read give_up_call
local us = now_us()
local now = math.floor(us / 1000)
local snow = num(now)
local out = {}
local ids, recs = batch_read(KEYS[1], 4, 8)
local owe = tonumber(ARGV[3])
if #ids == 0 then
  return out
end
-- The writes below are one call each for the whole batch. A job the batch
-- already ended is answered from ended, as a call of its own after that
-- one would be.
local ended = {}
-- packed maps an error text to its form in the record (led by its byte
-- length): the jobs of a batch mostly fail with one text, made once.
local packed = {}
local done, stored, failed, retried, owed, calls = {}, {}, {}, {}, {}, {}
for k, id in ipairs(ids) do
  local a = 8 * (k - 1) + 3
  local token = ARGV[a + 2]
  local reply, bar, attempts, max, created, finished = claim(id, token, recs[k], ended)
  if not reply and ARGV[a + 8] == '1' then
    -- A reclaim ends only a lease that has run out.
    local deadline = redis.call('ZSCORE', KEYS[2], id)
    if deadline and tonumber(deadline) > now then
      reply = {-3}
    end
  end
  if reply then
    out[k] = reply
  else
    local n = tonumber(attempts)
    if ARGV[a + 4] == '1' or n >= tonumber(ARGV[a + 5]) then
      finished = snow
      failed[#failed + 1] = snow
      failed[#failed + 1] = id
      out[k] = {2, n, snow}
      if owe > 0 then
        owed[#owed + 1] = num(now + owe)
        owed[#owed + 1] = id
        calls[#calls + 1] = id
        calls[#calls + 1] = give_up_call(token, n, ARGV[a + 5], ARGV[a + 4], ARGV[a + 6])
      end
    else
      local fire = fire_ms(us, tonumber(ARGV[a + 3]))
      retried[#retried + 1] = {id, fire}
      out[k] = {1, n, fire} -- an integer reply, exact below 2^53
    end
    ended[id] = token
    done[#done + 1] = id
    stored[#stored + 1] = id
    -- A reclaim ends the attempt of another reservation, whose worker may
    -- still come back with its own outcome: it must be told its lease is
    -- gone, not that its outcome was stored, so the reclaim does not
    -- record that reservation's token as the one that ended the attempt.
    local ftok = token
    if ARGV[a + 8] == '1' then
      ftok = ''
    end
    local msg = ARGV[a + 6]
    local err = packed[msg]
    if not err then
      err = #msg .. ':' .. msg
      packed[msg] = err
    end
    stored[#stored + 1] = rec_ended(recs[k], bar, attempts, max, created, finished, ftok, err, ARGV[a + 7])
  end
end
if #done == 0 then
  return out
end
redis.call('ZREM', KEYS[2], unpack(done))
redis.call('HSET', KEYS[1], unpack(stored))
if #failed > 0 then
  redis.call('ZADD', KEYS[4], unpack(failed))
  trim_finished(KEYS[4], KEYS[1], now, tonumber(ARGV[1]), tonumber(ARGV[2]), #failed / 2)
end
if #owed > 0 then
  redis.call('ZADD', KEYS[6], unpack(owed))
  redis.call('HSET', KEYS[7], unpack(calls))
end
if #retried > 0 then
  schedule_all(KEYS[3], KEYS[5], retried)
end
return out
