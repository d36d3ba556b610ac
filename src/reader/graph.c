/*
 * graph.c - job_graph(model): the job graph of a trace model, built.
 *
 * One pass over the model's columns (lanes' kind, job, ts, dur and cat,
 * the copy columns, model.flows and model.awaits) into flat arrays owned
 * by a userdata (freed by its __gc, so an error raised mid-way leaks
 * nothing); no Lua table per job or slice, no recursion. Its methods:
 * count() here, latency() in graph_path.c, ops(model) in job_ops_build.c
 * (the happens-before graph, whose walk is the critical path); the page's
 * graph part is page_graph.c's.
 *
 * Every shape the loader gives is taken: a job id of any type (graph.h),
 * times of either subtype (integers wrap as Lua's do). Where two items
 * tie, the order is defined: a job's slices and awaits by time, then in
 * the order read (lane by lane, each lane's slices in order; awaits in
 * model order); its wake-ups by time, then in flow order; jobs by a value
 * (start, finish, ready latency), then by id (graph_rank: numbers by
 * value, then strings by their bytes, then false, then other values in
 * the order first met).
 * Owns: the graph userdata's arrays. Must not: run on the record path.
 * Thread safety: one lua_State per call.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/columns.h"
#include "reader/scratch.h"
#include "reader/graph.h"
#include "reader/job_ops.h"
#include "reader/reader.h"
#include "reader/sort.h"

/* The stack of a job_graph call: the model, the graph, its user values. */
enum { S_MODEL = 1, S_GRAPH, S_NAMES, S_NAME_INDEX, S_IDS, S_ID_INDEX, S_BASE = S_ID_INDEX };

/* ---- memory: every array is a jq_vec of the graph's (freed by __gc) ---- */

/* Room for one more item of `size` bytes at the end of v: its block. */
static void *vec_push(lua_State *L, jq_vec *v, size_t size) {
  if (jq_vec_reserve(v, size) != 0)
    jq_nomem(L);
  v->n += size;
  return v->p;
}

/* &arr[n++], arr's block (the graph's mem[m]) grown by one item. */
#define PUSH(L, g, m, arr, n) ((arr) = vec_push((L), &(g)->mem[m], sizeof *(arr)), &(arr)[(n)++])

/* The graph's mem[m] made a new array of count zeroed items of `size`
 * bytes (what it held is freed): its block. */
static void *vec_new(lua_State *L, graph *g, int m, size_t count, size_t size) {
  jq_vec v;
  jq_vec_init(&v);
  void *p = jq_vec_room(&v, count, size); /* NULL: v holds nothing, the graph its old array */
  if (!p)
    jq_nomem(L);
  memset(p, 0, count * size);
  jq_vec_free(&g->mem[m]);
  g->mem[m] = v;
  return p;
}

void *jq_graph_scratch(lua_State *L, size_t n, size_t elem) {
  if (n == 0)
    n = 1;
  if (n > ((size_t)-1 / 2) / elem)
    jq_nomem(L);
  void *p = lua_newuserdatauv(L, n * elem, 0);
  memset(p, 0, n * elem);
  return p;
}

static void free_graph(graph *g) {
  for (int m = 0; m < GM_N; m++)
    jq_vec_free(&g->mem[m]);
  memset(g, 0, sizeof *g);
}

static int l_graph_gc(lua_State *L) {
  free_graph(luaL_checkudata(L, 1, JQ_GRAPH_MT));
  return 0;
}

/* ---- columns (reader/columns.h's jq_col; items 1-based) ---- */

/* Whether item i is the string s (len bytes). */
static int col_is(lua_State *L, const jq_col *c, lua_Integer i, const char *s, size_t len) {
  size_t n;
  const char *p = jq_col_str(L, c, i, &n);
  return p && n == len && memcmp(p, s, len) == 0;
}

/* ---- job ids ---- */

/* How an id is read: as a job's id (math.tointeger's rule: a string that
 * reads as an integer, " 0x10 " or "2.0", is one), or as a key names a job
 * (only a float with an integer value is one, as a Lua table keys it). */
enum { AS_ID, AS_KEY };

/* The value at idx as a job id, in *k: has 0 for nil (and false when
 * false_none). A value that is no integer is appended to the ids list. */
static void read_key(lua_State *L, graph *g, int idx, int as, int false_none, jkey *k) {
  int t = lua_type(L, idx), ok = 0;
  k->i = 0, k->other = 0, k->has = 0;
  if (t == LUA_TNIL || (false_none && t == LUA_TBOOLEAN && !lua_toboolean(L, idx)))
    return;
  k->has = 1;
  if (t == LUA_TNUMBER || (t == LUA_TSTRING && as == AS_ID))
    k->i = lua_tointegerx(L, idx, &ok);
  if (ok)
    return;
  if (t == LUA_TBOOLEAN && !lua_toboolean(L, idx))
    k->has = 2; /* false: a job's id (a flow's), but a reference that names no job */
  if (g->nids >= INT32_MAX / 2)
    luaL_error(L, "job_graph: too many job ids");
  lua_pushvalue(L, idx);
  lua_rawseti(L, S_IDS, ++g->nids);
  k->other = g->nids;
}

/* Item i of a column as a job id (read_key; a native integer cell read
 * as it is): whether the item is a number (the page draws a slice then). */
static int col_key(lua_State *L, graph *g, const jq_col *c, lua_Integer i, int as, int false_none, jkey *out) {
  const jq_column *n = c->c;
  if (n && i >= 1 && (lua_Unsigned)i <= n->n && jq_cell_tag(n, (size_t)i - 1) == JQ_C_INT) {
    out->i = (lua_Integer)jq_cell_int(n, (size_t)i - 1), out->other = 0, out->has = 1;
    return 1;
  }
  int number = jq_col_push(L, c, i) == LUA_TNUMBER;
  read_key(L, g, lua_gettop(L), as, false_none, out);
  lua_pop(L, 1);
  return number;
}

static size_t hash_id(lua_Integer id, size_t cap) {
  uint64_t x = (uint64_t)id * 0x9E3779B97F4A7C15u;
  return (size_t)(x ^ (x >> 29)) & (cap - 1);
}

/* The index of the job with the integer id, or -1. */
static int32_t find_int(const graph *g, lua_Integer id) {
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

/* The index of the job keyed k, or -1 (a job's table lookup). */
static int32_t find_key(lua_State *L, const graph *g, const jkey *k) {
  if (!k->has)
    return -1;
  if (!k->other)
    return find_int(g, k->i);
  lua_rawgeti(L, S_IDS, k->other);
  int32_t j = lua_rawget(L, S_ID_INDEX) == LUA_TNUMBER ? (int32_t)lua_tointeger(L, -1) : -1;
  lua_pop(L, 1);
  return j;
}

static void hash_put(graph *g, lua_Integer id, int32_t k) {
  size_t p = hash_id(id, g->hcap);
  while (g->hash[p].k)
    p = (p + 1) & (g->hcap - 1);
  g->hash[p].id = id, g->hash[p].k = k + 1;
}

/* A new job of id k (not yet in the graph): its index. */
static int32_t new_job(lua_State *L, graph *g, const jkey *k) {
  if (g->njobs >= INT32_MAX / 2)
    jq_nomem(L);
  if (!k->other && (g->njobs + 1) * 2 > g->hcap) { /* rehash at half full */
    size_t cap = g->hcap ? g->hcap * 2 : 1024;
    g->hash = vec_new(L, g, GM_HASH, cap, sizeof *g->hash), g->hcap = cap;
    for (size_t j = 0; j < g->njobs; j++)
      if (!g->jobs[j].other)
        hash_put(g, g->jobs[j].id, (int32_t)j);
  }
  gjob *j = PUSH(L, g, GM_JOBS, g->jobs, g->njobs);
  int32_t at = (int32_t)g->njobs - 1;
  memset(j, 0, sizeof *j);
  j->id = k->i, j->other = k->other, j->cat = -1, j->sub_lane = -1, j->sub_wait = -1, j->parent = -1;
  j->ready_dep = -1;
  j->run = jq_num_int(0), j->suspended = jq_num_int(0);
  if (!k->other) {
    hash_put(g, k->i, at);
  } else {
    lua_rawgeti(L, S_IDS, k->other);
    lua_pushinteger(L, at);
    lua_rawset(L, S_ID_INDEX); /* raises for NaN: no table keys it */
    g->nother++;
  }
  return at;
}

/* The index of the job keyed k (has), made when new. */
static int32_t job_of(lua_State *L, graph *g, const jkey *k) {
  int32_t j = find_key(L, g, k);
  return j >= 0 ? j : new_job(L, g, k);
}

void jq_graph_push_id(lua_State *L, const graph *g, int32_t job) {
  const gjob *j = &g->jobs[job];
  if (!j->other) {
    lua_pushinteger(L, j->id);
    return;
  }
  lua_getiuservalue(L, 1, GU_IDS);
  lua_rawgeti(L, -1, j->other);
  lua_remove(L, -2);
}

/* ---- categories: strings in the graph's user values ---- */

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
  if (lua_rawget(L, S_NAME_INDEX) == LUA_TNUMBER) {
    k = (int32_t)lua_tointeger(L, -1);
  } else {
    if (g->ncats >= INT32_MAX / 2)
      luaL_error(L, "too many categories");
    k = g->ncats++;
    lua_pushvalue(L, -2);
    lua_rawseti(L, S_NAMES, (lua_Integer)k + 1);
    lua_pushvalue(L, -2);
    lua_pushinteger(L, k);
    lua_rawset(L, S_NAME_INDEX);
  }
  lua_pop(L, 1);
  cc->p[h] = p, cc->k[h] = k;
  return k;
}

/* The category of item i of a lane's cat column (a string): through the
 * address of its bytes first (stable while the column is open). */
static int32_t col_cat(lua_State *L, graph *g, const jq_col *c, lua_Integer i, cat_cache *cc, cat_cache *ncc) {
  size_t len;
  const char *p = jq_col_str(L, c, i, &len);
  if (!p)
    luaL_error(L, "job_graph: a job slice's category is not a string");
  size_t h = ((uintptr_t)p >> 4) & 63;
  if (ncc->p[h] == p)
    return ncc->k[h];
  jq_col_push(L, c, i);
  int32_t cat = cat_of(L, g, cc);
  lua_pop(L, 1);
  ncc->p[h] = p, ncc->k[h] = cat;
  return cat;
}

/* ---- the lanes ---- */

enum { LE_JOB, LE_SUBMIT, LE_WAIT };

/* A lane's walk: the last job slice (a submit inside it is that job's)
 * and the last wait (a submit outside one follows it). */
typedef struct lane_walk {
  int32_t cur, last_wait, lane;
  num cur_ts, cur_stop;
  jq_col kind, job, ts, dur, cat;
  cat_cache cc, ncc;
} lane_walk;

static void lane_wait(lua_State *L, graph *g, lane_walk *w, const jkey *k, num ts, num dur) {
  if (g->nwt >= INT32_MAX / 2)
    jq_nomem(L);
  gwait *wt = PUSH(L, g, GM_WT, g->wt, g->nwt);
  wt->ts = ts, wt->stop = jq_num_add(ts, dur), wt->key = *k, wt->job = -1;
  w->last_wait = (int32_t)g->nwt - 1;
}

static void lane_slice(lua_State *L, graph *g, lane_walk *w, int32_t j, lua_Integer i, num ts, num dur, int drawn) {
  if (g->nsl >= INT32_MAX / 2)
    jq_nomem(L);
  int32_t cat = col_cat(L, g, &w->cat, i, &w->cc, &w->ncc);
  gslice *s = PUSH(L, g, GM_SL, g->sl, g->nsl);
  s->ts = ts, s->dur = dur, s->index = i - 1, s->job = j, s->lane = w->lane, s->cat = cat, s->await = -1;
  s->drawn = (unsigned)drawn;
  gjob *jj = &g->jobs[j];
  if (!(jj->flags & HAS_CAT))
    jj->cat = cat, jj->flags |= HAS_CAT;
  jj->run = jq_num_add(jj->run, dur);
  w->cur = j, w->cur_ts = ts, w->cur_stop = jq_num_add(ts, dur);
}

static void lane_submit(graph *g, lane_walk *w, int32_t j, num ts, num dur) {
  gjob *jj = &g->jobs[j];
  jj->flags = (jj->flags & ~(uint32_t)(HAS_SUB | HAS_PARENT)) | HAS_SUB;
  jj->sub_ts = ts, jj->sub_dur = dur, jj->sub_lane = w->lane, jj->sub_wait = -1;
  if (w->cur >= 0 && jq_num_le(w->cur_ts, ts) && jq_num_le(jq_num_add(ts, dur), w->cur_stop)) {
    jj->flags |= HAS_PARENT;
    jj->parent = w->cur;
  } else {
    jj->sub_wait = w->last_wait;
  }
}

/* Item i of a lane: a job slice, a submit or a wait (anything else skipped). */
static void lane_item(lua_State *L, graph *g, lane_walk *w, lua_Integer i) {
  int kind = col_is(L, &w->kind, i, "job", 3) ? LE_JOB : col_is(L, &w->kind, i, "wait", 4) ? LE_WAIT
           : col_is(L, &w->kind, i, "submit", 6) ? LE_SUBMIT : -1;
  if (kind < 0)
    return;
  jkey id;
  int drawn = col_key(L, g, &w->job, i, AS_ID, 1, &id);
  if (kind != LE_WAIT && !id.has)
    return;
  num ts = jq_col_num(L, &w->ts, i), dur = jq_col_num(L, &w->dur, i);
  if (ts.t == JQ_NUM_NIL || dur.t == JQ_NUM_NIL)
    luaL_error(L, "job_graph: a slice's time is not a number");
  if (kind == LE_WAIT) {
    lane_wait(L, g, w, &id, ts, dur);
    return;
  }
  int32_t j = job_of(L, g, &id);
  if (kind == LE_JOB)
    lane_slice(L, g, w, j, i, ts, dur, drawn);
  else
    lane_submit(g, w, j, ts, dur);
}

/* The lanes' job slices, submits and waits. A submit's job is made; a
 * wait's job is only named (resolved at the end). */
static void read_lanes(lua_State *L, graph *g) {
  if (lua_getfield(L, S_MODEL, "lanes") != LUA_TTABLE)
    luaL_error(L, "job_graph: model.lanes is not a table");
  int lanes = lua_gettop(L);
  lane_walk *w = jq_graph_scratch(L, 1, sizeof *w);
  int top = lua_gettop(L);
  for (lua_Integer li = 1;; li++) {
    lua_settop(L, top);
    int t = lua_rawgeti(L, lanes, li);
    if (t == LUA_TNIL)
      break;
    int lane = lua_gettop(L);
    if (t != LUA_TTABLE)
      luaL_error(L, "job_graph: lane %I is not a table", (LUAI_UACINT)li);
    /* index: the lane's place in the model (its own when a hand-made
     * model has none); n as `for i = 1, n` takes it */
    lua_getfield(L, lane, "index");
    lua_getfield(L, lane, "n");
    jq_num nn = jq_num_at(L, -1);
    if ((!lua_isinteger(L, -2) && !lua_isnil(L, -2)) || nn.t == JQ_NUM_NIL || li > INT32_MAX / 2)
      luaL_error(L, "job_graph: lane %I is not a lane", (LUAI_UACINT)li);
    lua_Integer index = lua_isnil(L, -2) ? li : lua_tointeger(L, -2), n = jq_num_loop_count(nn);
    if (index < INT32_MIN / 2 || index > INT32_MAX / 2)
      luaL_error(L, "job_graph: lane %I's index is out of range", (LUAI_UACINT)li);
    *PUSH(L, g, GM_LANES, g->lane_index, g->nlanes) = (int32_t)index;
    jq_col *cols[] = {&w->kind, &w->job, &w->ts, &w->dur, &w->cat};
    const char *f = "kind\0job\0ts\0dur\0cat\0";
    for (int c = 0; c < 5; c++, f += strlen(f) + 1) {
      if (jq_col_field(L, lane, f, cols[c]))
        continue;
      if (n > 0)
        luaL_error(L, "job_graph: lane %I's %s is not a column", (LUAI_UACINT)li, f);
      lua_pushnil(L); /* an empty lane's: never read */
    }
    w->cur = -1, w->last_wait = -1, w->lane = (int32_t)li - 1;
    for (lua_Integer i = 1; i <= n; i++)
      lane_item(L, g, w, i);
  }
  lua_settop(L, S_BASE);
}

/* ---- the copies, flows and awaits ---- */

/* A string field of the table at idx equal to the literal s. */
static int field_is(lua_State *L, int idx, const char *field, const char *s) {
  size_t len;
  int eq = lua_getfield(L, idx, field) == LUA_TSTRING;
  const char *v = eq ? lua_tolstring(L, -1, &len) : NULL;
  eq = eq && len == strlen(s) && memcmp(v, s, len) == 0;
  lua_pop(L, 1);
  return eq;
}

/* The copy columns: each job's copy in and copy out (of jobs the lanes made). */
static void read_copies(lua_State *L, graph *g) {
  int base = lua_gettop(L);
  jq_col c[4];
  const char *f = "copy_ts\0copy_dur\0copy_name\0copy_job\0";
  for (int k = 0; k < 4; k++, f += strlen(f) + 1)
    if (!jq_col_field(L, S_MODEL, f, &c[k]))
      luaL_error(L, "job_graph: model.%s is not a column", f);
  for (lua_Integer i = 1; i <= c[0].n; i++) {
    int in = col_is(L, &c[2], i, "copy in", 7), out = !in && col_is(L, &c[2], i, "copy out", 8);
    if (!in && !out)
      continue;
    jkey key;
    col_key(L, g, &c[3], i, AS_KEY, 1, &key);
    int32_t j = find_key(L, g, &key);
    if (j < 0)
      continue;
    num ts = jq_col_num(L, &c[0], i), dur = jq_col_num(L, &c[1], i);
    if (ts.t == JQ_NUM_NIL || dur.t == JQ_NUM_NIL)
      luaL_error(L, "job_graph: a copy's time is not a number");
    gjob *jj = &g->jobs[j];
    if (in)
      jj->cin_ts = ts, jj->cin_dur = dur, jj->flags |= HAS_CIN;
    else
      jj->cout_ts = ts, jj->cout_dur = dur, jj->flags |= HAS_COUT;
  }
  lua_settop(L, base);
}

/* Flow e (at ei; its args table or an empty one at ei + 1): a "dependency
 * done" or "wake job". */
static void read_flow(lua_State *L, graph *g, int ei) {
  int args = ei + 1, dep = field_is(L, ei, "name", "dependency done");
  if (!dep && !field_is(L, ei, "name", "wake job"))
    return;
  jkey id;
  lua_getfield(L, args, dep ? "dependant" : "job");
  read_key(L, g, lua_gettop(L), AS_ID, 0, &id);
  if (!id.has)
    return;
  int32_t j = job_of(L, g, &id);
  lua_getfield(L, ei, "ts");
  num ts = jq_num_at(L, -1);
  int ts_ok = ts.t != JQ_NUM_NIL; /* no ts: no wake-up, no ready time (the submit's end then) */
  if (!dep) {
    if (!ts_ok)
      return;
    if (g->nwk >= INT32_MAX / 2)
      jq_nomem(L);
    gwake *w = PUSH(L, g, GM_WK, g->wk, g->nwk);
    w->ts = ts, w->owner = j;
    return;
  }
  jkey job;
  lua_getfield(L, args, "job");
  read_key(L, g, lua_gettop(L), AS_ID, 0, &job);
  if (g->ndp >= INT32_MAX / 2)
    jq_nomem(L);
  gdep *d = PUSH(L, g, GM_DP, g->dp, g->ndp);
  d->key = job, d->owner = j, d->job = -1;
  lua_getfield(L, args, "ready");
  if (lua_type(L, -1) == LUA_TBOOLEAN && lua_toboolean(L, -1)) {
    gjob *jj = &g->jobs[j];
    jj->ready_key = job, jj->flags |= HAS_READY_DEP;
    if (ts_ok)
      jj->ready = ts, jj->flags |= HAS_READY;
    else
      jj->flags &= ~(uint32_t)HAS_READY;
  }
}

static void read_flows(lua_State *L, graph *g) {
  int base = lua_gettop(L);
  if (lua_getfield(L, S_MODEL, "flows") != LUA_TTABLE)
    luaL_error(L, "job_graph: model.flows is not a table");
  for (lua_Integer i = 1;; i++) {
    lua_settop(L, base + 1);
    int t = lua_rawgeti(L, base + 1, i);
    if (t == LUA_TNIL)
      break;
    if (t != LUA_TTABLE)
      luaL_error(L, "job_graph: flow %I is not a table", (LUAI_UACINT)i);
    if (lua_getfield(L, -1, "args") != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_newtable(L);
    }
    read_flow(L, g, base + 2);
  }
  lua_settop(L, base);
}

static void read_awaits(lua_State *L, graph *g) {
  int base = lua_gettop(L);
  if (lua_getfield(L, S_MODEL, "awaits") != LUA_TTABLE)
    luaL_error(L, "job_graph: model.awaits is not a table");
  for (lua_Integer i = 1;; i++) {
    lua_settop(L, base + 1);
    int t = lua_rawgeti(L, base + 1, i); /* w */
    if (t == LUA_TNIL)
      break;
    if (t != LUA_TTABLE)
      luaL_error(L, "job_graph: await %I is not a table", (LUAI_UACINT)i);
    jkey id, awaits;
    lua_getfield(L, base + 2, "job");
    read_key(L, g, lua_gettop(L), AS_ID, 0, &id);
    if (!id.has)
      continue;
    int32_t j = job_of(L, g, &id);
    lua_getfield(L, base + 2, "ts");
    lua_getfield(L, base + 2, "dur");
    lua_getfield(L, base + 2, "awaits");
    read_key(L, g, lua_gettop(L), AS_KEY, 0, &awaits); /* looked up as it is, not made an id */
    num ts = jq_num_at(L, -3), dur = jq_num_at(L, -2);
    if (ts.t == JQ_NUM_NIL || dur.t == JQ_NUM_NIL)
      luaL_error(L, "job_graph: await %I's time is not a number", (LUAI_UACINT)i);
    if (g->naw >= INT32_MAX / 2)
      jq_nomem(L);
    gawait *w = PUSH(L, g, GM_AW, g->aw, g->naw);
    w->ts = ts, w->dur = dur, w->key = awaits, w->job = j, w->awaits = -1;
    g->jobs[j].suspended = jq_num_add(g->jobs[j].suspended, dur);
  }
  lua_settop(L, base);
}

/* The job a reference names (none for nil or false), or -1. */
static int32_t ref_of(lua_State *L, const graph *g, const jkey *k) { return k->has == 1 ? find_key(L, g, k) : -1; }

/* Every id a job names, resolved to the job (-1: none): once all are made. */
static void resolve(lua_State *L, graph *g) {
  for (size_t k = 0; k < g->nwt; k++)
    g->wt[k].job = ref_of(L, g, &g->wt[k].key);
  for (size_t k = 0; k < g->naw; k++)
    g->aw[k].awaits = ref_of(L, g, &g->aw[k].key);
  for (size_t k = 0; k < g->ndp; k++)
    g->dp[k].job = ref_of(L, g, &g->dp[k].key);
  for (size_t k = 0; k < g->njobs; k++)
    if (g->jobs[k].flags & HAS_READY_DEP)
      g->jobs[k].ready_dep = ref_of(L, g, &g->jobs[k].ready_key);
}

/* ---- sorting (reader/sort.h's stable sort of indices) ---- */

static int slice_less(void *g, uint32_t a, uint32_t b) {
  return jq_num_lt(((graph *)g)->sl[a].ts, ((graph *)g)->sl[b].ts);
}

static int await_less(void *g, uint32_t a, uint32_t b) {
  return jq_num_lt(((graph *)g)->aw[a].ts, ((graph *)g)->aw[b].ts);
}

static int wake_less(void *g, uint32_t a, uint32_t b) {
  return jq_num_lt(((graph *)g)->wk[a].ts, ((graph *)g)->wk[b].ts);
}

/* The graph's mem[m] (n items of size elem) in the order of the indices
 * idx: its new block. */
static void *permute(lua_State *L, graph *g, int m, const uint32_t *idx, size_t n, size_t elem) {
  jq_vec out;
  jq_vec_init(&out);
  char *p = jq_vec_room(&out, n, elem); /* NULL: nothing to free, the graph keeps its array */
  if (!p)
    jq_nomem(L);
  for (size_t k = 0; k < n; k++)
    memcpy(p + k * elem, g->mem[m].p + (size_t)idx[k] * elem, elem);
  jq_vec_free(&g->mem[m]);
  g->mem[m] = out;
  return p;
}

/* The graph's mem[m] (arr[0 .. n)) grouped by job (the int32 at
 * owner_off of each item), in order within a job by less (NULL: as they
 * were): its new block. A counting sort, then a stable sort of each group. */
static void *group_by(lua_State *L, graph *g, int m, void *arr, size_t n, size_t elem, size_t owner_off,
                      jq_less_fn less) {
  if (n < 2)
    return arr;
  uint32_t *idx = jq_graph_scratch(L, 2 * n + g->njobs + 1, sizeof *idx), *tmp = idx + n, *at = tmp + n;
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
    idx[at[o]++] = (uint32_t)k;
  }
  for (size_t lo = 0, j = 0; less && j < g->njobs; j++) { /* at[j]: the end of job j's group */
    size_t hi = at[j];
    if (hi - lo > 1)
      jq_sort_stable(idx + lo, tmp, hi - lo, less, g);
    lo = hi;
  }
  arr = permute(L, g, m, idx, n, elem);
  lua_pop(L, 1);
  return arr;
}

/* An id's sort key (graph_rank): its class (0 a number, 1 a string, 2
 * false, 3 another value), its number or bytes. */
typedef struct ikey {
  int cls;
  num v;
  const char *s;
  size_t len;
} ikey;

/* Job a's id before job b's (ties: the job first met). */
static int id_less(void *ctx, uint32_t a, uint32_t b) {
  const ikey *x = (const ikey *)ctx + a, *y = (const ikey *)ctx + b;
  if (x->cls != y->cls)
    return x->cls < y->cls;
  if (x->cls == 0 && !jq_num_eq(x->v, y->v))
    return jq_num_lt(x->v, y->v);
  if (x->cls == 1) {
    int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
    if (c || x->len != y->len)
      return c ? c < 0 : x->len < y->len;
  }
  return 0;
}

/* Each job's rank among the jobs by id, when an id is no integer (with
 * integer ids only, the ids themselves order the ties). */
static void graph_rank(lua_State *L, graph *g) {
  if (!g->nother)
    return;
  ikey *key = jq_graph_scratch(L, g->njobs, sizeof *key);
  uint32_t *idx = jq_graph_scratch(L, 2 * g->njobs, sizeof *idx);
  for (size_t k = 0; k < g->njobs; k++) {
    const gjob *j = &g->jobs[k];
    ikey *x = &key[k];
    idx[k] = (uint32_t)k, x->cls = 0, x->v = jq_num_int(j->id);
    if (!j->other)
      continue;
    lua_rawgeti(L, S_IDS, j->other); /* held by the ids list: its bytes stay */
    int t = lua_type(L, -1);
    if (t == LUA_TNUMBER)
      x->v = jq_num_at(L, -1);
    else if (t == LUA_TSTRING)
      x->cls = 1, x->s = lua_tolstring(L, -1, &x->len);
    else
      x->cls = t == LUA_TBOOLEAN && !lua_toboolean(L, -1) ? 2 : 3;
    lua_pop(L, 1);
  }
  jq_sort_stable(idx, idx + g->njobs, g->njobs, id_less, key);
  for (size_t k = 0; k < g->njobs; k++)
    g->jobs[idx[k]].rank = (int32_t)k;
  lua_pop(L, 2);
}

/* A job's sort key: a value, then the id (or the rank when an id is no
 * integer), copied side by side so the sort reads them and not the jobs'
 * entries at random (a million jobs are 290 MB of entries). */
typedef struct okey {
  num v;
  lua_Integer id;
  int32_t job;
} okey;

#define OKEY_LESS(ctx, x, y) ((void)(ctx), jq_num_lt((x).v, (y).v) || (!jq_num_lt((y).v, (x).v) && (x).id < (y).id))
JQ_SORT_DEFINE(sort_okeys, okey, void *, OKEY_LESS)

/* The jobs a[0 .. n) put in the order of their `field` (a num at offset
 * off in gjob), ties by id. */
void jq_graph_sort_jobs(lua_State *L, graph *g, int32_t *a, size_t n, size_t off) {
  if (n < 2)
    return;
  /* the keys, then the sort's second half: malloc'd and freed before any
   * Lua call (the command stops the collector: a userdata would stay) */
  okey *key = malloc(2 * n * sizeof *key);
  if (!key)
    jq_nomem(L);
  for (size_t i = 0; i < n; i++) {
    const gjob *j = &g->jobs[a[i]];
    memcpy(&key[i].v, (const char *)j + off, sizeof key[i].v);
    key[i].id = g->nother ? j->rank : j->id, key[i].job = a[i];
  }
  sort_okeys(key, key + n, n, NULL); /* the jobs come lane by lane, runs in order: copied */
  for (size_t i = 0; i < n; i++)
    a[i] = key[i].job;
  free(key);
}

/* ---- each job's figures ---- */

/* Groups the slices, awaits, wakes and deps by job (each job's in time
 * order, ties as read; deps in flow order). */
static void group(lua_State *L, graph *g) {
  g->sl = group_by(L, g, GM_SL, g->sl, g->nsl, sizeof *g->sl, offsetof(gslice, job), slice_less);
  g->aw = group_by(L, g, GM_AW, g->aw, g->naw, sizeof *g->aw, offsetof(gawait, job), await_less);
  g->wk = group_by(L, g, GM_WK, g->wk, g->nwk, sizeof *g->wk, offsetof(gwake, owner), wake_less);
  g->dp = group_by(L, g, GM_DP, g->dp, g->ndp, sizeof *g->dp, offsetof(gdep, owner), NULL);
#define COUNT(arr, n, owner, first, count)                                                                       \
  for (size_t k = 0; k < (n); k++) {                                                                           \
    gjob *j = &g->jobs[(arr)[k].owner];                                                                        \
    if (!j->count++)                                                                                           \
      j->first = (uint32_t)k;                                                                                  \
  }
  COUNT(g->sl, g->nsl, job, s0, ns)
  COUNT(g->aw, g->naw, job, a0, na)
  COUNT(g->wk, g->nwk, owner, w0, nw)
  COUNT(g->dp, g->ndp, owner, d0, nd)
#undef COUNT
}

/* Job j's start, finish, ready latency, its awaits on the slices they
 * resumed and its resume latencies. */
static void job_figures(graph *g, gjob *j) {
  gslice *sl = &g->sl[j->s0], *first = sl, *last = sl + j->ns - 1;
  j->start = j->flags & HAS_CIN ? num_min(j->cin_ts, first->ts) : first->ts;
  j->finish = num_max(jq_num_add(last->ts, last->dur), j->flags & HAS_COUT ? jq_num_add(j->cout_ts, j->cout_dur) : jq_num_int(0));
  if (!(j->flags & HAS_READY) && (j->flags & HAS_SUB)) {
    j->ready = jq_num_add(j->sub_ts, j->sub_dur);
    j->flags |= HAS_READY;
  }
  if (j->flags & HAS_READY) {
    j->rl = num_max(jq_num_int(0), jq_num_sub(j->start, j->ready));
    j->flags |= HAS_RL;
  }
  uint32_t s = 0;
  for (uint32_t a = 0; a < j->na; a++) { /* each await on the slice it resumed */
    while (s < j->ns && jq_num_le(sl[s].ts, g->aw[j->a0 + a].ts))
      s++;
    if (s < j->ns)
      sl[s].await = (int32_t)(j->a0 + a);
  }
  s = 0;
  for (uint32_t w = 0; w < j->nw; w++) { /* each wake-up on the first slice at or after it */
    num t = g->wk[j->w0 + w].ts;
    while (s < j->ns && jq_num_lt(sl[s].ts, t))
      s++;
    if (s < j->ns)
      g->res[j->w0 + j->nres++] = jq_num_sub(sl[s].ts, t);
  }
}

/* Every job's figures; the jobs with a slice by start and by finish. */
static void finish_build(lua_State *L, graph *g) {
  g->res = vec_new(L, g, GM_RES, g->nwk, sizeof *g->res);
  g->order = vec_new(L, g, GM_ORDER, g->njobs, sizeof *g->order);
  g->ends = vec_new(L, g, GM_ENDS, g->njobs, sizeof *g->ends);
  for (size_t k = 0; k < g->njobs; k++) {
    gjob *j = &g->jobs[k];
    if (!j->ns)
      continue;
    job_figures(g, j);
    g->order[g->norder++] = (int32_t)k;
  }
  graph_rank(L, g);
  jq_graph_sort_jobs(L, g, g->order, g->norder, offsetof(gjob, start));
  memcpy(g->ends, g->order, g->norder * sizeof *g->ends);
  jq_graph_sort_jobs(L, g, g->ends, g->norder, offsetof(gjob, finish));
  g->total_run = jq_num_int(0);
  for (size_t k = 0; k < g->norder; k++) /* in order of start: a float sum depends on the order */
    g->total_run = jq_num_add(g->total_run, g->jobs[g->order[k]].run);
}

/* job_graph(model) -> graph */
static int l_job_graph(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  graph *g = lua_newuserdatauv(L, sizeof *g, GU_N - 1); /* S_GRAPH */
  memset(g, 0, sizeof *g);
  luaL_setmetatable(L, JQ_GRAPH_MT);
  for (int u = GU_NAMES; u < GU_N; u++) { /* S_NAMES .. S_ID_INDEX */
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, S_GRAPH, u);
  }
  read_lanes(L, g);
  read_copies(L, g);
  read_flows(L, g);
  read_awaits(L, g);
  resolve(L, g);
  group(L, g);
  finish_build(L, g);
  lua_getfield(L, S_MODEL, "t0");
  lua_getfield(L, S_MODEL, "t1");
  num t0 = lua_isnil(L, -2) ? jq_num_int(0) : jq_num_at(L, -2), t1 = lua_isnil(L, -1) ? jq_num_int(0) : jq_num_at(L, -1);
  if (t0.t == JQ_NUM_NIL || t1.t == JQ_NUM_NIL) /* model.t0 and t1 (0 when nil) */
    return luaL_error(L, "job_graph: model.t0 or t1 is not a number");
  g->session = num_max(jq_num_int(0), jq_num_sub(t1, t0));
  lua_settop(L, S_GRAPH);
  return 1;
}

graph *jq_graph_check(lua_State *L) {
  graph *g = luaL_checkudata(L, 1, JQ_GRAPH_MT);
  luaL_argcheck(L, g->jobs || g->njobs == 0, 1, "graph freed");
  return g;
}

void jq_graph_push_cats(lua_State *L) {
  lua_settop(L, 2);
  lua_getiuservalue(L, 1, GU_NAMES);
  lua_getiuservalue(L, 1, GU_NAME_INDEX);
}

int32_t jq_graph_find_int(const graph *g, lua_Integer id) { return find_int(g, id); }

int32_t jq_graph_find(lua_State *L, int gidx, const graph *g, int idx) {
  int t = lua_type(L, idx), ok = 0;
  if (t == LUA_TNIL || (t == LUA_TBOOLEAN && !lua_toboolean(L, idx)))
    return -1;
  if (t == LUA_TNUMBER || t == LUA_TSTRING) {
    lua_Integer i = lua_tointegerx(L, idx, &ok);
    if (ok)
      return find_int(g, i);
  }
  idx = lua_absindex(L, idx);
  lua_getiuservalue(L, gidx, GU_ID_INDEX);
  lua_pushvalue(L, idx);
  int32_t j = lua_rawget(L, -2) == LUA_TNUMBER ? (int32_t)lua_tointeger(L, -1) : -1;
  lua_pop(L, 2);
  return j;
}

int jq_graph_finished(const graph *g, int32_t k) { return k >= 0 && g->jobs[k].ns > 0; }

static int l_graph_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)jq_graph_check(L)->norder);
  return 1;
}

void jq_open_graph(lua_State *L) {
  static const luaL_Reg methods[] = {{"count", l_graph_count},
                                     {"latency", jq_graph_latency},
                                     {"ops", jq_graph_ops},
                                     {NULL, NULL}};
  if (luaL_newmetatable(L, JQ_GRAPH_MT)) {
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_graph_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_graph_gc); /* local g <close> = job_graph(model) */
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_job_graph);
  lua_setfield(L, -2, "job_graph");
}
