-- profile_save's protobuf format: how it is chosen, its bad options, and
-- a small session decoded with protoc against our subset of Perfetto's
-- schema, counted by hand.
local p = require "jobque_profile"
local S = require "support"

local function first_byte(path)
  local f = assert(io.open(path, "rb"))
  local b = f:read(1)
  f:close()
  return b and b:byte()
end

local function one_marker_session()
  local m = p.profile_marker_id("token")
  p.profile_start(1024)
  p.profile_marker(m, 1)
  p.profile_stop()
end

describe("profile_save's format", function()
  it("is protobuf for .pftrace and .perfetto-trace, JSON otherwise, and an explicit format wins", function()
    one_marker_session()
    local cases = {
      {"t.pftrace", nil, 0x0A}, {"t.perfetto-trace", nil, 0x0A}, {"t.json", nil, ("{"):byte()},
      {"t.trace", nil, ("{"):byte()}, {"t.pftrace", {format = "json"}, ("{"):byte()},
      {"out.bin", {format = "proto"}, 0x0A},
    }
    for _, c in ipairs(cases) do
      local path = S.tmpfile(c[1])
      assert(p.profile_save(path, c[2]))
      assert.are.equal(c[3], first_byte(path), c[1])
    end
  end)

  it("raises for a bad format or an unknown option, writing nothing", function()
    one_marker_session()
    local path = S.tmpfile("x.pftrace")
    assert.are.equal([[bad argument #2 to 'jobque_profile.profile_save' (format must be "json" or "proto", got "xml")]],
      S.err_of(p.profile_save, path, {format = "xml"}))
    assert.matches("format must be \"json\" or \"proto\", got number",
      S.err_of(p.profile_save, path, {format = 1}), nil, true)
    assert.are.equal("profile_save: unknown option 'fromat' (known: format)",
      S.err_of(p.profile_save, path, {fromat = "proto"}))
    assert.matches("table expected, got string", S.err_of(p.profile_save, path, "proto"), nil, true)
    assert.is_nil(io.open(path))
  end)

  it("returns false, message when nothing was recorded or tracing is on, as for JSON", function()
    p.profile_start(1024)
    local ok, err = p.profile_save(S.tmpfile("on.pftrace"))
    assert.is_false(ok)
    assert.matches("tracing is still on", err)
    p.profile_stop()
  end)
end)

-- protoc, when it is installed (make deps installs it)
local protoc = os.execute("command -v protoc >/dev/null 2>&1")
local it_protoc = protoc and it or function(name) pending(name .. " (needs protoc: make deps)") end

describe("a saved .pftrace, decoded by protoc", function()
  it_protoc("holds the session's packets by the schema, no field unknown to it", function()
    local m = p.profile_marker_id("tick mark")
    local cat = p.profile_category("stage")
    p.profile_start(1024)
    for i = 1, 3 do p.profile_marker(m, i) end
    local span = p.profile_begin(cat)
    p.profile_end(span)
    p.profile_counter("depth", 7)
    p.profile_stop()
    local path = S.tmpfile("t.pftrace")
    assert(p.profile_save(path))
    local h = io.popen(("protoc -Ispec/fixtures --decode=perfetto.protos.Trace spec/fixtures/perfetto_subset.proto < '%s' 2>&1")
      :format(path))
    local text = h:read("a")
    local ok = h:close()
    assert.is_true(ok, text)
    assert.is_nil(text:find("\n%s*%d+:"), "a field the schema does not know") -- numeric tags
    local function count(pat) local n = 0 for _ in text:gmatch(pat) do n = n + 1 end return n end
    assert.are.equal(3, count("type: TYPE_INSTANT"))      -- the markers
    assert.are.equal(1, count("type: TYPE_SLICE_BEGIN"))  -- the span's one piece
    assert.are.equal(1, count("type: TYPE_SLICE_END"))
    assert.are.equal(2, count('name: "tick mark"'))       -- its track's name, and interned once for its events
    assert.are.equal(1, count("process_name: \"jobque_profile\""))
    assert.are.equal(1, count("thread_name: \"caller\""))
    assert.are.equal(1, count("primary_trace_clock: 6"))
    assert.are.equal(1, count("type: TYPE_COUNTER"))
    assert.are.equal(1, count('name: "depth value"'))    -- named as Perfetto names the JSON's
    assert.are.equal(1, count("counter_value: 7"))
  end)
end)

describe("a saved .pftrace's trace attribute", function()
  it("holds the JSON file's jobqueProfile object, the same session's", function()
    local cjson = require "cjson"
    local q = require("jobque").new{workers = 1}
    p.profile_start(1024)
    q:submit(function() return 1 end):wait()
    p.profile_marker(p.profile_marker_id("token"), 1)
    p.profile_stop()
    local json, proto = S.tmpfile("t.json"), S.tmpfile("t.pftrace")
    assert(p.profile_save(json))
    assert(p.profile_save(proto))
    q:close()
    local bytes = S.read(proto)
    -- Attribute {key (1): "jobqueProfile", string_value (3): the text}
    local at = assert(bytes:find("\x0a\x0djobqueProfile\x1a", 1, true), "no jobqueProfile attribute")
    local i, len, shift = at + 16, 0, 0
    repeat -- the text's varint length
      local byte = bytes:byte(i)
      len = len | ((byte & 0x7f) << shift)
      shift, i = shift + 7, i + 1
    until byte < 0x80
    local attribute = cjson.decode(bytes:sub(i, i + len - 1))
    assert.are.same(cjson.decode(S.read(json)).jobqueProfile, attribute)
  end)
end)

describe("jobque-profile on a .pftrace", function()
  it("says it reads JSON only, status 1", function()
    one_marker_session()
    local path = S.tmpfile("t.pftrace")
    assert(p.profile_save(path))
    local code, out, err = S.cli("report '" .. path .. "'")
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.are.equal("jobque-profile: " .. path .. ": a Perfetto protobuf trace: this version of jobque-profile "
      .. "reads JSON traces only (open it in Perfetto, or save the session as .json as well)\n", err)
  end)
end)
