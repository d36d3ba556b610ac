-- profile_save's protobuf format: how it is chosen, its bad options, and
-- a small session decoded with protoc against our subset of Perfetto's
-- schema, counted by hand.
local p = require "jobque_profile"
local S = require "support"
local D = require "consumers.proto_decode"

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
    assert.are.equal("profile_save: unknown option 'fromat' (known: format, progress)",
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

-- The packets of a .pftrace as {start, length start, body start, body end}
-- (bytes from 0), read here by hand: 0x0A, a varint length, the body.
local function packets(bytes)
  local list, i = {}, 1
  while i <= #bytes do
    assert(bytes:byte(i) == 0x0A, "not a packet at byte " .. (i - 1))
    local j, len, shift = i + 1, 0, 0
    repeat
      local byte = bytes:byte(j)
      len = len | ((byte & 0x7f) << shift)
      shift, j = shift + 7, j + 1
    until byte < 0x80
    list[#list + 1] = {i - 1, i, j - 1, j - 1 + len}
    i = j + len
  end
  return list
end

describe("jobque-profile on a .pftrace", function()
  local path
  setup(function()
    one_marker_session()
    path = S.tmpfile("t.pftrace")
    assert(p.profile_save(path))
  end)

  local function fails_with(file, message)
    local code, out, err = S.cli("report '" .. file .. "'")
    assert.are.equal("", out)
    assert.are.equal("jobque-profile: " .. file .. ": " .. message .. "\n", err)
    assert.are.equal(1, code)
  end

  it("reads one that jobque_profile wrote: the report names its lanes and markers", function()
    local code, out, err = S.cli("report '" .. path .. "'")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("caller", 1, true), out)
    assert.truthy(out:find("token", 1, true), out)
  end)

  it("refuses another tool's Perfetto trace (no jobqueProfile attribute), status 1", function()
    local foreign = S.tmpfile("foreign.pftrace")
    S.write(foreign, require("consumers.tiny_pftrace").bytes())
    fails_with(foreign, "a Perfetto trace not written by jobque_profile (open it in Perfetto)")
  end)

  it("names the byte where a cut file's last packet starts, and one whose length runs past the end", function()
    local bytes = S.read(path)
    local list = packets(bytes)
    local last = list[#list]
    local cut = S.tmpfile("cut.pftrace")
    S.write(cut, bytes:sub(1, last[4] - 1)) -- one byte short
    fails_with(cut, ("damaged protobuf at byte %d (a packet runs past the end of the file)"):format(last[1]))
    -- the third packet's length (a one-byte varint: it is short) made 127
    local third = list[3]
    assert.are.equal(third[2] + 1, third[3], "a third packet of more than 127 bytes")
    local long = S.tmpfile("long.pftrace")
    S.write(long, bytes:sub(1, third[2]) .. "\x7f" .. bytes:sub(third[3] + 1, third[3] + 10))
    fails_with(long, ("damaged protobuf at byte %d (a packet runs past the end of the file)"):format(third[1]))
    -- cut right after a packet's tag: its length is missing
    S.write(long, bytes:sub(1, third[2]))
    fails_with(long, ("damaged protobuf at byte %d (a packet's length runs past the end of the file)")
      :format(third[1]))
  end)

  it("names the byte of a damaged field inside a packet", function()
    local bytes = S.read(path)
    local list = packets(bytes)
    local second = list[2] -- its first field's tag made wire type 7, which protobuf has not
    local b = bytes:byte(second[3] + 1)
    local bad = S.tmpfile("bad.pftrace")
    S.write(bad, bytes:sub(1, second[3]) .. string.char((b & ~7) | 7) .. bytes:sub(second[3] + 2))
    fails_with(bad, ("damaged protobuf at byte %d (a group or an unknown wire type: not a field jobque_profile "
      .. "writes)"):format(second[3]))
  end)

  it("writes no packet for a sample of weight 0 (which the sampler never records), and reads the rest", function()
    local T = require("jobque.core")._test
    p.profile_start(64)
    T.sampling_set{hz = 1000, depth = 8, period_ns = 1000000, signals = 2, ticks = 2}
    T.put_sample({{"main chunk (w.lua)", "lua"}}, {weight = 0})
    T.put_sample({{"main chunk (w.lua)", "lua"}, {"f (w.lua:2)", "lua"}}, {weight = 2, line = 3})
    p.profile_stop()
    local proto = S.tmpfile("w.pftrace")
    assert(p.profile_save(proto))
    local ok, text = D.decode(proto)
    assert.is_true(ok)
    assert.are.equal(2, D.count(text).perf_samples)
    local code, out, err = S.cli("flame --lines '" .. proto .. "'")
    assert.are.equal(0, code, err)
    assert.are.equal("main chunk (w.lua);f (w.lua:2):3 2\n", out)
  end)

  it("reads a JSON file that starts with a line break as JSON", function()
    one_marker_session()
    local json = S.tmpfile("nl.json")
    assert(p.profile_save(json))
    S.write(json, "\n" .. S.read(json))
    local code, _, err = S.cli("report '" .. json .. "'")
    assert.are.equal(0, code, err)
  end)
end)
