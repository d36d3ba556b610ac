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
-- hooks (page/hooks.js: #do=, #hover=, #probe=, #cprobe=, #bench) are in
-- the page only with options.test_hooks (the command's hidden --test-hooks).
-- From issue 11, each in a JSON element of its own: the job graph (every
-- job's slices, latencies and neighbours, and the critical path, from
-- jobque_profile.graph), model.counters, and the depth of each span.
local report = require "jobque_profile.report"
local graph = require "jobque_profile.graph"
local util = require "jobque_profile.util"

local M = {}

local quote, json = report.quote, report.json

-- Microseconds as integer nanoseconds: integers turn into text several
-- times faster than floats, and a page holds millions of them.
local function ns(us)
  return (us * 1000 + 0.5) // 1 | 0
end

local plain_key = setmetatable({}, {__index = function(t, k) -- usable in JSON as it is
  local plain = type(k) == "string" and not k:find('[%c"\\]')
  t[k] = plain
  return plain
end})

-- t[field]: the loader's native column as it is (the core's page functions
-- read its cells; reading t[field] would make it a Lua list), else the field.
local column_native
do
  local found, core = pcall(require, "jobque_profile.reader")
  column_native = found and type(core) == "table" and core.column_native or nil
end
local function column(t, field)
  return column_native and column_native(t, field) or t[field]
end

-- col[1..n] as the page's integer nanoseconds since t0, joined by commas:
-- by the native core when it is there (a page holds millions of them).
local function times(col, n, t0)
  local found, core = pcall(require, "jobque_profile.reader")
  if found and type(core) == "table" and core.page_ns then return core.page_ns(col, n, t0) end
  local out = {}
  for i = 1, n do out[i] = ns(col[i] - t0) end
  return table.concat(out, ",")
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
-- joined by commas: by the native core when it is there, which calls
-- env.other for the slices whose args are a table (few in our traces).
local function page_lane(lane, env)
  local found, core = pcall(require, "jobque_profile.reader")
  if found and type(core) == "table" and core.page_lane then
    return core.page_lane(column(lane, "cat"), column(lane, "sname"), column(lane, "args"), column(lane, "job"),
                          lane.n, env)
  end
  local c, n, a, ak, av = {}, {}, {}, {}, {}
  local lcat, lname, ljob, largs = lane.cat, lane.sname, lane.job, lane.args
  local cbytes, ccat, cjob = env.cbytes, env.ccat, env.cjob
  for i = 1, lane.n do
    c[i] = env.cat_index[lcat[i]]
    n[i] = intern(env.names, env.name_index, lname[i])
    local ea, kind, key, value = largs[i], -1, 0, 0
    if math.type(ea) then -- a copy's { job, bytes, category }, in the copy columns: appended, not interned
      kind = #env.args
      env.args[kind + 1] = ('{"bytes":%d,"category":%s,"job":%d}'):format(cbytes[ea], env.quoted[ccat[ea]], cjob[ea])
    elseif ea then
      kind, key, value = env.other(ea, i)
    elseif ljob[i] then -- args { job = N } alone (see jobque_profile.trace)
      kind, key, value = -2, intern(env.keys, env.key_index, "job"), math.tointeger(ljob[i])
    end
    a[i], ak[i], av[i] = kind, key, value
  end
  return table.concat(c, ","), table.concat(n, ","), table.concat(a, ","), table.concat(ak, ","),
    table.concat(av, ",")
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

-- A marker's arg as the page writes it: null; an integer plain (beyond
-- 2^53, where a JavaScript number would round it, as text); a finite
-- float to 14 digits; anything else (a string: "12" too) as the text of tostring.
local function marker_arg(arg)
  if arg == nil then return "null" end
  local n = math.type(arg) and math.tointeger(arg)
  if n then return (n > 1 << 53 or n < -(1 << 53)) and quote(tostring(n)) or tostring(n) end
  if type(arg) == "number" and arg - arg == 0 then return ("%.14g"):format(arg) end -- JSON has no inf or nan
  return inert(quote(tostring(arg)))
end

-- The markers' mt, mk and ma columns of the page's data, each joined by
-- commas (kinds interned in kinds/kind_index): by the native core when it
-- is there (a trace can hold a million markers).
local function markers(model, kinds, kind_index)
  local found, core = pcall(require, "jobque_profile.reader")
  if found and type(core) == "table" and core.page_markers then
    local mts = column(model, "marker_ts")
    return core.page_markers(mts, column(model, "marker_kind"), column(model, "marker_arg"), #mts, model.t0,
                             {kinds = kinds, kind_index = kind_index, other = marker_arg})
  end
  local mts, mkind, marg = model.marker_ts, model.marker_kind, model.marker_arg
  local mt, mk, ma = {}, {}, {}
  for i = 1, #mts do
    mt[i], mk[i], ma[i] = ns(mts[i] - model.t0), intern(kinds, kind_index, mkind[i]), marker_arg(marg[i])
  end
  return table.concat(mt, ","), table.concat(mk, ","), table.concat(ma, ",")
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
    lanes[k + 2], lanes[k + 3] = times(column(lane, "ts"), lane.n, t0), '],"dur":['
    lanes[k + 4], lanes[k + 5], lanes[k + 6], lanes[k + 7] = times(column(lane, "dur"), lane.n, 0), '],"c":[', c,
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

-- Each job's slices on the page, in time order: job id -> {lane index,
-- slice index, ts, lane index, slice index, ts, ...} (0-based: three
-- entries a slice, flat: a page may hold a million jobs), from the lanes'
-- job slices.
local function job_slices(model)
  local where = {}
  local function by_ts(a, b) return a[3] < b[3] end
  for li, lane in ipairs(model.lanes) do
    local kind, job, ts = lane.kind, lane.job, lane.ts
    for i = 1, lane.n do
      local id = kind[i] == "job" and job[i] -- as jobque_profile.graph keys it
      if type(id) == "number" then
        local w = where[id]
        if not w then
          where[id] = {li - 1, i - 1, ts[i]}
        else
          local k = #w
          w[k + 1], w[k + 2], w[k + 3] = li - 1, i - 1, ts[i]
        end
      end
    end
  end
  for _, w in pairs(where) do
    if #w > 3 then -- more than one slice: by time (a stable order of triples)
      local triples = {}
      for k = 1, #w // 3 do triples[k] = {w[3 * k - 2], w[3 * k - 1], w[3 * k]} end
      table.sort(triples, by_ts)
      for k, t in ipairs(triples) do w[3 * k - 2], w[3 * k - 1], w[3 * k] = t[1], t[2], t[3] end
    end
  end
  return where
end

-- The job graph's part of the page (issue 11), in columns (a page may hold
-- a million jobs), k the job's index: id[k], c[k] (category index), its
-- slices s[2 * so[k] ..] (lane, slice index pairs, 0-based, by time; so has
-- one entry more than id), ready[k] (its ready latency in ns, -1 unknown),
-- sl[k], st[k] (its submit: lane (-1 none) and end, ns from t0); sparse, as
-- flat lists: by (k, the job that submitted it), deps (k, an after
-- dependency's id), aw (k, the id of a job it awaited, the index of its
-- slice that resumed), rs (k, resume latency summed in ns, how many), sp
-- (k, suspended ns); and the critical path. "null" without jobs.
local function graph_data(model)
  local cg = graph.native(model) -- in C when the core is there and takes the model
  local text = cg and cg:page(model)
  if text then return text end
  local g = graph.build(model)
  if #g.order == 0 then return "null" end
  local where, t0 = job_slices(model), model.t0
  local cat_index = {}
  for i, c in ipairs(model.categories) do cat_index[c.name] = i - 1 end
  local col = {id = {}, c = {}, so = {"0"}, s = {}, ready = {}, sl = {}, st = {}, by = {}, deps = {}, aw = {},
               rs = {}, sp = {}}
  local function add(name, a, b, c) -- the sparse columns' entries (two or three values)
    local t = col[name]
    local k = #t
    t[k + 1], t[k + 2] = a, b
    if c then t[k + 3] = c end
  end
  local id, cc, so, s, ready, sl, st = col.id, col.c, col.so, col.s, col.ready, col.sl, col.st
  local n, npos, ns_ = 0, 0, 0
  for _, j in ipairs(g.order) do
    local w = where[j.id]
    if not w then goto next end -- an id that is no number (a hand-made file): not drawn as a job
    for k = 1, #w, 3 do
      s[ns_ + 1], s[ns_ + 2] = w[k], w[k + 1]
      ns_ = ns_ + 2
    end
    npos = npos + #w // 3
    local sub = j.submit
    id[n + 1], cc[n + 1], so[n + 2] = number(j.id), cat_index[j.category] or -1, npos
    ready[n + 1] = j.ready_latency and ns(j.ready_latency) or -1
    sl[n + 1], st[n + 1] = sub and sub.lane.index - 1 or -1, sub and ns(sub.ts + sub.dur - t0) or 0
    if sub and sub.parent and g.jobs[sub.parent] then add("by", n, number(sub.parent)) end
    for _, d in ipairs(j.deps) do
      if d.job and g.jobs[d.job] then add("deps", n, number(d.job)) end
    end
    for _, a in ipairs(j.awaits) do
      local k = 1
      while w[3 * k] and w[3 * k] <= a.ts do k = k + 1 end
      if a.awaits and g.jobs[a.awaits] and w[3 * k] then add("aw", n, number(a.awaits), k - 1) end
    end
    if #j.resumes > 0 then
      local resume = 0
      for _, r in ipairs(j.resumes) do resume = resume + r end
      add("rs", n, ns(resume), #j.resumes)
    end
    if j.suspended > 0 then add("sp", n, ns(j.suspended)) end
    n = n + 1
    ::next::
  end
  local cp = graph.critical_path(g)
  local ids = {}
  for i, job in ipairs(cp.jobs) do ids[i] = number(job) end
  local path = ('{"jobs":%s,"dur":%d,"share":%s,"start":%d,"finish":%d,"run":%d,"ready":%d,"resume":%d,'
                .. '"copy":%d,"caller":%d,"bound":%s}')
    :format(list(ids), ns(cp.duration_us), number(cp.share), ns(cp.start_us - t0), ns(cp.finish_us - t0),
            ns(cp.run_us), ns(cp.ready_us), ns(cp.resume_us), ns(cp.copy_us), ns(cp.caller_us), number(cp.bound))
  local parts = {}
  for _, name in ipairs{"id", "c", "so", "s", "ready", "sl", "st", "by", "deps", "aw", "rs", "sp"} do
    parts[#parts + 1] = ('"%s":%s'):format(name, list(col[name]))
  end
  return ("{%s,\n\"path\":%s}"):format(table.concat(parts, ",\n"), path)
end

-- A counter track's values as the page writes them, joined by commas, and
-- the least and greatest: by the native core when it is there.
local function values(value, n)
  local found, core = pcall(require, "jobque_profile.reader")
  if found and type(core) == "table" and core.page_values then return core.page_values(value, n) end
  local v, lo, hi = {}, math.huge, -math.huge
  for i = 1, n do
    local x = value[i]
    v[i] = number(x)
    if x < lo then lo = x end
    if x > hi then hi = x end
  end
  return table.concat(v, ","), lo, hi
end

-- The counters' part of the page (issue 11): model.counters as
-- {name, pid, ts (ns from t0), v, min, max}.
local function counter_data(model)
  local out, t0 = {"["}, model.t0
  for _, c in ipairs(model.counters or {}) do
    local v, lo, hi = values(column(c, "value"), c.n)
    if c.n > 0 then
      local k = #out
      out[k + 1] = ('%s{"name":%s,"pid":%s,"ts":['):format(k > 1 and "," or "", inert(quote(c.name)),
        inert(quote(util.id_text(c.pid))))
      out[k + 2], out[k + 3], out[k + 4] = times(column(c, "ts"), c.n, t0), '],"v":[', v
      out[k + 5] = ('],"min":%s,"max":%s}'):format(number(lo), number(hi))
    end
  end
  out[#out + 1] = "]"
  return out -- its pieces, in order
end

-- The spans' part of the page (issue 11): per lane, {slice index, depth,
-- ...} of its "span" slices; depth 1 + the spans around it (its job's
-- slice is depth 0). A loop over a stack of ends: no recursion.
local function span_data(model)
  local out = {}
  for li, lane in ipairs(model.lanes) do
    local idx = {}
    local native = column_native and column_native(lane, "kind") -- the loader's: no span among them
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

-- The page's files (page/page.html, page.css, page.js, and hooks.js
-- for the specs) sit beside this module: found where it was loaded from
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

-- The page's template (page.html with its CSS and script in it, the test
-- hooks in the script when `hooks`), with @TITLE@, @NAME_WIDTH@, @MAX_US@ and
-- @DATA@ left to fill; or nil and a message when a file is missing.
local function template(hooks)
  local parts = {}
  for _, name in ipairs{"page.html", "page.css", "page.js", hooks and "hooks.js" or nil} do
    local text, err = page_file(name)
    if not text then return nil, err end
    parts[name] = text
  end
  local hook_code = hooks and parts["hooks.js"]:match("\n\n(.*)$") or ""
  local script = parts["page.js"]:gsub("\n[ ]*// @TEST_HOOKS@[^\n]*\n", function()
    return "\n" .. hook_code
  end, 1)
  return (parts["page.html"]:gsub("@CSS@", function() return parts["page.css"] end, 1)
    :gsub("@SCRIPT@", function() return script end, 1))
end

-- The page for a model as a list of strings, in order (a page can be a
-- hundred MB: the command writes the pieces, no copy joins them); or nil
-- and a message when the page's files are missing.
local function pieces(model, options)
  local page, err = template(options and options.test_hooks)
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
                SPANS = function() return span_data(model) end}
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
  local ok, werr = require("jobque_profile.reader").write_file(path, parts)
  if not ok then return nil, werr end
  return true
end

return M
