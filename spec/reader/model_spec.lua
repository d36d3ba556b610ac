-- Reading traces back: the model, the figures, compare, and their errors.
-- Expected figures are worked out by hand from the small traces written here.
local S = require "support"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"
local core = require "jobque.core"
local p = require "jobque_profile"
local jobque = require "jobque"

local function load_text(text)
  local path = S.tmpfile()
  S.write(path, text)
  return assert(trace.load(path))
end

-- Two workers and a caller over 0..100 us, in our own format:
--   worker 0: a 10..40 (30), b 50..60 (10)         busy 40
--   worker 1: a 20..80 (60)                        busy 60
--   caller:   submit 0..5 (5), wait 5..95 (90)     busy 5, wait 90
--   token markers at 0 (arg 1) and 50 (arg 2); the trace ends at 100.
local OURS = [[
{"traceEvents":[
{"ph":"M","pid":1,"name":"process_name","args":{"name":"jobque_profile"}},
{"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"caller"}},
{"ph":"M","pid":1,"tid":3,"name":"thread_sort_index","args":{"sort_index":2}},
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"M","pid":1,"tid":1,"name":"thread_sort_index","args":{"sort_index":0}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"worker 1"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_sort_index","args":{"sort_index":1}},
{"ph":"X","ts":50,"dur":10,"pid":1,"tid":1,"name":"b","cat":"job","args":{"job":2}},
{"ph":"X","ts":10,"dur":30,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":20,"dur":60,"pid":1,"tid":2,"name":"a","cat":"job","args":{"job":3}},
{"ph":"X","ts":0,"dur":5,"pid":1,"tid":3,"name":"submit a","cat":"submit","args":{"job":1}},
{"ph":"X","ts":5,"dur":90,"pid":1,"tid":3,"name":"wait all","cat":"wait"},
{"ph":"X","ts":60,"dur":0,"pid":1,"tid":1,"name":"wake job","cat":"flow","args":{"job":2}},
{"ph":"i","s":"g","ts":0,"pid":1,"tid":3,"name":"token","args":{"arg":1}},
{"ph":"i","s":"g","ts":50,"pid":1,"tid":3,"name":"token","args":{"arg":2}},
{"ph":"i","s":"t","ts":100,"pid":1,"tid":2,"name":"wake","cat":"worker","args":{"parked_us":3}}
],
"jobqueProfile":{"version":1,"clock":"tsc","lostEvents":0,
 "lanes":[{"tid":1,"name":"worker 0","recorded":4,"dropped":0},{"tid":2,"name":"worker 1","recorded":2,"dropped":0},
          {"tid":3,"name":"caller","recorded":4,"dropped":0}],
 "categories":[{"id":1,"name":"a","color":"#112233"}],
 "markers":[{"id":1,"name":"token"},{"id":2,"name":"frame"}]}}
]]

describe("trace.load", function()
  it("reads lanes in sort order, slices by start, categories and markers", function()
    local m = load_text(OURS)
    assert.equal("jobque", m.format)
    assert.equal("tsc", m.clock)
    assert.same({"worker 0", "worker 1", "caller"}, {m.lanes[1].name, m.lanes[2].name, m.lanes[3].name})
    assert.equal(3, #m.lanes) -- process_name makes no lane
    assert.same({10, 50}, m.lanes[1].ts) -- sorted, and the flow's zero-length end is not a slice
    assert.same({"job", "job"}, m.lanes[1].kind)
    assert.same({"submit", "wait"}, m.lanes[3].kind)
    assert.equal(0, m.t0)
    assert.equal(100, m.t1)
    assert.equal("#112233", m.categories.by_name.a.color)
    assert.equal(("#%06X"):format(core.palette_color("b")), m.categories.by_name.b.color)
    assert.same({"token", "frame"}, m.marker_kinds)
    assert.equal(2, #m.markers)
    assert.equal(math.tointeger(2), m.markers[2].arg) -- an integer again, though JSON numbers decode as floats
    assert.equal(1, #m.lanes[2].instants)
  end)

  it("reads plain Chrome JSON: B/E pairs, pid/tid lanes, categories from cat", function()
    local m = load_text([[
[{"ph":"B","ts":0,"pid":7,"tid":1,"name":"outer","cat":"io"},
 {"ph":"X","ts":10,"dur":20,"pid":7,"tid":1,"name":"inner","cat":"cpu"},
 {"ph":"E","ts":40,"pid":7,"tid":1},
 {"ph":"X","ts":30,"dur":30,"pid":7,"tid":1,"name":"tail","cat":"cpu"},
 {"ph":"X","ts":0,"dur":10,"pid":8,"tid":1,"name":"other"},
 {"ph":"i","s":"g","ts":5,"pid":7,"tid":1,"name":"frame"},
 {"ph":"Q","ts":5}]
]])
    assert.equal("chrome", m.format)
    assert.equal(2, #m.lanes) -- pid 7 and pid 8 are different lanes although both are tid 1
    assert.same({"thread 1", "thread 1"}, {m.lanes[1].name, m.lanes[2].name})
    assert.equal(1, m.skipped) -- the unknown phase
    assert.same({{why = "unknown ph", n = 1}}, m.skips)
    local f = stats.compute(m)
    -- lane 1: outer 0..40 holds inner; tail 30..60 adds 40..60: busy 60, io 40, cpu 20
    assert.near(60, f.lanes[1].busy, 1e-9)
    assert.near(10, f.lanes[2].busy, 1e-9)
    local by = {}
    for _, c in ipairs(f.categories) do by[c.name] = c.busy end
    assert.same({io = 40, cpu = 20, other = 10}, by)
    assert.equal(("#%06X"):format(core.palette_color("io")), m.categories.by_name.io.color)
    assert.same({"frame"}, m.marker_kinds)
  end)

  it("pairs B with E per thread in time order (stably), however the file orders them, whichever reader", function()
    -- thread 1 in file order: B a@0, E@100, B b@50, E@20; by time: a 0..20, b 50..100.
    -- thread 2 in file order: B c@10, B d@5, E@10, E@12; by time (ties in file
    -- order): B d@5, B c@10, E@10 (ends c: 0), E@12 (ends d: 7).
    -- thread 3: an E before its B in the file and in time (ignored), then a
    -- B never ended: e 30..100, the trace's end.
    local text = [[
[{"ph":"B","ts":0,"pid":1,"tid":1,"name":"a"},
 {"ph":"E","ts":100,"pid":1,"tid":1},
 {"ph":"B","ts":50,"pid":1,"tid":1,"name":"b"},
 {"ph":"E","ts":20,"pid":1,"tid":1},
 {"ph":"B","ts":10,"pid":1,"tid":2,"name":"c"},
 {"ph":"B","ts":5,"pid":1,"tid":2,"name":"d"},
 {"ph":"E","ts":10,"pid":1,"tid":2},
 {"ph":"E","ts":12,"pid":1,"tid":2},
 {"ph":"B","ts":30,"pid":1,"tid":3,"name":"e"},
 {"ph":"E","ts":25,"pid":1,"tid":3}]
]]
    do
      local m = assert(trace.decode(text, "t.json"))
      local f = stats.compute(m)
      local by = {}
      for _, c in ipairs(f.categories) do by[c.name] = c.busy end
      assert.same({a = 20, b = 50, d = 7, e = 70}, by) -- (c, busy 0, is listed under no category)
      local l1, l2 = m.lanes[1], m.lanes[2]
      assert.same({0, 50}, {l1.ts[1], l1.ts[2]})
      assert.same({20, 50}, {l1.dur[1], l1.dur[2]})
      assert.same({"d", "c"}, {l2.sname[1], l2.sname[2]})
      assert.same({7, 0}, {l2.dur[1], l2.dur[2]})
      assert.equal(10, m.nevents)
    end
  end)

  it("pairs B with E in time order on random nested trees written in any order (seeded)", function()
    local seed = tonumber(os.getenv("JQ_SEED") or "") or os.time()
    local rnd = math.random
    math.randomseed(seed)
    for round = 1, 20 do
      -- per thread, slices one after another, each holding at most one
      -- child; names say their thread and place, so each is its own category
      -- and its busy time is its own duration (the outermost holds the time:
      -- a child adds none, and a category with none is not listed), which
      -- the writer knows by construction
      local events, want = {}, {}
      for tid = 1, rnd(1, 3) do
        local t = 0
        for k = 1, rnd(1, 40) do
          local name = ("t%d.%d"):format(tid, k)
          local s = t + rnd(1, 5) -- no two events of a thread at one time: the order is then the file's
          local e = s + rnd(2, 50)
          want[name] = e - s
          events[#events + 1] = ('{"ph":"B","ts":%d,"pid":1,"tid":%d,"name":"%s"}'):format(s, tid, name)
          events[#events + 1] = ('{"ph":"E","ts":%d,"pid":1,"tid":%d}'):format(e, tid)
          if rnd(2) == 1 and e - s > 3 then -- a child strictly inside: it adds no busy time of its own
            local cs = s + 1
            local ce = rnd(cs + 1, e - 1)
            events[#events + 1] = ('{"ph":"B","ts":%d,"pid":1,"tid":%d,"name":"%sc"}'):format(cs, tid, name)
            events[#events + 1] = ('{"ph":"E","ts":%d,"pid":1,"tid":%d}'):format(ce, tid)
          end
          t = e
        end
      end
      for i = #events, 2, -1 do -- shuffled: any order at all in the file
        local j = rnd(i)
        events[i], events[j] = events[j], events[i]
      end
      local text = "[" .. table.concat(events, ",\n") .. "]"
      do
        local m = assert(trace.decode(text, "t.json"))
        local by = {}
        for _, c in ipairs(stats.compute(m).categories) do by[c.name] = c.busy end
        local differs = false
        for k, v in pairs(want) do differs = differs or by[k] ~= v end
        for k in pairs(by) do differs = differs or want[k] == nil end
        if differs then
          error(("seed %d, round %d: busy per name %s, want %s"):format(seed, round,
                report.json(by), report.json(want)))
        end
      end
    end
  end)

  it("reads per-lane counts from laneInfo, and from the old list under lanes", function()
    local head = '{"traceEvents":[{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"w"}},'
                 .. '{"ph":"X","ts":0,"dur":1,"pid":1,"tid":1,"name":"x","cat":"job"}],'
    local info = '[{"tid":1,"name":"w","recorded":7,"dropped":3,"fullAtUs":0.5}]'
    for _, meta in ipairs{'{"lanes":1,"laneInfo":' .. info .. '}', '{"lanes":' .. info .. '}'} do
      local m = load_text(head .. '"jobqueProfile":' .. meta .. '}')
      assert.equal(1, #m.lanes)
      assert.equal(7, m.lanes[1].recorded)
      assert.equal(3, m.lanes[1].dropped)
      assert.equal(0.5, m.lanes[1].full_at)
      assert.equal(3, m.dropped)
    end
    local path = S.tmpfile()
    S.write(path, head .. '"jobqueProfile":{"lanes":1,"laneInfo":[{"name":"w","fullAtUs":1e999}]}}')
    assert.matches('bad "jobqueProfile.laneInfo[1].fullAtUs": inf us is out of range', select(2, trace.load(path)),
                   1, true)
  end)

  it("says what is wrong with a file that is not a trace", function()
    local function err(text)
      local path = S.tmpfile()
      S.write(path, text)
      local m, e = trace.load(path)
      assert.is_nil(m)
      return e
    end
    assert.matches('not a trace: no "traceEvents" array', err('{"events":[]}'), 1, true)
    assert.matches('not a trace: no "traceEvents" array', err('{}'), 1, true)
    assert.matches('"traceEvents" is not an array', err('{"traceEvents":3}'), 1, true)
    assert.matches('"traceEvents" is not an array (it is an object)', err('{"traceEvents":{"x":{"ts":1}}}'), 1, true)
    assert.matches("not JSON", err('{"traceEvents":['))
    assert.matches("not a trace: the file is empty$", err(''))
    assert.matches("not a trace: the file is empty %(only white space%)$", err(' \n\t '))
    assert.matches("not a trace: the JSON is a string", err('"hello"'), 1, true)
    assert.matches('bad "jobqueProfile.categories[1]"', err('{"traceEvents":[],"jobqueProfile":{"categories":[{}]}}'),
                   1, true)
    assert.equal('event #2 ("x\\010y"): "dur" is 3000000000000000.5 us, out of range (a time must be within '
                 .. "+-3e+15 us; is the file damaged?)",
                 err('[{"ph":"i","s":"g","ts":0},{"ph":"X","ts":0,"dur":3000000000000000.5,"name":"x\\ny"}]')
                   :match(": (.*)"))
    assert.matches('bad "jobqueProfile.lanes[1].fullAtUs": -inf us is out of range',
                   err('{"traceEvents":[{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"w"}},'
                       .. '{"ph":"X","ts":0,"dur":1,"pid":1,"tid":1}],'
                       .. '"jobqueProfile":{"lanes":[{"name":"w","fullAtUs":-1e999}]}}'), 1, true)
    local m, e = trace.load(S.tmpdir .. "/missing.json")
    assert.is_nil(m)
    assert.matches("cannot open .*missing.json", e)
    assert.matches("path expected", select(2, trace.load(nil)), 1, true)
    assert.equal("cannot read " .. S.tmpdir .. ": Is a directory", select(2, trace.load(S.tmpdir)))
  end)

  it("reads our times, printed in 2048ths of a microsecond, back to the nanoseconds recorded", function()
    -- A copy from 1,019,705 ns to 1,024,783 ns, its job's slice from there to
    -- 1,030,000 ns (and a failed job's after it), a marker at 500 ns, a counter at 1 ns, the session stopped
    -- at 2,000,001 ns: each time the nearest 2048th (1019705 * 2048 / 1000 =
    -- 2088355.84: 2088356/2048 = 1019.705078125), a duration the difference
    -- of its ends' (2098756/2048 - 2088356/2048 = 10400/2048 = 5.078125).
    local text = [[
{"traceEvents":[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"X","ts":1019.705078125,"dur":5.078125,"pid":1,"tid":1,"name":"copy in","cat":"copy","args":{"job":1,"bytes":8}},
{"ph":"X","ts":1024.783203125,"dur":5.216796875,"pid":1,"tid":1,"name":"job","cat":"job","args":{"job":1}},
{"ph":"X","ts":1030.0009765625,"dur":0.5,"pid":1,"tid":1,"name":"job","cat":"job","args":{"job":2,"failed":true}},
{"ph":"i","s":"g","ts":0.500,"pid":1,"tid":1,"name":"token","args":{"arg":1}},
{"ph":"C","ts":0.0009765625,"pid":1,"tid":1,"name":"n","args":{"value":1}}
],
"jobqueProfile":{"version":1,"startUs":0.000,"stopUs":2000.0009765625,"lanes":1,
"laneInfo":[{"tid":1,"name":"worker 0","fullAtUs":1030.0}],"categories":[],"markers":[{"id":1,"name":"token"}]}}
]]
    do
      local m = assert(trace.decode(text, "t.json"))
      local lane = m.lanes[1]
      assert.same({1019.705, 5.078, 1024.783, 5.217}, {lane.ts[1], lane.dur[1], lane.ts[2], lane.dur[2]})
      -- a failed job's slice, read by trace.lua: 1030.0009765625 us is 1,030,000.98 ns, so 1,030,001
      assert.same({1030.001, 0.5}, {lane.ts[3], lane.dur[3]})
      assert.same({1019.705, 5.078}, {m.copies[1].ts, m.copies[1].dur})
      assert.equal(0.5, m.markers[1].ts)
      assert.equal(0.001, m.counters[1].ts[1])
      assert.same({start = 0, stop = 2000.001}, m.session)
      assert.equal(1030, lane.full_at)
    end
  end)

  it("says why it skipped events: the first five reasons in order, then an ellipsis", function()
    local m = load_text('{"traceEvents":[{"ph":"X","ts":0,"dur":10,"pid":1,"tid":1,"name":"a"},'
      .. '{"ph":"X","ts":"1","dur":1,"pid":1,"tid":1},{"ph":"X","dur":1,"pid":1,"tid":1},{"ph":"Q","ts":3},'
      .. '{"ph":"X","ts":4,"dur":-1,"pid":1,"tid":1},7,{"ts":5},{"ph":"X","ts":6,"dur":"x","pid":1,"tid":1},'
      .. '{"ph":"X","ts":"2","dur":1,"pid":1,"tid":1}]}')
    assert.equal("8 events skipped (ts is not a number: 2, no ts: 1, unknown ph: 1, dur is negative: 1, "
      .. "not an object: 1, ...)", trace.skipped_text(m))
  end)
end)

describe("stats.compute", function()
  it("gives busy, wait, idle and parallelism per lane and in all", function()
    local f = stats.compute(load_text(OURS))
    assert.same({from = 0, to = 100, duration = 100, t0 = 0}, f.range)
    assert.same({40, 60, 5}, {f.lanes[1].busy, f.lanes[2].busy, f.lanes[3].busy})
    assert.same({0, 0, 90}, {f.lanes[1].wait, f.lanes[2].wait, f.lanes[3].wait})
    assert.near(0.6, f.lanes[1].idle, 1e-12)
    assert.equal(105, f.total.busy)
    assert.equal(90, f.total.wait)
    assert.near(1 - 105 / 300, f.total.idle, 1e-12)
    assert.near(1.05, f.total.parallelism, 1e-12)
    assert.same({"a", "b", "submit"}, {f.categories[1].name, f.categories[2].name, f.categories[3].name})
    assert.same({90, 10, 5}, {f.categories[1].busy, f.categories[2].busy, f.categories[3].busy})
    assert.near(90 / 105, f.categories[1].share, 1e-12)
    -- every event of the file: 5 slices, the flow's end at 60, 2 markers and
    -- the wake instant at 100, the last moment of the trace (the range is closed)
    assert.equal(9, f.events)
  end)

  it("covers the session: from its start to its stop, the last marker's unit included", function()
    -- A loop of 3 frames (markers at 0, 5 ms, 10 ms) whose third takes 50 ms
    -- of untraced work; the session stops at 60 ms. A job slice 1..4 ms on the caller.
    local frames = [[
{"traceEvents":[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"caller"}},
{"ph":"i","s":"g","ts":0.000,"pid":1,"tid":1,"name":"frame","args":{"arg":1}},
{"ph":"X","ts":1000.000,"dur":3000.000,"pid":1,"tid":1,"name":"job","cat":"job","args":{"job":1}},
{"ph":"i","s":"g","ts":5000.000,"pid":1,"tid":1,"name":"frame","args":{"arg":2}},
{"ph":"i","s":"g","ts":10000.000,"pid":1,"tid":1,"name":"frame","args":{"arg":3}}
],
"jobqueProfile":{"version":1,"clock":"tsc","durationUs":60000.000,"startUs":%s,"stopUs":%s,"lostEvents":0,"lanes":1,
"laneInfo":[{"tid":1,"name":"caller","recorded":4,"dropped":0}],"categories":[],"markers":[{"id":1,"name":"frame"}]}}
]]
    local m = load_text(frames:format("0.000", "60000.000"))
    assert.same({0, 60000}, {m.t0, m.t1})
    local f = stats.compute(m)
    assert.same({from = 0, to = 60000, duration = 60000, t0 = 0}, f.range)
    local u = f.markers[1]
    assert.same({3, 5000, 5000, 50000, 50000}, {u.count, u.min, u.median, u.p95, u.max})
    assert.same({3, 10000, 60000}, {u.units[3].arg, u.units[3].from, u.units[3].to})
    assert.equal(4, f.events)
    assert.near(1 - 3000 / 60000, f.lanes[1].idle, 1e-12)
    -- a session that starts before its first event
    m = load_text(frames:format("-500.000", "60000.000"))
    assert.same({-500, 60000}, {m.t0, m.t1})
    -- a stop before the last event (a damaged legend) never hides an event
    m = load_text(frames:format("0.000", "7000.000"))
    assert.same({0, 10000}, {m.t0, m.t1})
    -- files of ours written before startUs/stopUs: the session is 0 .. durationUs
    m = load_text(frames:gsub('"startUs":%%s,"stopUs":%%s,', ""))
    assert.same({0, 60000}, {m.t0, m.t1})
    assert.equal(3, stats.compute(m).markers[1].count)
  end)

  it("counts events at the end of a range, and the last event of a plain Chrome trace", function()
    -- no session bounds: the trace runs from its first event (0) to its last (30)
    local m = load_text([[
[{"ph":"i","s":"g","ts":0,"pid":1,"tid":1,"name":"u"},
 {"ph":"X","ts":5,"dur":25,"pid":1,"tid":1,"name":"x"},
 {"ph":"i","s":"g","ts":10,"pid":1,"tid":1,"name":"u"},
 {"ph":"i","s":"g","ts":30,"pid":1,"tid":1,"name":"u"}]
]])
    assert.same({0, 30}, {m.t0, m.t1})
    local f = stats.compute(m)
    assert.equal(4, f.events)
    local u = f.markers[1]
    assert.equal(2, u.count) -- the marker at the very end counts as an event, but has no time for a unit
    assert.same({10, 30}, {u.units[2].from, u.units[2].to})
    f = stats.compute(m, 0, 10)
    assert.equal(3, f.events) -- the markers at 0 and 10 and the slice starting at 5
  end)

  it("splits marker units and their busy time by category", function()
    local f = stats.compute(load_text(OURS))
    local token, frame = f.markers[1], f.markers[2]
    assert.equal("token", token.kind)
    assert.equal(2, token.count)
    assert.same({50, 50, 50, 50}, {token.min, token.median, token.p95, token.max})
    -- unit 1 (0..50): a 30 on worker 0, a 30 on worker 1, submit 5
    local u1, u2 = token.units[1], token.units[2]
    assert.same({1, 0, 50}, {u1.arg, u1.from, u1.to})
    assert.same({{name = "a", busy = 60, share = 60 / 65}, {name = "submit", busy = 5, share = 5 / 65}},
                u1.by_category)
    -- unit 2 (50..100): b 10, a 30 on worker 1
    assert.same({"a", "b"}, {u2.by_category[1].name, u2.by_category[2].name})
    assert.same({30, 10}, {u2.by_category[1].busy, u2.by_category[2].busy})
    assert.equal(0, frame.count)
  end)

  it("clips to a range", function()
    local f = stats.compute(load_text(OURS), 25, 55)
    -- worker 0: a 25..40, b 50..55: 20; worker 1: a 25..55: 30; caller: wait 30
    assert.same({20, 30, 0}, {f.lanes[1].busy, f.lanes[2].busy, f.lanes[3].busy})
    assert.equal(30, f.lanes[3].wait)
    assert.near(50 / 30, f.total.parallelism, 1e-12)
    assert.equal(1, f.markers[1].count) -- the marker at 50 starts a unit that runs to 55
    assert.equal(5, f.markers[1].units[1].duration)
  end)

  it("uses nearest-rank median and p95", function()
    local events = {}
    for _, ts in ipairs{0, 10, 30, 60} do
      events[#events + 1] = ('{"ph":"i","s":"g","ts":%d,"pid":1,"tid":1,"name":"u"}'):format(ts)
    end
    events[#events + 1] = '{"ph":"X","ts":0,"dur":100,"pid":1,"tid":1,"name":"x"}'
    local f = stats.compute(load_text('{"traceEvents":[' .. table.concat(events, ",") .. ']}'))
    -- units: 0..10, 10..30, 30..60, 60..100 = 10, 20, 30, 40
    local u = f.markers[1]
    assert.same({4, 10, 20, 40, 40}, {u.count, u.min, u.median, u.p95, u.max})
  end)

  -- n units of durations 1..n, in a scrambled order.
  local function units_of(n)
    local gaps = {}
    for i = 1, n do gaps[i] = (i * 11) % n + 1 end -- 11 is prime to 20 and 21: a permutation
    local events, ts = {}, 0
    for i = 1, n do
      events[i] = ('{"ph":"i","s":"g","ts":%d,"pid":1,"tid":1,"name":"u"}'):format(ts)
      ts = ts + gaps[i]
    end
    events[#events + 1] = ('{"ph":"X","ts":0,"dur":%d,"pid":1,"tid":1,"name":"x"}'):format(ts)
    return stats.compute(load_text("[" .. table.concat(events, ",") .. "]")).markers[1]
  end

  it("takes the ranks ceil(n/2) and ceil(0.95 n), where an off-by-one rank shows", function()
    -- n = 20: median rank 10, p95 rank 19 (0.95 n is whole: not 20)
    local u = units_of(20)
    assert.same({20, 1, 10, 19, 20}, {u.count, u.min, u.median, u.p95, u.max})
    -- n = 21: median rank 11, p95 rank ceil(19.95) = 20
    u = units_of(21)
    assert.same({21, 1, 11, 20, 21}, {u.count, u.min, u.median, u.p95, u.max})
  end)
end)

describe("marker units", function()
  it("give nearest-rank statistics and list every unit", function()
    -- 101 units with gaps 1..101 in a shuffled order; the last runs to the slice's end.
    local gaps = {}
    for i = 1, 101 do gaps[i] = i end
    local rng = 12345
    for i = #gaps, 2, -1 do
      rng = (rng * 1103515245 + 12345) % 2147483648
      local j = rng % i + 1
      gaps[i], gaps[j] = gaps[j], gaps[i]
    end
    local events, ts = {}, 0
    for i = 1, 101 do
      events[i] = ('{"ph":"i","s":"g","ts":%d,"pid":1,"tid":1,"name":"u","args":{"arg":%d}}'):format(ts, i)
      ts = ts + gaps[i]
    end
    events[#events + 1] = ('{"ph":"X","ts":0,"dur":%d,"pid":1,"tid":1,"name":"x"}'):format(ts)
    local u = stats.compute(load_text("[" .. table.concat(events, ",") .. "]")).markers[1]
    -- durations 1..101: nearest rank median is the 51st, p95 the 96th
    assert.same({101, 1, 51, 96, 101}, {u.count, u.min, u.median, u.p95, u.max})
    assert.equal(101, #u.units)
    local n, total = 0, 0
    for i, unit in ipairs(u.units) do
      n = n + 1
      total = total + unit.duration
      assert.equal(i, unit.arg)
      assert.equal(gaps[i], unit.duration)
      assert.equal(unit.duration, unit.by_category[1].busy) -- the slice covers every unit
    end
    assert.same({101, ts}, {n, total})
    assert.is_nil(u.units[102])
    assert.is_nil(u.units[0])
  end)
end)

describe("stats.compare", function()
  it("puts two traces' figures side by side", function()
    local a = stats.compute(load_text(OURS))
    local b = stats.compute(load_text(OURS), 0, 50)
    local rows = {}
    for _, r in ipairs(stats.compare(a, b)) do rows[r.label] = r end
    assert.same({100, 50, -50, 0.5}, {rows.duration.a, rows.duration.b, rows.duration.diff, rows.duration.ratio})
    -- 0..50: worker 0 a 30, worker 1 a 30, caller submit 5
    assert.same({105, 65}, {rows["all lanes: busy"].a, rows["all lanes: busy"].b})
    assert.same({10, 0}, {rows["busy: b"].a, rows["busy: b"].b})
    assert.same({2, 1}, {rows["token units"].a, rows["token units"].b})
    assert.matches("busy: b", report.compare_text(stats.compare(a, b), "a", "b"), 1, true)
  end)
end)

describe("report.compare_text", function()
  it("prints rows written by hand as the golden table", function()
    local rows = {
      {label = "duration", group = "range", pre = "duration", a = 200, b = 150, diff = -50, ratio = 0.75, unit = "us"},
      {label = "events", group = "range", pre = "events", a = 8, b = 8, diff = 0, ratio = 1, unit = ""},
      {label = "workers: idle", group = "workers", pre = "workers: idle", a = 0.25, b = 0.5, diff = 0.25, ratio = 2,
       unit = "%"},
      {label = "workers: parallelism", group = "workers", pre = "workers: parallelism", a = 0.75, b = 0.5,
       diff = -0.25, ratio = 2 / 3, unit = "x"},
      {label = "lane worker 0: busy", group = "lane", pre = "lane ", name = "worker 0", post = ": busy", a = 0, b = 20,
       diff = 20, unit = "us"},
    }
    assert.are.equal([[
a: a.json
b: b.json

                                 a             b         b - a     b / a
duration                    200 us        150 us        -50 us     0.75x
events                           8             8            +0     1.00x

workers: idle                25.0%         50.0%      +25.0 pt     2.00x
workers: parallelism          0.75          0.50         -0.25     0.67x

lane worker 0: busy           0 us         20 us        +20 us         -
]], report.compare_text(rows, "a.json", "b.json"))
  end)
end)

describe("a trace saved by jobque_profile", function()
  it("reads back with its lanes, categories, markers and drops", function()
    local cat = p.profile_category("reader test", p.PROFILE_COLOR_GREEN)
    local tok = p.profile_marker_id("reader token")
    p.profile_start(4096)
    -- one worker: a second one would have a lane only if it happened to take a job
    jobque.with_job_que({workers = 1}, function(q)
      for i = 1, 3 do
        p.profile_marker(tok, i)
        p.profile_tag(cat)
        q:submit(function() local x = 0 for k = 1, 1000 do x = x + k end return x end):wait()
      end
    end)
    p.profile_stop()
    p.profile_tag(0) -- the op tag is the thread's: later specs expect none
    local _, _, path = S.save(p)
    local m = assert(trace.load(path))
    assert.are.same({"worker 0", "caller"}, {m.lanes[1].name, m.lanes[2].name})
    assert.equal(2, #m.lanes)
    assert.equal(("#%06X"):format(p.PROFILE_COLOR_GREEN), m.categories.by_name["reader test"].color)
    local f = stats.compute(m)
    local tokens
    for _, k in ipairs(f.markers) do if k.kind == "reader token" then tokens = k end end
    assert.equal(3, tokens.count)
    assert.equal(m.t1, tokens.units[3].to) -- the last unit runs to the session's stop
    local by = {}
    for _, c in ipairs(f.categories) do by[c.name] = c.busy end
    assert.is_true(by["reader test"] > 0)
    assert.is_true(f.total.wait > 0) -- the caller waited for each job
    assert.equal(0, f.dropped.events)

    -- A ring of 8 fills: the report says the trace is truncated, and where.
    local _, _, small = S.record_n(p, "reader fill", 8, 20)
    local sm = assert(trace.load(small))
    local sf = stats.compute(sm)
    assert.equal(12, sf.dropped.events)
    assert.equal(1, #sf.dropped.lanes)
    assert.is_number(sf.dropped.lanes[1].full_at)
    assert.matches("truncated: 12 events were dropped", report.text(sf, sm), 1, true)
  end)
end)

describe("the session's bounds", function()
  it("are in the saved file, and the reader's figures cover them", function()
    -- The README's example: four markers with work between them, then stop.
    local tok = p.profile_marker_id("bounds token")
    p.profile_start(64)
    for i = 0, 3 do
      p.profile_marker(tok, i)
      local x = 0
      for k = 1, 10000 do x = x + k end
    end
    p.profile_stop()
    local t, _, path = S.save(p)
    local jp = t.jobqueProfile
    assert.equal(0, jp.startUs)
    assert.equal(jp.durationUs, jp.stopUs)
    for _, ev in ipairs(t.traceEvents) do
      if ev.ts then assert.is_true(ev.ts + (ev.dur or 0) <= jp.stopUs) end
    end
    local m = assert(trace.load(path))
    -- the model holds the nanoseconds the file's 2048ths of a us stand for
    local stop_ns = math.floor(jp.stopUs * 1000 + 0.5)
    assert.is_true(math.abs(jp.stopUs * 1000 - stop_ns) < 0.25)
    assert.same({0, stop_ns / 1000}, {m.t0, m.t1})
    local u
    for _, k in ipairs(stats.compute(m).markers) do if k.kind == "bounds token" then u = k end end
    assert.equal(4, u.count)
    assert.same({3, stop_ns / 1000}, {u.units[4].arg, u.units[4].to})
  end)
end)

describe("marker args", function()
  it("round-trip exactly through the file, the reader, the report, --json and the page", function()
    local html = require "jobque_profile.page"
    local big = {math.maxinteger, math.mininteger, (1 << 53) + 1, -(1 << 53) - 1, 1 << 53, 42}
    local kind = p.profile_marker_id("exact arg")
    p.profile_start(64)
    for _, v in ipairs(big) do p.profile_marker(kind, v) end
    p.profile_stop()
    local _, text, path = S.save(p)
    assert.matches('"args":{"arg":9223372036854775807}', text, 1, true)
    assert.matches('"args":{"arg":-9223372036854775808}', text, 1, true)
    local m = assert(trace.load(path))
    local args = {}
    for i = 1, #m.markers do
      if m.markers[i].kind == "exact arg" then args[#args + 1] = m.markers[i].arg end
    end
    assert.equal(#big, #args)
    for i, v in ipairs(big) do
      assert.equal("integer", math.type(args[i]))
      assert.is_true(args[i] == v, ("arg %d: %s read as %s"):format(i, v, args[i]))
    end
    local f = stats.compute(m)
    local units
    for _, k in ipairs(f.markers) do if k.kind == "exact arg" then units = k.units end end
    local txt, js = report.text(f, m), report.json(f)
    for _, v in ipairs(big) do
      assert.matches(" " .. v .. " ", txt, 1, true)
      assert.matches('"arg":' .. v .. ",", js, 1, true)
    end
    assert.equal(math.maxinteger, units[1].arg)
    -- the page: JavaScript numbers hold 53 bits, so larger args travel as text
    local page = html.render(m)
    assert.matches('"9223372036854775807"', page, 1, true)
    assert.matches('"-9223372036854775808"', page, 1, true)
    assert.matches('"9007199254740993"', page, 1, true)
    assert.is_nil(page:find("9.2233720368548e+18", 1, true))
  end)

  it("are args.arg of an event, read exactly (a double's rounding where the file has a float)", function()
    -- 2^63 - 1 as a name, as a ts-like field and nested deeper: none is a marker arg
    local m = load_text([[
{"traceEvents":[
{"ph":"i","s":"g","ts":0,"pid":1,"tid":1,"name":"9223372036854775807","args":{"x":{"arg":9223372036854775807},"arg":7}},
{"ph":"i","s":"g","ts":1,"pid":1,"tid":1,"name":"k","args":{"arg":9007199254740993.0}},
{"ph":"i","s":"g","ts":2,"pid":1,"tid":1,"name":"k","args":{"arg":-9223372036854775807}},
{"ph":"i","s":"g","ts":3,"pid":1,"tid":1,"name":"k","args":{"arg":99999999999999999999}},
{"ph":"i","s":"g","ts":4,"pid":1,"tid":1,"name":"k","args":{"arg":9223372036854775807},"args":{"arg":3}}
],"jobqueProfile":{"lanes":1,"laneInfo":[],"categories":[],"markers":[]}}
]])
    local want = {7, 9007199254740992, -9223372036854775807, 1e20, 3}
    for i, v in ipairs(want) do
      assert.is_true(m.markers[i].arg == v, ("marker %d: %s, want %s"):format(i, m.markers[i].arg, v))
    end
    assert.equal("float", math.type(m.markers[4].arg))
  end)
end)

describe("report.json", function()
  it("writes JSON that reads back to the same figures", function()
    local cjson = require "cjson"
    local f = stats.compute(load_text(OURS))
    local back = cjson.decode(report.json(f))
    assert.same(f, back)
    assert.same({}, back.dropped.lanes)
    assert.equal('["a\\"\\n\\u0001"]', report.json({"a\"\n\1"}))
    -- as many digits as it takes to read the same number back
    assert.equal("[0.1,1700000000000002.5,null]", report.json({0.1, 1.7e15 + 2.5, math.huge}))
  end)
end)
