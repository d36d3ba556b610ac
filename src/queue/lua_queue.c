/*
 * lua_queue.c - Lua bindings of queues and jobs.
 *
 * Userdata: "jobque.queue" (a reference to a queue; the one made by
 * jobque.new owns it and closes it from close/__close/__gc) and "jobque.job"
 * (a reference to a job, in any state). It gives the codec the interface
 * through which job handles cross states (job_handles, kept on each queue),
 * and leaves waiting to worker.c (jq_wait). Every argument is checked before any
 * side effect; no Lua error is raised while q->mu is held or while this file
 * holds malloc'd memory.
 */
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "bindings.h"
#include "queue/queue.h"
#include "record/sampler.h"
#include "record/session.h"
#include "queue/worker.h"

#define QUEUE_MT "jobque.queue"
#define JOB_MT "jobque.job"                   /* a handle that holds its own reference */
#define JOB_BATCHED_MT "jobque.job (batched)" /* one whose batch holds it (no __gc) */
#define BATCH_MT "jobque.batch"

/* Handles made by submit have no __gc: the job's reference is held by a
 * batch of JQ_BATCH jobs that each handle of the batch keeps alive (as its
 * user value), and the batch's __gc drops them all. The collector then
 * finalizes one object per JQ_BATCH jobs instead of one per job; a job's
 * block (and its results) lives until every handle of its batch is gone. */
#define JQ_BATCH 32

typedef struct jbatch {
  int n;
  struct jq_job *jobs[JQ_BATCH];
} jbatch;

typedef struct qhandle {
  jq_queue *q;  /* NULL once released */
  int owner;    /* made by jobque.new in this state: closes the queue */
  int nworkers; /* the queue's, kept for q:workers() after the close */
} qhandle;

typedef struct jhandle {
  jq_job *job;
} jhandle;

/* Raises fmt's message, positioned at the function `level` levels up (1:
 * the caller of this C function, as luaL_error does). */
static int raise_at(lua_State *L, int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  jq_push_error_at(L, level, fmt, ap);
  va_end(ap);
  return lua_error(L);
}

/* ---- jobs ---- */

static jq_job *job_from_value(lua_State *L, int idx) {
  jhandle *h = luaL_testudata(L, idx, JOB_MT);
  if (!h)
    h = luaL_testudata(L, idx, JOB_BATCHED_MT);
  return h ? h->job : NULL;
}

/* How job handles cross states, for the codec (codec.c). */
static void *handle_from_value(lua_State *L, int idx) {
  return job_from_value(L, idx);
}

static void handle_push(lua_State *L, void *obj) {
  jhandle *h = lua_newuserdatauv(L, sizeof *h, 0);
  h->job = NULL;
  luaL_setmetatable(L, JOB_MT);
  jq_job_ref(obj);
  h->job = obj;
}

static void handle_ref(void *obj) {
  jq_job_ref(obj);
}

static void handle_unref(void *obj) {
  jq_job_unref(obj);
}

static const char *handle_refused(lua_State *L, int idx, int returned, const char **hint) {
  if (!luaL_testudata(L, idx, QUEUE_MT))
    return NULL;
  if (returned) /* whoever waits has the queue already */
    *hint = "the waiting side has the queue already: return the values you need from it";
  else
    *hint = "inside a job, jobque.current() returns the queue it runs on; or pass the job's "
            "result instead of the queue";
  return "a queue";
}

static const jq_handle_ops job_handles = {handle_from_value, handle_push, handle_ref,
                                          handle_unref, handle_refused};

/* The functions of the classes carry metatables as upvalues, so checking
 * an argument compares two pointers instead of looking a name up in the
 * registry (submit runs once a job). Job functions: JOB_MT, JOB_BATCHED_MT;
 * queue functions: QUEUE_MT, JOB_BATCHED_MT, BATCH_MT, JOB_MT; the batch's __gc:
 * BATCH_MT. */
#define JOB_MT_UP_IN_JOB 1
#define JOB_BATCHED_MT_UP_IN_JOB 2
#define QUEUE_MT_UP 1
#define JOB_BATCHED_MT_UP_IN_QUEUE 2
#define BATCH_MT_UP_IN_QUEUE 3
#define JOB_MT_UP_IN_QUEUE 4
#define BATCH_MT_UP_IN_BATCH 1

static void *check_class(lua_State *L, int idx, int up, const char *tname) {
  void *p = lua_touserdata(L, idx);
  if (p && lua_getmetatable(L, idx)) {
    int same = lua_rawequal(L, -1, lua_upvalueindex(up));
    lua_pop(L, 1);
    if (same)
      return p;
  }
  luaL_typeerror(L, idx, tname);
  return NULL;
}

static jq_job *check_job(lua_State *L, int idx) {
  jhandle *h = lua_touserdata(L, idx);
  if (h && lua_getmetatable(L, idx)) {
    int ours = lua_rawequal(L, -1, lua_upvalueindex(JOB_BATCHED_MT_UP_IN_JOB)) ||
               lua_rawequal(L, -1, lua_upvalueindex(JOB_MT_UP_IN_JOB));
    lua_pop(L, 1);
    if (ours)
      return h->job;
  }
  luaL_typeerror(L, idx, JOB_MT);
  return NULL;
}

static int l_batch_gc(lua_State *L) {
  jbatch *b = check_class(L, 1, BATCH_MT_UP_IN_BATCH, BATCH_MT);
  for (int i = 0; i < b->n; i++)
    jq_job_unref(b->jobs[i]);
  b->n = 0;
  return 0;
}

static int l_job_gc(lua_State *L) {
  jhandle *h = check_class(L, 1, JOB_MT_UP_IN_JOB, JOB_MT);
  if (h->job) {
    jq_job_unref(h->job);
    h->job = NULL;
  }
  return 0;
}

static const char *status_name(int state) {
  switch (state) {
  case JQ_JOB_RUNNING: return "running";
  case JQ_JOB_DONE: return "done";
  case JQ_JOB_FAILED: return "failed";
  default: return "pending";
  }
}

static int job_state(jq_job *job) {
  pthread_mutex_lock(&job->q->mu);
  int state = job->state;
  pthread_mutex_unlock(&job->q->mu);
  return state;
}

/* A wait, pwait or status returns the error of the failed `job`: it no
 * longer counts as a failure nobody observed. */
static void observe(jq_job *job) {
  pthread_mutex_lock(&job->q->mu);
  jq_queue_observe(job->q, job);
  pthread_mutex_unlock(&job->q->mu);
}

static int l_job_status(lua_State *L) {
  jq_job *job = check_job(L, 1);
  int state = job_state(job);
  if (state == JQ_JOB_FAILED)
    observe(job);
  lua_pushstring(L, status_name(state));
  return 1;
}

static int l_job_id(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_job(L, 1)->id);
  return 1;
}

static int l_job_tostring(lua_State *L) {
  jq_job *job = check_job(L, 1);
  lua_pushfstring(L, "jobque.job #%I (%s)", (LUAI_UACINT)job->id, status_name(job_state(job)));
  return 1;
}

static int l_job_eq(lua_State *L) {
  lua_pushboolean(L, check_job(L, 1) == check_job(L, 2));
  return 1;
}

static int decode_protected(lua_State *L) {
  const jq_buf *b = lua_touserdata(L, 1);
  lua_pop(L, 1);
  return jq_decode(L, b);
}

/* Pushes the values of a finished job's result (or error value), *bytes
 * its size; returns how many, or -1 (nothing pushed) when its queue's
 * close released it. Raises what decoding raises (unpinned first). */
static int push_result(lua_State *L, jq_job *job, size_t *bytes) {
  if (jq_result_pin(job) != 0)
    return -1;
  *bytes = job->result.len;
  if (!job->holds_handles) /* never released: nothing to pin */
    return jq_decode(L, &job->result);
  int top = lua_gettop(L);
  lua_pushcfunction(L, decode_protected);
  lua_pushlightuserdata(L, &job->result);
  int status = lua_pcall(L, 1, LUA_MULTRET, 0);
  jq_result_unpin(job);
  if (status != LUA_OK)
    lua_error(L);
  return lua_gettop(L) - top;
}

/* Pushes why a job's results (or error) are gone. */
static void push_released(lua_State *L, jq_job *job) {
  if (job->state == JQ_JOB_DONE)
    lua_pushfstring(L, "job #%I's results held job handles and were released when its queue "
                       "closed (wait for them before closing it)", (LUAI_UACINT)job->id);
  else
    lua_pushfstring(L, "job #%I failed, and its error held job handles and was released when "
                       "its queue closed (wait for it before closing it)", (LUAI_UACINT)job->id);
}

/* Pushes the error a failed job raised itself, or its cancellation. */
static void push_own_error(lua_State *L, jq_job *job) {
  size_t bytes;
  if (job->fail_reason == JQ_FAIL_CLOSED)
    lua_pushfstring(L, "job #%I was cancelled: its queue closed before it finished",
                    (LUAI_UACINT)job->id);
  else if (job->fail_reason == JQ_FAIL_NOMEM)
    lua_pushfstring(L, job->line >= 0 ? "job #%I failed: not enough memory (its worker could "
                                        "not store its error; submitted at %s:%d)"
                                      : "job #%I failed: not enough memory (its worker could "
                                        "not store its error; submitted at %s)",
                    (LUAI_UACINT)job->id, job->src, job->line);
  else if (push_result(L, job, &bytes) < 0)
    push_released(L, job);
}

/* Pushes "#a <- #b <- ... <- #root": the whole chain when it is short, else
 * its first and last JQ_CHAIN_TAIL links. Iterative: chains can be long. */
static void push_chain_links(lua_State *L, jq_job *job) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  long len = job->chain_len;
  long head = len <= 2 * JQ_CHAIN_TAIL ? len : JQ_CHAIN_TAIL;
  jq_job *link = job;
  for (long i = 0; i < head; i++, link = link->failed_dep) {
    char id[32];
    snprintf(id, sizeof id, "%s#%llu", i ? " <- " : "", (unsigned long long)link->id);
    luaL_addstring(&b, id);
  }
  if (head < len) {
    luaL_addstring(&b, " <- \xe2\x80\xa6"); /* an ellipsis */
    for (int i = JQ_CHAIN_TAIL - 1; i >= 0; i--) {
      char id[32];
      snprintf(id, sizeof id, " <- #%llu", (unsigned long long)job->chain_tail[i]);
      luaL_addstring(&b, id);
    }
  }
  luaL_pushresult(&b);
}

/* Pushes the error of a failed job (finished: its fields no longer change).
 * A job that failed because another did gets one message, however long
 * the chain: the root's error, with the chain's length and its end links. */
static void push_error(lua_State *L, jq_job *job) {
  if (job->fail_reason != JQ_FAIL_DEPENDENCY && job->fail_reason != JQ_FAIL_AWAITED) {
    push_own_error(L, job);
    return;
  }
  int top = lua_gettop(L);
  if (job->fail_reason == JQ_FAIL_DEPENDENCY)
    lua_pushfstring(L, "job #%I did not run: its dependency job #%I failed", (LUAI_UACINT)job->id,
                    (LUAI_UACINT)job->failed_dep->id);
  else
    lua_pushfstring(L, "job #%I failed: it waited for job #%I, which failed",
                    (LUAI_UACINT)job->id, (LUAI_UACINT)job->failed_dep->id);
  if (job->chain_len > 2) {
    lua_pushfstring(L, " (%I jobs on this chain: ", (LUAI_UACINT)job->chain_len);
    push_chain_links(L, job);
    lua_pushliteral(L, ")");
  }
  lua_pushliteral(L, ": ");
  push_own_error(L, job->chain_root);
  if (!lua_isstring(L, -1)) { /* a table (or other) error: say where to get it */
    lua_pushfstring(L, "its error is a %s value (pwait on job #%I gets it)", luaL_typename(L, -1),
                    (LUAI_UACINT)job->chain_root->id);
    lua_remove(L, -2);
  }
  lua_concat(L, lua_gettop(L) - top);
}

/* Records a happens-before edge here: the job running on this thread (0:
 * none) went on once `on` ended (JQ_EDGE_WAIT, JQ_EDGE_AFTER: a job's id)
 * or every job of the queue numbered `queue` did (JQ_EDGE_ALL). One ring
 * event: no allocation, no lock. */
static void put_edge(uint8_t kind, uint64_t waiter, uint64_t on, uint32_t queue) {
  jq_ring_put(JQ_EV_EDGE, kind, jq_self.tag, queue, (int64_t)on, 0, waiter);
}

/* Pushes what a finished job delivers: (pwait) true, results / false, err;
 * (wait) results, or raises the error. The wait's edge comes first, before
 * the copy of its results: the waiter went on once `job` ended. */
static int deliver(lua_State *L, jq_job *job, int protected) {
  int top = lua_gettop(L);
  put_edge(JQ_EDGE_WAIT, jq_self.job, job->id, 0);
  if (protected)
    lua_pushboolean(L, job->state == JQ_JOB_DONE);
  if (job->state == JQ_JOB_DONE) {
    uint64_t t0 = jq_span_begin();
    size_t bytes = 0;
    jq_sampler_ctx act = jq_sampler_enter(JQ_ACT_COPY_RESULT, (int64_t)job->id, job->tag);
    int pushed = push_result(L, job, &bytes);
    jq_sampler_leave(act);
    if (pushed >= 0) {
      jq_span_end(JQ_EV_COPY, JQ_COPY_RESULT, job->tag, jq_copy_bytes(bytes), (int64_t)job->id,
                  t0);
      return lua_gettop(L) - top;
    }
    push_released(L, job);
    if (!protected)
      return lua_error(L);
    lua_pushboolean(L, 0);
    lua_replace(L, top + 1);
    return 2;
  }
  push_error(L, job);
  jq_note_raised(L, job);
  observe(job);
  if (protected)
    return 2;
  return lua_error(L);
}

static int wait_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  return deliver(L, check_job(L, 1), (int)ctx);
}

static int job_wait(lua_State *L, int protected) {
  jq_job *job = check_job(L, 1);
  switch (jq_wait(L, job->q, job, 1)) {
  case JQ_WAIT_YIELD: return lua_yieldk(L, 0, protected, wait_k);
  case JQ_WAIT_ERROR: return lua_error(L);
  default: return deliver(L, job, protected);
  }
}

static int l_job_wait(lua_State *L) {
  return job_wait(L, 0);
}

static int l_job_pwait(lua_State *L) {
  return job_wait(L, 1);
}

/* ---- queues ---- */

static qhandle *check_qhandle(lua_State *L, int idx) {
  qhandle *h = check_class(L, idx, QUEUE_MT_UP, QUEUE_MT);
  if (!h->q)
    luaL_error(L, "the queue is closed");
  return h;
}

/* Pushes a queue handle that holds nothing yet (a memory error raised
 * making it holds no queue). */
static qhandle *push_qhandle(lua_State *L) {
  qhandle *h = lua_newuserdatauv(L, sizeof *h, 1); /* user value: the current batch */
  h->q = NULL;
  h->owner = 0;
  h->nworkers = 0;
  luaL_setmetatable(L, QUEUE_MT);
  return h;
}

/* Makes the handle h hold a reference to q. */
static void hold_queue(qhandle *h, jq_queue *q, int owner) {
  h->owner = owner;
  h->nworkers = q->nworkers;
  jq_queue_ref(q);
  h->q = q;
}

static void push_queue(lua_State *L, jq_queue *q, int owner) {
  hold_queue(push_qhandle(L), q, owner);
}

/* Drops h's reference; the owner's closes the queue. Returns how many jobs
 * the close cancelled (0 if it did not close). A close that `waits` (a
 * user's: q:close() or a `<close>` scope's end) and found jobs started and
 * not finished is recorded as a wait_all is: a `wait all` span while it
 * waited for them, then the queue's JQ_EDGE_ALL. The collector's close
 * records nothing: it may run inside any span of the thread. */
static long release(lua_State *L, qhandle *h, int waits) {
  jq_queue *q = h->q;
  if (!q)
    return 0;
  h->q = NULL;
  long cancelled = 0;
  if (h->owner) {
    uint64_t t0 = waits ? jq_span_begin() : 0;
    long started = jq_workers_stop(q, L);
    cancelled = jq_queue_close(q);
    if (waits && started > 0) {
      jq_span_end(JQ_EV_WAIT, 0, jq_self.tag, 0, 0, t0);
      put_edge(JQ_EDGE_ALL, jq_self.job, 0, jq_queue_number(q));
    }
  }
  jq_queue_unref(q);
  return cancelled;
}

/* core.queue_new(workers, init, name, path, cpath) -> queue; jobque.lua checks
 * the options and names them in its messages. Its other errors carry no
 * position and no function name: jobque.lua adds both, the user's. Upvalue
 * 1: the opener of jobque.core, for the workers' states. */
static int l_queue_new(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_argcheck(L, n >= 0 && n <= JQ_MAX_WORKERS, 1, "workers must be in 0..256");
  if (!lua_isnil(L, 2))
    luaL_checktype(L, 2, LUA_TFUNCTION);
  const char *name = luaL_optstring(L, 3, "");
  const char *path = luaL_checkstring(L, 4);
  const char *cpath = luaL_checkstring(L, 5);
  jq_buf init = JQ_BUF_INIT;
  char err[512];
  qhandle *h = push_qhandle(L); /* first: a memory error raised making it holds nothing */
  if (!lua_isnil(L, 2) &&
      jq_encode(L, 2, 1, &init, "option 'init'", 1, &job_handles, err, sizeof err) != 0) {
    lua_pushfstring(L, "option 'init' cannot be sent to a worker: %s", err);
    return lua_error(L);
  }
  jq_queue *q = jq_queue_new((int)n, name, path, cpath);
  if (!q) {
    jq_buf_free(&init);
    lua_pushliteral(L, "not enough memory");
    return lua_error(L);
  }
  q->init = init;
  q->handles = &job_handles;
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  q->owner = lua_topointer(L, -1);
  lua_pop(L, 1);
  hold_queue(h, q, 1);
  jq_queue_unref(q); /* the handle holds it now */
  lua_CFunction open_core = lua_tocfunction(L, lua_upvalueindex(1));
  int rc = n > 0 ? jq_workers_start(q, open_core)
                 : jq_run_init(q, L, q->init_error, sizeof q->init_error);
  if (rc != 0) {
    if (q->start_failed)
      lua_pushstring(L, q->init_error);
    else
      lua_pushfstring(L, "option 'init' failed: %s", q->init_error);
    release(L, h, 0);
    return lua_error(L);
  }
  return 1;
}

/* Raises when L runs a job of h's queue: a close there would cancel it. */
static void refuse_own_job(lua_State *L, qhandle *h) {
  if (h->q && jq_running_queue(L) == h->q)
    luaL_error(L, "a queue cannot be closed from one of its own jobs (it would cancel the job "
                  "that asks); close it where it was created");
}

static int l_queue_close(lua_State *L) {
  qhandle *h = check_class(L, 1, QUEUE_MT_UP, QUEUE_MT);
  refuse_own_job(L, h);
  if (h->q && !h->owner)
    return luaL_error(L, "only the state that created a queue can close it");
  lua_pushinteger(L, (lua_Integer)release(L, h, 1));
  return 1;
}

static int l_queue_gc(lua_State *L) {
  qhandle *h = check_class(L, 1, QUEUE_MT_UP, QUEUE_MT);
  release(L, h, 0);
  return 0;
}

/* __close: as close, and like it refused inside one of the queue's jobs
 * (__gc cannot refuse: a close from the collector skips running jobs). */
static int l_queue_tbc(lua_State *L) {
  qhandle *h = check_class(L, 1, QUEUE_MT_UP, QUEUE_MT);
  refuse_own_job(L, h);
  release(L, h, 1);
  return 0;
}

static int l_queue_tostring(lua_State *L) {
  qhandle *h = check_class(L, 1, QUEUE_MT_UP, QUEUE_MT);
  if (!h->q)
    lua_pushliteral(L, "jobque.queue (closed)");
  else
    lua_pushfstring(L, "jobque.queue %s%s(%d workers)", h->q->name, h->q->name[0] ? " " : "",
                    h->q->nworkers);
  return 1;
}

static int l_queue_workers(lua_State *L) {
  lua_pushinteger(L, ((qhandle *)check_class(L, 1, QUEUE_MT_UP, QUEUE_MT))->nworkers);
  return 1;
}

static int l_queue_is_closed(lua_State *L) {
  qhandle *h = check_class(L, 1, QUEUE_MT_UP, QUEUE_MT);
  int closed = 1;
  if (h->q) {
    pthread_mutex_lock(&h->q->mu);
    closed = h->q->closing;
    pthread_mutex_unlock(&h->q->mu);
  }
  lua_pushboolean(L, closed);
  return 1;
}

/* Where a submit was made: the Lua function `level` levels up, or, when
 * that one is not a Lua line (pcall called the function that submits, or
 * a tail call replaced its caller's frame), the nearest one above it with
 * a line. 0 when no function up the stack has one. */
static int submitted_at(lua_State *L, int level, lua_Debug *ar) {
  for (; lua_getstack(L, level, ar); level++)
    if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0)
      return 1;
  return 0;
}

/* Submits the function at fn_idx with the values after it, which users know
 * as argument `number` onwards; deps as given. Where it was submitted, and
 * where its errors point: the Lua function `level` levels up (1: the one
 * that called this C function). */
static int submit(lua_State *L, jq_queue *q, int fn_idx, int number, jq_job **deps, int ndeps,
                  int level) {
  uint64_t t0 = jq_span_begin();
  char err[512];
  char stack[1024]; /* most payloads fit: then the job block is the only allocation */
  jq_buf payload = jq_buf_on(stack, sizeof stack);
  int nvals = lua_gettop(L) - fn_idx + 1;
  /* The handle (and its batch) first: a memory error raised making them
   * holds no job yet. The queue handle at index 1 keeps the current batch. */
  jbatch *b = NULL;
  if (lua_getiuservalue(L, 1, 1) == LUA_TUSERDATA)
    b = lua_touserdata(L, -1);
  if (!b || b->n == JQ_BATCH) {
    lua_pop(L, 1);
    b = lua_newuserdatauv(L, sizeof *b, 0);
    b->n = 0;
    lua_pushvalue(L, lua_upvalueindex(BATCH_MT_UP_IN_QUEUE));
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, 1, 1);
  }
  jhandle *h = lua_newuserdatauv(L, sizeof *h, 1);
  h->job = NULL;
  lua_pushvalue(L, lua_upvalueindex(JOB_BATCHED_MT_UP_IN_QUEUE));
  lua_setmetatable(L, -2);
  lua_rotate(L, -2, 1); /* handle, batch */
  lua_setiuservalue(L, -2, 1);
  jq_sampler_ctx act = jq_sampler_enter(JQ_ACT_SUBMIT, 0, jq_self.tag);
  int rc = jq_encode(L, fn_idx, nvals, &payload, "argument", number, q->handles, err, sizeof err);
  jq_sampler_leave(act);
  if (rc != 0)
    return raise_at(L, level, "cannot submit: %s", err);
  lua_Debug ar; /* where it was submitted, kept unformatted until an error needs it */
  int known = submitted_at(L, level, &ar);
  jq_job *job = jq_job_new(q, &payload, known ? ar.short_src : "?", known ? ar.currentline : -1);
  if (!job) {
    jq_buf_free(&payload);
    return raise_at(L, level, "cannot submit: out of memory");
  }
  h->job = job;
  b->jobs[b->n++] = job; /* the batch takes the job's first reference */
  if (jq_queue_publish(q, job, deps, ndeps) != 0)
    return raise_at(L, level, "cannot submit: the queue is closed");
  jq_span_end(JQ_EV_SUBMIT, 0, job->tag, 0, (int64_t)job->id, t0);
  for (int i = 0; i < ndeps; i++) /* (the list of handles still holds them) */
    put_edge(JQ_EDGE_AFTER, job->id, deps[i]->id, 0);
  return 1;
}

/* q:submit(fn, ...) -> job */
static int l_queue_submit(lua_State *L) {
  qhandle *h = check_qhandle(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  return submit(L, h->q, 2, 1, NULL, 0, 1);
}

/* core.queue_submit_chunk(q, fn, lo, hi) -> job: a chunk of parallel_for,
 * which the user called one level further up (fn is its argument #3). */
static int l_queue_submit_chunk(lua_State *L) {
  qhandle *h = check_class(L, 1, QUEUE_MT_UP, QUEUE_MT);
  if (!h->q)
    return raise_at(L, 2, "the queue is closed");
  luaL_checktype(L, 2, LUA_TFUNCTION);
  return submit(L, h->q, 2, 3, NULL, 0, 2);
}

/* q:after(deps, fn, ...) -> job */
static int l_queue_after(lua_State *L) {
  qhandle *h = check_qhandle(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  lua_Integer n = (lua_Integer)lua_rawlen(L, 2);
  luaL_argcheck(L, n <= 4096, 2, "more than 4096 dependencies");
  jq_job **deps = lua_newuserdatauv(L, sizeof(jq_job *) * (size_t)(n ? n : 1), 0);
  lua_insert(L, 2); /* scratch below the list: self, scratch, deps, fn, args... */
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, 3, i);
    jq_job *d = job_from_value(L, -1);
    if (!d)
      return luaL_argerror(L, 2, lua_pushfstring(L, "deps[%I] is not a job (%s)", (LUAI_UACINT)i,
                                                 luaL_typename(L, -1)));
    if (d->q != h->q)
      return luaL_argerror(L, 2, lua_pushfstring(L, "deps[%I] belongs to another queue",
                                                 (LUAI_UACINT)i));
    deps[i - 1] = d; /* the list keeps it alive until publish */
    lua_pop(L, 1);
  }
  return submit(L, h->q, 4, 2, deps, (int)n, 1);
}

static int collect_k(lua_State *L, int status, lua_KContext ctx);
static int collect_failures(lua_State *L);

/* core.queue_collect(q, fname) -> true | false, failures: waits for every
 * job submitted so far, and those they submit (what q:wait_all and
 * q:pwait_all do, named fname in messages, which point one level further
 * up), then takes the failures nobody observed: a list of {id=, error=,
 * submitted_at=, not_run=}, oldest first. Each is reported once.
 * collect_in_job is how a job waits: it awaits q's unfinished jobs one at a
 * time, as job:wait does (the job suspends, its worker stays free for the
 * jobs those may await: blocking it could hang them for good). */
static int collect_in_job(lua_State *L) {
  qhandle *h = check_class(L, 1, QUEUE_MT_UP, QUEUE_MT);
  for (;;) {
    lua_settop(L, 2);
    if (!h->q)
      return raise_at(L, 2, "the queue is closed");
    jq_queue *q = h->q;
    jhandle *jh = lua_newuserdatauv(L, sizeof *jh, 0); /* 3: holds the awaited job */
    jh->job = NULL;
    lua_pushvalue(L, lua_upvalueindex(JOB_MT_UP_IN_QUEUE));
    lua_setmetatable(L, -2);
    pthread_mutex_lock(&q->mu);
    jq_job *job = jq_queue_some_unfinished(q);
    if (job)
      jq_job_ref(job);
    pthread_mutex_unlock(&q->mu);
    if (!job)
      break; /* (a submission half made, counted and not pushed yet, is waited for below) */
    jh->job = job;
    switch (jq_wait(L, q, job, 2)) {
    case JQ_WAIT_YIELD: return lua_yieldk(L, 0, 0, collect_k);
    case JQ_WAIT_ERROR: return lua_error(L);
    default: break;
    }
  }
  lua_settop(L, 2);
  return collect_failures(L);
}

static int collect_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  return collect_in_job(L);
}

static int l_queue_collect(lua_State *L) {
  qhandle *h = check_class(L, 1, QUEUE_MT_UP, QUEUE_MT);
  const char *fname = luaL_checkstring(L, 2);
  if (!h->q)
    return raise_at(L, 2, "the queue is closed");
  jq_queue *q = h->q;
  jq_queue *running = jq_running_queue(L);
  if (running == q)
    return raise_at(L, 2, "%s cannot be called from a job of the same queue "
                          "(it would wait for itself); wait for specific jobs instead", fname);
  if (running)
    return collect_in_job(L);
  return collect_failures(L);
}

/* What l_queue_collect returns once every job of q finished. */
static int collect_failures(lua_State *L) {
  qhandle *h = check_class(L, 1, QUEUE_MT_UP, QUEUE_MT);
  if (!h->q)
    return raise_at(L, 2, "the queue is closed");
  jq_queue *q = h->q;
  if (jq_wait(L, q, NULL, 2) == JQ_WAIT_ERROR)
    return lua_error(L);
  put_edge(JQ_EDGE_ALL, jq_self.job, 0, jq_queue_number(q));
  lua_settop(L, 2);
  lua_newtable(L); /* 3: a handle for each failure, which holds the list's reference */
  int n = 0;
  for (;;) {
    jhandle *jh = lua_newuserdatauv(L, sizeof *jh, 0); /* (a raise here takes nothing) */
    jh->job = NULL;
    lua_pushvalue(L, lua_upvalueindex(JOB_MT_UP_IN_QUEUE));
    lua_setmetatable(L, -2);
    pthread_mutex_lock(&q->mu);
    jq_job *job = jq_queue_take_failure(q);
    pthread_mutex_unlock(&q->mu);
    if (!job) {
      lua_pop(L, 1);
      break;
    }
    jh->job = job;
    lua_rawseti(L, 3, ++n);
  }
  if (n == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushboolean(L, 0);
  lua_createtable(L, n, 0);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 3, i);
    jq_job *job = ((jhandle *)lua_touserdata(L, -1))->job;
    lua_pop(L, 1); /* the table at 3 keeps it */
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, (lua_Integer)job->id);
    lua_setfield(L, -2, "id");
    push_error(L, job);
    lua_setfield(L, -2, "error");
    if (job->line >= 0)
      lua_pushfstring(L, "%s:%d", job->src, job->line);
    else
      lua_pushstring(L, job->src);
    lua_setfield(L, -2, "submitted_at");
    pthread_mutex_lock(&q->mu);
    long not_run = job->not_run;
    pthread_mutex_unlock(&q->mu);
    lua_pushinteger(L, (lua_Integer)not_run);
    lua_setfield(L, -2, "not_run");
    lua_rawseti(L, -2, i);
  }
  return 2;
}

/* core.queue_current() -> the queue of the job running here, or nil */
static int l_queue_current(lua_State *L) {
  jq_queue *q = jq_running_queue(L);
  if (!q)
    return 0;
  push_queue(L, q, 0);
  return 1;
}

static int l_hardware_threads(lua_State *L) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  lua_pushinteger(L, n > 0 ? n : 1);
  return 1;
}

static const luaL_Reg job_methods[] = {
    {"wait", l_job_wait}, {"pwait", l_job_pwait}, {"status", l_job_status},
    {"id", l_job_id}, {NULL, NULL}};

static const luaL_Reg job_meta[] = {
    {"__gc", l_job_gc}, {"__tostring", l_job_tostring}, {"__eq", l_job_eq}, {NULL, NULL}};

static const luaL_Reg job_batched_meta[] = {
    {"__tostring", l_job_tostring}, {"__eq", l_job_eq}, {NULL, NULL}};

static const luaL_Reg batch_meta[] = {{"__gc", l_batch_gc}, {NULL, NULL}};

static const luaL_Reg queue_methods[] = {
    {"submit", l_queue_submit}, {"after", l_queue_after}, {"close", l_queue_close}, {"workers", l_queue_workers}, {"is_closed", l_queue_is_closed},
    {NULL, NULL}};

static const luaL_Reg queue_meta[] = {
    {"__gc", l_queue_gc}, {"__close", l_queue_tbc}, {"__tostring", l_queue_tostring},
    {NULL, NULL}};

/* Into the core table, with the queue functions' upvalues: jobque.lua
 * builds wait_all, pwait_all and parallel_for on them. */
static const luaL_Reg queue_internal[] = {
    {"queue_collect", l_queue_collect}, {"queue_submit_chunk", l_queue_submit_chunk},
    {NULL, NULL}};

static const luaL_Reg queue_funcs[] = {
    {"queue_current", l_queue_current},
    {"hardware_threads", l_hardware_threads}, {NULL, NULL}};

/* Sets the functions `l` into the table on top, each with the registered
 * metatables `ups` (n of them) as its upvalues. */
static void set_funcs(lua_State *L, const luaL_Reg *l, const char *const *ups, int n) {
  for (int i = 0; i < n; i++)
    luaL_getmetatable(L, ups[i]);
  luaL_setfuncs(L, l, n);
}

void jq_open_queue(lua_State *L, lua_CFunction open_core) {
  static const char *const job_ups[] = {JOB_MT, JOB_BATCHED_MT};
  static const char *const queue_ups[] = {QUEUE_MT, JOB_BATCHED_MT, BATCH_MT, JOB_MT};
  static const char *const batch_ups[] = {BATCH_MT};
  luaL_newmetatable(L, JOB_MT);
  luaL_newmetatable(L, JOB_BATCHED_MT);
  lua_pushliteral(L, JOB_MT); /* messages name both kinds of handle the same */
  lua_setfield(L, -2, "__name");
  luaL_newmetatable(L, BATCH_MT);
  luaL_newmetatable(L, QUEUE_MT);
  lua_pop(L, 4);

  lua_newtable(L); /* the methods of both kinds of job handle */
  set_funcs(L, job_methods, job_ups, 2);
  luaL_getmetatable(L, JOB_MT);
  set_funcs(L, job_meta, job_ups, 2);
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_getmetatable(L, JOB_BATCHED_MT);
  set_funcs(L, job_batched_meta, job_ups, 2);
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 2);

  luaL_getmetatable(L, BATCH_MT);
  set_funcs(L, batch_meta, batch_ups, 1);
  lua_pop(L, 1);

  luaL_getmetatable(L, QUEUE_MT);
  set_funcs(L, queue_meta, queue_ups, 4);
  lua_newtable(L);
  set_funcs(L, queue_methods, queue_ups, 4);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  lua_setfield(L, -3, "queue_methods"); /* into the core table: jobque.lua adds parallel_for */
  lua_pop(L, 1);
  luaL_setfuncs(L, queue_funcs, 0); /* into the core table on the stack */
  lua_pushcfunction(L, open_core);
  lua_pushcclosure(L, l_queue_new, 1);
  lua_setfield(L, -2, "queue_new");
  set_funcs(L, queue_internal, queue_ups, 4);
}
