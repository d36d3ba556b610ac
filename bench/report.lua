-- `jobque-profile report` and `html` on a trace of about 1,000,000 events
-- against decoding the same file with lua-cjson alone, in the same run
-- (the targets: report and html <= 0.25x the decode, report's peak
-- RSS <= 1.5x the file). Every side runs as a command (a fresh lua5.4 each,
-- under /usr/bin/time -v for its peak RSS), the way a user runs them, and
-- each ends with os.exit (the command does: no freeing of the heap object
-- by object). Also the loader alone.
--   lua5.4 bench/report.lua [events] [rounds]      (make bench)
--   lua5.4 bench/report.lua 10000000 1             (the 10M-event mode; not CI)
-- Half the events are slices of a traced job queue (submits, copies and job
-- runs on two workers), half are "tick" markers.
-- The same session saved as .pftrace too: its report against the JSON's
-- (targets: <= 1.0x the time, <= 1.0x the peak RSS).
-- Then the HTML timeline of the same trace, timed in headless Chromium.
local p = require "jobque_profile"
local jobque = require "jobque"
local core = require "jobque.core"
local cjson = require "cjson"
local trace = require "jobque_profile.trace"

local N = math.tointeger(tonumber(arg[1] or "")) or 1000000
local now = core.monotonic_ns
local dir = os.getenv("TMPDIR") or (io.open("/dev/shm") and "/dev/shm") or "/tmp"
local path = dir .. "/jq-bench-report.json"

local tick = p.profile_marker_id("tick")
p.profile_start(N)
jobque.with_job_que({workers = 2}, function(q)
  p.profile_tag(p.profile_category("work"))
  local empty = function() end
  for i = 1, N // 4 do
    p.profile_marker(tick, i)
    q:submit(empty)
    p.profile_marker(tick, i)
  end
  q:wait_all()
end)
p.profile_stop()
p.profile_tag(0)
assert(p.profile_save(path))
local ppath = dir .. "/jq-bench-report.pftrace"
assert(p.profile_save(ppath))

local ROUNDS = math.tointeger(tonumber(arg[2] or "")) or 3
local bytes = assert(io.open(path, "rb")):seek("end")
local cpath = package.cpath:gsub("'", "")
local has_time = os.execute("test -x /usr/bin/time")
-- Runs cmd: seconds, its stdout and its peak RSS in bytes (nil without /usr/bin/time).
local function timed(cmd)
  local rss_file = os.tmpname()
  local line = ("LUA_PATH='lua/?.lua;;' LUA_CPATH='%s' %s%s"):format(cpath,
    has_time and ("/usr/bin/time -v -o '%s' "):format(rss_file) or "", cmd)
  local t0 = now()
  local h = assert(io.popen(line))
  local out = h:read("a")
  assert(h:close(), "failed: " .. cmd .. "\n" .. out)
  local s = (now() - t0) / 1e9
  local f = io.open(rss_file, "rb")
  local kb = f and f:read("a"):match("Maximum resident set size %(kbytes%): (%d+)")
  if f then f:close() end
  os.remove(rss_file)
  return s, out, kb and tonumber(kb) * 1024
end
local page = dir .. "/jq-bench-report.html"
local sides = {
  {"decode", ("lua5.4 -e 'local f = assert(io.open(\"%s\", \"rb\")) "
    .. "print(#require(\"cjson\").decode(f:read(\"a\")).traceEvents) io.stdout:flush() os.exit(0)'"):format(path)},
  {"load", ("lua5.4 -e 'local m = assert(require(\"jobque_profile.trace\").load(\"%s\")) "
    .. "print(m.nevents) io.stdout:flush() os.exit(0)'"):format(path)},
  {"report", ("lua5.4 lua/jobque-profile.lua report --quiet '%s'"):format(path), "parallelism"},
  {"report .pftrace", ("lua5.4 lua/jobque-profile.lua report --quiet '%s'"):format(ppath), "parallelism"},
  {"html", ("lua5.4 lua/jobque-profile.lua html --quiet '%s' -o '%s'"):format(path, page)},
}
local secs, rss, events = {}, {}, nil
for _ = 1, ROUNDS do -- interleaved: this VM's speed drifts
  for _, side in ipairs(sides) do
    local s, out, peak = timed(side[2])
    if side[1] == "decode" then events = tonumber(out) end
    if side[3] then assert(out:find(side[3], 1, true), out) end
    secs[side[1]] = secs[side[1]] or {}
    table.insert(secs[side[1]], s)
    rss[side[1]] = math.max(rss[side[1]] or 0, peak or 0)
  end
end
local function median(list)
  table.sort(list)
  return list[(#list + 1) // 2]
end
print(("%d events recorded (%d in the file, %.1f MB), median of %d interleaved rounds, each side a fresh lua5.4")
  :format(N, events, bytes / 1e6, ROUNDS))
local decode = median(secs.decode)
local targets = {report = 0.25, html = 0.25}
for _, side in ipairs(sides) do
  local name = side[1]
  local s = median(secs[name])
  print(("  %-16s %7.2f s  %5.2fx the decode%s   peak RSS %6.0f MB = %.2fx the file%s"):format(name, s, s / decode,
    targets[name] and (" (target <= %.2fx)"):format(targets[name]) or "                 ", rss[name] / 1e6,
    rss[name] / bytes, name == "report" and " (target <= 1.5x)" or ""))
end
local rp, rj = median(secs["report .pftrace"]), median(secs.report)
print(("  report of the .pftrace (%.1f MB): %.2fx the report of the JSON's time (target <= 1.0x), "
  .. "peak RSS %.2fx (target <= 1.0x)"):format(assert(io.open(ppath, "rb")):seek("end") / 1e6, rp / rj,
  rss["report .pftrace"] / rss.report))
os.remove(ppath)
print("  (the machine may be shared: compare the ratios, not the seconds)")

-- The HTML timeline of the same trace in headless Chromium: load, and
-- redraws while zooming (the page times itself under #bench).
local t0 = now()
assert(require("jobque_profile.page").write(assert(trace.load(path)), page, {test_hooks = true}))
local html_s = (now() - t0) / 1e9
local profile = os.tmpname()
os.remove(profile)
local dom = io.popen(("chromium --headless --no-sandbox --disable-gpu --disable-background-networking "
  .. "--user-data-dir='%s' --window-size=1300,400 --dump-dom 'file://%s#bench' 2>/dev/null"):format(profile, page))
  :read("a")
os.execute("rm -rf '" .. profile .. "'")
os.remove(page)
os.remove(path)
local state = dom:match('data%-state="([^"]*)"')
if state then
  state = cjson.decode((state:gsub("&quot;", '"'):gsub("&amp;", "&")))
  print(("html timeline: written in %.1f s; in Chromium: loaded and drawn in %.0f ms, "
         .. "redraw while zooming median %.1f ms, max %.1f ms"):format(html_s, state.loadMs,
         state.redrawMs.median, state.redrawMs.max))
else
  print(("html timeline: written in %.1f s; Chromium did not report (is the chromium package installed?)")
    :format(html_s))
end
