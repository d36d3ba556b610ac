-- The happens-before graph built from a loaded trace (graph:ops(model)),
-- read through ops:dump(): hand-written traces whose executors and ops are
-- worked out by hand in the comments.
local S = require "support"
local trace = require "jobque_profile.trace"
local reader = require "jobque_profile.reader"
local p = require "jobque_profile"
local jobque = require "jobque"

local function load_text(text)
  local path = S.tmpfile()
  S.write(path, text)
  return assert(trace.load(path))
end

local function ops_of(model)
  return reader.job_graph(model):ops(model)
end

local function dump(text)
  return ops_of(load_text(text)):dump()
end

-- A file of ours: lanes (name, role, queue, dropped, unclosedSpans) and events.
local function file(lanes, events, stop, lost)
  local meta, info = {}, {}
  for i, l in ipairs(lanes) do
    meta[#meta + 1] = ('{"ph":"M","pid":1,"tid":%d,"name":"thread_name","args":{"name":"%s"}},'):format(i, l.name)
    info[i] = ('{"tid":%d,"name":"%s"%s%s,"recorded":1,"dropped":%d%s}'):format(
      i, l.name, l.role and (',"role":"%s"'):format(l.role) or "", l.queue and (',"queue":%d'):format(l.queue) or "",
      l.dropped or 0, l.unclosed and (',"unclosedSpans":%d'):format(l.unclosed) or "")
  end
  return '{"traceEvents":[\n' .. table.concat(meta, "\n") .. "\n" .. events .. ([[
],
"jobqueProfile":{"version":1,"clock":"tsc","durationUs":%d,"startUs":0,"stopUs":%d,"lostEvents":%d,"lanes":%d,
 "laneInfo":[%s],
 "categories":[],"markers":[]}}
]]):format(stop, stop, lost or 0, #lanes, table.concat(info, ",\n"))
end

local LANES = {{name = "worker 0", role = "worker", queue = 1}, {name = "worker 1", role = "worker", queue = 1},
               {name = "caller", role = "caller"}}

-- The caller (lane 3) opens span "setup" 0..10 (span "inner" 6..8 inside it),
-- submits A (job 1) 2..3 and B (job 2) 4..5, B after A (its edge at 5);
-- waits for B 12..40 (the edge at 40), decodes B's results 40..41;
-- wait_all 42..50 (queue 1's edge at 50); the session stops at 60.
-- worker 0: A copy in 4..5, slice 5..10 (submits C, job 3, 6..7; a span of
--   A's 5..6), awaits C 10..20, resumes 20..25 (its edge at 20, C's results
--   decoded 21..22), copy out 25..26; A done: B ready at 26;
--   B copy in 27..28, slice 28..30, yields, slice 32..38, copy out 38..39.
-- worker 1: C copy in 7.5..8, slice 8..18, copy out 18..19.
local BODY = [[
{"ph":"X","ts":0,"dur":10,"pid":1,"tid":3,"name":"setup","cat":"setup","args":{"span":1,"piece":1}},
{"ph":"X","ts":2,"dur":1,"pid":1,"tid":3,"name":"submit a","cat":"submit","args":{"job":1}},
{"ph":"X","ts":4,"dur":1,"pid":1,"tid":3,"name":"submit b","cat":"submit","args":{"job":2}},
%s
{"ph":"X","ts":6,"dur":2,"pid":1,"tid":3,"name":"inner","cat":"inner","args":{"span":2,"piece":1}},
{"ph":"X","ts":12,"dur":28,"pid":1,"tid":3,"name":"wait","cat":"wait","args":{"job":2}},
%s
{"ph":"X","ts":40,"dur":1,"pid":1,"tid":3,"name":"copy result","cat":"copy","args":{"job":2,"bytes":9,"category":"b"}},
{"ph":"X","ts":42,"dur":8,"pid":1,"tid":3,"name":"wait all","cat":"wait"},
%s
{"ph":"X","ts":4,"dur":1,"pid":1,"tid":1,"name":"copy in","cat":"copy","args":{"job":1,"bytes":9,"category":"a"}},
{"ph":"X","ts":5,"dur":5,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":5,"dur":1,"pid":1,"tid":1,"name":"mine","cat":"mine","args":{"span":3,"piece":1,"job":1}},
{"ph":"X","ts":6,"dur":1,"pid":1,"tid":1,"name":"submit c","cat":"submit","args":{"job":3}},
{"ph":"b","ts":10,"pid":1,"tid":1,"name":"await","cat":"await","id2":{"local":"0x1"},"args":{"job":1,"awaits":3}},
{"ph":"e","ts":20,"pid":1,"tid":1,"name":"await","cat":"await","id2":{"local":"0x1"},"args":{"job":1,"awaits":3}},
{"ph":"X","ts":20,"dur":5,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
%s
{"ph":"X","ts":21,"dur":1,"pid":1,"tid":1,"name":"copy result","cat":"copy","args":{"job":3,"bytes":9,"category":"c"}},
{"ph":"X","ts":25,"dur":1,"pid":1,"tid":1,"name":"copy out","cat":"copy","args":{"job":1,"bytes":9,"category":"a"}},
{"ph":"X","ts":26,"dur":0,"pid":1,"tid":1,"name":"dependency done","cat":"flow","args":{"job":1,"dependant":2,"ready":true}},
{"ph":"X","ts":27,"dur":1,"pid":1,"tid":1,"name":"copy in","cat":"copy","args":{"job":2,"bytes":9,"category":"b"}},
{"ph":"X","ts":28,"dur":2,"pid":1,"tid":1,"name":"b","cat":"job","args":{"job":2}},
{"ph":"X","ts":32,"dur":6,"pid":1,"tid":1,"name":"b","cat":"job","args":{"job":2}},
{"ph":"X","ts":38,"dur":1,"pid":1,"tid":1,"name":"copy out","cat":"copy","args":{"job":2,"bytes":9,"category":"b"}},
{"ph":"X","ts":7.5,"dur":0.5,"pid":1,"tid":2,"name":"copy in","cat":"copy","args":{"job":3,"bytes":9,"category":"c"}},
{"ph":"X","ts":8,"dur":10,"pid":1,"tid":2,"name":"c","cat":"job","args":{"job":3}},
{"ph":"X","ts":18,"dur":1,"pid":1,"tid":2,"name":"copy out","cat":"copy","args":{"job":3,"bytes":9,"category":"c"}},
{"ph":"X","ts":19,"dur":0,"pid":1,"tid":2,"name":"wake job","cat":"flow","args":{"job":1}}
]]

local EDGES = {
  '{"ph":"i","s":"t","cat":"edge","name":"after","ts":5,"pid":1,"tid":3,"args":{"job":2,"on":1}},',
  '{"ph":"i","s":"t","cat":"edge","name":"waited for","ts":40,"pid":1,"tid":3,"args":{"on":2}},',
  '{"ph":"i","s":"t","cat":"edge","name":"waited for all","ts":50,"pid":1,"tid":3,"args":{"queue":1}},',
  '{"ph":"i","s":"t","cat":"edge","name":"waited for","ts":20,"pid":1,"tid":1,"args":{"job":1,"on":3}},',
}

local WITH_EDGES = file(LANES, BODY:format(EDGES[1], EDGES[2], EDGES[3], EDGES[4]), 60)
local WITHOUT_EDGES = file(LANES, BODY:format("", "", "", ""), 60)

-- Executors by start: A (exec 1, from 4), C (exec 2, from 7.5), B (exec 3,
-- from 27), then the caller's thread (exec 4).
local function a_exec()
  return {job = 1, queue = 1, lane = 1, cat = "a", sub = {4, 2}, ready = 3, ops = {
    {"copy in", 4, 5, lane = 1, cat = "a"},
    {"run", 5, 6, lane = 1, cat = "a"},           -- its span 5..6 splits nothing
    {"submit", 6, 7, lane = 1, job = 2},
    {"run", 7, 10, lane = 1, cat = "a"},
    {"suspend", 10, 20, lane = 1, job = 2},       -- awaiting C
    {"wait", 20, lane = 1, job = 2},              -- at the resumed slice's start
    {"run", 20, 21, lane = 1, cat = "a"},
    {"copy result", 21, 22, lane = 1, cat = "c", job = 2},
    {"run", 22, 25, lane = 1, cat = "a"},
    {"copy out", 25, 26, lane = 1, cat = "a"},
  }}
end

local function c_exec()
  return {job = 3, queue = 1, lane = 2, cat = "c", sub = {1, 3}, ready = 7, ops = {
    {"copy in", 7.5, 8, lane = 2, cat = "c"},
    {"run", 8, 18, lane = 2, cat = "c"},
    {"copy out", 18, 19, lane = 2, cat = "c"},
  }}
end

local function b_exec(after_at)
  return {job = 2, queue = 1, lane = 1, cat = "b", sub = {4, 4}, ready = 26, ops = {
    {"wait", after_at, job = 1},                  -- after A: no lane
    {"copy in", 27, 28, lane = 1, cat = "b"},
    {"run", 28, 30, lane = 1, cat = "b"},
    {"suspend", 30, 32, lane = 1},                -- a yield: no job
    {"run", 32, 38, lane = 1, cat = "b"},
    {"copy out", 38, 39, lane = 1, cat = "b"},
  }}
end

local function caller_exec(all_queue)
  return {thread = true, caller = true, lane = 3, ops = {
    {"own", 0, 2, lane = 3, cat = "setup"},
    {"submit", 2, 3, lane = 3, job = 1},
    {"own", 3, 4, lane = 3, cat = "setup"},
    {"submit", 4, 5, lane = 3, job = 3},
    {"own", 5, 6, lane = 3, cat = "setup"},
    {"own", 6, 8, lane = 3, cat = "inner"},
    {"own", 8, 10, lane = 3, cat = "setup"},
    {"own", 10, 12, lane = 3},
    {"block", 12, 40, lane = 3, job = 3},
    {"wait", 40, lane = 3, job = 3},
    {"copy result", 40, 41, lane = 3, cat = "b", job = 3},
    {"own", 41, 42, lane = 3},
    {"block", 42, 50, lane = 3, queue = all_queue},
    {"wait", 50, lane = 3, queue = all_queue},
    {"own", 50, 60, lane = 3},
  }}
end

describe("graph:ops(model)", function()
  it("builds every executor's ops from a trace with edge events", function()
    assert.same({stop = 60, partial = false, queues = {2}, lanes = {"worker 0", "worker 1", "caller"},
                 execs = {a_exec(), c_exec(), b_exec(5), caller_exec(1)}}, dump(WITH_EDGES))
  end)

  it("derives the edges of a file without edge events from its awaits, waits and dependency flows", function()
    -- B's dependency on A: a point at B's start (27); wait_all: every job (no queue)
    assert.same({stop = 60, partial = false, queues = {2}, lanes = {"worker 0", "worker 1", "caller"},
                 execs = {a_exec(), c_exec(), b_exec(27), caller_exec(nil)}}, dump(WITHOUT_EDGES))
  end)

  it("gives a queue without workers' jobs to the thread that ran them", function()
    -- workers = 0: the caller submits J (job 1) 0..1, waits for it 2..10
    -- and runs it meanwhile (copy in 3..4, slice 4..8, copy out 8..9), the
    -- edge at 10, J's results decoded 10..11; the session stops at 20.
    local text = file({{name = "caller", role = "caller"}}, [[
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":1,"name":"submit w","cat":"submit","args":{"job":1}},
{"ph":"X","ts":3,"dur":1,"pid":1,"tid":1,"name":"copy in","cat":"copy","args":{"job":1,"bytes":9,"category":"w"}},
{"ph":"X","ts":4,"dur":4,"pid":1,"tid":1,"name":"w","cat":"job","args":{"job":1}},
{"ph":"X","ts":8,"dur":1,"pid":1,"tid":1,"name":"copy out","cat":"copy","args":{"job":1,"bytes":9,"category":"w"}},
{"ph":"X","ts":2,"dur":8,"pid":1,"tid":1,"name":"wait","cat":"wait","args":{"job":1}},
{"ph":"i","s":"t","cat":"edge","name":"waited for","ts":10,"pid":1,"tid":1,"args":{"on":1}},
{"ph":"X","ts":10,"dur":1,"pid":1,"tid":1,"name":"copy result","cat":"copy","args":{"job":1,"bytes":9,"category":"w"}}
]], 20)
    assert.same({stop = 20, partial = false, queues = {}, lanes = {"caller"}, execs = {
      {job = 1, lane = 1, cat = "w", sub = {2, 1}, ready = 1, ops = { -- no worker: no queue
        {"copy in", 3, 4, lane = 1, cat = "w"},
        {"run", 4, 8, lane = 1, cat = "w"},
        {"copy out", 8, 9, lane = 1, cat = "w"},
      }},
      {thread = true, caller = true, lane = 1, ops = {
        {"submit", 0, 1, lane = 1, job = 1},
        {"own", 1, 2, lane = 1},
        {"block", 2, 3, lane = 1, job = 1},
        {"job", 3, 4, lane = 1, job = 1},
        {"job", 4, 8, lane = 1, job = 1},
        {"job", 8, 9, lane = 1, job = 1},
        {"block", 9, 10, lane = 1, job = 1},
        {"wait", 10, lane = 1, job = 1},
        {"copy result", 10, 11, lane = 1, cat = "w", job = 1},
        {"own", 11, 20, lane = 1},
      }},
    }}, dump(text))
  end)

  it("tells the lanes by their names in a file without roles, another thread from its first to its last slice", function()
    -- caller: submits job 1 0..1; worker 0: job 1 2..6, job 2 6..8;
    -- thread 1: span "busy" 1..2, submits job 2 3..4, waits for it 5..9.
    local text = [[
{"traceEvents":[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"thread 1"}},
{"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"caller"}},
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"submit one","cat":"submit","args":{"job":1}},
{"ph":"X","ts":2,"dur":4,"pid":1,"tid":1,"name":"one","cat":"job","args":{"job":1}},
{"ph":"X","ts":6,"dur":2,"pid":1,"tid":1,"name":"two","cat":"job","args":{"job":2}},
{"ph":"X","ts":1,"dur":1,"pid":1,"tid":2,"name":"busy","cat":"busy","args":{"span":1,"piece":1}},
{"ph":"X","ts":3,"dur":1,"pid":1,"tid":2,"name":"submit two","cat":"submit","args":{"job":2}},
{"ph":"X","ts":5,"dur":4,"pid":1,"tid":2,"name":"wait","cat":"wait","args":{"job":2}}
],
"jobqueProfile":{"version":1,"clock":"tsc","durationUs":10,"startUs":0,"stopUs":10,"lostEvents":0,"lanes":3,
 "categories":[],"markers":[]}}
]]
    assert.same({stop = 10, partial = false, queues = {1}, lanes = {"worker 0", "thread 1", "caller"}, execs = {
      {job = 1, queue = 1, lane = 1, cat = "one", sub = {4, 1}, ready = 1, ops = {{"run", 2, 6, lane = 1, cat = "one"}}},
      {job = 2, queue = 1, lane = 1, cat = "two", sub = {3, 3}, ready = 4, ops = {{"run", 6, 8, lane = 1, cat = "two"}}},
      {thread = true, lane = 2, ops = {
        {"own", 1, 2, lane = 2, cat = "busy"},
        {"own", 2, 3, lane = 2},
        {"submit", 3, 4, lane = 2, job = 2},
        {"own", 4, 5, lane = 2},
        {"block", 5, 9, lane = 2, job = 2},
        {"wait", 9, lane = 2, job = 2},              -- no edge events: the wait's end
      }},
      {thread = true, caller = true, lane = 3, ops = {
        {"submit", 0, 1, lane = 3, job = 1},
        {"own", 1, 10, lane = 3},
      }},
    }}, dump(text))
  end)

  it("is partial when events were lost, a lane dropped some or spans were left unclosed", function()
    local lanes = {{name = "worker 0", role = "worker", dropped = 12}, {name = "worker 1", role = "worker", dropped = 1},
                   {name = "caller", role = "caller", unclosed = 2}}
    local one = '{"ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}}\n'
    assert.equal("5 events were lost; lane worker 0 dropped 12 events; lane worker 1 dropped 1 event; "
                 .. "2 spans were left unclosed", dump(file(lanes, one, 10, 5)).partial)
    assert.equal("1 event was lost", dump(file(LANES, one, 10, 1)).partial)
    assert.is_false(dump(file(LANES, one, 10)).partial)
    -- no unclosedSpans in laneInfo: the pieces marked unclosed are counted
    local text = file(LANES, one .. [[,
{"ph":"X","ts":2,"dur":3,"pid":1,"tid":3,"name":"s","cat":"s","args":{"span":1,"piece":1,"unclosed":true}}
]], 10)
    assert.equal("1 span was left unclosed", dump(text).partial)
    local why = ops_of(load_text(file({{name = ("w"):rep(39) .. " 0", role = "worker", dropped = 3},
                                       {name = ("v"):rep(39) .. " 0", role = "worker", dropped = 3},
                                       {name = ("u"):rep(39) .. " 0", role = "worker", dropped = 3}}, one, 10, 7)))
      :dump().partial
    assert.equal(159, #why) -- cut to the room it has
  end)

  it("splits a run and the caller's own time at a wait on a finished job, and numbers the queues", function()
    -- queue 1: worker 0; queue 2: io 0, io 1; queue 3 (no workers) only
    -- named by a wait_all's edge. caller: span "loop" 0..20; submits job 1
    -- 1..2 and job 2 2..3; waits for job 1 at 12 (finished at 10: an edge,
    -- no wait span), decodes its results 12..13; wait_all of queue 3 at 15.
    -- worker 0: job 1 3..10, awaiting nothing but waiting for job 2 (finished
    -- at 6) at 8; io 1: job 2 4..6. The session stops at 30.
    local lanes = {{name = "worker 0", role = "worker", queue = 1}, {name = "io 0", role = "worker", queue = 2},
                   {name = "io 1", role = "worker", queue = 2}, {name = "caller", role = "caller"}}
    local text = file(lanes, [[
{"ph":"X","ts":0,"dur":20,"pid":1,"tid":4,"name":"loop","cat":"loop","args":{"span":1,"piece":1}},
{"ph":"X","ts":1,"dur":1,"pid":1,"tid":4,"name":"submit a","cat":"submit","args":{"job":1}},
{"ph":"X","ts":2,"dur":1,"pid":1,"tid":4,"name":"submit b","cat":"submit","args":{"job":2}},
{"ph":"i","s":"t","cat":"edge","name":"waited for","ts":12,"pid":1,"tid":4,"args":{"on":1}},
{"ph":"X","ts":12,"dur":1,"pid":1,"tid":4,"name":"copy result","cat":"copy","args":{"job":1,"bytes":9,"category":"a"}},
{"ph":"i","s":"t","cat":"edge","name":"waited for all","ts":15,"pid":1,"tid":4,"args":{"queue":3}},
{"ph":"X","ts":3,"dur":7,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"i","s":"t","cat":"edge","name":"waited for","ts":8,"pid":1,"tid":1,"args":{"job":1,"on":2}},
{"ph":"X","ts":4,"dur":2,"pid":1,"tid":3,"name":"b","cat":"job","args":{"job":2}}
]], 30)
    assert.same({stop = 30, partial = false, queues = {1, 2, 0}, lanes = {"worker 0", "io 0", "io 1", "caller"},
                 execs = {
      {job = 1, queue = 1, lane = 1, cat = "a", sub = {3, 2}, ready = 2, ops = {
        {"run", 3, 8, lane = 1, cat = "a"},
        {"wait", 8, lane = 1, job = 2},
        {"run", 8, 10, lane = 1, cat = "a"},
      }},
      {job = 2, queue = 2, lane = 3, cat = "b", sub = {3, 3}, ready = 3, ops = {{"run", 4, 6, lane = 3, cat = "b"}}},
      {thread = true, caller = true, lane = 4, ops = {
        {"own", 0, 1, lane = 4, cat = "loop"},
        {"submit", 1, 2, lane = 4, job = 1},
        {"submit", 2, 3, lane = 4, job = 2},
        {"own", 3, 12, lane = 4, cat = "loop"},
        {"wait", 12, lane = 4, job = 1},
        {"copy result", 12, 13, lane = 4, cat = "a", job = 1},
        {"own", 13, 15, lane = 4, cat = "loop"},
        {"wait", 15, lane = 4, queue = 3},
        {"own", 15, 20, lane = 4, cat = "loop"},
        {"own", 20, 30, lane = 4},
      }},
    }}, dump(text))
  end)

  it("names the queue a job's wait_all waited for, though its own run lies between the wait and the edge", function()
    -- queue 1: worker 0; queue 2 (made by job 1): c 0. The caller submits
    -- job 1 0..1, waits for it 2..30 (the edge at 30); the session stops at 40.
    -- worker 0: job 1's slice 2..10 submits job 2 3..4 and awaits it 10..20;
    -- its slice 20..25 holds a wait_all of queue 2: the wait span 21..22,
    -- its edge at 23 (the job ran 22..23 between them). c 0: job 2 5..15.
    local lanes = {{name = "worker 0", role = "worker", queue = 1}, {name = "c 0", role = "worker", queue = 2},
                   {name = "caller", role = "caller"}}
    local text = file(lanes, [[
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"submit p","cat":"submit","args":{"job":1}},
{"ph":"X","ts":2,"dur":28,"pid":1,"tid":3,"name":"wait","cat":"wait","args":{"job":1}},
{"ph":"i","s":"t","cat":"edge","name":"waited for","ts":30,"pid":1,"tid":3,"args":{"on":1}},
{"ph":"X","ts":2,"dur":8,"pid":1,"tid":1,"name":"p","cat":"job","args":{"job":1}},
{"ph":"X","ts":3,"dur":1,"pid":1,"tid":1,"name":"submit c","cat":"submit","args":{"job":2}},
{"ph":"b","ts":10,"pid":1,"tid":1,"name":"await","cat":"await","id2":{"local":"0x1"},"args":{"job":1,"awaits":2}},
{"ph":"e","ts":20,"pid":1,"tid":1,"name":"await","cat":"await","id2":{"local":"0x1"},"args":{"job":1,"awaits":2}},
{"ph":"X","ts":20,"dur":5,"pid":1,"tid":1,"name":"p","cat":"job","args":{"job":1}},
{"ph":"X","ts":21,"dur":1,"pid":1,"tid":1,"name":"wait all","cat":"wait"},
{"ph":"i","s":"t","cat":"edge","name":"waited for all","ts":23,"pid":1,"tid":1,"args":{"job":1,"queue":2}},
{"ph":"X","ts":5,"dur":10,"pid":1,"tid":2,"name":"c","cat":"job","args":{"job":2}}
]], 40)
    local d = dump(text)
    assert.same({job = 1, queue = 1, lane = 1, cat = "p", sub = {3, 1}, ready = 1, ops = {
      {"run", 2, 3, lane = 1, cat = "p"},
      {"submit", 3, 4, lane = 1, job = 2},
      {"run", 4, 10, lane = 1, cat = "p"},
      {"suspend", 10, 20, lane = 1, job = 2},
      {"run", 20, 21, lane = 1, cat = "p"},
      {"block", 21, 22, lane = 1, queue = 2},     -- queue 2's, not every queue's (itself among them)
      {"run", 22, 23, lane = 1, cat = "p"},
      {"wait", 23, lane = 1, queue = 2},
      {"run", 23, 25, lane = 1, cat = "p"},
    }}, d.execs[1])
    assert.same({1, 1}, d.queues)
    -- the replay waits for queue 2's one job, which ends: every wait ends
    assert.is_false(reader.job_ops(d):whatif({1}).partial)
  end)

  it("gives another thread the range of its slices and edges", function()
    -- worker 0: job 1 0..2; thread 1 waits for it (finished) at 3, submits
    -- job 2 (never run) 5..6; the caller records nothing; the session stops at 9.
    local lanes = {{name = "worker 0", role = "worker", queue = 1}, {name = "thread 1", role = "other"},
                   {name = "caller", role = "caller"}}
    local text = file(lanes, [[
{"ph":"X","ts":0,"dur":2,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"i","s":"t","cat":"edge","name":"waited for","ts":3,"pid":1,"tid":2,"args":{"on":1}},
{"ph":"X","ts":5,"dur":1,"pid":1,"tid":2,"name":"submit b","cat":"submit","args":{"job":2}}
]], 9)
    assert.same({stop = 9, partial = false, queues = {1}, lanes = {"worker 0", "thread 1", "caller"}, execs = {
      {job = 1, queue = 1, lane = 1, cat = "a", ops = {{"run", 0, 2, lane = 1, cat = "a"}}},
      {thread = true, lane = 2, ops = {
        {"wait", 3, lane = 2, job = 1},
        {"own", 3, 5, lane = 2},
        {"submit", 5, 6, lane = 2}, -- job 2 never ran: no executor
      }},
      {thread = true, caller = true, lane = 3, ops = {{"own", 0, 9, lane = 3}}},
    }}, dump(text))
  end)

  it("builds a big trace's graph without recursion, every job and op there", function()
    -- 20,000 jobs on 2 workers, each after the one before, submitted by the
    -- caller inside 5,000 nested spans; job k runs k*10+5 .. k*10+10 on
    -- worker k % 2; its submit is k*10 .. k*10+1, its after edge at k*10+1.
    local n, depth = 20000, 5000
    local ev = {}
    for d = 1, depth do
      ev[#ev + 1] = ('{"ph":"X","ts":0,"dur":%d,"pid":1,"tid":3,"name":"s%d","cat":"s%d","args":{"span":%d,"piece":1}}')
                      :format(n * 10 + 2 * depth - d, d % 3, d % 3, d)
    end
    for k = 1, n do
      ev[#ev + 1] = ('{"ph":"X","ts":%d,"dur":1,"pid":1,"tid":3,"name":"submit j","cat":"submit","args":{"job":%d}}')
                      :format(k * 10, k)
      if k > 1 then
        ev[#ev + 1] = ('{"ph":"i","s":"t","cat":"edge","name":"after","ts":%d,"pid":1,"tid":3,"args":{"job":%d,"on":%d}}')
                        :format(k * 10 + 1, k, k - 1)
      end
      ev[#ev + 1] = ('{"ph":"X","ts":%d,"dur":5,"pid":1,"tid":%d,"name":"j","cat":"job","args":{"job":%d}}')
                      :format(k * 10 + 5, k % 2 + 1, k)
    end
    local stop = n * 10 + 2 * depth + 10
    local d = dump(file(LANES, table.concat(ev, ",\n"), stop))
    assert.equal(n + 1, #d.execs)
    for k = 1, n, 997 do
      local e = d.execs[k]
      local ops = {{"run", k * 10 + 5, k * 10 + 10, lane = k % 2 + 1, cat = "j"}}
      if k > 1 then table.insert(ops, 1, {"wait", k * 10 + 1, job = k - 1}) end
      assert.same({job = k, queue = 1, lane = k % 2 + 1, cat = "j", sub = {n + 1, 2 * k}, ready = k * 10 + 1, ops = ops}, e)
    end
    local caller = d.execs[n + 1].ops
    -- own 0..10, then per job its submit and own time to the next (the last's
    -- to the innermost span's end), one own piece to each outer span's end,
    -- and the tail after the outermost: 1 + 2 * n + (depth - 1) + 1
    assert.equal(2 * n + depth + 1, #caller)
    assert.same({"own", 0, 10, lane = 3, cat = "s2"}, caller[1]) -- span 5000, the innermost (5000 % 3)
    assert.same({"own", n * 10 + depth, n * 10 + depth + 1, lane = 3, cat = "s1"}, caller[2 * n + 2])
    assert.same({"own", n * 10 + 2 * depth - 1, stop, lane = 3}, caller[#caller])
  end)

  it("refuses what is no model, and keeps to the model's lanes", function()
    local m = load_text(WITH_EDGES)
    local g = reader.job_graph(m)
    assert.has_error(function() g:ops(42) end)
    assert.has_error(function() reader.job_graph{lanes = {}, flows = {}, awaits = {}, copy_ts = {}, copy_dur = {},
                                                copy_name = {}, copy_job = {}}:ops({lanes = 7}) end,
                     "graph:ops: model.lanes is not a table")
    -- a hand-made model's slice ending past int64 nanoseconds
    local huge = {t0 = 0, t1 = 1, lanes = {{name = "worker 0", n = 1, kind = {"job"}, job = {1}, ts = {8e15},
                                             dur = {8e15}, cat = {"x"}, sname = {"x"}}},
                  flows = {}, awaits = {}, copy_ts = {}, copy_dur = {}, copy_name = {}, copy_job = {}}
    assert.has_error(function() reader.job_graph(huge):ops(huge) end, "graph:ops: a time is out of range")
    -- this graph's jobs ran on lanes 1 and 2; a model with one lane has no such lanes
    local one = load_text(file({{name = "caller", role = "caller"}},
                                '{"ph":"X","ts":0,"dur":1,"pid":1,"tid":1,"name":"x","cat":"x"}', 5))
    local d = g:ops(one):dump()
    assert.same({"caller"}, d.lanes)
    for _, e in ipairs(d.execs) do
      assert.is_true(e.lane == nil or e.lane == 1)
      for _, o in ipairs(e.ops) do assert.is_true(o.lane == nil or o.lane == 1) end
    end
  end)

  it("round-trips through reader.job_ops", function()
    for _, text in ipairs{WITH_EDGES, WITHOUT_EDGES} do
      local d = dump(text)
      assert.same(d, reader.job_ops(d):dump())
    end
  end)

  -- What the program did, in order, by construction (the executors' kinds
  -- without their own time and the run pieces, whose lengths are the
  -- clock's; each named job as its id).
  local function shape(d, e)
    local out = {}
    for _, o in ipairs(e.ops) do
      if o[1] ~= "own" and o[1] ~= "run" then
        out[#out + 1] = o.job and ("%s %d"):format(o[1], d.execs[o.job].job) or o[1]
      end
    end
    return out
  end

  it("builds a recorded program's graph: every wait, await and after dependency there", function()
    -- One worker: the parent submits a child and awaits it (the child can
    -- only run once the parent yields); the caller waits for the parent,
    -- then submits a job after the parent (finished by then: its edge is
    -- recorded all the same) and waits for it, then for every job, and the
    -- scope's end does once more.
    p.profile_start(10000)
    local ids = {}
    jobque.with_job_que({workers = 1}, function(q)
      local parent = q:submit(function()
        local child = jobque.current():submit(function() return 1 end)
        return child:wait() + 1
      end)
      assert.equal(2, parent:wait())
      local after = q:after({parent}, function() return 3 end)
      assert.equal(3, after:wait())
      q:wait_all()
      ids = {parent = parent:id(), after = after:id()}
    end)
    p.profile_stop()
    local _, _, path = S.save(p)
    local d = ops_of(assert(trace.load(path))):dump()
    local by_id = {}
    for _, e in ipairs(d.execs) do
      if e.job then by_id[e.job] = e end
    end
    local parent, after = by_id[ids.parent], by_id[ids.after]
    local child_id = d.execs[parent.ops[3].job].job -- the parent's submit (after its copy in and first run)
    assert.same({"copy in", ("submit %d"):format(child_id), ("suspend %d"):format(child_id),
                 ("wait %d"):format(child_id), ("copy result %d"):format(child_id), "copy out"}, shape(d, parent))
    assert.same({"copy in", "copy out"}, shape(d, by_id[child_id]))
    assert.same({("wait %d"):format(ids.parent), "copy in", "copy out"}, shape(d, after))
    local caller = d.execs[#d.execs]
    assert.is_true(caller.caller)
    assert.same({("submit %d"):format(ids.parent), ("block %d"):format(ids.parent), ("wait %d"):format(ids.parent),
                 ("copy result %d"):format(ids.parent), ("submit %d"):format(ids.after),
                 ("block %d"):format(ids.after), ("wait %d"):format(ids.after), ("copy result %d"):format(ids.after),
                 "block", "wait", "block", "wait"}, shape(d, caller)) -- wait_all, then the scope's end
    -- queues are numbered in the process's creation order: this one's is
    -- its worker's, and every other number has no worker in this trace
    local qn = parent.queue
    assert.equal(qn, after.queue)
    local alls = 0
    for _, o in ipairs(caller.ops) do
      if (o[1] == "wait" or o[1] == "block") and not o.job then
        assert.equal(qn, o.queue) -- each names the queue
        alls = alls + 1
      end
    end
    assert.equal(4, alls)
    assert.equal(qn, #d.queues)
    for k, workers in ipairs(d.queues) do assert.equal(k == qn and 1 or 0, workers) end
    assert.is_false(d.partial)
  end)
end)

-- Random traces (seeded: JQ_FUZZ_SEED=N repeats a run; the seed is in every
-- failure's message) whose items nest as a writer of ours nests them: the
-- graph's ops never overlap, the caller's tile the session, each job's
-- slices are its run, submits, copy results and blocks, and the dump
-- round-trips.
describe("graph:ops on random traces", function()
  local SEED = tonumber(os.getenv("JQ_FUZZ_SEED") or "") or os.time()
  local ROUNDS = tonumber(os.getenv("JQ_FUZZ_ROUNDS") or "") or 60
  local rnd = math.random

  -- Items inside [t, t_end) of lane tid, one after the other (maybe touching):
  -- submits, copy results, waits and edges (waiter `job`, nil outside jobs),
  -- spans (job's, or the thread's holding more items, `depth` deep).
  local function fill(ev, tid, t, t_end, job, njobs, depth, sums)
    while true do
      local gap, len = rnd(0, 3), rnd(0, 4)
      if t + gap + len > t_end then return end
      t = t + gap
      local what = rnd(1, 6)
      local jobarg = job and (',"job":%d'):format(job) or ""
      if what == 1 then
        ev[#ev + 1] = ('{"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d,"name":"submit j","cat":"submit","args":{"job":%d}}')
                        :format(t, len, tid, rnd(1, njobs + 1))
        sums.work = sums.work + len
      elseif what == 2 then
        ev[#ev + 1] = ('{"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d,"name":"copy result","cat":"copy",'
                       .. '"args":{"job":%d,"bytes":1,"category":"j"}}'):format(t, len, tid, rnd(1, njobs))
        sums.work = sums.work + len
      elseif what == 3 then
        local on = rnd(0, njobs)
        ev[#ev + 1] = on == 0 and ('{"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d,"name":"wait all","cat":"wait"}')
                                    :format(t, len, tid)
                      or ('{"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d,"name":"wait","cat":"wait","args":{"job":%d}}')
                           :format(t, len, tid, on)
        sums.work = sums.work + len
      elseif what == 4 then
        ev[#ev + 1] = ('{"ph":"i","s":"t","cat":"edge","name":"waited for","ts":%d,"pid":1,"tid":%d,"args":{"on":%d%s}}')
                        :format(t, tid, rnd(1, njobs), jobarg)
        len = 0
      elseif what == 5 and not job then
        ev[#ev + 1] = ('{"ph":"i","s":"t","cat":"edge","name":"after","ts":%d,"pid":1,"tid":%d,"args":{"job":%d,"on":%d}}')
                        :format(t, tid, rnd(1, njobs), rnd(1, njobs))
        len = 0
      else
        len = len + rnd(0, 10)
        if t + len > t_end then return end
        ev[#ev + 1] = ('{"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d,"name":"s","cat":"s%d","args":{"span":%d,"piece":1%s}}')
                        :format(t, len, tid, depth, #ev + 1, jobarg)
        if not job and depth < 3 then fill(ev, tid, t, t + len, nil, njobs, depth + 1, sums) end
      end
      t = t + len
    end
  end

  -- A random trace: jobs one after another on two workers (copy in, slices
  -- with items inside and suspensions between, copy out), the caller's
  -- items from 0. Returns its text and what each job's slices and copies took.
  local function random_trace()
    local njobs, ev, jobs = rnd(1, 12), {}, {}
    local at = {0, 0}
    for j = 1, njobs do
      local w = rnd(1, 2)
      local t = at[w] + rnd(0, 5)
      local info = {slices = 0, run = 0, nslices = rnd(1, 3), copies = 0}
      local cin = rnd(0, 2)
      ev[#ev + 1] = ('{"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d,"name":"copy in","cat":"copy",'
                     .. '"args":{"job":%d,"bytes":1,"category":"j"}}'):format(t, cin, w, j)
      t = t + cin
      info.copies = info.copies + cin
      for k = 1, info.nslices do
        if k > 1 then t = t + rnd(0, 6) end
        local len = rnd(0, 30)
        ev[#ev + 1] = ('{"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d,"name":"j","cat":"job","args":{"job":%d}}')
                        :format(t, len, w, j)
        fill(ev, w, t, t + len, j, njobs, 1, {work = 0})
        info.run = info.run + len
        t = t + len
      end
      local cout = rnd(0, 2)
      ev[#ev + 1] = ('{"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d,"name":"copy out","cat":"copy",'
                     .. '"args":{"job":%d,"bytes":1,"category":"j"}}'):format(t, cout, w, j)
      info.copies = info.copies + cout
      at[w] = t + cout
      jobs[j] = info
    end
    local sums = {work = 0}
    local stop = math.max(at[1], at[2]) + 100
    fill(ev, 3, 0, stop, nil, njobs, 1, sums)
    return file(LANES, table.concat(ev, ",\n"), stop), jobs, sums, stop
  end

  local KEEPS = {run = true, submit = true, ["copy result"] = true, block = true}

  it("cuts every executor's items into ops that never overlap", function()
    math.randomseed(SEED)
    for r = 1, ROUNDS do
      local text, jobs, sums, stop = random_trace()
      local d = dump(text)
      local why = ("round %d (seed %d)"):format(r, SEED)
      for x, e in ipairs(d.execs) do
        local at, lead, inside, copies, suspends = -math.huge, true, 0, 0, 0
        for i, o in ipairs(e.ops) do
          if o[1] == "wait" then
            if not (lead and o.lane == nil) then
              lead = false
              assert(o[2] >= at, ("%s: exec %d op %d: a wait before the op it follows"):format(why, x, i))
            end
          else
            lead = false
            assert(o[2] >= at and o[3] >= o[2], ("%s: exec %d op %d overlaps"):format(why, x, i))
            at = o[3]
            if KEEPS[o[1]] then inside = inside + (o[3] - o[2]) end
            if o[1] == "copy in" or o[1] == "copy out" then copies = copies + (o[3] - o[2]) end
            if o[1] == "suspend" then suspends = suspends + 1 end
          end
        end
        if e.job then
          local info = jobs[e.job]
          assert(info.run == inside, ("%s: job %d's slices %d, its ops %d"):format(why, e.job, info.run, inside))
          assert(info.copies == copies, ("%s: job %d's copies"):format(why, e.job))
          assert(info.nslices - 1 == suspends, ("%s: job %d's suspensions"):format(why, e.job))
          if e.sub then
            local o = d.execs[e.sub[1]].ops[e.sub[2]]
            assert(o[1] == "submit" and o.job == x, ("%s: job %d's submit"):format(why, e.job))
          end
        elseif e.caller then
          local own, t = 0, 0
          for i, o in ipairs(e.ops) do
            if o[1] ~= "wait" then
              assert(o[2] == t, ("%s: the caller's op %d leaves a hole"):format(why, i))
              t = o[3]
              if o[1] == "own" then own = own + (o[3] - o[2]) end
            end
          end
          assert(t == stop, ("%s: the caller's ops end at %s"):format(why, t))
          assert(own == stop - sums.work, ("%s: the caller's own time"):format(why))
        end
      end
      assert(#d.execs == #jobs + 1, why)
      assert.same(d, reader.job_ops(d):dump(), why)
    end
  end)
end)

