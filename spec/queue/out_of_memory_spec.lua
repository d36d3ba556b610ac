-- Out of memory, on a worker or in the caller's binding: the job (or the
-- call) fails with "not enough memory", the queue and the process go on.
-- The testing build's allocation-failure hook (_test.fail_alloc) fails the
-- n-th allocation of the worker states (or of the calling state), swept
-- over every n of a job's life: the queue's start, the copy of arguments,
-- a run, an await, results copied back, an error with its traceback. Each
-- sweep runs in a child process, so a PANIC (an unprotected error) is a
-- failed spec, not a crashed busted; under AddressSanitizer the child also
-- checks leaks at its exit.
local S = require "support"

-- The child: sweeps n over the allocations the scenario makes in `target`
-- ("workers" or "caller"), `count` failures in a row ("all": until
-- disarmed), every `stride`-th n. Prints one line per point and a summary.
local CHILD = [==[
local jobque = require "jobque"
local T = require("jobque.core")._test
local target, count, stride = arg[1], tonumber(arg[2]), tonumber(arg[3])

local function life(q)
  local j = q:submit(function(t)
    local cur = require("jobque").current()
    local child = cur:submit(function(x) return {x, ("%d"):format(x)} end, t.n)
    local r = child:wait() -- an await; a table copied back
    local ok, err = cur:submit(function() error("boom") end):pwait() -- a traceback
    return r[2], ok, err
  end, {n = 42})
  return j:pwait()
end

local function has_oom(s)
  return type(s) == "string" and s:find("not enough memory", 1, true) ~= nil
end

-- One point: "ok" (the job's life went through, an inner job may have run
-- out of memory) or "oom" (the queue's creation, a call, or the job failed
-- with "not enough memory"); anything else is an error.
local function point(n)
  local q
  local function attempt()
    q = jobque.new {workers = 1}
    return life(q)
  end
  T.fail_alloc(target, n, count) -- armed: nothing allocates outside the pcall until disarmed
  local ok, done, a, b, c = pcall(attempt)
  T.fail_alloc(target, 0)
  local outcome
  if not ok then
    assert(has_oom(done), ("n=%d: raised %s"):format(n, tostring(done)))
    outcome = "oom"
  elseif not done then
    assert(has_oom(a), ("n=%d: the job failed with %s"):format(n, tostring(a)))
    outcome = "oom"
  else
    assert(a == "42" and b == false, ("n=%d: results %s %s"):format(n, tostring(a), tostring(b)))
    assert(c:find("boom", 1, true) or has_oom(c), ("n=%d: inner error %s"):format(n, c))
    outcome = "ok"
  end
  if q then -- the queue goes on
    assert(q:submit(function(x) return x + 1 end, 1):wait() == 2, "the next job")
    q:close()
  end
  return outcome
end

-- How many allocations the scenario makes in the target, unarmed.
T.fail_alloc(target, 0)
local before = T.allocs(target)
assert(point(0) == "ok")
local total = T.allocs(target) - before
local seen = {ok = 0, oom = 0}
for n = 1, total + 1, stride do
  io.write(n, " "); io.flush()
  local outcome = point(n)
  seen[outcome] = seen[outcome] + 1
end
collectgarbage()
collectgarbage()
assert(T.live_queues() == 0, "queues left alive: " .. T.live_queues())
print(("\nswept %d allocations: %d ok, %d oom"):format(total, seen.ok, seen.oom))
]==]

local function sweep(target, count, stride)
  local script = S.tmpfile("oom_child.lua")
  S.write(script, CHILD)
  local cmd = ("LUA_PATH='lua/?.lua;;' LUA_CPATH='%s' timeout 600 %s '%s' %s %s %d 2>&1"):format(
    package.cpath, S.lua, script, target, count, stride)
  local h = io.popen(cmd)
  local out = h:read("a")
  local _, _, code = h:close()
  return code, out
end

local function check_sweep(target, count)
  local stride = S.sanitized and 3 or 1
  local code, out = sweep(target, count, stride)
  local tail = out:sub(-3000)
  assert.are.equal(0, code, "the child exited with " .. tostring(code) .. ":\n" .. tail)
  local total, ok, oom = out:match("swept (%d+) allocations: (%d+) ok, (%d+) oom")
  assert.is_truthy(total, tail)
  assert.is_true(tonumber(total) > 100, tail) -- the scenario allocates: the hook saw it
  assert.is_true(tonumber(oom) > 0, tail)     -- some points failed
  assert.is_true(tonumber(ok) > 0, tail)      -- and the ones past the end did not
end

describe("out of memory", function()
  it("on a worker fails the job with 'not enough memory', at every allocation of its life", function()
    check_sweep("workers", "all")
  end)

  it("on a worker, for two allocations only, leaves the worker working", function()
    check_sweep("workers", 2)
  end)

  it("in the caller's binding raises 'not enough memory' and leaks nothing", function()
    check_sweep("caller", 2)
  end)

  it("arms and disarms the hook through the testing module only with valid arguments", function()
    local T = require("jobque.core")._test
    assert.has_error(function() T.fail_alloc("everyone", 1) end)
    assert.has_error(function() T.fail_alloc("workers", -1) end)
    assert.has_error(function() T.fail_alloc("workers", 1, 0) end)
    T.fail_alloc("workers", 0)
  end)
end)
