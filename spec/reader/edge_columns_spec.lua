-- The happens-before edges as the loader gives them (model.edge_* and
-- model.nedges, lanes[i].queue; trace.lua's header): hand-written traces
-- whose columns are worked out by hand, read by the loader's fast path and
-- by the generic one, and a recorded program.
local trace = require "jobque_profile.trace"
local reader = require "jobque_profile.reader"

local META = [[
"jobqueProfile":{"version":1,"clock":"tsc","pid":1,"eventsPerLane":64,"durationUs":10,"startUs":0,"stopUs":10,
"lostEvents":0,"lanes":2,"laneInfo":[
{"tid":1,"name":"worker 0","role":"worker","queue":3,"recorded":3,"dropped":0},
{"tid":2,"name":"caller","role":"caller","recorded":3,"dropped":0}],"categories":[],"markers":[]}]]

-- A trace of ours whose events are `events` (JSON texts), the caller's
-- lane met first in the file but placed last (its sort index).
local function ours(events)
  return '{"traceEvents":[\n' .. table.concat({
    '{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"caller"}}',
    '{"ph":"M","pid":1,"tid":2,"name":"thread_sort_index","args":{"sort_index":1}}',
    '{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}}',
    '{"ph":"M","pid":1,"tid":1,"name":"thread_sort_index","args":{"sort_index":0}}',
    table.unpack(events)}, ",\n") .. "\n],\n" .. META .. "}\n"
end

local function edge(tid, ts, name, args)
  return ('{"ph":"i","s":"t","ts":%s,"pid":1,"tid":%d,"name":"%s","cat":"edge","args":{%s}}'):format(ts, tid, name,
                                                                                                     args)
end

-- The edges of the model, each {ts, lane name, kind, job, on, queue}.
local function edges_of(m)
  local out = {}
  for k = 1, m.nedges do
    out[k] = {m.edge_ts[k], m.lanes[m.edge_lane[k]].name, m.edge_kind[k], m.edge_job[k], m.edge_on[k],
              m.edge_queue[k]}
  end
  return out
end

-- The four edges below, worked out by hand: kinds by name, an absent id nil.
local WANT = {
  {1.5, "caller", 1, nil, 5, nil},
  {2, "worker 0", 2, 6, 5, nil},
  {2.5, "worker 0", 1, 6, 7, nil},
  {3, "caller", 3, nil, nil, 3},
}

local function four(on7)
  return {
    '{"ph":"X","ts":1,"dur":0.25,"pid":1,"tid":2,"name":"submit job","cat":"submit","args":{"job":6}}',
    edge(2, "1.5", "waited for", '"on":5'),
    edge(1, "2.0", "after", '"job":6,"on":5'),
    edge(1, "2.5", "waited for", '"job":6,' .. on7),
    edge(2, "3.0", "waited for all", '"queue":3'),
  }
end

describe("the loader's edges", function()
  it("reads a trace's edges into native columns, lanes by their index in model.lanes", function()
    local m = assert(trace.decode(ours(four('"on":7'))))
    assert.are.equal(4, m.nedges)
    assert.truthy(reader.column_native(m, "edge_ts"), "edge_ts made a list")
    assert.truthy(reader.column_native(m, "edge_lane"), "edge_lane made a list")
    assert.are.same({"worker 0", "caller"}, {m.lanes[1].name, m.lanes[2].name})
    assert.are.same(WANT, edges_of(m))
    assert.are.equal(1, math.tointeger(m.edge_lane[2]))
    assert.are.equal("integer", math.type(m.edge_lane[1]))
    -- counted as the trace's events, as flows are, not as their lanes' instants
    assert.are.equal(5, m.nevents)
    assert.are.same({}, m.lanes[1].instants)
    assert.are.same({}, m.lanes[2].instants)
    local extra = {}
    for k = 1, #m.extra_ts do extra[k] = m.extra_ts[k] end
    assert.are.same({1.5, 2, 2.5, 3}, extra)
  end)

  it("reads the same edges through the generic path, around the fast one", function()
    -- an escaped key (the generic path reads it) between edges the fast path reads
    local m = assert(trace.decode(ours(four('"o\\u006e":7'))))
    assert.are.same(WANT, edges_of(m))
    assert.is_nil(reader.column_native(m, "edge_ts"))
    -- a float id is its integer; a string is none; another name is no edge
    -- (the fast path's edge before them goes first)
    m = assert(trace.decode(ours({edge(2, "0.5", "after", '"job":9,"on":5'),
                                  edge(2, "1", "waited for", '"on":5.0,"job":"8"'),
                                  edge(2, "2", "waited", '"on":5')})))
    assert.are.same({{0.5, "caller", 2, 9, 5, nil}, {1, "caller", 1, nil, 5, nil}}, edges_of(m))
    assert.are.equal(2, m.nedges)
    assert.are.equal(1, #m.lanes[2].instants)
  end)

  it("gives a worker lane its queue, and the other lanes none", function()
    local m = assert(trace.decode(ours(four('"on":7'))))
    assert.are.equal(3, m.lanes[1].queue)
    assert.is_nil(m.lanes[2].queue)
  end)

  it("gives two queues' lanes of one name each its own queue (laneInfo by tid)", function()
    -- two unnamed queues: both have a "worker 0"; tid 1 is queue 4's, tid 3 queue 5's
    local text = '{"traceEvents":[\n' .. table.concat({
      '{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}}',
      '{"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"worker 0"}}',
      '{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"caller"}}'}, ",\n") .. "\n],\n" .. [[
"jobqueProfile":{"version":1,"clock":"tsc","pid":1,"eventsPerLane":64,"durationUs":10,"startUs":0,"stopUs":10,
"lostEvents":0,"lanes":3,"laneInfo":[
{"tid":1,"name":"worker 0","role":"worker","queue":4,"recorded":0,"dropped":0},
{"tid":2,"name":"caller","role":"caller","recorded":0,"dropped":0},
{"tid":3,"name":"worker 0","role":"worker","queue":5,"recorded":0,"dropped":0}],"categories":[],"markers":[]}}
]]
    local m = assert(trace.decode(text))
    local q = {}
    for _, l in ipairs(m.lanes) do q[#q + 1] = {l.tid, l.name, l.queue or false} end
    assert.same({{1, "worker 0", 4}, {3, "worker 0", 5}, {2, "caller", false}}, q)
  end)

  it("reads no edges from a trace without them, or not ours", function()
    local m = assert(trace.decode(ours({'{"ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"name":"x","cat":"x"}'})))
    assert.are.equal(0, m.nedges)
    assert.are.equal(0, #m.edge_ts)
    m = assert(trace.decode('[' .. edge(1, "1", "waited for", '"on":5') .. ']'))
    assert.are.equal(0, m.nedges)
    assert.are.equal(1, #m.lanes[1].instants)
  end)

  it("reads a recorded program's edges", function()
    local jobque = require "jobque"
    local p = require "jobque_profile"
    local S = require "support"
    p.profile_start(4096)
    local q = jobque.new{workers = 1}
    local a = q:submit(function() return 1 end)
    a:wait()
    local b = q:after({a}, function() return 2 end)
    b:wait()
    q:close()
    p.profile_stop()
    local _, _, path = S.save(p)
    local m = assert(trace.load(path))
    local got = edges_of(m)
    for _, e in ipairs(got) do e[1] = nil end
    assert.are.same({{nil, "caller", 1, nil, a:id(), nil}, {nil, "caller", 2, b:id(), a:id(), nil},
                     {nil, "caller", 1, nil, b:id(), nil}}, got)
    for k = 2, m.nedges do assert.is_true(m.edge_ts[k] >= m.edge_ts[k - 1]) end
    for _, l in ipairs(m.lanes) do
      if l.name == "worker 0" then assert.are.equal("integer", math.type(l.queue)) end
    end
  end)
end)
