-- schedule for many jobs at once: jobs is a list of {id, fire_ms}, added in
-- order with one INCRBY and one ZADD. The wake-up is the same as that of
-- scheduling each in turn: some job of the list was the earliest due right
-- after its own add exactly when one of them is the earliest due at the end.
local function schedule_all(delayed_key, counter_key, marker_key, jobs)
  local first = redis.call('INCRBY', counter_key, #jobs) - #jobs
  local args, mine = {}, {}
  for i, j in ipairs(jobs) do
    args[#args + 1] = delayed_score(j[2], first + i)
    args[#args + 1] = j[1]
    mine[j[1]] = true
  end
  redis.call('ZADD', delayed_key, unpack(args))
  local head = redis.call('ZRANGE', delayed_key, 0, 0)
  if head[1] and mine[head[1]] then
    wake(marker_key)
  end
end
