-- ns per call of profile_marker(id, i), tracing on and off, against a C
-- function that takes the same arguments and does nothing, in the same run.
--   lua5.4 bench/record.lua [calls]      (make bench)
local p = require "jobque_profile"
local core = require "jobque.core"

local N = math.tointeger(tonumber(arg[1] or "")) or 2000000
local ROUNDS = 11
local now = core.monotonic_ns

local function run(f, id)
  local t0 = now()
  for i = 1, N do f(id, i) end
  return (now() - t0) / N
end

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local id = p.profile_marker_id("bench")
local noop, marker = core.noop, p.profile_marker
local res = {noop = {}, off = {}, on = {}}
for _ = 1, ROUNDS do -- interleaved, so drift hits every variant alike
  res.noop[#res.noop + 1] = run(noop, id)
  p.profile_stop()
  res.off[#res.off + 1] = run(marker, id)
  p.profile_start(N)
  res.on[#res.on + 1] = run(marker, id)
  p.profile_stop()
end
local base, off, on = median(res.noop), median(res.off), median(res.on)
print(("record path, %d calls x %d rounds (median), clock %s"):format(N, ROUNDS, core.clock_source))
print(("  no-op C function       %6.1f ns/call"):format(base))
print(("  profile_marker, off    %6.1f ns/call   %.2fx the no-op (target <= 1.10x)"):format(off, off / base))
print(("  profile_marker, on     %6.1f ns/call   %.2fx the no-op (target <= 2.00x)"):format(on, on / base))
