-- The seed page's API, statement by statement.
local p = require "jobque_profile"
local S = require "support"

describe("jobque_profile constants", function()
  it("has the seed page's eight colours with their exact values", function()
    assert.are.equal(0x5e96de, p.PROFILE_COLOR_BLUE)
    assert.are.equal(0x43b08a, p.PROFILE_COLOR_GREEN)
    assert.are.equal(0xac82e4, p.PROFILE_COLOR_PURPLE)
    assert.are.equal(0xc39536, p.PROFILE_COLOR_AMBER)
    assert.are.equal(0xe08563, p.PROFILE_COLOR_CORAL)
    assert.are.equal(0x4fc3d0, p.PROFILE_COLOR_TEAL)
    assert.are.equal(0xd678b4, p.PROFILE_COLOR_MAGENTA)
    assert.are.equal(0x8385e8, p.PROFILE_COLOR_INDIGO)
  end)

  it("has a twelve-colour palette that starts with the eight constants", function()
    assert.are.equal(12, #p.PROFILE_PALETTE)
    assert.are.equal(p.PROFILE_COLOR_BLUE, p.PROFILE_PALETTE[1])
    assert.are.equal(p.PROFILE_COLOR_INDIGO, p.PROFILE_PALETTE[8])
    local seen = {}
    for _, c in ipairs(p.PROFILE_PALETTE) do
      assert.is_nil(seen[c])
      seen[c] = true
    end
  end)

  it("leaks no globals", function()
    local before = {}
    for k in pairs(_G) do before[k] = true end
    package.loaded.jobque_profile = nil
    require "jobque_profile"
    for k in pairs(_G) do assert.is_true(before[k], "new global " .. tostring(k)) end
  end)
end)

describe("trace sessions", function()
  after_each(function() p.profile_stop() end)

  it("saves true after a session that recorded", function()
    local m = p.profile_marker_id("api-basic")
    p.profile_start(16)
    p.profile_marker(m, 1)
    p.profile_stop()
    local ok, err = p.profile_save(S.tmpfile())
    assert.is_true(ok)
    assert.is_nil(err)
  end)

  it("saves false while tracing is still on", function()
    p.profile_start(16)
    p.profile_marker("api-on", 1)
    local path = S.tmpfile()
    local ok, err = p.profile_save(path)
    assert.is_false(ok)
    assert.matches("tracing is still on", err, 1, true)
    assert.is_nil(io.open(path))
  end)

  it("saves false when nothing was recorded", function()
    p.profile_start(16)
    p.profile_stop()
    local ok, err = p.profile_save(S.tmpfile())
    assert.is_false(ok)
    assert.matches("nothing was recorded", err, 1, true)
  end)

  it("saves false with the system's reason when the file cannot be written", function()
    p.profile_start(16)
    p.profile_marker("api-io", 1)
    p.profile_stop()
    local ok, err, code = p.profile_save(S.tmpdir .. "/no/such/dir/trace.json")
    assert.is_false(ok)
    assert.matches("cannot write trace to '.*/no/such/dir/trace.json': No such file or directory", err)
    assert.are.equal(2, code) -- ENOENT
  end)

  it("arms 65536 events per lane by default", function()
    p.profile_start()
    p.profile_marker("api-default", 0)
    p.profile_stop()
    local t = S.save(p)
    assert.are.equal(65536, t.jobqueProfile.eventsPerLane)
  end)

  it("stops recording a full lane and counts what it dropped", function()
    local t = S.record_n(p, "api-full", 10, 25)
    local marks = S.markers(t, "api-full")
    assert.are.equal(10, #marks)
    for i, ev in ipairs(marks) do assert.are.equal(i, ev.args.arg) end -- the first ten, kept
    local lane = t.jobqueProfile.laneInfo[1]
    assert.are.equal(10, lane.recorded)
    assert.are.equal(15, lane.dropped)
  end)

  it("marks the moment a lane filled with an event on that lane", function()
    local t = S.record_n(p, "api-fill", 3, 5)
    local fill = S.events(t, function(ev) return ev.ph == "i" and ev.s == "t" end)
    assert.are.equal(1, #fill)
    assert.are.equal(2, fill[1].args.dropped)
    local marks = S.markers(t, "api-fill")
    assert.is_true(fill[1].ts >= marks[3].ts)
    assert.are.equal(marks[3].tid, fill[1].tid)
    assert.are.equal(fill[1].ts, t.jobqueProfile.laneInfo[1].fullAtUs)
  end)

  it("records nothing after profile_stop", function()
    local m = p.profile_marker_id("api-after-stop")
    p.profile_start(16)
    p.profile_marker(m, 1)
    p.profile_stop()
    p.profile_marker(m, 2)
    local t = S.save(p)
    local marks = S.markers(t, "api-after-stop")
    assert.are.equal(1, #marks)
    assert.are.equal(1, marks[1].args.arg)
  end)

  it("ends the session where profile_stop was called, before the clock's calibration", function()
    -- The calibration (a TSC's 20 ms baseline) is held 200 ms here: a stop
    -- stamped after it would lie 200 ms past the call, one stamped before it
    -- a few microseconds; the bound is halfway. The hold itself is checked.
    local T = require("jobque.core")._test
    local core = require "jobque.core"
    local hold_us = 200000
    T.calibration_hold_us(hold_us)
    local s0 = core.monotonic_ns()
    p.profile_start(16)
    p.profile_marker("api-stop-call", 1)
    local s1 = core.monotonic_ns()
    p.profile_stop()
    local s2 = core.monotonic_ns()
    T.calibration_hold_us(0)
    local t = S.save(p)
    assert.is_true(s2 - s1 >= hold_us * 1000, "the calibration was not held")
    assert.is_true(t.jobqueProfile.stopUs * 1000 < (s1 - s0) + hold_us * 1000 / 2,
      ("stop %.0f us after the start, profile_stop called %.0f us after it"):format(
        t.jobqueProfile.stopUs, (s1 - s0) / 1000))
    assert.are.equal(t.jobqueProfile.stopUs, t.jobqueProfile.durationUs)
  end)

  it("starts a fresh session when started again", function()
    local m = p.profile_marker_id("api-restart")
    p.profile_start(16)
    p.profile_marker(m, 1)
    p.profile_start(32) -- while on: the first session is discarded
    p.profile_marker(m, 2)
    p.profile_stop()
    local t = S.save(p)
    local marks = S.markers(t, "api-restart")
    assert.are.equal(1, #marks)
    assert.are.equal(2, marks[1].args.arg)
    assert.are.equal(32, t.jobqueProfile.eventsPerLane)
  end)

  it("can save one session twice", function()
    p.profile_start(16)
    p.profile_marker("api-twice", 7)
    p.profile_stop()
    local a = S.save(p)
    local b = S.save(p)
    assert.are.same(S.markers(a, "api-twice"), S.markers(b, "api-twice"))
  end)

  it("saves one session twice with the same bytes, timestamps included", function()
    -- 1000 markers over about 30 ms: a tick rate that moved between the two
    -- saves by a few parts in 10^8 would shift some of them by a nanosecond.
    local m = p.profile_marker_id("api-twice-bytes")
    p.profile_start(1000)
    local t0 = os.clock()
    for i = 1, 1000 do
      p.profile_marker(m, i)
      while os.clock() - t0 < i * 0.00003 do end -- spreads the markers out
    end
    p.profile_stop()
    local first = select(2, S.save(p))
    for i = 2, 5 do assert.are.equal(first, select(2, S.save(p)), "save " .. i) end
  end)

  it("keeps the last session, stopped or running, when a new one cannot be allocated", function()
    p.profile_start(16)
    p.profile_marker("api-kept", 5)
    p.profile_stop()
    assert.matches("out of memory", select(2, pcall(p.profile_start, 1 << 40)), 1, true)
    assert.is_false(p.profile_is_on())
    local t = S.save(p)
    assert.are.equal(1, #S.markers(t, "api-kept"))
    assert.are.equal(16, t.jobqueProfile.eventsPerLane)
    p.profile_start(24)
    p.profile_marker("api-kept running", 6)
    assert.matches("out of memory", select(2, pcall(p.profile_start, 1 << 40)), 1, true)
    assert.is_false(p.profile_is_on()) -- the failed start stopped it
    t = S.save(p)
    assert.are.equal(1, #S.markers(t, "api-kept running"))
    assert.are.equal(24, t.jobqueProfile.eventsPerLane)
  end)

  it("saves on a worker while the caller starts and stops sessions (ThreadSanitizer checks it)", function()
    local path = S.tmpfile()
    local q <close> = require("jobque").new{workers = 1}
    local job = q:submit(function(file)
      local pp = require "jobque_profile"
      for _ = 1, 5000 do
        local ok, err = pp.profile_save(file)
        if not ok and not (err:find("tracing is still on", 1, true) or err:find("nothing was recorded", 1, true)) then
          return err
        end
      end
      return "done"
    end, path)
    for _ = 1, 5000 do
      p.profile_start(16)
      p.profile_stop()
    end
    assert.are.equal("done", job:wait())
  end)

  it("reports whether tracing is on", function()
    assert.is_false(p.profile_is_on())
    p.profile_start(4)
    assert.is_true(p.profile_is_on())
    p.profile_stop()
    assert.is_false(p.profile_is_on())
  end)

  it("raises a clear error for a ring that cannot be allocated, and stays off", function()
    local err = select(2, pcall(p.profile_start, 1 << 42))
    assert.matches("profile_start: cannot allocate 4398046511104 events per lane", err, 1, true)
    assert.matches("out of memory", err, 1, true)
    assert.is_false(p.profile_is_on())
  end)
end)

describe("categories", function()
  local function category(t, id)
    for _, c in ipairs(t.jobqueProfile.categories) do
      if c.id == id then return c end
    end
  end

  local function saved()
    p.profile_start(4)
    p.profile_marker("cat-saved", 0)
    p.profile_stop()
    return (S.save(p))
  end

  it("registers a name and colour for an explicit id", function()
    p.profile_category(901, "explicit op", p.PROFILE_COLOR_TEAL)
    local c = category(saved(), 901)
    assert.are.equal("explicit op", c.name)
    assert.are.equal("#4FC3D0", c.color)
  end)

  it("returns an auto id for a name, the same id every time", function()
    local a = p.profile_category("auto op A")
    local b = p.profile_category("auto op B")
    assert.are_not.equal(a, b)
    assert.are.equal(a, p.profile_category("auto op A"))
    assert.are.equal("auto op A", category(saved(), a).name)
  end)

  it("never hands out an id that was registered explicitly", function()
    local taken = {}
    for id = 1, 40 do
      p.profile_category(id, "explicit " .. id)
      taken[id] = true
    end
    for i = 1, 10 do
      local id = p.profile_category("auto after explicit " .. i)
      assert.is_nil(taken[id])
      taken[id] = true
    end
  end)

  it("picks the palette colour by a stable hash of the name when the colour is 0 or absent", function()
    for _, name in ipairs {"heavy op", "light op", "io", "ünïcode", "x"} do
      local id = p.profile_category(name)
      local expect = p.PROFILE_PALETTE[S.fnv1a(name) % 12 + 1]
      assert.are.equal(string.format("#%06X", expect), category(saved(), id).color, name)
    end
    p.profile_category(902, "zero colour", 0)
    local expect = p.PROFILE_PALETTE[S.fnv1a("zero colour") % 12 + 1]
    assert.are.equal(string.format("#%06X", expect), category(saved(), 902).color)
  end)

  it("gives a name the same colour in another process", function()
    local script = [[
      package.path = "lua/?.lua;" .. package.path
      package.cpath = os.getenv("JQ_BUILD_CPATH")
      local p = require "jobque_profile"
      local id = p.profile_category("cross-run colour")
      p.profile_start(4) p.profile_marker("x", 0) p.profile_stop()
      p.profile_save(arg[1])
    ]]
    local file = S.tmpfile("colour.lua")
    S.write(file, script)
    local colours = {}
    for run = 1, 2 do
      local out = S.tmpfile()
      local cmd = string.format("JQ_BUILD_CPATH='%s' %s %s %s", package.cpath, S.lua, file, out)
      assert.is_true(os.execute(cmd))
      local t = require("cjson").decode(S.read(out))
      colours[run] = t.jobqueProfile.categories[1].color
    end
    assert.are.equal(colours[1], colours[2])
    local expect = p.PROFILE_PALETTE[S.fnv1a("cross-run colour") % 12 + 1]
    assert.are.equal(string.format("#%06X", expect), colours[1])
  end)

  it("updates the name and colour when an id is registered again", function()
    p.profile_category(903, "before", p.PROFILE_COLOR_BLUE)
    p.profile_category(903, "after", p.PROFILE_COLOR_CORAL)
    local c = category(saved(), 903)
    assert.are.equal("after", c.name)
    assert.are.equal("#E08563", c.color)
  end)

  it("keeps a name's colour when looked up again without one, and sets it when given", function()
    local id = p.profile_category("keep colour", p.PROFILE_COLOR_AMBER)
    assert.are.equal(id, p.profile_category("keep colour"))
    assert.are.equal("#C39536", category(saved(), id).color)
    p.profile_category("keep colour", p.PROFILE_COLOR_GREEN)
    assert.are.equal("#43B08A", category(saved(), id).color)
  end)

  it("saves categories in id order with their colour as #RRGGBB", function()
    local t = saved()
    local last = 0
    for _, c in ipairs(t.jobqueProfile.categories) do
      assert.is_true(c.id > last)
      last = c.id
      assert.matches("^#%x%x%x%x%x%x$", c.color)
    end
  end)
end)

describe("profile_tag", function()
  after_each(function() p.profile_tag(0) end)

  it("stamps the calling thread's current op tag", function()
    local heavy = p.profile_category("tag heavy")
    assert.are.equal(0, p.profile_current_tag())
    p.profile_tag(heavy)
    assert.are.equal(heavy, p.profile_current_tag())
    p.profile_tag(0)
    assert.are.equal(0, p.profile_current_tag())
  end)

  it("keeps the tag whether or not tracing is on", function()
    p.profile_tag(77)
    p.profile_start(4)
    assert.are.equal(77, p.profile_current_tag())
    p.profile_stop()
    assert.are.equal(77, p.profile_current_tag())
  end)
end)

describe("markers", function()
  after_each(function() p.profile_stop() end)

  it("registers a marker kind once per name", function()
    local a = p.profile_marker_id("mk token")
    assert.are.equal(a, p.profile_marker_id("mk token"))
    assert.are_not.equal(a, p.profile_marker_id("mk frame"))
    assert.is_true(math.type(a) == "integer" and a >= 1)
  end)

  it("stamps an instant, global-scope event named by its kind on the caller lane", function()
    local tok = p.profile_marker_id("mk instant")
    p.profile_start(64)
    p.profile_marker(tok, 3)
    p.profile_stop()
    local t = S.save(p)
    local marks = S.markers(t, "mk instant")
    assert.are.equal(1, #marks)
    assert.are.equal("g", marks[1].s)
    assert.are.equal(3, marks[1].args.arg)
    assert.are.equal("caller", S.lane_names(t)[marks[1].tid])
  end)

  it("takes a name instead of an id, registering it on first use", function()
    p.profile_start(64)
    p.profile_marker("mk by name", 9)
    p.profile_marker("mk by name")
    p.profile_stop()
    local t = S.save(p)
    local marks = S.markers(t, "mk by name")
    assert.are.equal(2, #marks)
    assert.are.equal(9, marks[1].args.arg)
    assert.are.equal(0, marks[2].args.arg) -- arg defaults to 0
    local id = p.profile_marker_id("mk by name")
    local found
    for _, m in ipairs(t.jobqueProfile.markers) do
      if m.id == id then found = m.name end
    end
    assert.are.equal("mk by name", found)
  end)

  it("round-trips any Lua integer as args.arg", function()
    local m = p.profile_marker_id("mk int")
    local values = {0, 1, -1, 2^53 + 1, math.maxinteger, math.mininteger, 123456789012}
    p.profile_start(64)
    for _, v in ipairs(values) do p.profile_marker(m, math.tointeger(v)) end
    p.profile_stop()
    local _, text = S.save(p)
    local got = {}
    for v in text:gmatch('"name":"mk int","args":{"arg":(%-?%d+)}') do
      got[#got + 1] = math.tointeger(tonumber(v)) or v
    end
    assert.are.equal(#values, #got)
    for i, v in ipairs(values) do assert.are.equal(math.tointeger(v), got[i]) end
  end)

  it("is a no-op when tracing is off", function()
    local m = p.profile_marker_id("mk off")
    p.profile_marker(m, 1)
    p.profile_start(8)
    p.profile_marker("mk other", 1)
    p.profile_stop()
    p.profile_marker(m, 2)
    assert.are.equal(0, #S.markers(S.save(p), "mk off"))
  end)

  it("keeps registries across sessions", function()
    local m = p.profile_marker_id("mk persist")
    local c = p.profile_category("cat persist")
    p.profile_start(8)
    p.profile_stop()
    p.profile_start(8)
    p.profile_marker(m, 1)
    p.profile_stop()
    local t = S.save(p)
    assert.are.equal(1, #S.markers(t, "mk persist"))
    assert.are.equal(m, p.profile_marker_id("mk persist"))
    assert.are.equal(c, p.profile_category("cat persist"))
  end)

  it("timestamps events in order, from the session start", function()
    local t = S.record_n(p, "mk order", 1000, 500)
    local marks = S.markers(t, "mk order")
    assert.are.equal(500, #marks)
    assert.is_true(marks[1].ts >= 0)
    for i = 2, #marks do assert.is_true(marks[i].ts >= marks[i - 1].ts) end
    assert.is_true(marks[#marks].ts <= t.jobqueProfile.durationUs)
  end)
end)
