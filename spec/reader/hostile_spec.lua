-- Review of issue 12's C paths (hostile inputs): each case failed before
-- its fix; the C path and the Lua path (and both readers) give the same
-- bytes, and nothing reads or writes past a buffer (run under ASan).
local trace = require "jobque_profile.trace"
local html = require "jobque_profile.page"
local C = require "jobque_profile.reader"

local PAGE_FNS = {"page_ns", "page_lane", "page_markers", "page_values"}

-- The page with the Lua writer's loops (the core's page functions hidden).
local function lua_page(model)
  local saved = {}
  for _, k in ipairs(PAGE_FNS) do saved[k], C[k] = C[k], nil end
  local ok, page = pcall(html.render, model)
  for k, v in pairs(saved) do C[k] = v end
  assert(ok, page)
  return page
end

describe("issue 12 under hostile input", function()
  it("writes a copy with a long category and 20-character bytes and job within its buffer", function()
    -- the copy's JSON is 69 bytes plus its category: its buffer had 64 plus
    -- the category (a heap overflow under ASan once the category outgrew
    -- the buffer's first box)
    local cat = ("C"):rep(3000)
    local min = tostring(math.mininteger)
    local text = ('[{"ph":"X","ts":1,"dur":2,"pid":1,"tid":1,"name":"copy in","cat":"copy",'
                  .. '"args":{"job":%s,"bytes":%s,"category":"%s"}}]'):format(min, min, cat)
    local model = assert(trace.decode(text, "t", {reader = "native"}))
    local page = html.render(model)
    assert.truthy(page:find(('{"bytes":%s,"category":"%s","job":%s}'):format(min, cat, min), 1, true))
    assert.are.equal(lua_page(model), page)
    local env = {cat_index = {x = 0}, names = {}, name_index = {}, args = {}, arg_index = {}, keys = {},
                 key_index = {}, cbytes = {math.mininteger}, cjob = {math.mininteger}, ccat = {cat},
                 quoted = {[cat] = '"' .. cat .. '"'}}
    local _, _, a = C.page_lane({"x"}, {"n"}, {1}, {false}, 1, env)
    assert.are.equal("0", a)
    assert.are.equal(('{"bytes":%s,"category":"%s","job":%s}'):format(min, cat, min), env.args[1])
  end)

  it("keys a counter's pid 1 and 1.0 as one track with either reader (as lanes are)", function()
    -- lua-cjson reads 1 as 1.0, the native loader keeps 1 an integer and 1.0 a
    -- float: tostring made "1" and "1.0" two tracks with one reader, one with the other
    local text = '[{"ph":"C","ts":1,"pid":1,"name":"c","args":{"a":1}},\n'
                 .. '{"ph":"C","ts":4,"pid":1.0,"name":"c","args":{"a":3}},\n'
                 .. '{"ph":"C","ts":5,"pid":2.0,"name":"c","args":{"a":5}}]'
    local pages = {}
    for _, reader in ipairs{"native", "cjson"} do
      local model = assert(trace.decode(text, "t", {reader = reader}))
      assert.are.equal(2, #model.counters, reader)
      assert.are.same({2, 1}, {model.counters[1].n, model.counters[2].n}, reader)
      assert.are.equal("integer", math.type(model.counters[2].pid), reader)
      pages[reader] = html.render(model)
    end
    assert.are.equal(pages.cjson, pages.native)
  end)
end)
