-- Spans inside jobs, correct across awaits, and counters.
-- Figures are checked against the trace's own times.
local S = require "support"
local p = require "jobque_profile"
local jobque = require "jobque"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"

-- Saves the session; returns the decoded file, the model and the text.
local function saved()
  local doc, text, path = S.save(p)
  return doc, assert(trace.load(path)), text, path
end

local function spans_of(doc, pred)
  return S.events(doc, function(e) return e.ph == "X" and type(e.args) == "table" and e.args.span ~= nil
                                      and (pred == nil or pred(e)) end)
end

-- Every complete event of each lane nests: no two overlap partly (what
-- Perfetto's importer needs to draw them on the lane, not an overflow track).
local function assert_nests(doc)
  local by_tid = {}
  for _, e in ipairs(doc.traceEvents) do
    if e.ph == "X" then
      by_tid[e.tid] = by_tid[e.tid] or {}
      table.insert(by_tid[e.tid], e)
    end
  end
  for tid, list in pairs(by_tid) do
    table.sort(list, function(x, y)
      if x.ts ~= y.ts then return x.ts < y.ts end
      return x.dur > y.dur
    end)
    local open = {}
    for _, e in ipairs(list) do
      local function ends(x) return x.ts + x.dur end
      -- the slices that ended before e starts (and do not hold it) are done with
      while #open > 0 and ends(open[#open]) <= e.ts + 1e-6 and ends(open[#open]) < ends(e) - 1e-6 do
        open[#open] = nil
      end
      local top = open[#open]
      if top then
        assert(e.ts + e.dur <= top.ts + top.dur + 1e-6,
               ("lane %s: %s at %.3f+%.3f overlaps %s at %.3f+%.3f"):format(tid, e.name, e.ts, e.dur, top.name,
                                                                            top.ts, top.dur))
      end
      open[#open + 1] = e
    end
  end
end

-- The queue's "jobs" samples taken at slice ends (the heap's go with them), by time.
local function end_samples(doc)
  local heap = {}
  for _, e in ipairs(S.events(doc, function(x) return x.ph == "C" and x.name:find("^heap ") end)) do
    heap[e.tid .. "@" .. e.ts] = true
  end
  local out = S.events(doc, function(e) return e.ph == "C" and e.name == "jobs" and heap[e.tid .. "@" .. e.ts] end)
  table.sort(out, function(x, y) return x.ts < y.ts end)
  return out
end

-- Work of about `us` microseconds, by the clock (a job's own work, not a wait).
local function spin_us(us)
  local core = require "jobque.core"
  local t = core.monotonic_ns()
  while core.monotonic_ns() - t < us * 1000 do end
end

describe("spans", function()
  it("(the nesting check refuses a partial overlap, and takes touching and nested slices)", function()
    local x = {ph = "X", tid = 1, name = "a", ts = 0, dur = 10}
    assert.has_error(function()
      assert_nests{traceEvents = {x, {ph = "X", tid = 1, name = "b", ts = 5, dur = 10}}}
    end)
    assert_nests{traceEvents = {x, {ph = "X", tid = 1, name = "b", ts = 10, dur = 5},
                                {ph = "X", tid = 1, name = "c", ts = 0, dur = 10}}}
  end)

  after_each(function()
    p.profile_stop()
  end)

  it("cut at an await continue when the job resumes: pieces nest in its slices, run ~ work, wall = run + await",
     function()
    -- One worker: the job it awaits runs between the two pieces, on the same
    -- lane (a job's coroutine lives in its worker's state: it resumes there).
    local q = jobque.new{workers = 1}
    p.profile_start()
    local b = q:submit(function(us)
      local P = require "jobque_profile"
      local core = require "jobque.core"
      local function work(n)
        local t = core.monotonic_ns()
        while core.monotonic_ns() - t < n * 1000 do end
        return (core.monotonic_ns() - t) / 1000
      end
      P.profile_begin("across")
      local done = work(1000)
      require("jobque").current():submit(work, us):wait() -- it cannot start before this yields
      done = done + work(1000)
      P.profile_end()
      return done
    end, 3000)
    local work_us = b:wait()
    q:close()
    p.profile_stop()
    local doc, model = saved()
    assert_nests(doc)
    local pieces = spans_of(doc, function(e) return e.name == "across" end)
    assert.are.equal(2, #pieces)
    local slices = S.events(doc, function(e) return e.ph == "X" and e.cat == "job" and e.args.job == pieces[1].args.job end)
    local other = S.events(doc, function(e) return e.ph == "X" and e.cat == "job" and e.args.job ~= pieces[1].args.job end)
    assert.is_true(other[1].ts >= slices[1].ts + slices[1].dur and other[1].ts <= slices[2].ts) -- ran between
    assert.are.equal(2, #slices)
    for k, pc in ipairs(pieces) do
      assert.are.equal(k, pc.args.piece)
      assert.are.equal(pieces[1].args.span, pc.args.span)
      assert.is_nil(pc.args.unclosed)
      local s = slices[k]
      assert.are.equal(s.tid, pc.tid)
      assert.is_true(pc.ts >= s.ts and pc.ts + pc.dur <= s.ts + s.dur + 1e-6)
    end
    -- the first piece runs to its slice's end (the yield), the second from the resume
    assert.near(slices[1].ts + slices[1].dur, pieces[1].ts + pieces[1].dur, 1e-6)
    assert.are.equal(slices[2].ts, pieces[2].ts)
    local s = model.spans[1]
    assert.are.equal("across", s.cat)
    assert.are.equal(1, s.count)
    assert.are.equal(0, s.unclosed)
    -- (the model holds nanoseconds; the file's durations are within half a ns of them)
    assert.near(pieces[1].dur + pieces[2].dur, s.run_us, 1e-3)
    assert.is_true(s.run_us >= work_us, ("run %.1f us < the work %.1f us"):format(s.run_us, work_us))
    assert.is_true(s.run_us <= slices[1].dur + slices[2].dur + 1e-3)
    -- wall: open to close, the await between the pieces included
    local aw = model.awaits[1]
    assert.near(s.run_us + aw.dur, s.wall_us, 1e-3)
    assert.is_true(s.wall_us >= s.run_us + aw.dur - 1e-3)
    -- and the report says so, counted once
    local f = stats.compute(model)
    assert.are.equal(1, f.spans[1].count)
    assert.near(s.wall_us, f.spans[1].wall_us, 1e-6)
    assert.matches("spans by category", report.text(f, model), 1, true)
  end)

  it("of a job whose slices lie on two lanes nest on both (the writer pairs them across lanes)", function()
    -- Built by hand: the queue resumes a job where it started, so a thread of
    -- the specs' records job 99's first slice with a begin in it, the caller
    -- its last slice with the end in it.
    local T = require("jobque.core")._test
    local path, cpath = S.paths()
    p.profile_start()
    T.spawn(1, [[
      local T = require("jobque.core")._test
      local ev = T.ev
      local t0 = T.ticks()
      T.put_event(ev.SPAN_BEGIN, 0, 7, 0, 99)
      T.put_event(ev.SPAN_BEGIN, 0, 7, 0, 99)
      local t1 = T.ticks()
      T.put_event(ev.SLICE, ev.SLICE_FIRST, 0, 0, 99, t0, t1)
      return "ok"
    ]], path, cpath):join()
    local ev = T.ev
    local t0 = T.ticks()
    T.put_event(ev.SPAN_END, 0, 0, 0, 99)
    local t1 = T.ticks()
    T.put_event(ev.SLICE, ev.SLICE_LAST, 0, 0, 99, t0, t1)
    p.profile_stop()
    local doc, model = saved()
    assert_nests(doc)
    local slices = S.events(doc, function(e) return e.ph == "X" and e.cat == "job" end)
    local pieces = spans_of(doc)
    assert.are.equal(2, #slices)
    assert.are.equal(4, #pieces) -- two spans, each cut in two
    local by_span = {}
    for _, pc in ipairs(pieces) do
      by_span[pc.args.span] = by_span[pc.args.span] or {}
      by_span[pc.args.span][pc.args.piece] = pc
    end
    local closed = 0
    for _, list in pairs(by_span) do
      assert.are.equal(slices[1].tid, list[1].tid)
      assert.are.equal(slices[2].tid, list[2].tid)
      assert.are_not.equal(list[1].tid, list[2].tid)
      assert.near(slices[1].ts + slices[1].dur, list[1].ts + list[1].dur, 1e-6) -- cut at the slice's end
      assert.are.equal(slices[2].ts, list[2].ts) -- continued at the next slice's start
      if not list[2].args.unclosed then closed = closed + 1 end
    end
    assert.are.equal(1, closed) -- the inner one; the outer one its job's end closed
    assert.are.equal(2, model.spans[1].count)
    assert.are.equal(1, model.spans[1].unclosed)
  end)

  it("the demo's span has a colour of its own, not one of its job categories' (it nests in their slices)", function()
    local model = assert(trace.load(S.demo_trace()))
    local by_color = {}
    for _, c in ipairs(model.categories) do
      assert.is_nil(by_color[c.color], c.name .. " has the colour of " .. tostring(by_color[c.color]))
      by_color[c.color] = c.name
    end
    assert.is_not_nil(model.categories.by_name["sample + decode"])
  end)

  it("add no busy time: a lane's busy time is that of its outermost slices", function()
    local q = jobque.new{workers = 1}
    p.profile_start()
    q:submit(function()
      local P = require "jobque_profile"
      P.profile_span("inner", function()
        local z <close> = P.profile_zone("zone") -- luacheck: ignore z
        local core = require "jobque.core"
        local t = core.monotonic_ns()
        while core.monotonic_ns() - t < 500000 do end
      end)
    end):wait()
    q:close()
    p.profile_stop()
    local doc, model = saved()
    local slice = S.events(doc, function(e) return e.ph == "X" and e.cat == "job" end)[1]
    local f = stats.compute(model)
    local busy = 0
    for _, l in ipairs(f.lanes) do if l.role == "worker" then busy = l.busy end end
    local copies = 0
    for _, e in ipairs(S.events(doc, function(e) return e.cat == "copy" and e.tid == slice.tid end)) do
      copies = copies + e.dur
    end
    assert.near(slice.dur + copies, busy, 1e-3)
    assert.are.equal(2, #spans_of(doc))
  end)

  it("profile_span returns fn's results, closes when fn raises, and re-raises the same error", function()
    p.profile_start()
    local a, b, c = p.profile_span("ok", function(x, y) return x, nil, y end, 1, 2)
    assert.are.same({1, nil, 2}, {a, b, c})
    local boom = setmetatable({}, {__tostring = function() return "boom" end})
    local ok, err = pcall(p.profile_span, "raises", function() error(boom) end)
    assert.is_false(ok)
    assert.are.equal(boom, err)
    -- nothing is left open: profile_end raises
    assert.matches("no span is open", S.err_of(p.profile_end), 1, true)
    p.profile_stop()
    local doc = saved()
    local names = {}
    for _, e in ipairs(spans_of(doc)) do names[e.name] = e end
    assert.is_not_nil(names.ok)
    assert.is_not_nil(names.raises)
    assert.is_nil(names.raises.args.unclosed)
  end)

  it("profile_span without a function raises and leaves nothing open; a bad category opens nothing", function()
    p.profile_start()
    assert.matches("bad argument #2 to 'jobque_profile.profile_span' (value expected)", S.err_of(p.profile_span, "x"), 1, true)
    assert.matches("attempt to call a nil value", S.err_of(p.profile_span, "x", nil), 1, true)
    assert.matches("category id or name", S.err_of(p.profile_begin, {}), 1, true)
    assert.matches("category id or name", S.err_of(p.profile_zone, true), 1, true)
    assert.matches("name must not be empty", S.err_of(p.profile_span, "", print), 1, true)
    assert.matches("no span is open", S.err_of(p.profile_end), 1, true)
  end)

  local DEEP = S.sanitized and 1000 or 10000 -- either way far past the 256-deep search
  it(("a job that leaves %d spans open saves a file that nests, each span closed once"):format(DEEP), function()
    local q = jobque.new{workers = 1}
    p.profile_start()
    q:submit(function(n)
      local P = require "jobque_profile"
      for _ = 1, n do P.profile_begin("deep") end
      coroutine.yield() -- cut them all once
    end, DEEP):wait()
    q:close()
    p.profile_stop()
    local doc, model = saved()
    assert_nests(doc)
    assert.are.equal(2 * DEEP, #spans_of(doc)) -- each cut once, at the yield
    assert.are.same({cat = "deep", name = "deep", count = DEEP, unclosed = DEEP},
                    {cat = model.spans[1].cat, name = model.spans[1].name, count = model.spans[1].count,
                     unclosed = model.spans[1].unclosed})
  end)

  it("profile_zone ends its span when the variable goes out of scope, on error too", function()
    p.profile_start()
    do
      local z <close> = p.profile_zone("scoped") -- luacheck: ignore z
      p.profile_marker("inside", 1)
    end
    pcall(function()
      local z <close> = p.profile_zone("failing") -- luacheck: ignore z
      error("x")
    end)
    assert.matches("no span is open", S.err_of(p.profile_end), 1, true)
    p.profile_stop()
    local doc = saved()
    local zone = spans_of(doc, function(e) return e.name == "scoped" end)[1]
    local mark = S.markers(doc, "inside")[1]
    assert.is_true(zone.ts <= mark.ts and mark.ts <= zone.ts + zone.dur)
    assert.are.equal(1, #spans_of(doc, function(e) return e.name == "failing" end))
  end)

  it("a zone closed twice by hand raises at the second close and leaves the span around it open", function()
    p.profile_start()
    p.profile_begin("around")
    local z = p.profile_zone("closed twice")
    local close = getmetatable(z).__close
    p.profile_marker("in zone", 1)
    close(z)
    p.profile_marker("after zone", 2)
    assert.matches("profile_zone: this zone is already closed", S.err_of(close, z), 1, true)
    p.profile_marker("around still open", 3)
    p.profile_end() -- the span around it: still open, so this does not raise
    assert.matches("no span is open", S.err_of(p.profile_end), 1, true)
    p.profile_stop()
    local doc = saved()
    local around = spans_of(doc, function(e) return e.name == "around" end)
    local zone = spans_of(doc, function(e) return e.name == "closed twice" end)
    assert.are.equal(1, #around)
    assert.are.equal(1, #zone)
    assert.is_nil(around[1].args.unclosed)
    local m1, m2, m3 = S.markers(doc, "in zone")[1], S.markers(doc, "after zone")[1], S.markers(doc, "around still open")[1]
    assert.is_true(zone[1].ts <= m1.ts and m1.ts <= zone[1].ts + zone[1].dur)
    assert.is_true(zone[1].ts + zone[1].dur <= m2.ts)
    assert.is_true(around[1].ts <= zone[1].ts and m3.ts <= around[1].ts + around[1].dur)
    assert_nests(doc)
  end)

  it("a zone closed by hand and again by its variable raises at scope end, but never hides an error", function()
    p.profile_start()
    p.profile_begin("around")
    local err = S.err_of(function()
      local z <close> = p.profile_zone("by hand")
      getmetatable(z).__close(z)
    end)
    assert.matches("profile_zone: this zone is already closed", err, 1, true)
    local ok, mine = pcall(function()
      local z <close> = p.profile_zone("by hand, then error")
      getmetatable(z).__close(z)
      error({"mine"})
    end)
    assert.is_false(ok)
    assert.are.same({"mine"}, mine) -- the error closing it, unchanged
    p.profile_end() -- "around": still open
    assert.matches("no span is open", S.err_of(p.profile_end), 1, true)
    p.profile_stop()
    local doc = saved()
    assert.are.equal(1, #spans_of(doc, function(e) return e.name == "around" and e.args.unclosed == nil end))
    assert.are.equal(1, #spans_of(doc, function(e) return e.name == "by hand" end))
    assert.are.equal(1, #spans_of(doc, function(e) return e.name == "by hand, then error" end))
  end)

  it("a zone's second close does nothing while tracing is off; its close checks its argument", function()
    p.profile_begin("around") -- off: counted only
    local z = p.profile_zone("off")
    local close = getmetatable(z).__close
    close(z)
    close(z) -- does not raise, and does not end "around"
    p.profile_start()
    p.profile_end() -- "around", opened before the session: still counted open
    assert.matches("no span is open", S.err_of(p.profile_end), 1, true)
    assert.matches("bad argument #1 to '.*' %(profile_zone expected, got table%)", S.err_of(close, {}))
    p.profile_stop()
  end)

  it("nested zones are distinct objects: closing the inner one twice never ends the outer", function()
    p.profile_start()
    local outer = p.profile_zone("outer zone")
    local inner = p.profile_zone("inner zone")
    assert.are_not.equal(outer, inner)
    local close = getmetatable(inner).__close
    close(inner)
    assert.matches("profile_zone: this zone is already closed", S.err_of(close, inner), 1, true)
    p.profile_marker("outer zone open", 1)
    close(outer)
    assert.matches("no span is open", S.err_of(p.profile_end), 1, true)
    p.profile_stop()
    local doc = saved()
    local o = spans_of(doc, function(e) return e.name == "outer zone" end)[1]
    local i = spans_of(doc, function(e) return e.name == "inner zone" end)[1]
    local m = S.markers(doc, "outer zone open")[1]
    assert.is_nil(o.args.unclosed)
    assert.is_true(i.ts + i.dur <= m.ts and m.ts <= o.ts + o.dur)
  end)

  it("zones allocate nothing once the state has had as many open at once", function()
    local function nested(n)
      for _ = 1, n do
        local a <close> = p.profile_zone("alloc a") -- luacheck: ignore a
        local b <close> = p.profile_zone("alloc b") -- luacheck: ignore b
      end
    end
    p.profile_start(1024)
    nested(1) -- two zone objects, and the names' ids cached
    collectgarbage("collect")
    collectgarbage("stop")
    local before = collectgarbage("count")
    nested(10000)
    local after = collectgarbage("count")
    collectgarbage("restart")
    p.profile_stop()
    assert.are.equal(before, after)
  end)

  it("take a category id or a name (interned once: one category, its colour)", function()
    local id = p.profile_category("by-id", 0x123456)
    p.profile_start()
    p.profile_begin(id)
    p.profile_end()
    for _ = 1, 3 do
      p.profile_begin("dyn-" .. "name")
      p.profile_end()
    end
    p.profile_stop()
    local doc = saved()
    local n = 0
    for _, c in ipairs(doc.jobqueProfile.categories) do
      if c.name == "dyn-name" then n = n + 1 end
    end
    assert.are.equal(1, n)
    assert.are.equal(1, #spans_of(doc, function(e) return e.name == "by-id" and e.cat == "by-id" end))
    assert.are.equal(3, #spans_of(doc, function(e) return e.name == "dyn-name" end))
    assert.matches("category id must be in 1..65535", S.err_of(function()
      p.profile_start()
      p.profile_begin(0)
    end), 1, true)
  end)

  it("misuse: profile_end with nothing open raises while tracing, is a no-op while off", function()
    p.profile_stop()
    p.profile_end() -- off: nothing happens
    p.profile_begin("opened-off")
    p.profile_start()
    p.profile_end() -- closes the span opened while off: no error, no event
    assert.matches("profile_end: no span is open", S.err_of(p.profile_end), 1, true)
    p.profile_marker("m", 1)
    p.profile_stop()
    local doc = saved()
    assert.are.equal(0, #spans_of(doc))
  end)

  it("a job that ends with spans open has them closed at its end, counted unclosed in its lane", function()
    local q = jobque.new{workers = 1}
    p.profile_start()
    q:submit(function()
      local P = require "jobque_profile"
      P.profile_begin("left-open")
      P.profile_begin("inner-left")
    end):wait()
    q:close()
    p.profile_stop()
    local doc, model = saved()
    assert_nests(doc)
    local slice = S.events(doc, function(e) return e.ph == "X" and e.cat == "job" end)[1]
    local open = spans_of(doc)
    assert.are.equal(2, #open)
    for _, e in ipairs(open) do
      assert.is_true(e.args.unclosed)
      assert.near(slice.ts + slice.dur, e.ts + e.dur, 1e-6)
    end
    local info
    for _, l in ipairs(doc.jobqueProfile.laneInfo) do
      if l.tid == slice.tid then info = l end
    end
    assert.are.equal(2, info.unclosedSpans)
    assert.are.equal(1, model.spans[1].unclosed)
    for _, lane in ipairs(model.lanes) do
      if lane.name == info.name then assert.are.equal(2, lane.unclosed_spans) end
    end
  end)

  it("belong to the coroutine that opened them: a generator's span inside a job is closed by its own end", function()
    -- the generator (coroutine.wrap) opens "child" and yields; the job opens "outer"; the
    -- generator's profile_end closes "child", not "outer" (the innermost open in the job)
    local q = jobque.new{workers = 1}
    p.profile_start()
    q:submit(function()
      local P = require "jobque_profile"
      local core = require "jobque.core"
      local function work(us) local t = core.monotonic_ns() while core.monotonic_ns() - t < us * 1000 do end end
      local gen = coroutine.wrap(function()
        P.profile_begin("child")
        work(500)
        coroutine.yield()
        work(500)
        P.profile_end()
      end)
      gen()
      P.profile_begin("outer")
      work(2000)
      gen()
      work(4000)
      P.profile_end()
    end):wait()
    q:close()
    p.profile_stop()
    local doc, model = saved()
    assert_nests(doc)
    local first, last = {}, {}
    for _, e in ipairs(spans_of(doc)) do
      first[e.name] = math.min(first[e.name] or math.huge, e.ts)
      last[e.name] = math.max(last[e.name] or -math.huge, e.ts + e.dur)
    end
    assert.is_true(first.child < first.outer)
    assert.is_true(last.child < last.outer, "child ends at its own profile_end, before outer's")
    assert.is_true(last.outer - last.child >= 4000, "outer holds the last 4 ms of work")
    for _, s in ipairs(model.spans) do
      assert.are.equal(1, s.count)
      assert.are.equal(0, s.unclosed)
    end
  end)

  it("a zone in a job that fails closes with the job's coroutine, at its last slice's end, not unclosed", function()
    local q = jobque.new{workers = 1}
    p.profile_start()
    local ok = q:submit(function()
      local P = require "jobque_profile"
      local z <close> = P.profile_zone("failing zone") -- luacheck: ignore z
      error("fails")
    end):pwait()
    assert.is_false(ok)
    q:close()
    p.profile_stop()
    local doc, model = saved()
    assert_nests(doc)
    local slice = S.events(doc, function(e) return e.ph == "X" and e.cat == "job" end)[1]
    local zone = spans_of(doc)[1]
    assert.is_nil(zone.args.unclosed)
    assert.near(slice.ts + slice.dur, zone.ts + zone.dur, 1e-6)
    assert.are.equal(0, model.spans[1].unclosed)
  end)

  it("a span a failed job's close handler opens ends at the job's last slice, not at the stop", function()
    local q = jobque.new{workers = 1}
    p.profile_start()
    local ok = q:submit(function()
      local P = require "jobque_profile"
      local guard <close> = setmetatable({}, {__close = function() P.profile_begin("in close") end}) -- luacheck: ignore guard
      error("fails")
    end):pwait()
    assert.is_false(ok)
    for _ = 1, 3 do q:submit(spin_us, 300):wait() end -- later jobs on that lane
    q:close()
    p.profile_stop()
    local doc, model = saved()
    assert_nests(doc)
    local slices = S.events(doc, function(e) return e.ph == "X" and e.cat == "job" end)
    local piece = spans_of(doc)[1]
    assert.is_true(piece.args.unclosed)
    assert.is_true(piece.ts + piece.dur <= slices[1].ts + slices[1].dur + 1e-6,
                   "the span lies after its job's end, over the later jobs")
    assert.are.equal(1, model.spans[1].unclosed)
    assert.is_true(model.spans[1].run_us <= slices[1].dur)
  end)

  it("spans open at profile_stop are closed there", function()
    p.profile_start()
    p.profile_begin("at-stop")
    p.profile_stop()
    p.profile_end() -- off: closes it in this thread's count, records nothing
    local doc = saved()
    local e = spans_of(doc)[1]
    assert.is_true(e.args.unclosed)
    assert.near(doc.jobqueProfile.stopUs, e.ts + e.dur, 1e-3)
    local caller
    for _, l in ipairs(doc.jobqueProfile.laneInfo) do
      if l.role == "caller" then caller = l end
    end
    assert.are.equal(1, caller.unclosedSpans)
  end)

  it("survive a close racing jobs that hold spans open across awaits", function()
    for _ = 1, S.sanitized and 2 or 5 do
      local q = jobque.new{workers = 2}
      p.profile_start()
      local first = q:submit(spin_us, 200)
      for _ = 1, 20 do
        q:submit(function(dep)
          local P = require "jobque_profile"
          local z <close> = P.profile_zone("racing") -- luacheck: ignore z
          P.profile_begin("open")
          dep:wait()
          coroutine.yield()
        end, first)
      end
      q:close()
      p.profile_stop()
      local doc = saved()
      assert_nests(doc)
    end
  end)
end)

describe("counters", function()
  after_each(function()
    p.profile_stop()
  end)

  it("are C events with non-empty numeric args; integers stay exact beyond 2^53", function()
    p.profile_start()
    local values = {0, 1, -7, (1 << 53) + 1, math.maxinteger, math.mininteger}
    for _, v in ipairs(values) do p.profile_counter("big", v) end
    p.profile_counter("ratio", 0.1)
    p.profile_counter("ratio", -2.5e300)
    assert.matches("finite", S.err_of(p.profile_counter, "ratio", 0 / 0), 1, true)
    assert.matches("finite", S.err_of(p.profile_counter, "ratio", math.huge), 1, true)
    assert.matches("number expected", S.err_of(p.profile_counter, "ratio", "x"), 1, true)
    -- a number as name (Lua would make a string of it: an allocation per call), a numeric string as value
    assert.matches("string expected, got number", S.err_of(p.profile_counter, 7, 1), 1, true)
    assert.matches("number expected, got string", S.err_of(p.profile_counter, "ratio", "12"), 1, true)
    p.profile_stop()
    local doc, model, text = saved()
    local cs = S.events(doc, function(e) return e.ph == "C" end)
    assert.are.equal(8, #cs)
    for _, e in ipairs(cs) do
      assert.is_not_nil(next(e.args))
      for _, v in pairs(e.args) do assert.are.equal("number", type(v)) end
    end
    assert.matches('"args":{"value":9223372036854775807}', text, 1, true)
    assert.matches('"args":{"value":-9223372036854775808}', text, 1, true)
    assert.matches('"args":{"value":9007199254740993}', text, 1, true)
    local big = model.counter_by_name["big value"]
    assert.are.same(values, big.value)
    for _, v in ipairs(big.value) do assert.are.equal("integer", math.type(v)) end
    assert.are.same({0.1, -2.5e300}, model.counter_by_name["ratio value"].value)
    local f = stats.compute(model)
    local row
    for _, c in ipairs(f.counters) do if c.name == "big value" then row = c end end
    assert.are.equal(math.mininteger, row.min)
    assert.are.equal(math.maxinteger, row.max)
    local out = report.text(f, model)
    assert.matches("9223372036854775807", out, 1, true)
    assert.matches("-9223372036854775808", out, 1, true)
  end)

  it("near the largest doubles have a finite mean", function()
    p.profile_start()
    p.profile_counter("huge", 1.5e308)
    p.profile_counter("huge", 1.7e308)
    p.profile_counter("huge", -1.6e308)
    p.profile_stop()
    local _, model = saved()
    local c = stats.compute(model).counters[1]
    assert.are.equal("huge value", c.name)
    assert.is_true(c.mean > -1.6e308 and c.mean < 1.7e308, "mean " .. tostring(c.mean))
    assert.are.same({-1.6e308, 1.7e308}, {c.min, c.max})
  end)

  it("in a file: a non-finite value (a numeric string like \"1e999\") is no sample", function()
    local path = S.tmpfile()
    S.write(path, [[{"traceEvents":[
{"ph":"C","ts":0,"pid":1,"name":"n","args":{"v":"1e999"}},
{"ph":"C","ts":1,"pid":1,"name":"n","args":{"v":"-1e999"}},
{"ph":"C","ts":2,"pid":1,"name":"n","args":{"v":4}},
{"ph":"X","ts":0,"dur":4,"pid":1,"tid":1,"name":"x"}]}]])
    local c = stats.compute(assert(trace.load(path))).counters[1]
    assert.are.same({1, 4, 4, 4}, {c.samples, c.min, c.mean, c.max})
  end)

  it("have a time-weighted mean over the range", function()
    -- value 0 for 1 us, 10 for 3 us: mean 7.5, not the samples' 5
    local path = S.tmpfile()
    S.write(path, [[{"traceEvents":[
{"ph":"C","ts":0,"pid":1,"name":"n","args":{"v":0}},
{"ph":"C","ts":1,"pid":1,"name":"n","args":{"v":10}},
{"ph":"X","ts":0,"dur":4,"pid":1,"tid":1,"name":"x"}]}]])
    local model = assert(trace.load(path))
    local c = stats.compute(model).counters[1]
    assert.are.equal("n v", c.name)
    assert.are.equal(0, c.min)
    assert.are.equal(10, c.max)
    assert.near(7.5, c.mean, 1e-9)
    -- over [2, 4] only the value in effect counts
    c = stats.compute(model, 2, 4).counters[1]
    assert.are.same({10, 10, 10}, {c.min, c.mean, c.max})
  end)

  it("keep names with markup and line breaks (the file stays JSON, the report stays on one line)", function()
    local name = '<b>"q"</b>\n&amp;\tend'
    p.profile_start()
    p.profile_counter(name, 3)
    p.profile_begin(name)
    p.profile_end()
    p.profile_stop()
    local doc, model = saved()
    assert.are.equal(name, S.events(doc, function(e) return e.ph == "C" end)[1].name)
    assert.are.equal(name, spans_of(doc)[1].name)
    assert.is_not_nil(model.counter_by_name[name .. " value"])
    local out = report.text(stats.compute(model), model)
    assert.is_nil(out:find(name, 1, true))
    assert.matches('<b>"q"</b>\u{23CE}&amp;\\tend value', out, 1, true)
  end)

  -- Three jobs of 1 ms run one after another on `workers`: the saved file
  -- and at(name, t), counter `name`'s value in effect at t (its
  -- last sample at or before t).
  local function three_jobs(workers)
    local q = jobque.new{workers = workers}
    p.profile_start()
    for _ = 1, 3 do q:submit(spin_us, 1000):wait() end
    q:close()
    p.profile_stop()
    local doc, model = saved()
    local function at(name, t)
      local c, v = model.counter_by_name[name], nil
      for i = 1, c.n do if c.ts[i] <= t then v = c.value[i] end end
      return v
    end
    return doc, at
  end

  it("the queue's running count in effect while a slice runs counts it (one worker: 1, not 0)", function()
    local doc, at = three_jobs(1)
    local slices = S.events(doc, function(e) return e.ph == "X" and e.cat == "job" end)
    assert.are.equal(3, #slices)
    for _, e in ipairs(slices) do assert.are.equal(1, at("jobs running", e.ts + e.dur / 2)) end
    assert.are.equal(0, at("jobs running", slices[3].ts + slices[3].dur + 1e6)) -- and none after the last
  end)

  it("a queue without workers: the caller's slice counts as running while it runs, not suspended", function()
    local doc, at = three_jobs(0)
    local slices = S.events(doc, function(e) return e.ph == "X" and e.cat == "job" end)
    assert.are.equal(3, #slices)
    for _, e in ipairs(slices) do
      assert.are.same({1, 0}, {at("jobs running", e.ts + e.dur / 2), at("jobs suspended", e.ts + e.dur / 2)})
    end
  end)

  it("the queue's running count is the other workers' slices; suspended leaves them out", function()
    local T = require("jobque.core")._test
    local q = jobque.new{workers = 2}
    T.stop(false)
    p.profile_start()
    local held = q:submit(function() -- runs on one worker until the caller lets it go
      local flag = require("jobque.core")._test
      while not flag.stopping() do end
    end)
    local quick = q:submit(function() return 1 end) -- the other worker: its slice ends while `held` runs
    assert.are.equal(1, quick:wait())
    T.stop()
    held:wait()
    q:close()
    p.profile_stop()
    local doc = saved()
    local first = end_samples(doc)
    -- the first end sample is the quick job's, taken while `held` runs on the other worker
    assert.are.same({ready = 0, running = 1, suspended = 0}, first[1].args)
  end)

  it("the queue's ready count: dependencies done, not started; jobs still waiting for one are not ready", function()
    local T = require("jobque.core")._test
    local q = jobque.new{workers = 1}
    T.stop(false)
    p.profile_start()
    local held = q:submit(function() -- the one worker runs it until the caller lets it go
      local flag = require("jobque.core")._test
      while not flag.stopping() do end
    end)
    local ys = {}
    for i = 1, 3 do ys[i] = q:submit(function() end) end
    q:after({held}, function() end) -- ready once `held` ends: before its slice's sample
    q:after({ys[3]}, function() end) -- still waiting then
    T.stop()
    q:wait_all()
    q:close()
    p.profile_stop()
    local doc = saved()
    local jobs = end_samples(doc)
    assert.are.same({ready = 4, running = 0, suspended = 0}, jobs[1].args)
    assert.are.same({ready = 0, running = 0, suspended = 0}, jobs[#jobs].args)
  end)

  it("the queue's own: jobs ready / running / suspended at slice starts and ends, each lane's Lua heap at ends", function()
    local q = jobque.new{workers = 1}
    p.profile_start()
    q:submit(function(fn) require("jobque").current():submit(fn, 100):wait() end, spin_us):wait()
    q:close()
    p.profile_stop()
    local doc, model = saved()
    local jobs = S.events(doc, function(e) return e.ph == "C" and e.name == "jobs" end)
    local slices = S.events(doc, function(e) return e.ph == "X" and e.cat == "job" end)
    assert.are.equal(2 * #slices, #jobs) -- a sample at each slice's start and end
    assert.are.equal(#slices, #end_samples(doc)) -- the heap's at its end
    local suspended = 0
    for _, e in ipairs(jobs) do
      for _, k in ipairs{"ready", "running", "suspended"} do
        assert.are.equal("number", type(e.args[k]))
        assert.is_true(e.args[k] >= 0)
      end
      suspended = math.max(suspended, e.args.suspended)
    end
    assert.are.equal(1, suspended) -- b, after the slice that awaits a
    local names = S.lane_names(doc)
    for _, e in ipairs(slices) do
      local heap = model.counter_by_name["heap " .. names[e.tid] .. " KB"]
      assert.is_not_nil(heap)
      assert.is_true(heap.value[1] > 0)
    end
    assert.is_not_nil(model.counter_by_name["jobs ready"])
    assert.is_not_nil(model.counter_by_name["jobs running"])
    local f = stats.compute(model)
    assert.matches("jobs suspended", report.text(f, model), 1, true)
  end)

  it("the jobs tracks of two queues traced at once are apart (one track would mix their counts)", function()
    p.profile_start()
    local io_q, cpu_q = jobque.new{workers = 1, name = "io"}, jobque.new{workers = 1, name = "cpu"}
    -- cpu's worker is held by its first job while 5 more wait: its samples show them ready
    local gate = cpu_q:submit(spin_us, 20000)
    for _ = 1, 5 do cpu_q:submit(spin_us, 100) end
    for _ = 1, 3 do io_q:submit(function() return 1 end):wait() end
    cpu_q:wait_all()
    io_q:close()
    cpu_q:close()
    p.profile_stop()
    assert.is_not_nil(gate)
    local doc = saved()
    local names, queue_of_track = S.lane_names(doc), {}
    local tracks = 0
    for _, e in ipairs(S.events(doc, function(x) return x.ph == "C" and x.name:find("^jobs") end)) do
      local q = names[e.tid]:match("^(%a+) ")
      if not queue_of_track[e.name] then
        queue_of_track[e.name] = q
        tracks = tracks + 1
      end
      assert.are.equal(queue_of_track[e.name], q, e.name .. " holds samples of two queues")
    end
    assert.are.equal(2, tracks)
  end)

  it("a lane's heap track is its own, even when two queues' workers share a lane name", function()
    -- two unnamed queues both have a "worker 0": one track for both would mix two states' heaps
    p.profile_start()
    local q1, q2 = jobque.new{workers = 1}, jobque.new{workers = 1}
    for _ = 1, 3 do
      q1:submit(function() return 1 end):wait()
      q2:submit(function() local t = {} for k = 1, 1e5 do t[k] = k end return #t end):wait()
    end
    q1:close()
    q2:close()
    p.profile_stop()
    local doc, model = saved()
    local names, tid_of, lanes = S.lane_names(doc), {}, 0
    for _, e in ipairs(S.events(doc, function(x) return x.ph == "C" and x.name:find("^heap ") end)) do
      if not tid_of[e.name] then
        tid_of[e.name] = e.tid
        lanes = lanes + 1
        assert.is_truthy(e.name:find("heap " .. names[e.tid], 1, true)) -- still names its lane
      end
      assert.are.equal(tid_of[e.name], e.tid, e.name .. " holds samples of two lanes")
    end
    assert.are.equal(2, lanes)
    local n = 0
    for _, c in ipairs(model.counters) do n = n + (c.name:find("^heap ") and 1 or 0) end
    assert.are.equal(2, n)
  end)
end)
