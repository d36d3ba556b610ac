-- One session for the whole process: every thread and lua_State that records
-- gets its own lane. Native helper threads (test builds only) each run their
-- own lua_State.
local p = require "jobque_profile"
local S = require "support"
local T = require("jobque.core")._test

local path, cpath = S.paths()

-- Each helper thread records `n` markers "lane tick" with its index as arg.
local RECORD_N = [[
  local index = ...
  local p = require "jobque_profile"
  local m = p.profile_marker_id("lane tick")
  for _ = 1, %d do p.profile_marker(m, index) end
  return p.profile_current_tag()
]]

-- Each helper thread records until told to stop; returns how many it tried.
local RECORD_UNTIL_STOP = [[
  local index = ...
  local p = require "jobque_profile"
  local T = require("jobque.core")._test
  local m = p.profile_marker_id("lane spin")
  local n = 0
  repeat
    for _ = 1, 100 do p.profile_marker(m, index) end
    n = n + 100
  until T.stopping()
  return n
]]

local function spawn(n, chunk)
  return T.spawn(n, chunk, path, cpath)
end

describe("lanes", function()
  after_each(function()
    T.stop()
    p.profile_stop()
  end)

  it("gives each recording thread its own lane, named and ordered, with the caller last", function()
    local tick = p.profile_marker_id("lane tick")
    p.profile_tag(5)
    p.profile_start(1000)
    p.profile_marker(tick, 0)
    local results = spawn(3, RECORD_N:format(200)):join()
    p.profile_marker(tick, 0)
    p.profile_stop()
    p.profile_tag(0)
    for _, r in ipairs(results) do
      assert.are.equal("0", r) -- the tag belongs to the thread that set it
    end
    local t = S.save(p)
    local lanes = t.jobqueProfile.laneInfo
    assert.are.equal(4, #lanes)
    local names = {}
    for i, lane in ipairs(lanes) do
      assert.are.equal(i, lane.tid)
      names[i] = lane.name
    end
    table.sort(names, function(a, b) return a > b end)
    assert.are.same({"thread 3", "thread 2", "thread 1", "caller"}, names)
    assert.are.equal("caller", lanes[4].name)
    -- every event of a thread is on that thread's lane, in order
    local by_tid = {}
    for _, ev in ipairs(S.markers(t, "lane tick")) do
      by_tid[ev.tid] = by_tid[ev.tid] or {}
      table.insert(by_tid[ev.tid], ev)
    end
    for tid = 1, 3 do
      assert.are.equal(200, #by_tid[tid])
      assert.are.equal(200, lanes[tid].recorded)
      local arg = by_tid[tid][1].args.arg
      assert.is_true(arg >= 1 and arg <= 3)
      for _, ev in ipairs(by_tid[tid]) do assert.are.equal(arg, ev.args.arg) end
    end
    assert.are.equal(2, #by_tid[4])
  end)

  it("says what each lane is: a queue's worker (whatever its queue is named), the caller, or another thread", function()
    p.profile_start(64)
    p.profile_marker("lane role", 0)
    -- A queue named like the lanes of unnamed threads: its lanes are still workers.
    require("jobque").with_job_que({workers = 1, name = "thread"}, function(q)
      q:submit(function() end):wait()
    end)
    spawn(1, RECORD_N:format(1)):join()
    p.profile_stop()
    local roles = {}
    for _, lane in ipairs(S.save(p).jobqueProfile.laneInfo) do roles[#roles + 1] = lane.name .. "=" .. lane.role end
    assert.are.same({"thread 0=worker", "thread 1=other", "caller=caller"}, roles)
    -- The report takes the role from the file, not from the name.
    local stats = require "jobque_profile.stats"
    local trace = require "jobque_profile.trace"
    local path_ = os.tmpname()
    assert(p.profile_save(path_))
    local f = stats.compute(assert(trace.load(path_)))
    os.remove(path_)
    assert.are.equal(1, f.workers.lanes)
    assert.are.equal(2, f.others.lanes)
  end)

  it("counts the events of threads that get no lane as lost, in the file and the report", function()
    p.profile_start(64)
    p.profile_marker("lane lost", 0) -- the caller has its lane
    T.lanes_full(true) -- as when every lane is taken
    local ok, err = pcall(function() spawn(2, RECORD_N:format(5)):join() end)
    T.lanes_full(false)
    assert(ok, err)
    p.profile_stop()
    local jp = S.save(p).jobqueProfile
    assert.are.equal(10, jp.lostEvents) -- 2 threads x 5 markers
    assert.are.equal(1, jp.lanes)
    assert.are.equal("caller", jp.laneInfo[1].name)
    local path_ = os.tmpname()
    assert(p.profile_save(path_))
    local stats = require "jobque_profile.stats"
    local report = require "jobque_profile.report"
    local model = assert(require("jobque_profile.trace").load(path_))
    os.remove(path_)
    local text = report.text(stats.compute(model), model)
    assert.matches("10 events of threads that got no lane were lost", text, 1, true)
  end)

  it("gives lanes only to threads that record in this session", function()
    spawn(2, RECORD_N:format(5)):join() -- tracing off: no lanes
    p.profile_start(100)
    p.profile_marker("lane only caller", 1)
    p.profile_stop()
    local t = S.save(p)
    assert.are.equal(1, #t.jobqueProfile.laneInfo)
    assert.are.equal("caller", t.jobqueProfile.laneInfo[1].name)
  end)

  it("counts drops per lane when a thread fills its ring", function()
    p.profile_start(50)
    spawn(2, RECORD_N:format(80)):join()
    p.profile_stop()
    local t = S.save(p)
    local threads = 0
    for _, lane in ipairs(t.jobqueProfile.laneInfo) do
      if lane.name ~= "caller" then
        threads = threads + 1
        assert.are.equal(50, lane.recorded)
        assert.are.equal(30, lane.dropped)
      end
    end
    assert.are.equal(2, threads)
    local fills = S.events(t, function(ev) return ev.ph == "i" and ev.s == "t" end)
    assert.are.equal(2, #fills)
  end)

  it("reuses the lanes of threads that have exited in later sessions", function()
    p.profile_start(10)
    spawn(2, RECORD_N:format(1)):join()
    p.profile_stop()
    local made = T.lane_structs()
    for _ = 1, 3 do
      p.profile_start(10)
      spawn(2, RECORD_N:format(1)):join()
      p.profile_stop()
      assert.are.equal(3, S.save(p).jobqueProfile.lanes)
    end
    assert.are.equal(made, T.lane_structs())
  end)

  it("starts, stops and saves safely while other threads record", function()
    T.stop(false) -- (after_each leaves it set: the threads would stop after one batch)
    local h = spawn(2, RECORD_UNTIL_STOP)
    for round = 1, 25 do
      p.profile_start(200 + round)
      p.profile_marker("lane round", round)
      p.profile_stop()
      local t = S.save(p)
      local caller_seen = false
      for _, lane in ipairs(t.jobqueProfile.laneInfo) do
        assert.is_true(lane.recorded <= 200 + round)
        if lane.name == "caller" then caller_seen = true end
      end
      assert.is_true(caller_seen)
      local rounds = S.markers(t, "lane round")
      assert.are.equal(1, #rounds)
      assert.are.equal(round, rounds[1].args.arg)
      for _, ev in ipairs(S.markers(t, "lane spin")) do
        assert.is_true(ev.args.arg == 1 or ev.args.arg == 2)
      end
    end
    T.stop()
    local results = h:join()
    assert.are.equal(2, #results)
    for _, r in ipairs(results) do assert.is_true((tonumber(r) or 0) >= 100, r) end
  end)

  it("keeps a lane whose ring could not be allocated, counting its events as dropped", function()
    if S.sanitized then return end -- (a sanitizer reserves more address space than the limit below)
    -- A child limited to ~680 MB of address space: the caller's ring of 2^24
    -- events (512 MB) fits, a worker's second one does not.
    local script, out = S.tmpfile("noring.lua"), S.tmpfile()
    S.write(script, [[
      package.path = "lua/?.lua;" .. package.path
      package.cpath = arg[2]
      local p = require "jobque_profile"
      local jobque = require "jobque"
      p.profile_start(1 << 24)
      p.profile_marker("no ring caller", 1)
      jobque.with_job_que({workers = 1}, function(q) q:submit(function() return 1 end):wait() end)
      p.profile_stop()
      assert(p.profile_save(arg[1]))
    ]])
    local h = io.popen(("ulimit -v 700000 && %s %s '%s' '%s' 2>&1"):format(S.lua, script, out, package.cpath))
    local log = h:read("a")
    assert.is_true(h:close(), log)
    local t = require("cjson").decode(S.read(out))
    local info = t.jobqueProfile.laneInfo
    assert.are.equal(2, #info)
    assert.are.same({"worker 0", "caller"}, {info[1].name, info[2].name})
    assert.are.equal("out of memory for this lane's ring", info[1].error)
    assert.are.equal(0, info[1].recorded)
    assert.is_true(info[1].dropped >= 1, "the worker's events are counted as dropped")
    assert.is_nil(info[2].error)
    assert.are.equal(0, info[2].dropped)
    assert.are.equal(0, t.jobqueProfile.lostEvents)
    local full = S.events(t, function(ev) return ev.ph == "i" and ev.name == "lane full: events dropped" end)
    assert.are.equal(1, #full)
    assert.are.equal(info[1].tid, full[1].tid)
    assert.are.equal(info[1].dropped, full[1].args.dropped)
    assert.are.equal(info[1].fullAtUs, full[1].ts)
    assert.are.equal(1, #S.markers(t, "no ring caller"))
  end)

  it("records from another lua_State into the same session", function()
    p.profile_start(100)
    local results = spawn(1, [[
      local p = require "jobque_profile"
      assert(p.profile_is_on(), "the session is process-wide")
      p.profile_marker("lane other state", 11)
      return "ok"
    ]]):join()
    p.profile_stop()
    assert.are.same({"ok"}, results)
    local marks = S.markers(S.save(p), "lane other state")
    assert.are.equal(1, #marks)
    assert.are.equal(11, marks[1].args.arg)
  end)
end)
