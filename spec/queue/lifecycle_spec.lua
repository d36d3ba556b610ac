-- Closing a queue while its jobs are mid-flight, duplicate and failed
-- dependencies, long failure chains: each defect as it was
-- reproduced. Run plain and under the sanitizers by spec/run-all.sh; the
-- AddressSanitizer build bypasses the job pool, so a job finished twice or
-- freed while in use shows as a use after free there.
local jobque = require "jobque"
local profile = require "jobque_profile"
local T = require("jobque.core")._test
local S = require "support"

local err_of = S.err_of

-- Collects until no queue is left alive (a finalizer may free another).
local function collect()
  for _ = 1, 4 do collectgarbage("collect") end
end

describe("a queue without workers closed while its own job runs", function()
  local live -- queues alive before each spec (other spec files may keep some)
  before_each(function()
    collect()
    T.reset_counts()
    live = T.live_queues()
  end)
  after_each(function()
    collect()
    assert.are.equal(0, T.double_finishes())
  end)

  it("raises a clear error when the job closes it, and the job's result survives", function()
    local q = jobque.new {workers = 0}
    _G.LIFECYCLE_Q = q
    local job = q:submit(function()
      local ok, err = pcall(_G.LIFECYCLE_Q.close, _G.LIFECYCLE_Q)
      return ok, err
    end)
    local ok, closed, err = job:pwait()
    _G.LIFECYCLE_Q = nil
    assert.is_true(ok)
    assert.is_false(closed)
    assert.matches("a queue cannot be closed from one of its own jobs", err, 1, true)
    assert.is_false(q:is_closed())
    assert.are.equal("done", job:status())
    q:close()
    assert.is_true(q:is_closed())
  end)

  it("keeps the queue alive while the collector finalizes its handle during the job", function()
    local job
    do
      job = jobque.new({workers = 0}):submit(function()
        local t = {}
        for i = 1, 2e5 do t[i] = {i} end -- garbage enough for a full cycle
        collectgarbage("collect")
        return #t
      end)
    end
    local ok, n = job:pwait()
    assert.is_true(ok)
    assert.are.equal(200000, n)
    assert.are.equal("done", job:status())
    job = nil -- luacheck: ignore
    collect()
    assert.are.equal(live, T.live_queues())
  end)

  it("still cancels the queue's other jobs when the collector closes it mid-job", function()
    local other
    local job
    do
      local q = jobque.new {workers = 0}
      other = q:submit(function() coroutine.yield() return "late" end)
      job = q:submit(function() collectgarbage("collect") collectgarbage("collect") return "mine" end)
    end
    assert.are.same({true, "mine"}, {job:pwait()})
    local ok, err = other:pwait()
    assert.is_true(ok == true or err:find("was cancelled", 1, true) ~= nil)
  end)
end)

describe("closing while jobs are suspended on a job still running elsewhere", function()
  it("finishes each job exactly once, whatever the timing (seeded rounds)", function()
    collect()
    T.reset_counts()
    local live = T.live_queues()
    local rounds = os.getenv("JQ_SOAK") and 400 or 40
    local seed0 = os.time()
    for round = 1, rounds do
      local seed = seed0 + round
      math.randomseed(seed)
      local busy_us = math.random(100, 1500)
      local sleep_us = math.random(100, 1500)
      local q = jobque.new {workers = 2}
      local b = q:submit(function(us)
        local t = os.clock()
        while os.clock() - t < us / 1e6 do end
        return "b"
      end, busy_us)
      local jobs = {}
      for i = 1, 50 do
        jobs[i] = q:submit(function(bb) local ok, v = bb:pwait() return ok and v end, b)
      end
      local t = os.clock()
      while os.clock() - t < sleep_us / 1e6 do end
      q:close()
      for i = 1, 50 do
        local ok, res = jobs[i]:pwait()
        if ok then
          assert(res == "b", ("seed %d: job %d gave %s"):format(seed, i, tostring(res)))
        else
          assert(res:find("was cancelled", 1, true), ("seed %d: job %d: %s"):format(seed, i, res))
        end
      end
      assert(T.double_finishes() == 0, ("seed %d: a job finished twice"):format(seed))
    end
    collect()
    assert.are.equal(live, T.live_queues())
  end)
end)

describe("duplicate dependencies", function()
  it("of a failing job leak neither the job nor its queue", function()
    collect()
    T.reset_counts()
    local live = T.live_queues()
    do
      local q = jobque.new {workers = 1}
      local gate = q:submit(function() coroutine.yield() error("a fails", 0) end)
      local a = q:after({gate}, function() end)
      local dup = q:after({a, a, gate, a}, function() return "ran" end)
      local ok, err = dup:pwait()
      assert.is_false(ok)
      assert.matches("did not run", err, 1, true)
      local late = q:after({a, a}, function() return "ran" end) -- a already failed
      assert.is_false((late:pwait()))
      local fine = q:submit(function() return 1 end)
      assert.are.equal(3, q:after({fine, fine, fine}, function(f) return f:wait() + 2 end, fine):wait())
      q:close()
    end
    collect()
    assert.are.equal(live, T.live_queues())
    assert.are.equal(0, T.double_finishes())
  end)
end)

describe("long failure chains", function()
  it("whose root raised a table say where to get that table", function()
    jobque.with_job_que({workers = 1}, function(q)
      local root = q:submit(function() error({code = 7}) end)
      local dependant = q:after({root}, function() end)
      local ok, err = dependant:pwait()
      assert.is_false(ok)
      assert.are.equal(("job #%d did not run: its dependency job #%d failed: its error is a table value "
                        .. "(pwait on job #%d gets it)"):format(dependant:id(), root:id(), root:id()), err)
      local ok2, value = root:pwait()
      assert.is_false(ok2)
      assert.are.equal(7, value.code)
    end)
  end)

  it("of dependencies fail fast, without recursion, with a bounded message", function()
    jobque.with_job_que({workers = 2}, function(q)
      local root = q:submit(function() error("root cause") end)
      local prev, ids = root, {root:id()}
      local n = S.sanitized and 30000 or 300000 -- the old recursion overflowed at ~260,000
      for i = 1, n do
        prev = q:after({prev}, function() end)
        ids[i + 1] = prev:id()
      end
      local ok, err = prev:pwait()
      assert.is_false(ok)
      assert.matches("root cause", err, 1, true)
      assert.matches("job #" .. prev:id() .. " did not run: its dependency job #" .. ids[n] .. " failed", err, 1, true)
      assert.matches(("%d jobs on this chain"):format(n + 1), err, 1, true)
      assert.matches("#" .. ids[2] .. " <- #" .. ids[1], err, 1, true) -- the link next to the root
      assert.is_true(#err < 4096, "message of " .. #err .. " bytes")
    end)
  end)

  it("of nested waits stay linear, with a bounded message", function()
    jobque.with_job_que({workers = 1}, function(q)
      local root = q:submit(function() error("deep root") end)
      local prev = root
      local n = S.sanitized and 1000 or 10000
      for _ = 1, n do
        prev = q:submit(function(p) return p:wait() end, prev)
      end
      local ok, err = prev:pwait()
      assert.is_false(ok)
      assert.matches("deep root", err, 1, true)
      assert.matches(("%d jobs on this chain"):format(n + 1), err, 1, true)
      assert.matches("job #" .. prev:id() .. " failed: it waited for job #", err, 1, true)
      assert.is_true(#err < 4096, "message of " .. #err .. " bytes")
    end)
  end)

  it("keep an error a job raised itself after catching another's", function()
    jobque.with_job_que({workers = 1}, function(q)
      local root = q:submit(function() error("inner", 0) end)
      local outer = q:submit(function(r)
        local ok, e = r:pwait()
        assert(not ok)
        error("outer saw: " .. e, 0)
      end, root)
      local ok, err = outer:pwait()
      assert.is_false(ok)
      assert.matches("^outer saw: inner", err)
      assert.is_nil(err:find("jobs on this chain", 1, true))
    end)
  end)
end)

describe("waiting across queues", function()
  it("raises instead of deadlocking when a worker waits on a job of a queue without workers", function()
    local q0 = jobque.new {workers = 0}
    local j0 = q0:submit(function() return "never run here" end)
    jobque.with_job_que({workers = 1}, function(q)
      local waiter = q:submit(function(j) return j:wait() end, j0)
      local ok, err = waiter:pwait()
      assert.is_false(ok)
      -- it names both jobs: the waiter and the one it cannot wait for
      assert.matches("job #" .. waiter:id() .. " cannot wait for job #" .. j0:id() .. ": job #"
        .. j0:id() .. " belongs to a queue without workers", err, 1, true)
    end)
    assert.are.equal("never run here", j0:wait())
    q0:close()
  end)
end)

describe("codec errors", function()
  it("keep the reason when the path is long, shortening the path", function()
    local t = {}
    local cur = t
    for i = 1, 150 do
      cur["level_" .. i .. "_" .. ("x"):rep(20)] = {}
      cur = cur["level_" .. i .. "_" .. ("x"):rep(20)]
    end
    cur.bad = io.stdout
    jobque.with_job_que({workers = 0}, function(q)
      local err = err_of(q.submit, q, function() end, t)
      assert.matches("userdata cannot be sent to a worker", err, 1, true)
      assert.matches("argument #2, field \"level_1_", err, 1, true)
      assert.matches("field \"bad\": userdata", err, 1, true)
      assert.matches("…", err, 1, true)
    end)
  end)
end)

describe("codec errors under keys that are not strings", function()
  it("name the key, and mark a cut field name", function()
    jobque.with_job_que({workers = 0}, function(q)
      local function why(t) return err_of(q.submit, q, function() end, t) end
      assert.matches("argument #2, [true]: userdata", why({[true] = io.stdout}), 1, true)
      assert.matches("argument #2, [1.5]: userdata", why({[1.5] = io.stdout}), 1, true)
      assert.matches("argument #2, the value of a table key: userdata", why({[{}] = io.stdout}), 1, true)
      assert.matches("argument #2, a table key: userdata", why({[io.stdout] = 1}), 1, true)
      assert.matches('field "' .. ("k"):rep(60) .. '…": userdata', why({[("k"):rep(200)] = io.stdout}), 1, true)
    end)
  end)
end)

describe("modules by name", function()
  it("are decided at send time from what is loaded then", function()
    local mod = {answer = 42}
    package.loaded["lifecycle_fake_mod"] = mod
    jobque.with_job_que({workers = 1}, function(q)
      local f = function() return mod.answer end
      -- A C function found in no module refreshes the cache of names.
      local refused = err_of(q.submit, q, f, coroutine.wrap(function() end))
      assert.matches("a C function cannot be sent", refused, 1, true)
      local ok = q:submit(f):pwait() -- by name: not loadable over there
      assert.is_false(ok)
      package.loaded["lifecycle_fake_mod"] = nil
      assert.are.equal(42, q:submit(f):wait()) -- now by value
      package.loaded["lifecycle_fake_mod"] = {answer = 0} -- another table by that name
      assert.are.equal(42, q:submit(f):wait()) -- still by value: it is not the module now
    end)
    package.loaded["lifecycle_fake_mod"] = nil
  end)

  it("include a module loaded again after the cache of names was made", function()
    local f = function() return math.floor(2.5) end -- a C function: the cache is made
    jobque.with_job_que({workers = 1}, function(q)
      assert.are.equal(2, q:submit(f):wait())
      -- As a test runner that unloads what a file loaded does: new tables
      -- (the core's, with new C functions) that the cache does not know.
      local old, old_core = package.loaded.jobque, package.loaded["jobque.core"]
      package.loaded.jobque, package.loaded["jobque.core"] = nil, nil
      local again = require "jobque"
      local ok, err = q:submit(function() return again.current() ~= nil end):pwait()
      package.loaded.jobque, package.loaded["jobque.core"] = old, old_core
      assert.is_true(ok, err) -- by name, not copied (a copy would meet C functions of no module)
      assert.is_true(err)
    end)
  end)
end)

describe("a worker that cannot start", function()
  it("is named as the cause, not `init`", function()
    if S.sanitized then return end -- the sanitizers' shadow memory needs more than the limit
    local path, cpath = S.paths()
    local script = S.tmpfile("start.lua")
    S.write(script, ([[
      package.path, package.cpath = %q, %q
      local ok, err = pcall(require("jobque").new, {workers = 200})
      print(ok, err)
    ]]):format(path, cpath))
    local p = assert(io.popen(("ulimit -v 100000; %s %s 2>&1"):format(S.lua, script)))
    local out = p:read("a")
    local ok = p:close()
    assert.is_true(ok, out)
    assert.matches("^false\tjobque.new: ", out)
    assert.is_nil(out:find("option 'init'", 1, true), out)
    local reason = out:match("cannot start worker thread %d+: %S") or out:match("cannot prepare its lua_State: %S")
      or out:match("cannot create a lua_State")
    assert.is_truthy(reason, out)
  end)
end)

describe("a job that yields in a loop", function()
  for _, workers in ipairs({0, 1}) do
    it("does not starve the jobs queued behind it (" .. workers .. " workers)", function()
      profile.profile_start(1000000) -- the trace says when `other` was queued (room for every slice below)
      jobque.with_job_que({workers = workers}, function(q)
        local spinner = q:submit(function()
          local k = 0
          while not _G.LIFECYCLE_DONE do
            k = k + 1
            if k > 500000 then error("starved: the other job never ran", 0) end
            coroutine.yield()
          end
          return k
        end)
        local other = q:submit(function() _G.LIFECYCLE_DONE = true return "ran" end)
        assert.are.same({true, "ran"}, {other:pwait()})
        local ok, k = spinner:pwait()
        assert.is_true(ok, k)
        if workers == 0 then -- both wait in the queue until the caller waits: no race
          assert.is_true(k <= 2, "the spinner ran " .. tostring(k) .. " slices first")
        else -- the spinner may yield for a while before `other` is submitted: count from then on
          profile.profile_stop()
          local t = S.save(profile)
          local submitted, first_other
          for _, ev in ipairs(t.traceEvents) do
            local job = ev.args and ev.args.job
            if ev.cat == "submit" and job == other:id() then submitted = ev.ts + ev.dur end
            if ev.cat == "job" and job == other:id() then first_other = first_other or ev.ts end
          end
          assert.is_number(submitted)
          assert.is_number(first_other)
          local after = 0
          for _, ev in ipairs(t.traceEvents) do
            if ev.cat == "job" and ev.args.job == spinner:id() and ev.ts > submitted and ev.ts < first_other then
              after = after + 1
            end
          end
          assert.is_true(after <= 2, "the spinner ran " .. after .. " slices after the other job was queued")
        end
      end)
      _G.LIFECYCLE_DONE = nil
      profile.profile_stop()
    end)
  end
end)

describe("errors passed through a wait inside a job", function()
  it("keep their type", function()
    jobque.with_job_que({workers = 1}, function(q)
      local bad = q:submit(function() error(42) end)
      local seen = q:submit(function(b) local ok, e = b:pwait() return ok, math.type(e), e end, bad)
      assert.are.same({true, false, "integer", 42}, {seen:pwait()})
      assert.are.same({false, 42}, {q:submit(function(b) b:wait() end, bad):pwait()})
    end)
  end)
end)

describe("a queue in a to-be-closed variable inside its own job", function()
  it("refuses to close, as close does", function()
    local q = jobque.new {workers = 0}
    _G.LIFECYCLE_Q = q
    local ok, err = q:submit(function() do local x <close> = _G.LIFECYCLE_Q end return 1 end):pwait() -- luacheck: ignore x
    _G.LIFECYCLE_Q = nil
    assert.is_false(ok)
    assert.matches("a queue cannot be closed from one of its own jobs", err, 1, true)
    assert.is_false(q:is_closed())
    q:close()
  end)
end)

-- Runs `body` (Lua, with `jobque` and `T`, the testing table, in scope) in
-- a child process under `timeout`, so a wait that hangs fails the spec
-- instead of stopping the suite; returns what it printed and "exit <code>"
-- (124 when the timeout killed it).
local function run_child(body)
  local script = S.tmpfile("blocked_wait.lua")
  S.write(script, 'package.path = "lua/?.lua;" .. package.path\n' ..
    'package.cpath = os.getenv("JQ_BUILD_CPATH")\nlocal jobque = require "jobque"\n' ..
    'local T = require("jobque.core")._test -- luacheck: ignore\n' .. body)
  local h = io.popen(("timeout 20 env JQ_BUILD_CPATH='%s' %s %s 2>&1; echo \"exit $?\""):format(
    package.cpath, S.lua, script))
  local out = h:read("a")
  h:close()
  return out
end

-- A blocking wait on a worker thread for a job that only this worker could
-- run or resume hung for good (and so did the queue's close). Each case runs
-- in a child process (run_child).
describe("a wait that blocks the worker which would have to run the awaited job", function()
  it("raises at once from a coroutine inside a job of a one-worker queue", function()
    local out = run_child([[
      local q = jobque.new {workers = 1}
      local ok, err = q:submit(function()
        local child = require("jobque").current():submit(function() return "child" end)
        return coroutine.wrap(function() return child:wait() end)()
      end):pwait()
      print(ok, err)
      q:close()
    ]])
    assert.matches("^false\t[^\n]*: job #%d+ cannot wait for job #%d+ from a coroutine of its own", out)
    assert.matches("exit 0\n$", out)
  end)

  it("raises from a coroutine inside a job when the awaited job is suspended on the same worker", function()
    local out = run_child([[
      local q = jobque.new {workers = 2}
      local ok, err = q:submit(function()
        local cur = require("jobque").current()
        local child = cur:submit(function() coroutine.yield() return "child" end)
        coroutine.yield() -- the child may start on this worker meanwhile
        while child:status() == "pending" do coroutine.yield() end
        local same = coroutine.wrap(function() return pcall(child.wait, child) end)
        local waited, res = same()
        return waited and "waited" or res
      end):pwait()
      print(ok, err)
      q:close()
    ]])
    -- Either the child has finished (the wait returns its result) or not
    -- (the wait raises at once). Never a hang.
    assert.matches("exit 0\n$", out)
    assert.is_truthy(out:find("^true\twaited") or out:find("^true\t[^\n]*job #%d+ cannot wait for job #%d+ from a coroutine"),
      out)
  end)

  it("does not hang a failed job's to-be-closed variable that waits for a sibling", function()
    local out = run_child([[
      local q = jobque.new {workers = 1}
      local a = q:submit(function()
        local s = require("jobque").current():submit(function() return 5 end)
        local x <close> = setmetatable({}, {__close = function() -- luacheck: ignore x
          print("close", select(2, pcall(s.wait, s)))
          s:wait()
        end})
        error("a fails", 0)
      end)
      print(a:pwait())
      q:close()
      print("closed")
    ]])
    -- It closes on the one worker before `a` finishes, so `s` has not run:
    -- the wait raises at once rather than block the worker `s` needs.
    assert.matches("^close\t[^\n]*job #%d+ has not finished, and this wait cannot suspend a job", out)
    assert.matches("\nfalse\ta fails\n", out) -- its own error, not one from the __close
    assert.matches("\nclosed\nexit 0\n$", out)
  end)
end)

-- Jobs whose waits blocked their worker threads while the awaited jobs
-- needed those very workers: every worker of two queues that await each
-- other's jobs, or of one queue whose jobs wait inside coroutines of their
-- own, hung until a close. A wait in a job's body now suspends the job
-- (across queues too); where it cannot (a coroutine of the job's own, a C
-- call in between) a wait on an unfinished job raises at once. Each probe
-- runs in a child process (run_child): a hang fails with exit 124.
describe("a wait from a job never blocks a worker the awaited job needs", function()
  it("suspends jobs of two queues that await each other's jobs", function()
    -- z1, z2 yield on A's workers until the flag; y1, y2 occupy B's two
    -- workers awaiting them; w1, w2 occupy A's two workers awaiting the y's.
    -- The flag is set once both w's started: a blocking wait in the w's
    -- would leave the z's suspended on blocked workers for good.
    local out = run_child([[
      local A, B = jobque.new {workers = 2}, jobque.new {workers = 2}
      T.stop(false)
      local function gated(i)
        local flag = require("jobque.core")._test
        while not flag.stopping() do coroutine.yield() end
        return "z" .. i
      end
      local z = {A:submit(gated, 1), A:submit(gated, 2)}
      local y, w = {}, {}
      for i = 1, 2 do y[i] = B:submit(function(h) return h:wait() .. " y" end, z[i]) end
      for i = 1, 2 do w[i] = A:submit(function(h) return h:wait() .. " w" end, y[i]) end
      while w[1]:status() == "pending" or w[2]:status() == "pending" do end
      T.stop()
      print(w[1]:wait(), w[2]:wait())
      A:close()
      B:close()
      print("closed")
    ]])
    assert.are.equal("z1 y w\tz2 y w\nclosed\nexit 0\n", out)
  end)

  it("raises at once for a wait inside a job's own coroutine, naming both jobs", function()
    -- Both jobs hold a worker until both started, then each waits, inside a
    -- coroutine of its own, for a child queued behind them: blocking waits
    -- would leave no worker to run the children. The children end only
    -- after both of those waits (the marks), so they are unfinished then.
    local out = run_child([[
      local q = jobque.new {workers = 2}
      local function parent(how)
        local flag = require("jobque.core")._test
        flag.mark()
        while flag.marks() < 2 do end
        local child = require("jobque").current():submit(function()
          local f = require("jobque.core")._test
          while f.marks() < 4 do coroutine.yield() end
          return "child"
        end)
        local ok, err
        if how == "wrap" then
          ok, err = pcall(coroutine.wrap(function() return child:wait() end))
        else
          ok, err = coroutine.resume(coroutine.create(function() return child:pwait() end))
          if ok then ok, err = false, "pwait returned: " .. tostring(err) end
        end
        flag.mark()
        return ok, err, child:id(), child:wait() -- the body may still wait
      end
      local jobs = {wrap = q:submit(parent, "wrap"), create = q:submit(parent, "create")}
      for _, how in ipairs {"wrap", "create"} do
        local me = jobs[how]
        local ok, err, child, res = me:wait()
        print(how, ok, res, err:find(("job #%d cannot wait for job #%d"):format(me:id(), child), 1, true) ~= nil)
        print(err)
      end
      q:close()
    ]])
    assert.matches("^wrap\tfalse\tchild\ttrue\n[^\n]*job #%d+ cannot wait for job #%d+ from a coroutine of its own", out)
    assert.matches("\ncreate\tfalse\tchild\ttrue\n[^\n]*job #%d+ cannot wait for job #%d+ from a coroutine of its own",
      out)
    assert.matches("wait from the job's body", out, 1, true)
    assert.matches("\nexit 0\n$", out)
  end)

  it("raises at once for a wait across a C call (a sort comparator, a gsub callback)", function()
    -- One worker: the child cannot run while its parent does.
    local out = run_child([[
      local q = jobque.new {workers = 1}
      local r = {q:submit(function()
        local child = require("jobque").current():submit(function() return 2 end)
        local sorted, err1 = pcall(table.sort, {3, 1}, function(a, b) return child:wait() and a < b end)
        local subbed, err2 = pcall(string.gsub, "x", "x", function() return child:wait() end)
        return sorted, err1, subbed, err2, child:id(), child:wait()
      end):wait()}
      print(r[1], r[3], r[6])
      print(r[2])
      print(r[4])
      q:close()
    ]])
    assert.matches("^false\tfalse\t2\n", out)
    local lines = {}
    for line in out:gmatch("[^\n]+") do lines[#lines + 1] = line end
    for i = 2, 3 do
      assert.matches("job #%d+ cannot wait for job #%d+ across a C call", lines[i])
      assert.matches("wait from the job's body", lines[i], 1, true)
    end
    assert.matches("\nexit 0\n$", out)
  end)

  it("still returns a finished job's result from a coroutine or a C call", function()
    local out = run_child([[
      local q = jobque.new {workers = 1}
      print(q:submit(function()
        local child = require("jobque").current():submit(function() return 5 end)
        child:wait()
        local t = {3, 1, 2}
        table.sort(t, function(a, b) return child:wait() == 5 and a < b end)
        local gen = coroutine.wrap(function() coroutine.yield(child:wait()) end)
        return gen() + t[1], (string.gsub("a", "a", function() return child:wait() end))
      end):wait())
      q:close()
    ]])
    assert.are.equal("6\t5\nexit 0\n", out)
  end)

  it("gives a job the cancellation of the job it awaits on another queue when that queue closes", function()
    local out = run_child([[
      local A, B = jobque.new {workers = 1}, jobque.new {workers = 1}
      T.stop(false)
      local far = B:submit(function()
        local flag = require("jobque.core")._test
        while not flag.stopping() do coroutine.yield() end
      end)
      local near = A:submit(function(h)
        local ok, err = h:pwait()
        return ok, err
      end, far)
      while near:status() == "pending" do end
      B:close() -- cancels `far`, suspended on B's worker; `near` resumes with that
      local ok, err = near:wait()
      print(ok, err == ("job #%d was cancelled: its queue closed before it finished"):format(far:id()))
      A:close()
      print("closed")
    ]])
    assert.are.equal("false\ttrue\nclosed\nexit 0\n", out)
  end)

  it("cancels a job awaiting another queue's job when its own queue closes", function()
    local out = run_child([[
      local A, B = jobque.new {workers = 1}, jobque.new {workers = 1}
      T.stop(false)
      local far = B:submit(function()
        local flag = require("jobque.core")._test
        while not flag.stopping() do coroutine.yield() end
        return "far"
      end)
      local near = A:submit(function(h) return h:wait() end, far)
      while near:status() == "pending" do end
      A:close() -- `near` is suspended: cancelled, while `far` goes on
      local ok, err = near:pwait()
      print(ok, err == ("job #%d was cancelled: its queue closed before it finished"):format(near:id()))
      T.stop()
      print(far:wait())
      B:close()
      print("closed")
    ]])
    assert.are.equal("false\ttrue\nfar\nclosed\nexit 0\n", out)
  end)

  it("raises at once for a wait on a queue without workers whose job awaits the waiter's own queue", function()
    -- The job made the queue c (no workers: it runs c's jobs while it
    -- waits); c's job awaits `h`, queued behind it on its one worker. Sleeping
    -- until `h` ends would hold the very worker `h` needs.
    local out = run_child([[
      local a = jobque.new {workers = 1}
      local outer = a:submit(function()
        local h = require("jobque").current():submit(function() return 9 end)
        local c <close> = require("jobque").new {workers = 0}
        local inner = c:submit(function(x) return x:wait() end, h)
        local ok, err = pcall(inner.wait, inner)
        return ok, err, inner:id(), h:wait()
      end)
      local ok, err, inner, res = outer:wait()
      print(ok, res, err:find(("job #%d cannot wait for job #%d"):format(outer:id(), inner), 1, true) ~= nil)
      print(err)
      a:close()
    ]])
    assert.matches("^false\t9\ttrue\n", out)
    assert.matches("give that queue workers", out, 1, true)
    assert.matches("\nexit 0\n$", out)
  end)

  it("does not hang a job's wait_all on a queue it made whose job awaits a job queued behind it", function()
    -- wait_all (and with_job_que's end) from a job blocked its worker; the
    -- inner job awaits `h`, which needs that worker.
    local out = run_child([[
      local a = jobque.new {workers = 1}
      local outer = a:submit(function()
        local h = require("jobque").current():submit(function() return 9 end)
        return require("jobque").with_job_que({workers = 1}, function(c)
          c:submit(function(x) return x:wait() end, h)
          return "scope ended"
        end)
      end)
      print(outer:pwait())
      a:close()
    ]])
    -- Either it suspends (the scope ends) or it raises at once; never a hang.
    assert.matches("^true\tscope ended\n", out)
    assert.matches("\nexit 0\n$", out)
  end)

  it("suspends a job's pwait_all on a queue it made (failures still listed), raises in its coroutine", function()
    local out = run_child([[
      local a = jobque.new {workers = 1}
      local outer = a:submit(function()
        local h = require("jobque").current():submit(function() return 9 end)
        local c <close> = require("jobque").new {workers = 1}
        c:submit(function(x) return x:wait() end, h)
        c:submit(function(x) x:wait() error("inner fails", 0) end, h)
        local in_co = {pcall(coroutine.wrap(function() return c:pwait_all() end))}
        local ok, failures = c:pwait_all()
        return in_co[1], in_co[2], ok, #failures, failures[1].error
      end)
      print(outer:wait())
      a:close()
    ]])
    assert.matches("^false\t[^\n]*job #%d+ cannot wait for job #%d+ from a coroutine of its own", out)
    assert.matches("\tfalse\t1\tinner fails\n", out)
    assert.matches("\nexit 0\n$", out)
  end)
end)

describe("a job published while a worker is taking another", function()
  -- The window: worker X has drained `incoming` and taken job A but not yet
  -- counted itself running; a lock-free submit then sees X as awake and
  -- idle and wakes no one, while worker Y stays parked. A spans spec hung so
  -- under ThreadSanitizer (its caller waiting for the new job, A spinning
  -- until the caller let it go). The testing build holds the window open.
  it("wakes the parked worker once the taker counts itself running", function()
    collect() -- no other queue's workers in the counts below
    local base = T.parked()
    local q = jobque.new {workers = 2}
    finally(function() -- a failure below must not leave `held` spinning: the close would wait for it
      T.hold_takes(false)
      T.stop()
      q:close()
    end)
    while T.parked() < base + 2 do end -- both workers idle and parked (they park after a short spin)
    T.stop(false)
    T.hold_takes(true)
    local marks = T.marks()
    local held = q:submit(function() -- runs until the caller lets it go
      local flag = require("jobque.core")._test
      flag.mark()
      while not flag.stopping() do end
    end)
    while not T.holding() do end -- a worker took `held` and waits in the window; the other is parked
    local wakes = T.wakes()
    local quick = q:submit(function() return 1 end) -- the taker still counts as idle: no wake-up here
    assert.are.equal(wakes, T.wakes())
    T.hold_takes(false)
    while T.marks() == marks do end -- `held` started: its worker is past its look at `incoming`
    assert.are.equal(1, T.wakes() - wakes) -- the parked worker was woken for `quick`
    assert.are.equal(1, quick:wait()) -- run by the other worker while `held` still runs
    assert.are.equal("running", held:status())
    T.stop()
    held:wait()
  end)
end)
