-- A few thousand jobs in a random graph with random failures: every job's
-- result or error arrives, none is lost, none runs twice.
local jobque = require "jobque"
local p = require "jobque_profile"
local S = require "support"

local N = S.sanitized and 500 or 1500 -- a third under a sanitizer host

-- The plan: each job depends on up to three earlier ones and fails on its
-- own one time in ten. How it gets its dependencies' values varies:
-- 1 = q:after(deps) then wait (already done), 2 = awaits the handles itself,
-- 3 = submits a child that awaits them, and awaits the child.
local function make_plan(seed)
  math.randomseed(seed)
  local plan = {}
  for i = 1, N do
    local deps = {}
    for _ = 1, (i > 1 and math.random(0, 3) or 0) do deps[#deps + 1] = math.random(1, i - 1) end
    plan[i] = {deps = deps, fails = math.random() < 0.1, mode = math.random(1, 3)}
  end
  return plan
end

-- What each job should deliver, computed here without the queue.
local function expectations(plan)
  local value, failed = {}, {}
  for i, step in ipairs(plan) do
    local sum, bad = i, step.fails
    for _, d in ipairs(step.deps) do
      bad = bad or failed[d]
      sum = sum + (value[d] or 0)
    end
    failed[i] = bad
    value[i] = not bad and sum or nil
  end
  return value, failed
end

local function body(i, fails, mode, ...)
  local deps = {...}
  require("jobque_profile").profile_marker("soak run", i)
  local function sum_of(list)
    local s = 0
    for _, d in ipairs(list) do s = s + d:wait() end
    return s
  end
  local s
  if mode == 3 and #deps > 0 then
    local q = require("jobque").current()
    s = q:submit(sum_of, deps):wait()
  else
    s = sum_of(deps)
  end
  if fails then error("job " .. i .. " fails", 0) end
  return i + s
end

local function run(workers, seed)
  local plan = make_plan(seed)
  local value, failed = expectations(plan)
  p.profile_start(200000)
  jobque.with_job_que({workers = workers}, function(q)
    local jobs = {}
    for i, step in ipairs(plan) do
      local handles = {}
      for k, d in ipairs(step.deps) do handles[k] = jobs[d] end
      if step.mode == 1 then
        jobs[i] = q:after(handles, body, i, step.fails, step.mode, table.unpack(handles))
      else
        jobs[i] = q:submit(body, i, step.fails, step.mode, table.unpack(handles))
      end
    end
    -- Every failure nobody looked at is reported once, and is a failure.
    local job_of = {}
    for i = 1, N do job_of[jobs[i]:id()] = i end
    local ok_all, reported = q:pwait_all()
    local seen = {}
    for _, f in ipairs(ok_all and {} or reported) do
      local i = job_of[f.id]
      assert.is_true(i ~= nil and failed[i], "reported job #" .. f.id .. " did not fail")
      assert.is_nil(seen[f.id], "job #" .. f.id .. " reported twice")
      seen[f.id] = true
    end
    for i = 1, N do
      local ok, v = jobs[i]:pwait()
      assert.are.equal(not failed[i], ok, "job " .. i .. ": " .. tostring(v))
      if ok then assert.are.equal(value[i], v, "job " .. i) end
      assert.are.equal(ok and "done" or "failed", jobs[i]:status())
    end
  end)
  p.profile_stop()
  -- Runs: a job that ran stamped one marker; none ran twice; none that
  -- depended (by q:after) on a failed job ran at all.
  local runs = {}
  for _, ev in ipairs(S.markers(S.save(p), "soak run")) do
    runs[ev.args.arg] = (runs[ev.args.arg] or 0) + 1
  end
  for i, step in ipairs(plan) do
    local dep_failed = false
    for _, d in ipairs(step.deps) do dep_failed = dep_failed or failed[d] end
    if step.mode == 1 and dep_failed then
      assert.is_nil(runs[i], "job " .. i .. " ran although a dependency failed")
    else
      assert.are.equal(1, runs[i], "job " .. i .. " ran " .. tostring(runs[i]) .. " times")
    end
  end
end

describe("a random job graph with failures", function()
  after_each(function() p.profile_stop() end)
  it("delivers every result and error exactly once on 1 worker", function() run(1, 11) end)
  it("delivers every result and error exactly once on 2 workers", function() run(2, 22) end)
  it("delivers every result and error exactly once on 8 workers", function() run(8, 33) end)
end)
