-- The replay (ops:whatif(), src/reader/replay.c) against the runs it predicts.
--   lua5.4 bench/whatif.lua [rounds]   (make bench; a JOBQUE_TESTING build)
-- Programs whose jobs hold their worker a fixed time (sleep_us, from the
-- testing module: a sleeping worker leaves the cores to the others, so
-- more workers really help on a 2-core machine) are recorded on 2
-- workers; each trace is replayed for 2, 4, 8 and 16 workers, and each
-- program is run (and recorded the same way) on 4, 8 and 16. The session
-- lengths are compared: predicted against measured, medians of the rounds
-- (default 3) interleaved. Target: within 15% for every program and count.
-- "replayed" is each measured run's own trace replayed at its worker
-- count: near the measured length, the replay models that run, and a
-- prediction far from it comes from a schedule the queue chose otherwise
-- (see docs/cli.md, "What if"); "used" is how many worker lanes of the
-- measured run ran a job (median).
local jobque = require "jobque"
local p = require "jobque_profile"
local trace = require "jobque_profile.trace"
local graph = require "jobque_profile.graph"

local ROUNDS = tonumber(arg[1]) or 3
local RECORDED, COUNTS = 2, {4, 8, 16}
local MS = 1000 -- sleep_us units

local function median(t)
  local c = {table.unpack(t)}
  table.sort(c)
  return c[(#c + 1) // 2]
end

-- Each program is the caller's part: it gets the queue and submits, waits,
-- works. A job holds its worker with sleep_us(n) (required in the job: its
-- function is copied to the worker's state).
local programs = {}

programs[#programs + 1] = {name = "wide: 48 jobs of 2 ms", run = function(q)
  for _ = 1, 48 do
    q:submit(function(n) require("jobque.core")._test.sleep_us(n) end, 2 * MS)
  end
  q:wait_all()
end}

programs[#programs + 1] = {name = "a chain of 12 x 3 ms (after) among 48 of 2 ms", run = function(q)
  local link
  for _ = 1, 12 do
    local fn = function(n) require("jobque.core")._test.sleep_us(n) end
    link = link and q:after({link}, fn, 3 * MS) or q:submit(fn, 3 * MS)
    for _ = 1, 4 do
      q:submit(function(n) require("jobque.core")._test.sleep_us(n) end, 2 * MS)
    end
  end
  q:wait_all()
end}

programs[#programs + 1] = {name = "8 parents awaiting 3 children of 2 ms each", run = function(q)
  for _ = 1, 8 do
    q:submit(function(n)
      local jq = require "jobque"
      local sleep = require("jobque.core")._test.sleep_us
      local kids = {}
      for k = 1, 3 do
        kids[k] = jq.current():submit(function(m) require("jobque.core")._test.sleep_us(m) end, n)
      end
      for k = 1, 3 do kids[k]:wait() end
      sleep(n // 2)
    end, 2 * MS)
  end
  q:wait_all()
end}

programs[#programs + 1] = {name = "16 frames: 5 x 1 ms and a 3 ms straggler waited last, 1 ms on the caller",
  run = function(q)
  local sleep = require("jobque.core")._test.sleep_us
  for _ = 1, 16 do
    local straggler = q:submit(function(n) require("jobque.core")._test.sleep_us(n) end, 3 * MS)
    local jobs = {}
    for k = 1, 5 do
      jobs[k] = q:submit(function(n) require("jobque.core")._test.sleep_us(n) end, MS)
    end
    for k = 1, 5 do jobs[k]:wait() end
    straggler:wait()
    sleep(MS)
  end
end}

programs[#programs + 1] = {name = "a build: 4 layers of 6, each job awaiting 2 inputs, 2 ms", run = function(q)
  local prev
  for _ = 1, 4 do
    local layer = {}
    for k = 1, 6 do
      local a, b = prev and prev[k], prev and prev[k % 6 + 1]
      layer[k] = q:submit(function(n, x, y)
        if x then x:wait() end
        if y then y:wait() end
        require("jobque.core")._test.sleep_us(n)
      end, 2 * MS, a, b)
    end
    prev = layer
  end
  q:wait_all()
end}

-- Runs a program on `workers` workers, recorded (the queue made before the
-- session, its workers warm): the model of its trace.
local function recorded_run(prog, workers)
  local q <close> = jobque.new{workers = workers}
  q:submit(function() end):wait()
  p.profile_start(1 << 16)
  prog.run(q)
  p.profile_stop()
  local path = os.tmpname()
  assert(p.profile_save(path))
  local model = assert(trace.load(path))
  os.remove(path)
  return model
end

-- A run's session length, its own trace replayed at its worker count, and
-- how many worker lanes ran a job.
local function measured(model, workers)
  local ops = graph.build(model):ops(model)
  local w = ops:whatif{workers}
  local lanes, used = {}, 0
  for _, e in ipairs(ops:dump().execs) do
    if e.job and e.lane and not lanes[e.lane] then lanes[e.lane], used = true, used + 1 end
  end
  return w.recorded_us, w.predictions[1].predicted_us, used
end

local function round(prog, r)
  local model = recorded_run(prog, RECORDED)
  local w = graph.build(model):ops(model):whatif{RECORDED, table.unpack(COUNTS)}
  r.recorded[#r.recorded + 1] = w.recorded_us
  r.partial = r.partial or w.partial
  for i, pr in ipairs(w.predictions) do
    r.pred[i] = r.pred[i] or {}
    table.insert(r.pred[i], pr.predicted_us)
  end
  for i, n in ipairs(COUNTS) do
    r.meas[i], r.self[i], r.used[i] = r.meas[i] or {}, r.self[i] or {}, r.used[i] or {}
    local me, self, used = measured(recorded_run(prog, n), n)
    table.insert(r.meas[i], me)
    table.insert(r.self[i], self)
    table.insert(r.used[i], used)
  end
end

print(("what-if: programs recorded on %d workers, replayed for %d and more, against runs on them")
  :format(RECORDED, COUNTS[1]))
print(("(session lengths in ms, medians of %d interleaved rounds; target: within 15%%)"):format(ROUNDS))
print(("%-74s %7s %9s %9s %7s %9s %6s"):format("program", "workers", "predicted", "measured", "error",
  "replayed", "used"))
local within, total, worst = 0, 0, 0
local results = {}
for i = 1, #programs do results[i] = {recorded = {}, pred = {}, meas = {}, self = {}, used = {}} end
for _ = 1, ROUNDS do
  for i, prog in ipairs(programs) do round(prog, results[i]) end
end
for i, prog in ipairs(programs) do
  local r = results[i]
  print(("%-74s %7d %9.1f %9.1f %7s%s"):format(prog.name, RECORDED, median(r.pred[1]) / 1e3,
    median(r.recorded) / 1e3, "", r.partial and "  (partial)" or ""))
  for k, n in ipairs(COUNTS) do
    local pr, me = median(r.pred[k + 1]), median(r.meas[k])
    local err = pr / me - 1
    total = total + 1
    if math.abs(err) <= 0.15 then within = within + 1 end
    if math.abs(err) > math.abs(worst) then worst = err end
    print(("%-74s %7d %9.1f %9.1f %+6.1f%% %9.1f %6d"):format("", n, pr / 1e3, me / 1e3, err * 100,
      median(r.self[k]) / 1e3, median(r.used[k])))
  end
end
print(("within 15%%: %d of %d (worst %+.1f%%)"):format(within, total, worst * 100))
