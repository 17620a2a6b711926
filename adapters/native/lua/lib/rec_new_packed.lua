-- rec_new_packed is rec_new for a host that sends the metadata and the name
-- as the record holds them, each led by its byte length and ':' (texts:
-- '<n>:<meta><n>:<name>'): it saves turning the two lengths into text, a
-- C sprintf each, on the hottest path, enqueue (2.3k of its 65k
-- instructions a call, counted with callgrind).
local function rec_new_packed(max, created, texts, payload)
  return '0,,' .. max .. ',' .. created .. ',,|0:' .. texts .. payload
end
