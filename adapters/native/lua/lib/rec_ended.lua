-- rec_ended rebuilds record s (bar: the position of its '|') for an
-- attempt that ended: the lease is released, ftok is the ending
-- reservation's token, finished is set as given, the error replaced when
-- err is not nil and the metadata when meta is not '-'. Only what leads the
-- record is rewritten; the rest (name, payload) is copied as it is.
local function rec_ended(s, bar, attempts, max, created, finished, token, err, meta)
  local head = attempts .. ',,' .. max .. ',' .. created .. ',' .. finished .. ',' .. token .. '|'
  if err == nil and meta == '-' then
    return head .. string.sub(s, bar + 1)
  end
  local colon = string.find(s, ':', bar + 1, true)
  local pos = colon + tonumber(string.sub(s, bar + 1, colon - 1)) + 1
  if err == nil then
    err = string.sub(s, bar + 1, pos - 1)
  else
    err = #err .. ':' .. err
  end
  if meta == '-' then
    return head .. err .. string.sub(s, pos)
  end
  colon = string.find(s, ':', pos, true)
  return head .. err .. #meta .. ':' .. meta .. string.sub(s, colon + tonumber(string.sub(s, pos, colon - 1)) + 1)
end
