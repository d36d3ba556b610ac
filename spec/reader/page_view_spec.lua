-- What the HTML timeline shows, in headless Chromium: one time base (time
-- since the session's start), #from/#to zoom, rows that fill the window,
-- marker labels that never overlap, and long or multi-line names cut.
local S = require "support"
local cjson = require "cjson"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"

local run = S.cli
local describe_in_browser = S.plain_only(describe, pending, "drives Chromium")

-- A Chrome trace of `events` (tables) turned into a page; returns the
-- page's path and the model of the trace.
local function page_of(events, name)
  local path = S.tmpfile((name or "page") .. ".json")
  S.write(path, cjson.encode({traceEvents = events}))
  local page = S.tmpfile((name or "page") .. ".html")
  local code, _, err = run(("html '%s' -o '%s' --test-hooks"):format(path, page))
  assert(code == 0, err)
  return page, assert(trace.load(path))
end

-- Three lanes whose first event (a marker) is at 5000 us: the page's zero.
local function three_lanes()
  local events = {}
  for tid, name in ipairs{"worker 0", "worker 1", "caller"} do
    events[#events + 1] = {ph = "M", pid = 1, tid = tid, name = "thread_name", args = {name = name}}
    for k = 0, 9 do
      events[#events + 1] = {ph = "X", pid = 1, tid = tid, ts = 5000 + k * 100 + tid, dur = 50, name = "job " .. k,
                             cat = "c" .. (k % 3)}
    end
  end
  for i = 0, 4 do events[#events + 1] = {ph = "i", s = "g", pid = 1, tid = 3, ts = 5000 + i * 200, name = "frame",
                                         args = {arg = i}} end
  return events
end

describe_in_browser("the HTML timeline's time base", function()
  local page, model
  setup(function() page, model = page_of(three_lanes(), "base") end)

  it("counts every time from the session's start: view, tooltips, the whole trace's figures", function()
    assert.equal(5000, model.t0)
    local state = S.open_page(page, "#probe=1,27") -- worker 1's first slice: 5002 .. 5052 in the file
    assert.same({0, model.t1 - model.t0}, state.view)
    assert.equal(0, state.whole.from)
    assert.matches("start    2.000 us", state.probe, 1, true)
    local marker = S.open_page(page, "#probe=3,200").probe -- the marker at 5200 in the file, below the lanes
    assert.matches("at     200.000 us", marker, 1, true)
  end)

  it("opens zoomed to #from=..&to=.. (since the session's start), with that range selected", function()
    local state = S.open_page(page, "#from=199&to=599")
    assert.same({199, 599}, state.view)
    local got = state.selection
    assert.same({199, 599}, {got.from, got.to})
    local want = stats.compute(model, model.t0 + 199, model.t0 + 599)
    assert.near(want.total.busy, got.busy, 1e-6 * want.total.busy)
    assert.near(want.total.idle, got.idle, 1e-9)
  end)

  it("opens on the whole trace when #from/#to is a range the report would refuse", function()
    local whole = {0, model.t1 - model.t0}
    -- beyond +-3e15 us (the width of -1e308..1e308 is infinite), wholly after or before
    -- the trace (it would read as 100% idle), or narrower than the file's nanosecond
    for _, frag in ipairs{"#from=-1e308&to=1e308", "#from=-4e15&to=500", "#from=1e20&to=2e20",
                          "#from=-900&to=-100", "#from=5&to=5.0000001"} do
      local state = S.open_page(page, frag)
      assert.same(whole, state.view, frag)
      assert.equal(cjson.null, state.selection, frag)
    end
  end)
end)

describe_in_browser("the HTML timeline's layout", function()
  it("lets three lanes fill the window's height", function()
    local page = page_of(three_lanes(), "fill")
    local state = S.open_page(page, nil, nil, "1200,800")
    assert.equal(3, #state.laneLabels)
    assert.is_true(state.row > 100, "rows of " .. state.row .. " px in a window of " .. state.windowHeight)
    assert.is_true(state.height >= 0.7 * state.windowHeight, state.height .. " of " .. state.windowHeight)
    assert.is_true(state.height <= state.windowHeight) -- and no more
  end)

  it("keeps a minimum row height for many lanes, and thins marker labels so that none overlaps", function()
    local events = {}
    for tid = 1, 30 do
      events[#events + 1] = {ph = "M", pid = 1, tid = tid, name = "thread_name", args = {name = "worker " .. tid}}
      events[#events + 1] = {ph = "X", pid = 1, tid = tid, ts = 0, dur = 10000, name = "x", cat = "c"}
    end
    for i = 1, 2000 do
      events[#events + 1] = {ph = "i", s = "g", pid = 1, tid = 1, ts = i * 5, name = i % 2 == 0 and "frame" or "tick",
                             args = {arg = i}}
    end
    local page = page_of(events, "many")
    local state = S.open_page(page, nil, nil, "1200,800")
    assert.equal(22, state.row)
    local labels = state.markerLabels
    assert.is_true(#labels > 5 and #labels < 200, #labels .. " labels")
    for i = 2, #labels do
      assert.is_true(labels[i - 1].x + labels[i - 1].w <= labels[i].x,
                     ("label %d (%s) runs into label %d (%s)"):format(i - 1, labels[i - 1].text, i, labels[i].text))
    end
    -- zoomed in on nine markers (1005, 1010, ... 1045), each gets its label
    local zoomed = S.open_page(page, "#from=1002&to=1048", nil, "1200,800")
    assert.equal(9, #zoomed.markerLabels)
  end)
end)

describe_in_browser("long and multi-line names on the HTML timeline", function()
  local LANE = "a very long lane name with <tags> & ampersands\nand a second line " .. ("z"):rep(40)
  local CAT = "category <b>&amp;</b> with\na line break and a very long name" -- 61 characters
  local SHORT = "two\nlines"
  local KIND = "tick <&>\nline two " .. ("k"):rep(200)

  it("are cut with an ellipsis in the legend and the labels, ⏎ for a line break, whole in tooltips", function()
    local page = page_of({
      {ph = "M", pid = 1, tid = 1, name = "thread_name", args = {name = LANE}},
      {ph = "X", pid = 1, tid = 1, ts = 0, dur = 40, name = "a", cat = CAT},
      {ph = "X", pid = 1, tid = 1, ts = 50, dur = 40, name = "b", cat = SHORT},
      {ph = "i", s = "g", pid = 1, tid = 1, ts = 45, name = KIND, args = {arg = 7}},
    }, "names")
    local state = S.open_page(page, "#probe=0,20")
    local width = require("jobque_profile.report").NAME_WIDTH
    assert.equal(40, width)
    -- as the report cuts it: the first 26 characters, an ellipsis, the last 13
    assert.same({"category <b>&amp;</b> with…ery long name", "two⏎lines"}, state.legendTexts)
    assert.same({CAT, SHORT}, state.legendTitles)
    local lane = state.laneLabels[1]
    assert.matches("^a very long lane.*…$", lane)
    assert.is_true(utf8.len(lane) < 40, lane)
    local label = state.markerLabels[1].text
    assert.matches("^tick <&>⏎line two k+…$", label)
    assert.is_true(state.markerLabels[1].w <= 180)
    assert.matches("lane     " .. LANE, state.probe, 1, true)
    assert.matches("category " .. CAT, state.probe, 1, true)
    assert.matches("marker " .. KIND .. "\narg    7", S.open_page(page, "#probe=0,45").probe, 1, true)
  end)
end)

-- The page's graph, counter and span parts, on traces of ours built by hand (their
-- figures worked out in the comments): a page with the specs' hooks, and its
-- model.
local function ours(events, stop)
  local all = {}
  for tid, name in ipairs{"worker 0", "worker 1", "caller"} do
    all[#all + 1] = {ph = "M", pid = 1, tid = tid, name = "thread_name", args = {name = name}}
  end
  for _, e in ipairs(events) do all[#all + 1] = e end
  local doc = {traceEvents = all, jobqueProfile = {version = 1, clock = "tsc", startUs = 0, stopUs = stop,
                                                   lostEvents = 0, categories = {}, markers = {}}}
  local path, page = S.tmpfile("ours.json"), S.tmpfile("ours.html")
  S.write(path, cjson.encode(doc))
  local code, _, err = run(("html '%s' -o '%s' --test-hooks"):format(path, page))
  assert(code == 0, err)
  return page, assert(trace.load(path))
end

local function job(tid, ts, dur, cat, id) return {ph = "X", pid = 1, tid = tid, ts = ts, dur = dur, name = cat,
                                                  cat = "job", args = {job = id}} end
local function submit(tid, ts, id) return {ph = "X", pid = 1, tid = tid, ts = ts, dur = 100, name = "submit",
                                            cat = "submit", args = {job = id}} end

-- A chain A (job 1, 20 ms) -> B (job 2, 30 ms, after A) beside C (job 3,
-- 10 ms) on 2 workers; the caller submits A 0..100, C 100..200, B 200..300,
-- then waits for all 300..51600, and the session stops there:
--   worker 0: A 1000..21000; "dependency done" A -> B (ready) at 21000; B 21500..51500
--   worker 1: C 1000..11000.
-- Critical path, back from the session's end (51600, the caller's wait for
-- all): the last job to end before it, B (51500), the caller waking 100
-- (resume latency, on the caller's lane); B's run 30000; before it, the
-- later of its dependency A (21000) and its submit (300): A, then 500 us
-- with a worker free (scheduling delay, on worker 0); A's run 20000, 900 us
-- from its submit's end with the workers free (scheduling delay), its
-- submit 100 (on the caller's lane): A then B, 51600 us, the whole session.
-- Ready latencies: A 1000 - 100 = 900 us, B 21500 - 21000 = 500 us, C 1000 - 200 = 800 us.
local A_CAT = "alpha <b>&amp;</b>\nline two"
local CHAIN = {
  submit(3, 0, 1), submit(3, 100, 3), submit(3, 200, 2),
  {ph = "X", pid = 1, tid = 3, ts = 300, dur = 51300, name = "wait all", cat = "wait"},
  job(1, 1000, 20000, A_CAT, 1),
  {ph = "X", pid = 1, tid = 1, ts = 21000, dur = 0, name = "dependency done", cat = "flow",
    args = {job = 1, dependant = 2, ready = true}},
  job(1, 21500, 30000, "beta", 2),
  job(2, 1000, 10000, "gamma", 3),
}

describe_in_browser("the HTML timeline's critical path", function()
  local page, model
  setup(function() page, model = ours(CHAIN, 51600) end)

  it("is A then B, with its length, share and make-up by kind beside the toggle, and off at first", function()
    local state = S.open_page(page)
    local cp = state.critical
    assert.same({1, 2}, cp.jobs)
    assert.near(51600, cp.duration, 1e-6)
    assert.near(1, cp.share, 1e-9)
    -- run 20000 + 30000, scheduling delay 900 + 500, then resume latency and submit 100 each (by name)
    assert.matches("51.60 ms, 100.0% of the session, 2 jobs: run 50.00 ms, scheduling delay 1.400 ms, "
                   .. "resume latency 100 us, submit 100 us", cp.info, 1, true)
    local by_kind = {{kind = "run", us = 50000}, {kind = "scheduling delay", us = 1400},
                     {kind = "resume latency", us = 100}, {kind = "submit", us = 100}}
    assert.same(by_kind, cp.byKind)
    local report_cp = stats.compute(model).critical_path -- the report's, the same figures
    assert.same(by_kind, report_cp.by_kind)
    assert.same({51600, {1, 2}}, {report_cp.duration_us, report_cp.jobs})
    assert.equal(6, cp.steps)
    assert.is_false(cp.on)
    assert.is_false(cp.partial)
    assert.equal(cjson.null, cp.banner)
    assert.equal(0, cp.outlined)
  end)

  it("is highlighted by the key c (its six steps outlined on their lanes) and off again by a second c", function()
    local on = S.open_page(page, "#do=key:c").critical
    assert.is_true(on.on)
    assert.equal(6, on.outlined)
    local off = S.open_page(page, "#do=key:c;key:c").critical
    assert.is_false(off.on)
    assert.equal(0, off.outlined)
    -- zoomed on 0 .. 900: the submit (0..100) and A's scheduling delay (100..1000)
    assert.equal(2, S.open_page(page, "#from=0&to=900&cp").critical.outlined)
  end)

  it("opens highlighted with #cp in the URL, also beside #from/#to", function()
    assert.is_true(S.open_page(page, "#cp").critical.on)
    local zoomed = S.open_page(page, "#from=0&to=30000&cp")
    assert.is_true(zoomed.critical.on)
    assert.same({0, 30000}, zoomed.view)
    assert.is_false(S.open_page(page, "#cpx").critical.on)
  end)

  it("is highlighted by its checkbox too, and not by another key", function()
    assert.is_true(S.open_page(page, "#do=click:cp").critical.on)
    assert.is_false(S.open_page(page, "#do=key:x").critical.on)
  end)

  it("names each step's kind in the tooltip of what lies under it", function()
    assert.matches("\npath     run, 20.00 ms (job 1)", S.open_page(page, "#probe=0,5000").probe, 1, true)
    assert.matches("\npath     scheduling delay, 500 us (job 2)", S.open_page(page, "#probe=0,21250").probe, 1, true)
    local wake = S.open_page(page, "#probe=2,51550").probe -- the caller's wait, its last 100 us the wake
    assert.matches("\npath     resume latency, 100 us", wake, 1, true)
    assert.is_nil(S.open_page(page, "#probe=1,5000").probe:find("path ", 1, true)) -- C is off the path
  end)

  it("shows each job's latencies and category in its tooltip, a name with markup as text", function()
    local a = S.open_page(page, "#probe=0,5000").probe -- A's slice (the page's zero is the session's start)
    assert.matches(A_CAT .. "\ncategory " .. A_CAT, a, 1, true)
    assert.matches("job      1  (on the critical path)", a, 1, true)
    assert.matches("ready    900 us", a, 1, true)
    assert.matches("run      20.00 ms", a, 1, true)
    assert.matches("resume   -\n", a, 1, true) -- it never resumed
    assert.matches("suspended 0.00 us", a, 1, true)
    assert.matches("ready    500 us", S.open_page(page, "#probe=0,30000").probe, 1, true)
    local c = S.open_page(page, "#probe=1,5000").probe
    assert.matches("category gamma", c, 1, true)
    assert.matches("ready    800 us", c, 1, true)
    assert.is_nil(c:find("critical path", 1, true))
  end)
end)

describe_in_browser("a partial trace's critical path", function()
  it("has a banner on the page, a caveat in the report and partial = true in --json", function()
    -- the chain above, with 3 events of threads that got no lane lost
    local all = {}
    for tid, name in ipairs{"worker 0", "worker 1", "caller"} do
      all[#all + 1] = {ph = "M", pid = 1, tid = tid, name = "thread_name", args = {name = name}}
    end
    for _, e in ipairs(CHAIN) do all[#all + 1] = e end
    local path, page = S.tmpfile("partial.json"), S.tmpfile("partial.html")
    S.write(path, cjson.encode({traceEvents = all, jobqueProfile = {version = 1, startUs = 0, stopUs = 51600,
                                                                    lostEvents = 3}}))
    assert.equal(0, (run(("html '%s' -o '%s' --test-hooks"):format(path, page))))
    local cp = S.open_page(page).critical
    assert.is_true(cp.partial)
    assert.matches("^Partial trace: events were lost", cp.banner)
    assert.matches("%(partial%)$", cp.info)
    local _, text = run("report '" .. path .. "'")
    assert.matches("\n  partial: 3 events were lost; the path may be shorter than the run's\n", text, 1, true)
    assert.matches("\n  partial: the replay ran what the trace holds", text, 1, true)
    local _, json = run("report --json '" .. path .. "'")
    local j = cjson.decode(json)
    assert.same({true, "3 events were lost", true}, {j.critical_path.partial, j.critical_path.partial_why,
                                                    j.whatif.partial})
    assert.is_nil(j.critical_path.bound)
    assert.is_nil(j.critical_path.floor_us)
  end)
end)

-- A parent P (job 10) submits Q (job 11) inside its slice and awaits it; R
-- (job 12) runs after P:
--   caller:   submit P 0..100, submit R 100..200, wait for P 200..6000
--   worker 0: P 1000..2000 (submit Q 1200..1300 inside), await 2000..5000, P 5000..6000;
--             "dependency done" P -> R (ready) at 6000; R 6500..7000
--   worker 1: Q 1500..4500, wake job (P) at 4600; the session stops at 8000.
-- P: ready 900 us, run 2 ms, suspended 3 ms, resumed 400 us after Q's wake.
local AWAIT = {
  submit(3, 0, 10), submit(3, 100, 12),
  {ph = "X", pid = 1, tid = 3, ts = 200, dur = 5800, name = "wait", cat = "wait", args = {job = 10}},
  job(1, 1000, 1000, "parent", 10),
  submit(1, 1200, 11),
  {ph = "b", pid = 1, tid = 1, ts = 2000, name = "await", cat = "await", id2 = {["local"] = "0xa"},
    args = {job = 10, awaits = 11}},
  {ph = "e", pid = 1, tid = 1, ts = 5000, name = "await", cat = "await", id2 = {["local"] = "0xa"},
    args = {job = 10, awaits = 11}},
  job(1, 5000, 1000, "parent", 10),
  {ph = "X", pid = 1, tid = 1, ts = 6000, dur = 0, name = "dependency done", cat = "flow",
    args = {job = 10, dependant = 12, ready = true}},
  job(1, 6500, 500, "after", 12),
  job(2, 1500, 3000, "child", 11),
  {ph = "X", pid = 1, tid = 2, ts = 4600, dur = 0, name = "wake job", cat = "flow", args = {job = 10}},
}

local function arrows(state)
  local out = {}
  for _, a in ipairs(state.arrows) do
    out[#out + 1] = ("%s %s->%d"):format(a.kind, a.from == cjson.null and "caller" or math.tointeger(a.from),
                                         math.tointeger(a.to))
  end
  table.sort(out)
  return out
end

describe_in_browser("the HTML timeline's arrows", function()
  local page
  setup(function() page = ours(AWAIT, 8000) end)

  it("are none until the mouse is over a job", function()
    local state = S.open_page(page)
    assert.equal(cjson.null, state.hover)
    assert.same({}, state.arrows)
  end)

  it("of a job: the submit that made it, what it submitted, what it awaited", function()
    local p = S.open_page(page, "#hover=0,1500") -- P's first slice
    assert.equal(10, p.hover)
    assert.same({"await 11->10", "submits 10->11", "submitted by caller->10"}, arrows(p))
    assert.same(arrows(p), arrows(S.open_page(page, "#hover=0,5500"))) -- its second slice: the same job
  end)

  it("of a job after another: its dependency; of a child: its parent", function()
    assert.same({"after 10->12", "submitted by caller->12"}, arrows(S.open_page(page, "#hover=0,6700")))
    assert.same({"submitted by 10->11"}, arrows(S.open_page(page, "#hover=1,3000")))
  end)

  it("of the job a submit made, or a wait waited for, over that submit or wait", function()
    assert.equal(10, S.open_page(page, "#hover=2,50").hover) -- the caller's submit of P
    assert.equal(10, S.open_page(page, "#hover=2,3000").hover) -- its wait for P
    assert.equal(11, S.open_page(page, "#hover=0,1250").hover) -- P's submit of Q
    assert.equal(cjson.null, S.open_page(page, "#hover=2,7500").hover) -- nothing there
  end)

  it("of a job that submitted thousands: the first 1000 drawn, and the count", function()
    local events = {submit(3, 0, 1), job(1, 1000, 20000, "parent", 1)}
    for id = 2, 1501 do
      events[#events + 1] = submit(1, 1000 + id * 10, id)
      events[#events + 1] = job(2, 21000 + id * 10, 5, "child", id)
    end
    local state = S.open_page((ours(events, 40000)), "#hover=0,18000") -- past its submits
    assert.equal(1, state.hover)
    assert.equal(1501, state.arrowsTotal) -- its submit, and the 1500 it made
    assert.equal(1000, #state.arrows)
  end)

  it("and the tooltip: the suspended time and the resume latency", function()
    local tip = S.open_page(page, "#probe=0,1500").probe
    assert.matches("ready    900 us", tip, 1, true)
    assert.matches("resume   400 us  (awaited job done to resumed, 1x)", tip, 1, true)
    assert.matches("run      2.000 ms", tip, 1, true)
    assert.matches("suspended 3.000 ms", tip, 1, true)
  end)
end)

-- The chain above with spans inside A's slice (1000..21000 on worker 0):
-- "parse" 2000..12000 (depth 1) and, nested in it, SPAN 3000..5000 (depth 2,
-- written first: a span is recorded at its end); and counters: the queue's
-- "jobs" (three tracks), a worker's heap, and one named with markup.
local SPAN = "<script>tok</script>\nline two"
local COUNTER = "<q>&amp;\nlen"
local function with_parts()
  local events = {}
  for i, e in ipairs(CHAIN) do events[i] = e end
  for _, e in ipairs{
    {ph = "X", pid = 1, tid = 1, ts = 3000, dur = 2000, name = SPAN, cat = SPAN, args = {span = 2, job = 1, piece = 1}},
    {ph = "X", pid = 1, tid = 1, ts = 2000, dur = 10000, name = "parse", cat = "parse",
     args = {span = 1, job = 1, piece = 1}},
    {ph = "C", pid = 1, tid = 3, ts = 0, name = "jobs", args = {ready = 3, running = 0, suspended = 0}},
    {ph = "C", pid = 1, tid = 3, ts = 1000, name = "jobs", args = {ready = 1, running = 2, suspended = 0}},
    {ph = "C", pid = 1, tid = 3, ts = 21000, name = "jobs", args = {ready = 0, running = 1, suspended = 0}},
    {ph = "C", pid = 1, tid = 1, ts = 1000, name = "heap worker 0", args = {KB = 512.5}},
    {ph = "C", pid = 1, tid = 1, ts = 21000, name = "heap worker 0", args = {KB = 640.25}},
    {ph = "C", pid = 1, tid = 3, ts = 500, name = COUNTER, args = {n = 7}},
    {ph = "C", pid = 1, tid = 3, ts = 30000, name = COUNTER, args = {n = 42}},
  } do events[#events + 1] = e end
  return ours(events, 60000)
end

describe_in_browser("the HTML timeline's counters", function()
  local page
  setup(function() page = with_parts() end)

  it("are area charts under the lanes, each labelled with its name and max, in order of appearance", function()
    local state = S.open_page(page)
    local got = {}
    for i, c in ipairs(state.counters) do got[i] = c.name .. " | " .. c.maxLabel end
    assert.same({"jobs ready | max 3", "jobs running | max 2", "jobs suspended | max 0",
                 "heap worker 0 KB | max 640.25", COUNTER .. " n | max 42"}, got)
    assert.equal("<q>&amp;⏎len n", state.counters[5].label)
    assert.equal(3, state.counters[1].n)
  end)

  it("show the value at the cursor on hover", function()
    assert.matches("counter jobs running\nvalue   2\nat      5000.000 us", S.open_page(page, "#cprobe=1,5000").probe,
                   1, true)
    assert.matches("value   1\n", S.open_page(page, "#cprobe=1,25000").probe, 1, true)
    assert.matches("value   512.5\n", S.open_page(page, "#cprobe=3,20000").probe, 1, true)
    assert.matches("value   - (before its first sample)", S.open_page(page, "#cprobe=3,500").probe, 1, true)
    assert.matches("counter " .. COUNTER .. " n\nvalue   42", S.open_page(page, "#cprobe=4,50000").probe, 1, true)
  end)
end)

describe_in_browser("the HTML timeline's spans", function()
  local page
  setup(function() page = with_parts() end)

  it("are drawn in rows under their job's slice, inside it, at depth 1 and 2", function()
    local state = S.open_page(page)
    assert.equal(2, state.spansDrawn)
    local v0, v1, label, width = state.view[1], state.view[2], state.label, state.width
    local function x(t) return label + (t - v0) / (v1 - v0) * (width - label) end
    local by_depth = {}
    for _, s in ipairs(state.spans) do by_depth[s.depth] = s end
    local top, row = 36, state.row -- lane 0's top: below the axis
    local h = math.max(3, (row - 6) / 3)
    for depth, span in ipairs{{2000, 12000}, {3000, 5000}} do
      local s = by_depth[depth]
      assert.equal(0, s.lane)
      assert.near(x(span[1]), s.x0, 0.01)
      assert.near(x(span[2]), s.x1, 0.01)
      assert.is_true(s.x0 >= x(1000) and s.x1 <= x(21000)) -- inside A's slice
      assert.near(top + 3 + depth * h, s.y0, 0.01) -- its row, under the job slice's top row
      assert.is_true(s.y1 <= top + row - 3)
    end
  end)

  it("show their own tooltip in their row (names as text), the job's in the top row", function()
    local row = S.open_page(page).row
    local h = math.max(3, (row - 6) / 3)
    local function at(depth) return ("%.2f"):format(3 + (depth + 0.5) * h) end
    local top = S.open_page(page, "#probe=0,4000," .. at(0)).probe
    assert.matches("^" .. A_CAT:gsub("%p", "%%%0") .. "\n", top)
    assert.matches("job      1", top, 1, true)
    local parse = S.open_page(page, "#probe=0,8000," .. at(1)).probe
    assert.matches("^parse  %(span%)\ncategory parse\n", parse)
    local inner = S.open_page(page, "#probe=0,4000," .. at(2))
    assert.matches(SPAN .. "  (span)\ncategory " .. SPAN, inner.probe, 1, true)
    assert.matches('"span":2', inner.probe, 1, true)
    assert.truthy(table.concat(inner.legendTitles, "|"):find(SPAN, 1, true))
    assert.equal(1, S.open_page(page, "#hover=0,4000," .. at(2)).hover) -- a span's job: its arrows
  end)

  it("leave the busy time as it was (a span counts under its job's slice)", function()
    local plain = S.open_page((ours(CHAIN, 60000))).whole
    local parts = S.open_page(page).whole
    assert.near(plain.busy, parts.busy, 1e-6)
  end)
end)
