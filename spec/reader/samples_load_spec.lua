-- CPU samples as the loader gives them (model.frames, model.sampling, the
-- model's sample_* columns, model.nsamples, the lanes' laneInfo sampling
-- keys, model.samples_skipped and sample_skips; trace.lua's header), read
-- from hand-written traces whose columns are worked out by hand: the keys
-- in any order among the top object's, the checked path, frames renumbered,
-- parents that loop or nest too deep, bad samples skipped with reasons.
local trace = require "jobque_profile.trace"
local S = require "support"

-- A trace of ours: tid 1 is the caller (sorted last), tid 2 worker 0
-- (sorted first), so the model's lanes are not in the samples' tid order.
local EVENTS = [=["traceEvents":[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"caller"}},
{"ph":"M","pid":1,"tid":1,"name":"thread_sort_index","args":{"sort_index":1}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_sort_index","args":{"sort_index":0}},
{"ph":"X","pid":1,"tid":1,"ts":5,"dur":2,"name":"submit","cat":"submit","args":{"job":7}},
{"ph":"X","pid":1,"tid":2,"ts":10,"dur":100,"name":"job","cat":"attention","args":{"job":7}}]]=]

-- Frame "4" comes before its parent "2".
local FRAMES = [["stackFrames":{
"4":{"name":"inner (job.lua:30)","category":"lua","parent":"2"},
"1":{"name":"main chunk (job.lua)","category":"lua"},
"2":{"name":"heavy (job.lua:12)","category":"lua","parent":"1"},
"3":{"name":"rep [C]","category":"C","parent":"2"},
"5":{"name":"[copy in]","category":"runtime"}}]]

-- By tid then time, as our writer puts them, but one of tid 2's out of
-- time order.
local SAMPLES = [=["samples":[
{"tid":1,"ts":6,"sf":"1","weight":1,"name":"no category","args":{"line":2}},
{"tid":2,"ts":20.5,"sf":"4","weight":3,"name":"attention","args":{"job":7,"span":2,"line":31}},
{"tid":2,"ts":40.25,"sf":"3","weight":1,"name":"attention","args":{"job":7,"line":13}},
{"tid":2,"ts":15,"sf":"5","weight":2,"name":"attention","args":{"job":7}}]]=]

local META = [["jobqueProfile":{"version":1,"clock":"tsc","startUs":0,"stopUs":200,"lostEvents":0,
"sampling":{"hz":1000,"periodNs":1000000,"clock":"thread-cpu","depth":64,"samples":4,"signals":4,"ticks":7},
"laneInfo":[
{"tid":1,"name":"caller","recorded":1,"dropped":0,"samples":1,"sampleWeight":1,
 "samplesSkipped":{"userHook":0,"tableFull":0}},
{"tid":2,"name":"worker 0","recorded":1,"dropped":0,"samples":3,"sampleWeight":6,
 "samplesSkipped":{"userHook":2,"tableFull":1},"sampleError":"timer_create: Resource temporarily unavailable"}],
"categories":[],"markers":[]}]]

local function object(...)
  return "{" .. table.concat({...}, ",\n") .. "}\n"
end

local function load(text)
  local path = S.tmpfile("samples.json")
  S.write(path, text)
  return trace.load(path)
end

local COLUMNS = {"sample_ts", "sample_lane", "sample_frame", "sample_weight", "sample_cat", "sample_job",
                 "sample_span", "sample_line"}

-- The columns as lists (reading them makes native columns Lua lists).
local function columns(m)
  local out = {}
  for _, name in ipairs(COLUMNS) do
    out[name] = {}
    for k = 1, m.nsamples do out[name][k] = m[name][k] end
  end
  return out
end

-- Worked out by hand. Frames in file order, each once its parent has a
-- number: "4" waits for "2"; "1" is 1; "2" is 2, then "4" (met already,
-- below it) 3; "3" 4; "5" 5. Samples by lane (worker 0 is lane 1), then
-- time: tid 2's at 15, 20.5, 40.25, then tid 1's.
local WANT_FRAMES = {
  n = 5,
  id = {"1", "2", "4", "3", "5"},
  name = {"main chunk (job.lua)", "heavy (job.lua:12)", "inner (job.lua:30)", "rep [C]", "[copy in]"},
  category = {"lua", "lua", "lua", "C", "runtime"},
  parent = {0, 1, 2, 2, 0},
}
local WANT = {
  sample_ts = {15, 20.5, 40.25, 6},
  sample_lane = {1, 1, 1, 2},
  sample_frame = {5, 3, 4, 1},
  sample_weight = {2, 3, 1, 1},
  sample_cat = {"attention", "attention", "attention", "no category"},
  sample_job = {7, 7, 7, false},
  sample_span = {false, 2, false, false},
  sample_line = {false, 31, 13, 2},
}

local function check_model(m)
  assert.equal("worker 0", m.lanes[1].name)
  assert.equal("caller", m.lanes[2].name)
  assert.equal(4, m.nsamples)
  assert.same(WANT, columns(m))
  assert.same(WANT_FRAMES, m.frames)
  assert.equal(0, m.samples_skipped)
  assert.is_nil(trace.samples_skipped_text(m))
end

describe("the loader's samples", function()
  it("reads frames, samples, sampling and the lanes' sampling keys into the model", function()
    local m = assert(load(object(EVENTS, FRAMES, SAMPLES, META)))
    check_model(m)
    assert.same({hz = 1000, period_ns = 1000000, clock = "thread-cpu", depth = 64, samples = 4, signals = 4, ticks = 7},
                m.sampling)
    local w, c = m.lanes[1], m.lanes[2]
    assert.equal(3, w.samples)
    assert.equal(6, w.sample_weight)
    assert.same({userHook = 2, tableFull = 1}, w.samples_skipped)
    assert.equal("timer_create: Resource temporarily unavailable", w.sample_error)
    assert.equal(1, c.samples)
    assert.same({userHook = 0, tableFull = 0}, c.samples_skipped)
    assert.is_nil(c.sample_error)
    assert.equal(math.type(1), math.type(m.sample_job[1]))
    assert.equal(2, m.nevents) -- samples are not events
  end)

  it("rounds a time of ours to the nanosecond, as an event's", function()
    local m = assert(load(object(EVENTS, FRAMES, '"samples":[{"tid":2,"ts":12.0004,"sf":"1"},' ..
                                 '{"tid":2,"ts":12.0006,"sf":"1"}]', META)))
    assert.same({12, 12.001}, columns(m).sample_ts)
  end)

  it("reads samples before stackFrames, both before or after the events and the metadata", function()
    for _, order in ipairs{{SAMPLES, FRAMES, EVENTS, META}, {FRAMES, SAMPLES, EVENTS, META},
                           {EVENTS, SAMPLES, META, FRAMES}, {EVENTS, META, SAMPLES, FRAMES},
                           {SAMPLES, EVENTS, FRAMES, META}} do
      check_model(assert(load(object(table.unpack(order)))))
    end
  end)

  it("reads them the checked way alike (a top key with an escape)", function()
    check_model(assert(load(object('"x\\u0041":1', SAMPLES, EVENTS, FRAMES, META))))
    check_model(assert(load(object(EVENTS, '"s\\u0061mples":' .. SAMPLES:match(":(.*)$"), FRAMES, META))))
    check_model(assert(load(object(EVENTS, SAMPLES, '"stack\\u0046rames":' .. FRAMES:match(":(.*)$"), META))))
  end)

  it("reads the last of a samples or stackFrames key given twice, as for any key", function()
    local other = '"samples":[{"tid":2,"ts":99,"sf":"1"}]'
    check_model(assert(load(object(other, EVENTS, FRAMES, SAMPLES, META))))
    check_model(assert(load(object(EVENTS, other, FRAMES, META, SAMPLES))))
    check_model(assert(load(object(EVENTS, '"stackFrames":{"9":{"name":"x"}}', SAMPLES, FRAMES, META))))
    check_model(assert(load(object('"stackFrames":[]', EVENTS, SAMPLES, FRAMES, META))))
  end)

  it("leaves a trace without samples as it was", function()
    local m = assert(load(object(EVENTS, (META:gsub('"sampling":%b{},', "")))))
    assert.equal(0, m.nsamples)
    assert.is_nil(m.frames)
    assert.is_nil(m.sampling)
    assert.equal(0, m.samples_skipped)
    assert.is_nil(trace.samples_skipped_text(m))
    assert.equal(0, #m.sample_ts)
    assert.equal(2, m.nevents)
    assert.equal(0, m.skipped)
    m = assert(load('[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":1,"name":"a"}]'))
    assert.equal(0, m.nsamples)
    assert.is_nil(m.frames)
  end)

  it("reads Chrome's integer ids and gives a lane met only in samples its own", function()
    local m = assert(load(object('"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":1000,"dur":5,"name":"a"}]',
      '"stackFrames":{"1":{"category":"m1","name":"main"},"2":{"category":"m2","name":"foo","parent":1}}',
      '"samples":[{"cpu":0,"tid":1,"ts":1000.0,"name":"cycles:HG","sf":2,"weight":1},' ..
      '{"tid":9,"ts":1000.0004,"sf":"1"}]')))
    assert.same({n = 2, id = {"1", "2"}, name = {"main", "foo"}, category = {"m1", "m2"}, parent = {0, 1}}, m.frames)
    assert.equal(2, #m.lanes)
    assert.equal("thread 9", m.lanes[2].name)
    -- not ours: its times as the file has them
    assert.same({sample_ts = {1000, 1000.0004}, sample_lane = {1, 2}, sample_frame = {2, 1}, sample_weight = {1, 1},
                 sample_cat = {"cycles:HG", "no category"}, sample_job = {false, false},
                 sample_span = {false, false}, sample_line = {false, false}}, columns(m))
  end)

  it("keeps the last of an id given twice", function()
    local m = assert(load(object(EVENTS, '"stackFrames":{"1":{"name":"a"},"2":{"name":"b"},"1":{"name":"c"}}')))
    assert.same({n = 2, id = {"1", "2"}, name = {"c", "b"}, category = {false, false}, parent = {0, 0}}, m.frames)
  end)

  it("fails a file whose frames' parents loop, naming a frame on the loop", function()
    local cases = {
      {'{"1":{"name":"r"},"2":{"name":"x","parent":"3"},"3":{"name":"y","parent":"2"},"4":{"name":"z","parent":"3"}}',
       "2"},
      -- "4" is below the loop 3 -> 2 -> 3, not on it
      {'{"4":{"name":"z","parent":"3"},"3":{"name":"y","parent":"2"},"2":{"name":"x","parent":"3"}}', "3"},
      {'{"5":{"name":"s","parent":"5"}}', "5"},
    }
    for _, case in ipairs(cases) do
      local path = S.tmpfile("loop.json")
      S.write(path, object(EVENTS, '"stackFrames":' .. case[1], '"samples":[{"tid":1,"ts":6,"sf":"1"}]', META))
      local m, err = trace.load(path)
      assert.is_nil(m)
      assert.equal(path .. ': bad "stackFrames": the parents of frame "' .. case[2] .. '" loop (it is its own ancestor)',
                   err)
      local code, out, stderr = S.cli("report '" .. path .. "'")
      assert.equal(1, code)
      assert.equal("", out)
      assert.equal("jobque-profile: " .. err .. "\n", stderr)
    end
  end)

  it("says what is wrong with the JSON before a loop of frames it read first", function()
    local text = object(EVENTS, '"stackFrames":{"5":{"name":"s","parent":"5"}}', SAMPLES, META)
    local m, err = load(text .. "x")
    assert.is_nil(m)
    assert.matches(': not JSON %(offset ' .. #text .. ': text after the JSON value%)$', err)
  end)

  it("skips samples below frames nested deeper than 10,000, from a chain listed leaf first", function()
    -- frame k's parent is k - 1, listed from 20,000 down to 1: numbered from
    -- the root as each frame's parent gets its number, without recursion
    local parts = {}
    for k = 20000, 2, -1 do parts[#parts + 1] = ('"%d":{"name":"f%d","parent":"%d"}'):format(k, k, k - 1) end
    parts[#parts + 1] = '"1":{"name":"f1"}'
    local m = assert(load(object(EVENTS, '"stackFrames":{' .. table.concat(parts, ",") .. "}",
      '"samples":[{"tid":2,"ts":11,"sf":"10000"},{"tid":2,"ts":12,"sf":"10001"},{"tid":2,"ts":13,"sf":"20000"}]')))
    assert.equal(10000, m.frames.n)
    for _, k in ipairs{1, 2, 5000, 10000} do
      assert.equal(tostring(k), m.frames.id[k])
      assert.equal("f" .. k, m.frames.name[k])
      assert.equal(k - 1, m.frames.parent[k])
    end
    assert.is_nil(m.frames.id[10001])
    assert.equal(1, m.nsamples)
    assert.equal(10000, m.sample_frame[1])
    assert.equal("2 samples skipped (sf nests deeper than 10000: 2)", trace.samples_skipped_text(m))
  end)

  it("skips samples it cannot read, counting each reason in order of first appearance", function()
    local m = assert(load(object(EVENTS,
      '"stackFrames":{"1":{"name":"main"},"2":{"name":"f","parent":"77"},"3":{"name":"g","parent":"2"}}',
      '"samples":[' .. table.concat({
        '{"tid":2,"ts":11,"sf":"1","weight":2}',
        '{"tid":2,"ts":12,"sf":"42"}',
        '{"tid":2,"ts":13,"sf":1}',
        '{"tid":2,"ts":14}',
        '{"tid":2,"ts":15,"sf":"3"}',
        '{"tid":2,"ts":16,"sf":{"x":1}}',
        '{"tid":2,"ts":"17","sf":"1"}',
        '{"tid":2,"sf":"1"}',
        '{"tid":2,"ts":19,"sf":"1","weight":-1}',
        '{"tid":2,"ts":20,"sf":"1","weight":"2"}',
        '{"tid":2,"ts":21,"sf":"1","name":5}',
        '{"tid":2,"ts":22,"sf":"1","args":{"job":"x"}}',
        '{"tid":2,"ts":23,"sf":"1","args":{"line":2.5}}',
        '7',
        '{"tid":"2","ts":25,"sf":"1"}',
        '{"tid":2,"ts":26,"sf":"42"}',
      }, ",") .. "]", META)))
    assert.same({n = 1, id = {"1"}, name = {"main"}, category = {false}, parent = {0}}, m.frames)
    assert.equal(2, m.nsamples)
    assert.same({11, 13}, columns(m).sample_ts)
    assert.same({2, 1}, columns(m).sample_weight)
    assert.equal(14, m.samples_skipped)
    assert.same({{why = "unknown sf", n = 2}, {why = "no sf", n = 1}, {why = "unknown parent", n = 1},
                 {why = "sf is not a string", n = 1}, {why = "ts is not a number", n = 1}, {why = "no ts", n = 1},
                 {why = "weight is negative", n = 1}, {why = "weight is not a number", n = 1},
                 {why = "name is not a string", n = 1}, {why = "job is not an integer", n = 1},
                 {why = "line is not an integer", n = 1}, {why = "not an object", n = 1},
                 {why = "tid is not a number", n = 1}}, m.sample_skips)
    assert.equal("14 samples skipped (unknown sf: 2, no sf: 1, unknown parent: 1, sf is not a string: 1, "
                 .. "ts is not a number: 1, ...)", trace.samples_skipped_text(m))
    assert.equal(0, m.skipped) -- the events' count is the events'
  end)

  it("warns once on the command's error output for samples it skipped", function()
    local path = S.tmpfile("nosf.json")
    S.write(path, object(EVENTS, '"samples":[{"tid":2,"ts":11,"sf":"1"},{"tid":2,"ts":12,"sf":"2"}]', META))
    local m = assert(trace.load(path))
    assert.is_nil(m.frames)
    assert.equal(0, m.nsamples)
    local code, _, stderr = S.cli("report '" .. path .. "'")
    assert.equal(0, code)
    assert.equal("jobque-profile: warning: " .. path .. ": 2 samples skipped (unknown sf: 2)\n", stderr)
  end)
end)
