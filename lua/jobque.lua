--- jobque: a multi-threaded, coroutine-driven job queue for Lua 5.4.
--
-- Workers are OS threads, each with its own lua_State; a job is a Lua
-- function copied to a worker (bytecode and upvalues) with copied
-- arguments, run there as a coroutine. See docs/queue.md.
local core = require "jobque.core"

local M = {}
local methods = core.queue_methods

local OPTIONS = {workers = true, init = true, name = true}

local function check_options(fname, opts, level)
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then
    error(("%s: options must be a table, got %s"):format(fname, type(opts)), level)
  end
  for k in pairs(opts) do
    if not OPTIONS[k] then
      error(("%s: unknown option '%s' (known: workers, init, name)"):format(fname, tostring(k)), level)
    end
  end
  local workers = opts.workers
  if workers == nil then
    workers = core.hardware_threads()
  elseif math.type(workers) ~= "integer" or workers < 0 or workers > 256 then
    error(("%s: option 'workers' must be an integer from 0 to 256, got %s")
      :format(fname, tostring(workers)), level)
  end
  if opts.init ~= nil and type(opts.init) ~= "function" then
    error(("%s: option 'init' must be a function, got %s"):format(fname, type(opts.init)), level)
  end
  if opts.name ~= nil and (type(opts.name) ~= "string" or #opts.name > 32) then
    error(("%s: option 'name' must be a string of at most 32 bytes"):format(fname), level)
  end
  return workers, opts.init, opts.name
end

-- level: that of the user's call, seen from the function that calls new
-- (which must not tail-call it).
local function new(fname, opts, level)
  local workers, init, name = check_options(fname, opts, level + 2)
  local ok, q = pcall(core.queue_new, workers, init, name, package.path, package.cpath)
  if not ok then error(("%s: %s"):format(fname, tostring(q)), level + 1) end
  return q
end

--- A new queue. Close it with q:close(), or let `local q <close> = ...` do it.
function M.new(opts)
  local q = new("jobque.new", opts, 2)
  return q
end

-- How many failures a report lists; pwait_all returns them all.
local REPORT_FIRST = 3

-- The first line of a failure's error, for a report.
local function first_line(err)
  if type(err) == "string" then return err:match("^[^\n]*") end
  if type(err) == "number" or type(err) == "boolean" then return tostring(err) end
  return "(an error value of type " .. type(err) .. ")"
end

-- The message for failures nobody observed (a list from core.queue_collect).
local function report(fname, failures)
  local n, not_run = #failures, 0
  for _, f in ipairs(failures) do not_run = not_run + f.not_run end
  local out = {("%s: %d %s failed and no wait, pwait or status returned %s error"):format(
    fname, n, n == 1 and "job" or "jobs", n == 1 and "its" or "their")}
  if not_run > 0 then
    out[1] = out[1] .. (" (%d %s that depend on %s did not run)"):format(
      not_run, not_run == 1 and "job" or "jobs", n == 1 and "it" or "them")
  end
  out[1] = out[1] .. ":"
  for i = 1, math.min(n, REPORT_FIRST) do
    local f = failures[i]
    out[#out + 1] = ("  job #%d (submitted at %s): %s"):format(f.id, f.submitted_at, first_line(f.error))
  end
  if n > REPORT_FIRST then
    out[#out + 1] = ("  (and %d more: pwait_all returns them all)"):format(n - REPORT_FIRST)
  end
  return table.concat(out, "\n")
end

--- Waits for every job submitted so far (and those they submit); raises one
-- error listing the failures nobody observed, if there are any.
function methods:wait_all()
  local ok, failures = core.queue_collect(self, "wait_all")
  if not ok then error(report("wait_all", failures), 2) end
end

--- As wait_all, but returns true, or false and the list of failures nobody
-- observed ({id=, error=, submitted_at=, not_run=} each, oldest first).
function methods:pwait_all()
  return core.queue_collect(self, "pwait_all")
end

--- Creates a queue, calls fn(q), waits for every job of the queue (those
-- submitted by jobs too), closes the queue, and returns fn's results; raises
-- fn's error (after cancelling the jobs not started), or one error listing
-- the failures nobody observed.
function M.with_job_que(opts, fn)
  if fn == nil and type(opts) == "function" then
    opts, fn = nil, opts
  end
  if type(fn) ~= "function" then
    error("jobque.with_job_que: expected a function: with_job_que([opts,] fn)", 2)
  end
  local q = new("jobque.with_job_que", opts, 2)
  local res = table.pack(pcall(fn, q))
  local failures
  if res[1] and not q:is_closed() then -- (fn may have closed it)
    local ok, all_ok, list = pcall(core.queue_collect, q, "jobque.with_job_que")
    if not ok then
      res = {false, all_ok}
    elseif not all_ok then
      failures = list
    end
  end
  q:close()
  if not res[1] then error(res[2], 0) end
  if failures then error(report("jobque.with_job_que", failures), 2) end
  return table.unpack(res, 2, res.n)
end

--- The queue of the job running here, or nil outside a job.
function M.current()
  return core.queue_current()
end

local function check_integer(v, n, what)
  if math.type(v) ~= "integer" then
    error(("bad argument #%d to 'parallel_for' (%s must be an integer, got %s)")
      :format(n, what, math.type(v) or type(v)), 3)
  end
end

--- Calls fn(lo, hi) on chunks that cover first..last exactly once, spread
-- over the workers; returns the list of each chunk's first result, in chunk
-- order, or raises the error of the first chunk (in chunk order) that failed.
function methods:parallel_for(first, last, fn, chunks)
  check_integer(first, 1, "first")
  check_integer(last, 2, "last")
  if type(fn) ~= "function" then
    error(("bad argument #3 to 'parallel_for' (function expected, got %s)"):format(type(fn)), 2)
  end
  local n = last - first + 1
  if chunks == nil then
    chunks = math.max(1, self:workers()) * 4
  else
    check_integer(chunks, 4, "chunks")
    if chunks < 1 then error("bad argument #4 to 'parallel_for' (chunks must be >= 1)", 2) end
  end
  if n <= 0 then return {} end
  if chunks > n then chunks = n end
  local jobs = {}
  for c = 0, chunks - 1 do
    local lo = first + n * c // chunks
    local hi = first + n * (c + 1) // chunks - 1
    jobs[c + 1] = core.queue_submit_chunk(self, fn, lo, hi)
  end
  local results, err = {}, nil
  for c = 1, chunks do
    local ok, r = jobs[c]:pwait()
    if ok then
      results[c] = r
    elseif err == nil then
      err = {r}
    end
  end
  if err then error(err[1], 0) end
  return results
end

return M
