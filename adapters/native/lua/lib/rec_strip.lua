-- rec_strip returns record s without its payload (everything after the
-- three length-prefixed strings), for listings: a page of jobs does not
-- carry their payloads. A record it cannot read is returned whole.
local function rec_strip(s)
  local bar = string.find(s, '|', 1, true)
  if not bar then
    return s
  end
  local pos = bar + 1
  for _ = 1, 3 do
    local colon = string.find(s, ':', pos, true)
    local n = colon and tonumber(string.sub(s, pos, colon - 1))
    if not n then
      return s
    end
    pos = colon + n + 1
  end
  return string.sub(s, 1, pos - 1)
end
