-- The loader on a trace with many happens-before edges (docs/trace-format.md,
-- Edges) against the same trace without them, in the same run: the time per
-- event of `trace.load`, the edges read by the loader's fast path, and read
-- by trace.lua's generic path (their category escaped, which only that path
-- reads) for comparison.
--   lua5.4 bench/edges_load.lua [jobs] [rounds]
-- A queue of `jobs` jobs on two workers, half of them `q:after` the one
-- before, every one waited for by the caller: about two edges a job.
local p = require "jobque_profile"
local jobque = require "jobque"
local core = require "jobque.core"
local trace = require "jobque_profile.trace"

local JOBS = math.tointeger(tonumber(arg[1] or "")) or 100000
local ROUNDS = math.tointeger(tonumber(arg[2] or "")) or 5
local now = core.monotonic_ns
local dir = os.getenv("TMPDIR") or (io.open("/dev/shm") and "/dev/shm") or "/tmp"

local function median(t)
  local c = {table.unpack(t)}
  table.sort(c)
  return c[(#c + 1) // 2]
end

p.profile_start(JOBS * 16)
jobque.with_job_que({workers = 2}, function(q)
  local jobs = {}
  for i = 1, JOBS do
    jobs[i] = i % 2 == 0 and q:after({jobs[i - 1]}, function() return i end) or q:submit(function() return i end)
  end
  for i = 1, JOBS do jobs[i]:wait() end
end)
p.profile_stop()
local with = dir .. "/jq-bench-edges.json"
assert(p.profile_save(with))

-- The same file without its edges, and with their category escaped.
local without, generic = dir .. "/jq-bench-edges-none.json", dir .. "/jq-bench-edges-generic.json"
local f = assert(io.open(with, "rb"))
local text = f:read("a")
f:close()
-- (the writer puts each event on a line of its own, after the comma that separates it)
local stripped, nedges = text:gsub(',\n{[^\n]*"cat":"edge"[^\n]*}', "")
local escaped = text:gsub('"cat":"edge"', '"cat":"edg\\u0065"')
for path, t in pairs({[without] = stripped, [generic] = escaped}) do
  f = assert(io.open(path, "wb"))
  f:write(t)
  f:close()
end
text, stripped, escaped = nil, nil, nil -- luacheck: ignore text stripped escaped

-- Seconds per load of `path` (median of ROUNDS) and its event count.
local function load_time(path)
  local times, n = {}, 0
  for r = 1, ROUNDS do
    collectgarbage()
    local t0 = now()
    local m = assert(trace.load(path))
    times[r] = (now() - t0) / 1e9
    n = m.nevents
    m = nil -- luacheck: ignore m
  end
  return median(times), n
end

local t_none, n_none = load_time(without)
local t_with, n_with = load_time(with)
local t_gen, n_gen = load_time(generic)
assert(n_with == n_gen and n_with - n_none == nedges)
print(("the loader on a traced queue of %d jobs, %d edges (median of %d loads)"):format(JOBS, nedges, ROUNDS))
print(("  without edges      %7.3f s  %8d events  %6.0f ns/event"):format(t_none, n_none, t_none / n_none * 1e9))
print(("  with edges         %7.3f s  %8d events  %6.0f ns/event"):format(t_with, n_with, t_with / n_with * 1e9))
print(("  edges in Lua       %7.3f s  %8d events  %6.0f ns/event"):format(t_gen, n_gen, t_gen / n_gen * 1e9))
print(("  per event, with/without %.3f (target about 1); the generic path's edges %.3f"):format(
  (t_with / n_with) / (t_none / n_none), (t_gen / n_gen) / (t_none / n_none)))
os.remove(with)
os.remove(without)
os.remove(generic)
