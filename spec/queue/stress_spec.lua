-- A randomized lifecycle stress test: many seeded rounds, each a random mix
-- of submits, dependencies (duplicate and failed ones too), awaits,
-- cooperative yields, errors, children, closes from jobs, and a close of the
-- queue at a random moment from the caller or by the collector, on 0, 1, 2
-- and 8 workers; beside it a second queue (1 or 2 workers) whose jobs and
-- the first one's await each other's (each an earlier job, so no cycle),
-- closed before the first, after it, or by the collector. Every job must end exactly once (done, failed or
-- cancelled), every wait must get an answer, and no queue may be left
-- alive. spec/run-all.sh runs it plain, under AddressSanitizer (the job pool
-- is bypassed there, so a job finished twice shows as a use after free) and
-- under ThreadSanitizer. JQ_SOAK=1 runs many more rounds, for local soaks;
-- JQ_SEED=n replays one round. Under a sanitizer host it runs a quarter of
-- the rounds.
local jobque = require "jobque"
local S = require "support"
local T = require("jobque.core")._test

local ROUNDS = os.getenv("JQ_SOAK") and 5000 or S.sanitized and 40 or 160
local SEED = tonumber(os.getenv("JQ_SEED") or "")

-- What a job does, by kind. Only its arguments cross, so the same body
-- runs on workers and (workers = 0) in the caller's state.
local function body(i, kind, arg, n)
  if kind == 2 then
    error("stress job " .. i .. " fails", 0)
  elseif kind == 3 then
    for _ = 1, n do coroutine.yield() end
  elseif kind == 4 then
    arg:pwait()
  elseif kind == 5 then
    arg:wait()
  elseif kind == 6 then
    local q = require("jobque").current()
    local child = q:submit(function(x) coroutine.yield() return x end, i)
    assert(child:wait() == i)
  elseif kind == 7 then -- a queue refuses to be closed by its own job
    local q = _G.STRESS_Q or require("jobque").current()
    local ok, err = pcall(q.close, q)
    if ok or not tostring(err):find("cannot be closed from one of its own jobs", 1, true) then
      error("close from a job: " .. tostring(err), 0)
    end
  elseif kind == 8 then -- garbage, and a full collection while this job runs
    local t = {}
    for k = 1, 3000 do t[k] = {k} end
    collectgarbage()
    assert(#t == 3000)
  end
  return i
end

local WORKERS = {0, 1, 2, 8}
local OTHER_WORKERS = {1, 2}
local OTHER_ENDINGS = {"close first", "close last", "to the collector"}
local ENDINGS = {"close now", "close after a spin", "wait_all then close", "to the collector",
                 "to the collector mid-job", "pwait_all then close"}

local function spin(us)
  local t = os.clock()
  while os.clock() - t < us / 1e6 do end
end

local function round(seed)
  math.randomseed(seed)
  local workers = WORKERS[math.random(#WORKERS)]
  local ending = ENDINGS[math.random(#ENDINGS)]
  local other_workers = OTHER_WORKERS[math.random(#OTHER_WORKERS)]
  local other_ending = OTHER_ENDINGS[math.random(#OTHER_ENDINGS)]
  local where = ("seed %d (%d workers, %s; other queue %d workers, %s)"):format(seed, workers, ending,
    other_workers, other_ending)
  local q = jobque.new {workers = workers}
  local other = jobque.new {workers = other_workers}
  if workers == 0 then _G.STRESS_Q = q end
  local jobs, kinds = {}, {}
  local of = {[q] = {}, [other] = {}} -- each queue's jobs (dependencies stay in their queue)
  local n = math.random(5, 60)
  for i = 1, n do
    local kind = math.random(1, 8)
    local dq = math.random() < 0.3 and other or q
    local prev = i > 1 and jobs[math.random(1, i - 1)] or nil -- awaited: of either queue
    if (kind == 4 or kind == 5) and not prev then kind = 1 end
    local own = of[dq]
    local ok, job
    if #own > 0 and math.random() < 0.3 then
      local deps = {}
      for d = 1, math.random(1, 4) do deps[d] = own[math.random(1, #own)] end
      ok, job = pcall(dq.after, dq, deps, body, i, kind, prev, math.random(0, 3))
    else
      ok, job = pcall(dq.submit, dq, body, i, kind, prev, math.random(0, 3))
    end
    assert(ok, where .. ": submit: " .. tostring(job))
    jobs[i], kinds[i] = job, kind
    own[#own + 1] = job
  end
  of = nil -- luacheck: ignore (keeps no queue)
  if other_ending == "close first" then other:close() end
  local mid_job, reported
  if ending == "close now" then
    q:close()
  elseif ending == "close after a spin" then
    spin(math.random(0, 1500))
    q:close()
  elseif ending == "wait_all then close" then
    pcall(q.wait_all, q)
    q:close()
  elseif ending == "pwait_all then close" then
    local ok, all_ok, failures = pcall(q.pwait_all, q) -- (workers = 0: a wait cycle raises)
    if ok then
      assert(select("#", q:pwait_all()) == 1, where .. ": pwait_all reported a failure twice")
      reported = all_ok and {} or failures
    end
    q:close()
  elseif ending == "to the collector mid-job" and workers == 0 then
    mid_job = q:submit(body, n + 1, 8)
  end
  if other_ending == "close last" then other:close() end
  q, other = nil, nil -- luacheck: ignore (the collector may close them now)
  _G.STRESS_Q = nil
  if mid_job then
    local ok, v = mid_job:pwait() -- done, or cancelled by a collection in an earlier job
    assert(ok and v == n + 1 or not ok and v:find("was cancelled", 1, true),
      where .. ": the job that ran while its queue was collected: " .. tostring(v))
  end
  collectgarbage()
  collectgarbage()
  for i, job in ipairs(jobs) do
    local ok, v = job:pwait()
    if ok then
      assert(v == i, ("%s: job %d gave %s"):format(where, i, tostring(v)))
      assert(kinds[i] ~= 2, ("%s: job %d should have failed"):format(where, i))
    else
      assert(type(v) == "string" and #v > 0, ("%s: job %d failed with %s"):format(where, i, tostring(v)))
      assert(not v:find("close from a job", 1, true), ("%s: job %d: %s"):format(where, i, v))
    end
    local status = job:status()
    assert(status == "done" or status == "failed", ("%s: job %d is %s after its queue closed"):format(where, i, status))
  end
  if reported then -- each failure nobody observed is one of the round's failed jobs, once
    local index, seen = {}, {}
    for i, job in ipairs(jobs) do index[job:id()] = i end
    for _, f in ipairs(reported) do
      local i = index[f.id]
      assert(i and jobs[i]:status() == "failed", ("%s: reported job #%d did not fail"):format(where, f.id))
      assert(not seen[f.id], ("%s: job #%d reported twice"):format(where, f.id))
      seen[f.id] = true
    end
  end
  assert(T.double_finishes() == 0, where .. ": a job finished twice")
end

describe("the queue's lifecycle under random stress", function()
  it("ends every job exactly once and frees every queue", function()
    for _ = 1, 3 do collectgarbage() end
    T.reset_counts()
    local live = T.live_queues()
    local seed0 = SEED or os.time() * 1000
    for r = 1, SEED and 1 or ROUNDS do
      local ok, err = pcall(round, seed0 + r - (SEED and 1 or 0))
      if not ok then error(("%s\n(replay with JQ_SEED=%d)"):format(tostring(err), seed0 + r - (SEED and 1 or 0)), 0) end
    end
    for _ = 1, 3 do collectgarbage() end
    assert.are.equal(live, T.live_queues())
  end)
end)
