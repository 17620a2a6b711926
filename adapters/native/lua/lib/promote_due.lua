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
