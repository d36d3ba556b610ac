-- A with_job_que scope waits for the work submitted
-- in it, an explicit close says how many jobs it cancelled, and a failure
-- nobody looked at is never silent.
local jobque = require "jobque"
local S = require "support"

local err_of = S.err_of
local here = debug.getinfo(1, "S").short_src

describe("the end of with_job_que", function()
  for _, workers in ipairs {0, 1, 2} do
    it("runs every fire-and-forget job submitted in it (" .. workers .. " workers)", function()
      local kept = {}
      jobque.with_job_que({workers = workers}, function(q)
        for i = 1, 5 do kept[i] = q:submit(function(x) return x * 10 end, i) end
      end)
      for i = 1, 5 do
        assert.are.same({true, i * 10}, {kept[i]:pwait()})
      end
    end)
  end

  it("waits for jobs submitted by jobs, to any depth", function()
    for _, workers in ipairs {0, 2} do
      local root
      jobque.with_job_que({workers = workers}, function(q)
        local function spawn(d)
          if d == 0 then return "leaf" end
          return require("jobque").current():submit(spawn, d - 1) -- not awaited by anyone
        end
        root = q:submit(spawn, 4)
      end)
      local h = root:wait() -- the job of spawn(3), whose result is spawn(2)'s job, ...
      for _ = 1, 3 do h = h:wait() end
      assert.are.equal("done", h:status(), "workers = " .. workers)
      assert.are.equal("leaf", h:wait(), "workers = " .. workers)
    end
  end)

  it("returns fn's results when fn closed the queue itself", function()
    assert.are.equal("closed", jobque.with_job_que({workers = 1}, function(q)
      q:close()
      return "closed"
    end))
  end)

  it("cancels the jobs not started when fn raises, and raises fn's error unchanged", function()
    local kept, obj = {}, {code = 9}
    local ok, err = pcall(jobque.with_job_que, {workers = 0}, function(q)
      for i = 1, 3 do kept[i] = q:submit(function() return i end) end
      error(obj)
    end)
    assert.is_false(ok)
    assert.are.equal(obj, err)
    for i = 1, 3 do
      local okj, e = kept[i]:pwait()
      assert.is_false(okj)
      assert.matches("was cancelled: its queue closed before it finished", e, 1, true)
    end
  end)
end)

describe("q:close()", function()
  it("returns how many jobs it cancelled, and 0 the second time", function()
    local q = jobque.new {workers = 0}
    local a = q:submit(function() return 1 end)
    q:submit(function() return 2 end)
    q:after({a}, function() return 3 end)
    assert.are.equal(3, q:close())
    assert.are.equal(0, q:close())
    local ok, err = a:pwait()
    assert.is_false(ok)
    assert.matches("was cancelled", err, 1, true)
  end)

  it("counts exactly the jobs that report being cancelled", function()
    local q = jobque.new {workers = 1}
    local jobs = {q:submit(function() while true do coroutine.yield() end end)}
    for i = 1, 20 do jobs[#jobs + 1] = q:submit(function() return i end) end
    jobs[#jobs + 1] = q:after({jobs[5]}, function() return "dep" end)
    local n = q:close()
    local cancelled = 0
    for _, j in ipairs(jobs) do
      local ok, err = j:pwait()
      if not ok then
        assert.matches("was cancelled", err, 1, true)
        cancelled = cancelled + 1
      end
    end
    assert.is_true(cancelled >= 1) -- the spinner never ends by itself
    assert.are.equal(cancelled, n)
  end)

  it("counts nothing for a queue that had nothing left", function()
    local q = jobque.new {workers = 2}
    q:submit(function() end):wait()
    assert.are.equal(0, q:close())
  end)
end)

-- The issue's reproduction: every third job fails, nobody looks.
local function every_third(q)
  for i = 1, 10 do
    q:submit(function(k) if k % 3 == 0 then error("boom " .. k, 0) end end, i)
  end
end

describe("failures nobody looked at", function()
  for _, workers in ipairs {0, 2} do
    it("make wait_all raise one error that lists them (" .. workers .. " workers)", function()
      jobque.with_job_que({workers = workers}, function(q)
        local first = q:submit(function() end)
        every_third(q)
        local line = debug.getinfo(every_third, "S").linedefined + 2
        local err = err_of(q.wait_all, q)
        assert.matches("3 jobs failed and no wait, pwait or status returned their error", err, 1, true)
        for _, k in ipairs {3, 6, 9} do
          local id = first:id() + k
          assert.matches(("job #%d (submitted at %s:%d): boom %d"):format(id, here, line, k), err, 1, true)
        end
        q:wait_all() -- reported once: not again
      end)
    end)
  end

  it("are returned by pwait_all as a list, once", function()
    jobque.with_job_que({workers = 2}, function(q)
      local first = q:submit(function() end)
      every_third(q)
      local ok, failures = q:pwait_all()
      assert.is_false(ok)
      assert.are.equal(3, #failures)
      table.sort(failures, function(x, y) return x.id < y.id end)
      for n, k in ipairs {3, 6, 9} do
        assert.are.equal(first:id() + k, failures[n].id)
        assert.are.equal("boom " .. k, failures[n].error:match("^[^\n]*"))
        assert.matches("^" .. here:gsub("%p", "%%%0") .. ":%d+$", failures[n].submitted_at)
      end
      assert.are.same({true}, {q:pwait_all()})
    end)
  end)

  it("survive their handles being collected before anyone looks", function()
    jobque.with_job_que({workers = 2}, function(q)
      for i = 1, 100 do q:submit(function() error("lost " .. i, 0) end) end
      for _ = 1, 3 do collectgarbage("collect") end
      local err = err_of(q.wait_all, q)
      assert.matches("100 jobs failed", err, 1, true)
      assert.matches("(and 97 more: pwait_all returns them all)", err, 1, true)
    end)
  end)

  it("make the end of with_job_que raise, after it closed the queue", function()
    local kept
    local err = err_of(jobque.with_job_que, {workers = 2}, function(q)
      kept = q
      every_third(q)
    end)
    assert.matches("jobque.with_job_que: 3 jobs failed", err, 1, true)
    assert.matches("boom 6", err, 1, true)
    assert.is_true(kept:is_closed())
  end)

  it("do not count when a wait, pwait or status returned the error", function()
    jobque.with_job_que({workers = 2}, function(q)
      local a = q:submit(function() error("a", 0) end)
      local b = q:submit(function() error("b", 0) end)
      local c = q:submit(function() error("c", 0) end)
      assert.is_false((a:pwait()))
      err_of(b.wait, b)
      while c:status() ~= "failed" do end -- status returning "failed" counts as looking
      q:wait_all()
    end)
  end)

  it("count a chain of dependants once, naming the root", function()
    jobque.with_job_que({workers = 2}, function(q)
      local root = q:submit(function() error("root cause", 0) end)
      local prev = root
      for _ = 1, 5 do prev = q:after({prev}, function() return "never" end) end
      local ok, failures = q:pwait_all()
      assert.is_false(ok)
      assert.are.equal(1, #failures)
      assert.are.equal(root:id(), failures[1].id)
      assert.are.equal("root cause", failures[1].error:match("^[^\n]*"))
      assert.are.equal(5, failures[1].not_run)
      -- and the message of wait_all says how many did not run
      local r2 = q:submit(function() error("second", 0) end)
      q:after({r2}, function() end)
      q:after({r2}, function() end)
      assert.matches("1 job failed and no wait, pwait or status returned its error " ..
        "(2 jobs that depend on it did not run)", err_of(q.wait_all, q), 1, true)
    end)
  end)

  it("are seen through a dependant: its error carries the root's", function()
    jobque.with_job_que({workers = 2}, function(q)
      local root = q:submit(function() error("root cause", 0) end)
      local dep = q:after({root}, function() return "never" end)
      local ok, err = dep:pwait()
      assert.is_false(ok)
      assert.matches("root cause", err, 1, true)
      q:wait_all()
    end)
  end)

  it("passed on through a wait in a job count once, as the job that let it escape", function()
    jobque.with_job_que({workers = 2}, function(q)
      local root = q:submit(function() error("deep", 0) end)
      local mid = q:submit(function(r) return r:wait() end, root)
      local top = q:submit(function(m) return m:wait() end, mid)
      local ok, failures = q:pwait_all()
      assert.is_false(ok)
      assert.are.equal(1, #failures)
      assert.are.equal(top:id(), failures[1].id)
      assert.matches("deep", failures[1].error, 1, true)
    end)
  end)

  it("do not include jobs an explicit close cancelled", function()
    local q = jobque.new {workers = 0}
    for i = 1, 3 do q:submit(function() return i end) end
    assert.are.equal(3, q:close()) -- no error: cancelling was asked for
  end)

  it("cannot be collected from inside a job of the same queue", function()
    jobque.with_job_que({workers = 1}, function(q)
      local ok, err = q:submit(function() return require("jobque").current():pwait_all() end):pwait()
      assert.is_false(ok)
      assert.matches("pwait_all cannot be called from a job of the same queue", err, 1, true)
    end)
  end)
end)
