-- Every public function given bad arguments raises an error naming the argument.
local p = require "jobque_profile"

local err_of = require("support").err_of

local function raises(fragment, f, ...)
  local err = err_of(f, ...)
  assert.matches(fragment, err, 1, true)
end

describe("argument errors", function()
  local tok = p.profile_marker_id("err token")

  it("profile_start", function()
    raises("bad argument #1 to 'jobque_profile.profile_start' (number expected, got string)",
      p.profile_start, "many")
    raises("bad argument #1 to 'jobque_profile.profile_start' (events_per_lane must be a positive integer, got 0)",
      p.profile_start, 0)
    raises("events_per_lane must be a positive integer, got -5", p.profile_start, -5)
    raises("bad argument #1 to 'jobque_profile.profile_start' (number has no integer representation)",
      p.profile_start, 1.5)
    raises("events_per_lane 4611686018427387904 is too large to allocate", p.profile_start, 1 << 62)
    assert.is_false(p.profile_is_on())
  end)

  it("profile_save", function()
    raises("bad argument #1 to 'jobque_profile.profile_save' (string expected, got no value)",
      p.profile_save)
    raises("bad argument #1 to 'jobque_profile.profile_save' (string expected, got table)",
      p.profile_save, {})
    raises("bad argument #1 to 'jobque_profile.profile_save' (path contains a zero byte)",
      p.profile_save, "a\0b")
  end)

  it("profile_category", function()
    raises("bad argument #1 to 'jobque_profile.profile_category' (integer id or string name expected, got table)",
      p.profile_category, {})
    raises("bad argument #1 to 'jobque_profile.profile_category' (integer id or string name expected, got no value)",
      p.profile_category)
    raises("bad argument #1 to 'jobque_profile.profile_category' (category id must be in 1..65535, got 0)",
      p.profile_category, 0, "zero")
    raises("category id must be in 1..65535, got 65536", p.profile_category, 65536, "big")
    raises("bad argument #1 to 'jobque_profile.profile_category' (number has no integer representation)",
      p.profile_category, 1.5, "half")
    raises("bad argument #2 to 'jobque_profile.profile_category' (string expected, got no value)",
      p.profile_category, 5)
    raises("bad argument #2 to 'jobque_profile.profile_category' (name must not be empty)",
      p.profile_category, 5, "")
    raises("bad argument #1 to 'jobque_profile.profile_category' (name must not be empty)",
      p.profile_category, "")
    raises("name is longer than 4096 bytes", p.profile_category, string.rep("x", 4097))
    raises("bad argument #3 to 'jobque_profile.profile_category' (color must be 0xRRGGBB (0 to 0xFFFFFF), got 16777216)",
      p.profile_category, 5, "c", 0x1000000)
    raises("bad argument #2 to 'jobque_profile.profile_category' (color must be 0xRRGGBB (0 to 0xFFFFFF), got -1)",
      p.profile_category, "c", -1)
    raises("bad argument #2 to 'jobque_profile.profile_category' (number expected, got string)",
      p.profile_category, "c", "red")
  end)

  it("profile_category validates everything before registering anything", function()
    local function categories()
      p.profile_start(4)
      p.profile_marker(tok, 0)
      p.profile_stop()
      local path = os.tmpname()
      assert(p.profile_save(path))
      local f = assert(io.open(path))
      local t = require("cjson").decode(f:read("a"))
      f:close()
      os.remove(path)
      return t.jobqueProfile.categories
    end
    local before = #categories()
    local ok, err = pcall(p.profile_category, "never registered", "red")
    assert.is_false(ok)
    assert.matches("bad argument #2 to 'jobque_profile.profile_category' (number expected, got string)", err, 1, true)
    ok, err = pcall(p.profile_category, 7001, "never either", -3)
    assert.is_false(ok)
    assert.matches("bad argument #3 to 'jobque_profile.profile_category'", err, 1, true)
    assert.are.equal(before, #categories())
    p.profile_start(4)
    p.profile_marker(tok, 0)
    p.profile_stop()
    local path = os.tmpname()
    assert(p.profile_save(path))
    local t = require("cjson").decode(io.open(path):read("a"))
    os.remove(path)
    for _, c in ipairs(t.jobqueProfile.categories) do
      assert.are_not.equal("never either", c.name)
      assert.are_not.equal("never registered", c.name)
      assert.are_not.equal(7001, c.id)
    end
  end)

  it("profile_tag", function()
    raises("bad argument #1 to 'jobque_profile.profile_tag' (number expected, got no value)", p.profile_tag)
    raises("bad argument #1 to 'jobque_profile.profile_tag' (number expected, got string)", p.profile_tag, "x")
    raises("bad argument #1 to 'jobque_profile.profile_tag' (tag must be in 0..65535, got -1)", p.profile_tag, -1)
    raises("tag must be in 0..65535, got 65536", p.profile_tag, 65536)
    raises("number has no integer representation", p.profile_tag, 2.5)
    assert.are.equal(0, p.profile_current_tag())
  end)

  it("profile_marker, while tracing is on", function()
    p.profile_start(16)
    finally(function() p.profile_stop() end)
    raises("bad argument #1 to 'jobque_profile.profile_marker' (marker id or name expected, got no value)",
      p.profile_marker)
    raises("bad argument #1 to 'jobque_profile.profile_marker' (marker id or name expected, got table)",
      p.profile_marker, {})
    raises("bad argument #1 to 'jobque_profile.profile_marker' (unknown marker id 999999 (get ids from profile_marker_id))",
      p.profile_marker, 999999)
    raises("unknown marker id 0", p.profile_marker, 0)
    raises("bad argument #1 to 'jobque_profile.profile_marker' (number has no integer representation)",
      p.profile_marker, 1.25)
    raises("bad argument #1 to 'jobque_profile.profile_marker' (name must not be empty)", p.profile_marker, "")
    raises("bad argument #2 to 'jobque_profile.profile_marker' (number has no integer representation)",
      p.profile_marker, tok, 0.5)
    raises("bad argument #2 to 'jobque_profile.profile_marker' (number expected, got table)",
      p.profile_marker, tok, {})
  end)

  it("profile_marker returns without reading its arguments while tracing is off", function()
    p.profile_stop() -- (whatever ran before in this process)
    assert.is_false(p.profile_is_on())
    assert.is_true(pcall(p.profile_marker, 999999))
    assert.is_true(pcall(p.profile_marker, tok, true))
    -- Names new to this run, whichever specs ran before in this process.
    local fresh = tostring({}):match("0x%x+") or tostring(os.time())
    local before = p.profile_marker_id("err probe " .. fresh) -- the string form registers nothing when off
    assert.is_true(pcall(p.profile_marker, "err never seen " .. fresh))
    assert.are.equal(before + 1, p.profile_marker_id("err never seen either " .. fresh))
  end)

  it("full marker and category registries, in a process of their own", function()
    -- The registries last as long as the process: filling them here would
    -- break every later spec, so a child fills them.
    local S = require "support"
    local script = S.tmpfile("full.lua")
    S.write(script, [[
      package.path = "lua/?.lua;" .. package.path
      package.cpath = arg[1]
      local p = require "jobque_profile"
      for n = 1, 4096 do p.profile_marker_id("m" .. n) end
      for n = 1, 4096 do p.profile_category("c" .. n) end
      local out = {}
      p.profile_start(16)
      for _, f in ipairs{function() return p.profile_marker_id("one more") end,
                         function() return p.profile_category("one more") end,
                         function() return p.profile_marker("one more by name", 1) end} do
        local ok, err = pcall(f)
        out[#out + 1] = tostring(ok) .. "|" .. tostring(err)
      end
      p.profile_stop()
      out[#out + 1] = tostring(p.profile_marker_id("m4096")) -- known names still answer
      io.write(table.concat(out, "\n"))
    ]])
    local h = io.popen(("%s %s '%s'"):format(S.lua, script, package.cpath))
    local out = h:read("a")
    assert.is_true(h:close(), out)
    local lines = {}
    for line in out:gmatch("[^\n]+") do lines[#lines + 1] = line end
    assert.are.equal(4, #lines, out)
    assert.matches("^false|.*full%.lua:%d+: profile_marker_id: too many marker kinds %(the limit is 4096%)$", lines[1])
    assert.matches("^false|.*full%.lua:%d+: profile_category: too many categories %(the limit is 4096%)$", lines[2])
    -- A marker stamped by a new name is refused in the name of the function called.
    assert.matches("^false|.*full%.lua:%d+: profile_marker: too many marker kinds %(the limit is 4096%)$", lines[3])
    assert.are.equal("4096", lines[4])
  end)

  it("profile_marker_id", function()
    raises("bad argument #1 to 'jobque_profile.profile_marker_id' (string expected, got no value)",
      p.profile_marker_id)
    raises("bad argument #1 to 'jobque_profile.profile_marker_id' (name must not be empty)",
      p.profile_marker_id, "")
    raises("bad argument #1 to 'jobque_profile.profile_marker_id' (string expected, got table)",
      p.profile_marker_id, {})
  end)
end)
