-- give_up_call packs what an owed give-up call tells (the giveup hash's
-- value for a job): the token of the attempt that gave the job up, its
-- number, the cap it ran under, whether it was permanent ('1') or
-- exhausted ('0'), then the error text. The Go side (giveup.go) reads the
-- same layout.
--   <token>,<attempt>,<max>,<permanent>|<error text>
local function give_up_call(token, attempt, max, permanent, err)
  return token .. ',' .. attempt .. ',' .. max .. ',' .. permanent .. '|' .. err
end
