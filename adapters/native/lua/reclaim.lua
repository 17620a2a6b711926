-- reclaim: lists jobs whose lease has expired, with the token of that lease
-- and the job's record. It changes nothing: the host decides each job's
-- delay and sends it through fail with the reclaim flag, which re-checks
-- that the lease is still expired and still the one listed.
-- KEYS: 1 active, 2 jobs
-- ARGV: 1 most jobs to list
-- Returns {id1, token1, record1, id2, ...} (token and record "" for an
-- unknown job or an unreadable record).
--
-- include: num now_us
local now = math.floor(now_us() / 1000)
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', num(now), 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
if #ids == 0 then
  return out
end
local recs = redis.call('HMGET', KEYS[2], unpack(ids))
for k, id in ipairs(ids) do
  local rec = recs[k] or ''
  out[#out + 1] = id
  out[#out + 1] = string.match(rec, '^%d*,(%d*),') or ''
  out[#out + 1] = rec
end
return out
