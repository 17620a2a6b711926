-- cancel_ack: a worker confirms that it stopped running jobs an operator
-- cancelled (the held job dropped, or its handler's context cancelled):
-- each job's entry in the cancelling hash is cleared, only if it is still
-- the entry of the reservation named (a job retried and cancelled again
-- since has an entry of its own, which stays). Queue.Cancel, waiting for
-- the confirmation, clears the entry the same way once the lease ran out.
-- KEYS: 1 cancelling
-- ARGV: pairs of job id and the token of the reservation cancelled
-- Returns how many entries were cleared.
local clear = {}
for i = 1, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local entry = redis.call('HGET', KEYS[1], id)
  if entry and string.sub(entry, 1, #token + 1) == token .. ',' then
    clear[#clear + 1] = id
  end
end
if #clear > 0 then
  redis.call('HDEL', KEYS[1], unpack(clear))
end
return #clear
