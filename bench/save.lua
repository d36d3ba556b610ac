-- profile_save of 1,000,000 events against lua-cjson encoding the same
-- events and writing them, in the same run; and bytes per event. Then the
-- same session saved as Perfetto protobuf (.pftrace) against its JSON.
--   lua5.4 bench/save.lua [events]        (make bench)
local p = require "jobque_profile"
local core = require "jobque.core"
local cjson = require "cjson"

local N = math.tointeger(tonumber(arg[1] or "")) or 1000000
local now = core.monotonic_ns
-- tmpfs when there is one: the disk's writeback would swamp both timings with noise
local dir = os.getenv("TMPDIR") or (io.open("/dev/shm") and "/dev/shm") or "/tmp"
local ours, theirs = dir .. "/jq-bench-save.json", dir .. "/jq-bench-cjson.json"
local proto = dir .. "/jq-bench-save.pftrace"

local id = p.profile_marker_id("token")
p.profile_start(N)
for i = 1, N do p.profile_marker(id, i) end
p.profile_stop()

local function best_of(k, f)
  local best = math.huge
  for _ = 1, k do
    local t0 = now()
    f()
    best = math.min(best, now() - t0)
  end
  return best / 1e9
end

local t_ours = best_of(3, function() assert(p.profile_save(ours)) end)
local f = assert(io.open(ours, "rb"))
local text = f:read("a")
f:close()
local bytes = #text
local trace = cjson.decode(text) -- the same events, as Lua tables
text = nil -- luacheck: ignore
local t_cjson = best_of(3, function()
  local out = assert(io.open(theirs, "wb"))
  out:write(cjson.encode(trace))
  out:close()
end)
local t_proto = best_of(3, function() assert(p.profile_save(proto)) end)
f = assert(io.open(proto, "rb"))
local proto_bytes = f:seek("end")
f:close()
os.remove(ours)
os.remove(theirs)
os.remove(proto)

local events = #trace.traceEvents
print(("save, %d events (best of 3)"):format(events))
print(("  profile_save     %7.3f s  %6.1f M events/s"):format(t_ours, events / t_ours / 1e6))
print(("  lua-cjson+write  %7.3f s  %6.1f M events/s"):format(t_cjson, events / t_cjson / 1e6))
print(("  speed-up         %7.1fx (target >= 20x)"):format(t_cjson / t_ours))
print(("  file size        %d bytes, %.1f bytes/event (target <= 95)"):format(bytes, bytes / events))
print(("  protobuf save    %7.3f s, %.2fx the JSON's time (target <= 0.5x)"):format(t_proto, t_proto / t_ours))
print(("  protobuf size    %d bytes, %.1f bytes/event, %.2fx the JSON's (targets <= 32, <= 0.35x)"):format(
  proto_bytes, proto_bytes / events, proto_bytes / bytes))
