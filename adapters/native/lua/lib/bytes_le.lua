-- bytes_le reports whether string a sorts at or before b byte by byte, as
-- Redis orders the members of equal score in a sorted set. (Lua's own
-- comparison follows the server's locale, which need not be bytewise.)
local function bytes_le(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return #a <= #b
end
