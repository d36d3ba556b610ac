/*
 * page_graph.c - page_graph(graph, model): the page's graph part (its
 * @GRAPH@ JSON) from a job graph (graph.c) and the critical path of its
 * happens-before graph (graph:ops(model), job_ops.h; ops_path.c's walk).
 *
 * In columns (a page may hold a million jobs), k a drawn job's index (the
 * jobs with a slice whose lane's job cell is a number, in order of
 * start): id[k], c[k] (its category's index in model.categories, -1
 * none), its drawn slices s[2 * so[k] ..] (lane, slice index pairs,
 * 0-based, in time order; so has one entry more than id), ready[k] (its ready latency in ns, -1 unknown), sl[k],
 * st[k] (its submit: lane index - 1 (-1 none) and end in ns from t0); as
 * flat lists: by (k, the id of the job that submitted it), deps (k, an
 * after dependency's id), aw (k, the id of a job it awaited, the index
 * among its drawn slices of the one that resumed), rs (k, resume latency summed in ns, how many),
 * sp (k, suspended ns); and the critical path, "path": {jobs (ids in
 * time order, once per visit), dur (ns), share (of the session), start,
 * finish (ns from t0), steps: [[kind, start ns, dur ns, lane index
 * (0-based) or -1, job id or null, held_by id or null], ...] (in time
 * order, back to back; kind one of docs/cli.md's: "run", "copy in", ...,
 * "worker busy" with held_by the job its worker ran), by_kind: [[kind,
 * ns], ...] (the report's by_kind: jq_path_by_kind), partial (true when
 * events were lost, spans left unclosed or the walk cut)}, null when the
 * happens-before graph has no job. "null" without jobs.
 * A time is written as integer nanoseconds, (us * 1000 + 0.5) // 1 with
 * Lua's arithmetic (an error when that has no integer value); an id or a
 * ratio as an integer when it is one, a finite float to 17 digits, else
 * null.
 * Owns: nothing past a call. Must not: run on the record path.
 * Thread safety: one lua_State per call.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/graph.h"
#include "reader/job_ops.h"
#include "reader/number_text.h"
#include "reader/scratch.h"

/* us as the page's integer nanoseconds: (us * 1000 + 0.5) // 1 | 0, an
 * integer us multiplied as Lua's integers are (wrapping), a float as the
 * page's other times (number_text.h's jq_page_ns); raises as `| 0` does
 * when the result has no integer value. */
static lua_Integer ns_of(lua_State *L, num us) {
  lua_Integer ns = 0;
  if (us.t == JQ_NUM_INT) {
    double x = floor((double)(lua_Integer)((lua_Unsigned)us.v.i * 1000u) + 0.5);
    if (!(x >= -0x1p63 && x < 0x1p63))
      luaL_error(L, "number has no integer representation");
    return (lua_Integer)x;
  }
  if (!jq_page_ns(us.v.f, 0, &ns))
    luaL_error(L, "number has no integer representation");
  return ns;
}

/* ---- items of a JSON list ---- */

typedef struct list {
  luaL_Buffer *b;
  int first;
} list;

static void item_text(list *l, const char *s, size_t n) {
  if (!l->first)
    luaL_addchar(l->b, ',');
  l->first = 0;
  luaL_addlstring(l->b, s, n);
}

static void item_int(list *l, lua_Integer v) {
  char d[JQ_NUMBER_TEXT];
  item_text(l, d, jq_text_int(d, v));
}

static void item_ns(lua_State *L, list *l, num us) { item_int(l, ns_of(L, us)); }

/* Job k's id as the page writes it (a number's text, else null). */
static void item_id(lua_State *L, list *l, const graph *g, int32_t k) {
  char d[JQ_NUMBER_TEXT];
  const gjob *j = &g->jobs[k];
  num v = jq_num_int(j->id);
  if (j->other) { /* not a number: NIL, null */
    jq_graph_push_id(L, g, k);
    v = jq_num_at(L, -1);
    lua_pop(L, 1);
  }
  item_text(l, d, jq_page_number(d, v));
}

/* ---- the columns ---- */

enum { C_ID, C_C, C_SO, C_S, C_READY, C_SL, C_ST, C_BY, C_DEPS, C_AW, C_RS, C_SP, NCOL };

/* How many of job j's slices the page draws (those whose lane's job cell
 * is a number; a job none of whose slices is drawn is not drawn). */
static uint32_t drawn_slices(const graph *g, const gjob *j) {
  uint32_t n = 0;
  for (uint32_t s = 0; s < j->ns; s++)
    n += g->sl[j->s0 + s].drawn;
  return n;
}

/* Job j's await w: the index among its drawn slices of the first that
 * began after it, or -1 when none did. */
static lua_Integer resumed_slice(const graph *g, const gjob *j, const gawait *w) {
  lua_Integer k = 0;
  for (uint32_t s = 0; s < j->ns; s++) {
    const gslice *x = &g->sl[j->s0 + s];
    if (!x->drawn)
      continue;
    if (!jq_num_le(x->ts, w->ts))
      return k;
    k++;
  }
  return -1;
}

/* Column c's items for drawn job j (its index n). */
static void job_items(lua_State *L, list *l, const graph *g, int c, int32_t k, lua_Integer n, lua_Integer *npos,
                      const int32_t *catpage, num t0) {
  const gjob *j = &g->jobs[k];
  const gslice *sl = &g->sl[j->s0];
  switch (c) {
  case C_ID:
    item_id(L, l, g, k);
    break;
  case C_C:
    item_int(l, j->flags & HAS_CAT ? catpage[j->cat] : -1);
    break;
  case C_SO:
    item_int(l, *npos += drawn_slices(g, j));
    break;
  case C_S:
    for (uint32_t s = 0; s < j->ns; s++)
      if (sl[s].drawn)
        item_int(l, sl[s].lane), item_int(l, sl[s].index);
    break;
  case C_READY:
    if (j->flags & HAS_RL)
      item_ns(L, l, j->rl);
    else
      item_int(l, -1);
    break;
  case C_SL:
    item_int(l, j->flags & HAS_SUB ? (lua_Integer)g->lane_index[j->sub_lane] - 1 : -1);
    break;
  case C_ST:
    if (j->flags & HAS_SUB)
      item_ns(L, l, jq_num_sub(jq_num_add(j->sub_ts, j->sub_dur), t0));
    else
      item_int(l, 0);
    break;
  case C_BY:
    if ((j->flags & HAS_PARENT))
      item_int(l, n), item_id(L, l, g, j->parent);
    break;
  case C_DEPS:
    for (uint32_t d = 0; d < j->nd; d++)
      if (g->dp[j->d0 + d].job >= 0)
        item_int(l, n), item_id(L, l, g, g->dp[j->d0 + d].job);
    break;
  case C_AW:
    for (uint32_t a = 0; a < j->na; a++) {
      const gawait *w = &g->aw[j->a0 + a];
      lua_Integer s = w->awaits >= 0 ? resumed_slice(g, j, w) : -1;
      if (s >= 0)
        item_int(l, n), item_id(L, l, g, w->awaits), item_int(l, s);
    }
    break;
  case C_RS:
    if (j->nres > 0) {
      num resume = jq_num_int(0);
      for (uint32_t r = 0; r < j->nres; r++)
        resume = jq_num_add(resume, g->res[j->w0 + r]);
      item_int(l, n), item_ns(L, l, resume), item_int(l, j->nres);
    }
    break;
  default: /* C_SP */
    if (jq_num_lt(jq_num_int(0), j->suspended))
      item_int(l, n), item_ns(L, l, j->suspended);
    break;
  }
}

/* Adds the columns, each "name":[...], one pass over the drawn jobs each. */
static void add_columns(lua_State *L, luaL_Buffer *b, const graph *g, const int32_t *catpage, num t0) {
  static const char *const names[] = {"id", "c", "so", "s", "ready", "sl", "st", "by", "deps", "aw", "rs", "sp"};
  for (int c = 0; c < NCOL; c++) {
    if (c)
      luaL_addstring(b, ",\n");
    luaL_addchar(b, '"');
    luaL_addstring(b, names[c]);
    luaL_addstring(b, "\":[");
    list l = {b, 1};
    lua_Integer n = 0, npos = 0;
    if (c == C_SO)
      item_int(&l, 0);
    for (size_t k = 0; k < g->norder; k++) {
      int32_t j = g->order[k];
      if (!drawn_slices(g, &g->jobs[j]))
        continue; /* not drawn as a job */
      job_items(L, &l, g, c, j, n++, &npos, catpage, t0);
    }
    luaL_addchar(b, ']');
  }
}

/* An id of the ops graph at gidx (executor x) as the page writes it: a
 * number's text, else null. */
static void item_ops_id(lua_State *L, list *l, int gidx, int32_t x) {
  char d[JQ_NUMBER_TEXT];
  num v = jq_num_nil();
  if (x >= 0) {
    jq_ops_push_job_id(L, gidx, x);
    if (lua_type(L, -1) == LUA_TNUMBER)
      v = jq_num_at(L, -1);
    lua_pop(L, 1);
  }
  item_text(l, d, jq_page_number(d, v));
}

/* Adds the critical path: "path":{...}, or null without a job (pp NULL):
 * the walk pp over the happens-before graph at gidx (ops_path.c), its
 * times already nanoseconds from model.t0. */
static void add_path(lua_State *L, luaL_Buffer *b, int gidx, const jo_path *pp) {
  if (!pp) {
    luaL_addstring(b, ",\n\"path\":null}");
    return;
  }
  const jo_graph *o = jq_ops_check(L, gidx);
  jo_path p = *pp;
  luaL_addstring(b, ",\n\"path\":{\"jobs\":[");
  list l = {b, 1};
  for (size_t k = 0; k < p.njobs; k++)
    item_ops_id(L, &l, gidx, p.jobs[k]);
  char d[JQ_NUMBER_TEXT];
  num share = jq_num_nil(); /* null; else of the session, as ops:critical_path()'s */
  if (o->stop > 0)
    share = jq_num_flt((double)(p.finish - p.start) / (double)o->stop);
  luaL_addstring(b, "],\"dur\":");
  luaL_addlstring(b, d, jq_text_int(d, (lua_Integer)(p.finish - p.start)));
  luaL_addstring(b, ",\"share\":");
  luaL_addlstring(b, d, jq_page_number(d, share));
  luaL_addstring(b, ",\"start\":");
  luaL_addlstring(b, d, jq_text_int(d, (lua_Integer)p.start));
  luaL_addstring(b, ",\"finish\":");
  luaL_addlstring(b, d, jq_text_int(d, (lua_Integer)p.finish));
  luaL_addstring(b, ",\"steps\":[");
  for (size_t k = 0; k < p.nsteps; k++) {
    const jp_step *s = &p.steps[k];
    luaL_addstring(b, k ? ",[\"" : "[\"");
    luaL_addstring(b, jq_path_kinds[s->kind]);
    luaL_addchar(b, '"');
    list m = {b, 0};
    item_int(&m, s->t0), item_int(&m, s->t1 - s->t0), item_int(&m, s->lane);
    item_ops_id(L, &m, gidx, s->job), item_ops_id(L, &m, gidx, s->held_by);
    luaL_addchar(b, ']');
  }
  int64_t us[JP_N];
  int order[JP_N], n = jq_path_by_kind(&p, us, order);
  luaL_addstring(b, "],\"by_kind\":[");
  for (int k = 0; k < n; k++) {
    luaL_addstring(b, k ? ",[\"" : "[\"");
    luaL_addstring(b, jq_path_kinds[order[k]]);
    luaL_addstring(b, "\",");
    luaL_addlstring(b, d, jq_text_int(d, (lua_Integer)us[order[k]]));
    luaL_addchar(b, ']');
  }
  luaL_addstring(b, o->partial || p.cut ? "],\"partial\":true}}" : "],\"partial\":false}}");
}

/* Each category's index in model.categories (its last when a name is
 * there twice; -1 none), in a scratch userdata left on the stack. */
static int32_t *page_cats(lua_State *L, const graph *g, int model) {
  int32_t *catpage = jq_graph_scratch(L, (size_t)g->ncats, sizeof *catpage);
  int top = lua_gettop(L);
  for (int32_t c = 0; c < g->ncats; c++)
    catpage[c] = -1;
  if (lua_getfield(L, model, "categories") != LUA_TTABLE)
    luaL_error(L, "page_graph: model.categories is not a table");
  for (lua_Integer i = 1;; i++) {
    lua_settop(L, top + 1);
    int t = lua_rawgeti(L, top + 1, i);
    if (t == LUA_TNIL)
      break;
    if (t != LUA_TTABLE)
      luaL_error(L, "page_graph: category %I is not a table", (LUAI_UACINT)i);
    lua_getfield(L, -1, "name");
    if (lua_rawget(L, 4) == LUA_TNUMBER) /* the graph's name -> index */
      catpage[lua_tointeger(L, -1)] = (int32_t)i - 1;
  }
  lua_settop(L, top);
  return catpage;
}

/* page_graph(graph, model) -> the page's graph JSON */
static int l_page_graph(lua_State *L) {
  graph *g = jq_graph_check(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  jq_graph_push_cats(L); /* 3, 4 */
  if (g->norder == 0) {
    lua_pushliteral(L, "null");
    return 1;
  }
  num t0;
  lua_getfield(L, 2, "t0");
  if (lua_type(L, -1) != LUA_TNUMBER)
    return luaL_error(L, "page_graph: model.t0 is not a number");
  t0 = lua_isinteger(L, -1) ? jq_num_int(lua_tointeger(L, -1)) : jq_num_flt(lua_tonumber(L, -1));
  lua_pop(L, 1);
  const int32_t *catpage = page_cats(L, g, 2);
  lua_pushcfunction(L, jq_graph_ops); /* the happens-before graph: graph:ops(model) */
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_call(L, 2, 1);
  int gidx = lua_gettop(L);
  const jo_graph *o = jq_ops_check(L, gidx);
  jo_path p;
  memset(&p, 0, sizeof p);
  int has_path = jq_ops_has_job(o);
  if (has_path)
    jq_ops_walk(L, o, &p); /* its scratch stays on the stack, under the buffer's */
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addchar(&b, '{');
  add_columns(L, &b, g, catpage, t0);
  add_path(L, &b, gidx, has_path ? &p : NULL);
  luaL_pushresult(&b);
  if (has_path) /* the walk's memory and the graph's, now: the command stops the collector */
    jq_scratch_free(lua_touserdata(L, gidx + 1));
  jq_ops_free((jo_graph *)o);
  return 1;
}

/* page_time(us) -> us as the page's integer nanoseconds (ns_of): for the
 * page's single times (a lane's longest slice, when it filled, the end). */
static int l_page_time(lua_State *L) {
  luaL_checknumber(L, 1);
  lua_pushinteger(L, ns_of(L, jq_num_at(L, 1)));
  return 1;
}

void jq_open_page_graph(lua_State *L) {
  lua_pushcfunction(L, l_page_graph);
  lua_setfield(L, -2, "page_graph");
  lua_pushcfunction(L, l_page_time);
  lua_setfield(L, -2, "page_time");
}
