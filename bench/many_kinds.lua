-- `jobque-profile report` (text and --json) of a trace with N marker kinds
-- and N categories, against the same trace with N / 2 of each, in the same
-- run: a cost that grows with kinds times categories (or units times
-- categories) makes the ratio 4, one that grows with the output 2 for the
-- text. Each side a command (a fresh lua5.4 under /usr/bin/time -v for its
-- peak RSS).
--   lua5.4 bench/many_kinds.lua [N] [rounds]          (N: 4096 by default)
--   lua5.4 bench/many_kinds.lua N --write FILE        (only writes the trace)
-- The trace is written directly, in the format of docs/trace-format.md
-- (the registries hold 4,096 names each, so a recorded session cannot go
-- past that; this can): N categories and N marker kinds registered, and for
-- i = 1 .. N a marker of kind i on the caller's lane, then job i, of
-- category i, on a worker's. Each kind has one unit, from its marker to the
-- session's end, which holds jobs i .. N: the report's text lists the 3
-- busiest categories of each unit, --json every one (N * (N + 1) / 2 rows
-- in all: its output grows with N^2, the text's with N). Before the units'
-- sums moved to the busy pieces, report took 17.5 s and 1.75 GB at N =
-- 4096 (docs/benchmarks.md).
local N = math.tointeger(tonumber(arg[1] or "")) or 4096

-- The trace of n kinds and n categories.
local function write(path, n)
  local out = {}
  local function add(s) out[#out + 1] = s end
  add('{"traceEvents":[\n')
  add('{"ph":"M","pid":1,"name":"process_name","args":{"name":"jobque_profile"}},\n')
  add('{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},\n')
  add('{"ph":"M","pid":1,"tid":1,"name":"thread_sort_index","args":{"sort_index":0}},\n')
  add('{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"caller"}},\n')
  add('{"ph":"M","pid":1,"tid":2,"name":"thread_sort_index","args":{"sort_index":1}}')
  -- times in nanoseconds, written as microseconds with three decimals
  local function us(ns) return ("%d.%03d"):format(ns // 1000, ns % 1000) end
  for i = 1, n do
    local t = 10000 * i
    add((',\n{"ph":"i","s":"g","ts":%s,"pid":1,"tid":2,"name":"kind %d","args":{"arg":%d}}')
      :format(us(t), i, i))
    add((',\n{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":1,"name":"cat %d","cat":"job","args":{"job":%d}}')
      :format(us(t + 1000), us(3000 + 7 * (i % 97)), i, i))
  end
  local stop = us(10000 * (n + 1))
  add(('\n],\n"jobqueProfile":{"version":1,"clock":"monotonic","pid":1,"eventsPerLane":%d,"durationUs":%s,'
       .. '"startUs":0.000,"stopUs":%s,"lostEvents":0,"lanes":2,\n"laneInfo":[\n'):format(2 * n, stop, stop))
  add(('{"tid":1,"name":"worker 0","role":"worker","recorded":%d,"dropped":0},\n'):format(n))
  add(('{"tid":2,"name":"caller","role":"caller","recorded":%d,"dropped":0}],\n"categories":[\n'):format(n))
  local palette = {"#5E96DE", "#43B08A", "#AC82E4", "#C39536"}
  for c = 1, n do
    add(('%s{"id":%d,"name":"cat %d","color":"%s"}'):format(c > 1 and ",\n" or "", c, c, palette[c % 4 + 1]))
  end
  add('],\n"markers":[\n')
  for k = 1, n do add(('%s{"id":%d,"name":"kind %d"}'):format(k > 1 and ",\n" or "", k, k)) end
  add("]}}\n")
  local f = assert(io.open(path, "wb"))
  assert(f:write(table.concat(out)))
  assert(f:close())
end

if arg[2] == "--write" then
  write(assert(arg[3], "--write needs a file"), N)
  return
end

local ROUNDS = math.tointeger(tonumber(arg[2] or "")) or 3
local dir = os.getenv("TMPDIR") or (io.open("/dev/shm") and "/dev/shm") or "/tmp"
local many, half = dir .. "/jq-bench-kinds.json", dir .. "/jq-bench-kinds-half.json"
write(many, N)
write(half, N // 2)

local cpath = package.cpath:gsub("'", "")
assert(os.execute("test -x /usr/bin/time"), "needs /usr/bin/time (Debian's time package)")
-- Runs cmd: its wall seconds (from /usr/bin/time), peak RSS in bytes and output size.
local function timed(cmd)
  local log = os.tmpname()
  local h = assert(io.popen(("LUA_PATH='lua/?.lua;;' LUA_CPATH='%s' /usr/bin/time -v -o '%s' %s | wc -c")
    :format(cpath, log, cmd)))
  local size = tonumber(h:read("a"))
  h:close()
  local f = assert(io.open(log, "rb"))
  local text = f:read("a")
  f:close()
  os.remove(log)
  assert(text:match("Exit status: 0"), "failed: " .. cmd .. "\n" .. text)
  local m, s = text:match("Elapsed %(wall clock%) time %(h:mm:ss or m:ss%): (%d+):([%d.]+)")
  local kb = text:match("Maximum resident set size %(kbytes%): (%d+)")
  return tonumber(m) * 60 + tonumber(s), tonumber(kb) * 1024, size
end

local function median(list)
  table.sort(list)
  return list[(#list + 1) // 2]
end

local function size_of(path) return assert(io.open(path, "rb")):seek("end") end
print(("%d marker kinds and %d categories: %.0f KB; %d of each: %.0f KB (%d rounds, load average %s)")
  :format(N, N, size_of(many) / 1e3, N // 2, size_of(half) / 1e3, ROUNDS,
          (io.open("/proc/loadavg") or io.tmpfile()):read("l") or "?"))
for _, mode in ipairs{"", " --json"} do
  local t, r, th, rh = {}, {}, {}, {}
  local out, out_half
  for i = 1, ROUNDS do -- interleaved, so that a slower phase of the machine hits both
    t[i], r[i], out = timed("lua5.4 lua/jobque-profile.lua report" .. mode .. " " .. many)
    th[i], rh[i], out_half = timed("lua5.4 lua/jobque-profile.lua report" .. mode .. " " .. half)
  end
  local tm, rm, thm, rhm = median(t), median(r), median(th), median(rh)
  print(("report%-7s N: %6.2f s, peak RSS %7.1f MB, %7.1f MB out; N / 2: %6.2f s, %7.1f MB, %7.1f MB out; "
         .. "ratios %.2fx the time, %.2fx the RSS, %.2fx the output")
    :format(mode, tm, rm / 1e6, out / 1e6, thm, rhm / 1e6, out_half / 1e6, tm / thm, rm / rhm, out / out_half))
end
os.remove(many)
os.remove(half)
