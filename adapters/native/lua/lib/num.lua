-- Scores and times are integers beyond 2^31; tostring would print them in
-- exponent form with 14 digits, so every number sent to Redis goes through num.
local function num(x)
  return string.format('%.0f', x)
end
