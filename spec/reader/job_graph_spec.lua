-- Every job's life in the trace (`after` arrows, ready times), the latencies
-- derived from it, the critical path and the page's graph part. The
-- hand-built traces' figures are worked out by hand in the comments.
local S = require "support"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"
local p = require "jobque_profile"
local jobque = require "jobque"
local cjson = require "cjson"

local function load_text(text)
  local path = S.tmpfile()
  S.write(path, text)
  return assert(trace.load(path))
end

local HEAD = [[
{"traceEvents":[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"worker 1"}},
{"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"caller"}},
]]
local function file(events, stop)
  return HEAD .. events .. ([[
],
"jobqueProfile":{"version":1,"clock":"tsc","durationUs":%d,"startUs":0,"stopUs":%d,"lostEvents":0,"lanes":3,
 "laneInfo":[{"tid":1,"name":"worker 0","role":"worker","recorded":1,"dropped":0},
             {"tid":2,"name":"worker 1","role":"worker","recorded":1,"dropped":0},
             {"tid":3,"name":"caller","role":"caller","recorded":1,"dropped":0}],
 "categories":[],"markers":[]}}
]]):format(stop, stop)
end

-- A (job 1, 20 us) then B (job 2, 30 us, after A) beside C (job 3, 10 us):
--   caller:   submit A 0..1, submit C 1..2, submit B 2..3, wait all 3..62
--   worker 0: A 5..25; "dependency done" A -> B (ready) at 26;
--             B: copy in 29..30, slice 30..60, copy out 60..61
--   worker 1: C 4..14; the session stops at 70.
-- Path, back from the session's end: the caller's own time 62..70 (8), its
-- wake after its wait for all (61..62: 1) whose last job to end was B (61):
-- B's copy out 1, run 30, copy in 1; B started after A (its dependency,
-- ended at 25) with both workers free: scheduling delay 25..29 (4); A's
-- run 20, scheduling delay 1..5 (4: worker 1 ran C from 4, worker 0 was
-- free), A's submit 0..1: 70 us from 0, jobs 1 then 2.
-- Ready latencies: A 5 - 1 = 4, B 29 - 26 = 3, C 4 - 2 = 2.
local CHAIN = file([[
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"submit alpha","cat":"submit","args":{"job":1}},
{"ph":"X","ts":1,"dur":1,"pid":1,"tid":3,"name":"submit gamma","cat":"submit","args":{"job":3}},
{"ph":"X","ts":2,"dur":1,"pid":1,"tid":3,"name":"submit beta","cat":"submit","args":{"job":2}},
{"ph":"X","ts":3,"dur":59,"pid":1,"tid":3,"name":"wait all","cat":"wait"},
{"ph":"X","ts":5,"dur":20,"pid":1,"tid":1,"name":"alpha","cat":"job","args":{"job":1}},
{"ph":"X","ts":26,"dur":0,"pid":1,"tid":1,"name":"dependency done","cat":"flow","args":{"job":1,"dependant":2,"ready":true}},
{"ph":"X","ts":29,"dur":1,"pid":1,"tid":1,"name":"copy in","cat":"copy","args":{"job":2,"bytes":9,"category":"beta"}},
{"ph":"X","ts":30,"dur":30,"pid":1,"tid":1,"name":"beta","cat":"job","args":{"job":2}},
{"ph":"X","ts":60,"dur":1,"pid":1,"tid":1,"name":"copy out","cat":"copy","args":{"job":2,"bytes":9,"category":"beta"}},
{"ph":"X","ts":4,"dur":10,"pid":1,"tid":2,"name":"gamma","cat":"job","args":{"job":3}}
]], 70)

-- A parent P (job 10) awaits a child Q (job 11) it submitted; the caller
-- waits for P, then submits R (job 12):
--   caller:   submit P 0..1, wait P 1..21, submit R 22..23
--   worker 0: P 2..6 (submit Q 3..4 inside), await 6..16, P 16..20
--   worker 1: Q 5..13, wake job (P) at 14; R 24..30; the session stops at 40.
-- Path, back from the session's end (40): the caller's own time 23..40
-- (R is not waited for: not on the path), its submit of R 22..23, its own
-- 21..22, its wake 20..21 after P's end (it waited for P); P's run 16..20,
-- resume latency 13..16 (Q's end to P resumed, its worker free); Q's run
-- 5..13, scheduling delay 4..5 (worker 1 free), Q's submit 3..4 inside P;
-- P's run 2..3, scheduling delay 1..2, P's submit 0..1. In all 40 = caller
-- 18 + run 13 (P 5, Q 8) + resume latency 4 + submit 3 + scheduling delay 2.
-- P's resume latency: woken at 14, resumed at 16: 2.
local AWAIT = file([[
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"submit p","cat":"submit","args":{"job":10}},
{"ph":"X","ts":1,"dur":20,"pid":1,"tid":3,"name":"wait","cat":"wait","args":{"job":10}},
{"ph":"X","ts":22,"dur":1,"pid":1,"tid":3,"name":"submit r","cat":"submit","args":{"job":12}},
{"ph":"X","ts":2,"dur":4,"pid":1,"tid":1,"name":"p","cat":"job","args":{"job":10}},
{"ph":"X","ts":3,"dur":1,"pid":1,"tid":1,"name":"submit q","cat":"submit","args":{"job":11}},
{"ph":"b","ts":6,"pid":1,"tid":1,"name":"await","cat":"await","id2":{"local":"0xa"},"args":{"job":10,"awaits":11}},
{"ph":"e","ts":16,"pid":1,"tid":1,"name":"await","cat":"await","id2":{"local":"0xa"},"args":{"job":10,"awaits":11}},
{"ph":"X","ts":16,"dur":4,"pid":1,"tid":1,"name":"p","cat":"job","args":{"job":10}},
{"ph":"X","ts":5,"dur":8,"pid":1,"tid":2,"name":"q","cat":"job","args":{"job":11}},
{"ph":"X","ts":14,"dur":0,"pid":1,"tid":2,"name":"wake job","cat":"flow","args":{"job":10}},
{"ph":"X","ts":24,"dur":6,"pid":1,"tid":2,"name":"r","cat":"job","args":{"job":12}}
]], 40)

-- A step as "kind start+dur job".
local function steps_of(cp)
  local out = {}
  for _, x in ipairs(cp.steps) do out[#out + 1] = ("%s %s+%s %s"):format(x.kind, x.start_us, x.dur_us, x.job or "-") end
  return out
end

local function us_of(cp, kind)
  for _, k in ipairs(cp.by_kind) do if k.kind == kind then return k.us end end
  return 0
end

describe("the critical path of a hand-built trace", function()
  it("of a chain beside an independent job is the chain, with its make-up", function()
    local f = stats.compute(load_text(CHAIN))
    local cp = f.critical_path
    assert.same({1, 2}, cp.jobs)
    assert.same({"submit 0+1 1", "scheduling delay 1+4 1", "run 5+20 1", "scheduling delay 25+4 2", "copy in 29+1 2",
      "run 30+30 2", "copy out 60+1 2", "resume latency 61+1 -", "caller 62+8 -"}, steps_of(cp))
    assert.same({70, 0, 70, 70}, {cp.duration_us, cp.start_us, cp.finish_us, cp.session_us})
    assert.same({{name = "beta", run_us = 30}, {name = "alpha", run_us = 20}}, cp.by_category)
    assert.same({50, 8, 8, 1, 1, 1, 1}, {us_of(cp, "run"), us_of(cp, "scheduling delay"), us_of(cp, "caller"),
      us_of(cp, "copy in"), us_of(cp, "copy out"), us_of(cp, "submit"), us_of(cp, "resume latency")})
    assert.same({1, 60 / 70, 60}, {cp.share, cp.achieved, cp.total_run_us}) -- run 20 + 30 + 10
    assert.is_false(cp.partial)
  end)

  it("goes through an awaited job, the job that submitted it and the caller's wait", function()
    local cp = stats.compute(load_text(AWAIT)).critical_path
    assert.same({10, 11, 10}, cp.jobs)
    assert.same({"submit 0+1 10", "scheduling delay 1+1 10", "run 2+1 10", "submit 3+1 10",
      "scheduling delay 4+1 11", "run 5+8 11", "resume latency 13+3 10", "run 16+4 10", "resume latency 20+1 -",
      "caller 21+1 -", "submit 22+1 12", "caller 23+17 -"}, steps_of(cp))
    assert.same({{kind = "caller", us = 18}, {kind = "run", us = 13}, {kind = "resume latency", us = 4},
      {kind = "submit", us = 3}, {kind = "scheduling delay", us = 2}}, cp.by_kind)
    assert.same({{name = "q", run_us = 8}, {name = "p", run_us = 5}}, cp.by_category)
  end)

  it("goes back through a wait for all to the job that ended last before it", function()
    -- caller: submit A 0..1, wait all 1..21, submit B 22..23; worker 0: A 2..20, B 24..30.
    -- Back from the session's end (40): the caller's own time and its submit of B (not
    -- waited for), its wake 20..21 after A (the one job ended by the wait's end), A's
    -- run 18, scheduling delay 1..2 (both workers free), A's submit: 40.
    local cp = stats.compute(load_text(file([[
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"submit a","cat":"submit","args":{"job":1}},
{"ph":"X","ts":1,"dur":20,"pid":1,"tid":3,"name":"wait all","cat":"wait"},
{"ph":"X","ts":22,"dur":1,"pid":1,"tid":3,"name":"submit b","cat":"submit","args":{"job":2}},
{"ph":"X","ts":2,"dur":18,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":24,"dur":6,"pid":1,"tid":1,"name":"b","cat":"job","args":{"job":2}}
]], 40))).critical_path
    assert.same({1}, cp.jobs)
    assert.same({"submit 0+1 1", "scheduling delay 1+1 1", "run 2+18 1", "resume latency 20+1 -", "caller 21+1 -",
      "submit 22+1 2", "caller 23+17 -"}, steps_of(cp))
  end)

  it("walks a chain of 100,000 jobs without recursion", function()
    -- job i runs i*10 .. i*10+5 on worker 0, ready at its predecessor's end + 1; the caller
    -- submits job 1 (0..1) and waits for all until n*10+6. Back from the end (n*10+10):
    -- the caller 4, its wake 1, each job's run 5 and the scheduling delay 5 before it (the
    -- other worker was free), job 1's 1..10 (9), the submit 1.
    local ev, n = {}, 100000
    ev[1] = '{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"submit c","cat":"submit","args":{"job":1}}'
    ev[2] = ('{"ph":"X","ts":1,"dur":%d,"pid":1,"tid":3,"name":"wait all","cat":"wait"}'):format(n * 10 + 5)
    for i = 1, n do
      ev[#ev + 1] = ('{"ph":"X","ts":%d,"dur":5,"pid":1,"tid":1,"name":"c","cat":"job","args":{"job":%d}}')
        :format(i * 10, i)
      if i < n then
        ev[#ev + 1] = ('{"ph":"X","ts":%d,"dur":0,"pid":1,"tid":1,"name":"dependency done","cat":"flow",'
          .. '"args":{"job":%d,"dependant":%d,"ready":true}}'):format(i * 10 + 6, i, i + 1)
      end
    end
    local cp = stats.compute(load_text(file(table.concat(ev, ",\n"), n * 10 + 10))).critical_path
    assert.equal(n, #cp.jobs)
    assert.same({1, 2, n}, {cp.jobs[1], cp.jobs[2], cp.jobs[n]})
    assert.equal(n * 10 + 10, cp.duration_us)
    assert.same({{kind = "scheduling delay", us = 5 * (n - 1) + 9}, {kind = "run", us = n * 5},
      {kind = "caller", us = 4}, {kind = "resume latency", us = 1}, {kind = "submit", us = 1}}, cp.by_kind)
  end)
end)

describe("latencies of a hand-built trace", function()
  it("gives ready latency per job and category, p50 / p95 / max, and the longest waits", function()
    local f = stats.compute(load_text(CHAIN))
    local r = f.latency.ready
    assert.same({3, 3, 4, 4}, {r.count, r.p50_us, r.p95_us, r.max_us}) -- of 2, 3, 4 (nearest rank)
    assert.same({"alpha", "beta", "gamma"}, {r.by_category[1].name, r.by_category[2].name, r.by_category[3].name})
    assert.same({4, 3, 2}, {r.by_category[1].max_us, r.by_category[2].max_us, r.by_category[3].max_us})
    local top = f.latency.top_ready
    assert.same({1, 2, 3}, {top[1].job, top[2].job, top[3].job})
    assert.same({4, 26, 29}, {top[2 - 1].latency_us, top[2].ready_us, top[2].start_us})
    assert.same({30, 20, 10}, {f.latency.run.max_us, f.latency.run.p50_us, f.latency.run.by_category[3].max_us})
  end)

  it("gives resume latency (awaited job ended -> resumed) and suspended time", function()
    local l = stats.compute(load_text(AWAIT)).latency
    assert.same({1, 2}, {l.resume.count, l.resume.max_us})
    assert.equal("p", l.resume.by_category[1].name)
    assert.equal(10, l.suspended.max_us)
  end)

  it("counts the awaits and their time, cut at the range", function()
    -- P's one await runs 6..16: 10 us in all; from 10 on, 10..16 is 6 us;
    -- from 17 on it is outside (it neither overlaps nor starts there).
    local m = load_text(AWAIT)
    assert.same({count = 1, time = 10}, stats.compute(m).awaits)
    assert.same({count = 1, time = 6}, stats.compute(m, 10, 40).awaits)
    assert.same({count = 0, time = 0}, stats.compute(m, 17, 40).awaits)
  end)

  it("prints the latencies and puts both sections in the JSON", function()
    -- (the critical path's lines: why_view_spec)
    local f = stats.compute(load_text(CHAIN))
    assert.matches("the 3 longest ready latencies", table.concat(report.latency_lines(f), "\n"))
    local j = cjson.decode(report.json(f))
    assert.equal(70, j.critical_path.duration_us)
    assert.same({1, 2}, j.critical_path.jobs)
    assert.is_number(j.critical_path.share)
    assert.is_table(j.critical_path.by_category)
    assert.same({"submit", 0, 1, "caller", 1}, {j.critical_path.steps[1].kind, j.critical_path.steps[1].start_us,
      j.critical_path.steps[1].dur_us, j.critical_path.steps[1].lane, j.critical_path.steps[1].job})
    assert.same({kind = "run", us = 50}, j.critical_path.by_kind[1])
    assert.is_false(j.critical_path.partial)
    for _, k in ipairs{"ready", "resume"} do
      for _, key in ipairs{"p50_us", "p95_us", "max_us"} do assert.is_number(j.latency[k][key], k .. "." .. key) end
      assert.is_table(j.latency[k].by_category)
    end
  end)

  it("leaves both out of a trace without jobs", function()
    local f = stats.compute(load_text(file([[
{"ph":"X","ts":0,"dur":5,"pid":1,"tid":3,"name":"x","cat":"other"}
]], 10)))
    assert.is_nil(f.critical_path)
    assert.is_nil(f.latency)
    assert.same({}, report.critical_path_lines(f))
  end)
end)

-- Busy work for `ms` milliseconds of this thread's CPU time (the work a job
-- does; nothing waits on it).
local function work(ms)
  local stop = os.clock() + ms / 1000
  local x = 0
  while os.clock() < stop do x = x + 1 end
  return x
end

-- A (20 ms) -> B (30 ms) beside C (10 ms); returns the saved trace, its
-- model and the three ids.
local function chain_run(workers)
  local ca, cb, cc = p.profile_category("graph A"), p.profile_category("graph B"), p.profile_category("graph C")
  local ids = {}
  local T = require("jobque.core")._test
  p.profile_start(10000)
  jobque.with_job_que({workers = workers}, function(q)
    T.stop(false) -- A waits for B and C to be submitted (B's dependency is then surely pending)
    p.profile_tag(ca)
    local a = q:submit(function(ms)
      local flag = require("jobque.core")._test
      while not flag.stopping() do end
      return work(ms)
    end, 20)
    p.profile_tag(cb)
    local b = q:after({a}, work, 30)
    p.profile_tag(cc)
    local c = q:submit(work, 10)
    p.profile_tag(0)
    ids = {a = a:id(), b = b:id(), c = c:id()}
    T.stop()
    q:wait_all()
  end)
  p.profile_stop()
  local t, _, path = S.save(p)
  return t, assert(trace.load(path)), ids
end

local function job_slices(t, job)
  return S.events(t, function(ev) return ev.ph == "X" and ev.cat == "job" and ev.args.job == job end)
end

local function span_of(t, job) -- first start, last end of a job's slices
  local a, z = math.huge, -math.huge
  for _, ev in ipairs(job_slices(t, job)) do
    a, z = math.min(a, ev.ts), math.max(z, ev.ts + ev.dur)
  end
  return a, z
end

describe("a recorded graph", function()
  teardown(function() p.profile_stop() end)

  it("draws each `after` dependency as an arrow Perfetto accepts, and marks when its job became ready", function()
    local t, _, ids = chain_run(2)
    local done = S.events(t, function(ev) return ev.name == "dependency done" end)
    assert.equal(1, #done)
    local d = done[1]
    assert.same({"X", 0, "flow", ids.a, ids.b, true, true},
                {d.ph, d.dur, d.cat, d.args.job, d.args.dependant, d.args.ready, d.flow_out})
    local _, a_end = span_of(t, ids.a)
    assert.is_true(d.ts >= a_end, "recorded once A ended")
    local ends = S.events(t, function(ev) return ev.name == "after" and ev.cat == "flow" end)
    assert.equal(1, #ends)
    local e = ends[1]
    assert.same({"X", 0, "flow", ids.b, ids.a, true, d.bind_id},
                {e.ph, e.dur, e.cat, e.args.job, e.args.after, e.flow_in, e.bind_id})
    -- Nested in B's first slice (same lane, 1/2048 us after its start: speedscope
    -- cannot open a zero-length slice at its parent's start), which keeps its submit's arrow.
    local first = job_slices(t, ids.b)[1]
    assert.same({first.tid, first.ts + 1 / 2048}, {e.tid, e.ts})
    assert.equal(ids.b * 2, first.bind_id)
    assert.is_true(first.dur > 0)
    -- Flow ids unique per direction, only on X slices, every end has a start.
    local out, into = {}, {}
    for _, ev in ipairs(t.traceEvents) do
      if ev.bind_id then
        assert.equal("X", ev.ph)
        local side = ev.flow_out and out or into
        assert.is_nil(side[ev.bind_id], "flow id reused: " .. ev.bind_id)
        side[ev.bind_id] = true
      end
    end
    for id in pairs(into) do assert.is_true(out[id], "flow " .. id .. " ends without a start") end
    for id in pairs(out) do assert.is_true(into[id], "flow " .. id .. " starts without an end") end
  end)

  it("on 2 workers has the chain A then B as its critical path", function()
    local t, model, ids = chain_run(2)
    local a0 = span_of(t, ids.a)
    local b0, b1 = span_of(t, ids.b)
    local _, c1 = span_of(t, ids.c)
    assert.is_true(b1 > c1, "by construction B (after A, 50 ms of work) ends after C (10 ms)")
    local cp = stats.compute(model).critical_path
    assert.same({ids.a, ids.b}, cp.jobs)
    local a_run, b_run = 0, 0
    for _, ev in ipairs(job_slices(t, ids.a)) do a_run = a_run + ev.dur end
    for _, ev in ipairs(job_slices(t, ids.b)) do b_run = b_run + ev.dur end
    local on_path = 0 -- the path's run steps of A and B: all their slices
    for _, x in ipairs(cp.steps) do
      if x.kind == "run" and (x.job == ids.a or x.job == ids.b) then on_path = on_path + x.dur_us end
    end
    assert.near(a_run + b_run, on_path, 0.01)
    -- From the session's start (the caller's own time before A's submit) to its end.
    assert.is_true(cp.duration_us >= b1 - a0 and cp.duration_us <= model.t1 - model.t0)
    assert.is_true(b0 >= a0)
  end)

  it("on 1 worker gives the job that waited a ready latency of at least the worker's busy time", function()
    local t, model, ids = chain_run(1)
    local f = stats.compute(model)
    local by_job = {}
    for _, x in ipairs(f.latency.top_ready) do by_job[x.job] = x end
    -- C was ready at its submit; whatever ran on the worker between that and
    -- C's start (A, B or both) was time C waited for the worker.
    local c = by_job[ids.c]
    local busy = 0
    for _, job in ipairs{ids.a, ids.b} do
      for _, ev in ipairs(job_slices(t, job)) do
        local x, y = math.max(ev.ts, c.ready_us), math.min(ev.ts + ev.dur, c.start_us)
        if y > x then busy = busy + (y - x) end
      end
    end
    assert.is_true(busy > 0, "the worker ran A before C: C waited")
    assert.is_true(c.latency_us >= busy - 0.01, ("latency %.3f, busy %.3f"):format(c.latency_us, busy))
    assert.is_true(c.latency_us <= c.start_us - c.ready_us + 0.01)
  end)
end)


-- The page's graph part (page_graph.c) of a model, decoded.
local function page_graph(model)
  local html = require("jobque_profile.page").render(model)
  local text = html:match('<script type="application/json" id="graph">(.-)</script>')
  assert.is_string(text)
  return cjson.decode(text)
end

-- A model as jobque_profile.trace makes it, by hand (what job_graph reads):
-- lanes[i] = {kind, job, ts, dur, cat} rows; flows and awaits as they are.
local function model_of(t)
  local m = {lanes = {}, flows = t.flows or {}, awaits = t.awaits or {}, copy_ts = {}, copy_dur = {},
             copy_name = {}, copy_job = {}, t0 = t.t0 or 0, t1 = t.t1 or 100, categories = {}}
  for i, rows in ipairs(t.lanes) do
    local lane = {index = i, n = #rows, kind = {}, job = {}, ts = {}, dur = {}, cat = {}, sname = {}}
    for k, r in ipairs(rows) do
      lane.kind[k], lane.job[k], lane.ts[k], lane.dur[k], lane.cat[k] = r[1], r[2], r[3], r[4], r[5]
      lane.sname[k] = r[5]
    end
    m.lanes[i] = lane
  end
  return m
end

-- The index (0-based) of a category's name in model.categories.
local function cat_at(model, name)
  for i, c in ipairs(model.categories) do if c.name == name then return i - 1 end end
  error("no category " .. name)
end

describe("the page's graph part", function()
  it("of the chain holds each job's slices, latencies, submit and dependencies, and the path, in ns", function()
    -- By start: C (4), A (5), B (29, its copy in); lanes: worker 0 is 0, worker 1 is 1, the
    -- caller 2 (index 3, so sl is 2). Worker 0's slices: alpha 0, copy in 1, beta 2, copy out 3.
    -- Ready latencies 2, 4, 3 us; submits end at 2, 1, 3 us (t0 is 0); B depends on A (id 1).
    local model = load_text(CHAIN)
    local g = page_graph(model)
    assert.same({3, 1, 2}, g.id)
    assert.same({cat_at(model, "gamma"), cat_at(model, "alpha"), cat_at(model, "beta")}, g.c)
    assert.same({0, 1, 2, 3}, g.so)
    assert.same({1, 0, 0, 0, 0, 2}, g.s)
    assert.same({2000, 4000, 3000}, g.ready)
    assert.same({2, 2, 2}, g.sl)
    assert.same({2000, 1000, 3000}, g.st)
    assert.same({2, 1}, g.deps)
    assert.same({}, g.by)
    -- The path (see CHAIN) in ns, steps as [kind, start, dur, lane index, job, held_by].
    local null = cjson.null
    assert.same({1, 2}, g.path.jobs)
    assert.same({70000, 0, 70000, 1, false}, {g.path.dur, g.path.start, g.path.finish, g.path.share, g.path.partial})
    assert.same({{"submit", 0, 1000, 2, 1, null}, {"scheduling delay", 1000, 4000, 0, 1, null},
      {"run", 5000, 20000, 0, 1, null}, {"scheduling delay", 25000, 4000, 0, 2, null},
      {"copy in", 29000, 1000, 0, 2, null}, {"run", 30000, 30000, 0, 2, null}, {"copy out", 60000, 1000, 0, 2, null},
      {"resume latency", 61000, 1000, 2, null, null}, {"caller", 62000, 8000, 2, null, null}}, g.path.steps)
  end)

  it("of the await holds who submitted whom, the awaited job, resume latency and suspended time", function()
    -- By start: P (2), Q (5), R (24). Q was submitted inside P's first slice: by (1, 10).
    -- P's await of Q (6..16) resumed its second slice (index 1): aw (0, 11, 1); woken at
    -- 14, resumed at 16: rs (0, 2000 ns, 1 wake-up); suspended 10 us: sp (0, 10000).
    local g = page_graph(load_text(AWAIT))
    assert.same({10, 11, 12}, g.id)
    assert.same({0, 2, 3, 4}, g.so)
    assert.same({1, 10}, g.by)
    assert.same({0, 11, 1}, g.aw)
    assert.same({0, 2000, 1}, g.rs)
    assert.same({0, 10000}, g.sp)
    assert.same({10, 11, 10}, g.path.jobs)
  end)

  it("is null without jobs", function()
    local model = load_text(file([[{"ph":"X","ts":0,"dur":5,"pid":1,"tid":3,"name":"x","cat":"other"}]], 10))
    local html = require("jobque_profile.page").render(model)
    assert.truthy(html:find('<script type="application/json" id="graph">null</script>', 1, true))
  end)
end)

describe("the job graph of shapes a hand-made file can hold", function()
  it("keys jobs by ids that are no integers: a string, a float", function()
    -- A (job 1) 5..25 on worker 0; "dependency done" A -> "b" (ready) at 26; job "b" 30..35;
    -- job 1.5 40..50 on worker 1, woken at 38; the caller waits for all 0..50, the end.
    -- 1.5 ended last (50), so the path starts there: 1.5 ran 10, has no submit nor
    -- dependency: the path is 1.5 alone, 10 us.
    -- Ready latency: "b" only, 30 - 26 = 4. Resume latency: 1.5's, 40 - 38 = 2.
    local model = load_text(file([[
{"ph":"X","ts":0,"dur":50,"pid":1,"tid":3,"name":"wait all","cat":"wait"},
{"ph":"X","ts":5,"dur":20,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":26,"dur":0,"pid":1,"tid":1,"name":"dependency done","cat":"flow","args":{"job":1,"dependant":"b","ready":true}},
{"ph":"X","ts":30,"dur":5,"pid":1,"tid":1,"name":"b","cat":"job","args":{"job":"b"}},
{"ph":"X","ts":38,"dur":0,"pid":1,"tid":2,"name":"wake job","cat":"flow","args":{"job":1.5}},
{"ph":"X","ts":40,"dur":10,"pid":1,"tid":2,"name":"f","cat":"job","args":{"job":1.5}}
]], 50))
    local f = stats.compute(model)
    assert.same({{job = "b", category = "b", latency_us = 4, ready_us = 26, start_us = 30}}, f.latency.top_ready)
    assert.same({1, 2, 2}, {f.latency.resume.count, f.latency.resume.p50_us, f.latency.resume.max_us})
    assert.same({1.5}, f.critical_path.jobs)
    assert.same({10, {{kind = "run", us = 10}}}, {f.critical_path.duration_us, f.critical_path.by_kind})
    -- The page draws the jobs whose id is a number: 1 (start 5) and 1.5 (start 40).
    local g = page_graph(model)
    assert.same({1, 1.5}, g.id)
    assert.same({0, 1, 2}, g.so)
    assert.same({1.5}, g.path.jobs)
  end)

  it("follows a string id's after dependency back to the job it names", function()
    -- Without job 1.5, the caller waiting for all until 35: "b" finished last (35): run 5,
    -- scheduling delay 30 - 25 = 5 after A (both workers free), A's run 20.
    local cp = stats.compute(load_text(file([[
{"ph":"X","ts":0,"dur":35,"pid":1,"tid":3,"name":"wait all","cat":"wait"},
{"ph":"X","ts":5,"dur":20,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":26,"dur":0,"pid":1,"tid":1,"name":"dependency done","cat":"flow","args":{"job":1,"dependant":"b","ready":true}},
{"ph":"X","ts":30,"dur":5,"pid":1,"tid":1,"name":"b","cat":"job","args":{"job":"b"}}
]], 35))).critical_path
    assert.same({1, "b"}, cp.jobs)
    assert.same({30, {{kind = "run", us = 25}, {kind = "scheduling delay", us = 5}}}, {cp.duration_us, cp.by_kind})
  end)

  it("reads a string that is an integer as that job's id, as math.tointeger does, but draws only number cells", function()
    -- "dependency done" names the dependant "2": job 2 (30..35), ready at 26 after A (5..25):
    -- its ready latency 4; the caller waits for all until 35: the path 2 <- 1: 35 - 5 = 30 us,
    -- scheduling delay 30 - 25 = 5. Job 3's slice (1..2) has the job cell " 3 ": job 3 in
    -- the figures, not on the page.
    local model = load_text(file([[
{"ph":"X","ts":0,"dur":35,"pid":1,"tid":3,"name":"wait all","cat":"wait"},
{"ph":"X","ts":5,"dur":20,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":26,"dur":0,"pid":1,"tid":1,"name":"dependency done","cat":"flow","args":{"job":1,"dependant":"2","ready":true}},
{"ph":"X","ts":30,"dur":5,"pid":1,"tid":1,"name":"b","cat":"job","args":{"job":2}},
{"ph":"X","ts":1,"dur":1,"pid":1,"tid":2,"name":"c","cat":"job","args":{"job":" 3 "}}
]], 35))
    local f = stats.compute(model)
    assert.same({{job = 2, category = "b", latency_us = 4, ready_us = 26, start_us = 30}}, f.latency.top_ready)
    assert.same({1, 2}, f.critical_path.jobs)
    assert.same({30, 5}, {f.critical_path.duration_us, f.critical_path.by_kind[2].us})
    assert.equal(3, f.latency.run.count)
    local g = page_graph(model)
    assert.same({1, 2}, g.id)
    assert.same({1, 1}, g.deps)
  end)

  it("orders jobs tied on a value by id: numbers by value, then strings", function()
    -- Jobs 9, "x", 2 and 7 all start at 5 (after submits ending at 1: ready latency 4 each);
    -- 9 and 2 both end at 20, when the caller's wait for all (10..20) ends: of the jobs it
    -- waited for that ended last, the path takes the first by start, then id: 2.
    local model = load_text(file([[
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"s","cat":"submit","args":{"job":9}},
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"s","cat":"submit","args":{"job":"x"}},
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"s","cat":"submit","args":{"job":2}},
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"s","cat":"submit","args":{"job":7}},
{"ph":"X","ts":5,"dur":15,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":9}},
{"ph":"X","ts":5,"dur":5,"pid":1,"tid":3,"name":"a","cat":"job","args":{"job":"x"}},
{"ph":"X","ts":5,"dur":15,"pid":1,"tid":2,"name":"a","cat":"job","args":{"job":2}},
{"ph":"X","ts":5,"dur":1,"pid":1,"tid":3,"name":"a","cat":"job","args":{"job":7}},
{"ph":"X","ts":10,"dur":10,"pid":1,"tid":3,"name":"wait all","cat":"wait"}
]], 20))
    local f = stats.compute(model, nil, nil, 3)
    local top = {}
    for i, t in ipairs(f.latency.top_ready) do top[i] = t.job end
    assert.same({2, 7, 9}, top) -- one latency: the first three by id
    assert.same({2}, f.critical_path.jobs)
    assert.same({20, 0, 20}, {f.critical_path.duration_us, f.critical_path.start_us, f.critical_path.finish_us})
    assert.same({2, 7, 9}, page_graph(model).id) -- "x" is not drawn
  end)

  it("keeps a job's slices of one time in the order read: lane by lane", function()
    -- Job 1: 5..25 on worker 0 (lane 1), 5..8 on worker 1 (lane 2), in that order: the
    -- page lists worker 0's slice first. (The critical path reads the happens-before
    -- graph's ops, whose builder clips overlapping slices: job_ops_spec.)
    local model = load_text(file([[
{"ph":"X","ts":5,"dur":20,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":5,"dur":3,"pid":1,"tid":2,"name":"a","cat":"job","args":{"job":1}}
]], 100))
    assert.same({0, 0, 1, 0}, page_graph(model).s)
  end)

  it("keeps 3 and 3.0 as one job's wake-ups at one time in flow order, each with its own subtype", function()
    -- Job 1 runs 0..1 and 5..6; woken at 3, then at 3.0: resume latencies 2 and 2.0, in
    -- that order (p50 the first of two, max the second); the other way round, 2.0 and 2.
    local graph = require "jobque_profile.graph"
    for _, order in ipairs{{3, 3.0}, {3.0, 3}} do
      local l = graph.figures(model_of{lanes = {{{"job", 1, 0, 1, "a"}, {"job", 1, 5, 1, "a"}}},
        flows = {{name = "wake job", ts = order[1], args = {job = 1}}, {name = "wake job", ts = order[2], args = {job = 1}}}})
      local r = l.resume
      assert.same({2, 2, 2}, {r.count, r.p50_us, r.max_us})
      assert.same({math.type(5 - order[1]), math.type(5 - order[2])}, {math.type(r.p50_us), math.type(r.max_us)})
    end
  end)

  it("computes integer times and sums beyond 2^53 as Lua's integers do", function()
    -- Job 1 from T = 2^60 + 1 for 3, job 2 (after 1, ready at T + 4) from T + 5 for 2: ready
    -- latency 1; the session starts at T: the path 2 <- 1, 0 .. 7 us from its start (a
    -- double would lose the + 1s): run 5 and 2 of scheduling delay (3..5, the worker free).
    local graph = require "jobque_profile.graph"
    local T = (1 << 60) + 1
    local l, cp = graph.figures(model_of{lanes = {{{"job", 1, T, 3, "a"}, {"job", 2, T + 5, 2, "b"}}},
      flows = {{name = "dependency done", ts = T + 4, args = {job = 1, dependant = 2, ready = true}}}, t0 = T,
      t1 = T + 10})
    assert.same({2, 1, T + 4, T + 5}, {l.top_ready[1].job, l.top_ready[1].latency_us, l.top_ready[1].ready_us,
                                       l.top_ready[1].start_us})
    assert.same({1, 2}, cp.jobs)
    assert.same({7, 0, 7}, {cp.duration_us, cp.start_us, cp.finish_us})
    assert.same({{kind = "run", us = 5}, {kind = "scheduling delay", us = 2}}, cp.by_kind)
    assert.equal("integer", math.type(cp.duration_us))
    -- and wrap as they do: two slices of maxinteger us run -2 us in all
    local wrapped = graph.build(model_of{lanes = {{{"job", 1, 0, math.maxinteger, "a"},
      {"job", 1, 1, math.maxinteger, "a"}}}}):latency()
    assert.equal(-2, wrapped.run.max_us)
  end)

  it("keys a job by false in a flow, but follows no `false` dependency", function()
    -- "dependency done" from job false to job 1 (ready at 2): job 1 (3..4) is ready at 2, its
    -- latency 1; the path does not go back to a job false (none has a slice, and Lua's
    -- `id and jobs[id]` names none): job 1 alone.
    local graph = require "jobque_profile.graph"
    local l, cp = graph.figures(model_of{lanes = {{{"job", 1, 3, 1, "a"}}},
      flows = {{name = "dependency done", ts = 2, args = {job = false, dependant = 1, ready = true}},
               {name = "wake job", ts = 1, args = {job = false}}}})
    assert.same({1, 1}, {l.top_ready[1].job, l.top_ready[1].latency_us})
    assert.same({1}, cp.jobs)
    assert.same({0, 1, {{kind = "run", us = 1}}}, {l.resume.count, cp.duration_us, cp.by_kind})
  end)

  it("reads epoch times and ids beyond 2^53 exactly", function()
    -- A (job 1) 1764000000000000 + 0..20; B (job 2^53 + 1) from ...021 for 0.5 us, ready at
    -- ...010 (after A): ready latency 11. The caller waits for all ...000..022. Path back
    -- from the end (...100): the caller 78, its wake 0.5 after B, B's run 0.5, scheduling
    -- delay 21 - 20 = 1 after A, A's run 20: 100 us (its times are nanoseconds from the
    -- session's start, 0 in this file: doubles, near to a tenth of a microsecond here).
    local model = load_text(file([[
{"ph":"X","ts":1764000000000000,"dur":20,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":1764000000000021,"dur":0.5,"pid":1,"tid":1,"name":"b","cat":"job","args":{"job":9007199254740993}},
{"ph":"X","ts":1764000000000010,"dur":0,"pid":1,"tid":1,"name":"dependency done","cat":"flow",
 "args":{"job":1,"dependant":9007199254740993,"ready":true}},
{"ph":"X","ts":1764000000000000,"dur":22,"pid":1,"tid":3,"name":"wait all","cat":"wait"}
]], 1764000000000100))
    local f = stats.compute(model)
    local top = f.latency.top_ready[1]
    assert.same({9007199254740993, 11, 1764000000000010}, {top.job, top.latency_us, top.ready_us})
    assert.equal("integer", math.type(top.job))
    local cp = f.critical_path
    assert.same({1, 9007199254740993}, cp.jobs)
    assert.near(100, cp.duration_us, 0.2)
    assert.same({"run", "caller"}, {cp.steps[1].kind, cp.steps[#cp.steps].kind})
    local html = require("jobque_profile.page").render(model)
    assert.truthy(html:find('"path":{"jobs":[1,9007199254740993],', 1, true))
  end)

  it("gives the integer 0 for a job taken the moment it was ready, in float times", function()
    -- submit 1.5..2.0, the job from 2.0: math.max(0, 2.0 - 2.0) is the integer 0
    local f = stats.compute(load_text(file([[
{"ph":"X","ts":1.5,"dur":0.5,"pid":1,"tid":3,"name":"s","cat":"submit","args":{"job":1}},
{"ph":"X","ts":2.0,"dur":1.5,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}}
]], 10)))
    assert.equal(0, f.latency.top_ready[1].latency_us)
    assert.equal("integer", math.type(f.latency.top_ready[1].latency_us))
  end)
end)
