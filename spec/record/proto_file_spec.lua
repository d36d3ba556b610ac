-- The protobuf trace (`profile_save("t.pftrace")`: a stream of Perfetto
-- TracePackets) against the JSON of the same stopped session, through two
-- consumers that share no code with the writer: protoc (Debian's
-- protobuf-compiler; spec/consumers/proto_decode.lua) with the project's
-- subset of Perfetto's schema (spec/fixtures/perfetto_subset.proto), and
-- Perfetto's trace processor v20.1 from node (spec/consumers/compare_proto.cjs,
-- left to the plain run under the sanitizer hosts). The tools are checked
-- first on a trace encoded by hand (spec/consumers/tiny_pftrace.lua), whose
-- contents are known by construction. Last, `report --json` of the .pftrace
-- must be that of the JSON. The sessions' checks are pending while
-- `profile_save` writes no protobuf, and the report's while `report` reads
-- none.
local S = require "support"
local D = require "consumers.proto_decode"
local tiny = require "consumers.tiny_pftrace"
local cjson = require "cjson"
local p = require "jobque_profile"

local it_in_node = S.plain_only(it, pending, "reads with node")

-- Where the protoc-level counts of a .pftrace (D.count) disagree with those
-- of the JSON of the same session (D.json_counts): a list of sentences.
local function protoc_differences(json, counts)
  local d = {}
  local function want(what, expected, got)
    if expected ~= got then d[#d + 1] = ("%s: %s in the JSON, %s in the .pftrace"):format(what, expected, got) end
  end
  want("slices (X, b/e) against TYPE_SLICE_BEGIN", json.slices, counts.types.TYPE_SLICE_BEGIN)
  want("slices (X, b/e) against TYPE_SLICE_END", json.slices, counts.types.TYPE_SLICE_END)
  want("instants against TYPE_INSTANT", json.instants, counts.types.TYPE_INSTANT)
  want("counter values", json.counter_values, counts.counter_values)
  want("flow starts against flow_ids", table.concat(D.sorted_ids(json.flow_starts), " "),
       table.concat(D.sorted_ids(counts.flow_ids), " "))
  want("flow ends against terminating_flow_ids", table.concat(D.sorted_ids(json.flow_ends), " "),
       table.concat(D.sorted_ids(counts.terminating_flow_ids), " "))
  want("sample weight against perf_sample packets", json.sample_weight, counts.perf_samples)
  return d
end

-- The schema decode of `path`, counted; fails unless both of protoc's
-- decodes read it and every field it holds is one the schema names.
local function decoded(path)
  local ok, _, err = D.decode_raw(path)
  assert(ok, "protoc --decode_raw refused " .. path .. ": " .. err)
  local text
  ok, text, err = D.decode(path)
  assert(ok, "protoc --decode refused " .. path .. ": " .. err)
  local counts = D.count(text)
  assert.are.same({}, counts.unknown, "fields the schema lacks (bare numbers in protoc's text)")
  assert.are.same({}, counts.malformed, "lines of protoc's text the counter did not read")
  return counts
end

-- `jobque-profile flame` of a JSON trace as {stack: weight}.
local function flame_of(path)
  local code, out, err = S.cli(("flame '%s'"):format(path))
  assert.are.equal(0, code, err)
  local stacks = {}
  for line in out:gmatch("[^\n]+") do
    local stack, w = line:match("^(.*) (%d+)$")
    assert(stack, "a folded line without a weight: " .. line)
    stacks[stack] = (stacks[stack] or 0) + tonumber(w)
  end
  return stacks
end

describe("the protobuf checks' tools, on a trace encoded by hand", function()
  local path, json_path
  setup(function()
    path = S.tmpfile("tiny.pftrace")
    S.write(path, tiny.bytes())
    json_path = S.tmpfile("tiny.json")
    S.write(json_path, tiny.json)
  end)

  it("protoc decodes it raw and with the schema, which names every field; the counts are the encoded ones",
     function()
    local c = decoded(path)
    assert.are.equal(14, c.packets)
    assert.are.equal(6, c.events)
    assert.are.same({TYPE_SLICE_BEGIN = 2, TYPE_SLICE_END = 2, TYPE_INSTANT = 1, TYPE_COUNTER = 1}, c.types)
    assert.are.same({"14"}, c.flow_ids)
    assert.are.same({"14"}, c.terminating_flow_ids)
    assert.are.equal(1, c.counter_values)
    assert.are.equal(1, c.perf_samples)
  end)

  it("match the hand-written JSON of the same session at protoc's level", function()
    local json = D.json_counts(cjson.decode(tiny.json))
    assert.are.same({slices = 2, instants = 1, counter_values = 1, flow_starts = {"14"}, flow_ends = {"14"},
                     sample_weight = 1}, json)
    assert.are.same({}, protoc_differences(json, decoded(path)))
    -- and a JSON with one more flow, or another id, differs (a check of the check)
    json.flow_starts = {"15"}
    json.sample_weight = 3
    assert.are.same({"flow starts against flow_ids: 15 in the JSON, 14 in the .pftrace",
                     "sample weight against perf_sample packets: 3 in the JSON, 1 in the .pftrace"},
                    protoc_differences(json, decoded(path)))
  end)

  it("see a field the schema lacks as a bare number, extra counter values as counter values, "
     .. "and a cut file as damaged", function()
    local T = tiny
    local odd = S.tmpfile("odd.pftrace")
    -- a slice begin carrying two extra int64 counter values and a double one,
    -- then a packet with an unknown field (99) and an event with one (77)
    S.write(odd, T.packet(T.v(8, 5), T.v(10, 1), T.s(11, T.v(9, 1) .. T.v(12, 3) .. T.v(12, 4)
                                                     .. T.key(46, 1) .. string.pack("<d", 0.5)))
                 .. T.packet(T.v(8, 6), T.v(99, 7), T.s(11, T.v(9, 2) .. T.s(77, T.v(1, 2)))))
    local ok, text = D.decode(odd)
    assert.is_true(ok)
    local c = D.count(text)
    assert.are.equal(3, c.counter_values)
    assert.are.same({TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 1, TYPE_INSTANT = 0, TYPE_COUNTER = 0}, c.types)
    assert.are.equal(3, #c.unknown)
    assert.truthy(c.unknown[1]:find("^%d+:%s+77 {$"), c.unknown[1])
    assert.truthy(c.unknown[3]:find("^%d+:%s+99: 7$"), c.unknown[3])
    assert.are.same({}, c.malformed)
    local cut = S.tmpfile("cut.pftrace")
    S.write(cut, tiny.bytes():sub(1, -3))
    assert.is_false((D.decode(cut)))
    assert.is_false((D.decode_raw(cut)))
  end)

  it_in_node("compare_proto.cjs reads it and its JSON twin as the same session, and tells a slice 2 ns longer",
             function()
    local r, code = D.compare(json_path, path)
    assert.are.same({}, r.differences)
    assert.are.equal(0, code)
    local pf = r.sides[2]
    assert.are.equal("proto", pf.format)
    assert.are.same({}, pf.stats)
    assert.are.same({{thread = cjson.null, name = "token", cat = cjson.null, count = 1, dur = 0},
                     {thread = "caller", name = "heavy op", cat = "job", count = 1, dur = 500},
                     {thread = "worker 0", name = "heavy op", cat = "job", count = 1, dur = 1000}}, pf.slices)
    assert.are.same({{name = "jobs ready", count = 1, sum = 5}}, pf.counters)
    assert.are.same({"caller", "worker 0"}, pf.threads)
    assert.are.same({"jobque_profile"}, pf.processes)
    assert.are.equal(1, pf.perfSamples)
    assert.are.same({["main chunk (job.lua);heavy (job.lua:3)"] = 1}, pf.folded)
    local js = r.sides[1]
    assert.are.equal("json", js.format)
    assert.are.same(pf.slices, js.slices)
    assert.are.equal(1, js.fromFile.sampleWeight)
    assert.are.equal(1, js.flows)
    -- 1 ns off is v20.1's truncation, within the tolerance; 2 ns is not
    local near, far = S.tmpfile("near.json"), S.tmpfile("far.json")
    S.write(near, (tiny.json:gsub('"dur":0.5,', '"dur":0.501,')))
    S.write(far, (tiny.json:gsub('"dur":0.5,', '"dur":0.502,')))
    assert.are.same({}, (D.compare(near, path)).differences)
    r, code = D.compare(far, path)
    assert.are.same({'slices ["caller","heavy op","job"]: dur 502 against 500 (1 slices)'}, r.differences)
    assert.are.equal(1, code)
  end)
end)

-- The first place where two models differ ("path: a against b"), or nil.
local function first_difference(a, b, path, seen)
  path, seen = path or "model", seen or {}
  if type(a) ~= type(b) or type(a) ~= "table" then
    if type(a) == "number" and type(b) == "number" and math.type(a) ~= math.type(b) then
      return ("%s: %s (%s) against %s (%s)"):format(path, a, math.type(a), b, math.type(b))
    end
    if a == b or (a ~= a and b ~= b) then return nil end
    return ("%s: %s against %s"):format(path, tostring(a), tostring(b))
  end
  if seen[a] then return nil end
  seen[a] = true
  for k, v in pairs(a) do
    local d = first_difference(v, b[k], path .. "." .. tostring(k), seen)
    if d then return d end
  end
  for k in pairs(b) do
    if a[k] == nil then return ("%s.%s: only in the .pftrace's"):format(path, tostring(k)) end
  end
  return nil
end

-- What the writer of today makes of a .pftrace path: whether its first
-- byte is 0x0A (a TracePacket), on a one-marker session.
local writes_proto, probe_path
local function proto_writer()
  if writes_proto == nil then
    local path = S.tmpfile("probe.pftrace")
    probe_path = path
    local m = p.profile_marker_id("proto probe")
    p.profile_start(16)
    p.profile_marker(m, 1)
    p.profile_stop()
    local ok, err = p.profile_save(path)
    assert(ok, err)
    writes_proto = S.read(path):sub(1, 1) == "\x0A"
  end
  return writes_proto
end

-- Whether `jobque-profile report` reads that probe (the reader's half).
local reads_proto
local function proto_reader()
  if reads_proto == nil then
    assert(proto_writer())
    local code = S.cli(("report --json '%s'"):format(probe_path))
    reads_proto = code == 0
  end
  return reads_proto
end

-- A sampled session whose samples are put by hand (spec/record/samples_file_spec.lua
-- does so too): weights 2, 1 and 3, a frame with quotes and angle brackets,
-- a runtime sample; a span and a marker around them. (A weight of 0, which
-- the sampler never records, is no packet: proto_save_spec.lua.)
local function record_sampled()
  local T = require("jobque.core")._test
  local MAIN, HEAVY = {"main chunk (job.lua)", "lua"}, {"heavy (job.lua:12)", "lua"}
  local cat = p.profile_category("proto sampled")
  local fence = p.profile_marker_id("proto sample fence")
  p.profile_start(1000)
  T.sampling_set{hz = 1000, depth = 64, period_ns = 1000000, signals = 4, ticks = 5}
  p.profile_marker(fence, 1)
  p.profile_begin(cat)
  T.put_sample({MAIN, HEAVY}, {line = 13, weight = 2})
  T.put_sample({MAIN, HEAVY, {"rep [C]", "C"}}, {line = 14, job = 7, tag = cat})
  T.put_sample({MAIN, {'odd "name" <x>', "lua"}}, {weight = 3})
  p.profile_end()
  T.put_runtime_sample("scheduler", {weight = 1})
  p.profile_marker(fence, 2)
  p.profile_stop()
end

-- The demo (examples/tokens.lua, which samples) in a child process that
-- saves its stopped session a second time, as `proto`.
local function demo_both(json, proto)
  local runner = S.tmpfile("demo_both.lua")
  S.write(runner, [[
local json, proto = ...
arg = {[0] = "examples/tokens.lua", json}
dofile("examples/tokens.lua")
assert(require("jobque_profile").profile_save(proto))
]])
  local cmd = ("LUA_PATH='lua/?.lua;;' LUA_CPATH='%s' %s '%s' '%s' '%s' >/dev/null"):format(
    package.cpath, S.lua, runner, json, proto)
  assert(os.execute(cmd), "the demo failed: " .. cmd)
end

local SESSIONS = {
  {"the session with every event kind (docs_spec's)", function(json, proto)
    S.record_everything()
    assert(p.profile_save(json))
    assert(p.profile_save(proto))
  end},
  {"the demo's session", demo_both},
  {"a sampled session", function(json, proto)
    record_sampled()
    assert(p.profile_save(json))
    assert(p.profile_save(proto))
  end},
}

describe("a session saved as JSON and as .pftrace", function()
  after_each(function() p.profile_stop() end)

  -- Each session is recorded once, saved both ways: {json path, proto path}.
  local saved = {}
  local function both(i)
    if not saved[i] then
      local json, proto = S.tmpfile("both.json"), S.tmpfile("both.pftrace")
      SESSIONS[i][2](json, proto)
      saved[i] = {json, proto}
    end
    return saved[i][1], saved[i][2]
  end

  for i, session in ipairs(SESSIONS) do
    it(session[1] .. ": protoc reads the .pftrace, every field in the schema, with the JSON's slices, "
       .. "instants, counter values, flows and sample weight", function()
      if not proto_writer() then pending("needs the proto writer") end
      local json, proto = both(i)
      local counts = D.json_counts(cjson.decode(S.read(json)))
      assert.is_true(counts.slices > 0, "a session without slices")
      assert.are.same({}, protoc_differences(counts, decoded(proto)))
    end)

    it(session[1] .. ": report --json of the .pftrace is that of the JSON", function()
      if not proto_writer() then pending("needs the proto writer") end
      if not proto_reader() then pending("needs the proto reader (report of a .pftrace)") end
      local json, proto = both(i)
      local code, out, err = S.cli(("report --json '%s'"):format(json))
      assert.are.equal(0, code, err)
      local pcode, pout, perr = S.cli(("report --json '%s'"):format(proto))
      assert.are.equal(0, pcode, perr)
      assert.are.equal(out, pout)
    end)

    it(session[1] .. ": the .pftrace reads back as the JSON's model, field by field; flame and html alike",
       function()
      if not proto_writer() then pending("needs the proto writer") end
      if not proto_reader() then pending("needs the proto reader (report of a .pftrace)") end
      local json, proto = both(i)
      local trace = require "jobque_profile.trace"
      local a, b = assert(trace.load(json)), assert(trace.load(proto))
      a.path, a.bytes, b.path, b.bytes = nil, nil, nil, nil
      assert.are.equal(nil, first_difference(a, b))
      for _, how in ipairs(a.nsamples > 0 and {"--by job --lines", "--by category --format speedscope"} or {}) do
        local code, out, err = S.cli(("flame %s '%s'"):format(how, json))
        assert.are.equal(0, code, err)
        local pcode, pout, perr = S.cli(("flame %s '%s'"):format(how, proto))
        assert.are.equal(0, pcode, perr)
        local jb, pb = json:match("[^/]+$"), proto:match("[^/]+$")
        assert.are.equal(out, (pout:gsub(pb:gsub("%p", "%%%0"), jb)))
      end
      local pages = {}
      for k, path in ipairs{json, proto} do
        local page = S.tmpfile("page" .. k .. ".html")
        local code, _, err = S.cli(("html '%s' -o '%s'"):format(path, page))
        assert.are.equal(0, code, err)
        local base = path:match("[^/]+$")
        pages[k] = S.read(page):gsub(base:gsub("%p", "%%%0"), "TRACE")
      end
      assert.are.equal(pages[1], pages[2])
    end)

    it_in_node(session[1] .. ": Perfetto's trace processor reads both files alike", function()
      if not proto_writer() then pending("needs the proto writer") end
      local json, proto = both(i)
      local r = D.compare(json, proto)
      assert.are.same({}, r.sides[1].stats, "import errors in the JSON")
      assert.are.same({}, r.sides[2].stats, "import errors in the .pftrace")
      assert.are.same({}, r.differences)
      assert.is_true(#r.sides[2].slices > 0, "no slice read from the .pftrace")
      assert.is_true(#r.sides[2].threads > 0, "no thread read from the .pftrace")
      if r.sides[1].fromFile.sampleWeight > 0 then
        assert.are.same(flame_of(json), r.sides[2].folded, "the perf samples' stacks against `flame` of the JSON")
      end
    end)
  end
end)

-- Rows of one SQL query on a trace, by Perfetto's trace processor (node).
local function tp_rows(path, sql)
  local out = S.tmpfile("tp.txt")
  local ok = os.execute(("timeout 300 node spec/consumers/tp_query.cjs '%s' \"%s\" >'%s' 2>&1"):format(path, sql, out))
  local text = S.read(out)
  assert(ok, "spec/consumers/tp_query.cjs failed:\n" .. text)
  local rows = {}
  for line in text:gmatch("[^\n]+") do
    if line:sub(1, 1) == "{" then rows[#rows + 1] = cjson.decode(line) end
  end
  return rows
end

describe("a .pftrace's times and args, slice by slice, against the JSON's", function()
  it_in_node("puts the arrow ends of a job's many `after` dependencies where the JSON does", function()
    -- A job whose first slice is shorter in ns than its dependencies are
    -- many: the JSON spaces their ends 1/2048 us apart, up to the slice's end.
    local jobque = require "jobque"
    local q = jobque.new{workers = 1}
    p.profile_start(65536)
    local gate = q:submit(function() -- holds the one worker until every dependency is pending
      local t = os.clock()
      while os.clock() - t < 0.05 do end
    end)
    local deps = {}
    for i = 1, 300 do deps[i] = q:submit(function(g) return g and 0 end, gate) end
    q:after(deps, function() return 1 end):wait()
    p.profile_stop()
    local json, proto = S.tmpfile("after.json"), S.tmpfile("after.pftrace")
    assert(p.profile_save(json))
    assert(p.profile_save(proto))
    q:close()
    local function column(path, sql, key)
      local v = {}
      for _, r in ipairs(tp_rows(path, sql)) do v[#v + 1] = r[key] end
      table.sort(v)
      return v
    end
    local ends = "select s.ts as ts, s.depth as depth from slice s "
      .. "where s.name = 'after' and s.category = 'flow' order by s.ts"
    -- the JSON's times count from the session's start, the .pftrace's on BOOTTIME
    local boot0 = math.tointeger(S.read(json):match('"boottimeNs":(%d+)'))
    local a, b = column(json, ends, "ts"), column(proto, ends, "ts")
    for i = 1, #b do b[i] = math.tointeger(b[i]) - boot0 end
    for i = 1, #a do a[i] = math.tointeger(a[i]) end
    assert.are.equal(300, #a)
    assert.are.equal(#a, #b)
    for i = 1, #a do -- v20.1 truncates the JSON's us x 1000, llround does not: 1 ns apart at most
      assert(math.abs(a[i] - b[i]) <= 1, ("arrow end %d: %d ns in the JSON, %d in the .pftrace"):format(i, a[i], b[i]))
    end
    -- (not their depths: an end at the slice's very end is 1 ns earlier in
    -- v20.1's reading of the JSON, which truncates, and so in the slice)
    -- and read back by us, at the JSON's times exactly (1/2048 us apart)
    local trace = require "jobque_profile.trace"
    local ma, mb = assert(trace.load(json)), assert(trace.load(proto))
    ma.path, ma.bytes, mb.path, mb.bytes = nil, nil, nil, nil
    assert.are.equal(nil, first_difference(ma, mb))
  end)
end)
