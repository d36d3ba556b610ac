-- "Why is my job graph slow", answered on programs whose answer is known by
-- construction (spec/reader/why_programs.lua): each program's bottleneck
-- is designed in, its jobs hold their worker a known time (sleep_us), and
-- it measures itself on its own clock. Each block asserts the critical
-- path's jobs and the kinds of its steps (ops:critical_path()) and the
-- replay's prediction for unlimited workers (ops:whatif().span_us),
-- against what the program measured. No assertion is on speed: a bound
-- is the program's own measurement, widened by `rt`, the worst round trip
-- of a job like the programs' that holds its worker no time, measured just
-- before (what a job costs besides its body: copies, a slice's edges, a
-- wake-up).
local W = require "reader.why_programs"
local core = require "jobque.core"

-- The kinds of the path's steps, exactly these strings.
local KINDS = {
  ["run"] = true, ["copy in"] = true, ["copy out"] = true, ["copy result"] = true,
  ["submit"] = true, ["caller"] = true, ["job on caller"] = true, ["ready latency"] = true,
  ["scheduling delay"] = true, ["worker busy"] = true, ["resume latency"] = true,
  ["blocked"] = true,
}

-- Microseconds of rounding a step may carry (times are nanoseconds in
-- the graph, microseconds on the program's clock).
local EPS = 1

-- Records `program` once per block; returns a function giving the truth,
-- the path and (when asked) the replay (failing with the builder's error
-- when the graph cannot be built), and a function that declares a spec of the
-- block: when it fails, the trace is kept in /tmp and the failure says
-- where (a failure on a loaded machine is worth reading again).
local kept = 0
local function once(program)
  local truth, ops, model, err, file
  local function get(replay)
    if not truth then truth, ops, model, err, file = W.record(program) end
    assert(ops, err)
    return truth, ops:critical_path(), replay and ops:whatif() or nil, model
  end
  local function spec(name, body)
    it(name, function()
      local ok, failure = pcall(body)
      if ok then return end
      if file then
        kept = kept + 1
        local copy = ("/tmp/why_spec-%d-%d.json"):format(os.time(), kept)
        os.execute(("cp '%s' '%s'"):format(file, copy))
        failure = tostring(failure) .. "\n(the trace is kept at " .. copy .. ")"
      end
      error(failure, 0)
    end)
  end
  return get, spec
end

local function between(x, lo, hi, what)
  assert(type(x) == "number", what .. ": not a number: " .. tostring(x))
  assert(x >= lo and x <= hi, ("%s: %.1f us, expected %.1f .. %.1f us"):format(what, x, lo, hi))
end

-- The sum of the durations of the steps of `kind` that satisfy pred(step).
local function kind_us(path, kind, pred)
  local us = 0
  for _, s in ipairs(path.steps) do
    if s.kind == kind and (not pred or pred(s)) then us = us + s.dur_us end
  end
  return us
end

local function steps_of(path, kind)
  local out = {}
  for _, s in ipairs(path.steps) do
    if s.kind == kind then out[#out + 1] = s end
  end
  return out
end

local function of_job(id) return function(s) return s.job == id end end

-- The kinds the path's steps have, as a set, and a text listing them.
local function kinds(path)
  local set, text = {}, {}
  for _, s in ipairs(path.steps) do
    if not set[s.kind] then text[#text + 1] = s.kind end
    set[s.kind] = true
  end
  return set, table.concat(text, ", ")
end

-- What the contract says of every path: steps of the known kinds, in time
-- order, not overlapping, adding up to its duration; by_kind their sums,
-- most first, ties by kind name; not partial (no event was lost).
local function check_path(path)
  assert.is_table(path, "a path")
  assert.is_false(path.partial, path.partial_why)
  local sum, at = 0, path.start_us
  for i, s in ipairs(path.steps) do
    assert(KINDS[s.kind], ("step %d: %s is no kind of the contract"):format(i, tostring(s.kind)))
    assert(s.dur_us >= 0, "step " .. i .. " lasts less than nothing")
    assert(s.start_us >= at - EPS, ("step %d (%s) starts at %.1f, before %.1f"):format(i, s.kind, s.start_us, at))
    at = s.start_us + s.dur_us
    sum = sum + s.dur_us
  end
  between(sum, path.duration_us - EPS * #path.steps, path.duration_us + EPS * #path.steps,
          "the steps add up to the duration")
  between(path.finish_us - path.start_us, path.duration_us - EPS, path.duration_us + EPS,
          "the path's start to its finish")
  local seen = {}
  for i, row in ipairs(path.by_kind) do
    assert.is_nil(seen[row.kind], "by_kind lists " .. row.kind .. " twice")
    seen[row.kind] = true
    between(row.us, kind_us(path, row.kind) - EPS * #path.steps,
            kind_us(path, row.kind) + EPS * #path.steps, "by_kind " .. row.kind)
    local prev = path.by_kind[i - 1]
    if prev then
      assert(prev.us > row.us or (prev.us == row.us and prev.kind < row.kind),
             "by_kind is most first, ties by name: " .. prev.kind .. " before " .. row.kind)
    end
  end
  for _, s in ipairs(path.steps) do assert(seen[s.kind], "by_kind lacks " .. s.kind) end
end

-- What the contract says of every replay here: not partial (nothing was
-- lost, and every wait can be satisfied), the recorded run as the program
-- measured it, and unlimited workers never slower than the recorded run
-- (no job of these programs waited for anything but a worker or its
-- inputs).
local function check_replay(replay, workers, truth)
  if replay.partial then
    local text = {}
    for _, pr in ipairs(replay.predictions) do text[#text + 1] = pr.workers .. ": " .. pr.predicted_us end
    error("the replay is partial (nothing was lost): " .. table.concat(text, ", "), 2)
  end
  assert.are.equal(workers, replay.recorded_workers)
  between(replay.recorded_us, truth.t_stop - EPS, truth.t_stop + truth.rt, "recorded_us (the session)")
  assert(replay.span_us <= replay.recorded_us + EPS,
         ("unlimited workers predict %.1f us, beyond the recorded %.1f us"):format(replay.span_us,
                                                                                   replay.recorded_us))
end

-- The kinds every path here may have: no job runs on the caller's thread
-- and no wait's target was lost (so nothing is "blocked").
local BASE = {"caller", "submit", "scheduling delay", "ready latency", "copy in", "run", "copy out",
              "copy result", "resume latency"}

-- The path's kinds are among BASE and `more`, and include each of `needed`.
local function kinds_are(path, more, needed)
  local set, text = kinds(path)
  local ok = {}
  for _, k in ipairs(BASE) do ok[k] = true end
  for _, k in ipairs(more or {}) do ok[k] = true end
  for k in pairs(set) do assert(ok[k], "no " .. k .. " on this path: " .. text) end
  for _, k in ipairs(needed) do assert(set[k], "a " .. k .. " step on this path: " .. text) end
end

local function ids(list, from, to)
  local out = {}
  for k = from or 1, to or #list do out[#out + 1] = list[k].id end
  return out
end

-- The path's jobs are `expected`; else the failure lists both and what
-- the program measured (`records`: job records with id, t0, t1 and the
-- wait times where the job waited).
local function same_jobs(expected, got, records)
  if table.concat(expected, " ") == table.concat(got, " ") then return end
  local lines = {("the path's jobs: %s\nexpected:         %s\nmeasured (us from the session's start):")
                   :format(table.concat(got, " "), table.concat(expected, " "))}
  for _, r in ipairs(records) do
    lines[#lines + 1] = ("  job %d: body %.1f .. %.1f%s"):format(r.id, r.t0, r.t1,
      r.wait0 and ("; its wait %.1f .. %s"):format(r.wait0, r.wait1 and ("%.1f"):format(r.wait1) or "?") or "")
  end
  error(table.concat(lines, "\n"), 2)
end

-- The first link of a chain's tail that the walk visits, by its rule on
-- the program's clock: back from the last link, the link before it is on
-- the path when the last one reached its wait before that one ended (the
-- wait waited: its end is the latest predecessor), else the path leaves
-- the chain at this link's start.
local function chain_from(links)
  local k = #links
  while k > 1 and links[k].wait0 < links[k - 1].t1 do k = k - 1 end
  return k
end

-- Each visited link's run on the path is the part of its body after its
-- wait (the whole body for the first visited), give or take rt.
local function check_link_runs(path, links, from, rt)
  for k = from, #links do
    local l = links[k]
    local body = l.t1 - ((k ~= from and l.wait1) or l.t0)
    -- (above: the OS may preempt the worker between the body's last clock
    -- reading and the slice's end; the slice, rightly, holds that time)
    between(kind_us(path, "run", of_job(l.id)), body - rt, body + rt + body / 5, "link " .. k .. "'s run on the path")
  end
end

-- The program ran as designed: its chain's last link ended after every
-- wide job (else the walk rightly ends at a wide job; only a very loaded
-- machine stretches the wide jobs that far).
local function chain_ended_last(t)
  local last = t.links[#t.links]
  for _, w in ipairs(t.wides) do
    assert(w.t1 < last.t1, ("the program did not run as designed: wide job %d ended at %.1f us, after the "
                            .. "chain's last link (%.1f us)"):format(w.id, w.t1, last.t1))
  end
end

-- Sum of the links' parts after their waits: what no schedule shortens.
local function after_waits(links)
  local us = 0
  for _, l in ipairs(links) do us = us + (l.t1 - (l.wait1 or l.t0)) end
  return us
end

-- The replay's work is at least what the program measured of it (the
-- jobs' bodies, the parts after their waits, and `own`: the caller's own
-- work), and no number of workers does the jobs' part faster than they can
-- share it: the prediction for w workers is at least that over w, for w =
-- 1 and 2.
local function check_shared_work(replay, own, ...)
  local work = 0
  for _, records in ipairs({...}) do work = work + after_waits(records) end
  assert(replay.work_us >= work + own - EPS,
         ("work_us %.1f us, the measured work %.1f us"):format(replay.work_us, work + own))
  local seen = 0
  for _, pr in ipairs(replay.predictions) do
    if pr.workers == 1 or pr.workers == 2 then
      seen = seen + 1
      assert(pr.predicted_us >= math.max(own, work / pr.workers) - EPS,
             ("%d workers predicted %.1f us for %.1f us of measured work"):format(pr.workers, pr.predicted_us, work))
    end
  end
  assert.are.equal(2, seen, "predictions for 1 and 2 workers")
end

-- Replayed on the workers it was recorded with, under the queue's own
-- rules and without the recording's waits for the OS, a run takes no
-- longer than it did (give or take `slack`).
local function check_recorded_workers(replay, workers, slack)
  for _, pr in ipairs(replay.predictions) do
    if pr.workers == workers then
      assert(pr.predicted_us <= replay.recorded_us + slack,
             ("%d workers (as recorded) predicted %.1f us; the recorded run took %.1f us")
               :format(workers, pr.predicted_us, replay.recorded_us))
      return
    end
  end
  error("no prediction for " .. workers .. " workers")
end

-- The replay's span for a chain among wide jobs: the chain from `start`
-- (when its first link could start), its links' parts after their waits
-- and the caller's tail, give or take what a job costs besides its body;
-- unless a wide job alone lasted longer (a loaded machine can stall a
-- sleep by tens of ms: unlimited workers run it beside the chain, from
-- its submit, between the first submit and the end of the submits).
local function check_chain_span(t, start, span)
  local tail = t.t_stop - t.t_waited
  local lo = start + after_waits(t.links) + tail
  local hi = lo + (#t.links + 3) * t.rt
  local widest = 0
  for _, w in ipairs(t.wides) do widest = math.max(widest, w.t1 - w.t0) end
  lo = math.max(lo, widest + tail)
  hi = math.max(hi, t.t_subs + widest + tail + 3 * t.rt)
  between(span, lo, hi, "span_us")
end

describe("sleep_us", function()
  it("holds the calling thread at least that long, a worker's too, and refuses what is out of range", function()
    local T = core._test
    local t = core.monotonic_ns()
    T.sleep_us(3000)
    assert.is_true(core.monotonic_ns() - t >= 3000000)
    local jobque = require "jobque"
    jobque.with_job_que({workers = 1}, function(q)
      local held = q:submit(function()
        local c = require "jobque.core"
        local t0 = c.monotonic_ns()
        c._test.sleep_us(2000)
        return c.monotonic_ns() - t0
      end):wait()
      assert.is_true(held >= 2000000)
    end)
    assert.matches("0 to 60000000 microseconds", select(2, pcall(T.sleep_us, -1)))
    assert.matches("0 to 60000000 microseconds", select(2, pcall(T.sleep_us, 60000001)))
  end)
end)

describe("a chain written with after, hidden among wide jobs (2 workers)", function()
  local N = 10
  local get, spec = once(W.chain_after(N, 5000, 5, 2000))

  spec("walks the whole chain, each link's run its body, the wait for workers as ready latency", function()
    local t, path = get()
    check_path(path)
    chain_ended_last(t)
    same_jobs(ids(t.links), path.jobs, t.links)
    check_link_runs(path, t.links, 1, t.rt)
    kinds_are(path, {}, {"submit", "run", "ready latency"})
    -- Between two links: copy out, the wait for a worker, copy in.
    local gaps, widest = 0, 0
    for k = 2, N do
      local gap = t.links[k].t0 - t.links[k - 1].t1
      gaps, widest = gaps + gap, math.max(widest, gap)
    end
    -- (and the first link's, from its submit)
    local waited = kind_us(path, "ready latency") + kind_us(path, "scheduling delay")
    between(waited, gaps - N * t.rt, gaps + t.links[1].t0 - t.sub0, "the links' waits for a worker")
    assert(kind_us(path, "ready latency") >= widest / 2,
           ("the wide jobs held both workers %.1f us while a link was ready: ready latency %.1f us")
             :format(widest, kind_us(path, "ready latency")))
  end)

  spec("predicts the chain for unlimited workers, not the recorded run", function()
    local t, _, replay = get(true)
    check_replay(replay, 2, t)
    chain_ended_last(t)
    check_chain_span(t, t.sub0, replay.span_us)
    check_shared_work(replay, 0, t.links, t.wides)
    check_recorded_workers(replay, 2, #t.links * t.rt)
  end)
end)

describe("a chain of awaits submitted first, wide jobs after (2 workers)", function()
  local N = 10
  local get, spec = once(W.chain_await(N, 5000, 12, 2000))

  spec("walks the chain through its awaits and names the job that held a link's worker", function()
    local t, path = get()
    check_path(path)
    chain_ended_last(t)
    local from = chain_from(t.links)
    same_jobs(ids(t.links, from), path.jobs, t.links)
    check_link_runs(path, t.links, from, t.rt)
    kinds_are(path, {"worker busy"}, {"submit", "run", "resume latency"})
    -- A link resumes on the worker that started it: when the link before
    -- it ended while a wide job ran there, a wide job held it. (The body's
    -- clock ends before the link's copy out, which a slow build stretches:
    -- the one holding the worker at the link's very end may be the next
    -- wide job there, so any wide job on that worker between the link's
    -- body end and the next link's body start may be the one named.)
    local wide_ids = {}
    for _, w in ipairs(t.wides) do wide_ids[w.id] = true end
    for k = from + 1, N do
      local held, named = {}, false
      for _, w in ipairs(t.wides) do
        if w.tok == t.links[k].tok and w.t0 < t.links[k].t0 and w.t1 > t.links[k - 1].t1 then
          held[#held + 1] = w.id
        end
      end
      for _, s in ipairs(steps_of(path, "worker busy")) do
        for _, id in ipairs(held) do named = named or s.held_by == id end
      end
      assert(#held == 0 or named, ("wide jobs %s held link %d's worker after link %d's end: no worker busy names one")
                                    :format(table.concat(held, ", "), k, k - 1))
    end
    for _, s in ipairs(steps_of(path, "worker busy")) do
      assert(wide_ids[s.held_by], "worker busy held by " .. tostring(s.held_by) .. ", no wide job")
    end
  end)

  spec("predicts the chain's length for unlimited workers", function()
    local t, _, replay = get(true)
    check_replay(replay, 2, t)
    chain_ended_last(t)
    check_chain_span(t, t.sub0, replay.span_us)
    check_shared_work(replay, 0, t.links, t.wides)
    check_recorded_workers(replay, 2, #t.links * t.rt)
  end)
end)

describe("a chain of awaits interleaved with wide jobs (2 workers)", function()
  local N = 10
  local get, spec = once(W.chain_interleaved(N, 5000, 5, 2000))

  spec("leaves the chain where a link found the one before it finished: it waited for a worker", function()
    local t, path = get()
    check_path(path)
    chain_ended_last(t)
    local from = chain_from(t.links)
    same_jobs(ids(t.links, from), path.jobs, t.links)
    check_link_runs(path, t.links, from, t.rt)
    kinds_are(path, {}, {"submit", "run", "ready latency"})
    local first = t.links[from]
    assert(kind_us(path, "ready latency") >= (first.t0 - first.sub1) / 2,
           ("link %d was ready %.1f us before it started: ready latency %.1f us")
             :format(from, first.t0 - first.sub1, kind_us(path, "ready latency")))
  end)

  spec("predicts the chain for unlimited workers: awaits on finished jobs still tie it", function()
    local t, _, replay = get(true)
    check_replay(replay, 2, t)
    chain_ended_last(t)
    check_chain_span(t, t.links[1].sub1, replay.span_us)
    check_shared_work(replay, 0, t.links, t.wides)
    check_recorded_workers(replay, 2, #t.links * t.rt)
  end)
end)

describe("awaits on jobs already finished (1 worker)", function()
  local N = 6
  local get, spec = once(W.finished_awaits(N, 5000))

  spec("ends at the last job, which waited for the worker, not for the jobs it awaited", function()
    local t, path = get()
    check_path(path)
    for k = 2, N do
      assert(t.links[k].wait0 >= t.links[k - 1].t1, "one worker: link " .. k .. "'s wait found it finished")
    end
    same_jobs({t.links[N].id}, path.jobs, t.links)
    check_link_runs(path, t.links, N, t.rt)
    kinds_are(path, {}, {"submit", "run", "ready latency", "copy result"})
    local last = t.links[N]
    between(kind_us(path, "ready latency") + kind_us(path, "scheduling delay"),
            last.t0 - last.sub1 - 2 * t.rt, last.t0 - last.sub1, "the last job's wait for the worker")
  end)

  spec("predicts the chain for unlimited workers from the waits on finished jobs", function()
    local t, _, replay = get(true)
    check_replay(replay, 1, t)
    local lo = t.links[1].sub1 + after_waits(t.links) + (t.t_stop - t.t_waited)
    between(replay.span_us, lo, lo + (N + 3) * t.rt, "span_us")
    check_shared_work(replay, 0, t.links)
  end)
end)

describe("a caller-bound submit loop, a job of another queue beside it (2 + 1 workers)", function()
  local N = 60
  local get, spec = once(W.caller_bound(N, 800, 300, 80000, 60000))

  -- The program ran as designed: the other queue's job ended after the
  -- caller's wait_all and before the caller waited for it.
  local function as_designed(t)
    assert(t.long.t1 > t.t_all and t.long.t1 < t.t_own,
           ("the program did not run as designed: the other queue's job ended at %.1f us, not between the "
            .. "wait_all's end (%.1f us) and the caller's wait for it (%.1f us)"):format(t.long.t1, t.t_all, t.t_own))
  end

  spec("runs through the caller's own work, by its spans' categories, and every submit", function()
    local t, path = get()
    check_path(path)
    as_designed(t)
    -- From the caller's end: its summary, then its wait_all for its queue:
    -- the walk goes to the job of that queue that ended last (the last one,
    -- unless the machine held one before it back).
    local k = N
    for i = 1, N do
      if t.jobs[i].t1 > t.jobs[k].t1 then k = i end
    end
    same_jobs({t.jobs[k].id}, path.jobs, {t.jobs[N - 1], t.jobs[N], t.long})
    local inner, outer = 0, 0 -- (the preparations up to the visited job's submit)
    for i = 1, k do inner, outer = inner + t.preps[i].inner, outer + t.preps[i].outer end
    local function named(cat) return function(s) return s.category == cat end end
    between(kind_us(path, "caller", named("prepare")), inner - N * EPS, outer + N * EPS,
            "the caller's prepare spans on the path")
    between(kind_us(path, "caller", named("summarise")), t.sum - EPS, t.t_own - t.t_all + EPS,
            "the caller's summary on the path")
    assert.are.equal(k + 1, #steps_of(path, "submit"), "the caller's submits up to the visited job's")
    kinds_are(path, {}, {"caller", "submit", "run"})
    local last = t.jobs[k]
    between(kind_us(path, "run"), last.t1 - last.t0 - t.rt, last.t1 - last.t0 + t.rt, "the last job's run")
  end)

  spec("predicts the caller's pace for unlimited workers, the wait_all for its own queue", function()
    local t, _, replay = get(true)
    check_replay(replay, 3, t)
    as_designed(t)
    -- The caller's pace is kept: the last submit ends at t_loop, and the
    -- jobs, each submitted by then, run their bodies; what the caller did
    -- after its wait_all takes what it took (the other queue's job ended
    -- before the caller waited for it, in the replay too).
    local last, longest = t.jobs[N], 0
    for _, j in ipairs(t.jobs) do longest = math.max(longest, j.t1 - j.t0) end
    local after = t.t_stop - t.t_all
    -- (t_loop is read a little after the last submit's end: the call's
    -- return, the clock; an instrumented build stretches that)
    between(replay.span_us, t.t_loop + (last.t1 - last.t0) + after - t.rt, t.t_loop + longest + after + 3 * t.rt,
            "span_us")
    local own = t.sum
    for _, pr in ipairs(t.preps) do own = own + pr.inner end
    check_shared_work(replay, own, t.jobs)
  end)
end)

describe("two queues whose worker lanes have the same names (1 + 1 workers)", function()
  local get, spec = once(W.same_names(10000, 4000))

  spec("follows the wait for all of the first queue to its job", function()
    local t, path = get()
    check_path(path)
    assert(t.a.t1 > t.b.t1, "the program did not run as designed: the first queue's job ended first")
    same_jobs({t.a.id}, path.jobs, {t.a, t.b})
    between(kind_us(path, "run"), t.a.t1 - t.a.t0 - t.rt, t.a.t1 - t.a.t0 + t.rt, "the job's run")
  end)

  spec("predicts the first queue's job for unlimited workers", function()
    local t, _, replay = get(true)
    check_replay(replay, 2, t)
    local lo = t.a.t1 - t.a.t0 + (t.t_stop - t.t_all)
    between(replay.span_us, lo, t.sub1 + lo + 2 * t.rt, "span_us")
  end)
end)

describe("a frame loop waiting for its straggler last (4 workers)", function()
  local F = 16
  local get, spec = once(W.frames(F))

  -- The jobs the walk may visit in frame fr: back from the last wait, the
  -- first job that ended after the caller reached its wait, and any before
  -- it whose body ended within a round trip of that wait (its end, after
  -- its copy out, is on either side of the wait's start), by id.
  local function visited(fr, rt)
    local may = {}
    for i = 4, 1, -1 do
      local j = fr.jobs[i]
      if j.t1 > j.wait0 - rt then may[j.id] = j end
      if j.t1 > j.wait0 + rt then return may end
    end
    return next(may) and may or nil
  end

  spec("visits the job that finished last in each frame, and the caller's waits are not its work", function()
    local t, path = get()
    check_path(path)
    local expected, bodies, submitting = {}, 0, 0
    for f, fr in ipairs(t.frames) do
      local may = visited(fr, t.rt)
      assert(may, "frame " .. f .. ": every job had ended before the caller waited for it")
      local j = may[path.jobs[f]] -- the path's, when it is one the frame allows
      if not j then for _, x in pairs(may) do if not j or x.id > j.id then j = x end end end
      expected[#expected + 1] = j.id
      bodies = bodies + (j.t1 - j.t0)
      submitting = submitting + (fr.t_submitted - fr.t0)
    end
    local all = {}
    for _, fr in ipairs(t.frames) do
      for _, j in ipairs(fr.jobs) do all[#all + 1] = j end
    end
    same_jobs(expected, path.jobs, all)
    -- Four workers, at most four jobs at a time: a job never waits with
    -- every worker of its queue taken.
    kinds_are(path, {}, {"submit", "run", "resume latency", "copy result"})
    assert.are.equal(0, kind_us(path, "ready latency"), "ready latency with a worker free")
    between(kind_us(path, "run"), bodies - F * EPS, bodies + F * t.rt, "the visited jobs' runs")
    -- The caller does nothing but submit and wait: its own work on the
    -- path is at most its submit loops' time, before the first frame (the
    -- queue's start) and after the last (its close).
    local own = kind_us(path, "caller")
    local outside = t.frames[1].t0 + (t.t_stop - t.t_waited)
    assert(own <= submitting + outside + F * t.rt / 4,
           ("caller %.1f us on the path; the caller's submit loops took %.1f us, and %.1f us outside the frames")
             :format(own, submitting, outside))
  end)

  spec("predicts the frames for unlimited workers", function()
    local t, _, replay = get(true)
    check_replay(replay, 4, t)
    local bodies = 0
    for _, fr in ipairs(t.frames) do
      local may = visited(fr, 0) -- the one job that ended after its wait began
      local j = may and select(2, next(may))
      bodies = bodies + (j and j.t1 - j.t0 or 0)
    end
    local tail = t.t_stop - t.t_waited
    between(replay.span_us, t.frames[1].t0 + bodies + tail, t.t_waited + tail + t.rt, "span_us")
    local jobs = {}
    for _, fr in ipairs(t.frames) do
      for _, j in ipairs(fr.jobs) do jobs[#jobs + 1] = j end
    end
    check_shared_work(replay, 0, jobs)
  end)
end)

describe("a fan-in whose long child runs on its parent's worker (2 workers)", function()
  local get, spec = once(W.fan_in())

  spec("names the long child as what held the parent's worker", function()
    local t, path = get()
    check_path(path)
    local pa = t.parent
    assert.are.equal(pa.tok, pa.long.tok, "the long child ran on the parent's worker")
    assert.are.equal(t.blocker.tok, pa.short.tok, "the short child ran on the blocker's worker")
    same_jobs({pa.id, pa.short.id, pa.id}, path.jobs, {pa, pa.short, pa.long, t.blocker})
    kinds_are(path, {"worker busy"}, {"submit", "run", "ready latency", "worker busy"})
    local busy = steps_of(path, "worker busy")
    assert.are.equal(1, #busy, "one worker busy step")
    assert.are.equal(pa.long.id, busy[1].held_by)
    between(busy[1].dur_us, pa.long.t1 - pa.short.t1 - 2 * t.rt, pa.wait1 - pa.short.t1 + EPS,
            "the parent's worker busy")
    -- The short child was ready from its submit; both workers were taken.
    assert(kind_us(path, "ready latency") >= pa.short.t0 - pa.sub1 - 2 * t.rt,
           "the short child's wait for a worker")
    between(kind_us(path, "run", of_job(pa.id)), pa.wait_long0 - pa.wait1 - EPS,
            pa.t1 - pa.wait1 + (pa.sub1 - pa.t0) + 2 * t.rt, "the parent's run on the path")
  end)

  spec("predicts the long child's length for unlimited workers", function()
    local t, _, replay = get(true)
    check_replay(replay, 2, t)
    local pa = t.parent
    local lo = t.sub_parent + (pa.long.t1 - pa.long.t0) + (t.t_stop - t.t_waited)
    -- (beside the parent's first slice: its copies, the long child's and
    -- the caller's submit and decode)
    between(replay.span_us, lo, lo + (pa.sub1 - pa.t0) + 6 * t.rt, "span_us")
    check_recorded_workers(replay, 2, 4 * t.rt)
  end)
end)

describe("copy-heavy stages: results decoded on the caller and in a job (2 workers)", function()
  local get, spec = once(W.copies(5000))

  spec("files the decodes as copy result, wherever they ran, not as the caller's work or run", function()
    local t, path = get()
    check_path(path)
    local j1, j2, m = t.j1, t.j2, t.m
    -- The decoding job's wait went on from the second builder's end only
    -- if it waited (else the path reaches it through its own start: the
    -- machine gave it a worker only once that builder had finished).
    local builders = m.waited and {j1, j2} or {j1}
    same_jobs(m.waited and {j1.id, j2.id, m.id} or {j1.id, m.id}, path.jobs, {j1, j2, m})
    kinds_are(path, {}, {"copy out", "copy result", "run"})
    local on_caller, in_job = {}, {}
    for _, s in ipairs(steps_of(path, "copy result")) do
      if s.lane == "caller" then on_caller[#on_caller + 1] = s else in_job[#in_job + 1] = s end
    end
    -- The caller decodes the first builder's results twice (the second
    -- time alone, measured), then the decoding job's small ones; the job
    -- decodes the second builder's results twice, the second time alone.
    assert.are.equal(3, #on_caller, "the caller's copy results")
    assert.are.equal(2, #in_job, "the job's copy results")
    for i, s in ipairs(on_caller) do
      local within = i == 1 and j1.wait1 - j1.sub1 or i == 2 and j1.t_dec1 - j1.t_dec0 or m.t_waited - m.sub1
      assert(s.dur_us > 0 and s.dur_us <= within + EPS, "the caller's decode " .. i .. ", within its wait")
    end
    for i, s in ipairs(in_job) do
      assert.are.equal("worker", s.lane:match("^worker"))
      local within = i == 1 and m.wait1 - m.wait0 or m.t_dec1 - m.t_dec0
      assert(s.dur_us > 0 and s.dur_us <= within + EPS, "the job's decode " .. i .. ", within its wait")
    end
    between(on_caller[2].dur_us, j1.t_dec1 - j1.t_dec0 - t.rt, j1.t_dec1 - j1.t_dec0 + EPS,
            "the caller's decode of a finished job")
    between(in_job[2].dur_us, m.t_dec1 - m.t_dec0 - t.rt, m.t_dec1 - m.t_dec0 + EPS,
            "the job's decode of a finished job")
    local m_own = (m.t1 - m.t0) - (m.t_dec1 - m.wait0)
    assert(kind_us(path, "run", of_job(m.id)) <= m_own + 2 * t.rt, "the decoding job's run is its own")
    for _, j in ipairs(builders) do
      between(kind_us(path, "run", of_job(j.id)), j.t1 - j.t0 - EPS, j.t1 - j.t0 + t.rt, "a builder's run")
    end
    local own = j1.sub0 + (m.sub0 - j1.t_dec1) + (t.t_stop - t.t_waited)
    assert(kind_us(path, "caller") <= own + 3 * t.rt,
           ("caller %.1f us on the path; the caller's own time was %.1f us"):format(kind_us(path, "caller"), own))
    -- From the first builder's end to the caller's first decode's end: its
    -- copy out, the caller's wake-up, its copy result.
    local copies = kind_us(path, "copy out", of_job(j1.id)) + on_caller[1].dur_us
    local waits = kind_us(path, "resume latency") + kind_us(path, "scheduling delay")
    assert(copies >= j1.wait1 - j1.t1 - waits - 2 * t.rt, "the first stage's copies")
  end)

  spec("predicts the stages with their copies for unlimited workers", function()
    local t, _, replay = get(true)
    check_replay(replay, 2, t)
    local j1, j2, m = t.j1, t.j2, t.m
    local tail = t.t_stop - t.t_waited
    local measured = j1.sub0 + (j1.t1 - j1.t0) + (j1.t_dec1 - j1.t_dec0) + (j2.t1 - j2.t0)
                     + (m.t_dec1 - m.t_dec0) + tail
    between(replay.span_us, measured, t.t_waited + tail + t.rt, "span_us")
  end)
end)

describe("a job blocked on another queue's job (2 workers)", function()
  local get, spec = once(W.blocked())

  spec("visits the job it waited for, and the blocked time is not its run", function()
    local t, path = get()
    check_path(path)
    local j, z = t.j, t.j.z
    same_jobs({j.id, z.id, j.id}, path.jobs, {j, z})
    kinds_are(path, {}, {"submit", "run"})
    local own = (j.t1 - j.t0) - (j.wait1 - j.sub1)
    assert(kind_us(path, "run", of_job(j.id)) <= own + 2 * t.rt,
           ("the blocked job's run %.1f us; its own work %.1f us"):format(kind_us(path, "run", of_job(j.id)), own))
    assert(kind_us(path, "run", of_job(z.id)) >= z.t1 - z.t0 - EPS, "the awaited job's run")
  end)

  spec("predicts the run for unlimited workers, a job holding its worker while it waits", function()
    local t, _, replay = get(true)
    check_replay(replay, 2, t)
    local j, z = t.j, t.j.z
    local tail = t.t_stop - t.t_waited
    between(replay.span_us, t.sub0 + (z.t1 - z.t0) + (j.t1 - j.wait1) + tail, t.t_waited + tail + t.rt,
            "span_us")
  end)
end)
