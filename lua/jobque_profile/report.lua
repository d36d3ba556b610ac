--- jobque_profile.report: figures (jobque_profile.stats) as text or JSON.
local util = require "jobque_profile.util"
local stats = require "jobque_profile.stats"

local M = {}

--- A duration in microseconds, readable: "850 us", "12.3 ms", "1.25 s".
function M.us(t)
  if t == nil then return "-" end
  local a = math.abs(t)
  if a >= 1e6 then return ("%.3g s"):format(t / 1e6) end
  if a >= 1e3 then return ("%.4g ms"):format(t / 1e3) end
  if a >= 10 then return ("%.0f us"):format(t) end
  return ("%.3g us"):format(t)
end

local function pct(x)
  return ("%.1f%%"):format(100 * x)
end

local function bar(share, width)
  if share ~= share or share <= 0 then return "" end
  local n = math.floor(math.min(share, 1) * width + 0.5)
  return ("#"):rep(n)
end

local ESCAPES = {["\t"] = "\\t"}

--- How many characters of a name the reports show (the page's legend too):
-- a longer name keeps its first 26 and last 13 characters around an ellipsis.
M.NAME_WIDTH = 40

local BREAK, ELLIPSIS = "\u{23CE}", "\u{2026}" -- ⏎ …

--- A name as the terminal should see it, on one line: each line break
-- ("\r\n", "\n" or "\r") shown as ⏎, other control characters (escape
-- sequences) as \t or \xHH, C1 controls, U+2028, U+2029 and bidi controls
-- as \uXXXX (util.unseen), bytes that are not UTF-8 as \xHH, and cut to
-- `width` characters (M.NAME_WIDTH by default; false: not cut): its first
-- two thirds, an ellipsis, and its end. The full name is in --json.
function M.shown(s, width)
  s = tostring(s)
  if width == nil then width = M.NAME_WIDTH end
  s = s:gsub("\r?\n", BREAK):gsub("\r", BREAK):gsub("%c", function(c)
    return ESCAPES[c] or ("\\x%02X"):format(c:byte())
  end)
  s = util.unseen(s, function(cp) return ("\\u%04X"):format(cp) end)
  if not utf8.len(s) then -- keep each valid sequence, escape the bytes of the others
    s = s:gsub("[\x80-\xFF][\x80-\xBF]*", function(seq)
      if utf8.len(seq) then return seq end
      return (seq:gsub(".", function(c) return ("\\x%02X"):format(c:byte()) end))
    end)
  end
  local n = utf8.len(s)
  if width and n > width then -- the head and the tail: names that share a prefix stay apart
    local head = math.ceil((width - 1) * 2 / 3)
    local tail = width - 1 - head
    s = s:sub(1, utf8.offset(s, head + 1) - 1) .. ELLIPSIS .. (tail > 0 and s:sub(utf8.offset(s, n - tail + 1)) or "")
  end
  return s
end

-- The width of a string on the terminal, in columns (wide characters 2,
-- combining marks 0).
local width_of = util.width

-- s right-aligned in n characters.
local function lpad(s, n)
  local w = width_of(s)
  if w >= n then return s end
  return (" "):rep(n - w) .. s
end

local function pad(s, n)
  s = tostring(s)
  local w = width_of(s)
  if w >= n then return s end
  return s .. (" "):rep(n - w)
end

-- "n things" with the plural only where n is not 1: "1 job", "2 jobs".
local function count_of(n, what, plural)
  return ("%d %s"):format(n, n == 1 and what or (plural or what .. "s"))
end
--- "n things" (the command's texts say "1 job", "1 lane").
M.count_of = count_of

local function top_categories(by, n)
  local parts = {}
  for i = 1, math.min(n, #by) do
    parts[i] = ("%s %s"):format(M.shown(by[i].name, 24), M.us(by[i].busy))
  end
  return table.concat(parts, ", ")
end

-- The lane groups, as the report labels them (stats: workers, others, total).
local GROUPS = {{"workers", "workers", "worker lane"}, {"others", "caller & other lanes", "lane"},
                {"total", "all lanes", "lane"}}

--- How many characters of a failure's message the text report shows (the
-- trace keeps up to 256 bytes of it; --json has all of that).
M.MESSAGE_WIDTH = 160

--- The failures section of a report: counts of failed and cancelled jobs
-- per category and the first few failures with their messages (lines, or
-- an empty list when the trace has none).
function M.failures_lines(f)
  local out = {}
  local fl = f.failures
  if not fl or fl.failed + fl.cancelled == 0 then return out end
  out[#out + 1] = ("failed jobs %d, cancelled jobs %d"):format(fl.failed, fl.cancelled)
  local w = 8
  for _, c in ipairs(fl.by_category) do w = math.max(w, width_of(M.shown(c.name))) end
  out[#out + 1] = ("%s  %7s  %9s"):format(pad("category", w), "failed", "cancelled")
  for _, c in ipairs(fl.by_category) do
    out[#out + 1] = ("%s  %7d  %9d"):format(pad(M.shown(c.name), w), c.failed, c.cancelled)
  end
  local t0 = f.range.t0 or 0
  for _, x in ipairs(fl.first) do
    out[#out + 1] = ("  job #%s (%s) on %s at %.3f us: %s"):format(x.job or "?", M.shown(x.category),
      M.shown(x.lane or "?"), x.ts - t0,
      x.message and M.shown(x.message, M.MESSAGE_WIDTH) or "(no message recorded)")
  end
  if fl.failed > #fl.first then
    local rest = fl.failed - #fl.first
    out[#out + 1] = "  ... and " .. count_of(rest, "more failed job")
  end
  return out
end

local function bytes_text(n)
  if n >= 1e9 then return ("%.3g GB"):format(n / 1e9) end
  if n >= 1e6 then return ("%.3g MB"):format(n / 1e6) end
  if n >= 1e3 then return ("%.3g kB"):format(n / 1e3) end
  return ("%d B"):format(n)
end

-- A section of rows: `title`, a header, and a line per item of `list`, the
-- first column its name, as wide as the widest (at least `w`); hfmt and
-- heads are the other columns' header, rfmt and cells(item) their values.
-- Empty without items.
local function table_lines(list, title, first, w, hfmt, heads, rfmt, cells)
  local out = {}
  if not list or #list == 0 then return out end
  for _, c in ipairs(list) do w = math.max(w, width_of(M.shown(c.name))) end
  out[1] = title
  out[2] = ("%s  " .. hfmt):format(pad(first, w), table.unpack(heads))
  for _, c in ipairs(list) do
    out[#out + 1] = ("%s  " .. rfmt):format(pad(M.shown(c.name), w), cells(c))
  end
  return out
end

--- The copies section of a report: time spent copying values between states
-- (copy in / out / result) by the job's category (lines; empty without copies).
function M.copies_lines(f)
  return table_lines(f.copies, "copy time by category (values copied between states; counted as busy)",
                     "category", 8, "%7s  %10s  %10s", {"copies", "time", "bytes"}, "%7d  %10s  %10s",
                     function(c) return c.count, M.us(c.time), bytes_text(c.bytes) end)
end

--- The spans section: per span category, how many spans had a piece in
-- the range, their run time (pieces summed), wall time (open to close) and
-- how many were closed by their job's end or the stop (lines; empty without).
function M.spans_lines(f)
  return table_lines(f.spans, "spans by category (run: their pieces summed; wall: open to close, suspensions "
                     .. "included)", "span category", 13, "%7s  %10s  %10s  %8s",
                     {"spans", "run", "wall", "unclosed"}, "%7d  %10s  %10s  %8d",
                     function(c) return c.count, M.us(c.run_us), M.us(c.wall_us), c.unclosed end)
end

-- A counter's value for the text report: integers exact, others to 6 digits.
local function value_text(x)
  if math.type(x) == "integer" then return tostring(x) end
  return ("%.6g"):format(x)
end

--- The counters section: each counter track's min / mean / max over the
-- range, the mean time-weighted (lines; empty without counters).
function M.counters_lines(f)
  return table_lines(f.counters, "counters (mean: weighted by the time each value held)", "counter", 7,
                     "%8s  %12s  %12s  %12s", {"samples", "min", "mean", "max"}, "%8d  %12s  %12s  %12s",
                     function(c) return c.samples, value_text(c.min), ("%.6g"):format(c.mean), value_text(c.max) end)
end

-- The warnings of a truncated trace: lanes that filled, events of threads
-- that got no lane.
local function truncation_lines(f, t0, say)
  if f.dropped.events > 0 then
    say("")
    say("WARNING: the trace is truncated: %s dropped because lanes filled.",
        f.dropped.events == 1 and "1 event was" or ("%d events were"):format(f.dropped.events))
    for _, l in ipairs(f.dropped.lanes) do
      say("  %s filled at %.3f us and dropped %s: it is not idle after that,",
          M.shown(l.name), (l.full_at or t0) - t0, count_of(l.dropped, "event"))
    end
    say("  only unrecorded. Record fewer events or pass a larger size to profile_start.")
  end
  if (f.dropped.lost or 0) > 0 then
    say("")
    say("WARNING: %s of threads that got no lane %s lost (more threads recorded at once",
        count_of(f.dropped.lost, "event"), f.dropped.lost == 1 and "was" or "were")
    say("  than the session has lanes for): what those threads did is not in the trace.")
  end
end

local function pct_of(x, whole)
  return whole and whole > 0 and pct(x / whole) or "-"
end

--- The latency section of a report (the latency of jobque_profile.graph.figures): per
-- category and overall, ready latency (ready -> its worker took it), resume
-- latency (awaited job ended -> resumed), run and suspended time; then the
-- jobs that waited longest for a worker (lines; empty without jobs).
function M.latency_lines(f)
  local out = {}
  local l = f.latency
  if not l then return out end
  local w = 10
  for _, c in ipairs(l.run.by_category) do w = math.max(w, width_of(M.shown(c.name))) end
  out[#out + 1] = "job latencies (ready: ready -> taken by a worker; resume: awaited job ended -> resumed)"
  out[#out + 1] = ("%s  %-9s  %7s  %10s  %10s  %10s"):format(pad("category", w), "", "count", "p50", "p95", "max")
  local function rows(name, d)
    out[#out + 1] = ("%s  %-9s  %7d  %10s  %10s  %10s"):format(pad(M.shown(name), w), d.label, d.count,
                                                              M.us(d.p50_us), M.us(d.p95_us), M.us(d.max_us))
  end
  local kinds = {{"ready", "ready"}, {"resume", "resume"}, {"run", "run"}, {"suspended", "suspended"}}
  local names, seen = {}, {}
  for _, k in ipairs(kinds) do
    for _, c in ipairs(l[k[1]].by_category) do
      if not seen[c.name] then
        seen[c.name] = true
        names[#names + 1] = c.name
      end
    end
  end
  table.sort(names)
  local by_name = {} -- per kind, its rows by category name (the first of a name, as a search would find)
  for i, k in ipairs(kinds) do
    local index = {}
    for _, c in ipairs(l[k[1]].by_category) do
      if index[c.name] == nil then index[c.name] = c end
    end
    by_name[i] = index
  end
  for _, name in ipairs(names) do
    for i, k in ipairs(kinds) do
      local c = by_name[i][name]
      if c and c.count > 0 then rows(name, {label = k[2], count = c.count, p50_us = c.p50_us, p95_us = c.p95_us,
                                            max_us = c.max_us}) end
    end
  end
  for _, k in ipairs(kinds) do
    local d = l[k[1]]
    if d.count > 0 then rows("all jobs", {label = k[2], count = d.count, p50_us = d.p50_us, p95_us = d.p95_us,
                                          max_us = d.max_us}) end
  end
  if #l.top_ready > 0 then
    local t0 = f.range.t0 or 0
    out[#out + 1] = (#l.top_ready == 1 and "the longest ready latency (waiting for a free worker):"
                     or ("the %d longest ready latencies (waiting for a free worker):"):format(#l.top_ready))
    out[#out + 1] = ("  %10s  %s  %14s  %14s  %10s"):format("job", pad("category", w), "ready (us)", "start (us)",
                                                          "latency")
    for _, x in ipairs(l.top_ready) do
      out[#out + 1] = ("  %10s  %s  %14.3f  %14.3f  %10s"):format(tostring(x.job), pad(M.shown(x.category), w),
                                                                  x.ready_us - t0, x.start_us - t0, M.us(x.latency_us))
    end
  end
  return out
end

-- A job id as the text shows it.
local function job_text(id)
  return M.shown(id == nil and "?" or id, 20)
end

--- How many `worker busy` rows the critical path names (the others are summed).
M.HELD_BY_ROWS = 5

-- The make-up rows of a path: its kinds (most first), `run` followed by its
-- categories, `worker busy` by the job that held the worker.
local function make_up(cp)
  local rows = {}
  for _, k in ipairs(cp.by_kind or {}) do
    rows[#rows + 1] = {label = k.kind, us = k.us}
    if k.kind == "run" and #(cp.by_category or {}) > 1 then
      for _, c in ipairs(cp.by_category) do
        rows[#rows + 1] = {label = "  " .. M.shown(c.name, 26), us = c.run_us}
      end
    elseif k.kind == "worker busy" then
      local held = cp.held_by or {} -- (most first: the walk sums them)
      local shown, rest = 0, 0
      for i, h in ipairs(held) do
        if i <= M.HELD_BY_ROWS then
          rows[#rows + 1] = {label = "  held by job " .. job_text(h.job), us = h.us}
          shown = shown + 1
        else
          rest = rest + h.us
        end
      end
      if #held > shown then
        rows[#rows + 1] = {label = "  held by " .. count_of(#held - shown, "other job"), us = rest}
      end
    end
  end
  return rows
end

--- The critical path section (the critical path of jobque_profile.graph.figures):
-- its length and share, its jobs, its make-up by kind (docs/cli.md names
-- the kinds), and a caveat when the trace is partial (lines; empty
-- without jobs). The graph's parallelism is under the what-if table.
function M.critical_path_lines(f)
  local out = {}
  local cp = f.critical_path
  if not cp then return out end
  local n, distinct, seen = #cp.jobs, 0, {}
  for _, id in ipairs(cp.jobs) do
    if not seen[id] then seen[id], distinct = true, distinct + 1 end
  end
  out[#out + 1] = ("critical path: %s, %s of the session, through %s"):format(M.us(cp.duration_us),
    cp.share and pct(cp.share) or "-", count_of(distinct, "job"))
  if n > 0 then
    local shown = {}
    for i = 1, math.min(n, 12) do shown[i] = job_text(cp.jobs[i]) end
    local more = n > 12 and (" -> ... (%d more; --json lists them all)"):format(n - 12) or ""
    out[#out + 1] = ("  jobs: %s%s"):format(table.concat(shown, " -> "), more)
  end
  local rows = make_up(cp)
  local w = 24
  for _, r in ipairs(rows) do w = math.max(w, width_of(r.label)) end
  local d = cp.duration_us
  for _, r in ipairs(rows) do
    out[#out + 1] = ("  %s  %10s  %7s"):format(pad(r.label, w), M.us(r.us), pct_of(r.us, d))
  end
  if cp.partial then
    out[#out + 1] = ("  partial: %s; the path may be shorter than the run's"):format(
      cp.partial_why and M.shown(cp.partial_why, 80) or "the trace is incomplete")
  end
  return out
end

-- The recorded workers as the what-if table's heading says them: "3
-- workers" (one queue), "2 queues of 1 and 3 workers", "2 queues of 1
-- worker each".
local function recorded_text(y)
  local qs = y.queues or {}
  if #qs <= 1 then return count_of(y.recorded_workers or 0, "worker") end
  local counts, same = {}, true
  for i, q in ipairs(qs) do
    counts[i] = tostring(q.workers)
    same = same and q.workers == qs[1].workers
  end
  if same then return ("%d queues of %s each"):format(#qs, count_of(qs[1].workers, "worker")) end
  return ("%d queues of %s and %s workers"):format(#qs, table.concat(counts, ", ", 1, #qs - 1), counts[#qs])
end

-- Whether a row of W workers per queue replays the recorded setup: every
-- queue recorded W workers.
local function has_recorded_row(y)
  local w
  for _, q in ipairs(y.queues or {}) do
    if w and q.workers ~= w then return false end
    w = q.workers
  end
  w = w or y.recorded_workers
  for _, p in ipairs(y.predictions or {}) do
    if p.workers == w then return true end
  end
  return false
end

--- The what-if section (the replay of jobque_profile.graph.figures): the
-- recorded run beside the session the replay predicts with each queue's
-- recorded workers (when no other row is that setup), and on 1, 2, 4, 8,
-- 16 and unlimited workers per queue (lines; empty without a replay).
function M.whatif_lines(f)
  local out = {}
  local y = f.whatif
  if not y then return out end
  out[#out + 1] = ("what if: the job graph replayed on W workers per queue (recorded: %s, %s)"):format(
    recorded_text(y), M.us(y.recorded_us))
  out[#out + 1] = ("  %11s  %10s  %8s"):format("workers", "session", "speed-up")
  local function row(label, us)
    local x = (us and us > 0 and y.recorded_us) and ("x%.2f"):format(y.recorded_us / us) or "-"
    out[#out + 1] = ("  %11s  %10s  %8s"):format(label, M.us(us), x)
  end
  if y.as_recorded_us and not has_recorded_row(y) then row("as recorded", y.as_recorded_us) end
  for _, p in ipairs(y.predictions or {}) do row(tostring(p.workers), p.predicted_us) end
  row("unlimited", y.span_us)
  out[#out + 1] = ("  (speed-up: the recorded session / the predicted one; work %s in all;"):format(M.us(y.work_us))
  out[#out + 1] = "   the replay assumes a free core per worker and jobs as long as recorded: docs/cli.md)"
  if y.partial then
    out[#out + 1] = "  partial: the replay ran what the trace holds; events were lost or waits never ended"
  end
  if y.parallelism then
    local cp = f.critical_path
    out[#out + 1] = ("parallelism: the graph has %.2f (work / the unlimited span), it got %.2f (run time / session)")
      :format(y.parallelism, cp and cp.achieved or 0)
  end
  return out
end

-- The lanes' table (workers first, then the caller and the others, each in
-- lane order), then a line per group.
local function lanes_lines(f, say)
  local w = 20
  for _, l in ipairs(f.lanes) do w = math.max(w, width_of(M.shown(l.name))) end
  local order = {}
  for _, l in ipairs(f.lanes) do if l.role == "worker" then order[#order + 1] = l end end
  for _, l in ipairs(f.lanes) do if l.role ~= "worker" then order[#order + 1] = l end end
  say("%s  %-6s  %10s  %10s  %7s  %8s", pad("lane", w), "role", "busy", "wait", "idle", "events")
  for _, l in ipairs(order) do
    say("%s  %-6s  %10s  %10s  %7s  %8d", pad(M.shown(l.name), w), l.role or "", M.us(l.busy), M.us(l.wait),
        pct(l.idle), l.events)
  end
  say("")
  say("%s  %-6s  %10s  %10s  %7s  %8s  %s", pad("group", w), "", "busy", "wait", "idle", "events", "parallelism")
  for _, g in ipairs(GROUPS) do
    local x = f[g[1]]
    if x then
      if x.lanes == 0 then
        say("%s  %-6s  %10s  %10s  %7s  %8s  %s", pad(g[2], w), "", "-", "-", "-", "-", "no lanes")
      else
        say("%s  %-6s  %10s  %10s  %7s  %8d  %.2f of %d %s%s", pad(g[2], w), "", M.us(x.busy), M.us(x.wait),
            pct(x.idle), x.events, x.parallelism, x.lanes, g[3], x.lanes == 1 and "" or "s")
      end
    end
  end
  say("(parallelism: busy lanes on average; idle: 1 - busy / (range x lanes) of the group)")
end

-- The categories' busy time and share, most busy first.
local function categories_lines(f, say)
  if #f.categories == 0 then return end
  say("")
  local cw = 8
  for _, c in ipairs(f.categories) do cw = math.max(cw, width_of(M.shown(c.name))) end
  say("%s  %10s  %6s", pad("category", cw), "busy", "share")
  for _, c in ipairs(f.categories) do
    say("%s  %10s  %6s  %s", pad(M.shown(c.name), cw), M.us(c.busy), pct(c.share), bar(c.share, 30))
  end
end

-- The rows of a top-functions list (samples.top's).
local function top_rows(top, out)
  out[#out + 1] = ("  %7s  %7s  %10s  %s"):format("self %", "total %", "self", "frame")
  for _, r in ipairs(top) do
    out[#out + 1] = ("  %7s  %7s  %10s  %s"):format(pct(r.self), pct(r.total), M.us(r.self_us), M.shown(r.frame, 60))
  end
end

--- The top functions section: the functions the CPU samples of the range
-- found running most (self), with the share of the samples they were on
-- the stack of (total), over all samples, then in each of the heaviest
-- categories (lines; empty without samples).
function M.samples_lines(f)
  local out = {}
  local s = f.samples
  if not s then return out end
  local weight = ("%d"):format(s.total_weight) -- an integer within 2^53 (the loader's)
  out[#out + 1] = s.total_us
    and ("top functions (CPU samples: %s sampled, weight %s x %s%s; total: on the stack)"):format(
      M.us(s.total_us), weight, M.us(s.period_us), s.hz and (" at %.10g Hz"):format(s.hz) or "")
    or ("top functions (CPU samples: weight %s, the trace gives no period; total: on the stack)"):format(weight)
  if s.total_weight == 0 then
    out[#out + 1] = "  no samples in the range"
    return out
  end
  top_rows(s.top, out)
  for _, c in ipairs(s.by_category) do
    out[#out + 1] = ("top functions in category \"%s\" (%s of the samples' weight)"):format(M.shown(c.name),
                                                                                        pct(c.total))
    top_rows(c.top, out)
  end
  return out
end

-- A marker kind's units: their durations and the slowest of them.
local function marker_lines(m, t0, say)
  say("")
  if m.count == 0 then
    say("marker \"%s\": no units in range", M.shown(m.kind))
    return
  end
  say("marker \"%s\": %s; duration min %s, median %s, p95 %s, max %s", M.shown(m.kind), count_of(m.count, "unit"),
      M.us(m.min), M.us(m.median), M.us(m.p95), M.us(m.max))
  local slowest = m.slowest or {}
  if #slowest == 0 then return end
  say("  the %s:", #slowest == 1 and "slowest unit" or ("%d slowest units"):format(#slowest))
  -- the arg column as wide as its widest arg (a 64-bit one has 20 characters);
  -- each unit with its 3 busiest categories only (it can hold thousands)
  local units, args, aw = {}, {}, 8
  for k, j in ipairs(slowest) do
    units[k] = stats.unit_summary(m.units, j, 3)
    local arg = units[k].arg
    args[k] = arg ~= nil and M.shown(arg, 20) or "-"
    aw = math.max(aw, width_of(args[k]))
  end
  say("  %7s  %s  %14s  %10s  %s", "unit", lpad("arg", aw), "start (us)", "duration", "busy by category")
  for k, u in ipairs(units) do
    say("  %7d  %s  %14.3f  %10s  %s", u.index, lpad(args[k], aw), u.from - t0,
        M.us(u.duration), top_categories(u.by_category, 3))
  end
  if m.count > #slowest then
    local rest = m.count - #slowest
    say("  ... %s (--top N lists more, --json lists them all)", count_of(rest, "more unit"))
  end
end

--- The report of one trace: figures from stats.compute, model from trace.load.
-- Times are microseconds since the session's start (f.range.t0).
function M.text(f, model)
  local out = {}
  local function say(fmt, ...) out[#out + 1] = fmt:format(...) end
  local r = f.range
  local t0 = r.t0 or model.t0 or 0
  say("%s: %s trace%s, %s, %s", M.shown(model.path or "trace", false),
      model.format == "jobque" and "jobque" or "Chrome",
      model.clock and (" (clock " .. M.shown(model.clock) .. ")") or "", count_of(#model.lanes, "lane"),
      count_of(f.events, "event"))
  say("range %.3f .. %.3f us since the session's start (%s)", r.from - t0, r.to - t0, M.us(r.duration))
  truncation_lines(f, t0, say)
  say("")
  lanes_lines(f, say)
  if f.workers and f.workers.lanes == 0 then
    say("(no lane is a worker: a queue's workers are named \"worker N\" or \"<queue name> N\")")
  end
  if f.awaits.count > 0 then
    say("awaits %d, %s in all (jobs suspended on other jobs; their workers stay free)",
        f.awaits.count, M.us(f.awaits.time))
  end
  categories_lines(f, say)
  local top = M.samples_lines(f)
  if #top > 0 then
    say("")
    for _, line in ipairs(top) do out[#out + 1] = line end
  end
  for _, m in ipairs(f.markers) do marker_lines(m, t0, say) end
  for _, section in ipairs{M.spans_lines(f), M.counters_lines(f), M.latency_lines(f), M.critical_path_lines(f),
                           M.whatif_lines(f), M.copies_lines(f), M.failures_lines(f)} do
    if #section > 0 then
      say("")
      for _, line in ipairs(section) do out[#out + 1] = line end
    end
  end
  return table.concat(out, "\n") .. "\n"
end

--- Two traces side by side: rows from stats.compare.
function M.compare_text(rows, a_name, b_name)
  local out = {}
  -- A row's label as shown: its name (a lane, category or kind) cut as in
  -- the report; --json has the full label.
  local function label(r)
    if r.pre then return r.pre .. (r.name and M.shown(r.name) or "") .. (r.post or "") end
    return M.shown(r.label, false)
  end
  local w = 12
  for _, r in ipairs(rows) do w = math.max(w, width_of(label(r))) end
  local function fmt(v, unit)
    if v == nil then return "-" end
    if unit == "us" then return M.us(v) end
    if unit == "%" then return pct(v) end
    if unit == "x" then return ("%.2f"):format(v) end
    if unit == "B" then return bytes_text(v) end
    if math.type(v) == "float" and not math.tointeger(v) then return ("%.6g"):format(v) end
    return tostring(math.tointeger(v) or v)
  end
  out[#out + 1] = ("a: %s\nb: %s\n"):format(M.shown(a_name, false), M.shown(b_name, false))
  out[#out + 1] = ("%s  %12s  %12s  %12s  %8s"):format(pad("", w), "a", "b", "b - a", "b / a")
  local group, partial
  for _, r in ipairs(rows) do
    if group and r.group ~= group then out[#out + 1] = "" end -- a blank line between groups
    group = r.group
    local diff
    if r.diff == nil then
      diff = "-"
    elseif r.unit == "%" then
      diff = ("%+.1f pt"):format(100 * r.diff)
    elseif r.unit == "us" or r.unit == "B" then
      diff = (r.diff >= 0 and "+" or "-") .. fmt(math.abs(r.diff), r.unit)
    else
      diff = (r.diff >= 0 and "+" or "") .. fmt(r.diff, r.unit)
    end
    if r.a_partial or r.b_partial then partial = true end
    local x, y = fmt(r.a, r.unit) .. (r.a_partial and "*" or ""), fmt(r.b, r.unit) .. (r.b_partial and "*" or "")
    out[#out + 1] = ("%s  %12s  %12s  %12s  %8s"):format(pad(label(r), w), x, y, diff,
                                                       r.ratio and ("%.2fx"):format(r.ratio) or "-")
  end
  if partial then
    out[#out + 1] = ""
    out[#out + 1] = "* partial: that trace lost events or left spans unclosed (or the replay met a wait it could"
    out[#out + 1] = "  never end): its path may be shorter than its run's, its replay ran what it holds (report says why)"
  end
  return table.concat(out, "\n") .. "\n"
end

-- JSON text: the reader's json_text (src/reader/json_text.c), through
-- jobque_profile.util.
M.quote = util.quote

--- `v` as JSON text.
M.json = util.json

return M
