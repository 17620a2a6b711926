-- list_sorted: one page of the jobs of a state kept in a sorted set
-- (active, delayed, failed or completed), in score order, each with its
-- score and its record cut before the payload. A page starts after its
-- cursor, the score and ID of the last job of the page before: a position
-- in the order, not a job, so it holds while workers move jobs in and
-- out, and a job that left the set meanwhile is simply not listed again.
-- KEYS: 1 the state's set, 2 jobs
-- ARGV: 1 most jobs (1..1000), 2 'desc' for the highest scores first,
--       anything else for the lowest, 3 cursor score ('' for the first
--       page), 4 cursor ID
-- Returns {more (1: jobs follow this page, 0: it is the last), id1,
-- score1, record1, id2, ...}. A member without a record is left out.
--
-- include: bytes_le page_skip rec_strip
local limit = tonumber(ARGV[1])
local desc = ARGV[2] == 'desc'
local from, skip = '-inf', 0
if desc then
  from = '+inf'
end
if ARGV[3] ~= '' then
  from = ARGV[3]
  skip = page_skip(KEYS[1], from, ARGV[4], desc)
end
-- One more than the page, to tell whether another follows.
local got
if desc then
  got = redis.call('ZREVRANGEBYSCORE', KEYS[1], from, '-inf', 'WITHSCORES', 'LIMIT', skip, limit + 1)
else
  got = redis.call('ZRANGEBYSCORE', KEYS[1], from, '+inf', 'WITHSCORES', 'LIMIT', skip, limit + 1)
end
local n = math.min(#got / 2, limit)
local out = {0}
if #got / 2 > limit then
  out[1] = 1
end
if n == 0 then
  return out
end
local ids = {}
for i = 1, n do
  ids[i] = got[2 * i - 1]
end
local recs = redis.call('HMGET', KEYS[2], unpack(ids))
for i = 1, n do
  if recs[i] then
    out[#out + 1] = ids[i]
    out[#out + 1] = got[2 * i]
    out[#out + 1] = rec_strip(recs[i])
  end
end
return out
