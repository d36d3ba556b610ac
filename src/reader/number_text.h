/*
 * number_text.h - how the reader writes a number as text: one policy per
 * output, each in one function (docs/internals.md says which is which).
 *
 *   report --json (json_text.c):  jq_json_number
 *     an integer in decimal; a float to 14 significant digits ("%.14g"),
 *     or 17 when 14 do not read back as the same double (times since
 *     1970 need them); NaN and the infinities null.
 *   the page (page.c, graph.c):   jq_page_number, jq_page_ns
 *     an integer, or a float with no fraction within an integer's range,
 *     in decimal; any other finite float to 17 digits ("%.17g": it reads
 *     back exactly); NaN and the infinities null. A time is written as
 *     integer nanoseconds since t0: (us - t0) * 1000 + 0.5, floored.
 *
 * Each writes at most JQ_NUMBER_TEXT - 1 bytes and no terminating NUL
 * unless it says so; returns the length.
 * Owns: nothing. Must not: allocate, call Lua. Thread safety: pure
 * functions (snprintf's decimal point is the C locale's: the reader never
 * sets another).
 */
#ifndef JQ_NUMBER_TEXT_H
#define JQ_NUMBER_TEXT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/digits.h"
#include "reader/number.h"

#define JQ_NUMBER_TEXT 40 /* room enough for any of them */

static inline size_t jq_text_null(char *out) {
  memcpy(out, "null", 4);
  return 4;
}

static inline size_t jq_text_int(char *out, lua_Integer i) { return (size_t)(jq_put_i64(out, (int64_t)i) - out); }

/* report --json's float: %.14g, or %.17g when that does not read back. */
static inline size_t jq_json_float(char *out, lua_Number v) {
  if (isnan(v) || isinf(v))
    return jq_text_null(out);
  int len = snprintf(out, JQ_NUMBER_TEXT, "%.14g", (double)v);
  if (strtod(out, NULL) != v) /* times since 1970 need more digits */
    len = snprintf(out, JQ_NUMBER_TEXT, "%.17g", (double)v);
  return (size_t)len;
}

/* report --json's number (NIL: null). */
static inline size_t jq_json_number(char *out, jq_num x) {
  if (x.t == JQ_NUM_INT)
    return jq_text_int(out, x.v.i);
  if (x.t == JQ_NUM_FLT)
    return jq_json_float(out, x.v.f);
  return jq_text_null(out);
}

/* The page's number (NIL: null). */
static inline size_t jq_page_number(char *out, jq_num x) {
  if (x.t == JQ_NUM_INT)
    return jq_text_int(out, x.v.i);
  if (x.t != JQ_NUM_FLT || !isfinite(x.v.f))
    return jq_text_null(out);
  lua_Number d = x.v.f;
  if (d == floor(d) && d >= -0x1p63 && d < 0x1p63)
    return jq_text_int(out, (lua_Integer)d);
  return (size_t)snprintf(out, JQ_NUMBER_TEXT, "%.17g", (double)d);
}

/* The page's time: us (microseconds) as integer nanoseconds since t0, in
 * *ns; 0 when that is out of an integer's range (or NaN), else 1. */
static inline int jq_page_ns(lua_Number us, lua_Number t0, lua_Integer *ns) {
  lua_Number v = floor((us - t0) * 1000 + 0.5);
  if (!(v >= -0x1p63 && v < 0x1p63))
    return 0;
  *ns = (lua_Integer)v;
  return 1;
}

#endif
