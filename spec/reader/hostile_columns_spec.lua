-- A second hostile review of issue 12 (the native columns, the page's and
-- the graph's C, the queue's wake-up): each case failed before its fix.
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"
local html = require "jobque_profile.page"
local C = require "jobque_profile.reader"

-- A trace the native loader reads wholly by its fast paths: every column
-- of it stays native.
local PLAIN = [[{"traceEvents":[
{"ph":"X","ts":1,"dur":2,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":5,"dur":3,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":2}},
{"ph":"X","ts":6,"dur":1,"pid":1,"tid":1,"name":"copy in","cat":"copy","args":{"job":2,"bytes":10,"category":"a"}},
{"ph":"i","s":"g","ts":3,"pid":1,"tid":1,"name":"frame","args":{"arg":7}},
{"ph":"C","ts":3,"pid":1,"name":"q","args":{"n":4}}
],"jobqueProfile":{"version":1,"startUs":0,"stopUs":20,"markers":[{"id":1,"name":"frame"}]}}]]

-- report --json and text and the page of a model, joined.
local function outputs(model)
  local figures = stats.compute(model)
  return report.json(figures) .. "\n" .. report.text(figures, model) .. "\n" .. assert(html.render(model))
end

describe("issue 12 under a second hostile review", function()
  it("forgets a native column once its field is set from Lua, to nil too", function()
    -- the field's raw slot is empty while it is native: an assignment went
    -- in raw, and a nil one left the column in the metatable, so that the
    -- next read made the old list again (and the C readers read the old cells)
    local model = assert(trace.decode(PLAIN, "t", {reader = "native"}))
    local lane = model.lanes[1]
    assert.is_truthy(C.column_native(lane, "sname"))
    assert.is_truthy(C.column_native(model, "copy_bytes"))
    lane.sname = nil
    model.copy_bytes = nil
    assert.is_nil(C.column_native(lane, "sname"))
    assert.is_nil(lane.sname)
    assert.is_nil(model.copy_bytes)
    local names = {}
    for k in pairs(lane) do names[k] = true end
    assert.is_nil(names.sname)
    assert.is_true(names.dur)
    -- a new list set in place of a native column is what the C readers read
    local a = assert(trace.decode(PLAIN, "t", {reader = "native"}))
    local b = assert(trace.decode(PLAIN, "t", {reader = "cjson"}))
    a.lanes[1].dur, b.lanes[1].dur = {9, 3, 1}, {9, 3, 1}
    assert.is_nil(C.column_native(a.lanes[1], "dur"))
    assert.are.equal(outputs(b), outputs(a))
    -- and a field that is no column is set as in any table
    lane.extra = 5
    assert.are.equal(5, rawget(lane, "extra"))
  end)

  it("reads a marker's string arg that looks like a number as a string with either reader", function()
    -- the native loader keeps "12" a string; the Lua reader's math.tointeger
    -- turned it into 12 (Lua 5.4 converts strings): report --json differed
    local text = '[{"ph":"i","s":"g","ts":1,"pid":1,"tid":1,"name":"m","args":{"arg":"12"}},\n'
                 .. '{"ph":"i","s":"g","ts":2,"pid":1,"tid":1,"name":"m","args":{"arg":" 0x10 "}},\n'
                 .. '{"ph":"i","s":"g","ts":3,"pid":1,"tid":1,"name":"m","args":{"arg":3.0}},\n'
                 .. '{"ph":"X","ts":0,"dur":5,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}}]'
    local out = {}
    for _, reader in ipairs{"native", "cjson"} do
      local model = assert(trace.decode(text, "t", {reader = reader}))
      assert.are.same({"12", " 0x10 ", 3}, {model.markers[1].arg, model.markers[2].arg, model.markers[3].arg})
      assert.are.equal("integer", math.type(model.markers[3].arg))
      out[reader] = outputs(model)
    end
    assert.are.equal(out.cjson, out.native)
  end)
end)
