-- The job queue: API, values crossing states, job graphs, closing.
local jobque = require "jobque"
local core = require "jobque.core"

local err_of = require("support").err_of
local T = core._test

-- The machine's count of online processors, asked of the system, not of jobque.
local function online_processors()
  local h = assert(io.popen("getconf _NPROCESSORS_ONLN"))
  local n = math.tointeger(tonumber(h:read("l")))
  h:close()
  assert(n and n > 0, "getconf gave no processor count")
  return n
end

describe("jobque.with_job_que", function()
  it("calls fn with a queue and returns fn's results", function()
    local a, b, c = jobque.with_job_que({workers = 2}, function(q)
      return q:submit(function(x, y) return x + y end, 2, 3):wait(), nil, "z"
    end)
    assert.are.equal(5, a)
    assert.is_nil(b)
    assert.are.equal("z", c)
  end)

  it("takes fn alone, with the default options", function()
    local n = jobque.with_job_que(function(q) return q:workers() end)
    assert.are.equal(online_processors(), n)
  end)

  it("closes the queue when fn returns and when it raises, re-raising the same error", function()
    local kept
    jobque.with_job_que({workers = 1}, function(q) kept = q end)
    assert.is_true(kept:is_closed())
    local obj = {code = 7}
    local ok, err = pcall(jobque.with_job_que, {workers = 1}, function(q)
      kept = q
      error(obj)
    end)
    assert.is_false(ok)
    assert.are.equal(obj, err)
    assert.is_true(kept:is_closed())
  end)

  it("checks its arguments and options, naming the option", function()
    assert.matches("expected a function", err_of(jobque.with_job_que, {}), 1, true)
    assert.matches("jobque.new: option 'workers' must be an integer from 0 to 256, got -1",
      err_of(jobque.new, {workers = -1}), 1, true)
    assert.matches("option 'workers' must be an integer from 0 to 256, got 1.5",
      err_of(jobque.new, {workers = 1.5}), 1, true)
    assert.matches("option 'workers' must be an integer from 0 to 256, got 300",
      err_of(jobque.new, {workers = 300}), 1, true)
    assert.matches("option 'init' must be a function, got string",
      err_of(jobque.new, {init = "require 'x'"}), 1, true)
    assert.matches("option 'name' must be a string", err_of(jobque.new, {name = 5}), 1, true)
    assert.matches("unknown option 'worker'", err_of(jobque.new, {worker = 2}), 1, true)
    assert.matches("options must be a table, got number", err_of(jobque.new, 4), 1, true)
    assert.matches("jobque.with_job_que: option 'workers'",
      err_of(jobque.with_job_que, {workers = "2"}, function() end), 1, true)
  end)

  it("points a bad option at the line that passed it, for new and with_job_que alike", function()
    local here = debug.getinfo(1, "S").short_src:gsub("%p", "%%%0")
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, err = pcall(function() local q = jobque.with_job_que({workers = -1}, function() end) return q end)
    assert.is_false(ok)
    assert.matches("^" .. here .. ":" .. line .. ": jobque.with_job_que: option 'workers'", err)
    line = debug.getinfo(1, "l").currentline + 1
    ok, err = pcall(function() local q = jobque.new({workers = -1}) return q end)
    assert.is_false(ok)
    assert.matches("^" .. here .. ":" .. line .. ": jobque.new: option 'workers'", err)
  end)
end)

describe("a queue", function()
  it("has one worker per processor by default, also from jobque.new()", function()
    local q <close> = jobque.new()
    assert.are.equal(online_processors(), q:workers())
    assert.are.equal(online_processors(), core.hardware_threads())
    assert.are.equal(6, q:submit(function() return 6 end):wait())
  end)

  it("shows its name and worker count in tostring, and when it is closed", function()
    local named = jobque.new {workers = 1, name = "tokens"}
    assert.are.equal("jobque.queue tokens (1 workers)", tostring(named))
    named:close()
    assert.are.equal("jobque.queue (closed)", tostring(named))
    local plain <close> = jobque.new {workers = 0}
    assert.are.equal("jobque.queue (0 workers)", tostring(plain))
  end)

  it("takes a name of up to 32 bytes, and no longer", function()
    local q <close> = jobque.new {workers = 0, name = string.rep("n", 32)}
    assert.are.equal("jobque.queue " .. string.rep("n", 32) .. " (0 workers)", tostring(q))
    assert.matches("jobque.new: option 'name' must be a string of at most 32 bytes",
      err_of(jobque.new, {workers = 0, name = string.rep("n", 33)}), 1, true)
  end)

  it("refuses an init that cannot be sent to a worker, naming the value", function()
    local up = io.stdout
    local err = err_of(jobque.new, {workers = 1, init = function() return up end})
    assert.matches("jobque.new: option 'init' cannot be sent to a worker: option 'init' #1, upvalue 'up': "
      .. "userdata cannot be sent to a worker", err, 1, true)
    -- At the user's call, not inside jobque.lua; named after the function called.
    local ok, err2 = pcall(function()
      jobque.with_job_que({workers = 1, init = function() return up end}, function() end)
    end)
    assert.is_false(ok)
    assert.matches("^spec/queue/jobque_spec%.lua:%d+: jobque%.with_job_que: option 'init' cannot be sent", err2)
  end)

  it("closes with <close>, and close is idempotent", function()
    local kept
    do
      local q <close> = jobque.new {workers = 1}
      kept = q
      assert.are.equal(1, q:submit(function() return 1 end):wait())
    end
    assert.is_true(kept:is_closed())
    kept:close()
    kept:close()
    assert.matches("the queue is closed", err_of(kept.submit, kept, function() end), 1, true)
  end)

  it("runs init in every worker state before its first job", function()
    jobque.with_job_que({workers = 3, init = function() INIT_MARK = "ready" end}, function(q) -- luacheck: ignore
      local jobs = {}
      for i = 1, 60 do jobs[i] = q:submit(function() return rawget(_G, "INIT_MARK") end) end
      for i = 1, 60 do assert.are.equal("ready", jobs[i]:wait()) end
    end)
  end)

  it("reports an init that fails, and creates no queue", function()
    local err = err_of(jobque.new, {workers = 2, init = function() error("no such module") end})
    assert.matches("jobque.new: option 'init' failed: .*no such module", err)
  end)

  it("gives workers the creator's package.path and package.cpath", function()
    jobque.with_job_que({workers = 1}, function(q)
      local path, cpath = q:submit(function() return package.path, package.cpath end):wait()
      assert.are.equal(package.path, path)
      assert.are.equal(package.cpath, cpath)
    end)
  end)

  it("keeps each worker's globals to itself", function()
    LEAK_CHECK = "caller" -- luacheck: ignore
    jobque.with_job_que({workers = 1}, function(q)
      assert.is_nil(q:submit(function() return rawget(_G, "LEAK_CHECK") end):wait())
    end)
    LEAK_CHECK = nil -- luacheck: ignore
  end)
end)

describe("jobs", function()
  local q
  setup(function() q = jobque.new {workers = 2} end)
  teardown(function() q:close() end)

  it("return every result, nils included", function()
    local j = q:submit(function() return 1, nil, 3, nil end)
    assert.are.equal(4, select("#", j:wait()))
    local a, b, c = j:wait()
    assert.are.same({1, nil, 3}, {a, b, c})
  end)

  it("pwait returns true and the results, or false and the error", function()
    assert.are.same({true, "ok"}, {q:submit(function() return "ok" end):pwait()})
    local ok, err = q:submit(function() error("bad", 0) end):pwait()
    assert.is_false(ok)
    assert.matches("^bad", err)
  end)

  it("raise the job's error with its traceback and where it was submitted", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local j = q:submit(function() local x = nil; return x.field end)
    local err = err_of(j.wait, j)
    assert.matches("attempt to index a nil value", err, 1, true)
    assert.matches("stack traceback:", err, 1, true)
    assert.matches("submitted at spec/queue/jobque_spec.lua:" .. line, err, 1, true)
  end)

  it("keep a non-string error value as it is", function()
    local ok, err = q:submit(function() error({code = 42}) end):pwait()
    assert.is_false(ok)
    assert.are.same({code = 42}, err)
  end)

  it("never kill their worker when they fail", function()
    local one = jobque.new {workers = 1}
    for i = 1, 20 do
      assert.is_false((one:submit(function() error("x" .. i) end):pwait()))
    end
    assert.are.equal(99, one:submit(function() return 99 end):wait())
    one:close()
  end)

  it("report their status", function()
    jobque.with_job_que({workers = 0}, function(q0)
      local gate = q0:submit(function() return 0 end)
      local d = q0:after({gate}, function() return 1 end)
      local a = q0:submit(function(x) return x:wait() end, d)
      local f = q0:submit(function() error("f") end)
      assert.are.equal("pending", a:status())
      d:wait() -- runs gate, then a (which now awaits d), then d
      assert.are.equal("running", a:status())
      assert.are.equal("done", d:status())
      assert.are.equal(1, a:wait())
      assert.are.equal("done", a:status())
      f:pwait()
      assert.are.equal("failed", f:status())
    end)
  end)

  it("have ids, a string form, and compare equal across handles", function()
    local j = q:submit(function() return 1 end)
    j:wait()
    assert.is_true(math.type(j:id()) == "integer")
    assert.are.equal("jobque.job #" .. j:id() .. " (done)", tostring(j))
    local k = q:submit(function() return 2 end)
    assert.are_not.equal(j:id(), k:id())
    assert.is_true(k:id() > j:id(), "ids grow in submit order")
    k:wait()
    assert.are.equal("jobque.job #" .. k:id() .. " (done)", tostring(k))
    local ok, err = q:after({q:submit(function() error("x", 0) end)}, function() end):pwait()
    assert.is_false(ok)
    assert.matches("^job #" .. (k:id() + 2) .. " did not run: its dependency job #" .. (k:id() + 1) .. " failed", err)
    jobque.with_job_que({workers = 0}, function(q0)
      local p = q0:submit(function() end)
      assert.are.equal("jobque.job #" .. p:id() .. " (pending)", tostring(p))
      p:wait()
    end)
    local same = q:submit(function(x) return x end, j):wait()
    assert.are.equal(j, same)
    assert.are.equal(tostring(j), tostring(same))
    assert.are.equal(j:id(), same:id()) -- the same methods on both kinds of handle
  end)

  it("keep their results while their handle lives, whatever becomes of other handles", function()
    local kept = {}
    for i = 1, 200 do -- several batches of handles; most are dropped at once
      local j = q:submit(function(x) return x * 2 end, i)
      if i % 37 == 0 then kept[i] = j end
    end
    q:wait_all()
    collectgarbage()
    collectgarbage()
    for i, j in pairs(kept) do
      assert.are.equal("done", j:status())
      assert.are.equal(i * 2, j:wait())
    end
  end)

  it("name both kinds of handle the same in argument errors", function()
    local j = q:submit(function() end)
    local err = err_of(j.wait, {})
    assert.matches("jobque.job expected, got table", err, 1, true)
  end)
end)

describe("values crossing states", function()
  local q
  setup(function() q = jobque.new {workers = 1} end)
  teardown(function() q:close() end)

  local function echo(...)
    return q:submit(function(...) return ... end, ...):wait()
  end

  it("copies nil, booleans, integers and floats (kept distinct) and strings", function()
    local a, b, c, d, e, f = echo(nil, true, false, 3, 3.0, "a\0b")
    assert.is_nil(a)
    assert.is_true(b)
    assert.is_false(c)
    assert.are.equal("integer", math.type(d))
    assert.are.equal("float", math.type(e))
    assert.are.equal("a\0b", f)
    assert.are.equal(math.maxinteger, echo(math.maxinteger))
    assert.are.equal(math.huge, echo(math.huge))
  end)

  it("copies tables deeply, keeping shared and cyclic references", function()
    local shared = {1, 2}
    local t = {a = shared, b = shared, nested = {deep = {"x"}}, [2.5] = "float key", [true] = 1}
    t.self = t
    local c = echo(t)
    assert.are_not.equal(t, c)
    assert.are.equal(c.a, c.b)
    assert.are.equal(c, c.self)
    assert.are.same({1, 2}, c.a)
    assert.are.equal("x", c.nested.deep[1])
    assert.are.equal("float key", c[2.5])
    assert.are.equal(1, c[true])
  end)

  it("copies Lua functions with their upvalues, recursively", function()
    local base = 10
    local function add(x) return x + base end
    local function twice(x) return add(add(x)) end
    assert.are.equal(25, q:submit(function(x) return twice(x) end, 5):wait())
    local f = echo(twice)
    assert.are.equal(25, f(5))
  end)

  it("keeps an upvalue shared between closures shared", function()
    local n = 0
    local function inc() n = n + 1 end
    local function get() return n end
    assert.are.equal(3, q:submit(function() inc() inc() inc() return get() end):wait())
    assert.are.equal(0, n) -- the worker had copies
  end)

  it("sends library C functions and loaded modules by name", function()
    local floor, fmt, str = math.floor, string.format, string
    local r1, r2, r3 = q:submit(function(x)
      return floor(x), fmt("%03d", 7), str.rep("a", 3)
    end, 2.7):wait()
    assert.are.same({2, "007", "aaa"}, {r1, r2, r3})
    local p = require "jobque_profile"
    assert.are.equal(p.PROFILE_COLOR_BLUE, q:submit(function() return p.PROFILE_COLOR_BLUE end):wait())
  end)

  it("sends job handles", function()
    local a = q:submit(function() return "from a" end)
    assert.are.equal("from a", q:submit(function(j) return j:wait() end, a):wait())
  end)

  it("does not copy metatables", function()
    local t = setmetatable({x = 1}, {__index = function() return "meta" end})
    local c = echo(t)
    assert.are.equal(1, c.x)
    assert.is_nil(getmetatable(c))
    assert.is_nil(c.y)
  end)

  it("refuses at submit what cannot cross, saying which value and where", function()
    local err = err_of(q.submit, q, function() end, 1, {conn = io.stdout})
    assert.matches('cannot submit: argument #3, field "conn": userdata cannot be sent to a worker', err, 1, true)
    err = err_of(q.submit, q, function() end, coroutine.create(print))
    assert.matches("argument #2: a coroutine cannot be sent to a worker", err, 1, true)
    local iter = string.gmatch("a b", "%a")
    err = err_of(q.submit, q, function() return iter() end)
    assert.matches("argument #1, upvalue 'iter': a C function cannot be sent to a worker", err, 1, true)
    err = err_of(q.submit, q, function() end, {list = {1, 2, io.stderr}})
    assert.matches('argument #2, field "list", [3]: userdata cannot be sent', err, 1, true)
  end)

  it("refuses results that cannot cross, failing the job", function()
    local ok, err = q:submit(function() return io.stdout end):pwait()
    assert.is_false(ok)
    assert.matches("job returned a value that cannot be copied back: result #1: userdata", err, 1, true)
  end)
end)

describe("job graphs", function()
  it("runs a job after its dependencies", function()
    jobque.with_job_que({workers = 1}, function(q)
      -- a yields until released; a job that ignored its dependency would run
      -- in one of those yields, before probe, and see a running.
      T.stop(false)
      local a = q:submit(function()
        local flag = require("jobque.core")._test
        while not flag.stopping() do coroutine.yield() end
        return 1
      end)
      local b = q:submit(function() return 2 end)
      local c = q:after({a, b}, function(x, y) return x:status(), y:status() end, a, b)
      local probe = q:submit(function(x) return x:status() end, c)
      assert.are.equal("pending", probe:wait())
      T.stop()
      assert.are.same({"done", "done"}, {c:wait()})
      assert.are.equal(7, q:after({}, function() return 7 end):wait())
    end)
  end)

  it("lets a job wait for a job of another queue", function()
    local other <close> = jobque.new {workers = 1}
    jobque.with_job_que({workers = 1}, function(q)
      local far = other:submit(function() return "far" end)
      assert.are.equal("far and near", q:submit(function(j) return j:wait() .. " and near" end, far):wait())
      local bad = other:submit(function() error("far failure", 0) end)
      assert.are.same({false, "far failure"}, {q:submit(function(j)
        local ok, err = j:pwait()
        return ok, err:match("^[^\n]*")
      end, bad):wait()})
    end)
  end)

  it("suspends a job of a queue without workers that awaits a job of another queue", function()
    -- `far` ends once `signal` ran; the caller runs `signal` while `near`
    -- (run in the caller's state) is suspended awaiting `far`, and then
    -- sleeps until `far` ends. (A wait that blocked the caller's state
    -- instead would never run `signal`: `far` gives up after 10 s of CPU.)
    local far_q <close> = jobque.new {workers = 1}
    local q <close> = jobque.new {workers = 0}
    local marks = T.marks()
    local far = far_q:submit(function(m)
      local flag = require("jobque.core")._test
      local t0 = os.clock()
      while flag.marks() == m and os.clock() - t0 < 10 do coroutine.yield() end
      return flag.marks() ~= m and "far" or "far gave up"
    end, marks)
    local near = q:submit(function(h) return h:wait() .. " and near" end, far)
    q:submit(function() require("jobque.core")._test.mark() end)
    assert.are.equal("far and near", near:wait())
    q:wait_all()
  end)

  it("pwait inside a job returns false and the error of a failed job, without raising", function()
    jobque.with_job_que({workers = 1}, function(q)
      local bad = q:submit(function() error("inner failure", 0) end)
      local good = q:submit(function() return "fine", 2 end)
      local r = {q:submit(function(b, g)
        local ok, err = b:pwait()
        return ok, err:match("^[^\n]*"), g:pwait()
      end, bad, good):wait()}
      assert.are.same({false, "inner failure", true, "fine", 2}, r)
      -- A child not run yet (the one worker runs its parent): pwait suspends
      -- the parent, and still returns false and the error when it resumes.
      local suspended = {q:submit(function()
        local child = require("jobque").current():submit(function() error("child failure", 0) end)
        local ok, err = child:pwait()
        return ok, err:match("^[^\n]*"), child:status()
      end):wait()}
      assert.are.same({false, "child failure", "failed"}, suspended)
      local ok, err = q:submit(function(b) return b:wait() end, bad):pwait()
      assert.is_false(ok)
      assert.matches("inner failure", err, 1, true)
    end)
  end)

  it("fails a dependant without running it, naming the failed dependency", function()
    jobque.with_job_que({workers = 2}, function(q)
      local bad = q:submit(function() error("root cause", 0) end)
      local mid = q:after({bad}, function() return "ran" end)
      local top = q:after({mid}, function() return "ran" end)
      local ok, err = top:pwait()
      assert.is_false(ok)
      assert.matches("job #" .. top:id() .. " did not run: its dependency job #" .. mid:id() .. " failed", err, 1, true)
      assert.matches("root cause", err, 1, true)
      local late = q:after({bad}, function() return "ran" end) -- already failed
      assert.matches("did not run", select(2, late:pwait()), 1, true)
    end)
  end)

  it("checks the dependency list", function()
    jobque.with_job_que({workers = 1}, function(q)
      local g = q:submit(function() return "g" end)
      local many = {}
      for i = 1, 4097 do many[i] = g end
      assert.matches("bad argument #1 to 'after' (more than 4096 dependencies)",
        err_of(function() return q:after(many, function() end) end), 1, true)
      many[4097] = nil
      assert.are.equal("4096 deps", q:after(many, function() return "4096 deps" end):wait())
      local other = jobque.new {workers = 0}
      local foreign = other:submit(function() end)
      local function after(deps) return q:after(deps, function() end) end
      assert.matches("bad argument #1 to 'after' (deps[1] is not a job (number))", err_of(after, {5}), 1, true)
      assert.matches("bad argument #1 to 'after' (deps[1] belongs to another queue)", err_of(after, {foreign}), 1, true)
      assert.matches("bad argument #1 to 'after' (table expected, got nil)", err_of(after, nil), 1, true)
      assert.matches("bad argument #2 to 'after' (function expected, got no value)",
        err_of(function() return q:after({}) end), 1, true)
      assert.matches("bad argument #1 to 'submit' (function expected, got number)",
        err_of(function() return q:submit(5) end), 1, true)
      other:close()
    end)
  end)

  it("lets a job submit and await children, to any depth, on one worker", function()
    jobque.with_job_que({workers = 1}, function(q)
      local function fib(n)
        if n < 2 then return n end
        local cq = require("jobque").current()
        local a = cq:submit(fib, n - 1)
        local b = cq:submit(fib, n - 2)
        return a:wait() + b:wait()
      end
      assert.are.equal(144, q:submit(fib, 12):wait())
    end)
  end)

  it("treats coroutine.yield() in a job as a cooperative yield", function()
    jobque.with_job_que({workers = 1}, function(q)
      -- a can only see the flag set if b ran on the one worker while a yielded.
      T.stop(false)
      local a = q:submit(function()
        local flag = require("jobque.core")._test
        for i = 1, 100000 do
          if flag.stopping() then return "a saw b after " .. i .. " turns" end
          coroutine.yield()
        end
        return "b never ran"
      end)
      local b = q:submit(function()
        require("jobque.core")._test.stop()
        return "b"
      end)
      local saw = a:wait()
      local turns = tonumber(saw:match("^a saw b after (%d+) turns$"))
      assert.is_true(turns and turns >= 2, saw) -- (1 would mean b ran before a started)
      assert.are.equal("b", b:wait())
    end)
  end)

  it("leaves user coroutines inside jobs alone", function()
    jobque.with_job_que({workers = 1}, function(q)
      local r = q:submit(function()
        local gen = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i) end end)
        return gen() + gen() + gen()
      end):wait()
      assert.are.equal(6, r)
    end)
  end)

  it("returns nil from jobque.current() outside a job", function()
    assert.is_nil(jobque.current())
  end)

  it("waits for everything submitted so far with wait_all", function()
    jobque.with_job_que({workers = 2}, function(q)
      local jobs = {}
      for i = 1, 50 do jobs[i] = q:submit(function(x) return x end, i) end
      q:wait_all()
      for i = 1, 50 do assert.are.equal("done", jobs[i]:status()) end
      local line = debug.getinfo(1, "l").currentline + 1 -- (the job's one line: where the message points)
      local inside = q:submit(function() require("jobque").current():wait_all() end)
      local err = select(2, inside:pwait())
      assert.matches("wait_all cannot be called from a job of the same queue", err, 1, true)
      assert.matches("^[^\n]*jobque_spec%.lua:" .. line .. ": wait_all cannot", err)
    end)
  end)
end)

describe("parallel_for", function()
  it("covers first..last exactly once and returns chunk results in order", function()
    jobque.with_job_que({workers = 2}, function(q)
      local r = q:parallel_for(3, 1002, function(lo, hi) return {lo, hi} end, 7)
      assert.are.equal(7, #r)
      assert.are.equal(3, r[1][1])
      assert.are.equal(1002, r[7][2])
      for i = 2, 7 do assert.are.equal(r[i - 1][2] + 1, r[i][1]) end
      local sums = q:parallel_for(1, 100, function(lo, hi)
        local s = 0
        for i = lo, hi do s = s + i end
        return s
      end)
      local total = 0
      for _, s in ipairs(sums) do total = total + s end
      assert.are.equal(5050, total)
      assert.are.same({}, q:parallel_for(5, 4, function() return 1 end))
      assert.are.equal(3, #q:parallel_for(1, 3, function(lo) return lo end, 10))
    end)
  end)

  it("raises the first chunk's error in chunk order", function()
    jobque.with_job_que({workers = 2}, function(q)
      local err = err_of(q.parallel_for, q, 1, 10, function(lo)
        if lo > 3 then error("chunk from " .. lo, 0) end
      end, 10)
      assert.matches("^chunk from 4", err)
    end)
  end)

  it("checks its arguments", function()
    jobque.with_job_que({workers = 0}, function(q)
      assert.matches("bad argument #1 to 'parallel_for' (first must be an integer, got float)",
        err_of(q.parallel_for, q, 1.5, 3, print), 1, true)
      assert.matches("bad argument #3 to 'parallel_for' (function expected, got nil)",
        err_of(q.parallel_for, q, 1, 3), 1, true)
      assert.matches("chunks must be >= 1", err_of(q.parallel_for, q, 1, 3, function() end, 0), 1, true)
      assert.matches("bad argument #2 to 'parallel_for' (last must be an integer, got float)",
        err_of(q.parallel_for, q, 1, 2.5, print), 1, true)
    end)
  end)
end)

describe("a queue without workers", function()
  it("runs everything on the caller's thread, in submit order", function()
    jobque.with_job_que({workers = 0}, function(q)
      -- Jobs run in the caller's own state here, so they share its globals.
      _G.ORDER = {}
      local jobs = {}
      for i = 1, 5 do
        jobs[i] = q:submit(function(x) table.insert(_G.ORDER, x) return #_G.ORDER end, i)
      end
      q:wait_all()
      assert.are.same({1, 2, 3, 4, 5}, _G.ORDER)
      for i = 1, 5 do assert.are.equal(i, jobs[i]:wait()) end
      _G.ORDER = nil
    end)
  end)

  it("says so when a job can never finish", function()
    local q <close> = jobque.new {workers = 0} -- (the end of a with_job_que scope would wait)
    local a = q:submit(function() return _G.CYCLE_B:wait() end)
    _G.CYCLE_B = q:after({a}, function() end) -- b waits for a, a waits for b
    local err = err_of(a.wait, a)
    assert.matches("job #" .. a:id() .. " can never finish: the queue has no workers", err, 1, true)
    _G.CYCLE_B = nil
  end)

  it("ends a with_job_que scope whose jobs can never finish with that error, closed", function()
    local kept
    local err = err_of(jobque.with_job_que, {workers = 0}, function(q)
      kept = q
      local a = q:submit(function() return _G.CYCLE_B:wait() end)
      _G.CYCLE_B = q:after({a}, function() end)
    end)
    _G.CYCLE_B = nil
    assert.matches("jobs can never finish: the queue has no workers", err, 1, true)
    assert.is_true(kept:is_closed())
  end)

  it("refuses a job that waits for itself", function()
    local q <close> = jobque.new {workers = 0}
    -- (the caller's state runs the jobs here, so a job sees the caller's globals)
    _G.SELF_JOB = q:submit(function() return _G.SELF_JOB:pwait() end)
    local err = err_of(_G.SELF_JOB.wait, _G.SELF_JOB)
    assert.matches("job #" .. _G.SELF_JOB:id() .. " cannot wait for itself", err, 1, true)
    assert.are.equal("failed", _G.SELF_JOB:status())
    _G.SELF_JOB = nil
  end)

  it("says so when wait_all can never finish", function()
    local q <close> = jobque.new {workers = 0}
    local a = q:submit(function() return _G.CYCLE_B:wait() end)
    _G.CYCLE_B = q:after({a}, function() end)
    local err = err_of(q.wait_all, q)
    _G.CYCLE_B = nil
    assert.matches("jobs can never finish: the queue has no workers and nothing left to run", err, 1, true)
  end)
end)

describe("closing", function()
  it("fails jobs that had not started and cancels suspended ones", function()
    local q = jobque.new {workers = 1}
    local spinner = q:submit(function() while true do coroutine.yield() end end)
    -- probe runs on the one worker only in a yield of spinner: spinner has
    -- started and never finishes, so its dependants cannot have started.
    local probe = q:submit(function(s) return s:status() end, spinner)
    local pending = {}
    for i = 1, 5 do pending[i] = q:after({spinner}, function() return i end) end
    assert.are.equal("running", probe:wait())
    q:close()
    local ok, err = spinner:pwait()
    assert.is_false(ok)
    assert.are.equal("job #" .. spinner:id() .. " was cancelled: its queue closed before it finished", err)
    for i = 1, 5 do
      local okp, res = pending[i]:pwait()
      assert.is_false(okp)
      assert.are.equal("job #" .. pending[i]:id() .. " was cancelled: its queue closed before it finished", res)
      assert.are.equal("failed", pending[i]:status())
    end
  end)

  it("lets running jobs finish", function()
    local q = jobque.new {workers = 1}
    local other <close> = jobque.new {workers = 1}
    T.stop(false)
    -- long says it started by setting the flag, which ends `started` (on
    -- another queue) that the caller waits for; then it works a while.
    local started = other:submit(function()
      local flag = require("jobque.core")._test
      while not flag.stopping() do coroutine.yield() end
    end)
    local long = q:submit(function()
      require("jobque.core")._test.stop()
      local s = 0
      for i = 1, 2000000 do s = s + i % 7 end
      return "finished", s
    end)
    started:wait()
    q:close()
    assert.are.same({"finished", 5999997}, {long:wait()})
  end)

  it("still answers for jobs of a closed queue", function()
    local q = jobque.new {workers = 1}
    local done = q:submit(function() return "kept" end)
    done:wait()
    q:close()
    assert.are.equal("kept", done:wait())
    assert.are.equal("done", done:status())
    assert.matches("the queue is closed", err_of(q.submit, q, function() end), 1, true)
    assert.matches("the queue is closed", err_of(q.wait_all, q), 1, true)
    assert.matches("the queue is closed", err_of(q.after, q, {}, function() end), 1, true)
    assert.matches("the queue is closed", err_of(q.parallel_for, q, 1, 2, function() end), 1, true)
    assert.are.equal(1, q:workers(), "workers still answers")
  end)

  it("is closed by the collector when its last handle goes", function()
    collectgarbage()
    collectgarbage()
    local live = T.live_queues()
    do
      local q = jobque.new {workers = 1}
      assert.are.equal(3, q:submit(function() return 3 end):wait())
      assert.are.equal(live + 1, T.live_queues())
    end
    collectgarbage()
    collectgarbage()
    assert.are.equal(live, T.live_queues())
  end)

  it("cannot be closed from a job", function()
    jobque.with_job_que({workers = 1}, function(q)
      local ok, err = q:submit(function() require("jobque").current():close() end):pwait()
      assert.is_false(ok)
      assert.matches("a queue cannot be closed from one of its own jobs", err, 1, true)
    end)
  end)
end)
