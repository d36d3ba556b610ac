-- The coroutine.resume and coroutine.wrap that jobque installs
-- (src/record/lua_coroutine.c) so that the sampler knows which coroutine runs
-- on a thread. Each case of the table below runs twice, once with Lua's own
-- functions as coroutine.resume/wrap and once with ours, and the two runs
-- must give the same results, errors and messages: the expected values are
-- Lua's own functions' answers (Lua's are not ours), and some cases also
-- state theirs by hand. Then Lua 5.4.4's own test file of coroutines
-- (testes/coroutine.lua, spec/fixtures/lua_testes_coroutine.lua.txt) runs in a
-- state jobque prepares, and the running-coroutine pointer is checked.
local jobque = require "jobque"
local S = require "support"
local T = require("jobque.core")._test

-- The coroutine library as loaded (the global `coroutine`): where error
-- messages look up a function's name.
local colib = package.loaded.coroutine

local SRC = debug.getinfo(1, "S").short_src

-- Lua's own functions: a fresh copy of Lua's coroutine library, whatever
-- another spec may have installed in this state.
local LUA = T.coroutine_lua()

-- Ours, as the installer puts them into a coroutine library that holds
-- Lua's own; this state's entries are put back afterwards.
local OURS = (function()
  local kept_resume, kept_wrap = coroutine.resume, coroutine.wrap
  colib.resume, colib.wrap = LUA.resume, LUA.wrap
  T.coroutine_install()
  local ours = {resume = coroutine.resume, wrap = coroutine.wrap}
  colib.resume, colib.wrap = kept_resume, kept_wrap
  return ours
end)()

-- A value as compared: coroutines, functions and userdata by their type
-- (each run makes its own), tables by their contents.
local function norm(v)
  local t = type(v)
  if t == "table" then
    local out = {}
    for k, x in pairs(v) do out[k] = norm(x) end
    return out
  elseif t == "thread" or t == "function" or t == "userdata" then
    return "<" .. t .. ">"
  end
  return v
end

-- Runs case() with impl's resume and wrap as coroutine.resume/wrap (in the
-- library table, where error messages find their names); returns
-- {ok, n, values...} as pcall saw them, normalised.
local function run(impl, case)
  local kept_resume, kept_wrap = coroutine.resume, coroutine.wrap
  colib.resume, colib.wrap = impl.resume, impl.wrap
  local r = table.pack(pcall(case))
  colib.resume, colib.wrap = kept_resume, kept_wrap
  return norm(r)
end

-- The line this is called from.
local function here()
  return debug.getinfo(2, "l").currentline
end

local sentinel = setmetatable({}, {__tostring = function() return "sentinel" end})

local CASES = {}
local function case(name, fn, expected)
  CASES[#CASES + 1] = {name = name, fn = fn, expected = expected}
end

case("passes values in and out, then reports the dead coroutine", function()
  local co = coroutine.create(function(a, b)
    local c, d = coroutine.yield(a + b, a * b)
    return c .. d, "end"
  end)
  return {coroutine.resume(co, 2, 3)}, {coroutine.resume(co, "x", "y")}, {coroutine.resume(co)},
    coroutine.status(co)
end, {true, {true, 5, 6}, {true, "xy", "end"}, {false, "cannot resume dead coroutine"}, "dead", n = 5})

case("keeps nils and the count of values", function()
  local co = coroutine.create(function(...)
    local n = select("#", ...)
    return n, coroutine.yield(nil, nil, n)
  end)
  local a = table.pack(coroutine.resume(co, nil, 1, nil))
  local b = table.pack(coroutine.resume(co, nil, nil))
  return a, b
end, {true, {true, nil, nil, 3, n = 4}, {true, 3, nil, nil, n = 4}, n = 3})

case("moves 250 values each way", function()
  local t = {}
  for i = 1, 250 do t[i] = i end
  local co = coroutine.create(function(...) return select("#", ...), coroutine.yield(...) end)
  local a = table.pack(coroutine.resume(co, table.unpack(t)))
  local b = table.pack(coroutine.resume(co, table.unpack(t)))
  return a.n, a[251], b.n, b[2], b[252]
end, {true, 251, 250, 252, 250, 250, n = 6})

case("refuses too many arguments and too many results", function()
  local big = {}
  for i = 1, 500000 do big[i] = i end
  local full = coroutine.create(function(...) coroutine.yield(select("#", ...)) end)
  local first = {coroutine.resume(full, table.unpack(big, 1, 400000))}
  local args = {coroutine.resume(full, table.unpack(big, 1, 500000))}
  local generous = coroutine.create(function() coroutine.yield(table.unpack(big, 1, 500000)) end)
  local function holding(...) return coroutine.resume(generous), select("#", ...) end
  local results = {holding(table.unpack(big, 1, 450000))}
  local w = coroutine.wrap(function(...) coroutine.yield(select("#", ...)) end)
  local held = w(table.unpack(big, 1, 500000))
  local wrapped = {held, pcall(w, table.unpack(big, 1, 500000))}
  return first, args, coroutine.status(full), results, coroutine.status(generous), wrapped
end)

case("yields across pcall inside the coroutine", function()
  local co = coroutine.create(function()
    local ok, e = pcall(function()
      local v = coroutine.yield("in pcall")
      error("after " .. v, 0)
    end)
    coroutine.yield(ok, e)
    return xpcall(function() coroutine.yield("in xpcall") error({7}) end, function(m) return m[1] end)
  end)
  return {coroutine.resume(co)}, {coroutine.resume(co, "resume")}, {coroutine.resume(co)},
    {coroutine.resume(co)}
end, {true, {true, "in pcall"}, {true, false, "after resume"}, {true, "in xpcall"}, {true, false, 7},
  n = 5})

case("gives error values that are not strings back as they are", function()
  local results = {}
  for _, v in ipairs({sentinel, 42, 4.5, false, true}) do
    local ok, e = coroutine.resume(coroutine.create(function() error(v) end))
    results[#results + 1] = {ok, rawequal(e, v)}
    local ok2, e2 = pcall(coroutine.wrap(function() error(v) end))
    results[#results + 1] = {ok2, rawequal(e2, v)}
  end
  local nil_resume = table.pack(coroutine.resume(coroutine.create(function() error(nil) end)))
  local nil_wrap = table.pack(pcall(coroutine.wrap(function() error() end)))
  return results, nil_resume, nil_wrap
end)

case("raises a wrapped coroutine's error in the caller with the caller's position", function()
  local g = coroutine.wrap(function() error("boom") end)
  local h = coroutine.wrap(function() error("bare", 0) end)
  local line_g, ok_g, e_g = here(), pcall(function() g() end)
  local line_h, ok_h, e_h = here(), pcall(function() h() end)
  local direct = {pcall(coroutine.wrap(function() error("direct", 0) end))}
  return ok_g, e_g, ok_h, e_h, direct, line_g, line_h
end)

case("resumes a dead coroutine: false from resume, a positioned error from wrap", function()
  local co = coroutine.create(function() return 1 end)
  coroutine.resume(co)
  local w = coroutine.wrap(function() return 1 end)
  w()
  local line, ok, e = here(), pcall(function() w() end)
  local died = coroutine.create(function() error("x") end)
  coroutine.resume(died)
  return {coroutine.resume(co)}, {coroutine.resume(died)}, coroutine.status(died), ok,
    e == ("%s:%d: cannot resume dead coroutine"):format(SRC, line)
end, {true, {false, "cannot resume dead coroutine"}, {false, "cannot resume dead coroutine"}, "dead", false,
  true, n = 6})

case("refuses to resume a running or normal coroutine", function()
  local main = {coroutine.resume(coroutine.running())}
  local inner
  local outer = coroutine.create(function()
    local self = {coroutine.resume(coroutine.running())}
    inner = coroutine.create(function(o) return coroutine.resume(o), coroutine.status(o) end)
    return self, {coroutine.resume(inner, coroutine.running())}
  end)
  local _, self, nested = coroutine.resume(outer)
  local w
  w = coroutine.wrap(function() return pcall(w) end)
  return main, self, nested, {w()}
end)

case("closes a wrapped coroutine that died, to-be-closed variables first", function()
  local log = {}
  local function closer(name)
    return setmetatable({}, {__close = function(_, e)
      log[#log + 1] = name .. ":" .. tostring(e)
    end})
  end
  local g = coroutine.wrap(function()
    local _ <close> = closer("a")
    local _ <close> = closer("b") -- closed first
    coroutine.yield(1)
    error("late", 0)
  end)
  local first = g()
  local ok, e = pcall(g)
  local again = {pcall(g)}
  return first, ok, e, log, again
end, {true, 1, false, "late", {"b:late", "a:late"}, {false, "cannot resume dead coroutine"}, n = 6})

case("raises what a failing __close raised when a wrapped coroutine dies", function()
  local g = coroutine.wrap(function()
    local _ <close> = setmetatable({}, {__close = function() error("in close", 0) end})
    error("first", 0)
  end)
  local h = coroutine.wrap(function()
    local _ <close> = setmetatable({}, {__close = function() error(sentinel) end})
    error("first", 0)
  end)
  local ok_g, e_g = pcall(g)
  local ok_h, e_h = pcall(h)
  return ok_g, e_g, ok_h, rawequal(e_h, sentinel)
end, {true, false, "in close", false, true, n = 5})

case("lets coroutine.close run to-be-closed variables of a suspended or failed coroutine", function()
  local log = {}
  local co = coroutine.create(function()
    local _ <close> = setmetatable({}, {__close = function(_, e) log[#log + 1] = tostring(e) end})
    coroutine.yield("held")
  end)
  local r1 = {coroutine.resume(co)}
  local closed = {coroutine.close(co)}
  local failed = coroutine.create(function()
    local _ <close> = setmetatable({}, {__close = function(_, e) log[#log + 1] = "f:" .. tostring(e) end})
    error("fails", 0)
  end)
  local r2 = {coroutine.resume(failed)}
  local closed2 = {coroutine.close(failed)}
  return r1, closed, r2, closed2, log, coroutine.status(co), {pcall(coroutine.close, coroutine.running())}
end)

case("runs to-be-closed variables at a coroutine's normal end", function()
  local log = {}
  local co = coroutine.create(function()
    local _ <close> = setmetatable({}, {__close = function(_, e) log[#log + 1] = "closed " .. tostring(e) end})
    coroutine.yield(#log)
    return #log
  end)
  return {coroutine.resume(co)}, {coroutine.resume(co)}, log
end, {true, {true, 0}, {true, 0}, {"closed nil"}, n = 4})

case("sees isyieldable and running inside a wrap as Lua does", function()
  local outside = {coroutine.isyieldable(), select(2, coroutine.running())}
  local inside = coroutine.wrap(function()
    local co, main = coroutine.running()
    return {coroutine.isyieldable(), main, coroutine.status(co), type(co)}
  end)()
  local nested = coroutine.wrap(function()
    local outer = coroutine.running()
    return coroutine.wrap(function() return coroutine.status(outer), coroutine.isyieldable() end)()
  end)
  return outside, inside, {nested()}
end)

case("drives a for loop as a generator", function()
  local got = {}
  for v, sq in coroutine.wrap(function()
    for i = 1, 5 do coroutine.yield(i, i * i) end
  end) do
    got[#got + 1] = v .. "=" .. sq
  end
  return table.concat(got, " ")
end, {true, "1=1 2=4 3=9 4=16 5=25", n = 2})

case("refuses a yield across a C call", function()
  local co = coroutine.create(function()
    table.sort({3, 2, 1}, function(a, b) coroutine.yield() return a < b end)
  end)
  return {coroutine.resume(co)}, coroutine.status(co)
end, {true, {false, "attempt to yield across a C-call boundary"}, "dead", n = 3})

case("checks its arguments with Lua's messages", function()
  local out = {}
  for _, call in ipairs({ -- {line, f}: the message starts with the position of the call in f
    {here(), function() return coroutine.resume() end},
    {here(), function() return coroutine.resume(1) end},
    {here(), function() return coroutine.resume({}, 1) end},
    {here(), function() return coroutine.wrap() end},
    {here(), function() return coroutine.wrap("f") end},
  }) do
    local where = ("%s:%d: "):format(SRC, call[1])
    local msg = select(2, pcall(call[2]))
    out[#out + 1] = msg:sub(1, #where) == where and msg:sub(#where + 1) or "(no position) " .. msg
  end
  out[#out + 1] = select(2, pcall(coroutine.resume, false))
  out[#out + 1] = select(2, pcall(coroutine.wrap, 1))
  return out
end, {true, {
  "bad argument #1 to 'resume' (thread expected, got no value)",
  "bad argument #1 to 'resume' (thread expected, got number)",
  "bad argument #1 to 'resume' (thread expected, got table)",
  "bad argument #1 to 'wrap' (function expected, got no value)",
  "bad argument #1 to 'wrap' (function expected, got string)",
  "bad argument #1 to 'coroutine.resume' (thread expected, got boolean)",
  "bad argument #1 to 'coroutine.wrap' (function expected, got number)",
}, n = 2})

case("stops nested resumes at Lua's C-stack limit", function()
  local depth = 0
  local function nest()
    depth = depth + 1
    return coroutine.wrap(nest)()
  end
  local ok, e = pcall(nest)
  local co_depth = 0
  local function nest_co()
    co_depth = co_depth + 1
    return coroutine.resume(coroutine.create(nest_co))
  end
  local last = {nest_co()}
  return ok, e, depth, last, co_depth
end)

case("takes a wrap's function as another coroutine's body", function()
  local co = coroutine.create(coroutine.wrap(function(a) local b = coroutine.yield(a) return a + b end))
  return {coroutine.resume(co, 1)}, {coroutine.resume(co, 2)}
end, {true, {true, 1}, {false, "cannot resume dead coroutine"}, n = 3})

describe("coroutine.resume and coroutine.wrap as jobque installs them", function()
  it("are C functions other than Lua's own", function()
    assert.are.equal("C", debug.getinfo(OURS.resume, "S").what)
    assert.are.equal("C", debug.getinfo(OURS.wrap, "S").what)
    assert.are_not.equal(LUA.resume, OURS.resume)
    assert.are_not.equal(LUA.wrap, OURS.wrap)
  end)

  for _, c in ipairs(CASES) do
    it(c.name .. ", as Lua's own functions do", function()
      local lua = run(LUA, c.fn)
      assert.are.same(lua, run(OURS, c.fn))
      if c.expected then
        assert.are.same(c.expected, lua) -- the case's own statement holds for Lua's too
      end
    end)
  end

  it("add the caller's position to a wrapped coroutine's string error (by hand)", function()
    local g = OURS.wrap(function() error("boom") end) local line_in = here()
    local ok, e = pcall(function() g() end) local line_call = here()
    assert.is_false(ok)
    assert.are.equal(("%s:%d: %s:%d: boom"):format(SRC, line_call, SRC, line_in), e)
  end)
end)

describe("the running-coroutine pointer", function()
  it("points at a coroutine while ours resume it and is put back after a yield, a return or an error",
    function()
    local before = T.coroutine_sampled()
    local seen = {}
    local inner = function()
      seen[#seen + 1] = "inner " .. T.coroutine_sampled()
      coroutine.yield()
      seen[#seen + 1] = "inner again " .. T.coroutine_sampled()
    end
    local co = coroutine.create(function()
      seen[#seen + 1] = "outer " .. T.coroutine_sampled()
      local co2 = coroutine.create(inner)
      OURS.resume(co2)
      seen[#seen + 1] = "outer after yield " .. T.coroutine_sampled()
      OURS.resume(co2)
      seen[#seen + 1] = "outer after return " .. T.coroutine_sampled()
      OURS.resume(coroutine.create(function() error("x") end))
      seen[#seen + 1] = "outer after error " .. T.coroutine_sampled()
      coroutine.yield()
    end)
    OURS.resume(co)
    seen[#seen + 1] = "main after yield " .. T.coroutine_sampled()
    assert.are.same({"outer self", "inner self", "outer after yield self", "inner again self",
      "outer after return self", "outer after error self", "main after yield " .. before}, seen)
    local g = OURS.wrap(function() error("y") end)
    pcall(g)
    assert.are.equal(before, T.coroutine_sampled())
    OURS.resume(co)
    assert.are.equal(before, T.coroutine_sampled())
  end)

  it("is not moved by Lua's own functions (what the check above tells apart)", function()
    local before = T.coroutine_sampled()
    local _, inside = LUA.resume(coroutine.create(function() return T.coroutine_sampled() end))
    assert.are.equal(before, inside)
    assert.are_not.equal("self", inside)
  end)

  it("points at a wrapped coroutine that died while its __close handlers run", function()
    local function closing(log)
      return function()
        local _ <close> = setmetatable({}, {__close = function() log[1] = T.coroutine_sampled() end})
        error("dies", 0)
      end
    end
    local ours, lua = {}, {}
    local before = T.coroutine_sampled()
    pcall(OURS.wrap(closing(ours)))
    pcall(LUA.wrap(closing(lua)))
    assert.are.same({"self"}, ours)
    assert.are.same({before}, lua)
    assert.are.equal(before, T.coroutine_sampled())
  end)
end)

describe("the installer", function()
  local kept_resume, kept_wrap
  before_each(function() kept_resume, kept_wrap = coroutine.resume, coroutine.wrap end)
  after_each(function() colib.resume, colib.wrap = kept_resume, kept_wrap end)

  it("keeps an entry a Lua function replaced, replaces the C one, and can run twice", function()
    local mine = function(...) return LUA.resume(...) end
    colib.resume, colib.wrap = mine, LUA.wrap
    T.coroutine_install()
    T.coroutine_install()
    assert.are.equal(mine, coroutine.resume)
    assert.are.equal(OURS.wrap, coroutine.wrap)
  end)

  it("leaves a state without the coroutine library alone", function()
    local lib = package.loaded.coroutine
    package.loaded.coroutine = nil
    local ok, e = pcall(T.coroutine_install)
    package.loaded.coroutine = lib
    assert.is_true(ok, e)
    assert.are.equal(kept_resume, coroutine.resume)
  end)

  it("installs ours in a worker's state, where a generator runs as the running coroutine", function()
    local got = jobque.with_job_que({workers = 1}, function(q)
      return q:submit(function()
        local t = require("jobque.core")._test
        local lua = t.coroutine_lua()
        local before = t.coroutine_sampled()
        local inside = {}
        local gen = coroutine.wrap(function()
          for i = 1, 3 do
            inside[i] = t.coroutine_sampled()
            coroutine.yield(i)
          end
        end)
        local sum = gen() + gen() + gen()
        return {coroutine.resume ~= lua.resume, coroutine.wrap ~= lua.wrap,
          debug.getinfo(coroutine.resume, "S").what, table.concat(inside, " "), sum,
          t.coroutine_sampled() == before}
      end):wait()
    end)
    assert.are.same({true, true, "C", "self self self", 6, true}, got)
  end)

  it("installs ours in a native helper thread's state (jobque's state setup)", function()
    local path, cpath = S.paths()
    local results = T.spawn(1, [[
      local t = require("jobque.core")._test
      return tostring(coroutine.resume ~= t.coroutine_lua().resume and coroutine.wrap ~= t.coroutine_lua().wrap)
    ]], path, cpath):join()
    assert.are.same({"true"}, results)
  end)
end)

describe("Lua 5.4.4's own test file of coroutines (testes/coroutine.lua)", function()
  it("passes in a state jobque prepares, with ours installed", function()
    local path, cpath = S.paths()
    local chunk = [[
      local t = require("jobque.core")._test
      assert(coroutine.resume ~= t.coroutine_lua().resume, "ours are not installed")
      assert(coroutine.wrap ~= t.coroutine_lua().wrap, "ours are not installed")
      local said = {}
      print = function(...) said[#said + 1] = table.concat({...}, " ") end
      _soft, _port = true, true
      local f = assert(loadfile("spec/fixtures/lua_testes_coroutine.lua.txt", "t"))
      f()
      return said[#said]
    ]]
    assert.are.same({"OK"}, T.spawn(1, chunk, path, cpath):join())
  end)
end)
