-- defer: puts back attempts a circuit breaker held back before their
-- handler ran, each only if the caller still holds the job's lease. The
-- attempt does not count (the attempts counter goes back by one), the lease
-- is released and the job goes to the delayed set, due after the delay the
-- host computed (the breaker's wait and its spread): no curve is computed
-- here. One call may put back many jobs; each is checked and stored in
-- turn, exactly as if it had been sent alone.
-- KEYS: 1 jobs, 2 active, 3 delayed, 4 marker
-- ARGV: for each job: id, lease token, delay (microseconds), metadata
--       (packed by the host, with the deferral counted; "-" keeps the
--       stored one)
-- Returns one reply per job, in order: {1, fire_ms} put back; {0} already
-- ended with this token; {-1} the lease is not the caller's (stale
-- worker); {-2} unknown job.
--
-- include: num now_us fire_ms wake delayed_score schedule_all rec_head claim rec_ended batch_read
local us = now_us()
local out = {}
local ids, recs = batch_read(KEYS[1], 1, 4)
if #ids == 0 then
  return out
end
local ended = {}
local done, stored, later = {}, {}, {}
for k, id in ipairs(ids) do
  local a = 4 * (k - 1) + 1
  local token, meta = ARGV[a + 1], ARGV[a + 3]
  local reply, bar, attempts, max, created, finished = claim(id, token, recs[k], ended)
  if reply then
    out[k] = reply
  else
    local fire = fire_ms(us, tonumber(ARGV[a + 2]))
    ended[id] = token
    done[#done + 1] = id
    stored[#stored + 1] = id
    stored[#stored + 1] = rec_ended(recs[k], bar, num(math.max(tonumber(attempts) - 1, 0)), max, created, finished, token, nil, meta)
    later[#later + 1] = {id, fire}
    out[k] = {1, num(fire)}
  end
end
if #done == 0 then
  return out
end
redis.call('ZREM', KEYS[2], unpack(done))
redis.call('HSET', KEYS[1], unpack(stored))
schedule_all(KEYS[3], KEYS[4], later)
return out
