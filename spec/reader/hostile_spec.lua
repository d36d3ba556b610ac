-- The page's C writer under hostile input: each case failed once; the
-- expected bytes are written out by hand, and nothing reads or writes past
-- a buffer (run under ASan).
local trace = require "jobque_profile.trace"
local html = require "jobque_profile.page"
local C = require "jobque_profile.reader"

describe("the page under hostile input", function()
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
    local env = {cat_index = {x = 0}, names = {}, name_index = {}, args = {}, arg_index = {}, keys = {},
                 key_index = {}, cbytes = {math.mininteger}, cjob = {math.mininteger}, ccat = {cat},
                 quoted = {[cat] = '"' .. cat .. '"'}}
    local _, _, a = C.page_lane({"x"}, {"n"}, {1}, {false}, 1, env)
    assert.are.equal("0", a)
    assert.are.equal(('{"bytes":%s,"category":"%s","job":%s}'):format(min, cat, min), env.args[1])
  end)

  it("keys a counter's pid 1 and 1.0 as one track (as lanes are)", function()
    -- the loader keeps 1 an integer and 1.0 a float: tostring would make
    -- "1" and "1.0" two tracks
    local text = '[{"ph":"C","ts":1,"pid":1,"name":"c","args":{"a":1}},\n'
                 .. '{"ph":"C","ts":4,"pid":1.0,"name":"c","args":{"a":3}},\n'
                 .. '{"ph":"C","ts":5,"pid":2.0,"name":"c","args":{"a":5}}]'
    local model = assert(trace.decode(text, "t"))
    assert.are.equal(2, #model.counters)
    assert.are.same({2, 1}, {model.counters[1].n, model.counters[2].n})
    assert.are.equal("integer", math.type(model.counters[2].pid))
    local page = html.render(model)
    assert.truthy(page:find('"pid":"1","ts":[0,3000],"v":[1,3],"min":1,"max":3}', 1, true))
    assert.truthy(page:find('"pid":"2","ts":[4000],"v":[5],"min":5,"max":5}', 1, true))
  end)
end)

describe("the job graph under hostile input", function()
  local graph = require "jobque_profile.graph"
  local function model(lane, flows)
    return {lanes = {lane}, flows = flows or {}, awaits = {}, copy_ts = {}, copy_dur = {}, copy_name = {},
            copy_job = {}, t0 = 0, t1 = 10, categories = {}}
  end

  it("reads a lane's n rows and no further, whatever its columns hold", function()
    -- n = 3 but one row in the columns: rows 2 and 3 have no kind (skipped), so job 1 alone
    -- (sname: the happens-before graph reads the slices' names too)
    local l, cp = graph.figures(model({index = 1, n = 3, kind = {"job"}, job = {1}, ts = {1}, dur = {2}, cat = {"a"},
                                       sname = {"a"}}))
    assert.same({1}, cp.jobs)
    assert.same({1, 2}, {l.run.count, l.run.max_us})
  end)

  it("raises for a NaN job id (a table cannot key it), and for a job slice without a time", function()
    local lane = {index = 1, n = 1, kind = {"job"}, job = {1}, ts = {1}, dur = {2}, cat = {"a"}}
    local ok, err = pcall(graph.figures, model(lane, {{name = "wake job", ts = 1, args = {job = 0 / 0}}}))
    assert.is_false(ok)
    assert.matches("NaN", err)
    lane.ts[1] = nil
    ok, err = pcall(graph.figures, model(lane))
    assert.is_false(ok)
    assert.matches("job_graph: a slice's time is not a number", err)
  end)
end)
