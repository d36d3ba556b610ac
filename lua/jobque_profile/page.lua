--- jobque_profile.page: a trace model as one self-contained HTML timeline.
--
-- render(model [, options]) -> the page: the files page/page.html,
-- page.css and page.js beside this module (installed with it) filled in,
-- the CSS and JavaScript inline, the trace as JSON in a script element (every "<" and ">" escaped: no name can end the element
-- or change how the page parses), nothing fetched. The page draws on a
-- canvas and, after each draw, publishes what it shows in
-- window.timelineState and in document.body.dataset.state (lanes, legend
-- entries, markers, failed slices (outlined in red), the selected range's figures, the labels drawn), which
-- the specs read. Every time on the page (axis, tooltips, the fragment, the
-- published view and figures) is microseconds since the session's start,
-- model.t0. A URL fragment "#from=US&to=US" opens the page zoomed to that
-- range, and selected. Names are cut (an ellipsis, line breaks as U+23CE)
-- to NAME_WIDTH characters in the legend and to the room there is on the
-- canvas; tooltips and the legend's titles show them whole. The specs'
-- hooks (page/hooks.js: #do=, #hover=, #probe=, #cprobe=, #bench;
-- samples_hooks.js: #iclick=, #ihover=) are in the page only with
-- options.test_hooks (the command's hidden --test-hooks).
-- Each in a JSON element of its own: the job graph (every job's slices,
-- latencies and neighbours, and the critical path: jobque_profile.reader's
-- page_graph), model.counters, and the depth of each span. A model with
-- samples (model.nsamples > 0) gets page/samples.js (an icicle of the
-- selected range, filtered by category and lane; sample ticks on the lanes
-- when zoomed in) and their data in an element of its own; a model
-- without any gets the page it got before samples existed. The columns are
-- written in C (src/reader/page.c, page_graph.c), one call per column;
-- what C hands back (a slice's args that are a table, a marker's arg that
-- is not a number) is written here.
local report = require "jobque_profile.report"
local graph = require "jobque_profile.graph"
local util = require "jobque_profile.util"
local C = require "jobque_profile.reader"

local M = {}

local quote, json = report.quote, report.json

-- Microseconds as integer nanoseconds (the page's one rounding, in C: its
-- columns' times through page_ns, a lone time through this).
local ns = C.page_time

local plain_key = setmetatable({}, {__index = function(t, k) -- usable in JSON as it is
  local plain = type(k) == "string" and not k:find('[%c"\\]')
  t[k] = plain
  return plain
end})

-- t[field]: the loader's native column as it is (the C page functions
-- read its cells; reading t[field] would make it a Lua list), else the field.
local function column(t, field)
  return C.column_native(t, field) or t[field]
end

local INERT = {["<"] = "\\u003c", [">"] = "\\u003e", ["\226\128\168"] = "\\u2028", ["\226\128\169"] = "\\u2029"}

-- str's index in list (0-based), str added when new (index: str -> it).
local function intern(list, index, str)
  local k = index[str]
  if not k then
    k = #list
    list[k + 1] = str
    index[str] = k
  end
  return k
end

-- A lane's c, n, a, ak, av columns of the page's data (see data), each
-- joined by commas, by C's page_lane, which calls env.other for the
-- slices whose args are a table (few in our traces).
local function page_lane(lane, env)
  return C.page_lane(column(lane, "cat"), column(lane, "sname"), column(lane, "args"), column(lane, "job"), lane.n,
                     env)
end

-- No name may change how the page parses: "<" and ">" can only be in JSON
-- strings here, so as \u escapes they mean the same to JSON.parse but
-- nothing to the HTML parser ("</script>", "<!--<script", "-->"). U+2028
-- and U+2029 are escaped too, for tools that read the data as JavaScript.
-- A text with none of them is left as it is (no copy of a page's worth).
local function inert(text)
  if text:find("[<>]") then text = text:gsub("[<>]", INERT) end
  if text:find("\226\128[\168\169]") then text = text:gsub("\226\128[\168\169]", INERT) end
  return text
end

-- Names as JSON strings made inert, made once each (a copy's category:
-- a million copies name a few categories).
local quoted = setmetatable({}, {__index = function(t, k)
  local q = inert(quote(k))
  t[k] = q
  return q
end})

-- A marker's arg that C's page_markers does not write (nil, integers and
-- finite floats it does): a string ("12" too), a boolean, inf or nan, as
-- the text of tostring.
local function marker_arg(arg)
  return inert(quote(tostring(arg)))
end

-- The markers' mt, mk and ma columns of the page's data, each joined by
-- commas (kinds interned in kinds/kind_index).
local function markers(model, kinds, kind_index)
  local mts = column(model, "marker_ts")
  return C.page_markers(mts, column(model, "marker_kind"), column(model, "marker_arg"), #mts, model.t0,
                        {kinds = kinds, kind_index = kind_index, other = marker_arg})
end

-- The trace as the page's data, in columns; times in ns from model.t0.
-- A slice's args: a[i] = -1 (none); >= 0, an index into "args" (JSON
-- objects: a copy's each its own, any other shared by equal ones); -2,
-- one integer under one key: {keys[ak[i]]: av[i]} (job ids).
local function data(model)
  local t0 = model.t0
  local cat_index, names, name_index, args, arg_index, keys, key_index = {}, {}, {}, {}, {}, {}, {}
  local cats = {}
  for i, c in ipairs(model.categories) do
    cat_index[c.name] = i - 1
    cats[i] = ("[%s,%s]"):format(quote(c.name), quote(c.color))
  end
  local lanes = {}
  local env = {cat_index = cat_index, names = names, name_index = name_index, args = args, arg_index = arg_index,
               keys = keys, key_index = key_index, cbytes = column(model, "copy_bytes"),
               ccat = column(model, "copy_category"), cjob = column(model, "copy_job"), quoted = quoted}
  local made = {} -- the args env.other made (a copy's are inert already: `quoted`)
  for li, lane in ipairs(model.lanes) do
    local failed = {}
    function env.other(ea, i) -- slice i's args, a table: its a, ak, av
      if ea.failed == true then failed[#failed + 1] = i - 1 end
      local k, v = next(ea)
      if plain_key[k] and math.type(v) and math.tointeger(v) and next(ea, k) == nil then
        return -2, intern(keys, key_index, k), math.tointeger(v)
      end
      local n = #args
      local at = intern(args, arg_index, json(ea))
      if at == n then made[#made + 1] = at + 1 end -- new: made inert once every lane is done
      return at, 0, 0
    end
    local c, n, a, ak, av = page_lane(lane, env)
    local k = #lanes -- a lane's pieces, not joined (a lane can hold a million slices)
    lanes[k + 1] = ('%s{"name":%s,"maxdur":%d,"dropped":%d,"full":%s,"ts":['):format(li > 1 and ",\n" or "",
      inert(quote(lane.name)), ns(lane.maxdur), lane.dropped or 0,
      lane.full_at and tostring(ns(lane.full_at - t0)) or "null")
    lanes[k + 2], lanes[k + 3] = C.page_ns(column(lane, "ts"), lane.n, t0), '],"dur":['
    lanes[k + 4], lanes[k + 5], lanes[k + 6], lanes[k + 7] = C.page_ns(column(lane, "dur"), lane.n, 0), '],"c":[', c,
      '],"n":['
    lanes[k + 8], lanes[k + 9], lanes[k + 10], lanes[k + 11] = n, '],"a":[', a, '],"ak":['
    lanes[k + 12], lanes[k + 13], lanes[k + 14], lanes[k + 15] = ak, '],"av":[', av, '],"f":['
    lanes[k + 16] = table.concat(failed, ",") .. "]}"
  end
  local kinds, kind_index = {}, {}
  local mt, mk, ma = markers(model, kinds, kind_index)
  -- Only names (and args, which hold names) can hold what inert changes:
  -- those are made inert, not the whole text (a page's worth of numbers;
  -- a copy's args inert already, its category from `quoted`).
  for _, k in ipairs(made) do args[k] = inert(args[k]) end
  for i, str in ipairs(names) do names[i] = inert(quote(str)) end
  for i, str in ipairs(keys) do keys[i] = inert(quote(str)) end
  for i, str in ipairs(kinds) do kinds[i] = inert(quote(str)) end
  for i, str in ipairs(cats) do cats[i] = inert(str) end
  local out = {('{"title":%s,"format":%s,"t0":%.17g,"span":%d,"cats":[%s],"names":[%s],"args":[')
    :format(inert(quote(model.path or "trace")), inert(quote(model.format)), t0, ns(model.t1 - t0),
            table.concat(cats, ","), table.concat(names, ",")),
    table.concat(args, ","), ('],"keys":[%s],"kinds":[%s],"mt":['):format(table.concat(keys, ","),
    table.concat(kinds, ",")), mt, '],"mk":[', mk, '],"ma":[', ma, '],"lanes":['}
  table.move(lanes, 1, #lanes, #out + 1, out)
  out[#out + 1] = "]}"
  return out -- its pieces, in order
end

-- A number for the page's JSON: integers as they are, finite floats to 17
-- digits, anything else null.
local function number(v)
  if math.tointeger(v) then return ("%d"):format(math.tointeger(v)) end
  if type(v) == "number" and v - v == 0 then return ("%.17g"):format(v) end
  return "null"
end

local function list(t) return "[" .. table.concat(t, ",") .. "]" end

-- The job graph's part of the page (page_graph.c describes its columns).
local function graph_data(model)
  return C.page_graph(graph.build(model), model)
end

-- An integer JavaScript cannot hold exactly (beyond 2^53): its digits.
local function inexact(v)
  return math.type(v) == "integer" and (v > 1 << 53 or v < -(1 << 53))
end

-- A counter's min or max for the page: a number, or the digits of an
-- integer JavaScript cannot hold as a string (the label shows it exactly).
local function exact_number(v)
  return inexact(v) and ('"%d"'):format(v) or number(v)
end

-- The values of counter c that JavaScript cannot hold exactly, as
-- (index from 0, digits) pairs: read only when its min or max is one.
local function exact_values(c, lo, hi)
  if not (inexact(lo) or inexact(hi)) then return "" end
  local out, values = {}, c.value
  for i = 1, c.n do
    if inexact(values[i]) then out[#out + 1] = ('%d,"%d"'):format(i - 1, values[i]) end
  end
  return table.concat(out, ",")
end

-- The counters' part of the page: model.counters as
-- {name, pid, ts (ns from t0), v, min, max, x}; x pairs the values beyond
-- 2^53 with their digits (min and max are such digits when they are).
local function counter_data(model)
  local out, t0 = {"["}, model.t0
  for _, c in ipairs(model.counters or {}) do
    local v, lo, hi = C.page_values(column(c, "value"), c.n)
    if c.n > 0 then
      local k = #out
      out[k + 1] = ('%s{"name":%s,"pid":%s,"ts":['):format(k > 1 and "," or "", inert(quote(c.name)),
        inert(quote(util.id_text(c.pid))))
      out[k + 2], out[k + 3], out[k + 4] = C.page_ns(column(c, "ts"), c.n, t0), '],"v":[', v
      out[k + 5] = ('],"min":%s,"max":%s,"x":[%s]}'):format(exact_number(lo), exact_number(hi),
                                                            exact_values(c, lo, hi))
    end
  end
  out[#out + 1] = "]"
  return out -- its pieces, in order
end

-- The spans' part of the page: per lane, {slice index, depth,
-- ...} of its "span" slices; depth 1 + the spans around it (its job's
-- slice is depth 0). A loop over a stack of ends: no recursion.
local function span_data(model)
  local out = {}
  for li, lane in ipairs(model.lanes) do
    local idx = {}
    local native = C.column_native(lane, "kind") -- the loader's: no span among them
    for i = 1, native and 0 or lane.n do
      if lane.kind[i] == "span" then idx[#idx + 1] = i end
    end
    local ts, dur
    if #idx > 0 then ts, dur = lane.ts, lane.dur end
    table.sort(idx, function(a, b) -- the outer of two spans that start together first
      if ts[a] ~= ts[b] then return ts[a] < ts[b] end
      if dur[a] ~= dur[b] then return dur[a] > dur[b] end
      return a < b
    end)
    local pairs_, ends = {}, {}
    for _, i in ipairs(idx) do
      while #ends > 0 and ends[#ends] <= ts[i] do ends[#ends] = nil end
      pairs_[#pairs_ + 1] = ("%d,%d"):format(i - 1, #ends + 1)
      ends[#ends + 1] = ts[i] + dur[i]
    end
    out[li] = "[" .. table.concat(pairs_, ",") .. "]"
  end
  return list(out)
end

-- Whether the page shows samples: the model has some, and their frames.
local function has_samples(model)
  return (model.nsamples or 0) > 0 and model.frames ~= nil
end

-- The samples' part of the page (the icicle's and the ticks' data, read by
-- page/samples.js): the frame tree (fname, fkind: an index into kinds, a
-- kind null when the file gives none; fparent: 0-based, -1 a root), the samples' categories (cats: [name,
-- colour or null], the colour a slice category of that name has), the
-- sampling period (ns per unit of weight, null when the file says none)
-- and one column per field of the samples: ts (ns since model.t0), lane
-- and leaf (0-based), w (weight), c (an index into cats).
local function sample_data(model)
  local frames, colors = model.frames, {}
  for _, c in ipairs(model.categories) do colors[c.name] = c.color end
  local names, kinds, kind_index, fkind, fparent = {}, {}, {}, {}, {}
  for k = 1, frames.n do
    names[k] = inert(quote(frames.name[k]))
    fkind[k] = intern(kinds, kind_index, frames.category[k])
    fparent[k] = frames.parent[k] - 1
  end
  local env = {names = {}, name_index = {}, nlanes = #model.lanes, nframes = frames.n}
  local ts, lane, leaf, w, c = C.page_samples(column(model, "sample_ts"), column(model, "sample_lane"),
    column(model, "sample_frame"), column(model, "sample_weight"), column(model, "sample_cat"), model.nsamples,
    model.t0, env)
  local cats = {}
  for i, name in ipairs(env.names) do
    cats[i] = ("[%s,%s]"):format(inert(quote(name)), colors[name] and inert(quote(colors[name])) or "null")
  end
  for i, kind in ipairs(kinds) do kinds[i] = kind and inert(quote(kind)) or "null" end -- false: the file gave none
  local period = model.sampling and model.sampling.period_ns
  return {('{"period":%s,"kinds":[%s],"fname":['):format(number(period), table.concat(kinds, ",")),
    table.concat(names, ","), '],"fkind":[', table.concat(fkind, ","), '],"fparent":[', table.concat(fparent, ","),
    '],"cats":[', table.concat(cats, ","), '],"ts":[', ts, '],"lane":[', lane, '],"leaf":[', leaf, '],"w":[', w,
    '],"c":[', c, "]}"}
end

-- The page's files (page/page.html, page.css, page.js, samples.js, and
-- hooks.js and samples_hooks.js for the specs) sit beside this module: found where it was loaded from
-- (require passes that path), else on package.path.
local here = select(2, ...)
local function page_dir()
  local file = type(here) == "string" and here or package.searchpath("jobque_profile.page", package.path)
  return (file and file:match("^(.*)[/\\]") or ".") .. "/page/"
end

local files = {} -- name -> its text, read once
local function page_file(name)
  if files[name] then return files[name] end
  local path = page_dir() .. name
  local f, err = io.open(path, "rb")
  local text = f and f:read("a")
  if f then f:close() end
  if not text then
    return nil, ("the timeline page's file %s is missing (%s): reinstall jobque-profile"):format(name,
      tostring(err or "cannot read " .. path))
  end
  files[name] = text
  return text
end

-- The page's template (page.html with its CSS and script in it; samples.js
-- in the script and the samples' data element when `samples`; the test
-- hooks when `hooks`: hooks.js, and samples_hooks.js with samples), with
-- @TITLE@, @NAME_WIDTH@, @MAX_US@ and @DATA@ left to fill; or nil and a message when a file is missing. A page
-- without samples is the page as it was before them, byte for byte: the
-- samples' line of page.html goes, and nothing is put in the script.
local function template(hooks, samples)
  local parts, names = {}, {"page.html", "page.css", "page.js"}
  if samples then names[#names + 1] = "samples.js" end
  if hooks then names[#names + 1] = "hooks.js" end
  if samples and hooks then names[#names + 1] = "samples_hooks.js" end
  local code = {}
  for _, name in ipairs(names) do
    local text, err = page_file(name)
    if not text then return nil, err end
    parts[name] = text
    if name:find("%.js$") and name ~= "page.js" then code[#code + 1] = text:match("\n\n(.*)$") end
  end
  local script = parts["page.js"]:gsub("\n[ ]*// @TEST_HOOKS@[^\n]*\n", function()
    return "\n" .. table.concat(code)
  end, 1)
  local html = parts["page.html"]
  if not samples then html = html:gsub("\n[^\n]*@SAMPLES@[^\n]*", "", 1) end
  return (html:gsub("@CSS@", function() return parts["page.css"] end, 1)
    :gsub("@SCRIPT@", function() return script end, 1))
end

-- The page for a model as a list of strings, in order (a page can be a
-- hundred MB: the command writes the pieces, no copy joins them); or nil
-- and a message when the page's files are missing.
local function pieces(model, options)
  local samples = has_samples(model)
  local page, err = template(options and options.test_hooks, samples)
  if not page then return nil, err end
  local title = (model.path or "trace"):gsub("[&<>\"@]", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;",
                                                          ['"'] = "&quot;", ["@"] = "&#64;"})
  page = page:gsub("@TITLE@", function() return title end)
    :gsub("@NAME_WIDTH@", function() return tostring(report.NAME_WIDTH) end)
    :gsub("@MAX_US@", function() return ("%.17g"):format(require("jobque_profile.trace").MAX_US) end)
  -- One pass over the template, so that no name in what is filled in is
  -- taken for a placeholder. Each part is inert where it holds names: the
  -- graph's and the spans' parts are numbers only.
  local fill = {DATA = function() return data(model) end,
                GRAPH = function() return util.without_gc(graph_data, model) end,
                COUNTERS = function() return counter_data(model) end,
                SPANS = function() return span_data(model) end,
                SAMPLES = samples and function() return sample_data(model) end or nil}
  local out, at = {}, 1
  while true do
    local i, j, key = page:find("@(%u+)@", at)
    if not i then break end
    local f = fill[key]
    if f then
      out[#out + 1] = page:sub(at, i - 1)
      local text = f()
      if type(text) == "table" then -- a part's pieces
        table.move(text, 1, #text, #out + 1, out)
      else
        out[#out + 1] = text
      end
      at = j + 1
    else -- not a placeholder: left as it is (as gsub leaves a match)
      out[#out + 1] = page:sub(at, j)
      at = j + 1
    end
  end
  out[#out + 1] = page:sub(at)
  return out
end

--- The page for a model, as a string; or nil and a message when the page's
-- files are missing. options.test_hooks: put the specs' hooks in the page
-- (the URL fragment's #do=, #probe= and #bench: see page/hooks.js).
function M.render(model, options)
  local parts, err = pieces(model, options)
  if not parts then return nil, err end
  return table.concat(parts)
end

--- Writes the page for a model to `path`: true, or nil and a message.
-- The page replaces `path` atomically (a symlink there is followed, a
-- device or FIFO is written in place), by the same rules as profile_save.
-- options: as for render.
function M.write(model, path, options)
  local parts, err = pieces(model, options)
  if not parts then return nil, err end
  local ok, werr = C.write_file(path, parts)
  if not ok then return nil, werr end
  return true
end

return M
