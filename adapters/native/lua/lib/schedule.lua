-- Adds id to the delayed set at fire_ms and wakes an idle worker only when
-- the job is now the earliest due: an idle worker already has a timer for
-- the earliest fire time, and learns the next one when that timer fires.
local function schedule(delayed_key, marker_key, id, fire)
  redis.call('ZADD', delayed_key, delayed_score(delayed_key, fire, {}), id)
  local head = redis.call('ZRANGE', delayed_key, 0, 0)
  if head[1] == id then
    wake(marker_key)
  end
end
