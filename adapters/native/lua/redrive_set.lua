-- redrive_set: an operator pauses or cancels the queue's redrive: the
-- process driving it sees the state at its next step and sends nothing
-- more (paused: until resumed; cancelled: for good). Jobs already sent
-- stay sent.
-- KEYS: 1 redrive
-- ARGV: 1 'paused' or 'cancelled'
-- Returns {1, state before} set; {-2} no redrive; {-5, state} it has
-- ended (done or cancelled).
--
-- include: num now_us
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  return {-2}
end
if state ~= 'running' and state ~= 'paused' then
  return {-5, state}
end
local now = math.floor(now_us() / 1000)
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'updated', num(now))
if ARGV[1] == 'cancelled' then
  redis.call('HSET', KEYS[1], 'finished', num(now))
end
return {1, state}
