-- stats.compute's per-event loops in C (src/reader/stats.c: C.stats_lanes,
-- stats_counters, stats_copies) give the figures the Lua loops give, bit for
-- bit and subtype for subtype: the figures table (every marker unit
-- included), the report's text, --json and compare, on the fixtures, a
-- recorded session, the demo's trace, hand-made shapes, ranges that cut
-- slices and units, and seeded random traces and models (a failure prints
-- the seed: JQ_STATS_SEED=n replays it). Where the C leaves a model to the
-- Lua (a value it does not read as Lua would), the Lua runs.
local S = require "support"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"
local p = require "jobque_profile"
local jobque = require "jobque"
local C = require "jobque_profile.reader"

-- A value as text that tells integers from floats and floats to the bit.
local function ser(v, out, seen)
  local t = type(v)
  if t == "number" then
    out[#out + 1] = math.type(v) == "integer" and ("i" .. tostring(v)) or ("f" .. ("%a"):format(v))
  elseif t == "table" then
    assert(not seen[v], "a cycle")
    seen[v] = true
    out[#out + 1] = "{"
    local n = #v
    for i = 1, n do
      ser(v[i], out, seen)
      out[#out + 1] = ","
    end
    local keys = {}
    for k in pairs(v) do
      if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = k end
    end
    table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
    for _, k in ipairs(keys) do
      out[#out + 1] = tostring(k) .. "="
      ser(v[k], out, seen)
      out[#out + 1] = ";"
    end
    out[#out + 1] = "}"
    seen[v] = nil
  else
    out[#out + 1] = tostring(v)
  end
  return out
end

-- compute on one path (native: the core's loops when they take the model),
-- every unit made; its text and the figures themselves.
local function figures(model, native, from, to, top)
  local was = stats.native
  stats.native = native
  local ok, f = pcall(stats.compute, model, from, to, top)
  stats.native = was
  if not ok then return "error: " .. tostring(f) end
  for _, m in ipairs(f.markers) do
    for j = 1, #m.units do
      local _ = m.units[j]
    end
  end
  return table.concat(ser(f, {}, {})), f
end

-- The first place two texts differ, with some context.
local function where(a, b)
  for i = 1, math.max(#a, #b) do
    if a:sub(i, i) ~= b:sub(i, i) then
      return ("at %d:\n  C:   %s\n  Lua: %s"):format(i, a:sub(i - 120, i + 60), b:sub(i - 120, i + 60))
    end
  end
end

-- C and Lua agree on model over [from, to]: figures, report text and
-- --json, and compare against the whole trace. Returns the C figures.
local function same(model, what, from, to, top)
  local c, fc = figures(model, true, from, to, top)
  local l, fl = figures(model, false, from, to, top)
  if c ~= l then error(what .. ": the figures differ " .. where(c, l), 2) end
  if type(fc) ~= "table" then return nil end
  -- the outputs (or the same error: hand-made models may hold what the report refuses)
  local function out(f, ...) return select(2, pcall(f, ...)) end
  assert.are.equal(out(report.text, fl, model), out(report.text, fc, model), what)
  assert.are.equal(out(report.json, fl), out(report.json, fc), what)
  local _, wc = figures(model, true, nil, nil, top)
  local _, wl = figures(model, false, nil, nil, top)
  if type(wc) == "table" then
    local rc, rl = stats.compare(wc, fc), stats.compare(wl, fl)
    assert.are.equal(out(report.compare_text, rl, "a", "b"), out(report.compare_text, rc, "a", "b"), what)
    assert.are.equal(out(report.json, rl), out(report.json, rc), what)
  end
  return fc
end

-- C.stats_lanes over [a, b] as compute calls it.
local function lanes_of(model, a, b)
  local cat_index, names = {}, {}
  for c, entry in ipairs(model.categories) do cat_index[entry.name], names[c] = c, entry.name end
  return C.stats_lanes(model, a, b, stats.TOP, cat_index, names)
end

-- The core's loops take the model (they return figures, not nil).
local function taken(model, from, to)
  local a, b = from or model.t0, to or model.t1
  if a > b then a, b = b, a end
  return lanes_of(model, a, b) ~= nil and C.stats_counters(model, a, b) ~= nil
    and C.stats_copies(model, a, b) ~= nil
end

local function load_text(text, reader)
  local path = S.tmpfile("stats.json")
  S.write(path, text)
  return assert(trace.load(path, {reader = reader}))
end

-- Ranges worth a look on a model: the whole, halves, thirds, cuts at its
-- markers (a range's ends on a marker), a range of no time, reversed ends.
local function ranges(model)
  local t0, t1 = model.t0, model.t1
  local d = t1 - t0
  local list = {{}, {t0 + d / 3, t1 - d / 3}, {t0, t0 + d / 2}, {t0 + d / 2, t1}, {t0 - 1, t1 + 1},
                {t0 + d / 4, t0 + d / 4}, {t1 - d / 5, t0 + d / 5}}
  local mts = model.marker_ts
  if #mts > 0 then
    list[#list + 1] = {mts[1], mts[#mts]}
    list[#list + 1] = {mts[(#mts + 1) // 2], t1}
    list[#list + 1] = {t0, mts[(#mts + 1) // 2]}
  end
  return list
end

local function all_ranges(model, what)
  for _, r in ipairs(ranges(model)) do
    same(model, ("%s [%s, %s]"):format(what, tostring(r[1]), tostring(r[2])), r[1], r[2])
    same(model, what .. " top 2", r[1], r[2], 2)
  end
end

-- Our format, by hand: nested slices, waits, spans, copies, awaits, markers
-- of several kinds (one at the session's very end), counters, an empty lane.
local OURS = [[
{"traceEvents":[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"caller"}},
{"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"worker 1"}},
{"ph":"X","ts":1,"dur":1,"pid":1,"tid":2,"name":"submit work","cat":"submit","args":{"job":1}},
{"ph":"X","ts":3,"dur":1,"pid":1,"tid":1,"name":"copy in","cat":"copy","args":{"job":1,"bytes":9,"category":"work"}},
{"ph":"X","ts":4,"dur":5,"pid":1,"tid":1,"name":"work","cat":"job","args":{"job":1}},
{"ph":"X","ts":4.5,"dur":2,"pid":1,"tid":1,"name":"inner","cat":"io"},
{"ph":"X","ts":5,"dur":1,"pid":1,"tid":1,"name":"parse","cat":"parse","args":{"span":1,"job":1,"piece":1}},
{"ph":"X","ts":6,"dur":2,"pid":1,"tid":1,"name":"parse","cat":"parse","args":{"span":1,"job":1,"piece":2,"unclosed":true}},
{"ph":"X","ts":8.5,"dur":3,"pid":1,"tid":1,"name":"io","cat":"io"},
{"ph":"X","ts":10,"dur":2,"pid":1,"tid":1,"name":"work","cat":"job","args":{"job":2,"failed":true,"error":"boom"}},
{"ph":"X","ts":12,"dur":1,"pid":1,"tid":1,"name":"copy out","cat":"copy","args":{"job":1,"bytes":0,"category":"work"}},
{"ph":"X","ts":2,"dur":20,"pid":1,"tid":2,"name":"wait","cat":"wait","args":{"job":1}},
{"ph":"X","ts":3,"dur":4,"pid":1,"tid":2,"name":"wait","cat":"wait","args":{"job":1}},
{"ph":"X","ts":25,"dur":3,"pid":1,"tid":2,"name":"wait","cat":"wait","args":{"job":2}},
{"ph":"b","ts":5,"pid":1,"tid":1,"name":"await","cat":"await","id2":{"local":"0x1"},"args":{"job":1,"awaits":2}},
{"ph":"e","ts":8,"pid":1,"tid":1,"name":"await","cat":"await","id2":{"local":"0x1"}},
{"ph":"i","s":"g","ts":0,"pid":1,"tid":2,"name":"tick","args":{"arg":1}},
{"ph":"i","s":"g","ts":4,"pid":1,"tid":2,"name":"tick","args":{"arg":2}},
{"ph":"i","s":"g","ts":9.5,"pid":1,"tid":2,"name":"tick","args":{"arg":9223372036854775807}},
{"ph":"i","s":"g","ts":2.5,"pid":1,"tid":2,"name":"tock","args":{"arg":"text"}},
{"ph":"i","s":"g","ts":7,"pid":1,"tid":1,"name":"tock","args":{"arg":2.5}},
{"ph":"i","s":"g","ts":7,"pid":1,"tid":9,"name":"tock"},
{"ph":"i","s":"g","ts":100,"pid":1,"tid":2,"name":"tock","args":{"arg":3}},
{"ph":"i","s":"t","ts":30,"pid":1,"tid":1,"name":"note","cat":"x"},
{"ph":"C","ts":1,"pid":1,"name":"jobs","args":{"ready":1,"running":2}},
{"ph":"C","ts":40,"pid":1,"name":"jobs","args":{"ready":3,"running":0.5}},
{"ph":"C","ts":41,"pid":1,"name":"jobs","args":{"ready":0,"running":2}},
{"ph":"C","ts":95,"pid":1,"name":"heap","args":{"KB":7}}
],
"jobqueProfile":{"version":1,"clock":"tsc","startUs":0,"stopUs":100,"lostEvents":0,"lanes":3,
 "laneInfo":[{"tid":1,"name":"worker 0","role":"worker","recorded":9,"dropped":0},
             {"tid":2,"name":"caller","role":"caller","recorded":9,"dropped":0},
             {"tid":3,"name":"worker 1","role":"worker","recorded":0,"dropped":0}],
 "categories":[{"id":1,"name":"work","color":"#112233"},{"id":2,"name":"io","color":"#445566"}],
 "markers":[{"id":1,"name":"tick"},{"id":2,"name":"tock"},{"id":3,"name":"never"}]}}
]]

-- Chrome's bare array: B/E pairs (nested), integer times, a lane of waits only.
local CHROME = [=[
[{"ph":"B","ts":1,"pid":7,"tid":7,"name":"outer","cat":"a"},
 {"ph":"B","ts":2,"pid":7,"tid":7,"name":"inner","cat":"b"},
 {"ph":"E","ts":3,"pid":7,"tid":7},
 {"ph":"E","ts":9,"pid":7,"tid":7},
 {"ph":"X","ts":5,"dur":1,"pid":7,"tid":8,"name":"wait"},
 {"ph":"X","ts":6,"dur":3,"pid":7,"tid":8,"name":"wait","cat":"wait"},
 {"ph":"X","ts":6,"dur":1,"pid":7,"tid":9,"name":"job","cat":"a"},
 {"ph":"I","ts":6,"pid":7,"tid":8,"name":"global","s":"g"},
 {"ph":"I","ts":9,"pid":7,"tid":8,"name":"global","s":"g"},
 {"ph":"i","ts":6,"pid":7,"tid":8,"name":"thread"},
 {"ph":"C","ts":7,"pid":7,"name":"mem","args":{"KB":12}},
 {"ph":"C","ts":8,"pid":7,"name":"mem","args":{"KB":-3.5}}]
]=]

-- A random trace of ours (JSON) from a seed: lanes of nested slices (jobs,
-- waits, spans, copies, other categories), instants, markers of kinds
-- with integer, float and string args, counters; times integers or not.
local function random_trace(seed)
  local state = seed
  local function rnd(m, n) -- a small LCG: the same numbers on every Lua
    state = (state * 6364136223846793005 + 1442695040888963407) & 0x7fffffffffffffff
    local r = (state >> 16) / (1 << 47)
    if not m then return r end
    if not n then m, n = 1, m end
    return m + math.floor(r * (n - m + 1))
  end
  local ints = rnd(2) == 1
  local function t(x) return ints and ("%d"):format(math.floor(x)) or ("%.3f"):format(x) end
  local ev = {}
  local cats = {"work", "io", "wait", "submit", "parse", "x"}
  local nlanes = rnd(1, 4)
  for tid = 1, nlanes do
    ev[#ev + 1] = ('{"ph":"M","pid":1,"tid":%d,"name":"thread_name","args":{"name":"%s"}}'):format(tid,
      tid == nlanes and "caller" or ("worker " .. tid))
    local at = rnd(0, 5)
    for _ = 1, rnd(0, 25) do
      local dur = rnd(0, 12)
      local cat = cats[rnd(#cats)]
      local args = ""
      local kind = rnd(6)
      if kind == 1 then
        args = (',"args":{"span":%d,"job":1,"piece":1}'):format(rnd(3))
      elseif kind == 2 then
        cat = "copy"
        args = (',"args":{"job":%d,"bytes":%d,"category":"%s"}'):format(rnd(5), rnd(0, 99), cats[rnd(2)])
      elseif kind == 3 then
        cat = "job"
        args = (',"args":{"job":%d}'):format(rnd(9))
      end
      ev[#ev + 1] = ('{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":%d,"name":"%s","cat":"%s"%s}')
        :format(t(at), t(dur), tid, cat, cat, args)
      if rnd(3) == 1 then -- a slice nested in it
        ev[#ev + 1] = ('{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":%d,"name":"in","cat":"%s"}')
          :format(t(at + dur / 3), t(dur / 2), tid, cats[rnd(#cats)])
      end
      at = at + rnd(0, 10) + (ints and 0 or rnd() * 2)
    end
    for _ = 1, rnd(0, 3) do
      ev[#ev + 1] = ('{"ph":"i","s":"t","ts":%s,"pid":1,"tid":%d,"name":"note"}'):format(t(rnd(0, 150)), tid)
    end
  end
  local kinds = {"tick", "tock", "frame"}
  for _ = 1, rnd(0, 30) do
    local arg = ({'1', '2.5', '"s"', '-7', '9007199254740993'})[rnd(5)]
    ev[#ev + 1] = ('{"ph":"i","s":"g","ts":%s,"pid":1,"tid":%d,"name":"%s","args":{"arg":%s}}')
      :format(t(rnd(0, 160) + (ints and 0 or rnd())), rnd(1, nlanes + 1), kinds[rnd(#kinds)], arg)
  end
  for _ = 1, rnd(0, 20) do
    ev[#ev + 1] = ('{"ph":"C","ts":%s,"pid":%d,"name":"c","args":{"a":%d,"b":%s}}')
      :format(t(rnd(0, 160)), rnd(2), rnd(-5, 50), t(rnd(0, 99) + rnd()))
  end
  local ours = rnd(3) > 1
  local text = '{"traceEvents":[' .. table.concat(ev, ",\n") .. "]"
  if ours then
    text = text .. ',"jobqueProfile":{"version":1,"clock":"tsc","startUs":0,"stopUs":'
      .. t(rnd(100, 170)) .. ',"lostEvents":0,"categories":[{"id":1,"name":"work","color":"#112233"}],'
      .. '"markers":[{"id":1,"name":"tick"},{"id":2,"name":"tock"}]}'
  end
  return text .. "}", rnd
end

-- A model built by hand (no loader): Lua integers and floats mixed in
-- every column, integers beyond 2^53, a counter whose n is short of its
-- columns, lanes with no slices, categories the slices may not have.
local function random_model(rnd)
  local huge = rnd(4) == 1 and (1 << 60) or 0
  local function time(x)
    if huge ~= 0 then return huge + math.floor(x) end
    local k = rnd(3)
    if k == 1 then return math.floor(x) end
    if k == 2 then return math.floor(x) + 0.0 end
    return x
  end
  local function sorted(list) table.sort(list) return list end
  local names = {"work", "io", "submit"}
  local model = {format = "chrome", t0 = time(0), t1 = time(200), lanes = {}, categories = {by_name = {}},
                 marker_kinds = {}, marker_ts = {}, marker_kind = {}, marker_arg = {}, extra_ts = {},
                 awaits = {}, failures = {}, cancels = {}, span_pieces = {}, flows = {}, counters = {},
                 copy_ts = {}, copy_dur = {}, copy_category = {}, copy_bytes = {}, copy_name = {},
                 copy_job = {}, copy_lane = {}, dropped = 0, lost = 0}
  for c, name in ipairs(names) do
    model.categories[c] = {name = name, color = "#123456"}
    model.categories.by_name[name] = model.categories[c]
  end
  local all_cats = rnd(3) == 1 and {"work", "io", "submit", "wait", "stray"} or {"work", "io", "submit", "wait"}
  for l = 1, rnd(0, 3) do
    local lane = {name = l == 1 and "caller" or ("worker " .. l), n = 0, ts = {}, dur = {}, cat = {},
                  kind = {}, job = {}, sname = {}, args = {}, instants = {}, dropped = 0, maxdur = 0}
    local starts = {}
    for i = 1, rnd(0, 20) do starts[i] = time(rnd(0, 190) + rnd()) end
    sorted(starts)
    for i, s in ipairs(starts) do
      local d = ({0, 1, 2.5, 7, 30})[rnd(5)]
      if huge ~= 0 then d = math.floor(d) end
      lane.ts[i], lane.dur[i] = s, (rnd(2) == 1 and math.tointeger(d)) or d
      lane.cat[i] = all_cats[rnd(#all_cats)]
      lane.kind[i] = ({"slice", "span", "wait", "submit", "slice"})[rnd(5)]
      lane.job[i], lane.sname[i], lane.args[i] = false, "s", false
      if lane.dur[i] > lane.maxdur then lane.maxdur = lane.dur[i] end
    end
    lane.n = #starts
    for i = 1, rnd(0, 3) do lane.instants[i] = {ts = time(rnd(0, 200))} end
    model.lanes[l] = lane
  end
  local kinds = {"tick", "tock"}
  for k = 1, rnd(0, 2) do model.marker_kinds[k] = kinds[k] end
  local mts = {}
  for i = 1, rnd(0, 25) do mts[i] = time(rnd(0, 200) + rnd()) end
  sorted(mts)
  local loose = {}
  for i, x in ipairs(mts) do
    model.marker_ts[i], model.marker_kind[i] = x, kinds[rnd(2)]
    model.marker_arg[i] = ({1, 2.5, "s", nil})[rnd(4)]
    local lane = model.lanes[rnd(0, #model.lanes)]
    if lane then
      lane.marker_ts = lane.marker_ts or {}
      lane.marker_ts[#lane.marker_ts + 1] = x
    else
      loose[#loose + 1] = x
    end
  end
  model.loose_marker_ts = loose
  for i = 1, rnd(0, 10) do model.extra_ts[i] = time(rnd(0, 200)) end
  sorted(model.extra_ts)
  for c = 1, rnd(0, 2) do
    local track = {name = "c" .. c, pid = 1, ts = {}, value = {}}
    for i = 1, rnd(0, 12) do track.ts[i] = time(rnd(0, 220)) end
    sorted(track.ts)
    for i = 1, #track.ts do track.value[i] = ({3, -2, 2.5, 1e300, math.maxinteger, 0})[rnd(6)] end
    track.n = math.max(0, #track.ts - rnd(0, 1)) -- ts[n + 1] may be there: it ends sample n
    model.counters[c] = track
  end
  for i = 1, rnd(0, 8) do
    model.copy_ts[i], model.copy_dur[i] = time(rnd(0, 200)), rnd(0, 3) + (rnd(2) == 1 and 0.5 or 0)
    model.copy_category[i], model.copy_bytes[i] = names[rnd(2)], ({3, 4.5, 0})[rnd(3)]
    model.copy_name[i], model.copy_job[i], model.copy_lane[i] = "copy in", false, model.lanes[1]
  end
  return model
end

describe("stats.compute's loops in C", function()
  teardown(function() p.profile_stop() end)

  it("are the core's: they take our traces' models (not nil)", function()
    local model = load_text(OURS)
    assert.is_true(taken(model))
    assert.is_true(taken(load_text(CHROME)))
    for _, r in ipairs(ranges(model)) do assert.is_true(taken(model, r[1], r[2])) end
  end)

  it("give the Lua's figures, text, --json and compare on hand-made traces, over ranges that cut them", function()
    for _, reader in ipairs{"native", "cjson"} do
      all_ranges(load_text(OURS, reader), "ours " .. reader)
      all_ranges(load_text(CHROME, reader), "chrome " .. reader)
    end
    local f = same(load_text(OURS), "ours")
    assert.are.equal(3, #f.markers) -- tick, tock, never
    assert.are.equal(0, f.markers[3].count)
    local empty = load_text('{"traceEvents":[]}')
    same(empty, "empty")
  end)

  it("give the Lua's figures on the fixtures", function()
    for _, path in ipairs{"spec/fixtures/seed_trace_example.json", "/work/shared/reference/seed_trace_example.json"} do
      local f = io.open(path, "rb")
      if f then
        local text = f:read("a")
        f:close()
        local model = load_text(text)
        assert.is_true(taken(model))
        all_ranges(model, path)
      end
    end
  end)

  it("give the Lua's figures on a recorded session: jobs, failures, awaits, spans, markers", function()
    local tick = p.profile_marker_id("stats tick")
    local tock = p.profile_marker_id("stats tock")
    p.profile_start(20000)
    jobque.with_job_que({workers = 2}, function(q)
      p.profile_tag(p.profile_category("stats work"))
      local jobs = {}
      for i = 1, 40 do
        p.profile_marker(i % 3 == 0 and tock or tick, i)
        jobs[i] = q:submit(function(x)
          if x % 7 == 0 then error("failed " .. x) end
          return x
        end, i)
      end
      local after = q:after({jobs[1], jobs[2]}, function() return 1 end)
      q:submit(function() return after:wait() end)
      q:pwait_all()
      p.profile_tag(0)
    end)
    p.profile_stop()
    local _, text = S.save(p)
    local model = load_text(text)
    assert.is_true(taken(model))
    all_ranges(model, "recorded")
  end)

  it("give the Lua's figures on the demo's trace (examples/tokens.lua)", function()
    local model = assert(trace.load(S.demo_trace()))
    assert.is_true(taken(model))
    all_ranges(model, "demo")
  end)

  it("give the Lua's figures on seeded random traces", function()
    local first = tonumber(os.getenv("JQ_STATS_SEED"))
    for seed = first or 1, first or (S.sanitized and 40 or 150) do
      local text, rnd = random_trace(seed)
      local ok, err = pcall(function()
        local model = load_text(text, seed % 2 == 0 and "native" or "cjson")
        all_ranges(model, "random")
        local a, b = rnd(-10, 180) + 0.5, rnd(-10, 180)
        same(model, "random range", a, b, rnd(0, 12))
      end)
      assert(ok, ("seed %d (JQ_STATS_SEED=%d replays it): %s"):format(seed, seed, tostring(err)))
    end
  end)

  it("give the Lua's figures on random models with integers and floats mixed (and integers past 2^53)", function()
    local first = tonumber(os.getenv("JQ_STATS_SEED"))
    for seed = first or 1, first or (S.sanitized and 60 or 300) do
      local _, rnd = random_trace(seed)
      local ok, err = pcall(function()
        local model = random_model(rnd)
        local base = model.t0
        for _ = 1, 4 do
          local function at()
            local x = rnd(-10, 210)
            local k = rnd(3)
            if k == 1 then return base + x end
            if k == 2 then return base + x + 0.0 end
            return base + x + 0.25
          end
          local a, b = at(), at()
          if rnd(5) == 1 then a, b = nil, nil end
          same(model, "model", a, b, rnd(0, 6))
        end
      end)
      assert(ok, ("seed %d (JQ_STATS_SEED=%d replays it): %s"):format(seed, seed, tostring(err)))
    end
  end)

  it("leave to the Lua what they do not read as Lua does, and the figures are the Lua's", function()
    local function model()
      local work, io = {name = "work", color = "#123456"}, {name = "io", color = "#654321"}
      return {format = "chrome", t0 = 0, t1 = 10, categories = {work, io, by_name = {work = work, io = io}},
              lanes = {{name = "worker 1", n = 2, ts = {1, 2}, dur = {3, 1}, cat = {"work", "io"},
                        kind = {"slice", "slice"}, job = {false, false}, instants = {}, dropped = 0, maxdur = 3}},
              marker_kinds = {"tick"}, marker_ts = {0.5}, marker_kind = {"tick"}, marker_arg = {7},
              loose_marker_ts = {0.5}, extra_ts = {}, awaits = {}, failures = {}, cancels = {}, span_pieces = {},
              flows = {}, counters = {}, copy_ts = {}, copy_dur = {}, copy_category = {}, copy_bytes = {},
              copy_name = {}, copy_job = {}, copy_lane = {}, dropped = 0, lost = 0}
    end
    assert.is_true(taken(model()))
    same(model(), "the plain model")
    local cases = {
      function(m) m.lanes[1].ts[2] = "2" end, -- a string where a time is
      function(m) m.lanes[1].cat[1] = "stray" end, -- a category compute has no number for, with units
      function(m) m.marker_kinds[2] = "tick" end, -- a kind twice
      function(m) setmetatable(m.lanes[1].dur, {}) end, -- a column with a metatable
      function(m) m.lanes[1].n = 2.0 end,
      function(m) m.lanes[1].maxdur = nil end,
      function(m) m.lanes[1].instants = {5} end,
      function(m) m.counters = {{name = "c", pid = 1, n = 2, ts = {1, 2}, value = {1, "2"}}} end,
      function(m) m.copy_ts, m.copy_dur, m.copy_category, m.copy_bytes = {1}, {1}, {1}, {1} end,
    }
    for i, change in ipairs(cases) do
      local m = model()
      change(m)
      assert.is_false(taken(m) and true or false, "case " .. i)
      same(m, "case " .. i)
    end
    -- out of range: the Lua never reads it, nor does the C
    local m = model()
    m.counters = {{name = "c", pid = 1, n = 2, ts = {1000, 1001}, value = {"x", "y"}}}
    assert.is_true(taken(m))
    same(m, "values out of range")
  end)

  it("refuse a model that is not a table, naming the argument", function()
    for _, name in ipairs{"stats_lanes", "stats_counters", "stats_copies"} do
      local err = S.err_of(C[name], nil, 0, 1)
      assert.matches(("bad argument #1 to '[%%w%%._]*%s' %%(table expected, got nil%%)"):format(name), err)
    end
    local swept = lanes_of(load_text(OURS), 0, 100)
    assert.matches("bad argument #1 to '.-' %(no such unit%)", S.err_of(swept.markers[1].row, 4))
    assert.matches("number expected, got string", S.err_of(swept.markers[1].row, "x"))
  end)

  it("keep a kind's units as userdata, each unit's table made when first read", function()
    local model = load_text(OURS)
    local f = stats.compute(model)
    local units = f.markers[1].units
    assert.are.equal(3, #units)
    assert.is_nil(rawget(units, 2))
    local u = units[2]
    assert.are.equal(u, rawget(units, 2))
    assert.are.same({index = 2, from = 4.0, to = 9.5, duration = 5.5}, {index = u.index, from = u.from, to = u.to,
                                                                        duration = u.duration})
    assert.is_nil(units[0])
    assert.is_nil(units[4])
    assert.is_nil(units[1.5])
    local n = 0
    for _ in ipairs(units) do n = n + 1 end
    assert.are.equal(3, n)
  end)
end)
