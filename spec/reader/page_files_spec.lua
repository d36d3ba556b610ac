-- The timeline page is made of files (lua/jobque_profile/page/): the
-- page users get has no test hooks; the specs' switch puts them in; the
-- files are found beside the module, and a missing one is a clear error.
local S = require "support"
local cjson = require "cjson"
local trace = require "jobque_profile.trace"
local html = require "jobque_profile.page"

local DIR = "lua/jobque_profile/page/"
local it_in_browser = S.plain_only(it, pending, "drives Chromium")

local function model()
  local path = S.tmpfile()
  S.write(path, cjson.encode({traceEvents = {
    {ph = "X", pid = 1, tid = 1, ts = 0, dur = 10, name = "job a", cat = "c"},
    {ph = "i", s = "g", pid = 1, tid = 1, ts = 5, name = "tick", args = {arg = 1}}}}))
  return assert(trace.load(path))
end

describe("the timeline page's files", function()
  it("make the page: the CSS and the script as they are in the files, every placeholder filled", function()
    local page = assert(html.render(model()))
    assert.truthy(page:find(S.read(DIR .. "page.css"), 1, true))
    local js = S.read(DIR .. "page.js"):gsub("\n[^\n]*@TEST_HOOKS@[^\n]*\n", "\n")
    assert.truthy(page:find(js, 1, true))
    assert.is_nil(page:find("@%u[%u_]*@"))
    assert.matches('<div id="legend" data-name-width="40"></div>', page, 1, true)
  end)

  it("keep the test hooks out of the page users get, and in it behind the switch", function()
    local hooks = S.read(DIR .. "hooks.js"):match("\n\n(.*)$")
    local plain = assert(html.render(model()))
    local hooked = assert(html.render(model(), {test_hooks = true}))
    for _, word in ipairs{"probe=", "do=", "bench", "redrawMs"} do
      assert.is_nil(plain:find(word, 1, true), word)
      assert.truthy(hooked:find(word, 1, true), word)
    end
    assert.truthy(hooked:find(hooks, 1, true))
    assert.is_nil(hooked:find("/* global", 1, true))
  end)

  it_in_browser("a user's page draws, and ignores a #probe= fragment (headless Chromium)", function()
    local page = S.tmpfile("plain.html")
    assert(html.write(model(), page))
    local state = S.open_page(page, "#probe=0,5")
    assert.equal(1, state.lanes)
    assert.equal(1, state.markers)
    assert.is_nil(state.probe)
    local hooked = S.tmpfile("hooked.html")
    assert(html.write(model(), hooked, {test_hooks = true}))
    assert.matches("job a", S.open_page(hooked, "#probe=0,5").probe, 1, true)
  end)

  it("a missing file is an error naming it, and no page is written", function()
    local dir = S.tmpfile("no-timeline")
    assert(os.execute(("mkdir -p '%s/jobque_profile' && cp lua/jobque_profile/*.lua '%s/jobque_profile/'")
      :format(dir, dir)))
    local out, page = S.tmpfile("out.txt"), S.tmpfile("never.html")
    local script = ([[
      package.path = %q .. "/?.lua;" .. package.path
      package.cpath = %q
      local html = require "jobque_profile.page"
      local ok, err = html.write({lanes = {}, categories = {}, marker_ts = {}, marker_kind = {}, marker_arg = {},
                                  t0 = 0, t1 = 1, format = "chrome"}, %q)
      print(ok, err)
    ]]):format(dir, package.cpath, page)
    S.write(dir .. "/run.lua", script)
    assert(os.execute(("%s '%s/run.lua' >'%s' 2>&1"):format(os.getenv("JQ_LUA") or "lua5.4", dir, out)))
    local said = S.read(out)
    assert.matches("^nil\tthe timeline page's file page.html is missing %(", said)
    assert.matches("reinstall jobque%-profile\n$", said)
    assert.is_nil(io.open(page))
  end)
end)

describe("the timeline page's graph, counter and span parts", function()
  -- The text of the JSON element `id` of a page, decoded.
  local function element(page, id)
    local text = page:match('<script type="application/json" id="' .. id .. '">(.-)</script>')
    assert(text, id)
    return assert(cjson.decode(text))
  end

  it("each in its own element, and names that look like placeholders stay as they are", function()
    local path = S.tmpfile()
    S.write(path, cjson.encode({traceEvents = {
      {ph = "X", pid = 1, tid = 1, ts = 0, dur = 10, name = "@GRAPH@", cat = "@DATA@", args = {span = 1}},
      {ph = "C", pid = 1, tid = 1, ts = 5, name = "@SPANS@", args = {["@COUNTERS@"] = 3}},
      {ph = "X", pid = 1, tid = 1, ts = 0, dur = 20, name = "job", cat = "job", args = {job = 1.5}},
      {ph = "X", pid = 1, tid = 1, ts = 20, dur = 20, name = "job", cat = "job", args = {job = "x"}}},
      jobqueProfile = {startUs = 0, stopUs = 40}}))
    local page = assert(html.render(assert(trace.load(path)), {test_hooks = true}))
    local data = element(page, "data")
    assert.same({"@DATA@", "job"}, {data.cats[1][1], data.cats[2][1]})
    local counters = element(page, "counters")
    assert.equal("@SPANS@ @COUNTERS@", counters[1].name)
    assert.same({5000}, counters[1].ts)
    assert.same({{0, 1}}, element(page, "spans")) -- lane 0's slice 0 (the span) at depth 1
    local graph = element(page, "graph")
    assert.same({1.5}, graph.id) -- the job whose id is no number is left out
    assert.same({0, 1}, graph.so)
    if S.sanitized then return end -- Chromium: in the plain run only
    local file = S.tmpfile("parts.html")
    S.write(file, page)
    local state = S.open_page(file, "#hover=0,15&do=key:c")
    assert.equal(1.5, state.hover)
    assert.equal("@SPANS@ @COUNTERS@", state.counters[1].name)
  end)
end)
