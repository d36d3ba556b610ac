-- The trace loader on damaged input: fixtures mutated at random (seeded:
-- JQ_FUZZ_SEED=N repeats a run; the seed is in every failure's message),
-- every prefix of a trace, deep nesting, huge numbers and strings, bad
-- escapes. It never crashes or raises: a model, or nil and a message (for
-- bad JSON with the byte offset); and where the reference model
-- (spec/reader/reference_model.lua) reads the mutant, the same model.
local S = require "support"
local trace = require "jobque_profile.trace"
local R = require "reader.reference_model"

local SEED = tonumber(os.getenv("JQ_FUZZ_SEED") or "") or os.time()
local ROUNDS = tonumber(os.getenv("JQ_FUZZ_ROUNDS") or "") or 400

local function load(text)
  local ok, model, err = pcall(trace.decode, text, "f.json")
  return ok, model, err
end

-- Loads `text`: fine when it gives a model, or nil and a message; when it is
-- bad JSON, the offset is inside the text.
local function check(text, what)
  local ok, model, err = load(text)
  assert(ok, ("%s (seed %d): raised %s"):format(what, SEED, tostring(model)))
  if model then return model end
  assert(type(err) == "string", ("%s (seed %d): no message"):format(what, SEED))
  local off = tonumber(err:match("not JSON %(offset (%d+):"))
  if off then assert(off <= #text, ("%s (seed %d): offset %d past the end"):format(what, SEED, off)) end
  return nil, err
end

local BASE = [[
{"traceEvents":[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"X","ts":1,"dur":1,"pid":1,"tid":2,"name":"submit work","cat":"submit","args":{"job":1}},
{"ph":"X","ts":3,"dur":1,"pid":1,"tid":1,"name":"copy in","cat":"copy","args":{"job":1,"bytes":9,"category":"work"}},
{"ph":"X","ts":4,"dur":5,"pid":1,"tid":1,"name":"work \u00e9\ud83d\ude00","cat":"job","args":{"job":1},"flow_in":true},
{"ph":"X","ts":10,"dur":2,"pid":1,"tid":1,"name":"work","cat":"job","args":{"job":1,"failed":true,"error":"e\"\n"}},
{"ph":"b","ts":5,"pid":1,"tid":1,"name":"await","cat":"await","id2":{"local":"0x1"},"args":{"job":1,"awaits":2}},
{"ph":"e","ts":8,"pid":1,"tid":1,"name":"await","cat":"await","id2":{"local":"0x1"}},
{"ph":"i","s":"g","ts":1.5e0,"pid":1,"tid":2,"name":"tick","args":{"arg":9223372036854775807}},
{"ph":"C","ts":40,"pid":1,"name":"jobs","args":{"ready":1,"running":2,"suspended":0}},
{"ph":"B","ts":1,"pid":7,"tid":7,"name":"outer"},{"ph":"E","ts":3,"pid":7,"tid":7}
],
"jobqueProfile":{"version":1,"startUs":0,"stopUs":100,"laneInfo":[{"tid":1,"name":"worker 0","recorded":9}],
 "categories":[{"id":1,"name":"work","color":"#112233"}],"markers":[{"id":1,"name":"tick"}]}}
]]

local PIECES = {"{", "}", "[", "]", ",", ":", '"', "\\", "\\u", "\\ud800", "0", "-", "1e999", ".", "e",
                "null", "true", "\0", "\255", " ", '"ph":"X"', '"ts":', "1e-400", "99999999999999999999"}

local function mutate(text, rnd)
  local n = #text
  if n < 2 then return text .. PIECES[rnd(1, #PIECES)] end
  local a = rnd(1, n)
  local what = rnd(1, 5)
  if what == 1 then -- one byte changed
    return text:sub(1, a - 1) .. string.char(rnd(0, 255)) .. text:sub(a + 1)
  elseif what == 2 then -- a JSON piece put in
    return text:sub(1, a - 1) .. PIECES[rnd(1, #PIECES)] .. text:sub(a)
  elseif what == 3 then -- a run taken out
    return text:sub(1, a - 1) .. text:sub(a + rnd(1, 40))
  elseif what == 4 then -- a run doubled
    local b = math.min(n, a + rnd(1, 80))
    return text:sub(1, b) .. text:sub(a, b) .. text:sub(b + 1)
  end
  return text:sub(1, a) -- cut short
end

-- Whether the loader's answer (a model, or nil and err) is the reference's
-- (want, or nil and why): nil, or what differs.
local function disagree(model, err, want, why)
  if model and want then return R.differ(want, R.summary(model)) end
  if model and why == "not JSON" then return "the loader read what lua-cjson refuses" end
  if model and why:find("^refused") then return "the loader read what the reference refuses: " .. why end
  if want and not err:find("not JSON") then return "the loader refused what the reference reads: " .. err end
  -- (else both refuse it: the loader as JSON too where lua-cjson takes a raw control character, "1." or
  -- bytes after the value, which RFC 8259 refuses)
end

describe("the trace loader on damaged input", function()
  it("never crashes or raises on fixtures mutated at random, and reads what it reads as the reference does",
     function()
    local rnd = math.random
    math.randomseed(SEED)
    local texts = {BASE, S.read("spec/fixtures/seed_trace_example.json")}
    local models, compared = 0, 0
    for r = 1, ROUNDS do
      local text = texts[(r - 1) % #texts + 1]
      for _ = 1, rnd(1, 4) do text = mutate(text, rnd) end
      local model, err = check(text, "mutant " .. r)
      local want, why = R.read(text)
      local d = disagree(model, err, want, why)
      assert(d == nil, ("mutant %d (seed %d): %s"):format(r, SEED, tostring(d)))
      if model then models = models + 1 end
      if model and want then compared = compared + 1 end
    end
    assert.is_true(models > 0) -- some mutants are still traces
    assert.is_true(compared > 0) -- and the reference reads some of them
  end)

  it("refuses every prefix of a trace with an offset inside it (a truncated file)", function()
    local _, err = check("", "prefix 0")
    assert.matches("the file is empty$", err)
    for k = 1, #BASE - 2 do
      local model
      model, err = check(BASE:sub(1, k), "prefix " .. k)
      assert(model == nil, "prefix " .. k .. " read")
      assert.matches("offset %d+", err)
    end
  end)

  it("refuses deep nesting without recursion, and reads what is nested within the limit", function()
    local _, err = check('{"traceEvents":[{"args":' .. ('{"a":'):rep(100000) .. "1" .. ("}"):rep(100000) .. "}]}", "deep")
    assert.matches("nested too deep", err)
    _, err = check(("["):rep(1000000), "deep arrays")
    assert.matches("nested too deep", err)
    local ok = check('{"traceEvents":[{"ph":"i","s":"t","ts":1,"args":' .. ("["):rep(900) .. ("]"):rep(900) .. "}]}",
                     "deep, within the limit")
    assert.is_truthy(ok)
  end)

  it("reads huge numbers and strings, and refuses bad escapes", function()
    local digits = ("9"):rep(100000)
    local model, err = check('[{"ph":"X","ts":' .. digits .. ',"dur":1,"name":"n"}]', "huge ts")
    assert.is_nil(model)
    assert.matches("out of range", err)
    model = check('[{"ph":"X","ts":0.' .. digits .. ',"dur":1e-400,"name":"n"}]', "long fraction")
    assert.are.equal(1, model.lanes[1].n)
    local long = ("x"):rep(5000000)
    model = check('[{"ph":"X","ts":1,"dur":1,"name":"' .. long .. '"}]', "long name")
    assert.are.equal(long, model.lanes[1].sname[1])
    for _, bad in ipairs{'"\\u12"', '"\\ud800\\u0041"', '"\\udc00"', '"\\u00', '"\\', '"\\q"', '"\1"'} do
      local m, e = check('[{"ph":"X","ts":1,"name":' .. bad .. "}]", "escape " .. bad)
      assert.is_nil(m, bad)
      assert.matches("not JSON %(offset", e)
    end
  end)
end)
