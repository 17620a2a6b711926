-- glob compiles pattern p, where '*' matches any run of bytes, '?' one
-- byte and '\' makes the next byte literal, into a function that reports
-- whether a whole string matches. The pattern is split at its stars into
-- segments of fixed length; the first must match at the start, the last
-- at the end, and each one between at its leftmost place after the one
-- before, which finds a match whenever there is one. So matching costs at
-- most one scan per segment, never a backtracking search, whatever the
-- pattern.
local function glob(p)
  local segs, cur, len = {}, {}, 0
  local i = 1
  while i <= #p do
    local c = string.sub(p, i, i)
    if c == '*' then
      segs[#segs + 1] = {table.concat(cur), len}
      cur, len = {}, 0
    else
      if c == '?' then
        cur[#cur + 1] = '.'
      else
        if c == '\\' and i < #p then
          i = i + 1
          c = string.sub(p, i, i)
        end
        if string.find(c, '^%w$') then
          cur[#cur + 1] = c
        else
          cur[#cur + 1] = '%' .. c
        end
      end
      len = len + 1
    end
    i = i + 1
  end
  segs[#segs + 1] = {table.concat(cur), len}
  local first, last = segs[1], segs[#segs]
  if #segs == 1 then
    local whole = '^' .. first[1] .. '$'
    return function(s)
      return string.find(s, whole) ~= nil
    end
  end
  local head, tail = '^' .. first[1], '^' .. last[1] .. '$'
  return function(s)
    local stop = #s - last[2] -- the last segment starts after stop
    if stop < first[2] or not string.find(s, head) then
      return false
    end
    local pos = first[2] + 1
    for k = 2, #segs - 1 do
      local seg = segs[k]
      if seg[2] > 0 then
        local _, e = string.find(s, seg[1], pos)
        if not e or e > stop then
          return false
        end
        pos = e + 1
      end
    end
    return string.find(string.sub(s, stop + 1), tail) ~= nil
  end
end
