--- jobque_profile.stats: figures over a trace model (see jobque_profile.trace).
--
-- compute(model [, from, to [, top [, opts]]]) -> figures over the range [from, to],
-- ends included (microseconds on the file's clock; by default the trace's
-- bounds, model.t0 .. t1: the session's start and stop for our files):
--   range     { from, to, duration, t0 }; t0 is model.t0, the session's
--             start: the zero of the text report, the page and --from/--to
--   events    events that start in the range: every event of the file
--             (slices, slice ends, instants, markers, flows, awaits ...)
--   lanes[i]  { name, role, busy, wait, idle, events, dropped, full_at };
--             role is "worker", "caller" or "other" (see M.lane_role)
--   workers   { lanes, busy, wait, idle, parallelism, events } of the worker lanes
--   others    the same of the caller and every other lane
--   total     the same of all lanes
--   categories[i] { name, color, busy, share }, most busy first
--   markers[i]    { kind, count, min, median, p95, max, units[j], slowest }
--                 units[j] = { index, arg, from, to, duration, by_category[k] = { name, busy } }
--                 slowest = the unit numbers of the `top` (10) longest units,
--                 longest first (ties: the earlier first)
--   awaits    { count, time }: jobs suspended on another job (workers stay free)
--   dropped   { events, lost, lanes[i] = { name, dropped, full_at } }
--   failures  { failed, cancelled, by_category[i] = { name, failed, cancelled },
--               first[i] = { job, category, message, lane, ts } }: failed and
--             cancelled jobs whose event lies in [from, to] (the first
--             FIRST_FAILURES failures listed, in time order)
--   copies[i] { name, count, time, bytes }: values copied between states
--             (copy in / out / result), by the job's category, most time first
--   latency   nil without jobs, else the latency of jobque_profile.graph.figures: ready,
--             resume, run and suspended time of the jobs (p50_us, p95_us,
--             max_us, by_category) and top_ready, the `top` longest ready waits
--   critical_path  nil without jobs, else the critical path of jobque_profile.graph.figures
--             (duration_us, share, jobs, steps, by_kind, by_category, held_by, partial ...;
--             no steps with opts.steps = false: the text report's and compare's)
--   whatif    nil without jobs, else the replay of jobque_profile.graph.figures:
--             the session predicted on 1, 2, 4, 8, 16 and unlimited workers
--             per queue and with each queue's recorded workers (as_recorded_us)
--   spans[i]  { name, count, run_us, wall_us, unclosed } per span category, in
--             order of first appearance, of the spans with a piece in the
--             range: run_us sums their pieces, wall_us their first start to
--             last end (suspensions included), both cut at the range;
--             unclosed counts those closed by their job's end or the stop
--   samples   nil without CPU samples, else jobque_profile.samples.figures
--             over the range: hz, period_us, total_weight, total_us, lanes,
--             top (the `top` functions by self weight), by_category (the
--             three heaviest categories' top functions); opts.all_frames:
--             also frames, every function's row by its text (compare's)
--   counters[i] { name, pid, samples, min, mean, max } per counter track, of
--             the values in effect in the range (a sample holds until the
--             next one of its track; the last to the range's end): mean is
--             time-weighted over the part of the range after the first
--             sample (the plain mean of the samples when that is no time);
--             min and max are samples, integers exact
-- A span inside a job adds no busy time (its job's slice holds it); a span
-- outside jobs (a caller's own bracketing of its time) is busy time of its
-- lane, as the page counts it. Copies are busy time of the lane that
-- copied, under the job's category.
-- Busy time is the time a lane spent in slices other than waits (job runs,
-- copies and submits, and spans outside jobs, for our traces), counted once
-- where slices nest, under the first slice met in the lane's order; idle is
-- 1 - busy / (duration x lanes); parallelism is busy / duration, the
-- average number of busy lanes. Marker units run from one marker of a kind
-- to the next; the last runs to the end of the range (a marker at the very
-- end of the range counts as an event but starts no unit: it has no time
-- in the range). Median and p95 are
-- nearest-rank.
-- compare(a, b) -> rows { label, group, a, b, diff, ratio, unit, a_partial,
-- b_partial } of two figures (their samples' rows need compute's
-- opts.all_frames) (a_partial, b_partial: true on the critical
-- path's and the replay's rows when that side's is partial).
-- unit_summary(units, j, n) -> unit j of a kind's units with only its n
-- busiest categories (what the text report shows; a unit's by_category
-- lists every category it holds).
local without_gc = require("jobque_profile.util").without_gc
local graph = require "jobque_profile.graph"
local samples = require "jobque_profile.samples"

local M = {}

-- The per-event loops are the reader's C (src/reader/stats.c): the lane
-- sweeps, the marker units, the counters and the copies.
local reader = require "jobque_profile.reader"

M.TOP = 10 -- the slowest units listed per marker kind, by default

local ROLES = {worker = true, caller = true, other = true}

--- What a lane is: "worker" (a queue's worker thread), "caller" (the thread
-- that started the session) or "other" (any other thread that recorded).
-- A lane's entry in the file's lane details (jobqueProfile.laneInfo, or the
-- older list under jobqueProfile.lanes) decides when it has a `role`;
-- otherwise the name the writer gave it: "caller" (or the seed's "caller N"),
-- "worker N" or "<queue name> N" for workers, "thread N" for other threads.
function M.lane_role(lane, model)
  local meta = model and model.meta
  if type(meta) == "table" then
    for _, key in ipairs{"laneInfo", "lanes"} do
      local list = meta[key]
      if type(list) == "table" then
        for _, info in ipairs(list) do
          if type(info) == "table" and info.name == lane.name and ROLES[info.role] then return info.role end
        end
      end
    end
  end
  local name = lane.name
  if type(name) ~= "string" then return "other" end
  -- "caller N": the seed system's writer names its caller lane so (its last lane)
  if name == "caller" or name:match("^caller %d+$") then return "caller" end
  local prefix = name:match("^(.-) %d+$")
  if prefix and prefix ~= "" and prefix ~= "thread" and not prefix:find("%c") then return "worker" end
  return "other"
end

local function by_busy(x, y)
  if x.busy ~= y.busy then return x.busy > y.busy end
  return x.name < y.name
end

local function sorted_categories(model, acc, total)
  local list = {}
  for name, busy in pairs(acc) do
    local c = model.categories.by_name[name]
    list[#list + 1] = {name = name, color = c and c.color or "#888888", busy = busy,
                       share = total > 0 and busy / total or 0}
  end
  table.sort(list, by_busy)
  return list
end

-- The n units of a marker kind as a list whose units[j] becomes a table
-- when first read (#units, ipairs and indexing work as on a plain list);
-- row(j) -> arg, from, to, by, busy: by sorted busiest first, with shares.
local function unit_view(n, row)
  return setmetatable({}, {
    __len = function() return n end,
    __index = function(list, j)
      if math.type(j) ~= "integer" or j < 1 or j > n then return nil end
      local arg, from, to, by, busy = row(j)
      local u = {index = j, arg = arg, from = from, to = to, duration = to - from, busy = busy, by_category = by}
      rawset(list, j, u)
      return u
    end,
  })
end

-- A kind's units (unit_view's list) -> its top(j, n) (stats_lanes').
local tops = setmetatable({}, {__mode = "k"})

--- Unit j of a marker kind's `units` (compute's markers[k].units) with only
-- the first n entries of its by_category (the busiest): { index, arg, from,
-- to, duration, by_category[i] = { name, busy } }, nil without unit j. A
-- unit's table lists every category it holds, and a unit can hold thousands
-- (a trace can register 4,096): this makes the n it needs, not the list.
function M.unit_summary(units, j, n)
  local top = tops[units]
  if top and rawget(units, j) == nil then
    if math.type(j) ~= "integer" or j < 1 or j > #units then return nil end
    local arg, from, to, by = top(j, n)
    return {index = j, arg = arg, from = from, to = to, duration = to - from, by_category = by}
  end
  local u = units[j]
  if u == nil then return nil end
  local by = {}
  for i = 1, math.min(n, #u.by_category) do by[i] = {name = u.by_category[i].name, busy = u.by_category[i].busy} end
  return {index = u.index, arg = u.arg, from = u.from, to = u.to, duration = u.duration, by_category = by}
end

--- How many failures compute lists (the first ones in time).
M.FIRST_FAILURES = 5

-- Failed and cancelled jobs whose event lies in [a, b] (closed: a close's
-- cancellations are often the trace's very last events).
local function failures(model, a, b)
  local rows, by_name, first = {}, {}, {}
  local out = {failed = 0, cancelled = 0, by_category = rows, first = first}
  local function row(name)
    local r = by_name[name]
    if not r then
      r = {name = name, failed = 0, cancelled = 0}
      by_name[name] = r
      rows[#rows + 1] = r
    end
    return r
  end
  for _, f in ipairs(model.failures or {}) do
    if f.ts >= a and f.ts <= b then
      out.failed = out.failed + 1
      local r = row(f.category)
      r.failed = r.failed + 1
      if #first < M.FIRST_FAILURES then
        first[#first + 1] = {job = f.job, category = f.category, message = f.message, lane = f.lane.name, ts = f.ts}
      end
    end
  end
  for _, c in ipairs(model.cancels or {}) do
    if c.ts >= a and c.ts <= b then
      out.cancelled = out.cancelled + 1
      local r = row(c.category)
      r.cancelled = r.cancelled + 1
    end
  end
  table.sort(rows, function(x, y)
    local nx, ny = x.failed + x.cancelled, y.failed + y.cancelled
    if nx ~= ny then return nx > ny end
    return x.name < y.name
  end)
  return out
end

local function sort_copies(rows)
  table.sort(rows, function(x, y)
    if x.time ~= y.time then return x.time > y.time end
    return x.name < y.name
  end)
  return rows
end

-- Copy time (clipped to [a, b)), count and bytes of the copies that overlap
-- the range, by the category of their job, most time first.
local function copies(model, a, b)
  return sort_copies(reader.stats_copies(model, a, b))
end

-- Busy, wait, idle and parallelism of the lanes of figures `list` over `duration`.
local function group_of(list, duration)
  local busy, wait, events = 0, 0, 0
  for _, l in ipairs(list) do
    busy, wait, events = busy + l.busy, wait + l.wait, events + l.events
  end
  local n = #list
  return {lanes = n, busy = busy, wait = wait, events = events,
          idle = (duration > 0 and n > 0) and 1 - busy / (duration * n) or 0,
          parallelism = duration > 0 and busy / duration or 0}
end

-- The spans with a piece in [a, b], per category (see the header).
local function span_stats(model, a, b)
  local by_cat, list, seen = {}, {}, {}
  for _, p in ipairs(model.span_pieces or {}) do
    local x, y = math.max(p.ts, a), math.min(p.ts + p.dur, b)
    if p.ts <= b and p.ts + p.dur >= a then
      local c = by_cat[p.cat]
      if not c then
        c = {name = p.cat, count = 0, run_us = 0, wall_us = 0, unclosed = 0}
        by_cat[p.cat], list[#list + 1] = c, c
      end
      c.run_us = c.run_us + math.max(0, y - x)
      local key = p.span or p
      local sp = seen[key]
      if not sp then
        sp = {from = x, to = y, c = c}
        seen[key] = sp
        c.count = c.count + 1
      else
        sp.from, sp.to = math.min(sp.from, x), math.max(sp.to, y)
      end
      if p.unclosed then c.unclosed = c.unclosed + 1 end
    end
  end
  for _, sp in pairs(seen) do sp.c.wall_us = sp.c.wall_us + math.max(0, sp.to - sp.from) end
  return list
end

local function compute(model, from, to, top, opts)
  local a = from or model.t0
  local b = to or model.t1
  if a > b then a, b = b, a end
  local duration = b - a
  -- The lane sweeps and the marker units (stats_lanes adds to both a
  -- category model.categories lacks).
  local cat_index, names = {}, {}
  for c, entry in ipairs(model.categories) do
    cat_index[entry.name], names[c] = c, entry.name
  end
  local swept = reader.stats_lanes(model, a, b, top or M.TOP, cat_index, names)
  local markers = {}
  for k, kind in ipairs(model.marker_kinds) do
    local m = swept.markers[k]
    local units = unit_view(m.count, m.row)
    tops[units] = m.top
    markers[k] = {kind = kind, count = m.count, min = m.min, max = m.max, median = m.median, p95 = m.p95,
                  units = units, slowest = m.slowest}
  end
  local acc = swept.acc
  local lanes, tbusy, events = {}, 0, 0
  for i, lane in ipairs(model.lanes) do
    local l = swept.lanes[i]
    local busy, wait, n = l.busy, l.wait, l.events
    lanes[i] = {name = lane.name, role = M.lane_role(lane, model), busy = busy, wait = wait, events = n,
                idle = duration > 0 and 1 - busy / duration or 0,
                dropped = lane.dropped, full_at = lane.full_at}
    tbusy, events = tbusy + busy, events + n
  end
  events = events + swept.events
  local awaits = {count = 0, time = 0}
  for _, w in ipairs(model.awaits) do
    local x, y = math.max(w.ts, a), math.min(w.ts + w.dur, b)
    if y > x or (w.ts >= a and w.ts <= b) then
      awaits.count = awaits.count + 1
      awaits.time = awaits.time + math.max(0, y - x)
    end
  end
  -- The job graph's latencies and critical path, over the whole trace (the
  -- graph is not cut at the range): jobque_profile.graph.
  local latency, critical_path, whatif = graph.figures(model, top, opts)
  local dropped = {events = model.dropped, lost = model.lost, lanes = {}}
  for _, lane in ipairs(model.lanes) do
    if lane.dropped > 0 then
      dropped.lanes[#dropped.lanes + 1] = {name = lane.name, dropped = lane.dropped, full_at = lane.full_at}
    end
  end
  local workers, others = {}, {}
  for _, l in ipairs(lanes) do
    local list = l.role == "worker" and workers or others
    list[#list + 1] = l
  end
  local all = group_of(lanes, duration)
  all.events = events -- markers too
  return {
    range = {from = a, to = b, duration = duration, t0 = model.t0},
    events = events,
    lanes = lanes,
    workers = group_of(workers, duration),
    others = group_of(others, duration),
    total = all,
    categories = sorted_categories(model, acc, tbusy),
    markers = markers,
    awaits = awaits,
    dropped = dropped,
    failures = failures(model, a, b),
    copies = copies(model, a, b),
    latency = latency,
    critical_path = critical_path,
    whatif = whatif,
    spans = span_stats(model, a, b),
    counters = reader.stats_counters(model, a, b),
    samples = samples.figures(model, a, b, top or M.TOP, opts and opts.all_frames),
  }
end

--- Figures over [from, to] of a model (the whole trace by default), with
-- the `top` (M.TOP) slowest units of each marker kind; opts.steps = false:
-- the critical path without its steps.
function M.compute(model, from, to, top, opts)
  return without_gc(compute, model, from, to, top, opts)
end

-- A row of compare: `label` is pre .. name .. post (name: a lane, category
-- or marker kind, which a text report may cut; nil for a fixed label).
-- A missing x or y counts as 0, unless `none` says that side has no value
-- (the idle of a group or lane it does not have): then a, or b, and diff
-- and ratio are left out.
local function row(rows, group, pre, name, post, x, y, unit, none_a, none_b)
  x, y = not none_a and (x or 0) or nil, not none_b and (y or 0) or nil
  rows[#rows + 1] = {label = pre .. (name or "") .. (post or ""), group = group, pre = pre, name = name,
                     post = post, a = x, b = y, diff = x and y and y - x, ratio = x and y and x ~= 0 and y / x or nil,
                     unit = unit}
end

-- The lane groups of compare, as labelled there.
M.GROUPS = {{"workers", "workers"}, {"others", "caller & other lanes"}, {"total", "all lanes"}}

-- The entries of a[field] and b[field] (lists, or nil) by key(entry), in
-- order of first appearance: keys, a's by key, b's by key.
local function union(la, lb, key)
  local keys, by_a, by_b = {}, {}, {}
  for _, pair in ipairs{{la or {}, by_a}, {lb or {}, by_b}} do
    for _, entry in ipairs(pair[1]) do
      local k = key(entry)
      if by_a[k] == nil and by_b[k] == nil then keys[#keys + 1] = k end
      pair[2][k] = entry
    end
  end
  return keys, by_a, by_b
end

local function by_name(e) return e.name end

-- The rows of the lanes, categories and markers.
local function lane_rows(rows, a, b)
  local lane_names, lane_a, lane_b = union(a.lanes, b.lanes, by_name)
  local no_lane = {busy = 0}
  for _, name in ipairs(lane_names) do
    local x, y = lane_a[name] or no_lane, lane_b[name] or no_lane
    row(rows, "lane", "lane ", name, ": busy", x.busy, y.busy, "us")
    row(rows, "lane", "lane ", name, ": idle", x.idle, y.idle, "%", x == no_lane, y == no_lane)
  end
  local names, cat_a, cat_b = union(a.categories, b.categories, by_name)
  for _, name in ipairs(names) do
    row(rows, "category", "busy: ", name, nil, cat_a[name] and cat_a[name].busy or 0,
        cat_b[name] and cat_b[name].busy or 0, "us")
  end
  local kinds, mark_a, mark_b = union(a.markers, b.markers, function(m) return m.kind end)
  local none = {count = 0}
  for _, kind in ipairs(kinds) do
    local x, y = mark_a[kind] or none, mark_b[kind] or none
    row(rows, "marker", "", kind, " units", x.count, y.count, "")
    row(rows, "marker", "", kind, " median", x.median, y.median, "us")
    row(rows, "marker", "", kind, " p95", x.p95, y.p95, "us")
    row(rows, "marker", "", kind, " max", x.max, y.max, "us")
  end
end

-- Marks the rows from `first` on as coming from a partial path or replay
-- (a_partial, b_partial: true when that side's `pa`, `pb` is).
local function mark_partial(rows, first, pa, pb)
  for i = first, #rows do
    rows[i].a_partial = pa and pa.partial and true or nil
    rows[i].b_partial = pb and pb.partial and true or nil
  end
end

-- The rows of the job graph: each latency kind's p50 and p95 (all jobs;
-- a side without such latencies, count 0, has none: a kind neither has is
-- left out), the critical path's length and make-up by kind, the replay's
-- predictions, each marked when its side is partial. A trace without jobs
-- has none of them ("-").
local function why_rows(rows, a, b)
  local la, lb = a.latency, b.latency
  for _, kind in ipairs{"ready", "resume", "run", "suspended"} do
    local x, y = la and la[kind], lb and lb[kind]
    local none_a, none_b = not x or x.count == 0, not y or y.count == 0
    for _, q in ipairs{"p50", "p95"} do
      if not (none_a and none_b) then
        row(rows, "latency", "latency " .. kind .. " " .. q, nil, nil, x and x[q .. "_us"], y and y[q .. "_us"],
            "us", none_a, none_b)
      end
    end
  end
  local first, ca, cb = #rows + 1, a.critical_path, b.critical_path
  row(rows, "critical path", "critical path", nil, nil, ca and ca.duration_us, cb and cb.duration_us, "us",
      not ca, not cb)
  local kinds, ka, kb = union(ca and ca.by_kind, cb and cb.by_kind, function(k) return k.kind end)
  for _, kind in ipairs(kinds) do
    row(rows, "critical path", "critical path: ", kind, nil, ka[kind] and ka[kind].us, kb[kind] and kb[kind].us,
        "us", not ca, not cb)
  end
  mark_partial(rows, first, ca, cb)
  first = #rows + 1
  local wa, wb = a.whatif, b.whatif
  row(rows, "whatif", "recorded workers", nil, nil, wa and wa.recorded_workers, wb and wb.recorded_workers, "",
      not wa, not wb)
  local ra, rb = wa and wa.as_recorded_us, wb and wb.as_recorded_us
  row(rows, "whatif", "predicted as recorded", nil, nil, ra, rb, "us", not ra, not rb)
  local counts, pa, pb = union(wa and wa.predictions, wb and wb.predictions, function(p) return p.workers end)
  for _, n in ipairs(counts) do
    row(rows, "whatif", "predicted on " .. n .. (n == 1 and " worker" or " workers"), nil, nil,
        pa[n] and pa[n].predicted_us, pb[n] and pb[n].predicted_us, "us", not pa[n], not pb[n])
  end
  row(rows, "whatif", "predicted on unlimited workers", nil, nil, wa and wa.span_us, wb and wb.span_us, "us",
      not wa, not wb)
  mark_partial(rows, first, wa, wb)
end

-- The rows of copies (per category), spans (per category) and counters
-- (per track: name, and pid when two tracks share a name).
local function detail_rows(rows, a, b)
  local names, xa, xb = union(a.copies, b.copies, by_name)
  local none = {count = 0, time = 0, bytes = 0, run_us = 0, wall_us = 0}
  for _, name in ipairs(names) do
    local x, y = xa[name] or none, xb[name] or none
    row(rows, "copies", "copies ", name, ": count", x.count, y.count, "")
    row(rows, "copies", "copies ", name, ": time", x.time, y.time, "us")
    row(rows, "copies", "copies ", name, ": bytes", x.bytes, y.bytes, "B")
  end
  names, xa, xb = union(a.spans, b.spans, by_name)
  for _, name in ipairs(names) do
    local x, y = xa[name] or none, xb[name] or none
    row(rows, "spans", "spans ", name, ": count", x.count, y.count, "")
    row(rows, "spans", "spans ", name, ": run", x.run_us, y.run_us, "us")
    row(rows, "spans", "spans ", name, ": wall", x.wall_us, y.wall_us, "us")
  end
  local function track(c) return c.name .. "\0" .. tostring(c.pid) end
  local keys
  keys, xa, xb = union(a.counters, b.counters, track)
  for _, k in ipairs(keys) do
    local x, y = xa[k], xb[k]
    local name = (x or y).name
    row(rows, "counters", "counter ", name, ": mean", x and x.mean, y and y.mean, "", not x, not y)
    row(rows, "counters", "counter ", name, ": max", x and x.max, y and y.max, "", not x, not y)
  end
end

-- The rows of the CPU samples (when either side has some): the sampled
-- time, then per function of either side's top list (a's order, then b's
-- new ones), by frame text, its self and total shares and its self time
-- (from each side's `frames`, every function's row: 0 where that side's
-- samples never ran it; none where that side has no samples).
local function sample_rows(rows, a, b)
  local sa, sb = a.samples, b.samples
  if not sa and not sb then return end
  row(rows, "samples", "sampled CPU time", nil, nil, sa and sa.total_us, sb and sb.total_us, "us",
      not (sa and sa.total_us), not (sb and sb.total_us))
  local frames = union(sa and sa.top, sb and sb.top, function(r) return r.frame end)
  local none = {self = 0, total = 0, self_us = 0}
  for _, frame in ipairs(frames) do
    local x = sa and ((sa.frames or {})[frame] or none)
    local y = sb and ((sb.frames or {})[frame] or none)
    row(rows, "samples", "self: ", frame, nil, x and x.self, y and y.self, "%", not x, not y)
    row(rows, "samples", "total: ", frame, nil, x and x.total, y and y.total, "%", not x, not y)
    row(rows, "samples", "self time: ", frame, nil, x and x.self_us, y and y.self_us, "us",
        not (x and x.self_us), not (y and y.self_us))
  end
end

--- Side by side: the figures of `a` and of `b` (each from compute), with differences.
function M.compare(a, b)
  local rows = {}
  row(rows, "range", "duration", nil, nil, a.range.duration, b.range.duration, "us")
  row(rows, "range", "events", nil, nil, a.events, b.events, "")
  for _, g in ipairs(M.GROUPS) do
    local x, y, label = a[g[1]], b[g[1]], g[2] .. ": "
    row(rows, g[1], label .. "lanes", nil, nil, x.lanes, y.lanes, "")
    row(rows, g[1], label .. "busy", nil, nil, x.busy, y.busy, "us")
    row(rows, g[1], label .. "wait", nil, nil, x.wait, y.wait, "us")
    row(rows, g[1], label .. "idle", nil, nil, x.idle, y.idle, "%", x.lanes == 0, y.lanes == 0)
    row(rows, g[1], label .. "parallelism", nil, nil, x.parallelism, y.parallelism, "x", x.lanes == 0, y.lanes == 0)
  end
  lane_rows(rows, a, b)
  why_rows(rows, a, b)
  detail_rows(rows, a, b)
  sample_rows(rows, a, b)
  row(rows, "dropped", "dropped events", nil, nil, a.dropped.events, b.dropped.events, "")
  return rows
end

return M
