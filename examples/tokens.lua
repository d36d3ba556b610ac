-- A token-by-token pipeline on the job queue, traced: the seed page's
-- example grown into something worth looking at.
--
--   lua5.4 examples/tokens.lua [trace.json]        (make demo)
--
-- Per token: an "embed" job; "attention" spread over the workers with
-- parallel_for (one chunk per head); two "mlp" jobs that run after embed; a
-- "sample" job after both, which awaits a small "decode" job of its own
-- inside a span ("sample + decode": one span, cut at the await, continued
-- when the job resumes). Each category is stamped with profile_tag before
-- its work is dispatched, a "token" marker opens every token, and the
-- caller records a "tokens done" counter.
local jobque = require "jobque"
local p = require "jobque_profile"

local out = arg[1] or "trace.json"
local TOKENS, HEADS = 8, 8

local embed = p.profile_category("embed", p.PROFILE_COLOR_BLUE)
local attention = p.profile_category("attention", p.PROFILE_COLOR_CORAL)
local mlp = p.profile_category("mlp", p.PROFILE_COLOR_GREEN)
local sample = p.profile_category("sample", p.PROFILE_COLOR_PURPLE)
-- the span's category, named with its colour: by its name's hash alone it
-- would be coral, attention's, and not stand out in the sample slices
p.profile_category("sample + decode", p.PROFILE_COLOR_AMBER)
local tok = p.profile_marker_id("token")

-- Some arithmetic standing in for real work: about `units` thousand steps.
local function work(units, seed)
  local x = seed or 0
  for i = 1, units * 1000 do x = (x + i * 7) % 1000003 end
  return x
end

p.profile_start(65536, {sample_hz = 1000}) -- and sample the Lua stacks: 1,000 a CPU-second
local last = jobque.with_job_que(function(q) -- as many workers as hardware threads
  local state = 1
  for t = 1, TOKENS do
    p.profile_marker(tok, t)                        -- unit boundary

    p.profile_tag(embed)
    local e = q:submit(work, 300, state)

    p.profile_tag(attention)
    local heads = q:parallel_for(1, HEADS, function(lo, hi)
      local s = 0
      for h = lo, hi do s = s + work(150, h) end
      return s
    end, HEADS)

    p.profile_tag(mlp)
    local up = q:after({e}, function(job) return work(200, job:wait()) end, e)
    local gate = q:after({e}, function(job) return work(200, job:wait() + 1) end, e)

    p.profile_tag(sample)
    local s = q:after({up, gate}, function(a, b, h, step)
      local P = require "jobque_profile"
      return P.profile_span("sample + decode", function() -- a span across an await
        local x = step(100, a:wait() + b:wait() + h[1])
        return require("jobque").current():submit(step, 50, x):wait()
      end)
    end, up, gate, heads, work)
    state = s:wait()
    p.profile_counter("tokens done", t)
  end
  return state
end)
p.profile_stop()

local proto = out:gsub("%.json$", "") .. ".pftrace" -- the same session in Perfetto's own format
local ok, err = p.profile_save(out)
if ok then ok, err = p.profile_save(proto) end
if not ok then
  io.stderr:write("tokens: ", err, "\n")
  os.exit(1)
end
local dir = os.getenv("PWD")
local where = out:sub(1, 1) == "/" and out or ((dir and dir .. "/" or "") .. out)
print(("ran %d tokens (last state %d) on %d workers; wrote %s"):format(
  TOKENS, last, require("jobque.core").hardware_threads(), where))
print(("and %s: the same session as a Perfetto protobuf trace (its CPU samples drawn as flame graphs)")
  :format(proto))
print([[
Open it: go to https://ui.perfetto.dev, choose "Open trace file" and pick that file.
  - lanes "worker 0".."worker N-1" run the jobs; "caller" (last) submits and waits;
  - each job slice is named by its category: embed, attention, mlp, sample;
  - click a slice and look at "Flow events": arrows run from each submit to the
    job's first slice, and from an awaited job's end to where its waiter resumed;
  - the "token" markers sit on the global instant track at the top; the
    category colours and marker kinds are in the file's "jobqueProfile" key;
  - "sample + decode" spans nest in the sample jobs' slices: one piece before
    the await of the decode job, one after (same args.span); the counter
    tracks "jobs ready/running/suspended", "heap worker N KB" and "tokens
    done value" are in the process's group.]])
