-- Shared helpers, prepended to every script of this package when it is
-- loaded. They touch no key of their own: every key comes from KEYS.

-- Scores and times are integers beyond 2^31; tostring would print them in
-- exponent form with 14 digits, so every number sent to Redis goes through num.
local function num(x)
  return string.format('%.0f', x)
end

-- The server clock in microseconds. Doubles hold it exactly (< 2^53).
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The delayed score: fire time in ms times 0x1000, plus a sequence number
-- that keeps jobs due in the same millisecond in FIFO order.
local function delayed_score(fire_ms, counter_key)
  local seq = redis.call('INCR', counter_key) % 4096
  return fire_ms * 4096 + seq
end

-- The fire time, in ms, of a delay given in microseconds: now plus the
-- delay, rounded up to the next whole millisecond, so a job never becomes due
-- before now + delay and is late by less than a millisecond.
local function fire_ms(us, delay_us)
  return math.floor((us + delay_us + 999) / 1000)
end

-- Moves up to 1000 due jobs from the delayed set to the back of the wait
-- list, oldest fire time first. Returns how many moved.
local function promote_due(delayed_key, wait_key, now_ms)
  local due = redis.call('ZRANGEBYSCORE', delayed_key, 0, num((now_ms + 1) * 4096 - 1), 'LIMIT', 0, 1000)
  if #due > 0 then
    redis.call('ZREM', delayed_key, unpack(due))
    redis.call('RPUSH', wait_key, unpack(due))
  end
  return #due
end

-- The fire time, in ms, of the earliest delayed job, or -1.
local function next_due(delayed_key)
  local head = redis.call('ZRANGE', delayed_key, 0, 0, 'WITHSCORES')
  if #head == 0 then
    return -1
  end
  return math.floor(tonumber(head[2]) / 4096)
end

-- Wakes one idle worker blocked on the marker.
local function wake(marker_key)
  redis.call('ZADD', marker_key, 0, 'w')
end

-- Adds id to the delayed set at fire_ms and wakes an idle worker only when
-- the job is now the earliest due: an idle worker already has a timer for
-- the earliest fire time, and learns the next one when that timer fires.
local function schedule(delayed_key, counter_key, marker_key, id, fire)
  redis.call('ZADD', delayed_key, num(delayed_score(fire, counter_key)), id)
  local head = redis.call('ZRANGE', delayed_key, 0, 0)
  if head[1] == id then
    wake(marker_key)
  end
end

-- Checks the caller's lease token. Returns nil when it holds the lease;
-- otherwise the reply the script must return: unknown job, already finished
-- with this very token (a retried call whose first reply was lost), or stale.
local function lease_refused(job_key, leases_key, id, token)
  if redis.call('EXISTS', job_key) == 0 then
    return {-2}
  end
  if redis.call('HGET', leases_key, id) == token then
    return nil
  end
  if redis.call('HGET', job_key, 'ftok') == token then
    return {0}
  end
  return {-1}
end
