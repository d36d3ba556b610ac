-- Every job's life in the trace (`after` arrows, ready times), the latencies
-- derived from it and the critical path (issue 11, sections 3 and 4).
-- The hand-built traces' figures are worked out by hand in the comments.
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
--   caller:   submit A 0..1, submit C 1..2, submit B 2..3
--   worker 0: A 5..25; "dependency done" A -> B (ready) at 26;
--             B: copy in 29..30, slice 30..60, copy out 60..61
--   worker 1: C 4..14; the session stops at 70.
-- Path, back from B (finished last, at 61): copy out 1, B's run 30, copy in 1,
-- ready latency 29 - 25 = 4 (A's end to B taken), A's run 20, ready latency
-- 5 - 1 = 4 (A's submit's end to A's start), A's submit 1 (copy): 61 us from 0.
-- Ready latencies: A 5 - 1 = 4, B 29 - 26 = 3, C 4 - 2 = 2.
local CHAIN = file([[
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"submit alpha","cat":"submit","args":{"job":1}},
{"ph":"X","ts":1,"dur":1,"pid":1,"tid":3,"name":"submit gamma","cat":"submit","args":{"job":3}},
{"ph":"X","ts":2,"dur":1,"pid":1,"tid":3,"name":"submit beta","cat":"submit","args":{"job":2}},
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
-- Path, back from R (30): R's run 6, ready 24 - 23 = 1, R's submit 1 (copy),
-- caller between P's end and that submit 22 - 20 = 2; P's run 16..20 = 4,
-- resume latency 16 - 13 = 3 (Q's end to P resumed); Q's run 8, ready 5 - 4 = 1,
-- Q's submit 1 (copy, inside P); P's run 2..3 = 1, ready 2 - 1 = 1, P's submit 1.
-- In all 30 = run 19 (R 6, P 5, Q 8) + ready 3 + copy 3 + resume 3 + caller 2.
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

local function run_of(cp, name)
  for _, c in ipairs(cp.by_category) do if c.name == name then return c.run_us end end
  return 0
end

describe("the critical path of a hand-built trace", function()
  it("of a chain beside an independent job is the chain, with its make-up", function()
    local f = stats.compute(load_text(CHAIN))
    local cp = f.critical_path
    assert.same({1, 2}, cp.jobs)
    assert.equal(61, cp.duration_us)
    assert.equal(50, cp.run_us)
    assert.equal(20, run_of(cp, "alpha"))
    assert.equal(30, run_of(cp, "beta"))
    assert.equal(0, run_of(cp, "gamma"))
    assert.equal(8, cp.ready_us)
    assert.equal(3, cp.copy_us)
    assert.equal(0, cp.resume_us)
    assert.equal(0, cp.caller_us)
    assert.near(61 / 70, cp.share, 1e-12)
    -- With a worker always free the path loses its 8 us of ready latency: 61 - 8 = 53.
    assert.equal(53, cp.floor_us)
    assert.near(70 / 53, cp.bound, 1e-12)
    assert.near(60 / 53, cp.parallelism, 1e-12) -- all run time (20 + 30 + 10) over that path
    assert.near(60 / 70, cp.achieved, 1e-12)
  end)

  it("goes through an awaited job, the job that submitted it and the caller's wait", function()
    local cp = stats.compute(load_text(AWAIT)).critical_path
    assert.same({10, 11, 10, 12}, cp.jobs)
    assert.equal(30, cp.duration_us)
    assert.same({19, 3, 3, 3, 2}, {cp.run_us, cp.ready_us, cp.copy_us, cp.resume_us, cp.caller_us})
    assert.same({{name = "q", run_us = 8}, {name = "r", run_us = 6}, {name = "p", run_us = 5}}, cp.by_category)
  end)

  it("goes back through a wait for all to the job that finished first, in C and in the Lua", function()
    -- caller: submit A 0..1, wait all 1..21, submit B 22..23; worker 0: A 2..20, B 24..30.
    -- Back from B: run 6, ready 24 - 23 = 1, submit 1 (copy), caller 22 - 20 = 2 after A
    -- (the one job finished by the wait's end), A's run 18, ready 2 - 1 = 1, submit 1: 30.
    local m = load_text(file([[
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"submit a","cat":"submit","args":{"job":1}},
{"ph":"X","ts":1,"dur":20,"pid":1,"tid":3,"name":"wait all","cat":"wait"},
{"ph":"X","ts":22,"dur":1,"pid":1,"tid":3,"name":"submit b","cat":"submit","args":{"job":2}},
{"ph":"X","ts":2,"dur":18,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":24,"dur":6,"pid":1,"tid":1,"name":"b","cat":"job","args":{"job":2}}
]], 40))
    local graph = require "jobque_profile.graph"
    local was = graph.native
    assert.is_not_nil(was(m)) -- (the C graph takes this model)
    for _, native in ipairs{true, false} do
      graph.native = native and was or function() return nil end
      local ok, cp = pcall(function() return stats.compute(m).critical_path end)
      graph.native = was
      assert(ok, cp)
      assert.same({1, 2}, cp.jobs, "native: " .. tostring(native))
      assert.same({30, 24, 2, 2, 0, 2}, {cp.duration_us, cp.run_us, cp.ready_us, cp.copy_us, cp.resume_us,
                                         cp.caller_us}, "native: " .. tostring(native))
    end
  end)

  it("walks a chain of 100,000 jobs without recursion", function()
    -- job i runs i*10 .. i*10+5 on worker 0, ready at its predecessor's end + 1
    local ev, n = {}, 100000
    ev[1] = '{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"submit c","cat":"submit","args":{"job":1}}'
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
    assert.equal(1, cp.jobs[1])
    assert.equal(n, cp.jobs[n])
    assert.equal(n * 10 + 5, cp.duration_us) -- from the first submit to the last end
    assert.equal(n * 5, cp.run_us)
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

  it("prints both sections and their JSON keys", function()
    local f = stats.compute(load_text(CHAIN))
    local text = report.text(f, load_text(CHAIN))
    assert.matches("critical path: 61 us, 87.1%% of the session", text)
    assert.matches("jobs: 1 %-> 2\n", text)
    assert.matches("more workers can speed this up by at most x1.32", text)
    assert.matches("the 3 longest ready latencies", text)
    local j = cjson.decode(report.json(f))
    assert.equal(61, j.critical_path.duration_us)
    assert.same({1, 2}, j.critical_path.jobs)
    assert.is_number(j.critical_path.share)
    assert.is_table(j.critical_path.by_category)
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
    local ends = S.events(t, function(ev) return ev.name == "after" end)
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
    assert.near(a_run + b_run, cp.run_us, 0.01)
    -- From A's submit (before A started) to B's end (and its copy out).
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

describe("the jobs' order", function()
  local graph = require "jobque_profile.graph"
  local C = require "jobque_profile.reader"
  local function ids(list)
    local out = {}
    for i, j in ipairs(list) do out[i] = j.id end
    return out
  end
  local function copy(list)
    local out = {}
    for i, j in ipairs(list) do out[i] = j end
    return out
  end

  it("is the same from jobque.core's sort_jobs as from the Lua sort: by the field, ties by id", function()
    -- values with ties (3 and 3.0 are one value), ids out of order
    local list = {{id = 9, start = 3}, {id = 2, start = 5}, {id = 7, start = 3.0}, {id = 4, start = -1},
                  {id = 1, start = 3}, {id = 3, start = 0.5}, {id = 8, start = 5}}
    local native, lua = copy(list), copy(list)
    assert.is_true(C.sort_jobs(native, "start"))
    graph._lua_sort_jobs(lua, "start")
    assert.same({4, 3, 1, 7, 9, 2, 8}, ids(native))
    assert.same(ids(lua), ids(native))
    -- many jobs in a pseudo-random order, few distinct values
    local big, x = {}, 12345
    for i = 1, 5000 do
      x = (x * 1103515245 + 12345) % 2147483648
      big[i] = {id = x, finish = x % 17}
    end
    native, lua = copy(big), copy(big)
    assert.is_true(C.sort_jobs(native, "finish"))
    graph._lua_sort_jobs(lua, "finish")
    assert.same(ids(lua), ids(native))
    assert.is_true(C.sort_jobs({}, "start"))
  end)

  it("is left to the Lua sort, the list untouched, for what a double does not hold exactly", function()
    for _, list in ipairs({{{id = 1, start = 2}, {id = 1 << 60, start = 1}},
                           {{id = 1, start = 2}, {id = 2, start = 0 / 0}},
                           {{id = 1, start = 2}, {id = 2}},
                           {{id = 1, start = 2}, "x"}}) do
      local before = copy(list)
      assert.is_nil(C.sort_jobs(list, "start"))
      assert.same(before, list)
    end
    local list = {{id = 1 << 60, start = 1}, {id = 1, start = 1}}
    graph._lua_sort_jobs(list, "start")
    assert.same({1, 1 << 60}, ids(list))
  end)
end)

describe("a distribution's values", function()
  local C = require "jobque_profile.reader"
  it("are sorted by jobque.core's sort_numbers as table.sort sorts them, and left to it when not exact", function()
    local x, list = 99, {}
    for i = 1, 3000 do
      x = (x * 1103515245 + 12345) % 2147483648
      list[i] = (i % 3 == 0) and (x % 50) + 0.5 or x % 50 -- integers and floats, many equal
    end
    local want = {}
    for i, v in ipairs(list) do want[i] = v end
    table.sort(want)
    assert.is_true(C.sort_numbers(list))
    assert.same(want, list)
    assert.is_true(C.sort_numbers({}))
    for _, bad in ipairs({{2, 1 << 60}, {2, 0 / 0}, {2, "1"}}) do
      local before = tostring(bad[1]) .. " " .. tostring(bad[2])
      assert.is_nil(C.sort_numbers(bad))
      assert.equal(before, tostring(bad[1]) .. " " .. tostring(bad[2]))
    end
  end)
end)

describe("the graph without jobque.core", function()
  teardown(function() p.profile_stop() end)

  -- jobque_profile.graph loaded again with jobque.core missing: its Lua sorts.
  local function graph_without_core()
    local saved_core, saved_graph = package.loaded["jobque_profile.reader"], package.loaded["jobque_profile.graph"]
    package.loaded["jobque_profile.reader"], package.loaded["jobque_profile.graph"] = nil, nil
    package.preload["jobque_profile.reader"] = function() error("no core in this spec") end
    local ok, g = pcall(require, "jobque_profile.graph")
    package.preload["jobque_profile.reader"] = nil
    package.loaded["jobque_profile.reader"], package.loaded["jobque_profile.graph"] = saved_core, saved_graph
    assert(ok, g)
    return g
  end

  it("gives the same latencies, top jobs and critical path as with it", function()
    local path = S.tmpfile("graph-both.json")
    p.profile_start(20000)
    jobque.with_job_que({workers = 2}, function(q)
      local empty = function() end
      for _ = 1, 1500 do q:submit(empty) end
      q:wait_all()
    end)
    p.profile_stop()
    assert(p.profile_save(path))
    local model = assert(trace.load(path))
    local native = require "jobque_profile.graph"
    local plain = graph_without_core()
    assert.are_not.equal(native, plain)
    native.use_core = false -- the Lua graph with the core's sorts (the C graph is compared below)
    local nl, ncp, ng = native.figures(model, 50)
    native.use_core = true
    local ll, lcp, lg = plain.figures(model, 50)
    assert.equal(1500, #ng.order)
    assert.same(ll, nl)
    assert.same(lcp, ncp)
    local ids_n, ids_l = {}, {}
    for i = 1, #ng.order do ids_n[i], ids_l[i] = ng.order[i].id, lg.order[i].id end
    assert.same(ids_l, ids_n)
    for i = 1, #ng.ends do ids_n[i], ids_l[i] = ng.ends[i].id, lg.ends[i].id end
    assert.same(ids_l, ids_n)
  end)
end)

describe("the job graph in C (jobque.core's job_graph)", function()
  local graph = require "jobque_profile.graph"
  local html = require "jobque_profile.page"
  teardown(function()
    graph.use_core = true
    p.profile_stop()
  end)

  -- a and b equal, numbers of the same subtype (3 and 3.0 differ here): nil, else where they differ
  local function differ(a, b, where)
    if type(a) ~= type(b) then return ("%s: %s vs %s"):format(where, tostring(a), tostring(b)) end
    if type(a) == "number" then
      if math.type(a) ~= math.type(b) or a ~= b then
        return ("%s: %s (%s) vs %s (%s)"):format(where, a, math.type(a), b, math.type(b))
      end
    elseif type(a) == "table" then
      for k, v in pairs(a) do
        local d = differ(v, b[k], where .. "." .. tostring(k))
        if d then return d end
      end
      for k in pairs(b) do
        if a[k] == nil then return where .. "." .. tostring(k) .. ": missing" end
      end
    elseif a ~= b then
      return ("%s: %s vs %s"):format(where, tostring(a), tostring(b))
    end
    return nil
  end

  -- The figures and the page with the C graph and with the Lua one are the
  -- same; returns whether the C graph took the model.
  local function same_both_ways(model, what)
    graph.use_core = true
    local native = graph.native(model) ~= nil
    local cl, ccp = graph.figures(model, 7)
    local cpage = assert(html.render(model))
    graph.use_core = false
    local ll, lcp = graph.figures(model, 7)
    local lpage = assert(html.render(model))
    graph.use_core = true
    assert.is_nil(differ(ll, cl, what .. ": latency"))
    assert.is_nil(differ(lcp, ccp, what .. ": critical path"))
    if cpage ~= lpage then
      local i = 1
      while cpage:byte(i) == lpage:byte(i) do i = i + 1 end
      error(("%s: the pages differ at byte %d:\nC:   %s\nLua: %s"):format(what, i, cpage:sub(i - 80, i + 80),
        lpage:sub(i - 80, i + 80)))
    end
    return native
  end

  it("gives the same figures and page as the Lua code on the hand-built traces, the fixture and the demo", function()
    assert.is_true(same_both_ways(load_text(CHAIN), "chain"))
    assert.is_true(same_both_ways(load_text(AWAIT), "await"))
    assert.is_true(same_both_ways(assert(trace.load("spec/fixtures/seed_trace_example.json")), "fixture"))
    local model = assert(trace.load(S.demo_trace()))
    assert.is_true(same_both_ways(model, "demo"))
    assert.is_true(graph.native(model):count() > 0)
  end)

  it("gives the same on recorded queues with awaits, dependencies, failures and submits from jobs", function()
    local function job(i, kind, other)
      if kind == 1 then error("graph job " .. i .. " fails", 0)
      elseif kind == 2 then coroutine.yield()
      elseif kind == 3 and other then other:pwait() -- an await (from a worker) of an earlier job
      elseif kind == 4 then
        local child = require("jobque").current():submit(function(x) return x end, i)
        child:wait()
      end
      return i
    end
    for _, workers in ipairs{1, 2, 4} do
      local seed = 1000 + workers
      math.randomseed(seed)
      p.profile_start(20000)
      jobque.with_job_que({workers = workers}, function(q)
        local jobs = {}
        for i = 1, 80 do
          local kind, other = math.random(0, 4), #jobs > 0 and jobs[math.random(#jobs)] or nil
          if other and math.random() < 0.3 then
            jobs[i] = q:after({other, jobs[math.random(#jobs)]}, job, i, kind, nil)
          else
            jobs[i] = q:submit(job, i, kind, kind == 3 and other or nil)
          end
          if math.random() < 0.1 then jobs[i]:pwait() end -- the caller waits now and then
        end
        q:pwait_all()
      end)
      p.profile_stop()
      local _, _, path = S.save(p)
      local model = assert(trace.load(path))
      assert.is_true(same_both_ways(model, "recorded, seed " .. seed), "seed " .. seed)
      assert.is_true(#model.awaits > 0 or workers == 1, "seed " .. seed .. ": awaits recorded")
    end
  end)

  -- A random trace of our shape: jobs with slices on two workers, submits
  -- from the caller or inside a job, waits, "dependency done" and "wake job"
  -- flows, awaits, copies; times integers or floats, ties now and then.
  local function random_trace(seed)
    math.randomseed(seed)
    local ev, n = {}, math.random(1, 30)
    local floats = math.random(0, 2)
    local function t(x)
      if floats == 0 or (floats == 2 and math.random() < 0.5) then return tostring(x) end
      return ("%.3f"):format(x + math.random(0, 999) / 1000)
    end
    local function add(fmt, ...) ev[#ev + 1] = fmt:format(...) end
    local id = function(i) return math.random() < 0.05 and i + 1000 or i end -- now and then a job without slices
    for i = 1, n do
      local tid, at = math.random(1, 2), math.random(0, 400)
      if math.random() < 0.8 then
        if math.random() < 0.3 then
          add('{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":%d,"name":"sub","cat":"submit","args":{"job":%d}}',
            t(at + 1), t(1), tid, i) -- inside a job's slice (perhaps)
        else
          add('{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":3,"name":"sub","cat":"submit","args":{"job":%d}}',
            t(math.max(0, at - 5)), t(math.random(0, 2)), i)
        end
      end
      if math.random() < 0.3 then
        add('{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":3,"name":"wait","cat":"wait","args":{"job":%d}}',
          t(at + 2), t(math.random(0, 30)), id(math.random(1, n)))
      end
      local s = at
      for _ = 1, math.random(1, 3) do
        s = s + math.random(0, 40)
        add('{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":%d,"name":"j%d","cat":"job","args":{"job":%d}}',
          t(s), t(math.random(0, 20)), tid, i % 4, i)
      end
      if math.random() < 0.3 then
        add('{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":%d,"name":"copy %s","cat":"copy",' ..
          '"args":{"job":%d,"bytes":3,"category":"j%d"}}', t(s + 25), t(1), tid,
          math.random() < 0.5 and "in" or "out", id(i), i % 4)
      end
      if math.random() < 0.4 then
        add('{"ph":"X","ts":%s,"dur":0,"pid":1,"tid":%d,"name":"dependency done","cat":"flow",' ..
          '"args":{"job":%d,"dependant":%d,"ready":%s}}', t(at + math.random(-5, 5)), tid, id(math.random(1, n)),
          i, math.random() < 0.6 and "true" or "false")
      end
      if math.random() < 0.3 then
        add('{"ph":"X","ts":%s,"dur":0,"pid":1,"tid":%d,"name":"wake job","cat":"flow","args":{"job":%d}}',
          t(at + math.random(0, 60)), tid, i)
      end
      if math.random() < 0.3 then
        local b = at + math.random(0, 60)
        add('{"ph":"b","ts":%s,"pid":1,"tid":%d,"name":"await","cat":"await","id2":{"local":"0x%x"},' ..
          '"args":{"job":%d,"awaits":%d}}', t(b), tid, i, i, id(math.random(1, n)))
        add('{"ph":"e","ts":%s,"pid":1,"tid":%d,"name":"await","cat":"await","id2":{"local":"0x%x"},' ..
          '"args":{"job":%d,"awaits":%d}}', t(b + math.random(0, 30)), tid, i, i, math.random(1, n))
      end
    end
    return file(table.concat(ev, ",\n"), 600)
  end

  it("gives the same on seeded random graphs", function()
    local taken = 0
    for seed = 1, 150 do
      local ok, err = pcall(function()
        if same_both_ways(load_text(random_trace(seed)), "random") then taken = taken + 1 end
      end)
      assert(ok, ("seed %d: %s"):format(seed, tostring(err)))
    end
    assert.is_true(taken > 75, "the C graph took " .. taken .. " of 150")
  end)

  it("leaves odd models to the Lua code, which gives the same figures", function()
    local odd = {
      -- a string job id in a flow, false as an awaited job's id
      [[{"ph":"X","ts":5,"dur":20,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":26,"dur":0,"pid":1,"tid":1,"name":"dependency done","cat":"flow","args":{"job":1,"dependant":"2","ready":true}},
{"ph":"X","ts":30,"dur":5,"pid":1,"tid":1,"name":"b","cat":"job","args":{"job":2}}]],
      -- two slices of a job at one time
      [[{"ph":"X","ts":5,"dur":20,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":5,"dur":3,"pid":1,"tid":2,"name":"a","cat":"job","args":{"job":1}}]],
      -- a job id that is no integer
      [[{"ph":"X","ts":5,"dur":20,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":9,"dur":0,"pid":1,"tid":1,"name":"wake job","cat":"flow","args":{"job":1.5}}]],
    }
    for i, events in ipairs(odd) do
      local model = load_text(file(events, 100))
      assert.is_false(same_both_ways(model, "odd " .. i), "odd " .. i)
    end
    -- huge times (epoch microseconds), an empty lane, a job id beyond 2^53, times as integers
    local model = load_text(file([[
{"ph":"X","ts":1764000000000000,"dur":20,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":1764000000000021,"dur":0.5,"pid":1,"tid":1,"name":"b","cat":"job","args":{"job":9007199254740993}},
{"ph":"X","ts":1764000000000010,"dur":0,"pid":1,"tid":1,"name":"dependency done","cat":"flow",
 "args":{"job":1,"dependant":9007199254740993,"ready":true}}
]], 1764000000000100))
    assert.is_true(same_both_ways(model, "huge"))
    -- a job taken the moment it was ready, in float times: math.max(0, 0.0) is the integer 0
    model = load_text(file([[
{"ph":"X","ts":1.5,"dur":0.5,"pid":1,"tid":3,"name":"s","cat":"submit","args":{"job":1}},
{"ph":"X","ts":2.0,"dur":1.5,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}}
]], 10))
    assert.is_true(same_both_ways(model, "0 and 0.0"))
    -- no job at all: no figures, "null" on the page
    model = load_text(file([[{"ph":"X","ts":0,"dur":5,"pid":1,"tid":3,"name":"x","cat":"other"}]], 10))
    assert.is_true(same_both_ways(model, "no jobs"))
    assert.equal(0, graph.native(model):count())
  end)
end)
