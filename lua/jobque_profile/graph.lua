--- jobque_profile.graph: the job graph of a trace model, every job's
-- latencies, and the graph's critical path (issue 11, sections 3 and 4).
--
-- build(model) -> graph: { jobs = id -> job, order = jobs by first start,
--   session = the trace's length (us), total_run = run time of all jobs }
--   job = { id, category, submit = { ts, dur, lane, parent, wait }, ready,
--           start, finish, run, suspended, slices[i] = { ts, dur, cat, await },
--           deps[i] = { job, ts }, ready_dep, wakes[] (ts), resumes[] (latency),
--           copy_in, copy_out (spans), ready_latency }
--   A job's start is where its worker took it: its copy in, else its first
--   slice; its finish the end of its copy out, else of its last slice. Its
--   ready time is the "dependency done" of its last `after` dependency (one
--   marked ready), else the end of its submit.
-- latency(graph) -> { ready = dist, resume = dist, run = dist, suspended = dist,
--   top_ready[i] = { job, category, latency_us, ready_us, start_us } }
--   dist = { count, p50_us, p95_us, max_us, by_category[i] = { name, count,
--   p50_us, p95_us, max_us } } (nearest-rank percentiles; 0 when count is 0).
-- critical_path(graph) -> { duration_us, share, jobs[], by_category[i] =
--   { name, run_us }, run_us, ready_us, resume_us, copy_us, caller_us,
--   bound, parallelism, achieved } or nil without jobs (see docs/cli.md).
-- No recursion: the walk is a loop, each step going back in time.
local M = {}

local function int(v) return math.tointeger(v) or v end

-- The lists a job has none of share one empty table (a trace can hold a
-- million jobs, most with no dependency, wake-up or await): push makes a
-- job's own list when it gets its first entry.
local NONE = setmetatable({}, {__newindex = function() error("jobque_profile.graph: NONE is read-only", 2) end})

local function push(j, field, v)
  local list = j[field]
  if list == NONE then
    list = {}
    j[field] = list
  end
  list[#list + 1] = v
end

local function job_of(jobs, id)
  id = int(id)
  if id == nil then return nil end
  local j = jobs[id]
  if not j then
    -- The fields set later are named too (as nil): the table is made at its
    -- final size, not grown field by field (a trace can hold a million jobs).
    j = {id = id, slices = {}, deps = NONE, wakes = NONE, awaits = NONE, resumes = NONE, run = 0, suspended = 0,
         category = nil, submit = nil, copy_in = nil, copy_out = nil, start = nil, finish = nil, ready = nil,
         ready_latency = nil} -- 16 fields (ready_dep, rare, is a 17th)
    jobs[id] = j
  end
  return j
end

local function by_ts(a, b) return a.ts < b.ts end

local function by_id(a, b) return a.id < b.id end

-- Sorts the jobs of `list` by their `field` (a number), ties by id, so the
-- order (and a report) does not depend on hashing. The values are sorted
-- as numbers (no Lua comparison per step: a trace can hold a million
-- jobs), then the jobs put back by value. (jobque.core's sort_jobs does
-- the same in C; this is the sort without the core, and for what it
-- leaves: an id or value beyond 2^53.)
function M._lua_sort_jobs(list, field)
  local bucket, values = {}, {}
  for _, j in ipairs(list) do
    local v = j[field]
    local b = bucket[v]
    if b == nil then
      bucket[v] = j
      values[#values + 1] = v
    elseif b.id then -- a second job with this value
      bucket[v] = {b, j}
    else
      b[#b + 1] = j
    end
  end
  table.sort(values)
  local n = 0
  for _, v in ipairs(values) do
    local b = bucket[v]
    if b.id then
      n = n + 1
      list[n] = b
    else
      table.sort(b, by_id)
      for _, j in ipairs(b) do
        n = n + 1
        list[n] = j
      end
    end
  end
  return list
end

local native_sort_jobs, native_sort_numbers, native_graph -- jobque.core's, when the core is there
do
  local found, core = pcall(require, "jobque_profile.reader")
  native_sort_jobs = found and type(core) == "table" and core.sort_jobs or nil
  native_sort_numbers = found and type(core) == "table" and core.sort_numbers or nil
  native_graph = found and type(core) == "table" and core.job_graph or nil
end

--- false: figures and the page use the Lua code below even with the core
-- (the specs compare both).
M.use_core = true

--- The job graph built in C (jobque.core's job_graph: flat arrays, no
-- table per job), or nil without the core, with M.use_core false, or for a
-- model it leaves to the Lua code (an id that is no integer, two slices of
-- a job at one time, ...). Its methods: count() (jobs with a slice),
-- latency(top) and critical_path() (as M.latency and M.critical_path; the
-- latter false when it leaves the path to the Lua code), page(model) (the
-- page's graph part, jobque_profile.page's; nil: left to the Lua code).
function M.native(model)
  if native_graph and M.use_core then return native_graph(model) end
  return nil
end

local function sort_jobs(list, field)
  if native_sort_jobs and native_sort_jobs(list, field) then return list end
  return M._lua_sort_jobs(list, field)
end

--- The job graph of a model read by jobque_profile.trace.
function M.build(model)
  local jobs = {}
  local waits = {} -- lane -> its wait slices (for the caller's part of the path)
  for _, lane in ipairs(model.lanes) do
    local cur, cur_ts, cur_stop -- the last job slice started on this lane: a submit inside it is that job's
    local lane_waits = {}
    local lkind, ljob, lts, ldur, lcat = lane.kind, lane.job, lane.ts, lane.dur, lane.cat
    for i = 1, lane.n do
      local kind, id, ts, dur = lkind[i], ljob[i] or nil, lts[i], ldur[i]
      if kind == "job" then
        local j = job_of(jobs, id)
        if j then
          local s = {ts = ts, dur = dur, cat = lcat[i], lane = lane}
          j.slices[#j.slices + 1] = s
          j.category = j.category or lcat[i]
          j.run = j.run + dur
          cur, cur_ts, cur_stop = j.id, ts, ts + dur
        end
      elseif kind == "submit" then
        local j = job_of(jobs, id)
        if j then
          local sub = {ts = ts, dur = dur, lane = lane}
          if cur and ts >= cur_ts and ts + dur <= cur_stop then
            sub.parent = cur
          else
            sub.wait = lane_waits[#lane_waits] -- the last wait of the thread before it
          end
          j.submit = sub
        end
      elseif kind == "wait" then
        lane_waits[#lane_waits + 1] = {ts = ts, stop = ts + dur, job = int(id)}
      end
    end
    waits[lane] = lane_waits
  end
  local cts, cdur, cname, cjob = model.copy_ts, model.copy_dur, model.copy_name, model.copy_job
  for i = 1, #cts do -- the copies' columns (model.copies is their view)
    local j = cjob[i] and jobs[cjob[i]]
    local name = j and cname[i]
    if name == "copy in" then j.copy_in = {ts = cts[i], dur = cdur[i]} end
    if name == "copy out" then j.copy_out = {ts = cts[i], dur = cdur[i]} end
  end
  for _, e in ipairs(model.flows) do
    local args = type(e.args) == "table" and e.args or {}
    if e.name == "dependency done" then
      local j = job_of(jobs, args.dependant)
      if j then
        push(j, "deps", {job = int(args.job), ts = e.ts})
        if args.ready == true then j.ready, j.ready_dep = e.ts, int(args.job) end
      end
    elseif e.name == "wake job" then
      local j = job_of(jobs, args.job)
      if j then push(j, "wakes", e.ts) end
    end
  end
  for _, w in ipairs(model.awaits) do
    local j = job_of(jobs, w.job)
    if j then
      push(j, "awaits", w)
      j.suspended = j.suspended + w.dur
    end
  end
  local order, total_run = {}, 0
  for _, j in pairs(jobs) do
    local sl = j.slices
    if #sl > 0 then
      if #sl > 1 then table.sort(sl, by_ts) end
      if #j.awaits > 1 then table.sort(j.awaits, by_ts) end
      if #j.wakes > 1 then table.sort(j.wakes) end
      local first, last = sl[1], sl[#sl]
      j.start = j.copy_in and math.min(j.copy_in.ts, first.ts) or first.ts
      j.finish = math.max(last.ts + last.dur, j.copy_out and j.copy_out.ts + j.copy_out.dur or 0)
      if not j.ready and j.submit then j.ready = j.submit.ts + j.submit.dur end
      if j.ready then j.ready_latency = math.max(0, j.start - j.ready) end
      -- Each await, on the slice it resumed (the first slice after it began).
      local k = 1
      for _, w in ipairs(j.awaits) do
        while k <= #sl and sl[k].ts <= w.ts do k = k + 1 end
        if sl[k] then sl[k].await = w end
      end
      -- Each wake-up, on the first slice at or after it: the resume latency.
      k = 1
      for _, t in ipairs(j.wakes) do
        while k <= #sl and sl[k].ts < t do k = k + 1 end
        if sl[k] then push(j, "resumes", sl[k].ts - t) end
      end
      order[#order + 1] = j
    end
  end
  sort_jobs(order, "start")
  for _, j in ipairs(order) do total_run = total_run + j.run end -- in a set order (a float sum depends on it)
  local ends = {} -- jobs by finish: the job a "wait all" waited for last
  for i, j in ipairs(order) do ends[i] = j end
  sort_jobs(ends, "finish")
  return {jobs = jobs, order = order, ends = ends, waits = waits, total_run = total_run,
          session = math.max(0, (model.t1 or 0) - (model.t0 or 0))}
end

-- Nearest-rank percentile of a sorted list.
local function rank(sorted, p)
  local n = #sorted
  if n == 0 then return nil end
  return sorted[math.max(1, math.ceil(p * n))]
end

local function summary(values)
  -- in C when the core is there (equal values, as 3 and 3.0, print the same)
  if not (native_sort_numbers and native_sort_numbers(values)) then table.sort(values) end
  return {count = #values, p50_us = rank(values, 0.5) or 0, p95_us = rank(values, 0.95) or 0,
          max_us = values[#values] or 0} -- 0 when there are none (count 0)
end

-- A distribution overall and by category: `add(category, value)` then `done()`.
local function distribution()
  local all, by, names = {}, {}, {}
  local d = {}
  function d.add(cat, v)
    all[#all + 1] = v
    local list = by[cat]
    if not list then
      list = {}
      by[cat] = list
      names[#names + 1] = cat
    end
    list[#list + 1] = v
  end
  function d.done()
    local out = summary(all)
    table.sort(names)
    out.by_category = {}
    for _, name in ipairs(names) do
      -- one category: its values are all of them (no second sort)
      local s = #names == 1 and {count = out.count, p50_us = out.p50_us, p95_us = out.p95_us, max_us = out.max_us}
                or summary(by[name])
      s.name = name
      out.by_category[#out.by_category + 1] = s
    end
    return out
  end
  return d
end

--- Ready, resume, run and suspended time of every job, and the jobs that
-- waited longest for a worker.
function M.latency(g, top)
  top = top or 10
  local ready, resume, run, suspended = distribution(), distribution(), distribution(), distribution()
  local waited = {}
  for _, j in ipairs(g.order) do
    local cat = j.category or "job"
    if j.ready_latency then
      ready.add(cat, j.ready_latency)
      waited[#waited + 1] = j
    end
    for _, r in ipairs(j.resumes) do resume.add(cat, r) end
    run.add(cat, j.run)
    suspended.add(cat, j.suspended)
  end
  sort_jobs(waited, "ready_latency") -- ascending, ties by id: the top ones from the end
  local top_ready, n = {}, #waited
  local i, first = 0, n -- waited[first .. last]: one latency, in id order
  while i < top and first >= 1 do
    local last = first
    while first > 1 and waited[first - 1].ready_latency == waited[last].ready_latency do first = first - 1 end
    for k = first, last do
      if i < top then
        i = i + 1
        top_ready[i] = waited[k]
      end
    end
    first = first - 1
  end
  for k = 1, i do
    local j = top_ready[k]
    top_ready[k] = {job = j.id, category = j.category or "job", latency_us = j.ready_latency,
                    ready_us = j.ready, start_us = j.start}
  end
  return {ready = ready.done(), resume = resume.done(), run = run.done(), suspended = suspended.done(),
          top_ready = top_ready}
end

-- The last job in g.ends that finished at or before t, or nil.
local function finished_by(g, t)
  local ends = g.ends
  local lo, hi = 1, #ends
  local found
  while lo <= hi do
    local mid = (lo + hi) // 2
    if ends[mid].finish <= t then
      found = ends[mid]
      lo = mid + 1
    else
      hi = mid - 1
    end
  end
  return found
end

--- The critical path: from the job that finished last, back through what
-- held each step up longest, to the first job (docs/cli.md explains it).
function M.critical_path(g)
  local last = g.ends[#g.ends]
  if not last then return nil end
  local jobs = g.jobs
  local run_by, seq = {}, {}
  local parts = {run_us = 0, ready_us = 0, resume_us = 0, copy_us = 0, caller_us = 0}
  local function add(part, v)
    if v > 0 then parts[part] = parts[part] + v end
  end
  local cursor = {} -- job -> its latest slice not walked yet: t only goes back
  local j, t = last, last.finish
  local steps, limit = 0, 16
  for _, x in ipairs(g.order) do limit = limit + #x.slices + 2 end
  while j and steps < limit do
    steps = steps + 1
    if seq[#seq] ~= j.id then seq[#seq + 1] = j.id end
    local sl = j.slices
    local k = cursor[j] or #sl
    while k >= 1 and sl[k].ts > t do k = k - 1 end
    if k < 1 then break end -- inconsistent times (a hand-made file): stop here
    local s = sl[k]
    local stop = s.ts + s.dur
    if t > stop then add("copy_us", t - stop) end -- its copy out, after its last slice
    local ran = math.min(t, stop) - s.ts
    if ran > 0 then
      parts.run_us = parts.run_us + ran
      run_by[s.cat] = (run_by[s.cat] or 0) + ran
    end
    t = s.ts
    cursor[j] = k - 1
    if k > 1 then -- a slice after a suspension: back to what it waited for
      local prev_stop = sl[k - 1].ts + sl[k - 1].dur
      local a = s.await and s.await.awaits and jobs[s.await.awaits]
      if a and a ~= j and a.finish and a.finish <= t then
        add("resume_us", t - a.finish)
        j, t = a, a.finish
      else
        add(s.await and "resume_us" or "ready_us", t - prev_stop) -- unknown job, or a cooperative yield
        t = math.min(t, prev_stop)
      end
    else -- its first slice: what made it start
      if j.copy_in and j.copy_in.ts < t then
        add("copy_us", t - j.copy_in.ts)
        t = j.copy_in.ts
      end
      local d = j.ready_dep and jobs[j.ready_dep]
      local sub = j.submit
      if d and d ~= j and d.finish and d.finish <= t then
        add("ready_us", t - d.finish)
        j, t = d, d.finish
      elseif sub then
        local sub_end = sub.ts + sub.dur
        add("ready_us", t - sub_end)
        add("copy_us", math.min(t, sub_end) - sub.ts) -- the submit: its arguments encoded
        local parent = sub.parent and jobs[sub.parent]
        if parent and parent ~= j and parent.finish then
          j, t = parent, math.min(t, sub.ts)
        else -- submitted by the caller (or another thread)
          t = math.min(t, sub.ts)
          local w = sub.wait
          local by = w and (w.job and jobs[w.job] or finished_by(g, w.stop))
          if by and by ~= j and by.finish and by.finish <= t then
            add("caller_us", t - by.finish) -- the caller between a job's end and its next submit
            j, t = by, by.finish
          else
            j = nil
          end
        end
      else
        j = nil
      end
    end
  end
  local duration = last.finish - t
  local by_category = {}
  for name, us in pairs(run_by) do by_category[#by_category + 1] = {name = name, run_us = us} end
  table.sort(by_category, function(a, b)
    if a.run_us ~= b.run_us then return a.run_us > b.run_us end
    return a.name < b.name
  end)
  local ids = {}
  for i = #seq, 1, -1 do ids[#ids + 1] = seq[i] end
  local session = g.session
  -- The path with a worker always free: its ready latency is what more
  -- workers take away, so the bound and the graph's parallelism use this.
  local floor = duration - parts.ready_us
  local cp = {duration_us = duration,
              floor_us = floor, start_us = t, finish_us = last.finish, jobs = ids, by_category = by_category,
              share = session > 0 and duration / session or nil,
              bound = floor > 0 and session / floor or nil,
              parallelism = floor > 0 and g.total_run / floor or nil,
              achieved = session > 0 and g.total_run / session or nil,
              total_run_us = g.total_run, session_us = session}
  for k, v in pairs(parts) do cp[k] = v end
  return cp
end

--- Everything above, for the report: latency and critical_path figures.
-- The job graph's own tables (the third result) only from the Lua code.
function M.figures(model, top)
  local cg = M.native(model)
  if cg then
    if cg:count() == 0 then return nil, nil end
    local cp = cg:critical_path()
    if cp ~= false then return cg:latency(top), cp end
  end
  local g = M.build(model)
  if #g.order == 0 then return nil, nil, g end
  return M.latency(g, top), M.critical_path(g), g
end

return M
