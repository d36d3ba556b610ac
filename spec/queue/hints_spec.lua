-- The most common mistakes get a hint in their message.
local jobque = require "jobque"
local p = require "jobque_profile"
local S = require "support"

local err_of = S.err_of
local here = debug.getinfo(1, "S").short_src

describe("error hints", function()
  it("a queue handle as an upvalue or argument points at jobque.current()", function()
    jobque.with_job_que({workers = 1}, function(q)
      local up = err_of(q.submit, q, function() return q:workers() end)
      assert.matches("upvalue 'q': a queue cannot be sent to a worker", up, 1, true)
      assert.matches("jobque.current()", up, 1, true)
      local arg = err_of(q.submit, q, function(x) return x end, q)
      assert.matches("argument #2: a queue cannot be sent to a worker", arg, 1, true)
      assert.matches("jobque.current()", arg, 1, true)
      assert.matches("pass the job's result", arg, 1, true)
    end)
  end)

  it("a nil global called in a worker says workers have their own globals", function()
    jobque.with_job_que({workers = 1}, function(q)
      local ok, err = q:submit(function() return helper_nowhere(1) end):pwait() -- luacheck: ignore
      assert.is_false(ok)
      assert.matches("attempt to call a nil value (global 'helper_nowhere')", err, 1, true)
      assert.matches("workers have their own globals", err, 1, true)
      for _, way in ipairs {"argument", "upvalue", "require", "init"} do
        assert.matches(way, err, 1, true)
      end
    end)
  end)

  it("a nil global called with workers = 0 gets no such hint (jobs share the caller's globals)", function()
    jobque.with_job_que({workers = 0}, function(q)
      local ok, err = q:submit(function() return helper_nowhere(1) end):pwait() -- luacheck: ignore
      assert.is_false(ok)
      assert.matches("attempt to call a nil value (global 'helper_nowhere')", err, 1, true)
      assert.is_nil(err:find("own globals", 1, true))
    end)
  end)

  it("a result that cannot be copied back says returned to the caller", function()
    jobque.with_job_que({workers = 1}, function(q)
      local ok, err = q:submit(function() return io.stdout end):pwait()
      assert.is_false(ok)
      assert.matches("result #1: userdata cannot be returned to the caller", err, 1, true)
      assert.is_nil(err:find("sent to a worker", 1, true))
    end)
  end)

  it("profile_save to a directory, or under a file, says so", function()
    p.profile_start(64)
    p.profile_marker("hint")
    p.profile_stop()
    local dir = S.tmpdir .. "/"
    local ok, msg = p.profile_save(dir)
    assert.is_false(ok)
    assert.matches("cannot write trace to '" .. dir .. "': it is a directory", msg, 1, true)
    local file = S.tmpfile("plain.txt")
    S.write(file, "x")
    ok, msg = p.profile_save(file .. "/t.json")
    assert.is_false(ok)
    assert.matches("'" .. file .. "' is not a directory", msg, 1, true)
    assert.are.equal("x", S.read(file)) -- nothing lost
  end)

  it("parallel_for errors point at the caller's line", function()
    jobque.with_job_que({workers = 2}, function(q)
      local u = io.stdout
      local line = debug.getinfo(1, "l").currentline + 1
      local err = err_of(function() local r = q:parallel_for(1, 10, function() return u end) return r end)
      assert.matches("^" .. here:gsub("%p", "%%%0") .. ":" .. line .. ": cannot submit: argument #3, upvalue 'u'", err)
      line = debug.getinfo(1, "l").currentline + 1
      err = err_of(function() local r = q:parallel_for(1, 10, function() error("chunk", 0) end) return r end)
      assert.matches(("submitted at %s:%d)"):format(here, line), err, 1, true)
      assert.is_nil(err:find("jobque.lua", 1, true))
    end)
  end)

  it("a job submitted through pcall names the nearest Lua line; with no Lua function up the stack, ?", function()
    jobque.with_job_que({workers = 1}, function(q)
      local _, job = pcall(q.submit, q, function() error("unplaced", 0) end)
      local line = debug.getinfo(1, "l").currentline - 1
      local ok, err = job:pwait()
      assert.is_false(ok)
      assert.matches(("(in job #%d submitted at %s:%d)"):format(job:id(), here, line), err, 1, true)
      local perr = select(2, pcall(q.parallel_for, q, 1, 2, function() error("chunk", 0) end))
      line = debug.getinfo(1, "l").currentline - 1
      assert.matches(("submitted at %s:%d)"):format(here, line), perr, 1, true)
      -- a coroutine whose body is the C function: no Lua line on its stack
      job = coroutine.wrap(q.submit)(q, function() error("unplaced", 0) end)
      ok, err = job:pwait()
      assert.is_false(ok)
      assert.matches("(in job #" .. job:id() .. " submitted at ?)", err, 1, true)
      assert.is_nil(err:find("?:-1", 1, true))
    end)
  end)

  it("a job returning its queue is not told to pass the job's result instead", function()
    jobque.with_job_que({workers = 1}, function(q)
      local ok, err = q:submit(function() return jobque.current() end):pwait()
      assert.is_false(ok)
      assert.matches("result #1: a queue cannot be returned to the caller", err, 1, true)
      assert.is_nil(err:find("pass the job's result", 1, true))
    end)
  end)

  it("q:workers() on a closed queue returns the count it had", function()
    local q = jobque.new {workers = 3}
    q:close()
    assert.are.equal(3, q:workers())
    assert.matches("the queue is closed", err_of(q.parallel_for, q, 1, 10, function() end), 1, true)
    -- and the message points at the line that called parallel_for
    local line = debug.getinfo(1, "l").currentline + 1
    local _, err = pcall(function() q:parallel_for(1, 10, function() end) end)
    assert.matches("^[^\n]*hints_spec%.lua:" .. line .. ": the queue is closed", err)
  end)
end)
