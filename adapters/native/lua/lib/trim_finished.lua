-- trim_finished drops the oldest records of a finished set (completed or
-- failed, scored by finish time) past its retention: older than keep_ms,
-- then beyond most (-1: no count limit), at most 100 plus extra (the jobs
-- this call just added) per call, record and all.
local function trim_finished(set_key, jobs_key, now_ms, keep_ms, most, extra)
  local limit = 100 + extra
  local old = redis.call('ZRANGEBYSCORE', set_key, '-inf', '(' .. num(now_ms - keep_ms), 'LIMIT', 0, limit)
  if #old == 0 and most >= 0 then
    local over = redis.call('ZCARD', set_key) - most
    if over > 0 then
      old = redis.call('ZRANGE', set_key, 0, math.min(over, limit) - 1)
    end
  end
  if #old > 0 then
    redis.call('ZREM', set_key, unpack(old))
    redis.call('HDEL', jobs_key, unpack(old))
  end
end
