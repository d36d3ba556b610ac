-- A reference reading of a trace, for the loader's differential specs: the
-- text decoded by lua-cjson and read by the Trace Event Format's plain
-- rules (docs/trace-format.md), into a summary of what a model must hold.
-- It is an oracle, not a second reader: small, no speed, and it reads
-- fewer shapes than the loader. Where it does not read a shape it says so
-- (nil, "unsupported: why"), and a spec then checks the loader alone.
--
--   R.read(text) -> summary | nil, "not JSON" | nil, "refused: why" | nil, "unsupported: why"
--   R.summary(model) -> the same summary of a model jobque_profile.trace built
--
-- A summary: { format, nevents, t0, t1, skipped, lanes = { [pid:tid] = {
-- name, slices = sorted list of "ts dur cat kind name job" } }, markers =
-- sorted list of "ts kind arg", counters = { ["name pid"] = sorted list of
-- "ts value" }, edges = sorted list of "ts pid:tid kind job on queue" }. Slices, markers and samples are compared as sets of the
-- same size: the order of ties is checked by hand elsewhere.
local cjson = require "cjson.safe"

local R = {}

local MAX_US = 3e15
local CHAINED = {publish = true, chunk = true, stage_wait = true}

local function num(x) return ("%.17g"):format(x) end
local function int_text(v)
  if v == 0 then return "0" end -- (-0 too)
  return math.type(v) == "float" and v == math.floor(v) and num(v) or tostring(v)
end

-- Our writer's times as the nanoseconds they stand for (trace-format.md, Times).
local function ns(x, ours)
  if ours and math.type(x) == "float" then return math.floor(x * 1000 + 0.5) / 1000 end
  return x
end

-- The category a complete event counts under, and its kind (trace-format.md, Reading it back).
local function classify(e, ours, tags, by_id)
  local cat = type(e.cat) == "string" and e.cat or nil
  local name = type(e.name) == "string" and e.name or "?"
  if e.cat == nil and CHAINED[e.name] and type(e.args) == "table" then
    if e.name == "stage_wait" then return "wait", "wait" end
    local tag = tags[e.args.chain]
    if not tag then return "slice", e.name end
    if tag == 0 then return "slice", "untagged" end
    return "slice", by_id[tag] or ("tag %d"):format(tag)
  end
  if ours then
    local args = type(e.args) == "table" and e.args or {}
    if math.type(args.span) then return "span", cat or name end
    if cat == "job" then return "job", name end
    if cat == "submit" or cat == "wait" then return cat, cat end
    if cat == "flow" then return nil end
    if cat == "copy" then return "copy", type(args.category) == "string" and args.category or "job" end
  end
  cat = cat or name
  return cat == "wait" and "wait" or "slice", cat
end

-- A pid or tid as text (an object or a list by its type: the reference reads none).
local function id(v)
  if type(v) == "number" then return int_text(v) end
  return type(v) == "string" and v or type(v)
end

local function lane_key(e) return id(e.pid or 0) .. ":" .. id(e.tid or 0) end

-- An edge of ours (trace-format.md, Edges) as text: its kind by its name,
-- its args' ids when they are integers.
local EDGE_KINDS = {["waited for"] = 1, ["after"] = 2, ["waited for all"] = 3}
local function edge_text(ts, key, kind, job, on, queue)
  local function int(v) return tostring(math.type(v) and math.tointeger(v) or nil) end
  return ("%s %s %d %s %s %s"):format(num(ts), key, kind, int(job), int(on), int(queue))
end

local function slice_text(ts, dur, kind, cat, e)
  local args = type(e.args) == "table" and e.args or {}
  local job = math.tointeger(args.job) or (type(args.job) == "string" and args.job) or false
  return ("%s %s %s %s %s %s"):format(num(ts), num(dur), cat, kind, type(e.name) == "string" and e.name or "?",
                                     tostring(job))
end

local function unsupported(events, meta)
  for _, e in ipairs(events) do
    if type(e) == "table" then
      for _, k in ipairs{"pid", "tid"} do
        if e[k] ~= nil and not math.tointeger(e[k]) then return "a " .. k .. " that is no integer" end
      end
    end
  end
  local info = meta and (type(meta.laneInfo) == "table" and meta.laneInfo or meta.lanes)
  for _, l in ipairs(type(info) == "table" and info or {}) do
    local at = type(l) == "table" and ns(l.fullAtUs, true)
    if type(at) == "number" and (at ~= at or math.abs(at) > MAX_US) then return "a lane full out of range" end
  end
end

-- Whether the text holds an integer a double does not hold (lua-cjson
-- reads every number as a double; the loader keeps integers exact).
local function long_integer(text)
  for at, digits, after in text:gmatch("()(%d+)()") do
    if #digits >= 16 and text:sub(at - 1, at - 1) ~= "." and not text:sub(after, after):find("[.eE]") then
      return true
    end
  end
  return false
end

-- The chains' tags of a seed trace: chain -> stage >> 8 of its publish.
local function chain_tags(events)
  local tags = {}
  for _, e in ipairs(events) do
    if type(e) == "table" and e.name == "publish" and e.ph == "X" and e.cat == nil and type(e.args) == "table" then
      local stage = math.tointeger(e.args.stage)
      if e.args.chain ~= nil and stage and stage >= 0 then tags[e.args.chain] = stage >> 8 end
    end
  end
  return tags
end

local function lane(s, e)
  local key = lane_key(e)
  s.lanes[key] = s.lanes[key] or {slices = {}, begin_end = {}}
  return s.lanes[key]
end

local PHASES = {}
for ph in ("X i I R B E b e s t f C n N O D"):gmatch("%S+") do PHASES[ph] = true end

local function add_slice(s, l, ts, dur, e)
  local kind, cat = classify(e, s.ours, s.tags, s.by_id)
  if kind then table.insert(l.slices, slice_text(ts, dur, kind, cat, e)) end
end

local function add_sample(s, e, ts)
  for k, v in pairs(e.args) do
    v = type(v) == "string" and tonumber(v) or v
    if type(k) == "string" and type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge then
      local track = ("%s %s %s"):format(type(e.name) == "string" and e.name or "?", k, id(e.pid or 0))
      s.counters[track] = s.counters[track] or {}
      table.insert(s.counters[track], num(ts) .. " " .. int_text(v))
    end
  end
end

-- One event into s: nil, or "refused: why".
local function read_event(s, e)
  local ph = type(e) == "table" and e.ph or nil
  if ph == "M" then
    local args = type(e.args) == "table" and e.args or {}
    if e.name == "thread_name" and type(args.name) == "string" then lane(s, e).name = args.name end
    return
  end
  local ts, dur = ph ~= nil and ns(e.ts, s.ours), 0
  if ph == "X" and e.dur ~= nil then dur = ns(e.dur, s.ours) end
  if type(ts) ~= "number" or not PHASES[ph] then s.skipped = s.skipped + 1 return end
  if not (ts >= -MAX_US and ts <= MAX_US) then return "refused: ts out of range" end
  if type(dur) ~= "number" or dur < 0 then s.skipped = s.skipped + 1 return end
  if dur > MAX_US or dur ~= dur then return "refused: dur out of range" end
  s.nevents = s.nevents + 1
  s.t0, s.t1 = math.min(s.t0, ts), math.max(s.t1, ts + dur)
  if ph == "X" then
    add_slice(s, lane(s, e), ts, dur, e)
  elseif ph == "B" or ph == "E" then
    table.insert(lane(s, e).begin_end, {ts = ts, e = e})
  elseif s.ours and ph == "i" and e.s == "t" and e.cat == "edge" and EDGE_KINDS[e.name] then
    local args = type(e.args) == "table" and e.args or {}
    s.edges[#s.edges + 1] = edge_text(ts, lane_key(e), EDGE_KINDS[e.name], args.job, args.on, args.queue)
  elseif (ph == "i" or ph == "I" or ph == "R") and (e.s == "g" or e.s == "p") then
    local arg = type(e.args) == "table" and e.args.arg
    arg = (type(arg) == "number" and int_text(arg)) or (type(arg) == "string" and arg) or "nil"
    s.markers[#s.markers + 1] = ("%s %s %s"):format(num(ts), type(e.name) == "string" and e.name or "?", arg)
  elseif ph == "C" and type(e.args) == "table" then
    add_sample(s, e, ts)
  end
end

-- A lane's B and E events: by time (ties in file order), each E ending the
-- latest B still open; a B never ended runs to the trace's end.
local function pair_begin_end(s, l)
  local list = l.begin_end
  for i, x in ipairs(list) do x.i = i end
  table.sort(list, function(a, b) if a.ts ~= b.ts then return a.ts < b.ts end return a.i < b.i end)
  local open = {}
  for _, x in ipairs(list) do
    if x.e.ph == "B" then
      open[#open + 1] = x
    elseif #open > 0 then
      local b = table.remove(open)
      add_slice(s, l, b.ts, math.max(0, x.ts - b.ts), b.e)
    end
  end
  for _, b in ipairs(open) do add_slice(s, l, b.ts, math.max(0, s.t1 - b.ts), b.e) end
  l.begin_end = nil
end

local json = cjson.new()
json.decode_invalid_numbers(false)
json.decode_max_depth(1001) -- the loader's limit: 1000 containers inside the top object

-- The session's bounds from the metadata: start, stop (false: none), or
-- nil and "refused: why".
local function session(meta)
  local start, stop = ns(meta.startUs, true), ns(meta.stopUs, true)
  if start == nil and stop == nil and type(meta.durationUs) == "number" then start, stop = 0, ns(meta.durationUs, true) end
  if type(start) ~= "number" or type(stop) ~= "number" then return false end
  if not (math.abs(start) <= MAX_US and math.abs(stop) <= MAX_US) then return nil, "refused: session out of range" end
  return start, stop
end

-- The metadata's categories by id; nil and "refused: why" for an entry with no name.
local function categories(meta)
  local by_id = {}
  for _, key in ipairs{"categories", "markers"} do
    for _, c in ipairs(type(meta[key]) == "table" and meta[key] or {}) do
      if type(c) ~= "table" or type(c.name) ~= "string" then return nil, "refused: metadata" end
      local k = key == "categories" and math.tointeger(c.id)
      if k and not by_id[k] then by_id[k] = c.name end
    end
  end
  return by_id
end

local function sorted(s)
  table.sort(s.markers)
  table.sort(s.edges)
  for _, l in pairs(s.lanes) do table.sort(l.slices) end
  for _, c in pairs(s.counters) do table.sort(c) end
  return s
end

function R.read(text)
  -- the model has no use for jobqueProfile.clocks, whose realtimeNs is above 2^53
  if long_integer((text:gsub('"clocks":{[^}]*}', '"clocks":{}', 1))) then
    return nil, "unsupported: integers beyond a double's"
  end
  local doc = json.decode(text)
  if doc == nil then return nil, "not JSON" end
  local events = type(doc) == "table" and (doc.traceEvents or (text:match("^%s*%[") and doc))
  local meta = type(doc) == "table" and doc.jobqueProfile ~= cjson.null and doc.jobqueProfile or nil
  if type(events) ~= "table" or (next(events) ~= nil and events[1] == nil) then return nil, "refused: no events" end
  if meta ~= nil and type(meta) ~= "table" then return nil, "refused: metadata" end
  local why = unsupported(events, meta)
  if why then return nil, "unsupported: " .. why end
  local s = {format = meta and "jobque" or "chrome", nevents = 0, t0 = math.huge, t1 = -math.huge, skipped = 0,
             lanes = {}, markers = {}, counters = {}, edges = {}, ours = meta ~= nil, tags = chain_tags(events),
             by_id = {}}
  local start, stop = false, false
  if meta then
    start, stop = session(meta)
    if start == nil then return nil, stop end
    s.by_id, why = categories(meta)
    if not s.by_id then return nil, why end
  end
  for _, e in ipairs(events) do
    local err = read_event(s, e)
    if err then return nil, err end
  end
  if s.nevents == 0 then s.t0, s.t1 = 0, 0 end
  if start then
    local lo, hi = math.min(start, stop), math.max(start, stop)
    s.t0 = s.nevents == 0 and lo or math.min(s.t0, lo)
    s.t1 = s.nevents == 0 and hi or math.max(s.t1, hi)
  end
  for _, l in pairs(s.lanes) do pair_begin_end(s, l) end
  s.ours, s.tags, s.by_id = nil, nil, nil
  return sorted(s)
end


function R.summary(model)
  local s = {format = model.format, nevents = model.nevents, t0 = model.t0, t1 = model.t1, skipped = model.skipped,
             lanes = {}, markers = {}, counters = {}, edges = {}}
  for k = 1, model.nedges do
    local l = model.lanes[model.edge_lane[k]]
    s.edges[k] = edge_text(model.edge_ts[k], lane_key({pid = l.pid, tid = l.tid}), model.edge_kind[k], model.edge_job[k],
                           model.edge_on[k], model.edge_queue[k])
  end
  for _, l in ipairs(model.lanes) do
    local e = {pid = l.pid, tid = l.tid}
    local slices = {}
    for i = 1, l.n do
      slices[i] = slice_text(l.ts[i], l.dur[i], l.kind[i], l.cat[i], {name = l.sname[i], args = {job = l.job[i]}})
    end
    s.lanes[lane_key(e)] = {name = l.name, slices = slices}
  end
  for i = 1, #model.marker_ts do
    local arg = model.marker_arg[i]
    arg = (type(arg) == "number" and int_text(arg)) or (type(arg) == "string" and arg) or "nil"
    s.markers[i] = ("%s %s %s"):format(num(model.marker_ts[i]), model.marker_kind[i], arg)
  end
  for _, c in ipairs(model.counters) do
    local list = {}
    for i = 1, c.n do list[i] = num(c.ts[i]) .. " " .. int_text(c.value[i]) end
    s.counters[("%s %s"):format(c.name, id(c.pid or 0))] = list
  end
  return sorted(s)
end

-- Where two summaries differ (a path), or nil. A lane the reference read
-- no name for (no thread_name: the loader names it) is not compared by name.
function R.differ(want, got)
  for _, k in ipairs{"format", "nevents", "t0", "t1", "skipped"} do
    if want[k] ~= got[k] then return ("%s: %s ~= %s"):format(k, tostring(want[k]), tostring(got[k])) end
  end
  local function list(path, a, b)
    if #a ~= #b then return ("%s: %d ~= %d items"):format(path, #a, #b) end
    for i = 1, #a do
      if a[i] ~= b[i] then return ("%s[%d]: %s ~= %s"):format(path, i, a[i], b[i]) end
    end
  end
  local d = list("markers", want.markers, got.markers) or list("edges", want.edges, got.edges)
  if d then return d end
  for key, l in pairs(want.lanes) do
    local g = got.lanes[key]
    if #l.slices > 0 or l.name then
      if not g then return "lane " .. key .. ": missing" end
      if l.name and l.name ~= g.name then return ("lane %s: name %s ~= %s"):format(key, l.name, tostring(g.name)) end
      d = list("lane " .. key, l.slices, g.slices)
      if d then return d end
    end
  end
  for key, g in pairs(got.lanes) do
    if #g.slices > 0 and not want.lanes[key] then return "lane " .. key .. ": not in the reference" end
  end
  for name, c in pairs(want.counters) do
    d = list("counter " .. name, c, got.counters[name] or {})
    if d then return d end
  end
  for name in pairs(got.counters) do
    if not want.counters[name] then return "counter " .. name .. ": not in the reference" end
  end
end

return R
