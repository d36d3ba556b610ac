-- `jobque-profile report` (text and --json) of a trace with many marker
-- kinds and many categories, against the same events under one kind and one
-- category, in the same run: each side a command (a fresh lua5.4 under
-- /usr/bin/time -v for its peak RSS).
--   lua5.4 bench/many_kinds.lua [N] [rounds]          (N: 4096 by default)
--   lua5.4 bench/many_kinds.lua N --write FILE        (only writes the trace)
-- The trace is written directly, in the format of docs/trace-format.md
-- (the registries hold 4,096 names each, so a recorded session cannot go
-- past that; this can): N categories and N marker kinds registered, and for
-- i = 1 .. N a marker of kind i on the caller's lane, then job i, of
-- category i, on a worker's. Each kind has one unit, from its marker to the
-- session's end, which holds jobs i .. N: the report's text lists the 3
-- busiest categories of each unit, --json every one (N * (N + 1) / 2 rows
-- in all: its output grows with N^2, the text's with N).
local N = math.tointeger(tonumber(arg[1] or "")) or 4096

-- The trace: `kinds` marker kinds and `cats` categories (1 and 1 for the
-- baseline), the same events either way.
local function write(path, kinds, cats)
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
  for i = 1, N do
    local t = 10000 * i
    add((',\n{"ph":"i","s":"g","ts":%s,"pid":1,"tid":2,"name":"kind %d","args":{"arg":%d}}')
      :format(us(t), (i - 1) % kinds + 1, i))
    add((',\n{"ph":"X","ts":%s,"dur":%s,"pid":1,"tid":1,"name":"cat %d","cat":"job","args":{"job":%d}}')
      :format(us(t + 1000), us(3000 + 7 * (i % 97)), (i - 1) % cats + 1, i))
  end
  local stop = us(10000 * (N + 1))
  add(('\n],\n"jobqueProfile":{"version":1,"clock":"monotonic","pid":1,"eventsPerLane":%d,"durationUs":%s,'
       .. '"startUs":0.000,"stopUs":%s,"lostEvents":0,"lanes":2,\n"laneInfo":[\n'):format(2 * N, stop, stop))
  add(('{"tid":1,"name":"worker 0","role":"worker","recorded":%d,"dropped":0},\n'):format(N))
  add(('{"tid":2,"name":"caller","role":"caller","recorded":%d,"dropped":0}],\n"categories":[\n'):format(N))
  local palette = {"#5E96DE", "#43B08A", "#AC82E4", "#C39536"}
  for c = 1, cats do
    add(('%s{"id":%d,"name":"cat %d","color":"%s"}'):format(c > 1 and ",\n" or "", c, c, palette[c % 4 + 1]))
  end
  add('],\n"markers":[\n')
  for k = 1, kinds do add(('%s{"id":%d,"name":"kind %d"}'):format(k > 1 and ",\n" or "", k, k)) end
  add("]}}\n")
  local f = assert(io.open(path, "wb"))
  assert(f:write(table.concat(out)))
  assert(f:close())
end

if arg[2] == "--write" then
  write(assert(arg[3], "--write needs a file"), N, N)
  return
end

local ROUNDS = math.tointeger(tonumber(arg[2] or "")) or 3
local dir = os.getenv("TMPDIR") or (io.open("/dev/shm") and "/dev/shm") or "/tmp"
local many, flat = dir .. "/jq-bench-kinds.json", dir .. "/jq-bench-kinds-flat.json"
write(many, N, N)
write(flat, 1, 1)

local cpath = package.cpath:gsub("'", "")
assert(os.execute("test -x /usr/bin/time"), "needs /usr/bin/time (Debian's time package)")
-- Runs cmd: its wall seconds (from /usr/bin/time), peak RSS in bytes and output size.
local function timed(cmd)
  local log = os.tmpname()
  local h = assert(io.popen(("LUA_PATH='lua/?.lua;;' LUA_CPATH='%s' /usr/bin/time -v -o '%s' %s | wc -c")
    :format(cpath, log, cmd)))
  local size = tonumber(h:read("a"))
  assert(h:close(), "failed: " .. cmd)
  local f = assert(io.open(log, "rb"))
  local text = f:read("a")
  f:close()
  os.remove(log)
  local m, s = text:match("Elapsed %(wall clock%) time %(h:mm:ss or m:ss%): (%d+):([%d.]+)")
  local kb = text:match("Maximum resident set size %(kbytes%): (%d+)")
  return tonumber(m) * 60 + tonumber(s), tonumber(kb) * 1024, size
end

local function median(list)
  table.sort(list)
  return list[(#list + 1) // 2]
end

local function size_of(path) return assert(io.open(path, "rb")):seek("end") end
print(("%d marker kinds and %d categories: %s, %.0f KB (the baseline, one kind and one category: %.0f KB)")
  :format(N, N, many, size_of(many) / 1e3, size_of(flat) / 1e3))
for _, mode in ipairs{"", " --json"} do
  local t, r, tf, rf = {}, {}, {}, {}
  local bytes
  for i = 1, ROUNDS do -- interleaved, so that a slower phase of the machine hits both
    t[i], r[i], bytes = timed("lua5.4 lua/jobque-profile.lua report" .. mode .. " " .. many)
    tf[i], rf[i] = timed("lua5.4 lua/jobque-profile.lua report" .. mode .. " " .. flat)
  end
  local tm, rm, tfm, rfm = median(t), median(r), median(tf), median(rf)
  print(("report%-7s %6.2f s, peak RSS %6.1f MB, %8.1f MB out; baseline %5.2f s, %5.1f MB: %5.2fx the time, "
         .. "%5.2fx the RSS"):format(mode, tm, rm / 1e6, bytes / 1e6, tfm, rfm / 1e6, tm / tfm, rm / rfm))
end
os.remove(many)
os.remove(flat)
