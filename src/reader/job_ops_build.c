/*
 * job_ops_build.c - graph:ops(model): a trace's happens-before graph
 * (job_ops.h) built from a loaded model and its job graph (graph.c);
 * ops:dump(), the graph as the plain table reader.job_ops takes.
 *
 * The executors: every job with a slice or a copy (in order of start, as
 * the job graph orders them, then the jobs with copies only), then one
 * thread per lane that is no worker (laneInfo's role, else the lane's name
 * as jobque_profile.stats reads it), the caller marked.
 *
 * One pass over each lane's slices (kind, job, ts, dur, cat and name
 * columns) makes items, each owned by an executor: a job's slices (run),
 * copies in and out; inside a job's slice on that lane (the innermost one
 * that holds it), a submit, a copy result or a wait span is that job's;
 * outside job slices on a lane that is no worker, its thread's, and so
 * are the lane's span pieces outside jobs and, for each job item there (a
 * queue without workers), a "job" item. Then the edges: model.edge_* (the
 * recorded edge events: a wait's or wait_all's at the waiter, a job's
 * `after` dependencies first in its ops); in files without them, JO_WAIT
 * points derived from what they have: an await at the resumed slice's
 * start, a wait span at its end (`wait all`: every job, queue 0), a
 * `dependency done` at the dependant's start. Between two slices of a job,
 * a suspension (the job it awaited, from the await, else -1: a yield), on
 * the lane of the slice before it (its worker). A wait_all's block names
 * the queue its edge names (the next op but for the waiter's own time: a
 * thread's JO_OWN, a job's JO_RUN). A job no executor stands for (it never ran in
 * the session: it ended before, or was cancelled) is -1 where an op names
 * it, and an edge or await on it is left out.
 *
 * The items are sorted (executor; an `after` point first; start; longer
 * first) and each executor's cut into ops, innermost wins: a slice split
 * where a submit, copy result, wait or edge lies in it, a thread's own
 * time (JO_OWN) from 0 (the caller; another thread from its first slice
 * or edge) to the session's stop (another thread: its last slice's end or
 * edge) split where its spans begin and end. Items that overlap without nesting are clipped
 * to what holds them. Times: nanoseconds from model.t0.
 * g->partial: events were lost, a lane dropped some, or spans were left
 * unclosed. Linear in the items but for the sort of each executor's
 * items; no recursion.
 * Owns: nothing past a call (its scratch is a userdata). Must not: run on
 * the record path. Thread safety: one lua_State per call.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/columns.h"
#include "reader/graph.h"
#include "reader/job_ops.h"
#include "reader/scratch.h"
#include "reader/sort.h"

/* The stack of graph:ops: the job graph, the model, the new graph, the
 * category index (name -> index), the scratch, the new graph's names. */
enum { S_GRAPH = 1, S_MODEL, S_OPS, S_CAT_INDEX, S_SCRATCH, S_CATS, S_LANES, S_IDS, S_BASE = S_IDS };

/* The scratch's buffers. */
enum { B_ITEMS, B_LANES, B_EXEC_OF, B_STACK, B_N };

enum { ROLE_WORKER, ROLE_CALLER, ROLE_OTHER };

typedef struct bitem {
  int64_t t0, t1;
  int32_t owner, lane, cat, job, queue;
  uint8_t kind; /* JO_* */
  uint8_t lead; /* an `after` point: before its job's other ops */
} bitem;

typedef struct blane {
  int32_t role, queue, thread; /* thread: its executor, -1 a worker lane */
  int64_t first, last;         /* its slices' first start and last end (ns), its edges' too */
  int has;                     /* it has a slice */
} blane;

typedef struct bstate {
  lua_State *L;
  graph *gr;
  jo_graph *g;
  jq_scratch *sc;
  blane *lanes;
  int32_t *exec_of; /* a job graph's job -> its executor, -1 */
  jq_num origin;    /* model.t0, us */
  int has_edges;
  int32_t last_job;  /* the job col_exec found last by an integer id (an index), -1 */
  const void *cat_p[64];
  int32_t cat_k[64];
} bstate;

/* ---- small things ---- */

/* us * 1000 as int64 ns, or raises: an integer exactly, a float rounded. */
static int64_t ns_of_us(bstate *s, jq_num us, const char *what) {
  if (us.t == JQ_NUM_INT) {
    int64_t x;
    if (__builtin_mul_overflow((int64_t)us.v.i, (int64_t)1000, &x))
      luaL_error(s->L, "graph:ops: %s is out of range", what);
    return x;
  }
  double x = jq_num_tof(us) * 1000.0;
  if (!(x > -9e18 && x < 9e18))
    luaL_error(s->L, "graph:ops: %s is out of range", what);
  return (int64_t)llround(x);
}

/* A model time (us) as ns from the origin: integers subtracted as
 * integers (a time beyond 2^53 keeps its last digit), floats as floats. */
static int64_t ns_at(bstate *s, jq_num us) {
  jq_num d = jq_num_sub(us, s->origin);
  if (us.t == JQ_NUM_INT && s->origin.t == JQ_NUM_INT &&
      __builtin_sub_overflow((int64_t)us.v.i, (int64_t)s->origin.v.i, &(int64_t){0}))
    luaL_error(s->L, "graph:ops: a time is out of range");
  return ns_of_us(s, d, "a time");
}

static int64_t ns_dur(bstate *s, jq_num us) { return ns_of_us(s, us, "a duration"); }

/* t + d, raising when it leaves int64's range (a hand-made model's times). */
static int64_t ns_add(bstate *s, int64_t t, int64_t d) {
  if ((d > 0 && t > INT64_MAX - d) || (d < 0 && t < INT64_MIN - d))
    luaL_error(s->L, "graph:ops: a time is out of range");
  return t + d;
}

static bitem *new_item(bstate *s, uint8_t kind, int32_t owner, int32_t lane, int64_t t0, int64_t t1) {
  jq_vec *v = &s->sc->b[B_ITEMS];
  if (v->n / sizeof(bitem) >= UINT32_MAX / 2)
    jq_nomem(s->L);
  bitem *it = jq_ops_grow(s->L, v, sizeof *it);
  it->kind = kind, it->owner = owner, it->lane = lane, it->t0 = t0, it->t1 = t1 < t0 ? t0 : t1;
  it->cat = it->job = -1;
  return it;
}

/* The index of the category name at the top (popped) in the new graph's
 * names, made when new. */
static int32_t cat_index(bstate *s) {
  lua_State *L = s->L;
  lua_pushvalue(L, -1);
  if (lua_rawget(L, S_CAT_INDEX) == LUA_TNUMBER) {
    int32_t k = (int32_t)lua_tointeger(L, -1);
    lua_pop(L, 2);
    return k;
  }
  lua_pop(L, 1);
  if (s->g->ncats >= INT32_MAX / 2)
    luaL_error(L, "graph:ops: too many categories");
  int32_t k = s->g->ncats++;
  lua_pushvalue(L, -1);
  lua_rawseti(L, S_CATS, (lua_Integer)k + 1);
  lua_pushinteger(L, k);
  lua_rawset(L, S_CAT_INDEX);
  return k;
}

/* Item i of a cat column as a category index (-1: no string), through the
 * address of its bytes first. */
static int32_t col_cat(bstate *s, const jq_col *c, lua_Integer i) {
  size_t len;
  const char *p = jq_col_str(s->L, c, i, &len);
  if (!p)
    return -1;
  size_t h = ((uintptr_t)p >> 4) & 63;
  if (s->cat_p[h] == p)
    return s->cat_k[h];
  jq_col_push(s->L, c, i);
  int32_t k = cat_index(s);
  s->cat_p[h] = p, s->cat_k[h] = k;
  return k;
}

/* The executor of the job whose id is item i of a column (-1: none). */
static int32_t col_exec(bstate *s, const jq_col *c, lua_Integer i) {
  const jq_column *n = c->c;
  int32_t j;
  if (n && i >= 1 && (lua_Unsigned)i <= n->n && jq_cell_tag(n, (size_t)i - 1) == JQ_C_INT) {
    lua_Integer id = (lua_Integer)jq_cell_int(n, (size_t)i - 1);
    const graph *gr = s->gr;
    int32_t k = s->last_job + 1; /* the job after the last one found, then the hash */
    if (k >= 1 && (size_t)k < gr->njobs && !gr->jobs[k].other && gr->jobs[k].id == id)
      j = k;
    else if (k >= 1 && !gr->jobs[k - 1].other && gr->jobs[k - 1].id == id)
      j = k - 1;
    else
      j = jq_graph_find_int(gr, id);
    s->last_job = j >= 0 ? j : s->last_job;
  } else {
    jq_col_push(s->L, c, i);
    j = jq_graph_find(s->L, S_GRAPH, s->gr, -1);
    lua_pop(s->L, 1);
  }
  return j >= 0 ? s->exec_of[j] : -1;
}

/* ---- the lanes: names, roles, queues ---- */

/* name -> role from jobqueProfile's laneInfo (or the older lanes list),
 * the first entry of a name with a role deciding: pushed. */
static void push_roles(lua_State *L) {
  lua_newtable(L);
  int roles = lua_gettop(L);
  if (lua_getfield(L, S_MODEL, "meta") != LUA_TTABLE)
    return lua_pop(L, 1);
  static const char *const keys[] = {"laneInfo", "lanes"};
  for (int k = 0; k < 2; k++) {
    if (lua_getfield(L, -1, keys[k]) == LUA_TTABLE) {
      for (lua_Integer i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; i++) {
        if (lua_istable(L, -1) && lua_getfield(L, -1, "name") == LUA_TSTRING &&
            lua_getfield(L, -2, "role") == LUA_TSTRING) {
          const char *r = lua_tostring(L, -1);
          int known = !strcmp(r, "worker") || !strcmp(r, "caller") || !strcmp(r, "other");
          lua_pushvalue(L, -2);
          if (known && lua_rawget(L, roles) == LUA_TNIL) {
            lua_pop(L, 1);
            lua_pushvalue(L, -2);
            lua_pushvalue(L, -2);
            lua_rawset(L, roles);
          } else {
            lua_pop(L, 1);
          }
        }
        lua_settop(L, roles + 2);
      }
    }
    lua_settop(L, roles + 1);
  }
  lua_pop(L, 1);
}

/* A lane's role by its name, as jobque_profile.stats' lane_role reads it:
 * "caller" or "caller N", "<prefix> N" a worker (but "thread N"). */
static int role_by_name(const char *name, size_t len) {
  if (!name)
    return ROLE_OTHER;
  size_t d = len;
  while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
    d--;
  int numbered = d < len && d >= 2 && name[d - 1] == ' ';
  if ((len == 6 && !memcmp(name, "caller", 6)) || (numbered && d == 7 && !memcmp(name, "caller ", 7)))
    return ROLE_CALLER;
  if (!numbered || (d == 7 && !memcmp(name, "thread ", 7)))
    return ROLE_OTHER;
  for (size_t k = 0; k + 1 < d; k++)
    if ((unsigned char)name[k] < 32 || name[k] == 127)
      return ROLE_OTHER;
  return ROLE_WORKER;
}

/* A queue number named by an edge: queue_workers covers it (0 workers
 * when no worker lane is its). */
static void note_queue(bstate *s, int32_t q) {
  jo_graph *g = s->g;
  while (q > 0 && q <= 65536 && g->nqueues < q) {
    jq_ops_grow(s->L, &g->mem[JM_QW], sizeof(int32_t));
    g->nqueues++;
    g->queue_workers = (int32_t *)g->mem[JM_QW].p;
  }
}

/* The lanes' names (S_LANES), roles and queues; each queue's worker count. */
static void read_lanes(bstate *s) {
  lua_State *L = s->L;
  push_roles(L);
  int roles = lua_gettop(L);
  if (lua_getfield(L, S_MODEL, "lanes") != LUA_TTABLE)
    luaL_error(L, "graph:ops: model.lanes is not a table");
  int lanes = lua_gettop(L), any_queue = 0;
  for (lua_Integer li = 1; lua_rawgeti(L, lanes, li) == LUA_TTABLE; li++) {
    if (li > INT32_MAX / 2)
      luaL_error(L, "graph:ops: too many lanes");
    blane *b = jq_ops_grow(L, &s->sc->b[B_LANES], sizeof *b);
    b->thread = -1;
    size_t len = 0;
    const char *name = lua_rawget(L, (lua_pushliteral(L, "name"), -2)) == LUA_TSTRING ? lua_tolstring(L, -1, &len)
                                                                                     : NULL;
    lua_pushvalue(L, -1);
    lua_rawseti(L, S_LANES, li);
    lua_pushvalue(L, -1);
    if (name && lua_rawget(L, roles) == LUA_TSTRING) {
      const char *r = lua_tostring(L, -1);
      b->role = r[0] == 'w' ? ROLE_WORKER : r[0] == 'c' ? ROLE_CALLER : ROLE_OTHER;
    } else {
      b->role = role_by_name(name, len);
    }
    lua_pop(L, 2);
    lua_pushliteral(L, "queue");
    if (lua_rawget(L, -2) == LUA_TNUMBER && lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1 &&
        lua_tointeger(L, -1) <= 65536)
      b->queue = (int32_t)lua_tointeger(L, -1), any_queue = 1;
    lua_pop(L, 2);
    s->g->nlanes = (int32_t)li;
  }
  s->lanes = (blane *)s->sc->b[B_LANES].p;
  for (int32_t l = 0; l < s->g->nlanes; l++) {
    blane *b = &s->lanes[l];
    if (b->role != ROLE_WORKER)
      continue;
    if (!any_queue || b->queue == 0)
      b->queue = 1;
    note_queue(s, b->queue);
    s->g->queue_workers[b->queue - 1]++;
  }
  lua_settop(L, S_BASE);
}


/* ---- the executors ---- */

/* A lane of the job graph's as one of the model's (-1: the graph was
 * built from a model with fewer lanes). */
static int32_t lane_ok(const bstate *s, int32_t l) { return l >= 0 && l < s->g->nlanes ? l : -1; }

static void add_job_exec(bstate *s, int32_t k) {
  lua_State *L = s->L;
  const gjob *j = &s->gr->jobs[k];
  int32_t x = (int32_t)s->g->nex;
  jo_exec *e = jq_ops_push_exec(L, s->g);
  e->is_job = 1;
  s->exec_of[k] = x;
  jq_graph_push_id(L, s->gr, k);
  lua_rawseti(L, S_IDS, (lua_Integer)x + 1);
  if (j->flags & HAS_CAT) {
    lua_getiuservalue(L, S_GRAPH, GU_NAMES);
    lua_rawgeti(L, -1, (lua_Integer)j->cat + 1);
    e->cat = lua_isstring(L, -1) ? cat_index(s) : (lua_pop(L, 1), -1);
    lua_pop(L, 1);
  }
  if (j->flags & HAS_READY)
    e->ready = ns_at(s, j->ready);
  if (j->ns)
    e->lane = lane_ok(s, s->gr->sl[j->s0].lane);
}

/* Jobs with a slice (by start), jobs with copies only, then the threads. */
static void make_execs(bstate *s) {
  graph *gr = s->gr;
  s->exec_of = jq_scratch_room(s->L, &s->sc->b[B_EXEC_OF], gr->njobs ? gr->njobs : 1, sizeof *s->exec_of);
  for (size_t k = 0; k < gr->njobs; k++)
    s->exec_of[k] = -1;
  for (size_t i = 0; i < gr->norder; i++)
    add_job_exec(s, gr->order[i]);
  for (size_t k = 0; k < gr->njobs; k++)
    if (!gr->jobs[k].ns && (gr->jobs[k].flags & (HAS_CIN | HAS_COUT)))
      add_job_exec(s, (int32_t)k);
  for (int32_t l = 0; l < s->g->nlanes; l++) {
    blane *b = &s->lanes[l];
    if (b->role == ROLE_WORKER)
      continue;
    b->thread = (int32_t)s->g->nex;
    jo_exec *e = jq_ops_push_exec(s->L, s->g);
    e->lane = l;
    if (b->role == ROLE_CALLER && s->g->caller < 0)
      s->g->caller = b->thread;
  }
}

/* ---- the lanes' items ---- */

typedef struct lane_cols {
  jq_col kind, job, ts, dur, cat, sname;
} lane_cols;

typedef struct open_job {
  int64_t t1;
  int32_t exec;
} open_job;

/* Whether item i of a column is the string s. */
static int col_is(lua_State *L, const jq_col *c, lua_Integer i, const char *str) {
  size_t n, len = strlen(str);
  const char *p = jq_col_str(L, c, i, &n);
  return p && n == len && !memcmp(p, str, len);
}

enum { LK_JOB, LK_COPY, LK_SUBMIT, LK_WAIT, LK_SPAN };

static int lane_kind(lua_State *L, const jq_col *c, lua_Integer i) {
  size_t n;
  const char *p = jq_col_str(L, c, i, &n);
  if (!p)
    return -2; /* no kind: not a row (a lane's n past its columns) */
  static const char *const names[] = {"job", "copy", "submit", "wait", "span"};
  for (int k = 0; k < 5; k++)
    if (strlen(names[k]) == n && !memcmp(p, names[k], n))
      return k;
  return -1;
}

/* A job's own item on lane l (a slice, its copy in or out): its own, and
 * its thread's "job" item when l is no worker's and no job slice holds it. */
static void job_item(bstate *s, uint8_t kind, int32_t x, int32_t l, int64_t t0, int64_t t1, int32_t cat, int held) {
  bitem *it = new_item(s, kind, x, l, t0, t1);
  it->cat = cat;
  jo_exec *e = &s->g->ex[x];
  if (e->lane < 0) /* a job with copies only */
    e->lane = l;
  if (s->lanes[l].thread >= 0 && !held) {
    it = new_item(s, JO_JOB, s->lanes[l].thread, l, t0, t1);
    it->job = x;
  }
}

/* Item i of lane l (its columns c), t0 .. t1; `in` the job slice holding it (-1). */
static void lane_item(bstate *s, const lane_cols *c, int32_t l, lua_Integer i, int kind, int64_t t0, int64_t t1,
                      int32_t in) {
  lua_State *L = s->L;
  int32_t owner = in >= 0 ? in : s->lanes[l].thread;
  if (kind == LK_JOB || (kind == LK_COPY && !col_is(L, &c->sname, i, "copy result"))) {
    int32_t x = col_exec(s, &c->job, i);
    if (x >= 0)
      job_item(s, kind == LK_JOB ? JO_RUN : col_is(L, &c->sname, i, "copy in") ? JO_COPY_IN : JO_COPY_OUT, x, l,
               t0, t1, col_cat(s, &c->cat, i), in >= 0);
    return;
  }
  if (kind == LK_SPAN) {
    int t = jq_col_push(L, &c->job, i);
    lua_pop(L, 1);
    if (in < 0 && owner >= 0 && (t == LUA_TNIL || t == LUA_TBOOLEAN))
      new_item(s, JO_OWN, owner, l, t0, t1)->cat = col_cat(s, &c->cat, i);
    return;
  }
  if (owner < 0)
    return;
  int32_t x = col_exec(s, &c->job, i);
  uint8_t op = kind == LK_SUBMIT ? JO_SUBMIT : kind == LK_WAIT ? JO_BLOCK : JO_COPY_RESULT;
  bitem *it = new_item(s, op, owner, l, t0, t1);
  it->job = x;
  if (op == JO_COPY_RESULT)
    it->cat = col_cat(s, &c->cat, i);
  if (op != JO_BLOCK || s->has_edges)
    return;
  int all = col_is(L, &c->sname, i, "wait all");
  if (all || x >= 0) { /* no edge events: the wait's end is its edge */
    it = new_item(s, JO_WAIT, owner, l, t1, t1);
    it->job = all ? -1 : x;
  }
}

/* Lane l's slices into items (its table at idx). */
static void walk_lane(bstate *s, int idx, int32_t l) {
  lua_State *L = s->L;
  lane_cols c;
  jq_col *cols[] = {&c.kind, &c.job, &c.ts, &c.dur, &c.cat, &c.sname};
  const char *f = "kind\0job\0ts\0dur\0cat\0sname\0";
  lua_getfield(L, idx, "n");
  jq_num nn = jq_num_at(L, -1);
  lua_Integer n = nn.t == JQ_NUM_NIL ? 0 : jq_num_loop_count(nn); /* as job_graph counts it */
  lua_pop(L, 1);
  if (n <= 0)
    return;
  for (int k = 0; k < 6; k++, f += strlen(f) + 1)
    if (!jq_col_field(L, idx, f, cols[k]))
      luaL_error(L, "graph:ops: lane %d's %s is not a column", (int)l + 1, f);
  jq_vec *stack = &s->sc->b[B_STACK];
  stack->n = 0;
  blane *b = &s->lanes[l];
  for (lua_Integer i = 1; i <= n; i++) {
    int kind = lane_kind(L, &c.kind, i);
    if (kind == -2)
      continue; /* as job_graph reads it: a row without a kind is no row */
    jq_num ts = jq_col_num(L, &c.ts, i), dur = jq_col_num(L, &c.dur, i);
    if (ts.t == JQ_NUM_NIL || dur.t == JQ_NUM_NIL)
      luaL_error(L, "graph:ops: a slice's time is not a number");
    int64_t t0 = ns_at(s, ts), t1 = ns_add(s, t0, ns_dur(s, dur));
    if (!b->has || t0 < b->first)
      b->first = t0;
    if (!b->has || t1 > b->last)
      b->last = t1;
    b->has = 1;
    if (kind < 0)
      continue;
    open_job *top = (open_job *)stack->p + stack->n / sizeof *top;
    while (stack->n && top[-1].t1 < t1)
      stack->n -= sizeof *top, top--;
    lane_item(s, &c, l, i, kind, t0, t1, stack->n ? top[-1].exec : -1);
    if (kind == LK_JOB) {
      int32_t x = col_exec(s, &c.job, i);
      if (x >= 0) {
        open_job o = {t1, x};
        jq_scratch_add(L, stack, &o, sizeof o);
      }
    }
  }
  lua_pop(L, 6);
}

static void walk_lanes(bstate *s) {
  lua_State *L = s->L;
  lua_getfield(L, S_MODEL, "lanes");
  for (int32_t l = 0; l < s->g->nlanes; l++) {
    lua_rawgeti(L, -1, (lua_Integer)l + 1);
    walk_lane(s, lua_gettop(L), l);
    lua_pop(L, 1);
  }
  lua_settop(L, S_BASE);
}

/* ---- the edges ---- */

/* Whether the model has edge events (model.edge_ts with an item). */
static int has_edges(lua_State *L) {
  jq_col c;
  if (!jq_col_field(L, S_MODEL, "edge_ts", &c))
    return 0;
  lua_pop(L, 1);
  return c.n > 0;
}

/* The recorded edges: model.edge_ts, edge_lane, edge_kind, edge_job, edge_on, edge_queue. */
static void read_edges(bstate *s) {
  lua_State *L = s->L;
  jq_col c[6];
  const char *f = "edge_ts\0edge_lane\0edge_kind\0edge_job\0edge_on\0edge_queue\0";
  for (int k = 0; k < 6; k++, f += strlen(f) + 1)
    if (!jq_col_field(L, S_MODEL, f, &c[k]))
      luaL_error(L, "graph:ops: model.%s is not a column", f);
  for (lua_Integer i = 1; i <= c[0].n; i++) {
    jq_num ts = jq_col_num(L, &c[0], i), lane = jq_col_num(L, &c[1], i), kind = jq_col_num(L, &c[2], i);
    if (ts.t == JQ_NUM_NIL || lane.t != JQ_NUM_INT || kind.t != JQ_NUM_INT)
      continue;
    int32_t l = lane.v.i >= 1 && lane.v.i <= s->g->nlanes ? (int32_t)lane.v.i - 1 : -1;
    jq_num q = jq_col_num(L, &c[5], i);
    int32_t queue = q.t == JQ_NUM_INT && q.v.i >= 1 && q.v.i <= 65536 ? (int32_t)q.v.i : 0;
    int waiter = jq_col_push(L, &c[3], i) != LUA_TNIL;
    lua_pop(L, 1);
    int32_t owner = waiter ? col_exec(s, &c[3], i) : l >= 0 ? s->lanes[l].thread : -1;
    int32_t on = kind.v.i == 3 ? -1 : col_exec(s, &c[4], i);
    if (owner < 0 || (kind.v.i != 3 && on < 0) || kind.v.i < 1 || kind.v.i > 3)
      continue;
    int64_t t = ns_at(s, ts);
    bitem *it = new_item(s, JO_WAIT, owner, kind.v.i == 2 ? -1 : l, t, t);
    it->job = on, it->lead = kind.v.i == 2;
    if (kind.v.i == 3)
      it->queue = queue, note_queue(s, queue);
    blane *b = !waiter && l >= 0 ? &s->lanes[l] : NULL;
    if (b) { /* a thread's edge: within its range */
      b->first = b->has && b->first < t ? b->first : t;
      b->last = b->has && b->last > t ? b->last : t;
      b->has = 1;
    }
  }
  lua_pop(L, 6);
}

/* Each job's suspensions between its slices (what it awaited) and, in a
 * file without edge events, its awaits' and `after` dependencies' points. */
static void job_edges(bstate *s) {
  graph *gr = s->gr;
  for (size_t k = 0; k < gr->njobs; k++) {
    const gjob *j = &gr->jobs[k];
    int32_t x = s->exec_of[k];
    if (x < 0 || !j->ns)
      continue;
    const gslice *sl = &gr->sl[j->s0];
    for (uint32_t i = 1; i < j->ns; i++) {
      int64_t t0 = ns_add(s, ns_at(s, sl[i - 1].ts), ns_dur(s, sl[i - 1].dur));
      int64_t t1 = ns_at(s, sl[i].ts);
      int32_t aw = sl[i].await >= 0 ? gr->aw[sl[i].await].awaits : -1;
      int32_t on = aw >= 0 ? s->exec_of[aw] : -1;
      new_item(s, JO_SUSPEND, x, lane_ok(s, sl[i - 1].lane), t0, t1)->job = on;
      if (!s->has_edges && on >= 0)
        new_item(s, JO_WAIT, x, lane_ok(s, sl[i].lane), t1, t1)->job = on;
    }
    if (s->has_edges)
      continue;
    int64_t start = ns_at(s, j->start);
    for (uint32_t d = 0; d < j->nd; d++) {
      int32_t on = gr->dp[j->d0 + d].job >= 0 ? s->exec_of[gr->dp[j->d0 + d].job] : -1;
      if (on >= 0) {
        bitem *it = new_item(s, JO_WAIT, x, -1, start, start);
        it->job = on, it->lead = 1;
      }
    }
  }
}

/* ---- the items cut into ops ---- */

#define ITEM_LESS(ctx, a, b)                                                                                 \
  ((void)(ctx), (a).owner != (b).owner ? (a).owner < (b).owner                                               \
                : (a).lead != (b).lead ? (a).lead > (b).lead                                                 \
                : (a).t0 != (b).t0     ? (a).t0 < (b).t0                                                     \
                                       : (a).t1 > (b).t1)
JQ_SORT_DEFINE(sort_items, bitem, void *, ITEM_LESS)

/* The items in their order: dealt out by executor (ties keep their
 * order), then each executor's sorted; all at once if an owner lies out
 * of range. The same order, with a few short sorts for one long one. */
static void sort_by_owner(bstate *s, bitem *it, bitem *tmp, size_t n) {
  size_t nex = s->g->nex;
  uint32_t *at = jq_graph_scratch(s->L, nex + 1, sizeof *at);
  for (size_t k = 0; k < n; k++) {
    if (it[k].owner < 0 || (size_t)it[k].owner >= nex) {
      sort_items(it, tmp, n, NULL);
      lua_pop(s->L, 1);
      return;
    }
    at[it[k].owner + 1]++;
  }
  for (size_t x = 0; x < nex; x++)
    at[x + 1] += at[x];
  for (size_t k = 0; k < n; k++)
    tmp[at[it[k].owner]++] = it[k];
  memcpy(it, tmp, n * sizeof *it);
  for (size_t x = 0, a = 0; x < nex; a = at[x++]) /* at[x]: the end of x's items now */
    sort_items(it + a, tmp, at[x] - a, NULL);
  lua_pop(s->L, 1);
}

/* An executor's cutting: its open items (a stack), how far its ops reach. */
typedef struct cut {
  bstate *s;
  bitem **open;
  uint8_t *emitted;
  size_t depth;
  int64_t at;
  int32_t thread_lane; /* a thread's lane (its own time's), -1 a job */
} cut;

static void push_piece(cut *c, const bitem *it, uint8_t kind, int64_t t0, int64_t t1) {
  jo_op *o = jq_ops_push_op(c->s->L, c->s->g);
  o->kind = kind, o->t0 = t0, o->t1 = t1;
  if (it)
    o->lane = it->lane, o->cat = it->cat, o->job = it->job, o->queue = it->queue;
  else
    o->lane = c->thread_lane;
}

/* The ops up to t: the open item on top (or, on a thread, its own time). */
static void cut_gap(cut *c, int64_t t) {
  if (t <= c->at)
    return;
  if (c->depth) {
    push_piece(c, c->open[c->depth - 1], c->open[c->depth - 1]->kind, c->at, t);
    c->emitted[c->depth - 1] = 1;
  } else if (c->thread_lane >= 0) {
    push_piece(c, NULL, JO_OWN, c->at, t);
  }
  c->at = t;
}

/* Closes the open items that end by t (each's last piece; a zero-length
 * item that made none yet makes one). */
static void cut_close(cut *c, int64_t t) {
  while (c->depth && c->open[c->depth - 1]->t1 <= t) {
    bitem *top = c->open[c->depth - 1];
    if (top->t1 > c->at || !c->emitted[c->depth - 1])
      push_piece(c, top, top->kind, c->at, top->t1 > c->at ? top->t1 : c->at);
    if (top->t1 > c->at)
      c->at = top->t1;
    c->depth--;
  }
}

/* Executor x's ops from its items it[0 .. n) (sorted); a thread's own time from `from` to `to`. */
static void cut_exec(cut *c, int32_t x, bitem *it, size_t n, int64_t from, int64_t to) {
  jo_graph *g = c->s->g;
  jo_exec *e = &g->ex[x];
  e->o0 = (uint32_t)g->nops;
  c->depth = 0;
  c->thread_lane = e->is_job ? -1 : e->lane;
  c->at = e->is_job ? INT64_MIN : from;
  for (size_t i = 0; i < n; i++) {
    bitem *x_ = &it[i];
    if (x_->lead) {
      push_piece(c, x_, JO_WAIT, x_->t0, x_->t0);
      continue;
    }
    if (c->at == INT64_MIN)
      c->at = x_->t0;
    cut_close(c, x_->t0);
    cut_gap(c, x_->t0);
    if (x_->kind == JO_WAIT) {
      push_piece(c, x_, JO_WAIT, c->at, c->at);
      continue;
    }
    x_->t0 = c->at;
    if (c->depth && x_->t1 > c->open[c->depth - 1]->t1)
      x_->t1 = c->open[c->depth - 1]->t1;
    if (x_->t1 < x_->t0)
      x_->t1 = x_->t0;
    c->open[c->depth] = x_, c->emitted[c->depth] = 0, c->depth++;
  }
  cut_close(c, INT64_MAX);
  if (!e->is_job)
    cut_gap(c, to);
  g->ex[x].no = (uint32_t)(g->nops - g->ex[x].o0);
}

/* Every executor's ops, then each job's submit (the last JO_SUBMIT op naming it). */
static void cut_all(bstate *s) {
  lua_State *L = s->L;
  jq_vec *v = &s->sc->b[B_ITEMS];
  size_t n = v->n / sizeof(bitem);
  bitem *tmp = jq_scratch_room(L, &s->sc->b[B_STACK], n ? n : 1, sizeof *tmp);
  bitem *it = (bitem *)v->p;
  sort_by_owner(s, it, tmp, n);
  if (n > SIZE_MAX / sizeof(jo_op) || jq_vec_reserve(&s->g->mem[JM_OPS], n * sizeof(jo_op)) != 0)
    jq_nomem(L); /* room for an op an item, about: no growing one op at a time */
  s->g->ops = (jo_op *)s->g->mem[JM_OPS].p;
  size_t most = 1; /* an executor's items at most: how deep its open items can get */
  for (size_t i = 0, k = 0; i < n; i = k) {
    while (k < n && it[k].owner == it[i].owner)
      k++;
    most = k - i > most ? k - i : most;
  }
  cut c = {.s = s};
  c.open = jq_graph_scratch(L, most, sizeof *c.open);
  c.emitted = jq_graph_scratch(L, most, 1);
  jo_graph *g = s->g;
  size_t i = 0;
  for (int32_t x = 0; x < (int32_t)g->nex; x++) {
    size_t k = i;
    while (k < n && it[k].owner == x)
      k++;
    int64_t from = 0, to = g->stop;
    if (!g->ex[x].is_job && x != g->caller) {
      const blane *b = &s->lanes[g->ex[x].lane];
      from = b->has ? b->first : 0, to = b->has ? b->last : 0;
    }
    cut_exec(&c, x, it + i, k - i, from, to);
    i = k;
  }
  lua_pop(L, 2);
  for (size_t x = 0; x < g->nex; x++) {
    for (uint32_t o = g->ex[x].o0, end = o + g->ex[x].no; o < end; o++) {
      jo_op *op = &g->ops[o];
      if (op->kind == JO_SUBMIT && op->job >= 0)
        g->ex[op->job].sub = (int32_t)o;
      if (op->kind != JO_BLOCK || op->job >= 0)
        continue;
      /* a wait_all's block: the queue its edge names, the next op but for
       * the waiter's own time (a thread's JO_OWN, a job's JO_RUN) */
      uint32_t w = o + 1;
      while (w < end && (g->ops[w].kind == JO_OWN || g->ops[w].kind == JO_RUN))
        w++;
      if (w < end && g->ops[w].kind == JO_WAIT && g->ops[w].job < 0)
        op->queue = g->ops[w].queue;
    }
  }
}

/* ---- partial ---- */

static void why_add(jo_graph *g, const char *text) {
  size_t n = strlen(g->partial_why), room = sizeof g->partial_why - 1;
  if (n && n + 2 < room)
    memcpy(g->partial_why + n, "; ", 2), n += 2;
  size_t len = strlen(text);
  if (n + len > room) { /* cut at a character's start */
    len = room - n;
    while (len > 0 && ((unsigned char)text[len] & 0xC0) == 0x80)
      len--;
  }
  memcpy(g->partial_why + n, text, len);
  g->partial_why[n + len] = 0;
  g->partial = 1;
}

/* Lost events, lanes that dropped events, spans left unclosed. */
static void read_partial(bstate *s) {
  lua_State *L = s->L;
  char text[200];
  lua_getfield(L, S_MODEL, "lost");
  lua_Integer lost = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
  if (lost > 0)
    snprintf(text, sizeof text, "%lld event%s lost", (long long)lost, lost == 1 ? " was" : "s were"),
        why_add(s->g, text);
  lua_getfield(L, S_MODEL, "lanes");
  lua_Integer unclosed = 0;
  int counted = 0;
  for (lua_Integer li = 1; lua_rawgeti(L, -1, li) == LUA_TTABLE; li++) {
    lua_getfield(L, -1, "dropped");
    lua_Integer d = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
    lua_getfield(L, -2, "name");
    if (d > 0)
      snprintf(text, sizeof text, "lane %.60s dropped %lld event%s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "?",
               (long long)d, d == 1 ? "" : "s"),
          why_add(s->g, text);
    lua_getfield(L, -3, "unclosed_spans");
    if (lua_isinteger(L, -1))
      unclosed += lua_tointeger(L, -1), counted = 1;
    lua_pop(L, 4);
  }
  lua_settop(L, S_BASE);
  if (!counted && lua_getfield(L, S_MODEL, "span_pieces") == LUA_TTABLE)
    for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TTABLE; i++, lua_pop(L, 2))
      unclosed += lua_getfield(L, -1, "unclosed") == LUA_TBOOLEAN && lua_toboolean(L, -1);
  lua_settop(L, S_BASE);
  if (unclosed > 0)
    snprintf(text, sizeof text, "%lld span%s left unclosed", (long long)unclosed,
             unclosed == 1 ? " was" : "s were"),
        why_add(s->g, text);
}

/* ---- graph:ops(model) ---- */

int jq_graph_ops(lua_State *L) {
  graph *gr = jq_graph_check(L);
  luaL_checktype(L, S_MODEL, LUA_TTABLE);
  lua_settop(L, S_MODEL);
  bstate s = {.L = L, .gr = gr, .last_job = -1};
  s.g = jq_ops_new(L);   /* S_OPS */
  lua_newtable(L);       /* S_CAT_INDEX */
  s.sc = jq_scratch_new(L, B_N);
  for (int u = JU_CATS; u <= JU_IDS; u++)
    lua_getiuservalue(L, S_OPS, u); /* S_CATS, S_LANES, S_IDS */
  lua_getfield(L, S_MODEL, "t0");
  lua_getfield(L, S_MODEL, "t1");
  jq_num t0 = lua_isnil(L, -2) ? jq_num_int(0) : jq_num_at(L, -2), t1 = lua_isnil(L, -1) ? t0 : jq_num_at(L, -1);
  if (t0.t == JQ_NUM_NIL || t1.t == JQ_NUM_NIL)
    return luaL_error(L, "graph:ops: model.t0 or t1 is not a number");
  s.origin = t0;
  s.g->stop = ns_at(&s, t1);
  lua_settop(L, S_BASE);
  s.has_edges = has_edges(L);
  read_lanes(&s);
  make_execs(&s);
  walk_lanes(&s);
  for (size_t x = 0; x < s.g->nex; x++) { /* a job's queue: its worker lane's */
    jo_exec *e = &s.g->ex[x];
    if (e->is_job && e->lane >= 0 && s.lanes[e->lane].role == ROLE_WORKER)
      e->queue = s.lanes[e->lane].queue;
  }
  if (s.has_edges)
    read_edges(&s);
  job_edges(&s);
  cut_all(&s);
  read_partial(&s);
  jq_scratch_free(s.sc); /* now: the command stops the collector */
  lua_settop(L, S_OPS);
  return 1;
}

/* ---- ops:dump() ---- */

static void set_index(lua_State *L, const char *k, int32_t v) {
  if (v >= 0) {
    lua_pushinteger(L, (lua_Integer)v + 1);
    lua_setfield(L, -2, k);
  }
}

static void set_cat(lua_State *L, int cats, int32_t cat) {
  if (cat >= 0) {
    lua_rawgeti(L, cats, (lua_Integer)cat + 1);
    lua_setfield(L, -2, "cat");
  }
}

static void dump_op(lua_State *L, const jo_op *o, int cats) {
  lua_createtable(L, 3, 4);
  lua_pushstring(L, o->kind >= JO_RUN && o->kind <= JO_WAIT ? jq_ops_kind_names[o->kind - 1] : "?");
  lua_rawseti(L, -2, 1);
  jq_ops_push_us(L, o->t0);
  lua_rawseti(L, -2, 2);
  if (o->kind != JO_WAIT) {
    jq_ops_push_us(L, o->t1);
    lua_rawseti(L, -2, 3);
  }
  set_index(L, "lane", o->lane);
  set_cat(L, cats, o->cat);
  set_index(L, "job", o->job);
  if (o->queue) {
    lua_pushinteger(L, o->queue);
    lua_setfield(L, -2, "queue");
  }
}

/* sub = {the executor whose ops hold op index o, o's place among them}
 * (1-based): a binary search, the executors' ops lying in order (an
 * executor without ops shares its o0 with the next: the last one wins). */
static void push_sub(lua_State *L, const jo_graph *g, int32_t o) {
  size_t lo = 0, hi = g->nex; /* the last executor whose o0 <= o lies in [lo, hi) */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->ex[mid].o0 <= (uint32_t)o)
      lo = mid;
    else
      hi = mid;
  }
  const jo_exec *e = &g->ex[lo];
  if (lo >= g->nex || (uint32_t)o < e->o0 || (uint32_t)o >= e->o0 + e->no)
    return;
  lua_createtable(L, 2, 0);
  lua_pushinteger(L, (lua_Integer)lo + 1);
  lua_rawseti(L, -2, 1);
  lua_pushinteger(L, (lua_Integer)(o - (int32_t)e->o0) + 1);
  lua_rawseti(L, -2, 2);
  lua_setfield(L, -2, "sub");
}

static void dump_exec(lua_State *L, const jo_graph *g, int32_t x, int cats) {
  const jo_exec *e = &g->ex[x];
  lua_createtable(L, 0, 8);
  if (e->is_job) {
    jq_ops_push_job_id(L, 1, x);
    lua_setfield(L, -2, "job");
    if (e->queue) {
      lua_pushinteger(L, e->queue);
      lua_setfield(L, -2, "queue");
    }
    set_cat(L, cats, e->cat);
    if (e->sub >= 0)
      push_sub(L, g, e->sub);
    if (e->ready >= 0) {
      jq_ops_push_us(L, e->ready);
      lua_setfield(L, -2, "ready");
    }
  } else {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "thread");
    if (x == g->caller) {
      lua_pushboolean(L, 1);
      lua_setfield(L, -2, "caller");
    }
  }
  set_index(L, "lane", e->lane);
  lua_createtable(L, (int)e->no, 0);
  for (uint32_t i = 0; i < e->no; i++) {
    dump_op(L, &g->ops[e->o0 + i], cats);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "ops");
}

int jq_ops_dump(lua_State *L) {
  jo_graph *g = jq_ops_check(L, 1);
  lua_settop(L, 1);
  lua_getiuservalue(L, 1, JU_CATS); /* 2 */
  lua_createtable(L, 0, 5);
  jq_ops_push_us(L, g->stop);
  lua_setfield(L, -2, "stop");
  if (g->partial)
    lua_pushstring(L, g->partial_why);
  else
    lua_pushboolean(L, 0);
  lua_setfield(L, -2, "partial");
  lua_createtable(L, g->nqueues, 0);
  for (int32_t q = 0; q < g->nqueues; q++) {
    lua_pushinteger(L, g->queue_workers[q]);
    lua_rawseti(L, -2, (lua_Integer)q + 1);
  }
  lua_setfield(L, -2, "queues");
  lua_createtable(L, g->nlanes, 0);
  lua_getiuservalue(L, 1, JU_LANES);
  for (int32_t l = 0; l < g->nlanes; l++) {
    lua_rawgeti(L, -1, (lua_Integer)l + 1);
    lua_rawseti(L, -3, (lua_Integer)l + 1);
  }
  lua_pop(L, 1);
  lua_setfield(L, -2, "lanes");
  lua_createtable(L, (int)g->nex, 0);
  for (size_t x = 0; x < g->nex; x++) {
    dump_exec(L, g, (int32_t)x, 2);
    lua_rawseti(L, -2, (lua_Integer)x + 1);
  }
  lua_setfield(L, -2, "execs");
  return 1;
}
