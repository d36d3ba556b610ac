-- A protobuf trace read by protoc (Debian's protobuf-compiler, installed by
-- `make deps`), and what the specs count in it (spec/record/proto_file_spec.lua):
--   D.decode(path)      protoc --decode=perfetto.protos.Trace with the
--                       project's subset schema (spec/fixtures/perfetto_subset.proto)
--   D.decode_raw(path)  protoc --decode_raw: the wire format, no schema
-- each returning (ok, text, stderr);
--   D.count(text)       what a schema decode holds, by kind (below);
--   D.json_counts(doc)  the same kinds counted in a decoded JSON trace of
--                       the same session;
--   D.compare(a, b)     spec/consumers/compare_proto.cjs on two files (node,
--                       Perfetto's trace processor): its decoded output.
local S = require "support"
local cjson = require "cjson"

local D = {}

local SCHEMA_DIR = "spec/fixtures"
local SCHEMA = "spec/fixtures/perfetto_subset.proto"

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Runs `cmd` with stdin from `path`; returns (exit 0?, stdout, stderr).
local function run(cmd, path)
  local out, err = S.tmpfile("protoc.txt"), S.tmpfile("protoc.err")
  local ok = os.execute(("%s <%s >%s 2>%s"):format(cmd, quote(path), quote(out), quote(err)))
  return ok == true, S.read(out), S.read(err)
end

function D.decode(path)
  return run(("protoc -I %s --decode=perfetto.protos.Trace %s"):format(SCHEMA_DIR, SCHEMA), path)
end

function D.decode_raw(path)
  return run("protoc --decode_raw", path)
end

local TYPES = {"TYPE_SLICE_BEGIN", "TYPE_SLICE_END", "TYPE_INSTANT", "TYPE_COUNTER"}

-- What protoc's text of a Trace holds:
--   packets                the TracePackets
--   events                 the TrackEvents; types[T]: those of `type: T`
--                          (every name of TYPES present, 0 when none)
--   flow_ids, terminating_flow_ids   their values (decimal strings), in file order
--   counter_values         TYPE_COUNTER events plus extra_counter_values and
--                          extra_double_counter_values
--   perf_samples           packets with a perf_sample
--   unknown                the lines that name a field by number (a field the
--                          schema lacks: `47: 0x...`, `77 {`), with line numbers
--   malformed              lines of no form protoc writes (the parser's own check)
function D.count(text)
  local c = {packets = 0, events = 0, types = {}, flow_ids = {}, terminating_flow_ids = {},
             counter_values = 0, perf_samples = 0, unknown = {}, malformed = {}}
  for _, t in ipairs(TYPES) do c.types[t] = 0 end
  local stack, n = {}, 0
  for line in text:gmatch("([^\n]*)\n?") do
    n = n + 1
    local block = line:match("^%s*([%w_]+) {$")
    local field, value = line:match("^%s*([%w_]+): (.*)$")
    local top, parent = stack[#stack], stack[#stack - 1]
    if line:match("^%s*%d+[: ]") then
      c.unknown[#c.unknown + 1] = ("%d: %s"):format(n, line)
    end
    if block then
      stack[#stack + 1] = block
      if block == "packet" and #stack == 1 then
        c.packets = c.packets + 1
      elseif block == "track_event" and top == "packet" and #stack == 2 then
        c.events = c.events + 1
      elseif block == "perf_sample" and top == "packet" and #stack == 2 then
        c.perf_samples = c.perf_samples + 1
      end
    elseif line:match("^%s*}$") then
      if #stack == 0 then c.malformed[#c.malformed + 1] = ("%d: %s"):format(n, line) end
      stack[#stack] = nil
    elseif field then
      if top == "track_event" and parent == "packet" and #stack == 2 then
        if field == "type" then
          c.types[value] = (c.types[value] or 0) + 1
          if value == "TYPE_COUNTER" then c.counter_values = c.counter_values + 1 end
        elseif field == "flow_ids" or field == "terminating_flow_ids" then
          table.insert(c[field], value)
        elseif field == "extra_counter_values" or field == "extra_double_counter_values" then
          c.counter_values = c.counter_values + 1
        end
      end
    elseif line ~= "" then
      c.malformed[#c.malformed + 1] = ("%d: %s"):format(n, line)
    end
  end
  if #stack ~= 0 then c.malformed[#c.malformed + 1] = ("end: %d blocks left open"):format(#stack) end
  return c
end

local function id_text(x)
  return ("%d"):format(math.tointeger(x) or error("flow id " .. tostring(x) .. " is no integer"))
end

-- The same kinds in a decoded JSON trace (cjson): slices (X events and b/e
-- pairs, counted by their b), instants (i and I), counter values (one per
-- key of a C event's args), flow starts and ends (bind_id of the slices with
-- flow_out and flow_in, decimal strings, in file order) and the samples'
-- summed weight (a sample without one weighs 1).
function D.json_counts(doc)
  local c = {slices = 0, instants = 0, counter_values = 0, flow_starts = {}, flow_ends = {}, sample_weight = 0}
  for _, e in ipairs(doc.traceEvents) do
    if e.ph == "X" or e.ph == "b" then
      c.slices = c.slices + 1
    elseif e.ph == "i" or e.ph == "I" then
      c.instants = c.instants + 1
    elseif e.ph == "C" then
      for _ in pairs(e.args) do c.counter_values = c.counter_values + 1 end
    end
    if e.flow_out == true then table.insert(c.flow_starts, id_text(e.bind_id)) end
    if e.flow_in == true then table.insert(c.flow_ends, id_text(e.bind_id)) end
  end
  for _, s in ipairs(doc.samples or {}) do
    c.sample_weight = c.sample_weight + math.tointeger(s.weight or 1)
  end
  return c
end

-- A list of decimal strings, sorted as numbers (for comparing id multisets).
function D.sorted_ids(list)
  local out = {}
  for i, x in ipairs(list) do out[i] = x end
  table.sort(out, function(a, b) return #a < #b or (#a == #b and a < b) end)
  return out
end

-- compare_proto.cjs on files `a` and `b`: (its output decoded, exit code).
-- Fails when it could not compare them (exit status 2, or no JSON out).
function D.compare(a, b)
  local out, err = S.tmpfile("compare.json"), S.tmpfile("compare.err")
  local cmd = ("timeout 300 node spec/consumers/compare_proto.cjs %s %s >%s 2>%s"):format(
    quote(a), quote(b), quote(out), quote(err))
  local _, _, code = os.execute(cmd)
  local text = S.read(out)
  assert(code == 0 or code == 1, ("spec/consumers/compare_proto.cjs failed (exit %s; its package comes from "
    .. "`npm ci`):\n%s%s"):format(code, text, S.read(err)))
  return cjson.decode(text), code
end

return D
