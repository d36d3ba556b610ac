/*
 * stats.c - the per-event loops of jobque_profile.stats in C (issue 12).
 *
 * stats_lanes (the lane sweeps, which keep their busy pieces for the marker
 * units, and the marker units themselves), stats_counters and stats_copies
 * read a trace model's Lua columns and give stats.compute what its Lua
 * loops would: the same arithmetic in the same order with Lua's number
 * semantics (integer and float subtypes, integers wrapping, comparisons
 * between the two exact), so the figures are the same bits and print the
 * same. On anything they do not reproduce exactly (a value of another type
 * where a number or string is expected, a column with a metatable, ...)
 * they return nil and stats.lua runs its own loops.
 * Owns: the units' userdata and the busy pieces' (a unit's busy time by
 * category is summed from them when it is read); scratch memory
 * only for a call (a userdata with __gc, freed before returning).
 * Must not: change the model. Thread safety: reentrant (one lua_State per call).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/columns.h"
#include "reader/number.h"
#include "reader/scratch.h"
#include "reader/sort.h"
#include "reader/reader.h"

/* The value on top (popped) as a number (NIL: not a number). */
static inline jq_num pop_num(lua_State *L) {
  jq_num x = jq_num_at(L, -1);
  lua_pop(L, 1);
  return x;
}

/* ---- columns: a Lua list, or the loader's native cells (columns.h) ---- */

/* The value at idx as a time, floats mostly: a number with a fraction is
 * a float, and one call tells. */
static inline jq_num time_at(lua_State *L, int idx, int type) {
  if (type == LUA_TNUMBER) {
    lua_Number d = lua_tonumber(L, idx);
    if (fabs(d) < 0x1p52 && (lua_Number)(lua_Integer)d != d)
      return jq_num_flt(d);
  }
  return type == LUA_TNUMBER ? jq_num_at(L, idx) : jq_num_nil();
}

/* Columns are read BATCH rows at a time: pushing a value and popping it
 * one by one costs twice as much as pushing a batch and dropping it at
 * once (lua_settop is no cheap call). */
#define BATCH 16

/* Pushes the rows i .. i + m - 1 of the columns cols[0 .. ncols - 1], row
 * by row; their types in types[]. */
static void push_rows(lua_State *L, const jq_col *const *cols, int ncols, lua_Integer i, int m, int *types) {
  for (int r = 0; r < m; r++)
    for (int c = 0; c < ncols; c++)
      types[r * ncols + c] = jq_col_push(L, cols[c], i + r);
}

static inline int batch_rows(lua_Integer i, lua_Integer last) {
  return last - i + 1 < BATCH ? (int)(last - i + 1) : BATCH;
}

/* ---- reading the model ---- */

/* Whether the value at idx is a table without a metatable. */
static int plain_table(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TTABLE)
    return 0;
  if (lua_getmetatable(L, idx)) {
    lua_pop(L, 1);
    return 0;
  }
  return 1;
}

/* The value at idx opened as a column (one value pushed) when it is a
 * native column or a table without a metatable: 1; else 0, nothing pushed. */
static int open_column(lua_State *L, int idx, jq_col *col) {
  if (!jq_column_test(L, idx) && !plain_table(L, idx))
    return 0;
  return jq_col_open(L, idx, col);
}

/* t[field] opened as open_column does: 1 (one value pushed), or 0. */
static int get_column(lua_State *L, int t, const char *field, jq_col *col) {
  jq_column_field(L, t, field);
  int ok = open_column(L, -1, col);
  lua_remove(L, ok ? -2 : -1);
  col->idx = lua_gettop(L);
  return ok;
}

/* t[field] as an integer (1), or 0 when it is not one. */
static int get_int_field(lua_State *L, int t, const char *field, lua_Integer *out) {
  lua_getfield(L, t, field);
  int ok = lua_isinteger(L, -1);
  *out = ok ? lua_tointeger(L, -1) : 0;
  lua_pop(L, 1);
  return ok;
}

/* ---- scratch memory of a call: jq_scratch (scratch.h) ---- */

#define NSCRATCH 6

/* Buffer k of s as room for count items of size bytes (contents kept). */
static inline void *scratch_get(lua_State *L, jq_scratch *s, int k, size_t count, size_t size) {
  return jq_scratch_room(L, &s->b[k], count, size);
}

/* ---- count_sorted, count_in ---- */

/* The index of the first number of list[1..len] >= x (> x when strict);
 * -1 when one it compares is not a number. */
static lua_Integer first_at_least(lua_State *L, const jq_col *list, lua_Integer len, jq_num x, int strict) {
  lua_Integer lo = 1, hi = len + 1;
  while (lo < hi) {
    lua_Integer mid = lo + (hi - lo) / 2;
    jq_num t = jq_col_num(L, list, mid);
    if (t.t == JQ_NUM_NIL)
      return -1;
    if (strict ? jq_num_le(t, x) : jq_num_lt(t, x))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* How many of the sorted times in the table at idx lie in [a, b] (false
 * or nil: an empty list, when `none` allows it). */
static int count_sorted(lua_State *L, int idx, int none, jq_num a, jq_num b, lua_Integer *out) {
  *out = 0;
  if (none && !lua_toboolean(L, idx))
    return 1;
  jq_col col;
  if (!open_column(L, idx, &col))
    return 0;
  lua_Integer len = col.n;
  lua_Integer hi = first_at_least(L, &col, len, b, 1), lo = first_at_least(L, &col, len, a, 0);
  lua_pop(L, 1);
  if (hi < 0 || lo < 0)
    return 0;
  *out = hi - lo;
  return 1;
}

/* How many of the items {ts} of the list at idx (up to the first nil) have ts in [a, b]. */
static int count_in(lua_State *L, int idx, jq_num a, jq_num b, lua_Integer *out) {
  *out = 0;
  if (!plain_table(L, idx))
    return 0;
  for (lua_Integer i = 1;; i++) {
    int type = lua_rawgeti(L, idx, i);
    if (type == LUA_TNIL) {
      lua_pop(L, 1);
      return 1;
    }
    if (type != LUA_TTABLE) {
      lua_pop(L, 1);
      return 0;
    }
    lua_getfield(L, -1, "ts");
    jq_num ts = pop_num(L);
    lua_pop(L, 1);
    if (ts.t == JQ_NUM_NIL)
      return 0;
    if (jq_num_le(a, ts) && jq_num_le(ts, b))
      (*out)++;
  }
}

/* ---- marker units ---- */

#define UNITS_MT "jobque.stats_units"

/* A marker kind's units: unit j runs from from[j] to from[j + 1] (from[n + 1]
 * is the range's end), its marker is model.marker_arg's idx[j]. Their busy
 * time by category is worked out when a unit is read (unit_sums), from the
 * busy pieces the lane sweeps kept. The userdata's user values: 1
 * model.marker_arg, 2 the category names. */
typedef struct units {
  size_t n;
  int floats; /* every from[] a float */
  jq_word *from;
  lua_Integer *idx;
  unsigned char *from_t;
} units;

static inline jq_num unit_from(const units *u, size_t j) {
  jq_num x;
  x.v = u->from[j - 1];
  x.t = u->from_t[j - 1];
  return x;
}

/* A new units userdata for n units (pushed); NULL when too large. */
static units *new_units(lua_State *L, size_t n) {
  if (n > ((size_t)1 << 40))
    return NULL;
  size_t cells = (n + 1) + n; /* words */
  size_t size = sizeof(units) + cells * sizeof(jq_word) + (n + 1);
  units *u = lua_newuserdatauv(L, size, 2);
  jq_word *w = (jq_word *)(u + 1);
  u->n = n;
  u->from = w;
  u->idx = (lua_Integer *)(w + n + 1);
  u->from_t = (unsigned char *)(w + cells);
  luaL_setmetatable(L, UNITS_MT);
  return u;
}

/* The busy pieces of the lane sweeps: [x, y) of category c (1-based), the
 * lanes one after the other, each lane's in time order; a lane's pieces
 * are disjoint, so their starts and their ends both ascend. */
typedef struct piece {
  jq_word x, y;
  uint32_t c;
  unsigned char xt, yt;
} piece;

static inline jq_num piece_x(const piece *p) {
  jq_num v;
  v.v = p->x;
  v.t = p->xt;
  return v;
}

static inline jq_num piece_y(const piece *p) {
  jq_num v;
  v.v = p->y;
  v.t = p->yt;
  return v;
}

#define PIECES_MT "jobque.stats_pieces"

/* The pieces, shared by every kind's units (a userdata, the user value of
 * their row and top closures), and a unit's sums by category: sum[c - 1]
 * is set when seen[c - 1] is the current gen, touched[] lists the
 * categories set. */
typedef struct pieces {
  size_t n, nlanes, ncat;
  uint32_t gen;
  size_t *lane; /* lane l's pieces: p[lane[l] .. lane[l + 1]), the lanes that have any */
  piece *p;
  jq_word *sum;
  uint32_t *seen, *touched, *tmp; /* tmp: the merge sort's */
  unsigned char *sum_t;
} pieces;

/* A new pieces userdata (pushed) for n pieces over nlanes lanes and ncat
 * categories; NULL when too large. */
static pieces *new_pieces(lua_State *L, size_t n, size_t nlanes, size_t ncat) {
  size_t max = (size_t)1 << 40;
  if (n > max || nlanes > max || ncat > UINT32_MAX)
    return NULL;
  size_t size = sizeof(pieces) + n * sizeof(piece) + (nlanes + 1) * sizeof(size_t) + ncat * sizeof(jq_word) +
                3 * ncat * sizeof(uint32_t) + ncat;
  pieces *pc = lua_newuserdatauv(L, size, 0);
  pc->n = n, pc->nlanes = nlanes, pc->ncat = ncat, pc->gen = 0;
  pc->p = (piece *)(pc + 1);
  pc->lane = (size_t *)(pc->p + n);
  pc->sum = (jq_word *)(pc->lane + nlanes + 1);
  pc->seen = (uint32_t *)(pc->sum + ncat);
  pc->touched = pc->seen + ncat;
  pc->tmp = pc->touched + ncat;
  pc->sum_t = (unsigned char *)(pc->tmp + ncat);
  memset(pc->seen, 0, ncat * sizeof(uint32_t));
  luaL_setmetatable(L, PIECES_MT);
  return pc;
}

/* Unit j's busy time by category into pc's sums: each piece that overlaps
 * it, cut to it, added in the order the sweeps met them (lane after lane,
 * each in time), as stats.lua's unit_sums adds them, so the sums are the
 * same bits. The categories set are touched[0 .. returned count), in the
 * order first met. */
static size_t unit_sums(pieces *pc, const units *u, size_t j) {
  jq_num f = unit_from(u, j), t = unit_from(u, j + 1);
  if (++pc->gen == 0) { /* wrapped: no category is current */
    memset(pc->seen, 0, pc->ncat * sizeof(uint32_t));
    pc->gen = 1;
  }
  size_t m = 0;
  for (size_t l = 0; l < pc->nlanes; l++) {
    size_t lo = pc->lane[l], hi = pc->lane[l + 1], last = hi;
    while (lo < hi) { /* the first piece ending after f */
      size_t mid = lo + (hi - lo) / 2;
      if (jq_num_lt(f, piece_y(&pc->p[mid])))
        hi = mid;
      else
        lo = mid + 1;
    }
    for (size_t i = lo; i < last; i++) {
      const piece *p = &pc->p[i];
      jq_num x = piece_x(p), y = piece_y(p);
      if (jq_num_le(t, x))
        break;
      jq_num s = jq_num_lt(f, x) ? x : f, e = jq_num_lt(y, t) ? y : t;
      if (!jq_num_lt(s, e))
        continue;
      size_t c = p->c - 1;
      jq_num sum;
      if (pc->seen[c] != pc->gen) {
        pc->seen[c] = pc->gen;
        pc->touched[m++] = p->c;
        sum = jq_num_int(0);
      } else {
        sum.v = pc->sum[c];
        sum.t = pc->sum_t[c];
      }
      sum = jq_num_add(sum, jq_num_sub(e, s));
      pc->sum[c] = sum.v;
      pc->sum_t[c] = (unsigned char)sum.t;
    }
  }
  return m;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* Category c's sum. */
static inline jq_num num_of(const pieces *pc, uint32_t c) {
  jq_num x;
  x.v = pc->sum[c - 1];
  x.t = pc->sum_t[c - 1];
  return x;
}

/* Whether Lua's x ~= y holds for two numbers (NaN differs from everything). */
static int ne_num(jq_num x, jq_num y) {
  if ((x.t == JQ_NUM_FLT && x.v.f != x.v.f) || (y.t == JQ_NUM_FLT && y.v.f != y.v.f))
    return 1;
  return jq_num_lt(x, y) || jq_num_lt(y, x);
}

/* Whether category c comes before category d in a unit's list (stats.lua's
 * by_busy: more busy time first, then the name in Lua's order); the
 * category names at the stack index names. */
static int busier(lua_State *L, const pieces *pc, int names, uint32_t c, uint32_t d) {
  jq_num x, y;
  x.v = pc->sum[c - 1], x.t = pc->sum_t[c - 1];
  y.v = pc->sum[d - 1], y.t = pc->sum_t[d - 1];
  if (ne_num(x, y))
    return jq_num_lt(y, x);
  lua_rawgeti(L, names, (lua_Integer)c);
  lua_rawgeti(L, names, (lua_Integer)d);
  int before = lua_compare(L, -2, -1, LUA_OPLT);
  lua_pop(L, 2);
  return before;
}

/* Pushes unit j's arg, from and to; the units in upvalue 1, the pieces in
 * upvalue 2. Returns the units. */
static units *push_unit_head(lua_State *L, lua_Integer j) {
  units *u = luaL_checkudata(L, lua_upvalueindex(1), UNITS_MT);
  luaL_argcheck(L, j >= 1 && (lua_Unsigned)j <= u->n, 1, "no such unit");
  lua_getiuservalue(L, lua_upvalueindex(1), 1);
  jq_col arg;
  if (!jq_col_open(L, -1, &arg))
    luaL_error(L, "the units' marker_arg is no column");
  jq_col_push(L, &arg, u->idx[j - 1]);
  lua_replace(L, -3);
  lua_pop(L, 1);
  lua_replace(L, -2);
  jq_num_push(L, unit_from(u, (size_t)j));
  jq_num_push(L, unit_from(u, (size_t)j + 1));
  return u;
}

/* Sets by[k] = { name, busy } of category c (the list on top of the stack,
 * the names below it). */
static void push_entry(lua_State *L, const pieces *pc, uint32_t c, lua_Integer k) {
  jq_num time;
  time.v = pc->sum[c - 1];
  time.t = pc->sum_t[c - 1];
  lua_createtable(L, 0, 3);
  lua_rawgeti(L, -3, (lua_Integer)c);
  lua_setfield(L, -2, "name");
  jq_num_push(L, time);
  lua_setfield(L, -2, "busy");
  lua_rawseti(L, -2, k);
}

/* busier as jq_sort_stable's comparator. */
typedef struct busier_ctx {
  lua_State *L;
  const pieces *pc;
  int names;
} busier_ctx;

static int busier_less(void *ctx, uint32_t c, uint32_t d) {
  const busier_ctx *x = ctx;
  return busier(x->L, x->pc, x->names, c, d);
}

/* row(j) -> arg, from, to, by, busy: unit j's marker arg and bounds, its
 * busy time by category { name, busy, share }, busiest first (stats.lua's
 * by_busy), and its busy time in all, summed in the order of the categories
 * (the closure's upvalues: the units, the pieces): what unit_view makes of
 * the Lua's row, without a Lua comparison per step of the sort. */
static int l_unit_row(lua_State *L) {
  lua_Integer j = luaL_checkinteger(L, 1);
  units *u = push_unit_head(L, j);
  pieces *pc = luaL_checkudata(L, lua_upvalueindex(2), PIECES_MT);
  size_t m = unit_sums(pc, u, (size_t)j);
  qsort(pc->touched, m, sizeof *pc->touched, cmp_u32);
  jq_num busy = jq_num_int(0);
  for (size_t k = 0; k < m; k++) {
    jq_num x;
    x.v = pc->sum[pc->touched[k] - 1], x.t = pc->sum_t[pc->touched[k] - 1];
    busy = jq_num_add(busy, x);
  }
  lua_getiuservalue(L, lua_upvalueindex(1), 2); /* names */
  int names = lua_gettop(L);
  busier_ctx ctx = {L, pc, names};
  jq_sort_stable(pc->touched, pc->tmp, m, busier_less, &ctx);
  int positive = jq_num_lt(jq_num_int(0), busy);
  lua_createtable(L, m < INT32_MAX ? (int)m : 0, 0);
  for (size_t k = 0; k < m; k++) {
    push_entry(L, pc, pc->touched[k], (lua_Integer)k + 1);
    lua_rawgeti(L, -1, (lua_Integer)k + 1);
    if (positive)
      lua_pushnumber(L, jq_num_tof(num_of(pc, pc->touched[k])) / jq_num_tof(busy));
    else
      lua_pushinteger(L, 0);
    lua_setfield(L, -2, "share");
    lua_pop(L, 1);
  }
  lua_remove(L, names);
  jq_num_push(L, busy);
  return 5;
}

/* top(j, n) -> arg, from, to, by: as row(j), with only the first n
 * categories of by in stats.lua's order (the busiest), made without the
 * others' tables: a unit can hold thousands of categories, the report shows
 * three. An insertion into a list of n: n is small. */
static int l_unit_top(lua_State *L) {
  lua_Integer j = luaL_checkinteger(L, 1), want = luaL_checkinteger(L, 2);
  units *u = push_unit_head(L, j);
  pieces *pc = luaL_checkudata(L, lua_upvalueindex(2), PIECES_MT);
  size_t m = unit_sums(pc, u, (size_t)j);
  size_t n = want < 0 ? 0 : (lua_Unsigned)want < m ? (size_t)want : m, have = 0;
  lua_getiuservalue(L, lua_upvalueindex(1), 2); /* names */
  int names = lua_gettop(L);
  uint32_t *best = pc->touched; /* touched[0 .. have): the best so far, in order */
  for (size_t k = 0; k < m; k++) {
    uint32_t c = pc->touched[k];
    if (have == n && (n == 0 || !busier(L, pc, names, c, best[have - 1])))
      continue;
    size_t at = have < n ? have++ : have - 1;
    while (at > 0 && busier(L, pc, names, c, best[at - 1])) {
      best[at] = best[at - 1];
      at--;
    }
    best[at] = c; /* at <= k: no category not yet read is overwritten */
  }
  lua_createtable(L, (int)(n < INT32_MAX ? n : 0), 0);
  for (size_t k = 0; k < have; k++)
    push_entry(L, pc, best[k], (lua_Integer)k + 1);
  lua_remove(L, -2);
  return 4;
}

#define AT(d, i) ((d)[(i) - 1]) /* 1-based, as in stats.lua */
#define LT_FLOAT(x, y) ((x) < (y))

/* The order statistics of a kind's unit durations, made twice from one
 * text: over nums (any subtypes), and over floats when every unit bound is
 * a float (half the memory, no look at subtypes; the same comparisons, so
 * the same results).
 * T_select_kth: the k-th smallest of d[lo..hi] (stats.lua's select_kth,
 * step for step: Hoare's selection, reordering d).
 * T_largest: the indices of the k largest of d[1..n] into top (room for
 * min(n, k)), largest first, ties in their order (stats.lua's largest);
 * returns how many.
 * T_extent: min and max of d[1..n], n >= 1 (order_stats' first loop). */
#define ORDER_STATS(T, V, LT)                                                                                     \
  static V T##_select_kth(V *d, lua_Integer k, lua_Integer lo, lua_Integer hi) {                                 \
    while (lo < hi) {                                                                                             \
      V pivot = AT(d, lo + (hi - lo) / 2);                                                                        \
      lua_Integer i = lo, j = hi;                                                                                 \
      while (i <= j) {                                                                                            \
        while (LT(AT(d, i), pivot))                                                                               \
          i++;                                                                                                    \
        while (LT(pivot, AT(d, j)))                                                                               \
          j--;                                                                                                    \
        if (i <= j) {                                                                                             \
          V t = AT(d, i);                                                                                         \
          AT(d, i) = AT(d, j);                                                                                    \
          AT(d, j) = t;                                                                                           \
          i++, j--;                                                                                               \
        }                                                                                                         \
      }                                                                                                           \
      if (k <= j)                                                                                                 \
        hi = j;                                                                                                   \
      else if (k >= i)                                                                                            \
        lo = i;                                                                                                   \
      else                                                                                                        \
        return AT(d, k);                                                                                          \
    }                                                                                                             \
    return AT(d, k);                                                                                              \
  }                                                                                                               \
  static lua_Integer T##_largest(const V *d, lua_Integer n, lua_Integer k, lua_Integer *top) {                   \
    lua_Integer m = 0;                                                                                            \
    for (lua_Integer i = 1; i <= n && k > 0; i++) {                                                               \
      V x = AT(d, i);                                                                                             \
      if (m < k || LT(AT(d, AT(top, m)), x)) {                                                                    \
        lua_Integer j = m < k ? m + 1 : m;                                                                        \
        if (m < k)                                                                                                \
          m++;                                                                                                    \
        while (j > 1 && LT(AT(d, AT(top, j - 1)), x)) {                                                           \
          AT(top, j) = AT(top, j - 1);                                                                            \
          j--;                                                                                                    \
        }                                                                                                         \
        AT(top, j) = i;                                                                                           \
      }                                                                                                           \
    }                                                                                                             \
    return m;                                                                                                     \
  }                                                                                                               \
  static void T##_extent(const V *d, lua_Integer n, V *min, V *max) {                                            \
    *min = d[0], *max = d[0];                                                                                     \
    for (lua_Integer i = 2; i <= n; i++) {                                                                        \
      V x = AT(d, i);                                                                                             \
      if (LT(x, *min))                                                                                            \
        *min = x;                                                                                                 \
      else if (LT(*max, x))                                                                                       \
        *max = x;                                                                                                 \
    }                                                                                                             \
  }

ORDER_STATS(nums, jq_num, jq_num_lt)
ORDER_STATS(floats, lua_Number, LT_FLOAT)

/* Sets count, min, median, p95, max and slowest of the n units of u in the
 * table on top (stats.lua's order_stats and largest over their durations). */
static void unit_figures(lua_State *L, jq_scratch *s, const units *u, lua_Integer top) {
  lua_Integer n = (lua_Integer)u->n, m;
  lua_pushinteger(L, n);
  lua_setfield(L, -2, "count");
  lua_Integer room = top < n ? top : n;
  lua_Integer *slots = scratch_get(L, s, 2, room > 0 ? (size_t)room : 1, sizeof *slots);
  jq_num stat[4]; /* min, median, p95, max */
  lua_Integer km = (lua_Integer)ceil(0.5 * (lua_Number)n), kp = (lua_Integer)ceil(0.95 * (lua_Number)n);
  km = km < 1 ? 1 : km;
  kp = kp < 1 ? 1 : kp;
  if (u->floats) {
    lua_Number *d = scratch_get(L, s, 1, u->n ? u->n : 1, sizeof *d);
    for (size_t j = 0; j < u->n; j++)
      d[j] = u->from[j + 1].f - u->from[j].f;
    m = floats_largest(d, n, top, slots);
    if (n > 0) {
      lua_Number min, max;
      floats_extent(d, n, &min, &max);
      stat[0] = jq_num_flt(min), stat[3] = jq_num_flt(max);
      stat[1] = jq_num_flt(floats_select_kth(d, km, 1, n));
      stat[2] = jq_num_flt(floats_select_kth(d, kp, km, n)); /* d[km + 1 ..] holds everything above the median */
    }
  } else {
    jq_num *d = scratch_get(L, s, 1, u->n ? u->n : 1, sizeof *d);
    for (size_t j = 1; j <= u->n; j++)
      d[j - 1] = jq_num_sub(unit_from(u, j + 1), unit_from(u, j));
    m = nums_largest(d, n, top, slots);
    if (n > 0) {
      nums_extent(d, n, &stat[0], &stat[3]);
      stat[1] = nums_select_kth(d, km, 1, n);
      stat[2] = nums_select_kth(d, kp, km, n);
    }
  }
  lua_createtable(L, (int)(m < INT32_MAX ? m : 0), 0);
  for (lua_Integer i = 1; i <= m; i++) {
    lua_pushinteger(L, AT(slots, i));
    lua_rawseti(L, -2, i);
  }
  lua_setfield(L, -2, "slowest");
  if (n == 0)
    return;
  static const char *const field[4] = {"min", "median", "p95", "max"};
  for (int k = 0; k < 4; k++) {
    jq_num_push(L, stat[k]);
    lua_setfield(L, -2, field[k]);
  }
}

/* The pointer of a short string identifies it (Lua interns them); a long
 * one misses and is looked up by its contents. */
#define CACHE 64
typedef struct cache {
  const char *key[CACHE];
  int val[CACHE];
} cache;

static inline int cache_slot(const char *p) { return (int)(((uintptr_t)p >> 4) & (CACHE - 1)); }

typedef struct marker { /* a marker in range, 16 bytes */
  jq_word ts;
  uint32_t i;    /* its index in model.marker_* */
  uint16_t kind; /* 1-based */
  unsigned char ts_t;
} marker;

/* The marker kinds' units over [a, b) into the table at idx markers
 * ({ count, min, median, p95, max, slowest, row } per kind; row the units'
 * userdata until lanes_in_c makes it their function), and in *nout how many
 * kinds have units. 0 when left to Lua. */
static int marker_units(lua_State *L, int model, jq_scratch *s, jq_num a, jq_num b, lua_Integer top, int names,
                        int markers, size_t *nout) {
  int base = lua_gettop(L);
  if (lua_getfield(L, model, "marker_kinds") != LUA_TTABLE) /* base + 1 */
    return 0;
  int kinds = base + 1, kind_of = base + 2;
  lua_newtable(L); /* kind name -> its number */
  lua_Integer nkinds = 0;
  for (;;) {
    int type = lua_geti(L, kinds, nkinds + 1);
    if (type == LUA_TNIL) {
      lua_pop(L, 1);
      break;
    }
    lua_pushvalue(L, -1);
    if (type != LUA_TSTRING || lua_rawget(L, kind_of) != LUA_TNIL || nkinds >= UINT16_MAX)
      return 0; /* a kind twice: left to Lua */
    lua_pop(L, 1);
    lua_pushinteger(L, ++nkinds);
    lua_rawset(L, kind_of);
  }
  jq_col mts, mkind, marg;
  lua_Integer nm = 0;
  if (nkinds > 0) {
    if (!get_column(L, model, "marker_ts", &mts) || !get_column(L, model, "marker_kind", &mkind) ||
        !get_column(L, model, "marker_arg", &marg))
      return 0;
    nm = mts.n;
    if ((lua_Unsigned)nm >= UINT32_MAX)
      return 0;
  }
  /* The markers in range, in order, with their kind's number. */
  size_t *count = scratch_get(L, s, 3, (size_t)nkinds + 1, sizeof(size_t));
  memset(count, 0, ((size_t)nkinds + 1) * sizeof(size_t));
  marker *in = scratch_get(L, s, 0, nm > 0 ? (size_t)nm : 1, sizeof *in); /* touched as filled */
  size_t nin = 0;
  cache kc;
  memset(kc.key, 0, sizeof kc.key);
  const jq_col *cols[2] = {&mkind, &mts};
  int types[BATCH * 2], rows = lua_gettop(L);
  const jq_column *ck = nm > 0 ? mkind.c : NULL, *ct = nm > 0 ? mts.c : NULL;
  if (ck && ct && ck->n >= (size_t)nm) { /* native: the cells read directly */
    for (size_t i = 0; i < (size_t)nm; i++) {
      if (jq_cell_tag(ck, i) != JQ_C_STR)
        continue;
      const char *p = ck->strs->p[ck->v[i]];
      int h = cache_slot(p), k;
      if (kc.key[h] == p) {
        k = kc.val[h];
      } else {
        jq_column_push(L, mkind.idx, i);
        k = lua_rawget(L, kind_of) == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : 0;
        lua_pop(L, 1);
        kc.key[h] = p, kc.val[h] = k;
      }
      if (k == 0)
        continue;
      jq_num t = jq_cell_number(ct, i);
      if (t.t == JQ_NUM_NIL)
        return 0;
      if (jq_num_le(a, t) && jq_num_lt(t, b)) {
        in[nin].ts = t.v, in[nin].ts_t = (unsigned char)t.t;
        in[nin].i = (uint32_t)(i + 1), in[nin].kind = (uint16_t)k;
        nin++;
        count[k]++;
      }
    }
    nm = 0; /* done */
  }
  for (lua_Integer i0 = 1; i0 <= nm; i0 += BATCH) {
    int m = batch_rows(i0, nm);
    push_rows(L, cols, 2, i0, m, types);
    for (int r = 0; r < m; r++) {
      int at = rows + 1 + 2 * r; /* kind, ts */
      if (types[2 * r] != LUA_TSTRING)
        continue;
      const char *p = lua_tostring(L, at);
      int h = cache_slot(p), k;
      if (kc.key[h] == p) {
        k = kc.val[h];
      } else {
        lua_pushvalue(L, at);
        k = lua_rawget(L, kind_of) == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : 0;
        lua_pop(L, 1);
        kc.key[h] = p, kc.val[h] = k;
      }
      if (k == 0)
        continue;
      jq_num t = time_at(L, at + 1, types[2 * r + 1]);
      if (t.t == JQ_NUM_NIL)
        return 0;
      if (jq_num_le(a, t) && jq_num_lt(t, b)) {
        in[nin].ts = t.v, in[nin].ts_t = (unsigned char)t.t;
        in[nin].i = (uint32_t)(i0 + r), in[nin].kind = (uint16_t)k;
        nin++;
        count[k]++;
      }
    }
    lua_settop(L, rows);
  }
  /* The units of each kind: userdata kept in `markers` (their pointers in all). */
  units **all = lua_newuserdatauv(L, ((size_t)nkinds + 1) * sizeof *all, 0);
  for (lua_Integer k = 1; k <= nkinds; k++) {
    units *x = new_units(L, count[k]);
    if (!x)
      return 0;
    lua_pushvalue(L, marg.idx);
    lua_setiuservalue(L, -2, 1);
    lua_pushvalue(L, names);
    lua_setiuservalue(L, -2, 2);
    x->n = 0; /* filled below */
    all[k - 1] = x;
    lua_createtable(L, 0, 8);
    lua_insert(L, -2);
    lua_setfield(L, -2, "row");
    lua_rawseti(L, markers, k);
  }
  for (size_t m = 0; m < nin; m++) {
    units *x = all[in[m].kind - 1];
    x->from[x->n] = in[m].ts;
    x->from_t[x->n] = in[m].ts_t;
    x->idx[x->n] = in[m].i;
    x->n++;
  }
  size_t ntr = 0;
  for (lua_Integer k = 1; k <= nkinds; k++) {
    units *x = all[k - 1];
    x->from[x->n] = b.v;
    x->from_t[x->n] = (unsigned char)b.t;
    x->floats = 1;
    for (size_t j = 0; j <= x->n; j++)
      x->floats = x->floats && x->from_t[j] == JQ_NUM_FLT;
    lua_rawgeti(L, markers, k);
    unit_figures(L, s, x, top);
    lua_pop(L, 1);
    if (x->n > 0)
      ntr++;
  }
  lua_settop(L, base);
  *nout = ntr;
  return 1;
}

/* ---- the lane sweeps ---- */

typedef struct sweep {
  jq_num a, b;
  int cat_index, slot_of, slot_names; /* stack indices */
  lua_Integer nslots;
  jq_scratch *s; /* buffer 0: the categories' busy time (jq_num per slot); 4: the pieces */
  size_t ntr, ncat; /* ntr: the kinds with units (0: no pieces kept) */
  size_t npieces;
  cache cc; /* a category's string -> its entry in ent */
  struct {
    int slot; /* 0: a wait */
    int c;    /* cat_index's number, 0: none */
  } ent[CACHE];
} sweep;

/* The category of the string at idx: its accumulator's slot (0: a wait)
 * and its number in cat_index (0: none); 0 when left to Lua. */
static int category_of(lua_State *L, sweep *w, int idx, int *slot, int *c) {
  size_t len;
  const char *p = lua_tolstring(L, idx, &len);
  int h = cache_slot(p);
  if (w->cc.key[h] != p) {
    int sl = 0, ci = 0;
    if (!(len == 4 && memcmp(p, "wait", 4) == 0)) {
      lua_pushvalue(L, idx);
      if (lua_rawget(L, w->slot_of) == LUA_TNUMBER) {
        sl = (int)lua_tointeger(L, -1);
      } else {
        if (w->nslots >= INT32_MAX - 1)
          return 0;
        sl = (int)++w->nslots;
        jq_num *acc = scratch_get(L, w->s, 0, (size_t)sl, sizeof *acc);
        acc[sl - 1].t = JQ_NUM_NIL;
        lua_pushvalue(L, idx);
        lua_pushinteger(L, sl);
        lua_rawset(L, w->slot_of);
        lua_pushvalue(L, idx);
        lua_rawseti(L, w->slot_names, sl);
      }
      lua_pop(L, 1);
      lua_pushvalue(L, idx);
      if (lua_rawget(L, w->cat_index) == LUA_TNUMBER) {
        lua_Integer x = lua_tointeger(L, -1);
        if (!lua_isinteger(L, -1) || x < 1 || (lua_Unsigned)x > w->ncat) {
          lua_pop(L, 1);
          return 0;
        }
        ci = (int)x;
      }
      lua_pop(L, 1);
    }
    w->cc.key[h] = p;
    w->ent[h].slot = sl, w->ent[h].c = ci;
  }
  *slot = w->ent[h].slot;
  *c = w->ent[h].c;
  return 1;
}

/* A lane's sums as its sweep goes. */
typedef struct sums {
  jq_num busy, wait, busy_end, wait_end;
} sums;

/* The slice [s, e) of a category (category_of's slot and c) into the
 * lane's sums, and its busy piece kept for the units. 0 when left to Lua. */
static int take(lua_State *L, sweep *w, sums *z, jq_num s, jq_num e, int slot, int c) {
  jq_num a = w->a, b = w->b;
  jq_num x = jq_num_lt(s, a) ? a : s, y = jq_num_lt(b, e) ? b : e;
  if (slot == 0) { /* a wait */
    if (jq_num_lt(z->wait_end, y)) {
      z->wait = jq_num_sub(jq_num_add(z->wait, y), jq_num_lt(z->wait_end, x) ? x : z->wait_end);
      z->wait_end = y;
    }
  } else if (jq_num_lt(z->busy_end, y)) {
    jq_num start = jq_num_lt(z->busy_end, x) ? x : z->busy_end;
    z->busy = jq_num_sub(jq_num_add(z->busy, y), start);
    jq_num *sum = (jq_num *)w->s->b[0].p + (slot - 1); /* category_of may have moved it */
    *sum = jq_num_add(sum->t == JQ_NUM_NIL ? jq_num_int(0) : *sum, jq_num_sub(y, start));
    if (w->ntr > 0) { /* the piece kept for the units (unit_sums) */
      if (c == 0)
        return 0; /* a category stats.lua has no number for */
      piece *p = (piece *)scratch_get(L, w->s, 4, w->npieces + 1, sizeof(piece)) + w->npieces;
      w->npieces++;
      p->x = start.v, p->xt = (unsigned char)start.t;
      p->y = y.v, p->yt = (unsigned char)y.t;
      p->c = (uint32_t)c;
    }
    z->busy_end = y;
  }
  return 1;
}

/* category_of for cell k of the native column c (its userdata at col):
 * the cache asked first by the address of the string's bytes. */
static int category_of_cell(lua_State *L, sweep *w, int col, const jq_column *c, size_t k, int *slot, int *ci) {
  const char *p = c->strs->p[c->v[k]];
  int h = cache_slot(p);
  if (w->cc.key[h] == p) {
    *slot = w->ent[h].slot;
    *ci = w->ent[h].c;
    return 1;
  }
  jq_column_push(L, col, k);
  int ok = category_of(L, w, lua_gettop(L), slot, ci);
  lua_pop(L, 1);
  return ok;
}

/* stats.lua's sweep_lane over the lane at idx, and its count of events
 * (slices, instants and its markers in range). 0 when left to Lua. */
static int sweep_lane(lua_State *L, sweep *w, int lane, jq_num *busy_out, jq_num *wait_out, lua_Integer *events_out) {
  int base = lua_gettop(L);
  jq_num a = w->a, b = w->b;
  lua_Integer n;
  if (!get_int_field(L, lane, "n", &n))
    return 0;
  lua_getfield(L, lane, "maxdur");
  jq_num maxdur = pop_num(L);
  if (maxdur.t == JQ_NUM_NIL)
    return 0;
  jq_num busy = jq_num_int(0), wait = jq_num_int(0);
  lua_Integer events = 0;
  if (n > 0) {
    jq_col ts, dur, cat, kind;
    if (!get_column(L, lane, "ts", &ts) || !get_column(L, lane, "dur", &dur) || !get_column(L, lane, "cat", &cat) ||
        !get_column(L, lane, "kind", &kind))
      return 0;
    jq_num from = jq_num_sub(a, maxdur);
    lua_Integer lo = 1, hi = n + 1;
    while (lo < hi) {
      lua_Integer mid = lo + (hi - lo) / 2;
      jq_num t = jq_col_num(L, &ts, mid);
      if (t.t == JQ_NUM_NIL)
        return 0;
      if (jq_num_lt(t, from))
        lo = mid + 1;
      else
        hi = mid;
    }
    sums z;
    z.busy = busy, z.wait = wait, z.busy_end = jq_num_flt(-HUGE_VAL), z.wait_end = z.busy_end;
    const jq_col *cols[4] = {&ts, &dur, &kind, &cat};
    int types[BATCH * 4], rows = lua_gettop(L), done = 0;
    const jq_column *cts = ts.c, *cdur = dur.c, *ckind = kind.c, *ccat = cat.c;
    if (cts && cdur && ckind && ccat && cts->n >= (size_t)n && cdur->n >= (size_t)n && ckind->n >= (size_t)n &&
        ccat->n >= (size_t)n) { /* native: the cells read directly */
      for (size_t k = (size_t)lo - 1; k < (size_t)n; k++) {
        jq_num s = jq_cell_number(cts, k);
        if (s.t == JQ_NUM_NIL)
          return 0;
        if (jq_num_lt(b, s))
          break;
        if (jq_num_le(a, s))
          events++;
        jq_num d = jq_cell_number(cdur, k);
        if (d.t == JQ_NUM_NIL)
          return 0;
        jq_num e = jq_num_add(s, d);
        if (!jq_num_lt(a, e) || !jq_num_lt(s, b) || JQ_CELL_IS(ckind, k, "span"))
          continue;
        int slot, c;
        if (jq_cell_tag(ccat, k) != JQ_C_STR || !category_of_cell(L, w, cat.idx, ccat, k, &slot, &c) ||
            !take(L, w, &z, s, e, slot, c))
          return 0;
      }
      done = 1;
    }
    for (lua_Integer i0 = lo; i0 <= n && !done; i0 += BATCH) {
      int m = batch_rows(i0, n);
      push_rows(L, cols, 4, i0, m, types);
      for (int r = 0; r < m; r++) {
        int at = rows + 1 + 4 * r; /* ts, dur, kind, cat */
        const int *ty = types + 4 * r;
        jq_num s = time_at(L, at, ty[0]);
        if (s.t == JQ_NUM_NIL)
          return 0;
        if (jq_num_lt(b, s)) {
          done = 1;
          break;
        }
        if (jq_num_le(a, s))
          events++;
        jq_num d = time_at(L, at + 1, ty[1]);
        if (d.t == JQ_NUM_NIL)
          return 0;
        jq_num e = jq_num_add(s, d);
        if (!jq_num_lt(a, e) || !jq_num_lt(s, b))
          continue;
        if (ty[2] == LUA_TSTRING) {
          size_t len;
          const char *k = lua_tolstring(L, at + 2, &len);
          if (len == 4 && memcmp(k, "span", 4) == 0)
            continue;
        }
        int slot, c;
        if (ty[3] != LUA_TSTRING || !category_of(L, w, at + 3, &slot, &c) || !take(L, w, &z, s, e, slot, c))
          return 0;
      }
      lua_settop(L, rows);
    }
    busy = z.busy, wait = z.wait;
  }
  lua_settop(L, base);
  lua_Integer more;
  lua_getfield(L, lane, "instants");
  if (!count_in(L, base + 1, a, b, &more))
    return 0;
  events += more;
  jq_column_field(L, lane, "marker_ts");
  if (!count_sorted(L, base + 2, 1, a, b, &more))
    return 0;
  events += more;
  lua_settop(L, base);
  *busy_out = busy, *wait_out = wait, *events_out = events;
  return 1;
}

/* The stack values of stats_lanes' arguments. */
enum { A_MODEL = 1, A_FROM, A_TO, A_TOP, A_CAT_INDEX, A_NAMES };

static int lanes_in_c(lua_State *L, jq_scratch *s) {
  jq_num a = jq_num_at(L, A_FROM), b = jq_num_at(L, A_TO);
  if (a.t == JQ_NUM_NIL || b.t == JQ_NUM_NIL || !lua_isinteger(L, A_TOP) || !plain_table(L, A_CAT_INDEX) ||
      !plain_table(L, A_NAMES))
    return 0;
  lua_Integer top = lua_tointeger(L, A_TOP);
  size_t ncat = (size_t)lua_rawlen(L, A_NAMES);
  lua_newtable(L); /* 8: the result */
  int result = lua_gettop(L);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, result, "markers"); /* 9 */
  size_t ntr;
  if (!marker_units(L, A_MODEL, s, a, b, top, A_NAMES, result + 1, &ntr))
    return 0;
  sweep w;
  memset(&w, 0, sizeof w);
  w.a = a, w.b = b, w.s = s, w.ntr = ntr, w.ncat = ncat;
  w.cat_index = A_CAT_INDEX;
  lua_newtable(L);
  w.slot_of = lua_gettop(L); /* 10 */
  lua_newtable(L);
  w.slot_names = lua_gettop(L); /* 11 */
  scratch_get(L, s, 0, 1, sizeof(jq_num));
  lua_newtable(L); /* 12: lanes */
  int lanes_out = lua_gettop(L);
  if (lua_getfield(L, A_MODEL, "lanes") != LUA_TTABLE) /* 13 */
    return 0;
  int lanes = lua_gettop(L);
  size_t nlanes = 0; /* the lanes with pieces: where each one's start (scratch 5) */
  for (lua_Integer i = 1;; i++) {
    int type = lua_geti(L, lanes, i);
    if (type == LUA_TNIL)
      break;
    if (type != LUA_TTABLE)
      return 0;
    jq_num busy, wait;
    lua_Integer events;
    size_t first = w.npieces;
    if (!sweep_lane(L, &w, lanes + 1, &busy, &wait, &events))
      return 0;
    if (w.npieces > first) {
      size_t *starts = scratch_get(L, s, 5, nlanes + 1, sizeof(size_t));
      starts[nlanes++] = first;
    }
    lua_pop(L, 1);
    lua_createtable(L, 0, 3);
    jq_num_push(L, busy);
    lua_setfield(L, -2, "busy");
    jq_num_push(L, wait);
    lua_setfield(L, -2, "wait");
    lua_pushinteger(L, events);
    lua_setfield(L, -2, "events");
    lua_rawseti(L, lanes_out, i);
  }
  lua_settop(L, lanes_out);
  lua_setfield(L, result, "lanes");
  /* the pieces, and each kind's row and top over them and its units */
  pieces *pc = new_pieces(L, w.npieces, nlanes, ncat);
  if (!pc)
    return 0;
  if (w.npieces > 0)
    memcpy(pc->p, s->b[4].p, w.npieces * sizeof(piece));
  if (nlanes > 0)
    memcpy(pc->lane, s->b[5].p, nlanes * sizeof(size_t));
  pc->lane[nlanes] = w.npieces;
  int pieces_at = lua_gettop(L);
  for (lua_Integer k = 1; lua_rawgeti(L, result + 1, k) == LUA_TTABLE; k++) {
    lua_getfield(L, -1, "row"); /* the units */
    lua_pushvalue(L, pieces_at);
    lua_pushvalue(L, -2);
    lua_pushvalue(L, pieces_at);
    lua_pushcclosure(L, l_unit_top, 2);
    lua_setfield(L, -4, "top");
    lua_pushcclosure(L, l_unit_row, 2);
    lua_setfield(L, -2, "row");
    lua_pop(L, 1);
  }
  lua_settop(L, pieces_at - 1);
  /* acc: name -> busy of the categories that had a piece */
  lua_newtable(L);
  const jq_num *acc = (const jq_num *)s->b[0].p;
  for (lua_Integer k = 1; k <= w.nslots; k++) {
    if (acc[k - 1].t == JQ_NUM_NIL)
      continue;
    lua_rawgeti(L, w.slot_names, k);
    jq_num_push(L, acc[k - 1]);
    lua_rawset(L, -3);
  }
  lua_setfield(L, result, "acc");
  /* the markers not on a lane, and the other events */
  lua_Integer loose, extra;
  jq_column_field(L, A_MODEL, "loose_marker_ts");
  if (!lua_toboolean(L, -1)) {
    lua_pop(L, 1);
    jq_column_field(L, A_MODEL, "marker_ts");
  }
  if (!count_sorted(L, lua_gettop(L), 0, a, b, &loose))
    return 0;
  jq_column_field(L, A_MODEL, "extra_ts");
  if (!count_sorted(L, lua_gettop(L), 1, a, b, &extra))
    return 0;
  lua_pushinteger(L, (lua_Integer)((lua_Unsigned)loose + (lua_Unsigned)extra));
  lua_setfield(L, result, "events");
  lua_pushvalue(L, result);
  return 1;
}

/* stats_lanes(model, from, to, top, cat_index, names) -> { lanes[i] = {
 * busy, wait, events }, acc = { [category] = busy }, events (the markers
 * on no lane and the other events in range), markers[k] = { count, min,
 * median, p95, max, slowest, row, top } } per model.marker_kinds[k] (row(j)
 * -> arg, from, to, { { name, busy } ... }: unit j; top(j, n): the same
 * with the n busiest categories only); nil when left to Lua. */
static int l_stats_lanes(lua_State *L) {
  luaL_checktype(L, A_MODEL, LUA_TTABLE);
  lua_settop(L, A_NAMES);
  luaL_checkstack(L, BATCH * 4 + 40, "stats_lanes");
  jq_scratch *s = jq_scratch_new(L, NSCRATCH); /* 7 */
  int ok = lanes_in_c(L, s);
  jq_scratch_free(s);
  if (!ok)
    lua_pushnil(L);
  return 1;
}

/* ---- counter_stats ---- */

static int counters_in_c(lua_State *L, jq_scratch *s, jq_num a, jq_num b) {
  lua_newtable(L); /* 5: out */
  int out = lua_gettop(L);
  lua_Integer nout = 0;
  if (lua_getfield(L, 1, "counters") == LUA_TNIL || !lua_toboolean(L, -1)) {
    lua_pushvalue(L, out);
    return 1;
  }
  if (!plain_table(L, out + 1))
    return 0;
  int counters = out + 1, track = out + 2;
  for (lua_Integer t = 1;; t++) {
    int type = lua_rawgeti(L, counters, t);
    if (type == LUA_TNIL)
      break;
    if (type != LUA_TTABLE)
      return 0;
    lua_Integer n;
    jq_col ts, value;
    if (!get_column(L, track, "ts", &ts) || !get_column(L, track, "value", &value) ||
        !get_int_field(L, track, "n", &n))
      return 0;
    if (n <= 0) {
      lua_settop(L, track - 1);
      continue;
    }
    if (n > ts.n || (lua_Unsigned)n >= ((size_t)-1 / 4) / (2 * sizeof(lua_Number)))
      return 0; /* samples with no time: stats.lua's to meet */
    /* Pass 1 as the columns are read (sample i when ts[i + 1] is); each
     * sample in range keeps its time held and its value for pass 2, as
     * floats: all pass 2 does with them (held > 0 is the same test on
     * an integer held as a float). */
    lua_Number *kept = scratch_get(L, s, 0, 2 * (size_t)n, sizeof *kept);
    size_t nkept = 0;
    jq_num min = jq_num_nil(), max = min, covered = jq_num_int(0), zero = jq_num_int(0), s0 = zero, x = min;
    lua_Integer count = 0;
    const jq_col *cols[2] = {&ts, &value};
    int types[BATCH * 2], rows = lua_gettop(L);
    for (lua_Integer i0 = 1; i0 <= n + 1; i0 += BATCH) {
      int m = batch_rows(i0, n + 1);
      push_rows(L, cols, 2, i0, m, types);
      for (int r = 0; r < m; r++) {
        lua_Integer i = i0 + r;
        int at = rows + 1 + 2 * r, ty = types[2 * r];
        jq_num e;
        if (i > 1 && (ty == LUA_TNIL || (ty == LUA_TBOOLEAN && !lua_toboolean(L, at))))
          e = b; /* ts[i] or b */
        else if ((e = time_at(L, at, ty)).t == JQ_NUM_NIL)
          return 0;
        if (i > 1 && jq_num_le(s0, b) && (jq_num_lt(a, e) || jq_num_le(a, s0))) { /* sample i - 1: x, from s0 to e */
          if (x.t == JQ_NUM_NIL)
            return 0;
          if (min.t == JQ_NUM_NIL || jq_num_lt(x, min))
            min = x;
          if (max.t == JQ_NUM_NIL || jq_num_lt(max, x))
            max = x;
          jq_num held = jq_num_sub(jq_num_lt(b, e) ? b : e, jq_num_lt(s0, a) ? a : s0);
          count++;
          covered = jq_num_lt(zero, held) ? jq_num_add(covered, held) : covered;
          kept[2 * nkept] = jq_num_tof(held), kept[2 * nkept + 1] = jq_num_tof(x);
          nkept++;
        }
        s0 = e;
        if (i <= n)
          x = jq_num_at(L, at + 1);
      }
      lua_settop(L, rows);
    }
    if (count > 0) {
      /* mean starts as the integer 0: 0 + a float is 0.0 + it */
      lua_Number mean = 0.0, all = jq_num_tof(covered), each = 1.0 / (lua_Number)count;
      int timed = jq_num_lt(zero, covered);
      for (size_t k = 0; k < nkept; k++) {
        lua_Number held = kept[2 * k], v = kept[2 * k + 1];
        if (timed) {
          if (held > 0)
            mean = mean + v * (held / all);
        } else {
          mean = mean + v * each;
        }
      }
      lua_createtable(L, 0, 6);
      lua_getfield(L, track, "name");
      lua_setfield(L, -2, "name");
      lua_getfield(L, track, "pid");
      lua_setfield(L, -2, "pid");
      lua_pushinteger(L, count);
      lua_setfield(L, -2, "samples");
      jq_num_push(L, min);
      lua_setfield(L, -2, "min");
      jq_num_push(L, max);
      lua_setfield(L, -2, "max");
      lua_pushnumber(L, mean);
      lua_setfield(L, -2, "mean");
      lua_rawseti(L, out, ++nout);
    }
    lua_settop(L, track - 1);
  }
  lua_pushvalue(L, out);
  return 1;
}

/* The body of stats_counters and stats_copies: fn(model at 1, the range)
 * with a scratch at 4; nil when it leaves the work to Lua. */
typedef int (*range_fn)(lua_State *L, jq_scratch *s, jq_num a, jq_num b);

static int over_range(lua_State *L, const char *what, range_fn fn) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 3);
  luaL_checkstack(L, BATCH * 4 + 20, what);
  jq_num a = jq_num_at(L, 2), b = jq_num_at(L, 3);
  jq_scratch *s = jq_scratch_new(L, NSCRATCH); /* 4 */
  int ok = a.t != JQ_NUM_NIL && b.t != JQ_NUM_NIL && fn(L, s, a, b);
  jq_scratch_free(s);
  if (!ok)
    lua_pushnil(L);
  return 1;
}

/* stats_counters(model, from, to) -> stats.lua's counter_stats(model, from,
 * to); nil when left to Lua. */
static int l_stats_counters(lua_State *L) { return over_range(L, "stats_counters", counters_in_c); }

/* ---- copies ---- */

typedef struct copy_row {
  lua_Integer count;
  jq_num time, bytes;
} copy_row;

static int copies_in_c(lua_State *L, jq_scratch *s, jq_num a, jq_num b) {
  lua_newtable(L); /* 5: the rows, in order of first appearance */
  lua_newtable(L); /* 6: category -> its row's number */
  int rows = 5, row_of = 6;
  jq_col cts, cdur, ccat, cbytes;
  jq_column_field(L, 1, "copy_ts");
  int none = !lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (none)
    return lua_pushvalue(L, rows), 1;
  if (!get_column(L, 1, "copy_ts", &cts) || !get_column(L, 1, "copy_dur", &cdur) ||
      !get_column(L, 1, "copy_category", &ccat) || !get_column(L, 1, "copy_bytes", &cbytes))
    return 0;
  lua_Integer n = cts.n, nrows = 0;
  cache rc;
  memset(rc.key, 0, sizeof rc.key);
  jq_num zero = jq_num_int(0);
  const jq_col *cols[4] = {&cts, &cdur, &ccat, &cbytes};
  int types[BATCH * 4], top = lua_gettop(L);
  for (lua_Integer i0 = 1; i0 <= n; i0 += BATCH) {
    int m = batch_rows(i0, n);
    push_rows(L, cols, 4, i0, m, types);
    for (int k = 0; k < m; k++) {
      int at = top + 1 + 4 * k; /* ts, dur, category, bytes */
      const int *ty = types + 4 * k;
      jq_num ts = time_at(L, at, ty[0]), dur = time_at(L, at + 1, ty[1]);
      if (ts.t == JQ_NUM_NIL || dur.t == JQ_NUM_NIL)
        return 0;
      jq_num e = jq_num_add(ts, dur);
      jq_num x = jq_num_lt(ts, a) ? a : ts, y = jq_num_lt(b, e) ? b : e; /* math.max(ts, a), math.min(e, b) */
      if (!(jq_num_lt(x, y) || (jq_num_le(a, ts) && jq_num_lt(ts, b))))
        continue;
      if (ty[2] != LUA_TSTRING)
        return 0;
      const char *p = lua_tostring(L, at + 2);
      int h = cache_slot(p), r;
      if (rc.key[h] == p) {
        r = rc.val[h];
      } else {
        lua_pushvalue(L, at + 2);
        if (lua_rawget(L, row_of) == LUA_TNUMBER) {
          r = (int)lua_tointeger(L, -1);
        } else {
          if (nrows >= INT32_MAX - 1)
            return 0;
          r = (int)++nrows;
          copy_row *row = scratch_get(L, s, 0, (size_t)r, sizeof *row);
          row[r - 1].count = 0, row[r - 1].time = zero, row[r - 1].bytes = zero;
          lua_pushvalue(L, at + 2);
          lua_pushinteger(L, r);
          lua_rawset(L, row_of);
          lua_pushvalue(L, at + 2);
          lua_rawseti(L, rows, r);
        }
        lua_pop(L, 1);
        rc.key[h] = p, rc.val[h] = r;
      }
      jq_num bytes = jq_num_at(L, at + 3);
      if (bytes.t == JQ_NUM_NIL)
        return 0;
      copy_row *row = (copy_row *)s->b[0].p + (r - 1);
      jq_num d = jq_num_sub(y, x);
      row->count++;
      row->time = jq_num_add(row->time, jq_num_lt(zero, d) ? d : zero); /* math.max(0, y - x) */
      row->bytes = jq_num_add(row->bytes, bytes);
    }
    lua_settop(L, top);
  }
  for (lua_Integer r = 1; r <= nrows; r++) {
    const copy_row *row = (copy_row *)s->b[0].p + (r - 1);
    lua_createtable(L, 0, 4);
    lua_rawgeti(L, rows, r);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, row->count);
    lua_setfield(L, -2, "count");
    jq_num_push(L, row->time);
    lua_setfield(L, -2, "time");
    jq_num_push(L, row->bytes);
    lua_setfield(L, -2, "bytes");
    lua_rawseti(L, rows, r);
  }
  lua_pushvalue(L, rows);
  return 1;
}

/* stats_copies(model, from, to) -> stats.lua's copies(model, from, to),
 * not yet sorted; nil when left to Lua. */
static int l_stats_copies(lua_State *L) { return over_range(L, "stats_copies", copies_in_c); }

void jq_open_stats(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"stats_lanes", l_stats_lanes}, {"stats_counters", l_stats_counters}, {"stats_copies", l_stats_copies},
      {NULL, NULL}};
  if (luaL_newmetatable(L, UNITS_MT)) {
    lua_pushliteral(L, UNITS_MT);
    lua_setfield(L, -2, "__name");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, PIECES_MT)) {
    lua_pushliteral(L, PIECES_MT);
    lua_setfield(L, -2, "__name");
  }
  lua_pop(L, 1);
  luaL_setfuncs(L, fns, 0);
}
