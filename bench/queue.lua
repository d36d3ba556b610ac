-- The job queue, measured against baselines in the same run.
--   lua5.4 bench/queue.lua [throughput|speedup|tracing|all]   (make bench)
-- throughput: empty jobs per second and round-trip latency, against luv's
--             work queue with the same number of threads;
-- speedup:    CPU-bound Lua jobs on 2 workers against 1;
-- tracing:    a graph of 10,000 jobs of about 20 us, tracing on against off.
local jobque = require "jobque"
local p = require "jobque_profile"
local core = require "jobque.core"

local what = arg[1] or "all"
local now = core.monotonic_ns
local WORKERS = 2

local function median(t)
  local c = {table.unpack(t)}
  table.sort(c)
  return c[(#c + 1) // 2]
end

local function luv_round(jobs, trips)
  local handle = assert(io.popen(("UV_THREADPOOL_SIZE=%d lua5.4 bench/luv_work.lua %d %d")
    :format(WORKERS, jobs, trips)))
  local out = handle:read("a")
  handle:close()
  local rate, lat = tonumber(out:match("throughput (%S+)")), tonumber(out:match("latency (%S+)"))
  assert(rate and lat, "luv baseline failed (is lua-luv installed?): " .. out)
  return rate, lat
end

local function jobque_round(jobs, trips)
  local rate, lat
  jobque.with_job_que({workers = WORKERS}, function(q)
    local empty = function() end
    q:submit(empty):wait() -- warm up
    local t0 = now()
    for _ = 1, jobs do q:submit(empty) end
    q:wait_all()
    rate = jobs / ((now() - t0) / 1e9)
    t0 = now()
    for _ = 1, trips do q:submit(empty):wait() end
    lat = (now() - t0) / 1e3 / trips
  end)
  return rate, lat
end

local function throughput()
  local JOBS, TRIPS, ROUNDS = 100000, 2000, 5
  local r = {ours = {}, luv = {}, ours_lat = {}, luv_lat = {}, ratio = {}, lat_ratio = {}}
  for i = 1, ROUNDS do -- interleaved: this VM's speed drifts from second to second
    r.luv[i], r.luv_lat[i] = luv_round(JOBS, TRIPS)
    r.ours[i], r.ours_lat[i] = jobque_round(JOBS, TRIPS)
    r.ratio[i], r.lat_ratio[i] = r.ours[i] / r.luv[i], r.luv_lat[i] / r.ours_lat[i]
  end
  print(("empty jobs, %d workers/threads (%d jobs; %d round trips; medians of %d interleaved rounds)")
    :format(WORKERS, JOBS, TRIPS, ROUNDS))
  print(("  jobque   %9.0f jobs/s   %7.2f us/round trip"):format(median(r.ours), median(r.ours_lat)))
  print(("  luv      %9.0f jobs/s   %7.2f us/round trip"):format(median(r.luv), median(r.luv_lat)))
  print(("  ratio    %9.2fx jobs/s (target >= 2x)   %.2fx shorter round trips")
    :format(median(r.ratio), median(r.lat_ratio)))
end

-- About `us` microseconds of Lua arithmetic.
local function spin_for(us)
  local n = 0
  local t0 = now()
  repeat
    for _ = 1, 1000 do n = n + 1 end
  until now() - t0 >= us * 1000
  return n // 1000
end

local function cpu_job(n)
  local x = 0
  for _ = 1, n do
    for i = 1, 1000 do x = x + i % 7 end
  end
  return x
end

local function speedup()
  local units = spin_for(5000) -- loops of 1000 per 5 ms
  local JOBS, ROUNDS = 64, 5
  local function run(workers)
    local t
    jobque.with_job_que({workers = workers}, function(q)
      q:submit(cpu_job, 1):wait()
      local t0 = now()
      q:parallel_for(1, JOBS, function(lo, hi)
        local s = 0
        for _ = lo, hi do s = s + cpu_job(units) end
        return s
      end, JOBS)
      t = (now() - t0) / 1e9
    end)
    return t
  end
  local one, two, ratio = {}, {}, {}
  for r = 1, ROUNDS do -- paired rounds: the VM's speed drifts
    one[r], two[r] = run(1), run(2)
    ratio[r] = one[r] / two[r]
  end
  print(("CPU-bound jobs: %d jobs of a few ms (medians of %d paired rounds)"):format(JOBS, ROUNDS))
  print(("  1 worker   %.3f s"):format(median(one)))
  print(("  2 workers  %.3f s"):format(median(two)))
  print(("  speedup    %.2fx (target >= 1.8x)"):format(median(ratio)))
end

local function tracing()
  local JOBS = 10000
  local units = math.max(1, spin_for(20000) // 1000) -- loops of 1000 per 20 us
  local function graph(q)
    local jobs = {}
    for i = 1, JOBS do
      if i > 100 and i % 2 == 0 then
        jobs[i] = q:after({jobs[i - 100]}, cpu_job, units)
      else
        jobs[i] = q:submit(cpu_job, units)
      end
    end
    q:wait_all()
  end
  local on, off = {}, {}
  jobque.with_job_que({workers = WORKERS}, function(q)
    graph(q) -- warm up
    for r = 1, 11 do
      p.profile_stop()
      local t0 = now()
      graph(q)
      off[r] = (now() - t0) / 1e9
      p.profile_start(200000)
      t0 = now()
      graph(q)
      on[r] = (now() - t0) / 1e9
      p.profile_stop()
    end
  end)
  local ratios = {}
  for r = 1, #on do ratios[r] = on[r] / off[r] end
  print(("tracing cost: a graph of %d jobs of about 20 us, %d workers, the queue's counters on (median of 11 paired runs)")
    :format(JOBS, WORKERS))
  print(("  off  %.3f s"):format(median(off)))
  print(("  on   %.3f s"):format(median(on)))
  print(("  on/off %.3f (target <= 1.05)"):format(median(ratios)))
end

if what == "throughput" or what == "all" then throughput() end
if what == "speedup" or what == "all" then speedup() end
if what == "tracing" or what == "all" then tracing() end
