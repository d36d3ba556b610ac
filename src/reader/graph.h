/*
 * graph.h - the job graph's data, shared by its three files: graph.c
 * builds it (job_graph(model)), graph_path.c gives its latencies and
 * critical path, page_graph.c writes the page's graph part from it.
 *
 * A number keeps Lua's subtype: an integer (int64, wrapping as Lua's
 * integer arithmetic does) or a float; comparisons are exact across the
 * two, as Lua's. A job's id is any value a model holds: an integer (in
 * an open-addressing hash) or another value (a float that is not an
 * integer, a string, false, ...: a Lua table of the graph's, by value).
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

#define JQ_GRAPH_MT "jobque.job_graph"

/* The graph userdata's user values (1-based). */
enum { GU_NAMES = 1, GU_NAME_INDEX, GU_IDS, GU_ID_INDEX, GU_N };

/* ---- numbers with Lua's subtypes ---- */

typedef struct num {
  union {
    int64_t i; /* the value when isint */
    double d;  /* the value when not */
  };
  int isint;
} num;

#define JQ_ZERO ((num){.i = 0, .isint = 1})

static inline num num_int(int64_t i) { return (num){.i = i, .isint = 1}; }
static inline num num_flt(double d) { return (num){.d = d, .isint = 0}; }
static inline double num_float(num a) { return a.isint ? (double)a.i : a.d; }

/* a + b and a - b as Lua computes them: integers wrap, else floats. */
static inline num num_add(num a, num b) {
  if (a.isint && b.isint)
    return num_int((int64_t)((uint64_t)a.i + (uint64_t)b.i));
  return num_flt(num_float(a) + num_float(b));
}

static inline num num_sub(num a, num b) {
  if (a.isint && b.isint)
    return num_int((int64_t)((uint64_t)a.i - (uint64_t)b.i));
  return num_flt(num_float(a) - num_float(b));
}

/* i < f and i <= f exactly (Lua's LTintfloat and LEintfloat). */
static inline int int_lt_flt(int64_t i, double f) {
  if (isnan(f))
    return 0;
  if (f >= 0x1p63)
    return 1;
  if (f <= -0x1p63)
    return 0;
  return i < (int64_t)ceil(f);
}

static inline int int_le_flt(int64_t i, double f) {
  if (isnan(f))
    return 0;
  if (f >= 0x1p63)
    return 1;
  if (f < -0x1p63)
    return 0;
  return i <= (int64_t)floor(f);
}

/* a < b, a <= b and a == b as Lua compares numbers. */
static inline int num_lt(num a, num b) {
  if (a.isint && b.isint)
    return a.i < b.i;
  if (!a.isint && !b.isint)
    return a.d < b.d;
  if (a.isint)
    return int_lt_flt(a.i, b.d);
  return !isnan(a.d) && !int_le_flt(b.i, a.d);
}

static inline int num_le(num a, num b) {
  if (a.isint && b.isint)
    return a.i <= b.i;
  if (!a.isint && !b.isint)
    return a.d <= b.d;
  if (a.isint)
    return int_le_flt(a.i, b.d);
  return !isnan(a.d) && !int_lt_flt(b.i, a.d);
}

static inline int num_eq(num a, num b) { return num_le(a, b) && num_le(b, a); }

static inline num num_max(num a, num b) { return num_lt(a, b) ? b : a; } /* math.max(a, b) */
static inline num num_min(num a, num b) { return num_lt(b, a) ? b : a; } /* math.min(a, b) */

static inline void push_num(lua_State *L, num a) {
  if (a.isint)
    lua_pushinteger(L, (lua_Integer)a.i);
  else
    lua_pushnumber(L, (lua_Number)a.d);
}

/* ---- the graph ---- */

enum {
  HAS_SUB = 1,
  HAS_PARENT = 2,
  HAS_CIN = 4,
  HAS_COUT = 8,
  HAS_READY = 16,
  HAS_READY_DEP = 32, /* an after dependency marked it ready (ready_key: which) */
  HAS_RL = 64,
  HAS_CAT = 128,
  ID_NUMBER = 256 /* its id is a number (the page draws only those) */
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
  int32_t job, lane, cat, await;
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

typedef struct graph {
  gjob *jobs;
  size_t njobs, cjobs;
  hslot *hash; /* a job's id and index + 1 (0: empty), the id kept beside it: one cache line a probe */
  size_t hcap;
  gslice *sl;
  size_t nsl, csl;
  gwait *wt;
  size_t nwt, cwt;
  gawait *aw;
  size_t naw, caw;
  gdep *dp;
  size_t ndp, cdp;
  gwake *wk;
  size_t nwk, cwk;
  int32_t nids;      /* the ids list's length */
  int32_t nother;    /* jobs whose id is no integer */
  num *res; /* resume latencies: job j's at res[j.w0 ..] */
  int32_t *order, *ends;
  size_t norder;
  int32_t *lane_index; /* lane position -> lane.index */
  size_t nlanes, clanes;
  int32_t *tmp; /* sort scratch */
  size_t ctmp;
  int32_t ncats;
  num total_run, session;
} graph;

/* The critical path's walk (graph_path.c). */
typedef struct path {
  num duration, t, run, ready, resume, copy, caller;
  int32_t last;
  int32_t *seq; /* job indices, from the last back */
  size_t nseq;
  num *run_by; /* per category */
  unsigned char *has_run_by;
} path;

/* ---- a stable bottom-up merge sort, the one sort of the graph's files ---- */

/* Merges the sorted runs src[lo, mid) and src[mid, hi) into dst[lo, hi),
 * the right run's item first only when RIGHT_FIRST(right, left) holds. */
#define JQ_MERGE(dst, src, lo, mid, hi, RIGHT_FIRST)                                                            \
  do {                                                                                                         \
    size_t i_ = (lo), j_ = (mid), k_ = (lo);                                                                   \
    while (i_ < (mid) && j_ < (hi))                                                                            \
      (dst)[k_++] = RIGHT_FIRST((src)[j_], (src)[i_]) ? (src)[j_++] : (src)[i_++];                             \
    while (i_ < (mid))                                                                                         \
      (dst)[k_++] = (src)[i_++];                                                                               \
    while (j_ < (hi))                                                                                          \
      (dst)[k_++] = (src)[j_++];                                                                               \
  } while (0)

/* a[0 .. n) (items of type T) sorted through tmp (as many), bottom-up:
 * runs of 1, 2, 4 ... merged pairwise. */
#define JQ_BOTTOM_UP(T, a, tmp, n, RIGHT_FIRST)                                                                 \
  do {                                                                                                         \
    T *src_ = (a), *dst_ = (tmp);                                                                              \
    for (size_t w_ = 1; w_ < (n); w_ *= 2) {                                                                   \
      for (size_t lo_ = 0; lo_ < (n); lo_ += 2 * w_) {                                                         \
        size_t mid_ = lo_ + w_ < (n) ? lo_ + w_ : (n), hi_ = lo_ + 2 * w_ < (n) ? lo_ + 2 * w_ : (n);         \
        JQ_MERGE(dst_, src_, lo_, mid_, hi_, RIGHT_FIRST);                                                     \
      }                                                                                                        \
      T *t_ = src_;                                                                                            \
      src_ = dst_, dst_ = t_;                                                                                  \
    }                                                                                                          \
    if (src_ != (a))                                                                                           \
      memcpy((a), src_, (n) * sizeof *(a));                                                                    \
  } while (0)

/* graph.c */
graph *jq_graph_check(lua_State *L);
void jq_graph_push_cats(lua_State *L);
void jq_graph_push_id(lua_State *L, const graph *g, int32_t job);
void *jq_graph_scratch(lua_State *L, size_t n, size_t elem);
void *jq_graph_alloc(lua_State *L, size_t n, size_t elem);
void jq_graph_sort_jobs(lua_State *L, graph *g, int32_t *a, size_t n, size_t off);
int jq_graph_finished(const graph *g, int32_t k);

/* graph_path.c */
void jq_graph_walk(lua_State *L, graph *g, path *p);
int jq_graph_latency(lua_State *L);
int jq_graph_critical_path(lua_State *L);

/* page_graph.c: page_graph(graph, model), set in the table on top */
void jq_open_page_graph(lua_State *L);

#endif
