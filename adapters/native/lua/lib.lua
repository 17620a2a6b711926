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

-- The fire time, in ms, of a delay given in microseconds: now plus the
-- delay, rounded up to the next whole millisecond, so a job never becomes due
-- before now + delay and is late by less than a millisecond.
local function fire_ms(us, delay_us)
  return math.floor((us + delay_us + 999) / 1000)
end

-- Moves up to 1000 due jobs from the delayed set to the back of the due
-- list, oldest fire time first. Returns how many moved. A score below zero
-- (no fire time this package writes) counts as due rather than parking its
-- job for good.
local function promote_due(delayed_key, due_key, now_ms)
  -- Everything scored below the next millisecond's first score, which is
  -- a multiple of 4096 and so exact as a double whatever the fire time.
  local due = redis.call('ZRANGEBYSCORE', delayed_key, '-inf', '(' .. num((now_ms + 1) * 4096), 'LIMIT', 0, 1000)
  if #due > 0 then
    redis.call('ZREM', delayed_key, unpack(due))
    redis.call('RPUSH', due_key, unpack(due))
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

-- The delayed score: fire time in ms times 0x1000, plus a sequence number
-- (taken from counter_key) that keeps jobs due in the same millisecond in
-- FIFO order. A double holds every integer only up to 2^53, which the
-- score passes with fire times after 2039-09-07T15:47:35.551Z (2^41 ms):
-- from there the score is the fire time alone, still exact, so a job is
-- never due early, and jobs due in the same millisecond run in the order
-- of their IDs instead.
local function delayed_score(fire_ms, seq)
  if fire_ms >= 2199023255552 then
    return num(fire_ms * 4096)
  end
  return num(fire_ms * 4096 + seq % 4096)
end

-- Adds id to the delayed set at fire_ms and wakes an idle worker only when
-- the job is now the earliest due: an idle worker already has a timer for
-- the earliest fire time, and learns the next one when that timer fires.
local function schedule(delayed_key, counter_key, marker_key, id, fire)
  local seq = redis.call('INCR', counter_key)
  redis.call('ZADD', delayed_key, delayed_score(fire, seq), id)
  local head = redis.call('ZRANGE', delayed_key, 0, 0)
  if head[1] == id then
    wake(marker_key)
  end
end

-- schedule for many jobs at once: jobs is a list of {id, fire_ms}, added in
-- order with one INCRBY and one ZADD. The wake-up is the same as that of
-- scheduling each in turn: some job of the list was the earliest due right
-- after its own add exactly when one of them is the earliest due at the end.
local function schedule_all(delayed_key, counter_key, marker_key, jobs)
  local first = redis.call('INCRBY', counter_key, #jobs) - #jobs
  local args, mine = {}, {}
  for i, j in ipairs(jobs) do
    args[#args + 1] = delayed_score(j[2], first + i)
    args[#args + 1] = j[1]
    mine[j[1]] = true
  end
  redis.call('ZADD', delayed_key, unpack(args))
  local head = redis.call('ZRANGE', delayed_key, 0, 0)
  if head[1] and mine[head[1]] then
    wake(marker_key)
  end
end

-- A job is one field of the queue's jobs hash: its ID maps to one packed
-- record, so a waiting job costs one hash entry and no key of its own.
--   <attempts>,<tok>,<max>,<created>,<finished>,<ftok>|<n>:<err><n>:<meta><n>:<name><payload>
-- attempts: attempts started; tok: the token of the reservation that holds
-- the job's lease ("" while no attempt runs); max: the job's own cap (0:
-- the worker's rule); created, finished: server ms ("" until finished);
-- ftok: the token of the reservation that last finished an attempt (""
-- before); the three strings carry their byte length, the ones an attempt
-- changes first; the payload is the rest. The Go side (record.go) reads the
-- same layout.
local function rec_encode(r)
  return table.concat({r.attempts, ',', r.tok, ',', r.max, ',', r.created, ',', r.finished, ',', r.ftok, '|',
    #r.err, ':', r.err, #r.meta, ':', r.meta, #r.name, ':', r.name, r.payload})
end

-- rec_head reads the fixed fields that lead record s of job id: the
-- position of the '|' that ends them, then attempts, tok, max, created,
-- finished and ftok. An unreadable record is an error of the script (the
-- host then sends each job of a batch alone).
local function rec_head(s, id)
  local bar = string.find(s, '|', 1, true)
  if bar then
    local attempts, tok, max, created, finished, ftok =
      string.match(string.sub(s, 1, bar - 1), '^(%d*),(%d*),(%d*),(%d*),(%d*),(%d*)$')
    if attempts then
      return bar, attempts, tok, max, created, finished, ftok
    end
  end
  error('native: unreadable record of job ' .. id)
end

-- claim checks that token holds the lease of job id, whose record is rec
-- (nil: unknown job); ended maps the jobs this call already ended to the
-- token that ended them, so that a job sent twice in one batch is answered
-- as a second call would be. When token does not hold the lease it returns
-- the reply for the job: {-1} an empty token or another reservation's, {0}
-- a reservation that already ended the job, {-2} an unknown job. When it
-- does, it returns nil and the record's fixed fields, as rec_head.
local function claim(id, token, rec, ended)
  if token == '' then
    return {-1} -- no reservation has an empty token
  end
  if ended[id] then
    if ended[id] == token then
      return {0}
    end
    return {-1}
  end
  if not rec then
    return {-2}
  end
  local bar, attempts, holder, max, created, finished, ftok = rec_head(rec, id)
  if holder ~= token then
    if ftok == token then
      return {0}
    end
    return {-1}
  end
  return nil, bar, attempts, max, created, finished
end

-- rec_ended rebuilds record s (bar: the position of its '|') for an
-- attempt that ended: the lease is released, ftok is the ending
-- reservation's token, finished is set as given, the error replaced when
-- err is not nil and the metadata when meta is not '-'. Only what leads the
-- record is rewritten; the rest (name, payload) is copied as it is.
local function rec_ended(s, bar, attempts, max, created, finished, token, err, meta)
  local head = attempts .. ',,' .. max .. ',' .. created .. ',' .. finished .. ',' .. token .. '|'
  if err == nil and meta == '-' then
    return head .. string.sub(s, bar + 1)
  end
  local colon = string.find(s, ':', bar + 1, true)
  local pos = colon + tonumber(string.sub(s, bar + 1, colon - 1)) + 1
  if err == nil then
    err = string.sub(s, bar + 1, pos - 1)
  else
    err = #err .. ':' .. err
  end
  if meta == '-' then
    return head .. err .. string.sub(s, pos)
  end
  colon = string.find(s, ':', pos, true)
  return head .. err .. #meta .. ':' .. meta .. string.sub(s, colon + tonumber(string.sub(s, pos, colon - 1)) + 1)
end

-- trim_finished drops the oldest records of a finished set (completed or
-- failed, scored by finish time) past its retention: older than keep_ms,
-- then beyond most (-1: no count limit), at most 100 plus extra (the jobs
-- this call just added) per call, record and all.
local function trim_finished(set_key, jobs_key, now_ms, keep_ms, most, extra)
  local limit = 100 + extra
  local old = redis.call('ZRANGEBYSCORE', set_key, '-inf', '(' .. num(now_ms - keep_ms), 'LIMIT', 0, limit)
  if #old == 0 and most >= 0 then
    local over = redis.call('ZCARD', set_key) - most
    if over > 0 then
      old = redis.call('ZRANGE', set_key, 0, math.min(over, limit) - 1)
    end
  end
  if #old > 0 then
    redis.call('ZREM', set_key, unpack(old))
    redis.call('HDEL', jobs_key, unpack(old))
  end
end

-- batch_read returns the job IDs of a batched call (ARGV[first], then every
-- stride-th argument) with their records, read with one HMGET for the
-- whole batch: a redis.call costs about as much as the work it does.
local function batch_read(jobs_key, first, stride)
  local ids = {}
  for i = first, #ARGV, stride do
    ids[#ids + 1] = ARGV[i]
  end
  if #ids == 0 then
    return ids, {}
  end
  return ids, redis.call('HMGET', jobs_key, unpack(ids))
end
