-- A report over many marker kinds and many categories (thousands of each:
-- the registries hold 4,096) costs about what its output does: the figures
-- keep no table of every unit by every category, and the text, which shows
-- each kind's slowest units with their three busiest categories, makes no
-- unit's list of every category. Guarded by what the work allocates (with
-- the collector stopped), not by time; bench/many_kinds.lua has the times.
local S = require "support"
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"

-- N kinds and N categories: marker i ("kind i", arg i) at 100 i us on the
-- caller's lane, then job i ("cat i") at 100 i + 1 us for i * 10 ns on the
-- worker's; the session stops at 100 (N + 1) us. Kind i's one unit runs
-- from 100 i us to the stop and holds jobs i .. N, job N the longest.
local function many(n)
  local out = {'{"traceEvents":[\n',
               '{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},\n',
               '{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"caller"}}'}
  for i = 1, n do
    out[#out + 1] = (',\n{"ph":"i","s":"g","ts":%d.000,"pid":1,"tid":2,"name":"kind %d","args":{"arg":%d}}')
      :format(100 * i, i, i)
    out[#out + 1] = (',\n{"ph":"X","ts":%d.000,"dur":%d.%03d,"pid":1,"tid":1,"name":"cat %d","cat":"job",'
                     .. '"args":{"job":%d}}'):format(100 * i + 1, i // 100, i % 100 * 10, i, i)
  end
  local stop = 100 * (n + 1)
  out[#out + 1] = ('\n],\n"jobqueProfile":{"version":1,"clock":"tsc","durationUs":%d.000,"startUs":0.000,'
                   .. '"stopUs":%d.000,"lostEvents":0,"lanes":2,"laneInfo":[{"tid":1,"name":"worker 0",'
                   .. '"role":"worker","recorded":%d,"dropped":0},{"tid":2,"name":"caller","role":"caller",'
                   .. '"recorded":%d,"dropped":0}],\n"categories":['):format(stop, stop, n, n)
  for i = 1, n do out[#out + 1] = ('%s{"id":%d,"name":"cat %d","color":"#5E96DE"}'):format(i > 1 and "," or "", i, i) end
  out[#out + 1] = '],\n"markers":['
  for i = 1, n do out[#out + 1] = ('%s{"id":%d,"name":"kind %d"}'):format(i > 1 and "," or "", i, i) end
  out[#out + 1] = "]}}\n"
  local path = S.tmpfile()
  S.write(path, table.concat(out))
  return assert(trace.load(path))
end

-- Kilobytes allocated by f(), the collector stopped; and what f returned.
local function allocated(f)
  collectgarbage("collect")
  collectgarbage("stop")
  local before = collectgarbage("count")
  local r = f()
  local kb = collectgarbage("count") - before
  collectgarbage("restart")
  return kb, r
end

describe("a report over many marker kinds and categories", function()
  local N = 1500
  local model = many(N)

  it("allocates about what its output holds", function()
    local _ = stats.compute(model) -- what runs once (the graph's modules, their tables)
    local kb, f = allocated(function() return stats.compute(model) end)
    -- a table of every unit by every category would be N * N / 2 sums at
    -- least (9 bytes each: 10 MB, 7 kB a kind, growing with N); each kind's
    -- figures take 2 to 4 kB (its tables, its units' functions)
    assert.is_true(kb < 8 * N, ("compute allocated %.0f kB for %d kinds"):format(kb, N))
    local text
    kb, text = allocated(function() return report.text(f, model) end)
    -- the units' lists of every category would be N * N / 2 tables
    -- (150 MB); a kind's lines are about 400 bytes
    assert.is_true(kb < 8 * N, ("the text allocated %.0f kB for %d kinds"):format(kb, N))
    for k = 1, N do assert.is_nil(rawget(f.markers[k].units, 1), "kind " .. k .. "'s unit was made") end
    -- kind i's unit: from 100 i us to the stop, 100 (N + 1) us; its busiest
    -- categories are those of the last jobs (cat N: N * 10 ns)
    local function line(i, from, duration, top)
      return ("\n  %7d  %8s  %14s  %10s  %s\n"):format(1, tostring(i), from, duration, top)
    end
    local top3 = "cat 1500 15 us, cat 1499 15 us, cat 1498 15 us"
    assert.truthy(text:find(line(1, "100.000", "150 ms", top3), 1, true))
    assert.truthy(text:find(line(750, "75000.000", "75.1 ms", top3), 1, true))
    assert.truthy(text:find(line(N - 1, "149900.000", "200 us", "cat 1500 15 us, cat 1499 15 us"), 1, true))
    assert.truthy(text:find(line(N, "150000.000", "100 us", "cat 1500 15 us"), 1, true))
    -- all the categories are still there, for --json: kind 1's unit has every one
    local u = f.markers[1].units[1]
    assert.equal(N, #u.by_category)
    assert.same({"cat 1500", "cat 1499", "cat 1"}, {u.by_category[1].name, u.by_category[2].name,
                                                    u.by_category[N].name})
    assert.same({1, 100, 100 * (N + 1)}, {u.arg, u.from, u.to})
  end)
end)
