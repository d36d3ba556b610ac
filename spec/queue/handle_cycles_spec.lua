-- Job handles that hold each other across states (a job's results or
-- error, or an unstarted job's arguments, holding the handle of a job that
-- holds theirs) form a cycle no collector sees: nothing of it may outlive
-- the close of its queues. Counted through the testing build's
-- _test.live_queues (each job holds its queue).
local jobque = require "jobque"
local S = require "support"
local T = require("jobque.core")._test

local ROUNDS = S.sanitized and 20 or 200

local function settle()
  collectgarbage()
  collectgarbage()
end

-- Job a (on qa) returns the handle of job b (on qb), which returns a's:
-- b gets a as its argument; a gets b through its worker's globals, from a
-- third job. `wrap` makes what each returns (the handle, or a function
-- holding it as an upvalue).
local function pair(qa, qb, wrap)
  local a = qa:submit(function(w)
    while not _G.BOX do coroutine.yield() end
    local b = _G.BOX
    _G.BOX = nil
    return w(b)
  end, wrap)
  local b = qb:submit(function(w, x) return w(x) end, wrap, a)
  qa:submit(function(x) _G.BOX = x end, b):wait()
  return a, b
end

local function plain(h) return h end
local function closure(h) return function() return h end end

describe("handle cycles", function()
  before_each(settle)

  it("of two jobs returning each other's handles leave no queue alive after the close", function()
    local before = T.live_queues()
    for _ = 1, ROUNDS do
      local q <close> = jobque.new {workers = 1}
      local a, b = pair(q, q, plain)
      assert.are.equal(b, a:wait()) -- the handles as results: equal to the caller's
      assert.are.equal(a, b:wait())
    end
    settle()
    assert.are.equal(before, T.live_queues())
  end)

  it("across two queues, through upvalues of returned functions, leave no queue alive", function()
    local before = T.live_queues()
    for _ = 1, ROUNDS do
      local q1 = jobque.new {workers = 1}
      local q2 = jobque.new {workers = 1}
      local a, b = pair(q1, q2, closure)
      assert.are.equal(b, a:wait()())
      assert.are.equal(a, b:wait()())
      q2:close()
      q1:close()
    end
    settle()
    assert.are.equal(before, T.live_queues())
  end)

  it("through the arguments of a job its close cancelled leave no queue alive", function()
    local before = T.live_queues()
    for _ = 1, ROUNDS do
      local q = jobque.new {workers = 1}
      local never = q:submit(function() while true do coroutine.yield() end end)
      local a = q:submit(function()
        while not _G.BOX do coroutine.yield() end
        local b = _G.BOX
        _G.BOX = nil
        return b
      end)
      local b = q:after({a, never}, function(x) return x end, a) -- waits for `never`: cancelled
      q:submit(function(x) _G.BOX = x end, b):wait()
      assert.are.equal(b, a:wait())
      assert.are.equal(2, q:close()) -- never and b
    end
    settle()
    assert.are.equal(before, T.live_queues())
  end)

  it("are released at the close: a wait after it says so; results on no cycle stay readable", function()
    local q = jobque.new {workers = 1}
    local a, b = pair(q, q, plain)
    local c = q:submit(function() return "no handle", {1, 2} end)
    assert.are.equal(a, b:wait())
    local d = q:submit(function(x) return {x} end, c) -- a handle of a job that holds none
    local e = q:submit(function(x) return x end, a)   -- a handle into the cycle, on none itself
    assert.are.equal(c, d:wait()[1])
    q:close()
    assert.are.equal(("job #%d's results held job handles and were released when its queue closed "
      .. "(wait for them before closing it)"):format(a:id()), (S.err_of(a.wait, a):gsub("^[^:]*:%d+: ", "")))
    local ok, err = b:pwait()
    assert.is_false(ok)
    assert.is_truthy(err:find(("job #%d's results held job handles"):format(b:id()), 1, true))
    assert.are.equal("done", a:status())
    assert.are.equal(c, d:wait()[1]) -- on no cycle: kept
    assert.are.equal(a, e:wait())
    local r1, r2 = c:wait()
    assert.are.equal("no handle", r1)
    assert.are.same({1, 2}, r2)
  end)

  it("of a job returning its own handle leave no queue alive", function()
    local before = T.live_queues()
    for _ = 1, ROUNDS do
      local q = jobque.new {workers = 1}
      local a = q:submit(function()
        while not _G.BOX do coroutine.yield() end
        local me = _G.BOX
        _G.BOX = nil
        return {me}
      end)
      q:submit(function(x) _G.BOX = x end, a):wait()
      assert.are.equal(a, a:wait()[1])
      q:close()
    end
    settle()
    assert.are.equal(before, T.live_queues())
  end)

  it("completed after one of their queues closed are found by the other's close", function()
    local before = T.live_queues()
    for _ = 1, ROUNDS do
      local q1 = jobque.new {workers = 1}
      local q2 = jobque.new {workers = 1}
      local b = q2:submit(function()
        while not _G.BOX do coroutine.yield() end
        local a = _G.BOX
        _G.BOX = nil
        return a
      end)
      local a = q1:submit(function(x) return x end, b)
      assert.are.equal(b, a:wait())
      q1:close()                    -- b still runs: no cycle yet
      assert.are.equal(b, a:wait()) -- so a's result stays
      q2:submit(function(x) _G.BOX = x end, a):wait()
      assert.are.equal(a, b:wait()) -- the cycle is complete
      q2:close()                    -- and this close finds it
      assert.is_false((b:pwait()))
      assert.are.equal(b, a:wait())
    end
    settle()
    assert.are.equal(before, T.live_queues())
  end)
end)
