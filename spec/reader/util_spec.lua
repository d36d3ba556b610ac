-- The reader's helpers (jobque_profile.util): the figures, the reports and
-- the command's report/compare load neither lua-cjson's writer side nor
-- jobque.core (the recorder and the queue); the palette by name is the core's.
local S = require "support"
local core = require "jobque.core"
local C = require "jobque_profile.reader"
local p = require "jobque_profile"
local util = require "jobque_profile.util"

-- Runs `script` (Lua source) in a fresh interpreter (S.lua: the sanitizer
-- host under a sanitizer) where requiring any module
-- of `banned` raises "banned module NAME"; returns exit code and output.
local function run_banned(script, banned, cli_args)
  local file = S.tmpfile("banned.lua")
  local lines = {}
  for _, name in ipairs(banned) do
    lines[#lines + 1] = ("package.preload[%q] = function() error(%q, 0) end"):format(name, "banned module " .. name)
  end
  S.write(file, table.concat(lines, "\n") .. "\n" .. script)
  local out = S.tmpfile("banned.txt")
  local cmd = ("LUA_PATH='lua/?.lua;;' LUA_CPATH='%s/?.so;;' %s '%s' %s >'%s' 2>&1")
    :format(os.getenv("JQ_BUILD") or "build", S.lua, file, cli_args or "", out)
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

  it("escapes the C1, separator and bidi controls, and finds them for unseen; not their neighbours", function()
    local acted = {0x80, 0x85, 0x9F, 0x61C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A, 0x202E, 0x2066, 0x2069}
    local shown = {0x7E, 0xA0, 0x61B, 0x200D, 0x2010, 0x2027, 0x202F, 0x2065, 0x206A, 0xE9}
    for _, cp in ipairs(acted) do
      local c = utf8.char(cp)
      assert.equal(('"x\\u%04xy"'):format(cp), util.quote("x" .. c .. "y"))
      assert.equal(("x<%X>y"):format(cp), util.unseen("x" .. c .. "y", function(k) return ("<%X>"):format(k) end))
    end
    for _, cp in ipairs(shown) do
      local c = utf8.char(cp)
      assert.equal('"x' .. c .. 'y"', util.quote("x" .. c .. "y"))
      assert.equal("x" .. c .. "y", util.unseen("x" .. c .. "y", error))
    end
  end)
end)

describe("the reader's json_text (util.json)", function()
  local json = util.json

  it("writes integers in decimal, floats to 14 digits or 17 when 14 do not read back, NaN and infinities null", function()
    assert.are.equal("[1,-7,9223372036854775807,-9223372036854775808]",
                     json({1, -7, math.maxinteger, math.mininteger}))
    assert.are.equal("[0.1,1.5,-0,1e+300,2.5e-07]", json({0.1, 1.5, -0.0, 1e300, 2.5e-7}))
    -- 2^53 to 14 digits is 9.007199254741e+15, which is another double
    assert.are.equal("[9007199254740992,1700000000000002.5]", json({2.0 ^ 53, 1.7e15 + 2.5}))
    -- the smallest double: 14 digits read back as it
    assert.are.equal("4.9406564584125e-324", json(5e-324))
    assert.are.equal("[null,null,null]", json({0 / 0, 1 / 0, -1 / 0}))
  end)

  it("writes booleans, and null for nil and values JSON has not", function()
    assert.are.equal("[true,false]", json({true, false}))
    assert.are.equal("null", json(nil))
    assert.are.equal("null", json(print))
    assert.are.equal("[null]", json({coroutine.create(print)}))
  end)

  it("writes a table with nothing in it or with a [1] as a list, any other as an object of its string keys in order", function()
    assert.are.equal("[]", json({}))
    assert.are.equal("[1,2,3]", json({1, 2, 3}))
    assert.are.equal("[1]", json({1, x = 1}))
    assert.are.equal('{"B":1,"_":3,"a":2}', json({a = 2, B = 1, _ = 3, [5] = 4, [true] = 5}))
    assert.are.equal('{"a":[],"b":{"c":"d"}}', json({a = {}, b = {c = "d"}}))
  end)

  it("reads tables as Lua does: __len, __index and __pairs", function()
    local lazy = setmetatable({}, {__len = function() return 2 end,
                                   __index = function(_, i) return {n = i, s = "<" .. i .. ">"} end})
    assert.are.equal('[{"n":1,"s":"<1>"},{"n":2,"s":"<2>"}]', json(lazy))
    local listed = setmetatable({k = true}, {__index = {y = "Y", z = "Z"},
                                             __pairs = function() return next, {z = 1, y = 2, [1] = 0}, nil end})
    assert.are.equal('{"y":"Y","z":"Z"}', json(listed))
    -- the length as `for i = 1, #t` takes it: a float floored, a numeric string converted
    local x = {"a", "b", "c"}
    assert.are.equal('["a","b"]', json(setmetatable({"a", "b", "c"}, {__len = function() return 2.5 end})))
    assert.are.equal('["a","b"]', json(setmetatable(x, {__len = function() return "2" end})))
    local bad = setmetatable({1}, {__len = function() return {} end})
    assert.matches("'for' limit must be a number", S.err_of(json, bad), 1, true)
  end)

  it("walks any nesting without C recursion, and names a cycle as nesting too deep", function()
    for _, depth in ipairs{100, 100000} do
      local deep = {}
      for _ = 1, depth do deep = {deep} end
      assert.are.equal(("["):rep(depth + 1) .. ("]"):rep(depth + 1), json(deep))
      local obj = {}
      for _ = 1, depth do obj = {k = obj} end
      assert.are.equal(('{"k":'):rep(depth) .. "[]" .. ("}"):rep(depth), json(obj))
    end
    local cycle = {}
    cycle[1] = cycle
    assert.matches("json_text: nesting too deep", S.err_of(json, cycle), 1, true)
  end)

  it("quotes strings only", function()
    assert.matches("quote: string expected, got number", S.err_of(util.quote, 12), 1, true)
  end)
end)

describe("JSON text of strings that are not UTF-8", function()
  -- Each invalid sequence becomes U+FFFD, one for each maximal part of a
  -- sequence that could have begun a character (as the Unicode standard
  -- recommends and TextDecoder does), worked out by hand:
  local R = "\239\191\189" -- U+FFFD
  local CASES = {
    {"a\255b", "a" .. R .. "b"},                        -- a byte never in UTF-8
    {"\128x", R .. "x"},                                -- a continuation alone
    {"x\226\130", "x" .. R},                            -- a three-byte sequence cut short at the end
    {"\226\130x", R .. "x"},                            -- and before a plain byte
    {"\240\159\152", R},                                -- a four-byte one cut short
    {"\192\175", R .. R},                               -- overlong: C0 never starts a character
    {"\224\128\175", R .. R .. R},                      -- overlong: E0 wants A0..BF next
    {"\237\160\128", R .. R .. R},                      -- a surrogate (U+D800) in UTF-8
    {"\244\144\128\128", R .. R .. R .. R},             -- beyond U+10FFFF
    {"\248\136\128\128\128", R .. R .. R .. R .. R},    -- a five-byte form
    {"\195\169\226\130\172\240\159\152\128\239\191\191\244\143\191\191",
     "\195\169\226\130\172\240\159\152\128\239\191\191\244\143\191\191"}, -- é € 😀 U+FFFF U+10FFFF kept
  }

  it("replaces each invalid sequence with U+FFFD, in strings and in keys", function()
    for _, c in ipairs(CASES) do
      local want = '"' .. c[2] .. '"'
      assert.are.equal(want, util.quote(c[1]))
      assert.are.equal(want, util.json(c[1]))
      assert.are.equal(want, C.json_text(c[1]))
      assert.are.equal("[" .. want .. "]", C.json_text({c[1]}))
      assert.are.equal('{' .. want .. ':1}', util.json({[c[1]] = 1}))
    end
  end)

  it("leaves report --json text a strict parser reads (node's fatal TextDecoder, JSON.parse)", function()
    local names = {}
    for i, c in ipairs(CASES) do names[i] = c[1] end
    local ev = {}
    for i, name in ipairs(names) do
      ev[i] = ('{"ph":"X","ts":%d,"dur":1,"pid":1,"tid":1,"name":"n%d","cat":"%s"}'):format(i, i, name)
    end
    local path = S.tmpfile("bad-utf8.json")
    S.write(path, "[" .. table.concat(ev, ",") .. "]")
    local check = S.tmpfile("check.js")
    S.write(check, [[
const fs = require("fs");
const text = new TextDecoder("utf-8", {fatal: true}).decode(fs.readFileSync(process.argv[2]));
const f = JSON.parse(text);
const names = f.categories.map(c => c.name).sort();
process.stdout.write(Buffer.from(names.join("\n"), "utf8").toString("hex"));
]])
    local want = {}
    for i, c in ipairs(CASES) do want[i] = c[2] end
    table.sort(want)
    local hex = table.concat(want, "\n"):gsub(".", function(ch) return ("%02x"):format(ch:byte()) end)
    do
      local code, out, err = S.cli("report --json " .. path)
      assert.are.equal(0, code, err)
      local json = S.tmpfile("report.json")
      S.write(json, out)
      local h = io.popen(("node '%s' '%s' 2>&1"):format(check, json))
      local got = h:read("a")
      h:close()
      assert.are.equal(hex, got)
    end
  end)
end)

describe("the figures and reports", function()
  it("load neither lua-cjson nor jobque.core", function()
    local code, out = run_banned([[
      local stats = require "jobque_profile.stats"
      local report = require "jobque_profile.report"
      assert(stats.compute and report.text and require("jobque_profile.util").json)
      print("loaded")
    ]], {"cjson", "cjson.safe", "jobque.core"})
    assert.equal(0, code, out)
    assert.equal("loaded\n", out)
  end)

  it("jobque-profile report and compare run without jobque.core (the recorder and the queue)", function()
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
                          "lua/jobque_profile/report.lua", "lua/jobque_profile/page.lua",
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

describe("the two C modules", function()
  it("keep the reader out of jobque.core, so a worker's state does not load it", function()
    local reader = require "jobque_profile.reader"
    for _, name in ipairs{"load_trace", "stats_lanes", "job_graph", "page_lane", "json_text", "column_native"} do
      assert.is_nil(core[name], name)
      assert.is_function(reader[name], name)
    end
    local jobque = require "jobque"
    local in_job = jobque.with_job_que({workers = 1}, function(q)
      return q:submit(function()
        return package.loaded["jobque_profile.reader"] == nil and package.loaded["jobque.core"] ~= nil
      end):wait()
    end)
    assert.is_true(in_job)
  end)
end)

describe("util.width", function()
  it("counts the columns a terminal gives a string: wide characters 2, combining marks 0", function()
    assert.equal(3, util.width("abc"))
    assert.equal(6, util.width("日本語")) -- CJK ideographs, 2 each
    assert.equal(5, util.width("ｶﾀｶﾅ ")) -- halfwidth katakana and a space, 1 each
    assert.equal(4, util.width("ＡＢ")) -- fullwidth Latin
    assert.equal(4, util.width("한글")) -- Hangul syllables
    assert.equal(3, util.width("e\u{301}e\u{301}e\u{301}")) -- e and a combining acute accent
    assert.equal(3, util.width("ééé")) -- precomposed
    assert.equal(6, util.width("😀 job")) -- an emoji takes 2, the space and "job" 4
    assert.equal(2, util.width("a\u{200D}b")) -- a zero-width joiner none
    assert.equal(1, util.width("\u{20AC}")) -- the euro sign, narrow
    assert.equal(0, util.width(""))
    assert.equal(4, util.width("ab\xFFc")) -- not UTF-8: a column a byte
  end)
end)
