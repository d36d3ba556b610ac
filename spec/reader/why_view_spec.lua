-- How the report, compare and the page present the "why": the critical
-- path's make-up by kind, the replay's what-if table, compare's rows for
-- latencies, the path, the replay, copies, spans and counters, and one
-- busy time (a caller's spans outside jobs) in the report and on the page.
-- The path and replay tables here are written by hand in the shape
-- jobque_profile.graph.figures documents; every expected line and figure
-- is worked out by hand.
local S = require "support"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"
local cjson = require "cjson"

local describe_in_browser = S.plain_only(describe, pending, "drives Chromium")

-- A critical path of 100 us: run 60 (two categories), worker busy 30
-- (job 7 held the worker 20 us, job 9 10 us), copy result 10.
local function path(extra)
  local cp = {duration_us = 100, start_us = 0, finish_us = 100, share = 0.5, session_us = 200, total_run_us = 150,
              achieved = 0.75, jobs = {1, 2, 1},
              held_by = {{job = 7, us = 20}, {job = 9, us = 10}},
              by_kind = {{kind = "run", us = 60}, {kind = "worker busy", us = 30}, {kind = "copy result", us = 10}},
              by_category = {{name = "ümlaut", run_us = 40}, {name = "plain", run_us = 20}},
              partial = false}
  for k, v in pairs(extra or {}) do cp[k] = v end
  return cp
end

local function whatif(extra)
  local y = {recorded_workers = 2, recorded_us = 200, work_us = 400, span_us = 100, parallelism = 4, partial = false,
             queues = {{queue = 1, workers = 2}}, as_recorded_us = 210,
             predictions = {{workers = 1, predicted_us = 400}, {workers = 2, predicted_us = 200},
                            {workers = 4, predicted_us = 125}}}
  for k, v in pairs(extra or {}) do y[k] = v end
  return y
end

describe("the report's critical path", function()
  it("shows its make-up by kind, run by category, worker busy by the job that held the worker", function()
    assert.same({
      "critical path: 100 us, 50.0% of the session, through 2 jobs",
      "  jobs: 1 -> 2 -> 1",
      "  run                            60 us    60.0%",
      "    ümlaut                       40 us    40.0%",
      "    plain                        20 us    20.0%",
      "  worker busy                    30 us    30.0%",
      "    held by job 7                20 us    20.0%",
      "    held by job 9                10 us    10.0%",
      "  copy result                    10 us    10.0%",
    }, report.critical_path_lines({critical_path = path()}))
  end)

  it("pads its rows by characters, not bytes: a name of two-byte letters lines up", function()
    local lines = report.critical_path_lines({critical_path = path()})
    -- "    ümlaut" is 10 characters and 11 bytes; the times end in one column
    assert.equal(utf8.len(lines[3]), utf8.len(lines[4]))
    assert.equal(#lines[3] + 1, #lines[4])
  end)

  it("says when the trace is partial, and why", function()
    local lines = report.critical_path_lines({critical_path = path{partial = true,
                                                                   partial_why = "lane worker 1 dropped 12 events"}})
    assert.equal("  partial: lane worker 1 dropped 12 events; the path may be shorter than the run's", lines[10])
  end)

  it("names the other jobs that held a worker in one row past the fifth", function()
    local held = {}
    for k = 1, 7 do held[k] = {job = 100 + k, us = 10 - k} end
    local lines = report.critical_path_lines({critical_path = path{held_by = held, by_category = {},
      by_kind = {{kind = "worker busy", us = 35}}, jobs = {1}}})
    assert.same({
      "critical path: 100 us, 50.0% of the session, through 1 job",
      "  jobs: 1",
      "  worker busy                    35 us    35.0%",
      "    held by job 101               9 us     9.0%",
      "    held by job 102               8 us     8.0%",
      "    held by job 103               7 us     7.0%",
      "    held by job 104               6 us     6.0%",
      "    held by job 105               5 us     5.0%",
      "    held by 2 other jobs          7 us     7.0%", -- 4 + 3
    }, {table.unpack(lines, 1, 9)})
  end)

  it("is left out without jobs", function()
    assert.same({}, report.critical_path_lines({}))
    assert.same({}, report.whatif_lines({}))
  end)
end)

describe("the report's what-if table", function()
  it("gives the recorded run and the predicted sessions, with the speed-up over the recorded one", function()
    assert.same({
      "what if: the job graph replayed on W workers per queue (recorded: 2 workers, 200 us)",
      "      workers     session  speed-up",
      "            1      400 us     x0.50",
      "            2      200 us     x1.00",
      "            4      125 us     x1.60",
      "    unlimited      100 us     x2.00",
      "  (speed-up: the recorded session / the predicted one; work 400 us in all;",
      "   the replay assumes a free core per worker and jobs as long as recorded: docs/cli.md)",
      "parallelism: the graph has 4.00 (work / the unlimited span), it got 0.75 (run time / session)",
    }, report.whatif_lines({whatif = whatif(), critical_path = path()}))
  end)

  it("gives the recorded setup of several queues, and its replay in a row of its own", function()
    -- queues of 3 and 1 workers: no row of W per queue is the recording
    -- (though the rows have one of 1)
    local lines = report.whatif_lines({whatif = whatif{recorded_workers = 4, parallelism = false,
      queues = {{queue = 1, workers = 3}, {queue = 2, workers = 1}}, as_recorded_us = 250}})
    assert.same({
      "what if: the job graph replayed on W workers per queue (recorded: 2 queues of 3 and 1 workers, 200 us)",
      "      workers     session  speed-up",
      "  as recorded      250 us     x0.80",
      "            1      400 us     x0.50",
    }, {table.unpack(lines, 1, 4)})
    lines = report.whatif_lines({whatif = whatif{recorded_workers = 6, parallelism = false,
      queues = {{queue = 1, workers = 1}, {queue = 2, workers = 2}, {queue = 3, workers = 3}}}})
    assert.matches("(recorded: 3 queues of 1, 2 and 3 workers, 200 us)", lines[1], 1, true)
  end)

  it("gives the as-recorded row when no row has the one queue's recorded workers", function()
    local lines = report.whatif_lines({whatif = whatif{recorded_workers = 3, queues = {{queue = 1, workers = 3}},
                                                       as_recorded_us = 160}})
    assert.equal("  as recorded      160 us     x1.25", lines[3])
    -- two queues of 2 workers each: the row of 2 is the recording
    lines = report.whatif_lines({whatif = whatif{recorded_workers = 4, as_recorded_us = 160,
      queues = {{queue = 1, workers = 2}, {queue = 2, workers = 2}}}})
    assert.equal("            1      400 us     x0.50", lines[3])
    assert.matches("(recorded: 2 queues of 2 workers each, 200 us)", lines[1], 1, true)
    lines = report.whatif_lines({whatif = whatif{recorded_workers = 2,
      queues = {{queue = 1, workers = 1}, {queue = 2, workers = 1}}}})
    assert.matches("(recorded: 2 queues of 1 worker each, 200 us)", lines[1], 1, true)
  end)

  it("says 1 worker, and flags a partial replay", function()
    local lines = report.whatif_lines({whatif = whatif{recorded_workers = 1, partial = true, parallelism = false}})
    assert.matches("(recorded: 1 worker, 200 us)", lines[1], 1, true)
    assert.equal("  partial: the replay ran what the trace holds; events were lost or waits never ended",
                 lines[#lines])
  end)
end)

-- Figures as stats.compute gives them, the parts compare reads, with
-- `why` (latency, critical_path, whatif, copies, spans, counters) added.
local function figures(why)
  local group = {lanes = 0, busy = 0, wait = 0, idle = 0, parallelism = 0, events = 0}
  local f = {range = {duration = 100}, events = 0, workers = group, others = group, total = group, lanes = {},
             categories = {}, markers = {}, dropped = {events = 0}, copies = {}, spans = {}, counters = {}}
  for k, v in pairs(why) do f[k] = v end
  return f
end

local function dist(p50, p95) return {count = 1, p50_us = p50, p95_us = p95, max_us = p95, by_category = {}} end

describe("compare's rows of the why", function()
  local a = figures{
    latency = {ready = dist(10, 20), resume = dist(1, 2), run = dist(100, 300), suspended = dist(0, 5)},
    critical_path = path(), whatif = whatif(),
    copies = {{name = "decode", count = 4, time = 12, bytes = 2000}},
    spans = {{name = "frame", count = 2, run_us = 50, wall_us = 60, unclosed = 0}},
    counters = {{name = "queue depth", pid = 1, samples = 3, min = 0, mean = 1.5, max = 4}},
  }
  local b = figures{
    latency = {ready = dist(5, 8), resume = dist(1, 4), run = dist(90, 250), suspended = dist(0, 0)},
    critical_path = path{duration_us = 80, by_kind = {{kind = "run", us = 60}, {kind = "ready latency", us = 20}}},
    whatif = whatif{recorded_workers = 4, span_us = 80, as_recorded_us = 190, predictions = {{workers = 1, predicted_us = 380},
                                                                      {workers = 8, predicted_us = 90}}},
    copies = {{name = "decode", count = 2, time = 3, bytes = 500}},
    spans = {{name = "frame", count = 2, run_us = 40, wall_us = 45, unclosed = 0}},
    counters = {{name = "queue depth", pid = 1, samples = 3, min = 0, mean = 3, max = (1 << 62) + 1}},
  }
  local rows = {}
  for _, r in ipairs(stats.compare(a, b)) do rows[r.label] = r end
  local function ab(label)
    local r = rows[label]
    assert.is_table(r, label)
    return {r.a, r.b, r.diff}
  end

  it("has latency p50 and p95 per kind", function()
    assert.same({10, 5, -5}, ab("latency ready p50"))
    assert.same({20, 8, -12}, ab("latency ready p95"))
    assert.same({2, 4, 2}, ab("latency resume p95"))
    assert.same({300, 250, -50}, ab("latency run p95"))
    assert.same({5, 0, -5}, ab("latency suspended p95"))
  end)

  it("has the critical path's length and each kind of its make-up, a kind one side lacks as 0", function()
    assert.same({100, 80, -20}, ab("critical path"))
    assert.same({60, 60, 0}, ab("critical path: run"))
    assert.same({30, 0, -30}, ab("critical path: worker busy"))
    assert.same({0, 20, 20}, ab("critical path: ready latency"))
  end)

  it("has the replay's predictions per worker count, one side's missing count left out", function()
    assert.same({2, 4, 2}, ab("recorded workers"))
    assert.same({210, 190, -20}, ab("predicted as recorded"))
    assert.same({400, 380, -20}, ab("predicted on 1 worker"))
    assert.same({100, 80, -20}, ab("predicted on unlimited workers"))
    assert.same({125}, ab("predicted on 4 workers")) -- b has no prediction for 4: "-", no difference
    assert.same({nil, 90}, ab("predicted on 8 workers"))
  end)

  it("has copies, spans and counters, each with its delta", function()
    assert.same({4, 2, -2}, ab("copies decode: count"))
    assert.same({12, 3, -9}, ab("copies decode: time"))
    assert.same({2000, 500, -1500}, ab("copies decode: bytes"))
    assert.same({2, 2, 0}, ab("spans frame: count"))
    assert.same({50, 40, -10}, ab("spans frame: run"))
    assert.same({60, 45, -15}, ab("spans frame: wall"))
    assert.same({1.5, 3, 1.5}, ab("counter queue depth: mean"))
    assert.same({4, (1 << 62) + 1, (1 << 62) - 3}, ab("counter queue depth: max"))
  end)

  it("shows them as text, bytes as bytes and integers exact", function()
    local text = report.compare_text(stats.compare(a, b), "a", "b")
    assert.matches("\ncopies decode: bytes +2 kB +500 B +%-1.5 kB +0.25x\n", text)
    assert.matches("\ncounter queue depth: max +4 +4611686018427387905 +%+4611686018427387901 ", text)
    assert.matches("\npredicted on unlimited workers +100 us +80 us +%-20 us +0.80x\n", text)
  end)

  it("leaves a trace without jobs out of the why: no value, no difference", function()
    local none = figures{}
    local r = {}
    for _, row in ipairs(stats.compare(a, none)) do r[row.label] = row end
    for _, label in ipairs{"latency ready p50", "critical path", "critical path: run", "recorded workers",
                           "predicted on unlimited workers"} do
      assert.equal(r[label].a ~= nil, true, label)
      assert.is_nil(r[label].b, label)
      assert.is_nil(r[label].diff, label)
    end
    assert.matches("\ncritical path +100 us +%- +%- +%-\n", report.compare_text(stats.compare(a, none), "a", "b"))
  end)
end)

describe("compare's rows of a partial trace", function()
  -- a's path is partial (its replay not); b's replay is partial (its path not)
  local a = figures{critical_path = path{partial = true, partial_why = "lane worker 1 dropped 12 events"},
                    whatif = whatif()}
  local b = figures{critical_path = path(), whatif = whatif{partial = true}}
  local rows = stats.compare(a, b)

  it("marks the path's rows on the partial side, and the replay's on theirs, in --json", function()
    local seen = {}
    for _, r in ipairs(rows) do
      seen[r.group] = true
      if r.group == "critical path" then
        assert.is_true(r.a_partial, r.label)
        assert.is_nil(r.b_partial, r.label)
      elseif r.group == "whatif" then
        assert.is_nil(r.a_partial, r.label)
        assert.is_true(r.b_partial, r.label)
      else
        assert.is_nil(r.a_partial or r.b_partial, r.label)
      end
    end
    assert.is_true(seen["critical path"] and seen.whatif)
    local json = cjson.decode(report.json(rows))
    local marked = {}
    for _, r in ipairs(json) do
      if r.label == "critical path" or r.label == "predicted on 1 worker" then marked[r.label] = r end
    end
    assert.is_true(marked["critical path"].a_partial)
    assert.is_nil(marked["critical path"].b_partial)
    assert.is_true(marked["predicted on 1 worker"].b_partial)
  end)

  it("marks the partial side's values with * in the text, and says what it means", function()
    local text = report.compare_text(rows, "a", "b")
    assert.matches("\ncritical path +100 us%* +100 us +%+0 us +1.00x\n", text)
    assert.matches("\npredicted on 1 worker +400 us +400 us%* ", text)
    assert.matches("\nrecorded workers +2 +2%* ", text)
    assert.matches("\n%* partial: that trace lost events", text)
    local whole = figures{critical_path = path(), whatif = whatif()}
    assert.not_matches("*", report.compare_text(stats.compare(whole, whole), "a", "b"), 1, true)
  end)
end)

describe("compare's latency rows", function()
  local function dist0() return {count = 0, p50_us = 0, p95_us = 0, max_us = 0, by_category = {}} end
  local a = figures{latency = {ready = dist(10, 20), resume = dist0(), run = dist(100, 300), suspended = dist0()}}
  local b = figures{latency = {ready = dist(5, 8), resume = dist0(), run = dist(90, 250), suspended = dist(3, 4)}}
  local rows = {}
  for _, r in ipairs(stats.compare(a, b)) do rows[r.label] = r end

  it("leave out a kind neither trace has (count 0 on both sides)", function()
    assert.is_nil(rows["latency resume p50"])
    assert.is_nil(rows["latency resume p95"])
    assert.same({10, 5, -5}, {rows["latency ready p50"].a, rows["latency ready p50"].b, rows["latency ready p50"].diff})
    assert.not_matches("latency resume", report.compare_text(stats.compare(a, b), "a", "b"))
  end)

  it("give a side with none of a kind no value, no difference, no ratio", function()
    local r = rows["latency suspended p95"]
    assert.same({nil, 4, nil, nil}, {r.a, r.b, r.diff, r.ratio})
    assert.matches("\nlatency suspended p95 +%- +4 us +%- +%-\n", report.compare_text(stats.compare(a, b), "a", "b"))
  end)
end)

-- Our trace (no job ids: the figures need no job graph) of 100 us: worker 0
-- runs a 10..50 with a span inside it (a job's: args.job; written first, as
-- it ended first, so that it comes first of the two that start at 10), worker 1 runs b
-- 20..40; the caller's span frame 0..60 holds a submit 2..5 and a wait
-- 30..50, its span post 70..80 holds a span inner 72..76.
local SPANS = [[{"traceEvents":[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"worker 1"}},
{"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"caller"}},
{"ph":"X","pid":1,"tid":1,"ts":10,"dur":20,"name":"decode","cat":"decode","args":{"span":5,"piece":1,"job":1}},
{"ph":"X","pid":1,"tid":1,"ts":10,"dur":40,"name":"a","cat":"job"},
{"ph":"X","pid":1,"tid":2,"ts":20,"dur":20,"name":"b","cat":"job"},
{"ph":"X","pid":1,"tid":3,"ts":0,"dur":60,"name":"frame","cat":"frame","args":{"span":1,"piece":1}},
{"ph":"X","pid":1,"tid":3,"ts":2,"dur":3,"name":"submit a","cat":"submit"},
{"ph":"X","pid":1,"tid":3,"ts":30,"dur":20,"name":"wait","cat":"wait"},
{"ph":"X","pid":1,"tid":3,"ts":70,"dur":10,"name":"post","cat":"post","args":{"span":2,"piece":1}},
{"ph":"X","pid":1,"tid":3,"ts":72,"dur":4,"name":"inner","cat":"inner","args":{"span":3,"piece":1}}
],"jobqueProfile":{"version":1,"startUs":0,"stopUs":100,"laneInfo":[{"name":"worker 0","role":"worker"},
{"name":"worker 1","role":"worker"},{"name":"caller","role":"caller"}]}}]]

describe("a caller's spans outside jobs", function()
  local path_ = S.tmpfile("spans.json")
  S.write(path_, SPANS)
  local model = assert(trace.load(path_))

  it("are busy time of the caller's lane in the report; a span inside a job adds nothing", function()
    local f = stats.compute(model)
    -- worker 0: a's 40 (its span inside); worker 1: 20; caller: frame 60 (the submit and
    -- the wait inside it) + post 10 (inner inside it) = 70, and the wait's 20 as wait
    assert.same({40, 20, 70}, {f.lanes[1].busy, f.lanes[2].busy, f.lanes[3].busy})
    assert.same({0, 0, 20}, {f.lanes[1].wait, f.lanes[2].wait, f.lanes[3].wait})
    assert.equal(130, f.total.busy)
    assert.near(1 - 130 / 300, f.total.idle, 1e-12)
    assert.near(1.3, f.total.parallelism, 1e-12)
    local busy = {}
    for _, c in ipairs(f.categories) do busy[c.name] = c.busy end
    assert.same({frame = 60, a = 40, b = 20, post = 10}, busy)
  end)

  it("count the same over a range: 25 .. 55", function()
    local f = stats.compute(model, 25, 55)
    -- a 25..50, b 25..40, frame 25..55
    assert.same({25, 15, 30}, {f.lanes[1].busy, f.lanes[2].busy, f.lanes[3].busy})
    assert.near(1 - 70 / 90, f.total.idle, 1e-12)
  end)
end)

describe_in_browser("the page's figures beside the report's", function()
  local json = S.tmpfile("spans.json")
  S.write(json, SPANS)
  local page = S.tmpfile("spans.html")
  local code, _, err = S.cli(("html '%s' -o '%s' --test-hooks"):format(json, page))
  assert(code == 0, err)
  local model = assert(trace.load(json))

  -- The page's figures against the hand-worked ones, and the report's over the same range.
  local function agree(got, want, from, to)
    local f = stats.compute(model, from, to)
    assert.near(want.busy, got.busy, 1e-9)
    assert.near(want.busy, f.total.busy, 1e-9)
    assert.near(f.total.wait, got.wait, 1e-9)
    assert.near(f.total.idle, got.idle, 1e-12)
    assert.near(f.total.parallelism, got.parallelism, 1e-12)
    for i, c in ipairs(got.top) do
      assert.equal(f.categories[i].name, c.name)
      assert.near(f.categories[i].busy, c.busy, 1e-9)
    end
  end

  it("agree over the whole trace, the caller's spans busy on both", function()
    local state = S.open_page(page)
    agree(state.whole, {busy = 130}, nil, nil)
    assert.same({"frame", "a", "b", "post"}, {state.whole.top[1].name, state.whole.top[2].name,
                                              state.whole.top[3].name, state.whole.top[4].name})
  end)

  it("agree over a selected range", function()
    agree(S.open_page(page, "#from=25&to=55").selection, {busy = 70}, 25, 55)
  end)
end)

describe_in_browser("a recorded trace whose caller works inside spans", function()
  it("has the same figures on the page as in the report, whole and over a range", function()
    -- the caller frames its work in spans (submits, a wait and a loop of its own inside
    -- them), a job opens a span of its own: each figure the page shows is the report's
    local jobque = require "jobque"
    local p = require "jobque_profile"
    p.profile_start()
    jobque.with_job_que({workers = 2}, function(q)
      for _ = 1, 3 do
        p.profile_span("frame", function()
          local jobs = {}
          for k = 1, 4 do
            jobs[k] = q:submit(function()
              return require("jobque_profile").profile_span("inner", function()
                local x = 0
                for i = 1, 2e4 do x = x + i end
                return x
              end)
            end)
          end
          local x = 0
          for i = 1, 1e5 do x = x + i end
          for k = 1, 4 do jobs[k]:wait() end
          return x
        end)
      end
    end)
    p.profile_stop()
    local _, _, json = S.save(p)
    local page = S.tmpfile("recorded.html")
    local code, _, err = S.cli(("html '%s' -o '%s' --test-hooks"):format(json, page))
    assert.equal(0, code, err)
    local model = assert(trace.load(json))
    local f = stats.compute(model)
    local caller
    for _, l in ipairs(f.lanes) do if l.role == "caller" then caller = l end end
    local frames
    for _, c in ipairs(f.spans) do if c.name == "frame" then frames = c end end
    assert.is_true(caller.busy >= frames.run_us - 1e-6, "the caller's spans are its busy time")
    local mid = (model.t1 - model.t0) / 2
    for _, case in ipairs{{nil, nil, ""}, {0, mid, ("#from=0&to=%.3f"):format(mid)}} do
      local state = S.open_page(page, case[3])
      local got = state.selection ~= cjson.null and state.selection or state.whole
      local want = stats.compute(model, case[1] and model.t0 + case[1], case[2] and model.t0 + case[2])
      assert.near(want.total.busy, got.busy, 1e-6 * want.total.busy)
      assert.near(want.total.idle, got.idle, 1e-6)
      assert.near(want.total.parallelism, got.parallelism, 1e-6)
      for i = 1, math.min(3, #got.top) do
        assert.equal(want.categories[i].name, got.top[i].name)
        assert.near(want.categories[i].busy, got.top[i].busy, 1e-6 * want.total.busy)
      end
    end
  end)
end)

describe("the command's texts say 1 lane, 1 event", function()
  it("in the report's first line", function()
    local one = S.tmpfile("one.json")
    S.write(one, '{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":0,"dur":5,"name":"x"}]}')
    local code, out = S.cli("report '" .. one .. "'")
    assert.equal(0, code)
    assert.matches("^[^\n]*: Chrome trace, 1 lane, 1 event\n", out)
  end)
end)
