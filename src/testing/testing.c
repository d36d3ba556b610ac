/*
 * testing.c - helpers for the specs only (built with -DJQ_TESTING).
 *
 * Starts native threads that each own a lua_State, so that multi-lane and
 * multi-state behaviour of the recording session is tested before the job queue
 * exists. Each thread runs a chunk of Lua with jobque.core preloaded from
 * this very library (no second copy, no second session). Also gates,
 * counters, hooks, and sleep_us (a job holds its worker a known time).
 * Thread safety: the stop flag is atomic; a handle is used by its creator.
 */
#ifdef JQ_TESTING

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "bindings.h"
#include "common/file_replace.h"
#include "record/json_writer.h"
#include "record/sampler.h"
#include "record/save_progress.h"
#include "queue/queue.h"
#include "record/session.h"
#include "queue/worker.h"

#define HANDLE "jobque.test.threads"

static _Atomic int stop_flag;

/* The specs' gates: stop() and mark() broadcast under gate_mu, so that
 * wait_stop() and wait_marks() sleep instead of spinning (a spinning thread
 * starves the others under valgrind, which runs one thread at a time). */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;

typedef struct worker {
  pthread_t thread;
  int started;
  int index;
  const char *chunk, *path, *cpath; /* owned by the handle */
  lua_CFunction open_core;
  char *result;                     /* what the chunk returned, or its error */
} worker;

typedef struct handle {
  int n;
  char *chunk, *path, *cpath;
  worker *w;
} handle;

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p)
    memcpy(p, s, n);
  return p;
}

static int run_chunk(lua_State *L) {
  worker *w = lua_touserdata(L, 1);
  jq_prepare_state(L, w->path, w->cpath, w->open_core);
  if (luaL_loadstring(L, w->chunk) != LUA_OK)
    return lua_error(L);
  lua_pushinteger(L, w->index);
  lua_call(L, 1, 1);
  lua_pushstring(L, luaL_tolstring(L, -1, NULL));
  return 1;
}

static void *thread_main(void *p) {
  worker *w = p;
  lua_State *L = luaL_newstate();
  if (!L) {
    w->result = dup_string("error: cannot create a lua_State");
    return NULL;
  }
  lua_pushcfunction(L, run_chunk);
  lua_pushlightuserdata(L, w);
  int rc = lua_pcall(L, 1, 1, 0);
  const char *s = lua_tostring(L, -1);
  size_t n = strlen(s ? s : "?") + 8;
  w->result = malloc(n);
  if (w->result)
    strcpy(w->result, rc == LUA_OK ? "" : "error: "), strcat(w->result, s ? s : "?");
  lua_close(L);
  return NULL;
}

static void join_all(handle *h) {
  for (int i = 0; i < h->n; i++)
    if (h->w[i].started) {
      pthread_join(h->w[i].thread, NULL);
      h->w[i].started = 0;
    }
}

static void free_handle(handle *h) {
  join_all(h);
  for (int i = 0; i < h->n; i++)
    free(h->w[i].result);
  free(h->w);
  free(h->chunk);
  free(h->path);
  free(h->cpath);
  h->w = NULL;
  h->n = 0;
  h->chunk = h->path = h->cpath = NULL;
}

/* _test.spawn(n, chunk, path, cpath) -> handle; each thread runs chunk(i).
 * Upvalue 1: the opener of jobque.core. */
static int l_spawn(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  const char *chunk = luaL_checkstring(L, 2);
  const char *path = luaL_checkstring(L, 3);
  const char *cpath = luaL_checkstring(L, 4);
  luaL_argcheck(L, n > 0 && n <= 64, 1, "1..64 threads");
  handle *h = lua_newuserdatauv(L, sizeof(handle), 0);
  memset(h, 0, sizeof *h);
  luaL_setmetatable(L, HANDLE);
  h->chunk = dup_string(chunk);
  h->path = dup_string(path);
  h->cpath = dup_string(cpath);
  h->w = calloc((size_t)n, sizeof(worker));
  if (!h->chunk || !h->path || !h->cpath || !h->w)
    return luaL_error(L, "out of memory"); /* __gc frees what was made */
  h->n = (int)n;
  atomic_store(&stop_flag, 0);
  for (int i = 0; i < h->n; i++) {
    worker *w = &h->w[i];
    w->index = i + 1;
    w->chunk = h->chunk;
    w->path = h->path;
    w->cpath = h->cpath;
    w->open_core = lua_tocfunction(L, lua_upvalueindex(1));
    if (pthread_create(&w->thread, NULL, thread_main, w) != 0)
      return luaL_error(L, "cannot start a thread");
    w->started = 1;
  }
  return 1;
}

/* handle:join() -> { result of thread 1, ... } (strings; errors start "error: ") */
static int l_join(lua_State *L) {
  handle *h = luaL_checkudata(L, 1, HANDLE);
  join_all(h);
  lua_createtable(L, h->n, 0);
  for (int i = 0; i < h->n; i++) {
    lua_pushstring(L, h->w[i].result ? h->w[i].result : "error: out of memory");
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int l_gc(lua_State *L) {
  free_handle(luaL_checkudata(L, 1, HANDLE));
  return 0;
}

static int l_stop(lua_State *L) {
  int on = lua_toboolean(L, 1) || lua_isnone(L, 1);
  pthread_mutex_lock(&gate_mu);
  atomic_store(&stop_flag, on);
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  return 0;
}

/* wait_stop(): sleeps until stop() (or stop(true)) is called. */
static int l_wait_stop(lua_State *L) {
  (void)L;
  pthread_mutex_lock(&gate_mu);
  while (!atomic_load(&stop_flag))
    pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  return 0;
}

static int l_stopping(lua_State *L) {
  lua_pushboolean(L, atomic_load(&stop_flag));
  return 1;
}

static int l_wakes(lua_State *L) {
  lua_pushinteger(L, atomic_load(&jq_test_wakes));
  return 1;
}

static int l_parked(lua_State *L) {
  lua_pushinteger(L, atomic_load(&jq_test_parked));
  return 1;
}

static int l_mark(lua_State *L) {
  (void)L;
  pthread_mutex_lock(&gate_mu);
  atomic_fetch_add(&jq_test_marks, 1);
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  return 0;
}

/* wait_marks(n): sleeps until mark() was called n times in all. */
static int l_wait_marks(lua_State *L) {
  long n = (long)luaL_checkinteger(L, 1);
  pthread_mutex_lock(&gate_mu);
  while (atomic_load(&jq_test_marks) < n)
    pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  return 0;
}

static int l_marks(lua_State *L) {
  lua_pushinteger(L, atomic_load(&jq_test_marks));
  return 1;
}

static int l_hold_takes(lua_State *L) {
  atomic_store(&jq_test_hold_takes, lua_toboolean(L, 1));
  return 0;
}

static int l_holding(lua_State *L) {
  lua_pushboolean(L, atomic_load(&jq_test_holding));
  return 1;
}

static int l_lane_structs(lua_State *L) {
  lua_pushinteger(L, jq_session_lane_structs());
  return 1;
}

static int l_live_queues(lua_State *L) {
  lua_pushinteger(L, atomic_load(&jq_test_live_queues));
  return 1;
}

static int l_double_finishes(lua_State *L) {
  lua_pushinteger(L, atomic_load(&jq_test_double_finishes));
  return 1;
}

static int l_reset_counts(lua_State *L) {
  (void)L;
  atomic_store(&jq_test_double_finishes, 0);
  return 0;
}

/* set_next_queue_seq(n): the creation number of the next queue (as if
 * n - 1 queues had been made). */
static int l_set_next_queue_seq(lua_State *L) {
  jq_test_set_next_queue_seq((int)luaL_checkinteger(L, 1));
  return 0;
}

/* hang_after_write(on): a file write stops for good after its first bytes. */
static int l_hang_after_write(lua_State *L) {
  jq_replace_test_hang_after_write(lua_toboolean(L, 1));
  return 0;
}

/* replace_without_tmpfile(on): file writes take the fallback path. */
static int l_replace_without_tmpfile(lua_State *L) {
  jq_replace_test_without_tmpfile(lua_toboolean(L, 1));
  return 0;
}

/* lanes_full(on): threads without a lane get none, as if every lane were taken. */
static int l_lanes_full(lua_State *L) {
  jq_session_test_lanes_full(lua_toboolean(L, 1));
  return 0;
}

/* calibration_hold_us(n): every profile_stop's clock calibration takes n
 * microseconds longer (0 .. 60 s; 0: as built). */
static int l_calibration_hold_us(lua_State *L) {
  lua_Integer us = luaL_checkinteger(L, 1);
  luaL_argcheck(L, us >= 0 && us <= 60000000, 1, "0 to 60000000 microseconds expected");
  jq_session_test_calibration_hold((uint64_t)us);
  return 0;
}

/* ticks() -> the record path's clock now. */
static int l_ticks(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)jq_clock_ticks());
  return 1;
}

/* sleep_us(n): the calling thread sleeps n microseconds (0 .. 60 s), on the
 * monotonic clock to an absolute deadline, so a signal does not cut it
 * short. For programs whose jobs hold their worker a known time (the
 * acceptance specs, bench/whatif.lua): a sleeping worker leaves the cores
 * to the others, so more workers really help on a small machine. */
static int l_sleep_us(lua_State *L) {
  lua_Integer us = luaL_checkinteger(L, 1);
  luaL_argcheck(L, us >= 0 && us <= 60000000, 1, "0 to 60000000 microseconds expected");
  struct timespec at;
  clock_gettime(CLOCK_MONOTONIC, &at);
  int64_t ns = (int64_t)at.tv_nsec + (int64_t)us * 1000;
  at.tv_sec += (time_t)(ns / 1000000000);
  at.tv_nsec = (long)(ns % 1000000000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
    ;
  return 0;
}

/* put_event(kind, flags, cat, id, arg, t0, t1): one raw event on the calling
 * thread's lane (t0 0: now), for specs that build what the queue cannot
 * (a job's slices on two lanes). */
static int l_put_event(lua_State *L) {
  lua_Integer v[7];
  for (int i = 0; i < 7; i++)
    v[i] = luaL_optinteger(L, i + 1, 0);
  jq_ring_put((uint8_t)v[0], (uint8_t)v[1], (uint16_t)v[2], (uint32_t)v[3], (int64_t)v[4],
              (uint64_t)v[5], (uint64_t)v[6]);
  return 0;
}


/* _test.progress_timing(after_ms, every_ms): a save's progress line starts
 * after after_ms and comes every every_ms (1000 and 250 outside specs). */
static int l_progress_timing(lua_State *L) {
  jq_progress_timing(luaL_checkinteger(L, 1), luaL_checkinteger(L, 2));
  return 0;
}

/* ---- the allocation-failure hook ----
 * Worker states (all of them, made by jq_test_newstate) and, when asked,
 * the calling state allocate through fail_alloc. Armed for a target with
 * _test.fail_alloc(target, n, count), the target's n-th allocation from
 * now and the count - 1 after it fail (count nil: every one after it,
 * until disarmed): Lua then raises "not enough memory" (after its emergency
 * collection retried once). Frees and shrinks never fail (Lua assumes so). */
enum { HOOK_WORKERS, HOOK_CALLER, HOOK_TARGETS };

typedef struct alloc_hook {
  _Atomic long countdown; /* allocations left before the first failure; 0: disarmed */
  _Atomic long failing;   /* failures left once it fired (-1: until disarmed) */
  _Atomic long count;     /* allocations seen */
  lua_Alloc f;            /* the allocator it wraps */
  void *ud;
} alloc_hook;

static alloc_hook hooks[HOOK_TARGETS];

static void *fail_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  alloc_hook *h = ud;
  if (nsize > 0 && (ptr == NULL || nsize > osize)) { /* (ptr NULL: osize is a type) */
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
    long left = atomic_load(&h->countdown);
    while (left > 1 && !atomic_compare_exchange_weak(&h->countdown, &left, left - 1))
      ;
    if (left == 1) {
      long f = atomic_load(&h->failing);
      while (f > 0 && !atomic_compare_exchange_weak(&h->failing, &f, f - 1))
        ;
      if (f != 0)
        return NULL;
    }
  }
  return h->f(h->ud, ptr, osize, nsize);
}

/* The allocator luaL_newstate gives every state, for the workers' hook
 * to wrap: found once, before any worker state uses the hook. */
static pthread_once_t workers_hook_once = PTHREAD_ONCE_INIT;

static void find_default_alloc(void) {
  lua_State *L = luaL_newstate();
  if (L) {
    hooks[HOOK_WORKERS].f = lua_getallocf(L, &hooks[HOOK_WORKERS].ud);
    lua_close(L);
  }
}

/* Counts as one allocation of the workers' target: fails as it would. */
lua_State *jq_test_newstate(void) {
  alloc_hook *h = &hooks[HOOK_WORKERS];
  pthread_once(&workers_hook_once, find_default_alloc);
  if (!h->f)
    return NULL;
  void *probe = fail_alloc(h, NULL, LUA_TTHREAD, 1); /* the state itself, as if it failed */
  if (!probe)
    return NULL;
  h->f(h->ud, probe, 1, 0);
  lua_State *L = luaL_newstate(); /* its panic and warning functions */
  if (L)
    lua_setallocf(L, fail_alloc, h);
  return L;
}

/* lua_close unloads this library before the state's last frees: the
 * caller's allocator is unwrapped first, by this finalizer (made after the
 * table of loaded libraries, so it runs before that table's). */
static int unwrap_caller(lua_State *L) {
  void *ud;
  if (lua_getallocf(L, &ud) == fail_alloc)
    lua_setallocf(L, hooks[HOOK_CALLER].f, hooks[HOOK_CALLER].ud);
  return 0;
}

static int hook_target(lua_State *L, int arg) {
  static const char *const names[] = {"workers", "caller", NULL};
  return luaL_checkoption(L, arg, NULL, names);
}

/* fail_alloc(target, n [, count]): arms the hook of "workers" (every worker
 * state) or "caller" (this state); n 0 or nil disarms it. */
static int l_fail_alloc(lua_State *L) {
  int t = hook_target(L, 1);
  lua_Integer n = luaL_optinteger(L, 2, 0);
  lua_Integer count = luaL_optinteger(L, 3, -1);
  luaL_argcheck(L, n >= 0, 2, "must be 0 (disarm) or more");
  luaL_argcheck(L, count == -1 || count > 0, 3, "must be positive");
  alloc_hook *h = &hooks[t];
  atomic_store(&h->countdown, 0);
  atomic_store(&h->failing, (long)count);
  if (t == HOOK_CALLER) { /* wrapped from the first call on */
    void *ud;
    lua_Alloc f = lua_getallocf(L, &ud);
    if (f != fail_alloc) {
      if (lua_rawgetp(L, LUA_REGISTRYINDEX, &hooks) == LUA_TNIL) { /* unwraps at lua_close */
        lua_newuserdatauv(L, 1, 0);
        lua_createtable(L, 0, 1);
        lua_pushcfunction(L, unwrap_caller);
        lua_setfield(L, -2, "__gc");
        lua_setmetatable(L, -2);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &hooks);
      }
      lua_pop(L, 1);
      h->f = f;
      h->ud = ud;
      lua_setallocf(L, fail_alloc, h);
    }
  }
  atomic_store(&h->countdown, (long)n);
  return 0;
}

/* allocs(target) -> the allocations the target's hook has seen. */
static int l_allocs(lua_State *L) {
  lua_pushinteger(L, atomic_load(&hooks[hook_target(L, 1)].count));
  return 1;
}

/* sampler_stats() -> {handler_runs=, signals=, ticks=}: SIGPROF handler
 * runs ever, and the sampling session's deliveries and timer periods. */
static int l_sampler_stats(lua_State *L) {
  uint64_t runs, signals, ticks;
  jq_sampler_test_stats(&runs, &signals, &ticks);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, (lua_Integer)runs);
  lua_setfield(L, -2, "handler_runs");
  lua_pushinteger(L, (lua_Integer)signals);
  lua_setfield(L, -2, "signals");
  lua_pushinteger(L, (lua_Integer)ticks);
  lua_setfield(L, -2, "ticks");
  return 1;
}

/* sampler_tick(): the SIGPROF handler run here as for a timer's signal
 * (jq_sampler_test_tick); the sample is taken at the next VM instruction. */
static int l_sampler_tick(lua_State *L) {
  (void)L;
  jq_sampler_test_tick();
  return 0;
}

/* sampler_pending(n): n timer periods pending on this thread, as ticks
 * whose sample has not been taken yet (jq_sampler_test_pending). */
static int l_sampler_pending(lua_State *L) {
  jq_sampler_test_pending((uint64_t)luaL_checkinteger(L, 1));
  return 0;
}

/* sampler_tick_newthread() -> a coroutine made right after a tick, as when
 * the signal comes inside coroutine.create: it inherits the pending hook. */
static int l_sampler_tick_newthread(lua_State *L) {
  jq_sampler_test_tick();
  lua_newthread(L);
  return 1;
}

/* thread_cpu_ns() -> the calling thread's CPU time in nanoseconds. */
static int l_thread_cpu_ns(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  lua_pushinteger(L, (lua_Integer)ts.tv_sec * 1000000000 + ts.tv_nsec);
  return 1;
}

/* sampler_fail_timers("workers" | "caller" | false): sampling timers
 * fail, those of other threads than profile_start's, or the caller's too. */
static int l_sampler_fail_timers(lua_State *L) {
  const char *which = lua_toboolean(L, 1) ? luaL_checkstring(L, 1) : "";
  jq_sampler_test_fail_timers(strcmp(which, "workers") == 0 ? 1 : strcmp(which, "caller") == 0 ? 2 : 0);
  return 0;
}

static void foreign_handler(int sig) {
  (void)sig;
}

/* sigprof() -> "default" | "ignored" | "other" | "sampler": SIGPROF's
 * disposition. sigprof(true): installs a handler of another profiler. */
static int l_sigprof(lua_State *L) {
  struct sigaction sa;
  if (lua_toboolean(L, 1)) {
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = foreign_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
  }
  sigaction(SIGPROF, NULL, &sa);
  if (sa.sa_flags & SA_SIGINFO)
    lua_pushstring(L, "sampler"); /* the specs install no SA_SIGINFO handler of their own */
  else
    lua_pushstring(L, sa.sa_handler == SIG_DFL   ? "default"
                      : sa.sa_handler == SIG_IGN ? "ignored"
                                                 : "other");
  return 1;
}

/* span_text(a_ns, z_ns): the ts and dur texts the writer prints for a slice
 * from a_ns to z_ns (nanoseconds since the session's start). */
static int l_span_text(lua_State *L) {
  lua_Integer a = luaL_checkinteger(L, 1), z = luaL_checkinteger(L, 2);
  luaL_argcheck(L, a >= 0, 1, "nanoseconds >= 0 expected");
  luaL_argcheck(L, z >= 0, 2, "nanoseconds >= 0 expected");
  char buf[JQ_JSON_SPAN_TEXT_MAX];
  size_t n = jq_json_span_text(buf, (uint64_t)a, (uint64_t)z);
  const char *comma = memchr(buf, ',', n);
  size_t dur = sizeof ",\"dur\":" - 1;
  lua_pushlstring(L, buf, (size_t)(comma - buf));
  lua_pushlstring(L, comma + dur, n - (size_t)(comma - buf) - dur);
  return 2;
}

void jq_open_testing(lua_State *L, lua_CFunction open_core) {
  if (luaL_newmetatable(L, HANDLE)) {
    lua_pushcfunction(L, l_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_join);
    lua_setfield(L, -2, "join");
    lua_pushvalue(L, -1);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  static const luaL_Reg funcs[] = {{"stop", l_stop},
                                   {"stopping", l_stopping},
                                   {"wait_stop", l_wait_stop},
                                   {"lane_structs", l_lane_structs},
                                   {"live_queues", l_live_queues},
                                   {"double_finishes", l_double_finishes},
                                   {"reset_counts", l_reset_counts},
                                   {"replace_without_tmpfile", l_replace_without_tmpfile},
                                   {"hang_after_write", l_hang_after_write},
                                   {"set_next_queue_seq", l_set_next_queue_seq},
                                   {"lanes_full", l_lanes_full},
                                   {"calibration_hold_us", l_calibration_hold_us},
                                   {"ticks", l_ticks},
                                   {"sleep_us", l_sleep_us},
                                   {"put_event", l_put_event},
                                   {"span_text", l_span_text},
                                   {"sampler_stats", l_sampler_stats},
                                   {"sigprof", l_sigprof},
                                   {"sampler_tick", l_sampler_tick},
                                   {"sampler_tick_newthread", l_sampler_tick_newthread},
                                   {"sampler_pending", l_sampler_pending},
                                   {"sampler_fail_timers", l_sampler_fail_timers},
                                   {"thread_cpu_ns", l_thread_cpu_ns},
                                   {"wakes", l_wakes},
                                   {"parked", l_parked},
                                   {"mark", l_mark},
                                   {"marks", l_marks},
                                   {"wait_marks", l_wait_marks},
                                   {"hold_takes", l_hold_takes},
                                   {"holding", l_holding},
                                   {"fail_alloc", l_fail_alloc},
                                   {"allocs", l_allocs},
                                   {"progress_timing", l_progress_timing},
                                   {NULL, NULL}};
  luaL_newlib(L, funcs);
  static const struct {
    const char *name;
    int value;
  } ev[] = {{"SLICE", JQ_EV_SLICE}, {"SPAN_BEGIN", JQ_EV_SPAN_BEGIN}, {"SPAN_END", JQ_EV_SPAN_END},
            {"SLICE_FIRST", JQ_SLICE_FIRST}, {"SLICE_LAST", JQ_SLICE_LAST}};
  lua_createtable(L, 0, 5);
  for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
    lua_pushinteger(L, ev[i].value);
    lua_setfield(L, -2, ev[i].name);
  }
  lua_setfield(L, -2, "ev");
  lua_pushcfunction(L, open_core);
  lua_pushcclosure(L, l_spawn, 1);
  lua_setfield(L, -2, "spawn");
  jq_open_testing_codec(L);
  jq_open_testing_samples(L);
  jq_open_testing_alloc(L);
}

#endif
