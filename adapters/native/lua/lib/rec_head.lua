-- rec_head reads the fixed fields that lead record s of job id: the
-- position of the '|' that ends them, then attempts, tok, max, created,
-- finished and ftok. An unreadable record is an error of the script (the
-- host then sends each job of a batch alone).
local function rec_head(s, id)
  local bar = string.find(s, '|', 1, true)
  if bar then
    local attempts, tok, max, created, finished, ftok =
      string.match(string.sub(s, 1, bar - 1), '^(%d*),(%d*),(%d*),(%d*),(%d*),(%d*)$')
    if attempts then
      return bar, attempts, tok, max, created, finished, ftok
    end
  end
  error('native: unreadable record of job ' .. id)
end
