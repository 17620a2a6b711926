-- fence checks, for a script that adds jobs to a shard of a sharded queue,
-- that the producer's view of the queue's layout (epoch e, the layout's
-- number) is not older than the shard's: key holds the newest epoch the
-- shard has seen (none: 0). A producer holding an older layout is refused
-- with an error reply that starts STALELAYOUT and names the shard's epoch,
-- before anything is written, so it can read the layout again and send the
-- job where the new layout puts it. A newer one raises the shard's epoch,
-- so the first producer of a new layout fences the shard itself.
local function fence(key, e)
  local have = tonumber(redis.call('GET', key) or '0')
  if have > e then
    return redis.error_reply('STALELAYOUT ' .. have .. ' the shard is at layout epoch ' .. have .. ', the producer holds ' .. e)
  end
  if have < e then
    redis.call('SET', key, e)
  end
  return nil
end
