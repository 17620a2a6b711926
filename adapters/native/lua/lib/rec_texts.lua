-- rec_texts returns the last error and the name of record s (bar: the
-- position of its '|'), for the filters of retry_failed.
local function rec_texts(s, bar)
  local colon = string.find(s, ':', bar + 1, true)
  local n = tonumber(string.sub(s, bar + 1, colon - 1))
  local err = string.sub(s, colon + 1, colon + n)
  local pos = colon + n + 1
  colon = string.find(s, ':', pos, true) -- the metadata, skipped
  pos = colon + tonumber(string.sub(s, pos, colon - 1)) + 1
  colon = string.find(s, ':', pos, true)
  n = tonumber(string.sub(s, pos, colon - 1))
  return err, string.sub(s, colon + 1, colon + n)
end
