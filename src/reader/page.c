/*
 * page.c - the timeline page's data columns (jobque_profile.page's data):
 * page_ns, page_lane, page_markers, page_values and page_samples, one call
 * per column; the graph's part is page_graph.c's (opened with these).
 *
 * Columns are read through reader/columns.h's jq_col; numbers written by
 * reader/number_text.h's page rules (jq_page_number, jq_page_ns) into a
 * luaL_Buffer, blocks of it reserved at a time (a page holds millions of
 * them: no printf per number but for floats that are not integers). A
 * marker's arg has a rule of its own (marker_arg: a finite float to 14
 * digits, an integer beyond 2^53 quoted). Strings seen again are found through a small
 * cache keyed by the address of their bytes (a Lua string does not move
 * while its column holds it) before the writer's Lua tables are asked.
 * Owns: nothing past a call (scratch memory is a userdata or the
 * buffer's). Must not: be used by the record path.
 * Thread safety: reentrant (one lua_State per call).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/columns.h"
#include "reader/graph.h"
#include "reader/number_text.h"
#include "reader/reader.h"

/* Opens argument arg as a column (pushes one value), or raises. */
static void open_arg(lua_State *L, int arg, jq_col *col) {
  if (!jq_col_open(L, arg, col))
    luaL_typeerror(L, arg, "table");
}

/* ---- numbers ---- */

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

static void blk_close(blk *w) { luaL_addsize(w->b, w->len); }

/* Room for one more item (a comma and a number): a new block when full. */
static inline char *blk_room(blk *w) {
  if (BLK - w->len < JQ_NUMBER_TEXT + 1) {
    luaL_addsize(w->b, w->len);
    w->p = luaL_prepbuffsize(w->b, BLK);
    w->len = 0;
  }
  return w->p + w->len;
}

/* Appends ",v" (or "v" when first). */
static inline void blk_int(blk *w, lua_Integer v, int first) {
  char *p = blk_room(w);
  if (!first)
    *p++ = ',', w->len++;
  w->len += jq_text_int(p, v);
}

/* Appends ",x" (or "x" when first) as the page writes a number. */
static inline void blk_number(blk *w, jq_num x, int first) {
  char *p = blk_room(w);
  if (!first)
    *p++ = ',', w->len++;
  w->len += jq_page_number(p, x);
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

/* Item i of a column of times as the page's ns since t0, or raises
 * (`fn` and `what` name it). */
static lua_Integer ns_at(lua_State *L, const jq_col *col, lua_Integer i, lua_Number t0, const char *fn,
                         const char *what) {
  jq_num us = jq_col_num(L, col, i);
  lua_Integer ns = 0;
  if (us.t == JQ_NUM_NIL)
    luaL_error(L, "%s: %s %I is not a number", fn, what, (LUAI_UACINT)i);
  if (!jq_page_ns(jq_num_tof(us), t0, &ns))
    luaL_error(L, "%s: %s %I is out of range", fn, what, (LUAI_UACINT)i);
  return ns;
}

/* page_ns(col, n, t0) -> "x1,x2,...": col[1..n] (microseconds, numbers) as
 * integer nanoseconds since t0 (jq_page_ns). */
static int l_page_ns(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 2);
  lua_Number t0 = luaL_checknumber(L, 3);
  lua_settop(L, 3);
  jq_col col;
  open_arg(L, 1, &col); /* 4 */
  luaL_Buffer b;
  blk w;
  luaL_buffinit(L, &b);
  blk_open(&w, &b);
  for (lua_Integer i = 1; i <= n; i++)
    blk_int(&w, ns_at(L, &col, i, t0, "page_ns", "item"), i == 1);
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

/* The index of item i of a column in list/index (env's fields), through
 * the cache c when it is a string (a hit pushes nothing). */
static lua_Integer intern_item(lua_State *L, const jq_col *col, lua_Integer i, seen *c, int env, const char *list,
                               const char *index) {
  size_t len;
  const char *key = jq_col_str(L, col, i, &len);
  unsigned k = key ? slot_of(key) : 0;
  if (key && c->key[k] == key)
    return c->val[k];
  jq_col_push(L, col, i);
  lua_Integer v = intern_top(L, env, list, index);
  if (key) /* still alive: its column (or the load's strings) holds it */
    c->key[k] = key, c->val[k] = v;
  return v;
}

/* Item i of a column as an integer (a float or a string that is one too),
 * or raises. */
static lua_Integer int_at(lua_State *L, const jq_col *col, lua_Integer i, const char *what) {
  jq_num x = jq_col_num(L, col, i);
  if (x.t == JQ_NUM_INT)
    return x.v.i;
  jq_col_push(L, col, i);
  int ok;
  lua_Integer v = lua_tointegerx(L, -1, &ok);
  if (!ok)
    luaL_error(L, "page_lane: %s %I is not an integer", what, (LUAI_UACINT)i);
  lua_pop(L, 1);
  return v;
}

/* ---- page_lane ---- */

/* What page_lane keeps across slices: its columns, env's copy columns
 * (opened when env has them) and caches. */
typedef struct lane_ctx {
  jq_col cat, sname, args, job, cbytes, cjob, ccat;
  int has_copies;
  int env, quoted, list; /* stack indices: env, env.quoted, env.args */
  lua_Integer nargs;     /* #env.args */
  seen names, cats;
  const char *cat_key[CACHE_N]; /* a copy's category -> its JSON text (in env.quoted) */
  const char *cat_text[CACHE_N];
  size_t cat_len[CACHE_N];
  int job_key_known;
  lua_Integer job_key;
} lane_ctx;

/* The quoted JSON text of copy ci's category (kept alive by env.quoted). */
static const char *copy_category(lua_State *L, lane_ctx *x, lua_Integer ci, size_t *cat_len) {
  size_t len;
  const char *name = jq_col_str(L, &x->ccat, ci, &len);
  unsigned k = name ? slot_of(name) : 0;
  if (name && x->cat_key[k] == name) {
    *cat_len = x->cat_len[k];
    return x->cat_text[k];
  }
  jq_col_push(L, &x->ccat, ci);
  lua_gettable(L, x->quoted); /* quoted[ccat[ci]] */
  const char *cat = luaL_checklstring(L, -1, cat_len);
  if (name)
    x->cat_key[k] = name, x->cat_text[k] = cat, x->cat_len[k] = *cat_len;
  lua_pop(L, 1); /* still held by env.quoted */
  return cat;
}

/* A copy's args (the copy's index on top, popped) as the page's JSON,
 * appended to env.args (not interned: a trace holds a million copies,
 * nearly all different): its index. */
static lua_Integer copy_args(lua_State *L, lane_ctx *x) {
  lua_Integer ci = lua_tointeger(L, -1);
  lua_pop(L, 1);
  if (!x->has_copies)
    luaL_error(L, "page_lane: env has no copy columns (cbytes, cjob, ccat, quoted)");
  size_t cat_len;
  const char *cat = copy_category(L, x, ci, &cat_len);
  lua_Integer bytes = int_at(L, &x->cbytes, ci, "copy's bytes"), job = int_at(L, &x->cjob, ci, "copy's job");
  luaL_Buffer b; /* 29 bytes of keys and braces, two numbers of at most 20 characters, the category */
  char *p = luaL_buffinitsize(L, &b, cat_len + 72);
  size_t len = 0;
  memcpy(p, "{\"bytes\":", 9), len = 9;
  len += jq_text_int(p + len, bytes);
  memcpy(p + len, ",\"category\":", 12), len += 12;
  memcpy(p + len, cat, cat_len), len += cat_len;
  memcpy(p + len, ",\"job\":", 7), len += 7;
  len += jq_text_int(p + len, job);
  p[len++] = '}';
  luaL_pushresultsize(&b, len);
  lua_rawseti(L, x->list, ++x->nargs);
  return x->nargs - 1;
}

/* The page's a, ak, av of slice i (its args at the top, popped). */
static void slice_args(lua_State *L, lane_ctx *x, lua_Integer i, lua_Integer *out) {
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
    x->nargs = (lua_Integer)lua_rawlen(L, x->list); /* it may have added one */
  } else {
    lua_pop(L, 1);
    jq_col_push(L, &x->job, i);
    if (lua_toboolean(L, -1)) { /* args { job = N } alone */
      out[2] = int_at(L, &x->job, i, "job");
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

/* Opens env's copy columns (cbytes, cjob, ccat) and quoted, when it has
 * them all (a lane without copies may be written without). */
static void open_copies(lua_State *L, lane_ctx *x) {
  jq_col *c[] = {&x->cbytes, &x->cjob, &x->ccat};
  const char *f = "cbytes\0cjob\0ccat\0";
  x->has_copies = 1;
  for (int k = 0; k < 3; k++, f += strlen(f) + 1) {
    lua_getfield(L, x->env, f);
    if (jq_col_open(L, -1, c[k]))
      lua_remove(L, -2), c[k]->idx = lua_gettop(L);
    else
      x->has_copies = 0;
  }
  lua_getfield(L, x->env, "quoted");
  x->quoted = lua_gettop(L);
  x->has_copies = x->has_copies && !lua_isnil(L, -1);
}

/* Slice i's category index (env.cat_index at stack index ci). */
static lua_Integer cat_index(lua_State *L, lane_ctx *x, int ci, lua_Integer i) {
  size_t len;
  const char *key = jq_col_str(L, &x->cat, i, &len);
  unsigned ck = key ? slot_of(key) : 0;
  if (key && x->cats.key[ck] == key)
    return x->cats.val[ck];
  jq_col_push(L, &x->cat, i);
  if (lua_rawget(L, ci) != LUA_TNUMBER)
    luaL_error(L, "page_lane: slice %I's category has no index", (LUAI_UACINT)i);
  lua_Integer v = lua_tointeger(L, -1);
  if (key)
    x->cats.key[ck] = key, x->cats.val[ck] = v;
  lua_pop(L, 1);
  return v;
}

/* page_lane(cat, sname, args, job, n, env) -> c, n, a, ak, av: the page's
 * columns of a lane (jobque_profile.page's data), each "x1,x2,...";
 * env: cat_index, names/name_index, args (a copy's appended; other
 * args interned by env.other in args/arg_index), keys/key_index,
 * cbytes, ccat, cjob (the copy columns), quoted, other(args, i). */
static int l_page_lane(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 5);
  luaL_checktype(L, 6, LUA_TTABLE);
  luaL_argcheck(L, n >= 0 && (lua_Unsigned)n < ((size_t)-1 / 8) / (5 * sizeof(lua_Integer)), 5, "count out of range");
  lua_settop(L, 6);
  lua_Integer *col = lua_newuserdatauv(L, (size_t)(n ? n : 1) * 5 * sizeof *col, 0); /* 7 */
  lua_getfield(L, 6, "cat_index");                                                   /* 8 */
  lane_ctx *x = lua_newuserdatauv(L, sizeof *x, 0);                                  /* 9 */
  memset(x, 0, sizeof *x);
  x->env = 6;
  lua_getfield(L, 6, "args"); /* 10 */
  luaL_checktype(L, 10, LUA_TTABLE);
  x->list = 10, x->nargs = (lua_Integer)lua_rawlen(L, 10);
  open_arg(L, 1, &x->cat); /* 11 .. 14 */
  open_arg(L, 2, &x->sname);
  open_arg(L, 3, &x->args);
  open_arg(L, 4, &x->job);
  open_copies(L, x);
  for (lua_Integer i = 1; i <= n; i++) {
    col[i - 1] = cat_index(L, x, 8, i);
    col[n + i - 1] = intern_item(L, &x->sname, i, &x->names, 6, "names", "name_index");
    lua_Integer a[3];
    const jq_column *ca = x->args.c;
    int atag = ca && i <= (lua_Integer)ca->n ? jq_cell_tag(ca, (size_t)i - 1) : -1;
    if (atag == JQ_C_NIL) /* no args: the common case read without a push */
      lua_pushnil(L);
    else
      jq_col_push(L, &x->args, i);
    slice_args(L, x, i, a);
    for (int k = 0; k < 3; k++)
      col[(2 + k) * n + i - 1] = a[k];
  }
  lua_settop(L, 7);
  for (int k = 0; k < 5; k++)
    push_ints(L, col + k * n, n);
  return 5;
}

/* ---- page_markers ---- */

/* Item i of the markers' arg column as the page writes it, added to b
 * (its comma first unless first): null; an integer plain, or quoted beyond
 * 2^53 (a JavaScript number would round it); a finite float to 14 digits;
 * anything else (a string, a boolean, inf, nan) through env.other(arg),
 * which returns its JSON text. */
static void marker_arg(lua_State *L, luaL_Buffer *b, int env, const jq_col *arg, lua_Integer i) {
  char text[48];
  size_t len = 0;
  if (i > 1)
    text[len++] = ',';
  int t = jq_col_push(L, arg, i), isint = 0; /* a number only: a string stays a string ("12", "0x10"), as in the report */
  lua_Integer v = t == LUA_TNUMBER ? lua_tointegerx(L, -1, &isint) : 0;
  if (t == LUA_TNIL) {
    memcpy(text + len, "null", 4), len += 4;
  } else if (isint) {
    int quote = v > ((lua_Integer)1 << 53) || v < -((lua_Integer)1 << 53);
    if (quote)
      text[len++] = '"';
    len += jq_text_int(text + len, v);
    if (quote)
      text[len++] = '"';
  } else if (t == LUA_TNUMBER && isfinite(lua_tonumber(L, -1))) {
    len += (size_t)snprintf(text + len, sizeof text - len, "%.14g", (double)lua_tonumber(L, -1));
  } else {
    lua_pop(L, 1);
    luaL_addlstring(b, text, len); /* the comma */
    lua_getfield(L, env, "other");
    jq_col_push(L, arg, i);
    lua_call(L, 1, 1);
    luaL_checkstring(L, -1);
    luaL_addvalue(b);
    return;
  }
  lua_pop(L, 1);
  luaL_addlstring(b, text, len);
}

/* page_markers(ts, kind, arg, n, t0, env) -> mt, mk, ma: the markers'
 * columns of the page's data (jobque_profile.page's data), each
 * "x1,x2,...": times as integer ns since t0, kinds interned in
 * env.kinds/kind_index, args as marker_arg writes them. */
static int l_page_markers(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 4);
  lua_Number t0 = luaL_checknumber(L, 5);
  luaL_checktype(L, 6, LUA_TTABLE);
  luaL_argcheck(L, n >= 0 && (lua_Unsigned)n < ((size_t)-1 / 8) / (2 * sizeof(lua_Integer)), 4, "count out of range");
  lua_settop(L, 6);
  jq_col ts, kind, arg;
  open_arg(L, 1, &ts); /* 7 .. 9 */
  open_arg(L, 2, &kind);
  open_arg(L, 3, &arg);
  lua_Integer *col = lua_newuserdatauv(L, (size_t)(n ? n : 1) * 2 * sizeof *col, 0); /* 10 */
  seen *kinds = lua_newuserdatauv(L, sizeof *kinds, 0);                              /* 11 */
  memset(kinds, 0, sizeof *kinds);
  for (lua_Integer i = 1; i <= n; i++) {
    col[i - 1] = ns_at(L, &ts, i, t0, "page_markers", "time");
    col[n + i - 1] = intern_item(L, &kind, i, kinds, 6, "kinds", "kind_index");
  }
  for (int k = 0; k < 2; k++)
    push_ints(L, col + k * n, n); /* 12, 13 */
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (lua_Integer i = 1; i <= n; i++)
    marker_arg(L, &b, 6, &arg, i);
  luaL_pushresult(&b);
  return 3;
}

/* ---- page_values ---- */

/* page_values(values, n) -> "v1,v2,...", min, max: a counter track's
 * values as the page writes them (jq_page_number), and the least and
 * greatest as they are (math.huge and -math.huge when n is 0). */
static int l_page_values(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 2);
  lua_settop(L, 2);
  jq_col col;
  open_arg(L, 1, &col); /* 3 */
  jq_num lo = jq_num_flt(HUGE_VAL), hi = jq_num_flt(-HUGE_VAL);
  luaL_Buffer b;
  blk w;
  luaL_buffinit(L, &b);
  blk_open(&w, &b);
  for (lua_Integer i = 1; i <= n; i++) {
    jq_num x = jq_col_num(L, &col, i);
    if (x.t == JQ_NUM_NIL)
      return luaL_error(L, "page_values: item %I is not a number", (LUAI_UACINT)i);
    if (jq_num_lt(x, lo))
      lo = x;
    if (jq_num_lt(hi, x))
      hi = x;
    blk_number(&w, x, i == 1);
  }
  blk_close(&w);
  luaL_pushresult(&b);
  jq_num_push(L, lo);
  jq_num_push(L, hi);
  return 3;
}

/* ---- page_samples ---- */

/* Item i of a column of indexes (1 .. max) as the page's 0-based index,
 * or raises naming the column. */
static lua_Integer index_at(lua_State *L, const jq_col *col, lua_Integer i, lua_Integer max, const char *what) {
  jq_num x = jq_col_num(L, col, i);
  if (x.t != JQ_NUM_INT || x.v.i < 1 || x.v.i > max)
    luaL_error(L, "page_samples: sample %I's %s is not an index from 1 to %I", (LUAI_UACINT)i, what,
               (LUAI_UACINT)max);
  return x.v.i - 1;
}

/* page_samples(ts, lane, frame, weight, cat, n, t0, env) -> ts, lane,
 * leaf, w, c: the samples' columns of the page's data (jobque_profile.
 * page's sample_data), each "x1,x2,...": times as integer ns since t0,
 * lanes and leaf frames 0-based (env.nlanes, env.nframes: their counts),
 * weights (finite, from 0) as the page writes numbers, categories (names)
 * interned in env.names/name_index. */
static int l_page_samples(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 6);
  lua_Number t0 = luaL_checknumber(L, 7);
  luaL_checktype(L, 8, LUA_TTABLE);
  luaL_argcheck(L, n >= 0 && (lua_Unsigned)n < ((size_t)-1 / 8) / (4 * sizeof(lua_Integer)), 6, "count out of range");
  lua_settop(L, 8);
  lua_getfield(L, 8, "nlanes");  /* 9 */
  lua_getfield(L, 8, "nframes"); /* 10 */
  lua_Integer nlanes = luaL_checkinteger(L, 9), nframes = luaL_checkinteger(L, 10);
  jq_col ts, lane, frame, weight, cat;
  open_arg(L, 1, &ts); /* 11 .. 15 */
  open_arg(L, 2, &lane);
  open_arg(L, 3, &frame);
  open_arg(L, 4, &weight);
  open_arg(L, 5, &cat);
  lua_Integer *col = lua_newuserdatauv(L, (size_t)(n ? n : 1) * 4 * sizeof *col, 0); /* 16 */
  seen *cats = lua_newuserdatauv(L, sizeof *cats, 0);                                /* 17 */
  memset(cats, 0, sizeof *cats);
  for (lua_Integer i = 1; i <= n; i++) {
    size_t len;
    col[i - 1] = ns_at(L, &ts, i, t0, "page_samples", "time");
    col[n + i - 1] = index_at(L, &lane, i, nlanes, "lane");
    col[2 * n + i - 1] = index_at(L, &frame, i, nframes, "frame");
    if (!jq_col_str(L, &cat, i, &len))
      luaL_error(L, "page_samples: sample %I's category is not a string", (LUAI_UACINT)i);
    col[3 * n + i - 1] = intern_item(L, &cat, i, cats, 8, "names", "name_index");
  }
  for (int k = 0; k < 3; k++)
    push_ints(L, col + k * n, n); /* 18 .. 20 */
  luaL_Buffer b;
  blk w;
  luaL_buffinit(L, &b);
  blk_open(&w, &b);
  for (lua_Integer i = 1; i <= n; i++) {
    jq_num x = jq_col_num(L, &weight, i);
    if (x.t == JQ_NUM_NIL || !(jq_num_tof(x) >= 0 && jq_num_tof(x) <= DBL_MAX))
      return luaL_error(L, "page_samples: sample %I's weight is not a finite number from 0", (LUAI_UACINT)i);
    blk_number(&w, x, i == 1);
  }
  blk_close(&w);
  luaL_pushresult(&b);          /* 21 */
  push_ints(L, col + 3 * n, n); /* 22 */
  return 5;
}

void jq_open_page(lua_State *L) {
  static const luaL_Reg fns[] = {{"page_ns", l_page_ns},
                                 {"page_lane", l_page_lane},
                                 {"page_markers", l_page_markers},
                                 {"page_values", l_page_values},
                                 {"page_samples", l_page_samples},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  jq_open_page_graph(L);
}
