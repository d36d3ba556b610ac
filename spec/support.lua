-- Shared helpers of the specs: temporary paths, reading traces back.
local cjson = require "cjson"

local S = {}

local tmpdir = os.tmpname()
os.remove(tmpdir)
assert(os.execute("mkdir -p '" .. tmpdir .. "'"))
S.tmpdir = tmpdir
-- Removed when the process closes its state (busted exits with os.exit(code, true)).
S.cleanup = setmetatable({}, {__gc = function() os.execute("rm -rf '" .. tmpdir .. "'") end})

local counter = 0
function S.tmpfile(name)
  counter = counter + 1
  return string.format("%s/%d-%s", tmpdir, counter, name or "trace.json")
end

function S.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

function S.write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- Saves the session to a fresh path and returns (decoded trace, raw text, path).
function S.save(p)
  local path = S.tmpfile()
  local ok, err = p.profile_save(path)
  assert(ok, err)
  local text = S.read(path)
  return cjson.decode(text), text, path
end

-- A fresh session with ring size `ring` in which the caller stamps `n`
-- markers of kind `name` with args 1..n; returns what S.save returns.
function S.record_n(p, name, ring, n)
  local m = p.profile_marker_id(name)
  p.profile_start(ring)
  for i = 1, n do p.profile_marker(m, i) end
  p.profile_stop()
  return S.save(p)
end

-- The error f(...) raises; fails the spec if it raises none.
function S.err_of(f, ...)
  local ok, err = pcall(f, ...)
  if ok then error("expected an error, got none", 2) end
  return err
end

-- The events of a decoded trace that satisfy pred(ev).
function S.events(trace, pred)
  local out = {}
  for _, ev in ipairs(trace.traceEvents) do
    if pred(ev) then out[#out + 1] = ev end
  end
  return out
end

function S.markers(trace, name)
  return S.events(trace, function(ev)
    return ev.ph == "i" and ev.s == "g" and (name == nil or ev.name == name)
  end)
end

-- tid -> lane name, from the thread_name metadata.
function S.lane_names(trace)
  local names = {}
  for _, ev in ipairs(trace.traceEvents) do
    if ev.ph == "M" and ev.name == "thread_name" then names[ev.tid] = ev.args.name end
  end
  return names
end

-- The interpreter the specs run under (the sanitizer host, or lua5.4), for
-- specs that start a child process.
S.lua = os.getenv("JQ_LUA") or "lua5.4"

-- Whether that is an instrumented host (10 to 50 times slower): specs
-- that size their work for the plain build use less of it there.
S.sanitized = S.lua:find("lua_host", 1, true) ~= nil

-- Runs the jobque-profile command from the checkout under that interpreter
-- (`env`: variables set before it, "NAME=value ..."); returns its exit
-- code, stdout and stderr.
function S.cli(args, env)
  local err = S.tmpfile("stderr.txt")
  local cmd = ("%s LUA_CPATH='%s' %s lua/jobque-profile.lua %s 2>'%s'"):format(env or "", package.cpath, S.lua, args,
                                                                               err)
  local h = io.popen(cmd)
  local out = h:read("a")
  local _, _, code = h:close()
  return code, out, S.read(err)
end

-- Runs the demo (examples/tokens.lua) under that interpreter; returns the
-- path of the trace it saved.
function S.demo_trace()
  local path = S.tmpfile("demo.json")
  local cmd = ("LUA_PATH='lua/?.lua;;' LUA_CPATH='%s' %s examples/tokens.lua '%s' >/dev/null"):format(
    package.cpath, S.lua, path)
  assert(os.execute(cmd), "the demo failed: " .. cmd)
  return path
end

-- The Lua search paths a native helper thread needs to find our modules.
function S.paths()
  return "lua/?.lua;" .. package.path, package.cpath
end

-- FNV-1a over the bytes of s, written here independently of the C code.
function S.fnv1a(s)
  local h = 2166136261
  for i = 1, #s do
    h = ((h ~ s:byte(i)) * 16777619) & 0xffffffff
  end
  return h
end

-- Chromium and node are not instrumented: under a sanitizer host a block
-- that drives them is left to the plain run. `block` is the spec file's
-- describe or it, `pending` its pending, `what` says why ("drives
-- Chromium"); returns what the spec file declares the block with.
function S.plain_only(block, pending, what)
  if not S.sanitized then return block end
  return function(name) pending(name .. " (" .. what .. ": the plain run only)") end
end

-- Loads `page` in headless Chromium (with the URL fragment `fragment`, a
-- screenshot saved to `screenshot` when given, the window `size`); returns
-- the state the page published (document.body.dataset.state) and the DOM
-- Chromium dumped.
function S.open_page(page, fragment, screenshot, size)
  local profile = S.tmpfile("chromium")
  local url = "file://" .. page .. (fragment or "")
  local flags = ("--headless --no-sandbox --disable-gpu --disable-background-networking "
                 .. "--user-data-dir='%s' --window-size=%s"):format(profile, size or "1200,500")
  if screenshot then
    assert(os.execute(("chromium %s --screenshot='%s' '%s' >/dev/null 2>&1"):format(
      flags, screenshot, url)))
  end
  local h = io.popen(("chromium %s --dump-dom '%s' 2>/dev/null"):format(flags, url))
  local dom = h:read("a")
  h:close()
  local state = dom:match('data%-state="([^"]*)"')
  assert(state, "the page published no state: " .. dom:sub(1, 300))
  state = state:gsub("&quot;", '"'):gsub("&lt;", "<"):gsub("&gt;", ">"):gsub("&amp;", "&")
  return cjson.decode(state), dom
end

-- A session with every kind of event the queue records by itself (a
-- worker's wake after parking is recorded only if it parks) and a caller
-- lane that fills, left stopped (spec/docs_spec.lua saves it and checks
-- that docs/trace-format.md describes all it holds;
-- spec/record/proto_file_spec.lua saves it in both formats).
function S.record_everything()
  local jobque = require "jobque"
  local p = require "jobque_profile"
  local cat = p.profile_category("docs spec")
  local mark = p.profile_marker_id("docs spec marker")
  p.profile_start(400)
  p.profile_tag(cat)
  jobque.with_job_que({workers = 1}, function(q)
    local child_of = q:submit(function()
      local inner = jobque.current():submit(function() return 1 end)
      return inner:wait() + 1                     -- an await on the worker
    end)
    assert(child_of:wait() == 2)                  -- a wait on the caller
    local T = require("jobque.core")._test
    T.stop(false) -- holds `first` until its dependant is submitted: an `after` arrow, surely
    local first = q:submit(function()
      local flag = require("jobque.core")._test
      while not flag.stopping() do end
    end)
    local dependant = q:after({first}, function() return 2 end)
    T.stop()
    assert(dependant:wait() == 2)
    assert(not q:submit(function() error("docs spec failure") end):pwait())
    assert(not q:submit(function() return io.stdout end):pwait()) -- fails copying out
    q:submit(function() -- a span across an await, a zone, and a span its job leaves open
      local P = require "jobque_profile"
      local z <close> = P.profile_zone("docs spec zone") -- luacheck: ignore z
      P.profile_span("docs spec span", function() jobque.current():submit(function() end):wait() end)
      P.profile_begin("docs spec open")
    end):wait()
  end)
  p.profile_counter("docs spec counter", 1)
  local q0 = jobque.new{workers = 0}              -- its jobs run in the caller's waits:
  q0:submit(function() end):wait()                -- a wait slice, surely
  q0:submit(function() end)
  q0:wait_all()                                   -- a wait all slice
  q0:submit(function() end)
  q0:close()                                      -- cancels the job
  p.profile_tag(0)
  for i = 1, 500 do p.profile_marker(mark, i) end -- fills the caller's lane
  p.profile_stop()
end

return S
