/*
 * job_ops.h - a trace's happens-before graph as what each executor did, in
 * order: the one input of the critical path's walk (ops_path.c) and of
 * the replay (replay.c).
 *
 * An executor is a job (its copies, slices and what it did inside them, on
 * the worker that ran it) or a thread outside jobs (a lane that is no
 * worker: the caller, another thread). Its ops are in recorded order and
 * never overlap; the time between two ops of a thread is its own work
 * (JO_OWN ops fill it), the time between two ops of a job is a
 * suspension (JO_SUSPEND fills it) or nothing. Edges are JO_WAIT points
 * (the executor went on past this point only once the job `job` ended, or
 * every job of queue `queue`) and a job's start (its JO_SUBMIT op
 * elsewhere, its `after` dependencies as JO_WAIT points before its first
 * op).
 *
 * Built from a model (job_ops_build.c: graph:ops()) or from a plain Lua
 * table (job_ops_table.c: reader.job_ops(t), for specs whose answer is
 * known by construction). Times are integer nanoseconds from the
 * session's start (a model's microseconds rounded).
 * Owns: nothing (the userdata JQ_OPS_MT owns its arrays, freed by __gc).
 * Must not: run on the record path. Thread safety: one lua_State per call.
 */
#ifndef JQ_JOB_OPS_H
#define JQ_JOB_OPS_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#include "common/array.h"

#define JQ_OPS_MT "jobque.job_ops"

/* The userdata's user values (1-based). */
enum {
  JU_CATS = 1, /* category index + 1 -> name (a string) */
  JU_LANES,    /* lane index + 1 -> name */
  JU_IDS,      /* executor index + 1 -> its job's id as the model has it (absent: a thread) */
  JU_N = JU_IDS
};

/* What an op is. Work ops take their recorded time in any replay; the
 * others (JO_BLOCK, JO_SUSPEND, JO_WAIT) last as long as what they wait for. */
enum {
  JO_RUN = 1,     /* a job's code running (a slice, less what is below inside it); cat: its category */
  JO_COPY_IN,     /* a job's function and arguments decoded on its worker */
  JO_COPY_OUT,    /* its results encoded on its worker */
  JO_COPY_RESULT, /* results of job `job` decoded where a wait returned them */
  JO_SUBMIT,      /* submitting job `job` (its arguments encoded); the job may start at its end */
  JO_OWN,         /* a thread's own work between its other ops; cat: the category of the
                     caller's span around it (-1 none) */
  JO_JOB,         /* a thread ran job `job`'s slice itself (a queue without workers): work */
  JO_BLOCK,       /* the thread (or a job's worker thread) blocked in a wait on `job`
                     (or, job -1, on every job of `queue`) */
  JO_SUSPEND,     /* a job's coroutine suspended between two slices: awaiting `job`
                     (-1: a cooperative yield); its worker was free to run others */
  JO_WAIT         /* a point (t0 == t1): went on only once `job` (or, job -1, every job of
                     `queue` submitted before t0) had ended */
};

typedef struct jo_op {
  int64_t t0, t1; /* ns */
  int32_t lane;   /* lane index (0-based) where it ran, -1 none (a JO_WAIT from `after`) */
  int32_t cat;    /* category index (JU_CATS), -1 none */
  int32_t job;    /* an executor index (of a job), -1 none */
  int32_t queue;  /* JO_WAIT / JO_BLOCK on a whole queue: its number (1 ...), else 0 */
  uint8_t kind;   /* JO_* */
} jo_op;

typedef struct jo_exec {
  int32_t is_job; /* 1: a job (its id in JU_IDS), 0: a thread */
  int32_t lane;   /* a thread's lane; a job's worker lane (of its first slice), -1 unknown */
  int32_t queue;  /* a job's queue number (laneInfo[].queue of its worker), 0 unknown */
  int32_t sub;    /* a job: the index in ops[] of the JO_SUBMIT that submitted it, -1 none */
  int32_t cat;    /* a job's category index, -1 none */
  uint32_t o0, no; /* its ops: ops[o0 .. o0 + no) */
  int64_t ready;  /* a job: when it became ready in the recording (ns), -1 unknown */
} jo_exec;

/* The graph's arrays live in mem[] (common/array.h's jq_vec). */
enum { JM_EX, JM_OPS, JM_QW, JM_N };

typedef struct jo_graph {
  jq_vec mem[JM_N];
  jo_exec *ex;
  size_t nex;
  jo_op *ops;
  size_t nops;
  int32_t *queue_workers; /* queue number -> its worker lanes in the recording (0: none) */
  int32_t nqueues;        /* queue numbers are 1 .. nqueues */
  int32_t ncats, nlanes;
  int64_t stop;           /* the session's length (ns); it starts at 0 */
  int caller;             /* the executor index of the caller's thread, -1 none */
  int partial;            /* events were lost or spans left unclosed: an answer may be short */
  char partial_why[160];  /* why, for the text: "lane worker 1 dropped 12 events" */
} jo_graph;

/* job_ops.c: the userdata and what every user of it shares. */
jo_graph *jq_ops_new(lua_State *L);          /* pushes an empty graph */
jo_graph *jq_ops_check(lua_State *L, int idx);
void jq_ops_free(jo_graph *g); /* its arrays freed at once (__gc, __close): an empty graph */
jo_op *jq_ops_push_op(lua_State *L, jo_graph *g);     /* room for one more op (zeroed) */
jo_exec *jq_ops_push_exec(lua_State *L, jo_graph *g); /* one more executor (zeroed, sub -1) */
void jq_ops_push_job_id(lua_State *L, int gidx, int32_t exec); /* its id, or nil */
int jq_ops_last_op(const jo_graph *g, int32_t exec);            /* index in ops[], -1 none */
void jq_ops_push_us(lua_State *L, int64_t ns); /* ns as microseconds: an integer when whole */
extern const char *const jq_ops_kind_names[]; /* JO_* - 1 -> its name in a table (reader.job_ops, dump) */
void *jq_ops_grow(lua_State *L, jq_vec *v, size_t size); /* one more zeroed item at v's end */

/* Its methods, and graph:ops() (a job_graph's method):
 *   ops_path.c:      ops:critical_path([{steps = false}]) -> the walk (docs/cli.md;
 *                    steps = false: its sums without its steps)
 *   replay.c:        ops:whatif([workers]) -> the replay's predictions
 *   job_ops_build.c: graph:ops(model) -> this graph from a loaded model;
 *                    ops:dump() -> the executors and ops as a table of the
 *                    shape reader.job_ops takes (specs read it) */
int jq_ops_critical_path(lua_State *L);

/* The critical path's steps (ops_path.c; their names in jq_path_kinds). */
enum {
  JP_RUN,          /* a job's JO_RUN */
  JP_COPY_IN,      /* JO_COPY_IN */
  JP_COPY_OUT,     /* JO_COPY_OUT */
  JP_COPY_RESULT,  /* JO_COPY_RESULT, in a job or on a thread */
  JP_SUBMIT,       /* JO_SUBMIT, in a job or on a thread */
  JP_CALLER,       /* a thread's JO_OWN */
  JP_JOB_ON_CALLER, /* a thread's JO_JOB */
  JP_READY,        /* a job ready while every worker of its queue was busy */
  JP_SCHED,        /* a job ready while a worker of its queue was free, or taken, not started */
  JP_BUSY,         /* a job could resume but its worker ran another (held_by) */
  JP_RESUME,       /* the rest of the time from what it waited for to its going on */
  JP_BLOCKED,      /* blocked in a wait, before what it waited for ended (or unknown) */
  JP_N
};
extern const char *const jq_path_kinds[JP_N];

typedef struct jp_step {
  int64_t t0, t1; /* ns */
  int32_t kind;   /* JP_* */
  int32_t owner;  /* the executor whose step it is */
  int32_t lane;   /* lane index, -1 none */
  int32_t job;    /* an executor index (a job) the step names, -1 none */
  int32_t cat;    /* category index, -1 none */
  int32_t held_by; /* JP_BUSY: the executor its worker ran, else -1 */
} jp_step;

typedef struct jo_path {
  jp_step *steps;   /* in time order, back to back from start to finish */
  size_t nsteps;
  int32_t *jobs;    /* the job executors visited (or run by a thread's JO_JOB on the
                       path), in time order, once per visit */
  size_t njobs;
  int64_t start, finish; /* ns */
  int cut;          /* the walk stopped at its step limit */
} jo_path;

/* ops_path.c: whether g has a job; the walk (g has one), its memory a
 * scratch userdata (scratch.h) it leaves on the stack. */
int jq_ops_has_job(const jo_graph *g);
void jq_ops_walk(lua_State *L, const jo_graph *g, jo_path *p);
int64_t jq_ops_total_run(const jo_graph *g); /* the jobs' slices' time (ns) */
/* The path's time by kind (ns) in us[JP_N], the kinds it has, most first
 * (ties by name), in order[]: how many (the report's by_kind, the page's). */
int jq_path_by_kind(const jo_path *p, int64_t *us, int *order);
int jq_ops_whatif(lua_State *L);
int jq_ops_dump(lua_State *L);
int jq_graph_ops(lua_State *L);

#endif
