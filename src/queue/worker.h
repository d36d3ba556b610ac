/*
 * worker.h - running jobs in lua_States: worker threads and the caller.
 *
 * Owns: each worker thread and the lua_State it creates and closes; the
 * runner's per-state fields (which job runs there now, what it awaits);
 * running one slice of a job's coroutine (resume to yield or return) and
 * recording it; the caller's share of the work when a queue has no workers;
 * waiting for jobs (jq_wait: block the thread, or await in a job).
 * Must not: let a lua_State or Lua value cross threads except through
 * codec.c; raise while holding q->mu or malloc'd memory.
 */
#ifndef JQ_WORKER_H
#define JQ_WORKER_H

#include <stdarg.h>

#include <lua.h>

#include "queue/queue.h"

/* Starts the queue's workers, each state prepared with `open_core` as the
 * opener of jobque.core, and waits until each ran `init`. Returns 0, or -1
 * with the first failure in q->init_error (the queue must then close). */
int jq_workers_start(jq_queue *q, lua_CFunction open_core);

/* The first half of a close (jq_queue_close in queue.c does the rest):
 * not-yet-started jobs fail, workers are woken and joined, and the jobs
 * suspended in the creating state L are cancelled. Returns how many jobs
 * had started and not finished (running or suspended) when the close
 * began: those it waited for. */
long jq_workers_stop(jq_queue *q, lua_State *L);

/* The queue of the job running in this state right now, or NULL. */
jq_queue *jq_running_queue(lua_State *L);

/* Pushes fmt's message (lua_pushvfstring), positioned at the function
 * `level` levels up (1: the caller of the C function, as luaL_error does). */
void jq_push_error_at(lua_State *L, int level, const char *fmt, va_list ap);

/* What jq_wait did. */
enum { JQ_WAIT_DONE, JQ_WAIT_YIELD, JQ_WAIT_ERROR };

/* Waits until `job` (or, job NULL, every job of q) finished. In a job's body
 * (job not NULL, of any queue with workers, or of the job's own), the job's
 * coroutine is to await it: returns JQ_WAIT_YIELD and the caller yields
 * (lua_yieldk), to be resumed once `job` ended. Off the thread of any
 * worker it blocks the thread (the state that made a queue without workers
 * runs that queue's jobs meanwhile) and returns JQ_WAIT_DONE, as it does at
 * once for a finished job. Returns JQ_WAIT_ERROR with a message pushed
 * (positioned `level` levels up, 1: the caller of the C function) when the
 * wait could never end, is for the waiting job itself, or would block a
 * worker thread (where the job cannot suspend); the caller raises it. */
int jq_wait(lua_State *L, jq_queue *q, jq_job *job, int level);

/* A wait or pwait in this state hands a job the error of the failed job
 * (the message on the top of L): if the job then fails with this very
 * message, its error is stored as a link to `failed`. */
void jq_note_raised(lua_State *L, jq_job *failed);

/* Runs `init` (if any) in L: for a queue without workers, the creator. */
int jq_run_init(jq_queue *q, lua_State *L, char *err, size_t errlen);

/* Opens the standard libraries in a new state, gives it these search paths,
 * and opens jobque.core with `open_core`, the opener of this very library
 * (never a second copy). */
void jq_prepare_state(lua_State *L, const char *path, const char *cpath, lua_CFunction open_core);

#ifdef JQ_TESTING
/* Specs only (testing.c): a worker's new state, whose allocations go
 * through the allocation-failure hook (_test.fail_alloc); NULL when the
 * hook fails its creation. */
lua_State *jq_test_newstate(void);
#endif

#endif
