-- cancel: an operator ends a job for good. A waiting or delayed job leaves
-- its list or set; a running one leaves the active set, its lease taken
-- from its worker; either way the job moves to the failed set at once,
-- its attempts as they are and the cancel's text as its last error. The
-- record's ftok becomes '0' followed by the token of the reservation that
-- was running it ('0' alone when none was): no reservation has such a
-- token, so that worker's outcome is refused like a stale one's, and its
-- lease renewal (extend) or the refusal tells it that an operator, not a
-- reclaim, took the job. Cancelling a running job also counts in the
-- queue's control hash, which every reserve reports (a worker that sees
-- the count change renews its leases at once), and wakes an idle worker.
-- A running job cancelled owes the give-up call of its attempt (ended
-- permanent, ErrCancelled), recorded here as fail records the calls it
-- owes: under the lease its worker held on the job, whose worker makes the
-- call when it learns of the cancel and clears the record (give_up_done);
-- should it die first, a worker with a hook takes the call over once that
-- lease ran out (give_up_claim).
-- A running job cancelled is also recorded in the cancelling hash (its
-- token and lease deadline) until its worker confirms that it stopped it
-- (cancel_ack: the held job dropped, or the handler's context cancelled),
-- and its token is published on the queue's cancels channel, so that a
-- worker subscribed there learns of it at once. Queue.Cancel waits for
-- that confirmation, or for the lease deadline, past which the worker
-- starts no held job without a round trip that shows it the cancel.
-- KEYS: 1 jobs, 2 wait, 3 due, 4 active, 5 delayed, 6 failed, 7 completed,
--       8 control, 9 marker, 10 giveup, 11 giveup hash, 12 cancelling
-- ARGV: 1 id, 2 error text, 3 failed retention ms (> 0), 4 most failed
--       jobs kept (-1 = no count limit), 5 the cancels channel
-- Returns {1, state it was in} cancelled, and for a running job also its
-- lease deadline (ms), the server's time (ms) and the token of the
-- reservation cancelled: {1, 'active', lease, now, token}; {-2} unknown
-- job; {-5, state} not cancelled: the job is completed or failed already.
--
-- include: num now_us wake rec_head rec_ended job_state trim_finished give_up_call
local id = ARGV[1]
local state, rec = job_state(id)
if not state then
  return {-2}
end
if state == 'completed' or state == 'failed' then
  return {-5, state}
end
local bar, attempts, tok, max, created = rec_head(rec, id)
local now = math.floor(now_us() / 1000)
local lease
if state == 'active' then
  lease = redis.call('ZSCORE', KEYS[4], id)
  redis.call('ZREM', KEYS[4], id)
  redis.call('ZADD', KEYS[10], lease, id)
  redis.call('HSET', KEYS[11], id, give_up_call(tok, attempts, max ~= '' and max or '0', '1', ARGV[2]))
  redis.call('HSET', KEYS[12], id, tok .. ',' .. lease)
  redis.call('HINCRBY', KEYS[8], 'cancels', 1)
  redis.call('PUBLISH', ARGV[5], tok)
  wake(KEYS[9])
elseif state == 'delayed' then
  redis.call('ZREM', KEYS[5], id)
elseif redis.call('LREM', KEYS[3], 1, id) == 0 then
  redis.call('LREM', KEYS[2], 1, id)
end
redis.call('HSET', KEYS[1], id, rec_ended(rec, bar, attempts, max, created, num(now), '0' .. tok, #ARGV[2] .. ':' .. ARGV[2], '-'))
redis.call('ZADD', KEYS[6], num(now), id)
trim_finished(KEYS[6], KEYS[1], now, tonumber(ARGV[3]), tonumber(ARGV[4]), 1)
if lease then
  return {1, state, lease, num(now), tok}
end
return {1, state}
