-- Traces written by the seed system's own writer (its format as facts:
-- /work/shared/reference/seed_trace_format.md). spec/fixtures/seed_trace_example.json
-- is the hand-made example file of that format; every figure below is
-- worked out by hand from it.
--
-- Lanes: tid 0 "worker 0", tid 1 "worker 1", tid 2 "caller 2". Chains
-- (from the caller's publish events, stage = nstages | tag << 8):
--   1, 3, 5: stage 257, tag 1 (matmul);  2, 4, 6: stage 513, tag 2 (attention).
-- worker 0: chunks of chains 1, 3, 5 (400 each) and 2, 4, 6 (250 each),
--           three fifo_job (30 each)                 busy 2040
-- worker 1: the same chunks (1950), one wake 2130..2135 (5)   busy 1955
-- caller:   six publishes of 4 (24, busy), six stage_waits (402, 252, ...: 1962, waiting)
-- No session bounds in this format: the trace runs from the first event
-- (the token marker at 0) to the end of the last (the wake, 2135).
-- Categories: matmul 6 x 400 + 3 x 4 = 2412; attention 6 x 250 + 3 x 4 = 1512;
--             fifo_job 90 and wake 5, which have no category (their own names).
-- Markers token at 0, 710, 1420: units 710, 710, 715 (the last to 2135);
--   each unit: matmul 400 + 400 + 4 = 804, attention 250 + 250 + 4 = 504,
--   fifo_job 30; the last one also wake 5.
-- Events: 9 + 7 + 15 = 31, none of them metadata.
local S = require "support"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"

local FIXTURE = "spec/fixtures/seed_trace_example.json"

local function by_name(list)
  local t = {}
  for _, x in ipairs(list) do t[x.name] = x end
  return t
end

describe("a trace of the seed system's writer", function()
  local m, f
  setup(function()
    m = assert(trace.load(FIXTURE))
    f = stats.compute(m)
  end)

  it("reads its lanes and legend", function()
    assert.same({"worker 0", "worker 1", "caller 2"}, {m.lanes[1].name, m.lanes[2].name, m.lanes[3].name})
    assert.equal(3, #m.lanes)
    assert.equal("#5E96DE", m.categories.by_name.matmul.color)
    assert.equal("#E08563", m.categories.by_name.attention.color)
    assert.same({"token"}, m.marker_kinds)
    assert.same({0, 2135}, {m.t0, m.t1})
  end)

  it("counts chunks and publishes under their chain's category, and stage waits as waits", function()
    assert.same({from = 0, to = 2135, duration = 2135, t0 = 0}, f.range)
    assert.same({2040, 1955, 24}, {f.lanes[1].busy, f.lanes[2].busy, f.lanes[3].busy})
    assert.same({0, 0, 1962}, {f.lanes[1].wait, f.lanes[2].wait, f.lanes[3].wait})
    assert.equal(4019, f.total.busy)
    assert.near(4019 / 2135, f.total.parallelism, 1e-12)
    assert.near(1 - 4019 / (3 * 2135), f.total.idle, 1e-12)
    local names = {}
    for i, c in ipairs(f.categories) do names[i] = c.name end
    assert.same({"matmul", "attention", "fifo_job", "wake"}, names)
    local c = by_name(f.categories)
    assert.same({2412, 1512, 90, 5}, {c.matmul.busy, c.attention.busy, c.fifo_job.busy, c.wake.busy})
    assert.equal(31, f.events)
  end)

  it("splits token units by category", function()
    local u = f.markers[1]
    assert.equal("token", u.kind)
    assert.same({3, 710, 710, 715, 715}, {u.count, u.min, u.median, u.p95, u.max})
    for j = 1, 3 do
      local unit = u.units[j]
      assert.equal(j - 1, unit.arg)
      local by = by_name(unit.by_category)
      assert.same({804, 504, 30}, {by.matmul.busy, by.attention.busy, by.fifo_job.busy})
    end
    assert.is_nil(by_name(u.units[2].by_category).wake)
    assert.equal(5, by_name(u.units[3].by_category).wake.busy)
  end)

  it("shows categories by name in the report, never as publish or chunk", function()
    local text = report.text(f, m)
    assert.matches("matmul", text, 1, true)
    assert.matches("attention", text, 1, true)
    assert.is_nil(text:find("chunk", 1, true))
    assert.is_nil(text:find("publish", 1, true))
    assert.is_nil(text:find("stage_wait", 1, true))
  end)

  it("names untagged chains, unregistered tags and chains without a publish", function()
    local path = S.tmpfile()
    S.write(path, [[
{"traceEvents":[
{"ph":"M","pid":0,"tid":0,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"X","pid":0,"tid":0,"ts":0.000,"dur":10.000,"name":"chunk","args":{"stage":0,"arg":0,"chain":1}},
{"ph":"X","pid":0,"tid":0,"ts":10.000,"dur":20.000,"name":"chunk","args":{"stage":0,"arg":0,"chain":2}},
{"ph":"X","pid":0,"tid":0,"ts":30.000,"dur":40.000,"name":"chunk","args":{"stage":0,"arg":0,"chain":3}},
{"ph":"M","pid":0,"tid":1,"name":"thread_name","args":{"name":"caller 1"}},
{"ph":"X","pid":0,"tid":1,"ts":0.000,"dur":1.000,"name":"publish","args":{"stage":1,"arg":0,"chain":1}},
{"ph":"X","pid":0,"tid":1,"ts":5.000,"dur":1.000,"name":"publish","args":{"stage":2305,"arg":0,"chain":2}}
],"jobqueProfile":{"version":1,"lanes":2,"categories":[],"markers":[]}}
]])
    local c = by_name(stats.compute(assert(trace.load(path))).categories)
    assert.same({11, 21, 40}, {c.untagged.busy, c["tag 9"].busy, c.chunk.busy}) -- 2305 = 1 | 9 << 8
  end)
  it("reads chains however their events are spelt, a publish after its chunks, and the file through a pipe", function()
    -- chain "c1" (a string id) is tag 1, "one"; chain 7 tag 2, "two"; the first chunk's name key,
    -- the second chunk's name and the first publish's name are escaped; a stage_wait with
    -- no chain in its args is a wait all the same (2 us on thread 1)
    local path = S.tmpfile()
    S.write(path, [[
{"traceEvents":[
{"ph":"X","pid":0,"tid":0,"ts":0,"dur":10,"n\u0061me":"chunk","args":{"stage":0,"chain":"c1"}},
{"ph":"X","pid":0,"tid":0,"ts":10,"dur":20,"name":"ch\u0075nk","args":{"stage":0,"chain":7}},
{"ph":"X","pid":0,"tid":1,"ts":0,"dur":1,"name":"publis\u0068","args":{"stage":257,"chain":"c1"}},
{"ph":"X","pid":0,"tid":1,"ts":2,"dur":1,"name":"publish","args":{"stage":513,"chain":7}},
{"ph":"X","pid":0,"tid":1,"ts":4,"dur":2,"name":"stage_wait","args":{}}
],"jobqueProfile":{"version":1,"lanes":2,"categories":[{"id":1,"name":"one"},{"id":2,"name":"two"}],"markers":[]}}
]])
    local figures = stats.compute(assert(trace.load(path)))
    local c = by_name(figures.categories)
    assert.same({11, 21}, {c.one.busy, c.two.busy})
    assert.is_nil(c.chunk)
    assert.is_nil(c.stage_wait)
    assert.same({0, 2}, {figures.lanes[1].wait, figures.lanes[2].wait})
    local code, out, err = S.cli("report --json /dev/stdin", ("cat '%s' |"):format(path)) -- a pipe: read, not mapped
    assert.are.same({0, ""}, {code, err})
    assert.truthy(out:find('{"busy":11,"color":"#C39536","name":"one"', 1, true), out)
  end)
end)
