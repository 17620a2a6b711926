-- retry_failed: one bounded step of sending failed jobs back to run, the
-- oldest failure first: each job whose name and last error match the
-- filters leaves the failed set for the back of the wait list, as retry
-- moves one. A step reads at most ARGV[7] jobs, about ARGV[8] bytes of
-- records and does about ARGV[9] steps of matching (a job's text times
-- its pattern's cost, see glob), so that one call never holds Redis for
-- long, whatever the jobs and the patterns; the caller goes on from the
-- cursor it returns. Jobs that failed after the first step
-- (until) are left alone, so that a job retried here that fails again is
-- not retried twice.
-- KEYS: 1 jobs, 2 failed, 3 wait, 4 marker
-- ARGV: 1 reset the attempts (1) or keep them (0), 2 name pattern, 3
--       error pattern (globs, see glob; '' matches anything), 4 until:
--       the latest finish time (ms) taken, '' for now, 5 cursor score (''
--       to start at the oldest), 6 cursor ID, 7 most jobs read (1..1000),
--       8 most record bytes read, 9 most matching steps, 10 the length
--       from which glob searches a literal part by KMP
-- Returns {moved, until, done (1: no failed job is left to look at, 0:
-- go on from the cursor), cursor score, cursor ID}.
--
-- include: num now_us rec_head rec_ended bytes_le page_skip glob rec_texts wake
local reset = ARGV[1] == '1'
local long = tonumber(ARGV[10])
local by_name, by_err
local name_cost, err_cost = 0, 0
if ARGV[2] ~= '' then
  by_name, name_cost = glob(ARGV[2], long)
end
if ARGV[3] ~= '' then
  by_err, err_cost = glob(ARGV[3], long)
end
local until_ms = ARGV[4]
if until_ms == '' then
  until_ms = num(math.floor(now_us() / 1000))
end
local from, skip = '-inf', 0
if ARGV[5] ~= '' then
  from = ARGV[5]
  skip = page_skip(KEYS[2], from, ARGV[6], false)
end
local limit, budget, work = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local got = redis.call('ZRANGEBYSCORE', KEYS[2], from, until_ms, 'WITHSCORES', 'LIMIT', skip, limit)
local done = 1
if #got / 2 == limit then
  done = 0
end
local moved, stored, back = 0, {}, {}
local last_score, last_id = ARGV[5], ARGV[6]
for i = 1, #got, 2 do
  local id = got[i]
  local rec = redis.call('HGET', KEYS[1], id)
  last_score, last_id = got[i + 1], id
  if rec then
    budget = budget - #rec
    local bar, attempts, _, max, created, _, ftok = rec_head(rec, id)
    local err, name = rec_texts(rec, bar)
    work = work - #name * name_cost - #err * err_cost
    if (not by_name or by_name(name)) and (not by_err or by_err(err)) then
      if reset then
        attempts = '0'
      end
      stored[#stored + 1] = id
      stored[#stored + 1] = rec_ended(rec, bar, attempts, max, created, '', ftok, nil, '-')
      back[#back + 1] = id
      moved = moved + 1
    end
  end
  if (budget <= 0 or work <= 0) and i + 1 < #got then
    done = 0 -- the rest of this step's jobs wait for the next one
    break
  end
end
if moved > 0 then
  redis.call('ZREM', KEYS[2], unpack(back))
  redis.call('HSET', KEYS[1], unpack(stored))
  redis.call('RPUSH', KEYS[3], unpack(back))
  wake(KEYS[4])
end
return {moved, until_ms, done, last_score, last_id}
