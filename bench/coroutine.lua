-- The replaced coroutine.wrap (src/record/lua_coroutine.c) against Lua's
-- own, sampling off: a wrap generator yielding 10^6 times inside a worker.
--   lua5.4 bench/coroutine.lua [yields] [rounds]   (make bench; a JOBQUE_TESTING build)
-- A worker's state has ours as coroutine.wrap; Lua's own comes from the
-- testing module (a fresh copy of Lua's coroutine library). Each round runs
-- both, in alternating order, in the same worker; the figures are medians
-- of the rounds. Target: ours <= 1.10x Lua's own.
local jobque = require "jobque"

local N = math.tointeger(tonumber(arg[1] or "")) or 1000000
local ROUNDS = math.tointeger(tonumber(arg[2] or "")) or 11

local function median(t)
  local c = {table.unpack(t)}
  table.sort(c)
  return c[(#c + 1) // 2]
end

-- Runs in the worker: ns per resume of a generator made by the chosen wrap.
local function generator_job(which, n)
  local core = require "jobque.core"
  local wrap = which == "lua" and core._test.coroutine_lua().wrap or coroutine.wrap
  local gen = wrap(function()
    for i = 1, n do coroutine.yield(i) end
  end)
  local sum = 0
  local t0 = core.monotonic_ns()
  for _ = 1, n do sum = sum + gen() end
  local ns = core.monotonic_ns() - t0
  assert(sum == n * (n + 1) // 2)
  return ns / n
end

local ns = {ours = {}, lua = {}}
local ratio = {}
jobque.with_job_que({workers = 1}, function(q)
  q:submit(generator_job, "ours", N // 10):wait() -- warm up
  q:submit(generator_job, "lua", N // 10):wait()
  for r = 1, ROUNDS do -- interleaved, the order alternating: drift hits both alike
    local first, second = "ours", "lua"
    if r % 2 == 0 then first, second = second, first end
    ns[first][r] = q:submit(generator_job, first, N):wait()
    ns[second][r] = q:submit(generator_job, second, N):wait()
    ratio[r] = ns.ours[r] / ns.lua[r]
  end
end)
print(("coroutine.wrap generator in a worker, %d yields, medians of %d interleaved rounds")
  :format(N, ROUNDS))
print(("  Lua's own  %7.1f ns a resume"):format(median(ns.lua)))
print(("  ours       %7.1f ns a resume"):format(median(ns.ours)))
print(("  ratio      %7.3fx (rounds: %.3f to %.3f; target <= 1.10x)")
  :format(median(ratio), math.min(table.unpack(ratio)), math.max(table.unpack(ratio))))
