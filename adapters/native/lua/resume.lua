-- resume: an operator lets the queue's workers take jobs again, and wakes
-- an idle one if jobs wait (it passes the wake-up on while more do).
-- KEYS: 1 control, 2 wait, 3 due, 4 marker
-- Returns 1 resumed now, 0 it was not paused.
--
-- include: wake
local was = redis.call('HDEL', KEYS[1], 'paused')
if redis.call('LLEN', KEYS[2]) > 0 or redis.call('LLEN', KEYS[3]) > 0 then
  wake(KEYS[4])
end
return was
