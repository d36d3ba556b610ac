/*
 * sampler.h - the CPU-time sampler of Lua code: per-thread timers, the
 * SIGPROF handler, the count hook that walks a coroutine's stack.
 *
 * Owns: the SIGPROF handler (installed once, never removed), each lane's
 * CPU-time timer, the running-coroutine pointer and the activity of each
 * thread (kept in jq_self, ring.h), the hook. Samples go through
 * sample_tables.h's jq_sample_put into the lane's ring.
 * Must not: lock or allocate in the signal handler; raise into, yield in or
 * allocate Lua objects from the hook.
 * Thread safety: the inline functions below touch only the calling
 * thread's jq_self, with signal fences (the handler runs on the same
 * thread). jq_sampler_start/stop are called under the session's control
 * mutex (session.c).
 */
#ifndef JQ_SAMPLER_H
#define JQ_SAMPLER_H

#include <stdatomic.h>
#include <stdint.h>

#include <lua.h>

#include "record/ring.h"
#include "record/sample_tables.h" /* the activities, JQ_ACT_* */
#include "record/snapshot.h"

#define JQ_SAMPLE_HZ_MAX 10000
#define JQ_SAMPLE_DEPTH_MAX 256
#define JQ_SAMPLE_DEPTH_DEFAULT 64

#define JQ_SAMPLER_LANES 1024 /* threads with a lane the sampler keeps; >= JQ_MAX_LANES */
#define JQ_RESUME_CHAIN 16 /* nested resumes whose resumers a sample shows */

/* The sampler's state of a thread that its runner and resume functions
 * write (the handler and the hook run on the same thread): the categories
 * of what it runs, for its samples (job_tag: the running job's, which a
 * sample in a job carries; act_tag: that of the job an activity works for),
 * and the chain of coroutines that resumed the running one (chain[n - 1]
 * resumed it; NULL: a resume from no sampled coroutine), so that a sample
 * in a generator shows its resumer's frames below its own. */
typedef struct jq_sampler_local {
  uint16_t job_tag, act_tag;
  int n; /* nested resumes; chain[] holds the first JQ_RESUME_CHAIN (deeper:
           * no resumer frames, until the resumes return to that depth) */
  lua_State *chain[JQ_RESUME_CHAIN];
} jq_sampler_local;
extern _Thread_local jq_sampler_local jq_sampler_job_self JQ_TLS_MODEL;

/* Makes `co` the coroutine running Lua on this thread, resumed by the one
 * running now (NULL: none, and the chain emptied), and returns that one,
 * which jq_sampler_back puts back when `co` yields, returns or fails. Every
 * resume of a coroutine a sampler should see goes between the two (the
 * runner's, the replaced coroutine.resume/wrap). */
static inline lua_State *jq_sampler_swap(lua_State *co) {
  jq_thread *self = &jq_self;
  jq_sampler_local *me = &jq_sampler_job_self;
  lua_State *prev = atomic_load_explicit(&self->sample_L, memory_order_relaxed);
  if (co == NULL) {
    me->n = 0;
  } else {
    if (me->n < JQ_RESUME_CHAIN)
      me->chain[me->n] = prev;
    me->n++;
  }
  atomic_store_explicit(&self->sample_L, (void *)co, memory_order_relaxed);
  atomic_signal_fence(memory_order_seq_cst);
  return prev;
}

/* Puts back `outer`, what jq_sampler_swap returned, when the coroutine it
 * made the running one yields, returns or fails. */
static inline void jq_sampler_back(lua_State *outer) {
  jq_thread *self = &jq_self;
  jq_sampler_local *me = &jq_sampler_job_self;
  if (me->n > 0)
    me->n--;
  atomic_store_explicit(&self->sample_L, (void *)outer, memory_order_relaxed);
  atomic_signal_fence(memory_order_seq_cst);
}

/* Sets what this thread does (JQ_ACT_*) and for which job (0: none);
 * returns the activity before, to put back. */
static inline int jq_sampler_act(int act, int64_t job) {
  jq_thread *self = &jq_self;
  int prev = atomic_load_explicit(&self->sample_act, memory_order_relaxed);
  atomic_store_explicit(&self->sample_job, job, memory_order_relaxed);
  atomic_store_explicit(&self->sample_act, (uint8_t)act, memory_order_relaxed);
  atomic_signal_fence(memory_order_seq_cst);
  return prev;
}


/* What a thread's activity was, to put back (jq_sampler_enter/leave). */
typedef struct jq_sampler_ctx {
  int act;
  int64_t job;
  uint16_t act_tag;
} jq_sampler_ctx;

/* jq_sampler_act for the work of job `job` of category `tag` (0, 0: none);
 * returns what to put back with jq_sampler_leave. */
static inline jq_sampler_ctx jq_sampler_enter(int act, int64_t job, uint16_t tag) {
  jq_thread *self = &jq_self;
  jq_sampler_ctx c = {atomic_load_explicit(&self->sample_act, memory_order_relaxed),
                      atomic_load_explicit(&self->sample_job, memory_order_relaxed),
                      jq_sampler_job_self.act_tag};
  jq_sampler_job_self.act_tag = tag;
  jq_sampler_act(act, job);
  return c;
}

static inline void jq_sampler_leave(jq_sampler_ctx c) {
  jq_sampler_job_self.act_tag = c.act_tag;
  jq_sampler_act(c.act, c.job);
}

/* The session (lua_profile.c, session.c). jq_sampler_prepare, before
 * jq_session_start on the same thread: installs the handler once and makes
 * the caller's timer (disarmed), staged for that start; hz 0 stages
 * nothing (the session will not sample). -1 with `err` when the handler
 * belongs to someone else or the caller's timer cannot be made. L: the
 * calling state, whose main coroutine is sampled outside jobs. */
int jq_sampler_prepare(lua_State *L, int hz, int depth, char *err, size_t errlen);
/* Drops what jq_sampler_prepare staged (the start failed). */
void jq_sampler_unstage(void);
/* session.c's start, lanes mutex held, before arming the session word
 * `word`: adopts what was staged on this thread (nothing: no sampling),
 * gives the caller's lane its tables and timer and every other thread that
 * has a lane its timer. */
int jq_sampler_session_begin(uint32_t word, jq_lane *caller, jq_save_sampling *out);
/* session.c's stop, after the lanes are quiescent: deletes every timer.
 * Both return 1 with the session's figures (jobqueProfile.sampling, for
 * jq_session_set_sampling) in *out when the session samples, else 0. */
int jq_sampler_session_stop(jq_save_sampling *out);
/* A lane was bound to the calling thread (session.c, lanes mutex held). */
void jq_sampler_lane_bound(jq_lane *lane);
/* The calling thread's lane joined the session `word` (session.c, no lock
 * held): its tables and, if it has none, its timer. */
void jq_sampler_lane_joined(jq_lane *lane, uint32_t word);
/* The calling thread, which has `lane`, exits: its timer goes. */
void jq_sampler_lane_exit(jq_lane *lane);
/* Whether coroutine co has the sampler's count hook (a sample pending). */
int jq_sampler_hook_is_ours(lua_State *co);
/* State L closes (lua_profile.c's sentinel): it is no longer sampled. */
void jq_sampler_state_closing(lua_State *L);

#ifdef JQ_TESTING
void jq_sampler_test_stats(uint64_t *handler_runs, uint64_t *signals, uint64_t *ticks);
/* 1: timers of threads other than profile_start's fail (EAGAIN, as at
 * RLIMIT_SIGPENDING); 2: the caller's too; 0: as built. */
void jq_sampler_test_fail_timers(int which);
/* Runs the SIGPROF handler on the calling thread as a timer's signal with
 * no overrun would, without the kernel: bench/sample.lua's cost of one
 * sample, handler to ring. */
void jq_sampler_test_tick(void);
/* Adds n to this thread's pending weight, as ticks whose hook has not run
 * yet (of the sampling session now, if any). */
void jq_sampler_test_pending(uint64_t n);
#endif

#endif
