-- stats.compute's figures (its per-event loops are src/reader/stats.c:
-- stats_lanes, stats_counters, stats_copies) against values worked out by
-- hand: a hand-written trace read from a file and from a string, over the whole trace and
-- over a range that cuts its slices and units; models built by hand that
-- mix integers and floats (and integers past 2^53, where a float would
-- round); and the shapes a hand-made model may take that our loader never
-- makes (a list with a metatable, a category model.categories lacks, a
-- marker kind listed twice, a counter whose n passes its columns, ...).
local S = require "support"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local C = require "jobque_profile.reader"

-- The model of `text`, read from a file ("file") or from the string ("text").
local function load_text(text, how)
  if how == "text" then return assert(trace.decode(text, "figures.json")) end
  local path = S.tmpfile("figures.json")
  S.write(path, text)
  return assert(trace.load(path))
end

-- Three lanes over [0, 40] (times in microseconds):
--   worker 1: work [0, 10), io [2, 5) inside it, io [8, 14) (new busy time
--             from 10: 4), wait [20, 25), work [22, 23)
--             -> busy 15 (work 11, io 4), wait 5, 5 slices
--   worker 2: io [5, 15), work [30, 40), copies inside them: [6, 8) 100
--             bytes and [31, 32) 50 bytes for work, [12, 13) 7 bytes for io
--             -> busy 20 (io 10, work 10), 5 slices
--   caller:   wait [1, 39) -> wait 38; markers tick at 0 (arg 1), 10 (arg 2),
--             25 (arg "x") and tock at 12 (arg 2.5): 1 slice and 4 markers
-- a counter jobs.q: 2 at 0, 4 at 10, 1 at 30.
local HAND = [[
{"traceEvents":[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 1"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"worker 2"}},
{"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"caller"}},
{"ph":"X","ts":0,"dur":10,"pid":1,"tid":1,"name":"a","cat":"work"},
{"ph":"X","ts":2,"dur":3,"pid":1,"tid":1,"name":"b","cat":"io"},
{"ph":"X","ts":8,"dur":6,"pid":1,"tid":1,"name":"c","cat":"io"},
{"ph":"X","ts":20,"dur":5,"pid":1,"tid":1,"name":"d","cat":"wait"},
{"ph":"X","ts":22,"dur":1,"pid":1,"tid":1,"name":"e","cat":"work"},
{"ph":"X","ts":5,"dur":10,"pid":1,"tid":2,"name":"f","cat":"io"},
{"ph":"X","ts":6,"dur":2,"pid":1,"tid":2,"name":"copy in","cat":"copy","args":{"job":1,"bytes":100,"category":"work"}},
{"ph":"X","ts":12,"dur":1,"pid":1,"tid":2,"name":"copy in","cat":"copy","args":{"job":2,"bytes":7,"category":"io"}},
{"ph":"X","ts":30,"dur":10,"pid":1,"tid":2,"name":"g","cat":"work"},
{"ph":"X","ts":31,"dur":1,"pid":1,"tid":2,"name":"copy out","cat":"copy","args":{"job":1,"bytes":50,"category":"work"}},
{"ph":"X","ts":1,"dur":38,"pid":1,"tid":3,"name":"h","cat":"wait"},
{"ph":"i","s":"g","ts":0,"pid":1,"tid":3,"name":"tick","args":{"arg":1}},
{"ph":"i","s":"g","ts":10,"pid":1,"tid":3,"name":"tick","args":{"arg":2}},
{"ph":"i","s":"g","ts":12,"pid":1,"tid":3,"name":"tock","args":{"arg":2.5}},
{"ph":"i","s":"g","ts":25,"pid":1,"tid":3,"name":"tick","args":{"arg":"x"}},
{"ph":"C","ts":0,"pid":1,"name":"jobs","args":{"q":2}},
{"ph":"C","ts":10,"pid":1,"name":"jobs","args":{"q":4}},
{"ph":"C","ts":30,"pid":1,"name":"jobs","args":{"q":1}}
],
"jobqueProfile":{"version":1,"clock":"tsc","startUs":0,"stopUs":40,"lostEvents":0,
 "categories":[{"id":1,"name":"work","color":"#112233"},{"id":2,"name":"io","color":"#445566"}],
 "markers":[{"id":1,"name":"tick"},{"id":2,"name":"tock"}]}}
]]

local function by_name(list)
  local out = {}
  for _, x in ipairs(list) do out[x.name] = x end
  return out
end

-- A unit's { name = busy } and its list's names in order.
local function unit_of(u)
  local busy, order = {}, {}
  for i, e in ipairs(u.by_category) do busy[e.name], order[i] = e.busy, e.name end
  return busy, order
end

describe("stats.compute on a trace worked out by hand", function()
  for _, reader in ipairs{"file", "text"} do
    it("gives its busy, wait, idle, events and categories over the whole trace (" .. reader .. ")", function()
      local f = stats.compute(load_text(HAND, reader))
      assert.are.same({from = 0, to = 40, duration = 40, t0 = 0}, f.range)
      local l = by_name(f.lanes)
      assert.are.same({15, 5, 5}, {l["worker 1"].busy, l["worker 1"].wait, l["worker 1"].events})
      assert.are.same({20, 0, 5}, {l["worker 2"].busy, l["worker 2"].wait, l["worker 2"].events})
      assert.are.same({0, 38, 5}, {l.caller.busy, l.caller.wait, l.caller.events})
      assert.are.equal(1 - 15 / 40, l["worker 1"].idle)
      assert.are.same({2, 35, 5}, {f.workers.lanes, f.workers.busy, f.workers.wait})
      assert.are.equal(1 - 35 / 80, f.workers.idle)
      assert.are.equal(35 / 40, f.workers.parallelism)
      assert.are.same({3, 35, 43}, {f.total.lanes, f.total.busy, f.total.wait})
      assert.are.equal(18, f.events) -- 15 slices, 4 markers... on the lanes; 3 counter samples
      assert.are.same({"work", "io"}, {f.categories[1].name, f.categories[2].name})
      assert.are.same({21, 14}, {f.categories[1].busy, f.categories[2].busy})
      assert.are.same({21 / 35, 14 / 35}, {f.categories[1].share, f.categories[2].share})
    end)

    it("gives its marker units, their percentiles and their busy time by category (" .. reader .. ")", function()
      local f = stats.compute(load_text(HAND, reader))
      local tick, tock = f.markers[1], f.markers[2]
      assert.are.same({"tick", 3, 10, 15, 15, 15}, {tick.kind, tick.count, tick.min, tick.median, tick.p95, tick.max})
      assert.are.same({2, 3, 1}, tick.slowest) -- 15, 15 (the earlier first), 10
      local u = tick.units
      assert.are.same({1, 0, 10, 10}, {u[1].arg, u[1].from, u[1].to, u[1].duration})
      assert.are.same({"x", 25, 40}, {u[3].arg, u[3].from, u[3].to})
      local busy, order = unit_of(u[1]) -- [0, 10): work [0, 10) on worker 1, io [5, 10) on worker 2
      assert.are.same({work = 10, io = 5}, busy)
      assert.are.same({"work", "io"}, order)
      assert.are.equal(15, u[1].busy)
      assert.are.equal(10 / 15, u[1].by_category[1].share)
      busy, order = unit_of(u[2]) -- [10, 25): io [10, 14) and work [22, 23) on worker 1, io [10, 15) on worker 2
      assert.are.same({io = 9, work = 1}, busy)
      assert.are.same({"io", "work"}, order)
      assert.are.same({work = 10}, (unit_of(u[3]))) -- [25, 40): work [30, 40)
      assert.are.same({"tock", 1, 28, 28}, {tock.kind, tock.count, tock.min, tock.max})
      busy, order = unit_of(tock.units[1]) -- [12, 40): io [12, 14) + [12, 15), work [22, 23) + [30, 40)
      assert.are.same({io = 5, work = 11}, busy)
      assert.are.same({"work", "io"}, order)
      local top = stats.unit_summary(tock.units, 1, 1)
      assert.are.same({{name = "work", busy = 11}}, top.by_category)
    end)

    it("gives its counters and copies (" .. reader .. ")", function()
      local f = stats.compute(load_text(HAND, reader))
      assert.are.equal(1, #f.counters)
      local c = f.counters[1]
      -- 2 held 10 us, 4 held 20, 1 held 10 (to the range's end): weights 1/4, 1/2, 1/4
      assert.are.same({3, 1, 4}, {c.samples, c.min, c.max})
      assert.are.equal(2 * (10 / 40) + 4 * (20 / 40) + 1 * (10 / 40), c.mean)
      assert.are.same({{name = "work", count = 2, time = 3, bytes = 150}, {name = "io", count = 1, time = 1, bytes = 7}},
                      f.copies)
    end)

    it("cuts slices, units, counters and copies at a range's ends: [15, 35] (" .. reader .. ")", function()
      local f = stats.compute(load_text(HAND, reader), 15, 35)
      assert.are.equal(20, f.range.duration)
      local l = by_name(f.lanes)
      -- worker 1: wait [20, 25), work [22, 23); worker 2: io [5, 15) ends at 15 (out), work cut to [30, 35)
      assert.are.same({1, 5, 2}, {l["worker 1"].busy, l["worker 1"].wait, l["worker 1"].events})
      assert.are.same({5, 0, 2}, {l["worker 2"].busy, l["worker 2"].wait, l["worker 2"].events})
      assert.are.same({0, 20, 1}, {l.caller.busy, l.caller.wait, l.caller.events})
      assert.are.equal(1 - 6 / 40, f.workers.idle)
      assert.are.equal(6 / 20, f.workers.parallelism)
      assert.are.equal(6, f.events) -- 5 on lanes, the counter's sample at 30
      assert.are.same({{name = "work", busy = 6, share = 1, color = "#112233"}}, f.categories)
      local tick = f.markers[1]
      assert.are.same({1, 10, 10}, {tick.count, tick.min, tick.max}) -- [25, 35)
      assert.are.same({work = 5}, (unit_of(tick.units[1])))
      assert.are.equal(0, f.markers[2].count)
      -- 4 from 10 holds [15, 30), 1 from 30 holds [30, 35): weights 3/4, 1/4
      local c = f.counters[1]
      assert.are.same({2, 1, 4}, {c.samples, c.min, c.max})
      assert.are.equal(4 * (15 / 20) + 1 * (5 / 20), c.mean)
      assert.are.same({{name = "work", count = 1, time = 1, bytes = 50}}, f.copies)
    end)
  end

  it("swaps reversed ends and counts a range of no time", function()
    local f = stats.compute(load_text(HAND), 35, 15)
    assert.are.same({15, 35}, {f.range.from, f.range.to})
    f = stats.compute(load_text(HAND), 10, 10)
    -- tick at 10 starts no unit (no time); the slices starting at 10 count; the sample at 10 counts
    assert.are.same({0, 0, 0}, {f.total.busy, f.markers[1].count, f.total.wait})
    assert.are.equal(2, f.events) -- the tick at 10 and the sample at 10 (no slice starts at 10)
  end)
end)

-- A model as trace.load makes one, by hand: one lane, two categories, a
-- marker kind "tick" with one marker at 0.
local function model(lane)
  local work, io = {name = "work", color = "#123456"}, {name = "io", color = "#654321"}
  lane.name, lane.instants, lane.dropped, lane.kind, lane.job = "worker 1", {}, 0, lane.kind or {}, {}
  for i = 1, math.floor(lane.n) do lane.kind[i], lane.job[i] = lane.kind[i] or "slice", false end
  return {format = "chrome", t0 = 0, t1 = 10, categories = {work, io, by_name = {work = work, io = io}},
          lanes = {lane}, marker_kinds = {"tick"}, marker_ts = {0}, marker_kind = {"tick"}, marker_arg = {7},
          loose_marker_ts = {0}, extra_ts = {}, awaits = {}, failures = {}, cancels = {}, span_pieces = {},
          flows = {}, counters = {}, copy_ts = {}, copy_dur = {}, copy_category = {}, copy_bytes = {},
          copy_name = {}, copy_job = {}, copy_lane = {}, dropped = 0, lost = 0}
end

describe("stats.compute on models built by hand", function()
  it("keeps Lua's number subtypes: integer sums stay integers, a float makes a float", function()
    local f = stats.compute(model{n = 2, ts = {1, 4}, dur = {2, 1}, cat = {"work", "io"}, maxdur = 2})
    assert.are.equal(3, f.lanes[1].busy)
    assert.are.equal("integer", math.type(f.lanes[1].busy))
    assert.are.equal("integer", math.type(f.markers[1].max)) -- the unit [0, 10)
    f = stats.compute(model{n = 2, ts = {1, 2.5}, dur = {2, 1}, cat = {"work", "io"}, maxdur = 2})
    assert.are.equal(2.5, f.lanes[1].busy) -- [1, 3) then [3, 3.5)
    assert.are.equal("float", math.type(f.lanes[1].busy))
    f = stats.compute(model{n = 1, ts = {1}, dur = {2}, cat = {"work"}, maxdur = 2}, 0.0, 10.0)
    assert.are.equal(2, f.lanes[1].busy)
    assert.are.equal("integer", math.type(f.lanes[1].busy)) -- 3 - 1: the range's floats not taken
  end)

  it("computes integer times past 2^53 exactly", function()
    local base = 1 << 60 -- 2^60 + 1 is no double
    local m = model{n = 2, ts = {base + 1, base + 4}, dur = {2, 1}, cat = {"work", "work"}, maxdur = 2}
    m.t0, m.t1, m.marker_ts, m.loose_marker_ts = base, base + 10, {base + 2}, {base + 2}
    local f = stats.compute(m)
    assert.are.equal(3, f.lanes[1].busy)
    assert.are.equal(8, f.markers[1].max) -- [base + 2, base + 10)
    assert.are.same({work = 2}, (unit_of(f.markers[1].units[1]))) -- [base + 2, base + 3) and [base + 4, base + 5)
    -- a float bound beside integers past 2^53, compared exactly: 2^60 - 1 starts before 2^60.0
    -- (as a float it is 2^60.0); 2^60 + 4 after it
    m.lanes[1].ts = {base - 1, base + 4}
    f = stats.compute(m, base + 0.0, base + 10)
    assert.are.equal(1, f.lanes[1].events)
  end)

  it("lists a category model.categories lacks under its name, in the lane's sums and the units", function()
    local f = stats.compute(model{n = 2, ts = {1, 2}, dur = {3, 4}, cat = {"stray", "io"}, maxdur = 4})
    -- stray [1, 4), io [4, 6) (its time after stray's end)
    assert.are.same({{"stray", 3, "#888888"}, {"io", 2, "#654321"}},
                    {{f.categories[1].name, f.categories[1].busy, f.categories[1].color},
                     {f.categories[2].name, f.categories[2].busy, f.categories[2].color}})
    local busy, order = unit_of(f.markers[1].units[1])
    assert.are.same({stray = 3, io = 2}, busy)
    assert.are.same({"stray", "io"}, order)
    f = stats.compute(model{n = 1, ts = {1}, dur = {3}, cat = {5}, maxdur = 3}) -- a category that is a number
    assert.are.same({5, 3}, {f.categories[1].name, f.categories[1].busy})
  end)

  it("gives a marker kind listed twice the same units under both listings", function()
    local m = model{n = 1, ts = {1}, dur = {3}, cat = {"work"}, maxdur = 3}
    m.marker_kinds = {"tick", "tock", "tick"}
    m.marker_ts, m.marker_kind, m.marker_arg, m.loose_marker_ts = {0, 5}, {"tick", "tock"}, {1, 2}, {0, 5}
    local f = stats.compute(m)
    assert.are.same({"tick", 1, 10}, {f.markers[1].kind, f.markers[1].count, f.markers[1].max})
    assert.are.same({"tock", 1, 5}, {f.markers[2].kind, f.markers[2].count, f.markers[2].max})
    assert.are.same({"tick", 1, 10}, {f.markers[3].kind, f.markers[3].count, f.markers[3].max})
    assert.are.same({work = 3}, (unit_of(f.markers[3].units[1])))
  end)

  it("reads lists with a metatable as Lua reads them (__index, __len)", function()
    local ts = setmetatable({1}, {__index = function(_, i) return i == 2 and 6 or nil end})
    local f = stats.compute(model{n = 2, ts = ts, dur = {2, 1}, cat = {"work", "io"}, maxdur = 2})
    assert.are.equal(3, f.lanes[1].busy) -- [1, 3) and [6, 7)
    local m = model{n = 1, ts = {1}, dur = {2}, cat = {"work"}, maxdur = 2}
    m.marker_ts = setmetatable({0, 4}, {__len = function() return 1 end}) -- the second marker hidden
    m.marker_kind, m.marker_arg = {"tick", "tick"}, {1, 2}
    assert.are.equal(1, stats.compute(m).markers[1].count)
  end)

  it("takes a lane's n as Lua's for loop takes it: a float floored", function()
    local f = stats.compute(model{n = 1.5, ts = {1, 4}, dur = {2, 1}, cat = {"work", "io"}, maxdur = 2})
    assert.are.equal(2, f.lanes[1].busy)
    f = stats.compute(model{n = 2.0, ts = {1, 4}, dur = {2, 1}, cat = {"work", "io"}, maxdur = 2})
    assert.are.equal(3, f.lanes[1].busy)
  end)

  it("holds a counter's samples past its times from the range's end to it: they count, weigh nothing", function()
    local m = model{n = 0, ts = {}, dur = {}, cat = {}, maxdur = 0}
    m.counters = {{name = "c", pid = 1, n = 4, ts = {1, 2}, value = {1, 2, 3, 4}}}
    local c = stats.compute(m).counters[1]
    -- 1 holds [1, 2), 2 holds [2, 10), 3 and 4 hold [10, 10)
    assert.are.same({4, 1, 4}, {c.samples, c.min, c.max})
    assert.are.equal(1 * (1 / 9) + 2 * (8 / 9), c.mean)
    m.counters = {{name = "c", pid = 1, n = 2, ts = {3, 3}, value = {5, 7}}}
    c = stats.compute(m, 3, 3).counters[1] -- no time: the plain mean
    assert.are.same({2, 5, 7, 6.0}, {c.samples, c.min, c.max, c.mean})
  end)

  it("groups copies by any category value, and counts one of no time at the range's start", function()
    local m = model{n = 0, ts = {}, dur = {}, cat = {}, maxdur = 0}
    m.copy_ts, m.copy_dur, m.copy_category, m.copy_bytes = {1, 2, 3}, {2, 0, 2}, {1, 1, "io"}, {4, 5, 6}
    local f = stats.compute(m, 2, 10)
    -- [1, 3) cut to [2, 3); [2, 2) starts at 2; [3, 5)
    assert.are.same({{name = "io", count = 1, time = 2, bytes = 6}, {name = 1, count = 2, time = 1, bytes = 9}},
                    f.copies)
  end)

  it("raises on what no figure can be made of, naming it", function()
    local function err(lane, change)
      local m = model(lane)
      if change then change(m) end
      return S.err_of(stats.compute, m)
    end
    local plain = {n = 2, ts = {1, 2}, dur = {3, 1}, cat = {"work", "io"}, maxdur = 3}
    assert.matches("a lane's ts%[2%] is not a number",
                   err{n = 2, ts = {1, "2"}, dur = {3, 1}, cat = {"work", "io"}, maxdur = 3})
    assert.matches("a lane's maxdur is not a number", err{n = 1, ts = {1}, dur = {3}, cat = {"work"}})
    assert.matches("attempt to index a number value", err(plain, function(m) m.lanes[1].instants = {5} end))
    assert.matches("ts is not a list", err{n = 1, dur = {3}, cat = {"work"}, maxdur = 3})
    assert.matches("a counter's value%[2%] is not a number", err(plain, function(m)
      m.counters = {{name = "c", pid = 1, n = 2, ts = {1, 2}, value = {1, "2"}}}
    end))
    -- a value out of the range is never read
    local m = model(plain)
    m.counters = {{name = "c", pid = 1, n = 2, ts = {1000, 1001}, value = {"x", "y"}}}
    assert.are.same({}, stats.compute(m).counters)
  end)

  it("refuses a model that is not a table, naming the argument", function()
    for _, name in ipairs{"stats_lanes", "stats_counters", "stats_copies"} do
      local err = S.err_of(C[name], nil, 0, 1)
      assert.matches(("bad argument #1 to '[%%w%%._]*%s' %%(table expected, got nil%%)"):format(name), err)
    end
    local swept = C.stats_lanes(load_text(HAND), 0, 40, 10, {work = 1, io = 2}, {"work", "io"})
    assert.matches("bad argument #1 to '.-' %(no such unit%)", S.err_of(swept.markers[1].row, 4))
    assert.matches("number expected, got string", S.err_of(swept.markers[1].row, "x"))
  end)

  it("keeps a kind's units as userdata, each unit's table made when first read", function()
    local units = stats.compute(load_text(HAND)).markers[1].units
    assert.are.equal(3, #units)
    assert.is_nil(rawget(units, 2))
    local u = units[2]
    assert.are.equal(u, rawget(units, 2))
    assert.are.same({index = 2, from = 10, to = 25, duration = 15}, {index = u.index, from = u.from, to = u.to,
                                                                      duration = u.duration})
    assert.is_nil(units[0])
    assert.is_nil(units[4])
    assert.is_nil(units[1.5])
    local n = 0
    for _ in ipairs(units) do n = n + 1 end
    assert.are.equal(3, n)
  end)
end)
