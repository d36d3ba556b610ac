-- The acceptance programs of "why is my job graph slow": each runs a job
-- graph whose bottleneck is designed in, records it, and returns what the
-- program measured on its own clock (the monotonic clock, in microseconds
-- from just after profile_start), so that spec/reader/why_spec.lua can hold
-- the critical path and the replay to answers known by construction.
--
-- Jobs hold their worker with the testing build's sleep_us, so their
-- length is known and more workers really help on a small machine. Every
-- job body returns a record: its worker state's token (which worker ran
-- it), when its body began and ended, and the program's own marks.
local jobque = require "jobque"
local p = require "jobque_profile"
local core = require "jobque.core"
local reader = require "jobque_profile.reader"
local trace = require "jobque_profile.trace"
local S = require "support"

local M = {}

local now_ns = core.monotonic_ns

-- (Functions below run in worker states too: no upvalues but each other.)
-- The program's clock, in microseconds (a float).
local function clock()
  return require("jobque.core").monotonic_ns() / 1000
end

-- Holds the calling thread `us` microseconds.
local function hold(us)
  require("jobque.core")._test.sleep_us(us)
end

-- A token naming the lua_State that runs this (one per worker).
local function token()
  local r = debug.getregistry()
  r.why_token = r.why_token or tostring({})
  return r.why_token
end

-- A job that holds its worker `us` microseconds.
local function sleeper(us)
  local t0 = clock()
  hold(us)
  return {tok = token(), t0 = t0, t1 = clock()}
end

-- A link of a chain: awaits `prev` (a job, or nil) in its body, then holds
-- its worker `us`. wait0: when it reached the wait; wait1: when the wait
-- returned (the part after it is what no scheduling can shorten).
local function link(prev, us)
  local t0 = clock()
  if prev then prev:wait() end
  local t1 = clock()
  hold(us)
  return {tok = token(), t0 = t0, wait0 = t0, wait1 = t1, t1 = clock()}
end

M.clock, M.hold, M.token, M.sleeper, M.link = clock, hold, token, sleeper, link

--- The worst round trip of a job that holds its worker no time (submit,
-- run, wait; a sleeper's record copied back) on an idle queue, in
-- microseconds, measured now (each worker's first job included): the
-- allowance for what a replay keeps of a job besides its body (copies, a
-- slice's edges), at least 100.
function M.round_trip()
  local q <close> = jobque.new{workers = 2}
  local worst = 0
  for _ = 1, 20 do
    local t = now_ns()
    q:submit(sleeper, 0):wait()
    worst = math.max(worst, now_ns() - t)
  end
  return math.max(worst / 1000, 100)
end

--- Runs program(truth) in a fresh session; truth.t_start is the clock at the
-- session's start, and the program fills the rest. Returns truth (its times
-- shifted to the session: t_start 0, t_stop the clock at the stop), the
-- job_ops graph built from the saved trace (nil and, fourth, the error
-- when it cannot be built), the model, and fifth the trace's path.
function M.record(program)
  local rt = M.round_trip()
  p.profile_start(1 << 17)
  local truth = {t_start = clock()}
  local ok, err = pcall(program, truth)
  truth.t_stop = clock()
  p.profile_stop()
  assert(ok, err)
  truth.rt = rt
  M.shift(truth, truth.t_start)
  local _, _, path = S.save(p)
  local model = assert(trace.load(path))
  local built, ops = pcall(function() return reader.job_graph(model):ops(model) end)
  return truth, built and ops or nil, model, not built and ops or nil, path
end

-- Every field named t*, wait* or sub* in truth and its tables, made
-- relative to `t0` (each table once).
function M.shift(truth, t0)
  local seen = {}
  local function walk(t)
    if seen[t] then return end
    seen[t] = true
    for k, v in pairs(t) do
      if type(v) == "table" then
        walk(v)
      elseif type(k) == "string" and type(v) == "number" and k ~= "rt" and k ~= "id"
          and (k:match("^t") or k:match("^wait") or k:match("^sub")) then
        t[k] = v - t0
      end
    end
  end
  walk(truth)
end

-- Waits for each job of `jobs` in order and returns their records, with
-- each one's id as `id` and when the caller reached its wait as
-- `t_reached`.
local function collect(jobs)
  local out = {}
  for i, j in ipairs(jobs) do
    local reached = clock()
    out[i] = j:wait()
    out[i].id, out[i].t_reached = j:id(), reached
  end
  return out
end
M.collect = collect

--- A chain of `n` links (`link_us` each, each starting when the one
-- before it ended: `after`) hidden among `wide` jobs per link (`wide_us`
-- each) submitted before the links became ready: the chain waits for the
-- wide jobs at 2 workers, and with enough workers runs alone.
function M.chain_after(n, link_us, wide, wide_us)
  return function(t)
    local q <close> = jobque.new{workers = 2}
    local links, wides = {}, {}
    t.sub0 = clock()
    -- Every link after the first also waits for wides[1], submitted before
    -- the first link so that it starts first and ends long before it (a
    -- loaded machine once started a second worker 4 ms late, and a wide job
    -- submitted after the first link ended after it, rightly on the path).
    wides[1] = q:submit(sleeper, wide_us)
    links[1] = q:submit(sleeper, link_us)
    for k = 2, n do
      for _ = 1, wide do wides[#wides + 1] = q:submit(sleeper, wide_us) end
      -- (its first dependency the wide job that ended first: the chain is the second)
      links[k] = q:after({wides[1], links[k - 1]}, sleeper, link_us)
    end
    t.t_subs = clock()
    t.links = collect(links)
    t.t_waited = clock()
    t.wides = collect(wides)
  end
end

--- A chain of `n` links, each awaiting the one before it in its body,
-- submitted first, then `wide` jobs of `wide_us`: every link starts at
-- once and suspends, and resumes on the worker that started it.
function M.chain_await(n, link_us, wide, wide_us)
  return function(t)
    local q <close> = jobque.new{workers = 2}
    local links, wides = {}, {}
    t.sub0 = clock()
    for k = 1, n do links[k] = q:submit(link, links[k - 1], link_us) end
    for _ = 1, wide do wides[#wides + 1] = q:submit(sleeper, wide_us) end
    t.t_subs = clock()
    t.links = collect(links)
    t.t_waited = clock()
    t.wides = collect(wides)
  end
end

--- The chain of chain_await submitted interleaved: `wide` jobs, then a
-- link, `n` times. At 2 workers a link starts only after the one before
-- it ended (its await returns at once), so nothing but the awaits on
-- finished jobs ties the links together.
function M.chain_interleaved(n, link_us, wide, wide_us)
  return function(t)
    local q <close> = jobque.new{workers = 2}
    local links, wides, subs = {}, {}, {}
    for k = 1, n do
      for _ = 1, wide do wides[#wides + 1] = q:submit(sleeper, wide_us) end
      links[k] = q:submit(link, links[k - 1], link_us)
      subs[k] = clock()
    end
    t.t_subs = clock()
    t.links = collect(links)
    t.t_waited = clock()
    for k = 1, n do t.links[k].sub1 = subs[k] end
    t.sub0 = subs[1]
    t.wides = collect(wides)
  end
end

--- `n` links on one worker, each awaiting the one before it (finished:
-- one worker runs them in submit order), all submitted at once; then the
-- caller waits for the last, then for the others (finished too).
function M.finished_awaits(n, link_us)
  return function(t)
    local q <close> = jobque.new{workers = 1}
    local links, subs = {}, {}
    for k = 1, n do
      links[k] = q:submit(link, links[k - 1], link_us)
      subs[k] = clock()
    end
    t.sub0 = subs[1]
    local last = links[n]:wait()
    t.t_waited = clock()
    t.links = collect(links)
    t.links[n] = last
    last.id = links[n]:id()
    for k = 1, n do t.links[k].sub1 = subs[k] end
  end
end

--- A caller that prepares each job itself (`prep_us`, in a span
-- "prepare") and submits it (`job_us`), `n` times, then waits for them all
-- (wait_all), summarises (`sum_us`, in a span "summarise"), and collects
-- the results: the submit loop is the bottleneck, whatever the workers.
-- Beside it a job of another queue (`bg_us`, submitted first) that ends
-- after the wait_all and before the caller waits for it: the wait_all
-- waits for its own queue only.
function M.caller_bound(n, prep_us, job_us, bg_us, sum_us)
  local function in_span(name, us)
    return p.profile_span(name, function()
      local b = clock()
      hold(us)
      return clock() - b
    end)
  end
  return function(t)
    local q <close> = jobque.new{workers = 2, name = "loop"}
    local bg <close> = jobque.new{workers = 1, name = "beside"}
    local long = bg:submit(sleeper, bg_us)
    local jobs, preps = {}, {}
    for i = 1, n do
      local a = clock()
      local inner = in_span("prepare", prep_us)
      preps[i] = {outer = clock() - a, inner = inner}
      jobs[i] = q:submit(sleeper, job_us)
    end
    t.t_loop = clock()
    q:wait_all()
    t.t_all = clock()
    t.sum = in_span("summarise", sum_us)
    t.t_own = clock()
    t.long = long:wait()
    t.long.id, t.long.t_reached = long:id(), t.t_own
    t.jobs = collect(jobs)
    t.t_waited = clock()
    t.preps = preps
  end
end

--- Two queues whose worker lanes have the same names (the default,
-- "worker 0"), one worker each: a job of each (`a_us`, `b_us`), then the
-- caller waits for all of the first queue, then for the second's job.
function M.same_names(a_us, b_us)
  return function(t)
    local qa <close> = jobque.new{workers = 1}
    local qb <close> = jobque.new{workers = 1}
    local a = qa:submit(sleeper, a_us)
    local b = qb:submit(sleeper, b_us)
    t.sub1 = clock()
    qa:wait_all()
    t.t_all = clock()
    t.a, t.b = a:wait(), b:wait()
    t.a.id, t.b.id = a:id(), b:id()
    t.t_waited = clock()
  end
end

--- `frames` frames of four jobs on 4 workers: j1 (1 ms), j2 (2 ms), j3 (5
-- ms in even frames, 0.5 ms in odd ones) and a straggler s (3 ms), waited
-- for in that order, the straggler last. The caller does nothing else.
function M.frames(frames)
  return function(t)
    local q <close> = jobque.new{workers = 4}
    t.frames = {}
    for f = 1, frames do
      local fr = {t0 = clock()}
      local lens = {1000, 2000, f % 2 == 0 and 5000 or 500, 3000}
      local jobs = {}
      for i = 1, 4 do jobs[i] = q:submit(sleeper, lens[i]) end
      fr.t_submitted = clock()
      fr.jobs = {}
      for i = 1, 4 do
        local reached = clock()
        fr.jobs[i] = jobs[i]:wait()
        fr.jobs[i].id, fr.jobs[i].wait0 = jobs[i]:id(), reached
      end
      fr.t1 = clock()
      t.frames[f] = fr
    end
    t.t_waited = clock()
  end
end

--- A fan-in whose long child runs on its parent's worker (2 workers): a
-- blocker holds one worker 5 ms; the parent submits a long child (20 ms)
-- and a short one (2 ms) and awaits the short one, so its own worker takes
-- the long child; the short one runs when the blocker ends; the parent
-- could resume then, but its worker runs the long child. Then the parent
-- works 10 ms and awaits the long child.
function M.fan_in()
  return function(t)
    local q <close> = jobque.new{workers = 2}
    local blocker = q:submit(sleeper, 5000)
    local parent = q:submit(function(sleep, tok, clk)
      local r = {t0 = clk(), tok = tok()}
      local jq = require("jobque").current()
      local long = jq:submit(sleep, 20000)
      local short = jq:submit(sleep, 2000)
      r.sub1 = clk()
      r.short = short:wait()
      r.short.id = short:id()
      r.wait1 = clk()
      r.tok_resumed = tok()
      require("jobque.core")._test.sleep_us(10000)
      r.wait_long0 = clk()
      r.long = long:wait()
      r.long.id = long:id()
      r.t1 = clk()
      return r
    end, sleeper, token, clock)
    t.sub_parent = clock()
    t.blocker = blocker:wait()
    t.blocker.id = blocker:id()
    t.parent = parent:wait()
    t.parent.id = parent:id()
    t.t_waited = clock()
  end
end

--- A copy-heavy pipeline (2 workers): a job builds a big table and the
-- caller waits for it (its results decoded on the caller), then waits
-- for it again (decoded again, the job finished: t_dec0 .. t_dec1 is that
-- decode alone); then a job builds another and a second job awaits it
-- (decoded in that job; `waited`: the builder had not finished when it
-- looked), then waits for it again (in the job alone).
function M.copies(size)
  return function(t)
    local q <close> = jobque.new{workers = 2}
    local function build(n)
      local c = require "jobque.core"
      local t0 = c.monotonic_ns() / 1000
      local out = {}
      for i = 1, n do out[i] = {i, "item " .. i} end
      return out, t0, c.monotonic_ns() / 1000
    end
    local a0 = clock()
    local j1 = q:submit(build, size)
    local a1 = clock()
    local r1, t0, t1 = j1:wait()
    local a2 = clock()
    j1:wait()
    local a3 = clock()
    t.j1 = {id = j1:id(), t0 = t0, t1 = t1, n = #r1, sub0 = a0, sub1 = a1, wait1 = a2,
            t_dec0 = a2, t_dec1 = a3}
    r1 = nil -- luacheck: ignore (let it go before the next stage)
    local b0 = clock()
    local j2 = q:submit(build, size)
    local m = q:submit(function(job)
      local c = require "jobque.core"
      local m0 = c.monotonic_ns() / 1000
      local waited = job:status() ~= "done" -- (its copy out may still run)
      local r, s0, s1 = job:wait()
      local m1 = c.monotonic_ns() / 1000
      job:wait()
      local m2 = c.monotonic_ns() / 1000
      return {n = #r, waited = waited, t0 = m0, wait0 = m0, wait1 = m1, t_dec0 = m1, t_dec1 = m2, j2_t0 = s0,
              j2_t1 = s1, t1 = c.monotonic_ns() / 1000}
    end, j2)
    local b1 = clock()
    local rm = m:wait()
    local b2 = clock()
    rm.id, rm.sub0, rm.sub1, rm.t_waited = m:id(), b0, b1, b2
    t.j2 = {id = j2:id(), t0 = rm.j2_t0, t1 = rm.j2_t1}
    rm.j2_t0, rm.j2_t1 = nil, nil
    t.m = rm
    t.t_waited = b2
  end
end

--- A job blocked on another queue (2 workers): job j makes a queue
-- without workers, submits a job z to it (10 ms) and waits for it, which
-- runs z on j's worker thread while j's wait blocks it; then j works 2 ms.
function M.blocked()
  return function(t)
    local q <close> = jobque.new{workers = 2}
    t.sub0 = clock()
    local j = q:submit(function(sleep, hold_us)
      local c = require "jobque.core"
      local function now() return c.monotonic_ns() / 1000 end
      local r = {t0 = now()}
      local jq = require "jobque"
      local z <close> = jq.new{workers = 0}
      local zj = z:submit(sleep, 10000)
      r.sub1 = now()
      r.z = zj:wait()
      r.z.id = zj:id()
      r.wait1 = now()
      c._test.sleep_us(hold_us)
      r.t1 = now()
      return r
    end, sleeper, 2000)
    t.sub1 = clock()
    t.j = j:wait()
    t.j.id = j:id()
    t.t_waited = clock()
  end
end

return M
