-- rec_ended rebuilds record s (bar: the position of its '|') for an
-- attempt that ended: the lease is released, ftok is the ending
-- reservation's token, finished is set as given, the error replaced when
-- err is not nil (err is the new error as the record holds it, led by its
-- byte length and ':', so a batch that ends many jobs with one error text
-- turns its length into text once) and the metadata when meta is not '-'. Only what leads the
-- record is rewritten; the rest (name, payload) is copied as it is. Each
-- case builds the record in one concatenation (one Lua CONCAT of all its
-- parts): a head built first and then joined to the rest made one string
-- more per outcome, and a packed error built first one more again.
local function rec_ended(s, bar, attempts, max, created, finished, token, err, meta)
  if err == nil and meta == '-' then
    return attempts .. ',,' .. max .. ',' .. created .. ',' .. finished .. ',' .. token .. '|' .. string.sub(s, bar + 1)
  end
  local colon = string.find(s, ':', bar + 1, true)
  local pos = colon + tonumber(string.sub(s, bar + 1, colon - 1)) + 1
  if meta == '-' then
    return attempts .. ',,' .. max .. ',' .. created .. ',' .. finished .. ',' .. token .. '|' ..
      err .. string.sub(s, pos)
  end
  colon = string.find(s, ':', pos, true)
  local after = colon + tonumber(string.sub(s, pos, colon - 1)) + 1
  if err == nil then
    return attempts .. ',,' .. max .. ',' .. created .. ',' .. finished .. ',' .. token .. '|' ..
      string.sub(s, bar + 1, pos - 1) .. #meta .. ':' .. meta .. string.sub(s, after)
  end
  return attempts .. ',,' .. max .. ',' .. created .. ',' .. finished .. ',' .. token .. '|' ..
    err .. #meta .. ':' .. meta .. string.sub(s, after)
end
