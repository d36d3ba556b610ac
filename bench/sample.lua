-- The sampler's cost: a CPU-bound job graph on 2 workers (400 jobs of
-- about 5 ms of pure-Lua loops, the stack about 20 frames deep through a
-- recursive helper), run with sampling off, at 1 kHz and at 10 kHz, each
-- run in a fresh process, the three alternating for ROUNDS rounds.
-- Prints the medians of run time and process CPU time, the ratios against
-- off, and the cost per signal: (CPU with sampling - CPU without) / signals.
--   lua5.4 bench/sample.lua [rounds]      (make bench)
local core = require "jobque.core"

local JOBS, WORKERS, DEPTH = 400, 2, 18

-- One run in this process: `hz` 0 is off. Prints "wall_ns cpu_s signals".
local function child(hz, iters)
  local p = require "jobque_profile"
  local jobque = require "jobque"
  local q = jobque.new{workers = WORKERS}
  local path = os.tmpname()
  p.profile_start(65536, {sample_hz = hz})
  local t0, c0 = core.monotonic_ns(), os.clock()
  for _ = 1, JOBS do
    q:submit(function(n, depth)
      local function spin(m)
        local x = 0
        for i = 1, m do x = x + i % 3 end
        return x
      end
      local function deep(d)
        if d == 0 then return spin(n) end
        return deep(d - 1) + 0 -- not a tail call: the frame stays
      end
      return deep(depth)
    end, iters, DEPTH)
  end
  q:wait_all()
  local wall, cpu = core.monotonic_ns() - t0, os.clock() - c0
  p.profile_stop()
  q:close()
  assert(p.profile_save(path))
  local f = assert(io.open(path))
  local text = f:read("a")
  f:close()
  os.remove(path)
  local signals = hz > 0 and tonumber(text:match('"sampling":%b{}'):match('"signals":(%d+)')) or 0
  print(wall, cpu, signals)
end

local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  return s[(#s + 1) // 2]
end

-- The cost of one sample from its signal's handler to the ring, without
-- the kernel's delivery: `n` handler runs (_test.sampler_tick, a testing
-- build's) at a stack `depth` frames deep, each sampled at the next
-- instruction, against the same loop calling a C function that does
-- nothing much. Prints "ns per sample" (the median of 5).
local function one_sample_ns(n, depth)
  local T = assert(core._test, "bench/sample.lua needs a testing build (-DJOBQUE_TESTING=ON)")
  local p = require "jobque_profile"
  p.profile_start(6 * n, {sample_hz = 1}) -- sampling on, room for every sample; its timer all but silent
  local function loop(f)
    local t0 = core.monotonic_ns()
    for _ = 1, n do f() end
    return core.monotonic_ns() - t0
  end
  local function deep(d, f)
    if d == 0 then return loop(f) end
    return deep(d - 1, f) + 0 -- not a tail call: the frame stays
  end
  local diffs = {}
  for r = 1, 5 do
    local with = deep(depth, T.sampler_tick)
    local without = deep(depth, T.thread_cpu_ns)
    diffs[r] = (with - without) / n
  end
  p.profile_stop()
  table.sort(diffs)
  return diffs[3]
end

if arg[1] == "child" then
  child(tonumber(arg[2]), tonumber(arg[3]))
  return
end

-- Loop iterations that take about 5 ms here.
local function calibrate()
  local n, x = 0, 0
  local t0 = core.monotonic_ns()
  while core.monotonic_ns() - t0 < 200e6 do
    for i = 1, 10000 do x = x + i % 3 end
    n = n + 10000
  end
  return n // 40
end

local SAMPLE_NS = one_sample_ns(20000, DEPTH)

local ROUNDS = math.max(7, math.tointeger(tonumber(arg[1] or "")) or 7)
local iters = calibrate()
local lua = arg[-1] or "lua5.4"
local runs = {[0] = {}, [1000] = {}, [10000] = {}}
local ORDER = {0, 1000, 10000}
for round = 1, ROUNDS do
  for k = 0, 2 do -- each round starts with the next one: none is always first
    local hz = ORDER[(round + k) % 3 + 1]
    local h = assert(io.popen(("%s bench/sample.lua child %d %d"):format(lua, hz, iters)))
    local wall, cpu, signals = h:read("n", "n", "n")
    assert(h:close() and wall, "a run failed")
    local r = runs[hz]
    r[#r + 1] = {wall = wall, cpu = cpu, signals = signals}
  end
end

local function col(hz, key)
  local t = {}
  for i, r in ipairs(runs[hz]) do t[i] = r[key] end
  return t
end

local off_wall, off_cpu = median(col(0, "wall")), median(col(0, "cpu"))
print(("sampling, %d jobs of ~5 ms on %d workers, stack ~%d deep, %d rounds, medians"):format(
  JOBS, WORKERS, DEPTH + 2, ROUNDS))
print(("  off        %7.1f ms run  %6.2f s CPU"):format(off_wall / 1e6, off_cpu))
for _, hz in ipairs{1000, 10000} do
  local ratios, per_signal = {}, {}
  for i, r in ipairs(runs[hz]) do
    local off = runs[0][i]
    ratios[i] = r.wall / off.wall
    per_signal[i] = r.signals > 0 and (r.cpu - off.cpu) / r.signals * 1e6 or 0
  end
  print(("  %5d Hz   %7.1f ms run  %6.2f s CPU  %6d signals  run %.3fx off  %5.1f us CPU per signal"):format(
    hz, median(col(hz, "wall")) / 1e6, median(col(hz, "cpu")), median(col(hz, "signals")),
    median(ratios), median(per_signal)))
end
print(("  one sample, handler to ring, stack ~%d deep: %.2f us (the kernel's delivery not counted)"):format(
  DEPTH + 3, SAMPLE_NS / 1e3))
