-- enqueue: adds one job to run at once, at the back of the wait list (a job
-- with a delay goes through enqueue_delayed instead).
-- KEYS: 1 jobs, 2 wait, 3 marker, and for a shard of a sharded queue 4 the
--       shard's layout epoch
-- ARGV: 1 id, 2 payload, 3 max attempts (0 = the worker's rule), 4 the
--       metadata (packed by the host, "" for none) then the name, each led
--       by its byte length and ':', as the record holds them, and with
--       KEYS[4] 5 the epoch of the layout the producer holds
-- Returns 0 when the ID is taken, 1 when the job is waiting; a STALELAYOUT
-- error when the producer's layout is older than the shard's (see fence).
--
-- This is the hottest script of a producer, so it carries only what a job
-- to run at once needs: three keys, three helpers, the clock read as text
-- (no arithmetic: the job needs no fire time), the record's texts packed
-- by the host, and HSETNX, which is the
-- check for a taken ID too (one command instead of HEXISTS then HSET; a
-- redis.call costs about as much as the work it does).
--
-- include: now_ms_text wake rec_new_packed fence
if KEYS[4] then
  local stale = fence(KEYS[4], tonumber(ARGV[5]))
  if stale then
    return stale
  end
end
if redis.call('HSETNX', KEYS[1], ARGV[1], rec_new_packed(ARGV[3], now_ms_text(), ARGV[4], ARGV[2])) == 0 then
  return 0
end
redis.call('RPUSH', KEYS[2], ARGV[1])
wake(KEYS[3])
return 1
