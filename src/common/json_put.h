/*
 * json_put.h - the JSON text of times, doubles and strings, written the one
 * way: by the trace writer (record/json_writer.c) and by the reader's
 * protobuf transcoder (reader/proto_read.c), so a .pftrace read back gives
 * the very text, and the very numbers, its session's JSON has.
 * Owns: nothing. Must not: allocate, call Lua, take locks.
 * Thread safety: pure functions.
 */
#ifndef JQ_JSON_PUT_H
#define JQ_JSON_PUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/digits.h"
#include "common/utf8.h"

static const char jq_hex_lower[] = "0123456789abcdef";

/* Times. Readers (Chrome DevTools, speedscope, Perfetto, lua-cjson) read a
 * number as the double nearest its decimal and add and subtract times in
 * doubles: with times of three decimals, 1019.705 + 5.078 > 1024.783, and a
 * slice that touches the next seems to overlap it. So a time is printed as
 * the multiple of 1/2048 us nearest its nanoseconds, exactly (at most 11
 * decimals, at least 3): below 2^42 us (50 days) each is a double, and every
 * sum and difference of them is exact, so slices that touch or nest as
 * recorded do so to every reader. A time is within 0.245 ns of the one
 * recorded and a duration within 0.489 ns: llround(x * 1000), Perfetto's
 * reading, gives back the nanoseconds (rounding up instead would keep an
 * older Perfetto's (int64_t)(x * 1000) exact for times, but not for
 * durations, and llround's only for a day: x * 1000 rounds too). */
typedef struct jq_us_time {
  uint64_t whole; /* microseconds */
  unsigned frac;  /* and frac/2048 of one, 0 to 2047 */
} jq_us_time;

/* The 2048ths nearest ns: (ns % 1000) * 2048 / 1000 rounded (125 is odd: no
 * ties), at most 2046. */
static inline jq_us_time jq_us_of(uint64_t ns) {
  jq_us_time t = {ns / 1000, (unsigned)(((ns % 1000) * 256 + 62) / 125)};
  return t;
}

/* The nanoseconds a reader gets back from a printed time: llround(us * 1000),
 * exact for a multiple of 1/2048 us (ties away from zero). */
static inline uint64_t jq_ns_read(jq_us_time t) {
  return t.whole * 1000 + ((uint64_t)t.frac * 125 + 128) / 256;
}

/* The difference y - x of two printed times. */
static inline jq_us_time jq_us_diff(jq_us_time x, jq_us_time y) {
  if (y.frac < x.frac) { /* y > x: y.whole > x.whole */
    y.frac += 2048;
    y.whole--;
  }
  return (jq_us_time){y.whole - x.whole, y.frac - x.frac};
}

/* The k-th (from 1) arrow end of a first slice from a to z (ns): k/2048 us
 * after its printed start, at most at its printed end (put_after_ends). */
static inline jq_us_time jq_after_point(uint64_t a, uint64_t z, uint64_t k) {
  jq_us_time start = jq_us_of(a), end = jq_us_of(z > a ? z : a);
  uint64_t len = (end.whole - start.whole) * 2048 + end.frac - start.frac;
  uint64_t units = start.frac + (k < len ? k : len);
  return (jq_us_time){start.whole + units / 2048, (unsigned)(units % 2048)};
}

#define JQ_US_MAX 33 /* the longest time put_us_time writes: 20 digits, '.', 11 */

/* t exactly: frac/2048 = frac * 5^11 / 10^11, trailing zeros dropped down to
 * three decimals. */
static inline char *jq_put_us_time(char *p, jq_us_time t) {
  p = jq_put_u64(p, t.whole);
  *p++ = '.';
  uint64_t v = (uint64_t)t.frac * 48828125u; /* < 10^11 */
  for (int k = 9; k >= 1; k -= 2) {
    memcpy(p + k, &jq_digit_pairs[(v % 100) * 2], 2);
    v /= 100;
  }
  p[0] = (char)('0' + v);
  int len = 11; /* a factor 2 of frac is a trailing zero */
  for (unsigned f = t.frac; len > 3 && !(f & 1); f >>= 1)
    len--;
  return p + len;
}

/* JSON string body: quotes, backslashes and control bytes (and DEL) escaped,
 * valid UTF-8 copied raw, each byte of an invalid sequence replaced by
 * U+FFFD. Never emits a \u surrogate. Returns the end. */
static inline char *jq_json_escape(char *p, const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      *p++ = (char)c;
      i++;
    } else if (c < 0x80) {
      *p++ = '\\';
      switch (c) {
      case '"': *p++ = '"'; break;
      case '\\': *p++ = '\\'; break;
      case '\n': *p++ = 'n'; break;
      case '\r': *p++ = 'r'; break;
      case '\t': *p++ = 't'; break;
      case '\b': *p++ = 'b'; break;
      case '\f': *p++ = 'f'; break;
      default:
        *p++ = 'u', *p++ = '0', *p++ = '0';
        *p++ = jq_hex_lower[c >> 4];
        *p++ = jq_hex_lower[c & 15];
      }
      i++;
    } else {
      size_t len = jq_utf8_seq(s + i, n - i);
      if (len) {
        memcpy(p, s + i, len);
        p += len;
        i += len;
      } else {
        memcpy(p, "\xef\xbf\xbd", 3), p += 3;
        i++;
      }
    }
  }
  return p;
}

/* A double as the shortest of %.15g and %.17g that reads back as it. */
static inline char *jq_put_double(char *p, double x) {
  char tmp[40];
  int n = snprintf(tmp, sizeof tmp, "%.15g", x);
  if (strtod(tmp, NULL) != x)
    n = snprintf(tmp, sizeof tmp, "%.17g", x);
  memcpy(p, tmp, (size_t)n);
  return p + n;
}

#endif
