--- jobque_profile.samples: the one aggregation of a trace's CPU samples (the
-- model's sample_* columns and frame tree, see jobque_profile.trace), for
-- `flame`, the report's "top functions" and compare. Pure Lua over the
-- model; it writes nothing.
--
--   select(model, filter) -> the indexes of the samples that pass, in the
--       model's order (lane, then time). filter: from, to (microseconds
--       since the session's start, ends included; or ts_from, ts_to on the
--       file's clock), and lists categories (the sample's category name),
--       lanes (lane names), jobs (job ids), spans (span category names: a
--       sample's span id names its category through model.span_pieces).
--       Kinds combine with "and", the values of one kind with "or".
--   names(model) -> {categories, lanes, spans}: what the filters can name
--       (the samples' categories and the spans' categories sorted, the
--       lanes in lane order)
--   clean(text) -> a frame's text as folded stacks may carry it: ";" as
--       ",", each control byte, C1 control, U+2028, U+2029 and bidi control
--       (util.unseen) as "?", each sequence of bytes that is not UTF-8 as
--       U+FFFD
--   stacks(model, idx, opts) -> the weights of idx by stack: a list of
--       {frames = {text, ...} root first, cleaned, group, weight} in order
--       of first appearance. opts.by = "category" | "lane" | "job" puts the
--       sample's group first ("[category NAME]", "[lane NAME]",
--       "[job ID CATEGORY]", "[no job CATEGORY]"); opts.lines appends
--       ":LINE" to the leaf (when the sample has a line)
--   folded(model, idx, opts) -> the folded-stack lines ("root;...;leaf
--       COUNT", COUNT the sum of the weights, an exact integer; stacks of
--       weight 0 left out), sorted bytewise
--   top(model, idx, n) -> the n functions (by frame text) with the most
--       self weight (ties: more total, then the text bytewise; functions
--       whose total weight is 0 left out): {frame,
--       self, total (shares of idx's weight, 0..1), self_weight, total_weight
--       (weights), self_us, total_us (weight x period; nil when the trace
--       has no period)}. Total counts a function once per sample even when
--       it recurses.
--   path(model, cache, k) -> the cleaned texts of frame k's path, root first
--   group(model, by, i) -> sample i's group frame for by (see stacks)
--   period_us(model) -> the sampling period in microseconds, or nil
--   weight(model, idx) -> the sum of idx's weights
--   figures(model, a, b, n, all_frames) -> the report's figures (below)
local util = require "jobque_profile.util"

local M = {}

--- The sampling period in microseconds (nil when the trace gives none).
function M.period_us(model)
  local s = model.sampling
  local ns = s and tonumber(s.period_ns)
  if not ns or ns <= 0 then return nil end
  return ns / 1000
end

-- A set of the values of a list (nil: no list, no filter).
local function set_of(list)
  if not list or #list == 0 then return nil end
  local set = {}
  for _, v in ipairs(list) do set[v] = true end
  return set
end

-- The span category of each span id (model.span_pieces).
local function span_categories(model)
  local cat = {}
  for _, p in ipairs(model.span_pieces or {}) do
    if p.span then cat[p.span] = p.cat end
  end
  return cat
end

-- The lane indexes whose name is in `names`.
local function lane_set(model, names)
  local wanted = set_of(names)
  if not wanted then return nil end
  local set = {}
  for i, lane in ipairs(model.lanes) do
    if wanted[lane.name] then set[i] = true end
  end
  return set
end

--- The indexes of the samples that pass `filter` (see the header).
function M.select(model, filter)
  filter = filter or {}
  local n = model.nsamples or 0
  local a = filter.ts_from or (filter.from and util.file_time(model, filter.from)) or -math.huge
  local b = filter.ts_to or (filter.to and util.file_time(model, filter.to)) or math.huge
  local cats, jobs, spans = set_of(filter.categories), set_of(filter.jobs), set_of(filter.spans)
  local lanes = lane_set(model, filter.lanes)
  local span_cat = spans and span_categories(model)
  local ts, cat, lane, job, span = model.sample_ts, model.sample_cat, model.sample_lane, model.sample_job,
                                   model.sample_span
  local out = {}
  for i = 1, n do
    local t = ts[i]
    if t >= a and t <= b and (not cats or cats[cat[i]]) and (not lanes or lanes[lane[i]])
       and (not jobs or (job[i] and jobs[job[i]])) and (not spans or (span[i] and spans[span_cat[span[i]]])) then
      out[#out + 1] = i
    end
  end
  return out
end

local function sorted_keys(set)
  local list = {}
  for k in pairs(set) do list[#list + 1] = k end
  table.sort(list)
  return list
end

--- What the filters can name: the samples' categories, the lanes, the
-- spans' categories.
function M.names(model)
  local cats, spans, lanes = {}, {}, {}
  for i = 1, model.nsamples or 0 do cats[model.sample_cat[i]] = true end
  for _, p in ipairs(model.span_pieces or {}) do spans[p.cat] = true end
  for i, lane in ipairs(model.lanes) do lanes[i] = lane.name end
  return {categories = sorted_keys(cats), lanes = lanes, spans = sorted_keys(spans)}
end

--- The sum of the weights of the samples idx.
function M.weight(model, idx)
  local w, sum = model.sample_weight, 0
  for _, i in ipairs(idx) do sum = sum + w[i] end
  return sum
end

--- A frame's text for a folded line (see the header).
function M.clean(text)
  text = util.unseen(tostring(text):gsub("%c", "?"):gsub(";", ","), function() return "?" end)
  if utf8.len(text) then return text end
  -- util.quote replaces what is not UTF-8 by U+FFFD; with no control byte
  -- left, its only escapes are \" and \\.
  return (util.quote(text):sub(2, -2):gsub("\\(.)", "%1"))
end

--- The cleaned texts of frame k's path, root first (kept in `cache`, a
-- table the caller gives for one model, by k).
function M.path(model, cache, k)
  local p = cache[k]
  if p then return p end
  local fr = model.frames
  local rev = {}
  local j = k
  while j and j > 0 do
    rev[#rev + 1] = M.clean(fr.name[j])
    j = fr.parent[j]
  end
  p = {}
  for x = #rev, 1, -1 do p[#p + 1] = rev[x] end
  cache[k] = p
  return p
end

--- The group frame of sample i for by = "category", "lane" or "job" (see
-- stacks); nil for any other by.
function M.group(model, by, i)
  if by == "category" then return "[category " .. M.clean(model.sample_cat[i]) .. "]" end
  if by == "lane" then return "[lane " .. M.clean(model.lanes[model.sample_lane[i]].name) .. "]" end
  if by == "job" then
    local job = model.sample_job[i]
    local cat = M.clean(model.sample_cat[i])
    return job and ("[job %d %s]"):format(job, cat) or ("[no job " .. cat .. "]")
  end
  return nil
end

--- The weights of idx by stack (see the header).
function M.stacks(model, idx, opts)
  opts = opts or {}
  local by, lines = opts.by, opts.lines
  local leaf, line, weight = model.sample_frame, model.sample_line, model.sample_weight
  local cache, list, by_key = {}, {}, {}
  for _, i in ipairs(idx) do
    local g = M.group(model, by, i)
    local ln = lines and line[i] or nil
    local key = (g or "") .. "\0" .. leaf[i] .. "\0" .. (ln or "")
    local s = by_key[key]
    if not s then
      local frames = {g}
      for _, text in ipairs(M.path(model, cache, leaf[i])) do frames[#frames + 1] = text end
      if ln then frames[#frames] = ("%s:%d"):format(frames[#frames], ln) end
      s = {frames = frames, group = g, weight = 0}
      by_key[key] = s
      list[#list + 1] = s
    end
    s.weight = s.weight + weight[i]
  end
  return list
end

--- The folded-stack lines of idx (see the header).
function M.folded(model, idx, opts)
  local by_text, texts = {}, {}
  for _, s in ipairs(M.stacks(model, idx, opts)) do
    local text = table.concat(s.frames, ";")
    if not by_text[text] then texts[#texts + 1] = text end
    by_text[text] = (by_text[text] or 0) + s.weight
  end
  local out = {}
  for _, text in ipairs(texts) do
    local count = by_text[text] -- an integer: the loader keeps the weights' sum within 2^53
    if count > 0 then out[#out + 1] = ("%s %d"):format(text, count) end
  end
  table.sort(out)
  return out
end

local function by_self(x, y)
  if x.self_w ~= y.self_w then return x.self_w > y.self_w end
  if x.total_w ~= y.total_w then return x.total_w > y.total_w end
  return x.frame < y.frame
end

--- The n functions with the most self weight among idx (see the header).
function M.top(model, idx, n)
  local fr = model.frames
  local leaf, weight = model.sample_frame, model.sample_weight
  local by_leaf, leaves, all = {}, {}, 0
  for _, i in ipairs(idx) do
    local k = leaf[i]
    if not by_leaf[k] then leaves[#leaves + 1] = k end
    by_leaf[k] = (by_leaf[k] or 0) + weight[i]
    all = all + weight[i]
  end
  local rows, row_of = {}, {}
  local function row(text)
    local r = row_of[text]
    if not r then
      r = {frame = text, self_w = 0, total_w = 0, seen = 0}
      row_of[text] = r
      rows[#rows + 1] = r
    end
    return r
  end
  for stamp, k in ipairs(leaves) do
    local w = by_leaf[k]
    local r = row(fr.name[k])
    r.self_w = r.self_w + w
    local j = k
    while j and j > 0 do -- once per function on the path, however often it recurses
      r = row(fr.name[j])
      if r.seen ~= stamp then
        r.seen = stamp
        r.total_w = r.total_w + w
      end
      j = fr.parent[j]
    end
  end
  table.sort(rows, by_self)
  while #rows > 0 and rows[#rows].total_w == 0 do rows[#rows] = nil end -- sorted last: they took no time
  local period = M.period_us(model)
  local out = {}
  for x = 1, math.min(n, #rows) do
    local r = rows[x]
    out[x] = {frame = r.frame, self = all > 0 and r.self_w / all or 0, total = all > 0 and r.total_w / all or 0,
              self_weight = r.self_w, total_weight = r.total_w, self_us = period and r.self_w * period,
              total_us = period and r.total_w * period}
  end
  return out
end

--- How many categories the report breaks the top functions down by.
M.CATEGORIES = 3

-- The categories of idx by weight, most first (ties: the name bytewise):
-- {name, weight, idx}.
local function categories_of(model, idx)
  local by, list = {}, {}
  local cat, w = model.sample_cat, model.sample_weight
  for _, i in ipairs(idx) do
    local c = by[cat[i]]
    if not c then
      c = {name = cat[i], weight = 0, idx = {}}
      by[cat[i]] = c
      list[#list + 1] = c
    end
    c.weight = c.weight + w[i]
    c.idx[#c.idx + 1] = i
  end
  table.sort(list, function(x, y)
    if x.weight ~= y.weight then return x.weight > y.weight end
    return x.name < y.name
  end)
  return list
end

--- The samples' figures over [a, b] (the file's clock) for the report:
-- nil without samples, else {hz, period_us, total_weight, total_us, lanes =
-- {{name, weight}} (the lanes with samples in the range, in lane order),
-- top = top(.., n), by_category = {{name, total (its share of the
-- weight), weight, total_us, top}} (the M.CATEGORIES heaviest)};
-- all_frames: also frames, every function's row by its text (compare's).
function M.figures(model, a, b, n, all_frames)
  if (model.nsamples or 0) == 0 then return nil end
  local idx = M.select(model, {ts_from = a, ts_to = b})
  local period = M.period_us(model)
  local total = M.weight(model, idx)
  local by_lane, lanes = {}, {}
  for _, i in ipairs(idx) do
    local l = model.sample_lane[i]
    by_lane[l] = (by_lane[l] or 0) + model.sample_weight[i]
  end
  for l, lane in ipairs(model.lanes) do
    if by_lane[l] then lanes[#lanes + 1] = {name = lane.name, weight = by_lane[l]} end
  end
  local by_category = {}
  for k, c in ipairs(categories_of(model, idx)) do
    if k > M.CATEGORIES then break end
    by_category[k] = {name = c.name, weight = c.weight, total = total > 0 and c.weight / total or 0,
                      total_us = period and c.weight * period, top = M.top(model, c.idx, n)}
  end
  local f = {hz = model.sampling and model.sampling.hz, period_us = period, total_weight = total,
             total_us = period and total * period, lanes = lanes, top = M.top(model, idx, n),
             by_category = by_category}
  if all_frames then
    f.frames = {}
    for _, r in ipairs(M.top(model, idx, math.huge)) do f.frames[r.frame] = r end
  end
  return f
end

return M
