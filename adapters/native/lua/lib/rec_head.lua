-- rec_head reads the fixed fields that lead record s of job id: the
-- position of the '|' that ends them, then attempts, tok, max, created,
-- finished and ftok. An unreadable record is an error of the script (the
-- host then sends each job of a batch alone). One match reads the fields
-- and the position of the '|' (a position capture) straight from s: a
-- find, then a match on a copy of the head, made two strings more a job
-- and a scan of the head twice, on every outcome's path.
local function rec_head(s, id)
  local attempts, tok, max, created, finished, ftok, bar =
    string.match(s, '^(%d*),(%d*),(%d*),(%d*),(%d*),(%d*)()|')
  if attempts then
    return bar, attempts, tok, max, created, finished, ftok
  end
  error('native: unreadable record of job ' .. id)
end
