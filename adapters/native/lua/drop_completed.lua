-- drop_completed: deletes the oldest completed jobs of a shard that a
-- change of N drops (FinishReshard), record and all, at most ARGV[1] a
-- call: their history goes, as retention would take it, since no process
-- serves or looks in the shard once the change is finished.
-- KEYS: 1 completed, 2 jobs
-- ARGV: 1 the most to delete (1..1000)
-- Returns how many were deleted.
local ids = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #ids > 0 then
  redis.call('ZREM', KEYS[1], unpack(ids))
  redis.call('HDEL', KEYS[2], unpack(ids))
end
return #ids
