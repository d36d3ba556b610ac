/*
 * worker.c - worker threads, each with its own lua_State, running jobs as
 * coroutines, one slice (resume to yield or return) at a time.
 *
 * A worker takes from its own resume list first (coroutines that may
 * continue: their awaited job ended, or they yielded), then from the queue's
 * ready list; with nothing to run it parks on its condition variable. Each
 * slice, each await and each park is recorded on the worker's lane when a
 * recording session is armed (lock-free, see ring.h).
 *
 * Waiting lives here too (jq_wait): in a job's body a wait makes the job's
 * coroutine await a job of any queue (it yields, and queue.c puts it on its
 * worker's resume list when the awaited job ends); elsewhere on a worker
 * thread (a coroutine of the job's own, a C call) a wait on an unfinished
 * job raises, since blocking could hold the worker the awaited job needs;
 * any other thread blocks, spinning briefly and then sleeping on the queue's done_cv
 * (counted in blocked_waiters / waiting_all, which tell queue.c's finish
 * whom to wake), or, in the state that made a queue without workers,
 * running that queue's jobs meanwhile.
 */
#include "queue/worker.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "record/lua_coroutine.h"
#include "record/sampler.h"
#include "record/session.h"

static const char RUNNER_KEY = 0; /* registry: lightuserdata jq_runner* */
static const char POOL_KEY = 0;   /* registry: finished coroutines to reuse */

/* What runs in a lua_State now: the scheduler's worker (queue.h), and the
 * runner's own fields. A worker thread has one for its life; the state
 * that runs the jobs of a queue without workers makes one per step. */
typedef struct jq_runner {
  jq_worker *w;
  lua_State *L;          /* the state it runs jobs in */
  /* While a slice runs. */
  jq_job *current;       /* job whose coroutine is running */
  lua_State *current_co;
  jq_job *awaiting;      /* set by a wait() in it before it yields */
} jq_runner;

/* A slice as it is recorded: start, end, the arrow into it, JQ_SLICE_*. */
typedef struct slice_rec {
  uint64_t t0, t1;
  uint32_t edge;
  uint8_t flags;
} slice_rec;

#if !defined(JQ_COROUTINE_POOL)
#define JQ_COROUTINE_POOL 64 /* idle coroutines kept per state */
#endif

/* Pushes a coroutine to run a job in: a pooled one, or a new one. */
static lua_State *new_coroutine(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &POOL_KEY) == LUA_TTABLE) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    if (n > 0) {
      lua_rawgeti(L, -1, n);
      lua_pushnil(L);
      lua_rawseti(L, -3, n);
      lua_remove(L, -2);
      return lua_tothread(L, -1);
    }
  }
  lua_pop(L, 1);
  return lua_newthread(L);
}

/* Returns a finished coroutine (its stack reset) to the pool. */
static void pool_coroutine(lua_State *L, lua_State *co) {
  if (lua_status(co) != LUA_OK) /* after an error: closes what is pending; status OK again */
    lua_resetthread(co);
  lua_settop(co, 0); /* a coroutine that returned can run the next function as it is */
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &POOL_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &POOL_KEY);
  }
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
  if (n < JQ_COROUTINE_POOL) {
    lua_pushthread(co);
    lua_xmove(co, L, 1);
    lua_rawseti(L, -2, n + 1);
  }
  lua_pop(L, 1);
}

static int pool_protected(lua_State *L) {
  pool_coroutine(L, lua_touserdata(L, 1));
  return 0;
}

/* pool_coroutine, protected: without memory for the pool, the coroutine
 * (reset all the same: that comes first) is left to the collector. The
 * caller keeps co anchored. */
static void pool_coroutine_safely(lua_State *L, lua_State *co) {
  lua_pushcfunction(L, pool_protected);
  lua_pushlightuserdata(L, co);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK)
    lua_pop(L, 1);
}

/* pool_coroutine_safely for a job's coroutine (category `tag`), with the
 * sampler looking at it: the to-be-closed variables of a job that failed or
 * was cancelled close in its reset, and their Lua is the job's. */
static void pool_job_coroutine(lua_State *L, lua_State *co, uint16_t tag) {
  jq_sampler_ctx act = jq_sampler_enter(JQ_ACT_LUA, 0, 0);
  uint16_t outer_tag = jq_sampler_job_self.job_tag;
  jq_sampler_job_self.job_tag = tag;
  lua_State *outer = jq_sampler_swap(co);
  pool_coroutine_safely(L, co);
  jq_sampler_back(outer);
  jq_sampler_job_self.job_tag = outer_tag;
  jq_sampler_leave(act);
}

/* The runner whose state L belongs to, running a job or not (a job's
 * to-be-closed variables close after its slice when it failed or was
 * cancelled), or NULL. */
static jq_runner *runner_here(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &RUNNER_KEY);
  jq_runner *r = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return r;
}

/* The runner running a job in L's state right now, or NULL. */
static jq_runner *runner_of(lua_State *L) {
  jq_runner *r = runner_here(L);
  return r && r->current ? r : NULL;
}

jq_queue *jq_running_queue(lua_State *L) {
  jq_runner *r = runner_of(L);
  return r ? r->w->q : NULL;
}

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg)
    luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Decodes and calls the queue's init function: protected. */
static int call_init(lua_State *L) {
  jq_queue *q = lua_touserdata(L, 1);
  jq_decode(L, &q->init);
  lua_call(L, 0, 0);
  return 0;
}

int jq_run_init(jq_queue *q, lua_State *L, char *err, size_t errlen) {
  if (q->init.len == 0)
    return 0;
  lua_pushcfunction(L, traceback);
  lua_pushcfunction(L, call_init);
  lua_pushlightuserdata(L, q);
  int rc = lua_pcall(L, 1, 0, -3);
  if (rc != LUA_OK) { /* (a number is not converted: that would allocate, unprotected) */
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    snprintf(err, errlen, "%s", msg ? msg : "(error object is not a string)");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return rc == LUA_OK ? 0 : -1;
}

/* Decodes a job's function and arguments onto the coroutine: protected. */
static int decode_payload(lua_State *L) {
  jq_job *job = lua_touserdata(L, 1);
  lua_pop(L, 1);
  return jq_decode(L, &job->payload);
}

/* A worker has globals of its own: a job calling a global function it
 * does not have there gets, after Lua's message, how to give it one.
 * Pushes the message with the hint onto L and returns 1, or returns 0. */
static int push_global_hint(lua_State *L, const jq_job *job, const char *msg) {
  static const char call[] = "attempt to call a nil value (global '";
  const char *at = job->q->nworkers > 0 ? strstr(msg, call) : NULL; /* workers = 0 shares them */
  const char *name = at ? at + sizeof call - 1 : NULL;
  const char *end = name ? strchr(name, '\'') : NULL;
  if (!end)
    return 0;
  lua_pushlstring(L, name, (size_t)(end - name));
  lua_pushfstring(L, "%s (workers have their own globals: pass '%s' to the job as an argument "
                     "or an upvalue, require it inside the job, or define it in the queue's "
                     "init)", msg, lua_tostring(L, -1));
  lua_remove(L, -2);
  return 1;
}

/* What store_error_protected works on: the job, the coroutine whose
 * traceback a string error gets (NULL: none), and, for results that could
 * not be copied back, why (the error is then made of it). */
typedef struct error_arg {
  jq_job *job;
  lua_State *traceback_of;
  const char *copy_err;
} error_arg;

/* Argument 2 (or, with copy_err, the message made of it) becomes the job's
 * error value: a string gets the job's traceback and where it was
 * submitted. The very message a wait or pwait of this job got from a failed
 * job is stored as a link to that job instead, so a chain of jobs that pass
 * an error on stays one message long. Returns the error as raised, for the
 * trace. Runs protected: it allocates. */
static int store_error_protected(lua_State *L) {
  const error_arg *a = lua_touserdata(L, 1);
  jq_job *job = a->job;
  char err[256];
  if (a->copy_err) {
    lua_settop(L, 1);
    lua_pushfstring(L, "job returned a value that cannot be copied back: %s", a->copy_err);
  }
  lua_settop(L, 2);
  if (job->raised_dep && lua_type(L, 2) == LUA_TSTRING) {
    size_t len;
    const char *msg = lua_tolstring(L, 2, &len);
    if (jq_hash64(msg, len) == job->raised_hash) {
      jq_job_set_cause(job, job->raised_dep, JQ_FAIL_AWAITED);
      return 1;
    }
  }
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char *msg = lua_tostring(L, 2);
    if (push_global_hint(L, job, msg))
      msg = lua_tostring(L, -1);
    if (a->traceback_of)
      luaL_traceback(L, a->traceback_of, msg, 0);
    else
      lua_pushstring(L, msg);
    if (job->line >= 0)
      lua_pushfstring(L, "%s\n(in job #%I submitted at %s:%d)", lua_tostring(L, -1),
                      (LUAI_UACINT)job->id, job->src, job->line);
    else /* submitted from where no line is known (a C function such as pcall) */
      lua_pushfstring(L, "%s\n(in job #%I submitted at %s)", lua_tostring(L, -1),
                      (LUAI_UACINT)job->id, job->src);
  } else {
    lua_pushvalue(L, 2);
  }
  const jq_handle_ops *handles = job->q->handles;
  if (jq_encode(L, lua_gettop(L), 1, &job->result, "error", 1, handles, err, sizeof err) != 0) {
    lua_pushfstring(L, "job #%I failed with an error value that cannot be copied (%s)",
                    (LUAI_UACINT)job->id, err);
    if (jq_encode(L, lua_gettop(L), 1, &job->result, "error", 1, handles, err, sizeof err) != 0)
      return luaL_error(L, "%s", err); /* not enough memory */
  }
  lua_settop(L, 2);
  return 1;
}

/* Stores the job's error: the value at the top of co (moved off it; with
 * `with_traceback`, a string gets co's traceback), or the message made of
 * copy_err. Without memory for that, the job fails with "not enough memory"
 * (JQ_FAIL_NOMEM, nothing stored). Returns how many values it left on L
 * (0 or 1): the error as raised, for put_error_text. */
static int store_error(lua_State *L, lua_State *co, jq_job *job, int with_traceback,
                       const char *copy_err) {
  error_arg a = {job, with_traceback ? co : NULL, copy_err};
  if (!lua_checkstack(L, 3)) { /* (fails without raising) */
    job->fail_reason = JQ_FAIL_NOMEM;
    return 0;
  }
  lua_pushcfunction(L, store_error_protected);
  lua_pushlightuserdata(L, &a);
  if (!copy_err)
    lua_xmove(co, L, 1);
  if (lua_pcall(L, copy_err ? 1 : 2, 1, 0) != LUA_OK) { /* its error: the text recorded */
    jq_buf_free(&job->result);
    job->fail_reason = JQ_FAIL_NOMEM;
  }
  return 1;
}

/* Records the error store_error left on the top of L (`n` 1; n 0: none)
 * as the text of the failed event just recorded: a string as it is (no
 * traceback), another value by its type. No allocation: lua_tolstring is
 * only called on a string. */
static void put_error_text(lua_State *L, jq_job *job, int n) {
  size_t len;
  const char *msg;
  if (n == 0) {
    msg = "not enough memory";
    len = strlen(msg);
  } else if (lua_type(L, -1) == LUA_TSTRING) {
    msg = lua_tolstring(L, -1, &len);
  } else {
    msg = luaL_typename(L, -1); /* "table", "nil", ...: a static name */
    len = strlen(msg);
  }
  jq_ring_put_text(job->tag, (int64_t)job->id, msg, len);
}

/* Whose spans profile_begin/profile_end count on this thread (ring.h). */
typedef struct span_context {
  uint64_t job;
  uint64_t *depth;
  uint8_t flags;
} span_context;

/* Makes the spans opened on this thread the job's (its id and count; flags
 * JQ_SPAN_AFTER_END for its close handlers run after its end); returns what
 * was there. */
static span_context enter_spans(uint64_t id, uint64_t *depth, uint8_t flags) {
  span_context outer = {jq_self.job, jq_self.span_depth, jq_self.span_flags};
  jq_self.job = id;
  jq_self.span_depth = depth;
  jq_self.span_flags = flags;
  return outer;
}

static span_context enter_job(jq_job *job) {
  return enter_spans(job->id, &job->span_depth, 0);
}

static void leave_job(span_context outer) {
  jq_self.job = outer.job;
  jq_self.span_depth = outer.depth;
  jq_self.span_flags = outer.flags;
}

/* A job's coroutine is done: back to the pool, and its registry reference
 * (held only while it was suspended) dropped. The to-be-closed variables it
 * left open (it failed, or was cancelled) close in the pool's reset: a
 * profile_zone among them ends the job's span. */
static void drop_coroutine(lua_State *L, jq_job *job, lua_State *co) {
  span_context outer = enter_spans(job->id, &job->span_depth, JQ_SPAN_AFTER_END);
  if (co)
    pool_job_coroutine(L, co, job->tag);
  leave_job(outer);
  if (job->coref != LUA_NOREF) {
    luaL_unref(L, LUA_REGISTRYINDEX, job->coref);
    job->coref = LUA_NOREF;
  }
}

/* The end of a job's last slice: its coroutine (on the top of L, pushed by
 * the slice) is let go and the job finishes in `state`. Returns with mu
 * held. */
static void end_job(jq_runner *r, lua_State *L, jq_job *job, lua_State *co, int state) {
  drop_coroutine(L, job, co);
  lua_pop(L, 1);
  pthread_mutex_lock(&r->w->q->mu);
  job->on_cpu = 0;
  jq_queue_finish(r->w->q, job, state);
}

/* A suspended job of a closing queue: it fails without resuming. Called
 * and returns with mu held. It finishes before mu is dropped, so a job it
 * awaited that ends meanwhile finds it finished and does not resume it;
 * then its coroutine (which only this thread touches) is let go. */
static void cancel_suspended(jq_runner *r, jq_job *job) {
  jq_worker *w = r->w;
  lua_State *L = r->L;
  int coref = job->coref;
  uint64_t id = job->id, depth = job->span_depth; /* its spans, for its closes */
  uint16_t tag = job->tag;
  job->coref = LUA_NOREF;
  jq_queue_cancel(w->q, job); /* may free it */
  pthread_mutex_unlock(&w->q->mu);
  jq_queue_resume_remote();
  lua_rawgeti(L, LUA_REGISTRYINDEX, coref);
  span_context outer = enter_spans(id, &depth, JQ_SPAN_AFTER_END);
  if (lua_isthread(L, -1))
    pool_job_coroutine(L, lua_tothread(L, -1), tag);
  leave_job(outer);
  lua_pop(L, 1);
  luaL_unref(L, LUA_REGISTRYINDEX, coref);
  pthread_mutex_lock(&w->q->mu);
}

static int new_coroutine_protected(lua_State *L) {
  new_coroutine(L);
  return 1;
}

/* Starts `job`: pushes a coroutine onto L (it stays there during the slice,
 * which keeps it alive; it gets a registry reference only when it
 * suspends) and decodes the job's function and arguments onto it, recording
 * the copy. Returns the coroutine, with *nargs and *t0 (the slice's start
 * when recording: where the copy ends), or NULL when the decoding failed:
 * then the job has finished, and mu is held. */
static lua_State *start_job(jq_runner *r, jq_job *job, int *nargs, uint64_t *t0) {
  lua_State *L = r->L;
  job->coref = LUA_NOREF;
  uint64_t c0 = jq_span_begin();
  size_t bytes = job->payload.len;
  lua_State *co = NULL;
  jq_sampler_ctx act = jq_sampler_enter(JQ_ACT_COPY_IN, (int64_t)job->id, job->tag);
  lua_pushcfunction(L, new_coroutine_protected);
  int rc = lua_pcall(L, 0, 1, 0); /* the coroutine, or (out of memory) the error */
  if (rc == LUA_OK) {
    co = lua_tothread(L, -1);
    lua_pushcfunction(co, decode_payload);
    lua_pushlightuserdata(co, job);
    rc = lua_pcall(co, 1, LUA_MULTRET, 0);
  }
  jq_sampler_leave(act);
  jq_buf_free(&job->payload);
  /* its time is the job's: the slice starts where it ends */
  *t0 = jq_span_end(JQ_EV_COPY, (uint8_t)(JQ_COPY_IN | (rc != LUA_OK ? JQ_COPY_FAILED : 0)),
                    job->tag, jq_copy_bytes(bytes), (int64_t)job->id, c0);
  if (rc != LUA_OK) { /* e.g. a C function this state does not have */
    int n = 1;
    if (co) {
      n = store_error(L, co, job, 0, NULL);
    } else { /* no coroutine: the error on L is the memory error */
      job->fail_reason = JQ_FAIL_NOMEM;
    }
    if (*t0)
      put_error_text(L, job, n);
    lua_pop(L, n);
    if (!co)
      lua_pushnil(L); /* the coroutine's slot, which end_job pops */
    end_job(r, L, job, co, JQ_JOB_FAILED);
    return NULL;
  }
  *nargs = lua_gettop(co) - 1;
  return co;
}

/* Resumes co, the coroutine of `job`, as the job running in r's state (a
 * wait() there, and jobque.current(), look for it). Returns lua_resume's
 * status with *nres; *awaiting is the job that a wait() in it awaits (NULL
 * for a cooperative yield). */
static int resume_job(jq_runner *r, jq_job *job, lua_State *co, int nargs, int *nres,
                      jq_job **awaiting) {
  lua_State *L = r->L;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &RUNNER_KEY);
  void *outer = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (outer != r) {
    lua_pushlightuserdata(L, r);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &RUNNER_KEY);
  }
  r->current = job;
  r->current_co = co;
  r->awaiting = NULL;
  /* Work a job submits carries its category, or the tag it set (kept
   * across its awaits and yields). */
  uint16_t outer_tag = jq_self.tag;
  jq_self.tag = job->run_tag;
  span_context outer_spans = enter_job(job);
  /* The sampler's view: Lua of this coroutine, in this job (put back
   * before the coroutine can be pooled or collected). */
  jq_sampler_ctx outer_act = jq_sampler_enter(JQ_ACT_LUA, 0, 0);
  uint16_t outer_job_tag = jq_sampler_job_self.job_tag;
  jq_sampler_job_self.job_tag = job->tag;
  lua_State *outer_co = jq_sampler_swap(co);
  int status = lua_resume(co, L, nargs, nres);
  jq_sampler_back(outer_co);
  jq_sampler_job_self.job_tag = outer_job_tag;
  jq_sampler_leave(outer_act);
  leave_job(outer_spans);
  job->run_tag = jq_self.tag;
  jq_self.tag = outer_tag;
  *awaiting = r->awaiting;
  r->current = NULL;
  r->current_co = NULL;
  r->awaiting = NULL;
  if (outer != r) {
    if (outer)
      lua_pushlightuserdata(L, outer);
    else
      lua_pushboolean(L, 0); /* not nil: the key stays (caller_run_one) */
    lua_rawsetp(L, LUA_REGISTRYINDEX, &RUNNER_KEY);
  }
  return status;
}

static int ref_protected(lua_State *L) {
  lua_pushinteger(L, luaL_ref(L, LUA_REGISTRYINDEX));
  return 1;
}

/* Gives the coroutine on the top of L a registry reference (job->coref)
 * and pops it; returns 0, or -1 (out of memory) leaving it there. */
static int keep_coroutine(lua_State *L, jq_job *job) {
  lua_pushcfunction(L, ref_protected);
  lua_pushvalue(L, -2);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    lua_pop(L, 1);
    return -1;
  }
  job->coref = (int)lua_tointeger(L, -1);
  lua_pop(L, 2);
  return 0;
}

/* The slice ended in a yield: the job's coroutine stays suspended (in the
 * registry) until what it awaits ends, or, for a cooperative yield, until
 * the work queued before it ran. Returns with mu held. */
static void suspend_job(jq_runner *r, jq_job *job, lua_State *co, int nres, jq_job *awaiting,
                        uint64_t t1) {
  lua_pop(co, nres); /* values of a plain coroutine.yield() are dropped */
  job->yield_ticks = t1;
  if (job->coref == LUA_NOREF) { /* suspended: the registry keeps its coroutine now */
    /* Without memory for that, the job fails. Only a cooperative yield gets
     * here without a reference (a wait made one before it registered as a
     * waiter): nobody else can have put the job on a resume list. */
    if (keep_coroutine(r->L, job) != 0) {
      job->fail_reason = JQ_FAIL_NOMEM;
      end_job(r, r->L, job, co, JQ_JOB_FAILED);
      return;
    }
  } else {
    lua_pop(r->L, 1);
  }
  pthread_mutex_lock(&r->w->q->mu);
  job->on_cpu = 0;
  r->w->suspended++;
  if (!awaiting) /* a cooperative yield: run again after what is queued */
    jq_queue_requeue(r->w, job);
}

/* The slice ended the job (status: lua_resume's): its results, or its
 * error, are stored and recorded (the slice from t0 to t1 with `flags` and
 * `edge`, then the copy out), and it finishes. Returns with mu held. */
static void finish_job(jq_runner *r, jq_job *job, lua_State *co, int status, int nres,
                       const slice_rec *slice) {
  lua_State *L = r->L;
  uint64_t t2 = 0; /* the end of copying the results out */
  size_t out_bytes = 0;
  int done_state = JQ_JOB_FAILED;
  int ntext = 0; /* the error's text left on L by store_error */
  if (status == LUA_OK) {
    char err[256];
    jq_sampler_ctx act = jq_sampler_enter(JQ_ACT_COPY_OUT, (int64_t)job->id, job->tag);
    int rc = jq_encode(co, lua_gettop(co) - nres + 1, nres, &job->result, "result", 1,
                       r->w->q->handles, err, sizeof err);
    jq_sampler_leave(act);
    t2 = slice->t1 && jq_ring_armed() ? jq_clock_ticks() : 0;
    out_bytes = job->result.len; /* before a failure replaces it with the error */
    if (rc == 0) {
      done_state = JQ_JOB_DONE;
    } else {
      ntext = store_error(L, co, job, 0, err);
    }
  } else {
    ntext = store_error(L, co, job, 1, NULL);
  }
  if (slice->t1) {
    int failed = done_state == JQ_JOB_FAILED;
    /* The copy out follows the slice (they share the tick t1), so the
     * lane's slices nest; a failed job's error rides on its last event. */
    jq_ring_put(JQ_EV_SLICE,
                (uint8_t)(slice->flags | JQ_SLICE_LAST | (failed ? JQ_SLICE_FAILED : 0)),
                job->tag, slice->edge, (int64_t)job->id, slice->t0, slice->t1);
    if (t2)
      jq_ring_put(JQ_EV_COPY, (uint8_t)(JQ_COPY_OUT | (failed ? JQ_COPY_FAILED : 0)), job->tag,
                  jq_copy_bytes(out_bytes), (int64_t)job->id, slice->t1, t2);
    if (failed)
      put_error_text(L, job, ntext);
  }
  lua_pop(L, ntext);
  end_job(r, L, job, co, done_state);
}

/* Runs one slice of `job` (started now, or resumed) in r's state. Called
 * without mu; returns with it held, so the caller can take the next job in
 * the same critical section as this one's bookkeeping. */
static void run_slice(jq_runner *r, jq_job *job, int resume) {
  lua_State *co;
  int nargs = 0;
  slice_rec slice = {0, 0, 0, 0};
  if (!resume) {
    co = start_job(r, job, &nargs, &slice.t0);
    if (!co)
      return;
    slice.flags |= JQ_SLICE_FIRST;
  } else {
    lua_rawgeti(r->L, LUA_REGISTRYINDEX, job->coref);
    co = lua_tothread(r->L, -1);
  }
  if (!slice.t0)
    slice.t0 = jq_span_begin();
  if (job->resume_edge) { /* back from an await: its span, and the arrow in */
    slice.edge = job->resume_edge;
    slice.flags |= JQ_SLICE_RESUMED;
    if (slice.t0 && job->yield_ticks)
      jq_ring_put(JQ_EV_AWAIT, 0, job->tag, (uint32_t)job->awaited, (int64_t)job->id,
                  job->yield_ticks, slice.t0);
    job->resume_edge = 0;
  }
  int nres = 0;
  jq_job *awaiting;
  int status = resume_job(r, job, co, nargs, &nres, &awaiting);
  slice.t1 = slice.t0 && jq_ring_armed() ? jq_clock_ticks() : 0;
  if (status == LUA_YIELD) {
    if (slice.t1)
      jq_ring_put(JQ_EV_SLICE, slice.flags, job->tag, slice.edge, (int64_t)job->id, slice.t0,
                  slice.t1);
    suspend_job(r, job, co, nres, awaiting, slice.t1);
  } else {
    finish_job(r, job, co, status, nres, &slice);
  }
}

static int work_showed_up(void *arg) {
  jq_worker *w = arg;
  return atomic_load_explicit(&w->q->ready_hint, memory_order_relaxed) ||
         atomic_load_explicit(&w->q->incoming, memory_order_relaxed) ||
         atomic_load_explicit(&w->resume_hint, memory_order_relaxed);
}

/* Called and returns with mu held: drops it and watches for work for a
 * short while, so a steady stream of jobs does not cost a futex wake-up
 * each (publishers skip the wake-up while a worker spins). The caller must
 * look for work again afterwards. */
static void spin_for_work(jq_worker *w) {
  jq_queue *q = w->q;
  if (q->spinning) /* one spinner is enough: the others leave the cores be */
    return;
  /* Spin only on a core nobody else wants: the workers running jobs and the
   * submitting thread each keep one busy. */
  if (atomic_load_explicit(&q->running, memory_order_relaxed) + 2 > q->ncores)
    return;
  q->spinning = 1;
  pthread_mutex_unlock(&q->mu);
  jq_spin_until(work_showed_up, w, 1);
  pthread_mutex_lock(&q->mu);
  q->spinning = 0;
}

/* (mu) The queue's counts, at the start of a slice (`end` 0: the slice
 * counts as running) and at its end (`end` 1: it no longer does, and the
 * state's heap goes with them): one event, no allocation (lua_gc's count
 * only reads). It carries the queue's number, so that two queues recorded at
 * once get a track each. q->running leaves out the caller's slices
 * (`counted` 0): at a start the caller's counts as one more. */
static void put_counts(jq_runner *r, int counted, int end) {
  long ready, running, suspended;
  jq_queue_counts(r->w->q, end ? counted : counted - 1, &ready, &running, &suspended);
  int kb = end ? lua_gc(r->L, LUA_GCCOUNT) : 0;
  int seq = r->w->q->seq;
  uint16_t qno = (uint16_t)(seq < 1 ? 1 : seq > 0xffff ? 0xffff : seq);
  jq_ring_put(JQ_EV_COUNTS, end ? 0 : JQ_COUNTS_START, qno, (uint32_t)(kb < 0 ? 0 : kb),
              jq_counts_pack(ready, running, suspended), 0, 0);
}

/* (mu) Sleeps until a publisher wakes w (a park span when recording). */
static void park(jq_worker *w) {
  jq_queue *q = w->q;
  uint64_t parked = jq_span_begin();
  w->parked = 1;
  atomic_fetch_add(&q->nparked, 1);
#ifdef JQ_TESTING
  atomic_fetch_add(&jq_test_parked, 1);
#endif
  if (atomic_load(&q->incoming)) /* pushed before it could see us parked */
    w->parked = 0;
  while (w->parked)
    pthread_cond_wait(&w->cv, &q->mu);
  atomic_fetch_sub(&q->nparked, 1);
#ifdef JQ_TESTING
  atomic_fetch_sub(&jq_test_parked, 1);
#endif
  jq_span_end(JQ_EV_PARK, 0, 0, 0, 0, parked);
}

/* step's work, the sampler's "[scheduler]" outside the slice it runs. */
static int step_scheduled(jq_runner *r, int block) {
  jq_worker *w = r->w;
  jq_queue *q = w->q;
  int resume = 0, spun = 0;
  jq_job *job;
  for (;;) {
    job = jq_queue_take(q, w, &resume);
    if (job) {
      if (resume)
        w->suspended--;
      break;
    }
    if (q->closing) {
      /* Suspended jobs nothing will wake any more (their awaited job is on
       * another queue, or in a cycle with them): cancel them. */
      job = w->suspended > 0 ? jq_queue_suspended_on(q, w) : NULL;
      if (!job)
        return 0;
      w->suspended--;
      cancel_suspended(r, job);
      return 1;
    }
    if (!block)
      return 0;
    if (!spun) { /* look again after spinning, whatever it saw: a job published */
      spun = 1;  /* while we spun did not wake anyone */
      spin_for_work(w);
      continue;
    }
    spun = 0;
    park(w);
  }
  if (q->closing && resume) { /* woken, but its queue closes: cancelled */
    cancel_suspended(r, job);
    return 1;
  }
  int counted = w->index < q->nworkers; /* a worker thread, not the caller */
#ifdef JQ_TESTING
  if (counted && !resume && atomic_load(&jq_test_hold_takes)) { /* the specs' window, held open */
    atomic_store(&jq_test_holding, 1);
    while (atomic_load(&jq_test_hold_takes))
      sched_yield();
    atomic_store(&jq_test_holding, 0);
  }
#endif
  if (counted) {
    atomic_fetch_add(&q->running, 1);
    /* A lock-free publisher that pushed after this worker drained
     * `incoming` but before the count above saw it idle and woke no one,
     * leaving the job to it, while it is about to run another: a parked
     * worker would sleep beside the new job (a spec hung so, its caller
     * waiting for that job while this one waited for the caller). The
     * count and this look at `incoming` pair with the publisher's push and
     * its look at `running` (all seq_cst): one of the two sees the other. */
    jq_queue_wake_for_incoming(q);
  }
  job->on_cpu = 1;
  if (jq_ring_armed())
    put_counts(r, counted, 0);
  pthread_mutex_unlock(&q->mu);
  run_slice(r, job, resume);
  if (jq_ring_armed())
    put_counts(r, counted, 1);
  if (counted)
    atomic_fetch_sub(&q->running, 1);
  if (jq_queue_remote_pending()) { /* its end resumes jobs of other queues: not under mu */
    pthread_mutex_unlock(&q->mu);
    jq_queue_resume_remote();
    pthread_mutex_lock(&q->mu);
  }
  return 1;
}

/* Takes and runs one thing for w; with `block`, parks until there is one.
 * Called and returns with mu held. Returns 0 when w should stop (closing
 * and nothing of its own left), or when not blocking and nothing was
 * runnable. */
static int step(jq_runner *r, int block) {
  jq_sampler_ctx act = jq_sampler_enter(JQ_ACT_SCHEDULER, 0, 0);
  int ran = step_scheduled(r, block);
  jq_sampler_leave(act);
  return ran;
}

/* For the creating state of a queue without workers: runs one slice of
 * whatever is runnable. Returns 0 when there was nothing to run. */
static int caller_run_one(jq_queue *q, lua_State *L) {
  jq_runner r = {&q->workers[q->nworkers], L, NULL, NULL, NULL};
  /* resume_job sets the registry's runner, which must not allocate there
   * (a memory error would leave the job half run): the key is made here,
   * before anything is held, where a wait may still raise. A store into a
   * key that exists, with a value that is not nil, allocates nothing. */
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &RUNNER_KEY) == LUA_TNIL) {
    lua_pushboolean(L, 0);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &RUNNER_KEY);
  }
  lua_pop(L, 1);
  pthread_mutex_lock(&q->mu);
  int ran = step(&r, 0);
  pthread_mutex_unlock(&q->mu);
  return ran;
}

void jq_prepare_state(lua_State *L, const char *path, const char *cpath, lua_CFunction open_core) {
  luaL_openlibs(L);
  jq_coroutine_install(L); /* the sampler sees the coroutines a job resumes */
  lua_getglobal(L, "package");
  lua_pushstring(L, path);
  lua_setfield(L, -2, "path");
  lua_pushstring(L, cpath);
  lua_setfield(L, -2, "cpath");
  luaL_getsubtable(L, -1, "preload"); /* this very library: one recording session */
  lua_pushcfunction(L, open_core);
  lua_setfield(L, -2, "jobque.core");
  lua_pop(L, 2);
  luaL_requiref(L, "jobque.core", open_core, 0); /* job handles need it */
  lua_pop(L, 1);
}

/* What a worker thread starts with: read only before it reports its init
 * done (jq_workers_start keeps it until then). */
typedef struct start_arg {
  jq_worker *w;
  lua_CFunction open_core;
} start_arg;

typedef struct prepare_arg {
  const start_arg *start;
  jq_runner *r;
} prepare_arg;

/* Opens the libraries of a worker's new state and marks it as the
 * worker's: protected (out of memory raises). */
static int prepare_worker(lua_State *L) {
  const prepare_arg *a = lua_touserdata(L, 1);
  jq_worker *w = a->start->w;
  jq_prepare_state(L, w->q->path, w->q->cpath, a->start->open_core);
  lua_pushlightuserdata(L, a->r);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &RUNNER_KEY);
  return 0;
}

static void *worker_main(void *arg) {
  jq_worker *w = ((const start_arg *)arg)->w;
  jq_queue *q = w->q;
  char name[64], err[512];
  if (q->name[0])
    snprintf(name, sizeof name, "%s %d", q->name, w->index);
  else
    snprintf(name, sizeof name, "worker %d", w->index);
  /* Lane order: by queue, then worker (index < 1024). Keys stay below 2^30,
   * where other threads' lanes start (session.c), and never overflow: the
   * queues made after the first 2^20 - 2 share the last queue number
   * (jq_queue_number). */
  int seq = (int)jq_queue_number(q);
  int key = seq * 1024 + w->index + 1;
  jq_session_name_thread(name, key, seq);
#ifdef JQ_TESTING
  lua_State *L = jq_test_newstate(); /* the specs' allocation-failure hook */
#else
  lua_State *L = luaL_newstate();
#endif
  jq_runner r = {w, L, NULL, NULL, NULL};
  prepare_arg prep = {arg, &r};
  int ok = L != NULL, started = 0;
  if (!ok) {
    snprintf(err, sizeof err, "worker %d: cannot create a lua_State: not enough memory", w->index);
  } else {
    lua_pushcfunction(L, prepare_worker); /* light C functions: no allocation, no error */
    lua_pushlightuserdata(L, &prep);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
      snprintf(err, sizeof err, "worker %d: cannot prepare its lua_State: %s", w->index,
               lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "(no message)");
      lua_pop(L, 1);
      ok = 0;
    } else {
      started = 1;
      ok = jq_run_init(q, L, err, sizeof err) == 0;
    }
  }
  pthread_mutex_lock(&q->mu);
  if (!ok && !q->init_error[0]) {
    snprintf(q->init_error, sizeof q->init_error, "%s", err);
    q->start_failed = !started; /* not `init`'s fault */
  }
  q->inits_done++;
  pthread_cond_broadcast(&q->done_cv);
  pthread_mutex_unlock(&q->mu);
  if (L) {
    pthread_mutex_lock(&q->mu);
    while (step(&r, 1))
      ;
    pthread_mutex_unlock(&q->mu);
    lua_close(L);
  }
  return NULL;
}

int jq_workers_start(jq_queue *q, lua_CFunction open_core) {
  start_arg args[JQ_MAX_WORKERS];
  for (int i = 0; i < q->nworkers; i++) {
    jq_worker *w = &q->workers[i];
    args[i].w = w;
    args[i].open_core = open_core;
    int rc = pthread_create(&w->thread, NULL, worker_main, &args[i]);
    if (rc != 0) {
      pthread_mutex_lock(&q->mu);
      snprintf(q->init_error, sizeof q->init_error, "cannot start worker thread %d: %s", i,
               strerror(rc));
      q->start_failed = 1;
      q->inits_done += q->nworkers - i; /* these never start */
      pthread_mutex_unlock(&q->mu);
      break;
    }
    w->started = 1;
  }
  pthread_mutex_lock(&q->mu);
  while (q->inits_done < q->nworkers)
    pthread_cond_wait(&q->done_cv, &q->mu);
  int rc = q->init_error[0] ? -1 : 0;
  pthread_mutex_unlock(&q->mu);
  return rc;
}

long jq_workers_stop(jq_queue *q, lua_State *L) {
  pthread_mutex_lock(&q->mu);
  long started = q->live; /* (read where the close begins: no job starts after it) */
  jq_queue_begin_close(q);
  pthread_mutex_unlock(&q->mu);
  jq_queue_resume_remote(); /* waiters on other queues of the jobs cancelled here */
  for (int i = 0; i < q->nworkers; i++)
    if (q->workers[i].started) {
      pthread_join(q->workers[i].thread, NULL);
      q->workers[i].started = 0;
    }
  /* The caller's own suspended jobs (a queue without workers). */
  jq_runner r = {&q->workers[q->nworkers], L, NULL, NULL, NULL};
  pthread_mutex_lock(&q->mu);
  while (step(&r, 0))
    ;
  pthread_mutex_unlock(&q->mu);
  return started;
}

/* ---- waiting ---- */

/* A job of q finished since the generation `gen` was read. */
struct since {
  jq_queue *q;
  unsigned gen;
};

static int finished_since(void *arg) {
  struct since *s = arg;
  return atomic_load_explicit(&s->q->finished_gen, memory_order_relaxed) != s->gen;
}

static int all_finished(void *arg) {
  return jq_queue_unfinished(arg) <= 0;
}

void jq_push_error_at(lua_State *L, int level, const char *fmt, va_list ap) {
  luaL_where(L, level);
  lua_pushvfstring(L, fmt, ap);
  lua_concat(L, 2);
}

/* jq_push_error_at's message; returns JQ_WAIT_ERROR. */
static int wait_error(lua_State *L, int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  jq_push_error_at(L, level, fmt, ap);
  va_end(ap);
  return JQ_WAIT_ERROR;
}

/* (mu) Whether what block_until waits for has finished. */
static int wait_over(jq_queue *q, jq_job *job) {
  return job ? jq_job_finished(job) : jq_queue_unfinished(q) <= 0;
}

/* (mu) The state that made a queue without workers runs its jobs while it
 * waits: one slice. Returns 0, or JQ_WAIT_ERROR with the message pushed and
 * mu released when nothing is left to run and what it waits for did not
 * finish. */
static int run_while_waiting(lua_State *L, jq_queue *q, jq_job *job, jq_job *waiter, int level) {
  pthread_mutex_unlock(&q->mu);
  int ran = caller_run_one(q, L);
  pthread_mutex_lock(&q->mu);
  if (ran || wait_over(q, job))
    return 0;
  if (q->workers[q->nworkers].resume_head || q->ready_head)
    return 0; /* resumed (or readied) since the step: run it next */
  int remote = jq_queue_awaits_remote(q);
  if (remote && !waiter) { /* a finish on another queue resumes it (push_resume wakes us) */
    pthread_cond_wait(&q->done_cv, &q->mu);
    return 0;
  }
  pthread_mutex_unlock(&q->mu);
  if (remote) /* sleeping would hold the worker thread of waiter's queue: the remote job may need it */
    return wait_error(L, level, "job #%I cannot wait for job #%I: job #%I's queue has no workers "
                                "and its jobs await jobs of other queues, so this wait would block "
                                "a worker thread that those jobs may need; give that queue "
                                "workers, or wait from the job's body for what its jobs await first",
                      (LUAI_UACINT)waiter->id, (LUAI_UACINT)job->id, (LUAI_UACINT)job->id);
  if (job)
    return wait_error(L, level, "job #%I can never finish: the queue has no workers and "
                                "nothing left to run (does it wait for itself?)",
                      (LUAI_UACINT)job->id);
  return wait_error(L, level, "jobs can never finish: the queue has no workers and nothing left "
                              "to run");
}

/* (mu) Sleeps until a job of q finishes, after spinning a little first: a
 * short job is often done before a futex sleep and wake-up would be. A
 * wait_all spins on the count itself, so that it does not take mu at every
 * job that ends. */
static void sleep_for_finish(jq_queue *q, jq_job *job) {
  struct since sn = {q, atomic_load_explicit(&q->finished_gen, memory_order_relaxed)};
  unsigned gen = sn.gen;
  pthread_mutex_unlock(&q->mu);
  int changed = job ? jq_spin_until(finished_since, &sn, 1) : jq_spin_until(all_finished, q, 1);
  pthread_mutex_lock(&q->mu);
  if (job ? (changed || atomic_load_explicit(&q->finished_gen, memory_order_relaxed) != gen)
          : jq_queue_unfinished(q) <= 0)
    return; /* (a finish between the last look and the lock: exact under mu) */
  if (job)
    job->blocked_waiters++;
  else
    q->waiting_all++;
  pthread_cond_wait(&q->done_cv, &q->mu);
  if (job)
    job->blocked_waiters--;
  else
    q->waiting_all--;
}

/* Blocks the calling thread until `job` (or, job NULL, every job of q)
 * finished. The state that made a queue without workers runs its jobs here;
 * `waiter`, when not NULL, is the job of a worker thread that waits (it
 * must not sleep while those jobs await other queues' jobs).
 * Returns JQ_WAIT_DONE, or JQ_WAIT_ERROR with the message pushed. */
static int block_until(lua_State *L, jq_queue *q, jq_job *job, jq_job *waiter, int level) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  int runs_jobs = q->nworkers == 0 && lua_topointer(L, -1) == q->owner;
  lua_pop(L, 1);
  if (q->nworkers == 0 && !runs_jobs && job) {
    pthread_mutex_lock(&q->mu);
    int state = job->state;
    pthread_mutex_unlock(&q->mu);
    if (state < JQ_JOB_DONE && waiter)
      return wait_error(L, level, "job #%I cannot wait for job #%I: job #%I belongs to a queue "
                                  "without workers: only the state that created that queue runs "
                                  "its jobs, so this wait would never end (wait for it there)",
                        (LUAI_UACINT)waiter->id, (LUAI_UACINT)job->id, (LUAI_UACINT)job->id);
    if (state < JQ_JOB_DONE)
      return wait_error(L, level, "job #%I belongs to a queue without workers: only the state "
                                  "that created that queue runs its jobs, so this wait would "
                                  "never end (wait for it there)", (LUAI_UACINT)job->id);
  }
  uint64_t t0 = jq_span_begin();
  jq_sampler_ctx act = jq_sampler_enter(JQ_ACT_SCHEDULER, 0, 0); /* spinning: no Lua */
  pthread_mutex_lock(&q->mu);
  while (!wait_over(q, job)) {
    if (!runs_jobs) {
      sleep_for_finish(q, job);
    } else if (run_while_waiting(L, q, job, waiter, level) == JQ_WAIT_ERROR) {
      jq_sampler_leave(act);
      return JQ_WAIT_ERROR;
    }
  }
  pthread_mutex_unlock(&q->mu);
  jq_sampler_leave(act);
  jq_span_end(JQ_EV_WAIT, 0, jq_self.tag, 0, job ? (int64_t)job->id : 0, t0);
  return JQ_WAIT_DONE;
}

/* Whether `job` (of q) finished: takes q's mu. */
static int finished_now(jq_queue *q, jq_job *job) {
  pthread_mutex_lock(&q->mu);
  int done = jq_job_finished(job);
  pthread_mutex_unlock(&q->mu);
  return done;
}

/* The job running in r's state (r->current) awaits `job` of q: registers
 * it as a waiter (for a job of another queue: under that queue's mu only,
 * never both). Returns JQ_WAIT_YIELD, JQ_WAIT_DONE when `job` finished
 * meanwhile, or JQ_WAIT_ERROR with the message pushed. */
static int await_job(lua_State *L, jq_runner *r, jq_queue *q, jq_job *job, int level) {
  jq_job *self = r->current;
  jq_queue *own = self->q;
  /* The registry keeps a suspended coroutine: its reference is made here,
   * where a memory error may still be raised, not after the awaited job
   * could have resumed it. */
  if (self->coref == LUA_NOREF) {
    lua_pushthread(L);
    self->coref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  /* The creator of a queue without workers runs its jobs while it waits:
   * it must know one awaits another queue (and sleep, not give up). Set
   * before the await is visible: the finish that resumes it clears it. */
  int flag = q != own && own->nworkers == 0;
  if (flag) {
    pthread_mutex_lock(&own->mu);
    self->await_remote = 1;
    pthread_mutex_unlock(&own->mu);
  }
  pthread_mutex_lock(&q->mu);
  int rc = jq_queue_await(job, self);
  pthread_mutex_unlock(&q->mu);
  if (rc == 0) {
    r->awaiting = job;
    return JQ_WAIT_YIELD;
  }
  if (flag) {
    pthread_mutex_lock(&own->mu);
    self->await_remote = 0;
    pthread_mutex_unlock(&own->mu);
  }
  return rc < 0 ? wait_error(L, level, "out of memory") : JQ_WAIT_DONE;
}

int jq_wait(lua_State *L, jq_queue *q, jq_job *job, int level) {
  jq_runner *r = job ? runner_here(L) : NULL;
  if (!r || (!r->current && r->w->index == r->w->q->nworkers))
    return block_until(L, q, job, NULL, level); /* not a worker thread: blocking is safe */
  if (!r->current) { /* a worker thread outside any job: nothing can suspend */
    if (finished_now(q, job))
      return JQ_WAIT_DONE;
    return wait_error(L, level, "job #%I has not finished, and this wait cannot suspend a job: it "
                                "runs on a worker thread outside a job's body (in a to-be-closed "
                                "variable of a job that failed or was cancelled, or in the "
                                "queue's init), where blocking would hold a worker that jobs may "
                                "need; wait from the job's own body", (LUAI_UACINT)job->id);
  }
  jq_job *self = r->current;
  if (self == job)
    return wait_error(L, level, "job #%I cannot wait for itself", (LUAI_UACINT)job->id);
  if (q != self->q && q->nworkers == 0) /* only its creator runs it: block_until says so */
    return block_until(L, q, job, r->w->index < r->w->q->nworkers ? self : NULL, level);
  int foreign = r->current_co != L;
  if (!foreign && lua_isyieldable(L)) /* the job's body: suspend, the worker runs other work */
    return await_job(L, r, q, job, level);
  /* A coroutine of the job's own, or a C call in between: the job cannot
   * suspend here, and a blocking wait would hold a worker that the awaited
   * job may need (its own queue's, or one whose jobs await this queue's). */
  if (finished_now(q, job))
    return JQ_WAIT_DONE;
  if (foreign)
    return wait_error(L, level, "job #%I cannot wait for job #%I from a coroutine of its own: "
                                "job #%I has not finished, and only a wait in the job's body can "
                                "suspend the job (blocking would hold a worker that the awaited "
                                "job may need); wait from the job's body, or collect the results "
                                "outside the coroutine", (LUAI_UACINT)self->id,
                      (LUAI_UACINT)job->id, (LUAI_UACINT)job->id);
  return wait_error(L, level, "job #%I cannot wait for job #%I across a C call (a metamethod, a "
                              "table.sort comparator, a string.gsub callback, require, ...): job "
                              "#%I has not finished, and the C call keeps the job from "
                              "suspending (blocking would hold a worker that the awaited job may "
                              "need); wait from the job's body, before or after that call",
                    (LUAI_UACINT)self->id, (LUAI_UACINT)job->id, (LUAI_UACINT)job->id);
}

void jq_note_raised(lua_State *L, jq_job *failed) {
  jq_runner *r = runner_of(L);
  if (!r || r->current_co != L || lua_type(L, -1) != LUA_TSTRING) /* (never convert a number) */
    return;
  jq_job *self = r->current;
  size_t len;
  const char *msg = lua_tolstring(L, -1, &len);
  jq_job_ref(failed);
  if (self->raised_dep)
    jq_job_unref(self->raised_dep);
  self->raised_dep = failed;
  self->raised_hash = jq_hash64(msg, len);
}
