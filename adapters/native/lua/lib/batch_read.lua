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
