-- Failed and cancelled jobs, and the copying of values between states, as
-- the trace records them and the reader, the report and the page show them.
local cjson = require "cjson"
local jobque = require "jobque"
local p = require "jobque_profile"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"
local html = require "jobque_profile.page"
local S = require "support"

local TEXT_MAX = 256 -- the documented longest error text of a trace, in bytes

local function valid_utf8(s)
  return utf8.len(s) ~= nil
end

-- The X slices of lane tid, by start.
local function lane_slices(t, tid)
  local list = S.events(t, function(ev) return ev.ph == "X" and ev.tid == tid end)
  table.sort(list, function(a, b) return a.ts < b.ts or (a.ts == b.ts and a.dur > b.dur) end)
  return list
end

-- Fails unless the X slices of every lane nest (Perfetto's rule): two
-- slices are disjoint or one holds the other.
local function assert_nesting(t)
  for tid, name in pairs(S.lane_names(t)) do
    local stack = {}
    for _, ev in ipairs(lane_slices(t, tid)) do
      local e = ev.ts + ev.dur
      -- (times are microseconds with three decimals: sums of them are off by float rounding)
      while #stack > 0 and stack[#stack] <= ev.ts + 1e-6 do stack[#stack] = nil end
      if #stack > 0 then
        assert.is_true(e <= stack[#stack] + 1e-6, ("on lane %s, %s at %.3f (%.3f us) overlaps the slice it starts in")
          :format(name, ev.name, ev.ts, ev.dur))
      end
      stack[#stack + 1] = e
    end
  end
end

local function by_job(t, pred)
  local out = {}
  for _, ev in ipairs(S.events(t, pred)) do
    local id = math.tointeger(ev.args and ev.args.job)
    if id then
      out[id] = out[id] or {}
      table.insert(out[id], ev)
    end
  end
  return out
end

describe("a failed job in the trace", function()
  local t, path, ids, lanes
  local long_msg = ("x"):rep(TEXT_MAX - 5) .. ("\226\130\172"):rep(200) -- 251 bytes, then 3-byte euro signs
  setup(function()
    local cat = p.profile_category("outcome fail")
    ids = {}
    p.profile_start(10000)
    local q <close> = jobque.new{workers = 1}
    p.profile_tag(cat)
    local short = q:submit(function() error("boom short") end)
    local long = q:submit(function(m) error(m, 0) end, long_msg)
    local tbl = q:submit(function() error({code = 1}) end)
    local uncopyable = q:submit(function() return io.stdout end)
    local fine = q:submit(function() return 1 end)
    p.profile_tag(0)
    ids.short, ids.long, ids.tbl, ids.uncopyable, ids.fine = short:id(), long:id(), tbl:id(), uncopyable:id(), fine:id()
    for _, j in ipairs{short, long, tbl, uncopyable, fine} do j:pwait() end
    q:close()
    p.profile_stop()
    local _
    t, _, path = S.save(p)
    lanes = S.lane_names(t)
  end)
  teardown(function() p.profile_stop() end)

  -- The job's events (job slices and copies) on the worker, in time order.
  local function last_event(id)
    local evs = S.events(t, function(ev)
      return ev.ph == "X" and (ev.cat == "job" or ev.cat == "copy") and ev.args.job == id and lanes[ev.tid] == "worker 0"
    end)
    table.sort(evs, function(a, b) return a.ts + a.dur < b.ts + b.dur end)
    return evs[#evs], evs
  end

  it("carries its error message on its last slice", function()
    local last = last_event(ids.short)
    assert.are.equal("job", last.cat)
    assert.is_true(last.args.failed)
    assert.matches("boom short$", last.args.error)
    assert.matches("^[^\n]*$", last.args.error, nil, false) -- the message, not its traceback
  end)

  it("cuts a long message at a character boundary, marks the cut, and writes valid UTF-8", function()
    local last = last_event(ids.long)
    local msg = last.args.error
    assert.is_true(valid_utf8(msg))
    assert.are.equal(("x"):rep(TEXT_MAX - 5) .. "\226\130\172" .. "\226\128\166", msg) -- 254 bytes kept, then an ellipsis
  end)

  it("names an error that is not a string by its type", function()
    assert.are.equal("table", last_event(ids.tbl).args.error)
  end)

  it("names an error of any other type by its type too (boolean, number, nil)", function()
    p.profile_start(1000)
    local q <close> = jobque.new{workers = 1}
    local jobs = {q:submit(function() assert(false, true) end), q:submit(function() assert(nil, 42) end),
                  q:submit(function() error(nil) end)}
    for _, j in ipairs(jobs) do j:pwait() end
    q:close()
    p.profile_stop()
    local t2 = S.save(p)
    local got = {}
    for i, j in ipairs(jobs) do
      for _, ev in ipairs(S.events(t2, function(e) return e.ph == "X" and e.args.job == j:id() and e.args.failed end)) do
        got[i] = ev.args.error
      end
    end
    assert.same({"boolean", "number", "nil"}, got)
  end)

  it("puts the error of a result that cannot be copied back on the copy out, after the slice", function()
    local last, evs = last_event(ids.uncopyable)
    assert.are.equal("copy out", last.name)
    assert.is_true(last.args.failed)
    assert.matches("cannot be copied back", last.args.error, 1, true)
    assert.is_true(evs[#evs - 1].args.failed, "the job's slice is failed too")
  end)

  it("leaves a job that succeeded unmarked", function()
    local last = last_event(ids.fine)
    assert.is_nil(last.args.failed)
    assert.is_nil(last.args.error)
  end)

  it("is counted per category, and the first few are listed with their messages, by the report", function()
    local model = assert(trace.load(path))
    local f = stats.compute(model)
    assert.are.equal(4, f.failures.failed)
    assert.are.equal(0, f.failures.cancelled)
    local row
    for _, c in ipairs(f.failures.by_category) do if c.name == "outcome fail" then row = c end end
    assert.are.same({name = "outcome fail", failed = 4, cancelled = 0}, row)
    assert.are.equal(ids.short, f.failures.first[1].job)
    assert.matches("boom short$", f.failures.first[1].message)
    assert.are.equal("worker 0", f.failures.first[1].lane)
    local text = report.text(f, model)
    assert.matches("failed jobs 4, cancelled jobs 0", text, 1, true)
    assert.matches("outcome fail%s+4%s+0", text)
    assert.matches(("job #%d .*boom short"):format(ids.short), text)
    -- A message is cut far later than a name (at report.MESSAGE_WIDTH, not NAME_WIDTH).
    assert.matches(("job #%d .*: "):format(ids.long) .. ("x"):rep(100), text)
    local json = cjson.decode(report.json(f))
    assert.are.equal(4, json.failures.failed)
    assert.are.equal(ids.short, json.failures.first[1].job)
  end)

  it("marks failed slices on the page, with the message in the tooltip", function()
    local model = assert(trace.load(path))
    local page = S.tmpfile("failed.html")
    assert(html.write(model, page, {test_hooks = true}))
    local lane_index, slice
    for li, lane in ipairs(model.lanes) do
      for k = 1, lane.n do
        if lane.kind[k] == "job" and lane.job[k] == ids.short then lane_index, slice = li, k end
      end
    end
    assert(slice, "the failed slice is in the model")
    local lane = model.lanes[lane_index]
    local state = S.open_page(page, ("#probe=%d,%.3f"):format(lane_index - 1, lane.ts[slice] + lane.dur[slice] / 2))
    assert.are.equal(5, state.failed) -- 4 job slices and the failed copy out
    assert.is_true(state.failedDrawn >= 1)
    assert.matches("error    [^\n]*boom short", state.probe)
  end)
end)

describe("a cancelled job in the trace", function()
  local t, path, ids
  setup(function()
    local cat = p.profile_category("outcome cancel")
    ids = {}
    p.profile_start(10000)
    local q = jobque.new{workers = 0} -- nothing runs until the caller waits
    p.profile_tag(cat)
    for i = 1, 3 do ids[i] = q:submit(function() end):id() end
    p.profile_tag(0)
    q:close()
    p.profile_stop()
    local _
    t, _, path = S.save(p)
  end)
  teardown(function() p.profile_stop() end)

  it("gets a 'cancelled' instant with its id and category on the lane that cancelled it", function()
    local lanes = S.lane_names(t)
    local got = by_job(t, function(ev) return ev.ph == "i" and ev.name == "cancelled" end)
    for _, id in ipairs(ids) do
      assert.is_table(got[id], "job " .. id .. " has a cancelled instant")
      assert.are.equal(1, #got[id])
      local ev = got[id][1]
      assert.are.equal("t", ev.s)
      assert.are.equal("caller", lanes[ev.tid])
      assert.are.equal("outcome cancel", ev.args.category)
    end
  end)

  it("is counted per category by the report", function()
    local model = assert(trace.load(path))
    local f = stats.compute(model)
    assert.are.equal(3, f.failures.cancelled)
    assert.are.equal(0, f.failures.failed)
    assert.are.same({{name = "outcome cancel", failed = 0, cancelled = 3}}, f.failures.by_category)
    assert.matches("failed jobs 0, cancelled jobs 3", report.text(f, model), 1, true)
  end)
end)

describe("copying values between states", function()
  local t, path, id, lanes
  local N = 100000
  setup(function()
    local cat = p.profile_category("outcome copy")
    p.profile_start(10000)
    local q <close> = jobque.new{workers = 1}
    local big = {}
    for i = 1, N do big[i] = i end
    p.profile_tag(cat)
    local job = q:submit(function(list)
      local out = {}
      for i = 1, #list do out[i] = list[i] * 2 end
      return out
    end, big)
    p.profile_tag(0)
    id = job:id()
    local out = job:wait()
    assert(#out == N)
    q:close()
    p.profile_stop()
    local _
    t, _, path = S.save(p)
    lanes = S.lane_names(t)
  end)
  teardown(function() p.profile_stop() end)

  local function copy(name)
    local list = S.events(t, function(ev) return ev.ph == "X" and ev.name == name and ev.args.job == id end)
    assert.are.equal(1, #list, "one " .. name .. " slice for the job")
    return list[1]
  end

  it("records copy in and copy out on the worker, copy result on the caller, with matching bytes", function()
    local cin, cout, cres = copy("copy in"), copy("copy out"), copy("copy result")
    assert.are.equal("worker 0", lanes[cin.tid])
    assert.are.equal("worker 0", lanes[cout.tid])
    assert.are.equal("caller", lanes[cres.tid])
    for _, ev in ipairs{cin, cout, cres} do
      assert.are.equal("copy", ev.cat)
      assert.are.equal("outcome copy", ev.args.category)
      assert.is_true(ev.args.bytes >= N, ev.name .. " counts the bytes of the table")
    end
    assert.are.equal(cout.args.bytes, cres.args.bytes)
    local slice = S.events(t, function(ev) return ev.cat == "job" and ev.args.job == id end)[1]
    assert.is_true(cin.ts + cin.dur <= slice.ts + 1e-9, "copy in ends before the job's slice starts")
    assert.is_true(cout.ts >= slice.ts + slice.dur - 1e-9, "copy out starts after it")
  end)

  it("keeps the slices of every lane properly nested", function()
    assert_nesting(t)
  end)

  it("counts copies as busy, and shows copy time per category in the report", function()
    local model = assert(trace.load(path))
    local f = stats.compute(model)
    local cin, cout, cres = copy("copy in"), copy("copy out"), copy("copy result")
    local slice = S.events(t, function(ev) return ev.cat == "job" and ev.args.job == id end)[1]
    local worker, caller
    for _, l in ipairs(f.lanes) do
      if l.name == "worker 0" then worker = l elseif l.name == "caller" then caller = l end
    end
    assert.is_true(worker.busy >= cin.dur + slice.dur + cout.dur - 0.01)
    assert.is_true(caller.busy >= cres.dur - 0.01)
    local row
    for _, c in ipairs(f.copies) do if c.name == "outcome copy" then row = c end end
    assert.is_table(row, "a copy row for the job's category")
    assert.are.equal(3, row.count)
    assert.are.equal(cin.args.bytes + cout.args.bytes + cres.args.bytes, row.bytes)
    assert.is_near(cin.dur + cout.dur + cres.dur, row.time, 0.01)
    local text = report.text(f, model)
    assert.matches("copy time by category", text, 1, true)
    assert.matches("outcome copy%s+3%s", text)
    assert.are.equal(3, cjson.decode(report.json(f)).copies[1].count)
  end)
end)

describe("an error text in a lane's ring", function()
  teardown(function() p.profile_stop() end)

  it("is skipped whole by the writer: its bytes never read as events", function()
    -- bytes 30 of each 32-byte entry would be an event's kind: make them all SUBMIT (2)
    local msg = ("\2"):rep(200)
    p.profile_start(1000)
    local q <close> = jobque.new{workers = 1}
    local job = q:submit(function(m) error(m, 0) end, msg)
    local id = job:id()
    job:pwait()
    q:close()
    p.profile_stop()
    local t = S.save(p)
    for _, ev in ipairs(S.events(t, function(ev) return ev.cat == "submit" end)) do
      assert.are.equal(id, ev.args.job, "a submit that was never recorded")
    end
    local failed = S.events(t, function(ev) return ev.cat == "job" and ev.args.job == id end)
    assert.are.equal(msg, failed[1].args.error)
  end)

  it("is dropped whole and counted when the ring has no room for it; the slice stays failed", function()
    p.profile_start(6) -- the worker's ring: a few events, not a 200-byte text (8 entries)
    local q <close> = jobque.new{workers = 1}
    local job = q:submit(function(m) error(m, 0) end, ("y"):rep(200))
    local id = job:id()
    job:pwait()
    q:close()
    p.profile_stop()
    local t = S.save(p)
    local worker
    for _, lane in ipairs(t.jobqueProfile.laneInfo) do if lane.name == "worker 0" then worker = lane end end
    assert.is_true(worker.dropped >= 1)
    local failed = S.events(t, function(ev) return ev.cat == "job" and ev.args.job == id end)
    assert.are.equal(1, #failed, "the slice fits in the ring")
    assert.is_true(failed[1].args.failed)
    assert.is_nil(failed[1].args.error)
  end)
end)
