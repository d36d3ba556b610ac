-- The loader's columns stay C cells until Lua reads them (the model costs
-- a fixed number of bytes per event): a lane's, a counter track's and the
-- model's columns with no item read by trace.lua's code are native
-- (src/reader/columns.c); the first read of a field makes its Lua list
-- (once), pairs() makes them all, and the model's lists say what the
-- reference model (spec/reader/reference_model.lua) says. report's and
-- html's C paths read the cells directly: the same figures, --json and page
-- bytes as from the lists, and no column made a list. Seeded random traces:
-- a failure prints the seed (JQ_COLUMNS_SEED=n replays it).
local S = require "support"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"
local html = require "jobque_profile.page"
local graph = require "jobque_profile.graph"
local C = require "jobque_profile.reader"
local R = require "reader.reference_model"

local LANE_COLS = {"ts", "dur", "cat", "kind", "sname", "job", "args"}
local MODEL_COLS = {"copy_ts", "copy_dur", "copy_lane", "copy_category", "copy_name", "copy_job", "copy_bytes",
                    "marker_ts", "marker_kind", "marker_arg", "extra_ts", "loose_marker_ts"}

-- A value as text that tells integers from floats and floats to the bit;
-- a lane inside a list (copy_lane, failures...) by its index.
local function ser(v, out, seen, inner)
  local t = type(v)
  if t == "number" then
    out[#out + 1] = math.type(v) == "integer" and ("i" .. tostring(v)) or ("f" .. ("%a"):format(v))
  elseif t == "table" then
    if inner and rawget(v, "index") and rawget(v, "key") then
      out[#out + 1] = "lane#" .. tostring(v.index)
      return
    end
    if seen[v] then out[#out + 1] = "<seen>" return end
    seen[v] = true
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
    out[#out + 1] = "{"
    for _, k in ipairs(keys) do
      out[#out + 1] = tostring(k) .. "="
      ser(v[k], out, seen, true)
      out[#out + 1] = ";"
    end
    out[#out + 1] = "}"
  else
    out[#out + 1] = type(v) .. ":" .. tostring(v)
  end
  return out
end

local function text_of(model)
  local copy = {}
  for k, v in pairs(model) do
    if k ~= "markers" and k ~= "copies" then copy[k] = v end
  end
  return table.concat(ser(copy, {}, {}), "")
end

-- Every column of the model made a Lua list (pairs() makes an owner's).
local function all_lists(model)
  for _ in pairs(model) do end
  for _, lane in ipairs(model.lanes) do for _ in pairs(lane) do end end
  for _, c in ipairs(model.counters) do for _ in pairs(c) do end end
  return model
end

-- Loads the text twice: as the loader leaves it, and with every column
-- made a list.
local function two(text)
  local path = S.tmpfile()
  S.write(path, text)
  return assert(trace.load(path)), all_lists(assert(trace.load(path)))
end

-- The native columns of a model (owner, field) not yet made lists.
local function native_columns(model)
  local found = {}
  local function look(t, fields, what)
    for _, f in ipairs(fields) do
      if C.column_native(t, f) then
        assert.is_nil(rawget(t, f), what .. "." .. f)
        found[#found + 1] = what .. "." .. f
      end
    end
  end
  look(model, MODEL_COLS, "model")
  for i, lane in ipairs(model.lanes) do
    look(lane, LANE_COLS, "lane" .. i)
    look(lane, {"marker_ts"}, "lane" .. i)
  end
  for i, c in ipairs(model.counters) do look(c, {"ts", "value"}, "counter" .. i) end
  return found
end

-- A trace of our own shape: per job a submit, a copy in, a job slice and
-- a copy out, markers, counters; each event's numbers integers or floats
-- at random, some events the reader's Lua path reads (odd args, flows, an
-- instant, a B/E pair) when `odd` says so.
local function random_trace(seed, n, odd)
  local rng = math.random
  math.randomseed(seed)
  local ev = {}
  local function num(x) return rng(2) == 1 and ("%d"):format(x) or ("%.3f"):format(x + rng(999) / 1000) end
  local t = 0
  for j = 1, n do
    local tid = rng(4)
    t = t + rng(5)
    ev[#ev + 1] = ('{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":9,"name":"submit w","cat":"submit","args":{"job":%d}}')
      :format(num(t), num(1), j)
    ev[#ev + 1] = ('{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":%d,"name":"copy in","cat":"copy",'
      .. '"args":{"job":%d,"bytes":%d,"category":"cat%d"}}'):format(num(t + 2), num(1), tid, j, rng(100), j % 3)
    ev[#ev + 1] = ('{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":%d,"name":"cat%d","cat":"job","args":{"job":%d}}')
      :format(num(t + 3), num(rng(20)), tid, j % 3, j)
    ev[#ev + 1] = ('{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":%d,"name":"copy out","cat":"copy",'
      .. '"args":{"job":%d,"bytes":%d,"category":"cat%d"}}'):format(num(t + 25), num(1), tid, j, rng(100), j % 3)
    if rng(3) == 1 then
      ev[#ev + 1] = ('{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":9,"name":"wait","cat":"wait","args":{"job":%d}}')
        :format(num(t + 1), num(rng(30)), j)
    end
    if rng(2) == 1 then
      ev[#ev + 1] = ('{"ph":"i","s":"g","ts":%s,"pid":1,"tid":%d,"name":"%s","args":{"arg":%s}}')
        :format(num(t + rng(30)), rng(6), rng(2) == 1 and "frame" or "tick", rng(2) == 1 and num(j) or '"x"')
    end
    if rng(4) == 1 then
      ev[#ev + 1] = ('{"ph":"C","ts":%s,"pid":1,"name":"jobs","args":{"ready":%s,"running":%d}}')
        :format(num(t + rng(30)), num(rng(9)), rng(4))
    end
    if odd and rng(25) == 1 then
      local k = rng(4)
      if k == 1 then
        ev[#ev + 1] = ('{"ph":"X","ts":%s,"dur":0,"pid":1,"tid":%d,"name":"wake job","cat":"flow","args":{"job":%d}}')
          :format(num(t + 30), tid, j)
      elseif k == 2 then
        ev[#ev + 1] = ('{"ph":"X","ts":%s,"dur":2,"pid":1,"tid":%d,"name":"odd","cat":"x","args":{"k":[1]}}')
          :format(num(t + 4), tid)
      elseif k == 3 then
        ev[#ev + 1] = ('{"ph":"i","s":"t","ts":%s,"pid":1,"tid":%d,"name":"note"}'):format(num(t), tid)
      else
        ev[#ev + 1] = ('{"ph":"B","ts":%s,"pid":1,"tid":5,"name":"b"},{"ph":"E","ts":%s,"pid":1,"tid":5}')
          :format(num(t), num(t + 3))
      end
    end
  end
  return '{"traceEvents":[\n' .. table.concat(ev, ",\n") .. '\n],"jobqueProfile":{"version":1,"startUs":0,'
    .. '"stopUs":' .. (t + 100) .. ',"categories":[{"id":1,"name":"cat0","color":"#102030"}],'
    .. '"markers":[{"id":1,"name":"frame"},{"id":2,"name":"tick"}]}}'
end

local function seeds()
  local fixed = tonumber(os.getenv("JQ_COLUMNS_SEED") or "")
  if fixed then return {fixed} end
  local list = {}
  for k = 1, S.sanitized and 6 or 25 do list[k] = 7000 + k end
  return list
end

describe("the loader's columns", function()
  it("stay native through report and html: no column is made a Lua list, and the output is the lists' own", function()
    for _, seed in ipairs(seeds()) do
      local odd = seed % 2 == 0
      local ok, err = pcall(function()
        local native, lists = two(random_trace(seed, 300, odd))
        local before = native_columns(native)
        assert.is_true(odd or #before > 0)
        if not odd then -- every column of a trace read wholly by the C path is native
          for _, f in ipairs(LANE_COLS) do assert.is_truthy(C.column_native(native.lanes[1], f), f) end
          assert.is_truthy(C.column_native(native, "copy_ts"))
          assert.is_truthy(C.column_native(native, "marker_ts"))
          assert.is_truthy(C.column_native(native.counters[1], "value"))
          assert.is_nil(rawget(native, "marker_pid"))
        end
        local figures = report.json(stats.compute(native))
        local text = report.text(stats.compute(native), native)
        local page = assert(html.render(native))
        assert.are.same(before, native_columns(native)) -- nothing made a list
        assert.is_truthy(graph.build(native))
        assert.are.equal(report.json(stats.compute(lists)), figures)
        assert.are.equal(report.text(stats.compute(lists), lists), text)
        assert.are.equal(assert(html.render(lists)), page)
      end)
      if not ok then error(("seed %d (JQ_COLUMNS_SEED=%d replays it): %s"):format(seed, seed, tostring(err)), 0) end
    end
  end)

  it("are made Lua lists field by field, equal to the lists pairs() makes, and say what the reference says",
     function()
    for _, seed in ipairs(seeds()) do
      local ok, err = pcall(function()
        local odd = seed % 3 == 0
        local text = random_trace(seed, 120, odd)
        local native, lists = two(text)
        assert.is_true(odd or #native_columns(native) > 0)
        local lane = native.lanes[1]
        if C.column_native(lane, "ts") then
          local ts = lane.ts -- the first read: the list, set in the lane
          assert.are.equal(ts, rawget(lane, "ts"))
          assert.is_nil(C.column_native(lane, "ts"))
          assert.are.equal(ts, lane.ts)
          assert.are.equal(lane.n, #ts)
        end
        local summary = R.summary(native) -- (its reads make the lists, one field at a time)
        assert.is_nil(R.differ(assert(R.read(text)), summary))
        local lt, nt = text_of(lists), text_of(native)
        if lt ~= nt then
          local i = 1
          while lt:byte(i) == nt:byte(i) do i = i + 1 end
          error(("the models differ at %d:\nlists:  %s\nnative: %s"):format(i, lt:sub(i - 100, i + 60),
                                                                             nt:sub(i - 100, i + 60)))
        end
        assert.are.equal(#native_columns(lists), 0)
      end)
      if not ok then error(("seed %d (JQ_COLUMNS_SEED=%d replays it): %s"):format(seed, seed, tostring(err)), 0) end
    end
  end)

  it("are all made lists by pairs(), which then shows every field", function()
    local native = two(random_trace(11, 50, false))
    local lane = native.lanes[1]
    assert.is_truthy(C.column_native(lane, "dur"))
    local keys = {}
    for k in pairs(lane) do keys[k] = true end
    for _, f in ipairs(LANE_COLS) do
      assert.is_true(keys[f], f)
      assert.are.equal("table", type(rawget(lane, f)))
    end
    local mkeys = {}
    for k in pairs(native) do mkeys[k] = true end
    for _, f in ipairs{"copy_ts", "copy_lane", "marker_ts", "marker_arg", "extra_ts", "loose_marker_ts"} do
      assert.is_true(mkeys[f], f)
    end
    for _, f in ipairs(LANE_COLS) do assert.is_nil(C.column_native(lane, f), f) end
    -- a lane made a list reads the lanes of copy_lane back as the model's tables
    for i = 1, #native.copy_lane do assert.are.equal("table", type(native.copy_lane[i])) end
    assert.are.equal(native.copies[1].lane, native.copy_lane[1])
  end)

  it("file each lane's markers and the loose ones, whether the loader's C code or trace.lua's files them", function()
    -- markers on tid 1 (a lane: it has a slice) and tid 2 (none), out of order; the second
    -- text adds a marker with an escaped key, which trace.lua reads: the columns are lists then
    local base = '[{"ph":"X","ts":0,"dur":9,"pid":1,"tid":1,"name":"s"},'
      .. '{"ph":"i","s":"g","ts":5,"pid":1,"tid":1,"name":"m"},{"ph":"i","s":"g","ts":2,"pid":1,"tid":2,"name":"m"},'
      .. '{"ph":"i","s":"p","ts":1,"pid":1,"tid":1,"name":"m"},{"ph":"i","s":"g","ts":7,"pid":1,"tid":2,"name":"m"}'
    local native = two(base .. "]")
    assert.is_truthy(C.column_native(native.lanes[1], "marker_ts"))
    assert.is_truthy(C.column_native(native, "loose_marker_ts"))
    assert.are.same({1, 5}, native.lanes[1].marker_ts)
    assert.are.same({2, 7}, native.loose_marker_ts)
    local lua = two(base .. ',{"ph":"i","s":"g","ts":3,"pid":1,"tid":1,"n\\u0061me":"m"}]')
    assert.is_nil(C.column_native(lua, "loose_marker_ts"))
    assert.are.same({1, 3, 5}, lua.lanes[1].marker_ts)
    assert.are.same({2, 7}, lua.loose_marker_ts)
  end)

  it("refuse nothing the C readers are given: a native column passes as a list to the page's functions", function()
    local native, lists = two(random_trace(3, 40, false))
    local lane, llane = native.lanes[1], lists.lanes[1]
    local col = C.column_native(lane, "ts")
    assert.is_truthy(col)
    assert.are.equal(lane.n, #col)
    assert.matches("^jobque%.column", tostring(col))
    assert.are.equal(C.page_ns(llane.ts, llane.n, 0), C.page_ns(col, lane.n, 0))
    local v = C.column_native(native.counters[1], "value")
    assert.are.same({C.page_values(lists.counters[1].value, lists.counters[1].n)},
                    {C.page_values(v, native.counters[1].n)})
  end)
end)
