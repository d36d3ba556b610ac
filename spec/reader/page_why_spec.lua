-- What the HTML timeline shows of the why, in headless Chromium: copies in
-- a colour and legend entry of their own, tooltips kept on the page,
-- counters beyond 2^53 labelled exactly, "1 lane", and the critical path's
-- steps (their kinds on hover, a banner when the trace is partial).
local S = require "support"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"

local describe_in_browser = S.plain_only(describe, pending, "drives Chromium")

-- The page of a trace written here (JSON text); its path and the model.
local function page_of(text, name)
  local json = S.tmpfile(name .. ".json")
  S.write(json, text)
  local page = S.tmpfile(name .. ".html")
  local code, _, err = S.cli(("html '%s' -o '%s' --test-hooks"):format(json, page))
  assert(code == 0, err)
  return page, assert(trace.load(json))
end

local META = ',"jobqueProfile":{"version":1,"startUs":0,"stopUs":100,"laneInfo":[{"name":"worker 0","role":"worker"},'
  .. '{"name":"caller","role":"caller"}]}}'

-- No job ids: worker 0 runs "decode" 10..40 with a copy in 10..14 and a copy
-- out 36..40 inside it, the caller copies a result 50..56; a counter
-- "depth" holds 4 from 0, then 2^62 + 1 from 60.
local COPIES = '{"traceEvents":[' .. table.concat({
  '{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}}',
  '{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"caller"}}',
  '{"ph":"X","pid":1,"tid":1,"ts":10,"dur":4,"name":"copy in","cat":"copy","args":{"bytes":100,"category":"decode"}}',
  '{"ph":"X","pid":1,"tid":1,"ts":14,"dur":22,"name":"decode","cat":"job"}',
  '{"ph":"X","pid":1,"tid":1,"ts":36,"dur":4,"name":"copy out","cat":"copy","args":{"bytes":50,"category":"decode"}}',
  '{"ph":"X","pid":1,"tid":2,"ts":50,"dur":6,"name":"copy result","cat":"copy","args":{"bytes":50,'
    .. '"category":"decode"}}',
  '{"ph":"C","pid":1,"tid":2,"ts":0,"name":"depth","args":{"v":4}}',
  '{"ph":"C","pid":1,"tid":2,"ts":60,"name":"depth","args":{"v":4611686018427387905}}',
}, ",\n") .. "]" .. META

describe_in_browser("copies on the HTML timeline", function()
  local page, model = page_of(COPIES, "copies")

  it("have a legend entry and a colour of their own; their time counts under their job's category", function()
    local state = S.open_page(page)
    assert.equal("copies (in, out, result)", state.legendTexts[#state.legendTexts])
    assert.same({3, 3}, {state.copies, state.copiesDrawn})
    -- the report: decode 4 + 22 + 4 on worker 0 and 6 on the caller, 36 us; the page the same
    local f = stats.compute(model)
    assert.same({"decode", 36}, {f.categories[1].name, f.categories[1].busy})
    assert.same({"decode", 36}, {state.whole.top[1].name, state.whole.top[1].busy})
  end)

  it("draws only the copies in view in their colour", function()
    assert.equal(1, S.open_page(page, "#from=49&to=57").copiesDrawn) -- the caller's copy result
  end)
end)

describe_in_browser("a counter beyond 2^53 on the HTML timeline", function()
  local page = page_of(COPIES, "big")

  it("is labelled exactly, in its row and its tooltip", function()
    local state = S.open_page(page)
    assert.equal("max 4611686018427387905", state.counters[1].maxLabel)
    assert.equal("4611686018427387905", state.counters[1].max)
    assert.matches("value   4611686018427387905\n", S.open_page(page, "#cprobe=0,80").probe, 1, true)
    assert.matches("value   4\n", S.open_page(page, "#cprobe=0,30").probe, 1, true)
  end)
end)

describe_in_browser("the HTML timeline's tooltips", function()
  local page = page_of(COPIES, "tips")

  it("stay on the page: left of the cursor at its right edge, right of it elsewhere", function()
    local right = S.open_page(page, "#hover=1,53", nil, "700,500").tip -- the copy result, right of the middle
    assert.matches("copy result", right.text, 1, true)
    assert.is_true(right.right <= right.pageWidth, right.right .. " past " .. right.pageWidth)
    assert.is_true(right.right < right.cursor)
    local left = S.open_page(page, "#hover=0,12", nil, "700,500").tip -- the copy in, at the left
    assert.is_true(left.left > left.cursor)
  end)

  it("says 1 lane, 1 marker in the title", function()
    local one = page_of('{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":0,"dur":5,"name":"x"},'
      .. '{"ph":"i","s":"g","pid":1,"tid":1,"ts":1,"name":"m","args":{"arg":1}}]}', "one")
    local _, dom = S.open_page(one)
    assert.matches("(Chrome trace, 1 lane, 1 marker)", dom, 1, true)
  end)
end)
