-- page_skip counts the members of set_key scored exactly score that a
-- walk in ascending order (desc: descending) has passed once it reached
-- member id: those at or before id in that order. Redis orders members of
-- equal score bytewise, so a page that starts after (score, id) skips
-- that many members from the first one scored score, whether or not id
-- is still in the set.
local function page_skip(set_key, score, id, desc)
  local n = 0
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', set_key, score, score)) do
    if (desc and bytes_le(id, m)) or (not desc and bytes_le(m, id)) then
      n = n + 1
    end
  end
  return n
end
