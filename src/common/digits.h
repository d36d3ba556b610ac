/*
 * digits.h - decimal integers written fast: two digits a step, back to
 * front, no printf. The one integer routine of the trace writer
 * (json_writer.c) and the reader's page and graph writers (page.c,
 * graph.c).
 * Owns: nothing. Must not: allocate, call Lua, take locks.
 * Thread safety: pure functions.
 */
#ifndef JQ_DIGITS_H
#define JQ_DIGITS_H

#include <stdint.h>

static const char jq_digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* How many decimal digits v has (0 has one). */
static inline int jq_count_digits(uint64_t v) {
  int n = 1;
  for (;;) {
    if (v < 10) return n;
    if (v < 100) return n + 1;
    if (v < 1000) return n + 2;
    if (v < 10000) return n + 3;
    v /= 10000;
    n += 4;
  }
}

/* Decimal digits of v at p (at most 20), written back to front in pairs;
 * returns the end. */
static inline char *jq_put_u64(char *p, uint64_t v) {
  char *end = p + jq_count_digits(v);
  char *q = end;
  while (v >= 100) {
    unsigned r = (unsigned)(v % 100);
    v /= 100;
    q -= 2;
    q[0] = jq_digit_pairs[r * 2];
    q[1] = jq_digit_pairs[r * 2 + 1];
  }
  if (v >= 10) {
    q[-2] = jq_digit_pairs[v * 2];
    q[-1] = jq_digit_pairs[v * 2 + 1];
  } else {
    q[-1] = (char)('0' + v);
  }
  return end;
}

/* v in decimal at p (at most 20 bytes: a sign and 19 digits, or 20
 * digits); returns the end. */
static inline char *jq_put_i64(char *p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return jq_put_u64(p, (uint64_t)0 - (uint64_t)v);
  }
  return jq_put_u64(p, (uint64_t)v);
}

#endif
