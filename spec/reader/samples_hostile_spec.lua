-- Hostile samples: traces written by hand to break the reading half of the
-- CPU samples (weights that are no integer or sum beyond 2^53, times
-- outside the session, a file with samples only, frame names with control
-- and bidi characters, deep stacks, outputs that cannot be written). Every
-- expected value is worked out by hand from the file in the spec.
local S = require "support"
local cjson = require "cjson"
local trace = require "jobque_profile.trace"

local run = S.cli

local function file(name, text)
  local path = S.tmpfile(name)
  S.write(path, text)
  return path
end

-- A trace of ours with one slice (0 .. 100 us) on tid 1, the frames given
-- and the samples given (JSON texts, joined by ",").
local function trace_text(frames, samples)
  return '{"traceEvents":[{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"w"}},\n'
    .. '{"ph":"X","pid":1,"tid":1,"ts":10,"dur":80,"name":"job","cat":"c","args":{"job":1}}],\n'
    .. '"stackFrames":' .. frames .. ',\n"samples":[' .. table.concat(samples, ",\n") .. '],\n'
    .. '"jobqueProfile":{"version":1,"startUs":0,"stopUs":100,'
    .. '"sampling":{"hz":1000,"periodNs":1000000,"clock":"thread-cpu","depth":64}}}'
end

local FRAMES = '{"1":{"name":"main","category":"lua"},"2":{"name":"f","category":"lua","parent":"1"}}'

local function sample(ts, sf, weight)
  return ('{"pid":1,"tid":1,"ts":%s,"sf":"%s"%s,"name":"c"}'):format(ts, sf,
    weight and (',"weight":' .. weight) or "")
end

describe("hostile samples: weights", function()
  it("reads a weight only as an integer from 0 to 2^53, skipping and counting the others", function()
    local path = file("w.json", trace_text(FRAMES, {
      sample(11, 2, "1e300"), sample(12, 2, "0.5"), sample(13, 2, "2.0"), sample(14, 1, "1e3"),
      sample(15, 1, "9007199254740993"), sample(16, 1, "-1"), sample(17, 1, "1e999"), sample(18, 2, "0"),
      sample(19, 2)}))
    local m = assert(trace.load(path))
    assert.equal(4, m.nsamples)
    local w = {}
    for k = 1, m.nsamples do w[k] = m.sample_weight[k] end
    assert.same({2, 1000, 0, 1}, w)
    for k = 1, 4 do assert.equal("integer", math.type(w[k])) end
    assert.same({{why = "weight is not an integer from 0 to 2^53", n = 4}, {why = "weight is negative", n = 1}},
                m.sample_skips)
    -- main;f: 2 + 0 + 1; main: 1000
    local code, out, err = run(("flame '%s'"):format(path))
    assert.same({0, "main 1000\nmain;f 3\n", ("jobque-profile: warning: %s: 5 samples skipped (weight is not an "
                 .. "integer from 0 to 2^53: 4, weight is negative: 1)\n"):format(path)}, {code, out, err})
  end)

  it("keeps the weights' sum within 2^53: a sample that would pass it is skipped, every sum is exact", function()
    local path = file("sum.json", trace_text(FRAMES, {
      sample(11, 2, "9007199254740990"), sample(12, 2, "2"), sample(13, 1, "3"), sample(14, 1, "1")}))
    local m = assert(trace.load(path))
    -- 2^53 - 2 + 2 = 2^53; 3 more would pass it; 1 more too
    assert.equal(2, m.nsamples)
    assert.same({{why = "weights sum beyond 2^53", n = 2}}, m.sample_skips)
    local code, out = run(("flame '%s'"):format(path))
    assert.same({0, "main;f 9007199254740992\n"}, {code, out})
    code, out = run(("flame '%s' --format speedscope"):format(path))
    assert.equal(0, code)
    -- in microseconds: 2^53 x 1000 us, written exactly as the double it is
    assert.truthy(out:find('"weights":[9.007199254740992e+18]', 1, true), out)
    code, out = run(("report '%s'"):format(path))
    assert.equal(0, code)
    assert.truthy(out:find("weight 9007199254740992 x", 1, true), out)
    code, out = run(("report '%s' --json"):format(path))
    assert.equal(0, code)
    assert.truthy(out:find('"total_weight":9007199254740992', 1, true), out)
  end)

  it("reads the issue's file without an internal error", function()
    local path = file("so.json", '{"traceEvents":[],"stackFrames":{"1":{"name":"a\\u2028b\\u202e (x.lua:1)",'
      .. '"category":"lua"},"2":{"name":"c\\u0085","category":"lua","parent":"1"}},"samples":['
      .. '{"pid":1,"tid":1,"ts":5,"sf":"2","weight":1e300,"name":"x"},'
      .. '{"pid":1,"tid":1,"ts":-1e18,"sf":"1","weight":3,"name":"x"},'
      .. '{"pid":1,"tid":1,"ts":7,"sf":"1","weight":0.5,"name":"x"},'
      .. '{"pid":1,"tid":1,"ts":8,"sf":"2","weight":4,"name":"x"}]}')
    local code, out, err = run(("flame '%s'"):format(path))
    assert.equal(0, code)
    assert.equal(("jobque-profile: warning: %s: 3 samples skipped (weight is not an integer from 0 to 2^53: 2, "
                  .. "ts out of range: 1)\n"):format(path), err)
    assert.equal("a?b? (x.lua:1);c? 4\n", out)
  end)
end)

describe("hostile samples: times outside the session", function()
  -- the session runs 0 .. 100 us; samples at -5 and 1e15 lie outside it
  local path = file("out.json", trace_text(FRAMES, {
    sample(0, 1, 1), sample(-5, 2, 1), sample(50, 2, 2), sample("1e15", 1, 4), sample(100, 2, 8)}))

  it("skips and counts them, and the trace's range stays the session's", function()
    local m = assert(trace.load(path))
    assert.same({0, 100}, {m.t0, m.t1})
    assert.equal(3, m.nsamples)
    local ts = {}
    for k = 1, 3 do ts[k] = m.sample_ts[k] end
    assert.same({0, 50, 100}, ts)
    assert.same({{why = "ts outside the session", n = 2}}, m.sample_skips)
    assert.equal("2 samples skipped (ts outside the session: 2)", trace.samples_skipped_text(m))
  end)

  it("leaves the range of report, html and flame --from/--to the session's", function()
    local warn = ("jobque-profile: warning: %s: 2 samples skipped (ts outside the session: 2)\n"):format(path)
    local code, out, err = run(("report '%s'"):format(path))
    assert.same({0, warn}, {code, err})
    assert.truthy(out:find("range 0.000 .. 100.000 us since the session's start (100 us)", 1, true), out)
    local page_code, _, page_err = run(("html '%s' -o '%s'"):format(path, S.tmpfile("out.html")))
    assert.same({0, warn}, {page_code, page_err})
    code, out = run(("flame '%s' --from 40"):format(path))
    assert.same({0, "main;f 10\n"}, {code, out})
    code, out, err = run(("flame '%s' --from 200"):format(path))
    assert.same({2, ""}, {code, out})
    assert.truthy(err:find("is outside " .. path .. ", which runs from 0 to 100.000 us", 1, true), err)
  end)

  it("takes the samples' own times as the range of a file with neither events nor a session", function()
    local bare = file("bare.json", '{"traceEvents":[],"stackFrames":' .. FRAMES .. ',"samples":['
      .. table.concat({sample(1000, 1, 1), sample(1500, 2, 2), sample("1e15", 2, 4)}, ",") .. "]}")
    local m = assert(trace.load(bare))
    assert.same({1000, 1e15}, {m.t0, m.t1})
    assert.equal(3, m.nsamples)
    local code, out = run(("flame '%s' --to 600"):format(bare))
    assert.same({0, "main 1\nmain;f 2\n"}, {code, out})
  end)

  it("keeps a file with events but no session to its events' range", function()
    local text = trace_text(FRAMES, {sample(10, 1, 1), sample(95, 2, 2)}):gsub('"startUs":0,"stopUs":100,', "")
    local m = assert(trace.load(file("nosession.json", text)))
    -- the slice runs 10 .. 90
    assert.same({10, 90}, {m.t0, m.t1})
    assert.equal(1, m.nsamples)
    assert.same({{why = "ts outside the session", n = 1}}, m.sample_skips)
  end)
end)

describe("hostile samples: a file with samples and no events", function()
  local path = file("only.json", '{"traceEvents":[],"stackFrames":' .. FRAMES .. ',"samples":['
    .. table.concat({sample(10, 1, 1), sample(20, 2, 2)}, ",") .. "]}")

  it("has nothing to report, compare or draw, and says flame shows it", function()
    local want = ("jobque-profile: %s: nothing to report: the trace holds no events, only samples (jobque-profile "
                  .. "flame shows them)\n"):format(path)
    for _, cmd in ipairs{"report '%s'", "report '%s' --json", "html '%s' -o " .. S.tmpfile("x.html"),
                         "compare '%s' '%s'"} do
      local code, out, err = run(cmd:format(path, path))
      assert.same({1, "", want}, {code, out, err}, cmd)
    end
  end)

  it("is what flame reads", function()
    local code, out, err = run(("flame '%s'"):format(path))
    assert.same({0, "main 1\nmain;f 2\n", ""}, {code, out, err})
  end)
end)

describe("hostile samples: names a terminal or a page would act on", function()
  -- U+2028, U+202E, U+0085, U+2066, U+200F, and a name that would end the page's script
  local NAMES = '{"1":{"name":"a\\u2028b\\u202e (x.lua:1)","category":"lua"},'
    .. '"2":{"name":"c\\u0085\\u2066d\\u200f","category":"lua","parent":"1"},'
    .. '"3":{"name":"</script><img src=x onerror=alert(1)>","category":"lua","parent":"1"}}'
  local path = file("names.json", (trace_text(NAMES, {sample(20, 2, 1), sample(30, 3, 2)})
    :gsub('"name":"w"', '"name":"w\\u202ez"')))
  local RAW = {"\u{2028}", "\u{202E}", "\u{85}", "\u{2066}", "\u{200F}"}

  local function no_raw(text)
    for _, seq in ipairs(RAW) do
      assert.is_nil(text:find(seq, 1, true), ("a raw U+%04X"):format(utf8.codepoint(seq)))
    end
  end

  it("shows them as '?' in folded stacks", function()
    local code, out = run(("flame '%s' --by lane"):format(path))
    assert.same({0, "[lane w?z];a?b? (x.lua:1);</script><img src=x onerror=alert(1)> 2\n"
                    .. "[lane w?z];a?b? (x.lua:1);c??d? 1\n"}, {code, out})
  end)

  it("escapes them in speedscope's JSON", function()
    local code, out = run(("flame '%s' --format speedscope"):format(path))
    assert.equal(0, code)
    no_raw(out)
    assert.truthy(out:find('"name":"w\\u202ez"', 1, true), out)
    local doc = cjson.decode(out)
    assert.equal("a?b? (x.lua:1)", doc.shared.frames[1].name)
    assert.equal("w\u{202E}z", doc.profiles[1].name)
  end)

  it("shows them as \\uXXXX in the report, and escapes them in --json", function()
    local code, out = run(("report '%s'"):format(path))
    assert.equal(0, code)
    no_raw(out)
    assert.truthy(out:find("a\\u2028b\\u202E (x.lua:1)", 1, true), out)
    assert.truthy(out:find("c\\u0085\\u2066d\\u200F", 1, true), out)
    assert.truthy(out:find("w\\u202Ez", 1, true), out)
    code, out = run(("report '%s' --json"):format(path))
    assert.equal(0, code)
    no_raw(out)
    assert.truthy(out:find('"frame":"c\\u0085\\u2066d\\u200f"', 1, true), out)
    local doc = cjson.decode(out)
    assert.equal("a\u{2028}b\u{202E} (x.lua:1)", doc.samples.top[3].frame)
  end)

  it("keeps them inert text in the page", function()
    local page = S.tmpfile("names.html")
    local code = run(("html '%s' -o '%s'"):format(path, page))
    assert.equal(0, code)
    local html = S.read(page)
    no_raw(html)
    assert.is_nil(html:find("<img", 1, true))
    assert.truthy(html:find("\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e", 1, true))
  end)
end)

describe("hostile samples: a stdout that cannot be written", function()
  local path = file("full.json", trace_text(FRAMES, {sample(20, 2, 1), sample(30, 1, 2)}))

  -- Runs the command with its stdout on /dev/full: its exit code and stderr.
  local function run_full(args)
    local err = S.tmpfile("stderr.txt")
    local _, _, code = os.execute(("LUA_CPATH='%s' %s lua/jobque-profile.lua %s >/dev/full 2>'%s'"):format(
      package.cpath, S.lua, args, err))
    return code, S.read(err)
  end

  local it_full = io.open("/dev/full", "wb") and it or pending
  it_full("exits 1 naming stdout, for each command that writes there", function()
    for _, cmd in ipairs{"flame '%s'", "flame '%s' --format speedscope", "report '%s'", "report '%s' --json",
                         "compare '%s' '%s'", "html '%s' -o " .. S.tmpfile("full.html"),
                         "flame '%s' -o " .. S.tmpfile("full.folded")} do
      local code, err = run_full(cmd:format(path, path))
      assert.same({1, "jobque-profile: cannot write stdout: No space left on device\n"}, {code, err}, cmd)
    end
  end)
end)

describe("hostile samples: -o naming the trace being read", function()
  it("refuses with status 2 and leaves the trace as it was, for flame and html, by name or through a link", function()
    local text = trace_text(FRAMES, {sample(20, 2, 1)})
    local path = file("self.json", text)
    local link = S.tmpfile("link.json")
    assert(os.execute(("ln -s '%s' '%s'"):format(path, link)))
    for _, cmd in ipairs{"flame '%s' -o '%s'", "flame '%s' --format speedscope -o '%s'", "html '%s' -o '%s'",
                         "html '%s' --output '%s'"} do
      for _, out_path in ipairs{path, link} do
        local code, out, err = run(cmd:format(path, out_path))
        assert.same({2, "", ("jobque-profile: the output %s is the trace being read (%s): give -o another file\n")
                     :format(out_path, path)}, {code, out, err}, cmd)
        assert.equal(text, S.read(path))
      end
    end
    -- html's default output beside a trace whose name has no .json
    local bare = file("self.html", text)
    local bare_in = bare:gsub("%.html$", "")
    assert(os.execute(("ln -s '%s' '%s'"):format(bare, bare_in)))
    local code = run(("html '%s'"):format(bare_in))
    assert.equal(2, code)
    assert.equal(text, S.read(bare))
  end)
end)

describe("hostile samples: a chain of frames 100,000 deep", function()
  -- frame k's parent is k - 1; samples at the depths 100,000 (too deep:
  -- skipped), 10,000, 3 and 1; run on a 1 MB C stack
  local parts = {'"1":{"name":"f1","category":"lua"}'}
  for k = 2, 100000 do parts[k] = ('"%d":{"name":"f%d","category":"lua","parent":"%d"}'):format(k, k, k - 1) end
  local path = file("deep.json", trace_text("{" .. table.concat(parts, ",") .. "}",
    {sample(20, 100000, 1), sample(30, 10000, 2), sample(40, 3, 4), sample(50, 1, 8)}))
  local SMALL_STACK = "ulimit -s 1024;"
  local warn = ("jobque-profile: warning: %s: 1 sample skipped (sf nests deeper than 10000: 1)\n"):format(path)

  it("folds its stacks without recursion, a line per stack", function()
    local chain = {}
    for k = 1, 10000 do chain[k] = "f" .. k end
    local code, out, err = run(("flame '%s'"):format(path), SMALL_STACK)
    assert.same({0, warn}, {code, err})
    -- sorted bytewise: "f1 8" < "f1;f2;f3 4" < "f1;f2;f3;f4;..." (" " is 0x20, ";" 0x3B)
    assert.equal("f1 8\nf1;f2;f3 4\n" .. table.concat(chain, ";") .. " 2\n", out)
    local outfile = S.tmpfile("deep.speedscope.json")
    code, out, err = run(("flame '%s' --format speedscope -o '%s'"):format(path, outfile), SMALL_STACK)
    assert.same({0, ("wrote %s (3 samples)\n"):format(outfile), warn}, {code, out, err})
    local doc = cjson.decode(S.read(outfile))
    assert.equal(10000, #doc.shared.frames)
    assert.equal(10000, #doc.profiles[1].samples[1])
  end)

  it("reports and draws it", function()
    local code, out, err = run(("report '%s' --top 2"):format(path), SMALL_STACK)
    assert.same({0, warn}, {code, err})
    -- self: f1 8, f3 4; total: f1 on all 3 samples' stacks
    assert.truthy(out:find("    57.1%%   100.0%%        8 ms  f1\n"), out)
    local page_code, _, page_err = run(("html '%s' -o '%s'"):format(path, S.tmpfile("deep.html")), SMALL_STACK)
    assert.same({0, warn}, {page_code, page_err})
  end)
end)

describe("hostile samples: --job with no job id", function()
  local path = file("job.json", trace_text(FRAMES, {sample(20, 2, 1)}))

  it("exits 2 saying what --job needs, for a negative, zero or fractional id, after a space or an '='", function()
    for _, given in ipairs{"-1", "0", "-7", "1.5", "x"} do
      for _, form in ipairs{"--job %s", "--job=%s"} do
        local code, out, err = run(("flame '%s' " .. form):format(path, given))
        assert.same({2, ""}, {code, out}, form:format(given))
        assert.truthy(err:find(("jobque-profile: --job needs a job id (a whole number from 1: jobs are numbered from 1), "
          .. "not '%s'\n"):format(given), 1, true), err)
      end
    end
  end)
end)

describe("hostile samples: every sample skipped", function()
  it("says so, rather than that the trace has no samples", function()
    local bare = file("allbad.json", '{"traceEvents":[],"stackFrames":' .. FRAMES .. ',"samples":['
      .. table.concat({sample(10, 1, "1e300"), sample("-1e18", 2, 2)}, ",") .. "]}")
    local want = ("jobque-profile: %s: nothing to report: the trace holds no events, and 2 samples skipped (weight "
                  .. "is not an integer from 0 to 2^53: 1, ts out of range: 1), none left\n"):format(bare)
    for _, cmd in ipairs{"flame '%s'", "report '%s'"} do
      local code, out, err = run(cmd:format(bare))
      assert.same({1, "", want}, {code, out, err}, cmd)
    end
    local with_events = file("allbad2.json", trace_text(FRAMES, {sample(20, 1, "0.5")}))
    local code, out, err = run(("flame '%s'"):format(with_events))
    assert.same({1, "", ("jobque-profile: warning: %s: 1 sample skipped (weight is not an integer from 0 to 2^53: 1)\n"
                         .. "jobque-profile: %s: no samples left (every sample skipped, see the warning)\n")
                        :format(with_events, with_events)}, {code, out, err})
  end)
end)
