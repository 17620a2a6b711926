-- schedule for many jobs at once: jobs is a list of {id, fire_ms}, added in
-- order with one ZADD (and one lookup of the last place taken per fire
-- millisecond, see delayed_score). The wake-up is the same as that of
-- scheduling each in turn: some job of the list was the earliest due right
-- after its own add exactly when one of them is the earliest due at the end.
local function schedule_all(delayed_key, marker_key, jobs)
  local args, mine, placed = {}, {}, {}
  for _, j in ipairs(jobs) do
    args[#args + 1] = delayed_score(delayed_key, j[2], placed)
    args[#args + 1] = j[1]
    mine[j[1]] = true
  end
  redis.call('ZADD', delayed_key, unpack(args))
  local head = redis.call('ZRANGE', delayed_key, 0, 0)
  if head[1] and mine[head[1]] then
    wake(marker_key)
  end
end
