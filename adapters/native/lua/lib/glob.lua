-- glob compiles pattern p, where '*' matches any run of bytes, '?' one
-- byte and '\' makes the next byte literal, into a function that reports
-- whether a whole string matches, and returns with it the work matching
-- may do per byte of a string (its cost; see below). long is the length
-- from which a literal part is searched by KMP rather than by
-- string.find.
--
-- The pattern is split at its stars into parts of fixed length; the
-- first must match at the start, the last at the end, and each one
-- between at its leftmost place after the one before, which finds a
-- match whenever there is one. Each part between is searched from where
-- the one before ended, so the text is read once, never a backtracking
-- search:
--   * a literal part shorter than long by string.find, plain: memchr
--     and memcmp, at most its length in byte comparisons per byte;
--   * a longer literal part by KMP, in Lua, a few steps per byte
--     whatever its length (string.find is a naive search: a part of 4000
--     'a's then '-' against 8000 'a's costs 32 million comparisons);
--   * a part holding '?' (at most 32 bytes, which the caller checks) by
--     shift-and, a bit of one 32-bit word per byte of the part, a few
--     steps per byte of text; where Lua has no bit library (a test
--     server) by string.find with a Lua pattern, at most the part's
--     length in steps per byte.
-- So the cost is the most steps per byte of text the slowest part takes,
-- in steps of string.find (a Lua loop's step counts 20), and matching a
-- string s costs at most about #s times it.
local function glob(p, long)
  local bit = rawget(_G, 'bit')
  local parts, cur = {}, {}
  local i = 1
  while i <= #p do
    local c = string.byte(p, i)
    if c == 42 then -- '*'
      parts[#parts + 1] = cur
      cur = {}
    elseif c == 63 then -- '?'
      cur[#cur + 1] = -1
    else
      if c == 92 and i < #p then -- '\'
        i = i + 1
        c = string.byte(p, i)
      end
      cur[#cur + 1] = c
    end
    i = i + 1
  end
  parts[#parts + 1] = cur

  -- Each part: its length, its text when literal, its Lua pattern when it
  -- holds '?'.
  local cost = 1
  for k = 1, #parts do
    local b = parts[k]
    local wild = false
    local lit, pat = {}, {}
    for q = 1, #b do
      local c = b[q]
      if c < 0 then
        wild = true
        pat[q] = '.'
      else
        local ch = string.char(c)
        lit[q] = ch
        if string.find(ch, '^%w$') then
          pat[q] = ch
        else
          pat[q] = '%' .. ch
        end
      end
    end
    local part = {n = #b, bytes = b}
    if wild then
      part.pat = table.concat(pat)
    else
      part.lit = table.concat(lit)
    end
    if k > 1 and k < #parts and #b > 0 then
      if wild and bit then
        cost = math.max(cost, 20)
        -- shift-and's masks: bit q-1 of masks[c] is set when byte q of
        -- the part is c or '?'; any holds the '?' bits alone.
        local any = 0
        for q = 1, #b do
          if b[q] < 0 then
            any = bit.bor(any, bit.lshift(1, q - 1))
          end
        end
        local masks = {}
        for q = 1, #b do
          local c = b[q]
          if c >= 0 then
            masks[c] = bit.bor(masks[c] or any, bit.lshift(1, q - 1))
          end
        end
        part.masks, part.any, part.top = masks, any, bit.lshift(1, #b - 1)
      elseif wild or #b < long then
        cost = math.max(cost, #b)
      else
        cost = math.max(cost, 20)
        -- KMP's failure function: fail[q] is the longest proper prefix of
        -- b[1..q] that is also its suffix.
        local fail, f = {0}, 0
        for q = 2, #b do
          while f > 0 and b[f + 1] ~= b[q] do
            f = fail[f]
          end
          if b[f + 1] == b[q] then
            f = f + 1
          end
          fail[q] = f
        end
        part.fail = fail
      end
    end
    parts[k] = part
  end

  -- at reports whether part matches s at position pos (where it fits).
  local at = function(s, part, pos)
    if part.lit then
      return string.sub(s, pos, pos + part.n - 1) == part.lit
    end
    return string.find(s, '^' .. part.pat, pos) ~= nil
  end

  -- find returns the end of part's leftmost match in s at or after pos,
  -- or nil when none ends by stop.
  local find = function(s, part, pos, stop)
    local n = part.n
    if n == 0 then
      return pos - 1
    end
    if part.masks then
      local masks, any, top = part.masks, part.any, part.top
      local band, bor, lshift, byte = bit.band, bit.bor, bit.lshift, string.byte
      local d = 0
      for j = pos, stop do
        d = band(bor(lshift(d, 1), 1), masks[byte(s, j)] or any)
        if band(d, top) ~= 0 then
          return j
        end
      end
      return nil
    end
    if not part.fail then
      local _, e
      if part.lit then
        _, e = string.find(s, part.lit, pos, true)
      else
        _, e = string.find(s, part.pat, pos)
      end
      if e and e <= stop then
        return e
      end
      return nil
    end
    local b, fail, first = part.bytes, part.fail, part.lit:sub(1, 1)
    local k, j = 0, pos
    while j <= stop do
      if k == 0 then
        -- No partial match: skip to the next first byte (memchr).
        j = string.find(s, first, j, true)
        if not j or j > stop then
          return nil
        end
        k = 1
      else
        local c = string.byte(s, j)
        while k > 0 and b[k + 1] ~= c do
          k = fail[k]
        end
        if b[k + 1] == c then
          k = k + 1
        end
      end
      if k == n then
        return j
      end
      j = j + 1
    end
    return nil
  end

  local first, last = parts[1], parts[#parts]
  if #parts == 1 then
    return function(s)
      return #s == first.n and at(s, first, 1)
    end, cost
  end
  return function(s)
    local stop = #s - last.n -- the last part starts after stop
    if stop < first.n or not at(s, first, 1) or not at(s, last, stop + 1) then
      return false
    end
    local pos = first.n + 1
    for k = 2, #parts - 1 do
      local e = find(s, parts[k], pos, stop)
      if not e then
        return false
      end
      pos = e + 1
    end
    return true
  end, cost
end
