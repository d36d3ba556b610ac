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

/* What a thread does when it runs no Lua: the synthetic frame a tick there
 * records ("[copy in]" ...). JQ_ACT_LUA: it runs the coroutine in sample_L. */
enum {
  JQ_ACT_LUA = 0,
  JQ_ACT_NONE,        /* "[no Lua]" */
  JQ_ACT_COPY_IN,     /* "[copy in]" */
  JQ_ACT_COPY_OUT,    /* "[copy out]" */
  JQ_ACT_COPY_RESULT, /* "[copy result]" */
  JQ_ACT_SUBMIT,      /* "[submit]" */
  JQ_ACT_SCHEDULER,   /* "[scheduler]": taking jobs, spinning */
  JQ_ACT_COUNT
};

/* Makes `co` the coroutine running Lua on this thread (NULL: none) and
 * returns the one before, for the caller to put back when `co` yields,
 * returns or fails. Every resume of a coroutine a sampler should see goes
 * between the two (the runner's, the replaced coroutine.resume/wrap). */
static inline lua_State *jq_sampler_swap(lua_State *co) {
  jq_thread *self = &jq_self;
  lua_State *prev = atomic_load_explicit(&self->sample_L, memory_order_relaxed);
  atomic_store_explicit(&self->sample_L, (void *)co, memory_order_relaxed);
  atomic_signal_fence(memory_order_seq_cst);
  return prev;
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

#endif
