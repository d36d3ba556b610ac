-- ops:whatif(): the happens-before graph replayed on W workers per queue
-- under the queue's rules (src/reader/replay.c). Every graph is made by
-- hand with reader.job_ops{...} (times in microseconds) and every figure
-- is worked out by hand in the comments: which worker takes what, when.
-- Most graphs are exact recordings (what the queue would do, at zero
-- overhead, with the recorded workers), so the replay at the recorded
-- worker count must give the recorded length.
local reader = require "jobque_profile.reader"

-- The caller's thread (executor 1) and jobs: job(id, sub op of the
-- caller, ops) with the caller's ops numbered from 1.
local function caller(ops) return {thread = true, caller = true, lane = 1, ops = ops} end
local function job(id, sub, ops, queue)
  return {job = id, queue = queue or 1, lane = 2, sub = sub and {1, sub}, ops = ops}
end

local function predictions(r)
  local t = {}
  for _, p in ipairs(r.predictions) do t[p.workers] = p.predicted_us end
  return t
end

describe("ops:whatif", function()
  it("runs the ready jobs first in, first out", function()
    -- The caller submits A (10 us) then B (1 us), waits for B alone, then
    -- works 20 us. One worker: A 1-11, B 11-12; the caller's wait ends at
    -- 12, its own work at 32 (last in, first out would give 23).
    -- Two workers: A 1-11, B 2-3; the caller ends at 3 + 20 = 23.
    local o = reader.job_ops{stop = 32, queues = {1}, execs = {
      caller{{"submit", 0, 1, job = 2}, {"submit", 1, 2, job = 3},
             {"block", 2, 12, job = 3}, {"wait", 12, job = 3}},
      job(1, 1, {{"run", 1, 11}}),
      job(2, 2, {{"run", 11, 12}}),
    }}
    local r = o:whatif{1, 2}
    assert.same({[1] = 32, [2] = 23}, predictions(r))
    assert.equal(1, r.recorded_workers)
    assert.equal(32, r.recorded_us)
    -- work: submits 2, the caller's own work 20, runs 11
    assert.equal(33, r.work_us)
    assert.equal(23, r.span_us)
    assert.equal(33 / 23, r.parallelism) -- work over span
    assert.is_false(r.partial)
  end)

  it("resumes a coroutine only on the worker that started it", function()
    -- Two workers. P (on worker 0) submits S (2 us) and L (20 us), then
    -- awaits S. S goes to the idle worker 1 at 4 (4-6); L waits in the
    -- FIFO (no idle worker) until P suspends at 5 and frees worker 0,
    -- which takes L (5-25). S ends at 6 and P joins worker 0's resume
    -- list: worker 1 is idle but cannot run P, which resumes at 25 and
    -- runs 2 more: 27, the recorded length. With a worker per job, P's
    -- worker is free at 6: P ends at 8, L at 25. One worker: P 1-5, S
    -- 5-7, P resumes at 7 (its resume list before the FIFO) 7-9, L 9-29.
    local o = reader.job_ops{stop = 27, queues = {2}, execs = {
      caller{{"submit", 0, 1, job = 2}, {"block", 1, 27, job = 2}, {"wait", 27, job = 2}},
      {job = 1, queue = 1, lane = 2, sub = {1, 1}, ops = {
        {"run", 1, 2}, {"submit", 2, 4, job = 3}, {"submit", 4, 5, job = 4},
        {"suspend", 5, 25, job = 3}, {"wait", 25, job = 3}, {"run", 25, 27}}},
      {job = 2, queue = 1, lane = 3, sub = {2, 2}, ops = {{"run", 4, 6}}},
      {job = 3, queue = 1, lane = 2, sub = {2, 3}, ops = {{"run", 5, 25}}},
    }}
    local r = o:whatif{1, 2, 4}
    assert.same({[1] = 29, [2] = 27, [4] = 25}, predictions(r))
    assert.equal(25, r.span_us)
    assert.equal(2, r.recorded_workers)
  end)

  it("gives a worker its own resumed jobs before the FIFO", function()
    -- One worker. P submits C (1 us) and D (10 us) and awaits C: the
    -- worker runs C 4-5; then P, on its resume list, goes before D,
    -- queued since 4: P 5-7, D 7-17. The caller's wait for P ends at 7,
    -- its own work at 20, the recorded length (the FIFO first: D 5-15,
    -- P 15-17, the caller 30).
    local o = reader.job_ops{stop = 20, queues = {1}, execs = {
      caller{{"submit", 0, 1, job = 2}, {"block", 1, 7, job = 2}, {"wait", 7, job = 2}},
      {job = 1, queue = 1, lane = 2, sub = {1, 1}, ops = {
        {"run", 1, 2}, {"submit", 2, 3, job = 3}, {"submit", 3, 4, job = 4},
        {"suspend", 4, 5, job = 3}, {"wait", 5, job = 3}, {"run", 5, 7}}},
      {job = 2, queue = 1, lane = 2, sub = {2, 2}, ops = {{"run", 4, 5}}},
      {job = 3, queue = 1, lane = 2, sub = {2, 3}, ops = {{"run", 7, 17}}},
    }}
    assert.equal(20, predictions(o:whatif{1})[1])
  end)

  it("lets a job that yielded again take turns with the queued ones", function()
    -- One worker. Y (taken from the FIFO at 1) runs 1-4 and yields: the
    -- worker last took a queued job, so it takes Y back at once (4-6);
    -- Y yields again and, having just resumed a yielded job, the worker
    -- takes A from the FIFO first (6-7), then Y (7-9), then B (9-10), as
    -- jq_queue_take does. The caller waits for A (ends at 7), then works
    -- 10 us: 17, the recorded length.
    local o = reader.job_ops{stop = 17, queues = {1}, execs = {
      caller{{"submit", 0, 1, job = 2}, {"submit", 1, 2, job = 3}, {"submit", 2, 3, job = 4},
             {"block", 3, 7, job = 3}, {"wait", 7, job = 3}},
      job(1, 1, {{"run", 1, 4}, {"suspend", 4, 4}, {"run", 4, 6}, {"suspend", 6, 7}, {"run", 7, 9}}),
      job(2, 2, {{"run", 6, 7}}),
      job(3, 3, {{"run", 9, 10}}),
    }}
    local r = o:whatif{1}
    assert.equal(17, predictions(r)[1])
    -- Three workers (one each): A runs 2-3, the caller ends at 3 + 10.
    assert.equal(13, r.span_us)
  end)

  it("submits at the caller's recorded pace, its own work between the submits", function()
    -- Submits at 0, 5, 10, 15 (1 us each), the caller's own work between
    -- them (4 us: as gaps in one graph, as "own" ops in the other), jobs
    -- of 10 us, then a wait for all. One worker: 1-11, 11-21, 21-31,
    -- 31-41. Two: 1-11, 6-16, 11-21, 16-26. Four and more: the last
    -- job is submitted at 16 and ends at 26.
    local function graph(own)
      local ops, execs = {}, {}
      for i = 1, 4 do
        local t = (i - 1) * 5
        ops[#ops + 1] = {"submit", t, t + 1, job = i + 1}
        execs[i + 1] = {job = i, queue = 1, lane = 2, sub = {1, #ops}, ops = {{"run", t + 1, t + 11}}}
        if own and i < 4 then ops[#ops + 1] = {"own", t + 1, t + 5} end
      end
      ops[#ops + 1] = {"block", 16, 26, queue = 1}
      ops[#ops + 1] = {"wait", 26, queue = 1}
      execs[1] = caller(ops)
      return reader.job_ops{stop = 26, queues = {4}, execs = execs}
    end
    for _, own in ipairs{false, true} do
      local r = graph(own):whatif()
      assert.same({[1] = 41, [2] = 26, [4] = 26, [8] = 26, [16] = 26}, predictions(r))
      assert.equal(26, r.span_us)
      -- submits 4, own work 12, runs 40
      assert.equal(56, r.work_us)
      assert.equal(4, r.recorded_workers)
    end
  end)

  it("starts a job once its after dependencies ended, in FIFO order", function()
    -- A (10 us), B (3 us), then C after A and B (2 us). Two workers: A
    -- 1-11 on worker 0, B 2-5 on worker 1; C, submitted at 3, is ready
    -- when A ends: 11-13. One worker: A 1-11, then B (queued at 2, before
    -- C was ready at 11) 11-14, C 14-16.
    local o = reader.job_ops{stop = 13, queues = {2}, execs = {
      caller{{"submit", 0, 1, job = 2}, {"submit", 1, 2, job = 3}, {"submit", 2, 3, job = 4},
             {"block", 3, 13, job = 4}, {"wait", 13, job = 4}},
      job(1, 1, {{"run", 1, 11}}),
      job(2, 2, {{"run", 2, 5}}),
      job(3, 3, {{"wait", 3, job = 2}, {"wait", 3, job = 3}, {"run", 11, 13}}),
    }}
    local r = o:whatif{1, 2}
    assert.same({[1] = 16, [2] = 13}, predictions(r))
  end)

  it("suspends a job whose wait finds its job unfinished in the replay", function()
    -- Recorded on two workers, P's wait for Q found Q finished (no
    -- suspension): P 1-5, waits at 5, decodes Q's results 5-6, runs 6-7;
    -- Q 2-4. On one worker Q is still queued when P waits at 5: P
    -- suspends, the worker runs Q 5-7, P resumes at 7: 7-8, 8-9.
    local o = reader.job_ops{stop = 7, queues = {2}, execs = {
      caller{{"submit", 0, 1, job = 2}, {"submit", 1, 2, job = 3},
             {"block", 2, 7, job = 2}, {"wait", 7, job = 2}},
      job(1, 1, {{"run", 1, 5}, {"wait", 5, job = 3}, {"copy result", 5, 6, job = 3}, {"run", 6, 7}}),
      job(2, 2, {{"run", 2, 4}}),
    }}
    local r = o:whatif{1, 2}
    assert.same({[1] = 9, [2] = 7}, predictions(r))
    -- runs 4 + 1 + 2, the copy 1, submits 2
    assert.equal(10, r.work_us)
  end)

  it("holds the worker while a job is blocked in a wait", function()
    -- One worker per queue. X (queue 2) runs 1-11. J (queue 1) runs 2-3,
    -- then blocks on X until 11 holding queue 1's only worker, runs
    -- 11-12; K waits in the FIFO and runs 12-13. The caller waits for
    -- every job (queue 0): 13. Had J suspended, K would run at 3.
    local o = reader.job_ops{stop = 13, queues = {1, 1}, execs = {
      caller{{"submit", 0, 1, job = 2}, {"submit", 1, 2, job = 3}, {"submit", 2, 3, job = 4},
             {"block", 3, 13}, {"wait", 13}},
      job(1, 1, {{"run", 1, 11}}, 2),
      job(2, 2, {{"run", 2, 3}, {"block", 3, 11, job = 2}, {"wait", 11, job = 2}, {"run", 11, 12}}),
      job(3, 3, {{"run", 12, 13}}),
    }}
    local r = o:whatif{1}
    assert.equal(13, predictions(r)[1])
    -- a worker per job: K 3-4; J ends at 12
    assert.equal(12, r.span_us)
    assert.equal(2, r.recorded_workers)
  end)

  it("runs a job of a queue without workers inside the blocked wait for it, on the waiter's worker", function()
    -- J (worker 0) makes a queue without workers, submits Z to it and
    -- waits: Z runs on J's worker thread during the wait (4-14), which
    -- holds the worker; K runs on worker 1 (2-5). One worker: K waits for
    -- J's end (18) and runs 18-21. Z is not a job for the workers: with a
    -- worker taken by J, none could run it and J would wait forever.
    local o = reader.job_ops{stop = 20, queues = {2}, execs = {
      caller{{"submit", 0, 1, job = 2}, {"submit", 1, 2, job = 4}, {"block", 2, 18, job = 2},
             {"wait", 18, job = 2}, {"copy result", 18, 19, job = 2}, {"own", 19, 20}},
      job(1, 1, {{"copy in", 1, 2}, {"run", 2, 3}, {"submit", 3, 4, job = 3},
                 {"block", 4, 14, job = 3, lane = 2}, {"wait", 14, job = 3}, {"copy result", 14, 15, job = 3},
                 {"run", 15, 17}, {"copy out", 17, 18}}),
      {job = 2, queue = 1, lane = 2, sub = {2, 3}, ops = {
        {"copy in", 4, 5, lane = 2}, {"run", 5, 13, lane = 2}, {"copy out", 13, 14, lane = 2}}},
      {job = 3, queue = 1, lane = 3, sub = {1, 2}, ops = {{"run", 2, 5, lane = 3}}},
    }}
    local r = o:whatif{1, 2}
    assert.same({[1] = 21, [2] = 20}, predictions(r))
    assert.is_false(r.partial)
    -- the caller 1 + 1 + 1 + 1, J 7, Z 10, K 3
    assert.equal(24, r.work_us)
  end)

  it("gives every queue W workers of its own", function()
    -- A and B on queue 1, C and D on queue 2, 10 us each, submitted 0-4.
    -- One worker a queue: A 1-11, B 11-21 and C 3-13, D 13-23: 23. Two:
    -- B ends at 12, D at 14. The caller waits for every job (queue 0).
    local o = reader.job_ops{stop = 14, queues = {2, 2}, execs = {
      caller{{"submit", 0, 1, job = 2}, {"submit", 1, 2, job = 3}, {"submit", 2, 3, job = 4},
             {"submit", 3, 4, job = 5}, {"block", 4, 14}, {"wait", 14}},
      job(1, 1, {{"run", 1, 11}}, 1),
      job(2, 2, {{"run", 2, 12}}, 1),
      job(3, 3, {{"run", 3, 13}}, 2),
      job(4, 4, {{"run", 4, 14}}, 2),
    }}
    local r = o:whatif{1, 2}
    assert.same({[1] = 23, [2] = 14}, predictions(r))
    assert.equal(4, r.recorded_workers)
  end)

  it("replays each queue at its recorded worker count: the recorded setup", function()
    -- Queue 1 recorded 1 worker, queue 2 three. The caller submits A1-A4
    -- (queue 1) 0-4 and B1-B6 (queue 2) 4-10, 1 us each, then waits for
    -- every job; each job runs 10 us. As recorded: A1 1-11, A2 11-21, A3
    -- 21-31, A4 31-41; B1 5-15, B2 6-16, B3 7-17, B4 15-25, B5 16-26, B6
    -- 17-27: 41, the recorded length, which no W per queue gives: one
    -- worker a queue runs B6 55-65 (65); two, A4 12-22 and B6 26-36 (36);
    -- four, A4 4-14 and B6 16-26 (26); a worker per job, B6 10-20 (20).
    local execs, subs = {}, {}
    for k = 1, 10 do subs[k] = {"submit", k - 1, k, job = k + 1} end
    subs[11], subs[12] = {"block", 10, 41}, {"wait", 41}
    execs[1] = caller(subs)
    local a_runs = {{1, 11}, {11, 21}, {21, 31}, {31, 41}}
    local b_runs = {{5, 15}, {6, 16}, {7, 17}, {15, 25}, {16, 26}, {17, 27}}
    for k = 1, 4 do execs[k + 1] = job(k, k, {{"run", a_runs[k][1], a_runs[k][2]}}, 1) end
    for k = 1, 6 do execs[k + 5] = job(k + 4, k + 4, {{"run", b_runs[k][1], b_runs[k][2]}}, 2) end
    local o = reader.job_ops{stop = 41, queues = {1, 3}, execs = execs}
    local r = o:whatif{1, 2, 4}
    assert.same({[1] = 65, [2] = 36, [4] = 26}, predictions(r))
    assert.equal(41, r.as_recorded_us)
    assert.same({{queue = 1, workers = 1}, {queue = 2, workers = 3}}, r.queues)
    assert.equal(4, r.recorded_workers)
    assert.equal(20, r.span_us)
    assert.is_false(r.partial)
  end)

  it("replays a queue the recording has no worker lanes for with a worker per job, as recorded", function()
    -- Queue 1 recorded no worker: A (10 us) and B (5 us), submitted 0-1
    -- and 1-2, both start at once as recorded: A 1-11, B 2-7; the caller
    -- waits for both until 11. One worker: B 11-16.
    local o = reader.job_ops{stop = 11, queues = {0}, execs = {
      caller{{"submit", 0, 1, job = 2}, {"submit", 1, 2, job = 3}, {"block", 2, 11}, {"wait", 11}},
      job(1, 1, {{"run", 1, 11}}),
      job(2, 2, {{"run", 2, 7}}),
    }}
    local r = o:whatif{1}
    assert.same({[1] = 16}, predictions(r))
    assert.equal(11, r.as_recorded_us)
    assert.same({{queue = 1, workers = 0}}, r.queues)
  end)

  it("waits for the jobs of a queue submitted before the wait, not those after", function()
    -- A (10 us); the caller waits for queue 1 (A alone) until 11, then
    -- submits B (1 us) 11-12, which runs 12-13. (The caller comes last
    -- here: executor 2 is B, not submitted when the wait begins.)
    local o = reader.job_ops{stop = 13, queues = {1}, execs = {
      {job = 1, queue = 1, lane = 2, sub = {3, 1}, ops = {{"run", 1, 11}}},
      {job = 2, queue = 1, lane = 2, sub = {3, 4}, ops = {{"run", 12, 13}}},
      caller{{"submit", 0, 1, job = 1}, {"block", 1, 11, queue = 1}, {"wait", 11, queue = 1},
             {"submit", 11, 12, job = 2}, {"block", 12, 13, job = 2}, {"wait", 13, job = 2}},
    }}
    local r = o:whatif{1, 2}
    assert.same({[1] = 13, [2] = 13}, predictions(r))
    assert.is_false(r.partial)
    -- A wait that began as A's submit ended waits for A: the caller's wait
    -- ends at 11, its own work at 14.
    o = reader.job_ops{stop = 14, queues = {1}, execs = {
      caller{{"submit", 0, 1, job = 2}, {"block", 1, 11, queue = 1}},
      job(1, 1, {{"run", 1, 11}}),
    }}
    assert.equal(14, o:whatif{1}.span_us)
  end)

  it("counts a job a thread ran (a queue without workers) as that thread's work", function()
    -- The caller submits J (1 us) and runs it itself 1-6: 6 whatever the
    -- workers; J's own ops are not replayed nor counted twice.
    local o = reader.job_ops{stop = 6, queues = {0}, execs = {
      caller{{"submit", 0, 1, job = 2}, {"job", 1, 6, job = 2}, {"wait", 6, job = 2}},
      job(1, 1, {{"run", 1, 6}}),
    }}
    local r = o:whatif{1}
    assert.equal(6, predictions(r)[1])
    assert.equal(6, r.span_us)
    assert.equal(6, r.work_us)
    assert.equal(0, r.recorded_workers)
    -- As graph:ops() gives it: the caller's wait split around the slices
    -- it ran. The wait's pieces before and after them cost nothing (the
    -- job ended with its last slice): 0-1 submit, 1-2 own, 2-8 the job's
    -- copies and slice, 8-9 the copy of its result, 9-18 own work.
    o = reader.job_ops{stop = 20, queues = {}, lanes = {"caller"}, execs = {
      {job = 1, lane = 1, cat = "w", sub = {2, 1}, ready = 1, ops = {
        {"copy in", 3, 4, lane = 1, cat = "w"}, {"run", 4, 8, lane = 1, cat = "w"},
        {"copy out", 8, 9, lane = 1, cat = "w"}}},
      {thread = true, caller = true, lane = 1, ops = {
        {"submit", 0, 1, lane = 1, job = 1}, {"own", 1, 2, lane = 1}, {"block", 2, 3, lane = 1, job = 1},
        {"job", 3, 4, lane = 1, job = 1}, {"job", 4, 8, lane = 1, job = 1}, {"job", 8, 9, lane = 1, job = 1},
        {"block", 9, 10, lane = 1, job = 1}, {"wait", 10, lane = 1, job = 1},
        {"copy result", 10, 11, lane = 1, cat = "w", job = 1}, {"own", 11, 20, lane = 1}}},
    }}
    r = o:whatif{1}
    assert.same({18, 18, false}, {predictions(r)[1], r.span_us, r.partial})
    assert.equal(18, r.work_us)
  end)

  it("ends a graph whose waits can never be met with what finished, partial", function()
    -- A after B and B after A: neither starts; the caller submits both
    -- (0-1, 1-2) and waits forever: the replay stops at 2.
    local o = reader.job_ops{stop = 10, queues = {1}, execs = {
      caller{{"submit", 0, 1, job = 2}, {"submit", 1, 2, job = 3}, {"block", 2, 10}, {"wait", 10}},
      job(1, 1, {{"wait", 1, job = 3}, {"run", 2, 3}}),
      job(2, 2, {{"wait", 2, job = 2}, {"run", 3, 4}}),
    }}
    local r = o:whatif{1}
    assert.is_true(r.partial)
    assert.equal(2, predictions(r)[1])
    assert.equal(2, r.span_us)
  end)

  it("is partial when the recording is", function()
    local o = reader.job_ops{stop = 2, partial = "lane worker 1 dropped 12 events", queues = {1},
      execs = {caller{{"submit", 0, 1, job = 2}}, job(1, 1, {{"run", 1, 2}})}}
    local r = o:whatif()
    assert.is_true(r.partial)
    assert.equal(2, r.span_us)
  end)

  it("starts a thread other than the caller at its first op, its own work between its ops", function()
    -- Thread T (no caller) submits A at 5-6 (A: 4 us) and waits for it;
    -- it then works 3 us (10-13). A 6-10. work: the submit 1, A 4, T's
    -- own 3; the 5 us before T's first op are not its work.
    local o = reader.job_ops{stop = 13, queues = {1}, execs = {
      {thread = true, lane = 1, ops = {{"submit", 5, 6, job = 2}, {"block", 6, 10, job = 2},
                                       {"wait", 10, job = 2}, {"own", 10, 13}}},
      {job = 1, queue = 1, lane = 2, sub = {1, 1}, ops = {{"run", 6, 10}}},
    }}
    local r = o:whatif{1}
    assert.same({13, 13, 8}, {predictions(r)[1], r.span_us, r.work_us})
  end)

  it("publishes a job where it started inside its submit, not at the submit's end", function()
    -- The caller's submit span runs 0-10 (preempted after the publish),
    -- but job 1 was taken at 2: it runs 2-15; the caller waits for it from
    -- 10 to 15 and works 5 more: 20, as recorded. Readying the job at the
    -- submit's end would run it 10-23 and end the caller at 28.
    local o = reader.job_ops{stop = 20, queues = {1}, execs = {
      caller{{"submit", 0, 10, job = 2}, {"block", 10, 15, job = 2}, {"wait", 15, job = 2}},
      job(1, 1, {{"copy in", 2, 3}, {"run", 3, 15}}),
    }}
    local r = o:whatif{1}
    assert.same({[1] = 20}, predictions(r))
    assert.equal(20, r.span_us)
  end)

  it("replays a job without a submit from its recorded ready time", function()
    -- Two jobs ready at 5 and 6 (3 us each), no thread. One worker: 5-8,
    -- 8-11; two: 5-8, 6-9.
    local o = reader.job_ops{stop = 11, queues = {1}, execs = {
      {job = 1, queue = 1, lane = 1, ready = 5, ops = {{"run", 5, 8}}},
      {job = 2, queue = 1, lane = 1, ready = 6, ops = {{"run", 8, 11}}},
    }}
    local r = o:whatif{1, 2}
    assert.same({[1] = 11, [2] = 9}, predictions(r))
  end)

  it("replays a chain of 20,000 awaits as a loop", function()
    -- Job k awaits job k + 1, submitted after it (the caller submits one
    -- a microsecond). Each job suspends at once; job N runs N..N + 1, and
    -- each end resumes the job before it: job 1 ends at 2N, on one worker
    -- (every job on its resume list) as with a worker per job.
    local N = 20000
    local ops, execs = {}, {}
    for k = 1, N do
      ops[k] = {"submit", k - 1, k, job = k + 1}
      local jops = k < N and {{"suspend", k, 2 * N - k, job = k + 2}, {"wait", 2 * N - k, job = k + 2},
                               {"run", 2 * N - k, 2 * N - k + 1}}
                         or {{"run", N, N + 1}}
      execs[k + 1] = {job = k, queue = 1, lane = 2, sub = {1, k}, ops = jops}
    end
    ops[N + 1] = {"block", N, 2 * N, queue = 1}
    ops[N + 2] = {"wait", 2 * N, queue = 1}
    execs[1] = caller(ops)
    local r = reader.job_ops{stop = 2 * N, queues = {1}, execs = execs}:whatif{1}
    assert.equal(2 * N, predictions(r)[1])
    assert.equal(2 * N, r.span_us)
    assert.equal(2 * N, r.work_us)
    assert.is_false(r.partial)
  end)

  it("checks its worker counts", function()
    local o = reader.job_ops{stop = 1, queues = {}, execs = {}}
    assert.has_error(function() o:whatif{0} end,
      "bad argument #1 to 'whatif' (worker counts must be integers >= 1)")
    assert.has_error(function() o:whatif{"x"} end,
      "bad argument #1 to 'whatif' (worker counts must be integers >= 1)")
    local many = {}
    for i = 1, 65 do many[i] = i end
    assert.has_error(function() o:whatif(many) end, "bad argument #1 to 'whatif' (at most 64 worker counts)")
    assert.has_error(function() o:whatif(setmetatable({}, {__len = function() return -1 end})) end,
      "bad argument #1 to 'whatif' (at most 64 worker counts)")
    assert.has_error(function() o:whatif(5) end, "bad argument #1 to 'whatif' (table expected, got number)")
    local r = o:whatif{3}
    assert.same({{workers = 3, predicted_us = 0}}, r.predictions)
    assert.equal(0, r.span_us)
  end)
end)
