-- What the report shows: lane groups (workers, the caller and others, all
-- lanes), the slowest marker units, and long or multi-line names.
-- Expected figures are worked out by hand from the small traces written here.
local S = require "support"
local cjson = require "cjson"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"

local run = S.cli

local function chrome(events, meta)
  local path = S.tmpfile("view.json")
  S.write(path, '{"traceEvents":[' .. table.concat(events, ",\n") .. "]"
          .. (meta and (',"jobqueProfile":' .. meta) or "") .. "}")
  return path
end

local function lane(tid, name)
  return ('{"ph":"M","pid":1,"tid":%d,"name":"thread_name","args":{"name":%s}}'):format(tid, cjson.encode(name))
end

local function slice(tid, ts, dur, name, cat)
  return ('{"ph":"X","pid":1,"tid":%d,"ts":%s,"dur":%s,"name":%s,"cat":%s}'):format(tid, ts, dur,
    cjson.encode(name), cjson.encode(cat or "job"))
end

local function marker(ts, kind, arg)
  return ('{"ph":"i","s":"g","pid":1,"tid":3,"ts":%s,"name":%s,"args":{"arg":%d}}'):format(ts, cjson.encode(kind), arg)
end

-- Two workers busy over all of 0..100 us and a caller that submits for 5 us
-- and waits for 90: the workers are not idle at all.
local BUSY = {
  lane(1, "worker 0"), lane(2, "worker 1"), lane(3, "caller"),
  slice(1, 0, 100, "a"), slice(2, 0, 100, "a"),
  slice(3, 0, 5, "submit a", "submit"), slice(3, 5, 90, "wait all", "wait"),
}

-- The lines of `out` that start with `prefix` (after leading spaces).
local function lines_of(out, prefix)
  local found = {}
  for line in out:gmatch("[^\n]+") do
    if line:gsub("^%s+", ""):sub(1, #prefix) == prefix then found[#found + 1] = line end
  end
  return found
end

describe("the report's lane groups", function()
  it("reports the workers apart from the caller, and all lanes as a third line", function()
    local path = chrome(BUSY, '{"version":1}')
    local f = stats.compute(assert(trace.load(path)))
    assert.same({"worker", "worker", "caller"}, {f.lanes[1].role, f.lanes[2].role, f.lanes[3].role})
    assert.same({2, 200, 0, 0, 2}, {f.workers.lanes, f.workers.busy, f.workers.wait, f.workers.idle,
                                    f.workers.parallelism})
    assert.same({1, 5, 90}, {f.others.lanes, f.others.busy, f.others.wait})
    assert.near(0.95, f.others.idle, 1e-12)
    assert.near(0.05, f.others.parallelism, 1e-12)
    assert.same({3, 205, 90}, {f.total.lanes, f.total.busy, f.total.wait})
    assert.near(1 - 205 / 300, f.total.idle, 1e-12)
    local code, out, err = run("report '" .. path .. "'")
    assert.equal(0, code, err)
    assert.matches("\nworkers +200 us +0 us +0.0%% +%d+ +2%.00 of 2 worker lanes\n", out)
    assert.matches("\ncaller & other lanes +5 us +90 us +95.0%% +%d+ +0%.05 of 1 lane\n", out)
    assert.matches("\nall lanes +205 us +90 us +31.7%% +%d+ +2%.05 of 3 lanes\n", out)
    local jcode, jout = run("report '" .. path .. "' --json")
    assert.equal(0, jcode)
    local got = cjson.decode(jout)
    assert.same({2, 0, 2}, {got.workers.lanes, got.workers.idle, got.workers.parallelism})
    assert.equal(1, got.others.lanes)
    assert.equal(3, got.total.lanes)
    assert.equal("caller", got.lanes[3].role)
  end)

  it("takes a queue's name as a worker's, and other threads as others", function()
    local path = chrome({lane(1, "render 0"), lane(2, "render 1"), lane(4, "thread 1"), lane(3, "caller"),
                         slice(1, 0, 10, "a"), slice(2, 0, 10, "a"), slice(4, 0, 10, "a"), slice(3, 0, 10, "a")},
                        '{"version":1}')
    local f = stats.compute(assert(trace.load(path)))
    local roles = {}
    for _, l in ipairs(f.lanes) do roles[l.name] = l.role end
    assert.same({["render 0"] = "worker", ["render 1"] = "worker", ["thread 1"] = "other", caller = "caller"}, roles)
    assert.same({2, 2}, {f.workers.lanes, f.others.lanes})
  end)

  it("takes a lane's role from the file's lane details when they give one", function()
    local path = chrome({lane(1, "pool"), lane(2, "worker 7"), slice(1, 0, 10, "a"), slice(2, 0, 10, "a")},
                        '{"version":1,"laneInfo":[{"name":"pool","role":"worker"},{"name":"worker 7","role":"other"}]}')
    local f = stats.compute(assert(trace.load(path)))
    assert.same({"worker", "other"}, {f.lanes[1].role, f.lanes[2].role})
  end)

  it("counts the seed system's caller lane (\"caller N\") as the caller, not a worker", function()
    -- seed_trace_example.json: tid 0 "worker 0" busy 2040, tid 1 "worker 1" busy 1955,
    -- tid 2 "caller 2" busy 24 and waiting 1962, over 0..2135 us.
    local f = stats.compute(assert(trace.load("spec/fixtures/seed_trace_example.json")))
    assert.same({"worker", "worker", "caller"}, {f.lanes[1].role, f.lanes[2].role, f.lanes[3].role})
    assert.same({2, 2040 + 1955}, {f.workers.lanes, f.workers.busy})
    assert.near(1 - 3995 / (2 * 2135), f.workers.idle, 1e-12)
    assert.same({1, 24, 1962}, {f.others.lanes, f.others.busy, f.others.wait})
  end)

  it("knows a saved queue's workers whatever the queue's name (\"thread\", \"caller\", a line break)", function()
    local jobque = require "jobque"
    local p = require "jobque_profile"
    for _, name in ipairs{"thread", "caller", "pool\nA"} do
      p.profile_start()
      local q = jobque.new{workers = 1, name = name}
      q:submit(function() end):wait()
      q:close()
      p.profile_stop()
      local saved, _, path = S.save(p)
      local roles = {}
      for _, info in ipairs(saved.jobqueProfile.laneInfo) do roles[info.name] = info.role end
      assert.same({[name .. " 0"] = "worker", caller = "caller"}, roles)
      local f = stats.compute(assert(trace.load(path)))
      local got = {}
      for _, l in ipairs(f.lanes) do got[l.name] = l.role end
      assert.same({[name .. " 0"] = "worker", caller = "caller"}, got)
      assert.equal(1, f.workers.lanes)
    end
  end)

  it("keeps a queue's workers workers, in lane order, however many queues came before", function()
    -- Lane order counts queues by creation (1024 lanes a queue); past 2^20 queues
    -- that number must not spill into the other threads' order, nor overflow an int.
    local jobque = require "jobque"
    local p = require "jobque_profile"
    local test = require("jobque.core")._test
    for _, seq in ipairs{(1 << 20) + 5, (1 << 21) + 1, math.maxinteger >> 32} do
      test.set_next_queue_seq(seq)
      p.profile_start()
      local q = jobque.new{workers = 2}
      q:submit(function() end):wait()
      q:wait_all()
      q:close()
      p.profile_stop()
      local saved = S.save(p)
      -- (a worker that ran nothing recorded nothing and has no lane)
      local order, want = {}, {}
      for _, info in ipairs(saved.jobqueProfile.laneInfo) do order[#order + 1] = info.name .. "=" .. info.role end
      for _, name in ipairs{"worker 0", "worker 1"} do
        for _, info in ipairs(saved.jobqueProfile.laneInfo) do
          if info.name == name then want[#want + 1] = name .. "=worker" end
        end
      end
      want[#want + 1] = "caller=caller"
      assert.is_true(#want >= 2)
      assert.same(want, order, "queue number " .. seq)
    end
    test.set_next_queue_seq(1)
  end)

  it("compare gives no idle or parallelism to a group or lane a trace does not have", function()
    local a = chrome(BUSY)
    local b = chrome({lane(1, "worker 0"), slice(1, 0, 100, "a")})
    local code, out, err = run(("compare '%s' '%s' --json"):format(a, b))
    assert.equal(0, code, err)
    local rows = {}
    for _, r in ipairs(cjson.decode(out)) do rows[r.label] = r end
    for _, label in ipairs{"caller & other lanes: idle", "caller & other lanes: parallelism", "lane caller: idle",
                           "lane worker 1: idle"} do
      assert.is_nil(rows[label].b, label)
      assert.is_nil(rows[label].diff, label)
    end
    assert.equal(0.95, rows["caller & other lanes: idle"].a)
    assert.same({5, 0}, {rows["caller & other lanes: busy"].a, rows["caller & other lanes: busy"].b})
    local _, text = run(("compare '%s' '%s'"):format(a, b))
    assert.matches("\ncaller & other lanes: idle +95%.0%% +%- +%- +%-\n", text)
    assert.matches("\nlane caller: idle +95%.0%% +%- +%- +%-\n", text)
    local _, back = run(("compare '%s' '%s'"):format(b, a))
    assert.matches("\ncaller & other lanes: idle +%- +95%.0%% +%- +%-\n", back)
  end)

  it("says so when no lane is a worker", function()
    local path = chrome({lane(1, "main"), slice(1, 0, 10, "a")})
    local code, out = run("report '" .. path .. "'")
    assert.equal(0, code)
    assert.matches("\nworkers +%- +%- +%- +%- +no lanes\n", out)
    assert.matches('\n(no lane is a worker: a queue\'s workers are named "worker N" or "<queue name> N")\n', out, 1, true)
    assert.matches("\ncaller & other lanes +10 us", out)
  end)

  it("compare shows the groups, a row per lane, and each marker kind's max", function()
    local a = chrome(BUSY)
    local b = chrome({lane(1, "worker 0"), lane(3, "caller"), slice(1, 0, 100, "a"), slice(3, 0, 5, "s", "submit"),
                      marker(0, "frame", 1), marker(80, "frame", 2)})
    local code, out = run(("compare '%s' '%s' --json"):format(a, b))
    assert.equal(0, code)
    local rows = {}
    for _, r in ipairs(cjson.decode(out)) do rows[r.label] = r end
    assert.same({2, 1}, {rows["workers: lanes"].a, rows["workers: lanes"].b})
    assert.same({2, 1}, {rows["workers: parallelism"].a, rows["workers: parallelism"].b})
    assert.same({0, 0}, {rows["workers: idle"].a, rows["workers: idle"].b})
    assert.same({5, 5}, {rows["caller & other lanes: busy"].a, rows["caller & other lanes: busy"].b})
    assert.same({205, 105}, {rows["all lanes: busy"].a, rows["all lanes: busy"].b})
    assert.same({100, 0}, {rows["lane worker 1: busy"].a, rows["lane worker 1: busy"].b})
    assert.same({0, 80}, {rows["frame max"].a, rows["frame max"].b}) -- units 0..80 and 80..100
    local _, text = run(("compare '%s' '%s'"):format(a, b))
    for _, label in ipairs{"workers: idle", "caller & other lanes: idle", "all lanes: idle", "lane worker 0: busy",
                           "lane caller: idle", "frame max"} do
      assert.matches("\n" .. label .. " ", text, 1, true)
    end
  end)
end)

describe("report --top", function()
  -- units 0..10, 10..40, 40..45, 45..100: 10, 30, 5 and 55 us
  local path
  setup(function()
    path = chrome({lane(1, "worker 0"), slice(1, 0, 100, "x"), marker(0, "frame", 11), marker(10, "frame", 12),
                   marker(40, "frame", 13), marker(45, "frame", 14)})
  end)

  it("lists the N slowest units of each kind, slowest first", function()
    local code, out, err = run("report '" .. path .. "' --top 2")
    assert.equal(0, code, err)
    assert.matches("the 2 slowest units:", out, 1, true)
    local rows = {}
    for line in out:gmatch("\n( +%d+ +%d+ +[%d.]+ +[%d.]+ us +[^\n]*)") do rows[#rows + 1] = line end
    assert.equal(2, #rows, out)
    assert.matches("^ +4 +14 +45%.000 +55 us +job 55 us$", rows[1])
    assert.matches("^ +2 +12 +10%.000 +30 us +job 30 us$", rows[2])
    assert.matches("... 2 more units", out, 1, true)
    local _, jout = run("report '" .. path .. "' --top 3 --json")
    assert.same({4, 2, 1}, cjson.decode(jout).markers[1].slowest)
  end)

  it("keeps the N slowest when shorter units come after them", function()
    -- units 0..55, 55..85, 85..95, 95..100: 55, 30, 10 and 5 us, slowest first
    local model = assert(trace.load(chrome({lane(1, "worker 0"), slice(1, 0, 100, "x"), marker(0, "frame", 1),
                                            marker(55, "frame", 2), marker(85, "frame", 3), marker(95, "frame", 4)})))
    assert.same({1, 2}, stats.compute(model, nil, nil, 2).markers[1].slowest)
  end)

  it("gives a kind with one unit its busy time by category", function()
    -- one frame at 10: its unit runs 10..100, all of it under the 0..100 slice of category "job"
    local model = assert(trace.load(chrome({lane(1, "worker 0"), slice(1, 0, 100, "x"), marker(10, "frame", 1)})))
    local f = stats.compute(model)
    local u = f.markers[1].units[1]
    assert.same({1, 10, 100, 90}, {#f.markers[1].units, u.from, u.to, u.busy})
    assert.same({"job", 90}, {u.by_category[1].name, u.by_category[1].busy})
  end)

  it("shows the slowest units by default, not the first in time", function()
    local events = {lane(1, "worker 0"), slice(1, 0, 10000, "x")}
    for i = 1, 30 do events[#events + 1] = marker(i == 30 and 9000 or (i - 1) * 10, "frame", i) end
    local code, out = run("report '" .. chrome(events) .. "'")
    assert.equal(0, code)
    -- unit 29 runs 280..9000, unit 30 9000..10000; the others 10 us each
    local first = out:match("the 10 slowest units:\n[^\n]*\n([^\n]*)")
    assert.matches("^ +29 +29 +280%.000 +8%.72 ms", first)
    assert.matches("\n +30 +30 +9000%.000 +1 ms", out)
    assert.matches("... 20 more units", out, 1, true)
  end)

  it("takes --from/--to as time since the start, landing on the file's own times", function()
    -- 39720.489 + 107005.830 is one rounding error above 146726.319 in doubles
    local file = chrome({lane(1, "worker 0"), slice(1, "39720.489", "200000", "x"), marker("146726.319", "frame", 1),
                         marker("146800", "frame", 2)})
    local code, out, err = run("report '" .. file .. "' --from 0 --to 107005.830 --json")
    assert.equal(0, code, err)
    local got = cjson.decode(out)
    assert.equal(0, got.markers[1].count) -- the marker at the range's end is not in it
    assert.equal(39720.489, got.range.t0)
    code, out = run("report '" .. file .. "' --from 107005.830 --to 107010 --json")
    assert.equal(0, code)
    assert.equal(1, cjson.decode(out).markers[1].count) -- and one at its start is
  end)

  it("exits 2 on a --top that is not a count", function()
    for _, bad in ipairs{"-1", "two", "1.5"} do
      local code, out, err = run("report '" .. path .. "' --top=" .. bad)
      assert.equal(2, code, bad)
      assert.equal("", out)
      assert.matches("--top needs a whole number of units from 0 to 1000000, not '" .. bad .. "'", err, 1, true)
    end
  end)

  it("takes a negative value after a space as the option's value, not as an unknown option", function()
    local code, out, err = run("report '" .. path .. "' --top -1")
    assert.equal(2, code)
    assert.equal("", out)
    assert.matches("--top needs a whole number of units from 0 to 1000000, not '-1'", err, 1, true)
    code, out, err = run("report '" .. path .. "' --from -50 --to 20 --json")
    assert.equal(0, code, err)
    assert.equal(-50, cjson.decode(out).range.from - cjson.decode(out).range.t0)
    local ccode, _, cerr = run("compare '" .. path .. "' '" .. path .. "' --from -5e-1 --to 20")
    assert.equal(0, ccode, cerr)
  end)
end)

describe("the unit rows of 64-bit marker args", function()
  it("keep their columns, and the header counts one lane as one", function()
    local path = chrome({lane(3, "caller"), marker(0, "frame", math.maxinteger), marker(10, "frame", math.mininteger),
                         marker(30, "frame", 7), slice(3, 0, 100, "a")})
    local code, out, err = run("report '" .. path .. "'")
    assert.equal(0, code, err)
    assert.matches(", 1 lane, ", out, 1, true)
    local page = S.tmpfile("one.html")
    local hcode, hout = run(("html '%s' -o '%s'"):format(path, page))
    assert.equal(0, hcode)
    assert.matches("(1 lane, 1 slice, 3 markers)", hout, 1, true)
    local starts = {}
    for _, arg in ipairs{"arg", "9223372036854775807", "-9223372036854775808", "7"} do
      local line = assert(out:match("\n([^\n]* " .. arg:gsub("%-", "%%-") .. "  [^\n]*)"), arg)
      -- where the start column ends: "(us)" in the header, a start's last decimal in a row
      local _, e = line:find(arg == "arg" and "%(us%)" or " %d+%.%d%d%d ")
      starts[#starts + 1] = utf8.len(line:sub(1, arg == "arg" and e or e - 1))
    end
    assert.same({starts[1], starts[1], starts[1], starts[1]}, starts)
  end)
end)

describe("long and multi-line names in the report", function()
  local LONG = ("category with a very long name "):rep(4) .. "\nand a second line"
  local KIND = "frame\r\nkind " .. ("x"):rep(60)
  local LANE = "lane\none " .. ("y"):rep(60)

  it("are cut in the middle with an ellipsis at the documented width, line breaks as ⏎, whole in --json", function()
    local path = chrome({lane(1, LANE), slice(1, 0, 100, "a", LONG), marker(0, KIND, 1)})
    local code, out = run("report '" .. path .. "'")
    assert.equal(0, code)
    local width = require("jobque_profile.report").NAME_WIDTH
    assert.equal(40, width) -- as the README says
    -- the first 26 characters, an ellipsis, the last 13
    local cut_cat = "category with a very long …a second line"
    assert.equal(40, utf8.len(cut_cat))
    assert.equal(1, #lines_of(out, cut_cat), out)
    assert.equal(1, #lines_of(out, "lane⏎one " .. ("y"):rep(17) .. "…" .. ("y"):rep(13)), out)
    assert.matches('marker "frame⏎kind ' .. ("x"):rep(15) .. "…" .. ("x"):rep(13) .. '": 1 unit', out, 1, true)
    assert.is_nil(out:find("[%z\1-\9\11-\31\127]"))
    for line in out:gmatch("[^\n]+") do
      assert.is_true(utf8.len(line) <= 120, line)
    end
    local _, jout = run("report '" .. path .. "' --json")
    local got = cjson.decode(jout)
    assert.equal(LONG, got.categories[1].name)
    assert.equal(LANE, got.lanes[1].name)
    assert.equal(KIND, got.markers[1].kind)
  end)

  it("pad by the columns a terminal gives them: wide characters 2, combining marks 0", function()
    local report = require "jobque_profile.report"
    local sp = function(n) return (" "):rep(n) end
    -- three categories: "日本語の仕事" 12 columns (18 bytes), "ééé" with
    -- combining accents 3 columns (9 bytes), "😀 job" 6 columns (8 bytes)
    local WIDE, MARKS, EMOJI = "日本語の仕事", "e\u{301}e\u{301}e\u{301}", "😀 job"
    -- copies: the category column is 12 wide (the widest), then "  %7s  %10s  %10s"
    assert.same({
      "copy time by category (values copied between states; counted as busy)",
      "category" .. sp(7) .. "copies" .. sp(8) .. "time" .. sp(7) .. "bytes",
      WIDE .. sp(8) .. "2" .. sp(7) .. "21 us" .. sp(7) .. "174 B",
      MARKS .. sp(9 + 8) .. "3" .. sp(7) .. "13 us" .. sp(7) .. "174 B",
      EMOJI .. sp(6 + 8) .. "1" .. sp(8) .. "5 us" .. sp(8) .. "10 B",
    }, report.copies_lines({copies = {{name = WIDE, count = 2, time = 21, bytes = 174},
                                      {name = MARKS, count = 3, time = 13, bytes = 174},
                                      {name = EMOJI, count = 1, time = 5, bytes = 10}}}))
    -- latencies: the category column 12 wide, then "  ready" and 4 spaces, the count in 7, times in 10
    local none = {count = 0, p50_us = 0, p95_us = 0, max_us = 0, by_category = {}}
    local by = {{name = WIDE, count = 1, p50_us = 10, p95_us = 10, max_us = 10},
                {name = MARKS, count = 1, p50_us = 10, p95_us = 10, max_us = 10}}
    local all = {count = 2, p50_us = 10, p95_us = 10, max_us = 10, by_category = by}
    local lines = report.latency_lines({latency = {ready = all, resume = none, run = all, suspended = none,
                                                   top_ready = {}}, range = {}})
    local ready = "  ready" .. sp(4 + 2 + 6) .. "%d" .. (sp(7) .. "10 us"):rep(3)
    local runs = "  run" .. sp(6 + 2 + 6) .. "%d" .. (sp(7) .. "10 us"):rep(3)
    assert.same({ -- (by name: "e" before "日")
      MARKS .. sp(9) .. ready:format(1), MARKS .. sp(9) .. runs:format(1),
      WIDE .. ready:format(1), WIDE .. runs:format(1),
      "all jobs" .. sp(4) .. ready:format(2), "all jobs" .. sp(4) .. runs:format(2),
    }, {table.unpack(lines, 3)})
    -- the critical path's make-up: its labels ("  " and the category) padded to 24
    local path = {duration_us = 100, share = 0.5, jobs = {1}, steps = {},
                  by_kind = {{kind = "run", us = 60}},
                  by_category = {{name = WIDE, run_us = 40}, {name = MARKS, run_us = 20}}}
    assert.same({
      "  run" .. sp(21 + 2 + 5) .. "60 us" .. sp(4) .. "60.0%",
      "    " .. WIDE .. sp(10 + 2 + 5) .. "40 us" .. sp(4) .. "40.0%",
      "    " .. MARKS .. sp(19 + 2 + 5) .. "20 us" .. sp(4) .. "20.0%",
    }, {table.unpack(report.critical_path_lines({critical_path = path}), 3, 5)})
    -- failures: the category column 12 wide, then "  %7s  %9s"
    assert.same({
      "failed jobs 0, cancelled jobs 1",
      "category" .. sp(4 + 2 + 1) .. "failed" .. sp(2) .. "cancelled",
      WIDE .. sp(2 + 6) .. "0" .. sp(2 + 8) .. "1",
    }, report.failures_lines({range = {t0 = 0}, failures = {failed = 0, cancelled = 1, first = {},
                                          by_category = {{name = WIDE, failed = 0, cancelled = 1}}}}))
  end)

  it("escape bytes that are not UTF-8, and keep those that are", function()
    local shown = require("jobque_profile.report").shown
    assert.equal("caf\u{E9}\\xFF\\x1B[0m tab\\t", shown("caf\u{E9}\255\27[0m tab\t"))
    assert.equal("a⏎b⏎c", shown("a\r\nb\rc"))
    assert.equal(("é"):rep(26) .. "…" .. ("ü"):rep(13), shown(("é"):rep(28) .. ("ü"):rep(13)))
    assert.equal(("é"):rep(40), shown(("é"):rep(40)))
    assert.equal("ab…", shown("abcdef", 3))
    assert.equal("ab…h", shown("abcdefgh", 4))
    -- two names that differ at their end stay apart
    assert.are_not.equal(shown(("x"):rep(50) .. " 0"), shown(("x"):rep(50) .. " 1"))
  end)
end)
