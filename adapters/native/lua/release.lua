-- release: puts back attempts cut short by their worker's shutdown, each
-- only if the caller still holds the job's lease. The attempt does not
-- count (the attempts counter goes back by one), the lease is released and
-- the job goes to the front of the due list, to run again before anything
-- else. One call may put back many jobs; each is checked and stored in
-- turn, exactly as if it had been sent alone.
-- KEYS: 1 jobs, 2 active, 3 due, 4 marker
-- ARGV: for each job: id, lease token, metadata (packed by the host; "-"
--       keeps the stored one)
-- Returns one reply per job, in order: {1, now_ms} put back; {0} already
-- ended with this token; {-1} the lease is not the caller's (stale
-- worker); {-2} unknown job.
--
-- include: num now_us wake rec_head claim rec_ended batch_read
local now = math.floor(now_us() / 1000)
local snow = num(now)
local out = {}
local ids, recs = batch_read(KEYS[1], 1, 3)
if #ids == 0 then
  return out
end
local ended = {}
local done, stored = {}, {}
for k, id in ipairs(ids) do
  local token, meta = ARGV[3 * k - 1], ARGV[3 * k]
  local reply, bar, attempts, max, created, finished = claim(id, token, recs[k], ended)
  if reply then
    out[k] = reply
  else
    ended[id] = token
    done[#done + 1] = id
    stored[#stored + 1] = id
    stored[#stored + 1] = rec_ended(recs[k], bar, num(math.max(tonumber(attempts) - 1, 0)), max, created, finished, token, nil, meta)
    out[k] = {1, snow}
  end
end
if #done == 0 then
  return out
end
redis.call('ZREM', KEYS[2], unpack(done))
redis.call('HSET', KEYS[1], unpack(stored))
-- LPUSH puts each in front of the one before: push the last first, so the
-- jobs keep their order at the front of the list.
local front = {}
for i = #done, 1, -1 do
  front[#front + 1] = done[i]
end
redis.call('LPUSH', KEYS[3], unpack(front))
wake(KEYS[4])
return out
