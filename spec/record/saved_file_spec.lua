-- The saved file: Perfetto-compatible JSON that carries its own legend.
local p = require "jobque_profile"
local S = require "support"
local cjson = require "cjson"
local jobque = require "jobque"

local function one_session(name, arg)
  p.profile_start(64)
  p.profile_marker(name, arg or 0)
  p.profile_stop()
end

describe("the saved file", function()
  it("is an object whose first key is traceEvents, with jobqueProfile beside it", function()
    one_session("file shape")
    local t, text = S.save(p)
    assert.are.equal('{"traceEvents":[', text:sub(1, 16))
    assert.is_table(t.traceEvents)
    assert.is_table(t.jobqueProfile)
    assert.are.equal(1, t.jobqueProfile.version)
  end)

  it("names the process and each lane, and sorts the lanes", function()
    one_session("file meta")
    local t = S.save(p)
    local process = S.events(t, function(ev) return ev.ph == "M" and ev.name == "process_name" end)
    assert.are.equal(1, #process)
    assert.are.equal("jobque_profile", process[1].args.name)
    local names = S.lane_names(t)
    local sorts = S.events(t, function(ev) return ev.ph == "M" and ev.name == "thread_sort_index" end)
    assert.are.equal(1, t.jobqueProfile.lanes)
    assert.are.equal(1, #sorts)
    assert.are.equal("caller", names[sorts[1].tid])
    assert.are.equal(sorts[1].tid - 1, sorts[1].args.sort_index)
  end)

  it("uses non-zero pid and tid on every event, as Perfetto needs", function()
    one_session("file ids")
    local t = S.save(p)
    for _, ev in ipairs(t.traceEvents) do
      assert.is_true(ev.pid > 0)
      if ev.ph ~= "M" or ev.name ~= "process_name" then assert.is_true(ev.tid > 0) end
    end
  end)

  it("writes timestamps as microseconds in 2048ths, exactly: 3 to 11 decimals", function()
    local _, text = S.record_n(p, "file ts", 64, 20)
    local n = 0
    for ts in text:gmatch('"ts":([^,}]+)') do
      assert.matches("^%d+%.%d%d%d%d?%d?%d?%d?%d?%d?%d?%d?$", ts)
      local x = tonumber(ts) * 2048
      assert.are.equal(math.floor(x), x, ts)
      if #ts:match("%.(%d*)") > 3 then assert.matches("[1-9]$", ts) end -- no trailing zero past three
      n = n + 1
    end
    assert.are.equal(20, n)
  end)

  it("measures time in real microseconds", function()
    -- The system's clock, read by another process, brackets a 50 ms sleep;
    -- the markers bracket the readings.
    local function wall_ns()
      local h = assert(io.popen("date +%s%N"))
      local ns = math.tointeger(tonumber(h:read("l")))
      h:close()
      return assert(ns, "date gave no time")
    end
    local m = p.profile_marker_id("file clock")
    p.profile_start(64)
    p.profile_marker(m, 0)
    local w0 = wall_ns()
    assert(os.execute("sleep 0.05"))
    local w1 = wall_ns()
    p.profile_marker(m, 1)
    p.profile_stop()
    local marks = S.markers(S.save(p), "file clock")
    assert.are.equal(2, #marks)
    local us, wall_us = marks[2].ts - marks[1].ts, (w1 - w0) / 1000
    assert.is_true(wall_us >= 50000, "the sleep took " .. wall_us .. " us")
    assert.is_true(us >= wall_us * 0.99 and us < wall_us + 1000000,
      ("measured %.3f us over %.3f us of the system's clock"):format(us, wall_us))
  end)

  it("names every job's slices by category, marks failures, and tells a wait from a wait all", function()
    local named = p.profile_category("file named")
    local ids = {}
    p.profile_start(1000)
    jobque.with_job_que({workers = 1}, function(q)
      local plain = q:submit(function() return 1 end)
      p.profile_tag(named)
      local bad = q:submit(function() error("file boom", 0) end)
      p.profile_tag(7777) -- never registered
      local tagged = q:submit(function() return 3 end)
      p.profile_tag(0)
      ids = {plain = plain:id(), bad = bad:id(), tagged = tagged:id()}
      plain:wait()
      bad:pwait()
      tagged:wait()
      q:wait_all()
    end)
    p.profile_stop()
    local t = S.save(p)
    local lanes = S.lane_names(t)
    local function slice(job)
      local found = S.events(t, function(ev) return ev.ph == "X" and ev.cat == "job" and ev.args.job == job end)
      assert.are.equal(1, #found, "slices of job " .. job)
      return found[1]
    end
    local a, b, c = slice(ids.plain), slice(ids.bad), slice(ids.tagged)
    assert.are.equal("job", a.name)
    assert.are.same({job = ids.plain}, a.args)
    assert.are.equal("file named", b.name)
    assert.are.same({job = ids.bad, failed = true, error = "file boom"}, b.args)
    assert.are.equal("tag 7777", c.name)
    assert.are.same({job = ids.tagged}, c.args)
    local waits = S.events(t, function(ev) return ev.cat == "wait" and ev.name == "wait" end)
    assert.are.equal(3, #waits)
    for i, job in ipairs{ids.plain, ids.bad, ids.tagged} do
      assert.are.same({job = job}, waits[i].args)
      assert.are.equal("caller", lanes[waits[i].tid])
    end
    local all = S.events(t, function(ev) return ev.cat == "wait" and ev.name == "wait all" end)
    assert.is_true(#all >= 1, "q:wait_all() records a wait all")
    for _, ev in ipairs(all) do
      assert.is_nil(ev.args)
      assert.are.equal("caller", lanes[ev.tid])
      assert.is_true(ev.ts >= waits[3].ts)
    end
  end)

  it("counts the bytes each copy moved: none for no values, a string's bytes and a little more", function()
    p.profile_start(1000)
    local ids = {}
    jobque.with_job_que({workers = 1}, function(q)
      local none = q:submit(function() end)
      local text = q:submit(function() return ("x"):rep(1000) end)
      none:wait()
      text:wait()
      ids = {none = none:id(), text = text:id()}
    end)
    p.profile_stop()
    local t = S.save(p)
    local function bytes(name, job)
      local found = S.events(t, function(ev) return ev.cat == "copy" and ev.name == name and ev.args.job == job end)
      assert.are.equal(1, #found, name .. " of job " .. job)
      return found[1].args.bytes
    end
    assert.are.equal(0, bytes("copy out", ids.none))
    assert.are.equal(0, bytes("copy result", ids.none))
    local out = bytes("copy out", ids.text)
    assert.is_true(out > 1000 and out <= 1016, "a 1000-byte string and its length: " .. out)
    assert.are.equal(out, bytes("copy result", ids.text))
  end)

  it("says which clock it used and the process's pid", function()
    local script = S.tmpfile("clock.lua")
    S.write(script, [[
      package.path = "lua/?.lua;" .. package.path
      package.cpath = arg[2]
      local p = require "jobque_profile"
      p.profile_start(4) p.profile_marker("x", 0) p.profile_stop()
      assert(p.profile_save(arg[1]))
    ]])
    local out = S.tmpfile()
    local h = io.popen(("sh -c 'echo $$; exec env JOBQUE_PROFILE_CLOCK=monotonic %s %s %s \"$0\"' '%s'"):format(
      S.lua, script, out, package.cpath))
    local pid = math.tointeger(tonumber(h:read("l")))
    assert.is_true(h:close())
    local jp = cjson.decode(S.read(out)).jobqueProfile
    assert.are.equal("monotonic", jp.clock)
    assert.are.equal(pid, jp.pid)
    one_session("file clock here")
    local here = S.save(p)
    assert.is_true(here.jobqueProfile.clock == "tsc" or here.jobqueProfile.clock == "monotonic")
    assert.are_not.equal(pid, here.jobqueProfile.pid)
  end)

  it("lists categories, markers and lanes in jobqueProfile", function()
    local c = p.profile_category("file cat", p.PROFILE_COLOR_MAGENTA)
    local m = p.profile_marker_id("file marker")
    p.profile_start(4)
    for i = 1, 6 do p.profile_marker(m, i) end
    p.profile_stop()
    local t = S.save(p)
    local jp = t.jobqueProfile
    local cat, mk
    for _, x in ipairs(jp.categories) do if x.id == c then cat = x end end
    for _, x in ipairs(jp.markers) do if x.id == m then mk = x end end
    assert.are.same({id = c, name = "file cat", color = "#D678B4"}, cat)
    assert.are.same({id = m, name = "file marker"}, mk)
    assert.are.equal(1, jp.lanes) -- the lane count, as in the seed's format (version 1)
    assert.are.equal(1, #jp.laneInfo)
    assert.are.equal("caller", jp.laneInfo[1].name)
    assert.are.equal(4, jp.laneInfo[1].recorded)
    assert.are.equal(2, jp.laneInfo[1].dropped)
    assert.are.equal(0, jp.lostEvents)
  end)

  it("keeps jobqueProfile.lanes the lane count and the per-lane details in laneInfo", function()
    p.profile_start(16)
    p.profile_marker("file lanes", 1)
    -- One worker: it surely runs the job (a second one might record nothing, and have no lane).
    jobque.with_job_que({workers = 1}, function(q) q:submit(function() return 1 end):wait() end)
    p.profile_stop()
    local t, text = S.save(p)
    local jp = t.jobqueProfile
    assert.are.equal("number", type(jp.lanes))
    assert.are.equal(#jp.laneInfo, jp.lanes)
    assert.are.equal(2, jp.lanes) -- the worker and the caller
    assert.matches('"lanes":2,', text, 1, true)
    assert.are.equal(2, #jp.laneInfo)
    local names = {"worker 0", "caller"}
    for i, lane in ipairs(jp.laneInfo) do
      assert.are.equal(i, lane.tid)
      assert.are.equal(names[i], lane.name)
      assert.is_true(lane.recorded > 0, lane.name .. " recorded its events")
      assert.are.equal(0, lane.dropped)
    end
  end)

  it("stays valid JSON whatever the names hold", function()
    local names = {
      'quote " and backslash \\ and slash /',
      "control \0\1\b\t\n\r\31 and DEL \127",
      "raw UTF-8: ü € 𝄞 😀",
    }
    local broken = {
      ["lone \255 byte"] = "lone \u{FFFD} byte",
      ["surrogate \237\160\128 half"] = "surrogate \u{FFFD}\u{FFFD}\u{FFFD} half",
      ["overlong \192\175"] = "overlong \u{FFFD}\u{FFFD}",
      ["cut \226\130"] = "cut \u{FFFD}\u{FFFD}",
    }
    p.profile_start(64)
    for _, n in ipairs(names) do p.profile_marker(n, 1) end
    for n in pairs(broken) do p.profile_marker(n, 1) p.profile_category(n) end
    p.profile_category('cat "quoted"\n')
    p.profile_stop()
    local t, text = S.save(p)
    for _, n in ipairs(names) do assert.are.equal(1, #S.markers(t, n), n) end
    for _, want in pairs(broken) do assert.are.equal(1, #S.markers(t, want), want) end
    assert.is_nil(text:find("\\u[dD][89abAB]"), "no surrogate escapes")
    assert.is_nil(text:find("[%z\1-\9\11-\31\127]"), "no raw control bytes")
    assert.is_nil(text:find("\255", 1, true))
    local found = false
    for _, c in ipairs(t.jobqueProfile.categories) do
      if c.name == 'cat "quoted"\n' then found = true end
    end
    assert.is_true(found)
  end)

  it("appears at its path only when complete, leaving no temporary file behind", function()
    one_session("file atomic")
    local dir = S.tmpfile("atomic-dir")
    assert(os.execute("mkdir -p '" .. dir .. "/target.json'")) -- a directory: rename fails
    local ok, err = p.profile_save(dir .. "/target.json")
    assert.is_false(ok)
    assert.matches("cannot write trace to", err, 1, true)
    local listing = io.popen("ls -A '" .. dir .. "'"):read("a")
    assert.are.equal("target.json\n", listing)
  end)

  it("leaves an older file intact when the write fails part-way", function()
    -- A child process with a 64 KiB file-size limit saves a trace larger than
    -- that over an existing file: write(2) fails with EFBIG mid-file.
    local target = S.tmpfile("old.json")
    S.write(target, "old contents")
    local script = S.tmpfile("big.lua")
    S.write(script, [[
      package.path = "lua/?.lua;" .. package.path
      package.cpath = os.getenv("JQ_BUILD_CPATH")
      local p = require "jobque_profile"
      local m = p.profile_marker_id("big")
      p.profile_start(100000)
      for i = 1, 100000 do p.profile_marker(m, i) end
      p.profile_stop()
      local ok, err = p.profile_save(arg[1])
      io.write(tostring(ok), "|", tostring(err))
    ]])
    local cmd = string.format("trap '' XFSZ; ulimit -f 64; JQ_BUILD_CPATH='%s' %s %s %s",
      package.cpath, S.lua, script, target)
    local out = io.popen("sh -c \"" .. cmd .. "\""):read("a")
    assert.matches("^false|cannot write trace to '.*old.json': File too large", out)
    assert.are.equal("old contents", S.read(target))
    local listing = io.popen("ls -A '" .. S.tmpdir .. "' | grep -c tmp- ; true"):read("a")
    assert.are.equal("0\n", listing)
  end)

  it("decodes with a strict JSON parser", function()
    one_session("file strict", -42)
    local _, text = S.save(p)
    local t = cjson.decode(text)
    assert.are.equal(-42, S.markers(t, "file strict")[1].args.arg)
  end)
end)

-- How the writer prints times, pair by pair of slices chosen in integer
-- nanoseconds. Readers of the file (Chrome DevTools, speedscope, Perfetto,
-- lua-cjson) read each number as the double nearest its decimal, as Lua's
-- tonumber does, and add and subtract them in doubles, as Lua does.
describe("the saved file's times, read as doubles", function()
  local T = require("jobque.core")._test
  -- The ts and dur the writer prints for a slice from a to z, as doubles.
  local function slice(a, z)
    local ts, dur = T.span_text(a, z)
    return assert(tonumber(ts)), assert(tonumber(dur))
  end
  -- Times printed as exact decimals (three of them), for the premise.
  local function decimal(ns) return tonumber(("%d.%03d"):format(ns // 1000, ns % 1000)) end
  -- Perfetto reads a time as llround(x * 1000) nanoseconds.
  local function perfetto_ns(x) return math.floor(x * 1000 + 0.5) end

  -- Slices a..a+d and a+d..a+d+e touch; m is where their lane's first slice
  -- starts (speedscope shifts a lane's times by it); a parent slice from
  -- a - 1 ends where the first one does. Returns the problems found, as text.
  local function check(a, d, e, m, ts)
    local bad = {}
    local ts1, dur1 = ts(a, a + d)
    local ts2, dur2 = ts(a + d, a + d + e)
    local ts0, dur0 = ts(a - 1, a + d)
    local tsm = ts(m, m + 1)
    if ts1 + dur1 > ts2 then bad[#bad + 1] = "ends after the next starts" end
    if (ts1 - tsm) + dur1 > ts2 - tsm then bad[#bad + 1] = "ends after the next starts, shifted" end
    if ts1 + dur1 > ts0 + dur0 then bad[#bad + 1] = "ends after its parent" end
    if (ts1 - tsm) + dur1 > (ts0 - tsm) + dur0 then bad[#bad + 1] = "ends after its parent, shifted" end
    if ts1 < ts0 or ts2 < ts1 then bad[#bad + 1] = "starts out of order" end
    for _, x in ipairs({{ts1, a}, {dur1, d}, {ts2, a + d}, {dur2, e}, {ts0, a - 1}, {dur0, d + 1}}) do
      if perfetto_ns(x[1]) ~= x[2] then bad[#bad + 1] = ("%.17g us is not %d ns to Perfetto"):format(x[1], x[2]) end
    end
    return bad
  end

  it("keep the issue's pair apart: a copy in ends where its job's slice starts", function()
    assert.is_true(decimal(1019705) + decimal(5078) > decimal(1024783)) -- the premise
    local ts1, dur1 = slice(1019705, 1024783)
    local ts2 = slice(1024783, 1030000)
    assert.is_true(ts1 + dur1 <= ts2, ("%.17g + %.17g > %.17g"):format(ts1, dur1, ts2))
  end)

  it("keep touching slices apart and nested ones nested, shifted or not, and stay exact to the ns", function()
    -- From zero to three weeks into a session, touching slices of several
    -- lengths; the same checks on times printed as exact decimals must find
    -- failures, else the scan does not cover the defect.
    local exact_decimal = function(a, z) return decimal(a), decimal(z - a) end
    local failures, decimal_failures, n = {}, 0, 0
    for _, base in ipairs({1, 1000, 1000000, 1000000000, 3600 * 10^9, 86400 * 10^9, 21 * 86400 * 10^9}) do
      for k = 0, 149 do
        for _, d in ipairs({1, 7, 999, 5078, 123457, 98765431}) do
          local a = math.tointeger(base + 13 + k * 7919)
          local m = math.tointeger(base)
          local bad = check(a, d, 3 + k, m, slice)
          if #bad > 0 and #failures < 5 then
            failures[#failures + 1] = ("a=%d d=%d e=%d m=%d: %s"):format(a, d, 3 + k, m, table.concat(bad, ", "))
          end
          if #check(a, d, 3 + k, m, exact_decimal) > 0 then decimal_failures = decimal_failures + 1 end
          n = n + 1
        end
      end
    end
    assert.is_true(decimal_failures > 0, "the scan finds no pair that exact decimals get wrong")
    assert.are.same({}, failures, ("of %d pairs"):format(n))
  end)
end)

describe("where the session sits in time and place", function()
  local core = require "jobque.core"

  local function uptime_s()
    local f = assert(io.open("/proc/uptime"))
    local s = f:read("n")
    f:close()
    return s
  end

  local function first_line(cmd)
    local h = assert(io.popen(cmd))
    local s = h:read("l")
    h:close()
    return s
  end

  it("records the clocks read at its start, the host and the boot id", function()
    local real0, mono0, up0 = os.time(), core.monotonic_ns(), uptime_s()
    p.profile_start(1024)
    local real1, mono1, up1 = os.time(), core.monotonic_ns(), uptime_s()
    p.profile_marker(p.profile_marker_id("here"), 1)
    p.profile_stop()
    local trace, text = S.save(p)
    local meta = trace.jobqueProfile
    -- exact integers, read from the text (cjson reads numbers as doubles)
    local c = {}
    for _, k in ipairs{"realtimeNs", "boottimeNs", "monotonicNs"} do
      c[k] = math.tointeger(text:match('"clocks":{[^}]*"' .. k .. '":(%d+)'))
      assert.is_not_nil(c[k], k)
    end
    assert.is_true(c.monotonicNs >= mono0 and c.monotonicNs <= mono1)
    assert.is_true(c.realtimeNs // 1000000000 >= real0 and c.realtimeNs // 1000000000 <= real1)
    -- /proc/uptime is CLOCK_BOOTTIME in hundredths of a second
    assert.is_true(c.boottimeNs >= (up0 - 0.01) * 1e9 and c.boottimeNs <= (up1 + 0.01) * 1e9)
    assert.are.equal(first_line("hostname"), meta.host)
    local f = assert(io.open("/proc/sys/kernel/random/boot_id"))
    assert.are.equal(f:read("l"), meta.bootId)
    f:close()
  end)

  it("gives each lane the OS thread id that recorded it", function()
    local q = jobque.new{workers = 2, name = "tids"}
    p.profile_start(1024)
    q:submit(function() return 1 end):wait()
    q:submit(function() return 2 end):wait()
    p.profile_stop()
    local meta = S.save(p).jobqueProfile
    local live = {} -- the process's threads now: the queue's are still running
    local h = assert(io.popen("ls /proc/" .. math.tointeger(meta.pid) .. "/task"))
    for tid in h:lines() do live[tonumber(tid)] = true end
    h:close()
    local seen = {}
    for _, l in ipairs(meta.laneInfo) do
      if l.role == "caller" then
        assert.are.equal(meta.pid, l.osTid) -- busted runs on the main thread: tid = pid
      else
        assert.is_true(live[l.osTid], l.name)
        assert.are_not.equal(meta.pid, l.osTid)
      end
      assert.is_nil(seen[l.osTid])
      seen[l.osTid] = true
    end
    q:close()
  end)
end)
