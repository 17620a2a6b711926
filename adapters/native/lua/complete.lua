-- complete: ends jobs that succeeded, each only if the caller still holds
-- its lease, then drops the completed jobs past retention (their records
-- included). One call may end many jobs (a worker sends the outcomes that
-- arrive together in one call); each is checked and stored in turn, exactly
-- as if it had been sent alone.
-- KEYS: 1 jobs, 2 active, 3 completed
-- ARGV: 1 retention ms (> 0), 2 most completed jobs kept (-1 = no count
--       limit), then for each job: id, lease token, metadata (packed by the host; "-"
--       keeps the stored one)
-- Returns one reply per job, in order: {1, finished_ms}; {0} already
-- completed with this token; {-1} the lease is not the caller's (stale
-- worker); {-2} unknown job.
--
-- include: num now_us rec_head claim rec_ended trim_finished batch_read
local now = math.floor(now_us() / 1000)
local snow = num(now)
local out = {}
local ids, recs = batch_read(KEYS[1], 3, 3)
if #ids == 0 then
  return out
end
-- The writes below are one call each for the whole batch. A job the batch
-- already ended is answered from ended, as a call of its own after that
-- one would be.
local ended = {}
local done, stored, scored = {}, {}, {}
for k, id in ipairs(ids) do
  local token, meta = ARGV[3 * k + 1], ARGV[3 * k + 2]
  local reply, bar, attempts, max, created = claim(id, token, recs[k], ended)
  if reply then
    out[k] = reply
  else
    ended[id] = token
    done[#done + 1] = id
    stored[#stored + 1] = id
    stored[#stored + 1] = rec_ended(recs[k], bar, attempts, max, created, snow, token, nil, meta)
    scored[#scored + 1] = snow
    scored[#scored + 1] = id
    out[k] = {1, snow}
  end
end
if #done == 0 then
  return out
end
redis.call('ZREM', KEYS[2], unpack(done))
redis.call('HSET', KEYS[1], unpack(stored))
redis.call('ZADD', KEYS[3], unpack(scored))
trim_finished(KEYS[3], KEYS[1], now, tonumber(ARGV[1]), tonumber(ARGV[2]), #done)
return out
