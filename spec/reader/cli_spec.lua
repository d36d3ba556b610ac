-- The jobque-profile command, and its HTML timeline opened in headless Chromium.
local S = require "support"
local cjson = require "cjson"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"
local p = require "jobque_profile"
local jobque = require "jobque"

local run = S.cli

-- A trace of a small job graph with markers, saved by the library itself.
local function saved_trace()
  local cat = p.profile_category("cli work")
  local tok = p.profile_marker_id("cli token")
  p.profile_start(4096)
  jobque.with_job_que({workers = 2}, function(q)
    for i = 1, 4 do
      p.profile_marker(tok, i)
      p.profile_tag(cat)
      local jobs = {}
      for k = 1, 3 do jobs[k] = q:submit(function(n) local x = 0 for j = 1, n do x = x + j end return x end, 20000) end
      for k = 1, 3 do jobs[k]:wait() end
    end
  end)
  p.profile_stop()
  p.profile_tag(0) -- the op tag is the thread's: later specs expect none
  local _, _, path = S.save(p)
  return path
end

-- Two small Chrome traces written by hand, whose figures are worked out by
-- hand below. Lanes: "worker 0" runs parse [1000, 1050) and render
-- [1100, 1200) (b: [1100, 1150)); "caller" waits [1000, 1060). Markers
-- "tok" at 1000, 1010, 1030, 1060 and 1100: units of 10, 20, 30, 40 and
-- 100 us (b: 50, the last unit runs to the end of the trace).
local function hand_trace(render_dur)
  return ([[{"traceEvents":[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"caller"}},
{"ph":"i","s":"g","pid":1,"tid":2,"ts":1000,"name":"tok","args":{"arg":1}},
{"ph":"i","s":"g","pid":1,"tid":2,"ts":1010,"name":"tok","args":{"arg":2}},
{"ph":"i","s":"g","pid":1,"tid":2,"ts":1030,"name":"tok","args":{"arg":3}},
{"ph":"i","s":"g","pid":1,"tid":2,"ts":1060,"name":"tok","args":{"arg":4}},
{"ph":"i","s":"g","pid":1,"tid":2,"ts":1100,"name":"tok","args":{"arg":5}},
{"ph":"X","pid":1,"tid":1,"ts":1000,"dur":50,"name":"parse","cat":"job","args":{"job":1}},
{"ph":"X","pid":1,"tid":1,"ts":1100,"dur":%d,"name":"render","cat":"job","args":{"job":2}},
{"ph":"X","pid":1,"tid":2,"ts":1000,"dur":60,"name":"wait","cat":"wait","args":{"job":1}}
]}]]):format(render_dur)
end

-- The report of trace a, checked line by line by hand: range 200 us; worker
-- busy 50 + 100, idle 1 - 150 / 200; the caller only waits; all lanes idle
-- 1 - 150 / (200 x 2); 8 events (5 markers, 3 slices), the caller's 6 (its
-- wait and the 5 markers it stamped), the worker's 2; units 10 20 30 40
-- 100: median (rank 3) 30, p95 (rank 5) 100; busy per unit 10 20 20 0 100.
local GOLDEN_REPORT = [[
%s: Chrome trace, 2 lanes, 8 events
range 0.000 .. 200.000 us since the session's start (200 us)

lane                  role          busy        wait     idle    events
worker 0              worker      150 us        0 us    25.0%%         2
caller                caller        0 us       60 us   100.0%%         6

group                               busy        wait     idle    events  parallelism
workers                           150 us        0 us    25.0%%         2  0.75 of 1 worker lane
caller & other lanes                0 us       60 us   100.0%%         6  0.00 of 1 lane
all lanes                         150 us       60 us    62.5%%         8  0.75 of 2 lanes
(parallelism: busy lanes on average; idle: 1 - busy / (range x lanes) of the group)

category        busy   share
job           150 us  100.0%%  ##############################

marker "tok": 5 units; duration min 10 us, median 30 us, p95 100 us, max 100 us
  the 5 slowest units:
     unit       arg      start (us)    duration  busy by category
        5         5         100.000      100 us  job 100 us
        4         4          60.000       40 us  ]] .. "\n" .. [[
        3         3          30.000       30 us  job 20 us
        2         2          10.000       20 us  job 20 us
        1         1           0.000       10 us  job 10 us
]]

describe("jobque-profile on traces worked out by hand", function()
  local dir, a, b
  setup(function()
    dir = S.tmpfile("hand")
    assert(os.execute("mkdir -p '" .. dir .. "'"))
    a, b = dir .. "/a.json", dir .. "/b.json"
    S.write(a, hand_trace(100))
    S.write(b, hand_trace(50))
  end)

  it("report prints the golden text of a plain Chrome trace", function()
    local code, out, err = run("report '" .. a .. "'")
    assert.are.equal(0, code)
    assert.are.equal("", err)
    assert.are.equal(GOLDEN_REPORT:format(a), out)
  end)

  it("report --json gives the figures worked out by hand", function()
    local code, out = run("report '" .. a .. "' --json")
    assert.are.equal(0, code)
    local f = cjson.decode(out)
    assert.are.same({from = 1000, to = 1200, duration = 200, t0 = 1000}, f.range)
    assert.are.equal(8, f.events)
    assert.are.same({lanes = 1, busy = 150, wait = 0, idle = 0.25, parallelism = 0.75, events = 2}, f.workers)
    assert.are.same({lanes = 2, busy = 150, wait = 60, idle = 0.625, parallelism = 0.75, events = 8}, f.total)
    -- A lane's events include the markers stamped on it: the caller's 5 and its wait.
    assert.are.same({"worker 0", 2, "caller", 6}, {f.lanes[1].name, f.lanes[1].events, f.lanes[2].name, f.lanes[2].events})
    assert.are.equal(6, f.others.events)
    assert.are.equal(1, #f.markers)
    local m = f.markers[1]
    assert.are.same({"tok", 5, 10, 30, 100, 100}, {m.kind, m.count, m.min, m.median, m.p95, m.max})
    assert.are.same({5, 4, 3, 2, 1}, m.slowest)
    local durations, busy = {}, {}
    for i, u in ipairs(m.units) do durations[i], busy[i] = u.duration, u.busy end
    assert.are.same({10, 20, 30, 40, 100}, durations)
    assert.are.same({10, 20, 20, 0, 100}, busy)
  end)

  it("report --from/--to counts from the trace's start", function()
    local code, out = run("report '" .. a .. "' --from 10 --to 60 --json")
    assert.are.equal(0, code)
    local f = cjson.decode(out)
    -- [1010, 1060]: parse gives 40 us, the wait 50; markers at 10, 30, 60.
    assert.are.same({from = 1010, to = 1060, duration = 50, t0 = 1000}, f.range)
    assert.are.equal(40, f.workers.busy)
    assert.are.equal(50, f.total.wait)
    assert.are.same({2, 20, 30}, {f.markers[1].count, f.markers[1].min, f.markers[1].max})
  end)

  local function row(rows, label)
    for _, r in ipairs(rows) do if r.label == label then return r end end
    error("no row " .. label)
  end

  it("compare --json gives the known differences of two traces", function()
    local code, out = run(("compare '%s' '%s' --json"):format(a, b))
    assert.are.equal(0, code)
    local rows = cjson.decode(out)
    local function abd(label)
      local r = row(rows, label)
      return {r.a, r.b, r.diff}
    end
    assert.are.same({200, 150, -50}, abd("duration"))
    assert.are.same({8, 8, 0}, abd("events"))
    assert.are.same({150, 100, -50}, abd("workers: busy"))
    assert.are.same({60, 60, 0}, abd("all lanes: wait"))
    assert.are.same({30, 30, 0}, abd("tok median"))
    assert.are.same({100, 50, -50}, abd("tok p95"))
    assert.are.equal(0.75, row(rows, "duration").ratio)
    assert.are.equal(0.5, row(rows, "tok p95").ratio)
    local idle = row(rows, "workers: idle")
    assert.are.equal(0.25, idle.a)
    assert.near(1 / 3, idle.b, 1e-12)
    assert.near(1 / 12, idle.diff, 1e-12)
  end)

  it("compare prints both names and the differences as text", function()
    local code, out = run(("compare '%s' '%s'"):format(a, b))
    assert.are.equal(0, code)
    local lines = {}
    for line in out:gmatch("[^\n]+") do lines[line] = true end
    assert.is_true(lines["a: " .. a] and lines["b: " .. b], out)
    for _, want in ipairs{
      "duration                                 200 us        150 us        -50 us     0.75x",
      "workers: busy                            150 us        100 us        -50 us     0.67x",
      "workers: idle                             25.0%         33.3%       +8.3 pt     1.33x",
      "tok median                                30 us         30 us         +0 us     1.00x",
      "tok p95                                  100 us         50 us        -50 us     0.50x",
    } do
      assert.is_true(lines[want], "missing line: " .. want .. "\n" .. out)
    end
  end)

  it("compare --from/--to limits both traces to the range", function()
    local code, out = run(("compare '%s' '%s' --from 100 --to 150 --json"):format(a, b))
    assert.are.equal(0, code)
    local rows = cjson.decode(out)
    -- [1100, 1150]: render runs all of it in both; a's last unit is cut to 50.
    assert.are.same({50, 50, 0}, {row(rows, "duration").a, row(rows, "duration").b, row(rows, "duration").diff})
    assert.are.same({50, 50}, {row(rows, "workers: busy").a, row(rows, "workers: busy").b})
    assert.are.same({1, 1}, {row(rows, "tok units").a, row(rows, "tok units").b})
  end)

  it("compare exits 1 naming a file that does not exist", function()
    local missing = dir .. "/missing.json"
    local code, out, err = run(("compare '%s' '%s'"):format(a, missing))
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.are.equal("jobque-profile: cannot open " .. missing .. ": No such file or directory\n", err)
  end)

  it("exits 2 on a --to before the trace's start, or a --to that is not a number", function()
    local code, out, err = run("report '" .. a .. "' --to=-5")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.are.equal(("jobque-profile: the range start .. -5.000 us is outside %s, which runs from 0 to 200.000 us "
      .. "(times count from the session's start)\n"):format(a), err)
    code, out, err = run("report '" .. a .. "' --to abc")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.matches("jobque-profile: --to needs a time in microseconds, not 'abc'", err, 1, true)
    code, out, err = run("report '" .. a .. "' --from 100 --to 100")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.are.equal("jobque-profile: --from must be before --to\n", err)
  end)

  it("html writes beside the trace without -o, and where --output says", function()
    local page = dir .. "/a.html"
    os.remove(page)
    local code, out = run("html '" .. a .. "'")
    assert.are.equal(0, code)
    assert.are.equal("wrote " .. page .. " (2 lanes, 3 slices, 5 markers): open it in a browser\n", out)
    assert.are.equal("<!DOCTYPE html>", S.read(page):sub(1, 15))
    assert.is_nil(io.open(a .. ".html"))
    local other = dir .. "/elsewhere.html"
    code = run(("html '%s' --output '%s'"):format(b, other))
    assert.are.equal(0, code)
    assert.are.equal("<!DOCTYPE html>", S.read(other):sub(1, 15))
    assert.is_nil(io.open(dir .. "/b.html"), "--output writes only there")
    os.remove(page)
    os.remove(other)
  end)
end)

describe("jobque-profile", function()
  local path
  setup(function() path = saved_trace() end)

  it("report prints the figures of a saved trace, and --json what is known of the run", function()
    local code, out = run("report '" .. path .. "'")
    assert.equal(0, code)
    assert.matches("parallelism", out, 1, true)
    assert.matches('marker "cli token": 4 units', out, 1, true)
    local jcode, jout = run("report '" .. path .. "' --json")
    assert.equal(0, jcode)
    local got = cjson.decode(jout)
    -- Two workers and the caller; 12 jobs of the "cli work" category, 4 tokens.
    local names = {}
    for i, lane in ipairs(got.lanes) do names[i] = lane.name end
    assert.are.same({"worker 0", "worker 1", "caller"}, names)
    -- Marker kinds registered by other specs of this process are listed too, with no units.
    local token
    for _, m in ipairs(got.markers) do
      if m.kind == "cli token" then token = m else assert.are.equal(0, m.count, m.kind) end
    end
    assert.is_table(token)
    assert.are.equal(4, token.count)
    assert.are.equal(4, #token.units) -- --json lists every unit
    local args = {}
    for i, u in ipairs(token.units) do args[i] = u.arg end
    assert.are.same({1, 2, 3, 4}, args)
    local cats = {}
    for _, c in ipairs(got.categories) do cats[c.name] = c.busy end
    assert.is_true(cats["cli work"] > 0)
    assert.is_true(got.total.busy >= cats["cli work"])
    assert.are.equal(0, got.failures.failed)
  end)

  it("report --json gives the critical path's steps; the text, made without them, is the same", function()
    local code, out = run("report '" .. path .. "' --json")
    assert.equal(0, code)
    local cp = cjson.decode(out).critical_path
    local sum = 0
    for _, s in ipairs(cp.steps) do sum = sum + s.dur_us end -- back to back from its start to its finish
    assert.near(cp.duration_us, sum, 1e-9 * cp.duration_us + 1e-6)
    assert.is_table(cp.held_by)
    local model = assert(trace.load(path))
    local lean = stats.compute(model, nil, nil, nil, {steps = false})
    assert.is_nil(lean.critical_path.steps)
    local text = report.text(lean, model)
    assert.matches("critical path: ", text, 1, true)
    assert.equal(report.text(stats.compute(model), model), text)
  end)

  it("report --from/--to limits the range, in time since the session's start", function()
    local m = assert(trace.load(path))
    local a, b = m.markers[2].ts - m.t0, m.markers[3].ts - m.t0
    local code, out = run(("report '%s' --from %.3f --to %.3f --json"):format(path, a, b))
    assert.equal(0, code)
    local got = cjson.decode(out)
    assert.near(b - a, got.range.duration, 1e-3)
    local counts = {}
    for _, k in ipairs(got.markers) do counts[k.kind] = k.count end
    assert.equal(1, counts["cli token"])
  end)

  it("compare shows both traces and the differences", function()
    local code, out = run(("compare '%s' '%s'"):format(path, path))
    assert.equal(0, code)
    assert.matches("busy: cli work", out, 1, true)
    local jcode, jout = run(("compare '%s' '%s' --json"):format(path, path))
    assert.equal(0, jcode)
    for _, r in ipairs(cjson.decode(jout)) do assert.equal(0, r.diff, r.label) end
  end)

  it("exits 1 with a message on a file that is not a trace", function()
    local bad = S.tmpfile("bad.json")
    S.write(bad, '{"hello": 1}')
    local _
    local code, out, err = run("report '" .. bad .. "'")
    assert.equal(1, code)
    assert.equal("", out)
    assert.matches('not a trace: no "traceEvents" array', err, 1, true)
    assert.is_nil(err:find("traceback", 1, true))
    code, _, err = run("html '" .. S.tmpdir .. "/none.json'")
    assert.equal(1, code)
    assert.matches("cannot open", err, 1, true)
    code, _, err = run(("html '%s' -o '%s/no/such/dir/t.html'"):format(path, S.tmpdir))
    assert.equal(1, code)
    assert.matches("cannot write", err, 1, true)
  end)

  -- Writes a Chrome trace of the given event texts; returns its path.
  local function chrome(...)
    local file = S.tmpfile("chrome.json")
    S.write(file, '{"traceEvents":[' .. table.concat({...}, ",") .. "]}")
    return file
  end

  it("exits 1 naming the event and field of a time out of range, for report, compare and html", function()
    local ok = '{"ph":"X","ts":0,"dur":10,"pid":1,"tid":1,"name":"fine"}'
    local cases = {
      {'{"ph":"X","ts":1e308,"dur":1e308,"pid":1,"tid":1,"name":"huge"}', 2, "huge", "ts", "1e+308"},
      {'{"ph":"X","ts":-1e308,"dur":1,"pid":1,"tid":1,"name":"far back"}', 2, "far back", "ts", "-1e+308"},
      {'{"ph":"X","ts":5,"dur":1e308,"pid":1,"tid":1,"name":"long"}', 2, "long", "dur", "1e+308"},
      {'{"ph":"X","ts":1e999,"dur":1,"pid":1,"tid":1,"name":"inf"}', 2, "inf", "ts", "inf"},
      {'{"ph":"i","s":"g","ts":-1e999,"pid":1,"tid":1,"name":"mark"}', 2, "mark", "ts", "-inf"},
      {'{"ph":"X","ts":1e20,"dur":1,"pid":1,"tid":1,"name":"later"}', 2, "later", "ts", "1e+20"},
      {'{"ph":"B","ts":0,"pid":1,"tid":2,"name":"open"},{"ph":"E","ts":4e16,"pid":1,"tid":2}', 3, "?", "ts", "4e+16"},
    }
    for _, c in ipairs(cases) do
      local file = chrome(ok, c[1])
      local want = ('event #%d ("%s"): "%s" is %s us, out of range (a time must be within'):format(
        c[2], c[3], c[4], c[5])
      local out_html = file .. ".html"
      for _, cmd in ipairs{"report '" .. file .. "'", ("compare '%s' '%s'"):format(path, file),
                           ("html '%s' -o '%s'"):format(file, out_html)} do
        local code, out, err = run(cmd)
        assert.equal(1, code, cmd)
        assert.equal("", out, cmd)
        assert.matches("^jobque%-profile: [^\n]*" .. file:gsub("%p", "%%%0"), err)
        assert.matches(want, err, 1, true)
        assert.equal(1, select(2, err:gsub("\n", "")), err) -- one line
      end
      assert.is_nil(io.open(out_html))
    end
  end)

  it("warns on one line how many events it skipped, and why", function()
    local file = chrome('{"ph":"X","ts":0,"dur":10,"pid":1,"tid":1,"name":"a"}',
                        '{"ph":"X","ts":"1","dur":1,"pid":1,"tid":1,"name":"b"}',
                        '{"ph":"X","ts":"2","dur":1,"pid":1,"tid":1,"name":"c"}',
                        '{"ph":"X","dur":1,"pid":1,"tid":1,"name":"no ts"}',
                        '{"ph":"Q","ts":3,"pid":1,"tid":1}',
                        '{"ph":"X","ts":4,"dur":-1,"pid":1,"tid":1,"name":"backwards"}',
                        '7',
                        '{"ph":"X","ts":"3","dur":1,"pid":1,"tid":1,"name":"d"}',
                        '{"ph":"X","ts":20,"dur":10,"pid":1,"tid":1,"name":"e"}')
    local want = ("jobque-profile: warning: %s: 7 events skipped (ts is not a number: 3, no ts: 1, unknown ph: 1, "
                  .. "dur is negative: 1, not an object: 1)\n"):format(file)
    local code, out, err = run("report '" .. file .. "'")
    assert.equal(0, code)
    assert.equal(want, err)
    assert.matches("2 events", out, 1, true)
    code, out, err = run("report '" .. file .. "' --json")
    assert.equal(0, code)
    assert.equal(want, err)
    assert.equal(2, cjson.decode(out).events) -- stdout stays JSON
    local one = chrome('{"ph":"X","ts":0,"dur":10,"pid":1,"tid":1,"name":"a"}', '{"ph":"X","ts":"1","dur":1}')
    code, out, err = run(("compare '%s' '%s'"):format(path, one))
    assert.equal(0, code)
    assert.matches("b: " .. one, out, 1, true)
    assert.equal(("jobque-profile: warning: %s: 1 event skipped (ts is not a number: 1)\n"):format(one), err)
  end)

  it("prints names with line breaks as ⏎ and escape sequences as visible escapes", function()
    local file = chrome('{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"evil\\nlane\\u001b[2J"}}',
                        '{"ph":"X","ts":0,"dur":10,"pid":1,"tid":1,"name":"a\\r\\nb","cat":"c\\tat"}',
                        '{"ph":"i","s":"g","ts":5,"pid":1,"tid":1,"name":"mark\\nkind"}')
    local code, out = run("report '" .. file .. "'")
    assert.equal(0, code)
    assert.is_nil(out:find("[%z\1-\9\11-\31\127]"), "a control character reached the terminal:\n" .. out)
    assert.matches("\nevil⏎lane\\x1B[2J  ", out, 1, true) -- the lane's row, its name escaped
    local rows = 0
    for line in out:gmatch("[^\n]*") do
      if line:find("^evil") then rows = rows + 1 end
    end
    assert.equal(1, rows)
  end)

  it("exits 1 when no event could be read, or traceEvents is not an array", function()
    local skipped = chrome('{"ph":"X","ts":"1","dur":1}', '{"ph":"X","ts":"2","dur":1}')
    local empty = chrome()
    local object = S.tmpfile("object.json")
    S.write(object, '{"traceEvents":{"a":{"ph":"X","ts":1,"dur":1}}}')
    local cases = {
      {skipped, "nothing to report: 2 events skipped (ts is not a number: 2), none left"},
      {empty, "nothing to report: the trace holds no events"},
      {object, 'not a trace: "traceEvents" is not an array (it is an object)'},
    }
    for _, c in ipairs(cases) do
      local html_out = c[1] .. ".html"
      for _, cmd in ipairs{"report '" .. c[1] .. "'", ("compare '%s' '%s'"):format(path, c[1]),
                           ("html '%s' -o '%s'"):format(c[1], html_out)} do
        local code, out, err = run(cmd)
        assert.equal(1, code, cmd)
        assert.equal("", out, cmd)
        assert.equal(("jobque-profile: %s: %s\n"):format(c[1], c[2]), err)
      end
      assert.is_nil(io.open(html_out))
    end
  end)

  it("reads times up to the limit: a trace stamped in microseconds since 1970", function()
    local file = chrome('{"ph":"X","ts":1.7e15,"dur":2.5,"pid":1,"tid":1,"name":"now"}',
                        '{"ph":"X","ts":1.7e15,"dur":2e15,"pid":1,"tid":2,"name":"long"}')
    local code, out, err = run("report '" .. file .. "' --json")
    assert.equal(0, code, err)
    local got = cjson.decode(out)
    assert.equal(1.7e15, got.range.from)
    assert.equal(3.7e15, got.range.to)
    assert.equal(2e15 + 2.5, got.total.busy)
    code, out, err = run("report '" .. file .. "'")
    assert.equal(0, code, err)
    assert.matches("long ", out, 1, true)
    code, out, err = run(("html '%s' -o '%s.html'"):format(file, file))
    assert.equal(0, code, err)
    assert.matches("2 slices", out, 1, true)
  end)

  it("exits 2 on a --from or --to that is not a time in range", function()
    for _, opt in ipairs{"--from=1e999", "--to=-1e999", "--to=1e300", "--from=-4e15"} do
      local code, out, err = run("report '" .. path .. "' " .. opt)
      assert.equal(2, code, opt)
      assert.equal("", out)
      assert.matches(opt:match("^(%-%-%a+)") .. " needs a time in microseconds within", err, 1, true)
    end
  end)

  it("names the file and its size when memory runs out, reading it or decoding it", function()
    if S.sanitized then pending("a sanitizer host cannot start under ulimit -v") return end
    -- 300000 slices, 15.9 MB: reading the text takes about twice its size
    -- (the native loader maps it: once), the model more than twice (seven
    -- 16-byte values per slice) besides the interpreter's own.
    local big = S.tmpfile("big.json")
    local event = '{"ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"name":"n"},'
    S.write(big, '{"traceEvents":[' .. event:rep(300000) .. '{"ph":"X","ts":2,"dur":1}]}')
    local size = #S.read(big)
    local want = ("jobque-profile: %s: not enough memory to read %.1f MB of trace"):format(big, size / 1e6)
    for _, kb in ipairs{size // 1024, 3 * size // 1024} do -- the text cannot be read; it cannot be decoded
      for _, cmd in ipairs{"report", "html"} do
        local err_file = S.tmpfile("stderr.txt")
        local h = io.popen(("ulimit -v %d; LUA_CPATH='%s' lua5.4 lua/jobque-profile.lua %s '%s' 2>'%s'")
          :format(kb, package.cpath, cmd, big, err_file))
        local out = h:read("a")
        local _, _, code = h:close()
        local err = S.read(err_file)
        assert.equal(1, code, err)
        assert.equal("", out)
        assert.matches(want, err, 1, true)
        assert.matches("ulimit -v", err, 1, true) -- what to do
        assert.equal(1, select(2, err:gsub("\n", "")), err)
      end
    end
    assert.is_nil(io.open((big:gsub("%.json$", ".html"))))
  end)

  it("turns an internal error into one line naming the file, never a traceback", function()
    -- a stats module that fails as a bug would, found first on the path
    local dir = S.tmpfile("fault")
    assert(os.execute("mkdir -p '" .. dir .. "/jobque_profile'"))
    S.write(dir .. "/jobque_profile/stats.lua",
            'return {compute = function() error("oops\\nsecond line") end, compare = function() end}')
    local err_file = S.tmpfile("stderr.txt")
    local h = io.popen(("LUA_PATH='%s/?.lua;lua/?.lua;;' LUA_CPATH='%s' %s lua/jobque-profile.lua report '%s' 2>'%s'")
      :format(dir, package.cpath, S.lua, path, err_file))
    local out = h:read("a")
    local _, _, code = h:close()
    local err = S.read(err_file)
    assert.equal(1, code)
    assert.equal("", out)
    assert.matches("^jobque%-profile: internal error on " .. path:gsub("%p", "%%%0") .. ": .*oops", err)
    assert.matches("please report", err, 1, true)
    assert.is_nil(err:find("traceback", 1, true))
    assert.is_nil(err:find("second line", 1, true))
    assert.equal(1, select(2, err:gsub("\n", "")), err)
  end)

  it("exits 2 on bad usage, 0 on --help", function()
    local code, _, err = run("")
    assert.equal(2, code)
    assert.matches("Usage", err, 1, true)
    code, _, err = run("report")
    assert.equal(2, code)
    assert.matches("missing argument 'trace'", err, 1, true)
    code, _, err = run("report '" .. path .. "' --from soon")
    assert.equal(2, code)
    assert.matches("--from needs a time in microseconds, not 'soon'", err, 1, true)
    code, _, err = run("report '" .. path .. "' --from 5 --to 1")
    assert.equal(2, code)
    assert.matches("--from must be before --to", err, 1, true)
    code, _, err = run("report '" .. path .. "' --from 1e12")
    assert.equal(2, code)
    assert.matches("is outside .* which runs from", err)
    code, _, err = run("frobnicate x")
    assert.equal(2, code)
    assert.matches("unknown command 'frobnicate'", err, 1, true)
    local hcode, out = run("--help")
    assert.equal(0, hcode)
    for _, word in ipairs{"report", "compare", "html", "flame"} do assert.matches(word, out, 1, true) end
  end)
end)

local open_page = S.open_page

local describe_in_browser = S.plain_only(describe, pending, "drives Chromium")

describe_in_browser("the HTML timeline", function()
  local path, page, model
  setup(function()
    path = saved_trace()
    page = S.tmpfile("timeline.html")
    local code, out, err = run(("html '%s' -o '%s' --test-hooks"):format(path, page))
    assert(code == 0, err)
    assert(out:find(page, 1, true))
    model = assert(trace.load(path))
  end)

  local function open(fragment, screenshot)
    return (open_page(page, fragment, screenshot))
  end

  it("is one file that fetches nothing", function()
    local text = S.read(page)
    assert.is_nil(text:find("https?://"))
    assert.is_nil(text:find("<link", 1, true))
    assert.is_nil(text:find("<script src", 1, true))
  end)

  it("shows every lane, legend entry and marker, and a screenshot", function()
    local png = S.tmpfile("timeline.png")
    local state = open(nil, png)
    assert.equal(#model.lanes, state.lanes)
    assert.is_true(state.copies > 0)
    assert.equal(#model.categories + 1, state.legend) -- every category, and the copies' entry
    assert.equal(#model.markers, state.markers)
    local n = 0
    for _, lane in ipairs(model.lanes) do n = n + lane.n end
    assert.equal(n, state.events)
    assert.is_true(state.drawn > 0)
    local shot = S.read(png)
    assert.equal("\137PNG\r\n\26\n", shot:sub(1, 8))
  end)

  it("shows a slice's name, category, lane, start, duration and args on hover", function()
    -- the first job slice of the first lane that ran one, probed in its middle
    local index, lane, i
    for li, l in ipairs(model.lanes) do
      for k = 1, l.n do
        if l.kind[k] == "job" then index, lane, i = li, l, k break end
      end
      if lane then break end
    end
    assert(lane, "the trace has no job slice")
    local state = open(("#probe=%d,%.3f"):format(index - 1, lane.ts[i] - model.t0 + lane.dur[i] / 2))
    local tip = state.probe
    assert.is_string(tip)
    assert.matches(lane.sname[i], tip, 1, true)
    assert.matches("category " .. lane.cat[i], tip, 1, true)
    assert.matches("lane     " .. lane.name, tip, 1, true)
    assert.matches(("start    %.3f us"):format(lane.ts[i] - model.t0), tip, 1, true) -- since the session's start
    assert.matches(('args     {"job":%d}'):format(lane.job[i]), tip, 1, true)
  end)

  it("zooms at the cursor with the wheel, pans with a drag, fits with a double-click", function()
    local span = model.t1 - model.t0
    local zoomed = open("#do=wheel:600:-500").view
    -- a wheel step of -500 zooms in by e; the cursor sat mid-canvas, so the view stays inside
    assert.near(span / math.exp(1), zoomed[2] - zoomed[1], 1e-6 * span)
    assert.is_true(zoomed[1] > 0 and zoomed[2] < span) -- since the session's start
    local state = open("#do=wheel:600:-500;drag:600:700")
    local panned = state.view
    -- dragging right by 100 px shows what was 100 px to the left
    local shift = 100 / (state.width - state.label) * (zoomed[2] - zoomed[1])
    assert.near(zoomed[1] - shift, panned[1], 1e-6 * span)
    assert.near(zoomed[2] - shift, panned[2], 1e-6 * span)
    local fit = open("#do=wheel:600:-500;drag:600:700;dblclick").view
    assert.near(0, fit[1], 1e-6)
    assert.near(span, fit[2], 1e-6)
  end)

  it("selects a range with shift+drag and shows its figures", function()
    local state = open("#do=sdrag:300:500")
    local got = state.selection
    assert.is_table(got)
    assert.is_true(got.from < got.to)
    local want = stats.compute(model, model.t0 + got.from, model.t0 + got.to)
    assert.near(want.total.parallelism, got.parallelism, 1e-9)
    assert.near(want.total.idle, got.idle, 1e-9)
  end)

  it("computes a selected range's figures as stats.compute does", function()
    local a, b = model.markers[2].ts, model.markers[4].ts
    local state = open(("#from=%.3f&to=%.3f"):format(a - model.t0, b - model.t0))
    local want = stats.compute(model, a, b)
    local got = state.selection
    assert.near(want.range.duration, got.duration, 1e-6)
    assert.near(want.total.busy, got.busy, 1e-6 * want.total.busy)
    assert.near(want.total.wait, got.wait, 1e-6 * math.max(1, want.total.wait))
    assert.near(want.total.idle, got.idle, 1e-9)
    assert.near(want.total.parallelism, got.parallelism, 1e-9)
    assert.equal(want.categories[1].name, got.top[1].name)
  end)
end)

describe_in_browser("the HTML timeline of a trace with hostile names", function()
  -- Names that could change how an HTML page parses if they were pasted into
  -- it. "<!--<script>" enters the double-escaped script state, where the real
  -- "</script>" no longer ends the element; a later "-->" would leave that
  -- state again, so the only "-->" comes first.
  local CAT = "--><!--<script>"
  local NAME = '</script><script>document.title="pwned"</script>' -- closes the data element
  local LANE = "lane \"q\" 'a'\n<!-- \226\128\168"              -- quotes, a line break, U+2028
  local KIND = "\226\128\169</script><!--<script"                -- U+2029
  local ARG = "</SCRIPT>\r\n<!--"
  local page
  setup(function()
    local events = {
      {ph = "M", pid = 1, tid = 1, name = "thread_name", args = {name = LANE}},
      {ph = "X", ts = 0, dur = 10, pid = 1, tid = 1, name = NAME, cat = CAT, args = {note = ARG}},
      {ph = "X", ts = 90, dur = 10, pid = 1, tid = 1, name = "tail", cat = "plain"},
      {ph = "i", s = "g", ts = 50, pid = 1, tid = 1, name = KIND, args = {arg = ARG}},
    }
    local path = S.tmpfile("hostile.json")
    S.write(path, cjson.encode({traceEvents = events}))
    page = S.tmpfile("hostile.html")
    local code, _, err = run(("html '%s' -o '%s' --test-hooks"):format(path, page))
    assert(code == 0, err)
  end)

  it("draws, and shows every name as text", function()
    local state, dom = open_page(page, "#probe=0,5")
    assert.equal(1, state.lanes)
    assert.equal(2, state.legend)
    assert.equal(1, state.markers)
    assert.equal(2, state.drawn)
    local tip = state.probe
    assert.matches(NAME, tip, 1, true)
    assert.matches("category " .. CAT, tip, 1, true)
    assert.matches("lane     " .. LANE, tip, 1, true)
    assert.matches('args     {"note":"</SCRIPT>\\r\\n<!--"}', tip, 1, true)
    assert.matches("hostile%.json %- jobque%-profile timeline$", dom:match("<title>(.-)</title>")) -- no name ran
    -- the legend shows the category's name as text (the DOM dump escapes it)
    assert.matches("--&gt;&lt;!--&lt;script&gt;</span>", dom, 1, true)
    local marker = open_page(page, "#probe=0,50").probe
    assert.equal("marker " .. KIND .. "\narg    " .. ARG .. "\nat     50.000 us", marker)
  end)

  it("draws a trace whose args overflow to infinity", function()
    local file = S.tmpfile("inf-args.json")
    S.write(file, '{"traceEvents":[{"ph":"X","ts":0,"dur":4,"pid":1,"tid":1,"name":"a","args":{"x":1e999}},'
            .. '{"ph":"i","s":"g","ts":5,"pid":1,"tid":1,"name":"m","args":{"arg":1e999}},'
            .. '{"ph":"i","s":"g","ts":6,"pid":1,"tid":1,"name":"m","args":{"arg":-1e999}}]}')
    local inf_page = S.tmpfile("inf-args.html")
    local code, _, err = run(("html '%s' -o '%s' --test-hooks"):format(file, inf_page))
    assert.equal(0, code, err)
    local state = open_page(inf_page, "#probe=0,2")
    assert.equal(2, state.markers)
    assert.equal(1, state.drawn)
    assert.matches('args     {"x":null}', state.probe, 1, true) -- as JSON writes it
    assert.matches("arg    -inf", open_page(inf_page, "#probe=0,6").probe, 1, true)
  end)

  it("keeps every '<' of the data out of the markup", function()
    local text = S.read(page)
    local data = text:match('<script type="application/json" id="data">(.-)</script>')
    assert.is_string(data)
    assert.is_nil(data:find("<", 1, true))
    assert.is_nil(data:find("\226\128[\168\169]"))
  end)
end)

describe("jobque-profile on a trace's format version", function()
  local function with_version(text)
    local file = S.tmpfile("version.json")
    S.write(file, '{"traceEvents":[{"ph":"X","ts":0,"dur":4,"pid":1,"tid":1,"name":"a"}],'
            .. '"jobqueProfile":{"version":' .. text .. ',"startUs":0,"stopUs":10}}')
    return file
  end

  it("reads version 1, and a file without one", function()
    for _, file in ipairs{with_version("1"), S.tmpfile("none.json")} do
      if file:find("none") then
        S.write(file, '{"traceEvents":[{"ph":"X","ts":0,"dur":4,"pid":1,"tid":1,"name":"a"}]}')
      end
      local code, out, err = run("report --json '" .. file .. "'")
      assert.equal(0, code, err)
      assert.truthy(out:find('"events":1', 1, true), out)
    end
  end)

  it("refuses a newer version, and one that is no integer from 1, status 1", function()
    for version, why in pairs{["2"] = "trace format version 2 is newer than this jobque-profile reads (1)",
                              ["3"] = "trace format version 3 is newer than this jobque-profile reads (1)",
                              ['"1"'] = 'bad "jobqueProfile.version": string (an integer from 1 expected)',
                              ["0"] = 'bad "jobqueProfile.version": 0 (an integer from 1 expected)',
                              ["1.5"] = 'bad "jobqueProfile.version": 1.5 (an integer from 1 expected)'} do
      local file = with_version(version)
      local code, out, err = run("report '" .. file .. "'")
      assert.equal("", out)
      assert.equal("jobque-profile: " .. file .. ": " .. why .. "\n", err)
      assert.equal(1, code)
    end
  end)
end)
