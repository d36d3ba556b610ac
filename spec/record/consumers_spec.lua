-- Saved traces read by programs users open them in: Chrome DevTools' trace
-- engine and speedscope's importer, from npm at the versions
-- package-lock.json pins (`npm ci`, the Makefile's node_modules step),
-- run by spec/consumers/read_trace.mjs. Both read times as doubles; on each
-- lane every slice must nest in another or follow it, as recorded.
local S = require "support"
local cjson = require "cjson"
local p = require "jobque_profile"
local jobque = require "jobque"

-- What the two consumers made of the trace at `path` (see read_trace.mjs).
local function consumers_read(path)
  local out_path = S.tmpfile("consumers.json")
  local cmd = ("timeout 300 node spec/consumers/read_trace.mjs '%s' >'%s' 2>&1"):format(path, out_path)
  local ok = os.execute(cmd)
  local out = S.read(out_path)
  assert(ok, "spec/consumers/read_trace.mjs failed (its packages come from `npm ci`, "
    .. "which `make node_modules/.package-lock.json` runs):\n" .. out)
  return cjson.decode(out)
end

-- The complete events of the trace at `path`, the lanes that have any, and
-- what speedscope should import: a trace without samples as one profile per
-- lane with slices; a trace with samples (speedscope then reads only the
-- samples) as one per lane with samples, each named after its lane
-- ("<lane name> (tid N)" in its name: a sample without the events' pid
-- would make it "pid NaN").
local function slices_of(path)
  local doc = cjson.decode(S.read(path))
  local n, lanes, count = 0, {}, 0
  local names = {}
  for _, e in ipairs(doc.traceEvents) do
    if e.ph == "X" then
      n = n + 1
      if not lanes[e.tid] then lanes[e.tid], count = true, count + 1 end
    elseif e.ph == "M" and e.name == "thread_name" then
      names[e.tid] = e.args.name
    end
  end
  if doc.samples == nil then return n, count end
  local sampled, expect = {}, {}
  for _, s in ipairs(doc.samples) do
    if not sampled[s.tid] then
      sampled[s.tid] = true
      expect[#expect + 1] = ("%s (tid %d)"):format(names[s.tid], s.tid)
    end
  end
  table.sort(expect)
  return n, #expect, expect
end

local function assert_read_whole(path, sampled)
  local n, profiles, names = slices_of(path)
  assert.is_true(n > 100, "a trace of few slices: " .. n)
  assert.are.equal(sampled, names ~= nil, "the trace has samples or not, as recorded")
  local r = consumers_read(path)
  assert.are.equal(n, r.devtools.slices, "DevTools took other slices than the file's")
  assert.are.same({}, r.devtools.drops, ("DevTools dropped %d of %d slices"):format(r.devtools.dropped, n))
  assert.are.equal(0, r.devtools.dropped)
  assert.are.equal(profiles, r.speedscope.profiles, "speedscope imported other lanes than the file's")
  if names then
    local got = {}
    for i, name in ipairs(r.speedscope.names) do got[i] = name:match("[^,]*, (.*)$") or name end
    table.sort(got)
    assert.are.same(names, got, "speedscope named the sampled lanes otherwise")
  end
  assert.are.same({}, r.speedscope.warns, ("speedscope warned %d times"):format(r.speedscope.warnings))
  assert.are.equal(0, r.speedscope.warnings)
end

-- (The recording under the sanitizers is what the other specs check.)
local describe_in_node = S.plain_only(describe, pending, "reads with node")

describe_in_node("a saved trace read by Chrome DevTools' trace engine and speedscope's importer", function()
  it("keeps every slice of the demo's job graph in place (copies, spans across awaits, waits), "
     .. "and speedscope reads its samples per lane", function()
    assert_read_whole(S.demo_trace(), true)
  end)

  it("keeps every slice of a queue's many short jobs, their copies and nested spans in place", function()
    local cat = p.profile_category("consumers short")
    p.profile_start(100000)
    jobque.with_job_que({workers = 2}, function(q)
      local jobs = {}
      for i = 1, 300 do
        p.profile_tag(cat)
        jobs[i] = q:submit(function(xs)
          local P = require "jobque_profile"
          return P.profile_span("outer", function()
            return P.profile_span("inner", function() return #xs end)
          end)
        end, {i, tostring(i), {i}})
        p.profile_tag(0)
      end
      for i = 1, 300 do assert(jobs[i]:wait() == 3) end
      q:wait_all()
    end)
    p.profile_stop()
    local _, _, path = S.save(p)
    assert_read_whole(path, false)
  end)
end)
