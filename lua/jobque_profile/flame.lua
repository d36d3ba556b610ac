--- jobque_profile.flame: the `flame` command's outputs, from the samples
-- jobque_profile.samples selects (it writes no file itself).
--
--   folded(model, idx, opts) -> Brendan Gregg's collapsed stacks: a line
--       "root;...;leaf COUNT" per stack, sorted bytewise (samples.folded);
--       folded_parts: the same as a list of parts (a line, "\n", ...)
--   speedscope(model, idx, opts) -> speedscope's JSON file format
--       (https://www.speedscope.app/file-format-schema.json): shared.frames
--       {name, file, line} (name: the frame's text as folded stacks show
--       it), one "sampled" profile per lane, or per group with opts.by (the
--       group names the profile; no group frame is added), in the order
--       their first samples come; a sample per sample of idx, in order
--       (consecutive samples of one stack as one), its weight the
--       samples' weight x the period in microseconds (unit
--       "microseconds"; "none" and the bare weights when the trace gives no
--       period). opts.lines appends ":LINE" to the leaf, whose `line` is
--       then the sample's line; opts.name names the file. speedscope_parts:
--       the same as a list of parts (the command writes them in turn).
-- opts: by, lines as for samples.stacks.
local samples = require "jobque_profile.samples"
local util = require "jobque_profile.util"

local M = {}

--- The folded stacks of idx, as a list of the text's parts, written in
-- order: each line, then "\n" (empty when nothing has a count). No part
-- holds more than a line: a deep stack's line is long, the whole text is
-- never one string.
function M.folded_parts(model, idx, opts)
  local parts = {}
  for _, line in ipairs(samples.folded(model, idx, opts)) do
    parts[#parts + 1] = line
    parts[#parts + 1] = "\n"
  end
  return parts
end

--- The folded stacks of idx, as text (empty when nothing has a count).
function M.folded(model, idx, opts)
  return table.concat(M.folded_parts(model, idx, opts))
end

-- The file and line a frame's text names: "name (file:line)", "function
-- <file:line>", "main chunk (file)"; none for C and synthetic frames.
local function where(text)
  local file, line = text:match("^.- %((.+):(%d+)%)$")
  if not file then file, line = text:match("^function <(.+):(%d+)>$") end
  if not file then file = text:match("^main chunk %((.+)%)$") end
  return file, line and math.tointeger(tonumber(line))
end

-- The shared frames of a file being built: index(text, line) -> the frame's
-- index from 0 (a text with a sample's line is the text followed by
-- ":LINE", with that line).
local function frame_table()
  local list, by_key = {}, {}
  local function index(text, line)
    local key = line and (text .. "\0" .. line) or text
    local k = by_key[key]
    if k then return k end
    local file, defined = where(text)
    local parts = {'{"name":', util.quote(line and (text .. ":" .. line) or text)}
    if file then parts[#parts + 1] = ',"file":' .. util.quote(file) end
    if line or defined then parts[#parts + 1] = ',"line":' .. util.json(line or defined) end
    list[#list + 1] = table.concat(parts) .. "}"
    k = #list - 1
    by_key[key] = k
    return k
  end
  return list, index
end

-- The profiles of idx: a list of {name, stacks = {"[0,1]", ...}, weights = {...},
-- total} by lane (or group), in order of first sample.
local function profiles_of(model, idx, opts, index)
  local by, lines = opts.by, opts.lines
  local leaf, line, weight, lane = model.sample_frame, model.sample_line, model.sample_weight, model.sample_lane
  local list, by_key, paths, stack_text = {}, {}, {}, {}
  for _, i in ipairs(idx) do
    local g = by and samples.group(model, by, i)
    local key = g or lane[i] -- a lane's own profile, even when another lane has its name
    local p = by_key[key]
    if not p then
      p = {name = g and g:sub(2, -2) or model.lanes[lane[i]].name, stacks = {}, weights = {}, total = 0}
      by_key[key] = p
      list[#list + 1] = p
    end
    local ln = lines and line[i] or nil
    local skey = leaf[i] .. "\0" .. (ln or "")
    local text = stack_text[skey]
    if not text then
      local path = samples.path(model, paths, leaf[i])
      local ks = {}
      for x, t in ipairs(path) do ks[x] = index(t, x == #path and ln or nil) end
      text = "[" .. table.concat(ks, ",") .. "]"
      stack_text[skey] = text
    end
    local w, n = weight[i], #p.stacks -- integers: the loader keeps their sum within 2^53
    if p.stacks[n] == text then -- the same stack again: one sample of both weights
      p.weights[n] = p.weights[n] + w
    else
      p.stacks[n + 1], p.weights[n + 1] = text, w
    end
    p.total = p.total + w
  end
  return list
end

--- The speedscope file of idx (see the header), as a list of the text's
-- parts, written in order (a frame or a profile each).
function M.speedscope_parts(model, idx, opts)
  opts = opts or {}
  local frames, index = frame_table()
  local profiles = profiles_of(model, idx, opts, index)
  local period = samples.period_us(model)
  local unit = period and "microseconds" or "none"
  local out = {'{"$schema":"https://www.speedscope.app/file-format-schema.json","exporter":"jobque-profile",',
               '"name":', util.quote(opts.name or "trace"), ',"activeProfileIndex":0,\n"shared":{"frames":[\n'}
  for k, f in ipairs(frames) do out[#out + 1] = (k > 1 and ",\n" or "") .. f end
  out[#out + 1] = '\n]},\n"profiles":['
  for x, p in ipairs(profiles) do
    if period then -- the exact sums of weights, each times the period once
      p.total = p.total * period
      for k, w in ipairs(p.weights) do p.weights[k] = w * period end
    end
    out[#out + 1] = (x > 1 and ",\n" or "\n") .. '{"type":"sampled","name":' .. util.quote(p.name)
                    .. ',"unit":"' .. unit .. '","startValue":0,"endValue":' .. util.json(p.total)
                    .. ',\n"samples":[' .. table.concat(p.stacks, ",") .. '],\n"weights":['
                    .. util.json(p.weights):sub(2, -2) .. "]}"
  end
  out[#out + 1] = "\n]}\n"
  return out
end

--- The speedscope file of idx, as text.
function M.speedscope(model, idx, opts)
  return table.concat(M.speedscope_parts(model, idx, opts))
end

return M
