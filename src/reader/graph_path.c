/*
 * graph_path.c - a job graph's latencies: graph:latency([top]) (the
 * ready, resume, run and suspended time of every job, overall and by
 * category, and the jobs that waited longest for a worker). The critical
 * path is the happens-before graph's (graph:ops(model):critical_path(),
 * ops_path.c).
 *
 * Nearest-rank percentiles of values sorted by reader/sort.h's stable
 * sort (equal values in the order of their jobs' start); jobs ranked by a
 * value then by id (graph.c). Owns: nothing past a call (scratch memory
 * is userdata).
 * Must not: run on the record path. Thread safety: one lua_State per call.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/graph.h"
#include "reader/scratch.h"
#include "reader/sort.h"

/* Stack of a method: 1 the graph, 2 its argument, 3 category names, 4 name -> index. */
enum { S_NAMES = 3 };

/* ---- latency ---- */

typedef struct gvalue { /* a distribution's value */
  num v;
  int32_t cat;
} gvalue;

/* A value copied beside its index, so that the sort reads the values in
 * order and compares them inline (a distribution can hold a million). */
typedef struct vkey {
  num v;
  uint32_t k;
} vkey;

#define VKEY_LESS(ctx, x, y) ((void)(ctx), jq_num_lt((x).v, (y).v))
JQ_SORT_DEFINE(sort_vkeys, vkey, void *, VKEY_LESS)

/* Category a < category b by Lua's string order. */
static int cat_less(lua_State *L, uint32_t a, uint32_t b) {
  lua_rawgeti(L, S_NAMES, (lua_Integer)a + 1);
  lua_rawgeti(L, S_NAMES, (lua_Integer)b + 1);
  int lt = lua_compare(L, -2, -1, LUA_OPLT);
  lua_pop(L, 2);
  return lt;
}

static int name_less(void *L, uint32_t a, uint32_t b) { return cat_less(L, a, b); }

/* The nearest rank of p among n: 1-based, n > 0. */
static size_t rank_of(size_t n, double p) {
  double r = ceil(p * (double)n);
  return r < 1 ? 1 : (size_t)r;
}

/* Sets count, p50_us, p95_us, max_us in the table on top: of the sorted
 * values vals[idx[0 .. n)] (0 each when n is 0). */
static void set_summary(lua_State *L, const gvalue *vals, const uint32_t *idx, size_t n) {
  lua_pushinteger(L, (lua_Integer)n);
  lua_setfield(L, -2, "count");
  jq_num_push(L, n ? vals[idx[rank_of(n, 0.5) - 1]].v : jq_num_int(0));
  lua_setfield(L, -2, "p50_us");
  jq_num_push(L, n ? vals[idx[rank_of(n, 0.95) - 1]].v : jq_num_int(0));
  lua_setfield(L, -2, "p95_us");
  jq_num_push(L, n ? vals[idx[n - 1]].v : jq_num_int(0));
  lua_setfield(L, -2, "max_us");
}

/* Pushes the distribution of vals[0 .. n): { count, p50_us, p95_us,
 * max_us, by_category[i] = { name, count, p50_us, p95_us, max_us } }. */
static void push_distribution(lua_State *L, graph *g, const gvalue *vals, size_t n) {
  int top = lua_gettop(L);
  size_t nc = (size_t)g->ncats;
  uint32_t *idx = jq_graph_scratch(L, 2 * n + 4 * nc, sizeof *idx); /* idx then byc: n each */
  uint32_t *byc = idx + n, *cnt = byc + n, *at = cnt + nc, *names = at + nc, *tmp = names + nc;
  /* the keys, then the sort's second half: malloc'd and freed before any
   * Lua call (the command stops the collector: a userdata would stay) */
  vkey *key = n ? malloc(2 * n * sizeof *key) : NULL;
  if (n && !key)
    jq_nomem(L);
  for (size_t k = 0; k < n; k++)
    key[k].v = vals[k].v, key[k].k = (uint32_t)k;
  sort_vkeys(key, key + n, n, NULL); /* ties in the jobs' order */
  for (size_t k = 0; k < n; k++)
    idx[k] = key[k].k;
  free(key);
  size_t nnames = 0;
  for (size_t k = 0; k < n; k++)
    if (!cnt[vals[k].cat]++)
      names[nnames++] = (uint32_t)vals[k].cat;
  lua_createtable(L, 0, 5);
  set_summary(L, vals, idx, n);
  jq_sort_stable(names, tmp, nnames, name_less, L);
  lua_createtable(L, (int)(nnames < INT32_MAX ? nnames : 0), 0);
  size_t m = 0;
  for (size_t k = 0; k < nnames; k++) { /* each category's values: the sorted list's (a stable sort) */
    at[names[k]] = (uint32_t)m;
    m += (size_t)cnt[names[k]];
  }
  for (size_t k = 0; k < n; k++)
    byc[at[vals[idx[k]].cat]++] = idx[k];
  m = 0;
  for (size_t k = 0; k < nnames; k++) {
    size_t c = (size_t)cnt[names[k]];
    lua_createtable(L, 0, 5);
    set_summary(L, vals, nnames == 1 ? idx : byc + m, c);
    lua_rawgeti(L, S_NAMES, (lua_Integer)names[k] + 1);
    lua_setfield(L, -2, "name");
    lua_rawseti(L, -2, (lua_Integer)k + 1);
    m += c;
  }
  lua_setfield(L, -2, "by_category");
  lua_replace(L, top + 1);
  lua_settop(L, top + 1);
}

/* The values of distribution d (0 ready, 1 resume, 2 run, 3 suspended)
 * in vals, jobs in order of start: how many. */
static size_t values_of(const graph *g, int d, gvalue *vals) {
  size_t m = 0;
  for (size_t k = 0; k < g->norder; k++) {
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
  return m;
}

/* Pushes top_ready: the `top` jobs that waited longest (latency most
 * first, equal latencies by id). */
static void push_top_ready(lua_State *L, graph *g, lua_Number top) {
  size_t n = g->norder;
  int32_t *waited = jq_graph_scratch(L, n, sizeof *waited);
  size_t nw = 0;
  for (size_t k = 0; k < n; k++)
    if (g->jobs[g->order[k]].flags & HAS_RL)
      waited[nw++] = g->order[k];
  jq_graph_sort_jobs(L, g, waited, nw, offsetof(gjob, rl));
  lua_createtable(L, 0, 0);
  lua_Integer i = 0;
  size_t first = nw; /* waited[first .. last], 1-based: one latency, in id order */
  while ((lua_Number)i < top && first >= 1) {
    size_t last = first;
    while (first > 1 && jq_num_eq(g->jobs[waited[first - 2]].rl, g->jobs[waited[last - 1]].rl))
      first--;
    for (size_t k = first; k <= last && (lua_Number)i < top; k++) {
      const gjob *j = &g->jobs[waited[k - 1]];
      lua_createtable(L, 0, 5);
      jq_graph_push_id(L, g, waited[k - 1]);
      lua_setfield(L, -2, "job");
      lua_rawgeti(L, S_NAMES, (lua_Integer)j->cat + 1);
      lua_setfield(L, -2, "category");
      jq_num_push(L, j->rl);
      lua_setfield(L, -2, "latency_us");
      jq_num_push(L, j->ready);
      lua_setfield(L, -2, "ready_us");
      jq_num_push(L, j->start);
      lua_setfield(L, -2, "start_us");
      lua_rawseti(L, -2, ++i);
    }
    first--;
  }
  lua_remove(L, -2);
}

/* graph:latency([top]) -> { ready, resume, run, suspended = distribution,
 * top_ready[i] = { job, category, latency_us, ready_us, start_us } } */
int jq_graph_latency(lua_State *L) {
  graph *g = jq_graph_check(L);
  lua_Number top = luaL_optnumber(L, 2, 10);
  jq_graph_push_cats(L);    /* 3, 4 */
  lua_createtable(L, 0, 5); /* 5: the result */
  gvalue *vals = jq_graph_scratch(L, g->nwk > g->norder ? g->nwk : g->norder, sizeof *vals); /* 6 */
  static const char *const names[] = {"ready", "resume", "run", "suspended"};
  for (int d = 0; d < 4; d++) {
    push_distribution(L, g, vals, values_of(g, d, vals));
    lua_setfield(L, 5, names[d]);
  }
  push_top_ready(L, g, top);
  lua_setfield(L, 5, "top_ready");
  lua_settop(L, 5);
  return 1;
}
