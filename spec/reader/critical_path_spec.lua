-- The critical path's walk (ops:critical_path(), src/reader/ops_path.c) on
-- happens-before graphs made by hand with reader.job_ops{...}: each graph's
-- path, its steps and their kinds are worked out by hand in the comments
-- (times in microseconds; lanes 1 caller, 2 worker 0, 3 worker 1).
local R = require "jobque_profile.reader"

local LANES = {"caller", "worker 0", "worker 1"}

-- A step as one line: "kind start+dur lane job category held_by".
local function rows(cp)
  local out = {}
  for _, s in ipairs(cp.steps) do
    out[#out + 1] = ("%s %s+%s %s %s %s %s"):format(s.kind, s.start_us, s.dur_us, s.lane or "-", s.job or "-",
      s.category or "-", s.held_by or "-")
  end
  return out
end

local function kinds(cp)
  local out = {}
  for _, k in ipairs(cp.by_kind) do out[#out + 1] = k.kind .. "=" .. k.us end
  return out
end

-- The steps follow one another from start_us and add up to duration_us.
local function assert_back_to_back(cp)
  local t = cp.start_us
  for _, s in ipairs(cp.steps) do
    assert.equal(t, s.start_us)
    assert.is_true(s.dur_us > 0)
    t = t + s.dur_us
  end
  assert.equal(cp.finish_us, t)
  assert.equal(cp.duration_us, cp.finish_us - cp.start_us)
end

local function path(t)
  t.lanes = t.lanes or LANES
  local cp = R.job_ops(t):critical_path()
  assert_back_to_back(cp)
  return cp
end

describe("the critical path of a hand-made graph", function()
  it("is nil without jobs", function()
    assert.is_nil(R.job_ops{stop = 10, lanes = LANES, execs = {
      {thread = true, caller = true, lane = 1, ops = {{"own", 0, 10, lane = 1}}}}}:critical_path())
  end)

  -- A frame: the caller submits A (0..1) and B (1..2), works 2..3, waits for
  -- A (blocked 3..20), then for B, its straggler waited last, which had
  -- ended at 10, and works 20..25. Back from the caller's end: its work,
  -- then the latest-finishing of what it waited for: A at 20 (not B, the
  -- last it waited for); A's run 1..20, from its submit's end; the submit.
  it("goes to the latest-finishing predecessor, not the last wait", function()
    local cp = path{stop = 25, queues = {2}, execs = {
      {thread = true, caller = true, lane = 1, ops = {
        {"submit", 0, 1, lane = 1, job = 2}, {"submit", 1, 2, lane = 1, job = 3}, {"own", 2, 3, lane = 1},
        {"block", 3, 20, lane = 1, job = 2}, {"wait", 20, job = 2}, {"wait", 20, job = 3},
        {"own", 20, 25, lane = 1, cat = "frame"}}},
      {job = 1, queue = 1, lane = 2, cat = "a", sub = {1, 1}, ops = {{"run", 1, 20, lane = 2}}},
      {job = 2, queue = 1, lane = 3, cat = "b", sub = {1, 2}, ops = {{"run", 2, 10, lane = 3}}}}}
    assert.same({"submit 0+1 caller 1 - -", "run 1+19 worker 0 1 a -", "caller 20+5 caller - frame -"}, rows(cp))
    assert.same({1}, cp.jobs)
    assert.same({25, 0, 25, 25, 27}, {cp.duration_us, cp.start_us, cp.finish_us, cp.session_us, cp.total_run_us})
    assert.same({1, 27 / 25}, {cp.share, cp.achieved})
    assert.is_nil(cp.parallelism) -- the replay's (work / span), not the walk's
    assert.same({"run=19", "caller=5", "submit=1"}, kinds(cp))
    assert.same({{name = "a", run_us = 19}}, cp.by_category)
    assert.is_false(cp.partial)
    assert.is_nil(cp.partial_why)
  end)

  -- J2 (on worker 1, 2..14) waits at 10 for J1, which had ended at 5: its
  -- own run before the wait ended later (10), so the path stays in J2
  -- (run, the copy of J1's results, run) and J1 is not on it. The caller
  -- waited for J2 (blocked 2..14) and copies its results 14..15.
  it("does not follow a wait on a job that had already finished", function()
    local cp = path{stop = 16, queues = {2}, execs = {
      {thread = true, caller = true, lane = 1, ops = {
        {"submit", 0, 1, lane = 1, job = 2}, {"submit", 1, 2, lane = 1, job = 3}, {"block", 2, 14, lane = 1, job = 3},
        {"wait", 14, job = 3}, {"copy result", 14, 15, lane = 1, job = 3}, {"own", 15, 16, lane = 1}}},
      {job = "J1", queue = 1, lane = 2, sub = {1, 1}, ops = {{"run", 1, 5, lane = 2}}},
      {job = "J2", queue = 1, lane = 3, sub = {1, 2}, ops = {
        {"run", 2, 10, lane = 3}, {"wait", 10, job = 2}, {"copy result", 10, 11, lane = 3, job = 2},
        {"run", 11, 14, lane = 3}}}}}
    assert.same({"submit 0+1 caller J1 - -", "submit 1+1 caller J2 - -", "run 2+8 worker 1 J2 - -",
      "copy result 10+1 worker 1 J2 - -", "run 11+3 worker 1 J2 - -", "copy result 14+1 caller J2 - -",
      "caller 15+1 caller - - -"}, rows(cp))
    assert.same({"J2"}, cp.jobs)
  end)

  -- The caller submits three jobs (2 us each, 1 us of its own between) and
  -- waits for all of queue 1 (blocked 8..10); each job runs 1 us on a free
  -- worker: j3, submitted last, ended last (10), taken at 9 though both
  -- workers were free from 6 (scheduling delay 8..9). The path is the
  -- caller's loop.
  it("runs through a caller-bound submit loop", function()
    local cp = path{stop = 11, queues = {2}, execs = {
      {thread = true, caller = true, lane = 1, ops = {
        {"submit", 0, 2, lane = 1, job = 2}, {"own", 2, 3, lane = 1}, {"submit", 3, 5, lane = 1, job = 3},
        {"own", 5, 6, lane = 1}, {"submit", 6, 8, lane = 1, job = 4}, {"block", 8, 10, lane = 1, queue = 1},
        {"wait", 10, queue = 1}, {"own", 10, 11, lane = 1}}},
      {job = 1, queue = 1, lane = 2, sub = {1, 1}, ops = {{"run", 2, 3, lane = 2}}},
      {job = 2, queue = 1, lane = 3, sub = {1, 3}, ops = {{"run", 5, 6, lane = 3}}},
      {job = 3, queue = 1, lane = 2, sub = {1, 5}, ops = {{"run", 9, 10, lane = 2}}}}}
    assert.same({"submit 0+2 caller 1 - -", "caller 2+1 caller - - -", "submit 3+2 caller 2 - -",
      "caller 5+1 caller - - -", "submit 6+2 caller 3 - -", "scheduling delay 8+1 worker 0 3 - -",
      "run 9+1 worker 0 3 - -", "caller 10+1 caller - - -"}, rows(cp))
    assert.same({3}, cp.jobs)
    assert.same({"submit=6", "caller=3", "run=1", "scheduling delay=1"}, kinds(cp))
  end)

  -- One worker: A runs 1..8, B (submitted 1..2) waits for the worker until
  -- A ends (ready latency 2..8), is taken at 10 (scheduling delay 8..10)
  -- and runs 10..15; the caller waits for all and works 15..16.
  it("splits a job's wait to start into ready latency and scheduling delay", function()
    local cp = path{stop = 16, queues = {1}, execs = {
      {thread = true, caller = true, lane = 1, ops = {
        {"submit", 0, 1, lane = 1, job = 2}, {"submit", 1, 2, lane = 1, job = 3}, {"block", 2, 15, lane = 1, queue = 1},
        {"wait", 15, queue = 1}, {"own", 15, 16, lane = 1}}},
      {job = "A", queue = 1, lane = 2, sub = {1, 1}, ops = {{"run", 1, 8, lane = 2}}},
      {job = "B", queue = 1, lane = 2, sub = {1, 2}, ops = {{"run", 10, 15, lane = 2}}}}}
    assert.same({"submit 0+1 caller A - -", "submit 1+1 caller B - -", "ready latency 2+6 - B - -",
      "scheduling delay 8+2 worker 0 B - -", "run 10+5 worker 0 B - -", "caller 15+1 caller - - -"}, rows(cp))
    assert.same({"B"}, cp.jobs)
  end)

  -- J2 runs after J1 (an `after` dependency: its wait point at its submit,
  -- 2): J1 ended at 6, later than J2's submit, so the path goes to J1;
  -- J2 was taken at 7 with both workers free (scheduling delay 6..7).
  it("follows an after dependency that ended after the submit", function()
    local cp = path{stop = 10, queues = {2}, execs = {
      {thread = true, caller = true, lane = 1, ops = {
        {"submit", 0, 1, lane = 1, job = 2}, {"submit", 1, 2, lane = 1, job = 3}, {"block", 2, 9, lane = 1, queue = 1},
        {"wait", 9, queue = 1}, {"own", 9, 10, lane = 1}}},
      {job = "J1", queue = 1, lane = 2, cat = "x", sub = {1, 1}, ops = {{"run", 1, 6, lane = 2}}},
      {job = "J2", queue = 1, lane = 3, cat = "y", sub = {1, 2}, ops = {{"wait", 2, job = 2}, {"run", 7, 9, lane = 3}}}}}
    assert.same({"submit 0+1 caller J1 - -", "run 1+5 worker 0 J1 x -", "scheduling delay 6+1 worker 1 J2 y -",
      "run 7+2 worker 1 J2 y -", "caller 9+1 caller - - -"}, rows(cp))
    assert.same({"J1", "J2"}, cp.jobs)
    assert.same({{name = "x", run_us = 5}, {name = "y", run_us = 2}}, cp.by_category)
  end)

  -- P (worker 0) submits C1 and C2, then awaits C2 (suspended 5..30). C2
  -- runs on worker 1 (5..8, taken 1 us after its submit with worker 1
  -- free), but C1 took P's worker 6..30: P could resume at 8 and did at 30,
  -- its worker running C1 (worker busy 8..30, held by C1). A coroutine
  -- resumes only on its own worker.
  it("names the job that held a suspended job's worker", function()
    local cp = path{stop = 40, queues = {2}, execs = {
      {job = "P", queue = 1, lane = 2, cat = "p", ops = {
        {"run", 0, 2, lane = 2}, {"submit", 2, 3, lane = 2, job = 2}, {"submit", 3, 4, lane = 2, job = 3},
        {"run", 4, 5, lane = 2}, {"suspend", 5, 30, lane = 2, job = 3}, {"wait", 30, job = 3},
        {"copy result", 30, 31, lane = 2, job = 3}, {"run", 31, 32, lane = 2}}},
      {job = "C1", queue = 1, lane = 2, cat = "c", sub = {1, 2}, ops = {{"run", 6, 30, lane = 2}}},
      {job = "C2", queue = 1, lane = 3, cat = "c", sub = {1, 3}, ops = {{"run", 5, 8, lane = 3}}}}}
    assert.same({"run 0+2 worker 0 P p -", "submit 2+2 worker 0 P p -", "scheduling delay 4+1 worker 1 C2 c -",
      "run 5+3 worker 1 C2 c -", "worker busy 8+22 worker 0 P p C1", "copy result 30+1 worker 0 P p -",
      "run 31+1 worker 0 P p -"}, rows(cp))
    assert.same({"P", "C2", "P"}, cp.jobs)
    assert.same({"worker busy=22", "run=6", "submit=2", "copy result=1", "scheduling delay=1"}, kinds(cp))
    assert.same({{name = "c", run_us = 3}, {name = "p", run_us = 3}}, cp.by_category)
    assert.same({32, 40, 32 / 40}, {cp.duration_us, cp.session_us, cp.share})
  end)

  -- A suspension whose worker ran two other jobs: K1 4..6 and K2 7..12 in
  -- the gap 3..14 (J's awaited job ended at 3): resume latency 3..4, worker
  -- busy 7 us from 4 (held by K2, the longer), resume latency the rest.
  it("names the job that held the worker longest when several did", function()
    local cp = path{stop = 15, queues = {2}, execs = {
      {job = "J", queue = 1, lane = 2, ops = {{"run", 0, 1, lane = 2}, {"suspend", 1, 14, lane = 2, job = 2},
        {"run", 14, 15, lane = 2}}},
      {job = "X", queue = 1, lane = 3, ops = {{"run", 1, 3, lane = 3}}},
      {job = "K1", queue = 1, lane = 2, ops = {{"run", 4, 6, lane = 2}}},
      {job = "K2", queue = 1, lane = 2, ops = {{"run", 7, 12, lane = 2}}}}}
    assert.same({"run 1+2 worker 1 X - -", "resume latency 3+1 worker 0 J - -", "worker busy 4+7 worker 0 J - K2",
      "resume latency 11+3 worker 0 J - -", "run 14+1 worker 0 J - -"}, rows(cp))
    assert.same({"X", "J"}, cp.jobs)
  end)

  -- J (worker 0) submits X (1..2) and awaits it: X runs 2..4 on worker 1,
  -- but K1 holds J's worker 4..10 (worker busy 6, held by K1); then J
  -- submits Y (11..12) and awaits it: Y runs 12..13, K3 (13..14) and K2
  -- (14..20) hold J's worker (worker busy 7 from 13, held by K2, the
  -- longer). The text sums them by job, most first: K2 7, K1 6; without
  -- the steps (a table each) the path is the same.
  it("sums worker busy by the job that held the worker, and leaves out its steps when asked", function()
    local t = {stop = 21, queues = {2}, lanes = LANES, execs = {
      {job = "J", queue = 1, lane = 2, ops = {
        {"run", 0, 1, lane = 2}, {"submit", 1, 2, lane = 2, job = 2}, {"suspend", 2, 10, lane = 2, job = 2},
        {"wait", 10, job = 2}, {"run", 10, 11, lane = 2}, {"submit", 11, 12, lane = 2, job = 3},
        {"suspend", 12, 20, lane = 2, job = 3}, {"wait", 20, job = 3}, {"run", 20, 21, lane = 2}}},
      {job = "X", queue = 1, lane = 3, sub = {1, 2}, ops = {{"run", 2, 4, lane = 3}}},
      {job = "Y", queue = 1, lane = 3, sub = {1, 6}, ops = {{"run", 12, 13, lane = 3}}},
      {job = "K1", queue = 1, lane = 2, ops = {{"run", 4, 10, lane = 2}}},
      {job = "K2", queue = 1, lane = 2, ops = {{"run", 14, 20, lane = 2}}},
      {job = "K3", queue = 1, lane = 2, ops = {{"run", 13, 14, lane = 2}}}}}
    local cp = path(t)
    assert.same({"run 0+1 worker 0 J - -", "submit 1+1 worker 0 J - -", "run 2+2 worker 1 X - -",
      "worker busy 4+6 worker 0 J - K1", "run 10+1 worker 0 J - -", "submit 11+1 worker 0 J - -",
      "run 12+1 worker 1 Y - -", "worker busy 13+7 worker 0 J - K2", "run 20+1 worker 0 J - -"}, rows(cp))
    assert.same({{job = "K2", us = 7}, {job = "K1", us = 6}}, cp.held_by)
    local lean = R.job_ops(t):critical_path{steps = false}
    assert.is_nil(lean.steps)
    cp.steps = nil
    assert.same(cp, lean)
    local full = R.job_ops(t):critical_path{steps = true}
    assert.equal(9, #full.steps)
    assert.has_error(function() R.job_ops(t):critical_path(false) end)
  end)

  -- J (queue 1) submits X to queue 2 and blocks its worker until X ends:
  -- the path is X's run (not J's blocked time as run), J's wake after it
  -- (resume latency 11..12), then J's run.
  it("goes through the job a blocked job waited for on another queue", function()
    local cp = path{stop = 13, queues = {1, 1}, execs = {
      {job = "J", queue = 1, lane = 2, ops = {{"run", 0, 1, lane = 2}, {"submit", 1, 2, lane = 2, job = 2},
        {"block", 2, 12, lane = 2, job = 2}, {"wait", 12, job = 2}, {"run", 12, 13, lane = 2}}},
      {job = "X", queue = 2, lane = 3, sub = {1, 2}, ops = {{"run", 3, 11, lane = 3}}}}}
    assert.same({"run 0+1 worker 0 J - -", "submit 1+1 worker 0 J - -", "scheduling delay 2+1 worker 1 X - -",
      "run 3+8 worker 1 X - -", "resume latency 11+1 worker 0 J - -", "run 12+1 worker 0 J - -"}, rows(cp))
    assert.same({"J", "X", "J"}, cp.jobs)
  end)

  -- J blocks 2..10 on a job whose events were lost (no ops): what it
  -- waited for is unknown, so that time is "blocked"; the graph is partial.
  it("files a wait on what the trace lost as blocked, and says partial", function()
    local cp = path{stop = 12, partial = "lane worker 1 dropped 3 events", queues = {2}, execs = {
      {job = "J", queue = 1, lane = 2, ops = {{"run", 0, 2, lane = 2}, {"block", 2, 10, lane = 2, job = 2},
        {"wait", 10, job = 2}, {"run", 10, 12, lane = 2}}},
      {job = "lost", queue = 1, ops = {}}}}
    assert.same({"run 0+2 worker 0 J - -", "blocked 2+8 worker 0 J - -", "run 10+2 worker 0 J - -"}, rows(cp))
    assert.is_true(cp.partial)
    assert.equal("lane worker 1 dropped 3 events", cp.partial_why)
  end)

  -- Copies where they ran: J's copy in, run and copy out on worker 0; the
  -- caller, blocked until 10, wakes 1 us after J's end (resume latency
  -- 9..10) and copies its results 10..13.
  it("files copies as copies, in a job and on the caller", function()
    local cp = path{stop = 14, queues = {1}, execs = {
      {thread = true, caller = true, lane = 1, ops = {
        {"submit", 0, 2, lane = 1, job = 2}, {"block", 2, 10, lane = 1, job = 2}, {"wait", 10, job = 2},
        {"copy result", 10, 13, lane = 1, job = 2}, {"own", 13, 14, lane = 1}}},
      {job = "J", queue = 1, lane = 2, cat = "decode", sub = {1, 1}, ops = {
        {"copy in", 2, 3, lane = 2}, {"run", 3, 8, lane = 2}, {"copy out", 8, 9, lane = 2}}}}}
    assert.same({"submit 0+2 caller J - -", "copy in 2+1 worker 0 J decode -", "run 3+5 worker 0 J decode -",
      "copy out 8+1 worker 0 J decode -", "resume latency 9+1 caller - - -", "copy result 10+3 caller J - -",
      "caller 13+1 caller - - -"}, rows(cp))
    assert.same({"run=5", "copy result=3", "submit=2", "caller=1", "copy in=1", "copy out=1", "resume latency=1"},
      kinds(cp))
    assert.equal(5, cp.total_run_us) -- a job's copies are not its run
  end)

  -- The caller works in spans (setup 0..5, frame 6..8 and 9..12) around
  -- a job that had ended (7) before its wait (8): all of it is the
  -- caller's, each step with its span's category; no job is on the path.
  it("files the caller's own work by its spans' categories", function()
    local cp = path{stop = 12, queues = {1}, execs = {
      {thread = true, caller = true, lane = 1, ops = {
        {"own", 0, 5, lane = 1, cat = "setup"}, {"submit", 5, 6, lane = 1, job = 2},
        {"own", 6, 8, lane = 1, cat = "frame"}, {"wait", 8, job = 2}, {"copy result", 8, 9, lane = 1, job = 2},
        {"own", 9, 12, lane = 1, cat = "frame"}}},
      {job = "J", queue = 1, lane = 2, sub = {1, 2}, ops = {{"run", 6, 7, lane = 2}}}}}
    assert.same({"caller 0+5 caller - setup -", "submit 5+1 caller J - -", "caller 6+2 caller - frame -",
      "copy result 8+1 caller J - -", "caller 9+3 caller - frame -"}, rows(cp))
    assert.same({}, cp.jobs)
    assert.same({}, cp.by_category)
  end)

  -- A queue without workers: the caller runs J's slice itself (1..4).
  it("files a job the caller ran itself as job on caller", function()
    local cp = path{stop = 5, execs = {
      {thread = true, caller = true, lane = 1, ops = {
        {"submit", 0, 1, lane = 1, job = 2}, {"job", 1, 4, lane = 1, job = 2, cat = "inline"},
        {"own", 4, 5, lane = 1}}},
      {job = 7, lane = 1, sub = {1, 1}, ops = {{"run", 1, 4, lane = 1}}}}}
    assert.same({"submit 0+1 caller 7 - -", "job on caller 1+3 caller 7 inline -", "caller 4+1 caller - - -"}, rows(cp))
    assert.same({7}, cp.jobs)
    assert.same({3, 3 / 5}, {cp.total_run_us, cp.achieved}) -- its slice once: J's run, not the caller's op too
  end)

  -- A queue without workers (as graph:ops builds it): the caller submits J1
  -- (0..1) and J2 (1..2), waits for every job (2..14), running them meanwhile:
  -- J1's copy in 3..4, slice 4..8, copy out 8..9, J2's slice 9..13; works
  -- 14..15. One thread ran it all: run time 4 + 4 = 8 of 15, both jobs on
  -- the path, one visit each.
  it("counts the jobs the caller ran once, and puts them on the path", function()
    local cp = path{stop = 15, queues = {0}, execs = {
      {thread = true, caller = true, lane = 1, ops = {
        {"submit", 0, 1, lane = 1, job = 2}, {"submit", 1, 2, lane = 1, job = 3},
        {"block", 2, 3, lane = 1, queue = 1},
        {"job", 3, 4, lane = 1, job = 2}, {"job", 4, 8, lane = 1, job = 2}, {"job", 8, 9, lane = 1, job = 2},
        {"job", 9, 13, lane = 1, job = 3},
        {"block", 13, 14, lane = 1, queue = 1}, {"wait", 14, lane = 1, queue = 1}, {"own", 14, 15, lane = 1}}},
      {job = "J1", lane = 1, sub = {1, 1}, ops = {
        {"copy in", 3, 4, lane = 1}, {"run", 4, 8, lane = 1}, {"copy out", 8, 9, lane = 1}}},
      {job = "J2", lane = 1, sub = {1, 2}, ops = {{"run", 9, 13, lane = 1}}}}}
    assert.same({"J1", "J2"}, cp.jobs)
    assert.same({8, 8 / 15}, {cp.total_run_us, cp.achieved})
    assert.is_true(cp.achieved <= 1) -- one thread
    assert.same({"job on caller=10", "blocked=2", "submit=2", "caller=1"}, kinds(cp)) -- ties by name
  end)

  -- J's wait on X, which ended at 5 just as J's run before it: a tie, so
  -- program order: J alone.
  it("picks program order on ties", function()
    local cp = path{stop = 8, queues = {2}, execs = {
      {job = "J", queue = 1, lane = 2, ops = {{"run", 0, 5, lane = 2}, {"wait", 5, job = 2}, {"run", 5, 8, lane = 2}}},
      {job = "X", queue = 1, lane = 3, ops = {{"run", 2, 5, lane = 3}}}}}
    assert.same({"run 0+8 worker 0 J - -"}, rows(cp))
    assert.same({"J"}, cp.jobs)
  end)

  -- Two jobs waiting for each other at one time (a hand-made cycle): the
  -- walk stops at its step limit and says so.
  it("stops at its step limit on a cycle and says partial", function()
    local cp = R.job_ops{stop = 5, lanes = LANES, execs = {
      {job = 1, lane = 2, ops = {{"wait", 5, job = 2}}},
      {job = 2, lane = 3, ops = {{"wait", 5, job = 1}}}}}:critical_path()
    assert.is_true(cp.partial)
    assert.equal("the walk stopped at its step limit", cp.partial_why)
  end)

  -- A chain of n jobs on alternate workers, job k awaiting job k - 1
  -- (runs 3k-1..3k, suspended 3k..3k+3, runs 3k+3..3k+4; job 1 runs 2..7):
  -- k - 1 ended at 3k+1, so a long graph, walked in a loop, every link on
  -- the path.
  it("walks a long chain without recursion", function()
    local n, execs = 20000, {}
    for k = 1, n do
      local lane = 2 + k % 2
      local ops = {{"run", 2, 7, lane = lane}}
      if k > 1 then
        ops = {{"run", 3 * k - 1, 3 * k, lane = lane}, {"suspend", 3 * k, 3 * k + 3, lane = lane, job = k - 1},
          {"run", 3 * k + 3, 3 * k + 4, lane = lane}}
      end
      execs[k] = {job = k, queue = 1, lane = lane, ops = ops}
    end
    local cp = path{stop = 3 * n + 10, queues = {2}, execs = execs}
    assert.equal(n, #cp.jobs)
    assert.same({1, 2, n}, {cp.jobs[1], cp.jobs[2], cp.jobs[n]})
    assert.same({2, 3 * n + 4}, {cp.start_us, cp.finish_us})
    -- each link: 2 us of resume latency, then 1 us of run; job 1's 5 us
    assert.same({"resume latency=" .. 2 * (n - 1), "run=" .. n - 1 + 5}, kinds(cp))
  end)
end)

-- A saved file of ours (edge events: every wait recorded, finished or not),
-- read back through graph:ops(model):critical_path(). Lanes: worker 0 and
-- worker 1 (queue 1), the caller.
local function saved(events, stop)
  local S = require "support"
  local trace = require "jobque_profile.trace"
  local file = S.tmpfile()
  S.write(file, ([[{"traceEvents":[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"worker 1"}},
{"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"caller"}},
%s],
"jobqueProfile":{"version":1,"clock":"tsc","durationUs":%d,"startUs":0,"stopUs":%d,"lostEvents":0,"lanes":3,
 "laneInfo":[{"tid":1,"name":"worker 0","role":"worker","queue":1,"recorded":1,"dropped":0},
             {"tid":2,"name":"worker 1","role":"worker","queue":1,"recorded":1,"dropped":0},
             {"tid":3,"name":"caller","role":"caller","recorded":1,"dropped":0}],
 "categories":[],"markers":[]}}
]]):format(events, stop, stop))
  local model = assert(trace.load(file))
  return R.job_graph(model):ops(model):critical_path()
end

describe("the critical path of a saved trace", function()
  -- A frame: the caller submits A (job 1, 0..1) and B (job 2, 1..2), waits
  -- for A (3..20; A ran 2..19 on worker 0), then for B, its straggler
  -- waited last, which had ended at 10 (an edge at 20.5, no wait span),
  -- decodes B's results 20.5..21 and works until the session stops (25).
  -- Back from the end: the caller's work and the copy of B's results (B,
  -- ended long before, is not on the path), its wake 19..20 after A's
  -- end, A's run (its category "a", the slice's name), scheduling delay
  -- 1..2 (both workers free), A's submit.
  it("follows the latest-finishing wait, not the last, through the edges recorded", function()
    local cp = saved([[
{"ph":"X","ts":0,"dur":1,"pid":1,"tid":3,"name":"submit a","cat":"submit","args":{"job":1}},
{"ph":"X","ts":1,"dur":1,"pid":1,"tid":3,"name":"submit b","cat":"submit","args":{"job":2}},
{"ph":"X","ts":3,"dur":17,"pid":1,"tid":3,"name":"wait","cat":"wait","args":{"job":1}},
{"ph":"i","s":"t","cat":"edge","name":"waited for","ts":20,"pid":1,"tid":3,"args":{"on":1}},
{"ph":"i","s":"t","cat":"edge","name":"waited for","ts":20.5,"pid":1,"tid":3,"args":{"on":2}},
{"ph":"X","ts":20.5,"dur":0.5,"pid":1,"tid":3,"name":"copy result","cat":"copy","args":{"job":2,"bytes":9,"category":"b"}},
{"ph":"X","ts":2,"dur":17,"pid":1,"tid":1,"name":"a","cat":"job","args":{"job":1}},
{"ph":"X","ts":2,"dur":8,"pid":1,"tid":2,"name":"b","cat":"job","args":{"job":2}}
]], 25)
    assert.same({"submit 0+1 caller 1 - -", "scheduling delay 1+1 worker 0 1 a -", "run 2+17 worker 0 1 a -",
      "resume latency 19+1 caller - - -", "caller 20+0.5 caller - - -", "copy result 20.5+0.5 caller 2 b -",
      "caller 21+4 caller - - -"}, rows(cp))
    assert.same({1}, cp.jobs)
    assert.is_false(cp.partial)
  end)
end)
