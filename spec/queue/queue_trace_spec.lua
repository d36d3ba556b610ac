-- What the queue records by itself when a session is armed.
local jobque = require "jobque"
local p = require "jobque_profile"
local S = require "support"

-- Runs a small graph on two workers and returns the decoded trace and the
-- job ids involved.
local function traced_run()
  local heavy = p.profile_category("trace heavy", p.PROFILE_COLOR_CORAL)
  local light = p.profile_category("trace light")
  local ids = {}
  local T = require("jobque.core")._test
  p.profile_start(100000)
  jobque.with_job_que({workers = 2}, function(q)
    -- One worker spins until released, so the parent's child can only run
    -- on the parent's worker once the parent yields: the await is certain.
    T.stop(false)
    local blocker = q:submit(function()
      local flag = require("jobque.core")._test
      while not flag.stopping() do end
    end)
    p.profile_tag(heavy)
    local parent = q:submit(function()
      local child = require("jobque").current():submit(function()
        local s = 0
        for i = 1, 20000 do s = s + i end
        return s
      end)
      return child:id(), child:wait()
    end)
    ids.parent = parent:id()
    ids.child = parent:wait()
    T.stop()
    blocker:wait()
    p.profile_tag(light)
    q:parallel_for(1, 8, function(lo) return lo end, 4)
    p.profile_tag(0)
  end)
  p.profile_stop()
  return S.save(p), ids
end

describe("queue tracing", function()
  local t, ids, lanes
  setup(function()
    t, ids = traced_run()
    lanes = S.lane_names(t)
  end)
  teardown(function() p.profile_stop() end)

  local function slices_of(job)
    return S.events(t, function(ev) return ev.ph == "X" and ev.cat == "job" and ev.args.job == job end)
  end

  it("names worker lanes in order, with the caller last", function()
    local order = {}
    for _, lane in ipairs(t.jobqueProfile.laneInfo) do order[#order + 1] = lane.name end
    assert.are.same({"worker 0", "worker 1", "caller"}, order)
  end)

  it("records each slice of a job on the worker that ran it, named by its category", function()
    local parent = slices_of(ids.parent)
    assert.is_true(#parent >= 2, "the parent yields to await its child")
    for _, ev in ipairs(parent) do
      assert.are.equal("trace heavy", ev.name)
      assert.matches("^worker %d$", lanes[ev.tid])
      assert.is_true(ev.dur >= 0)
    end
    local child = slices_of(ids.child)
    assert.are.equal(1, #child)
    assert.are.equal("trace heavy", child[1].name, "work a job submits carries its category")
    local light = S.events(t, function(ev) return ev.ph == "X" and ev.cat == "job" and ev.name == "trace light" end)
    assert.are.equal(4, #light)
  end)

  it("records submits on the submitting lane, with the op tag", function()
    local subs = S.events(t, function(ev) return ev.cat == "submit" and ev.args.job == ids.parent end)
    assert.are.equal(1, #subs)
    assert.are.equal("caller", lanes[subs[1].tid])
    assert.are.equal("submit trace heavy", subs[1].name)
    local child_sub = S.events(t, function(ev) return ev.cat == "submit" and ev.args.job == ids.child end)
    assert.matches("^worker %d$", lanes[child_sub[1].tid])
  end)

  it("draws an arrow from each submit to the job's first slice", function()
    local sub = S.events(t, function(ev) return ev.cat == "submit" and ev.args.job == ids.parent end)[1]
    assert.is_true(sub.flow_out)
    assert.are.equal(ids.parent * 2, sub.bind_id)
    local first = slices_of(ids.parent)[1]
    for _, ev in ipairs(slices_of(ids.parent)) do if ev.ts < first.ts then first = ev end end
    assert.is_true(first.flow_in)
    assert.are.equal(sub.bind_id, first.bind_id)
    assert.is_true(first.ts >= sub.ts)
  end)

  it("draws an arrow from an awaited job's end to the slice where its waiter resumes", function()
    local wakes = S.events(t, function(ev) return ev.name == "wake job" and ev.args.job == ids.parent end)
    assert.are.equal(1, #wakes)
    assert.is_true(wakes[1].flow_out)
    local resumed = S.events(t, function(ev)
      return ev.cat == "job" and ev.args.job == ids.parent and ev.bind_id == wakes[1].bind_id
    end)
    assert.are.equal(1, #resumed)
    assert.is_true(resumed[1].flow_in)
    assert.is_true(resumed[1].ts >= wakes[1].ts)
  end)

  it("never reuses a flow id, and ends only flows that started", function()
    local out, into = {}, {}
    for _, ev in ipairs(t.traceEvents) do
      if ev.bind_id then
        assert.is_true(ev.ph == "X", "flows only on complete slices")
        if ev.flow_out then
          assert.is_nil(out[ev.bind_id], "flow id " .. ev.bind_id .. " reused")
          out[ev.bind_id] = true
        end
        if ev.flow_in then
          assert.is_nil(into[ev.bind_id])
          into[ev.bind_id] = true
        end
      end
    end
    local starts, ends = 0, 0
    for id in pairs(into) do
      ends = ends + 1
      assert.is_true(out[id], "flow " .. id .. " ends without a start")
    end
    for id in pairs(out) do
      starts = starts + 1
      assert.is_true(into[id], "flow " .. id .. " starts without an end")
    end
    -- The run has submits from the caller and from a job, and one await.
    assert.is_true(starts >= 8, "arrows: " .. starts)
    assert.are.equal(starts, ends)
    local resume_arrows = 0
    for id in pairs(into) do if id % 2 == 1 then resume_arrows = resume_arrows + 1 end end
    assert.are.equal(1, resume_arrows, "one await -> resume arrow")
  end)

  it("records a job's await as an async span, and the caller's waits as slices", function()
    local b = S.events(t, function(ev) return ev.ph == "b" and ev.args.job == ids.parent end)
    local e = S.events(t, function(ev) return ev.ph == "e" and ev.args.job == ids.parent end)
    assert.are.equal(1, #b)
    assert.are.equal(1, #e)
    assert.are.equal(ids.child, b[1].args.awaits)
    assert.are.same(b[1].id2, e[1].id2)
    -- The child runs on the parent's worker while the parent is suspended.
    local child = slices_of(ids.child)[1]
    assert.is_true(child.ts >= b[1].ts, "the child starts inside the await")
    assert.is_true(child.ts + child.dur <= e[1].ts + 0.002, "the child ends inside the await")
    assert.is_true(e[1].ts > b[1].ts)
    local waits = S.events(t, function(ev) return ev.name == "wait" and ev.args.job == ids.parent end)
    assert.are.equal(1, #waits)
    assert.are.equal("caller", lanes[waits[1].tid])
    local last = 0
    for _, ev in ipairs(slices_of(ids.parent)) do last = math.max(last, ev.ts + ev.dur) end
    assert.is_true(last <= waits[1].ts + waits[1].dur + 0.002)
  end)

  it("records workers waking after parking", function()
    local wakes = S.events(t, function(ev) return ev.name == "wake" and ev.ph == "i" end)
    assert.is_true(#wakes >= 1)
    for _, ev in ipairs(wakes) do
      assert.matches("^worker %d$", lanes[ev.tid])
      assert.is_true(ev.args.parked_us >= 0)
    end
  end)

  it("records a queue without workers on the caller lane, inside its waits", function()
    p.profile_start(1000)
    local id
    jobque.with_job_que({workers = 0}, function(q)
      local j = q:submit(function() return 1 end)
      id = j:id()
      j:wait()
    end)
    p.profile_stop()
    local t0 = S.save(p)
    local names = S.lane_names(t0)
    local slice = S.events(t0, function(ev) return ev.cat == "job" and ev.args.job == id end)[1]
    local wait = S.events(t0, function(ev) return ev.name == "wait" and ev.args.job == id end)[1]
    assert.are.equal("caller", names[slice.tid])
    assert.is_true(slice.ts >= wait.ts and slice.ts + slice.dur <= wait.ts + wait.dur + 0.002)
  end)

  it("records nothing while no session is armed", function()
    p.profile_start(100)
    p.profile_marker("queue off", 1)
    p.profile_stop()
    jobque.with_job_que({workers = 1}, function(q) q:submit(function() end):wait() end)
    local t1 = S.save(p)
    assert.are.equal(0, #S.events(t1, function(ev) return ev.cat == "job" end))
  end)
end)

describe("queue tracing of an await across queues", function()
  teardown(function() p.profile_stop() end)

  it("records a job's await of another queue's job as a same-queue await is recorded", function()
    local T = require("jobque.core")._test
    p.profile_start(100000)
    local near_q = jobque.new {workers = 1, name = "near"}
    local far_q = jobque.new {workers = 1, name = "far"}
    T.stop(false)
    local marks = T.marks()
    -- `far` ends once the job after `near` ran, which runs on near's one
    -- worker only once `near` suspended there: the await is certain. (A
    -- wait that blocked the worker instead would never let it run: `far`
    -- then gives up after 10 s of CPU, and the spec fails, not hangs.)
    local far = far_q:submit(function(m)
      local flag = require("jobque.core")._test
      local t0 = os.clock()
      while flag.marks() == m and os.clock() - t0 < 10 do coroutine.yield() end
      return 1
    end, marks)
    local near = near_q:submit(function(h) return h:wait() + 1 end, far)
    near_q:submit(function() require("jobque.core")._test.mark() end)
    assert.are.equal(2, near:wait())
    near_q:close()
    far_q:close()
    p.profile_stop()
    local t = S.save(p)
    local lanes = S.lane_names(t)
    local b = S.events(t, function(ev) return ev.ph == "b" and ev.args.job == near:id() end)
    local e = S.events(t, function(ev) return ev.ph == "e" and ev.args.job == near:id() end)
    assert.are.equal(1, #b)
    assert.are.equal(1, #e)
    assert.are.equal(far:id(), b[1].args.awaits)
    assert.are.same(b[1].id2, e[1].id2)
    -- The arrow starts where `far` ended (on far's worker) and ends in the
    -- slice where `near` resumes (on near's).
    local wakes = S.events(t, function(ev) return ev.name == "wake job" and ev.args.job == near:id() end)
    assert.are.equal(1, #wakes)
    assert.is_true(wakes[1].flow_out)
    assert.are.equal("far 0", lanes[wakes[1].tid])
    local resumed = S.events(t, function(ev)
      return ev.cat == "job" and ev.args.job == near:id() and ev.bind_id == wakes[1].bind_id
    end)
    assert.are.equal(1, #resumed)
    assert.is_true(resumed[1].flow_in)
    assert.are.equal("near 0", lanes[resumed[1].tid])
    assert.is_true(resumed[1].ts >= wakes[1].ts)
  end)

  it("draws no arrow to a waiter that its queue's close cancelled", function()
    local T = require("jobque.core")._test
    p.profile_start(100000)
    local near_q = jobque.new {workers = 1}
    local far_q = jobque.new {workers = 1}
    T.stop(false)
    local far = far_q:submit(function()
      local flag = require("jobque.core")._test
      while not flag.stopping() do coroutine.yield() end
      return 1
    end)
    local near = near_q:submit(function(h) return h:wait() end, far)
    while near:status() == "pending" do end -- started: its await registers before any cancel
    near_q:close()                           -- cancels it, suspended or about to be
    T.stop()
    assert.are.equal(1, far:wait())          -- far's end finds its waiter gone
    far_q:close()
    p.profile_stop()
    local t = S.save(p)
    assert.are.equal("job #" .. near:id() .. " was cancelled: its queue closed before it finished",
      select(2, near:pwait()))
    local wakes = S.events(t, function(ev) return ev.name == "wake job" and ev.args.job == near:id() end)
    assert.are.equal(0, #wakes)
  end)
end)
