-- speedscope reads `flame`'s output: speedscope 1.25.0 (npm, pinned in
-- package-lock.json) loads each file in headless Chromium
-- (spec/consumers/speedscope_sandwich.sh) and opens its Sandwich view; per
-- function, the Total and Self it shows must equal what this spec computes
-- from the folded file: Total counts a function once per stack even when it
-- recurses, counts are shown with thousands separators, times in ms with
-- two decimals (the speedscope JSON's values are weight x period). The
-- traces are spec/reader/sample_traces.lua's: one written by hand, one
-- saved by the library from samples put through the testing hook.
local S = require "support"
local traces = require "reader.sample_traces"

local run = S.cli
local PERIOD_US = 100 -- the trace samples at 10 kHz

-- The table speedscope shows for the profile at `path`: {name = {total, self}}
-- (each cell without its percentage), and how many rows it has.
local function sandwich(path)
  local h = io.popen(("timeout 120 sh spec/consumers/speedscope_sandwich.sh '%s' '%s/node_modules' 2>&1")
                     :format(path, os.getenv("PWD")))
  local out = h:read("a")
  h:close()
  local rows, n = {}, 0
  for line in out:gmatch("[^\n]+") do
    local total, self, name = line:match("^([^\t]*)\t([^\t]*)\t(.*)$")
    assert(total, "not a row of the Sandwich view: " .. line)
    name = name:gsub("&lt;", "<"):gsub("&gt;", ">"):gsub("&quot;", '"'):gsub("&amp;", "&")
    rows[name] = {total:match("^(.-) %("), self:match("^(.-) %(")}
    n = n + 1
  end
  return rows, n
end

-- n with thousands separators, as speedscope shows a count: 12,352.
local function count_text(n)
  local s = tostring(math.tointeger(n))
  repeat
    local k
    s, k = s:gsub("^(%d+)(%d%d%d)", "%1,%2")
  until k == 0
  return s
end

-- A time in microseconds as speedscope shows one in the range 1 ms .. 1 s.
local function ms_text(us)
  if us == 0 then return "0.00ns" end
  assert(us >= 1000 and us < 1e6, "a time speedscope would not show in ms: " .. us)
  return ("%.2fms"):format(us / 1000)
end

-- Per function of a folded file: {name = {total, self}} as speedscope should
-- show them (`show` formats a count), and how many functions.
local function expected(folded, show)
  local total, self, names = {}, {}, {}
  for line in folded:gmatch("[^\n]+") do
    local stack, count = line:match("^(.*) (%d+)$")
    count = tonumber(count)
    local seen, frames = {}, {}
    for frame in stack:gmatch("[^;]+") do frames[#frames + 1] = frame end
    for _, f in ipairs(frames) do
      if not total[f] then names[#names + 1] = f end
      if not seen[f] then total[f], seen[f] = (total[f] or 0) + count, true end
    end
    self[frames[#frames]] = (self[frames[#frames]] or 0) + count
  end
  local rows = {}
  for _, f in ipairs(names) do rows[f] = {show(total[f]), show(self[f] or 0)} end
  return rows, #names
end

local function flame(args)
  local code, out, err = run("flame " .. args)
  assert.same({0, ""}, {code, err})
  return out
end

local describe_chromium = S.plain_only(describe, pending, "drives Chromium")

describe_chromium("speedscope 1.25.0", function()
  local path = S.tmpfile("t.json")
  S.write(path, traces.text())

  it("shows the folded file's totals and selfs in its Sandwich view", function()
    local folded = S.tmpfile("t.folded")
    flame(("'%s' -o '%s'"):format(path, folded))
    local want, n = expected(S.read(folded), count_text)
    local got, m = sandwich(folded)
    assert.same(want, got)
    assert.equal(n, m)
    -- the trace's shape, by hand: 7 functions; main chunk on 5,770 of 5,820,
    -- rec (recursive) on 2,750 once
    assert.equal(7, n)
    assert.same({"5,770", "0"}, got["main chunk (job.lua)"])
    assert.same({"2,750", "2,750"}, got["rec (job.lua:30)"])
  end)

  it("shows the speedscope file's first profile (the first lane) as weight x period, in ms", function()
    local file = S.tmpfile("t.speedscope.json")
    flame(("'%s' --format speedscope -o '%s'"):format(path, file))
    local folded = flame(("'%s' --lane 'worker 1'"):format(path))
    local want, n = expected(folded, function(c) return ms_text(c * PERIOD_US) end)
    local got, m = sandwich(file)
    assert.same(want, got)
    assert.equal(n, m)
    -- worker 1 by hand: 3,570 x 100 us on main chunk; rec 2,050 x 100 us
    assert.same({"357.00ms", "0.00ns"}, got["main chunk (job.lua)"])
    assert.same({"205.00ms", "205.00ms"}, got["rec (job.lua:30)"])
  end)

  it("shows the same of a file the library saved (samples put through the testing hook)", function()
    local saved = traces.saved() -- 1 ms periods; lanes: worker 0, then the caller
    local folded = S.tmpfile("saved.folded")
    flame(("'%s' -o '%s'"):format(saved, folded))
    local want, n = expected(S.read(folded), count_text)
    local got, m = sandwich(folded)
    assert.same(want, got)
    assert.same({4, 4}, {n, m})
    assert.same({"11", "0"}, got["main chunk (job.lua)"])
    local file = S.tmpfile("saved.speedscope.json")
    flame(("'%s' --format speedscope -o '%s'"):format(saved, file))
    want, n = expected(flame(("'%s' --lane 'worker 0'"):format(saved)), function(c) return ms_text(c * 1000) end)
    got, m = sandwich(file)
    assert.same(want, got)
    assert.same({2, 2}, {n, m})
    assert.same({"1.00ms", "1.00ms"}, got["heavy (job.lua:12)"])
  end)

  it("draws nothing of a malformed file", function()
    local file = S.tmpfile("cut.speedscope.json")
    local text = flame(("'%s' --format speedscope"):format(path))
    S.write(file, text:sub(1, #text // 2))
    local _, m = sandwich(file)
    assert.equal(0, m)
  end)
end)
