--- jobque_profile.html: a trace model as one self-contained HTML timeline.
--
-- render(model [, options]) -> the page: the files timeline/page.html,
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
-- hooks (timeline/hooks.js: #do=, #probe=, #bench) are in the page only
-- with options.test_hooks (the command's hidden --test-hooks).
local report = require "jobque_profile.report"

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

-- col[1..n] as the page's integer nanoseconds since t0, joined by commas:
-- by the native core when it is there (a page holds millions of them).
local function times(col, n, t0)
  local found, core = pcall(require, "jobque.core")
  if found and type(core) == "table" and core.page_ns then return core.page_ns(col, n, t0) end
  local out = {}
  for i = 1, n do out[i] = ns(col[i] - t0) end
  return table.concat(out, ",")
end

-- Names as JSON strings, made once each.
local quoted = setmetatable({}, {__index = function(t, k)
  local q = quote(k)
  t[k] = q
  return q
end})

local INERT = {["<"] = "\\u003c", [">"] = "\\u003e", ["\226\128\168"] = "\\u2028", ["\226\128\169"] = "\\u2029"}

-- The trace as the page's data, in columns; times in ns from model.t0.
-- A slice's args: a[i] = -1 (none); >= 0, an index into "args" (JSON
-- objects); -2, one integer under one key: {keys[ak[i]]: av[i]} (job ids).
local function data(model)
  local t0 = model.t0
  local cat_index, names, name_index, args, arg_index, keys, key_index = {}, {}, {}, {}, {}, {}, {}
  local cats = {}
  for i, c in ipairs(model.categories) do
    cat_index[c.name] = i - 1
    cats[i] = ("[%s,%s]"):format(quote(c.name), quote(c.color))
  end
  local function intern(list, index, str)
    local k = index[str]
    if not k then
      k = #list
      list[k + 1] = str
      index[str] = k
    end
    return k
  end
  local lanes = {}
  local cbytes, ccat, cjob = model.copy_bytes, model.copy_category, model.copy_job
  for li, lane in ipairs(model.lanes) do
    local c, n, a, ak, av, failed = {}, {}, {}, {}, {}, {}
    local lts, ldur, lcat, lname, ljob, largs = lane.ts, lane.dur, lane.cat, lane.sname, lane.job, lane.args
    for i = 1, lane.n do
      c[i] = cat_index[lcat[i]]
      n[i] = intern(names, name_index, lname[i])
      local ea, kind, key, value = largs[i], -1, 0, 0
      if math.type(ea) then -- a copy's { job, bytes, category }, in the copy columns
        kind = intern(args, arg_index, ('{"bytes":%d,"category":%s,"job":%d}'):format(cbytes[ea],
          quoted[ccat[ea]], cjob[ea]))
      elseif ea then
        if ea.failed == true then failed[#failed + 1] = i - 1 end
        local k, v = next(ea)
        if plain_key[k] and math.tointeger(v) and next(ea, k) == nil then
          kind, key, value = -2, intern(keys, key_index, k), math.tointeger(v)
        else
          kind = intern(args, arg_index, json(ea))
        end
      elseif ljob[i] then -- args { job = N } alone (see jobque_profile.trace)
        kind, key, value = -2, intern(keys, key_index, "job"), math.tointeger(ljob[i])
      end
      a[i], ak[i], av[i] = kind, key, value
    end
    lanes[li] = ('{"name":%s,"maxdur":%d,"dropped":%d,"full":%s,"ts":[%s],"dur":[%s],"c":[%s],"n":[%s],'
                 .. '"a":[%s],"ak":[%s],"av":[%s],"f":[%s]}')
      :format(quote(lane.name), ns(lane.maxdur), lane.dropped or 0,
              lane.full_at and tostring(ns(lane.full_at - t0)) or "null",
              times(lts, lane.n, t0), times(ldur, lane.n, 0), table.concat(c, ","),
              table.concat(n, ","), table.concat(a, ","), table.concat(ak, ","), table.concat(av, ","),
              table.concat(failed, ","))
  end
  local kinds, kind_index, mt, mk, ma = {}, {}, {}, {}, {}
  local mts, mkind, marg = model.marker_ts, model.marker_kind, model.marker_arg
  for i = 1, #mts do
    local arg = marg[i]
    mt[i], mk[i] = ns(mts[i] - t0), intern(kinds, kind_index, mkind[i])
    if arg == nil then
      ma[i] = "null"
    elseif math.tointeger(arg) then
      local n = math.tointeger(arg) -- beyond 2^53 a JavaScript number would round it: as text
      ma[i] = (n > 1 << 53 or n < -(1 << 53)) and quote(tostring(n)) or n
    elseif type(arg) == "number" and arg - arg == 0 then -- finite: JSON has no inf or nan
      ma[i] = ("%.14g"):format(arg)
    else
      ma[i] = quote(tostring(arg))
    end
  end
  for i, str in ipairs(names) do names[i] = quote(str) end -- args are JSON already
  for i, str in ipairs(keys) do keys[i] = quote(str) end
  for i, str in ipairs(kinds) do kinds[i] = quote(str) end
  local text = ('{"title":%s,"format":%s,"t0":%.17g,"span":%d,"cats":[%s],"names":[%s],"args":[%s],'
                .. '"keys":[%s],"kinds":[%s],"mt":[%s],"mk":[%s],"ma":[%s],"lanes":[%s]}')
    :format(quote(model.path or "trace"), quote(model.format), t0, ns(model.t1 - t0),
            table.concat(cats, ","), table.concat(names, ","), table.concat(args, ","),
            table.concat(keys, ","), table.concat(kinds, ","), table.concat(mt, ","), table.concat(mk, ","),
            table.concat(ma, ","), table.concat(lanes, ",\n"))
  -- No name may change how the page parses: "<" and ">" can only be in JSON
  -- strings here, so as \u escapes they mean the same to JSON.parse but
  -- nothing to the HTML parser ("</script>", "<!--<script", "-->"). U+2028
  -- and U+2029 are escaped too, for tools that read the data as JavaScript.
  return (text:gsub("[<>]", INERT):gsub("\226\128[\168\169]", INERT))
end

-- The page's files (timeline/page.html, page.css, page.js, and hooks.js
-- for the specs) sit beside this module: found where it was loaded from
-- (require passes that path), else on package.path.
local here = select(2, ...)
local function page_dir()
  local file = type(here) == "string" and here or package.searchpath("jobque_profile.html", package.path)
  return (file and file:match("^(.*)[/\\]") or ".") .. "/timeline/"
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

--- The page for a model, as a string; or nil and a message when the page's
-- files are missing. options.test_hooks: put the specs' hooks in the page
-- (the URL fragment's #do=, #probe= and #bench: see timeline/hooks.js).
function M.render(model, options)
  local page, err = template(options and options.test_hooks)
  if not page then return nil, err end
  local title = (model.path or "trace"):gsub("[&<>\"]", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;",
                                                         ['"'] = "&quot;"})
  page = page:gsub("@TITLE@", function() return title end)
    :gsub("@NAME_WIDTH@", function() return tostring(report.NAME_WIDTH) end)
    :gsub("@MAX_US@", function() return ("%.17g"):format(require("jobque_profile.trace").MAX_US) end)
  return (page:gsub("@DATA@", function() return data(model) end))
end

--- Writes the page for a model to `path`: true, or nil and a message.
-- The page replaces `path` atomically (a symlink there is followed, a
-- device or FIFO is written in place), by the same rules as profile_save.
-- options: as for render.
function M.write(model, path, options)
  local page, err = M.render(model, options)
  if not page then return nil, err end
  local ok, werr = require("jobque.core").write_file(path, page)
  if not ok then return nil, werr end
  return true
end

return M
