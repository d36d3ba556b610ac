/*
 * worker.c - worker threads, each with its own lua_State, running jobs as
 * coroutines, one slice (resume to yield or return) at a time.
 *
 * A worker takes from its own resume list first (coroutines that may
 * continue: their awaited job ended, or they yielded), then from the queue's
 * ready list; with nothing to run it parks on its condition variable. Each
 * slice, each await and each park is recorded on the worker's lane when a
 * trace session is armed (lock-free, see ring.h).
 */
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "trace.h"

static const char WORKER_KEY = 0; /* registry: lightuserdata jq_worker* */
static const char POOL_KEY = 0;   /* registry: finished coroutines to reuse */

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

jq_worker *jq_worker_here(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &WORKER_KEY);
  jq_worker *w = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return w;
}

jq_worker *jq_worker_current(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &WORKER_KEY);
  jq_worker *w = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return w && w->current ? w : NULL;
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
  if (rc != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
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

/* Stores the error at the top of co as the job's error value: a string gets
 * the job's traceback and where it was submitted. The very message a wait
 * or pwait of this job got from a failed job is stored as a link to that
 * job instead, so a chain of jobs that pass an error on stays one message
 * long. Leaves co's stack as is. */
static void store_error(lua_State *L, lua_State *co, jq_job *job, int with_traceback) {
  char err[256];
  if (job->raised_dep && lua_type(co, -1) == LUA_TSTRING) {
    size_t len;
    const char *msg = lua_tolstring(co, -1, &len);
    if (jq_hash64(msg, len) == job->raised_hash) {
      jq_job_set_cause(job, job->raised_dep, JQ_FAIL_AWAITED);
      return;
    }
  }
  if (lua_type(co, -1) == LUA_TSTRING) {
    if (with_traceback)
      luaL_traceback(L, co, lua_tostring(co, -1), 0);
    else
      lua_pushstring(L, lua_tostring(co, -1));
    lua_pushfstring(L, "%s\n(in job #%I submitted at %s:%d)", lua_tostring(L, -1),
                    (LUAI_UACINT)job->id, job->src, job->line);
    lua_remove(L, -2);
  } else {
    lua_pushvalue(co, -1);
    lua_xmove(co, L, 1);
  }
  if (jq_encode(L, lua_gettop(L), 1, &job->result, "error", 1, err, sizeof err) != 0) {
    lua_pushfstring(L, "job #%I failed with an error value that cannot be copied (%s)",
                    (LUAI_UACINT)job->id, err);
    jq_encode(L, lua_gettop(L), 1, &job->result, "error", 1, err, sizeof err);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/* A job's coroutine is done: back to the pool, and its registry reference
 * (held only while it was suspended) dropped. */
static void drop_coroutine(lua_State *L, jq_job *job, lua_State *co) {
  if (co)
    pool_coroutine(L, co);
  if (job->coref != LUA_NOREF) {
    luaL_unref(L, LUA_REGISTRYINDEX, job->coref);
    job->coref = LUA_NOREF;
  }
}

/* A suspended job of a closing queue: it fails without resuming. Called
 * and returns with mu held. It finishes before mu is dropped, so a job it
 * awaited that ends meanwhile finds it finished and does not resume it;
 * then its coroutine (which only this thread touches) is let go. */
static void cancel_suspended(jq_worker *w, lua_State *L, jq_job *job) {
  int coref = job->coref;
  job->coref = LUA_NOREF;
  job->fail_reason = JQ_FAIL_CLOSED;
  jq_queue_finish(w->q, job, JQ_JOB_FAILED); /* may free it */
  pthread_mutex_unlock(&w->q->mu);
  lua_rawgeti(L, LUA_REGISTRYINDEX, coref);
  if (lua_isthread(L, -1))
    pool_coroutine(L, lua_tothread(L, -1));
  lua_pop(L, 1);
  luaL_unref(L, LUA_REGISTRYINDEX, coref);
  pthread_mutex_lock(&w->q->mu);
}

/* Runs one slice of `job` on worker w, whose state is L. Called without mu;
 * returns with it held, so the caller can take the next job in the same
 * critical section as this one's bookkeeping. */
static void run_slice(jq_worker *w, lua_State *L, jq_job *job, int resume) {
  jq_queue *q = w->q;
  lua_State *co;
  int nargs = 0, done_state = 0;
  uint8_t flags = 0;
  /* The coroutine stays on L's stack during the slice (that keeps it alive);
   * it gets a registry reference only when it suspends. */
  if (!resume) {
    co = new_coroutine(L);
    lua_pushcfunction(co, decode_payload);
    lua_pushlightuserdata(co, job);
    int rc = lua_pcall(co, 1, LUA_MULTRET, 0);
    jq_buf_free(&job->payload);
    if (rc != LUA_OK) { /* e.g. a C function this state does not have */
      store_error(L, co, job, 0);
      drop_coroutine(L, job, co);
      lua_pop(L, 1);
      pthread_mutex_lock(&q->mu);
      job->on_cpu = 0;
      jq_queue_finish(q, job, JQ_JOB_FAILED);
      return;
    }
    nargs = lua_gettop(co) - 1;
    flags |= JQ_SLICE_FIRST;
  } else {
    lua_rawgeti(L, LUA_REGISTRYINDEX, job->coref);
    co = lua_tothread(L, -1);
  }
  uint64_t t0 = jq_ring_armed() ? jq_clock_ticks() : 0;
  uint32_t edge = 0;
  if (job->resume_edge) { /* back from an await: its span, and the arrow in */
    edge = job->resume_edge;
    flags |= JQ_SLICE_RESUMED;
    if (t0 && job->yield_ticks)
      jq_ring_put(JQ_EV_AWAIT, 0, job->tag, (uint32_t)job->awaited, (int64_t)job->id,
                  job->yield_ticks, t0);
    job->resume_edge = 0;
  }
  /* Who runs in this state now: wait() and jobque.current() look here. */
  lua_rawgetp(L, LUA_REGISTRYINDEX, &WORKER_KEY);
  void *outer = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (outer != w) {
    lua_pushlightuserdata(L, w);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &WORKER_KEY);
  }
  jq_job *outer_job = w->current;
  lua_State *outer_co = w->current_co;
  w->current = job;
  w->current_co = co;
  w->awaiting = NULL;

  uint16_t outer_tag = jq_self.tag; /* work a job submits carries its category */
  jq_self.tag = job->tag;
  int nres = 0;
  int status = lua_resume(co, L, nargs, &nres);
  jq_self.tag = outer_tag;

  jq_job *awaiting = w->awaiting;
  w->current = outer_job;
  w->current_co = outer_co;
  w->awaiting = NULL;
  if (outer != w) {
    if (outer)
      lua_pushlightuserdata(L, outer);
    else
      lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &WORKER_KEY);
  }
  uint64_t t1 = t0 && jq_ring_armed() ? jq_clock_ticks() : 0;

  if (status == LUA_YIELD) {
    lua_pop(co, nres); /* values of a plain coroutine.yield() are dropped */
    if (t1)
      jq_ring_put(JQ_EV_SLICE, flags, job->tag, edge, (int64_t)job->id, t0, t1);
    job->yield_ticks = t1;
    if (job->coref == LUA_NOREF) /* suspended: the registry keeps its coroutine now */
      job->coref = luaL_ref(L, LUA_REGISTRYINDEX);
    else
      lua_pop(L, 1);
    pthread_mutex_lock(&q->mu);
    job->on_cpu = 0;
    w->suspended++;
    if (!awaiting) /* a cooperative yield: run again after what is queued */
      jq_queue_requeue(w, job);
    return;
  }
  if (status == LUA_OK) {
    char err[256];
    if (jq_encode(co, lua_gettop(co) - nres + 1, nres, &job->result, "result", 1, err,
                  sizeof err) == 0) {
      done_state = JQ_JOB_DONE;
    } else {
      lua_pushfstring(co, "job returned a value that cannot be copied back: %s", err);
      store_error(L, co, job, 0);
      done_state = JQ_JOB_FAILED;
    }
  } else {
    store_error(L, co, job, 1);
    done_state = JQ_JOB_FAILED;
  }
  if (t1)
    jq_ring_put(JQ_EV_SLICE,
                (uint8_t)(flags | JQ_SLICE_LAST | (done_state == JQ_JOB_FAILED ? JQ_SLICE_FAILED : 0)),
                job->tag, edge, (int64_t)job->id, t0, t1);
  drop_coroutine(L, job, co);
  lua_pop(L, 1);
  pthread_mutex_lock(&q->mu);
  job->on_cpu = 0;
  jq_queue_finish(q, job, done_state);
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

/* Takes and runs one thing for w; with `block`, parks until there is one.
 * Called and returns with mu held. Returns 0 when w should stop (closing
 * and nothing of its own left), or when not blocking and nothing was
 * runnable. */
static int step(jq_worker *w, lua_State *L, int block) {
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
      cancel_suspended(w, L, job);
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
    uint64_t parked = jq_ring_armed() ? jq_clock_ticks() : 0;
    w->parked = 1;
    atomic_fetch_add(&q->nparked, 1);
    if (atomic_load(&q->incoming)) /* pushed before it could see us parked */
      w->parked = 0;
    while (w->parked)
      pthread_cond_wait(&w->cv, &q->mu);
    atomic_fetch_sub(&q->nparked, 1);
    if (parked && jq_ring_armed())
      jq_ring_put(JQ_EV_PARK, 0, 0, 0, 0, parked, jq_clock_ticks());
  }
  if (q->closing && resume) { /* woken, but its queue closes: cancelled */
    cancel_suspended(w, L, job);
    return 1;
  }
  int counted = w->index < q->nworkers; /* a worker thread, not the caller */
  if (counted)
    atomic_fetch_add(&q->running, 1);
  job->on_cpu = 1;
  pthread_mutex_unlock(&q->mu);
  run_slice(w, L, job, resume);
  if (counted)
    atomic_fetch_sub(&q->running, 1);
  return 1;
}

int jq_caller_run_one(jq_queue *q, lua_State *L) {
  pthread_mutex_lock(&q->mu);
  int ran = step(&q->workers[q->nworkers], L, 0);
  pthread_mutex_unlock(&q->mu);
  return ran;
}

void jq_prepare_state(lua_State *L, const char *path, const char *cpath) {
  luaL_openlibs(L);
  lua_getglobal(L, "package");
  lua_pushstring(L, path);
  lua_setfield(L, -2, "path");
  lua_pushstring(L, cpath);
  lua_setfield(L, -2, "cpath");
  luaL_getsubtable(L, -1, "preload"); /* this very library: one trace session */
  lua_pushcfunction(L, luaopen_jobque_core);
  lua_setfield(L, -2, "jobque.core");
  lua_pop(L, 2);
  luaL_requiref(L, "jobque.core", luaopen_jobque_core, 0); /* job handles need it */
  lua_pop(L, 1);
}

/* Opens the libraries of a worker's new state and marks it as the
 * worker's: protected (out of memory raises). */
static int prepare_worker(lua_State *L) {
  jq_worker *w = lua_touserdata(L, 1);
  jq_prepare_state(L, w->q->path, w->q->cpath);
  lua_pushlightuserdata(L, w);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &WORKER_KEY);
  return 0;
}

static void *worker_main(void *arg) {
  jq_worker *w = arg;
  jq_queue *q = w->q;
  char name[64], err[512];
  if (q->name[0])
    snprintf(name, sizeof name, "%s %d", q->name, w->index);
  else
    snprintf(name, sizeof name, "worker %d", w->index);
  jq_trace_name_thread(name, q->seq * 1024 + w->index + 1);
  lua_State *L = luaL_newstate();
  int ok = L != NULL, started = 0;
  if (!ok) {
    snprintf(err, sizeof err, "worker %d: cannot create a lua_State: out of memory", w->index);
  } else {
    lua_pushcfunction(L, prepare_worker); /* light C functions: no allocation, no error */
    lua_pushlightuserdata(L, w);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
      snprintf(err, sizeof err, "worker %d: cannot prepare its lua_State: %s", w->index,
               lua_isstring(L, -1) ? lua_tostring(L, -1) : "(no message)");
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
    while (step(w, L, 1))
      ;
    pthread_mutex_unlock(&q->mu);
    lua_close(L);
  }
  return NULL;
}

int jq_workers_start(jq_queue *q) {
  for (int i = 0; i < q->nworkers; i++) {
    jq_worker *w = &q->workers[i];
    int rc = pthread_create(&w->thread, NULL, worker_main, w);
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

void jq_queue_close(jq_queue *q, lua_State *L) {
  pthread_mutex_lock(&q->mu);
  jq_queue_begin_close(q);
  pthread_mutex_unlock(&q->mu);
  for (int i = 0; i < q->nworkers; i++)
    if (q->workers[i].started) {
      pthread_join(q->workers[i].thread, NULL);
      q->workers[i].started = 0;
    }
  /* The caller's own suspended jobs (a queue without workers). */
  jq_worker *w = &q->workers[q->nworkers];
  pthread_mutex_lock(&q->mu);
  while (step(w, L, 0))
    ;
  jq_queue_fail_rest(q); /* waiting on jobs that can no longer run */
  pthread_mutex_unlock(&q->mu);
}
