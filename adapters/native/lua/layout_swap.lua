-- layout_swap: replaces a sharded queue's layout, if it is still the one
-- the caller read (a compare-and-set: two changes of N at once cannot both
-- win, and neither overwrites a layout it did not see).
-- KEYS: 1 the layout
-- ARGV: 1 the layout as the caller read it ("" for none), 2 the new one
-- Returns 1 when the layout was replaced, 0 when it had changed.
local have = redis.call('GET', KEYS[1]) or ''
if have ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2])
return 1
