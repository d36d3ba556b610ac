-- The trace loader (src/reader/load.c with trace.lua's code for rare
-- events) on every fixture, hand-written shapes and saved traces: values
-- worked out by hand, and where it reads the shape, what the reference
-- model (spec/reader/reference_model.lua, over lua-cjson) says; bad JSON is
-- refused with the byte offset of the problem.
local S = require "support"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"
local html = require "jobque_profile.page"
local p = require "jobque_profile"
local jobque = require "jobque"
local C = require "jobque_profile.reader"
local R = require "reader.reference_model"
local cjson = require "cjson"

-- The model of `text`, read from a file (mapped) and from the string; the
-- two must agree with each other and, where it reads the shape, with the
-- reference model. `want_reference`: the reference must read it.
local function same_model(text, what, want_reference)
  local path = S.tmpfile()
  S.write(path, text)
  local model, err = trace.load(path)
  assert(model, err)
  local from_text = assert(trace.decode(text, "t.json"))
  local got = R.summary(model)
  assert.are.same(got, R.summary(from_text), what)
  local want, why = R.read(text)
  if want_reference then assert(want, (what or "trace") .. ": " .. tostring(why)) end
  if want then
    local d = R.differ(want, got)
    assert(d == nil, (what or "trace") .. ": " .. tostring(d))
  else
    assert.matches("^unsupported", why, nil, what)
  end
  return model
end

local HEAD = '{"traceEvents":[\n'
local META = [[
"jobqueProfile":{"version":1,"clock":"tsc","startUs":0,"stopUs":100,"lostEvents":0,"lanes":2,
 "laneInfo":[{"tid":1,"name":"worker 0","role":"worker","recorded":9,"dropped":0,"fullAtUs":90},
             {"tid":2,"name":"caller","role":"caller","recorded":9,"dropped":0}],
 "categories":[{"id":1,"name":"work","color":"#112233"}],"markers":[{"id":1,"name":"tick"}]}}
]]
local OURS = HEAD .. [[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"caller"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_sort_index","args":{"sort_index":1}},
{"ph":"X","ts":1,"dur":1,"pid":1,"tid":2,"name":"submit work","cat":"submit","args":{"job":1}},
{"ph":"X","ts":3,"dur":1,"pid":1,"tid":1,"name":"copy in","cat":"copy","args":{"job":1,"bytes":9,"category":"work"}},
{"ph":"X","ts":4,"dur":5,"pid":1,"tid":1,"name":"work","cat":"job","args":{"job":1},"bind_id":2,"flow_in":true},
{"ph":"X","ts":9,"dur":0,"pid":1,"tid":1,"name":"wake job","cat":"flow","args":{"job":1},"bind_id":3},
{"ph":"X","ts":5,"dur":1,"pid":1,"tid":1,"name":"parse","cat":"parse","args":{"span":1,"job":1,"piece":1}},
{"ph":"X","ts":6,"dur":2,"pid":1,"tid":1,"name":"parse","cat":"parse","args":{"span":1,"job":1,"piece":2,"unclosed":true}},
{"ph":"X","ts":10,"dur":2,"pid":1,"tid":1,"name":"work","cat":"job","args":{"job":1,"failed":true,"error":"boom \"x\"\n"}},
{"ph":"X","ts":12,"dur":1,"pid":1,"tid":1,"name":"copy out","cat":"copy","args":{"job":1,"bytes":0,"category":"work"}},
{"ph":"X","ts":2,"dur":20,"pid":1,"tid":2,"name":"wait","cat":"wait","args":{"job":1}},
{"ph":"X","ts":13,"dur":1,"pid":1,"tid":1,"name":"copy result","cat":"copy","args":5},
{"ph":"X","ts":14,"dur":1,"pid":1,"tid":1,"cat":"copy","args":{"job":2.0,"bytes":3,"category":"work"}},
{"ph":"b","ts":5,"pid":1,"tid":1,"name":"await","cat":"await","id2":{"local":"0x1"},"args":{"job":1,"awaits":2}},
{"ph":"e","ts":8,"pid":1,"tid":1,"name":"await","cat":"await","id2":{"local":"0x1"}},
{"ph":"i","s":"g","ts":1.5,"pid":1,"tid":2,"name":"tick","args":{"arg":9223372036854775807}},
{"ph":"i","s":"g","ts":1.25,"pid":1,"tid":2,"name":"tick","args":{"arg":-9223372036854775808}},
{"ph":"i","s":"p","ts":2.5,"pid":1,"tid":2,"name":"tock","args":{"arg":"text"}},
{"ph":"i","s":"g","ts":3.5,"pid":1,"tid":2,"name":"tock","args":{"arg":2.5e0}},
{"ph":"i","s":"g","ts":3.5,"pid":1,"tid":9,"name":"tock"},
{"ph":"i","s":"t","ts":30,"pid":1,"tid":1,"name":"lane full: events dropped","cat":"jobque","args":{"dropped":7}},
{"ph":"i","s":"t","ts":31,"pid":1,"tid":2,"name":"cancelled","cat":"jobque","args":{"job":5,"category":"work"}},
{"ph":"C","ts":40,"pid":1,"name":"jobs","args":{"ready":1,"running":2,"suspended":0}},
{"ph":"C","ts":41,"pid":1,"name":"jobs","args":{"ready":0.5,"running":2,"suspended":0,"note":"x"}},
{"ph":"X","ts":50,"dur":1,"pid":1,"tid":1,"name":"odd \u00e9\ud83d\ude00","cat":"work","args":{"k":[1,{"a":null}]}},
{"ph":"X","ts":"bad","pid":1,"tid":1,"name":"x"},
{"ph":"Q","ts":1,"pid":1,"tid":1,"name":"x"},
{"ph":"X","ts":1,"dur":-1,"pid":1,"tid":1,"name":"x"},
{"ph":"X","ts":1,"dur":"long","pid":1,"tid":1,"name":"x"},
7,
{"ph":"X","ts":1,"dur":2,"pid":"p","tid":[1],"name":"strange ids"},
{"ph":"X","ts":1e1,"dur":2E-1,"pid":1,"tid":1,"name":"exp","\u0063at":"escaped key"}
],
]] .. META

local CHROME = [=[
[{"ph":"B","ts":1,"pid":7,"tid":7,"name":"outer","cat":"a"},
 {"ph":"B","ts":2,"pid":7,"tid":7,"name":"inner"},
 {"ph":"E","ts":3,"pid":7,"tid":7},
 {"ph":"E","ts":9,"pid":7,"tid":7},
 {"ph":"B","ts":4,"pid":7,"tid":8,"name":"never ended"},
 {"ph":"X","ts":5,"dur":1,"pid":7,"tid":8,"name":"wait"},
 {"ph":"X","ts":6,"dur":1,"pid":7,"tid":8,"name":"job","cat":"job","args":{"job":3}},
 {"ph":"I","ts":6,"pid":7,"tid":8,"name":"global","s":"g"},
 {"ph":"i","ts":6,"pid":7,"tid":8,"name":"thread"},
 {"ph":"s","ts":6,"pid":7,"tid":8,"name":"flow","id":1},
 {"ph":"C","ts":7,"pid":7,"name":"mem","args":{"KB":12}},
 {"ph":"M","pid":7,"tid":8,"name":"thread_name","args":{"name":"eight"}}]
]=]

describe("the native trace loader", function()
  teardown(function() p.profile_stop() end)

  it("reads our own format's every kind of event", function()
    -- the reference reads it without the events of odd ids and the integers beyond 2^53
    same_model(OURS:gsub('[^\n]*strange ids[^\n]*\n', ""):gsub('[^\n]*9223372036854775[^\n]*\n', ""), "ours", true)
    local native = same_model(OURS, "ours")
    assert.are.equal(math.maxinteger, native.marker_arg[2]) -- exact, not rounded
    assert.are.equal(math.mininteger, native.marker_arg[1])
    assert.are.equal("jobs ready", native.counters[1].name)
    assert.are.same({1, 0.5}, native.counter_by_name["jobs ready"].value)
    assert.are.equal(1, #native.failures)
    assert.are.equal(2, #native.span_pieces)
    assert.are.equal("parse", native.spans[1].cat)
    assert.are.equal('boom "x"\n', native.failures[1].message)
    assert.are.equal(4, #native.copies)
    local c = native.copies[1]
    assert.are.same({3, 1, "worker 0", "work", "copy in", 1, 9}, {c.ts, c.dur, c.lane.name, c.category, c.name, c.job, c.bytes})
    assert.are.same({"copy result", 0, "job"}, {native.copies[3].name, native.copies[3].bytes, native.copies[3].category})
    assert.are.equal(1, c.lane.args[1]) -- a copy's plain args: the copy's index
    assert.are.equal(2, native.copies[4].job)
    assert.are.equal("integer", math.type(native.copies[4].job))
  end)

  it("reads Chrome's bare array form (B/E pairs, instants, flows, counters)", function()
    local native = same_model(CHROME, "chrome", true)
    assert.are.equal("chrome", native.format)
    -- by hand: lane 7:7 holds outer 1..9 and inner 2..3; 7:8 "never ended" from 4 to the end, 9
    local l = native.lanes[1]
    assert.are.same({"outer", "inner"}, {l.sname[1], l.sname[2]})
    assert.are.same({1, 8, 2, 1}, {l.ts[1], l.dur[1], l.ts[2], l.dur[2]})
    assert.are.same({"eight", 3}, {native.lanes[2].name, native.lanes[2].n})
    assert.are.same({4, 5, "never ended"}, {native.lanes[2].ts[1], native.lanes[2].dur[1], native.lanes[2].sname[1]})
  end)

  it("reads counters (the C events) in every shape (the C code reads the plain ones, trace.lua the others)",
     function()
    local ev = {}
    local function c(fields) ev[#ev + 1] = '{"ph":"C",' .. fields .. '}' end
    c('"ts":1,"pid":1,"name":"m","args":{"v":1}')
    c('"ts":2,"pid":1,"name":"m","args":{"v":"2"}') -- a string value: trace.lua reads it, into the same track
    c('"ts":3,"pid":1,"name":"m","args":{"v":3.0,"b":1e2,"B":-0.0,"a":0.25,"ab":2}')
    c('"ts":4,"name":"m","args":{"v":4}') -- no pid: pid 0's track
    c('"ts":5,"pid":1.5,"name":"m","args":{"v":5}')
    c('"ts":6,"pid":"p","name":"m","args":{"v":6}')
    c('"ts":7,"pid":1,"args":{"v":7}') -- no name: "?"
    c('"ts":8,"pid":1,"name":"m\\u0062 <b>\\n","args":{"v":8}')
    c('"ts":9,"pid":1,"name":"m","args":{"v":9,"v":10}') -- a repeated key: the last one
    c('"ts":10,"pid":1,"name":"m","args":{"v\\u0041":11}')
    c('"ts":11,"pid":1,"name":"m","args":{"t":true,"n":null,"o":{"v":1},"l":[1],"v":12}')
    c('"ts":12,"pid":1,"name":"m","args":{"value":1e300,"arg":-3e17}') -- doubles beyond 2^53
    c('"ts":13,"pid":1,"name":"m","args":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}')
    c('"ts":14,"pid":1,"name":"m","args":{}')
    c('"ts":15,"pid":1,"name":"m","args":7')
    c('"ts":16,"pid":1,"name":"m"')
    c('"ts":"x","pid":1,"name":"m","args":{"v":1}')
    c('"ts":17,"pid":1,"tid":3,"cat":"c","name":"' .. ("long "):rep(40) .. '","args":{"v":1}')
    for i = 1, 40 do -- more tracks than the loader keeps at hand, taken in turn
      c(('"ts":%d,"pid":%d,"name":"t%d","args":{"v":%d}'):format(20 + i, i % 3, i % 37, i))
    end
    for i = 1, 40 do c(('"ts":%d.5,"pid":%d,"name":"t%d","args":{"v":-%d}'):format(70 + i, i % 3, i % 37, i)) end
    local native = same_model(HEAD .. table.concat(ev, ",\n") .. "]}", "counters")
    local m = native.counter_by_name["m v"]
    assert.are.same({1, 2, 3, 10, 12}, m.value)
    assert.are.equal(math.type(1), math.type(m.value[3])) -- 3.0: an integer
    assert.are.same({100, 2}, native.counter_by_name["m b"].value)
    assert.are.same({2}, native.counter_by_name["m ab"].value)
    assert.are.same({"m B", "m a", "m ab", "m b", "m v"},
      {native.counters[2].name, native.counters[3].name, native.counters[4].name, native.counters[5].name,
       native.counters[1].name})
  end)

  it("tells an event's keys whatever their order, length or escapes (keys read a word at a time)",
     function()
    local ev = {}
    local function e(text) ev[#ev + 1] = text end
    -- our writer's order, then others
    e('{"ph":"X","ts":1,"dur":2,"pid":1,"tid":1,"name":"work","cat":"job","args":{"job":1}}')
    e('{"args":{"job":2},"cat":"job","name":"work","tid":1,"pid":1,"dur":2,"ts":3,"ph":"X"}')
    e('{"tid":2,"args":{"category":"work","bytes":5,"job":3},"ts":4,"name":"copy in","ph":"X","cat":"copy","dur":1}')
    -- keys that look like ours: escaped, longer, shorter, a byte off
    e('{"\\u0070h":"X","ts":5,"dur":1,"pid":1,"tid":1,"name":"esc ph","cat":"job","args":{"job":4}}')
    e('{"ph":"X","ts":6,"dur":1,"pid":1,"tid":1,"na\\u006de":"esc name","cat":"job","args":{"j\\u006fb":5}}')
    e('{"ph":"X","ts":7,"dur":1,"pid":1,"tid":1,"name":"long keys","cat":"job","args":{"job":6},"phX":1,' ..
      '"tsx":2,"durs":3,"pids":4,"name2":5,"args2":6,"cat ":7,"c":8,"p":9,"":10,"abcdefg":11,"abcdefgh":12,' ..
      '"abcdefghijklmno":13,"abcdefghijklmnop":14,"abcdefghijklmnopq":15,"abcdefg\\u0068":16,"nam":17}')
    e('{"ph":"X","ts":8,"dur":1,"pid":1,"tid":1,"name":"copy x","cat":"copy","args":{"job":7,"bytes":1,' ..
      '"categoryy":"work"}}')
    e('{"ph":"X","ts":9,"dur":1,"pid":1,"tid":1,"name":"copy y","cat":"copy","args":{"job":8,"bytes":1,' ..
      '"categor":"work"}}')
    e('{"ph":"X","ts":10,"dur":1,"pid":1,"tid":1,"name":"copy z","cat":"copy","args":{"jo":1,"byte":2,"jobs":3}}')
    e('{"ph":"X","ts":11,"dur":1,"pid":1,"tid":1,"name":"twice","cat":"job","args":{"job":9},"args":{"job":10}}')
    e('{"ph":"X","ts":12,"dur":1,"pid":1,"tid":1,"name":"ctl\\u0001","cat":"job","args":{"job\\u0000":11}}')
    e('{"ph":"i","s":"g","ts":13,"pid":1,"tid":2,"name":"tick","args":{"arg":1,"ar":2,"argh":3}}')
    e('{"s":"p","ph":"i","name":"tock","ts":14,"tid":2,"pid":1,"args":{"ar\\u0067":4}}')
    -- counters: their args' keys kept as read, in any order, repeated, escaped, ours, too many
    e('{"ph":"C","ts":15,"pid":1,"name":"m","args":{"b":1,"a":2,"c":3}}')
    e('{"ph":"C","ts":16,"pid":1,"name":"m","args":{"job":1,"bytes":2,"category":3,"arg":4}}')
    e('{"ph":"C","ts":17,"pid":1,"name":"m","args":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8}}')
    e('{"ph":"C","ts":18,"pid":1,"name":"m","args":{"a":1},"args":{"b":5}}')
    e('{"ph":"C","ts":19,"pid":1,"name":"m","args":{"a":1,"a":9}}')
    e('{"ph":"C","ts":20,"pid":1,"name":"m","args":{"\\u0061":7}}')
    e('{"ph":"C","ts":21,"pid":1,"name":"m","args":{"abcdefghijklmnopq":1,"abcdefgh":2,"":3}}')
    e('{"args":{"b":8},"name":"m","pid":1,"ts":22,"ph":"C"}')
    e('{"ph":"C","ts":23,"pid":1,"name":"m","args":{"b":1,"c":{"a":1,"b":2},"a":[1,2]}}')
    -- the last keys near the end of the text
    e('{"ph":"C","ts":24,"name":"m","args":{"a":3}}')
    local text = "[" .. table.concat(ev, ",\n") .. "]"
    local native = same_model(text, "keys", true)
    assert.are.same({1, 2, 5, 8, 1}, native.counter_by_name["m b"].value)
    for cut = 1, 24 do -- events near the end cut short: the checked pass's error
      local model = trace.decode(text:sub(1, #text - cut), "t.json")
      assert.is_nil(model)
    end
  end)

  it("reads the fixtures and the seed's example (its chained slices under their chain's category)", function()
    local dir = io.popen("ls spec/fixtures/*.json")
    for path in dir:lines() do same_model(S.read(path), path) end
    dir:close()
    local model = same_model(S.read("spec/fixtures/seed_trace_example.json"), "seed", true)
    local cats = {}
    for _, c in ipairs(model.categories) do cats[#cats + 1] = c.name end
    assert.are.same({"matmul", "attention", "fifo_job", "wake", "wait"}, cats)
  end)

  it("reads a recorded session: jobs, failures, dependencies, awaits, markers", function()
    local tick = p.profile_marker_id("native tick")
    p.profile_start(20000)
    jobque.with_job_que({workers = 2}, function(q)
      p.profile_tag(p.profile_category("native work"))
      local jobs = {}
      for i = 1, 50 do
        p.profile_marker(tick, i)
        jobs[i] = q:submit(function(x)
          if x % 7 == 0 then error("failed " .. x) end
          return x
        end, i)
      end
      local after = q:after({jobs[1], jobs[2]}, function() return 1 end)
      q:submit(function()
        return after:wait()
      end)
      q:pwait_all()
      p.profile_tag(0) -- the caller's tag outlives the spec otherwise
    end)
    p.profile_stop()
    local _, text = S.save(p)
    local model = same_model(text, "recorded", true)
    assert.are.equal(50, #model.marker_ts)
    assert.are.equal(7, #model.failures) -- 7, 14, ..., 49
  end)

  it("reads the demo's trace (examples/tokens.lua)", function()
    same_model(S.read(S.demo_trace()), "demo")
  end)

  it("puts a lane's slices in time order, ties in file order, whether C or trace.lua read them", function()
    local function x(ts, name, args)
      return ('{"ph":"X","ts":%d,"dur":1,"pid":1,"tid":1,"name":"%s","args":%s}'):format(ts, name, args or "{}")
    end
    -- by C alone: a 5, b 3, d 5 -> b, a, d
    local m = assert(trace.decode("[" .. x(5, "a") .. "," .. x(3, "b") .. "," .. x(5, "d") .. "]"))
    assert.is_truthy(C.column_native(m.lanes[1], "ts"))
    assert.are.same({"b", "a", "d"}, {m.lanes[1].sname[1], m.lanes[1].sname[2], m.lanes[1].sname[3]})
    -- c's args (a list in them) are trace.lua's to read: the lane's columns are lists, sorted in Lua
    m = assert(trace.decode("[" .. x(5, "a") .. "," .. x(3, "b") .. "," .. x(5, "c", '{"k":[1]}') .. "]"))
    assert.is_nil(C.column_native(m.lanes[1], "ts"))
    assert.are.same({"b", "a", "c"}, {m.lanes[1].sname[1], m.lanes[1].sname[2], m.lanes[1].sname[3]})
    assert.are.same({3, 5, 5}, {m.lanes[1].ts[1], m.lanes[1].ts[2], m.lanes[1].ts[3]})
  end)

  it("reads every shape itself: empty files, top values that are no trace, escaped keys, events as {}", function()
    local cases = {
      {"", "t.json: not a trace: the file is empty"},
      {" \n", "t.json: not a trace: the file is empty (only white space)"},
      {"5", 't.json: not a trace: the JSON is a number, not an object with a "traceEvents" array'},
      {'"x"', 't.json: not a trace: the JSON is a string, not an object with a "traceEvents" array'},
      {"null", 't.json: not a trace: the JSON is a null, not an object with a "traceEvents" array'},
      {"false", 't.json: not a trace: the JSON is a boolean, not an object with a "traceEvents" array'},
      {'{"events":[]}', 't.json: not a trace: no "traceEvents" array'},
      {'{"traceEvents":null}', 't.json: not a trace: "traceEvents" is not an array (it is null)'},
      {'{"traceEvents":{"a":1}}', 't.json: not a trace: "traceEvents" is not an array (it is an object)'},
      {'{"traceEvents":"[]"}', 't.json: not a trace: "traceEvents" is not an array (it is a string)'},
      {'{"traceEvents":7}', 't.json: not a trace: "traceEvents" is not an array (it is a number)'},
      {'{"traceEvents":true}', 't.json: not a trace: "traceEvents" is not an array (it is a boolean)'},
      -- the last "traceEvents" counts, its key escaped or not
      {'{"trace\\u0045vents":[],"traceEvents":5}', 't.json: not a trace: "traceEvents" is not an array (it is a number)'},
    }
    for _, c in ipairs(cases) do
      local model, err = trace.decode(c[1], "t.json")
      assert.is_nil(model, c[1])
      assert.are.equal(c[2], err)
    end
    local path = S.tmpfile("empty.json")
    S.write(path, "")
    assert.are.same({nil, path .. ": not a trace: the file is empty"}, {trace.load(path)})
    assert.are.same({nil, "cannot read /: Is a directory"}, {trace.load("/")})
    local m = assert(trace.decode('{"traceEvents":{}}', "t.json")) -- an empty object: no events
    assert.are.same({0, 0, "chrome"}, {m.nevents, #m.lanes, m.format})
    m = assert(trace.decode('{"traceEvents":[],"trace\\u0045vents":[{"ph":"X","ts":2,"dur":3,"name":"a"}],'
                            .. '"jobque\\u0050rofile":{"startUs":0,"stopUs":9}}', "t.json"))
    assert.are.same({1, "jobque", 0, 9, "a"}, {m.nevents, m.format, m.t0, m.t1, m.lanes[1].sname[1]})
  end)

  it("refuses JSON that is not JSON with the byte offset of the problem (from 0)", function()
    local cases = {
      {'{"traceEvents":[{"ph":"X",}]}', 26},
      {'{"traceEvents":[{"ph":"X"}]', 27},
      {'{"traceEvents":[{"ph":"X","ts":01}]}', 32},
      {'{"traceEvents":[{"ph":"X","ts":1.}]}', 33},
      {'{"traceEvents":[{"name":"\\ud800"}]}', 25},
      {'{"traceEvents":[{"name":"\\x"}]}', 25},
      {'{"traceEvents":[{"name":"a\tb"}]}', 26},
      {'{"traceEvents":[]} x', 19},
      {'{"traceEvents":[' .. ("["):rep(2000), 1015},
      {'{"traceEvents":[{"ts":1e', 24},
    }
    for _, c in ipairs(cases) do
      local model, err = trace.decode(c[1], "t.json")
      assert.is_nil(model, c[1])
      assert.matches("^t%.json: not JSON %(offset " .. c[2] .. ": ", err)
    end
  end)

  it("reads strings and numbers as RFC 8259 says: escapes, surrogate pairs, exponents, 64-bit integers", function()
    local _, meta = C.load_trace({begin = function(m) return nil, m end}, nil,
      [[{"traceEvents":[],"jobqueProfile":{"s":"\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac\ud834\udd1e",
        "i":-9223372036854775808,"j":9223372036854775807,"big":9223372036854775808,"e":1.5e-3,"E":2E+2,
        "f":0.1,"long":123456789012345678901234567890.5e-20,"n":null}}]])
    assert.are.equal('"\\/\b\f\n\r\tA\195\169\226\130\172\240\157\132\158', meta.s)
    assert.are.equal(math.mininteger, meta.i)
    assert.are.equal(math.maxinteger, meta.j)
    assert.are.equal("float", math.type(meta.big))
    assert.are.equal(2.0 ^ 63, meta.big)
    assert.are.equal(1.5e-3, meta.e)
    assert.are.equal(200.0, meta.E)
    assert.are.equal(0.1, meta.f)
    assert.are.equal(1234567890.123456789, meta.long)
    assert.are.equal(cjson.null, meta.n) -- JSON's null: the light userdata lua-cjson's null is too
  end)

  it("reads numbers of 16 to 19 digits as strtod does: binary fractions (our times) and others", function()
    -- binary fractions beyond 2^53 as decimals (2048ths of a us, the largest below 2^42 us, a
    -- 2^-27), then numbers that are none (one digit more, an odd last digit, 2^53 + 1)
    local texts = {"1365095.783203125", "4398046511103.99951171875", "-123456789.00048828125",
                   "0.000000007450580596923828125", "10000000.0000000000", "1365095.7832031251",
                   "1365095.7832031255", "9007199254740993.5", "0.1234567890123456789"}
    local meta = select(2, C.load_trace({begin = function(m) return nil, m end}, nil,
      '{"traceEvents":[],"jobqueProfile":{"x":[' .. table.concat(texts, ",") .. ']}}'))
    for i, text in ipairs(texts) do
      assert.are.equal(tonumber(text), meta.x[i], text)
    end
  end)

  it("shows progress on stderr while a long trace loads, only on a terminal, and not with --quiet", function()
    if not os.execute("command -v script >/dev/null 2>&1") then return pending("no script command") end
    local parts = {}
    for i = 1, 400000 do parts[i] = ('{"ph":"X","ts":%d,"dur":1,"pid":1,"tid":1,"name":"n"}'):format(i) end
    local path = S.tmpfile("long.json")
    S.write(path, "[" .. table.concat(parts, ",") .. "]") -- 23 MB
    local function stderr_of(cmd, tty)
      local out = S.tmpfile("err.txt")
      local lua = os.getenv("JQ_LUA") or "lua5.4"
      local line = ("LUA_CPATH='%s/?.so;;' %s lua/jobque-profile.lua %s >/dev/null 2>'%s'")
        :format(os.getenv("JQ_BUILD") or "build", lua, cmd, out)
      if tty then -- stderr on a terminal: script's
        line = ("script -qc \"LUA_CPATH='%s/?.so;;' %s lua/jobque-profile.lua %s >/dev/null\" /dev/null >'%s'")
          :format(os.getenv("JQ_BUILD") or "build", lua, cmd, out)
      end
      assert(os.execute(line))
      return S.read(out)
    end
    local shown = stderr_of("report '" .. path .. "'", true)
    assert.matches("reading [^\n]*long%.json: %d+%% of 23 MB", shown)
    assert.matches("\r\27%[K$", shown) -- the line cleared at the end
    assert.are.equal("", stderr_of("report --quiet '" .. path .. "'", true))
    assert.are.equal("", stderr_of("report '" .. path .. "'", false))
  end)

  it("puts a copy's args on the page as the JSON of any other args (keys sorted, integers plain)", function()
    local text = HEAD .. [[
{"ph":"X","ts":3,"dur":1,"pid":1,"tid":1,"name":"copy in","cat":"copy","args":{"job":1,"bytes":9.0,"category":"a\"<b"}},
{"ph":"X","ts":4,"dur":1,"pid":1,"tid":1,"name":"copy out","cat":"copy","args":{"job":1,"bytes":9,"category":"w","x":1}}
],
]] .. META
    local page = html.render(assert(trace.decode(text, "t")))
    assert.truthy(page:find('{"bytes":9,"category":"a\\"\\u003cb","job":1}', 1, true))
    assert.truthy(page:find('{"bytes":9,"category":"w","job":1,"x":1}', 1, true))
  end)

  it("writes the page's times from C as the Lua writer rounds them (integer ns since t0)", function()
    assert.are.equal("250,1000,2750,-1250", C.page_ns({0.5, 1.25, 3, -1}, 4, 0.25))
    assert.are.equal("", C.page_ns({}, 0, 0))
    assert.are.equal("0,1", C.page_ns({0.0004, 0.0006, 9}, 2, 0)) -- n columns only
    assert.matches("item 2 is not a number", S.err_of(C.page_ns, {1, "x"}, 2, 0))
    assert.matches("item 1 is out of range", S.err_of(C.page_ns, {1e300}, 1, 0))
  end)

  it("writes a lane's page columns from C (copies, job ids, failures, other args)", function()
    local native = assert(trace.decode(OURS, "t.json"))
    local from_c = html.render(native)
    assert.truthy(from_c:find('{"bytes":9,"category":"work","job":1}', 1, true))
    local env = {cat_index = {}, names = {}, name_index = {}, args = {}, arg_index = {}, keys = {}, key_index = {}}
    assert.matches("slice 1's category has no index", S.err_of(C.page_lane, {"x"}, {"n"}, {false}, {false}, 1, env))
    env.cat_index.x = 0
    assert.are.same({"0,0", "0,1", "-1,-2", "0,0", "0,7"},
      {C.page_lane({"x", "x"}, {"n", "m"}, {false, false}, {false, 7}, 2, env)})
    assert.are.same({"n", "m"}, env.names)
    assert.are.same({"job"}, env.keys)
    assert.are.same({"", "", "", "", ""}, {C.page_lane({}, {}, {}, {}, 0, env)})
  end)

  it("writes the markers' page columns from C (every kind of arg, markup in names)", function()
    local text = HEAD .. [[
{"ph":"i","s":"g","ts":1,"pid":1,"tid":1,"name":"m<1>","args":{"arg":"str<ing>\u2028"}},
{"ph":"i","s":"g","ts":2,"pid":1,"tid":1,"name":"m<1>","args":{"arg":9007199254740993}},
{"ph":"i","s":"g","ts":3,"pid":1,"tid":1,"name":"m2","args":{"arg":1.5}},
{"ph":"i","s":"g","ts":3.7,"pid":1,"tid":1,"name":"m2","args":{"arg":3.0}},
{"ph":"i","s":"g","ts":3.8,"pid":1,"tid":1,"name":"m2","args":{"arg":-9007199254740993}},
{"ph":"i","s":"g","ts":3.9,"pid":1,"tid":1,"name":"m2","args":{"arg":1e300}},
{"ph":"i","s":"g","ts":4.1,"pid":1,"tid":1,"name":"m2","args":{"arg":"42"}},
{"ph":"i","s":"g","ts":4.2,"pid":1,"tid":1,"name":"m2"},
{"ph":"C","ts":1,"pid":"p<1>","tid":1,"name":"c<x>","args":{"v\u2028":3}},
{"ph":"X","ts":5,"dur":1,"pid":1,"tid":1,"name":"s\u2029","cat":"c<at>","args":{"k<":"v>"}}
],
]] .. META
    do
      local model = assert(trace.decode(text, "t<>"))
      local from_c = html.render(model)
      assert.truthy(from_c:find('"ma":["str\\u003cing\\u003e\\u2028","9007199254740993",1.5,3,'
                                .. '"-9007199254740993",1e+300,"42",null]', 1, true))
      local data = from_c:match('<script[^>]*id="data"[^>]*>(.-)</script>') or from_c
      assert.falsy(data:find("[<>]")) -- nothing in the data can end its element
      assert.falsy(data:find("\226\128[\168\169]"))
    end
    local env = {kinds = {}, kind_index = {}, other = function(v) return '"' .. tostring(v) .. '"' end}
    assert.are.same({"0,1000", "0,1", '"true",7'}, {C.page_markers({1, 2}, {"a", "b"}, {true, 7}, 2, 1, env)})
    assert.are.same({"a", "b"}, env.kinds)
    assert.matches("time 2 is not a number", S.err_of(C.page_markers, {1, "x"}, {"a", "a"}, {}, 2, 0, env))
    assert.matches("time 1 is out of range", S.err_of(C.page_markers, {1e300}, {"a"}, {}, 1, 0, env))
  end)

  it("writes a counter track's values for the page from C: integers plain, floats to 17 digits, min and max", function()
    local v = {1, 2.5, 3.0, -0.0, 1e300, 2.0 ^ 63, -2.0 ^ 63, math.maxinteger, 0.1, 7}
    local text, lo, hi = C.page_values(v, 9)
    assert.are.equal("1,2.5,3,0,1.0000000000000001e+300,9.2233720368547758e+18,-9223372036854775808,"
                     .. "9223372036854775807,0.10000000000000001", text)
    assert.are.equal(-2.0 ^ 63, lo)
    assert.are.equal("float", math.type(lo)) -- as it is in the track
    assert.are.equal(1e300, hi)
    assert.are.same({"", math.huge, -math.huge}, {C.page_values({}, 0)})
    assert.are.same({"5", 5, 5}, {C.page_values({5}, 1)})
    assert.matches("item 2 is not a number", S.err_of(C.page_values, {1, "2"}, 2))
  end)

  it("writes integers of every length as %d does (the page's own digit routine)", function()
    local seed = tonumber(os.getenv("JQ_SEED") or "") or os.time()
    math.randomseed(seed)
    local list, want = {}, {}
    for digits = 1, 19 do
      for _ = 1, 40 do
        local v = math.random(0, 9)
        for _ = 2, digits do v = v * 10 + math.random(0, 9) end
        if math.random(2) == 1 then v = -v end
        list[#list + 1] = v
      end
      list[#list + 1] = math.tointeger(10 ^ (digits - 1)) -- each power of ten, and the number before it
      list[#list + 1] = math.tointeger(10 ^ (digits - 1)) - 1
    end
    list[#list + 1], list[#list + 2] = math.maxinteger, math.mininteger
    for i, v in ipairs(list) do want[i] = ("%d"):format(v) end
    assert.are.equal(table.concat(want, ","), (C.page_values(list, #list)), "seed " .. seed)
    local ns = {}
    for i, v in ipairs(list) do ns[i] = v // 1000 / 1e6 end -- times in us: page_ns's integer nanoseconds
    local text = C.page_ns(ns, #ns, 0)
    local i = 0
    for n in text:gmatch("[^,]+") do
      i = i + 1
      assert.are.equal(("%d"):format(math.floor(ns[i] * 1000 + 0.5)), n, "seed " .. seed)
    end
    assert.are.equal(#ns, i)
  end)

  -- A random trace (seeded) mixing the events the loader reads itself
  -- (slices, copies, markers, plain counters) with ones it leaves to the
  -- reader's Lua code, some of which add to the same columns (an odd slice,
  -- an "E", a counter with a string value, an escaped key), on few lanes,
  -- with times out of order and ties.
  local function random_trace(rnd, ours)
    local ev = {}
    local function ts() return rnd(0, 40) + (rnd(0, 1) == 0 and 0 or rnd(0, 999) / 1000) end
    local function lane() return ('"pid":%d,"tid":%d'):format(rnd(1, 2), rnd(1, 3)) end
    for _ = 1, rnd(20, 160) do
      local k = rnd(1, 14)
      if k <= 3 then
        local cat = ({"job", "submit", "wait", "work", "copy"})[rnd(1, 5)]
        local args = cat == "copy" and ({'{"job":%d,"bytes":%d,"category":"work"}', '{"job":%d}', '{"bytes":%d}'})[rnd(1, 3)]
                     or '{"job":%d}'
        ev[#ev + 1] = ('{"ph":"X","ts":%s,"dur":%d,%s,"name":"n%d","cat":"%s","args":%s}'):format(ts(), rnd(0, 5), lane(),
          rnd(1, 4), cat, args:format(rnd(1, 9), rnd(0, 99)))
      elseif k == 4 then -- read by Lua: a failed slice
        ev[#ev + 1] = ('{"ph":"X","ts":%s,"dur":1,%s,"name":"w","cat":"job","args":{"job":%d,"failed":true}}')
          :format(ts(), lane(), rnd(1, 9))
      elseif k == 5 then
        ev[#ev + 1] = ('{"ph":"B","ts":%s,%s,"name":"b%d"}'):format(ts(), lane(), rnd(1, 3))
      elseif k == 6 then
        ev[#ev + 1] = ('{"ph":"E","ts":%s,%s}'):format(ts(), lane())
      elseif k <= 8 then
        local arg = ({'"arg":%d', '"arg":"s%d"', '"arg":%d.5', '"other":%d'})[rnd(1, 4)]:format(rnd(1, 9))
        ev[#ev + 1] = ('{"ph":"i","s":"g","ts":%s,%s,"name":"m%d","args":{%s}}'):format(ts(), lane(), rnd(1, 2), arg)
      elseif k == 9 then -- a marker read by Lua (an escaped key)
        ev[#ev + 1] = ('{"ph":"i","s":"p","ts":%s,%s,"n\\u0061me":"m1"}'):format(ts(), lane())
      elseif k <= 11 then
        ev[#ev + 1] = ('{"ph":"C","ts":%s,"pid":%d,"name":"c%d","args":{"a":%d,"b":%d.25}}'):format(ts(), rnd(1, 2),
          rnd(1, 2), rnd(0, 9), rnd(0, 9))
      elseif k == 12 then -- a counter read by Lua (a string value)
        ev[#ev + 1] = ('{"ph":"C","ts":%s,"pid":1,"name":"c1","args":{"a":"%d"}}'):format(ts(), rnd(0, 9))
      elseif k == 13 then
        ev[#ev + 1] = ('{"ph":"i","s":"t","ts":%s,%s,"name":"wake"}'):format(ts(), lane())
      else
        ev[#ev + 1] = ('{"ph":"f","ts":%s,%s,"name":"flow","cat":"flow","id":%d}'):format(ts(), lane(), rnd(1, 9))
      end
    end
    return HEAD .. table.concat(ev, ",\n") .. "\n]" .. (ours and ",\n" .. META or "}\n")
  end

  it("reads random traces mixing the events C reads with ones Lua reads, out of order, as the reference does",
     function()
    local seed = tonumber(os.getenv("JQ_SEED") or "") or os.time()
    local rnd = math.random
    math.randomseed(seed)
    for r = 1, 40 do
      local text = random_trace(rnd, r % 2 == 0)
      local ok, err = pcall(same_model, text, ("random trace %d (seed %d)"):format(r, seed), true)
      assert(ok, ("seed %d, trace %d: %s"):format(seed, r, tostring(err)))
    end
  end)

  it("reads the metadata wherever it is: before the events, twice, null, or a guess at the end that is wrong", function()
    local EV = [[{"ph":"X","ts":1,"dur":2,"pid":1,"tid":1,"name":"work","cat":"job","args":{"job":1}},
{"ph":"i","s":"g","ts":2,"pid":1,"tid":2,"name":"tick","args":{"arg":1}}]]
    local M1 = [["jobqueProfile":{"version":1,"startUs":0,"stopUs":50,"categories":[{"id":1,"name":"work"}]}]]
    local M2 = [["jobqueProfile":{"version":1,"startUs":0,"stopUs":90,"markers":[{"id":1,"name":"tick"}]}]]
    local shapes = {
      "{" .. M1 .. ',"traceEvents":[' .. EV .. "]}",
      "{" .. M1 .. ',"traceEvents":[' .. EV .. "]," .. M2 .. "}",
      '{"traceEvents":[' .. EV .. "]," .. M2 .. ',"other":[1,2,{"x":"y"}]}',
      '{"traceEvents":[' .. EV .. '],"jobqueProfile":null}',
      '{"traceEvents":[' .. EV .. '],"jobqueProfile":{"version":1,"laneInfo":5},' .. M2 .. "}",
      -- a key with an escaped quote that ends like the metadata's, and no metadata
      '{"traceEvents":[' .. EV .. ',{"ph":"M","args":{"x\\"jobqueProfile":{"version":1,"startUs":0,"stopUs":7}}}]}',
      '{"traceEvents":[' .. EV .. '],"z":{"x\\"jobqueProfile":{"version":1}}}',
      -- two event arrays: the last one counts
      '{"traceEvents":[' .. EV .. '],"traceEvents":[{"ph":"X","ts":5,"dur":1,"name":"other"}],' .. M1 .. "}",
      "\n [" .. EV .. "] \n",
      -- other keys as long as the two the loader looks for (13 and 11 bytes), before them
      '{"traceMetadata":{"version":1,"startUs":0,"stopUs":7},"traceEvents":[' .. EV .. "]}",
      '{"stackFrames":[{"ph":"X","ts":5,"dur":1,"name":"other"}],"traceEvents":[' .. EV .. "]," .. M1 .. "}",
    }
    for i, text in ipairs(shapes) do same_model(text, "shape " .. i, true) end
    -- (by hand: the first is Chrome's, with no session; in the second, M1's stop,
    -- 50 us, ends the session and "work" at 1 us is the one slice)
    local m = trace.decode(shapes[#shapes - 1])
    assert.same({"chrome", "nil"}, {m.format, type(m.session)})
    m = trace.decode(shapes[#shapes])
    assert.same({50, 1, 1}, {m.session.stop, m.lanes[1].n, m.lanes[1].ts[1]})
  end)

  it("says the first JSON problem's offset even when an event before it is refused or the metadata is bad", function()
    local bad_time = '{"ph":"X","ts":1e300,"dur":1,"name":"n"}'
    local cases = {
      {'{"traceEvents":[' .. bad_time .. ',{"ph":"X","ts":1,}]}', "}]}"},
      {'{"traceEvents":[' .. bad_time .. '],"jobqueProfile":{"version":1,}}', "}}"},
      {'{"traceEvents":[{"ph":"X","ts":1,"dur":1}],"jobqueProfile":{"version":1},"x":[1,]}', "]}"},
      {'{"traceEvents":[{"ph":"X","ts":1,"dur":1},{"ph":"X","ts":01}],"jobqueProfile":{"startUs":"x"}}', "1}]"},
      {'{"traceEvents":[{"ph":"X","ts":1,"dur":1}],"jobqueProfile":{"startUs":"x"}} [', "%[$"},
    }
    for _, c in ipairs(cases) do
      local model, err = trace.decode(c[1], "t.json")
      assert.is_nil(model, c[1])
      local off = c[1]:find(c[2]) - 1
      assert.matches("^t%.json: not JSON %(offset " .. off .. ": ", err, nil, c[1])
    end
    -- valid JSON: the refused event's message
    local text = '{"traceEvents":[' .. bad_time .. '],"jobqueProfile":{"version":1}}'
    local _, err = trace.decode(text, "t.json")
    assert.are.equal('t.json: event #1 ("n"): "ts" is 1e+300 us, out of range (a time must be within +-3e+15 us; '
                     .. "is the file damaged?)", err)
  end)
end)

-- Corners of JSON where two readers of it once gave different answers.
describe("the loader, on the corners of JSON", function()
  local function with_model(text, f)
    local model, err = trace.decode(text, "t.json")
    f(model, err)
  end

  it("read integers beyond 2^53 exactly, and -0 as 0, wherever they are (tids, args, counter keys, times)", function()
    local big, big2 = 9007199254740993, 1152921504606846976 -- 2^53 + 1; 2^60, which a double holds
    local text = '[{"ph":"X","ts":-0,"dur":5,"pid":1,"tid":9007199254740993,"name":"s",'
                 .. '"args":{"n":9007199254740993,"m":1152921504606846976,"z":-0,"w":100000000000000}},\n'
                 .. '{"ph":"C","ts":1,"pid":1,"name":"c","args":{"big":9007199254740993,"zero":-0}},\n'
                 .. '{"ph":"i","s":"g","ts":2,"pid":1,"tid":1,"name":"k","args":{"arg":-0}}]'
    with_model(text, function(m, err)
      assert(m, err)
      local lane = m.lanes[1]
      assert.are.equal("integer", math.type(lane.tid))
      assert.is_true(lane.tid == big)
      assert.are.equal("thread 9007199254740993", lane.name)
      local args = lane.args[1]
      assert.are.same({"integer", "integer", "integer", "integer"},
                      {math.type(args.n), math.type(args.m), math.type(args.z), math.type(args.w)})
      assert.is_true(args.n == big and args.m == big2 and args.z == 0 and args.w == 100000000000000)
      assert.are.equal(math.huge, 1 / lane.ts[1]) -- 0, not -0
      local c = m.counter_by_name["c big"]
      assert.are.equal("integer", math.type(c.value[1]))
      assert.is_true(c.value[1] == big)
      assert.are.equal(math.huge, 1 / m.counter_by_name["c zero"].value[1])
      assert.are.equal(math.huge, 1 / m.marker_arg[1])
      local js = report.json(stats.compute(m))
      assert.matches('"max":9007199254740993,', js, 1, true)
      local page = html.render(m)
      assert.matches('"n":9007199254740993', page, 1, true)
      assert.matches('"m":1152921504606846976', page, 1, true)
      assert.matches('"w":100000000000000', page, 1, true)
      local data = page:match('<script[^>]*id="data"[^>]*>(.-)</script>')
      assert.falsy(data:find("-0", 1, true))
    end)
    same_model(text, "big integers")
  end)

  it("refuse what RFC 8259 refuses with the same words: a raw tab, bytes after the JSON, 1., a byte order mark", function()
    local cases = {
      {'{"traceEvents":[{"ph":"X","ts":1,"name":"a\tb"}]}', 42, "control character in a string"},
      {'{"traceEvents":[{"ph":"X","ts":1,"name":"a\1b"}]}', 42, "control character in a string"},
      {'{"traceEvents":[{"ph":"X","ts":1,"dur":2}]}\0garbage', 43, "text after the JSON value"},
      {'{"traceEvents":[{"ph":"X","ts":1,"dur":2}]} x', 44, "text after the JSON value"},
      {'[{"ph":"X","ts":1.,"dur":2}]', 18, "bad number"},
      {'[{"ph":"X","ts":1.e5,"dur":2}]', 18, "bad number"},
      {'\239\187\191{"traceEvents":[]}', 0,
       "a UTF%-8 byte order mark, which JSON does not allow: remove the first 3 bytes"},
    }
    for _, c in ipairs(cases) do
      local errs = {}
      with_model(c[1], function(m, err)
        assert.is_nil(m, c[1])
        assert.matches("^t%.json: not JSON %(offset " .. c[2] .. ": " .. c[3], err, nil, c[1])
        errs[#errs + 1] = err
      end)
      -- and the command says it in the same words
      local path = S.tmpfile("bad.json")
      S.write(path, c[1])
      local code, _, err = S.cli("report " .. path)
      assert.are.equal(1, code)
      assert.are.equal(("jobque-profile: %s: %s\n"):format(path, errs[1]:match("^t%.json: (.*)$")), err)
    end
  end)

  it("put a counter whose pid is an object on the page as the report shows it, the same on every run", function()
    local text = '[{"ph":"C","ts":1,"pid":{"a":1},"name":"c","args":{"v":1}},\n'
                 .. '{"ph":"C","ts":2,"pid":{"a":1},"name":"c","args":{"v":3}},\n'
                 .. '{"ph":"C","ts":2,"pid":null,"name":"n","args":{"v":2}},\n'
                 .. '{"ph":"X","ts":0,"dur":4,"pid":{"a":1},"tid":[1],"name":"s"}]'
    local pages = {}
    with_model(text, function(m, err)
      assert(m, err)
      local page = html.render(m)
      assert.falsy(page:find("table: 0x", 1, true))
      assert.falsy(page:find("userdata: ", 1, true))
      assert.matches('{"name":"c v","pid":"{\\"a\\":1}","ts":[', page, 1, true)
      assert.matches('{"name":"n v","pid":"null","ts":[', page, 1, true)
      assert.are.equal(2, #m.counters) -- one track for the two samples of pid {"a":1}
      local js = report.json(stats.compute(m))
      assert.matches('"name":"c v","pid":{"a":1}', js, 1, true)
      pages[#pages + 1] = page
    end)
    with_model(text, function(m) pages[#pages + 1] = html.render(m) end)
    assert.are.equal(pages[1], pages[2]) -- the same on every run
  end)

  it("keep marker args and slice args that are strings as strings on the page, as the report does", function()
    local text = '[{"ph":"i","s":"g","ts":1,"pid":1,"tid":1,"name":"k","args":{"arg":"0x10"}},\n'
                 .. '{"ph":"i","s":"g","ts":2,"pid":1,"tid":1,"name":"k","args":{"arg":"1e2"}},\n'
                 .. '{"ph":"i","s":"g","ts":3,"pid":1,"tid":1,"name":"k","args":{"arg":" 7 "}},\n'
                 .. '{"ph":"i","s":"g","ts":4,"pid":1,"tid":1,"name":"k","args":{"arg":"12"}},\n'
                 .. '{"ph":"i","s":"g","ts":5,"pid":1,"tid":1,"name":"k","args":{"arg":12}},\n'
                 .. '{"ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"name":"s","args":{"job":"0x10"}},\n'
                 .. '{"ph":"X","ts":2,"dur":1,"pid":1,"tid":1,"name":"s","args":{"n":" 7 "}},\n'
                 .. '{"ph":"X","ts":3,"dur":1,"pid":1,"tid":1,"name":"s","args":{"job":7}}]'
    with_model(text, function(m, err)
      assert(m, err)
      assert.are.same({"0x10", " 7 "}, {m.lanes[1].args[1].job, m.lanes[1].args[2].n})
      assert.are.equal(false, m.lanes[1].args[3]) -- {job = 7} alone: the job column says it
      local from_c = html.render(m)
      assert.matches('"ma":["0x10","1e2"," 7 ","12",12]', from_c, 1, true)
      assert.matches('"args":[{"job":"0x10"},{"n":" 7 "}]', from_c, 1, true)
      local js = report.json(stats.compute(m))
      assert.matches('"arg":"0x10"', js, 1, true)
      assert.matches('"arg":" 7 "', js, 1, true)
    end)
  end)
end)
