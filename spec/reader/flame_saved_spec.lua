-- `flame` and the report on a file the library saved (sample_traces.saved:
-- samples put by hand through the testing hook, as the sampler's hook
-- records them, without timers or signals, on the caller and on a worker,
-- written by the library's writer, read by the loader). Every frame,
-- weight, lane, job, category and span is known by construction, so the
-- expected output is worked out by hand below.
local S = require "support"
local cjson = require "cjson"
local T = require("jobque.core")._test
local traces = require "reader.sample_traces"

local run = S.cli

local MH, ML = "main chunk (job.lua);heavy (job.lua:12)", "main chunk (job.lua);light (job.lua:40)"

local function flame(args)
  local code, out, err = run("flame " .. args)
  assert.same({0, ""}, {code, err})
  return out
end

local function lines(...) return table.concat({...}, "\n") .. "\n" end

describe("flame on a saved file", function()
  local path
  setup(function() path = traces.saved() end)
  teardown(function() T.stop() end)

  it("folds the samples of every lane", function()
    assert.equal(lines(MH .. " 3", MH .. ";rep [C] 3", ML .. " 5"), flame(("'%s'"):format(path)))
  end)

  it("groups by category and filters by span, job and lane", function()
    assert.equal(lines("[category flame other];" .. MH .. " 1", "[category flame work];" .. MH .. " 2",
                       "[category flame work];" .. MH .. ";rep [C] 3", "[category no category];" .. ML .. " 5"),
                 flame(("'%s' --by category"):format(path)))
    assert.equal(lines(ML .. " 5"), flame(("'%s' --span 'decode part'"):format(path)))
    assert.equal(lines(MH .. " 2", MH .. ";rep [C] 3"), flame(("'%s' --job 7"):format(path)))
    assert.equal(lines(MH .. ":13 2", MH .. ";rep [C]:14 3", ML .. ":41 5"),
                 flame(("'%s' --lane caller --lines"):format(path)))
  end)

  it("writes a speedscope profile per lane, in the lanes' order (the worker's first), in microseconds", function()
    local doc = cjson.decode(flame(("'%s' --format speedscope"):format(path)))
    assert.same({{name = "main chunk (job.lua)", file = "job.lua"},
                 {name = "heavy (job.lua:12)", file = "job.lua", line = 12}, {name = "rep [C]"},
                 {name = "light (job.lua:40)", file = "job.lua", line = 40}}, doc.shared.frames)
    assert.equal(2, #doc.profiles)
    assert.same({"worker 0", "microseconds", {{0, 1}}, {1000}, 1000},
                {doc.profiles[1].name, doc.profiles[1].unit, doc.profiles[1].samples, doc.profiles[1].weights,
                 doc.profiles[1].endValue})
    assert.same({"caller", "microseconds", {{0, 1}, {0, 1, 2}, {0, 3}}, {2000, 3000, 5000}, 10000},
                {doc.profiles[2].name, doc.profiles[2].unit, doc.profiles[2].samples, doc.profiles[2].weights,
                 doc.profiles[2].endValue})
  end)

  it("puts the top functions in the report", function()
    local code, out = run(("report '%s' --top 2"):format(path))
    assert.equal(0, code)
    -- 11 periods: light 5 (45.5%), heavy self 3 total 6 (27.3%, 54.5%)
    local row = "  %7s  %7s  %10s  %s"
    assert.truthy(out:find(table.concat({
      "top functions (CPU samples: 11 ms sampled, weight 11 x 1 ms at 1000 Hz; total: on the stack)",
      row:format("self %", "total %", "self", "frame"),
      row:format("45.5%", "45.5%", "5 ms", "light (job.lua:40)"),
      row:format("27.3%", "54.5%", "3 ms", "heavy (job.lua:12)")}, "\n"), 1, true), out)
  end)
end)
