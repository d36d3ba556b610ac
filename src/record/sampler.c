/*
 * sampler.c - the CPU-time sampler of Lua code (see sampler.h).
 *
 * The path of one tick (docs/internals.md, "The sampler's signal and hook"):
 *   the thread's CPU-time timer expires -> SIGPROF on that thread only
 *   (SIGEV_THREAD_ID) -> on_sigprof adds 1 + si_overrun to the thread's
 *   pending weight and sets a count hook on the coroutine running Lua there
 *   (jq_self.sample_L) -> at its next VM instruction sample_hook walks that
 *   coroutine's stack and records one sample (sample_tables.h).
 * A tick while the thread runs no Lua becomes a one-frame sample of what it
 * does ("[copy in]", "[scheduler]", ...), written from the handler when the
 * lane is not inside the record path, else folded into the next sample.
 *
 * Owns: the SIGPROF handler, the lanes' timers (a table of the threads that
 * have a lane: slots[], under sampler_mu), the session's sampling settings
 * and counters, each thread's pending weight and name cache.
 * Must not: in on_sigprof, lock, allocate, or touch anything but the
 * thread's own state, the atomics below and lua_sethook/lua_gethook; in
 * sample_hook, raise, yield or allocate Lua objects.
 * Thread safety: slots[] and the settings change under sampler_mu, taken
 * inside session.c's control and lanes mutexes, never the other way round.
 * A thread's pending weight and scratch are its own (handler and hook run
 * on it).
 */
#define _GNU_SOURCE /* dladdr */
#include "record/sampler.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>


#define NAME_MAX_BYTES 200 /* of a function's name in a frame's text */
#define CACHE_SLOTS 4096   /* functions whose frame text a thread keeps */
#define SCRATCH_TEXT 512   /* a frame's text, built before it is cached */

/* One function's frame text, cached per thread: a Lua function keyed by
 * its source and the lines it spans (not its address: a collected chunk's
 * address is reused), a C function by its address. */
typedef struct cached_frame {
  const void *cfunc;       /* a C function; NULL: a Lua one */
  int linedefined, lastline;
  uint32_t hash;           /* 0: empty slot */
  char src[LUA_IDSIZE];
  char *text;
  size_t len;
  int kind;
} cached_frame;

/* The hook's memory, per thread, made on the thread in normal context. */
typedef struct sampler_scratch {
  cached_frame cache[CACHE_SLOTS];
  int cached;
  jq_frame_text frames[JQ_SAMPLE_DEPTH_MAX];
} sampler_scratch;

typedef struct sampler_thread {
  _Atomic uint64_t pending; /* timer periods not yet in a sample */
  uint32_t pending_word;    /* the sampling session they were ticks of */
  int exited;               /* its lane let go: a late signal touches nothing */
  sampler_scratch *scratch;
  /* Staged by jq_sampler_prepare for the jq_session_start that follows. */
  int staged, staged_hz, staged_depth;
  timer_t staged_timer;
  lua_State *staged_L;
} sampler_thread;

_Thread_local jq_sampler_local jq_sampler_job_self JQ_TLS_MODEL;
static _Thread_local sampler_thread sself JQ_TLS_MODEL;

/* A thread that has a lane: where its timer goes. */
typedef struct lane_slot {
  jq_lane *lane; /* NULL: free */
  pid_t tid;
  pthread_t thread;
  timer_t timer;
  uint32_t timer_word; /* the session its timer (or error) is of; 0: none */
  int has_timer;
  char error[128];
} lane_slot;

static pthread_mutex_t sampler_mu = PTHREAD_MUTEX_INITIALIZER;
static lane_slot slots[JQ_SAMPLER_LANES];
static int handler_installed;
static _Atomic uint32_t sampling_word; /* the armed session word while sampling; 0: off */
static int cfg_hz;
static _Atomic int cfg_depth; /* read by hooks on every thread */
static uint64_t cfg_period_ns;
static lua_State *caller_state; /* the state that started the sampling session */
static _Atomic uint64_t n_signals, n_ticks, n_handler_runs;
static jq_save_sampling last; /* the sampling session's figures (sampler_mu) */
static int ended_early; /* its caller's state closed: `last` holds its final figures */

static void sample_hook(lua_State *L, lua_Debug *ar);

static pid_t own_tid(void) {
  return (pid_t)syscall(SYS_gettid);
}

/* ---- the signal handler ---- */

/* Adds w periods to this thread's pending weight, of session `word`: weight
 * left from an earlier session goes first. Returns the weight before. */
static uint64_t pending_add(uint32_t word, uint64_t w) {
  if (sself.pending_word != word) {
    atomic_store_explicit(&sself.pending, 0, memory_order_relaxed);
    sself.pending_word = word;
  }
  return atomic_fetch_add_explicit(&sself.pending, w, memory_order_relaxed);
}

/* A tick in no Lua: a one-frame sample of the thread's activity, written
 * only where a write cannot interleave with one the handler interrupted. */
static void runtime_tick(jq_thread *t, int act) {
  int64_t job = atomic_load_explicit(&t->sample_job, memory_order_relaxed);
  uint16_t tag = job ? jq_sampler_job_self.act_tag : t->tag;
  if (act == JQ_ACT_LUA)
    act = JQ_ACT_NONE;
  uint64_t w = atomic_exchange_explicit(&sself.pending, 0, memory_order_relaxed);
  /* Not when the lane is inside the record path (or has not joined): then
   * the weight goes back, for the lane's next sample. */
  if (!jq_sample_put_runtime(act, job, tag, w, 0))
    atomic_fetch_add_explicit(&sself.pending, w, memory_order_relaxed);
}

static void on_sigprof(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  int saved = errno;
  atomic_fetch_add_explicit(&n_handler_runs, 1, memory_order_relaxed);
  uint32_t word = atomic_load_explicit(&sampling_word, memory_order_relaxed);
  if (word && si->si_code == SI_TIMER && !sself.exited &&
      atomic_load_explicit(&jq_session_state, memory_order_relaxed) == word) {
    uint64_t w = 1 + (uint64_t)(si->si_overrun > 0 ? si->si_overrun : 0);
    atomic_fetch_add_explicit(&n_signals, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&n_ticks, w, memory_order_relaxed);
    jq_thread *t = &jq_self;
    uint64_t before = pending_add(word, w);
    int act = atomic_load_explicit(&t->sample_act, memory_order_relaxed);
    lua_State *L = atomic_load_explicit(&t->sample_L, memory_order_relaxed);
    if (act == JQ_ACT_LUA && L) {
      lua_Hook h = lua_gethook(L);
      if (h == sample_hook && before) {
        /* A sample already pending there (the hook not reached yet, or a
         * walk under way): this tick only adds its weight. lua_sethook
         * marks every Lua frame of the coroutine, a cost that grows with
         * its depth, not to be paid again per tick. */
      } else if (h == NULL || h == sample_hook) {
        lua_sethook(L, sample_hook, LUA_MASKCOUNT, 1);
      } else { /* a user's hook: left alone, its ticks counted */
        atomic_exchange_explicit(&sself.pending, 0, memory_order_relaxed);
        jq_sample_skip_user_hook(w);
      }
    } else {
      runtime_tick(t, act);
    }
  }
  errno = saved;
}

/* ---- the hook ---- */

static uint32_t hash_bytes(uint32_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ s[i]) * 16777619u;
  return h;
}

/* Cached texts past which a sample starts its thread's cache again, before
 * its walk: a walk adds at most JQ_SAMPLE_DEPTH_MAX, so the table stays at
 * most half full and never starts again while a walk holds its texts. */
#define CACHE_START_AGAIN (CACHE_SLOTS / 2 - JQ_SAMPLE_DEPTH_MAX)

static void cache_clear(sampler_scratch *s) {
  for (int i = 0; i < CACHE_SLOTS; i++) {
    free(s->cache[i].text);
    s->cache[i].text = NULL;
    s->cache[i].hash = 0;
  }
  s->cached = 0;
}

/* The frame text of the function at `ar` (filled with "Sl"), by the
 * issue's rules; its name ("n") is looked up here, once per function. */
static int frame_text(lua_State *L, lua_Debug *ar, char *buf, size_t n, int *kind) {
  lua_getinfo(L, "n", ar);
  char name[NAME_MAX_BYTES + 1];
  snprintf(name, sizeof name, "%s", ar->name ? ar->name : "?");
  if (*ar->what == 'C') {
    *kind = JQ_FRAME_C;
    return snprintf(buf, n, "%s [C]", name);
  }
  *kind = JQ_FRAME_LUA;
  if (*ar->what == 'm')
    return snprintf(buf, n, "main chunk (%s)", ar->short_src);
  if (ar->name)
    return snprintf(buf, n, "%s (%s:%d)", name, ar->short_src, ar->linedefined);
  return snprintf(buf, n, "function <%s:%d>", ar->short_src, ar->linedefined);
}

static const char CALL_SITE = 0; /* a cache key's cfunc: a C function known by its call site */

/* The cached text of the frame at `ar` of coroutine Lw (filled with "Sl");
 * NULL when out of memory. A C function in the running coroutine is known
 * by its address ("f" pushes it there, within the hook's stack space); one
 * in a resumer (a coroutine suspended in a resume, whose stack is not
 * pushed on) by its call site, which is what its name comes from. */
static const cached_frame *frame_of(lua_State *Lw, int level, lua_Debug *ar, int running,
                                    sampler_scratch *s) {
  const void *cf = NULL;
  const char *src = ar->short_src;
  int a = ar->linedefined, b = ar->lastlinedefined;
  lua_Debug caller;
  if (*ar->what == 'C' && running) {
    lua_getinfo(Lw, "f", ar);
    cf = (const void *)lua_tocfunction(Lw, -1);
    lua_pop(Lw, 1);
  } else if (*ar->what == 'C') {
    cf = &CALL_SITE;
    a = b = -1;
    src = "";
    if (lua_getstack(Lw, level + 1, &caller) && lua_getinfo(Lw, "Sl", &caller) &&
        caller.currentline >= 0) {
      src = caller.short_src;
      a = caller.currentline;
      b = caller.linedefined;
    }
  }
  uint32_t h = 2166136261u;
  h = hash_bytes(h, &cf, sizeof cf);
  h = hash_bytes(h, src, strlen(src));
  h = hash_bytes(h, &a, sizeof a);
  h = hash_bytes(h, &b, sizeof b);
  h |= 1u;
  for (uint32_t i = h % CACHE_SLOTS;; i = (i + 1) % CACHE_SLOTS) {
    cached_frame *c = &s->cache[i];
    if (c->hash == h && c->cfunc == cf && c->linedefined == a && c->lastline == b &&
        strcmp(c->src, src) == 0)
      return c;
    if (c->hash != 0)
      continue;
    /* A walk never fills the table (sample_hook starts it again first, at
     * CACHE_START_AGAIN): a text it took stays until the sample is put. */
    char buf[SCRATCH_TEXT];
    int kind;
    int len = frame_text(Lw, ar, buf, sizeof buf, &kind);
    if (len < 0)
      return NULL;
    if ((size_t)len >= sizeof buf)
      len = (int)sizeof buf - 1;
    c->text = malloc((size_t)len + 1);
    if (!c->text)
      return NULL;
    memcpy(c->text, buf, (size_t)len + 1);
    c->len = (size_t)len;
    c->kind = kind;
    c->cfunc = cf;
    c->linedefined = a;
    c->lastline = b;
    snprintf(c->src, sizeof c->src, "%s", src);
    c->hash = h;
    s->cached++;
    return c;
  }
}

/* One sample's frames, innermost first, in s->frames. */
typedef struct walk {
  int n, depth, truncated;
  uint32_t line; /* the leaf's */
} walk;

/* Appends the frames of coroutine Lw to the walk; 0 when out of memory. */
static int walk_coroutine(lua_State *Lw, int running, sampler_scratch *s, walk *wk) {
  lua_Debug ar;
  for (int level = 0; lua_getstack(Lw, level, &ar); level++) {
    if (wk->n == wk->depth) {
      wk->truncated = 1;
      return 1;
    }
    lua_getinfo(Lw, "Sl", &ar);
    if (wk->n == 0 && ar.currentline > 0)
      wk->line = (uint32_t)ar.currentline;
    const cached_frame *c = frame_of(Lw, level, &ar, running, s);
    if (!c)
      return 0;
    jq_frame_text *f = &s->frames[wk->n++];
    f->text = c->text;
    f->len = c->len;
    f->kind = c->kind;
  }
  return 1;
}

static sampler_scratch *scratch_here(void) {
  if (!sself.scratch)
    sself.scratch = calloc(1, sizeof(sampler_scratch));
  return sself.scratch;
}

/* Runs at the next VM instruction of the coroutine the handler hooked. */
static void sample_hook(lua_State *L, lua_Debug *ar0) {
  (void)ar0;
  lua_sethook(L, NULL, 0, 0);
  jq_thread *t = &jq_self;
  if (L != atomic_load_explicit(&t->sample_L, memory_order_relaxed))
    return; /* not the running coroutine (it inherited the hook) */
  uint32_t word = atomic_load_explicit(&sampling_word, memory_order_relaxed);
  /* The word first: a tick of this session that interrupts the hook after
   * it keeps the weight it finds (its handler resets it only for another). */
  if (!word || sself.pending_word != word)
    return; /* the weight of an earlier session: the next tick drops it */
  uint64_t w = atomic_exchange_explicit(&sself.pending, 0, memory_order_relaxed);
  sampler_scratch *s = w ? scratch_here() : NULL;
  if (!s)
    return;
  if (!t->lane || t->lane->gen != word) /* its first event of the session */
    if (!jq_lane_join(word))
      return;
  if (s->cached > CACHE_START_AGAIN)
    cache_clear(s);
  walk wk = {0, atomic_load_explicit(&cfg_depth, memory_order_relaxed), 0, 0};
  if (!walk_coroutine(L, 1, s, &wk))
    return; /* out of memory: no sample */
  /* Then its resumers' frames, down to a resume from no sampled coroutine. */
  jq_sampler_local *me = &jq_sampler_job_self;
  for (int i = me->n > JQ_RESUME_CHAIN ? -1 : me->n - 1; i >= 0 && me->chain[i] && !wk.truncated; i--)
    if (!walk_coroutine(me->chain[i], 0, s, &wk))
      return;
  int64_t job = (int64_t)t->job;
  uint16_t tag = job ? jq_sampler_job_self.job_tag : t->tag;
  jq_sample_put(s->frames, wk.n, wk.truncated, job, tag, wk.line, w, 0);
}

/* ---- timers ---- */

static lane_slot *slot_of(jq_lane *lane) {
  for (int i = 0; i < JQ_SAMPLER_LANES; i++)
    if (slots[i].lane == lane)
      return &slots[i];
  return NULL;
}

#ifdef JQ_TESTING
static _Atomic int test_fail_timers; /* 1: other threads' timers fail; 2: the caller's too */
#define TIMER_FAILS(caller) (atomic_load(&test_fail_timers) > (caller))
#else
#define TIMER_FAILS(caller) 0
#endif

/* A timer on `clock` that signals thread `tid`, armed at the session's
 * period. 0 or an errno. */
static int timer_make(clockid_t clock, pid_t tid, uint64_t period_ns, timer_t *out) {
  if (TIMER_FAILS(0))
    return EAGAIN; /* as when RLIMIT_SIGPENDING is reached */
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev._sigev_un._tid = tid;
  if (timer_create(clock, &sev, out) != 0)
    return errno;
  struct itimerspec its;
  its.it_interval.tv_sec = (time_t)(period_ns / 1000000000u);
  its.it_interval.tv_nsec = (long)(period_ns % 1000000000u);
  its.it_value = its.it_interval;
  if (timer_settime(*out, 0, &its, NULL) != 0) {
    int e = errno;
    timer_delete(*out);
    return e;
  }
  return 0;
}

static void slot_timer_delete(lane_slot *s) {
  if (s->has_timer)
    timer_delete(s->timer);
  s->has_timer = 0;
}

/* sampler_mu held: gives the lane of `s` (another live thread) its timer. */
static void slot_timer_start(lane_slot *s, uint32_t word) {
  clockid_t clock;
  int rc = pthread_getcpuclockid(s->thread, &clock);
  if (rc == 0)
    rc = timer_make(clock, s->tid, cfg_period_ns, &s->timer);
  s->timer_word = word;
  s->has_timer = rc == 0;
  if (rc != 0)
    snprintf(s->error, sizeof s->error, "cannot create its CPU-time timer: %s", strerror(rc));
  else
    s->error[0] = '\0';
}

/* ---- the session ---- */

/* Keeps this library mapped until the process exits (dlclose no longer
 * unloads it): a signal of a timer deleted just before its state closed can
 * still be pending, and its handler must be there to find sampling off. */
static int pin_library(void) {
  Dl_info info;
  if (!dladdr((void *)on_sigprof, &info) || !info.dli_fname)
    return -1;
  void *self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  if (!self)
    return -1;
  /* Its reference is never dropped: the library stays with the process. */
  return 0;
}

int jq_sampler_prepare(lua_State *L, int hz, int depth, char *err, size_t errlen) {
  sself.staged = 0;
  if (hz <= 0)
    return 0;
  pthread_mutex_lock(&sampler_mu);
  int rc = 0;
  if (!handler_installed) {
    struct sigaction old, sa;
    sigaction(SIGPROF, NULL, &old);
    if ((old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != on_sigprof
                                    : old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
      snprintf(err, errlen, "cannot sample: this process already has a SIGPROF handler "
                            "(another profiler?)");
      rc = -1;
    } else if (pin_library() != 0) {
      snprintf(err, errlen, "cannot sample: cannot keep the library loaded for its signal handler");
      rc = -1;
    } else {
      memset(&sa, 0, sizeof sa);
      sa.sa_sigaction = on_sigprof;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&sa.sa_mask);
      if (sigaction(SIGPROF, &sa, NULL) != 0) {
        snprintf(err, errlen, "cannot sample: cannot install the SIGPROF handler: %s",
                 strerror(errno));
        rc = -1;
      } else {
        handler_installed = 1;
      }
    }
  }
  pthread_mutex_unlock(&sampler_mu);
  if (rc != 0)
    return rc;
  /* The caller's timer first, disarmed until the session is: its failure
   * raises before anything is replaced. */
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev._sigev_un._tid = own_tid();
  if (TIMER_FAILS(1) || timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &sself.staged_timer) != 0) {
    snprintf(err, errlen, "cannot sample: cannot create this thread's CPU-time timer: %s",
             strerror(TIMER_FAILS(1) ? EAGAIN : errno));
    return -1;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  sself.staged_L = lua_tothread(L, -1);
  lua_pop(L, 1);
  sself.staged = 1;
  sself.staged_hz = hz;
  sself.staged_depth = depth;
  return 0;
}

void jq_sampler_unstage(void) {
  if (sself.staged)
    timer_delete(sself.staged_timer);
  sself.staged = 0;
}

/* sampler_mu held: the caller's slot gets the staged timer, armed. */
static void adopt_caller_timer(jq_lane *caller, uint32_t word) {
  lane_slot *s = slot_of(caller);
  struct itimerspec its;
  its.it_interval.tv_sec = (time_t)(cfg_period_ns / 1000000000u);
  its.it_interval.tv_nsec = (long)(cfg_period_ns % 1000000000u);
  its.it_value = its.it_interval;
  if (!s || timer_settime(sself.staged_timer, 0, &its, NULL) != 0) {
    timer_delete(sself.staged_timer);
    if (s)
      snprintf(s->error, sizeof s->error, "cannot arm its CPU-time timer: %s", strerror(errno));
    return;
  }
  s->timer = sself.staged_timer;
  s->has_timer = 1;
  s->timer_word = word;
  s->error[0] = '\0';
}

int jq_sampler_session_begin(uint32_t word, jq_lane *caller, jq_save_sampling *out) {
  pthread_mutex_lock(&sampler_mu);
  int staged = sself.staged;
  sself.staged = 0;
  memset(&last, 0, sizeof last);
  ended_early = 0;
  if (!staged) {
    pthread_mutex_unlock(&sampler_mu);
    return 0;
  }
  cfg_hz = sself.staged_hz;
  atomic_store_explicit(&cfg_depth, sself.staged_depth, memory_order_relaxed);
  cfg_period_ns = 1000000000u / (uint64_t)cfg_hz;
  caller_state = sself.staged_L;
  atomic_store(&n_signals, 0);
  atomic_store(&n_ticks, 0);
  atomic_store_explicit(&sself.pending, 0, memory_order_relaxed);
  last.hz = cfg_hz;
  last.depth = sself.staged_depth;
  last.period_ns = cfg_period_ns;
  *out = last;
  if (jq_stab_prepare(caller) == 0)
    adopt_caller_timer(caller, word);
  else
    timer_delete(sself.staged_timer);
  for (int i = 0; i < JQ_SAMPLER_LANES; i++) /* threads that have a lane: timers now */
    if (slots[i].lane && slots[i].lane != caller)
      slot_timer_start(&slots[i], word);
  if (!atomic_load_explicit(&jq_self.sample_L, memory_order_relaxed))
    jq_sampler_swap(caller_state); /* the caller's Lua outside jobs */
  atomic_store_explicit(&sampling_word, word, memory_order_relaxed);
  lane_slot *s = slot_of(caller);
  if (s && s->error[0] && caller->stab)
    jq_stab_set_error(caller->stab, s->error);
  pthread_mutex_unlock(&sampler_mu);
  return 1;
}

/* sampler_mu held, sampling on: no timer left, the figures final. */
static void sampling_off(void) {
  atomic_store_explicit(&sampling_word, 0, memory_order_relaxed);
  for (int i = 0; i < JQ_SAMPLER_LANES; i++)
    slot_timer_delete(&slots[i]);
  last.signals = atomic_load(&n_signals);
  last.ticks = atomic_load(&n_ticks);
  if (atomic_load_explicit(&jq_self.sample_L, memory_order_relaxed) == (void *)caller_state)
    jq_sampler_swap(NULL);
}

int jq_sampler_session_stop(jq_save_sampling *out) {
  int stopped = 0;
  pthread_mutex_lock(&sampler_mu);
  if (atomic_load_explicit(&sampling_word, memory_order_relaxed)) {
    sampling_off();
    stopped = 1;
  } else if (ended_early) { /* its figures, for the session that ends now */
    stopped = 1;
  }
  ended_early = 0;
  if (stopped)
    *out = last;
  pthread_mutex_unlock(&sampler_mu);
  return stopped;
}

void jq_sampler_lane_bound(jq_lane *lane) {
  pthread_mutex_lock(&sampler_mu);
  lane_slot *s = slot_of(lane);
  if (!s)
    s = slot_of(NULL);
  if (s) {
    slot_timer_delete(s);
    s->lane = lane;
    s->tid = own_tid();
    s->thread = pthread_self();
    s->timer_word = 0;
    s->error[0] = '\0';
  }
  pthread_mutex_unlock(&sampler_mu);
}

void jq_sampler_lane_joined(jq_lane *lane, uint32_t word) {
  if (atomic_load_explicit(&sampling_word, memory_order_relaxed) != word)
    return;
  /* Busy while its tables are emptied: a tick of its timer (made at the
   * session's start) must not write into them meanwhile. */
  jq_lane_announce(lane);
  int prepared = jq_stab_prepare(lane) == 0;
  pthread_mutex_lock(&sampler_mu);
  lane_slot *s = slot_of(lane);
  if (s && atomic_load_explicit(&sampling_word, memory_order_relaxed) == word) {
    if (s->timer_word != word) { /* a thread that had no lane at the start */
      int rc = timer_make(CLOCK_THREAD_CPUTIME_ID, s->tid, cfg_period_ns, &s->timer);
      s->timer_word = word;
      s->has_timer = rc == 0;
      if (rc != 0)
        snprintf(s->error, sizeof s->error, "cannot create its CPU-time timer: %s",
                 strerror(rc));
    }
    if (s->error[0] && prepared)
      jq_stab_set_error(lane->stab, s->error);
  }
  pthread_mutex_unlock(&sampler_mu);
  atomic_store_explicit(&lane->busy, 0, memory_order_release);
}

void jq_sampler_lane_exit(jq_lane *lane) {
  sself.exited = 1; /* first: a signal already pending then finds it */
  atomic_signal_fence(memory_order_seq_cst);
  pthread_mutex_lock(&sampler_mu);
  lane_slot *s = slot_of(lane);
  if (s) {
    slot_timer_delete(s);
    s->lane = NULL;
  }
  pthread_mutex_unlock(&sampler_mu);
  atomic_store_explicit(&jq_self.sample_L, NULL, memory_order_relaxed);
  if (sself.scratch) {
    cache_clear(sself.scratch);
    free(sself.scratch);
    sself.scratch = NULL;
  }
}

int jq_sampler_hook_is_ours(lua_State *co) {
  return lua_gethook(co) == sample_hook;
}

void jq_sampler_state_closing(lua_State *L) {
  if (atomic_load_explicit(&jq_self.sample_L, memory_order_relaxed) == (void *)L)
    jq_sampler_swap(NULL);
  pthread_mutex_lock(&sampler_mu);
  if (caller_state == L) {
    /* The state that started the sampling closes (a script that ends
     * without profile_stop): the sampling ends with it, the figures kept
     * for the stop that ends the session. */
    if (atomic_load_explicit(&sampling_word, memory_order_relaxed)) {
      sampling_off();
      ended_early = 1;
    }
    caller_state = NULL;
  }
  pthread_mutex_unlock(&sampler_mu);
}

/* The library unloads (the last state holding it closed): the unloading
 * thread's name cache goes (the others' went with their lanes). */
__attribute__((destructor)) static void sampler_fini(void) {
  if (sself.scratch) {
    cache_clear(sself.scratch);
    free(sself.scratch);
    sself.scratch = NULL;
  }
}

#ifdef JQ_TESTING
void jq_sampler_test_fail_timers(int which) {
  atomic_store(&test_fail_timers, which);
}

void jq_sampler_test_pending(uint64_t n) {
  pending_add(atomic_load_explicit(&sampling_word, memory_order_relaxed), n);
}

void jq_sampler_test_tick(void) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_code = SI_TIMER;
  on_sigprof(SIGPROF, &si, NULL);
}

void jq_sampler_test_stats(uint64_t *handler_runs, uint64_t *signals, uint64_t *ticks) {
  *handler_runs = atomic_load(&n_handler_runs);
  *signals = atomic_load(&n_signals);
  *ticks = atomic_load(&n_ticks);
}
#endif
