-- The HTML timeline of a trace with samples, in headless Chromium: an
-- icicle of the selected range (widths in proportion to weight, filtered by
-- category and lane), sample ticks on the lanes when zoomed in below 50 ms,
-- names as text; and the page of a trace without samples has none of
-- the samples' part.
local S = require "support"
local cjson = require "cjson"
local trace = require "jobque_profile.trace"
local html = require "jobque_profile.page"

local describe_in_browser = S.plain_only(describe, pending, "drives Chromium")

local SEED = "spec/fixtures/seed_trace_example.json"

-- The lane and frame names hold markup and line breaks: they must show as text.
local LANE1 = "worker 1 <b>\nsecond"
local HEAVY, LIGHT = "heavy <b>(job.lua:20)", "light\n(job.lua:30)"

-- Two lanes, a slice each (times in us since the session's start, 0).
local EVENTS = {
  {ph = "M", pid = 1, tid = 1, name = "thread_name", args = {name = "worker 0"}},
  {ph = "M", pid = 1, tid = 2, name = "thread_name", args = {name = LANE1}},
  {ph = "X", pid = 1, tid = 1, ts = 0, dur = 450, name = "a", cat = "attention"},
  {ph = "X", pid = 1, tid = 2, ts = 100, dur = 200, name = "m", cat = "mlp"},
}

-- The model of EVENTS with samples, built as the loader builds it (the
-- model's contract: frames renumbered so that a parent comes first):
--   1 main chunk (job.lua)  lua      root
--   2 run (job.lua:10)      lua      under 1
--   3 heavy <b>(job.lua:20) lua      under 2
--   4 light\n(job.lua:30)   lua      under 2
--   5 rep [C]               C        under 3
--   6 [copy in]             runtime  root
-- samples (ts, lane, leaf, weight, category):
--   worker 0: 100 heavy 3 attention, 200 rep 1 attention, 300 light 2 mlp, 400 [copy in] 1 attention
--   worker 1: 150 heavy 2 mlp, 250 light 1 mlp
local function model_with_samples()
  local path = S.tmpfile("hand.json")
  S.write(path, cjson.encode({traceEvents = EVENTS}))
  local m = assert(trace.load(path))
  m.frames = {n = 6, name = {"main chunk (job.lua)", "run (job.lua:10)", HEAVY, LIGHT, "rep [C]", "[copy in]"},
              category = {"lua", "lua", "lua", "lua", "C", "runtime"}, parent = {0, 1, 2, 2, 3, 0},
              id = {"1", "2", "3", "4", "5", "6"}}
  m.sampling = {hz = 1000, period_ns = 1000000, clock = "thread-cpu", depth = 64, samples = 6, signals = 6, ticks = 10}
  m.nsamples = 6
  m.sample_ts = {100, 200, 300, 400, 150, 250}
  m.sample_lane = {1, 1, 1, 1, 2, 2}
  m.sample_frame = {3, 5, 4, 6, 3, 4}
  m.sample_weight = {3, 1, 2, 1, 2, 1}
  m.sample_cat = {"attention", "attention", "mlp", "attention", "mlp", "mlp"}
  m.sample_job = {false, false, false, false, false, false}
  m.sample_span = {false, false, false, false, false, false}
  m.sample_line = {21, 5, 31, false, 22, 33}
  return m
end

-- The page (with the test hooks) of model_with_samples(), written by page.lua.
local function page_of_model()
  local page = S.tmpfile("samples.html")
  assert(html.write(model_with_samples(), page, {test_hooks = true}))
  return page
end

-- The same samples in a trace's text (what the writer writes: stackFrames,
-- samples, jobqueProfile.sampling): frame ids not in parent-first order,
-- samples not in lane order; edit(t), when given, changes the trace first.
local function trace_text(edit)
  local t = {traceEvents = EVENTS,
    stackFrames = {["10"] = {name = "main chunk (job.lua)", category = "lua"},
                   ["2"] = {name = "run (job.lua:10)", category = "lua", parent = "10"},
                   ["3"] = {name = HEAVY, category = "lua", parent = "2"},
                   ["4"] = {name = LIGHT, category = "lua", parent = "2"},
                   ["1"] = {name = "rep [C]", category = "C", parent = "3"},
                   ["6"] = {name = "[copy in]", category = "runtime"}},
    samples = {{tid = 2, ts = 150, sf = "3", weight = 2, name = "mlp", args = {line = 22}},
               {tid = 2, ts = 250, sf = "4", weight = 1, name = "mlp", args = {line = 33}},
               {tid = 1, ts = 100, sf = "3", weight = 3, name = "attention", args = {line = 21}},
               {tid = 1, ts = 300, sf = "4", weight = 2, name = "mlp", args = {line = 31}},
               {tid = 1, ts = 200, sf = "1", weight = 1, name = "attention", args = {line = 5}},
               {tid = 1, ts = 400, sf = "6", weight = 1, name = "attention", args = {}}},
    jobqueProfile = {version = 1, startUs = 0, stopUs = 450, sampling = {hz = 1000, periodNs = 1000000,
                     clock = "thread-cpu", depth = 64, samples = 6, signals = 6, ticks = 10}}}
  if edit then edit(t) end
  return cjson.encode(t)
end

-- The page (with the test hooks) the command writes of trace_text().
local function page_of_file()
  local path, page = S.tmpfile("samples.json"), S.tmpfile("samples.html")
  S.write(path, trace_text())
  local code, _, err = S.cli(("html '%s' -o '%s' --test-hooks"):format(path, page))
  assert(code == 0, err)
  return page
end

-- The icicle's boxes by name: {x0, x1, total, self, depth}.
local function boxes_of(state)
  local out = {}
  for _, b in ipairs(state.samples.icicle.boxes) do
    assert.is_nil(out[b.name], "two boxes named " .. b.name)
    out[b.name] = b
  end
  return out
end

-- Asserts that the icicle shows exactly `want` (name -> {share of the
-- width, share where it starts}) within a thousandth of a pixel.
local function assert_widths(state, want)
  local icicle, got = state.samples.icicle, boxes_of(state)
  local W = icicle.width
  assert.is_true(W > 500, "the icicle is " .. W .. " px wide")
  local names = {}
  for name in pairs(got) do names[#names + 1] = name end
  table.sort(names)
  local wanted = {}
  for name in pairs(want) do wanted[#wanted + 1] = name end
  table.sort(wanted)
  assert.same(wanted, names)
  for name, w in pairs(want) do
    local b = got[name]
    assert.near(w[1] * W, b.x1 - b.x0, 1e-3, name .. "'s width")
    assert.near(w[2] * W, b.x0, 1e-3, name .. "'s start")
  end
end

describe("the timeline page of a trace without samples", function()
  it("is the same page when the file has stackFrames but no samples", function()
    local path, out = S.tmpfile("frames.json"), S.tmpfile("frames.html")
    local pages = {}
    local without = trace_text(function(t) t.stackFrames, t.samples, t.jobqueProfile.sampling = nil, nil, nil end)
    local no_samples = trace_text(function(t) t.samples = "[]" end):gsub('"%[%]"', "[]")
    for k, text in ipairs{without, no_samples} do
      S.write(path, text)
      local code, _, err = S.cli(("html '%s' -o '%s'"):format(path, out))
      assert.equal(0, code, err)
      pages[k] = S.read(out)
    end
    assert.is_nil(pages[1]:find('id="samples"', 1, true))
    assert.is_true(pages[1] == pages[2])
  end)

  it("has none of the samples' part", function()
    local page = assert(html.render(assert(trace.load(SEED)), {test_hooks = true}))
    for _, word in ipairs{'id="samples"', "icicle", "@SAMPLES@", "samples-panel", "ihover"} do
      assert.is_nil(page:find(word, 1, true), word)
    end
  end)
end)

describe("the samples' data in the page", function()
  it("holds the frame tree and one column per field, names inert in the element", function()
    local m = model_with_samples()
    m.frames.name[6] = "</script><b>x"
    m.frames.name[5] = "rep\255 [C]" -- invalid UTF-8: U+FFFD on the page, as in the report
    local page = assert(html.render(m))
    assert.is_nil(page:find("</script><b>", 1, true))
    local text = page:match('<script type="application/json" id="samples">(.-)</script>')
    local d = cjson.decode(text)
    assert.same({"main chunk (job.lua)", "run (job.lua:10)", HEAVY, LIGHT, "rep\u{FFFD} [C]", "</script><b>x"}, d.fname)
    assert.same({"lua", "C", "runtime"}, d.kinds)
    assert.same({0, 0, 0, 0, 1, 2}, d.fkind)
    assert.same({-1, 0, 1, 1, 2, -1}, d.fparent)
    assert.same({100000, 200000, 300000, 400000, 150000, 250000}, d.ts) -- ns since the session's start
    assert.same({0, 0, 0, 0, 1, 1}, d.lane)
    assert.same({2, 4, 3, 5, 2, 3}, d.leaf)
    assert.same({3, 1, 2, 1, 2, 1}, d.w)
    assert.same({{"attention", "#43B08A"}, {"mlp", "#9BB54A"}}, d.cats) -- the slices' colours of those names
    assert.same({0, 0, 1, 0, 1, 1}, d.c)
    assert.equal(1000000, d.period)
  end)

  it("refuses a sample whose lane or frame the model does not have, naming it", function()
    local m = model_with_samples()
    m.sample_lane[5] = 3
    assert.matches("page_samples: sample 5's lane is not an index from 1 to 2",
                   S.err_of(html.render, m), 1, true)
    m = model_with_samples()
    m.sample_frame[2] = 0
    assert.matches("page_samples: sample 2's frame is not an index from 1 to 6",
                   S.err_of(html.render, m), 1, true)
  end)
end)

for _, source in ipairs{{"a model built by hand", page_of_model},
                        {"a hand-written trace, through the command", page_of_file}} do
  describe_in_browser("the icicle of " .. source[1], function()
    local page
    setup(function() page = source[2]() end)

    it("shows the whole trace: each frame as wide as its share of the weight", function()
      -- weight 10: [copy in] 1; main chunk = run = 3 + 1 + 2 + 2 + 1 = 9; heavy 3 + 1 + 2 = 6 (rep 1
      -- of it); light 2 + 1 = 3. Siblings in name order ("[" before "m", "h" before "l").
      local state = S.open_page(page, nil, nil, "1200,800")
      local icicle = state.samples.icicle
      assert.same({6, 10, cjson.null, cjson.null, cjson.null}, {icicle.count, icicle.total, icicle.range,
                                                                icicle.category, icicle.lane})
      assert_widths(state, {all = {1, 0}, ["[copy in]"] = {0.1, 0}, ["main chunk (job.lua)"] = {0.9, 0.1},
                            ["run (job.lua:10)"] = {0.9, 0.1}, [HEAVY] = {0.6, 0.1}, [LIGHT] = {0.3, 0.7},
                            ["rep [C]"] = {0.1, 0.1}})
      local b = boxes_of(state)
      assert.same({5, 6, 3}, {b[HEAVY].self, b[HEAVY].total, b[HEAVY].depth})
      assert.same({"lua", "C", "runtime"}, {b[LIGHT].kind, b["rep [C]"].kind, b["[copy in]"].kind})
      assert.equal(5, icicle.rows)
      assert.matches("CPU samples of the whole trace: 6 samples, weight 10 (10.00 ms)", icicle.info, 1, true)
    end)

    it("shows only the selected range", function()
      -- 120 .. 320: worker 0's 200 (rep 1) and 300 (light 2), worker 1's 150 (heavy 2) and 250 (light 1)
      local state = S.open_page(page, "#from=120&to=320")
      assert.same({120, 320}, state.samples.icicle.range)
      assert.same({4, 6}, {state.samples.icicle.count, state.samples.icicle.total})
      assert_widths(state, {all = {1, 0}, ["main chunk (job.lua)"] = {1, 0}, ["run (job.lua:10)"] = {1, 0},
                            [HEAVY] = {3 / 6, 0}, ["rep [C]"] = {1 / 6, 0}, [LIGHT] = {3 / 6, 3 / 6}})
    end)

    it("filters by category, by lane, and both with a range", function()
      -- mlp: 300 light 2, 150 heavy 2, 250 light 1: weight 5
      local state = S.open_page(page, "#scat=mlp")
      assert.same({"mlp", 5}, {state.samples.icicle.category, state.samples.icicle.total})
      assert_widths(state, {all = {1, 0}, ["main chunk (job.lua)"] = {1, 0}, ["run (job.lua:10)"] = {1, 0},
                            [HEAVY] = {2 / 5, 0}, [LIGHT] = {3 / 5, 2 / 5}})
      -- worker 1: 150 heavy 2, 250 light 1: weight 3 (its name, URL-encoded, has markup and a line break)
      state = S.open_page(page, "#slane=worker%201%20%3Cb%3E%0Asecond")
      assert.same({LANE1, 3}, {state.samples.icicle.lane, state.samples.icicle.total})
      assert_widths(state, {all = {1, 0}, ["main chunk (job.lua)"] = {1, 0}, ["run (job.lua:10)"] = {1, 0},
                            [HEAVY] = {2 / 3, 0}, [LIGHT] = {1 / 3, 2 / 3}})
      -- attention on worker 0 from 120 to 320: 200 rep 1 alone
      state = S.open_page(page, "#from=120&to=320&scat=attention&slane=worker%200")
      assert.same({1, 1}, {state.samples.icicle.count, state.samples.icicle.total})
      assert_widths(state, {all = {1, 0}, ["main chunk (job.lua)"] = {1, 0}, ["run (job.lua:10)"] = {1, 0},
                            [HEAVY] = {1, 0}, ["rep [C]"] = {1, 0}})
      -- nothing matches: an empty icicle
      state = S.open_page(page, "#from=420&to=440&scat=mlp")
      assert.same({0, 0, 0}, {state.samples.icicle.count, state.samples.icicle.total, #state.samples.icicle.boxes})
    end)

    it("zooms to a clicked frame and out from the top row", function()
      -- heavy spans 0.1 .. 0.7 of the width on row 3: clicked, it is the whole width and rep [C] a sixth
      local W = S.open_page(page).samples.icicle.width
      local state = S.open_page(page, ("#iclick=%f,3"):format(0.4 * W))
      assert.equal(HEAVY, state.samples.icicle.focus)
      assert_widths(state, {all = {1, 0}, ["main chunk (job.lua)"] = {1, 0}, ["run (job.lua:10)"] = {1, 0},
                            [HEAVY] = {1, 0}, ["rep [C]"] = {1 / 6, 0}})
      assert.equal("all", S.open_page(page, ("#iclick=%f,3&iclick=5,0"):format(0.4 * W)).samples.icicle.focus)
    end)

    it("shows a frame's name whole, as text, in its tooltip, and names as text in the filters", function()
      local W = S.open_page(page).samples.icicle.width
      local state, dom = S.open_page(page, ("#ihover=%f,3"):format(0.85 * W))
      assert.equal(LIGHT .. "  (lua)\ntotal    3 (3.000 ms), 30.0% of the shown\nself     3 (3.000 ms), 30.0%", state.itip)
      -- the lane filter's option: the name on one line, as text (no <b> element), whole in its title
      assert.matches('<option value="1" title="worker 1 [^"]*">worker 1 &lt;b&gt;⏎second</option>', dom)
      assert.is_nil(dom:find("<b>", 1, true))
    end)

    it("draws sample ticks on the lanes, whose tooltip is the sample's stack", function()
      local state = S.open_page(page)
      local row = state.row
      assert.same({true, 6}, {state.samples.ticks.on, state.samples.ticks.drawn}) -- 450 us: below 50 ms
      -- worker 0's sample at 200 us, in the lane's tick strip (its bottom pixels)
      local probe = S.open_page(page, ("#probe=0,200,%d"):format(row - 2)).probe
      assert.equal("sample   at 200.000 us\nlane     worker 0\ncategory attention\nweight   1 (1.000 ms)\n" ..
                   "stack    (leaf first)\n  rep [C]\n  " .. HEAVY .. "\n  run (job.lua:10)\n  main chunk (job.lua)", probe)
      -- above the strip: the slice's tooltip
      assert.matches("^a\ncategory attention", S.open_page(page, "#probe=0,200,10").probe)
    end)
  end)
end

describe_in_browser("sample ticks", function()
  it("show only when the view is narrower than 50 ms", function()
    -- one lane, 0 .. 200 ms, a sample every 10 ms from 5 ms: 20 samples
    local path = S.tmpfile("long.json")
    S.write(path, cjson.encode({traceEvents = {
      {ph = "X", pid = 1, tid = 1, ts = 0, dur = 200000, name = "a", cat = "c"}}}))
    local m = assert(trace.load(path))
    m.frames = {n = 1, name = {"f (x.lua:1)"}, category = {"lua"}, parent = {0}, id = {"7"}}
    m.nsamples = 20
    m.sample_ts, m.sample_lane, m.sample_frame, m.sample_weight, m.sample_cat = {}, {}, {}, {}, {}
    for i = 1, 20 do
      m.sample_ts[i], m.sample_lane[i], m.sample_frame[i], m.sample_weight[i] = 5000 + (i - 1) * 10000, 1, 1, 1
      m.sample_cat[i] = "c"
    end
    local page = S.tmpfile("long.html")
    assert(html.write(m, page, {test_hooks = true}))
    local whole = S.open_page(page).samples
    assert.same({false, 0}, {whole.ticks.on, whole.ticks.drawn})
    assert.equal(cjson.null, whole.period) -- no sampling block: weights without times
    -- 60 ms wide: none; 40 ms wide from 10 ms: 15, 25, 35, 45 ms
    local wide = S.open_page(page, "#from=0&to=60000").samples
    assert.same({false, 0}, {wide.ticks.on, wide.ticks.drawn})
    local zoomed = S.open_page(page, "#from=10000&to=50000").samples
    assert.same({true, 4}, {zoomed.ticks.on, zoomed.ticks.drawn})
    assert.equal(20, zoomed.count)
  end)
end)

describe_in_browser("the icicle of a file the library saved", function()
  -- reader/sample_traces.saved(): samples put through the testing hook, as
  -- the sampler's hook records them, written by the library's writer: on
  -- the caller heavy 2 and heavy > rep [C] 3 ("flame work"), light 5 (no
  -- category); on worker 0 heavy 1 ("flame other"). 11 periods of 1 ms.
  local T = require("jobque.core")._test
  local page
  setup(function()
    local path = require("reader.sample_traces").saved()
    page = S.tmpfile("saved.html")
    local code, _, err = S.cli(("html '%s' -o '%s' --test-hooks"):format(path, page))
    assert(code == 0, err)
  end)
  teardown(function() T.stop() end)

  local MAIN, HEAVY_S, LIGHT_S = "main chunk (job.lua)", "heavy (job.lua:12)", "light (job.lua:40)"

  it("is as wide as each frame's share of the saved weight", function()
    local state = S.open_page(page, nil, S.tmpfile("saved.png"))
    assert.same({4, 11}, {state.samples.icicle.count, state.samples.icicle.total})
    assert.equal(1000, state.samples.period) -- us per period: weights shown as times
    assert_widths(state, {all = {1, 0}, [MAIN] = {1, 0}, [HEAVY_S] = {6 / 11, 0}, ["rep [C]"] = {3 / 11, 0},
                          [LIGHT_S] = {5 / 11, 6 / 11}})
    assert.same({3, 6}, {boxes_of(state)[HEAVY_S].self, boxes_of(state)[HEAVY_S].total})
  end)

  it("filters by the lane and the category the library wrote", function()
    local state = S.open_page(page, "#slane=worker%200")
    assert.equal(1, state.samples.icicle.total)
    assert_widths(state, {all = {1, 0}, [MAIN] = {1, 0}, [HEAVY_S] = {1, 0}})
    state = S.open_page(page, "#scat=flame%20work")
    assert.equal(5, state.samples.icicle.total)
    assert_widths(state, {all = {1, 0}, [MAIN] = {1, 0}, [HEAVY_S] = {1, 0}, ["rep [C]"] = {3 / 5, 0}})
    state = S.open_page(page, "#scat=no%20category")
    assert_widths(state, {all = {1, 0}, [MAIN] = {1, 0}, [LIGHT_S] = {1, 0}})
  end)
end)
