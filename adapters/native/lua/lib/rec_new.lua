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
--
-- rec_new returns the record of a job just enqueued: no attempt started,
-- no lease, no error, not finished. It is one concatenation (a single Lua
-- CONCAT of its parts): enqueueing is the hottest path of a producer.
local function rec_new(max, created, name, meta, payload)
  return '0,,' .. max .. ',' .. created .. ',,|0:' .. #meta .. ':' .. meta .. #name .. ':' .. name .. payload
end
