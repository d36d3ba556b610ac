/*
 * job_ops.c - the job_ops userdata (job_ops.h): its arrays, its __gc, and
 * what the walk, the replay and the builders share; reader.job_ops(t),
 * the graph made from a plain Lua table (specs build graphs whose answer
 * is known by construction with it):
 *
 *   reader.job_ops{ stop = us, partial = false|"why",
 *     queues = { [number] = recorded workers },
 *     lanes = { "worker 0", "caller", ... },          -- names, by index
 *     execs = {
 *       { job = id, queue = n, lane = i, cat = "name", sub = {exec, op},
 *         ready = us, ops = { {kind, t0, t1, lane = i, cat = "name",
 *                               job = exec index, queue = n}, ... } },
 *       { thread = true, lane = i, caller = true, ops = {...} },
 *     } }
 *
 * kind is one of "run", "copy in", "copy out", "copy result", "submit",
 * "own", "job", "block", "suspend", "wait"; times in microseconds from
 * the session's start; lane and exec indices 1-based as Lua's; sub names
 * the executor and the op (1-based within it) of the job's submit.
 * Owns: nothing past a call. Must not: run on the record path.
 * Thread safety: one lua_State per call.
 */
#include <math.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/job_ops.h"
#include "reader/reader.h"
#include "reader/scratch.h"

void *jq_ops_grow(lua_State *L, jq_vec *v, size_t size) {
  if (jq_vec_reserve(v, size) != 0)
    jq_nomem(L);
  memset(v->p + v->n, 0, size);
  v->n += size;
  return v->p + v->n - size;
}

void jq_ops_free(jo_graph *g) {
  for (int m = 0; m < JM_N; m++)
    jq_vec_free(&g->mem[m]);
  memset(g, 0, sizeof *g);
  g->caller = -1;
}

/* __gc and __close: the arrays freed (a closed graph is an empty one) */
static int l_ops_gc(lua_State *L) {
  jq_ops_free(luaL_checkudata(L, 1, JQ_OPS_MT));
  return 0;
}

jo_graph *jq_ops_new(lua_State *L) {
  jo_graph *g = lua_newuserdatauv(L, sizeof *g, JU_N);
  memset(g, 0, sizeof *g);
  g->caller = -1;
  luaL_setmetatable(L, JQ_OPS_MT);
  for (int u = 1; u <= JU_N; u++) {
    lua_newtable(L);
    lua_setiuservalue(L, -2, u);
  }
  return g;
}

jo_graph *jq_ops_check(lua_State *L, int idx) { return luaL_checkudata(L, idx, JQ_OPS_MT); }

jo_op *jq_ops_push_op(lua_State *L, jo_graph *g) {
  jo_op *o = jq_ops_grow(L, &g->mem[JM_OPS], sizeof *o);
  g->ops = (jo_op *)g->mem[JM_OPS].p;
  g->nops++;
  o->lane = o->cat = o->job = -1;
  return o;
}

jo_exec *jq_ops_push_exec(lua_State *L, jo_graph *g) {
  jo_exec *e = jq_ops_grow(L, &g->mem[JM_EX], sizeof *e);
  g->ex = (jo_exec *)g->mem[JM_EX].p;
  g->nex++;
  e->lane = e->sub = e->cat = -1;
  e->ready = -1;
  e->o0 = (uint32_t)g->nops;
  return e;
}

void jq_ops_push_job_id(lua_State *L, int gidx, int32_t exec) {
  lua_getiuservalue(L, gidx, JU_IDS);
  lua_rawgeti(L, -1, (lua_Integer)exec + 1);
  lua_remove(L, -2);
}

void jq_ops_push_us(lua_State *L, int64_t ns) {
  if (ns % 1000 == 0)
    lua_pushinteger(L, (lua_Integer)(ns / 1000));
  else
    lua_pushnumber(L, (lua_Number)ns / 1000);
}

int jq_ops_last_op(const jo_graph *g, int32_t exec) {
  const jo_exec *e = &g->ex[exec];
  return e->no ? (int)(e->o0 + e->no - 1) : -1;
}

/* ---- reader.job_ops(t) ---- */

const char *const jq_ops_kind_names[] = {"run", "copy in", "copy out", "copy result", "submit",
                                         "own", "job", "block", "suspend", "wait", NULL};

static int64_t ns_field(lua_State *L, int t, int i, const char *what) {
  lua_rawgeti(L, t, i);
  int ok = 0;
  lua_Number us = lua_tonumberx(L, -1, &ok);
  if (!ok || !isfinite(us))
    luaL_error(L, "job_ops: %s is not a number", what);
  lua_pop(L, 1);
  return (int64_t)llround(us * 1000);
}

static lua_Integer int_field(lua_State *L, int t, const char *k, lua_Integer dflt) {
  lua_getfield(L, t, k);
  lua_Integer v = lua_isnil(L, -1) ? dflt : luaL_checkinteger(L, -1);
  lua_pop(L, 1);
  return v;
}

/* The index of category name at the top (popped) among JU_CATS (-1 nil). */
static int32_t cat_of(lua_State *L, jo_graph *g, int gidx) {
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return -1;
  }
  luaL_checktype(L, -1, LUA_TSTRING);
  lua_getiuservalue(L, gidx, JU_CATS);
  for (int32_t c = 0; c < g->ncats; c++) {
    lua_rawgeti(L, -1, c + 1);
    int same = lua_rawequal(L, -1, -3);
    lua_pop(L, 1);
    if (same) {
      lua_pop(L, 2);
      return c;
    }
  }
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, ++g->ncats);
  lua_pop(L, 2);
  return g->ncats - 1;
}

static void table_op(lua_State *L, jo_graph *g, int gidx, int t) {
  jo_op *o = jq_ops_push_op(L, g);
  lua_rawgeti(L, t, 1);
  int kind = luaL_checkoption(L, -1, NULL, jq_ops_kind_names);
  lua_pop(L, 1);
  o->kind = (uint8_t)(kind + 1);
  o->t0 = ns_field(L, t, 2, "an op's t0");
  o->t1 = o->kind == JO_WAIT ? o->t0 : ns_field(L, t, 3, "an op's t1");
  o->lane = (int32_t)int_field(L, t, "lane", 0) - 1;
  o->job = (int32_t)int_field(L, t, "job", 0) - 1;
  o->queue = (int32_t)int_field(L, t, "queue", 0);
  lua_getfield(L, t, "cat");
  o->cat = cat_of(L, g, gidx);
}

static void table_exec(lua_State *L, jo_graph *g, int gidx, int t, int32_t k) {
  jo_exec *e = jq_ops_push_exec(L, g);
  lua_getfield(L, t, "job");
  e->is_job = !lua_isnil(L, -1);
  if (e->is_job) {
    lua_getiuservalue(L, gidx, JU_IDS);
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  e->lane = (int32_t)int_field(L, t, "lane", 0) - 1;
  e->queue = (int32_t)int_field(L, t, "queue", 0);
  lua_getfield(L, t, "caller");
  if (lua_toboolean(L, -1))
    g->caller = k;
  lua_pop(L, 1);
  lua_getfield(L, t, "cat");
  e->cat = cat_of(L, g, gidx);
  lua_getfield(L, t, "ready");
  if (!lua_isnil(L, -1))
    e->ready = (int64_t)llround(luaL_checknumber(L, -1) * 1000);
  lua_pop(L, 1);
  lua_getfield(L, t, "ops");
  luaL_checktype(L, -1, LUA_TTABLE);
  int ops = lua_gettop(L);
  for (lua_Integer i = 1; lua_rawgeti(L, ops, i) == LUA_TTABLE; i++) {
    table_op(L, g, gidx, lua_gettop(L));
    e = &g->ex[k]; /* the executors did not move, but keep the pattern safe */
    e->no++;
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
}

/* Resolves each job's sub = {exec, op} into an index in ops[]. */
static void table_subs(lua_State *L, jo_graph *g, int execs) {
  for (size_t k = 0; k < g->nex; k++) {
    lua_rawgeti(L, execs, (lua_Integer)k + 1);
    lua_getfield(L, -1, "sub");
    if (lua_istable(L, -1)) {
      lua_rawgeti(L, -1, 1);
      lua_rawgeti(L, -2, 2);
      lua_Integer x = luaL_checkinteger(L, -2), o = luaL_checkinteger(L, -1);
      luaL_argcheck(L, x >= 1 && (size_t)x <= g->nex && o >= 1 && o <= g->ex[x - 1].no, 1,
                    "job_ops: a sub names no op");
      g->ex[k].sub = (int32_t)(g->ex[x - 1].o0 + (uint32_t)o - 1);
      lua_pop(L, 2);
    }
    lua_pop(L, 2);
  }
}

static int l_job_ops(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  jo_graph *g = jq_ops_new(L); /* 2 */
  g->stop = (int64_t)llround(luaL_checknumber(L, (lua_getfield(L, 1, "stop"), -1)) * 1000);
  lua_pop(L, 1);
  lua_getfield(L, 1, "partial");
  if (lua_isstring(L, -1)) {
    g->partial = 1;
    strncpy(g->partial_why, lua_tostring(L, -1), sizeof g->partial_why - 1);
  }
  lua_pop(L, 1);
  lua_getfield(L, 1, "lanes");
  if (lua_istable(L, -1)) {
    g->nlanes = (int32_t)lua_rawlen(L, -1);
    lua_setiuservalue(L, 2, JU_LANES);
  } else {
    lua_pop(L, 1);
  }
  lua_getfield(L, 1, "queues"); /* 3 */
  for (lua_Integer q = 1; lua_istable(L, 3) && lua_rawgeti(L, 3, q) == LUA_TNUMBER; q++) {
    int32_t *w = jq_ops_grow(L, &g->mem[JM_QW], sizeof *w);
    *w = (int32_t)lua_tointeger(L, -1);
    g->queue_workers = (int32_t *)g->mem[JM_QW].p;
    g->nqueues = (int32_t)q;
    lua_pop(L, 1);
  }
  lua_settop(L, 2);
  lua_getfield(L, 1, "execs"); /* 3 */
  luaL_checktype(L, 3, LUA_TTABLE);
  for (lua_Integer k = 1; lua_rawgeti(L, 3, k) == LUA_TTABLE; k++) {
    table_exec(L, g, 2, lua_gettop(L), (int32_t)k - 1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  table_subs(L, g, 3);
  lua_settop(L, 2);
  return 1;
}

void jq_open_job_ops(lua_State *L) {
  if (luaL_newmetatable(L, JQ_OPS_MT)) {
    static const luaL_Reg methods[] = {{"critical_path", jq_ops_critical_path},
                                       {"whatif", jq_ops_whatif},
                                       {"dump", jq_ops_dump},
                                       {NULL, NULL}};
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_ops_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_ops_gc); /* local ops <close> = graph:ops(model) */
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_job_ops);
  lua_setfield(L, -2, "job_ops");
}
