-- pause: an operator stops the queue's workers from taking jobs (reserve
-- reads the flag); running jobs go on and finish, and due jobs are still
-- promoted. The flag holds the server time it was set at (ms).
-- KEYS: 1 control
-- Returns 1 paused now, 0 it already was.
--
-- include: num now_us
return redis.call('HSETNX', KEYS[1], 'paused', num(math.floor(now_us() / 1000)))
