/*
 * page.c - the timeline page's data columns (jobque_profile.page's data):
 * page_ns, page_lane, page_markers and page_values, one call per column;
 * the graph's part is page_graph.c's (opened with these).
 *
 * Numbers are formatted by our own integer routine into a luaL_Buffer
 * (a page holds millions of them: no printf per number but for floats
 * that are not integers). Strings seen again are found through a small
 * cache keyed by the address of their bytes (a Lua string does not move
 * while its column holds it) before the writer's Lua tables are asked.
 * Owns: nothing past a call (scratch memory is a userdata or the
 * buffer's). Must not: be used by the record path.
 * Thread safety: reentrant (one lua_State per call).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "common/digits.h"
#include "reader/columns.h"
#include "reader/graph.h"
#include "reader/reader.h"

/* ---- columns: a Lua list, or the loader's native cells (columns.h) ---- */

/* The native columns among a call's arguments (stack indices 1 to
 * COLS_N - 1), found once a call: NULL for a Lua list. */
#define COLS_N 16

typedef struct colset {
  const jq_column *c[COLS_N];
} colset;

/* Records whether the value at idx is a native column (else it must be a
 * list, when `check`). */
static void col_find(lua_State *L, colset *s, int idx, int check) {
  s->c[idx] = jq_column_test(L, idx);
  if (!s->c[idx] && check)
    luaL_checktype(L, idx, LUA_TTABLE);
}

/* Pushes item i of the column at t: its type. */
static int item(lua_State *L, const colset *s, int t, lua_Integer i) {
  const jq_column *c = s->c[t];
  if (!c)
    return lua_rawgeti(L, t, i);
  if (i < 1 || (lua_Unsigned)i > c->n) {
    lua_pushnil(L);
    return LUA_TNIL;
  }
  int tag = jq_cell_tag(c, (size_t)i - 1);
  if (tag == JQ_C_NUM)
    lua_pushnumber(L, jq_cell_num(c, (size_t)i - 1));
  else if (tag == JQ_C_INT)
    lua_pushinteger(L, (lua_Integer)jq_cell_int(c, (size_t)i - 1));
  else
    jq_column_push(L, t, (size_t)i - 1);
  return lua_type(L, -1);
}

/* The address of the bytes of item i of the column at t when it is a
 * string (stable while the column or the load's strings hold it: a cache
 * key), else NULL. Nothing pushed. */
static const char *str_key(lua_State *L, const colset *s, int t, lua_Integer i) {
  const jq_column *c = s->c[t];
  if (c) {
    if (i < 1 || (lua_Unsigned)i > c->n || jq_cell_tag(c, (size_t)i - 1) != JQ_C_STR)
      return NULL;
    size_t len;
    return jq_column_str(c, c->v[i - 1], &len);
  }
  const char *p = lua_rawgeti(L, t, i) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  lua_pop(L, 1);
  return p;
}

/* ---- numbers ---- */

/* v in decimal at p (at least 20 bytes): its length (digits.h). */
static size_t put_i64(char *p, long long v) { return (size_t)(jq_put_i64(p, (int64_t)v) - p); }

/* A writer of many numbers into a luaL_Buffer: room reserved a block at a
 * time, not a number at a time. Between blk_open and blk_close the stack
 * may be used only in balanced ways (the buffer's rule). */
#define BLK 8192

typedef struct blk {
  luaL_Buffer *b;
  char *p;
  size_t len;
} blk;

static void blk_open(blk *w, luaL_Buffer *b) {
  w->b = b;
  w->p = luaL_prepbuffsize(b, BLK);
  w->len = 0;
}

static void blk_more(blk *w) {
  luaL_addsize(w->b, w->len);
  w->p = luaL_prepbuffsize(w->b, BLK);
  w->len = 0;
}

static void blk_close(blk *w) { luaL_addsize(w->b, w->len); }

/* Appends ",v" (or "v" when first). */
static inline void blk_int(blk *w, long long v, int first) {
  if (BLK - w->len < 24)
    blk_more(w);
  if (!first)
    w->p[w->len++] = ',';
  w->len += put_i64(w->p + w->len, v);
}

/* n integers col[0 .. n) joined by commas, pushed as a string. */
static void push_ints(lua_State *L, const lua_Integer *col, lua_Integer n) {
  luaL_Buffer b;
  blk w;
  luaL_buffinit(L, &b);
  blk_open(&w, &b);
  for (lua_Integer i = 0; i < n; i++)
    blk_int(&w, col[i], i == 0);
  blk_close(&w);
  luaL_pushresult(&b);
}

/* us (microseconds) as the page's integer nanoseconds since t0:
 * (us - t0) * 1000 + 0.5, floored; 0 and an error message in *why when
 * that is out of an integer's range. */
static long long page_ns_of(double us, double t0, const char **why) {
  double v = floor((us - t0) * 1000 + 0.5);
  if (!(v >= -0x1p63 && v < 0x1p63)) {
    *why = "out of range";
    return 0;
  }
  return (long long)v;
}

/* page_ns(col, n, t0) -> "x1,x2,...": col[1..n] (microseconds, numbers) as
 * integer nanoseconds since t0, rounded as page_ns_of does. */
static int l_page_ns(lua_State *L) {
  colset cs;
  col_find(L, &cs, 1, 1);
  lua_Integer n = luaL_checkinteger(L, 2);
  double t0 = luaL_checknumber(L, 3);
  lua_settop(L, 3);
  const jq_column *c = cs.c[1];
  luaL_Buffer b;
  blk w;
  luaL_buffinit(L, &b);
  blk_open(&w, &b);
  for (lua_Integer i = 1; i <= n; i++) {
    int ok;
    double us;
    if (c) { /* native: the cells read directly */
      int tag = (lua_Unsigned)i <= c->n ? jq_cell_tag(c, (size_t)i - 1) : JQ_C_NIL;
      ok = tag == JQ_C_NUM || tag == JQ_C_INT;
      us = tag == JQ_C_NUM ? jq_cell_num(c, (size_t)i - 1) : ok ? (double)jq_cell_int(c, (size_t)i - 1) : 0;
    } else {
      lua_rawgeti(L, 1, i);
      us = lua_tonumberx(L, -1, &ok);
      lua_pop(L, 1);
    }
    if (!ok)
      return luaL_error(L, "page_ns: item %I is not a number", (LUAI_UACINT)i);
    const char *why = NULL;
    long long v = page_ns_of(us, t0, &why);
    if (why)
      return luaL_error(L, "page_ns: item %I is %s", (LUAI_UACINT)i, why);
    blk_int(&w, v, i == 1);
  }
  blk_close(&w);
  luaL_pushresult(&b);
  return 1;
}

/* ---- interning ---- */

/* A cache of strings already interned: the address of a string's bytes
 * (stable while a column holds the string) -> its index. Direct-mapped;
 * a miss asks the Lua tables. */
#define CACHE_N 256

typedef struct seen {
  const char *key[CACHE_N];
  lua_Integer val[CACHE_N];
} seen;

static unsigned slot_of(const char *s) {
  uintptr_t x = (uintptr_t)s;
  return (unsigned)((x >> 4) ^ (x >> 12)) & (CACHE_N - 1);
}

/* The index of the string on top in list/index (env's fields): index[s],
 * else #list (s appended). The string popped. */
static lua_Integer intern_top(lua_State *L, int env, const char *list, const char *index) {
  lua_getfield(L, env, index);
  lua_pushvalue(L, -2);
  if (lua_rawget(L, -2) == LUA_TNUMBER) {
    lua_Integer k = lua_tointeger(L, -1);
    lua_pop(L, 3);
    return k;
  }
  lua_pop(L, 1);
  lua_getfield(L, env, list);
  lua_Integer k = (lua_Integer)lua_rawlen(L, -1);
  lua_pushvalue(L, -3);
  lua_rawseti(L, -2, k + 1);
  lua_pop(L, 1);
  lua_pushvalue(L, -2);
  lua_pushinteger(L, k);
  lua_rawset(L, -3);
  lua_pop(L, 2);
  return k;
}

/* The index of item i of the column at t in list/index (env's fields),
 * through the cache c when it is a string (a hit pushes nothing). */
static lua_Integer intern_item(lua_State *L, const colset *s, int t, lua_Integer i, seen *c, int env, const char *list,
                               const char *index) {
  const char *key = str_key(L, s, t, i);
  unsigned k = key ? slot_of(key) : 0;
  if (key && c->key[k] == key)
    return c->val[k];
  item(L, s, t, i);
  lua_Integer v = intern_top(L, env, list, index);
  if (key) /* still alive: its column (or the load's strings) holds it */
    c->key[k] = key, c->val[k] = v;
  return v;
}

static lua_Integer int_at(lua_State *L, const colset *s, int col, lua_Integer i, const char *what) {
  const jq_column *c = s->c[col];
  if (c && i >= 1 && (lua_Unsigned)i <= c->n && jq_cell_tag(c, (size_t)i - 1) == JQ_C_INT)
    return (lua_Integer)jq_cell_int(c, (size_t)i - 1);
  item(L, s, col, i);
  int ok;
  lua_Integer v = lua_tointegerx(L, -1, &ok);
  if (!ok)
    luaL_error(L, "page_lane: %s %I is not an integer", what, (LUAI_UACINT)i);
  lua_pop(L, 1);
  return v;
}

/* ---- page_lane ---- */

/* What page_lane keeps across slices: env's copy columns and caches. */
typedef struct lane_ctx {
  colset cs;
  int env, cbytes, cjob, quoted, ccat, args; /* stack indices */
  lua_Integer nargs;                         /* #env.args */
  seen names, cats;
  const char *cat_key[CACHE_N]; /* a copy's category -> its JSON text (in env.quoted) */
  const char *cat_text[CACHE_N];
  size_t cat_len[CACHE_N];
  int job_key_known;
  lua_Integer job_key;
} lane_ctx;

/* A copy's args (the copy's index on top, popped) as the page's JSON,
 * appended to env.args (not interned: a trace holds a million copies,
 * nearly all different): its index. */
static lua_Integer copy_args(lua_State *L, lane_ctx *x) {
  lua_Integer ci = lua_tointeger(L, -1);
  lua_pop(L, 1);
  const char *name = str_key(L, &x->cs, x->ccat, ci);
  unsigned k = name ? slot_of(name) : 0;
  const char *cat;
  size_t cat_len;
  if (name && x->cat_key[k] == name) { /* the quoted text, kept alive by env.quoted */
    cat = x->cat_text[k], cat_len = x->cat_len[k];
  } else {
    item(L, &x->cs, x->ccat, ci);
    lua_gettable(L, x->quoted); /* quoted[ccat[ci]] */
    cat = luaL_checklstring(L, -1, &cat_len);
    if (name)
      x->cat_key[k] = name, x->cat_text[k] = cat, x->cat_len[k] = cat_len;
    lua_pop(L, 1); /* still held by env.quoted */
  }
  lua_Integer bytes = int_at(L, &x->cs, x->cbytes, ci, "copy's bytes"),
              job = int_at(L, &x->cs, x->cjob, ci, "copy's job");
  luaL_Buffer b; /* 29 bytes of keys and braces, two numbers of at most 20 characters, the category */
  char *p = luaL_buffinitsize(L, &b, cat_len + 72);
  size_t len = 0;
  memcpy(p, "{\"bytes\":", 9), len = 9;
  len += put_i64(p + len, bytes);
  memcpy(p + len, ",\"category\":", 12), len += 12;
  memcpy(p + len, cat, cat_len), len += cat_len;
  memcpy(p + len, ",\"job\":", 7), len += 7;
  len += put_i64(p + len, job);
  p[len++] = '}';
  luaL_pushresultsize(&b, len);
  lua_rawseti(L, x->args, ++x->nargs);
  return x->nargs - 1;
}

/* The page's a, ak, av of slice i (its args at the top, popped). */
static void slice_args(lua_State *L, lane_ctx *x, int ljob, lua_Integer i, lua_Integer *out) {
  out[0] = -1, out[1] = 0, out[2] = 0;
  int t = lua_type(L, -1);
  if (t == LUA_TNUMBER) {
    out[0] = copy_args(L, x);
  } else if (lua_toboolean(L, -1)) { /* a table: env.other(args, i) -> a, ak, av */
    lua_getfield(L, x->env, "other");
    lua_insert(L, -2);
    lua_pushinteger(L, i);
    lua_call(L, 2, 3);
    for (int k = 0; k < 3; k++)
      out[k] = lua_tointeger(L, k - 3);
    lua_pop(L, 3);
    x->nargs = (lua_Integer)lua_rawlen(L, x->args); /* it may have added one */
  } else {
    lua_pop(L, 1);
    item(L, &x->cs, ljob, i);
    if (lua_toboolean(L, -1)) { /* args { job = N } alone */
      out[2] = int_at(L, &x->cs, ljob, i, "job");
      if (!x->job_key_known) { /* "job" is interned when first met */
        lua_pushliteral(L, "job");
        x->job_key = intern_top(L, x->env, "keys", "key_index");
        x->job_key_known = 1;
      }
      out[1] = x->job_key;
      out[0] = -2;
    }
    lua_pop(L, 1);
  }
}

/* page_lane(cat, sname, args, job, n, env) -> c, n, a, ak, av: the page's
 * columns of a lane (jobque_profile.page's data), each "x1,x2,...";
 * env: cat_index, names/name_index, args (a copy's appended; other
 * args interned by env.other in args/arg_index), keys/key_index,
 * cbytes, ccat, cjob (the copy columns), quoted, other(args, i). */
static int l_page_lane(lua_State *L) {
  colset cs;
  for (int k = 1; k <= 4; k++)
    col_find(L, &cs, k, 1);
  lua_Integer n = luaL_checkinteger(L, 5);
  luaL_checktype(L, 6, LUA_TTABLE);
  luaL_argcheck(L, n >= 0 && (lua_Unsigned)n < ((size_t)-1 / 8) / (5 * sizeof(lua_Integer)), 5, "count out of range");
  lua_settop(L, 6);
  lua_Integer *col = lua_newuserdatauv(L, (size_t)(n ? n : 1) * 5 * sizeof *col, 0); /* 7 */
  lua_getfield(L, 6, "cat_index");                                                   /* 8 */
  lane_ctx *x = lua_newuserdatauv(L, sizeof *x, 0);                                  /* 9 */
  memset(x, 0, sizeof *x);
  x->env = 6;
  lua_getfield(L, 6, "cbytes"); /* 10 */
  lua_getfield(L, 6, "cjob");   /* 11 */
  lua_getfield(L, 6, "quoted"); /* 12 */
  lua_getfield(L, 6, "ccat");   /* 13 */
  lua_getfield(L, 6, "args");   /* 14 */
  luaL_checktype(L, 14, LUA_TTABLE);
  x->cbytes = 10, x->cjob = 11, x->quoted = 12, x->ccat = 13, x->args = 14;
  x->cs = cs;
  for (int k = 10; k <= 13; k++)
    col_find(L, &x->cs, k, 0);
  x->nargs = (lua_Integer)lua_rawlen(L, 14);
  for (lua_Integer i = 1; i <= n; i++) {
    const char *key = str_key(L, &x->cs, 1, i);
    unsigned ck = key ? slot_of(key) : 0;
    if (key && x->cats.key[ck] == key) {
      col[i - 1] = x->cats.val[ck];
    } else {
      item(L, &x->cs, 1, i);
      if (lua_rawget(L, 8) != LUA_TNUMBER)
        return luaL_error(L, "page_lane: slice %I's category has no index", (LUAI_UACINT)i);
      col[i - 1] = lua_tointeger(L, -1);
      if (key)
        x->cats.key[ck] = key, x->cats.val[ck] = col[i - 1];
      lua_pop(L, 1);
    }
    col[n + i - 1] = intern_item(L, &x->cs, 2, i, &x->names, 6, "names", "name_index");
    lua_Integer a[3];
    const jq_column *ca = x->cs.c[3];
    int atag = ca && i <= (lua_Integer)ca->n ? jq_cell_tag(ca, (size_t)i - 1) : -1;
    if (atag == JQ_C_NIL) { /* no args: the common case read without a push */
      lua_pushnil(L);
    } else if (atag == JQ_C_INT) {
      lua_pushinteger(L, (lua_Integer)jq_cell_int(ca, (size_t)i - 1));
    } else {
      item(L, &x->cs, 3, i);
    }
    slice_args(L, x, 4, i, a);
    for (int k = 0; k < 3; k++)
      col[(2 + k) * n + i - 1] = a[k];
  }
  lua_settop(L, 7);
  for (int k = 0; k < 5; k++)
    push_ints(L, col + k * n, n);
  return 5;
}

/* ---- page_markers ---- */

/* page_markers(ts, kind, arg, n, t0, env) -> mt, mk, ma: the markers'
 * columns of the page's data (jobque_profile.page's data), each
 * "x1,x2,...": times as integer ns since t0, kinds interned in
 * env.kinds/kind_index, args as the report shows them (null; an
 * integer plain, or quoted beyond 2^53; a finite float to 14 digits;
 * anything else (a string, a boolean, inf, nan) through env.other(arg),
 * which returns its JSON text). */
static int l_page_markers(lua_State *L) {
  colset cs;
  for (int k = 1; k <= 3; k++)
    col_find(L, &cs, k, 1);
  lua_Integer n = luaL_checkinteger(L, 4);
  double t0 = luaL_checknumber(L, 5);
  luaL_checktype(L, 6, LUA_TTABLE);
  luaL_argcheck(L, n >= 0 && (lua_Unsigned)n < ((size_t)-1 / 8) / (2 * sizeof(lua_Integer)), 4, "count out of range");
  lua_settop(L, 6);
  lua_Integer *col = lua_newuserdatauv(L, (size_t)(n ? n : 1) * 2 * sizeof *col, 0); /* 7 */
  seen *kinds = lua_newuserdatauv(L, sizeof *kinds, 0);                              /* 8 */
  memset(kinds, 0, sizeof *kinds);
  const jq_column *cts = cs.c[1];
  for (lua_Integer i = 1; i <= n; i++) {
    int ok;
    double us;
    int tag = cts && i <= (lua_Integer)cts->n ? jq_cell_tag(cts, (size_t)i - 1) : -1;
    if (tag == JQ_C_NUM) {
      us = jq_cell_num(cts, (size_t)i - 1), ok = 1;
    } else {
      item(L, &cs, 1, i);
      us = lua_tonumberx(L, -1, &ok);
      lua_pop(L, 1);
    }
    if (!ok)
      return luaL_error(L, "page_markers: time %I is not a number", (LUAI_UACINT)i);
    const char *why = NULL;
    col[i - 1] = page_ns_of(us, t0, &why);
    if (why)
      return luaL_error(L, "page_markers: time %I is %s", (LUAI_UACINT)i, why);
    col[n + i - 1] = intern_item(L, &cs, 2, i, kinds, 6, "kinds", "kind_index");
  }
  for (int k = 0; k < 2; k++)
    push_ints(L, col + k * n, n); /* 9, 10 */
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (lua_Integer i = 1; i <= n; i++) {
    char text[48];
    size_t len = 0;
    if (i > 1)
      text[len++] = ',';
    int t = item(L, &cs, 3, i);
    int isint = 0; /* a number only: a string stays a string ("12", "0x10"), as in the report */
    lua_Integer v = t == LUA_TNUMBER ? lua_tointegerx(L, -1, &isint) : 0;
    if (t == LUA_TNIL) {
      memcpy(text + len, "null", 4), len += 4;
    } else if (isint) { /* math.tointeger(arg): beyond 2^53 a JavaScript number would round it */
      int quote = v > ((lua_Integer)1 << 53) || v < -((lua_Integer)1 << 53);
      if (quote)
        text[len++] = '"';
      len += put_i64(text + len, v);
      if (quote)
        text[len++] = '"';
    } else if (t == LUA_TNUMBER && isfinite(lua_tonumber(L, -1))) {
      len += (size_t)snprintf(text + len, sizeof text - len, "%.14g", (double)lua_tonumber(L, -1));
    } else { /* a string, a boolean, inf or nan: env.other(arg) -> its JSON text */
      lua_pop(L, 1);
      luaL_addlstring(&b, text, len); /* the comma */
      lua_getfield(L, 6, "other");
      item(L, &cs, 3, i);
      lua_call(L, 1, 1);
      luaL_checkstring(L, -1);
      luaL_addvalue(&b);
      continue;
    }
    lua_pop(L, 1);
    luaL_addlstring(&b, text, len);
  }
  luaL_pushresult(&b);
  return 3;
}

/* ---- page_values ---- */

/* The number at idx as the page's JSON writes it:
 * integers (and integral floats) plain, other finite floats to 17 digits,
 * anything else null. Its length in out (at least 32 bytes). */
static size_t page_number(lua_State *L, int idx, char *out, size_t size) {
  if (lua_isinteger(L, idx))
    return put_i64(out, (long long)lua_tointeger(L, idx));
  int ok;
  double d = lua_tonumberx(L, idx, &ok);
  if (!ok || !isfinite(d)) {
    memcpy(out, "null", 4);
    return 4;
  }
  if (d == floor(d) && d >= -0x1p63 && d < 0x1p63)
    return put_i64(out, (long long)d);
  return (size_t)snprintf(out, size, "%.17g", d);
}

/* a < b for two numbers as Lua compares them (exactly, across the integer
 * and float subtypes): by the subtype when both share it, else lua_compare
 * on their indices. */
static int num_less(lua_State *L, int ia, int ib) {
  int a_int = lua_isinteger(L, ia), b_int = lua_isinteger(L, ib);
  if (a_int && b_int)
    return lua_tointeger(L, ia) < lua_tointeger(L, ib);
  if (!a_int && !b_int)
    return lua_tonumber(L, ia) < lua_tonumber(L, ib);
  return lua_compare(L, ia, ib, LUA_OPLT);
}

/* page_values over a native column of one kind of number (integers or
 * floats): the cells read directly, the same text and extremes. */
static int native_values(lua_State *L, const jq_column *c, size_t n) {
  int ints = c->tag0 == JQ_C_INT;
  int64_t imin = INT64_MAX, imax = INT64_MIN;
  double dmin = HUGE_VAL, dmax = -HUGE_VAL;
  luaL_Buffer b;
  blk w;
  luaL_buffinit(L, &b);
  blk_open(&w, &b);
  for (size_t i = 0; i < n; i++) {
    if (BLK - w.len < 40)
      blk_more(&w);
    char *p = w.p + w.len;
    size_t len = 0;
    if (i > 0)
      p[len++] = ',';
    if (ints) {
      int64_t v = jq_cell_int(c, i);
      if (v < imin)
        imin = v;
      if (v > imax)
        imax = v;
      len += put_i64(p + len, (long long)v);
    } else {
      double d = jq_cell_num(c, i);
      if (d < dmin)
        dmin = d;
      if (dmax < d)
        dmax = d;
      if (!isfinite(d))
        memcpy(p + len, "null", 4), len += 4;
      else if (d == floor(d) && d >= -0x1p63 && d < 0x1p63)
        len += put_i64(p + len, (long long)d);
      else
        len += (size_t)snprintf(p + len, 39, "%.17g", d);
    }
    w.len += len;
  }
  blk_close(&w);
  luaL_pushresult(&b);
  if (ints && n > 0) {
    lua_pushinteger(L, (lua_Integer)imin);
    lua_pushinteger(L, (lua_Integer)imax);
  } else {
    lua_pushnumber(L, dmin);
    lua_pushnumber(L, dmax);
  }
  return 3;
}

/* page_values(values, n) -> "v1,v2,...", min, max: a counter track's
 * values as the page writes them, and the least and greatest (as they
 * are; math.huge and -math.huge when n is 0). One pass: the text and the
 * extremes (kept at stack slots 3 and 4, below the buffer's). */
static int l_page_values(lua_State *L) {
  colset cs;
  col_find(L, &cs, 1, 1);
  lua_Integer n = luaL_checkinteger(L, 2);
  lua_settop(L, 2);
  const jq_column *c = cs.c[1];
  if (c && !c->tag && (c->tag0 == JQ_C_INT || c->tag0 == JQ_C_NUM) && n >= 0 && (lua_Unsigned)n <= c->n)
    return native_values(L, c, (size_t)n);
  lua_pushnumber(L, HUGE_VAL);  /* 3: min */
  lua_pushnumber(L, -HUGE_VAL); /* 4: max */
  for (lua_Integer i = 1; i <= n; i++) { /* checked first: no error once the buffer is open */
    if (item(L, &cs, 1, i) != LUA_TNUMBER)
      return luaL_error(L, "page_values: item %I is not a number", (LUAI_UACINT)i);
    if (num_less(L, 5, 3)) {
      lua_pushvalue(L, 5);
      lua_replace(L, 3);
    }
    if (num_less(L, 4, 5)) {
      lua_pushvalue(L, 5);
      lua_replace(L, 4);
    }
    lua_pop(L, 1);
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (lua_Integer i = 1; i <= n; i++) {
    char *p = luaL_prepbuffsize(&b, 40);
    size_t len = 0;
    if (i > 1)
      p[len++] = ',';
    item(L, &cs, 1, i);
    len += page_number(L, -1, p + len, 39);
    lua_pop(L, 1);
    luaL_addsize(&b, len);
  }
  luaL_pushresult(&b);
  lua_pushvalue(L, 3);
  lua_pushvalue(L, 4);
  return 3;
}

void jq_open_page(lua_State *L) {
  static const luaL_Reg fns[] = {{"page_ns", l_page_ns},
                                 {"page_lane", l_page_lane},
                                 {"page_markers", l_page_markers},
                                 {"page_values", l_page_values},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  jq_open_page_graph(L);
}
