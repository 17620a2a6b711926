-- give_up_done: clears owed give-up calls whose hook has returned, each
-- only if it is still the call of the attempt named (a job retried and
-- given up again since owes a call of its own, which stays).
-- KEYS: 1 giveup, 2 giveup hash
-- ARGV: pairs of job id and the token of the attempt that gave it up
-- Returns how many calls were cleared.
local ids = {}
for i = 1, #ARGV, 2 do
  ids[#ids + 1] = ARGV[i]
end
if #ids == 0 then
  return 0
end
local calls = redis.call('HMGET', KEYS[2], unpack(ids))
local clear = {}
for k, id in ipairs(ids) do
  local call = calls[k]
  local token = ARGV[2 * k]
  if call and string.sub(call, 1, #token + 1) == token .. ',' then
    clear[#clear + 1] = id
  end
end
if #clear > 0 then
  redis.call('ZREM', KEYS[1], unpack(clear))
  redis.call('HDEL', KEYS[2], unpack(clear))
end
return #clear
