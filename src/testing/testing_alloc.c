/*
 * testing_alloc.c - the heap the library's own C code takes, watched (built
 * with -DJQ_TESTING, and linked with --wrap for malloc, calloc, realloc and
 * free: CMakeLists.txt). Lua's allocations are Lua's (its allocator is in
 * liblua) and are not seen.
 *
 *   _test.alloc_watch(true)      counts from now, on this thread only, the
 *                                bytes the library holds (malloc_usable_size),
 *                                and their high-water mark
 *   _test.alloc_watch(false)     -> peak bytes, bytes still held, allocations
 *   _test.alloc_fail(n)          this thread's n-th allocation from now fails
 *                                (NULL), once (0: disarmed)
 *
 * So a spec measures what one profile_save takes beyond what was there
 * (Part 3's bound) and fails each of its allocations in turn.
 * Thread safety: the counts are the calling thread's own (thread-local).
 */
#ifdef JQ_TESTING

#include <malloc.h>
#include <stddef.h>
#include <stdint.h>

#include <lauxlib.h>
#include <lua.h>

#include "bindings.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

static _Thread_local int watching;
static _Thread_local int64_t held, peak;
static _Thread_local uint64_t allocs;
static _Thread_local uint64_t fail_at; /* the allocation (1 = the next) that fails; 0: none */

static int fails(void) {
  allocs++;
  if (fail_at && --fail_at == 0)
    return 1;
  return 0;
}

static void grew(void *p) {
  held += (int64_t)malloc_usable_size(p);
  if (held > peak)
    peak = held;
}

void *__wrap_malloc(size_t n) {
  if (!watching && !fail_at)
    return __real_malloc(n);
  if (fails())
    return NULL;
  void *p = __real_malloc(n);
  if (p && watching)
    grew(p);
  return p;
}

void *__wrap_calloc(size_t n, size_t size) {
  if (!watching && !fail_at)
    return __real_calloc(n, size);
  if (fails())
    return NULL;
  void *p = __real_calloc(n, size);
  if (p && watching)
    grew(p);
  return p;
}

void *__wrap_realloc(void *p, size_t n) {
  if (!watching && !fail_at)
    return __real_realloc(p, n);
  if (n > 0 && fails())
    return NULL;
  size_t before = p && watching ? malloc_usable_size(p) : 0;
  void *q = __real_realloc(p, n);
  if (watching && (q || n == 0)) {
    held -= (int64_t)before;
    if (q)
      grew(q);
  }
  return q;
}

void __wrap_free(void *p) {
  if (p && watching)
    held -= (int64_t)malloc_usable_size(p);
  __real_free(p);
}

static int l_alloc_watch(lua_State *L) {
  if (lua_toboolean(L, 1)) {
    watching = 1;
    held = peak = 0;
    allocs = 0;
    return 0;
  }
  watching = 0;
  lua_pushinteger(L, (lua_Integer)peak);
  lua_pushinteger(L, (lua_Integer)held);
  lua_pushinteger(L, (lua_Integer)allocs);
  return 3;
}

static int l_alloc_fail(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  fail_at = n > 0 ? (uint64_t)n : 0;
  allocs = 0;
  return 0;
}

void jq_open_testing_alloc(lua_State *L) {
  lua_pushcfunction(L, l_alloc_watch);
  lua_setfield(L, -2, "alloc_watch");
  lua_pushcfunction(L, l_alloc_fail);
  lua_setfield(L, -2, "alloc_fail");
}

#endif
