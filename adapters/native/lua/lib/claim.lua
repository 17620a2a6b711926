-- claim checks that token holds the lease of job id, whose record is rec
-- (nil: unknown job); ended maps the jobs this call already ended to the
-- token that ended them, so that a job sent twice in one batch is answered
-- as a second call would be. When token does not hold the lease it returns
-- the reply for the job: {-1} an empty token or another reservation's, {0}
-- a reservation that already ended the job, {-2} an unknown job. When it
-- does, it returns nil and the record's fixed fields, as rec_head.
local function claim(id, token, rec, ended)
  if token == '' then
    return {-1} -- no reservation has an empty token
  end
  if ended[id] then
    if ended[id] == token then
      return {0}
    end
    return {-1}
  end
  if not rec then
    return {-2}
  end
  local bar, attempts, holder, max, created, finished, ftok = rec_head(rec, id)
  if holder ~= token then
    if ftok == token then
      return {0}
    end
    return {-1}
  end
  return nil, bar, attempts, max, created, finished
end
