-- `jobque-profile report` on a trace of about 1,000,000 events against
-- decoding the same file with lua-cjson alone, in the same run; both run
-- as commands (a fresh lua5.4 each), the way a user runs them, and both end
-- with os.exit (the command does: no freeing of the heap object by object).
--   lua5.4 bench/report.lua [events]        (make bench)
-- Half the events are slices of a traced job queue (submits and job runs on
-- two workers), half are "tick" markers, so the report splits ~500,000 units.
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

local cpath = package.cpath:gsub("'", "")
local function timed(cmd)
  local t0 = now()
  local h = assert(io.popen(("LUA_CPATH='%s' %s"):format(cpath, cmd)))
  local out = h:read("a")
  assert(h:close(), "failed: " .. cmd .. "\n" .. out)
  return (now() - t0) / 1e9, out
end
local decode_cmd = ("lua5.4 -e 'local f = assert(io.open(\"%s\", \"rb\")) "
  .. "print(#require(\"cjson\").decode(f:read(\"a\")).traceEvents) io.stdout:flush() os.exit(0)'"):format(path)
local report_cmd = ("lua5.4 lua/jobque-profile.lua report '%s'"):format(path)

local bare, ours, ratio, events = {}, {}, {}, nil
for r = 1, 5 do -- interleaved: this VM's speed drifts
  local out
  bare[r], out = timed(decode_cmd)
  events = tonumber(out)
  ours[r], out = timed(report_cmd)
  assert(out:find("parallelism", 1, true), out)
  ratio[r] = ours[r] / bare[r]
end
table.sort(bare) table.sort(ours) table.sort(ratio) -- medians: the 3rd of 5
print(("report of %d events (%d in the file), median of 5 interleaved rounds, each a fresh lua5.4")
  :format(N, events))
print(("  cjson.decode alone  %.2f s"):format(bare[3]))
print(("  report              %.2f s"):format(ours[3]))
print(("  report / decode     %.2fx (target <= 2x)"):format(ratio[3]))

-- The HTML timeline of the same trace in headless Chromium: load, and
-- redraws while zooming (the page times itself under #bench).
local page = dir .. "/jq-bench-report.html"
local t0 = now()
assert(require("jobque_profile.html").write(assert(trace.load(path)), page, {test_hooks = true}))
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
