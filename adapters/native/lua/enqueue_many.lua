-- enqueue_many: adds a batch of jobs, each checked and added exactly as
-- enqueue adds one (same record, same clock reading, same wait list or
-- delayed set), with one call per command for the whole batch: one HMGET
-- to find the IDs already taken, one HSET of every new record, one RPUSH
-- of the jobs to run at once (in batch order) and one ZADD of
-- the delayed ones (in batch order within a millisecond), then at most one
-- wake-up. The host sends at most 1000 jobs a call, which keeps every
-- variadic call far inside Lua's stack limit and the call short.
-- KEYS: 1 jobs, 2 wait, 3 delayed, 4 marker, and for a shard of a sharded
--       queue 5 the shard's layout epoch
-- ARGV: with KEYS[5], first the epoch of the layout the producer holds;
--       then six per job, as enqueue's: id, payload, name, max attempts
--       (0 = the worker's rule), delay (microseconds), metadata (packed, ""
--       for none)
-- Returns one code per job, in order: 0 the ID is taken (by a job stored
-- before this call, or by an earlier job of the batch: the first of a
-- repeated ID wins, as with one enqueue after the other), 1 waiting,
-- 2 delayed; or, before anything is written, a STALELAYOUT error when the
-- producer's layout is older than the shard's (see fence).
--
-- include: num now_us fire_ms wake delayed_score schedule_all batch_read rec_new fence
local o = 0 -- where the jobs' arguments start, less one
if KEYS[5] then
  local stale = fence(KEYS[5], tonumber(ARGV[1]))
  if stale then
    return stale
  end
  o = 1
end
local us = now_us()
local created = num(math.floor(us / 1000))
local ids, taken = batch_read(KEYS[1], 1 + o, 6)
local out, recs, wait, delayed, mine = {}, {}, {}, {}, {}
for j, id in ipairs(ids) do
  if taken[j] or mine[id] then
    out[j] = 0
  else
    mine[id] = true
    local a = (j - 1) * 6 + o
    recs[#recs + 1] = id
    recs[#recs + 1] = rec_new(ARGV[a + 4], created, ARGV[a + 3], ARGV[a + 6], ARGV[a + 2])
    local delay = tonumber(ARGV[a + 5])
    if delay > 0 then
      delayed[#delayed + 1] = {id, fire_ms(us, delay)}
      out[j] = 2
    else
      wait[#wait + 1] = id
      out[j] = 1
    end
  end
end
if #recs > 0 then
  redis.call('HSET', KEYS[1], unpack(recs))
end
if #wait > 0 then
  redis.call('RPUSH', KEYS[2], unpack(wait))
  wake(KEYS[4])
end
if #delayed > 0 then
  schedule_all(KEYS[3], KEYS[4], delayed)
end
return out
