-- A job is one field of the queue's jobs hash: its ID maps to one packed
-- record, so a waiting job costs one hash entry and no key of its own.
--   <attempts>,<tok>,<max>,<created>,<finished>,<ftok>|<n>:<err><n>:<meta><n>:<name><payload>
-- attempts: attempts started; tok: the token of the reservation that holds
-- the job's lease ("" while no attempt runs); max: the job's own cap (0:
-- the worker's rule); created, finished: server ms ("" until finished);
-- ftok: the token of the reservation that last finished an attempt (""
-- before; '0' and a token once an operator cancelled the job, see
-- cancel.lua); the three strings carry their byte length, the ones an attempt
-- changes first; the payload is the rest. The Go side (record.go) reads the
-- same layout.
local function rec_encode(r)
  return table.concat({r.attempts, ',', r.tok, ',', r.max, ',', r.created, ',', r.finished, ',', r.ftok, '|',
    #r.err, ':', r.err, #r.meta, ':', r.meta, #r.name, ':', r.name, r.payload})
end
