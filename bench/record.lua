-- ns per call of profile_marker(id, i), and per pair of profile_begin(cat),
-- profile_end(), tracing on and off, against a C function that takes the
-- same arguments and does nothing (called as often), in the same run.
--   lua5.4 bench/record.lua [calls]      (make bench)
local p = require "jobque_profile"
local core = require "jobque.core"

local N = math.tointeger(tonumber(arg[1] or "")) or 1000000
local ROUNDS = 15
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
local ns = {noop = {}, off = {}, on = {}}
local ratio = {off = {}, on = {}}
for r = 1, ROUNDS do -- each round measures all three back to back: drift hits them alike
  local base = run(noop, id)
  p.profile_stop()
  local off = run(marker, id)
  p.profile_start(N)
  local on = run(marker, id)
  p.profile_stop()
  ns.noop[r], ns.off[r], ns.on[r] = base, off, on
  ratio.off[r], ratio.on[r] = off / base, on / base
end
local cat = p.profile_category("bench span")
local begin, finish = p.profile_begin, p.profile_end
local function run_pair(f, g)
  local t0 = now()
  for _ = 1, N do
    f(cat)
    g()
  end
  return (now() - t0) / N
end
local pair_ns = {noop = {}, off = {}, on = {}}
local pair_ratio = {off = {}, on = {}}
for r = 1, ROUNDS do
  local base = run_pair(noop, noop)
  p.profile_stop()
  local off = run_pair(begin, finish)
  p.profile_start(2 * N)
  local on = run_pair(begin, finish)
  p.profile_stop()
  pair_ns.noop[r], pair_ns.off[r], pair_ns.on[r] = base, off, on
  pair_ratio.off[r], pair_ratio.on[r] = off / base, on / base
end
print(("record path, %d calls x %d rounds, medians, clock %s"):format(N, ROUNDS, core.clock_source))
print(("  no-op C function       %6.1f ns/call"):format(median(ns.noop)))
print(("  profile_marker, off    %6.1f ns/call   %.2fx the no-op (target <= 1.10x)")
  :format(median(ns.off), median(ratio.off)))
print(("  profile_marker, on     %6.1f ns/call   %.2fx the no-op (target <= 2.00x)")
  :format(median(ns.on), median(ratio.on)))
print(("  two no-op calls        %6.1f ns/pair"):format(median(pair_ns.noop)))
print(("  profile_begin + _end, off %6.1f ns/pair %.2fx the two no-ops (target <= 1.10x)")
  :format(median(pair_ns.off), median(pair_ratio.off)))
print(("  profile_begin + _end, on  %6.1f ns/pair %.2fx the two no-ops (target <= 2.00x)")
  :format(median(pair_ns.on), median(pair_ratio.on)))
