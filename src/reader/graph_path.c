/*
 * graph_path.c - a job graph's figures: graph:latency([top]) (the ready,
 * resume, run and suspended time of every job, overall and by category,
 * and the jobs that waited longest for a worker) and graph:critical_path()
 * (from the job that finished last, back through what held each step up
 * longest, to the first job; docs/cli.md explains it).
 *
 * Nearest-rank percentiles of values sorted by reader/sort.h's stable
 * sort (equal values in the order of their jobs' start); jobs ranked by a
 * value then by id (graph.c). The walk is a loop, each step going back in time: no
 * recursion. Owns: nothing past a call (scratch memory is userdata).
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

/* ---- the critical path ---- */

static void part(num *p, num v) {
  if (jq_num_lt(jq_num_int(0), v))
    *p = jq_num_add(*p, v);
}

/* The last job in g->ends that finished at or before t, or -1. */
static int32_t finished_by(const graph *g, num t) {
  size_t lo = 1, hi = g->norder;
  int32_t found = -1;
  while (lo <= hi) {
    size_t mid = (lo + hi) / 2;
    if (jq_num_le(g->jobs[g->ends[mid - 1]].finish, t)) {
      found = g->ends[mid - 1];
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found;
}

/* Job k finished at or before t (and is not j). */
static int done_by(const graph *g, int32_t k, int32_t j, num t) {
  return jq_graph_finished(g, k) && k != j && jq_num_le(g->jobs[k].finish, t);
}

/* A step back from a slice after a suspension (s, the k-th of job *j,
 * 1-based, k > 1): to the job it awaited, or over the gap. */
static void step_resume(const graph *g, path *p, int32_t *j, num *t, const gslice *sl, int64_t k) {
  const gslice *s = &sl[k - 1];
  num prev_stop = jq_num_add(sl[k - 2].ts, sl[k - 2].dur);
  int32_t a = s->await >= 0 ? g->aw[s->await].awaits : -1;
  if (done_by(g, a, *j, *t)) {
    part(&p->resume, jq_num_sub(*t, g->jobs[a].finish));
    *j = a, *t = g->jobs[a].finish;
  } else { /* unknown job, or a cooperative yield */
    part(s->await >= 0 ? &p->resume : &p->ready, jq_num_sub(*t, prev_stop));
    *t = num_min(*t, prev_stop);
  }
}

/* A step back from a job's first slice: to what made it start (its after
 * dependency, the job that submitted it, or the caller's last wait). */
static void step_start(const graph *g, path *p, int32_t *j, num *t) {
  const gjob *jj = &g->jobs[*j];
  if ((jj->flags & HAS_CIN) && jq_num_lt(jj->cin_ts, *t)) {
    part(&p->copy, jq_num_sub(*t, jj->cin_ts));
    *t = jj->cin_ts;
  }
  int32_t d = jj->flags & HAS_READY_DEP ? jj->ready_dep : -1;
  if (done_by(g, d, *j, *t)) {
    part(&p->ready, jq_num_sub(*t, g->jobs[d].finish));
    *j = d, *t = g->jobs[d].finish;
    return;
  }
  if (!(jj->flags & HAS_SUB)) {
    *j = -1;
    return;
  }
  num sub_end = jq_num_add(jj->sub_ts, jj->sub_dur);
  part(&p->ready, jq_num_sub(*t, sub_end));
  part(&p->copy, jq_num_sub(num_min(*t, sub_end), jj->sub_ts)); /* the submit: its arguments encoded */
  int32_t parent = jj->flags & HAS_PARENT ? jj->parent : -1;
  *t = num_min(*t, jj->sub_ts);
  if (jq_graph_finished(g, parent) && parent != *j) {
    *j = parent;
    return;
  }
  int32_t by = -1; /* submitted by the caller (or another thread) */
  if (jj->sub_wait >= 0) {
    const gwait *w = &g->wt[jj->sub_wait];
    by = w->job >= 0 ? w->job : finished_by(g, w->stop);
  }
  if (done_by(g, by, *j, *t)) {
    part(&p->caller, jq_num_sub(*t, g->jobs[by].finish)); /* the caller between a job's end and its next submit */
    *j = by, *t = g->jobs[by].finish;
  } else {
    *j = -1;
  }
}

/* The walk (g->norder > 0); its arrays are scratch userdata left on the stack. */
void jq_graph_walk(lua_State *L, graph *g, path *p) {
  memset(p, 0, sizeof *p);
  p->run = p->ready = p->resume = p->copy = p->caller = jq_num_int(0);
  uint64_t steps = 0, limit = 16;
  for (size_t k = 0; k < g->norder; k++)
    limit += g->jobs[g->order[k]].ns + 2;
  p->run_by = jq_graph_scratch(L, (size_t)g->ncats, sizeof *p->run_by);
  p->has_run_by = jq_graph_scratch(L, (size_t)g->ncats, 1);
  p->seq = jq_graph_scratch(L, (size_t)limit, sizeof *p->seq);
  int32_t *cursor = jq_graph_scratch(L, g->njobs, sizeof *cursor); /* 1 + the index of a job's next slice; 0 unset */
  int32_t last = g->ends[g->norder - 1], j = last;
  num t = g->jobs[last].finish;
  p->last = last;
  while (j >= 0 && steps < limit) {
    steps++;
    const gjob *jj = &g->jobs[j];
    if (p->nseq == 0 || p->seq[p->nseq - 1] != j)
      p->seq[p->nseq++] = j;
    const gslice *sl = &g->sl[jj->s0];
    int64_t k = cursor[j] ? cursor[j] - 1 : (int64_t)jj->ns; /* 1-based */
    while (k >= 1 && jq_num_lt(t, sl[k - 1].ts))
      k--;
    if (k < 1)
      break; /* inconsistent times (a hand-made file): stop here */
    const gslice *s = &sl[k - 1];
    num stop = jq_num_add(s->ts, s->dur);
    if (jq_num_lt(stop, t))
      part(&p->copy, jq_num_sub(t, stop)); /* its copy out, after its last slice */
    num ran = jq_num_sub(num_min(t, stop), s->ts);
    if (jq_num_lt(jq_num_int(0), ran)) {
      p->run = jq_num_add(p->run, ran);
      p->run_by[s->cat] = jq_num_add(p->has_run_by[s->cat] ? p->run_by[s->cat] : jq_num_int(0), ran);
      p->has_run_by[s->cat] = 1;
    }
    t = s->ts;
    cursor[j] = (int32_t)k; /* k - 1, stored + 1 */
    if (k > 1)
      step_resume(g, p, &j, &t, sl, k);
    else
      step_start(g, p, &j, &t);
  }
  p->t = t;
  p->duration = jq_num_sub(g->jobs[last].finish, t);
}

static void set_num(lua_State *L, const char *field, num v) {
  jq_num_push(L, v);
  lua_setfield(L, -2, field);
}

typedef struct run_order {
  lua_State *L;
  const path *p;
} run_order;

/* Category a before b on the path: more run time, then by name. */
static int run_less(void *ctx, uint32_t a, uint32_t b) {
  const run_order *o = ctx;
  num ra = o->p->run_by[a], rb = o->p->run_by[b];
  return jq_num_eq(ra, rb) ? cat_less(o->L, a, b) : jq_num_lt(rb, ra);
}

/* The categories the path ran, by run time (most first), then name, in
 * cats[0 ..) (room for 2 * ncats): how many. */
static size_t path_cats(lua_State *L, const graph *g, const path *p, uint32_t *cats) {
  size_t nc = 0;
  for (int32_t c = 0; c < g->ncats; c++)
    if (p->has_run_by[c])
      cats[nc++] = (uint32_t)c;
  run_order o = {L, p};
  jq_sort_stable(cats, cats + nc, nc, run_less, &o);
  return nc;
}

static void set_ratio(lua_State *L, const char *field, num a, num b) {
  lua_pushnumber(L, jq_num_tof(a) / jq_num_tof(b));
  lua_setfield(L, -2, field);
}

/* graph:critical_path() -> { duration_us, floor_us, start_us, finish_us,
 * jobs[], by_category[i] = { name, run_us }, share, achieved, bound,
 * parallelism, total_run_us, session_us, run_us, ready_us, resume_us,
 * copy_us, caller_us }, or nothing without jobs */
int jq_graph_critical_path(lua_State *L) {
  graph *g = jq_graph_check(L);
  jq_graph_push_cats(L); /* 3, 4 */
  if (g->norder == 0)
    return 0;
  path p;
  jq_graph_walk(L, g, &p);
  uint32_t *cats = jq_graph_scratch(L, 2 * (size_t)g->ncats, sizeof *cats);
  size_t nc = path_cats(L, g, &p, cats);
  /* The path with a worker always free: its ready latency is what more
   * workers take away, so the bound and the parallelism use this. */
  num session = g->session, floor_ = jq_num_sub(p.duration, p.ready);
  lua_createtable(L, 0, 17);
  set_num(L, "duration_us", p.duration);
  set_num(L, "floor_us", floor_);
  set_num(L, "start_us", p.t);
  set_num(L, "finish_us", g->jobs[p.last].finish);
  lua_createtable(L, (int)(p.nseq < INT32_MAX ? p.nseq : 0), 0);
  for (size_t k = 0; k < p.nseq; k++) {
    jq_graph_push_id(L, g, p.seq[p.nseq - 1 - k]);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  lua_setfield(L, -2, "jobs");
  lua_createtable(L, (int)nc, 0);
  for (size_t k = 0; k < nc; k++) {
    lua_createtable(L, 0, 2);
    lua_rawgeti(L, S_NAMES, (lua_Integer)cats[k] + 1);
    lua_setfield(L, -2, "name");
    set_num(L, "run_us", p.run_by[cats[k]]);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  lua_setfield(L, -2, "by_category");
  if (jq_num_lt(jq_num_int(0), session)) {
    set_ratio(L, "share", p.duration, session);
    set_ratio(L, "achieved", g->total_run, session);
  }
  if (jq_num_lt(jq_num_int(0), floor_)) {
    set_ratio(L, "bound", session, floor_);
    set_ratio(L, "parallelism", g->total_run, floor_);
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
