-- give_up_claim: takes over give-up calls owed by workers whose lease on
-- the call ran out (they died between storing the give-up and calling
-- their hook, see fail): each one's lease is renewed for the caller, so
-- that no other worker takes it while the caller's hook runs, and it is
-- handed out with the job's record, read for the job's name and metadata
-- (the record may be gone: retention or an operator's delete).
-- KEYS: 1 giveup, 2 giveup hash, 3 jobs
-- ARGV: 1 most calls, 2 the caller's lease on each, ms
-- Returns {id1, call1, record1, id2, ...} (call: see give_up_call; record
-- "" when the job has none).
--
-- include: num now_us
local now = math.floor(now_us() / 1000)
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', num(now), 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
if #ids == 0 then
  return out
end
local calls = redis.call('HMGET', KEYS[2], unpack(ids))
local recs = redis.call('HMGET', KEYS[3], unpack(ids))
local renew, gone = {}, {}
local deadline = num(now + tonumber(ARGV[2]))
for k, id in ipairs(ids) do
  if calls[k] then
    renew[#renew + 1] = deadline
    renew[#renew + 1] = id
    out[#out + 1] = id
    out[#out + 1] = calls[k]
    out[#out + 1] = recs[k] or ''
  else
    gone[#gone + 1] = id -- nothing left to tell
  end
end
if #renew > 0 then
  redis.call('ZADD', KEYS[1], 'XX', unpack(renew))
end
if #gone > 0 then
  redis.call('ZREM', KEYS[1], unpack(gone))
end
return out
