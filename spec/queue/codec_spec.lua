-- The codec (src/queue/codec.c) on its own: values round-trip between two fresh
-- lua_States with no queue (the test binding in src/testing/testing_codec.c). The
-- first state makes the values and is closed before the second one decodes
-- them; handles are the binding's reference-counted "boxes".
local T = require("jobque.core")._test

local function trip(make, check)
  return T.codec_roundtrip(make, check)
end

describe("the codec between two fresh states", function()
  after_each(function()
    assert.are.equal(0, T.codec_boxes()) -- every box reference was dropped
  end)

  it("copies nil, booleans, integers, floats and strings with their count", function()
    local got = trip([[return 1, 2.5, "a\0b", true, false, nil, math.mininteger]], [[
      local out = {select("#", ...)}
      for i = 1, select("#", ...) do
        local v = select(i, ...)
        out[#out + 1] = math.type(v) or type(v)
        out[#out + 1] = type(v) == "string" and #v or tostring(v)
      end
      return table.concat(out, " ")]])
    assert.are.equal("7 integer 1 float 2.5 string 3 boolean true boolean false nil nil "
      .. "integer " .. tostring(math.mininteger), got)
  end)

  it("keeps shared and cyclic tables shared and cyclic", function()
    local got = trip([[
      local t, s = {}, {1}
      t.self, t.a, t.b, t[s] = t, s, s, "key"
      return t, s]], [[
      local t, s = ...
      return tostring(t.self == t and t.a == s and t.b == s and t[s] == "key" and s[1] == 1)]])
    assert.are.equal("true", got)
  end)

  it("rebuilds closures with their upvalues, an upvalue two closures share joined", function()
    local got = trip([[
      local n, step = 0, 10
      local function inc() n = n + step return n end
      local function get() return n end
      return inc, get]], [[
      local inc, get = ...
      inc() inc()
      return get()]])
    assert.are.equal("20", got)
  end)

  it("sends loaded modules, their C functions and the globals by name", function()
    local got = trip([[return string, string.format, _G, {g = _G}, box]], [[
      local s, f, g, t, b = ...
      return tostring(s == string and f == string.format and g == _G and t.g == _G and b == box)]])
    assert.are.equal("true", got)
  end)

  it("carries handles through the user's interface, one reference each", function()
    local got = trip([[local b = box(3) return b, {box(8), b}]], [[
      local a, t = ...
      return a:value() + t[1]:value() + t[2]:value()]])
    assert.are.equal("14", got) -- 3 + 8 + 3; after_each: no box is left
  end)

  it("names where a value that cannot be copied sits", function()
    assert.are.same({nil, "encode: argument #1: userdata cannot be sent to a worker"},
      {trip([[return io.stdout]], [[return "unreached"]])})
    assert.are.same({nil, 'encode: argument #2, field "x", [1]: a coroutine cannot be sent to '
      .. "a worker"}, {trip([[return 1, {x = {coroutine.create(print)}}]], [[return "unreached"]])})
    assert.are.same({nil, "encode: argument #1: a C function cannot be sent to a worker (only "
      .. "those of loaded modules can)"},
      {trip([[return getmetatable(io.stdout).__gc]], [[return "unreached"]])})
  end)

  it("refuses tables nested deeper than its limit, without a crash", function()
    local ok, err = trip([[
      local t = {}
      for _ = 1, 1000 do t = {t} end
      return t]], [[return "unreached"]])
    assert.is_nil(ok)
    assert.matches("^encode: argument #1, %[1%], %[1%]", err)
    assert.matches("tables or functions nested too deeply$", err)
  end)

  it("fails in the second state when a module it needs is missing there", function()
    local ok, err = trip([[
      package.loaded.only_here = {}
      return package.loaded.only_here]], [[return "unreached"]])
    assert.is_nil(ok)
    assert.matches("^check: module 'only_here' not found", err)
  end)

  it("drops the references of handles that were never decoded", function()
    local ok, err = trip([[return box(1), io.stdout]], [[return "unreached"]])
    assert.is_nil(ok)
    assert.matches("argument #2: userdata", err) -- after_each: box 1 was let go
  end)
end)
