-- The happens-before edges the queue records (docs/trace-format.md, Edges):
-- programs whose edges are known by construction, read from the saved file.
local jobque = require "jobque"
local p = require "jobque_profile"
local S = require "support"

local T = require("jobque.core")._test
local here = debug.getinfo(1, "S").short_src

-- Runs body() in a session and returns the decoded trace.
local function traced(body)
  p.profile_start(100000)
  local ok, err = pcall(body)
  p.profile_stop()
  assert(ok, err)
  return (S.save(p))
end

-- tid -> the lane's laneInfo entry.
local function lanes_of(trace)
  local by_tid = {}
  for _, l in ipairs(trace.jobqueProfile.laneInfo) do by_tid[l.tid] = l end
  return by_tid
end

-- The edges of the file, each as "lane name|kind|job|on|queue" (an absent
-- key as -), in file order.
local function edges(trace)
  local lanes, out = lanes_of(trace), {}
  for _, ev in ipairs(trace.traceEvents) do
    if ev.cat == "edge" then
      assert.are.equal("i", ev.ph)
      assert.are.equal("t", ev.s)
      local a = ev.args
      local function v(x) return x == nil and "-" or ("%d"):format(x) end
      out[#out + 1] = ("%s|%s|%s|%s|%s"):format(lanes[ev.tid].name, ev.name, v(a.job), v(a.on), v(a.queue))
    end
  end
  return out
end

-- The events of lane `tid` in file order.
local function lane_events(trace, tid)
  return S.events(trace, function(ev) return ev.tid == tid and ev.ph ~= "M" end)
end

local function tid_of(trace, name)
  for _, l in ipairs(trace.jobqueProfile.laneInfo) do
    if l.name == name then return l.tid end
  end
  error("no lane " .. name)
end

describe("the queue's edges", function()
  it("records a wait on a finished job from the caller, each time, before its copy result", function()
    local a
    local t = traced(function()
      local q = jobque.new{workers = 1}
      a = q:submit(function() return 1 end)
      assert(a:wait() == 1)
      assert(a:wait() == 1) -- finished for sure: still an edge
      q:close()
    end)
    local id = a:id()
    assert.are.same({"caller|waited for|-|" .. id .. "|-", "caller|waited for|-|" .. id .. "|-"}, edges(t))
    local evs = lane_events(t, tid_of(t, "caller"))
    local seen = 0
    for i, ev in ipairs(evs) do
      if ev.cat == "edge" then
        local nxt = evs[i + 1]
        assert.are.equal("copy result", nxt.name)
        assert.are.equal(id, nxt.args.job)
        assert.is_true(ev.ts <= nxt.ts)
        seen = seen + 1
      end
    end
    assert.are.equal(2, seen)
  end)

  it("records a wait on a finished job from a job, with the waiting job", function()
    local a, b
    local t = traced(function()
      local q = jobque.new{workers = 1}
      -- One worker takes jobs in submit order: a ends before b starts.
      a = q:submit(function() return 1 end)
      b = q:submit(function(x) return x:wait() + 1 end, a)
      assert(b:wait() == 2)
      q:close()
    end)
    assert.are.same({"worker 0|waited for|" .. b:id() .. "|" .. a:id() .. "|-",
                     "caller|waited for|-|" .. b:id() .. "|-"}, edges(t))
    assert.are.same({}, S.events(t, function(ev) return ev.cat == "await" end)) -- a had finished
  end)

  it("records an await at the start of the slice the job resumed in", function()
    local parent, child
    local t = traced(function()
      local q = jobque.new{workers = 1}
      parent = q:submit(function()
        -- The only worker runs the parent: the child cannot have run yet.
        local c = jobque.current():submit(function() return 5 end)
        return c:id(), c:wait()
      end)
      local cid, five = parent:wait()
      assert(five == 5)
      child = cid
      q:close()
    end)
    assert.are.same({"worker 0|waited for|" .. parent:id() .. "|" .. child .. "|-",
                     "caller|waited for|-|" .. parent:id() .. "|-"}, edges(t))
    local edge = S.events(t, function(ev) return ev.cat == "edge" and ev.args.job == parent:id() end)[1]
    local slices = S.events(t, function(ev) return ev.cat == "job" and ev.args.job == parent:id() end)
    assert.are.equal(2, #slices)
    local last = slices[1].ts > slices[2].ts and slices[1] or slices[2]
    assert.is_true(edge.ts >= last.ts and edge.ts <= last.ts + last.dur)
  end)

  it("records a blocking wait when it returns, and a pwait on a failed job", function()
    local j, f
    local t = traced(function()
      local q = jobque.new{workers = 0} -- its jobs run in the caller's waits: j is not done when waited
      j = q:submit(function() return 1 end)
      assert(j:wait() == 1)
      f = q:submit(function() error("edges spec") end)
      assert(not f:pwait())
      q:close()
    end)
    assert.are.same({"caller|waited for|-|" .. j:id() .. "|-", "caller|waited for|-|" .. f:id() .. "|-"},
                    edges(t))
    local wait = S.events(t, function(ev) return ev.cat == "wait" and ev.args and ev.args.job == j:id() end)[1]
    local edge = S.events(t, function(ev) return ev.cat == "edge" and ev.args.on == j:id() end)[1]
    assert.is_true(edge.ts >= wait.ts + wait.dur)
    assert.are.same({}, S.events(t, function(ev) return ev.name == "copy result" and ev.args.job == f:id() end))
  end)

  it("records wait_all, from the caller and from a job, with the queue's number", function()
    local outer
    local t = traced(function()
      T.set_next_queue_seq(41)
      local q = jobque.new{workers = 1} -- queue 41
      outer = q:submit(function()
        local inner = jobque.new{workers = 1} -- queue 42
        inner:submit(function() return 1 end)
        inner:wait_all()
        inner:close()
      end)
      q:wait_all()
      q:close()
    end)
    assert.are.same({"worker 0|waited for all|" .. outer:id() .. "|-|42", "caller|waited for all|-|-|41"}, edges(t))
    local queues = {}
    for _, l in ipairs(t.jobqueProfile.laneInfo) do
      if l.role == "worker" then queues[#queues + 1] = l.queue end
    end
    table.sort(queues)
    assert.are.same({41, 42}, queues)
    for _, l in ipairs(t.jobqueProfile.laneInfo) do
      if l.role ~= "worker" then assert.is_nil(l.queue) end
    end
  end)

  it("records a scope's end as a wait for all", function()
    local t = traced(function()
      T.set_next_queue_seq(7)
      jobque.with_job_que({workers = 1}, function(q) q:submit(function() end) end)
    end)
    assert.are.same({"caller|waited for all|-|-|7"}, edges(t))
  end)

  it("records each dependency of after, finished or not, right after the submit", function()
    local d1, d2, n
    local t = traced(function()
      local q = jobque.new{workers = 1}
      d1 = q:submit(function() return 1 end)
      d1:wait()
      T.stop(false) -- d2 runs until the stop below, after q:after: unfinished there
      d2 = q:submit(function()
        local flag = require("jobque.core")._test
        while not flag.stopping() do end
      end)
      n = q:after({d1, d2}, function() return 3 end)
      T.stop()
      assert(n:wait() == 3)
      q:close()
    end)
    assert.are.same({"caller|waited for|-|" .. d1:id() .. "|-",
                     "caller|after|" .. n:id() .. "|" .. d1:id() .. "|-",
                     "caller|after|" .. n:id() .. "|" .. d2:id() .. "|-",
                     "caller|waited for|-|" .. n:id() .. "|-"}, edges(t))
    local evs = lane_events(t, tid_of(t, "caller"))
    for i, ev in ipairs(evs) do
      if ev.cat == "submit" and ev.args.job == n:id() then
        assert.are.equal("after", evs[i + 1].name)
        assert.are.equal("after", evs[i + 2].name)
        assert.is_true(evs[i + 1].ts >= ev.ts + ev.dur)
      end
    end
  end)

  -- A job that runs until its queue starts closing: it has started when
  -- `mark` counts it, and it cannot end before the close has begun.
  local function until_closed()
    local t = require("jobque.core")._test
    local me = require("jobque").current()
    t.mark()
    while not me:is_closed() do end
  end

  it("records a close that waited for a running job as a wait for all", function()
    local j
    local t = traced(function()
      T.set_next_queue_seq(23)
      local q = jobque.new{workers = 1} -- queue 23
      local marks = T.marks()
      j = q:submit(until_closed)
      T.wait_marks(marks + 1) -- j runs: the close below waits for it
      assert.are.equal(0, q:close())
    end)
    assert.are.same({"caller|waited for all|-|-|23"}, edges(t))
    local caller = tid_of(t, "caller")
    local waits = S.events(t, function(ev) return ev.tid == caller and ev.name == "wait all" end)
    assert.are.equal(1, #waits)
    local wait, edge = waits[1], S.events(t, function(ev) return ev.cat == "edge" end)[1]
    assert.are.equal("wait", wait.cat)
    assert.is_true(edge.ts >= wait.ts + wait.dur)
    local slice = S.events(t, function(ev) return ev.cat == "job" and ev.args.job == j:id() end)
    assert.are.equal(1, #slice) -- began before the close, ended inside it
    assert.is_true(slice[1].ts <= wait.ts and slice[1].ts + slice[1].dur <= wait.ts + wait.dur)
  end)

  it("records a scope's close in a job that waited for a running job, with the waiting job", function()
    local outer
    local t = traced(function()
      T.set_next_queue_seq(31)
      local q = jobque.new{workers = 1} -- queue 31
      outer = q:submit(function(marks, body)
        local inner <close> = require("jobque").new{workers = 1} -- queue 32
        inner:submit(body)
        require("jobque.core")._test.wait_marks(marks + 1)
      end, T.marks(), until_closed)
      outer:wait()
      q:close() -- outer has finished: nothing to wait for, no edge
    end)
    assert.are.same({"worker 0|waited for all|" .. outer:id() .. "|-|32",
                     "caller|waited for|-|" .. outer:id() .. "|-"}, edges(t))
  end)

  it("records no wait at a close with nothing started, nor at the collector's", function()
    local id
    local t = traced(function()
      local idle = jobque.new{workers = 0}
      idle:submit(function() end) -- never started: the close cancels it
      assert.are.equal(1, idle:close())
      local q = jobque.new{workers = 1}
      local marks = T.marks()
      id = q:submit(until_closed):id()
      T.wait_marks(marks + 1)
      q = nil -- luacheck: ignore 311
      collectgarbage() -- the collector closes q while its job runs
      collectgarbage()
    end)
    assert.are.same({}, edges(t))
    -- (the job ended, so the collector did close q: its slice was recorded)
    assert.are.equal(1, #S.events(t, function(ev) return ev.cat == "job" and ev.args.job == id end))
    assert.are.same({}, S.events(t, function(ev) return ev.name == "wait all" end))
  end)

  it("records nothing when no session is armed", function()
    local mark = p.profile_marker_id("edges spec")
    local t = traced(function()
      p.profile_marker(mark, 1)
      p.profile_stop() -- the waits below run with the session stopped
      local q = jobque.new{workers = 1}
      local a = q:submit(function() return 1 end)
      a:wait()
      q:after({a}, function() end)
      q:wait_all()
      q:close()
    end)
    assert.are.same({}, edges(t))
    assert.are.equal(1, #S.markers(t, "edges spec"))
  end)
end)

describe("a job's profile_tag", function()
  it("survives its awaits and yields", function()
    local cat = p.profile_category("edges spec tag")
    local q = jobque.new{workers = 1}
    local j = q:submit(function(c)
      local P = require "jobque_profile"
      P.profile_tag(c)
      jobque.current():submit(function() end):wait() -- an await: the worker runs the child meanwhile
      local after_await = P.profile_current_tag()
      coroutine.yield()
      return after_await, P.profile_current_tag()
    end, cat)
    local a, b = j:wait()
    assert.are.equal(cat, a)
    assert.are.equal(cat, b)
    q:close()
  end)
end)

describe("where a submit was made", function()
  local function chunks_fail(q)
    return q:parallel_for(1, 2, function(lo) if lo == 1 then error("edges spec chunk") end end, 2)
  end

  it("is the nearest Lua line when pcall called parallel_for", function()
    local q = jobque.new{workers = 1}
    local ok, err = pcall(q.parallel_for, q, 1, 2, function(lo) if lo == 1 then error("edges spec") end end, 2)
    local line = debug.getinfo(1, "l").currentline - 1
    assert.is_false(ok)
    assert.truthy(err:find("submitted at " .. here .. ":" .. line, 1, true), err)
    q:close()
  end)

  it("is the nearest Lua line when parallel_for was tail-called", function()
    local q = jobque.new{workers = 1}
    local ok, err = pcall(chunks_fail, q) local line = debug.getinfo(1, "l").currentline
    assert.is_false(ok)
    assert.truthy(err:find("submitted at " .. here .. ":" .. line, 1, true), err)
    q:close()
  end)
end)
