-- reclaim: lists jobs whose lease has expired, with the token of that lease
-- and the job's record. It changes nothing: the host decides each job's
-- delay and sends it through fail with the reclaim flag, which re-checks
-- that the lease is still expired and still the one listed.
-- KEYS: 1 active, 2 leases, 3 jobs
-- ARGV: 1 most jobs to list
-- Returns {id1, token1, record1, id2, ...} (record "" for an unknown job).
local now = math.floor(now_us() / 1000)
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', num(now), 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
for _, id in ipairs(ids) do
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', KEYS[2], id) or ''
  out[#out + 1] = redis.call('HGET', KEYS[3], id) or ''
end
return out
