--- jobque_profile.graph: the job graph of a trace model, every job's
-- latencies, and the graph's critical path, as the report uses them. The
-- graph is built and walked in C (jobque_profile.reader's job_graph:
-- src/reader/graph.c and graph_path.c; docs/internals.md describes it).
--
-- A job is what a trace's job slices, submits, waits, copies, "dependency
-- done" and "wake job" flows and awaits name by one id (any value: an
-- integer, or a float, a string, false ...). Its start is where its worker
-- took it: its copy in, else its first slice; its finish the end of its
-- copy out, else of its last slice. Its ready time is the "dependency
-- done" of its last `after` dependency (one marked ready), else the end
-- of its submit.
--
-- figures(model [, top [, opts]]) -> latency, critical_path, whatif, or nil without jobs
-- (opts.steps = false: the path without its steps, which the text does not show):
-- latency = { ready = dist, resume = dist, run = dist, suspended = dist,
--   top_ready[i] = { job, category, latency_us, ready_us, start_us } }
--   dist = { count, p50_us, p95_us, max_us, by_category[i] = { name, count,
--   p50_us, p95_us, max_us } } (nearest-rank percentiles; 0 when count is 0).
-- critical_path = the walk over the happens-before graph (ops:critical_path(),
--   src/reader/ops_path.c): { duration_us, start_us, finish_us, share,
--   session_us, total_run_us, achieved, jobs[], steps[i] =
--   { kind, start_us, dur_us, lane, job, category, held_by } (absent with
--   opts.steps = false), by_kind[i] = { kind, us }, by_category[i] = { name,
--   run_us }, held_by[i] = { job, us } (worker busy by the job that held the
--   worker, most first), partial, partial_why }
-- whatif = the replay (ops:whatif(), src/reader/replay.c): { recorded_workers,
--   recorded_us, work_us, span_us, parallelism, as_recorded_us, queues[i] = { queue, workers },
--   predictions[i] = { workers, predicted_us }, partial } for M.WHATIF_WORKERS workers per
--   queue and each queue's recorded workers (docs/cli.md).
-- Ties are ordered: jobs of one value by id (numbers by value, then
-- strings by their bytes, then false, then other ids in the order first
-- met), a job's slices and awaits of one time in the order read.
local C = require "jobque_profile.reader"

local M = {}

--- The job graph of a model (a userdata: count(), latency([top]),
-- ops(model), the happens-before graph the walk and the replay read;
-- jobque_profile.reader's page_graph writes the page's part from it).
function M.build(model)
  return C.job_graph(model)
end

--- The worker counts the replay predicts the session for (and unlimited).
M.WHATIF_WORKERS = {1, 2, 4, 8, 16}

--- The report's latency, critical path and replay figures, from one graph
-- (the page's are from the same: page_graph); opts.steps = false leaves
-- out the path's steps (a table each: a big graph's memory).
function M.figures(model, top, opts)
  local g <close> = C.job_graph(model) -- both freed on return (the command stops the collector)
  if g:count() == 0 then return nil end
  local ops <close> = g:ops(model)
  local steps = not (opts and opts.steps == false)
  return g:latency(top or 10), ops:critical_path{steps = steps}, ops:whatif(M.WHATIF_WORKERS)
end

return M
