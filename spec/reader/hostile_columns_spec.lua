-- The loader's native columns under hostile use (a column's field set from
-- Lua; marker args that look like numbers): each case failed before its fix.
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"
local html = require "jobque_profile.page"
local C = require "jobque_profile.reader"

-- A trace the loader's C code reads wholly: every column of it stays native.
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

describe("the loader's native columns, used as no reader would", function()
  it("forgets a native column once its field is set from Lua, to nil too", function()
    -- the field's raw slot is empty while it is native: an assignment went
    -- in raw, and a nil one left the column in the metatable, so that the
    -- next read made the old list again (and the C readers read the old cells)
    local model = assert(trace.decode(PLAIN, "t"))
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
    local a = assert(trace.decode(PLAIN, "t"))
    local b = assert(trace.decode(PLAIN, "t"))
    for _ in pairs(b.lanes[1]) do end -- (every column of b's lane a list)
    assert.is_nil(C.column_native(b.lanes[1], "ts"))
    a.lanes[1].dur, b.lanes[1].dur = {9, 3, 1}, {9, 3, 1}
    assert.is_nil(C.column_native(a.lanes[1], "dur"))
    assert.are.equal(outputs(b), outputs(a))
    -- and a field that is no column is set as in any table
    lane.extra = 5
    assert.are.equal(5, rawget(lane, "extra"))
  end)

  it("reads a marker's string arg that looks like a number as a string, whichever code reads it", function()
    -- the loader's C code keeps "12" a string; trace.lua's math.tointeger
    -- turned it into 12 (Lua 5.4 converts strings): report --json differed.
    -- The second text's escaped key hands its markers to trace.lua.
    local text = '[{"ph":"i","s":"g","ts":1,"pid":1,"tid":1,"name":"m","args":{"arg":"12"}},\n'
                 .. '{"ph":"i","s":"g","ts":2,"pid":1,"tid":1,"name":"m","args":{"arg":" 0x10 "}},\n'
                 .. '{"ph":"i","s":"g","ts":3,"pid":1,"tid":1,"name":"m","args":{"arg":3.0}},\n'
                 .. '{"ph":"X","ts":0,"dur":5,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}}]'
    for _, t in ipairs{text, (text:gsub('"name":"m"', '"n\\u0061me":"m"'))} do
      local model = assert(trace.decode(t, "t"))
      assert.are.same({"12", " 0x10 ", 3}, {model.markers[1].arg, model.markers[2].arg, model.markers[3].arg})
      assert.are.equal("integer", math.type(model.markers[3].arg))
      local json = report.json(stats.compute(model))
      assert.truthy(json:find('"arg":"12"', 1, true))
      assert.truthy(json:find('"arg":" 0x10 "', 1, true))
    end
  end)
end)
