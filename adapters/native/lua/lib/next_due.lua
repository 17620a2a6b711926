-- The fire time, in ms, of the earliest delayed job, or -1.
local function next_due(delayed_key)
  local head = redis.call('ZRANGE', delayed_key, 0, 0, 'WITHSCORES')
  if #head == 0 then
    return -1
  end
  return math.floor(tonumber(head[2]) / 4096)
end
