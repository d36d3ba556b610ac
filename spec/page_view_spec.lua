-- What the HTML timeline shows, in headless Chromium: one time base (time
-- since the session's start), #from/#to zoom, rows that fill the window,
-- marker labels that never overlap, and long or multi-line names cut.
local S = require "support"
local cjson = require "cjson"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"

local run = S.cli

-- A Chrome trace of `events` (tables) turned into a page; returns the
-- page's path and the model of the trace.
local function page_of(events, name)
  local path = S.tmpfile((name or "page") .. ".json")
  S.write(path, cjson.encode({traceEvents = events}))
  local page = S.tmpfile((name or "page") .. ".html")
  local code, _, err = run(("html '%s' -o '%s' --test-hooks"):format(path, page))
  assert(code == 0, err)
  return page, assert(trace.load(path))
end

-- Three lanes whose first event (a marker) is at 5000 us: the page's zero.
local function three_lanes()
  local events = {}
  for tid, name in ipairs{"worker 0", "worker 1", "caller"} do
    events[#events + 1] = {ph = "M", pid = 1, tid = tid, name = "thread_name", args = {name = name}}
    for k = 0, 9 do
      events[#events + 1] = {ph = "X", pid = 1, tid = tid, ts = 5000 + k * 100 + tid, dur = 50, name = "job " .. k,
                             cat = "c" .. (k % 3)}
    end
  end
  for i = 0, 4 do events[#events + 1] = {ph = "i", s = "g", pid = 1, tid = 3, ts = 5000 + i * 200, name = "frame",
                                         args = {arg = i}} end
  return events
end

describe("the HTML timeline's time base", function()
  local page, model
  setup(function() page, model = page_of(three_lanes(), "base") end)

  it("counts every time from the session's start: view, tooltips, the whole trace's figures", function()
    assert.equal(5000, model.t0)
    local state = S.open_page(page, "#probe=1,27") -- worker 1's first slice: 5002 .. 5052 in the file
    assert.same({0, model.t1 - model.t0}, state.view)
    assert.equal(0, state.whole.from)
    assert.matches("start    2.000 us", state.probe, 1, true)
    local marker = S.open_page(page, "#probe=3,200").probe -- the marker at 5200 in the file, below the lanes
    assert.matches("at     200.000 us", marker, 1, true)
  end)

  it("opens zoomed to #from=..&to=.. (since the session's start), with that range selected", function()
    local state = S.open_page(page, "#from=199&to=599")
    assert.same({199, 599}, state.view)
    local got = state.selection
    assert.same({199, 599}, {got.from, got.to})
    local want = stats.compute(model, model.t0 + 199, model.t0 + 599)
    assert.near(want.total.busy, got.busy, 1e-6 * want.total.busy)
    assert.near(want.total.idle, got.idle, 1e-9)
  end)

  it("opens on the whole trace when #from/#to is a range the report would refuse", function()
    local whole = {0, model.t1 - model.t0}
    -- beyond +-3e15 us (the width of -1e308..1e308 is infinite), wholly after or before
    -- the trace (it would read as 100% idle), or narrower than the file's nanosecond
    for _, frag in ipairs{"#from=-1e308&to=1e308", "#from=-4e15&to=500", "#from=1e20&to=2e20",
                          "#from=-900&to=-100", "#from=5&to=5.0000001"} do
      local state = S.open_page(page, frag)
      assert.same(whole, state.view, frag)
      assert.equal(cjson.null, state.selection, frag)
    end
  end)
end)

describe("the HTML timeline's layout", function()
  it("lets three lanes fill the window's height", function()
    local page = page_of(three_lanes(), "fill")
    local state = S.open_page(page, nil, nil, "1200,800")
    assert.equal(3, #state.laneLabels)
    assert.is_true(state.row > 100, "rows of " .. state.row .. " px in a window of " .. state.windowHeight)
    assert.is_true(state.height >= 0.7 * state.windowHeight, state.height .. " of " .. state.windowHeight)
    assert.is_true(state.height <= state.windowHeight) -- and no more
  end)

  it("keeps a minimum row height for many lanes, and thins marker labels so that none overlaps", function()
    local events = {}
    for tid = 1, 30 do
      events[#events + 1] = {ph = "M", pid = 1, tid = tid, name = "thread_name", args = {name = "worker " .. tid}}
      events[#events + 1] = {ph = "X", pid = 1, tid = tid, ts = 0, dur = 10000, name = "x", cat = "c"}
    end
    for i = 1, 2000 do
      events[#events + 1] = {ph = "i", s = "g", pid = 1, tid = 1, ts = i * 5, name = i % 2 == 0 and "frame" or "tick",
                             args = {arg = i}}
    end
    local page = page_of(events, "many")
    local state = S.open_page(page, nil, nil, "1200,800")
    assert.equal(22, state.row)
    local labels = state.markerLabels
    assert.is_true(#labels > 5 and #labels < 200, #labels .. " labels")
    for i = 2, #labels do
      assert.is_true(labels[i - 1].x + labels[i - 1].w <= labels[i].x,
                     ("label %d (%s) runs into label %d (%s)"):format(i - 1, labels[i - 1].text, i, labels[i].text))
    end
    -- zoomed in on nine markers (1005, 1010, ... 1045), each gets its label
    local zoomed = S.open_page(page, "#from=1002&to=1048", nil, "1200,800")
    assert.equal(9, #zoomed.markerLabels)
  end)
end)

describe("long and multi-line names on the HTML timeline", function()
  local LANE = "a very long lane name with <tags> & ampersands\nand a second line " .. ("z"):rep(40)
  local CAT = "category <b>&amp;</b> with\na line break and a very long name" -- 61 characters
  local SHORT = "two\nlines"
  local KIND = "tick <&>\nline two " .. ("k"):rep(200)

  it("are cut with an ellipsis in the legend and the labels, ⏎ for a line break, whole in tooltips", function()
    local page = page_of({
      {ph = "M", pid = 1, tid = 1, name = "thread_name", args = {name = LANE}},
      {ph = "X", pid = 1, tid = 1, ts = 0, dur = 40, name = "a", cat = CAT},
      {ph = "X", pid = 1, tid = 1, ts = 50, dur = 40, name = "b", cat = SHORT},
      {ph = "i", s = "g", pid = 1, tid = 1, ts = 45, name = KIND, args = {arg = 7}},
    }, "names")
    local state = S.open_page(page, "#probe=0,20")
    local width = require("jobque_profile.report").NAME_WIDTH
    assert.equal(40, width)
    -- as the report cuts it: the first 26 characters, an ellipsis, the last 13
    assert.same({"category <b>&amp;</b> with…ery long name", "two⏎lines"}, state.legendTexts)
    assert.same({CAT, SHORT}, state.legendTitles)
    local lane = state.laneLabels[1]
    assert.matches("^a very long lane.*…$", lane)
    assert.is_true(utf8.len(lane) < 40, lane)
    local label = state.markerLabels[1].text
    assert.matches("^tick <&>⏎line two k+…$", label)
    assert.is_true(state.markerLabels[1].w <= 180)
    assert.matches("lane     " .. LANE, state.probe, 1, true)
    assert.matches("category " .. CAT, state.probe, 1, true)
    assert.matches("marker " .. KIND .. "\narg    7", S.open_page(page, "#probe=0,45").probe, 1, true)
  end)
end)
