-- `jobque-profile flame`, the report's top functions and compare's rows on
-- the hand-written trace of spec/reader/sample_traces.lua (its samples are
-- tabled there; every expected value below is worked out by hand from
-- that table). M and R abbreviate the two outer frames.
local S = require "support"
local cjson = require "cjson"
local traces = require "reader.sample_traces"

local run = S.cli
local M, R = "main chunk (job.lua)", "run (job.lua:10)"
local MR = M .. ";" .. R

local function trace_file(without)
  local path = S.tmpfile(without and "plain.json" or "t.json")
  S.write(path, traces.text(without))
  return path
end

local function lines(...) return table.concat({...}, "\n") .. "\n" end

describe("jobque-profile flame", function()
  local path = trace_file()

  it("prints the folded stacks of every sample, sorted bytewise, counts the sums of the weights", function()
    local code, out, err = run(("flame '%s'"):format(path))
    assert.same({0, ""}, {code, err})
    assert.equal(lines("[copy in] 50",
                       MR .. " 400",
                       MR .. ";decode (job.lua:40) 1020",
                       MR .. ";heavy (job.lua:20) 1300",
                       MR .. ";heavy (job.lua:20);sort [C] 300",
                       MR .. ";rec (job.lua:30) 700",
                       MR .. ";rec (job.lua:30);rec (job.lua:30) 2050"), out)
  end)

  it("filters by range, category and lane", function()
    -- 20 .. 60 us: samples 2, 3, 5, 6, 7; mlp: 3, 6, 7; worker 2: 6, 7
    local code, out = run(("flame '%s' --from 20 --to 60 --category mlp --lane 'worker 2'"):format(path))
    assert.equal(0, code)
    assert.equal(lines("[copy in] 50", MR .. ";rec (job.lua:30) 700"), out)
  end)

  it("filters by job and span, adds the group with --by and the line with --lines", function()
    -- job 17: samples 1, 2; inside a "sample + decode" span: sample 1
    local code, out = run(("flame '%s' --job 17 --span 'sample + decode' --by category --lines"):format(path))
    assert.equal(0, code)
    assert.equal(lines("[category attention];" .. MR .. ";heavy (job.lua:20):21 1200"), out)
    -- mlp or embed: samples 3 (job 18), 6 and 7 (job 20), 8 (job 21)
    code, out = run(("flame '%s' --category mlp --category embed --by job"):format(path))
    assert.equal(0, code)
    assert.equal(lines("[job 18 mlp];" .. MR .. ";rec (job.lua:30);rec (job.lua:30) 2050",
                       "[job 20 mlp];[copy in] 50", -- "[" (0x5B) sorts before "m" (0x6D)
                       "[job 20 mlp];" .. MR .. ";rec (job.lua:30) 700",
                       "[job 21 embed];" .. MR .. ";decode (job.lua:40) 1000"), out)
    code = run(("flame '%s' --lane caller --lane nobody --by lane"):format(path))
    assert.equal(2, code) -- "nobody" is no lane of the trace
    code = run(("flame '%s' --by lane --lane caller --job 17 --job 20"):format(path))
    assert.equal(2, code) -- the caller's only sample has no job
    code, out = run(("flame '%s' --by lane --lane caller"):format(path))
    assert.same({0, lines("[lane caller];" .. MR .. " 400")}, {code, out})
  end)

  it("writes speedscope's JSON: shared frames, a sampled profile per lane, weights x the period in us", function()
    local code, out, err = run(("flame '%s' --format speedscope"):format(path))
    assert.same({0, ""}, {code, err})
    local doc = cjson.decode(out)
    assert.equal("https://www.speedscope.app/file-format-schema.json", doc["$schema"])
    assert.same({{name = M, file = "job.lua"}, {name = R, file = "job.lua", line = 10},
                 {name = "heavy (job.lua:20)", file = "job.lua", line = 20}, {name = "sort [C]"},
                 {name = "rec (job.lua:30)", file = "job.lua", line = 30},
                 {name = "decode (job.lua:40)", file = "job.lua", line = 40}, {name = "[copy in]"}},
                doc.shared.frames)
    assert.equal(0, doc.activeProfileIndex)
    assert.same({
      {type = "sampled", name = "worker 1", unit = "microseconds", startValue = 0, endValue = 357000,
       samples = {{0, 1, 2}, {0, 1, 2, 3}, {0, 1, 4, 4}, {0, 1, 5}}, weights = {120000, 30000, 205000, 2000}},
      {type = "sampled", name = "worker 2", unit = "microseconds", startValue = 0, endValue = 185000,
       samples = {{0, 1, 2}, {0, 1, 4}, {6}, {0, 1, 5}}, weights = {10000, 70000, 5000, 100000}},
      {type = "sampled", name = "caller", unit = "microseconds", startValue = 0, endValue = 40000,
       samples = {{0, 1}}, weights = {40000}},
    }, doc.profiles)
  end)

  it("gives each lane its own profile, even two lanes of one name", function()
    local twins = S.tmpfile("twins.json")
    S.write(twins, (traces.text():gsub('"worker 2"', '"worker 1"')))
    local code, out = run(("flame '%s' --format speedscope --lane 'worker 1'"):format(twins))
    assert.equal(0, code)
    local doc = cjson.decode(out)
    assert.same({"worker 1", "worker 1"}, {doc.profiles[1].name, doc.profiles[2].name})
    assert.same({{120000, 30000, 205000, 2000}, {10000, 70000, 5000, 100000}},
                {doc.profiles[1].weights, doc.profiles[2].weights})
  end)

  it("makes consecutive samples of one stack one speedscope sample of both weights", function()
    local same = S.tmpfile("same.json")
    S.write(same, (traces.text():gsub('"sf":"6"', '"sf":"3"'))) -- sample 2 on heavy, as sample 1
    local code, out = run(("flame '%s' --format speedscope --lane 'worker 1'"):format(same))
    assert.equal(0, code)
    local doc = cjson.decode(out)
    assert.same({{type = "sampled", name = "worker 1", unit = "microseconds", startValue = 0, endValue = 357000,
                  samples = {{0, 1, 2}, {0, 1, 3, 3}, {0, 1, 4}}, weights = {150000, 205000, 2000}}}, doc.profiles)
  end)

  it("makes a profile per group with --by, and the leaf's line a frame of its own with --lines", function()
    local code, out = run(("flame '%s' --format speedscope --category mlp --by category --lines"):format(path))
    assert.equal(0, code)
    local doc = cjson.decode(out)
    -- mlp: samples 3 (rec;rec line 31), 6 (rec line 32), 7 ([copy in], no line)
    assert.same({{name = M, file = "job.lua"}, {name = R, file = "job.lua", line = 10},
                 {name = "rec (job.lua:30)", file = "job.lua", line = 30},
                 {name = "rec (job.lua:30):31", file = "job.lua", line = 31},
                 {name = "rec (job.lua:30):32", file = "job.lua", line = 32}, {name = "[copy in]"}},
                doc.shared.frames)
    assert.same({{type = "sampled", name = "category mlp", unit = "microseconds", startValue = 0, endValue = 280000,
                  samples = {{0, 1, 2, 3}, {0, 1, 4}, {5}}, weights = {205000, 70000, 5000}}}, doc.profiles)
  end)

  it("writes -o by the rules of writing files, and nothing when it fails", function()
    local out_path = S.tmpfile("out.folded")
    local code, out, err = run(("flame '%s' --lane caller -o '%s'"):format(path, out_path))
    assert.same({0, ("wrote %s (1 sample)\n"):format(out_path), ""}, {code, out, err})
    assert.equal(lines(MR .. " 400"), S.read(out_path))
    local bad = S.tmpfile("bad.folded")
    code = run(("flame '%s' --category nope -o '%s'"):format(path, bad))
    assert.equal(2, code)
    assert.is_nil(io.open(bad, "rb"))
    code, out, err = run(("flame '%s' -o '%s'"):format(path, S.tmpdir))
    assert.same({1, ""}, {code, out})
    assert.truthy(err:find("^jobque%-profile: .*" .. S.tmpdir:gsub("%p", "%%%0")))
  end)

  it("keeps each frame one frame of the folded line: ';' as ',', control bytes as '?', not UTF-8 as U+FFFD", function()
    local odd = S.tmpfile("odd.json")
    S.write(odd, '{"traceEvents":[{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"w;1"}}],\n'
      .. '"stackFrames":{"1":{"name":"x;y (a.lua:1)","category":"lua"},'
      .. '"2":{"name":"bad\\u0001\x7F\\tz \xFF\xE2\x82","category":"lua","parent":"1"}},\n'
      .. '"samples":[{"tid":1,"ts":1,"sf":"2","weight":2,"name":"c;d"}],\n'
      .. '"jobqueProfile":{"version":1,"startUs":0,"stopUs":10}}')
    -- \x01, \x7F and the tab: "?"; \xFF and the cut-short \xE2\x82: one U+FFFD each
    local code, out = run(("flame '%s' --by lane"):format(odd))
    assert.same({0, "[lane w,1];x,y (a.lua:1);bad???z \u{FFFD}\u{FFFD} 2\n"}, {code, out})
    code, out = run(("flame '%s' --by category --format speedscope"):format(odd))
    assert.equal(0, code)
    local doc = cjson.decode(out)
    assert.same({{name = "x,y (a.lua:1)", file = "a.lua", line = 1}, {name = "bad???z \u{FFFD}\u{FFFD}"}},
                doc.shared.frames)
    assert.equal("category c,d", doc.profiles[1].name)
  end)

  it("warns of the samples it skipped, and draws the others", function()
    local bad = S.tmpfile("skips.json")
    S.write(bad, traces.text():gsub('"sf":"7"', '"sf":"70"'):gsub('"sf":"2"', '"sf":"20"'))
    -- samples 7 ([copy in], 50) and 9 (run, 400) name no frame
    local code, out, err = run(("flame '%s'"):format(bad))
    assert.same({0, ("jobque-profile: warning: %s: 2 samples skipped (unknown sf: 2)\n"):format(bad)}, {code, err})
    assert.equal(lines(MR .. ";decode (job.lua:40) 1020",
                       MR .. ";heavy (job.lua:20) 1300",
                       MR .. ";heavy (job.lua:20);sort [C] 300",
                       MR .. ";rec (job.lua:30) 700",
                       MR .. ";rec (job.lua:30);rec (job.lua:30) 2050"), out)
  end)

  it("exits 1 on a trace without samples, with the issue's message", function()
    local plain = trace_file(true)
    local code, out, err = run(("flame '%s'"):format(plain))
    assert.same({1, "", ("jobque-profile: %s: no samples in this trace (record with profile_start(n, "
                         .. "{sample_hz = 1000}))\n"):format(plain)}, {code, out, err})
    code, out = run(("flame '%s' -o '%s'"):format(S.tmpdir .. "/missing.json", S.tmpfile("x.folded")))
    assert.same({1, ""}, {code, out})
  end)

  it("exits 2 naming what the trace has for a category, lane or span it does not have", function()
    local code, out, err = run(("flame '%s' --category atention"):format(path))
    assert.same({2, "", ('jobque-profile: no category "atention" in %s (it has: attention, embed, mlp, '
                         .. "no category, sample)\n"):format(path)}, {code, out, err})
    code, out, err = run(("flame '%s' --lane 'worker 9'"):format(path))
    assert.same({2, "", ('jobque-profile: no lane "worker 9" in %s (it has: worker 1, worker 2, caller)\n')
                        :format(path)}, {code, out, err})
    code, out, err = run(("flame '%s' --span nope"):format(path))
    assert.same({2, "", ('jobque-profile: no span "nope" in %s (it has: sample + decode)\n'):format(path)},
                {code, out, err})
  end)

  it("exits 2 when the filters match nothing, on a range outside the trace and on bad usage", function()
    local code, out, err = run(("flame '%s' --category embed --lane 'worker 1'"):format(path))
    assert.same({2, "", ('jobque-profile: %s: no samples match --category "embed" --lane "worker 1"\n')
                        :format(path)}, {code, out, err})
    code, out, err = run(("flame '%s' --from 200"):format(path))
    assert.same({2, ""}, {code, out})
    assert.truthy(err:find("outside", 1, true))
    for _, args in ipairs{"--format svg", "--by thread", "--job x", "--from 50 --to 40"} do
      code, out = run(("flame '%s' %s"):format(path, args))
      assert.same({2, ""}, {code, out}, args)
    end
  end)
end)

describe("the report's top functions", function()
  local path = trace_file()

  -- The lines of the report from `first` to the next blank line.
  local function section(out, first)
    local at = out:find(first, 1, true)
    assert.truthy(at, out)
    return out:sub(at):match("^(.-)\n\n") or out:sub(at):match("^(.-)\n?$")
  end

  it("follows the categories: overall, then the three heaviest categories", function()
    local code, out, err = run(("report '%s'"):format(path))
    assert.same({0, ""}, {code, err})
    -- 5820 in all; rec self 2750 (47.3%), heavy self 1300 total 1600, decode 1020,
    -- run self 400 total 5770, sort [C] 300, [copy in] 50, main chunk 0 / 5770
    local row = "  %7s  %7s  %10s  %s"
    assert.equal(table.concat({
      "top functions (CPU samples: 582 ms sampled, weight 5820 x 100 us at 10000 Hz; total: on the stack)",
      row:format("self %", "total %", "self", "frame"),
      row:format("47.3%", "47.3%", "275 ms", "rec (job.lua:30)"),
      row:format("22.3%", "27.5%", "130 ms", "heavy (job.lua:20)"),
      row:format("17.5%", "17.5%", "102 ms", "decode (job.lua:40)"),
      row:format("6.9%", "99.1%", "40 ms", R),
      row:format("5.2%", "5.2%", "30 ms", "sort [C]"),
      row:format("0.9%", "0.9%", "5 ms", "[copy in]"),
      row:format("0.0%", "99.1%", "0 us", M),
      -- mlp 2800 (48.1%): rec 2750, [copy in] 50
      'top functions in category "mlp" (48.1% of the samples\' weight)',
      row:format("self %", "total %", "self", "frame"),
      row:format("98.2%", "98.2%", "275 ms", "rec (job.lua:30)"),
      row:format("1.8%", "1.8%", "5 ms", "[copy in]"),
      row:format("0.0%", "98.2%", "0 us", M),
      row:format("0.0%", "98.2%", "0 us", R),
      -- attention 1600 (27.5%): heavy 1300, sort [C] 300
      'top functions in category "attention" (27.5% of the samples\' weight)',
      row:format("self %", "total %", "self", "frame"),
      row:format("81.2%", "100.0%", "130 ms", "heavy (job.lua:20)"),
      row:format("18.8%", "18.8%", "30 ms", "sort [C]"),
      row:format("0.0%", "100.0%", "0 us", M),
      row:format("0.0%", "100.0%", "0 us", R),
      -- embed 1000 (17.2%): decode 1000
      'top functions in category "embed" (17.2% of the samples\' weight)',
      row:format("self %", "total %", "self", "frame"),
      row:format("100.0%", "100.0%", "100 ms", "decode (job.lua:40)"),
      row:format("0.0%", "100.0%", "0 us", M),
      row:format("0.0%", "100.0%", "0 us", R),
    }, "\n"), section(out, "top functions ("))
    -- right after the categories' table
    assert.truthy(out:find("\n\ntop functions (", 1, true))
    assert.truthy(out:find("category ", 1, true) < out:find("top functions (", 1, true))
  end)

  it("lists --top N, over the range", function()
    -- 0 .. 35 us: samples 1, 2, 3 (1200 + 300 + 2050 = 3550), all on worker 1
    local code, out = run(("report '%s' --from 0 --to 35 --top 1"):format(path))
    assert.equal(0, code)
    local s = section(out, "top functions (")
    assert.truthy(s:find("^top functions %(CPU samples: 355 ms sampled, weight 3550 x 100 us"), s)
    -- rec 2050 / 3550 = 57.7%
    assert.truthy(s:find("\n" .. ("  %7s  %7s  %10s  %s"):format("57.7%", "57.7%", "205 ms", "rec (job.lua:30)")
                         .. "\ntop functions in category \"mlp\"", 1, true), s)
  end)

  it("shows weights, not times, when the trace gives no sampling period", function()
    local foreign = S.tmpfile("noperiod.json")
    local text, n = traces.text():gsub('"sampling":%b{},\n', "")
    assert.equal(1, n)
    S.write(foreign, text)
    local code, out = run(("report '%s' --top 1"):format(foreign))
    assert.equal(0, code)
    local s = section(out, "top functions (")
    assert.equal("top functions (CPU samples: weight 5820, the trace gives no period; total: on the stack)\n"
                 .. ("  %7s  %7s  %10s  %s\n"):format("self %", "total %", "self", "frame")
                 .. ("  %7s  %7s  %10s  %s"):format("47.3%", "47.3%", "-", "rec (job.lua:30)"),
                 s:match("^[^\n]*\n[^\n]*\n[^\n]*"))
    code, out = run(("flame '%s' --format speedscope --lane caller"):format(foreign))
    assert.equal(0, code)
    assert.same({{type = "sampled", name = "caller", unit = "none", startValue = 0, endValue = 400,
                  samples = {{0, 1}}, weights = {400}}}, cjson.decode(out).profiles)
  end)

  it("says so when the range holds no sample", function()
    -- the last sample is at 90 us
    local code, out = run(("report '%s' --from 95 --to 100"):format(path))
    assert.equal(0, code)
    assert.equal("top functions (CPU samples: 0 us sampled, weight 0 x 100 us at 10000 Hz; total: on the stack)\n"
                 .. "  no samples in the range", section(out, "top functions ("))
  end)

  it("adds samples to --json", function()
    local code, out = run(("report '%s' --json"):format(path))
    assert.equal(0, code)
    local s = cjson.decode(out).samples
    assert.same({10000, 100, 5820, 582000}, {s.hz, s.period_us, s.total_weight, s.total_us})
    assert.same({{name = "worker 1", weight = 3570}, {name = "worker 2", weight = 1850},
                 {name = "caller", weight = 400}}, s.lanes)
    assert.equal(7, #s.top)
    assert.same({"rec (job.lua:30)", 275000, 275000}, {s.top[1].frame, s.top[1].self_us, s.top[1].total_us})
    assert.near(2750 / 5820, s.top[1].self, 1e-12)
    assert.near(5770 / 5820, s.top[4].total, 1e-12)
    assert.same({"mlp", "attention", "embed"}, {s.by_category[1].name, s.by_category[2].name, s.by_category[3].name})
    assert.near(2800 / 5820, s.by_category[1].total, 1e-12)
    assert.equal("heavy (job.lua:20)", s.by_category[2].top[1].frame)
  end)

  it("is absent from the report of a trace without samples", function()
    local plain = trace_file(true)
    local code, out = run(("report '%s'"):format(plain))
    assert.equal(0, code)
    assert.falsy(out:find("top functions", 1, true))
    code, out = run(("report '%s' --json"):format(plain))
    assert.equal(0, code)
    assert.is_nil(cjson.decode(out).samples)
  end)
end)

describe("compare's top functions", function()
  it("puts the two traces' functions side by side by frame text", function()
    local a, plain = trace_file(), trace_file(true)
    -- b: the range 0 .. 35 of the same samples: rec 2050 of 3550
    local code, out = run(("compare '%s' '%s' --json"):format(a, a))
    assert.equal(0, code)
    local rows = {}
    for _, r in ipairs(cjson.decode(out)) do rows[r.label] = r end
    assert.same({582000, 582000}, {rows["sampled CPU time"].a, rows["sampled CPU time"].b})
    assert.near(2750 / 5820, rows["self: rec (job.lua:30)"].a, 1e-12)
    assert.near(5770 / 5820, rows["total: " .. M].b, 1e-12)
    assert.same({40000, 40000}, {rows["self time: " .. R].a, rows["self time: " .. R].b})
    code, out = run(("compare '%s' '%s' --json"):format(a, plain))
    assert.equal(0, code)
    rows = {}
    for _, r in ipairs(cjson.decode(out)) do rows[r.label] = r end
    assert.equal(130000, rows["self time: heavy (job.lua:20)"].a)
    assert.is_nil(rows["self time: heavy (job.lua:20)"].b)
    code, out = run(("compare '%s' '%s'"):format(a, plain))
    assert.equal(0, code)
    local line = out:match("\n(self: rec %(job%.lua:30%)[^\n]*)")
    assert.truthy(line and line:find("%s47%.3%%%s+%-%s"), out)
    code, out = run(("compare '%s' '%s' --json"):format(plain, plain))
    assert.equal(0, code)
    for _, r in ipairs(cjson.decode(out)) do assert.falsy(r.label:find("self", 1, true), r.label) end
  end)
end)
