/*
 * worker.h - running jobs in lua_States: worker threads and the caller.
 *
 * Owns: each worker thread and the lua_State it creates and closes; running
 * one slice of a job's coroutine (resume to yield or return) and recording
 * it; the caller's share of the work when a queue has no workers.
 * Must not: let a lua_State or Lua value cross threads except through
 * marshal.c; raise while holding q->mu or malloc'd memory.
 */
#ifndef JQ_WORKER_H
#define JQ_WORKER_H

#include <lua.h>

#include "queue.h"

/* Starts the queue's workers and waits until each ran `init`. Returns 0, or
 * -1 with the first failure in q->init_error (the queue must then close). */
int jq_workers_start(jq_queue *q);

/* Closes the queue: not-yet-started jobs fail, suspended ones are cancelled,
 * running ones finish; joins the workers. L is the creating state. */
void jq_queue_close(jq_queue *q, lua_State *L);

/* The worker running a job in this state right now, or NULL. */
jq_worker *jq_worker_current(lua_State *L);

/* The worker whose state L belongs to, running a job or not (a job's
 * to-be-closed variables close after its slice, when it failed or was
 * cancelled), or NULL. */
jq_worker *jq_worker_here(lua_State *L);

/* For the creating state of a queue without workers: runs one slice of
 * whatever is runnable. Returns 0 when there was nothing to run. */
int jq_caller_run_one(jq_queue *q, lua_State *L);

/* Runs `init` (if any) in L: for a queue without workers, the creator. */
int jq_run_init(jq_queue *q, lua_State *L, char *err, size_t errlen);

/* Opens the standard libraries in a new state, gives it these search paths,
 * and opens jobque.core from this very library (never a second copy). */
void jq_prepare_state(lua_State *L, const char *path, const char *cpath);

int luaopen_jobque_core(lua_State *L);

#endif
