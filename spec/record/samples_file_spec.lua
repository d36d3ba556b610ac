-- The samples in a saved file: "stackFrames", "samples",
-- jobqueProfile.sampling and laneInfo's sample counters. The samples are put
-- by hand through the testing hook, which records them as the sampler's
-- hook does (frames interned in the lane's tables, one sample event in its
-- ring), without timers or signals: every frame, stack, weight and lane is
-- known by construction.
local S = require "support"
local cjson = require "cjson"
local p = require "jobque_profile"
local jobque = require "jobque"
local T = require("jobque.core")._test

local path, cpath = S.paths()

-- The frames of a sample, root first.
local MAIN = {"main chunk (job.lua)", "lua"}
local HEAVY = {"heavy (job.lua:12)", "lua"}
local REP = {"rep [C]", "C"}
local ANON = {"function <job.lua:30>", "lua"}

local SAMPLED = {hz = 1000, depth = 64, period_ns = 1000000, signals = 3, ticks = 5}

-- The saved text from "stackFrames" to "jobqueProfile", with each sample's
-- ts replaced by "T"; and the ts values in file order.
local function samples_section(text)
  local a = text:find(',\n"stackFrames"', 1, true)
  local z = text:find(',\n"jobqueProfile"', 1, true)
  assert(a and z, "no stackFrames/samples section")
  local section = text:sub(a, z - 1)
  local ts = {}
  for v in section:gmatch('"ts":([%d.]+)') do ts[#ts + 1] = v end
  return (section:gsub('"ts":[%d.]+', '"ts":T')), ts
end

-- frame id -> its path of names from the root ("a;b;c"), walking the
-- file's parents.
local function paths_of(frames)
  local out = {}
  for id in pairs(frames) do
    local names, k = {}, id
    while k do
      table.insert(names, 1, frames[k].name)
      k = frames[k].parent
    end
    out[id] = table.concat(names, ";")
  end
  return out
end

-- The markers "sample fence" of a decoded trace, by tid, in time order.
local function fences(doc)
  local out = {}
  for _, e in ipairs(S.markers(doc, "sample fence")) do
    out[e.tid] = out[e.tid] or {}
    table.insert(out[e.tid], e.ts)
  end
  return out
end

describe("samples in the saved file", function()
  after_each(function()
    T.stop()
    T.stab_limit(0)
    p.profile_stop()
  end)

  it("are absent from a session that did not sample: no keys, no laneInfo counters", function()
    local m = p.profile_marker_id("sample fence")
    p.profile_start(1000)
    p.profile_marker(m, 1)
    p.profile_stop()
    local doc, text = S.save(p)
    assert.is_nil(text:find("stackFrames", 1, true))
    assert.is_nil(text:find('"samples"', 1, true))
    assert.is_nil(doc.jobqueProfile.sampling)
    assert.is_nil(doc.jobqueProfile.laneInfo[1].samples)
    assert.is_nil(doc.jobqueProfile.laneInfo[1].sampleWeight)
    assert.is_nil(doc.jobqueProfile.laneInfo[1].samplesSkipped)
    -- and the sampling figures of an earlier session do not carry over
    p.profile_start(1000)
    T.sampling_set(SAMPLED)
    p.profile_stop()
    p.profile_start(1000)
    p.profile_marker(m, 1)
    p.profile_stop()
    doc, text = S.save(p)
    assert.is_nil(text:find("stackFrames", 1, true))
    assert.is_nil(doc.jobqueProfile.sampling)
  end)

  it("writes one lane's frames as a prefix tree and its samples in order, exactly", function()
    local work = p.profile_category("sampled work")
    local fence = p.profile_marker_id("sample fence")
    p.profile_start(1000)
    T.sampling_set(SAMPLED)
    p.profile_marker(fence, 0)
    T.put_sample({MAIN, HEAVY}, {line = 13, weight = 2})
    p.profile_marker(fence, 1)
    T.put_sample({MAIN, HEAVY, REP}, {line = 14, job = 7, tag = work})
    p.profile_marker(fence, 2)
    T.put_sample({MAIN, ANON}, {})
    p.profile_marker(fence, 3)
    p.profile_stop()
    local doc, text = S.save(p)
    local section, ts = samples_section(text)
    assert.are.equal(',\n"stackFrames":{'
      .. '\n"1":{"name":"main chunk (job.lua)","category":"lua"}'
      .. ',\n"2":{"name":"heavy (job.lua:12)","category":"lua","parent":"1"}'
      .. ',\n"3":{"name":"rep [C]","category":"C","parent":"2"}'
      .. ',\n"4":{"name":"function <job.lua:30>","category":"lua","parent":"1"}}'
      .. ',\n"samples":['
      .. '\n{"pid":1,"tid":1,"ts":T,"sf":"2","weight":2,"name":"no category","args":{"line":13}}'
      .. ',\n{"pid":1,"tid":1,"ts":T,"sf":"3","weight":1,"name":"sampled work","args":{"job":7,"line":14}}'
      .. ',\n{"pid":1,"tid":1,"ts":T,"sf":"4","weight":1,"name":"no category","args":{}}]', section)
    -- ts: microseconds with three decimals, each between the markers around it
    local f = fences(doc)[1]
    for i, v in ipairs(ts) do
      assert.truthy(v:match("^%d+%.%d%d%d$"), v)
      assert.is_true(tonumber(v) >= f[i] - 0.0005 and tonumber(v) <= f[i + 1] + 0.0005,
                     ("sample %d at %s, not between %s and %s"):format(i, v, f[i], f[i + 1]))
    end
    assert.truthy(text:find('"lanes":1,"sampling":{"hz":1000,"periodNs":1000000,"clock":"thread-cpu",'
                            .. '"depth":64,"samples":3,"signals":3,"ticks":5},\n"laneInfo"', 1, true))
    assert.truthy(text:find('"unclosedSpans":0,"samples":3,"sampleWeight":4,'
                            .. '"samplesSkipped":{"userHook":0,"tableFull":0}}', 1, true))
    assert.is_nil(doc.jobqueProfile.laneInfo[1].sampleError)
    -- jobqueProfile stays the last key
    assert.truthy(text:find('\n"jobqueProfile":{[^\n]*\n"laneInfo":%[.*"markers":%[.*%]}}\n$'))
  end)

  it("merges equal paths of two lanes into one frame id, and orders samples by lane then time", function()
    local fence = p.profile_marker_id("sample fence")
    p.profile_start(1000)
    T.sampling_set(SAMPLED)
    -- the helper thread's lane is "thread 1" (tid 1); the caller's comes last
    local results = T.spawn(1, [[
      local T = require("jobque.core")._test
      local p = require "jobque_profile"
      local fence = p.profile_marker_id("sample fence")
      local joined = T.put_runtime_sample("copy in", {job = 5}) -- before any event: not joined
      p.profile_marker(fence, 0)
      T.put_sample({{"main chunk (job.lua)", "lua"}, {"heavy (job.lua:12)", "lua"}}, {line = 20})
      p.profile_marker(fence, 1)
      T.put_sample({{"main chunk (job.lua)", "lua"}, {"light (job.lua:40)", "lua"}}, {line = 41, weight = 3})
      p.profile_marker(fence, 2)
      local put = T.put_runtime_sample("copy in", {job = 5, weight = 2})
      p.profile_marker(fence, 3)
      return tostring(joined) .. " " .. tostring(put)
    ]], path, cpath):join()
    assert.are.same({"false true"}, results)
    p.profile_marker(fence, 0)
    T.put_sample({MAIN, HEAVY}, {line = 13})
    p.profile_marker(fence, 1)
    T.put_sample({{"other (job.lua:50)", "lua"}}, {})
    p.profile_marker(fence, 2)
    p.profile_stop()
    local doc, text = S.save(p)
    local section, ts = samples_section(text)
    -- ids in order of first use: lane 1's stacks as it first recorded them
    -- ("[copy in]" is a synthetic stack, made before any other), then the
    -- caller's new ones
    assert.are.equal(',\n"stackFrames":{'
      .. '\n"1":{"name":"[copy in]","category":"runtime"}'
      .. ',\n"2":{"name":"main chunk (job.lua)","category":"lua"}'
      .. ',\n"3":{"name":"heavy (job.lua:12)","category":"lua","parent":"2"}'
      .. ',\n"4":{"name":"light (job.lua:40)","category":"lua","parent":"2"}'
      .. ',\n"5":{"name":"other (job.lua:50)","category":"lua"}}'
      .. ',\n"samples":['
      .. '\n{"pid":1,"tid":1,"ts":T,"sf":"3","weight":1,"name":"no category","args":{"line":20}}'
      .. ',\n{"pid":1,"tid":1,"ts":T,"sf":"4","weight":3,"name":"no category","args":{"line":41}}'
      .. ',\n{"pid":1,"tid":1,"ts":T,"sf":"1","weight":2,"name":"no category","args":{"job":5}}'
      .. ',\n{"pid":1,"tid":2,"ts":T,"sf":"3","weight":1,"name":"no category","args":{"line":13}}'
      .. ',\n{"pid":1,"tid":2,"ts":T,"sf":"5","weight":1,"name":"no category","args":{}}]', section)
    local f = fences(doc)
    local at = {{1, 1}, {1, 2}, {1, 3}, {2, 1}, {2, 2}} -- tid, index of the fence before it
    for i, v in ipairs(ts) do
      local tid, k = at[i][1], at[i][2]
      assert.is_true(tonumber(v) >= f[tid][k] - 0.0005 and tonumber(v) <= f[tid][k + 1] + 0.0005)
    end
    local info = doc.jobqueProfile.laneInfo
    assert.are.same({"thread 1", 3, 6}, {info[1].name, info[1].samples, info[1].sampleWeight})
    assert.are.same({"caller", 2, 2}, {info[2].name, info[2].samples, info[2].sampleWeight})
    assert.are.equal(5, doc.jobqueProfile.sampling.samples)
  end)

  it("gives a sample the innermost span it lies in on its lane, and none outside spans", function()
    local outer = p.profile_category("outer part")
    local inner = p.profile_category("inner part")
    local in_job = p.profile_category("part in a job")
    local leaf = {{"f (job.lua:1)", "lua"}}
    p.profile_start(1000)
    T.sampling_set(SAMPLED)
    T.put_sample(leaf, {line = 1})           -- before any span
    p.profile_begin(outer)
    T.put_sample(leaf, {line = 2})           -- outer
    p.profile_begin(inner)
    T.put_sample(leaf, {line = 3})           -- inner
    p.profile_end()
    T.put_sample(leaf, {line = 4})           -- outer again
    p.profile_end()
    T.put_sample(leaf, {line = 5})           -- after both
    jobque.with_job_que({workers = 1}, function(q)
      q:submit(function()
        local TT = require("jobque.core")._test
        local pp = require "jobque_profile"
        TT.put_sample({{"g (job.lua:9)", "lua"}}, {line = 6, job = 1})  -- in the job, no span
        pp.profile_begin(in_job)
        TT.put_sample({{"g (job.lua:9)", "lua"}}, {line = 7, job = 1})  -- in the job's span
        pp.profile_end()
      end):wait()
    end)
    p.profile_stop()
    local doc = S.save(p)
    local span_of = {}
    for _, e in ipairs(S.events(doc, function(e) return e.ph == "X" and e.args and e.args.span end)) do
      span_of[e.cat] = e.args.span
    end
    assert.are.equal(3, #S.events(doc, function(e) return e.ph == "X" and e.args and e.args.span end))
    local want = {[1] = false, [2] = span_of["outer part"], [3] = span_of["inner part"], [4] = span_of["outer part"],
                  [5] = false, [6] = false, [7] = span_of["part in a job"]}
    local got = {}
    for _, s in ipairs(doc.samples) do got[s.args.line] = s.args.span or false end
    assert.are.same(want, got)
    assert.are_not.equal(span_of["outer part"], span_of["inner part"])
  end)

  it("records [table full] when a lane's tables fill, counts it, and goes on", function()
    T.stab_limit(10) -- the 8 synthetic frames and stacks, and 2 more
    p.profile_start(1000)
    T.sampling_set(SAMPLED)
    T.put_sample({MAIN, HEAVY}, {line = 1})      -- frames and stacks 9 and 10
    T.put_sample({MAIN, REP}, {line = 2})        -- no room for "rep [C]"
    T.put_sample({MAIN, HEAVY}, {line = 3})      -- already there
    T.put_sample({ANON}, {line = 4, weight = 4}) -- no room
    T.put_sample({HEAVY}, {line = 5})            -- a known frame, but no room for a new stack
    p.profile_stop()
    local doc, text = S.save(p)
    local section = samples_section(text)
    assert.are.equal(',\n"stackFrames":{'
      .. '\n"1":{"name":"[table full]","category":"runtime"}'
      .. ',\n"2":{"name":"main chunk (job.lua)","category":"lua"}'
      .. ',\n"3":{"name":"heavy (job.lua:12)","category":"lua","parent":"2"}}'
      .. ',\n"samples":['
      .. '\n{"pid":1,"tid":1,"ts":T,"sf":"3","weight":1,"name":"no category","args":{"line":1}}'
      .. ',\n{"pid":1,"tid":1,"ts":T,"sf":"1","weight":1,"name":"no category","args":{"line":2}}'
      .. ',\n{"pid":1,"tid":1,"ts":T,"sf":"3","weight":1,"name":"no category","args":{"line":3}}'
      .. ',\n{"pid":1,"tid":1,"ts":T,"sf":"1","weight":4,"name":"no category","args":{"line":4}}'
      .. ',\n{"pid":1,"tid":1,"ts":T,"sf":"1","weight":1,"name":"no category","args":{"line":5}}]', section)
    local info = doc.jobqueProfile.laneInfo[1]
    assert.are.same({samples = 5, weight = 8, userHook = 0, tableFull = 3},
                    {samples = info.samples, weight = info.sampleWeight, userHook = info.samplesSkipped.userHook,
                     tableFull = info.samplesSkipped.tableFull})
  end)

  it("puts [truncated] above a cut stack, and empties the tables at the next start", function()
    p.profile_start(1000)
    T.sampling_set(SAMPLED)
    T.put_sample({HEAVY, REP}, {truncated = true})
    T.put_sample({MAIN}, {})
    p.profile_stop()
    local doc = S.save(p)
    local paths = paths_of(doc.stackFrames)
    local got = {}
    for _, s in ipairs(doc.samples) do got[#got + 1] = paths[s.sf] end
    assert.are.same({"[truncated];heavy (job.lua:12);rep [C]", "main chunk (job.lua)"}, got)
    local root = doc.samples[1].sf
    while doc.stackFrames[root].parent do root = doc.stackFrames[root].parent end
    assert.are.equal("runtime", doc.stackFrames[root].category)
    p.profile_start(1000)
    T.sampling_set(SAMPLED)
    T.put_sample({ANON}, {})
    p.profile_stop()
    doc = S.save(p)
    assert.are.same({["1"] = {name = "function <job.lua:30>", category = "lua"}}, doc.stackFrames)
    assert.are.same({samples = 1, sampleWeight = 1}, {samples = doc.jobqueProfile.laneInfo[1].samples,
                                                      sampleWeight = doc.jobqueProfile.laneInfo[1].sampleWeight})
  end)

  it("writes frame texts with markup, line breaks and control bytes escaped, invalid UTF-8 as U+FFFD", function()
    local texts = {
      {'x<b>"q"</b>&amp; (job.lua:1)', 'x<b>"q"</b>&amp; (job.lua:1)', [["x<b>\"q\"</b>&amp; (job.lua:1)"]]},
      {"two\nlines\ttab [C]", "two\nlines\ttab [C]", [["two\nlines\ttab [C]"]]},
      {"bad \xff\xfe é (job.lua:2)", "bad \u{FFFD}\u{FFFD} é (job.lua:2)", '"bad \u{FFFD}\u{FFFD} é (job.lua:2)"'},
      {"ctl \1\127 (job.lua:3)", "ctl \1\127 (job.lua:3)", [["ctl \u0001\u007f (job.lua:3)"]]},
    }
    p.profile_start(1000)
    T.sampling_set(SAMPLED)
    for _, t in ipairs(texts) do T.put_sample({{t[1], "lua"}}, {}) end
    p.profile_stop()
    local doc, text = S.save(p)
    assert.is_truthy(utf8.len(text), "the file is not valid UTF-8")
    for i, t in ipairs(texts) do
      assert.are.equal(t[2], doc.stackFrames[tostring(i)].name)
      assert.truthy(text:find('"' .. i .. '":{"name":' .. t[3] .. ',"category":"lua"}', 1, true), t[3])
    end
  end)

  it("says why a lane could not sample (sampleError), until the next start", function()
    p.profile_start(1000)
    T.sampling_set(SAMPLED)
    p.profile_marker(p.profile_marker_id("sample fence"), 1)
    p.profile_stop()
    T.sample_error("timer_create: Resource temporarily unavailable")
    local doc, text = S.save(p)
    -- a session that sampled has both keys, even with no sample
    assert.truthy(text:find('\n],\n"stackFrames":{},\n"samples":[],\n"jobqueProfile":', 1, true))
    assert.are.equal(0, doc.jobqueProfile.sampling.samples)
    local info = doc.jobqueProfile.laneInfo[1]
    assert.are.same({"timer_create: Resource temporarily unavailable", 0},
                    {info.sampleError, info.samples})
    p.profile_start(1000)
    T.sampling_set(SAMPLED)
    p.profile_marker(p.profile_marker_id("sample fence"), 1)
    p.profile_stop()
    doc = S.save(p)
    assert.is_nil(doc.jobqueProfile.laneInfo[1].sampleError)
  end)

  it("records nothing when no session is armed", function()
    p.profile_start(1000)
    p.profile_stop()
    T.put_sample({MAIN}, {})
    assert.is_false(T.put_runtime_sample("scheduler", {}))
    p.profile_start(1000)
    T.sampling_set(SAMPLED)
    assert.is_true(T.put_runtime_sample("scheduler", {weight = 2}))
    p.profile_stop()
    local doc = S.save(p)
    assert.are.same({["1"] = {name = "[scheduler]", category = "runtime"}}, doc.stackFrames)
    assert.are.equal(1, #doc.samples)
    assert.are.equal(2, doc.samples[1].weight)
  end)
end)

-- Perfetto's JSON importer skips "stackFrames" and "samples": the file's
-- events load as they would without them.
local describe_in_node = S.plain_only(describe, pending, "runs node")

describe_in_node("a file with samples in Perfetto's trace processor", function()
  it("loads every slice and instant with no import error", function()
    local cat = p.profile_category("perfetto part")
    local fence = p.profile_marker_id("sample fence")
    p.profile_start(1000)
    T.sampling_set(SAMPLED)
    p.profile_marker(fence, 1)
    p.profile_begin(cat)
    T.put_sample({MAIN, HEAVY}, {line = 1})
    T.put_sample({{"odd \"name\";\n<x> \xff", "lua"}}, {line = 2})
    p.profile_end()
    p.profile_marker(fence, 2)
    p.profile_stop()
    local doc, text, trace = S.save(p)
    assert.truthy(text:find('"samples":[', 1, true))
    local want = #S.events(doc, function(e) return e.ph == "X" or e.ph == "i" end)
    assert.are.equal(3, want) -- the span's piece and the two markers
    local out_path = S.tmpfile("tp.txt")
    local ok = os.execute(("timeout 300 node spec/consumers/tp_query.cjs '%s' %s %s >'%s' 2>&1"):format(
      trace, "'select count(*) as n from slice'",
      [["select name, value from stats where severity in ('error', 'data_loss') and value > 0"]], out_path))
    local out = S.read(out_path)
    assert(ok, "spec/consumers/tp_query.cjs failed (its package comes from `npm ci`):\n" .. out)
    assert.are.equal("# select count(*) as n from slice\n" .. cjson.encode({n = want}) .. "\n"
                     .. "# select name, value from stats where severity in ('error', 'data_loss') and value > 0\n",
                     out)
  end)
end)
