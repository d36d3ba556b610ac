-- Run under valgrind by spec/run-all.sh: exercises every path that allocates
-- (rings, registries, save, helper threads with their own states) and exits
-- through lua_close, so the library's unload frees what outlives sessions.
package.path = "lua/?.lua;spec/?.lua;" .. package.path
package.cpath = (os.getenv("JQ_BUILD") or "build") .. "/?.so;" .. package.cpath
local p = require "jobque_profile"
local T = require("jobque.core")._test
local S = require "support"

for i = 1, 50 do p.profile_category("leak cat " .. i) end
p.profile_category(500, "renamed once")
p.profile_category(500, "renamed twice")
local m = p.profile_marker_id("leak")
for size = 8, 64, 28 do
  p.profile_start(size)
  for i = 1, 100 do p.profile_marker(m, i) end
  local path, cpath = S.paths()
  T.spawn(2, [[
    local p = require "jobque_profile"
    for i = 1, 100 do p.profile_marker("leak thread", i) end
    return "ok"
  ]], path, cpath):join()
  p.profile_stop()
  local file = S.tmpfile()
  assert(p.profile_save(file))
  os.remove(file)
end
-- The queue: workers' states, jobs, failures, awaits, a close with work left.
local jobque = require "jobque"
p.profile_start(4096)
for _, workers in ipairs {0, 2} do
  local q = jobque.new {workers = workers, init = function() INIT = true end} -- luacheck: ignore
  local a = q:submit(function(t) return #t end, {1, 2, {3}})
  local b = q:after({a}, function(x) return x:wait() * 2 end, a)
  assert(b:wait() == 6)
  assert(not q:submit(function() error({code = 1}) end):pwait())
  local parent = q:submit(function()
    local c = require("jobque").current():submit(function() return 5 end)
    return c:wait()
  end)
  assert(parent:wait() == 5)
  q:parallel_for(1, 10, function(lo) return lo end)
  q:submit(function() error("nobody looks", 0) end) -- dropped by the close if unreported
  q:submit(function() while true do coroutine.yield() end end) -- cancelled by the close
  for i = 1, 5 do q:submit(function() return i end) end
  q:submit(function() -- spans across an await, one left open; counters
    local P = require "jobque_profile"
    P.profile_span("leak span", function() return require("jobque").current():submit(function() end):wait() end)
    P.profile_begin("leak open")
    P.profile_counter("leak counter", 1.5)
  end):wait()
  q:close()
  -- A scope drains, then reports what nobody looked at.
  assert(not pcall(jobque.with_job_que, {workers = workers}, function(sq)
    sq:submit(function() error({code = 2}) end)
    for i = 1, 5 do sq:after({sq:submit(function() return i end)}, function() end) end
  end))
end
-- Awaits across queues: resumed when the awaited job ends, cancelled by the
-- waiter's close (its reference stays with the awaited job until that
-- ends), and answered with the cancellation by the awaited job's close.
-- Nothing spins: `gated` sleeps in an await of `held`, whose worker sleeps
-- in T.wait_stop(), and the main thread sleeps in T.wait_marks() until the
-- waiters started.
do
  local A, B = jobque.new {workers = 2}, jobque.new {workers = 2}
  local b = B:submit(function() return 1 end)
  local a = A:submit(function(h) return h:wait() + 1 end, b)
  assert(B:submit(function(h) return h:wait() + 1 end, a):wait() == 3)
  T.stop(false)
  local H = jobque.new {workers = 1}
  local held = H:submit(function() require("jobque.core")._test.wait_stop() end)
  local gated = B:submit(function(h) return h:pwait() end, held) -- ends only by B's close
  local function started_then_wait(h)
    require("jobque.core")._test.mark()
    return h:wait()
  end
  local function started_then_pwait(h)
    require("jobque.core")._test.mark()
    return h:pwait()
  end
  local marks = T.marks()
  local w1 = A:submit(started_then_wait, gated)
  local w2 = A:submit(started_then_pwait, gated)
  T.wait_marks(marks + 2)
  A:close()
  assert(not w1:pwait() and not w2:pwait())
  local C = jobque.new {workers = 1}
  local w3 = C:submit(started_then_pwait, gated)
  T.wait_marks(marks + 3)
  B:close()
  assert(w3:wait() == false)
  C:close()
  T.stop()
  assert(held:wait() == nil)
  H:close()
end
-- Job handles holding each other through results, across two queues: the
-- closes break the cycles (each job holds its queue: none is left).
local function returns_box()
  while not _G.BOX do coroutine.yield() end
  local h = _G.BOX
  _G.BOX = nil
  return h, function() return h end
end
for _ = 1, 20 do
  local q1, q2 = jobque.new {workers = 1}, jobque.new {workers = 1}
  local a = q1:submit(returns_box)
  local b = q2:submit(function(x) return x end, a)
  q1:submit(function(x) _G.BOX = x end, b):wait()
  assert(a:wait() == b and b:wait() == a)
  local c = q2:after({q2:submit(function() while true do coroutine.yield() end end)},
    function(x) return x end, a) -- cancelled by the close, holding a
  assert(c)
  q1:close()
  q2:close()
end
-- Out of memory on a worker at a few points of a job's life: the job
-- fails, nothing leaks.
for _, n in ipairs {1, 300, 700, 900, 950, 980} do
  T.fail_alloc("workers", n, 2)
  local ok, q = pcall(jobque.new, {workers = 1})
  if ok then
    local j = q:submit(function(t) return {t[1], tostring(t[1])} end, {7})
    local done, r = j:pwait()
    assert(done and r[2] == "7" or tostring(r):find("not enough memory", 1, true), tostring(r))
  end
  T.fail_alloc("workers", 0)
  if ok then
    assert(q:submit(function() return 1 end):wait() == 1)
    q:close()
  end
end
-- Sampling: timers on the caller and two workers, the hook's name caches,
-- the lanes' sample tables, a generator's resumer chain, then the save.
do
  p.profile_start(4096, {sample_hz = 10000, sample_depth = 8})
  local q = jobque.new {workers = 2}
  local function burn(n)
    local gen = coroutine.wrap(function()
      while true do
        local x = 0
        for i = 1, n do x = x + i end
        coroutine.yield(x)
      end
    end)
    local y = 0
    for _ = 1, 20 do y = y + gen() end
    return y
  end
  for _ = 1, 6 do q:submit(burn, 20000) end
  burn(20000)
  q:wait_all()
  q:close()
  p.profile_stop()
  assert(p.profile_save(S.tmpfile()))
  assert(p.profile_save(S.tmpfile("t.pftrace"))) -- the protobuf writer, samples and all
end
collectgarbage()
collectgarbage()
assert(T.live_queues() == 0, "queues left alive: " .. T.live_queues())
p.profile_stop()
assert(p.profile_save(S.tmpfile()))
assert(not p.profile_save("/nonexistent/dir/x.json"))
assert(not p.profile_save("/nonexistent/dir/x.pftrace"))
assert(not pcall(p.profile_start, 1 << 50))
os.execute("rm -rf '" .. S.tmpdir .. "'")
print("leak check: done")
