-- A tiny Perfetto TrackEvent trace encoded by hand (no Perfetto code, no
-- writer of ours): a known-good example of the wire format on which
-- spec/record/proto_file_spec.lua checks its tools (protoc's decodes,
-- spec/consumers/proto_decode.lua's counts, compare_proto.cjs). Process and
-- thread tracks, a counter track, a marker track, a clock snapshot, a trace
-- attribute, interned names, a slice with a flow to another slice, an
-- instant, a counter sample, and a PerfSample whose interned callstack has
-- frames with a synthetic mapping (trace processors before v53 drop frames
-- without one). What it holds, by construction:
--   2 TYPE_SLICE_BEGIN and 2 TYPE_SLICE_END ("heavy op", category "job":
--     1000 ns on "worker 0", 500 ns on "caller"), the first with flow id 14,
--     the second terminating it;
--   1 TYPE_INSTANT ("token" on the process's "token" track, arg 3);
--   1 TYPE_COUNTER (5 on "jobs ready");
--   1 perf_sample, callstack "main chunk (job.lua)" -> "heavy (job.lua:3)".
-- T.bytes() is the file; T's encoders build variants of it.
local T = {}

local PID, W0, CALLER, SEQ = 4242, 4243, 4244, 1

function T.varint(n)
  local out = {}
  repeat
    local b = n & 0x7f
    n = n >> 7 -- logical shift: a negative int64 takes 10 bytes
    out[#out + 1] = string.char(n ~= 0 and (b | 0x80) or b)
  until n == 0
  return table.concat(out)
end

-- A field's key; a varint field; a length-delimited one; a fixed64 one.
function T.key(f, wt) return T.varint((f << 3) | wt) end
function T.v(f, n) return T.key(f, 0) .. T.varint(n) end
function T.s(f, bytes) return T.key(f, 2) .. T.varint(#bytes) .. bytes end
function T.f64(f, n) return T.key(f, 1) .. string.pack("<I8", n) end
-- A TracePacket in the Trace (field 1) from its fields.
function T.packet(...) return T.s(1, table.concat({...})) end

local v, s, f64, packet = T.v, T.s, T.f64, T.packet

local function seq(flags) return v(10, SEQ) .. v(13, flags) end

function T.bytes()
  local pk = {
    -- TrackDescriptor (60): uuid 1, name 2, process 3, thread 4, parent_uuid 5, counter 8
    packet(s(60, v(1, 1) .. s(3, v(1, PID) .. s(6, "jobque_profile")))),
    packet(s(60, v(1, 2) .. s(4, v(1, PID) .. v(2, W0) .. s(5, "worker 0")))),
    packet(s(60, v(1, 3) .. s(4, v(1, PID) .. v(2, CALLER) .. s(5, "caller")))),
    packet(s(60, v(1, 4) .. s(2, "jobs ready") .. v(5, 1) .. s(8, ""))),
    packet(s(60, v(1, 5) .. s(2, "token") .. v(5, 1))),
    -- ClockSnapshot (6): BOOTTIME (6) and REALTIME (1) at one moment
    packet(v(8, 1000), s(6, s(1, v(1, 6) .. v(2, 1000)) .. s(1, v(1, 1) .. v(2, 1760000000000000000)))),
    -- TraceAttributes (126): attribute {key 1, long_value 2 | string_value 3}
    packet(s(126, s(1, s(1, "jobqueProfile.version") .. v(2, 1)))),
  }
  -- InternedData: categories 1, names 2, annotation names 3, function names 5,
  -- frames 6, callstacks 7, build ids 16, mapping paths 17, source paths 18, mappings 19
  local interned = s(1, v(1, 1) .. s(2, "job")) .. s(2, v(1, 1) .. s(2, "heavy op")) .. s(3, v(1, 1) .. s(2, "job"))
    .. s(5, v(1, 1) .. s(2, "heavy (job.lua:3)")) .. s(5, v(1, 2) .. s(2, "main chunk (job.lua)"))
    .. s(18, v(1, 1) .. s(2, "job.lua")) .. s(17, v(1, 1) .. s(2, "lua")) .. s(16, v(1, 1) .. s(2, ""))
    .. s(19, v(1, 1) .. v(2, 1) .. v(7, 1))
    .. s(6, v(1, 1) .. v(2, 1) .. v(3, 1) .. v(4, 1) .. v(5, 1) .. v(6, 3))
    .. s(6, v(1, 2) .. v(2, 2) .. v(3, 1) .. v(4, 2) .. v(5, 1) .. v(6, 0))
    .. s(7, v(1, 1) .. v(2, 2) .. v(2, 1))
  -- TrackEvent (11): category_iids 3, debug_annotations 4, type 9, name_iid 10,
  -- track_uuid 11, name 23, counter_value 30, flow_ids 47 (fixed64), terminating 48
  local events = {
    packet(v(8, 1000), seq(3), v(87, 1), s(12, interned),
           s(11, v(9, 1) .. v(11, 2) .. v(10, 1) .. v(3, 1) .. s(4, v(1, 1) .. v(4, 7)) .. f64(47, 14))),
    packet(v(8, 1200), seq(2), s(11, v(9, 4) .. v(11, 4) .. v(30, 5))),
    packet(v(8, 1500), seq(2), s(11, v(9, 3) .. v(11, 5) .. s(23, "token") .. s(4, s(10, "arg") .. v(4, 3)))),
    packet(v(8, 1700), seq(2), s(66, v(1, 0) .. v(2, PID) .. v(3, W0) .. v(4, 1))), -- PerfSample
    packet(v(8, 2000), seq(2), s(11, v(9, 2) .. v(11, 2))),
    packet(v(8, 2500), seq(2), s(11, v(9, 1) .. v(11, 3) .. v(10, 1) .. v(3, 1) .. f64(48, 14))),
    packet(v(8, 3000), seq(2), s(11, v(9, 2) .. v(11, 3))),
  }
  return table.concat(pk) .. table.concat(events)
end

-- The same session as a JSON trace, written by hand: what a reader of both
-- should take for the same (times relative to the first slice's start).
T.json = [[{"traceEvents":[
{"ph":"M","pid":1,"name":"process_name","args":{"name":"jobque_profile"}},
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"caller"}},
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":1,"name":"heavy op","cat":"job","args":{"job":7},"bind_id":14,"flow_out":true},
{"ph":"C","ts":0.2,"pid":1,"tid":1,"name":"jobs","args":{"ready":5}},
{"ph":"i","s":"g","ts":0.5,"pid":1,"tid":1,"name":"token","args":{"arg":3}},
{"ph":"X","ts":1.5,"dur":0.5,"pid":1,"tid":2,"name":"heavy op","cat":"job","bind_id":14,"flow_in":true}],
"stackFrames":{"1":{"name":"main chunk (job.lua)","category":"lua"},
"2":{"name":"heavy (job.lua:3)","category":"lua","parent":"1"}},
"samples":[{"pid":1,"tid":1,"ts":0.7,"sf":"2","weight":1,"name":"job","args":{}}]}
]]

return T
