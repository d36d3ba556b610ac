-- The aggregation of CPU samples (jobque_profile.samples) on models built
-- here by hand, in the shape the loader gives (the model's sample_* columns
-- and frame tree). Every expected value is worked out by hand below.
local samples = require "jobque_profile.samples"

-- The frame tree:
--   1 main chunk (job.lua)
--   2   run (job.lua:10)
--   3     heavy (job.lua:20)
--   6       sort [C]
--   4     rec (job.lua:30)
--   5       rec (job.lua:30)      (recursion: the same function twice)
--   7 [copy in]                   (a root of its own)
-- Seven samples on three lanes (t0 = 1000 us, period 1 ms):
--   i  ts    lane      leaf  weight  category     job  span  line
--   1  1010  worker 1  3     2       attention    17   3     21
--   2  1020  worker 1  6     1       attention    17   -     22
--   3  1030  worker 1  5     3       mlp          18   -     31
--   4  1040  worker 2  3     1       attention    19   4     25
--   5  1050  worker 2  4     2       mlp          20   -     32
--   6  1060  worker 2  7     1       mlp          20   -     -
--   7  1070  caller    2     4       no category  -    -     11
-- Span 3 is a "decode" span, span 4 a "sample" span.
local function model()
  return {
    t0 = 1000, t1 = 2000,
    lanes = {{name = "worker 1"}, {name = "worker 2"}, {name = "caller"}},
    sampling = {hz = 1000, period_ns = 1000000, clock = "thread-cpu", depth = 64},
    frames = {n = 7,
              name = {"main chunk (job.lua)", "run (job.lua:10)", "heavy (job.lua:20)", "rec (job.lua:30)",
                      "rec (job.lua:30)", "sort [C]", "[copy in]"},
              category = {"lua", "lua", "lua", "lua", "lua", "C", "runtime"},
              parent = {0, 1, 2, 2, 4, 3, 0},
              id = {"1", "2", "3", "4", "5", "6", "7"}},
    nsamples = 7,
    sample_ts = {1010, 1020, 1030, 1040, 1050, 1060, 1070},
    sample_lane = {1, 1, 1, 2, 2, 2, 3},
    sample_frame = {3, 6, 5, 3, 4, 7, 2},
    sample_weight = {2, 1, 3, 1, 2, 1, 4},
    sample_cat = {"attention", "attention", "mlp", "attention", "mlp", "mlp", "no category"},
    sample_job = {17, 17, 18, 19, 20, 20, false},
    sample_span = {3, false, false, 4, false, false, false},
    sample_line = {21, 22, 31, 25, 32, false, 11},
    span_pieces = {{ts = 1005, dur = 10, cat = "decode", span = 3}, {ts = 1035, dur = 10, cat = "sample", span = 4}},
  }
end

local MAIN, RUN = "main chunk (job.lua)", "main chunk (job.lua);run (job.lua:10)"

describe("samples.select", function()
  local m = model()
  it("keeps every sample without a filter, in the model's order", function()
    assert.same({1, 2, 3, 4, 5, 6, 7}, samples.select(m, {}))
    assert.same({1, 2, 3, 4, 5, 6, 7}, samples.select(m))
  end)
  it("cuts at --from/--to, microseconds since the session's start, both ends included", function()
    assert.same({3, 4, 5}, samples.select(m, {from = 25, to = 55}))
    assert.same({2, 3}, samples.select(m, {from = 20, to = 30}))
    assert.same({7}, samples.select(m, {from = 70}))
    assert.same({1}, samples.select(m, {to = 10}))
    assert.same({4}, samples.select(m, {ts_from = 1040, ts_to = 1040}))
  end)
  it("filters by category, lane, job and span category; one kind's values are alternatives", function()
    assert.same({3, 5, 6}, samples.select(m, {categories = {"mlp"}}))
    assert.same({3, 5, 6, 7}, samples.select(m, {categories = {"mlp", "no category"}}))
    assert.same({4, 5, 6}, samples.select(m, {lanes = {"worker 2"}}))
    assert.same({1, 2, 5, 6}, samples.select(m, {jobs = {17, 20}}))
    assert.same({1}, samples.select(m, {spans = {"decode"}}))
    assert.same({1, 4}, samples.select(m, {spans = {"decode", "sample"}}))
  end)
  it("combines kinds with 'and'", function()
    assert.same({3}, samples.select(m, {categories = {"mlp"}, lanes = {"worker 1"}}))
    assert.same({}, samples.select(m, {categories = {"mlp"}, jobs = {17}}))
    assert.same({5}, samples.select(m, {categories = {"mlp"}, lanes = {"worker 2"}, from = 45, to = 55}))
  end)
  it("selects nothing from a model without samples", function()
    local empty = {t0 = 0, t1 = 1, lanes = {{name = "caller"}}, nsamples = 0}
    assert.same({}, samples.select(empty, {}))
  end)
end)

describe("samples.names", function()
  it("lists the samples' categories and the spans' sorted, the lanes in lane order", function()
    assert.same({categories = {"attention", "mlp", "no category"}, lanes = {"worker 1", "worker 2", "caller"},
                 spans = {"decode", "sample"}}, samples.names(model()))
  end)
end)

describe("samples.folded", function()
  local m = model()
  it("sums the weights per stack, root first, lines sorted bytewise", function()
    assert.same({
      "[copy in] 1",
      RUN .. " 4",
      RUN .. ";heavy (job.lua:20) 3",
      RUN .. ";heavy (job.lua:20);sort [C] 1",
      RUN .. ";rec (job.lua:30) 2",
      RUN .. ";rec (job.lua:30);rec (job.lua:30) 3",
    }, samples.folded(m, samples.select(m)))
  end)
  it("puts the group first with by = category, lane or job", function()
    local all = samples.select(m)
    assert.same({
      "[category attention];" .. RUN .. ";heavy (job.lua:20) 3",
      "[category attention];" .. RUN .. ";heavy (job.lua:20);sort [C] 1",
      "[category mlp];[copy in] 1",
      "[category mlp];" .. RUN .. ";rec (job.lua:30) 2",
      "[category mlp];" .. RUN .. ";rec (job.lua:30);rec (job.lua:30) 3",
      "[category no category];" .. RUN .. " 4",
    }, samples.folded(m, all, {by = "category"}))
    assert.same({
      "[job 17 attention];" .. RUN .. ";heavy (job.lua:20) 2",
      "[job 17 attention];" .. RUN .. ";heavy (job.lua:20);sort [C] 1",
      "[job 18 mlp];" .. RUN .. ";rec (job.lua:30);rec (job.lua:30) 3",
      "[job 19 attention];" .. RUN .. ";heavy (job.lua:20) 1",
      "[job 20 mlp];[copy in] 1",
      "[job 20 mlp];" .. RUN .. ";rec (job.lua:30) 2",
      "[no job no category];" .. RUN .. " 4",
    }, samples.folded(m, all, {by = "job"}))
    assert.same({
      "[lane caller];" .. RUN .. " 4",
      "[lane worker 1];" .. RUN .. ";heavy (job.lua:20) 2",
      "[lane worker 1];" .. RUN .. ";heavy (job.lua:20);sort [C] 1",
      "[lane worker 1];" .. RUN .. ";rec (job.lua:30);rec (job.lua:30) 3",
      "[lane worker 2];[copy in] 1",
      "[lane worker 2];" .. RUN .. ";heavy (job.lua:20) 1",
      "[lane worker 2];" .. RUN .. ";rec (job.lua:30) 2",
    }, samples.folded(m, all, {by = "lane"}))
  end)
  it("appends the leaf's line with lines = true (none when the sample has none)", function()
    assert.same({
      RUN .. ";heavy (job.lua:20):21 2",
      RUN .. ";heavy (job.lua:20);sort [C]:22 1",
      RUN .. ";rec (job.lua:30);rec (job.lua:30):31 3",
    }, samples.folded(m, samples.select(m, {lanes = {"worker 1"}}), {lines = true}))
    assert.same({"[copy in] 1", RUN .. ":11 4"},
                samples.folded(m, samples.select(m, {from = 60}), {lines = true}))
  end)
  it("merges stacks whose cleaned texts are equal, and leaves out stacks of weight 0", function()
    local x = {t0 = 0, t1 = 10, lanes = {{name = "w"}},
               frames = {n = 3, name = {"a;x", "a,x", "b"}, parent = {0, 0, 1}, category = {"lua", "lua", "lua"}},
               nsamples = 4, sample_ts = {1, 2, 3, 4}, sample_lane = {1, 1, 1, 1}, sample_frame = {1, 2, 3, 3},
               sample_weight = {1, 2, 0, 0}, sample_cat = {"c", "c", "c", "c"},
               sample_job = {false, false, false, false}, sample_span = {false, false, false, false},
               sample_line = {false, false, false, false}}
    -- a,x: 1 + 2 = 3; a,x;b: 0 + 0, left out (the loader's weights are integers)
    assert.same({"a,x 3"}, samples.folded(x, {1, 2, 3, 4}))
    assert.same({}, samples.folded(x, {3, 4}))
  end)
end)

describe("samples.clean", function()
  it("turns ';' into ',', control bytes into '?', what is not UTF-8 into U+FFFD", function()
    assert.equal("a,b?c d", samples.clean("a;b\tc d"))
    assert.equal("x?y?z", samples.clean("x\ny\127z"))
    assert.equal("caf\u{E9} \u{FFFD}\u{FFFD}!", samples.clean("caf\xC3\xA9 \xFF\xFE!"))
    -- a character cut short is one U+FFFD (its lead and the byte that fitted)
    assert.equal("\u{FFFD}x", samples.clean("\xE2\x82x"))
    -- a surrogate's encoding and an overlong one are not UTF-8
    assert.equal("\u{FFFD}\u{FFFD}\u{FFFD}.\u{FFFD}\u{FFFD}", samples.clean("\xED\xA0\x80.\xC0\xAF"))
    assert.equal("[copy in]", samples.clean("[copy in]"))
  end)
end)

describe("samples.top", function()
  local m = model()
  it("ranks functions by self weight, counts a recursive function once per sample in its total", function()
    -- all 14: rec self 3 + 2 = 5, total 5 (not 3 x 2 + 2 = 8); run self 4, total 13;
    -- heavy self 3, total 4; [copy in] and sort [C] self 1, total 1 (text order);
    -- main chunk self 0, total 13
    local top = samples.top(m, samples.select(m), 10)
    local rows = {}
    for i, r in ipairs(top) do rows[i] = {r.frame, r.self_weight, r.total_weight, r.self_us, r.total_us} end
    assert.same({
      {"rec (job.lua:30)", 5, 5, 5000, 5000},
      {"run (job.lua:10)", 4, 13, 4000, 13000},
      {"heavy (job.lua:20)", 3, 4, 3000, 4000},
      {"[copy in]", 1, 1, 1000, 1000},
      {"sort [C]", 1, 1, 1000, 1000},
      {MAIN, 0, 13, 0, 13000},
    }, rows)
    assert.near(5 / 14, top[1].self, 1e-12)
    assert.near(13 / 14, top[2].total, 1e-12)
    assert.equal(0, top[6].self)
  end)
  it("keeps the first n, over the samples given", function()
    local top = samples.top(m, samples.select(m, {categories = {"attention"}}), 2)
    -- attention: samples 1, 2, 4 (weight 4): heavy self 3, total 4; sort [C] self 1
    assert.same(2, #top)
    assert.same({"heavy (job.lua:20)", 3, 4, 0.75, 1}, {top[1].frame, top[1].self_weight, top[1].total_weight, top[1].self,
                                                         top[1].total})
    assert.same({"sort [C]", 1, 1, 0.25, 0.25}, {top[2].frame, top[2].self_weight, top[2].total_weight, top[2].self,
                                                 top[2].total})
  end)
  it("has no times when the trace gives no period", function()
    local x = model()
    x.sampling = nil
    local top = samples.top(x, {7}, 5)
    assert.same({"run (job.lua:10)", 4, 4}, {top[1].frame, top[1].self_weight, top[1].total_weight})
    assert.is_nil(top[1].self_us)
    assert.is_nil(samples.period_us(x))
    assert.equal(1000, samples.period_us(model()))
  end)
  it("sums the weights", function()
    assert.equal(14, samples.weight(m, samples.select(m)))
    assert.equal(0, samples.weight(m, {}))
  end)
end)

describe("samples.figures", function()
  local m = model()
  it("is nil for a trace without samples", function()
    assert.is_nil(samples.figures({t0 = 0, t1 = 1, lanes = {}, nsamples = 0}, 0, 1, 10))
    assert.is_nil(samples.figures({t0 = 0, t1 = 1, lanes = {}}, 0, 1, 10))
  end)
  it("sums the weight by lane and breaks the top functions down by the heaviest categories", function()
    local f = samples.figures(m, 1000, 2000, 2)
    assert.same({1000, 1000, 14, 14000}, {f.hz, f.period_us, f.total_weight, f.total_us})
    assert.same({{name = "worker 1", weight = 6}, {name = "worker 2", weight = 4}, {name = "caller", weight = 4}},
                f.lanes)
    assert.same({"rec (job.lua:30)", "run (job.lua:10)"}, {f.top[1].frame, f.top[2].frame})
    assert.equal(2, #f.top)
    -- mlp 3 + 2 + 1 = 6; attention 2 + 1 + 1 = 4 and no category 4 (a tie: by name)
    local cats = {}
    for i, c in ipairs(f.by_category) do cats[i] = {c.name, c.weight, c.total_us} end
    assert.same({{"mlp", 6, 6000}, {"attention", 4, 4000}, {"no category", 4, 4000}}, cats)
    assert.near(6 / 14, f.by_category[1].total, 1e-12)
    -- mlp's samples 3, 5, 6: rec self 5, [copy in] self 1
    local top = f.by_category[1].top
    assert.same({"rec (job.lua:30)", 5, "[copy in]", 1}, {top[1].frame, top[1].self_weight, top[2].frame,
                                                        top[2].self_weight})
    assert.is_nil(f.frames)
  end)
  it("counts the samples of the range only, and lists every function for compare", function()
    -- 1025 .. 1055: samples 3, 4, 5 (weights 3, 1, 2)
    local f = samples.figures(m, 1025, 1055, 10, true)
    assert.equal(6, f.total_weight)
    assert.same({{name = "worker 1", weight = 3}, {name = "worker 2", weight = 3}}, f.lanes)
    assert.same({5, 5}, {f.frames["rec (job.lua:30)"].self_weight, f.frames["rec (job.lua:30)"].total_weight})
    assert.same({0, 6}, {f.frames[MAIN].self_weight, f.frames[MAIN].total_weight})
    assert.is_nil(f.frames["sort [C]"])
  end)
end)
