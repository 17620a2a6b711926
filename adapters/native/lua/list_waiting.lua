-- list_waiting: one page of the waiting jobs, each with the list it is on
-- and its record cut before the payload. In run order ('asc') the due list
-- comes first, front to back, then the wait list, as workers take them;
-- 'desc' is the exact reverse. A page starts after its cursor, the last
-- job of the page before and its list; workers take jobs from the front,
-- so in run order that job stays until the jobs before it are gone. When
-- it is no longer on its list the page cannot tell where it was, and says
-- so.
-- KEYS: 1 due, 2 wait, 3 jobs
-- ARGV: 1 most jobs (1..1000), 2 'desc' or 'asc', 3 the cursor's list
--       ('' for the first page, 'due' or 'wait'), 4 the cursor's job ID
-- Returns {more (1: jobs follow this page, 0: it is the last; -1: the
-- cursor's job has left its list), id1, list1, record1, id2, ...}. A job
-- without a record is left out.
--
-- include: rec_strip
local limit = tonumber(ARGV[1])
local want = limit + 1 -- one more than the page, to tell whether another follows
local desc = ARGV[2] == 'desc'
local lists = {{KEYS[1], 'due'}, {KEYS[2], 'wait'}}
if desc then
  lists = {{KEYS[2], 'wait'}, {KEYS[1], 'due'}}
end
local li, start = 1, nil -- start: the index to go on from in lists[li], nil for its first end
if ARGV[3] ~= '' then
  if ARGV[3] ~= lists[1][2] then
    li = 2
  end
  local rank = 1
  if desc then
    rank = -1
  end
  local pos = redis.call('LPOS', lists[li][1], ARGV[4], 'RANK', rank)
  if not pos then
    return {-1}
  end
  if desc then
    start = pos - 1
  else
    start = pos + 1
  end
end
local ids, on = {}, {}
while li <= 2 and #ids < want do
  local key, name = lists[li][1], lists[li][2]
  local got = {}
  if desc then
    local hi = start or redis.call('LLEN', key) - 1
    if hi >= 0 then
      local part = redis.call('LRANGE', key, math.max(hi - (want - #ids) + 1, 0), hi)
      for i = #part, 1, -1 do
        got[#got + 1] = part[i]
      end
    end
  else
    local lo = start or 0
    got = redis.call('LRANGE', key, lo, lo + (want - #ids) - 1)
  end
  for _, id in ipairs(got) do
    ids[#ids + 1] = id
    on[#on + 1] = name
  end
  li, start = li + 1, nil
end
local out = {0}
if #ids > limit then
  out[1] = 1
  ids[#ids] = nil
end
if #ids == 0 then
  return out
end
local recs = redis.call('HMGET', KEYS[3], unpack(ids))
for i, id in ipairs(ids) do
  if recs[i] then
    out[#out + 1] = id
    out[#out + 1] = on[i]
    out[#out + 1] = rec_strip(recs[i])
  end
end
return out
