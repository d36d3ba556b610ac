-- The command when an allocation of the reader's C module fails, at each
-- allocation in turn: a tiny malloc shim (LD_PRELOAD) fails the n-th
-- malloc, calloc or realloc called from jobque_profile/reader.so (the
-- interpreter's own allocations go through). Whatever n, the command
-- either gives the output it gives with all the memory it wants, or says
-- what its usage line promises for memory (exit 1, one line "not enough
-- memory to <read / draw a page of> N MB of trace ... ulimit -v ..."): a
-- failed allocation of the figures, the job graph or the page is no
-- "internal error ... please report" (cli.md: that line is for bugs).
local S = require "support"

local SHIM = [[
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
static long failat = -1, count;
static int from_reader(void *ra) {
  Dl_info info;
  return dladdr(ra, &info) && info.dli_fname && strstr(info.dli_fname, "jobque_profile/reader.so");
}
static int fail(void *ra) {
  if (failat < 0) {
    const char *s = getenv("JQ_FAIL_AT");
    failat = s ? atol(s) : 0;
  }
  return failat > 0 && from_reader(ra) && ++count == failat;
}
void *malloc(size_t n) {
  static void *(*real)(size_t);
  if (!real) real = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
  return fail(__builtin_return_address(0)) ? NULL : real(n);
}
void *calloc(size_t a, size_t b) {
  static void *(*real)(size_t, size_t);
  if (!real) real = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
  return fail(__builtin_return_address(0)) ? NULL : real(a, b);
}
void *realloc(void *p, size_t n) {
  static void *(*real)(void *, size_t);
  if (!real) real = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
  return fail(__builtin_return_address(0)) ? NULL : real(p, n);
}
]]

-- Two jobs (a submit each, a copy, a dependency), two markers, a counter:
-- the loader, the figures, the job graph and the page all allocate.
local TRACE = [[{"traceEvents":[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 0"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"caller"}},
{"ph":"i","s":"g","ts":0,"pid":1,"tid":2,"name":"tok","args":{"arg":1}},
{"ph":"X","ts":1,"dur":1,"pid":1,"tid":2,"name":"submit work","cat":"submit","args":{"job":1}},
{"ph":"X","ts":2,"dur":1,"pid":1,"tid":2,"name":"submit work","cat":"submit","args":{"job":2}},
{"ph":"X","ts":3,"dur":1,"pid":1,"tid":1,"name":"copy in","cat":"copy","args":{"job":1,"bytes":9,"category":"work"}},
{"ph":"X","ts":4,"dur":5,"pid":1,"tid":1,"name":"work","cat":"job","args":{"job":1}},
{"ph":"X","ts":9,"dur":0,"pid":1,"tid":1,"name":"dependency done","cat":"flow","args":{"job":1,"dependant":2,"ready":true}},
{"ph":"i","s":"g","ts":10,"pid":1,"tid":2,"name":"tok","args":{"arg":2}},
{"ph":"X","ts":10,"dur":2,"pid":1,"tid":1,"name":"work","cat":"job","args":{"job":2}},
{"ph":"C","ts":11,"pid":1,"name":"jobs","args":{"ready":1,"running":2}}
],
"jobqueProfile":{"version":1,"startUs":0,"stopUs":20}}
]]

local it_plain = S.plain_only(it, pending, "LD_PRELOAD beside a sanitizer's runtime")

describe("jobque-profile when the reader's C allocations fail one by one", function()
  local shim, path
  setup(function()
    if S.sanitized then return end
    local src = S.tmpfile("fail_alloc.c")
    S.write(src, SHIM)
    shim = S.tmpfile("fail_alloc.so")
    assert(os.execute(("cc -O1 -shared -fPIC -o '%s' '%s' -ldl"):format(shim, src)))
    path = S.tmpfile("jobs.json")
    S.write(path, TRACE)
  end)

  local function sweep(cmd)
    local code, want, err = S.cli(cmd)
    assert.are.equal(0, code, err)
    local bad, failed = {}, 0
    for n = 1, 150 do -- report makes 66 allocations in the reader, html 79
      local c, out, e = S.cli(cmd, ("JQ_FAIL_AT=%d LD_PRELOAD='%s'"):format(n, shim))
      if c == 0 then
        if out ~= want then bad[#bad + 1] = ("allocation %d: exit 0, other output"):format(n) end
      else
        failed = failed + 1
        -- (the page's write may fail for memory too: that says so, as any write)
        local ok = c == 1 and out == "" and select(2, e:gsub("\n", "")) == 1 and
                   (e:find("^jobque%-profile: [^\n]*: not enough memory to ") or
                    e:find("^jobque%-profile: cannot write '[^\n]*': Cannot allocate memory\n$"))
        if not ok then bad[#bad + 1] = ("allocation %d: exit %s: %s"):format(n, tostring(c), e:sub(1, 160)) end
      end
    end
    assert.is_true(failed > 20, "the shim failed too few allocations: " .. failed)
    assert.same({}, bad)
  end

  it_plain("report: its output, or the out-of-memory line", function()
    sweep("report " .. path)
  end)

  it_plain("html: the page, or the out-of-memory line", function()
    sweep(("html %s -o '%s'"):format(path, S.tmpfile("page.html")))
  end)
end)
