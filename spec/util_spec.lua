-- The reader's helpers (jobque_profile.util) are plain Lua: the figures,
-- the reports and the command's report/compare load neither lua-cjson's
-- writer side nor the native core; the palette by name is the core's.
local S = require "support"
local core = require "jobque.core"
local p = require "jobque_profile"
local util = require "jobque_profile.util"

-- Runs `script` (Lua source) in a fresh lua5.4 where requiring any module
-- of `banned` raises "banned module NAME"; returns exit code and output.
local function run_banned(script, banned, cli_args)
  local file = S.tmpfile("banned.lua")
  local lines = {}
  for _, name in ipairs(banned) do
    lines[#lines + 1] = ("package.preload[%q] = function() error(%q, 0) end"):format(name, "banned module " .. name)
  end
  S.write(file, table.concat(lines, "\n") .. "\n" .. script)
  local out = S.tmpfile("banned.txt")
  local cmd = ("LUA_PATH='lua/?.lua;;' LUA_CPATH=';;' lua5.4 '%s' %s >'%s' 2>&1"):format(file, cli_args or "", out)
  local _, _, code = os.execute(cmd)
  return code, S.read(out)
end

describe("jobque_profile.util", function()
  it("gives every name the core's palette colour (seeded random names, every byte, long names)", function()
    local seed = os.time()
    math.randomseed(seed)
    local names = {"", "a", "io", "submit", "wait", "\0", ("x"):rep(10000)}
    for b = 0, 255 do names[#names + 1] = string.char(b) .. "name" end
    for _ = 1, 2000 do
      local t = {}
      for k = 1, math.random(1, 40) do t[k] = string.char(math.random(0, 255)) end
      names[#names + 1] = table.concat(t)
    end
    for _, name in ipairs(names) do
      local want = core.palette_color(name)
      if util.palette_color(name) ~= want then
        error(("seed %d: %q gets 0x%06x, the core gives 0x%06x"):format(seed, name, util.palette_color(name), want))
      end
    end
  end)

  it("has the core's palette, in its order", function()
    assert.same(p.PROFILE_PALETTE, util.PALETTE)
  end)

  it("pauses the collector around f and restarts it after, also when f raises", function()
    assert.is_true(collectgarbage("isrunning"))
    local a, b = util.without_gc(function(x) return collectgarbage("isrunning"), x end, 7)
    assert.same({false, 7}, {a, b})
    assert.is_true(collectgarbage("isrunning"))
    assert.equal("boom", S.err_of(util.without_gc, function() error("boom", 0) end))
    assert.is_true(collectgarbage("isrunning"))
  end)

  it("quotes JSON strings the way report.json did", function()
    assert.equal('"a\\"b\\\\c\\n\\u0001"', util.quote('a"b\\c\n\1'))
    assert.equal('{"a":[1,2.5,true],"b":null}', util.json({a = {1, 2.5, true}, b = 0 / 0}))
  end)
end)

describe("the figures and reports", function()
  it("load neither lua-cjson nor the native core", function()
    local code, out = run_banned([[
      local stats = require "jobque_profile.stats"
      local report = require "jobque_profile.report"
      assert(stats.compute and report.text and require("jobque_profile.util").json)
      print("loaded")
    ]], {"cjson", "cjson.safe", "jobque.core"})
    assert.equal(0, code, out)
    assert.equal("loaded\n", out)
  end)

  it("jobque-profile report and compare run without the native core", function()
    local path = S.tmpfile()
    S.write(path, '{"traceEvents":[{"ph":"X","name":"a","cat":"c","ts":0,"dur":5,"pid":1,"tid":1},'
            .. '{"ph":"i","s":"g","name":"m","ts":1,"pid":1,"tid":1,"args":{"arg":3}}]}')
    local cli = 'arg = {[0] = "lua/jobque-profile.lua", ...}\ndofile("lua/jobque-profile.lua")\n'
    local code, out = run_banned(cli, {"jobque.core"}, "report '" .. path .. "'")
    assert.equal(0, code, out)
    assert.matches('marker "m": 1 unit', out, 1, true)
    code, out = run_banned(cli, {"jobque.core"}, ("compare '%s' '%s'"):format(path, path))
    assert.equal(0, code, out)
    assert.matches("parallelism", out, 1, true)
  end)
end)

describe("lua/", function()
  it("has no function over 100 lines (luac's listing)", function()
    local long = {}
    for _, file in ipairs{"lua/jobque.lua", "lua/jobque_profile.lua", "lua/jobque-profile.lua",
                          "lua/jobque_profile/trace.lua", "lua/jobque_profile/stats.lua",
                          "lua/jobque_profile/report.lua", "lua/jobque_profile/html.lua",
                          "lua/jobque_profile/util.lua"} do
      local h = assert(io.popen("luac5.4 -p -l '" .. file .. "'"))
      for from, to in h:read("a"):gmatch("\nfunction <[^:]+:(%d+),(%d+)>") do
        if tonumber(to) - tonumber(from) + 1 > 100 then long[#long + 1] = ("%s:%s-%s"):format(file, from, to) end
      end
      h:close()
    end
    assert.same({}, long)
  end)
end)
