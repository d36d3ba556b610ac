-- The baseline for bench/queue.lua: luv's work queue (libuv's thread pool),
-- run as its own process so UV_THREADPOOL_SIZE applies.
--   UV_THREADPOOL_SIZE=2 lua5.4 bench/luv_work.lua JOBS ROUND_TRIPS
-- Prints "throughput <jobs per second>" and "latency <us per round trip>".
local uv = require "luv"

local jobs = math.tointeger(tonumber(arg[1])) or 100000
local trips = math.tointeger(tonumber(arg[2])) or 2000

local done = 0
local work = uv.new_work(function() end, function() done = done + 1 end)

work:queue() -- warm the pool's threads and their states
uv.run()
done = 0

local t0 = uv.hrtime()
for _ = 1, jobs do work:queue() end
uv.run()
local t1 = uv.hrtime()
assert(done == jobs)
print(("throughput %.0f"):format(jobs / ((t1 - t0) / 1e9)))

t0 = uv.hrtime()
for _ = 1, trips do
  work:queue()
  uv.run()
end
t1 = uv.hrtime()
print(("latency %.2f"):format((t1 - t0) / 1e3 / trips))
