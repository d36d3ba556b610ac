--- jobque_profile.trace: reads a saved trace back into a model.
--
-- load(path) reads a file saved by profile_save, or any Chrome-trace JSON
-- (an object with a "traceEvents" array, or a bare array of events), and
-- returns a model, or nil and a message that says what is wrong:
--
--   model.format      "jobque" (has a jobqueProfile key) or "chrome"
--   model.t0, t1      the trace's bounds, microseconds: the session's start
--                     and stop when the file records them (jobqueProfile
--                     startUs/stopUs), widened to take in every event; else
--                     the first and last moment of any event
--   model.extra_ts    times of the events kept as no slice, instant or
--                     marker (slice ends, flows, awaits, counters...), so
--                     that figures count every event of the file
--   model.lanes[i]    in lane order: { name, pid, tid, sort,
--                       n, ts[], dur[], cat[], kind[],   -- slices, by start, as columns:
--                       sname[] (the event's name, "?" when it has none),
--                       job[] (args.job: an integer, or false),
--                       args[] (the event's args when they say more than
--                       args.job: a table as decoded; for a copy's args that
--                       are just { job, bytes, category }, the copy's index
--                       in model.copy_*; else false),
--                       instants[], recorded, dropped, full_at,
--                       unclosed_spans (laneInfo's unclosedSpans, when the file has it),
--                       queue (laneInfo's queue: a worker lane's queue number, when the file has it),
--                       samples, sample_weight, samples_skipped ({ userHook, tableFull }),
--                       sample_error (laneInfo's samples, sampleWeight, samplesSkipped,
--                       sampleError, when the file has them) }
--   model.categories  list of { name, color = "#RRGGBB" }, and by_name
--   model.markers     list of { ts, kind, arg }, by time (an integer arg is
--                     exact to 64 bits, as every integer is; also as columns:
--                     marker_ts[], marker_kind[], marker_arg[]); markers are global,
--                     but counted on the lane that stamped them (lane.marker_ts[])
--   model.marker_kinds list of kind names, in order of registration/appearance
--   model.awaits      list of { ts, dur, lane, job, awaits } (awaits: the awaited
--                     job's id, its low 32 bits, as the file has it)
--   model.flows       the zero-length slices of ours that end or start arrows
--                     ("wake job", "dependency done", "after"), as read, in
--                     file order (jobque_profile.graph reads them)
--   model.failures    failed jobs (ours), by time: { ts, lane, job, category,
--                     message } (message: the error text the trace kept, or nil)
--   model.cancels     jobs cancelled by their queue's close: { ts, lane, job, category }
--   model.copies      values copied between states: { ts, dur, lane, category,
--                     name ("copy in", "copy out", "copy result"), job, bytes }
--                     (a view of the columns copy_ts[], copy_dur[], copy_lane[],
--                     copy_category[], copy_name[], copy_job[] (false: none), copy_bytes[])
--   model.edge_ts[], edge_lane[], edge_kind[], edge_job[], edge_on[], edge_queue[]
--                     the happens-before edges of ours ("edge" instants), model.nedges
--                     of them, in file order (each lane's in time order): edge_lane the
--                     lane's index in model.lanes, edge_kind 1 (a wait returned, "waited
--                     for"), 2 (a dependency of q:after, "after") or 3 (every job of a
--                     queue, "waited for all"); edge_job the waiting job, edge_on the job
--                     waited for, edge_queue the queue's number: each an integer, or nil
--                     (absent from the file: the caller waits outside jobs). Their times
--                     are in model.extra_ts, as the flows' are
--   model.sampling    the session's sampling (jobqueProfile.sampling): { hz, period_ns,
--                     clock, depth, samples, signals, ticks }; nil when it did not sample
--   model.frames      the file's stackFrames: { n, name[], category[], parent[], id[] },
--                     numbered 1..n so that parent[k] < k (0: a root); name "?" and
--                     category false when the file gives none; id the file's id string.
--                     In file order, each frame once its parent has a number (one met
--                     before its parent comes right after it, with the frames below it,
--                     depth first). Nil when the file has no stackFrames object
--   model.nsamples    the samples read (0 when none), as columns 1..nsamples by lane
--                     then time: sample_ts[] (us, the events' timeline), sample_lane[]
--                     (the lane's index in model.lanes: pid 1 and the sample's tid, or
--                     its pid), sample_frame[] (the leaf, an index of model.frames),
--                     sample_weight[] (an integer, 1 when the file gives none), sample_cat[] (its
--                     name: the category, "no category" when it has none), sample_job[],
--                     sample_span[], sample_line[] (an integer, or false)
--   model.samples_skipped  samples not read, and model.sample_skips why ({ why, n },
--                     in order of first appearance: "unknown sf", "unknown parent", "sf
--                     nests deeper than 10000" (a frame below 10,000 others), "ts outside
--                     the session" (before t0 or after t1: a sample never widens them;
--                     in a file with neither events nor startUs/stopUs, t0 and t1 are
--                     the samples' first and last times), "no ts",
--                     "ts is not a number", "weight is not an integer from 0 to 2^53"...); a loop among the
--                     frames' parents makes the file unreadable
--   model.span_pieces the pieces of spans (ours: complete events with args.span),
--                     by time: { ts, dur, lane, cat, span, piece, job, unclosed }
--   model.spans       per span category, in order of first appearance:
--                     { cat, count, run_us, wall_us, unclosed }: count logical
--                     spans (distinct args.span), run_us the sum of their pieces,
--                     wall_us the sum of first start to last end of each (its
--                     suspensions included), unclosed those closed by their
--                     job's end or profile_stop (args.unclosed on a piece)
--   model.counters    counter tracks ("C" events), in order of first appearance:
--                     { name, pid, n, ts = {...}, value = {...} }, one per numeric
--                     key K (a finite number, or a string of one) of an event named N, named N .. " " .. K (Perfetto's
--                     naming); values as numbers, integers exact to 64 bits;
--                     model.counter_by_name[name]
--                     (the first pid's track)
--   model.dropped     events dropped in all; model.lost, events never recorded
--   model.skipped     events we could not read, and model.skips why: a list
--                     of { why, n } ("ts is not a number", "unknown ph", ...)
--                     in order of first appearance
--
-- A time (ts, dur, fullAtUs) beyond M.MAX_US microseconds from zero, or not
-- finite, makes the file unreadable (nil and a message naming the event and
-- field): such a file is corrupt, and its figures would overflow.
--
-- A slice's kind is "span" (a piece of a span of ours: args.span; its cat is
-- the span's category; a span adds busy time only outside jobs, see
-- jobque_profile.stats),
-- "job" (a job's run), "copy" (values copied for a job),
-- "submit", "wait" (the thread was
-- blocked on a result) or "slice" (any other complete event); its cat is the
-- name its time is counted under: the job's category for "job" and "copy", "submit" for
-- submits, "wait" for waits, and the event's cat (else its name) otherwise;
-- a slice whose category is "wait" is a wait in any trace. In traces of the
-- seed system's writer, publish and chunk slices count under their chain's
-- category (stage >> 8 of the chain's publish), stage_wait as a wait.
local util = require "jobque_profile.util"
local reader = require "jobque_profile.reader" -- the loader (src/reader/load.c) calls this module back

local M = {}

--- The largest time the reader accepts, in microseconds either side of zero
-- (about 95 years: room for traces stamped in microseconds since 1970). A
-- trace's span is then below 3 * MAX_US, which keeps it an exact integer
-- number of nanoseconds for the HTML page.
M.MAX_US = 3e15
local MAX_US = M.MAX_US

--- The colour a category gets when the trace did not register one.
M.color_for = util.color_for

local function new_lane(model, key, pid, tid)
  local lane = {key = key, pid = pid, tid = tid, n = 0, ts = {}, dur = {}, cat = {}, kind = {}, sname = {},
                job = {}, args = {}, instants = {}, recorded = nil, dropped = 0, full_at = nil}
  model.lane_by_key[key] = lane
  model.lanes[#model.lanes + 1] = lane
  return lane
end

-- A pid or tid in a lane's key: integers as integers whichever way the
-- JSON was read, an object by its JSON (util.id_text).
local id_text = util.id_text

-- The lane of a pid and tid (nil: 0), made when first met.
local function lane_of(model, epid, etid)
  local pid, tid = epid, etid
  if pid == nil then pid = 0 end
  if tid == nil then tid = 0 end
  local by_tid = model.lane_cache[pid]
  if not by_tid then
    by_tid = {}
    model.lane_cache[pid] = by_tid
  end
  local lane = by_tid[tid]
  if lane then return lane end
  local key = id_text(pid) .. ":" .. id_text(tid)
  lane = model.lane_by_key[key] or new_lane(model, key, epid, etid)
  by_tid[tid] = lane
  return lane
end

local function str(v)
  return type(v) == "string" and v or nil
end

-- A slice's name, job and args columns from its event (see the header).
local function slice_fields(e)
  local args, job = e.args, false
  if type(args) ~= "table" then return str(e.name) or "?", false, false end
  local v = args.job
  if type(v) == "number" then job = math.tointeger(v) or v elseif type(v) == "string" then job = v end
  local k = next(args)
  if k == nil or (k == "job" and next(args, k) == nil and math.type(v) and math.tointeger(v)) then args = false end
  return str(e.name) or "?", job, args
end

local function add_slice(lane, ts, dur, cat, kind, e)
  local n = lane.n + 1
  lane.n = n
  lane.ts[n], lane.dur[n], lane.cat[n], lane.kind[n] = ts, dur, cat, kind
  lane.sname[n], lane.job[n], lane.args[n] = slice_fields(e)
end

-- A name or value for a one-line message: quoted, control characters
-- escaped, cut after 60 characters.
local function shown(s)
  s = tostring(s)
  if #s > 60 then s = s:sub(1, 57) .. "..." end
  return '"' .. s:gsub('[%c"\\]', function(c) return ("\\%03d"):format(c:byte()) end) .. '"'
end

-- A time out of range as it was written, near enough: "1e+308", "-inf".
local function time_text(x)
  local s = ("%g"):format(x)
  return (x - x ~= 0 or tonumber(s) == x) and s or ("%.17g"):format(x)
end

-- A time of ours as the model holds it: our writer prints times as exact
-- 2048ths of a microsecond, within half a nanosecond of the nanoseconds it
-- recorded (docs/trace-format.md, Times); the model takes those nanoseconds
-- back, as the double nearest ns / 1000 (what a time of three decimals
-- reads as). src/reader/load.c rounds the same way (its ns_time).
local function ns_time(x)
  if math.type(x) ~= "float" then return x end
  return math.floor(x * 1000 + 0.5) / 1000
end

local OUT_OF_RANGE = ("out of range (a time must be within +-%.0e us; is the file damaged?)"):format(MAX_US)

-- The message for an event whose `field` holds a time out of range.
local function bad_time(i, e, field, x)
  return ('event #%d (%s): "%s" is %s us, %s'):format(i, shown(str(e.name) or "?"), field, time_text(x),
                                                     OUT_OF_RANGE)
end

-- What a complete event of ours is, from its cat: kind and the name its time counts under.
local function classify(e, ours)
  local cat, name = e.cat, e.name
  if type(cat) ~= "string" then cat = nil end
  if type(name) ~= "string" then name = "?" end
  if ours then
    local args = e.args
    if type(args) == "table" and math.type(args.span) then return "span", cat or name end
    if cat == "job" then return "job", name end
    if cat == "submit" then return "submit", "submit" end
    if cat == "wait" then return "wait", "wait" end
    if cat == "flow" then return nil end -- the zero-length end of a wake-up arrow
    if cat == "copy" then -- values copied for a job: its time is the job's category's
      args = e.args
      local c = type(args) == "table" and str(args.category)
      return "copy", c or "job"
    end
  end
  cat = cat or name
  if cat == "wait" then return "wait", "wait" end -- a category named wait is waiting
  return "slice", cat
end

-- Puts the columns `fields` of t (n entries) in the order of the first
-- one, a time column, when they are not in it already (stable). Only
-- columns the reader's Lua code added to are lists here (the loader puts
-- the ones it keeps in C in order itself).
local function sort_columns(t, fields, n)
  local ts = t[fields[1]]
  local sorted = true
  for i = 2, n do
    if ts[i] < ts[i - 1] then sorted = false break end
  end
  if sorted then return end
  local order = {}
  for i = 1, n do order[i] = i end
  table.sort(order, function(a, b)
    if ts[a] ~= ts[b] then return ts[a] < ts[b] end
    return a < b
  end)
  for _, field in ipairs(fields) do
    local old, new = t[field], {}
    for i = 1, n do new[i] = old[order[i]] end
    t[field] = new
  end
end

-- Markers are kept as columns (model.marker_ts, marker_kind, marker_arg: a
-- trace can hold a million); model.markers is a list view of them whose
-- entries { ts, kind, arg } are made when first read.
-- The columns are fetched on first use (the loader's may be native until
-- then: see docs/internals.md).
local function marker_list(model)
  return setmetatable({}, {
    __len = function() return #model.marker_ts end,
    __index = function(t, i)
      local ts, kind, arg = model.marker_ts, model.marker_kind, model.marker_arg
      if math.type(i) ~= "integer" or ts[i] == nil then return nil end
      local m = {ts = ts[i], kind = kind[i], arg = arg[i]}
      rawset(t, i, m)
      return m
    end,
  })
end

local function add_marker_kind(model, kind)
  if not model.kind_seen[kind] then
    model.kind_seen[kind] = true
    model.marker_kinds[#model.marker_kinds + 1] = kind
  end
end

-- The newest format version this reader reads (jobqueProfile.version:
-- docs/trace-format.md); a file without one is read as version 1.
local READS_VERSION = 1

-- Reads the jobqueProfile key: lanes' counts, categories, marker kinds.
local function read_meta(model, meta)
  if type(meta) ~= "table" then
    return nil, 'bad "jobqueProfile": not an object'
  end
  local version = meta.version
  if version ~= nil and not (math.type(version) == "integer" and version >= 1) then
    return nil, ('bad "jobqueProfile.version": %s (an integer from 1 expected)'):format(
      type(version) == "number" and time_text(version) or type(version))
  elseif version ~= nil and version > READS_VERSION then
    return nil, ("trace format version %d is newer than this jobque-profile reads (1)"):format(version)
  end
  model.meta = meta
  model.clock = str(meta.clock)
  -- The session's bounds: startUs/stopUs, or 0 .. durationUs in files of
  -- ours written before those keys.
  local start, stop = ns_time(meta.startUs), ns_time(meta.stopUs)
  if start == nil and stop == nil and type(meta.durationUs) == "number" then
    start, stop = 0, ns_time(meta.durationUs)
  end
  if type(start) == "number" and type(stop) == "number" then
    for _, pair in ipairs{{"startUs", start}, {"stopUs", stop}} do
      local x = pair[2]
      if not (x >= -MAX_US and x <= MAX_US) then
        return nil, ('bad "jobqueProfile.%s": %s us is %s'):format(pair[1], time_text(x), OUT_OF_RANGE)
      end
    end
    model.session = {start = math.min(start, stop), stop = math.max(start, stop)}
  end
  model.lost = math.tointeger(meta.lostEvents) or 0
  local sm = meta.sampling
  if type(sm) == "table" then
    local int = math.tointeger
    model.sampling = {hz = int(sm.hz), period_ns = int(sm.periodNs), clock = str(sm.clock), depth = int(sm.depth),
                      samples = int(sm.samples), signals = int(sm.signals), ticks = int(sm.ticks)}
  end
  for i, c in ipairs(type(meta.categories) == "table" and meta.categories or {}) do
    if type(c) ~= "table" or not str(c.name) then
      return nil, ('bad "jobqueProfile.categories[%d]": no name'):format(i)
    end
    local color = str(c.color)
    if not (color and color:match("^#%x%x%x%x%x%x$")) then color = M.color_for(c.name) end
    if not model.categories.by_name[c.name] then
      local entry = {name = c.name, color = color:upper(), id = math.tointeger(c.id)}
      model.categories[#model.categories + 1] = entry
      model.categories.by_name[c.name] = entry
    end
    local id = math.tointeger(c.id)
    if id and not model.category_by_id[id] then model.category_by_id[id] = model.categories.by_name[c.name] end
  end
  for i, m in ipairs(type(meta.markers) == "table" and meta.markers or {}) do
    if type(m) ~= "table" or not str(m.name) then
      return nil, ('bad "jobqueProfile.markers[%d]": no name'):format(i)
    end
    add_marker_kind(model, m.name)
  end
  return true
end

-- The seed system's writer (its format, version 1): slices named publish,
-- chunk or stage_wait, with no cat, belong to a parallel operation (a
-- chain, args.chain); the op tag it was published under is stage >> 8 of
-- its publish event, and the category with that id names it.
local SEED_CHAINED = {publish = true, chunk = true, stage_wait = true}

-- chain id -> op tag, from the publish events of a seed trace (the loader
-- hands over every event that may be one, in file order).
local function seed_chain_tags(events)
  local tags = {}
  for i = 1, #events do
    local e = events[i]
    if type(e) == "table" and e.name == "publish" and e.ph == "X" and e.cat == nil and type(e.args) == "table" then
      local chain, stage = e.args.chain, math.tointeger(e.args.stage)
      if chain ~= nil and chain == chain and stage and stage >= 0 then tags[chain] = stage >> 8 end
    end
  end
  return tags
end

-- What a seed slice of a chain is: ("wait", "wait") for stage_wait, else
-- "slice" under its chain's category ("untagged" for tag 0, "tag N" for a
-- tag with no category), or under its own name when no publish of its
-- chain is in the file.
local function seed_classify(model, e, tags)
  if e.name == "stage_wait" then return "wait", "wait" end
  local chain = e.args.chain
  local tag = chain ~= nil and chain == chain and tags[chain]
  if not tag then return "slice", e.name end
  if tag == 0 then return "slice", "untagged" end
  local c = model.category_by_id[tag]
  return "slice", c and c.name or ("tag %d"):format(tag)
end

-- A failed job's failed event (its last slice, or a copy after it): one
-- entry per job, with the first error text it carries.
local function add_failure(model, lane, ts, cat, args)
  local job = math.tointeger(args.job)
  local msg = str(args.error)
  local by_job = model.failure_by_job
  local f = job and by_job[job]
  if f then
    if not f.message then f.message = msg end
    return
  end
  f = {ts = ts, lane = lane, job = job, category = cat, message = msg}
  model.failures[#model.failures + 1] = f
  if job then by_job[job] = f end
end

-- A copy, as columns of the model (copy_ts, copy_dur, copy_lane,
-- copy_category, copy_name, copy_job, copy_bytes; model.copies is a list
-- view of them). A copy's args that are exactly { job, bytes, category }
-- (integers and a string) are, in its slice's args column, the copy's
-- index: the page rebuilds them from these columns.
local function add_copy(model, lane, ts, dur, cat, e)
  local args = type(e.args) == "table" and e.args or {}
  local k = #model.copy_ts + 1
  local job, bytes = math.tointeger(args.job), math.tointeger(args.bytes)
  model.copy_ts[k], model.copy_dur[k], model.copy_lane[k], model.copy_category[k] = ts, dur, lane, cat
  model.copy_name[k], model.copy_job[k], model.copy_bytes[k] = str(e.name) or "copy", job or false, bytes or 0
  if job and bytes and type(args.category) == "string" then
    local key = next(args)
    key = next(args, next(args, key))
    if next(args, key) == nil then lane.args[lane.n] = k end
  end
end

local COPY_FIELDS = {"ts", "dur", "lane", "category", "name", "job", "bytes"}

-- model.copies: a list view of the copy columns whose entries { ts, dur,
-- lane, category, name, job, bytes } are made when first read.
local function copy_list(model)
  local cols
  return setmetatable({}, {
    __len = function() return #model.copy_ts end,
    __index = function(t, i)
      if not cols then
        cols = {}
        for k, f in ipairs(COPY_FIELDS) do cols[k] = model["copy_" .. f] end
      end
      if math.type(i) ~= "integer" or cols[1][i] == nil then return nil end
      local c = {}
      for k, f in ipairs(COPY_FIELDS) do c[f] = cols[k][i] end
      if c.job == false then c.job = nil end
      rawset(t, i, c)
      return c
    end,
  })
end

-- The phases read (flows, counters and object events count as events, and
-- are not drawn).
local PHASES = {}
for ph in ("X i I R B E b e s t f C n N O D"):gmatch("%S+") do PHASES[ph] = true end

local function new_model(meta)
  return {format = meta and "jobque" or "chrome", lanes = {}, lane_by_key = {}, lane_cache = {},
          categories = {by_name = {}}, category_by_id = {}, marker_kinds = {}, kind_seen = {},
          marker_ts = {}, marker_kind = {}, marker_arg = {}, marker_pid = {}, marker_tid = {},
          awaits = {}, flows = {}, extra_ts = {}, span_pieces = {}, counters = {}, counter_by_name = {},
          counter_key = {}, dropped = 0, lost = 0, skipped = 0, skips = {}, nevents = 0,
          failures = {}, failure_by_job = {}, cancels = {},
          copy_ts = {}, copy_dur = {}, copy_lane = {}, copy_category = {}, copy_name = {}, copy_job = {},
          copy_bytes = {}, edge_ts = {}, edge_lane = {}, edge_kind = {}, edge_job = {}, edge_on = {},
          edge_queue = {}, nedges = 0, sample_ts = {}, sample_lane = {}, sample_frame = {}, sample_weight = {},
          sample_cat = {}, sample_job = {}, sample_span = {}, sample_line = {}, nsamples = 0, samples_skipped = 0,
          sample_skips = {}}
end

-- Every category a slice is counted under gets an entry and a colour.
local function add_category(cats, name)
  if not cats.by_name[name] then
    local entry = {name = name, color = M.color_for(name)}
    cats[#cats + 1] = entry
    cats.by_name[name] = entry
  end
end

-- Counts an event that could not be read, under why (model.skips, in order
-- of first appearance; skip_entry: why -> its entry).
local function skip(model, skip_entry, why)
  local entry = skip_entry[why]
  if not entry then
    entry = {why = why, n = 0}
    skip_entry[why] = entry
    model.skips[#model.skips + 1] = entry
  end
  entry.n = entry.n + 1
  model.skipped = model.skipped + 1
end

-- Why an event with no usable ts is skipped.
local function no_ts_reason(e, ph, ts)
  return type(e) ~= "table" and "not an object" or ph == nil and "no ph" or ts == nil and "no ts"
         or "ts is not a number"
end

-- A metadata event: a lane's name or sort index.
local function read_metadata(model, e)
  local args = type(e.args) == "table" and e.args or {}
  if e.name == "thread_name" and str(args.name) then
    lane_of(model, e.pid, e.tid).name = args.name
  elseif e.name == "thread_sort_index" and math.type(args.sort_index) then
    lane_of(model, e.pid, e.tid).sort = args.sort_index
  end
end

-- A complete event of ours that is a job's, a copy or a submit: its copy
-- and its failure, if any.
local function note_outcome(model, lane, ts, dur, cat, kind, e)
  if kind == "copy" then add_copy(model, lane, ts, dur, cat, e) end
  local args = e.args
  if type(args) == "table" and args.failed == true then add_failure(model, lane, ts, cat, args) end
end

-- An instant on one lane: where a lane filled up, a cancelled job (ours).
local function read_instant(model, e, ts, ours)
  local args = type(e.args) == "table" and e.args or {}
  local lane = lane_of(model, e.pid, e.tid)
  if ours and e.name == "lane full: events dropped" then
    lane.full_at = ts
    lane.dropped = math.tointeger(args.dropped) or 0
  elseif ours and e.name == "cancelled" then
    local c = model.cancels
    c[#c + 1] = {ts = ts, lane = lane, job = math.tointeger(args.job), category = str(args.category) or "job"}
  end
  lane.instants[#lane.instants + 1] = e
end

-- The edges' kinds, by their instants' names (model.edge_kind).
local EDGE_KINDS = {["waited for"] = 1, ["after"] = 2, ["waited for all"] = 3}

local function integer_of(v)
  return math.type(v) and math.tointeger(v) or nil
end

-- A happens-before edge of ours (an instant of scope t, category "edge"):
-- its columns (its lane as the lane itself until finish makes it the
-- lane's index), its time among model.extra_ts (load.c's fast_edge).
local function add_edge(st, e, ts)
  local model, args = st.model, type(e.args) == "table" and e.args or {}
  local k = st.nedges + 1
  st.nedges = k
  model.edge_ts[k], model.edge_lane[k], model.edge_kind[k] = ts, lane_of(model, e.pid, e.tid), EDGE_KINDS[e.name]
  model.edge_job[k], model.edge_on[k], model.edge_queue[k] = integer_of(args.job), integer_of(args.on),
                                                             integer_of(args.queue)
  st.nextra = st.nextra + 1
  model.extra_ts[st.nextra] = ts
end

-- model.edge_lane's lanes as their indexes, once the lanes are in order
-- (in C when the loader kept the column native).
local function edge_lane_indexes(model)
  if reader.column_lane_index(model, "edge_lane") then return end
  local lanes = model.edge_lane
  for k = 1, model.nedges do
    local lane = lanes[k]
    if type(lane) == "table" then lanes[k] = lane.index end
  end
end

-- A Chrome "B" or "E", kept in its lane's list (begin_end: lane -> list,
-- in file order) until every event is read: pair_begin_end pairs them.
-- Returns nextra, the count of model.extra_ts (the E's time goes there).
local function read_begin_end(model, begin_end, e, ph, ts, nextra)
  local lane = lane_of(model, e.pid, e.tid)
  local list = begin_end[lane]
  if not list then
    list = {}
    begin_end[lane] = list
  end
  list[#list + 1] = e
  if ph == "B" then return nextra end
  nextra = nextra + 1
  model.extra_ts[nextra] = ts
  return nextra
end

-- A lane's "B" and "E" events (list, in file order) paired as Perfetto
-- pairs them: sorted by ts (stably: ties in file order; the Trace Event
-- Format does not require a sorted file), then each "E" ends the latest
-- "B" still open: a slice, or when the pair is no slice the B's time in
-- model.extra_ts. A "B" never ended runs to t1, the trace's end. Returns
-- nextra, the count of model.extra_ts.
local function pair_begin_end(model, lane, list, ours, t1, nextra)
  local n, sorted = #list, true
  for i = 2, n do
    if list[i].ts < list[i - 1].ts then sorted = false break end
  end
  if not sorted then
    local order = {}
    for i = 1, n do order[i] = i end
    table.sort(order, function(a, b)
      local ta, tb = list[a].ts, list[b].ts
      if ta ~= tb then return ta < tb end
      return a < b
    end)
    local by_time = {}
    for i = 1, n do by_time[i] = list[order[i]] end
    list = by_time
  end
  local stack, depth = {}, 0
  for i = 1, n do
    local e = list[i]
    if e.ph == "B" then
      depth = depth + 1
      stack[depth] = e
    elseif depth > 0 then
      local b = stack[depth]
      stack[depth], depth = nil, depth - 1
      local kind, cat = classify(b, ours)
      if kind then
        add_slice(lane, b.ts, math.max(0, e.ts - b.ts), cat, kind, b)
        add_category(model.categories, cat)
      else
        nextra = nextra + 1
        model.extra_ts[nextra] = b.ts
      end
    end
  end
  for k = 1, depth do -- (outermost first)
    local b = stack[k]
    local kind, cat = classify(b, ours)
    if kind then
      add_slice(lane, b.ts, math.max(0, t1 - b.ts), cat, kind, b)
      add_category(model.categories, cat)
    end
  end
  return nextra
end

-- One end of an await of ours (a "b" or "e" of cat await): the pair, once
-- both are read, is an entry of model.awaits.
local function read_await(model, async, e, ph, ts)
  local id = type(e.id2) == "table" and e.id2["local"] or e.id
  id = tostring(id)
  if ph == "b" then
    async[id] = e
  elseif async[id] then
    local b = async[id]
    async[id] = nil
    local args = type(b.args) == "table" and b.args or {}
    model.awaits[#model.awaits + 1] = {ts = b.ts, dur = math.max(0, ts - b.ts), lane = lane_of(model, b.pid, b.tid),
                                       job = args.job, awaits = math.tointeger(args.awaits)}
  end
end

-- A piece of a span of ours (classify said "span").
local function add_piece(model, lane, ts, dur, cat, e)
  local args = e.args
  local p = model.span_pieces
  p[#p + 1] = {ts = ts, dur = dur, lane = lane, cat = cat, span = math.tointeger(args.span),
               piece = math.tointeger(args.piece), job = math.tointeger(args.job), unclosed = args.unclosed == true}
end

-- The keys of a "C" event's args in a stable order (pairs has none).
local function sorted_keys(args)
  local keys = {}
  for k in pairs(args) do
    if type(k) == "string" then keys[#keys + 1] = k end
  end
  table.sort(keys)
  return keys
end

-- The track of key k of "C" events named `name` of `pid` (nil: 0), made
-- when first met (the loader asks for the ones it reads itself).
-- The pid keyed as a lane's is (1 and 1.0 one pid, whichever code read it).
local function counter_track(model, name, pid, k)
  local track = name .. " " .. k
  local key = id_text(pid or 0) .. "\0" .. track
  local c = model.counter_key[key]
  if not c then
    c = {name = track, pid = math.tointeger(pid) or pid, n = 0, ts = {}, value = {}}
    model.counter_key[key] = c
    model.counters[#model.counters + 1] = c
    if not model.counter_by_name[track] then model.counter_by_name[track] = c end
  end
  return c
end

--- Reads a "C" event (its time ts, read): every numeric key K of args is a
-- sample of track "<name> K", scoped by pid.
local function read_counter(model, e, ts)
  local args = e.args
  if type(args) ~= "table" then return end
  local name = str(e.name) or "?"
  for _, k in ipairs(sorted_keys(args)) do
    local v = args[k]
    if type(v) == "string" then v = tonumber(v) end
    if type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge then -- "1e999": no sample
      local c = counter_track(model, name, e.pid, k)
      local n = c.n + 1
      c.n = n
      c.ts[n], c.value[n] = ts, math.tointeger(v) or v
    end
  end
end

-- A reading's state: the trace's bounds so far (t0, t1), the events read
-- (nev), the counts of model.extra_ts and of the markers, the "B"s not yet
-- paired (begin_end: lane -> its B and E events), the awaits begun, and
-- (seed_tags) the seed format's chain tags, which the loader sets before
-- the first event that may be a chained slice is read.
local function new_state(model, ours)
  return {model = model, ours = ours, t0 = math.huge, t1 = -math.huge, nev = 0, nextra = 0,
          nmarkers = 0, nedges = 0, begin_end = {}, async = {}, skip_entry = {}}
end

-- A marker (an instant of scope g or p), inline: a trace can hold a million.
local function read_marker(st, e, ts)
  local model = st.model
  local kind = str(e.name) or "?"
  if not model.kind_seen[kind] then add_marker_kind(model, kind) end
  local arg = type(e.args) == "table" and e.args.arg or nil
  local n = st.nmarkers + 1
  st.nmarkers = n
  -- an integral float is the integer; a string stays a string (math.tointeger
  -- would make "12" an integer, which the loader's markers keep as text)
  if math.type(arg) then arg = math.tointeger(arg) or arg end
  if type(arg) ~= "number" and type(arg) ~= "string" then arg = nil end
  model.marker_ts[n], model.marker_kind[n], model.marker_arg[n] = ts, kind, arg
  model.marker_pid[n], model.marker_tid[n] = e.pid or 0, e.tid or 0
end

-- A complete event (its ts and dur checked): a slice of its lane, or a
-- time of model.extra_ts. Nil and a message for a dur out of range.
local function read_complete(st, e, ts, dur, i)
  local model = st.model
  dur = dur or 0
  if dur > MAX_US or dur ~= dur then return nil, bad_time(i, e, "dur", dur) end
  if ts + dur > st.t1 then st.t1 = ts + dur end
  local kind, cat
  if e.cat == nil and SEED_CHAINED[e.name] and type(e.args) == "table" then
    kind, cat = seed_classify(model, e, st.seed_tags)
  else
    kind, cat = classify(e, st.ours)
  end
  if kind then
    local lane = lane_of(model, e.pid, e.tid)
    add_slice(lane, ts, dur, cat, kind, e)
    if cat ~= st.last_cat then
      st.last_cat = cat
      add_category(model.categories, cat)
    end
    if kind == "span" then
      add_piece(model, lane, ts, dur, cat, e)
    elseif st.ours and kind ~= "slice" then
      note_outcome(model, lane, ts, dur, cat, kind, e)
    end
  else
    st.nextra = st.nextra + 1
    model.extra_ts[st.nextra] = ts
    if st.ours and e.cat == "flow" then model.flows[#model.flows + 1] = e end
  end
  return true
end

-- Reads event #i, e, into the model: the loader hands it the events it
-- does not read itself. True, or nil and a message for a time out of range.
local function read_one(st, e, i)
  local model = st.model
  local ph = type(e) == "table" and e.ph
  local ts = ph and e.ts
  local dur = ph == "X" and e.dur -- false for other phases, nil when missing (0)
  if st.ours then ts, dur = ns_time(ts), ns_time(dur) end
  if ph == "M" then
    read_metadata(model, e)
  elseif type(ts) ~= "number" then
    skip(model, st.skip_entry, no_ts_reason(e, ph, ts))
  elseif not PHASES[ph] then
    skip(model, st.skip_entry, "unknown ph")
  elseif not (ts >= -MAX_US and ts <= MAX_US) then
    return nil, bad_time(i, e, "ts", ts)
  elseif dur and type(dur) ~= "number" then
    skip(model, st.skip_entry, "dur is not a number")
  elseif dur and dur < 0 then
    skip(model, st.skip_entry, "dur is negative")
  else
    st.nev = st.nev + 1
    if ts < st.t0 then st.t0 = ts end
    if ts > st.t1 then st.t1 = ts end
    if ph == "X" then
      return read_complete(st, e, ts, dur, i)
    elseif ph == "i" or ph == "I" or ph == "R" then
      if e.s == "g" or e.s == "p" then
        read_marker(st, e, ts)
      elseif st.ours and ph == "i" and e.s == "t" and e.cat == "edge" and EDGE_KINDS[e.name] then
        add_edge(st, e, ts)
      else
        read_instant(model, e, ts, st.ours)
      end
    elseif ph == "B" or ph == "E" then
      st.nextra = read_begin_end(model, st.begin_end, e, ph, ts, st.nextra)
    else
      st.nextra = st.nextra + 1 -- b/e, flows, counters, objects: counted, not drawn
      model.extra_ts[st.nextra] = ts
      if (ph == "b" or ph == "e") and st.ours and e.cat == "await" then read_await(model, st.async, e, ph, ts) end
      if ph == "C" then read_counter(model, e, ts) end
    end
  end
  return true
end

-- model.spans from the pieces: per category, in order of first appearance.
local function span_totals(model)
  local pieces = model.span_pieces
  table.sort(pieces, function(x, y)
    if x.ts ~= y.ts then return x.ts < y.ts end
    return (x.span or 0) < (y.span or 0)
  end)
  local by_cat, list, seen = {}, {}, {}
  for _, p in ipairs(pieces) do
    local c = by_cat[p.cat]
    if not c then
      c = {cat = p.cat, name = p.cat, count = 0, run_us = 0, wall_us = 0, unclosed = 0}
      by_cat[p.cat] = c
      list[#list + 1] = c
    end
    c.run_us = c.run_us + p.dur
    local key = p.span or p
    local s = seen[key]
    if not s then
      s = {from = p.ts, to = p.ts + p.dur, c = c}
      seen[key] = s
      c.count = c.count + 1
    elseif p.ts + p.dur > s.to then
      s.to = p.ts + p.dur
    end
    if p.unclosed then c.unclosed = c.unclosed + 1 end
  end
  for _, s in pairs(seen) do s.c.wall_us = s.c.wall_us + (s.to - s.from) end
  model.spans = list
end

-- Lane counts from jobqueProfile, by tid (by name for an item without a
-- tid that names a lane: two queues' lanes may share a name): in "laneInfo" (and "lanes" is
-- the lane count, as in the seed's format), or in "lanes" itself in files
-- written before laneInfo existed. True, or nil and a message.
local function read_lane_info(model, meta)
  local info, info_key = meta and meta.laneInfo, "laneInfo"
  if meta and type(info) ~= "table" and type(meta.lanes) == "table" then info, info_key = meta.lanes, "lanes" end
  if type(info) ~= "table" then return true end
  local by_name, by_tid = {}, {}
  for _, lane in ipairs(model.lanes) do
    if lane.name then by_name[lane.name] = lane end
    local tid = math.tointeger(lane.tid)
    if tid and math.tointeger(lane.pid) == 1 then by_tid[tid] = lane end -- laneInfo.tid: pid 1's
  end
  for i, l in ipairs(info) do
    local lane = type(l) == "table" and (by_tid[math.tointeger(l.tid) or false] or by_name[l.name])
    if lane then
      lane.recorded = math.tointeger(l.recorded)
      lane.unclosed_spans = math.tointeger(l.unclosedSpans) -- spans its job's end or the stop closed
      lane.dropped = math.tointeger(l.dropped) or lane.dropped
      lane.queue = integer_of(l.queue) -- a worker lane's queue
      lane.samples, lane.sample_error = integer_of(l.samples), str(l.sampleError)
      lane.sample_weight = type(l.sampleWeight) == "number" and l.sampleWeight or nil
      local sk = l.samplesSkipped
      if type(sk) == "table" then
        lane.samples_skipped = {userHook = integer_of(sk.userHook) or 0, tableFull = integer_of(sk.tableFull) or 0}
      end
      local full = ns_time(l.fullAtUs)
      if type(full) == "number" then
        if not (full >= -MAX_US and full <= MAX_US) then
          return nil, ('bad "jobqueProfile.%s[%d].fullAtUs": %s us is %s'):format(info_key, i, time_text(full),
                                                                                    OUT_OF_RANGE)
        end
        lane.full_at = full
      end
    end
  end
  return true
end

-- Lanes in order (sort index, then first appearance), each named, its
-- columns by time; markers and extra times by time; model.dropped summed.
local function order_lanes(model)
  for i, lane in ipairs(model.lanes) do
    lane.order = i
    if not lane.name then -- JSON numbers decode as floats: tid 1 is "thread 1", not "thread 1.0"
      local tid = math.tointeger(lane.tid) or lane.tid
      local t = type(tid)
      lane.name = tid == nil and "lane " .. i or "thread " .. ((t == "number" or t == "string") and tid or "?")
    end
    model.dropped = model.dropped + lane.dropped
  end
  table.sort(model.lanes, function(a, b)
    local sa, sb = a.sort or math.huge, b.sort or math.huge
    if sa ~= sb then return sa < sb end
    return a.order < b.order
  end)
  -- (columns the loader kept native are in order, their maxdur set:
  -- rawget says nil for them, and reading them would make them Lua lists)
  for i, lane in ipairs(model.lanes) do
    lane.index = i
    if rawget(lane, "ts") then
      sort_columns(lane, {"ts", "dur", "cat", "kind", "sname", "job", "args"}, lane.n)
      local maxdur = 0
      for k = 1, lane.n do
        if lane.dur[k] > maxdur then maxdur = lane.dur[k] end
      end
      lane.maxdur = maxdur
    end
  end
  if rawget(model, "marker_ts") then
    sort_columns(model, {"marker_ts", "marker_kind", "marker_arg", "marker_pid", "marker_tid"}, #model.marker_ts)
  end
  local extra_ts = rawget(model, "extra_ts") or {}
  for k = 2, #extra_ts do
    if extra_ts[k] < extra_ts[k - 1] then table.sort(extra_ts) break end
  end
end

-- Each lane's markers (lane.marker_ts: the times of the markers stamped
-- on it, sorted), for its event count; markers of a thread that has no
-- lane (no slice or instant of its own) go to model.loose_marker_ts.
local function markers_to_lanes(model)
  local cache, loose = model.lane_cache, {}
  local pids, tids = model.marker_pid, model.marker_tid
  for i, ts in ipairs(model.marker_ts) do
    local by_tid = cache[pids[i]]
    local lane = by_tid and by_tid[tids[i]]
    local list = lane and lane.marker_ts or loose
    if lane and not lane.marker_ts then
      list = {}
      lane.marker_ts = list
    end
    list[#list + 1] = ts
  end
  model.loose_marker_ts, model.marker_pid, model.marker_tid = loose, nil, nil
end

-- Counts n samples skipped under `why` (after those the loader counted).
local function skip_samples(model, why, n)
  model.samples_skipped = model.samples_skipped + n
  for _, r in ipairs(model.sample_skips) do
    if r.why == why then
      r.n = r.n + n
      return
    end
  end
  model.sample_skips[#model.sample_skips + 1] = {why = why, n = n}
end

-- The model once every event is read (st: the reading's state).
local function finish(st, meta)
  local model, ours = st.model, st.ours
  local t0, t1, nev = st.t0, st.t1, st.nev
  if nev == 0 then t0, t1 = 0, 0 end
  if model.session then -- the session's bounds, never hiding an event
    if nev == 0 or model.session.start < t0 then t0 = model.session.start end
    if nev == 0 or model.session.stop > t1 then t1 = model.session.stop end
  end
  -- B/E pairs (lane by lane, in the order they were met: the categories'
  -- order must not hang on addresses), a "B" never ended up to t1.
  for _, lane in ipairs(model.lanes) do
    local list = st.begin_end[lane]
    if list then st.nextra = pair_begin_end(model, lane, list, ours, t1, st.nextra) end
  end
  model.nevents = nev
  model.t0, model.t1 = t0, t1
  local ok, err = read_lane_info(model, meta)
  if not ok then return nil, err end
  order_lanes(model)
  model.nedges = st.nedges
  edge_lane_indexes(model)
  if model.nsamples > 0 then -- the loader's native columns: lanes as their indexes, then by lane and time
    reader.column_lane_index(model, "sample_lane")
    -- a sample outside the session (its events and startUs .. stopUs) is
    -- skipped: it never widens the trace's range; with neither to hold them
    -- against, the samples' own times are the range
    local bounded = nev > 0 or model.session ~= nil
    local kept, dropped, lo, hi = reader.order_samples(model, bounded and t0 or nil, bounded and t1 or nil)
    model.nsamples = kept
    if dropped > 0 then skip_samples(model, "ts outside the session", dropped) end
    if not bounded and kept > 0 then model.t0, model.t1 = lo, hi end
  end
  if rawget(model, "marker_pid") then markers_to_lanes(model) end -- else the loader did
  model.markers = marker_list(model)
  model.copies = copy_list(model)
  local function by_ts(x, y) return x.ts < y.ts end
  table.sort(model.failures, by_ts)
  table.sort(model.cancels, by_ts)
  span_totals(model)
  for _, c in ipairs(model.counters) do
    if rawget(c, "ts") then sort_columns(c, {"ts", "value"}, c.n) end
  end
  model.counter_key = nil
  model.kind_seen, model.lane_by_key, model.lane_cache, model.failure_by_job,
    model.category_by_id = nil, nil, nil, nil, nil
  return model
end

-- A new model, its jobqueProfile read: the model, or nil and a message.
local function start(meta)
  local model = new_model(meta)
  if meta then
    local ok, err = read_meta(model, meta)
    if not ok then return nil, err end
  end
  return model
end

--- Calls f(...) with the garbage collector paused (see jobque_profile.util).
M.without_gc = util.without_gc

-- The loader's calls back into this reader (see src/reader/load.c).
local hooks = {}
function hooks.begin(meta)
  local model, err = start(meta)
  if not model then return nil, err end
  return new_state(model, meta ~= nil)
end
function hooks.lane(st, pid, tid) return lane_of(st.model, pid, tid) end
function hooks.category(st, name) add_category(st.model.categories, name) end
function hooks.marker_kind(st, kind)
  if not st.model.kind_seen[kind] then add_marker_kind(st.model, kind) end
end
hooks.rare = read_one
function hooks.counter_track(st, name, pid, k) return counter_track(st.model, name, pid, k) end
function hooks.chain_tags(st, publishes) st.seed_tags = seed_chain_tags(publishes) end

-- The loader on the file at `path` or on `text`: the model, or nil and a
-- message (`name` labels it).
local function read(path, text, name, progress)
  local call = setmetatable({progress = progress}, {__index = hooks})
  local st, err, kind = reader.load_trace(call, path, text)
  if not st then
    if kind == "file" then return nil, err end -- it names the file
    return nil, (kind == "json" and "%s: not JSON (%s)" or "%s: %s"):format(name, err)
  end
  local model, ferr = finish(st, st.model.meta)
  if not model then return nil, ("%s: %s"):format(name, ferr) end
  model.path = name
  return model
end

--- Reads a trace from a JSON string: model, or nil and a message (`name`
-- labels messages). options.progress(done, total): called as the loader
-- goes (bytes).
function M.decode(text, name, options)
  return M.without_gc(read, nil, text, name or "trace", options and options.progress)
end

-- "N <noun>s skipped (why: n, ...)" of a count and its list of { why, n }.
local function skip_text(n, skips, noun)
  if n == 0 then return nil end
  local parts = {}
  for i, entry in ipairs(skips) do
    if i > 5 then parts[#parts + 1] = "..." break end
    parts[i] = ("%s: %d"):format(entry.why, entry.n)
  end
  return ("%d %s%s skipped (%s)"):format(n, noun, n == 1 and "" or "s", table.concat(parts, ", "))
end

--- "3 events skipped (ts is not a number: 2, unknown ph: 1)", or nil when
-- the model skipped none.
function M.skipped_text(model)
  return skip_text(model.skipped, model.skips, "event")
end

--- "2 samples skipped (unknown sf: 2)", or nil when the model skipped none.
function M.samples_skipped_text(model)
  return skip_text(model.samples_skipped or 0, model.sample_skips or {}, "sample")
end

--- True when `err` is the error of an allocation that failed (Lua's own,
-- or the loader's, in the same words).
function M.out_of_memory(err)
  return err == "not enough memory"
end

--- The message for files (`what`, their names) of `bytes` in all that
-- memory could not hold while `doing` ("read" by default) them.
function M.out_of_memory_text(what, bytes, doing)
  return ("%s: not enough memory to %s %.1f MB of trace (a trace takes many times its size in memory: "
          .. "free some, raise this process's limit (ulimit -v) or record a shorter trace)")
    :format(what, doing or "read", bytes / 1e6)
end

--- Reads the trace saved at `path`: model, or nil and a message (also
-- when memory runs out: the message names the file and its size).
-- options: as for decode (progress).
function M.load(path, options)
  if type(path) ~= "string" then
    return nil, ("bad argument #1 to 'load' (path expected, got %s)"):format(type(path))
  end
  local f, err = io.open(path, "rb")
  if not f then return nil, ("cannot open %s"):format(err) end
  local bytes = f:seek("end") or 0
  f:close()
  local ok, model, derr = pcall(M.without_gc, read, path, nil, path, options and options.progress)
  if not ok then
    if M.out_of_memory(model) then
      collectgarbage() -- what the failed read left, before building the message
      return nil, M.out_of_memory_text(path, bytes)
    end
    error(model, 0)
  end
  if model then model.bytes = bytes end
  return model, derr
end

return M
