-- Wakes one idle worker blocked on the marker.
local function wake(marker_key)
  redis.call('ZADD', marker_key, 0, 'w')
end
