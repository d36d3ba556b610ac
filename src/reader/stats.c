/*
 * stats.c - the per-event loops of jobque_profile.stats: stats_lanes (the
 * lane sweeps, which keep their busy pieces for the marker units, and the
 * marker units themselves), stats_counters and stats_copies.
 *
 * They read a trace model's columns (native cells or Lua lists, as
 * columns.h's jq_col reads them: a list with a metatable through its
 * __index and __len) and compute with Lua's number semantics (number.h:
 * integer and float subtypes, integer sums wrapping, comparisons between
 * the two exact), so a figure has the subtype and bits the same arithmetic
 * in Lua would give. Shapes our loader never makes are read as Lua reads
 * them: any value but nil as a category, a copy's category or a marker
 * kind (a category stats.compute has no number for gets the next one); a
 * kind listed twice has the same units twice; a float count floored. A
 * value no figure can be made of (a time that is not a number, a column
 * that is not a list) raises "stats: ..." naming it.
 * Owns: the units' userdata and the busy pieces' (a unit's busy time by
 * category is summed from them when it is read); scratch memory only for
 * a call (scratch.h: freed before returning, or by __gc after an error).
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

/* t[field] opened as a column (one value pushed: jq_col_field); raises
 * when it is neither a column nor a table. */
static void need_column(lua_State *L, int t, const char *field, jq_col *col) {
  if (!jq_col_field(L, t, field, col))
    luaL_error(L, "stats: %s is not a list", field);
}

/* ---- scratch memory of a call: jq_scratch (scratch.h) ---- */

#define NSCRATCH 6

/* Buffer k of s as room for count items of size bytes (contents kept). */
static inline void *scratch_get(lua_State *L, jq_scratch *s, int k, size_t count, size_t size) {
  return jq_scratch_room(L, &s->b[k], count, size);
}

/* ---- count_sorted, count_in ---- */

/* The index of the first number of list[1..len] >= x (> x when strict). */
static lua_Integer first_at_least(lua_State *L, const jq_col *list, lua_Integer len, jq_num x, int strict) {
  lua_Integer lo = 1, hi = len + 1;
  while (lo < hi) {
    lua_Integer mid = lo + (hi - lo) / 2;
    jq_num t = jq_col_num(L, list, mid);
    if (t.t == JQ_NUM_NIL)
      luaL_error(L, "stats: a list of times holds a value that is not a number at %I", (LUAI_UACINT)mid);
    if (strict ? jq_num_le(t, x) : jq_num_lt(t, x))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* How many of the sorted times in the list at idx lie in [a, b] (false or
 * nil: none). */
static lua_Integer count_sorted(lua_State *L, int idx, jq_num a, jq_num b) {
  if (!lua_toboolean(L, idx))
    return 0;
  jq_col col;
  if (!jq_col_open(L, idx, &col))
    return luaL_error(L, "stats: a list of times is a %s", luaL_typename(L, idx));
  lua_Integer hi = first_at_least(L, &col, col.n, b, 1), lo = first_at_least(L, &col, col.n, a, 0);
  lua_pop(L, 1);
  return hi - lo;
}

/* How many of the items {ts} of the list at idx (as ipairs reads it; false
 * or nil: none) have ts in [a, b]. */
static lua_Integer count_in(lua_State *L, int idx, jq_num a, jq_num b) {
  lua_Integer n = 0;
  if (!lua_toboolean(L, idx))
    return 0;
  for (lua_Integer i = 1; lua_geti(L, idx, i) != LUA_TNIL; i++) {
    lua_getfield(L, -1, "ts");
    jq_num ts = pop_num(L);
    lua_pop(L, 1);
    if (ts.t == JQ_NUM_NIL)
      luaL_error(L, "stats: an instant's ts is not a number");
    if (jq_num_le(a, ts) && jq_num_le(ts, b))
      n++;
  }
  lua_pop(L, 1);
  return n;
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

/* A new units userdata for n units (pushed). */
static units *new_units(lua_State *L, size_t n) {
  if (n > ((size_t)1 << 40))
    jq_nomem(L);
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
 * categories. */
static pieces *new_pieces(lua_State *L, size_t n, size_t nlanes, size_t ncat) {
  size_t max = (size_t)1 << 40;
  if (n > max || nlanes > max || ncat > UINT32_MAX)
    jq_nomem(L);
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
 * each in time), so the sums are the
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

/* Whether category c comes before category d in a unit's list (by_busy in
 * stats.lua: more busy time first, then the name in Lua's order); the
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
 * busy time by category { name, busy, share }, busiest first (by_busy),
 * and its busy time in all, summed in the order of the categories (the
 * closure's upvalues: the units, the pieces). */
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
 * categories of by in by_busy's order (the busiest), made without the
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

#define AT(d, i) ((d)[(i) - 1]) /* 1-based */
#define LT_FLOAT(x, y) ((x) < (y))

/* The order statistics of a kind's unit durations, made twice from one
 * text: over nums (any subtypes), and over floats when every unit bound is
 * a float (half the memory, no look at subtypes; the same comparisons, so
 * the same results).
 * T_select_kth: the k-th smallest of d[lo..hi] (Hoare's selection,
 * reordering d).
 * T_largest: the indices of the k largest of d[1..n] into top (room for
 * min(n, k)), largest first, ties in their order;
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
 * table on top (nearest ranks, over their durations). */
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
  uint32_t kind; /* its kind's number (1-based) << 2 | the subtype of ts */
} marker;

/* The marker kinds (model.marker_kinds, read as ipairs reads it) into the
 * table at kind_of (a kind -> its first number); for kind k, *first (a
 * scratch array) the number of the kind's first listing: a kind listed
 * twice has the same units under each listing. Returns
 * how many. */
static lua_Integer kind_numbers(lua_State *L, int model, int kind_of, jq_scratch *s, uint32_t **first) {
  lua_getfield(L, model, "marker_kinds");
  int kinds = lua_gettop(L);
  lua_Integer n = 0;
  for (;; n++) {
    if (lua_geti(L, kinds, n + 1) == LUA_TNIL)
      break;
    if (n >= (1 << 29))
      return luaL_error(L, "stats: too many marker kinds");
    uint32_t *f = scratch_get(L, s, 2, (size_t)n + 1, sizeof *f);
    lua_pushvalue(L, -1);
    if (lua_rawget(L, kind_of) == LUA_TNUMBER) {
      f[n] = (uint32_t)lua_tointeger(L, -1);
      lua_pop(L, 2);
    } else {
      f[n] = (uint32_t)n + 1;
      lua_pop(L, 1);
      lua_pushinteger(L, n + 1);
      lua_rawset(L, kind_of); /* raises for a NaN kind */
    }
  }
  lua_settop(L, kinds - 1);
  *first = (uint32_t *)s->b[2].p;
  return n;
}

/* The kind's number of the marker kind at idx (0: no kind listed), the
 * cache asked first for a string. */
static int kind_number(lua_State *L, int idx, int kind_of, cache *kc) {
  const char *p = lua_type(L, idx) == LUA_TSTRING ? lua_tostring(L, idx) : NULL;
  int h = p ? cache_slot(p) : 0;
  if (p && kc->key[h] == p)
    return kc->val[h];
  lua_pushvalue(L, idx);
  int k = lua_rawget(L, kind_of) == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : 0;
  lua_pop(L, 1);
  if (p)
    kc->key[h] = p, kc->val[h] = k;
  return k;
}

/* Keeps marker i (1-based) of kind k at time t when t is in [a, b). */
static void keep_marker(lua_State *L, jq_scratch *s, size_t *nin, size_t *count, lua_Integer i, int k, jq_num t,
                        jq_num a, jq_num b) {
  if (t.t == JQ_NUM_NIL)
    luaL_error(L, "stats: model.marker_ts[%I] is not a number", (LUAI_UACINT)i);
  if (!jq_num_le(a, t) || !jq_num_lt(t, b))
    return;
  marker *m = (marker *)scratch_get(L, s, 0, *nin + 1, sizeof *m) + *nin;
  m->ts = t.v, m->i = (uint32_t)i, m->kind = (uint32_t)k << 2 | (uint32_t)t.t;
  (*nin)++;
  count[k]++;
}

/* The markers in [a, b) of a listed kind, in order, into scratch 0 (how
 * many in *nin), and how many of each kind in count[]. */
static void markers_in_range(lua_State *L, jq_scratch *s, const jq_col *mkind, const jq_col *mts, int kind_of,
                             jq_num a, jq_num b, size_t *count, size_t *nin) {
  lua_Integer nm = mts->n;
  cache kc;
  memset(kc.key, 0, sizeof kc.key);
  const jq_column *ck = mkind->c, *ct = mts->c;
  if (ck && ct && ck->n >= (size_t)nm) { /* native: the cells read directly */
    for (size_t i = 0; i < (size_t)nm; i++) {
      int k;
      if (jq_cell_tag(ck, i) == JQ_C_STR) {
        const char *p = ck->strs->p[ck->v[i]];
        int h = cache_slot(p);
        if (kc.key[h] != p) {
          jq_column_push(L, mkind->idx, i);
          kc.val[h] = kind_number(L, lua_gettop(L), kind_of, &kc);
          lua_pop(L, 1);
          kc.key[h] = p;
        }
        k = kc.val[h];
      } else {
        jq_column_push(L, mkind->idx, i);
        k = kind_number(L, lua_gettop(L), kind_of, &kc);
        lua_pop(L, 1);
      }
      if (k != 0)
        keep_marker(L, s, nin, count, (lua_Integer)i + 1, k, jq_cell_number(ct, i), a, b);
    }
    return;
  }
  const jq_col *cols[2] = {mkind, mts};
  int types[BATCH * 2], rows = lua_gettop(L);
  for (lua_Integer i0 = 1; i0 <= nm; i0 += BATCH) {
    int m = batch_rows(i0, nm);
    push_rows(L, cols, 2, i0, m, types);
    for (int r = 0; r < m; r++) {
      int at = rows + 1 + 2 * r; /* kind, ts */
      int k = kind_number(L, at, kind_of, &kc);
      if (k != 0)
        keep_marker(L, s, nin, count, i0 + r, k, time_at(L, at + 1, types[2 * r + 1]), a, b);
    }
    lua_settop(L, rows);
  }
}

/* The units userdata of each kind (its markers in range: their times and
 * indices, the range's end after them), as `row` in its table of the
 * list at `markers`; a kind listed twice shares its first listing's. */
static void fill_units(lua_State *L, jq_scratch *s, lua_Integer nkinds, const uint32_t *first, const size_t *count,
                       size_t nin, jq_num b, int marg, int names, int markers) {
  for (lua_Integer k = 1; k <= nkinds; k++) {
    lua_createtable(L, 0, 8);
    if (first[k - 1] != (uint32_t)k) {
      lua_rawgeti(L, markers, (lua_Integer)first[k - 1]);
      lua_getfield(L, -1, "row");
      lua_replace(L, -2);
    } else {
      units *x = new_units(L, count[k]);
      lua_pushvalue(L, marg);
      lua_setiuservalue(L, -2, 1);
      lua_pushvalue(L, names);
      lua_setiuservalue(L, -2, 2);
      x->n = 0; /* filled below */
    }
    lua_setfield(L, -2, "row");
    lua_rawseti(L, markers, k);
  }
  units **all = scratch_get(L, s, 1, (size_t)nkinds + 1, sizeof *all);
  for (lua_Integer k = 1; k <= nkinds; k++) {
    lua_rawgeti(L, markers, k);
    lua_getfield(L, -1, "row");
    all[k - 1] = lua_touserdata(L, -1);
    lua_pop(L, 2);
  }
  const marker *in = (const marker *)s->b[0].p;
  for (size_t m = 0; m < nin; m++) {
    units *x = all[(in[m].kind >> 2) - 1];
    x->from[x->n] = in[m].ts;
    x->from_t[x->n] = (unsigned char)(in[m].kind & 3);
    x->idx[x->n] = in[m].i;
    x->n++;
  }
  for (lua_Integer k = 1; k <= nkinds; k++) {
    units *x = all[k - 1];
    x->from[x->n] = b.v;
    x->from_t[x->n] = (unsigned char)b.t;
    x->floats = 1;
    for (size_t j = 0; j <= x->n; j++)
      x->floats = x->floats && x->from_t[j] == JQ_NUM_FLT;
  }
}

/* The marker kinds' units over [a, b) into the table at idx markers
 * ({ count, min, median, p95, max, slowest, row } per kind; row the units'
 * userdata until lanes_in_c makes it their function); returns the start of
 * the earliest unit of any kind (NIL: no kind has units). */
static jq_num marker_units(lua_State *L, int model, jq_scratch *s, jq_num a, jq_num b, lua_Integer top, int names,
                           int markers) {
  int base = lua_gettop(L);
  lua_newtable(L); /* base + 1: kind -> its number */
  uint32_t *first;
  lua_Integer nkinds = kind_numbers(L, model, base + 1, s, &first);
  jq_col mts, mkind, marg;
  size_t nin = 0, *count = scratch_get(L, s, 3, (size_t)nkinds + 1, sizeof(size_t));
  memset(count, 0, ((size_t)nkinds + 1) * sizeof(size_t));
  int marg_at = 0;
  if (nkinds > 0) {
    need_column(L, model, "marker_ts", &mts);
    need_column(L, model, "marker_kind", &mkind);
    need_column(L, model, "marker_arg", &marg);
    if ((lua_Unsigned)mts.n >= UINT32_MAX)
      luaL_error(L, "stats: too many markers");
    marg_at = marg.idx;
    if (marg.meta) { /* the units keep the list itself: a memo holds only what was read */
      lua_rawgeti(L, marg.idx, 0);
      marg_at = lua_gettop(L);
    }
    markers_in_range(L, s, &mkind, &mts, base + 1, a, b, count, &nin);
    first = (uint32_t *)s->b[2].p;
  }
  fill_units(L, s, nkinds, first, count, nin, b, marg_at, names, markers);
  jq_num earliest = jq_num_nil();
  for (lua_Integer k = 1; k <= nkinds; k++) {
    lua_rawgeti(L, markers, k);
    lua_getfield(L, -1, "row");
    const units *x = lua_touserdata(L, -1);
    lua_pop(L, 1);
    unit_figures(L, s, x, top);
    lua_pop(L, 1);
    if (x->n > 0 && (earliest.t == JQ_NUM_NIL || jq_num_lt(unit_from(x, 1), earliest)))
      earliest = unit_from(x, 1);
  }
  lua_settop(L, base);
  return earliest;
}

/* ---- the lane sweeps ---- */

typedef struct sweep {
  jq_num a, b;
  int cat_index, names, slot_of, slot_names; /* stack indices */
  lua_Integer nslots;
  jq_scratch *s; /* buffer 0: the categories' busy time (jq_num per slot); 4: the pieces */
  size_t ntr, ncat; /* ntr: the kinds with units (0: no pieces kept) */
  size_t npieces;
  cache cc; /* a category's string -> its entry in ent */
  struct {
    int slot; /* 0: a wait */
    int c;    /* its number in cat_index */
  } ent[CACHE];
} sweep;

/* The number of the category at idx in cat_index; one it lacks (a model
 * not made by trace.load) gets the next number, its name appended to the
 * names, so a unit lists it under its name like any other. */
static int category_number(lua_State *L, sweep *w, int idx) {
  lua_pushvalue(L, idx);
  if (lua_rawget(L, w->cat_index) == LUA_TNUMBER) {
    lua_Integer x = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (x < 1 || (lua_Unsigned)x > w->ncat)
      return luaL_error(L, "stats: cat_index holds no category number");
    return (int)x;
  }
  lua_pop(L, 1);
  if (w->ncat >= INT32_MAX - 1)
    return luaL_error(L, "stats: too many categories");
  int c = (int)++w->ncat;
  lua_pushvalue(L, idx);
  lua_pushinteger(L, c);
  lua_rawset(L, w->cat_index);
  lua_pushvalue(L, idx);
  lua_rawseti(L, w->names, c);
  return c;
}

/* The category at idx (any value but nil and NaN): its accumulator's slot
 * (0: "wait") and its number (category_number), the cache asked first
 * for a string. */
static void category_of(lua_State *L, sweep *w, int idx, int *slot, int *c) {
  size_t len = 0;
  const char *p = lua_type(L, idx) == LUA_TSTRING ? lua_tolstring(L, idx, &len) : NULL;
  int h = p ? cache_slot(p) : 0;
  if (p && w->cc.key[h] == p) {
    *slot = w->ent[h].slot, *c = w->ent[h].c;
    return;
  }
  int sl = 0, ci = 0;
  if (!(p && len == 4 && memcmp(p, "wait", 4) == 0)) {
    lua_pushvalue(L, idx);
    if (lua_rawget(L, w->slot_of) == LUA_TNUMBER) {
      sl = (int)lua_tointeger(L, -1);
    } else {
      if (w->nslots >= INT32_MAX - 1)
        luaL_error(L, "stats: too many categories");
      jq_num *acc = scratch_get(L, w->s, 0, (size_t)w->nslots + 1, sizeof *acc);
      acc[w->nslots].t = JQ_NUM_NIL;
      lua_pushvalue(L, idx);
      lua_pushinteger(L, w->nslots + 1);
      lua_rawset(L, w->slot_of); /* raises for nil or NaN */
      sl = (int)++w->nslots;
      lua_pushvalue(L, idx);
      lua_rawseti(L, w->slot_names, sl);
    }
    lua_pop(L, 1);
    ci = category_number(L, w, idx);
  }
  if (p) {
    w->cc.key[h] = p;
    w->ent[h].slot = sl, w->ent[h].c = ci;
  }
  *slot = sl, *c = ci;
}

/* A lane's sums as its sweep goes. */
typedef struct sums {
  jq_num busy, wait, busy_end, wait_end;
  lua_Integer events;
} sums;

/* The slice [s, e) of a category (category_of's slot and c) into the
 * lane's sums, and its busy piece kept for the units. */
static void take(lua_State *L, sweep *w, sums *z, jq_num s, jq_num e, int slot, int c) {
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
      piece *p = (piece *)scratch_get(L, w->s, 4, w->npieces + 1, sizeof(piece)) + w->npieces;
      w->npieces++;
      p->x = start.v, p->xt = (unsigned char)start.t;
      p->y = y.v, p->yt = (unsigned char)y.t;
      p->c = (uint32_t)c;
    }
    z->busy_end = y;
  }
}

/* A lane's columns, its slice count and its first slice that can reach a
 * (job: its job column, when has_job). */
typedef struct lane_cols {
  jq_col ts, dur, kind, cat, job;
  int has_job;
  lua_Integer n, lo;
} lane_cols;

/* t[field] as a number; raises when it is none. */
static jq_num need_number(lua_State *L, int t, const char *field) {
  lua_getfield(L, t, field);
  jq_num x = pop_num(L);
  if (x.t == JQ_NUM_NIL)
    luaL_error(L, "stats: a lane's %s is not a number", field);
  return x;
}

/* Item i of a lane's column as a number; raises when it is none. */
static jq_num need_item(lua_State *L, const jq_col *col, lua_Integer i, const char *field) {
  jq_num x = jq_col_num(L, col, i);
  if (x.t == JQ_NUM_NIL)
    luaL_error(L, "stats: a lane's %s[%I] is not a number", field, (LUAI_UACINT)i);
  return x;
}

/* Whether slice i (1-based) of a lane, a span, lies in a job (its job cell
 * is neither nil nor false): then its job's slice holds it and it adds no
 * busy time; a span outside jobs (the caller's own bracketing of its time)
 * counts as any slice does. */
static int span_in_job(lua_State *L, const lane_cols *lc, lua_Integer i) {
  if (!lc->has_job)
    return 0;
  int t = jq_col_push(L, &lc->job, i);
  int in_job = t != LUA_TNIL && !(t == LUA_TBOOLEAN && !lua_toboolean(L, -1));
  lua_pop(L, 1);
  return in_job;
}

/* Opens the lane at idx's columns (five values pushed: the job column, or
 * nil when the lane has none) and finds its
 * first slice that can reach a: a binary search for a start >= a - maxdur.
 * n: lane.n, a float floored (as a Lua for loop takes it). */
static void open_lane(lua_State *L, const sweep *w, int lane, lane_cols *lc) {
  jq_num n = need_number(L, lane, "n");
  lc->n = jq_num_loop_count(n);
  jq_num from = jq_num_sub(w->a, need_number(L, lane, "maxdur"));
  need_column(L, lane, "ts", &lc->ts);
  need_column(L, lane, "dur", &lc->dur);
  need_column(L, lane, "kind", &lc->kind);
  need_column(L, lane, "cat", &lc->cat);
  lc->has_job = jq_col_field(L, lane, "job", &lc->job);
  if (!lc->has_job)
    lua_pushnil(L);
  lua_Integer lo = 1, hi = lc->n + 1;
  while (lo < hi) {
    lua_Integer mid = lo + (hi - lo) / 2;
    if (jq_num_lt(need_item(L, &lc->ts, mid, "ts"), from))
      lo = mid + 1;
    else
      hi = mid;
  }
  lc->lo = lo;
}

/* The sweep over native columns of at least n cells: the cells read
 * directly. */
static void sweep_cells(lua_State *L, sweep *w, const lane_cols *lc, sums *z) {
  const jq_column *ckind = lc->kind.c, *ccat = lc->cat.c;
  for (size_t k = (size_t)lc->lo - 1; k < (size_t)lc->n; k++) {
    jq_num s = need_item(L, &lc->ts, (lua_Integer)k + 1, "ts");
    if (jq_num_lt(w->b, s))
      break;
    if (jq_num_le(w->a, s))
      z->events++;
    jq_num e = jq_num_add(s, need_item(L, &lc->dur, (lua_Integer)k + 1, "dur"));
    if (!jq_num_lt(w->a, e) || !jq_num_lt(s, w->b) ||
        (JQ_CELL_IS(ckind, k, "span") && span_in_job(L, lc, (lua_Integer)k + 1)))
      continue;
    int slot, c;
    const char *p = jq_cell_tag(ccat, k) == JQ_C_STR ? ccat->strs->p[ccat->v[k]] : NULL;
    int h = p ? cache_slot(p) : 0;
    if (p && w->cc.key[h] == p) {
      slot = w->ent[h].slot, c = w->ent[h].c;
    } else {
      jq_column_push(L, lc->cat.idx, k);
      category_of(L, w, lua_gettop(L), &slot, &c);
      lua_pop(L, 1);
    }
    take(L, w, z, s, e, slot, c);
  }
}

/* The sweep over any columns: BATCH rows pushed at a time. */
static void sweep_rows(lua_State *L, sweep *w, const lane_cols *lc, sums *z) {
  const jq_col *cols[4] = {&lc->ts, &lc->dur, &lc->kind, &lc->cat};
  int types[BATCH * 4], rows = lua_gettop(L);
  for (lua_Integer i0 = lc->lo; i0 <= lc->n; i0 += BATCH) {
    int m = batch_rows(i0, lc->n);
    push_rows(L, cols, 4, i0, m, types);
    for (int r = 0; r < m; r++) {
      int at = rows + 1 + 4 * r; /* ts, dur, kind, cat */
      const int *ty = types + 4 * r;
      jq_num s = time_at(L, at, ty[0]);
      if (s.t == JQ_NUM_NIL)
        luaL_error(L, "stats: a lane's ts[%I] is not a number", (LUAI_UACINT)(i0 + r));
      if (jq_num_lt(w->b, s)) {
        lua_settop(L, rows);
        return;
      }
      if (jq_num_le(w->a, s))
        z->events++;
      jq_num d = time_at(L, at + 1, ty[1]);
      if (d.t == JQ_NUM_NIL)
        luaL_error(L, "stats: a lane's dur[%I] is not a number", (LUAI_UACINT)(i0 + r));
      jq_num e = jq_num_add(s, d);
      if (!jq_num_lt(w->a, e) || !jq_num_lt(s, w->b))
        continue;
      if (ty[2] == LUA_TSTRING) {
        size_t len;
        const char *k = lua_tolstring(L, at + 2, &len);
        if (len == 4 && memcmp(k, "span", 4) == 0 && span_in_job(L, lc, i0 + r))
          continue;
      }
      int slot, c;
      category_of(L, w, at + 3, &slot, &c);
      take(L, w, z, s, e, slot, c);
    }
    lua_settop(L, rows);
  }
}

/* The sweep of the lane at idx (busy time counted once where slices nest,
 * under the first slice met; waits apart; spans only outside jobs), and its
 * count of events
 * (slices, instants and its markers in range). */
static void sweep_lane(lua_State *L, sweep *w, int lane, jq_num *busy_out, jq_num *wait_out, lua_Integer *events_out) {
  int base = lua_gettop(L);
  jq_num a = w->a, b = w->b;
  lane_cols lc;
  open_lane(L, w, lane, &lc);
  sums z;
  z.busy = jq_num_int(0), z.wait = z.busy, z.busy_end = jq_num_flt(-HUGE_VAL), z.wait_end = z.busy_end;
  z.events = 0;
  const jq_column *cts = lc.ts.c, *cdur = lc.dur.c, *ckind = lc.kind.c, *ccat = lc.cat.c;
  size_t n = (size_t)lc.n;
  if (cts && cdur && ckind && ccat && cts->n >= n && cdur->n >= n && ckind->n >= n && ccat->n >= n)
    sweep_cells(L, w, &lc, &z);
  else
    sweep_rows(L, w, &lc, &z);
  lua_settop(L, base);
  lua_getfield(L, lane, "instants");
  z.events += count_in(L, base + 1, a, b);
  jq_column_field(L, lane, "marker_ts");
  z.events += count_sorted(L, base + 2, a, b);
  lua_settop(L, base);
  *busy_out = z.busy, *wait_out = z.wait, *events_out = z.events;
}

/* The stack values of stats_lanes' arguments. */
enum { A_MODEL = 1, A_FROM, A_TO, A_TOP, A_CAT_INDEX, A_NAMES };

/* Sweeps model.lanes (as ipairs reads it) into the list pushed: { busy,
 * wait, events } per lane; the lanes with pieces, where each one's start,
 * in scratch 5 (how many in *nlanes). */
static void sweep_lanes(lua_State *L, sweep *w, size_t *nlanes) {
  lua_newtable(L);
  int out = lua_gettop(L);
  lua_getfield(L, A_MODEL, "lanes");
  int lanes = out + 1;
  *nlanes = 0;
  for (lua_Integer i = 1; lua_geti(L, lanes, i) != LUA_TNIL; i++) {
    if (!lua_istable(L, -1))
      luaL_error(L, "stats: model.lanes[%I] is not a table", (LUAI_UACINT)i);
    jq_num busy, wait;
    lua_Integer events;
    size_t first = w->npieces;
    sweep_lane(L, w, lanes + 1, &busy, &wait, &events);
    if (w->npieces > first) {
      size_t *starts = scratch_get(L, w->s, 5, *nlanes + 1, sizeof(size_t));
      starts[(*nlanes)++] = first;
    }
    lua_pop(L, 1);
    lua_createtable(L, 0, 3);
    jq_num_push(L, busy);
    lua_setfield(L, -2, "busy");
    jq_num_push(L, wait);
    lua_setfield(L, -2, "wait");
    lua_pushinteger(L, events);
    lua_setfield(L, -2, "events");
    lua_rawseti(L, out, i);
  }
  lua_settop(L, out);
}

/* The pieces' userdata, and each kind's row and top over it and its units
 * (in the list at markers). */
static void unit_functions(lua_State *L, const sweep *w, size_t nlanes, int markers) {
  pieces *pc = new_pieces(L, w->npieces, nlanes, w->ncat);
  if (w->npieces > 0)
    memcpy(pc->p, w->s->b[4].p, w->npieces * sizeof(piece));
  if (nlanes > 0)
    memcpy(pc->lane, w->s->b[5].p, nlanes * sizeof(size_t));
  pc->lane[nlanes] = w->npieces;
  int pieces_at = lua_gettop(L);
  for (lua_Integer k = 1; lua_rawgeti(L, markers, k) == LUA_TTABLE; k++) {
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
}

/* Pushes acc: name -> busy of the categories that had a piece. */
static void push_acc(lua_State *L, const sweep *w) {
  lua_newtable(L);
  const jq_num *acc = (const jq_num *)w->s->b[0].p;
  for (lua_Integer k = 1; k <= w->nslots; k++) {
    if (acc[k - 1].t == JQ_NUM_NIL)
      continue;
    lua_rawgeti(L, w->slot_names, k);
    jq_num_push(L, acc[k - 1]);
    lua_rawset(L, -3);
  }
}

/* The markers on no lane and the other events in [a, b]. */
static lua_Integer loose_events(lua_State *L, jq_num a, jq_num b) {
  jq_column_field(L, A_MODEL, "loose_marker_ts");
  if (!lua_toboolean(L, -1)) {
    lua_pop(L, 1);
    jq_column_field(L, A_MODEL, "marker_ts");
  }
  lua_Integer loose = count_sorted(L, lua_gettop(L), a, b);
  jq_column_field(L, A_MODEL, "extra_ts");
  lua_Integer extra = count_sorted(L, lua_gettop(L), a, b);
  lua_pop(L, 2);
  return (lua_Integer)((lua_Unsigned)loose + (lua_Unsigned)extra);
}

/* A number argument; raises when it is none. */
static jq_num number_arg(lua_State *L, int arg) {
  jq_num x = jq_num_at(L, arg);
  if (x.t == JQ_NUM_NIL)
    luaL_typeerror(L, arg, "number");
  return x;
}

/* stats_lanes(model, from, to, top, cat_index, names) -> { lanes[i] = {
 * busy, wait, events }, acc = { [category] = busy }, events (the markers
 * on no lane and the other events in range), markers[k] = { count, min,
 * median, p95, max, slowest, row, top } } per model.marker_kinds[k] (row(j)
 * -> arg, from, to, by, busy: unit j, by sorted busiest first with shares;
 * top(j, n): arg, from, to, by with the n busiest categories only).
 * cat_index (category -> number) and names (number -> category) are
 * stats.compute's, of model.categories; a category they lack is added to
 * both. */
static int l_stats_lanes(lua_State *L) {
  luaL_checktype(L, A_MODEL, LUA_TTABLE);
  jq_num a = number_arg(L, A_FROM), b = number_arg(L, A_TO);
  lua_Integer top = luaL_checkinteger(L, A_TOP);
  luaL_checktype(L, A_CAT_INDEX, LUA_TTABLE);
  luaL_checktype(L, A_NAMES, LUA_TTABLE);
  lua_settop(L, A_NAMES);
  luaL_checkstack(L, BATCH * 4 + 40, "stats_lanes");
  jq_scratch *s = jq_scratch_new(L, NSCRATCH); /* 7 */
  lua_newtable(L); /* 8: the result */
  int result = lua_gettop(L);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, result, "markers"); /* 9 */
  sweep w;
  memset(&w, 0, sizeof w);
  w.a = a, w.b = b, w.s = s, w.ncat = (size_t)lua_rawlen(L, A_NAMES);
  w.cat_index = A_CAT_INDEX, w.names = A_NAMES;
  w.ntr = marker_units(L, A_MODEL, s, a, b, top, A_NAMES, result + 1).t != JQ_NUM_NIL;
  lua_newtable(L);
  w.slot_of = lua_gettop(L); /* 10 */
  lua_newtable(L);
  w.slot_names = lua_gettop(L); /* 11 */
  scratch_get(L, s, 0, 1, sizeof(jq_num));
  size_t nlanes;
  sweep_lanes(L, &w, &nlanes);
  lua_setfield(L, result, "lanes");
  unit_functions(L, &w, nlanes, result + 1);
  push_acc(L, &w);
  lua_setfield(L, result, "acc");
  lua_pushinteger(L, loose_events(L, a, b));
  lua_setfield(L, result, "events");
  jq_scratch_free(s);
  lua_pushvalue(L, result);
  return 1;
}

/* ---- counter_stats ---- */

/* A counter track's pass over its samples: the extent and count of those
 * in range, the time they cover, and each one's time held and value kept
 * (as floats: all the mean does with them) in scratch 0. */
typedef struct track_pass {
  jq_num min, max, covered;
  lua_Integer count;
  size_t nkept;
} track_pass;

/* Pass 1 as the columns are read (sample i when ts[i + 1] is: the next
 * sample's time, or b past the column). */
static void counter_pass(lua_State *L, jq_scratch *s, const jq_col *ts, const jq_col *value, lua_Integer n, jq_num a,
                         jq_num b, track_pass *tp) {
  if ((lua_Unsigned)n >= ((size_t)-1 / 4) / (2 * sizeof(lua_Number)))
    jq_nomem(L);
  lua_Number *kept = scratch_get(L, s, 0, 2 * (size_t)n, sizeof *kept);
  jq_num zero = jq_num_int(0), s0 = zero, x = jq_num_nil();
  tp->min = tp->max = x, tp->covered = zero, tp->count = 0, tp->nkept = 0;
  const jq_col *cols[2] = {ts, value};
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
        luaL_error(L, "stats: a counter's ts[%I] is not a number", (LUAI_UACINT)i);
      if (i > 1 && jq_num_le(s0, b) && (jq_num_lt(a, e) || jq_num_le(a, s0))) { /* sample i - 1: x, from s0 to e */
        if (x.t == JQ_NUM_NIL)
          luaL_error(L, "stats: a counter's value[%I] is not a number", (LUAI_UACINT)(i - 1));
        if (tp->min.t == JQ_NUM_NIL || jq_num_lt(x, tp->min))
          tp->min = x;
        if (tp->max.t == JQ_NUM_NIL || jq_num_lt(tp->max, x))
          tp->max = x;
        jq_num held = jq_num_sub(jq_num_lt(b, e) ? b : e, jq_num_lt(s0, a) ? a : s0);
        tp->count++;
        tp->covered = jq_num_lt(zero, held) ? jq_num_add(tp->covered, held) : tp->covered;
        kept[2 * tp->nkept] = jq_num_tof(held), kept[2 * tp->nkept + 1] = jq_num_tof(x);
        tp->nkept++;
      }
      s0 = e;
      if (i <= n)
        x = jq_num_at(L, at + 1);
    }
    lua_settop(L, rows);
  }
}

/* The track's mean over pass 1's samples: time-weighted, or the plain
 * mean when they cover no time (mean starts as the integer 0: 0 + a float
 * is 0.0 + it). */
static lua_Number counter_mean(const jq_scratch *s, const track_pass *tp) {
  const lua_Number *kept = (const lua_Number *)s->b[0].p;
  lua_Number mean = 0.0, all = jq_num_tof(tp->covered), each = 1.0 / (lua_Number)tp->count;
  int timed = jq_num_lt(jq_num_int(0), tp->covered);
  for (size_t k = 0; k < tp->nkept; k++) {
    lua_Number held = kept[2 * k], v = kept[2 * k + 1];
    if (timed) {
      if (held > 0)
        mean = mean + v * (held / all);
    } else {
      mean = mean + v * each;
    }
  }
  return mean;
}

/* The figures of the counter track at idx, pushed; nothing when it has no
 * sample in [a, b]. Returns whether pushed. */
static int counter_track(lua_State *L, jq_scratch *s, int track, jq_num a, jq_num b) {
  int base = lua_gettop(L);
  lua_getfield(L, track, "n");
  jq_num nn = pop_num(L);
  if (nn.t == JQ_NUM_NIL)
    luaL_error(L, "stats: a counter's n is not a number");
  lua_Integer n = jq_num_loop_count(nn);
  if (n <= 0)
    return 0;
  jq_col ts, value;
  need_column(L, track, "ts", &ts);
  need_column(L, track, "value", &value);
  track_pass tp;
  counter_pass(L, s, &ts, &value, n, a, b, &tp);
  lua_settop(L, base);
  if (tp.count == 0)
    return 0;
  lua_createtable(L, 0, 6);
  lua_getfield(L, track, "name");
  lua_setfield(L, -2, "name");
  lua_getfield(L, track, "pid");
  lua_setfield(L, -2, "pid");
  lua_pushinteger(L, tp.count);
  lua_setfield(L, -2, "samples");
  jq_num_push(L, tp.min);
  lua_setfield(L, -2, "min");
  jq_num_push(L, tp.max);
  lua_setfield(L, -2, "max");
  lua_pushnumber(L, counter_mean(s, &tp));
  lua_setfield(L, -2, "mean");
  return 1;
}

/* stats_counters(model, from, to) -> stats.compute's counters: { name,
 * pid, samples, min, mean, max } per track of model.counters (as ipairs
 * reads it; false or nil: none) with samples in [from, to]. */
static int l_stats_counters(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  jq_num a = number_arg(L, 2), b = number_arg(L, 3);
  lua_settop(L, 3);
  luaL_checkstack(L, BATCH * 2 + 20, "stats_counters");
  jq_scratch *s = jq_scratch_new(L, 1); /* 4 */
  lua_newtable(L); /* 5: out */
  lua_Integer nout = 0;
  lua_getfield(L, 1, "counters"); /* 6 */
  if (lua_toboolean(L, 6)) {
    for (lua_Integer t = 1; lua_geti(L, 6, t) != LUA_TNIL; t++) { /* 7: the track */
      if (counter_track(L, s, 7, a, b))
        lua_rawseti(L, 5, ++nout);
      lua_pop(L, 1);
    }
  }
  jq_scratch_free(s);
  lua_settop(L, 5);
  return 1;
}

/* ---- copies ---- */

typedef struct copy_row {
  lua_Integer count;
  jq_num time, bytes;
} copy_row;

/* The row number of the copy category at idx (a new row for one not met
 * yet: its name in the list at rows, its number in the table at row_of),
 * the cache asked first for a string. */
static int copy_row_of(lua_State *L, jq_scratch *s, int idx, int rows, int row_of, lua_Integer *nrows, cache *rc) {
  const char *p = lua_type(L, idx) == LUA_TSTRING ? lua_tostring(L, idx) : NULL;
  int h = p ? cache_slot(p) : 0, r;
  if (p && rc->key[h] == p)
    return rc->val[h];
  lua_pushvalue(L, idx);
  if (lua_rawget(L, row_of) == LUA_TNUMBER) {
    r = (int)lua_tointeger(L, -1);
  } else {
    if (*nrows >= INT32_MAX - 1)
      luaL_error(L, "stats: too many copy categories");
    r = (int)*nrows + 1;
    copy_row *row = scratch_get(L, s, 0, (size_t)r, sizeof *row);
    row[r - 1].count = 0, row[r - 1].time = jq_num_int(0), row[r - 1].bytes = jq_num_int(0);
    lua_pushvalue(L, idx);
    lua_pushinteger(L, r);
    lua_rawset(L, row_of); /* raises for nil or NaN */
    ++*nrows;
    lua_pushvalue(L, idx);
    lua_rawseti(L, rows, r);
  }
  lua_pop(L, 1);
  if (p)
    rc->key[h] = p, rc->val[h] = r;
  return r;
}

/* The copies' rows (their categories in the list at rows), as the columns
 * are read. Returns how many rows. */
static lua_Integer copy_rows(lua_State *L, jq_scratch *s, const jq_col *const *cols, jq_num a, jq_num b, int rows,
                             int row_of) {
  lua_Integer n = cols[0]->n, nrows = 0;
  cache rc;
  memset(rc.key, 0, sizeof rc.key);
  jq_num zero = jq_num_int(0);
  int types[BATCH * 4], top = lua_gettop(L);
  for (lua_Integer i0 = 1; i0 <= n; i0 += BATCH) {
    int m = batch_rows(i0, n);
    push_rows(L, cols, 4, i0, m, types);
    for (int k = 0; k < m; k++) {
      int at = top + 1 + 4 * k; /* ts, dur, category, bytes */
      const int *ty = types + 4 * k;
      jq_num ts = time_at(L, at, ty[0]), dur = time_at(L, at + 1, ty[1]), bytes;
      if (ts.t == JQ_NUM_NIL || dur.t == JQ_NUM_NIL)
        luaL_error(L, "stats: copy %I's ts or dur is not a number", (LUAI_UACINT)(i0 + k));
      jq_num e = jq_num_add(ts, dur);
      jq_num x = jq_num_lt(ts, a) ? a : ts, y = jq_num_lt(b, e) ? b : e; /* math.max(ts, a), math.min(e, b) */
      if (!(jq_num_lt(x, y) || (jq_num_le(a, ts) && jq_num_lt(ts, b))))
        continue;
      int r = copy_row_of(L, s, at + 2, rows, row_of, &nrows, &rc);
      if ((bytes = jq_num_at(L, at + 3)).t == JQ_NUM_NIL)
        luaL_error(L, "stats: copy %I's bytes is not a number", (LUAI_UACINT)(i0 + k));
      copy_row *row = (copy_row *)s->b[0].p + (r - 1);
      jq_num d = jq_num_sub(y, x);
      row->count++;
      row->time = jq_num_add(row->time, jq_num_lt(zero, d) ? d : zero); /* math.max(0, y - x) */
      row->bytes = jq_num_add(row->bytes, bytes);
    }
    lua_settop(L, top);
  }
  return nrows;
}

/* stats_copies(model, from, to) -> stats.compute's copies, not yet sorted:
 * { name, count, time, bytes } per category of the copies overlapping
 * [from, to), in order of first appearance. */
static int l_stats_copies(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  jq_num a = number_arg(L, 2), b = number_arg(L, 3);
  lua_settop(L, 3);
  luaL_checkstack(L, BATCH * 4 + 20, "stats_copies");
  jq_scratch *s = jq_scratch_new(L, 1); /* 4 */
  lua_newtable(L); /* 5: the rows */
  lua_newtable(L); /* 6: category -> its row's number */
  jq_column_field(L, 1, "copy_ts");
  int none = !lua_toboolean(L, -1);
  lua_settop(L, 6);
  lua_Integer nrows = 0;
  if (!none) {
    jq_col cts, cdur, ccat, cbytes;
    need_column(L, 1, "copy_ts", &cts);
    need_column(L, 1, "copy_dur", &cdur);
    need_column(L, 1, "copy_category", &ccat);
    need_column(L, 1, "copy_bytes", &cbytes);
    const jq_col *cols[4] = {&cts, &cdur, &ccat, &cbytes};
    nrows = copy_rows(L, s, cols, a, b, 5, 6);
  }
  for (lua_Integer r = 1; r <= nrows; r++) {
    const copy_row *row = (copy_row *)s->b[0].p + (r - 1);
    lua_createtable(L, 0, 4);
    lua_rawgeti(L, 5, r);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, row->count);
    lua_setfield(L, -2, "count");
    jq_num_push(L, row->time);
    lua_setfield(L, -2, "time");
    jq_num_push(L, row->bytes);
    lua_setfield(L, -2, "bytes");
    lua_rawseti(L, 5, r);
  }
  jq_scratch_free(s);
  lua_settop(L, 5);
  return 1;
}

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
