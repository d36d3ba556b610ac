/*
 * graph.h - the job graph's data, shared by its files: graph.c builds it
 * (job_graph(model)), graph_path.c gives its latencies,
 * page_graph.c writes the page's graph part from it, job_ops_build.c
 * builds the happens-before graph (job_ops.h) on it.
 *
 * A number is the reader's jq_num (reader/number.h: Lua's subtypes,
 * integers wrapping, exact comparisons). A job's id is any value a model
 * holds: an integer (in an open-addressing hash; a string that reads as
 * one, as math.tointeger reads it, too) or another value (a float that is
 * not an integer, a string, false, ...: a Lua table of the graph's, by
 * value).
 * Owns: nothing (the graph userdata owns its arrays, freed by its __gc).
 * Must not: run on the record path. Thread safety: one lua_State per call.
 */
#ifndef JQ_GRAPH_H
#define JQ_GRAPH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <lua.h>

#include "common/array.h"
#include "reader/number.h"

#define JQ_GRAPH_MT "jobque.job_graph"

/* The graph userdata's user values (1-based). */
enum { GU_NAMES = 1, GU_NAME_INDEX, GU_IDS, GU_ID_INDEX, GU_N };

/* ---- numbers: reader/number.h's jq_num, and Lua's math.max and math.min ---- */

typedef jq_num num;

static inline num num_max(num a, num b) { return jq_num_lt(a, b) ? b : a; } /* math.max(a, b) */
static inline num num_min(num a, num b) { return jq_num_lt(b, a) ? b : a; } /* math.min(a, b) */

/* ---- the graph ---- */

enum {
  HAS_SUB = 1,
  HAS_PARENT = 2,
  HAS_CIN = 4,
  HAS_COUT = 8,
  HAS_READY = 16,
  HAS_READY_DEP = 32, /* an after dependency marked it ready (ready_key: which) */
  HAS_RL = 64,
  HAS_CAT = 128
};

/* A job id as read: the integer i (other 0), or the value at position
 * other of the ids list (user value GU_IDS); `has` 0 for none, 2 for
 * false (a job's id in a flow, but a reference to none). Resolved
 * to a job's index (or -1) once every job is read. */
typedef struct jkey {
  lua_Integer i;
  int32_t other;
  int32_t has;
} jkey;

typedef struct gjob {
  lua_Integer id; /* when other is 0 */
  int32_t other;  /* > 0: its id is the ids list's value at this position */
  int32_t rank;   /* its place among the jobs by id (the ties' order) */
  int32_t cat, sub_lane, sub_wait, parent, ready_dep;
  jkey ready_key;
  uint32_t flags;
  uint32_t s0, ns, a0, na, w0, nw, d0, nd, nres;
  num sub_ts, sub_dur, cin_ts, cin_dur, cout_ts, cout_dur, ready, start, finish, run, suspended, rl;
} gjob;

typedef struct gslice {
  num ts, dur;
  lua_Integer index; /* in its lane, 0-based */
  int32_t job, lane, cat;
  int await : 31;      /* the await it resumed (an index of aw), -1 none */
  unsigned drawn : 1;  /* its lane's job cell is a number: the page draws it */
} gslice;

typedef struct gwait {
  num ts, stop;
  jkey key;
  int32_t job; /* resolved, -1 none */
} gwait;

typedef struct gawait {
  num ts, dur;
  jkey key;
  int32_t job, awaits; /* its job; the job it awaited (resolved, -1 none) */
} gawait;

typedef struct gdep {
  jkey key;
  int32_t owner, job; /* job resolved, -1 none */
} gdep;

typedef struct gwake {
  num ts;
  int32_t owner;
} gwake;

typedef struct hslot {
  lua_Integer id;
  int32_t k;
} hslot;

/* The graph's arrays, each in a jq_vec of mem[] (common/array.h). */
enum { GM_JOBS, GM_HASH, GM_SL, GM_WT, GM_AW, GM_DP, GM_WK, GM_RES, GM_ORDER, GM_ENDS, GM_LANES, GM_N };

typedef struct graph {
  jq_vec mem[GM_N]; /* the blocks of the arrays below (freed by __gc) */
  gjob *jobs;
  size_t njobs;
  hslot *hash; /* a job's id and index + 1 (0: empty), the id kept beside it: one cache line a probe */
  size_t hcap;
  gslice *sl;
  size_t nsl;
  gwait *wt;
  size_t nwt;
  gawait *aw;
  size_t naw;
  gdep *dp;
  size_t ndp;
  gwake *wk;
  size_t nwk;
  int32_t nids;   /* the ids list's length */
  int32_t nother; /* jobs whose id is no integer */
  num *res;       /* resume latencies: job j's at res[j.w0 ..] */
  int32_t *order, *ends;
  size_t norder;
  int32_t *lane_index; /* lane position -> lane.index */
  size_t nlanes;
  int32_t ncats;
  num total_run, session;
} graph;

/* graph.c */
graph *jq_graph_check(lua_State *L);
void jq_graph_push_cats(lua_State *L);
void jq_graph_push_id(lua_State *L, const graph *g, int32_t job);
void *jq_graph_scratch(lua_State *L, size_t n, size_t elem);
void jq_graph_sort_jobs(lua_State *L, graph *g, int32_t *a, size_t n, size_t off);
int jq_graph_finished(const graph *g, int32_t k);
/* The index of the job whose id is the value at idx, read as a job's id
 * (an integer, or a string or float that reads as one; another value as
 * it is; nil and false name none), in the graph at gidx: -1 for none. */
int32_t jq_graph_find(lua_State *L, int gidx, const graph *g, int idx);
int32_t jq_graph_find_int(const graph *g, lua_Integer id); /* the same for an integer id */

/* graph_path.c */
int jq_graph_latency(lua_State *L);

/* page_graph.c: page_graph(graph, model), set in the table on top */
void jq_open_page_graph(lua_State *L);

#endif
