/*
 * number.h - the reader's one C type for a Lua number, with Lua's
 * semantics: an integer or a float subtype, integer + and - wrapping (two's
 * complement, as lvm.c's intop), mixed + and - done as floats, and the
 * comparisons between an integer and a float exact (lvm.c's LTintfloat and
 * friends), so C figures are the bits Lua arithmetic would give.
 *
 *   jq_num_int(i), jq_num_flt(f), jq_num_nil(): make one (NIL: no number)
 *   jq_num_add, jq_num_sub, jq_num_lt, jq_num_le, jq_num_eq: Lua's + - < <= ==
 *   jq_num_tof: as a float (lua_Number)
 *   jq_num_at(L, idx): the value at a stack index (NIL when no number)
 *   jq_num_push(L, x): pushed (nil for NIL)
 *
 * Owns: nothing. Must not: allocate, raise. Thread safety: pure functions.
 */
#ifndef JQ_NUMBER_H
#define JQ_NUMBER_H

#include <math.h>

#include <lua.h>

enum { JQ_NUM_NIL = 0, JQ_NUM_INT = 1, JQ_NUM_FLT = 2 };

/* A number's value: its subtype says which member holds it. */
typedef union jq_word {
  lua_Integer i;
  lua_Number f;
} jq_word;

typedef struct jq_num {
  jq_word v;
  int t; /* JQ_NUM_NIL, JQ_NUM_INT or JQ_NUM_FLT */
} jq_num;

static inline jq_num jq_num_int(lua_Integer i) {
  jq_num x;
  x.v.i = i;
  x.t = JQ_NUM_INT;
  return x;
}

static inline jq_num jq_num_flt(lua_Number f) {
  jq_num x;
  x.v.f = f;
  x.t = JQ_NUM_FLT;
  return x;
}

static inline jq_num jq_num_nil(void) {
  jq_num x;
  x.v.i = 0;
  x.t = JQ_NUM_NIL;
  return x;
}

/* A number of subtype t (JQ_NUM_*) from its word. */
static inline jq_num jq_num_of(jq_word v, int t) {
  jq_num x;
  x.v = v;
  x.t = t;
  return x;
}

static inline lua_Number jq_num_tof(jq_num x) { return x.t == JQ_NUM_INT ? (lua_Number)x.v.i : x.v.f; }

/* x + y and x - y as Lua does them: integers wrap, anything else is a
 * float sum. */
/* A count n as `for i = 1, n` takes it: an integer, a float floored (NaN
 * and below 1: none; a huge one capped far beyond any column). */
static inline lua_Integer jq_num_loop_count(jq_num n) {
  if (n.t == JQ_NUM_INT)
    return n.v.i;
  if (!(n.v.f >= 1))
    return 0;
  return n.v.f >= 0x1p62 ? ((lua_Integer)1 << 62) : (lua_Integer)floor(n.v.f);
}

static inline jq_num jq_num_add(jq_num x, jq_num y) {
  if (x.t == JQ_NUM_FLT && y.t == JQ_NUM_FLT)
    return jq_num_flt(x.v.f + y.v.f);
  if (x.t == JQ_NUM_INT && y.t == JQ_NUM_INT)
    return jq_num_int((lua_Integer)((lua_Unsigned)x.v.i + (lua_Unsigned)y.v.i));
  return jq_num_flt(jq_num_tof(x) + jq_num_tof(y));
}

static inline jq_num jq_num_sub(jq_num x, jq_num y) {
  if (x.t == JQ_NUM_FLT && y.t == JQ_NUM_FLT)
    return jq_num_flt(x.v.f - y.v.f);
  if (x.t == JQ_NUM_INT && y.t == JQ_NUM_INT)
    return jq_num_int((lua_Integer)((lua_Unsigned)x.v.i - (lua_Unsigned)y.v.i));
  return jq_num_flt(jq_num_tof(x) - jq_num_tof(y));
}

/* Whether an integer is a float exactly (|i| <= 2^53). */
#define JQ_FITS_FLOAT(i) ((lua_Unsigned)(i) + ((lua_Unsigned)1 << 53) <= ((lua_Unsigned)1 << 54))

/* i < f, or i <= f when `le`, exactly (false when f is NaN). */
static inline int jq_int_below_flt(lua_Integer i, lua_Number f, int le) {
  if (JQ_FITS_FLOAT(i))
    return le ? (lua_Number)i <= f : (lua_Number)i < f;
  if (f != f)
    return 0;
  if (f >= 0x1p63)
    return 1;
  if (f < -0x1p63)
    return 0;
  return le ? i <= (lua_Integer)floor(f) : i < (lua_Integer)ceil(f);
}

/* x < y and x <= y as Lua compares numbers (neither NIL). */
static inline int jq_num_lt(jq_num x, jq_num y) {
  if (x.t == JQ_NUM_FLT && y.t == JQ_NUM_FLT)
    return x.v.f < y.v.f;
  if (x.t == JQ_NUM_INT && y.t == JQ_NUM_INT)
    return x.v.i < y.v.i;
  if (x.t == JQ_NUM_INT)
    return jq_int_below_flt(x.v.i, y.v.f, 0);
  return x.v.f == x.v.f && !jq_int_below_flt(y.v.i, x.v.f, 1);
}

static inline int jq_num_le(jq_num x, jq_num y) {
  if (x.t == JQ_NUM_FLT && y.t == JQ_NUM_FLT)
    return x.v.f <= y.v.f;
  if (x.t == JQ_NUM_INT && y.t == JQ_NUM_INT)
    return x.v.i <= y.v.i;
  if (x.t == JQ_NUM_INT)
    return jq_int_below_flt(x.v.i, y.v.f, 1);
  return x.v.f == x.v.f && !jq_int_below_flt(y.v.i, x.v.f, 0);
}

/* x == y as Lua compares numbers (neither NIL). */
static inline int jq_num_eq(jq_num x, jq_num y) { return jq_num_le(x, y) && jq_num_le(y, x); }

/* The value at idx as a number (NIL when it is not a number: a numeric
 * string stays a string, as Lua's arithmetic on columns never sees one). */
static inline jq_num jq_num_at(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TNUMBER)
    return jq_num_nil();
  if (lua_isinteger(L, idx))
    return jq_num_int(lua_tointeger(L, idx));
  return jq_num_flt(lua_tonumber(L, idx));
}

/* Pushes x (nil for NIL). */
static inline void jq_num_push(lua_State *L, jq_num x) {
  if (x.t == JQ_NUM_INT)
    lua_pushinteger(L, x.v.i);
  else if (x.t == JQ_NUM_FLT)
    lua_pushnumber(L, x.v.f);
  else
    lua_pushnil(L);
}

#endif
