-- The sampler of Lua code: options, timers, what a sample is attributed to,
-- its frames, its limits. Samples are read back from the saved file.
local p = require "jobque_profile"
local jobque = require "jobque"
local T = require("jobque.core")._test
local S = require "support"
local cjson = require "cjson"

-- Runs `code` (a Lua chunk) in a fresh interpreter with our modules;
-- returns its exit status and output.
local function run_fresh(code)
  local path = S.tmpfile("fresh.lua")
  S.write(path, code)
  local cmd = ("LUA_PATH='lua/?.lua;;' LUA_CPATH='%s' %s '%s' 2>&1"):format(package.cpath, S.lua, path)
  local h = io.popen(cmd)
  local out = h:read("a")
  local ok = h:close()
  return ok, out
end

local function timers()
  local n = 0
  for line in io.lines("/proc/self/timers") do
    if line:match("^ID: ") then n = n + 1 end
  end
  return n
end

-- The samples of a decoded trace as {lane = name, stack = {root..leaf},
-- weight, cat, job, line}.
local function samples_of(trace)
  local lanes = {}
  for _, e in ipairs(trace.traceEvents) do
    if e.ph == "M" and e.name == "thread_name" then lanes[e.tid] = e.args.name end
  end
  local frames = trace.stackFrames or {}
  local out = {}
  for _, s in ipairs(trace.samples or {}) do
    local stack, id = {}, s.sf
    while id do
      table.insert(stack, 1, assert(frames[id], "unknown sf " .. id).name)
      id = frames[id].parent
    end
    out[#out + 1] = {lane = lanes[s.tid], stack = stack, weight = s.weight, cat = s.name,
                     job = s.args and s.args.job, line = s.args and s.args.line}
  end
  return out
end

local function lane_info(trace, name)
  for _, l in ipairs(trace.jobqueProfile.laneInfo) do
    if l.name == name then return l end
  end
end

local function has_frame(stack, pattern)
  for _, f in ipairs(stack) do
    if f:find(pattern) then return true end
  end
  return false
end

-- Burns about `cpu` seconds of this thread's CPU in pure Lua.
local function burn(cpu)
  local t = T.thread_cpu_ns()
  local x = 0
  while T.thread_cpu_ns() - t < cpu * 1e9 do
    for i = 1, 1000 do x = x + i % 3 end
  end
  return x
end

local SCALE = S.sanitized and 0.25 or 1

describe("sampling options", function()
  after_each(function() p.profile_stop() end)

  it("raises the issue's messages for bad options and keeps the last session", function()
    p.profile_start(64)
    p.profile_marker("before", 7)
    p.profile_stop()
    local function msg(...)
      return (S.err_of(p.profile_start, ...):gsub("^[^:]*:%d+: ", ""))
    end
    assert.are.equal("profile_start: unknown option 'sampel_hz' (known: sample_hz, sample_depth)",
                     msg(64, {sampel_hz = 1000}))
    assert.are.equal("profile_start: option 'sample_hz' must be an integer from 0 to 10000, got 20000",
                     msg(64, {sample_hz = 20000}))
    assert.are.equal("profile_start: option 'sample_hz' must be an integer from 0 to 10000, got -1",
                     msg(64, {sample_hz = -1}))
    assert.are.equal("profile_start: option 'sample_hz' must be an integer from 0 to 10000, got 1.5",
                     msg(64, {sample_hz = 1.5}))
    assert.are.equal("profile_start: option 'sample_depth' must be an integer from 1 to 256, got 0",
                     msg(64, {sample_hz = 100, sample_depth = 0}))
    assert.are.equal("profile_start: option 'sample_depth' must be an integer from 1 to 256, got 257",
                     msg(64, {sample_depth = 257}))
    assert.are.equal("bad argument #2 to 'jobque_profile.profile_start' (table expected, got string)",
                     msg(64, "x"))
    assert.is_false(p.profile_is_on())
    local trace = S.save(p) -- the session before the failed starts
    assert.are.equal(1, #S.markers(trace, "before"))
    assert.are.equal(0, timers())
  end)
end)

describe("not asked, not done", function()
  it("makes no timer, leaves SIGPROF alone and writes no samples", function()
    local ok, out = run_fresh([[
      local p = require "jobque_profile"
      local T = require("jobque.core")._test
      local before = T.sigprof()
      p.profile_start(4096, {sample_depth = 8})
      local n = 0
      for line in io.lines("/proc/self/timers") do n = n + 1 end
      local x = 0
      for i = 1, 1e6 do x = x + i end
      p.profile_stop()
      p.profile_marker("m")
      local path = os.tmpname()
      p.profile_start(4096); p.profile_marker("m"); p.profile_stop()
      assert(p.profile_save(path))
      local f = io.open(path); local text = f:read("a"); f:close(); os.remove(path)
      print(before, T.sigprof(), n, text:find('"samples"', 1, true) ~= nil,
            text:find('"stackFrames"', 1, true) ~= nil, text:find('"sampling"', 1, true) ~= nil)
    ]])
    assert.is_true(ok, out)
    assert.are.equal("default\tdefault\t0\tfalse\tfalse\tfalse\n", out)
  end)

  it("refuses to sample when SIGPROF has another handler, and keeps it", function()
    local ok, out = run_fresh([[
      local p = require "jobque_profile"
      local T = require("jobque.core")._test
      p.profile_start(4096); p.profile_marker("kept"); p.profile_stop()
      print(T.sigprof(true))
      print(pcall(p.profile_start, 4096, {sample_hz = 100}))
      print(T.sigprof(), p.profile_is_on(), p.profile_save(os.tmpname()))
    ]])
    assert.is_true(ok, out)
    assert.are.equal("other\n" ..
      "false\tprofile_start: cannot sample: this process already has a SIGPROF handler (another profiler?)\n" ..
      "other\tfalse\ttrue\n", out)
  end)
end)

describe("a sampling session", function()
  after_each(function() p.profile_stop() end)

  it("samples the caller's Lua, and stop ends every timer and every tick", function()
    p.profile_start(65536, {sample_hz = 1000})
    assert.are.equal(1, timers())
    burn(0.3 * SCALE)
    p.profile_stop()
    assert.are.equal(0, timers())
    local runs = T.sampler_stats().handler_runs
    burn(0.1)
    assert.are.equal(runs, T.sampler_stats().handler_runs)
    local trace = S.save(p)
    local sampling = trace.jobqueProfile.sampling
    assert.are.equal(1000, sampling.hz)
    assert.are.equal(1000000, sampling.periodNs)
    assert.are.equal(64, sampling.depth)
    assert.is_true(sampling.signals > 0 and sampling.ticks >= sampling.signals)
    local all = samples_of(trace)
    assert.is_true(#all > 0)
    local in_burn = 0
    for _, s in ipairs(all) do
      assert.are.equal("caller", s.lane)
      if has_frame(s.stack, "^burn %(") then in_burn = in_burn + 1 end
    end
    assert.is_true(in_burn > 0)
  end)

  it("gives a parked worker no samples, and a caller blocked in wait_all no Lua samples", function()
    local busy = jobque.new{workers = 1, name = "busy"}
    local idle = jobque.new{workers = 1, name = "idle"}
    -- Both workers have lanes (they recorded before): timers at the start.
    p.profile_start(65536)
    busy:submit(function() return 1 end):wait()
    idle:submit(function() return 1 end):wait()
    p.profile_stop()
    p.profile_start(65536, {sample_hz = 1000})
    assert.are.equal(3, timers())
    local job = busy:submit(function(cpu)
      local t = require("jobque.core")._test
      local t0, x = t.thread_cpu_ns(), 0
      while t.thread_cpu_ns() - t0 < cpu * 1e9 do for i = 1, 1000 do x = x + i end end
      return x
    end, 0.3 * SCALE)
    busy:wait_all()
    p.profile_stop()
    assert.is_number(job:wait())
    local trace = S.save(p)
    local by_lane = {}
    for _, s in ipairs(samples_of(trace)) do
      by_lane[s.lane] = (by_lane[s.lane] or 0) + 1
      if s.lane == "caller" then
        assert.are.equal(1, #s.stack)
        assert.truthy(s.stack[1]:match("^%[.*%]$"), s.stack[1])
      end
    end
    assert.is_nil(by_lane["idle 0"])
    local info = lane_info(trace, "idle 0")
    assert.is_true(info == nil or info.samples == 0)
    assert.is_true(by_lane["busy 0"] > 0)
    busy:close()
    idle:close()
  end)

  it("samples a queue without workers and the caller outside jobs on the caller lane", function()
    local q = jobque.new{workers = 0}
    local cat = p.profile_category("inline")
    p.profile_start(65536, {sample_hz = 1000})
    local ids = {}
    p.profile_tag(cat)
    for _ = 1, 4 do
      local job = q:submit(function(cpu)
        local t = require("jobque.core")._test
        local t0, x = t.thread_cpu_ns(), 0
        while t.thread_cpu_ns() - t0 < cpu * 1e9 do for k = 1, 1000 do x = x + k end end
        return x
      end, 0.08 * SCALE)
      ids[job:id()] = true
    end
    p.profile_tag(0)
    q:wait_all()
    burn(0.1 * SCALE)
    p.profile_stop()
    local in_jobs, outside = 0, 0
    for _, s in ipairs(samples_of(S.save(p))) do
      assert.are.equal("caller", s.lane)
      if s.job then
        assert.is_true(ids[s.job])
        assert.are.equal("inline", s.cat)
        in_jobs = in_jobs + 1
      elseif has_frame(s.stack, "^burn %(") then
        outside = outside + 1
      end
    end
    assert.is_true(in_jobs > 0 and outside > 0)
    q:close()
  end)
end)
