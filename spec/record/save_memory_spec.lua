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
    for _, name in ipairs{"m.json"} do
      local path = S.tmpfile(name)
      T.alloc_watch(true)
      assert(p.profile_save(path))
      local peak = T.alloc_watch(false)
      os.remove(path)
      assert(peak <= bound, ("%s: the save's peak %.1f MB is above the bound %.1f MB"):format(name, peak / 1e6,
                                                                                           bound / 1e6))
    end
  end)
end)
