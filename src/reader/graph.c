/*
 * graph.c - core.job_graph: the job graph of a trace model (issue 12).
 *
 * One pass over the model's columns (lanes' kind, job, ts, dur and cat,
 * the copy columns, model.flows and model.awaits) into flat arrays owned
 * by a userdata (freed by its __gc, so an error raised mid-way leaks
 * nothing); then the jobs' latencies, the critical path and the page's
 * graph part exactly as lua/jobque_profile/graph.lua and page.lua compute
 * them: the same ties, nearest ranks, float operations in the same order,
 * and Lua's integer and float subtypes kept (a number is a double and a
 * flag: every integer handled is below 2^53, so the double is exact).
 * What it does not handle exactly (an id that is no integer, a false or a
 * string where Lua would key a job by it, an integer time beyond 2^51, an
 * integer sum reaching 2^53, two slices or awaits of a job at one time,
 * which Lua's unstable sort may order either way) makes job_graph return
 * nil: the Lua code runs then. No Lua table per job or slice; no recursion.
 * Must not: run on the record path. Thread safety: one lua_State per call.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/columns.h"
#include "common/digits.h"
#include "reader/reader.h"

#define GRAPH_MT "jobque.job_graph"
#define INT_LIMIT 0x1p51 /* the largest integer time taken (sums of two stay exact) */
#define SUM_LIMIT 0x1p53 /* an integer sum must stay below: exact as a double */

/* A Lua number: its value (exact for the integers taken) and subtype. */
typedef struct num {
  double v;
  int isint;
} num;

static const num ZERO = {0, 1};

enum {
  HAS_SUB = 1,
  HAS_PARENT = 2,
  HAS_CIN = 4,
  HAS_COUT = 8,
  HAS_READY = 16,
  HAS_READY_DEP = 32,
  HAS_RL = 64,
  HAS_CAT = 128
};

typedef struct gjob {
  lua_Integer id, sub_parent, ready_dep;
  int32_t cat, sub_lane, sub_wait;
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
  lua_Integer job;
  int hasjob;
} gwait;

typedef struct gawait {
  num ts, dur;
  lua_Integer awaits;
  int32_t job;
  int has_awaits;
} gawait;

typedef struct gdep {
  lua_Integer job;
  int32_t owner;
  int has;
} gdep;

typedef struct gwake {
  num ts;
  int32_t owner;
} gwake;

typedef struct gvalue { /* a distribution's value */
  num v;
  int32_t cat;
} gvalue;

typedef struct buf {
  char *p;
  size_t n, cap;
} buf;

#define NBUF 12

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
  num *res; /* resume latencies: job j's at res[j.w0 ..] */
  int32_t *order, *ends;
  size_t norder;
  int32_t *lane_index; /* lane position -> lane.index */
  size_t nlanes;
  int32_t *tmp; /* sort scratch */
  size_t ctmp;
  const void *ctx; /* what a sort's comparison reads (borrowed) */
  size_t clanes;
  int32_t ncats;
  num total_run, session;
  int bail;
  buf b[NBUF];
} graph;

/* ---- memory: every array is the graph's (freed by __gc) ---- */

static void *grow(lua_State *L, void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return p;
  size_t c = *cap ? *cap : 16;
  while (c < need) {
    if (c > ((size_t)-1 / 2) / elem)
      luaL_error(L, "not enough memory");
    c *= 2;
  }
  void *q = realloc(p, c * elem);
  if (!q)
    luaL_error(L, "not enough memory");
  *cap = c;
  return q;
}

#define PUSH(L, arr, n, c) ((arr) = grow((L), (arr), &(c), (n) + 1, sizeof *(arr)), &(arr)[(n)++])

static void *alloc_n(lua_State *L, size_t n, size_t elem) {
  if (n == 0)
    n = 1;
  if (n > ((size_t)-1 / 2) / elem)
    luaL_error(L, "not enough memory");
  void *p = calloc(n, elem);
  if (!p)
    luaL_error(L, "not enough memory");
  return p;
}

static void free_graph(graph *g) {
  free(g->jobs), free(g->hash), free(g->sl), free(g->wt), free(g->aw), free(g->dp), free(g->wk);
  free(g->res), free(g->order), free(g->ends), free(g->lane_index), free(g->tmp);
  for (int k = 0; k < NBUF; k++)
    free(g->b[k].p);
  memset(g, 0, sizeof *g);
}

static int l_graph_gc(lua_State *L) {
  free_graph(luaL_checkudata(L, 1, GRAPH_MT));
  return 0;
}

/* ---- numbers with Lua's subtypes ---- */

/* The value at idx as a number taken, in *out: 0 when it is none. */
static int get_num(lua_State *L, int idx, num *out) {
  if (lua_isinteger(L, idx)) {
    lua_Integer i = lua_tointeger(L, idx);
    if (i > (lua_Integer)INT_LIMIT || i < -(lua_Integer)INT_LIMIT)
      return 0;
    out->v = (double)i, out->isint = 1;
    return 1;
  }
  if (lua_type(L, idx) != LUA_TNUMBER)
    return 0;
  out->v = (double)lua_tonumber(L, idx), out->isint = 0;
  return isfinite(out->v);
}

/* A job id at idx (graph.lua's int(v)): 1 and *out for an integer (or a
 * float with an integer value), 0 for nil (or false when `false_none`),
 * -1 for anything else (left to the Lua code). */
static int get_id(lua_State *L, int idx, int false_none, lua_Integer *out) {
  int t = lua_type(L, idx);
  if (t == LUA_TNIL || (false_none && t == LUA_TBOOLEAN && !lua_toboolean(L, idx)))
    return 0;
  if (t != LUA_TNUMBER)
    return -1;
  int ok;
  *out = lua_tointegerx(L, idx, &ok);
  return ok ? 1 : -1;
}

/* get_num and get_id of cell k of a native column (columns.h). */
static int cell_get_num(const jq_column *c, size_t k, num *out) {
  int t = jq_cell_tag(c, k);
  if (t == JQ_C_INT) {
    int64_t i = jq_cell_int(c, k);
    if (i > (int64_t)INT_LIMIT || i < -(int64_t)INT_LIMIT)
      return 0;
    out->v = (double)i, out->isint = 1;
    return 1;
  }
  if (t != JQ_C_NUM)
    return 0;
  out->v = jq_cell_num(c, k), out->isint = 0;
  return isfinite(out->v);
}

static int cell_get_id(const jq_column *c, size_t k, int false_none, lua_Integer *out) {
  int t = jq_cell_tag(c, k);
  if (t == JQ_C_NIL || (false_none && t == JQ_C_FALSE))
    return 0;
  if (t == JQ_C_INT) {
    *out = (lua_Integer)jq_cell_int(c, k);
    return 1;
  }
  if (t != JQ_C_NUM)
    return -1;
  double d = jq_cell_num(c, k);
  if (!(d >= -0x1p63 && d < 0x1p63) || d != floor(d))
    return -1;
  *out = (lua_Integer)d;
  return 1;
}

static num add(graph *g, num a, num b) {
  num r = {a.v + b.v, a.isint && b.isint};
  if (r.isint && !(fabs(r.v) < SUM_LIMIT))
    g->bail = 1;
  return r;
}

static num sub(graph *g, num a, num b) {
  num r = {a.v - b.v, a.isint && b.isint};
  if (r.isint && !(fabs(r.v) < SUM_LIMIT))
    g->bail = 1;
  return r;
}

static num nmax(num a, num b) { return a.v < b.v ? b : a; } /* math.max(a, b) */
static num nmin(num a, num b) { return b.v < a.v ? b : a; } /* math.min(a, b) */

static void push_num(lua_State *L, num a) {
  if (a.isint)
    lua_pushinteger(L, (lua_Integer)a.v);
  else
    lua_pushnumber(L, (lua_Number)a.v);
}

/* page.lua's ns(us): (us * 1000 + 0.5) // 1 | 0; 0 when it has no integer
 * representation (Lua raises there: the Lua code is left to). */
static int ns_of(num us, long long *out) {
  double x = us.isint ? (double)((lua_Integer)us.v * 1000) + 0.5 : us.v * 1000 + 0.5;
  x = floor(x);
  if (!(x >= -0x1p63 && x < 0x1p63))
    return 0;
  *out = (long long)x;
  return 1;
}

/* ---- text buffers (the page's columns) ---- */

static void put(lua_State *L, buf *b, const char *s, size_t n) {
  b->p = grow(L, b->p, &b->cap, b->n + n, 1);
  memcpy(b->p + b->n, s, n);
  b->n += n;
}

/* An item of a list: a comma before all but the first. */
static void put_item(lua_State *L, buf *b, const char *s, int len) {
  char tmp[48];
  if (b->n) {
    tmp[0] = ',';
    memcpy(tmp + 1, s, (size_t)len);
    put(L, b, tmp, (size_t)len + 1);
  } else {
    put(L, b, s, (size_t)len);
  }
}

/* v in decimal at p (at least 20 bytes): its length (digits.h). */
static int dec(char *p, long long v) { return (int)(jq_put_i64(p, (int64_t)v) - p); }

static void put_int(lua_State *L, buf *b, long long v) {
  char d[24];
  put_item(L, b, d, dec(d, v));
}

/* page.lua's number(v) (v never nil here). */
static int number_text(num a, char *out, size_t size) {
  if (a.isint || (a.v == floor(a.v) && a.v >= -0x1p63 && a.v < 0x1p63)) {
    int len = dec(out, (long long)a.v);
    out[len] = '\0'; /* as snprintf leaves it: some callers print it with %s */
    return len;
  }
  if (isfinite(a.v))
    return snprintf(out, size, "%.17g", a.v);
  return snprintf(out, size, "null");
}

/* ---- sorting: a stable bottom-up merge sort of indices ---- */

typedef int (*less_fn)(const graph *g, int32_t a, int32_t b);

/* Merges the sorted runs src[lo, mid) and src[mid, hi) into dst[lo, hi),
 * the right run's item first only when RIGHT_FIRST(right, left) holds: a
 * stable merge, the one step of every sort of this file. */
#define MERGE(dst, src, lo, mid, hi, RIGHT_FIRST)                                                                \
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
#define BOTTOM_UP(T, a, tmp, n, RIGHT_FIRST)                                                                     \
  do {                                                                                                         \
    T *src_ = (a), *dst_ = (tmp);                                                                              \
    for (size_t w_ = 1; w_ < (n); w_ *= 2) {                                                                   \
      for (size_t lo_ = 0; lo_ < (n); lo_ += 2 * w_) {                                                         \
        size_t mid_ = lo_ + w_ < (n) ? lo_ + w_ : (n), hi_ = lo_ + 2 * w_ < (n) ? lo_ + 2 * w_ : (n);         \
        MERGE(dst_, src_, lo_, mid_, hi_, RIGHT_FIRST);                                                        \
      }                                                                                                        \
      T *t_ = src_;                                                                                            \
      src_ = dst_, dst_ = t_;                                                                                  \
    }                                                                                                          \
    if (src_ != (a))                                                                                           \
      memcpy((a), src_, (n) * sizeof *(a));                                                                    \
  } while (0)

static void merge_sort(lua_State *L, graph *g, int32_t *a, size_t n, less_fn less) {
  if (n < 2)
    return;
  g->tmp = grow(L, g->tmp, &g->ctmp, n, sizeof *g->tmp);
#define BY_LESS(x, y) less(g, (x), (y))
  BOTTOM_UP(int32_t, a, g->tmp, n, BY_LESS);
#undef BY_LESS
}

static int slice_less(const graph *g, int32_t a, int32_t b) {
  const gslice *x = &g->sl[a], *y = &g->sl[b];
  return x->job != y->job ? x->job < y->job : x->ts.v < y->ts.v;
}

static int await_less(const graph *g, int32_t a, int32_t b) {
  const gawait *x = &g->aw[a], *y = &g->aw[b];
  return x->job != y->job ? x->job < y->job : x->ts.v < y->ts.v;
}

static int wake_less(const graph *g, int32_t a, int32_t b) {
  const gwake *x = &g->wk[a], *y = &g->wk[b];
  return x->owner != y->owner ? x->owner < y->owner : x->ts.v < y->ts.v;
}

static int dep_less(const graph *g, int32_t a, int32_t b) { return g->dp[a].owner < g->dp[b].owner; }

/* graph.lua's sort_jobs (by the field, ties by id): sort_jobs_by below. */

/* The jobs a[0 .. n) put in the order of their `field` (a num at offset
 * off in gjob), ties by id, as JOB_LESS orders them: their keys copied
 * next to each other first, so the sort reads them in order and not a
 * job's entry at random (a million jobs are 270 MB of entries). */
typedef struct jkey {
  double v;
  lua_Integer id;
  int32_t k;
} jkey;

static int jkey_less(const jkey *x, const jkey *y) { return x->v != y->v ? x->v < y->v : x->id < y->id; }

static void sort_jobs_by(lua_State *L, graph *g, int32_t *a, size_t n, size_t off) {
  if (n < 2)
    return;
  if (n > ((size_t)-1 / 4) / sizeof(jkey))
    luaL_error(L, "not enough memory");
  jkey *key = alloc_n(L, 2 * n + (n + 1) * sizeof(size_t) / sizeof(jkey) + 1, sizeof *key);
  size_t *run = (size_t *)(key + 2 * n); /* where each run in order begins, then n */
  for (size_t i = 0; i < n; i++) {
    const gjob *j = &g->jobs[a[i]];
    num f;
    memcpy(&f, (const char *)j + off, sizeof f);
    key[i].v = f.v, key[i].id = j->id, key[i].k = a[i];
  }
  /* A natural merge sort: the runs already in order (the jobs come lane by
   * lane, each lane's nearly in order) merged pairwise until one is left. */
  size_t nrun = 0;
  run[nrun++] = 0;
  for (size_t i = 1; i < n; i++)
    if (jkey_less(&key[i], &key[i - 1]))
      run[nrun++] = i;
  run[nrun] = n;
  jkey *src = key, *dst = key + n;
  while (nrun > 1) {
    size_t out = 0;
    for (size_t r = 0; r < nrun; r += 2) {
      size_t lo = run[r], mid = run[r + 1], hi = r + 2 <= nrun ? run[r + 2] : n;
      if (r + 1 >= nrun)
        mid = hi = n; /* an odd run left: copied */
#define BY_KEY(x, y) jkey_less(&(x), &(y))
      MERGE(dst, src, lo, mid, hi, BY_KEY);
#undef BY_KEY
      run[out++] = lo;
    }
    nrun = out;
    run[nrun] = n;
    jkey *t = src;
    src = dst, dst = t;
  }
  for (size_t i = 0; i < n; i++)
    a[i] = src[i].k;
  free(key);
}

/* The array arr (n items of size elem) in the order of the indices idx. */
static void *permute(lua_State *L, void *arr, const int32_t *idx, size_t n, size_t elem) {
  char *out = alloc_n(L, n, elem); /* raises before arr is replaced: arr is still the graph's */
  for (size_t k = 0; k < n; k++)
    memcpy(out + k * elem, (char *)arr + (size_t)idx[k] * elem, elem);
  free(arr);
  return out;
}

/* Scratch memory for one call: a userdata left on the stack (nothing leaks
 * when a call raises). */
static void *scratch(lua_State *L, size_t n, size_t elem) {
  if (n == 0)
    n = 1;
  if (n > ((size_t)-1 / 2) / elem)
    luaL_error(L, "not enough memory");
  void *p = lua_newuserdatauv(L, n * elem, 0);
  memset(p, 0, n * elem);
  return p;
}

/* arr[0 .. n) grouped by job (the int32 at owner_off of each item, in
 * 0 .. g->njobs), in order within a job by less: the new array (arr freed).
 * A counting sort, then a merge sort of each group of more than one. */
static void *group_by(lua_State *L, graph *g, void *arr, size_t n, size_t elem, size_t owner_off, less_fn less) {
  if (n < 2)
    return arr;
  int32_t *idx = scratch(L, n + g->njobs + 1, sizeof *idx), *at = idx + n;
  for (size_t k = 0; k < n; k++) {
    int32_t o;
    memcpy(&o, (char *)arr + k * elem + owner_off, sizeof o);
    at[o + 1]++;
  }
  for (size_t j = 0; j < g->njobs; j++)
    at[j + 1] += at[j];
  for (size_t k = 0; k < n; k++) {
    int32_t o;
    memcpy(&o, (char *)arr + k * elem + owner_off, sizeof o);
    idx[at[o]++] = (int32_t)k;
  }
  for (size_t lo = 0, j = 0; j < g->njobs; j++) { /* at[j]: the end of job j's group */
    size_t hi = (size_t)at[j];
    if (hi - lo > 1)
      merge_sort(L, g, idx + lo, hi - lo, less);
    lo = hi;
  }
  arr = permute(L, arr, idx, n, elem);
  lua_pop(L, 1);
  return arr;
}

/* ---- the jobs by id ---- */

static size_t hash_id(lua_Integer id, size_t cap) {
  uint64_t x = (uint64_t)id * 0x9E3779B97F4A7C15u;
  return (size_t)(x ^ (x >> 29)) & (cap - 1);
}

/* The index of job id, or -1. */
static int32_t find_job(const graph *g, lua_Integer id) {
  if (!g->hcap)
    return -1;
  for (size_t h = hash_id(id, g->hcap);; h = (h + 1) & (g->hcap - 1)) {
    const hslot *e = &g->hash[h];
    if (e->k == 0)
      return -1;
    if (e->id == id)
      return e->k - 1;
  }
}

/* graph.lua's job_of: the index of job id, made when new. */
static int32_t job_of(lua_State *L, graph *g, lua_Integer id) {
  int32_t k = find_job(g, id);
  if (k >= 0)
    return k;
  if (g->njobs >= INT32_MAX / 2)
    luaL_error(L, "not enough memory");
  if ((g->njobs + 1) * 2 > g->hcap) { /* rehash at half full */
    size_t cap = g->hcap ? g->hcap * 2 : 1024;
    hslot *h = alloc_n(L, cap, sizeof *h);
    free(g->hash);
    g->hash = h, g->hcap = cap;
    for (size_t j = 0; j < g->njobs; j++) {
      size_t p = hash_id(g->jobs[j].id, cap);
      while (h[p].k)
        p = (p + 1) & (cap - 1);
      h[p].id = g->jobs[j].id, h[p].k = (int32_t)j + 1;
    }
  }
  gjob *j = PUSH(L, g->jobs, g->njobs, g->cjobs);
  memset(j, 0, sizeof *j);
  j->id = id, j->cat = -1, j->sub_lane = -1, j->sub_wait = -1;
  j->run = ZERO, j->suspended = ZERO;
  size_t p = hash_id(id, g->hcap);
  while (g->hash[p].k)
    p = (p + 1) & (g->hcap - 1);
  g->hash[p].id = id, g->hash[p].k = (int32_t)g->njobs;
  return (int32_t)g->njobs - 1;
}

/* ---- categories: strings in the graph's user values ---- */

/* Stack: 2 = the graph, 3 = names (index -> string), 4 = index (string -> index). */
typedef struct cat_cache {
  const void *p[64];
  int32_t k[64];
} cat_cache;

/* The index (0-based) of the category string at the top (left there). */
static int32_t cat_of(lua_State *L, graph *g, cat_cache *cc) {
  const void *p = lua_topointer(L, -1);
  size_t h = ((uintptr_t)p >> 4) & 63;
  if (cc->p[h] == p && p)
    return cc->k[h];
  lua_pushvalue(L, -1);
  int32_t k;
  if (lua_rawget(L, 4) == LUA_TNUMBER) {
    k = (int32_t)lua_tointeger(L, -1);
  } else {
    if (g->ncats >= INT32_MAX / 2)
      luaL_error(L, "too many categories");
    k = g->ncats++;
    lua_pushvalue(L, -2);
    lua_rawseti(L, 3, (lua_Integer)k + 1);
    lua_pushvalue(L, -2);
    lua_pushinteger(L, k);
    lua_rawset(L, 4);
  }
  lua_pop(L, 1);
  cc->p[h] = p, cc->k[h] = k;
  return k;
}

/* ---- building ---- */

static int bail(lua_State *L) {
  lua_pushnil(L);
  return 1;
}

/* A lane's walk in graph.lua's build: the last job slice (a submit inside
 * it is that job's) and the last wait (a submit outside one follows it). */
enum { LE_JOB, LE_SUBMIT, LE_WAIT };

typedef struct lane_walk {
  int32_t cur, last_wait;
  num cur_ts, cur_stop;
} lane_walk;

/* One job, submit or wait slice (the index-th of lane li, 1-based) of
 * job `id` (`has`: whether it names one), in category `cat` (a job
 * slice's). 0: left to Lua. */
static int lane_event(lua_State *L, graph *g, lane_walk *w, int kind, int has, lua_Integer id, num ts, num dur,
                      int32_t cat, lua_Integer index, lua_Integer li) {
  if (kind == LE_WAIT) {
    if (g->nwt >= INT32_MAX / 2)
      return 0;
    gwait *wt = PUSH(L, g->wt, g->nwt, g->cwt);
    wt->ts = ts, wt->stop = add(g, ts, dur), wt->job = id, wt->hasjob = has;
    w->last_wait = (int32_t)g->nwt - 1;
    return 1;
  }
  if (!has)
    return 1;
  int32_t j = job_of(L, g, id);
  gjob *jj = &g->jobs[j];
  if (kind == LE_JOB) {
    if (g->nsl >= INT32_MAX / 2)
      return 0;
    gslice *s = PUSH(L, g->sl, g->nsl, g->csl);
    s->ts = ts, s->dur = dur, s->index = index, s->job = j, s->lane = (int32_t)li - 1, s->cat = cat, s->await = -1;
    jj = &g->jobs[j];
    if (!(jj->flags & HAS_CAT))
      jj->cat = cat, jj->flags |= HAS_CAT;
    jj->run = add(g, jj->run, dur);
    w->cur = j, w->cur_ts = ts, w->cur_stop = add(g, ts, dur);
  } else { /* a submit */
    jj->flags = (jj->flags & ~(uint32_t)(HAS_SUB | HAS_PARENT)) | HAS_SUB;
    jj->sub_ts = ts, jj->sub_dur = dur, jj->sub_lane = (int32_t)li - 1, jj->sub_wait = -1;
    if (w->cur >= 0 && ts.v >= w->cur_ts.v && add(g, ts, dur).v <= w->cur_stop.v) {
      jj->flags |= HAS_PARENT;
      jj->sub_parent = g->jobs[w->cur].id;
    } else {
      jj->sub_wait = w->last_wait;
    }
  }
  return 1;
}

/* The lanes' slices (graph.lua's build, its first loop). 0: left to Lua. */
static int read_lanes(lua_State *L, graph *g) {
  cat_cache cc, ncc; /* ncc: native cells' strings, by the address of their bytes */
  memset(&cc, 0, sizeof cc);
  memset(&ncc, 0, sizeof ncc);
  lua_pushliteral(L, "job");
  lua_pushliteral(L, "submit");
  lua_pushliteral(L, "wait");
  const char *kjob = lua_tostring(L, -3), *ksubmit = lua_tostring(L, -2), *kwait = lua_tostring(L, -1);
  if (lua_getfield(L, 1, "lanes") != LUA_TTABLE)
    return 0;
  int lanes = lua_gettop(L);
  for (lua_Integer li = 1;; li++) {
    lua_settop(L, lanes);
    int t = lua_rawgeti(L, lanes, li);
    if (t == LUA_TNIL)
      break;
    if (t != LUA_TTABLE)
      return 0;
    int lane = lua_gettop(L);
    if (li > INT32_MAX / 2)
      return 0;
    lua_getfield(L, lane, "index");
    int ok;
    lua_Integer index = lua_tointegerx(L, -1, &ok);
    if (!lua_isinteger(L, -1) || index < INT32_MIN / 2 || index > INT32_MAX / 2)
      return 0;
    *PUSH(L, g->lane_index, g->nlanes, g->clanes) = (int32_t)index;
    lua_getfield(L, lane, "n");
    lua_Integer n = lua_tointegerx(L, -1, &ok);
    if (!lua_isinteger(L, -1))
      return 0;
    for (const char *f = "kind\0job\0ts\0dur\0cat\0"; *f; f += strlen(f) + 1) {
      int type = jq_column_field(L, lane, f);
      if (type != LUA_TTABLE && !(type == LUA_TUSERDATA && jq_column_test(L, -1)) && n > 0)
        return 0;
    }
    const int ckind = lane + 3, cjob = lane + 4, cts = lane + 5, cdur = lane + 6, ccat = lane + 7;
    lane_walk walk = {-1, -1, ZERO, ZERO};
    const jq_column *nk = jq_column_test(L, ckind), *nj = jq_column_test(L, cjob), *nt = jq_column_test(L, cts);
    const jq_column *nd = jq_column_test(L, cdur), *nc = jq_column_test(L, ccat);
    if (n > 0 && (nk || nj || nt || nd || nc)) { /* native: the cells read directly */
      if (!nk || !nj || !nt || !nd || !nc || nk->n < (size_t)n || nj->n < (size_t)n || nt->n < (size_t)n ||
          nd->n < (size_t)n || nc->n < (size_t)n)
        return 0;
      for (size_t k = 0; k < (size_t)n; k++) {
        int kind = JQ_CELL_IS(nk, k, "job") ? LE_JOB : JQ_CELL_IS(nk, k, "wait") ? LE_WAIT
                 : JQ_CELL_IS(nk, k, "submit") ? LE_SUBMIT : -1;
        if (kind < 0)
          continue;
        lua_Integer id = 0;
        int has = cell_get_id(nj, k, 1, &id);
        if (has < 0)
          return 0;
        num ts = ZERO, dur = ZERO;
        if ((kind == LE_WAIT || has) && (!cell_get_num(nt, k, &ts) || !cell_get_num(nd, k, &dur)))
          return 0;
        int32_t cat = -1;
        if (kind == LE_JOB && has) {
          if (jq_cell_tag(nc, k) != JQ_C_STR)
            return 0;
          const char *p = nc->strs->p[nc->v[k]];
          size_t h = ((uintptr_t)p >> 4) & 63;
          if (ncc.p[h] == p) {
            cat = ncc.k[h];
          } else {
            jq_column_push(L, ccat, k);
            cat = cat_of(L, g, &cc);
            lua_pop(L, 1);
            ncc.p[h] = p, ncc.k[h] = cat;
          }
        }
        if (!lane_event(L, g, &walk, kind, has, id, ts, dur, cat, (lua_Integer)k, li))
          return 0;
      }
      continue;
    }
    for (lua_Integer i = 1; i <= n; i++) {
      lua_settop(L, ccat);
      if (lua_rawgeti(L, ckind, i) != LUA_TSTRING)
        continue;
      const char *ks = lua_tostring(L, -1);
      int kind = ks == kjob ? LE_JOB : ks == kwait ? LE_WAIT : ks == ksubmit ? LE_SUBMIT : -1;
      if (kind < 0)
        continue;
      lua_Integer id = 0;
      lua_rawgeti(L, cjob, i);
      int has = get_id(L, -1, 1, &id);
      if (has < 0)
        return 0;
      num ts = ZERO, dur = ZERO;
      if (kind == LE_WAIT || has) {
        lua_rawgeti(L, cts, i);
        lua_rawgeti(L, cdur, i);
        if (!get_num(L, -2, &ts) || !get_num(L, -1, &dur))
          return 0;
      }
      int32_t cat = -1;
      if (kind == LE_JOB && has) {
        if (lua_rawgeti(L, ccat, i) != LUA_TSTRING)
          return 0;
        cat = cat_of(L, g, &cc);
      }
      if (!lane_event(L, g, &walk, kind, has, id, ts, dur, cat, i - 1, li))
        return 0;
    }
  }
  lua_settop(L, 4);
  return !g->bail;
}

/* A string field of the table at idx equal to the literal s. */
static int field_is(lua_State *L, int idx, const char *field, const char *s) {
  size_t len;
  int eq = lua_getfield(L, idx, field) == LUA_TSTRING;
  const char *v = eq ? lua_tolstring(L, -1, &len) : NULL;
  eq = eq && len == strlen(s) && memcmp(v, s, len) == 0;
  lua_pop(L, 1);
  return eq;
}

/* The copies, flows and awaits. 0: left to Lua. */
static int read_rest(lua_State *L, graph *g) {
  jq_column_field(L, 1, "copy_ts"); /* 5 */
  jq_column_field(L, 1, "copy_dur");
  jq_column_field(L, 1, "copy_name");
  jq_column_field(L, 1, "copy_job"); /* 8 */
  const jq_column *nt = jq_column_test(L, 5), *nd = jq_column_test(L, 6), *nn = jq_column_test(L, 7),
                  *nj = jq_column_test(L, 8);
  if (nt && nd && nn && nj) { /* native: the cells read directly */
    size_t n = nt->n;
    if (nd->n < n || nn->n < n || nj->n < n)
      return 0;
    for (size_t i = 0; i < n; i++) {
      lua_Integer id;
      if (jq_cell_tag(nj, i) == JQ_C_FALSE || jq_cell_tag(nj, i) == JQ_C_NIL || cell_get_id(nj, i, 0, &id) != 1)
        continue;
      int32_t j = find_job(g, id);
      if (j < 0)
        continue;
      int in = JQ_CELL_IS(nn, i, "copy in"), out = !in && JQ_CELL_IS(nn, i, "copy out");
      if (!in && !out)
        continue;
      num ts, dur;
      if (!cell_get_num(nt, i, &ts) || !cell_get_num(nd, i, &dur))
        return 0;
      gjob *jj = &g->jobs[j];
      if (in)
        jj->cin_ts = ts, jj->cin_dur = dur, jj->flags |= HAS_CIN;
      else
        jj->cout_ts = ts, jj->cout_dur = dur, jj->flags |= HAS_COUT;
    }
  } else {
    for (int k = 5; k <= 8; k++)
      if (!lua_istable(L, k))
        return 0;
  }
  lua_Unsigned nc = nt ? 0 : lua_rawlen(L, 5);
  for (lua_Unsigned i = 1; i <= nc; i++) {
    lua_settop(L, 8);
    lua_Integer id;
    lua_rawgeti(L, 8, (lua_Integer)i);
    if (lua_type(L, -1) != LUA_TNUMBER || get_id(L, -1, 0, &id) != 1)
      continue; /* false, or no job a graph of ours has */
    int32_t j = find_job(g, id);
    if (j < 0)
      continue;
    lua_rawgeti(L, 7, (lua_Integer)i);
    size_t len;
    const char *name = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
    int in = name && len == 7 && memcmp(name, "copy in", 7) == 0;
    int out = name && len == 8 && memcmp(name, "copy out", 8) == 0;
    if (!in && !out)
      continue;
    num ts, dur;
    lua_rawgeti(L, 5, (lua_Integer)i);
    lua_rawgeti(L, 6, (lua_Integer)i);
    if (!get_num(L, -2, &ts) || !get_num(L, -1, &dur))
      return 0;
    gjob *jj = &g->jobs[j];
    if (in)
      jj->cin_ts = ts, jj->cin_dur = dur, jj->flags |= HAS_CIN;
    else
      jj->cout_ts = ts, jj->cout_dur = dur, jj->flags |= HAS_COUT;
  }
  lua_settop(L, 4);
  if (lua_getfield(L, 1, "flows") != LUA_TTABLE) /* 5 */
    return 0;
  for (lua_Integer i = 1;; i++) {
    lua_settop(L, 5);
    int t = lua_rawgeti(L, 5, i); /* 6: e */
    if (t == LUA_TNIL)
      break;
    if (t != LUA_TTABLE)
      return 0;
    if (lua_getfield(L, 6, "args") != LUA_TTABLE) { /* 7 */
      lua_pop(L, 1);
      lua_newtable(L);
    }
    int dep = field_is(L, 6, "name", "dependency done");
    if (!dep && !field_is(L, 6, "name", "wake job"))
      continue;
    lua_Integer id, job = 0;
    lua_getfield(L, 7, dep ? "dependant" : "job");
    int has = get_id(L, -1, 0, &id);
    if (has <= 0) {
      if (has < 0)
        return 0;
      continue;
    }
    int32_t j = job_of(L, g, id);
    num ts;
    lua_getfield(L, 6, "ts");
    int ts_ok = get_num(L, -1, &ts);
    if (dep) {
      lua_getfield(L, 7, "job");
      int has_job = get_id(L, -1, 0, &job);
      if (has_job < 0 || g->ndp >= INT32_MAX / 2)
        return 0;
      gdep *d = PUSH(L, g->dp, g->ndp, g->cdp);
      d->job = job, d->owner = j, d->has = has_job;
      lua_getfield(L, 7, "ready");
      if (lua_type(L, -1) == LUA_TBOOLEAN && lua_toboolean(L, -1)) {
        if (!ts_ok)
          return 0;
        gjob *jj = &g->jobs[j];
        jj->ready = ts, jj->ready_dep = job;
        jj->flags = (jj->flags & ~(uint32_t)HAS_READY_DEP) | HAS_READY | (has_job ? HAS_READY_DEP : 0);
      }
    } else {
      if (!ts_ok || g->nwk >= INT32_MAX / 2)
        return 0;
      gwake *w = PUSH(L, g->wk, g->nwk, g->cwk);
      w->ts = ts, w->owner = j;
    }
  }
  lua_settop(L, 4);
  if (lua_getfield(L, 1, "awaits") != LUA_TTABLE) /* 5 */
    return 0;
  for (lua_Integer i = 1;; i++) {
    lua_settop(L, 5);
    int t = lua_rawgeti(L, 5, i); /* 6: w */
    if (t == LUA_TNIL)
      break;
    if (t != LUA_TTABLE)
      return 0;
    lua_Integer id, awaits = 0;
    lua_getfield(L, 6, "job");
    int has = get_id(L, -1, 0, &id);
    if (has <= 0) {
      if (has < 0)
        return 0;
      continue;
    }
    int32_t j = job_of(L, g, id);
    num ts, dur;
    lua_getfield(L, 6, "ts");
    lua_getfield(L, 6, "dur");
    lua_getfield(L, 6, "awaits");
    int has_awaits = get_id(L, -1, 0, &awaits);
    if (!get_num(L, -3, &ts) || !get_num(L, -2, &dur) || has_awaits < 0 || g->naw >= INT32_MAX / 2)
      return 0;
    gawait *w = PUSH(L, g->aw, g->naw, g->caw);
    w->ts = ts, w->dur = dur, w->awaits = awaits, w->job = j, w->has_awaits = has_awaits;
    g->jobs[j].suspended = add(g, g->jobs[j].suspended, dur);
  }
  lua_settop(L, 4);
  return !g->bail;
}

/* Groups the slices, awaits, wakes and deps by job (each job's in time
 * order, deps in file order). 0: left to Lua (two at one time). */
static int group(lua_State *L, graph *g) {
  g->sl = group_by(L, g, g->sl, g->nsl, sizeof *g->sl, offsetof(gslice, job), slice_less);
  g->aw = group_by(L, g, g->aw, g->naw, sizeof *g->aw, offsetof(gawait, job), await_less);
  g->wk = group_by(L, g, g->wk, g->nwk, sizeof *g->wk, offsetof(gwake, owner), wake_less);
  g->dp = group_by(L, g, g->dp, g->ndp, sizeof *g->dp, offsetof(gdep, owner), dep_less);
  for (size_t k = 0; k < g->nsl; k++) {
    gjob *j = &g->jobs[g->sl[k].job];
    if (j->ns && g->sl[k - 1].ts.v == g->sl[k].ts.v)
      return 0; /* two slices of a job at one time: Lua's sort may order them either way */
    if (!j->ns)
      j->s0 = (uint32_t)k;
    j->ns++;
  }
  for (size_t k = 0; k < g->naw; k++) {
    gjob *j = &g->jobs[g->aw[k].job];
    if (j->na && g->aw[k - 1].ts.v == g->aw[k].ts.v)
      return 0;
    if (!j->na)
      j->a0 = (uint32_t)k;
    j->na++;
  }
  for (size_t k = 0; k < g->nwk; k++) {
    gjob *j = &g->jobs[g->wk[k].owner];
    if (j->nw && g->wk[k - 1].ts.v == g->wk[k].ts.v && g->wk[k - 1].ts.isint != g->wk[k].ts.isint)
      return 0; /* 3 and 3.0: which comes first shows */
    if (!j->nw)
      j->w0 = (uint32_t)k;
    j->nw++;
  }
  for (size_t k = 0; k < g->ndp; k++) {
    gjob *j = &g->jobs[g->dp[k].owner];
    if (!j->nd)
      j->d0 = (uint32_t)k;
    j->nd++;
  }
  return 1;
}

/* Each job's start, finish, ready latency and resumes; the orders. */
static int finish_build(lua_State *L, graph *g) {
  g->res = alloc_n(L, g->nwk, sizeof *g->res);
  g->order = alloc_n(L, g->njobs, sizeof *g->order);
  g->ends = alloc_n(L, g->njobs, sizeof *g->ends);
  for (size_t k = 0; k < g->njobs; k++) {
    gjob *j = &g->jobs[k];
    if (!j->ns)
      continue;
    gslice *sl = &g->sl[j->s0], *first = sl, *last = sl + j->ns - 1;
    j->start = j->flags & HAS_CIN ? nmin(j->cin_ts, first->ts) : first->ts;
    j->finish = nmax(add(g, last->ts, last->dur), j->flags & HAS_COUT ? add(g, j->cout_ts, j->cout_dur) : ZERO);
    if (!(j->flags & HAS_READY) && (j->flags & HAS_SUB)) {
      j->ready = add(g, j->sub_ts, j->sub_dur);
      j->flags |= HAS_READY;
    }
    if (j->flags & HAS_READY) {
      j->rl = nmax(ZERO, sub(g, j->start, j->ready));
      j->flags |= HAS_RL;
    }
    uint32_t s = 0;
    for (uint32_t a = 0; a < j->na; a++) { /* each await on the slice it resumed */
      while (s < j->ns && sl[s].ts.v <= g->aw[j->a0 + a].ts.v)
        s++;
      if (s < j->ns)
        sl[s].await = (int32_t)(j->a0 + a);
    }
    s = 0;
    for (uint32_t w = 0; w < j->nw; w++) { /* each wake-up on the first slice at or after it */
      num t = g->wk[j->w0 + w].ts;
      while (s < j->ns && sl[s].ts.v < t.v)
        s++;
      if (s < j->ns)
        g->res[j->w0 + j->nres++] = sub(g, sl[s].ts, t);
    }
    g->order[g->norder++] = (int32_t)k;
  }
  sort_jobs_by(L, g, g->order, g->norder, offsetof(gjob, start));
  memcpy(g->ends, g->order, g->norder * sizeof *g->ends);
  sort_jobs_by(L, g, g->ends, g->norder, offsetof(gjob, finish));
  g->total_run = ZERO;
  for (size_t k = 0; k < g->norder; k++)
    g->total_run = add(g, g->total_run, g->jobs[g->order[k]].run);
  /* the distributions' values must be exact as doubles for their sort */
  return !g->bail;
}

/* job_graph(model) -> graph | nil */
static int l_job_graph(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  graph *g = lua_newuserdatauv(L, sizeof *g, 2); /* 2 */
  memset(g, 0, sizeof *g);
  luaL_setmetatable(L, GRAPH_MT);
  lua_newtable(L); /* 3: category names */
  lua_newtable(L); /* 4: name -> index */
  lua_pushvalue(L, 3);
  lua_setiuservalue(L, 2, 1);
  lua_pushvalue(L, 4);
  lua_setiuservalue(L, 2, 2);
  if (!read_lanes(L, g) || !read_rest(L, g) || !group(L, g) || !finish_build(L, g))
    return bail(L);
  num t0 = ZERO, t1 = ZERO;
  lua_getfield(L, 1, "t0");
  lua_getfield(L, 1, "t1");
  if ((!lua_isnil(L, 5) && !get_num(L, 5, &t0)) || (!lua_isnil(L, 6) && !get_num(L, 6, &t1)))
    return bail(L);
  g->session = nmax(ZERO, sub(g, t1, t0));
  if (g->bail)
    return bail(L);
  lua_settop(L, 2);
  return 1;
}

static graph *check_graph(lua_State *L) {
  graph *g = luaL_checkudata(L, 1, GRAPH_MT);
  luaL_argcheck(L, g->jobs || g->njobs == 0, 1, "graph freed");
  return g;
}

static int l_graph_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_graph(L)->norder);
  return 1;
}

/* ---- latency ---- */

/* idx[0 .. n) = the indices of vals in the order of their values, ties
 * in index order (a stable sort's): the values copied beside their
 * indices first, so the sort reads them in order. */
typedef struct vkey {
  double v;
  int32_t k;
} vkey;

static void sort_values(lua_State *L, const gvalue *vals, int32_t *idx, size_t n) {
  if (n < 2) {
    if (n)
      idx[0] = 0;
    return;
  }
  vkey *key = alloc_n(L, 2 * n, sizeof *key);
  for (size_t i = 0; i < n; i++)
    key[i].v = vals[i].v.v, key[i].k = (int32_t)i;
#define BY_VALUE(x, y) ((x).v < (y).v)
  BOTTOM_UP(vkey, key, key + n, n, BY_VALUE);
#undef BY_VALUE
  for (size_t i = 0; i < n; i++)
    idx[i] = key[i].k;
  free(key);
}

/* Category a < category b by Lua's string order (the names at stack index 3). */
static int cat_less(lua_State *L, int32_t a, int32_t b) {
  lua_rawgeti(L, 3, (lua_Integer)a + 1);
  lua_rawgeti(L, 3, (lua_Integer)b + 1);
  int lt = lua_compare(L, -2, -1, LUA_OPLT);
  lua_pop(L, 2);
  return lt;
}

/* A stable merge sort of categories by name. */
static void sort_cats(lua_State *L, int32_t *a, int32_t *tmp, size_t n) {
#define BY_NAME(x, y) cat_less(L, (x), (y))
  BOTTOM_UP(int32_t, a, tmp, n, BY_NAME);
#undef BY_NAME
}

/* The nearest rank of p among n (graph.lua's rank): 1-based, n > 0. */
static size_t rank_of(size_t n, double p) {
  double r = ceil(p * (double)n);
  return r < 1 ? 1 : (size_t)r;
}

/* Sets count, p50_us, p95_us, max_us in the table on top: of the sorted
 * values vals[idx[0 .. n)] (0 each when n is 0). */
static void set_summary(lua_State *L, const gvalue *vals, const int32_t *idx, size_t n) {
  lua_pushinteger(L, (lua_Integer)n);
  lua_setfield(L, -2, "count");
  push_num(L, n ? vals[idx[rank_of(n, 0.5) - 1]].v : ZERO);
  lua_setfield(L, -2, "p50_us");
  push_num(L, n ? vals[idx[rank_of(n, 0.95) - 1]].v : ZERO);
  lua_setfield(L, -2, "p95_us");
  push_num(L, n ? vals[idx[n - 1]].v : ZERO);
  lua_setfield(L, -2, "max_us");
}

/* Pushes the distribution of vals[0 .. n) (graph.lua's distribution's done). */
static void push_distribution(lua_State *L, graph *g, const gvalue *vals, size_t n) {
  int top = lua_gettop(L);
  size_t nc = (size_t)g->ncats;
  int32_t *idx = scratch(L, 2 * n + 4 * nc, sizeof *idx);
  int32_t *byc = idx + n, *cnt = byc + n, *at = cnt + nc, *names = at + nc, *tmp = names + nc;
  sort_values(L, vals, idx, n);
  size_t nnames = 0;
  for (size_t k = 0; k < n; k++)
    if (!cnt[vals[k].cat]++)
      names[nnames++] = vals[k].cat;
  lua_createtable(L, 0, 5);
  set_summary(L, vals, idx, n);
  sort_cats(L, names, tmp, nnames);
  lua_createtable(L, (int)(nnames < INT32_MAX ? nnames : 0), 0);
  size_t m = 0;
  for (size_t k = 0; k < nnames; k++) { /* each category's values: the sorted list's (a stable sort) */
    at[names[k]] = (int32_t)m;
    m += (size_t)cnt[names[k]];
  }
  for (size_t k = 0; k < n; k++)
    byc[at[vals[idx[k]].cat]++] = idx[k];
  m = 0;
  for (size_t k = 0; k < nnames; k++) {
    size_t c = (size_t)cnt[names[k]];
    lua_createtable(L, 0, 5);
    set_summary(L, vals, nnames == 1 ? idx : byc + m, c);
    lua_rawgeti(L, 3, (lua_Integer)names[k] + 1);
    lua_setfield(L, -2, "name");
    lua_rawseti(L, -2, (lua_Integer)k + 1);
    m += c;
  }
  lua_setfield(L, -2, "by_category");
  lua_replace(L, top + 1);
  lua_settop(L, top + 1);
}

/* Pushes the graph's user values: 3 = names, 4 = name -> index. */
static void push_cats(lua_State *L) {
  lua_settop(L, 2);
  lua_getiuservalue(L, 1, 1);
  lua_getiuservalue(L, 1, 2);
}

/* graph:latency([top]) */
static int l_graph_latency(lua_State *L) {
  graph *g = check_graph(L);
  lua_Number top = luaL_optnumber(L, 2, 10);
  push_cats(L);             /* 3, 4 */
  lua_createtable(L, 0, 5); /* 5: the result */
  size_t n = g->norder;
  gvalue *vals = scratch(L, g->nwk > n ? g->nwk : n, sizeof *vals); /* 6 */
  static const char *const names[] = {"ready", "resume", "run", "suspended"};
  for (int d = 0; d < 4; d++) {
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
      const gjob *j = &g->jobs[g->order[k]];
      if (d == 0 && (j->flags & HAS_RL))
        vals[m].v = j->rl, vals[m++].cat = j->cat;
      else if (d == 1)
        for (uint32_t r = 0; r < j->nres; r++)
          vals[m].v = g->res[j->w0 + r], vals[m++].cat = j->cat;
      else if (d == 2)
        vals[m].v = j->run, vals[m++].cat = j->cat;
      else if (d == 3)
        vals[m].v = j->suspended, vals[m++].cat = j->cat;
    }
    push_distribution(L, g, vals, m);
    lua_setfield(L, 5, names[d]);
  }
  int32_t *waited = scratch(L, n, sizeof *waited); /* 7 */
  size_t nw = 0;
  for (size_t k = 0; k < n; k++)
    if (g->jobs[g->order[k]].flags & HAS_RL)
      waited[nw++] = g->order[k];
  sort_jobs_by(L, g, waited, nw, offsetof(gjob, rl));
  lua_createtable(L, 0, 0);
  lua_Integer i = 0;
  size_t first = nw; /* waited[first .. last], 1-based: one latency, in id order */
  while ((lua_Number)i < top && first >= 1) {
    size_t last = first;
    while (first > 1 && g->jobs[waited[first - 2]].rl.v == g->jobs[waited[last - 1]].rl.v)
      first--;
    for (size_t k = first; k <= last && (lua_Number)i < top; k++) {
      const gjob *j = &g->jobs[waited[k - 1]];
      lua_createtable(L, 0, 5);
      lua_pushinteger(L, j->id);
      lua_setfield(L, -2, "job");
      lua_rawgeti(L, 3, (lua_Integer)j->cat + 1);
      lua_setfield(L, -2, "category");
      push_num(L, j->rl);
      lua_setfield(L, -2, "latency_us");
      push_num(L, j->ready);
      lua_setfield(L, -2, "ready_us");
      push_num(L, j->start);
      lua_setfield(L, -2, "start_us");
      lua_rawseti(L, -2, ++i);
    }
    first--;
  }
  lua_setfield(L, 5, "top_ready");
  lua_settop(L, 5);
  return 1;
}

/* ---- the critical path ---- */

typedef struct path {
  num duration, t, run, ready, resume, copy, caller;
  int32_t last;
  int32_t *seq; /* job indices, from the last back */
  size_t nseq;
  num *run_by; /* per category */
  unsigned char *has_run_by;
} path;

static void part(graph *g, num *p, num v) { /* graph.lua's add(part, v) */
  if (v.v > 0)
    *p = add(g, *p, v);
}

/* The last job in g->ends that finished at or before t, or -1. */
static int32_t finished_by(const graph *g, num t) {
  size_t lo = 1, hi = g->norder;
  int32_t found = -1;
  while (lo <= hi) {
    size_t mid = (lo + hi) / 2;
    if (g->jobs[g->ends[mid - 1]].finish.v <= t.v) {
      found = g->ends[mid - 1];
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found;
}

static int finished(const graph *g, int32_t k) { return k >= 0 && g->jobs[k].ns > 0; }

/* graph.lua's critical_path walk (g->norder > 0); its arrays are scratch
 * userdata left on the stack. */
static void walk(lua_State *L, graph *g, path *p) {
  memset(p, 0, sizeof *p);
  p->run = p->ready = p->resume = p->copy = p->caller = ZERO;
  uint64_t steps = 0, limit = 16;
  for (size_t k = 0; k < g->norder; k++)
    limit += g->jobs[g->order[k]].ns + 2;
  p->run_by = scratch(L, (size_t)g->ncats, sizeof *p->run_by);
  p->has_run_by = scratch(L, (size_t)g->ncats, 1);
  p->seq = scratch(L, (size_t)limit, sizeof *p->seq);
  int32_t *cursor = scratch(L, g->njobs, sizeof *cursor); /* 1 + the index of a job's next slice; 0 unset */
  int32_t last = g->ends[g->norder - 1];
  p->last = last;
  int32_t j = last;
  num t = g->jobs[last].finish;
  while (j >= 0 && steps < limit) {
    steps++;
    const gjob *jj = &g->jobs[j];
    if (p->nseq == 0 || p->seq[p->nseq - 1] != j)
      p->seq[p->nseq++] = j;
    const gslice *sl = &g->sl[jj->s0];
    int64_t k = cursor[j] ? cursor[j] - 1 : (int64_t)jj->ns; /* 1-based */
    while (k >= 1 && sl[k - 1].ts.v > t.v)
      k--;
    if (k < 1)
      break;
    const gslice *s = &sl[k - 1];
    num stop = add(g, s->ts, s->dur);
    if (t.v > stop.v)
      part(g, &p->copy, sub(g, t, stop));
    num ran = sub(g, nmin(t, stop), s->ts);
    if (ran.v > 0) {
      p->run = add(g, p->run, ran);
      p->run_by[s->cat] = add(g, p->has_run_by[s->cat] ? p->run_by[s->cat] : ZERO, ran);
      p->has_run_by[s->cat] = 1;
    }
    t = s->ts;
    cursor[j] = (int32_t)k; /* k - 1, stored + 1 */
    if (k > 1) { /* a slice after a suspension: back to what it waited for */
      num prev_stop = add(g, sl[k - 2].ts, sl[k - 2].dur);
      int32_t a = -1;
      if (s->await >= 0 && g->aw[s->await].has_awaits)
        a = find_job(g, g->aw[s->await].awaits);
      if (finished(g, a) && a != j && g->jobs[a].finish.v <= t.v) {
        part(g, &p->resume, sub(g, t, g->jobs[a].finish));
        j = a, t = g->jobs[a].finish;
      } else {
        part(g, s->await >= 0 ? &p->resume : &p->ready, sub(g, t, prev_stop));
        t = nmin(t, prev_stop);
      }
      continue;
    }
    if ((jj->flags & HAS_CIN) && jj->cin_ts.v < t.v) { /* its first slice: what made it start */
      part(g, &p->copy, sub(g, t, jj->cin_ts));
      t = jj->cin_ts;
    }
    int32_t d = jj->flags & HAS_READY_DEP ? find_job(g, jj->ready_dep) : -1;
    if (finished(g, d) && d != j && g->jobs[d].finish.v <= t.v) {
      part(g, &p->ready, sub(g, t, g->jobs[d].finish));
      j = d, t = g->jobs[d].finish;
      continue;
    }
    if (!(jj->flags & HAS_SUB)) {
      j = -1;
      continue;
    }
    num sub_end = add(g, jj->sub_ts, jj->sub_dur);
    part(g, &p->ready, sub(g, t, sub_end));
    part(g, &p->copy, sub(g, nmin(t, sub_end), jj->sub_ts));
    int32_t parent = jj->flags & HAS_PARENT ? find_job(g, jj->sub_parent) : -1;
    t = nmin(t, jj->sub_ts);
    if (finished(g, parent) && parent != j) {
      j = parent;
      continue;
    }
    int32_t by = -1; /* submitted by the caller (or another thread) */
    if (jj->sub_wait >= 0) {
      const gwait *w = &g->wt[jj->sub_wait];
      by = w->hasjob ? find_job(g, w->job) : -1;
      if (by < 0)
        by = finished_by(g, w->stop);
    }
    if (finished(g, by) && by != j && g->jobs[by].finish.v <= t.v) {
      part(g, &p->caller, sub(g, t, g->jobs[by].finish));
      j = by, t = g->jobs[by].finish;
    } else {
      j = -1;
    }
  }
  p->t = t;
  p->duration = sub(g, g->jobs[last].finish, t);
}

static void set_num(lua_State *L, const char *field, num v) {
  push_num(L, v);
  lua_setfield(L, -2, field);
}

/* graph:critical_path() */
static int l_graph_critical_path(lua_State *L) {
  graph *g = check_graph(L);
  push_cats(L); /* 3, 4 */
  if (g->norder == 0)
    return 0;
  path p;
  walk(L, g, &p);
  if (g->bail) { /* an integer sum reached 2^53: left to the Lua code */
    lua_pushboolean(L, 0);
    return 1;
  }
  int32_t *cats = scratch(L, (size_t)g->ncats, sizeof *cats);
  size_t nc = 0;
  for (int32_t c = 0; c < g->ncats; c++)
    if (p.has_run_by[c])
      cats[nc++] = c;
  for (size_t a = 1; a < nc; a++) { /* by run time (most first), then name: names are unique */
    int32_t x = cats[a];
    size_t b = a;
    while (b > 0 && (p.run_by[x].v != p.run_by[cats[b - 1]].v ? p.run_by[x].v > p.run_by[cats[b - 1]].v
                                                                 : cat_less(L, x, cats[b - 1]))) {
      cats[b] = cats[b - 1];
      b--;
    }
    cats[b] = x;
  }
  num session = g->session, floor_ = sub(g, p.duration, p.ready);
  lua_createtable(L, 0, 17);
  set_num(L, "duration_us", p.duration);
  set_num(L, "floor_us", floor_);
  set_num(L, "start_us", p.t);
  set_num(L, "finish_us", g->jobs[p.last].finish);
  lua_createtable(L, (int)(p.nseq < INT32_MAX ? p.nseq : 0), 0);
  for (size_t k = 0; k < p.nseq; k++) {
    lua_pushinteger(L, g->jobs[p.seq[p.nseq - 1 - k]].id);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  lua_setfield(L, -2, "jobs");
  lua_createtable(L, (int)nc, 0);
  for (size_t k = 0; k < nc; k++) {
    lua_createtable(L, 0, 2);
    lua_rawgeti(L, 3, (lua_Integer)cats[k] + 1);
    lua_setfield(L, -2, "name");
    push_num(L, p.run_by[cats[k]]);
    lua_setfield(L, -2, "run_us");
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  lua_setfield(L, -2, "by_category");
  if (session.v > 0) {
    lua_pushnumber(L, p.duration.v / session.v);
    lua_setfield(L, -2, "share");
    lua_pushnumber(L, g->total_run.v / session.v);
    lua_setfield(L, -2, "achieved");
  }
  if (floor_.v > 0) {
    lua_pushnumber(L, session.v / floor_.v);
    lua_setfield(L, -2, "bound");
    lua_pushnumber(L, g->total_run.v / floor_.v);
    lua_setfield(L, -2, "parallelism");
  }
  set_num(L, "total_run_us", g->total_run);
  set_num(L, "session_us", session);
  set_num(L, "run_us", p.run);
  set_num(L, "ready_us", p.ready);
  set_num(L, "resume_us", p.resume);
  set_num(L, "copy_us", p.copy);
  set_num(L, "caller_us", p.caller);
  return 1;
}

/* ---- the page's graph part ---- */

enum { C_ID, C_C, C_SO, C_S, C_READY, C_SL, C_ST, C_BY, C_DEPS, C_AW, C_RS, C_SP };

/* ns(v) as an item; 0 when it has no integer representation. */
static int put_ns(lua_State *L, buf *b, num v) {
  long long x;
  if (!ns_of(v, &x))
    return 0;
  put_int(L, b, x);
  return 1;
}

static void free_bufs(graph *g) {
  for (int k = 0; k < NBUF; k++) {
    free(g->b[k].p);
    g->b[k].p = NULL, g->b[k].n = g->b[k].cap = 0;
  }
}

/* The columns (page.lua's graph_data); 0 when a time has no integer ns. */
static int page_columns(lua_State *L, graph *g, const int32_t *catpage, num t0) {
  buf *b = g->b;
  put_int(L, &b[C_SO], 0);
  long long npos = 0;
  for (size_t n = 0; n < g->norder; n++) {
    const gjob *j = &g->jobs[g->order[n]];
    const gslice *sl = &g->sl[j->s0];
    for (uint32_t k = 0; k < j->ns; k++) {
      put_int(L, &b[C_S], sl[k].lane);
      put_int(L, &b[C_S], sl[k].index);
    }
    npos += j->ns;
    put_int(L, &b[C_ID], j->id);
    put_int(L, &b[C_C], j->flags & HAS_CAT ? catpage[j->cat] : -1);
    put_int(L, &b[C_SO], npos);
    if (j->flags & HAS_RL) {
      if (!put_ns(L, &b[C_READY], j->rl))
        return 0;
    } else {
      put_int(L, &b[C_READY], -1);
    }
    if (j->flags & HAS_SUB) {
      put_int(L, &b[C_SL], (long long)g->lane_index[j->sub_lane] - 1);
      if (!put_ns(L, &b[C_ST], sub(g, add(g, j->sub_ts, j->sub_dur), t0)))
        return 0;
      if ((j->flags & HAS_PARENT) && find_job(g, j->sub_parent) >= 0) {
        put_int(L, &b[C_BY], (long long)n);
        put_int(L, &b[C_BY], j->sub_parent);
      }
    } else {
      put_int(L, &b[C_SL], -1);
      put_int(L, &b[C_ST], 0);
    }
    for (uint32_t k = 0; k < j->nd; k++) {
      const gdep *d = &g->dp[j->d0 + k];
      if (d->has && find_job(g, d->job) >= 0) {
        put_int(L, &b[C_DEPS], (long long)n);
        put_int(L, &b[C_DEPS], d->job);
      }
    }
    for (uint32_t a = 0; a < j->na; a++) {
      const gawait *w = &g->aw[j->a0 + a];
      uint32_t k = 0;
      while (k < j->ns && sl[k].ts.v <= w->ts.v)
        k++;
      if (w->has_awaits && find_job(g, w->awaits) >= 0 && k < j->ns) {
        put_int(L, &b[C_AW], (long long)n);
        put_int(L, &b[C_AW], w->awaits);
        put_int(L, &b[C_AW], k);
      }
    }
    if (j->nres > 0) {
      num resume = ZERO;
      for (uint32_t r = 0; r < j->nres; r++)
        resume = add(g, resume, g->res[j->w0 + r]);
      put_int(L, &b[C_RS], (long long)n);
      if (!put_ns(L, &b[C_RS], resume))
        return 0;
      put_int(L, &b[C_RS], j->nres);
    }
    if (j->suspended.v > 0) {
      put_int(L, &b[C_SP], (long long)n);
      if (!put_ns(L, &b[C_SP], j->suspended))
        return 0;
    }
  }
  return !g->bail;
}

/* graph:page(model) -> the page's GRAPH JSON, or nil */
static int l_graph_page(lua_State *L) {
  graph *g = check_graph(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  push_cats(L); /* 3, 4 */
  if (g->norder == 0) {
    lua_pushliteral(L, "null");
    return 1;
  }
  num t0;
  lua_getfield(L, 2, "t0"); /* 5 */
  if (!get_num(L, 5, &t0))
    return bail(L);
  int32_t *catpage = scratch(L, (size_t)g->ncats, sizeof *catpage); /* 6 */
  for (int32_t c = 0; c < g->ncats; c++)
    catpage[c] = -1;
  lua_getfield(L, 2, "categories"); /* 7 */
  if (!lua_istable(L, 7))
    return bail(L);
  for (lua_Integer i = 1;; i++) { /* page.lua's cat_index: a name's last index */
    lua_settop(L, 7);
    int t = lua_rawgeti(L, 7, i);
    if (t == LUA_TNIL)
      break;
    if (t != LUA_TTABLE)
      return bail(L);
    lua_getfield(L, -1, "name");
    if (lua_rawget(L, 4) == LUA_TNUMBER)
      catpage[lua_tointeger(L, -1)] = (int32_t)i - 1;
  }
  lua_settop(L, 6);
  path p;
  walk(L, g, &p);
  free_bufs(g);
  if (!page_columns(L, g, catpage, t0)) {
    free_bufs(g);
    return bail(L);
  }
  static const char *const names[] = {"id", "c", "so", "s", "ready", "sl", "st", "by", "deps", "aw", "rs", "sp"};
  luaL_Buffer out;
  buf *pb = &g->b[0]; /* the path's jobs, once the columns are out */
  num v[8] = {p.duration, sub(g, p.t, t0), sub(g, g->jobs[p.last].finish, t0), p.run, p.ready, p.resume, p.copy,
              p.caller};
  long long nsv[8];
  for (int k = 0; k < 8; k++)
    if (!ns_of(v[k], &nsv[k])) {
      free_bufs(g);
      return bail(L);
    }
  if (g->bail) {
    free_bufs(g);
    return bail(L);
  }
  luaL_buffinit(L, &out);
  luaL_addchar(&out, '{');
  for (int k = 0; k < NBUF; k++) {
    if (k)
      luaL_addstring(&out, ",\n");
    luaL_addchar(&out, '"');
    luaL_addstring(&out, names[k]);
    luaL_addstring(&out, "\":[");
    luaL_addlstring(&out, g->b[k].p ? g->b[k].p : "", g->b[k].n);
    luaL_addchar(&out, ']');
  }
  free_bufs(g);
  for (size_t k = 0; k < p.nseq; k++)
    put_int(L, pb, g->jobs[p.seq[p.nseq - 1 - k]].id);
  char text[400];
  num session = g->session, floor_ = sub(g, p.duration, p.ready);
  char share[40] = "null", bound[40] = "null";
  if (session.v > 0)
    number_text((num){p.duration.v / session.v, 0}, share, sizeof share);
  if (floor_.v > 0)
    number_text((num){session.v / floor_.v, 0}, bound, sizeof bound);
  luaL_addstring(&out, ",\n\"path\":{\"jobs\":[");
  luaL_addlstring(&out, pb->p ? pb->p : "", pb->n);
  int len = snprintf(text, sizeof text,
                     "],\"dur\":%lld,\"share\":%s,\"start\":%lld,\"finish\":%lld,\"run\":%lld,\"ready\":%lld,"
                     "\"resume\":%lld,\"copy\":%lld,\"caller\":%lld,\"bound\":%s}}",
                     nsv[0], share, nsv[1], nsv[2], nsv[3], nsv[4], nsv[5], nsv[6], nsv[7], bound);
  luaL_addlstring(&out, text, (size_t)len);
  free_bufs(g);
  luaL_pushresult(&out);
  return 1;
}

void jq_open_graph(lua_State *L) {
  static const luaL_Reg methods[] = {{"count", l_graph_count},
                                     {"latency", l_graph_latency},
                                     {"critical_path", l_graph_critical_path},
                                     {"page", l_graph_page},
                                     {NULL, NULL}};
  if (luaL_newmetatable(L, GRAPH_MT)) {
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_graph_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_job_graph);
  lua_setfield(L, -2, "job_graph");
}
