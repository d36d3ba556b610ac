/*
 * json_scan.h - the loader's JSON scanner (json_scan.c): a text, where its
 * first error is, and the scans of its strings, numbers and values.
 * Owns: nothing (the text is its caller's). Must not: be used by the record
 * path. Thread safety: reentrant (one jq_src per call).
 */
#ifndef JQ_JSON_SCAN_H
#define JQ_JSON_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

/* A text being scanned: its bytes, and the first error met. */
typedef struct jq_src {
  const char *s;
  size_t n;
  size_t err_at;
  const char *err;   /* NULL: no error */
  size_t release_at; /* where jq_scan_release is due next */
  int mapped;        /* a mapped file's: its pages read can go back to the system */
} jq_src;

#define RELEASE_STEP ((size_t)1 << 24)
#define NONE ((size_t)-1) /* no place in the text */

/* Eight bytes read as one word: the scans below test eight at a time. */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define JQ_SWAR 1 /* the word's lowest byte is the first in memory: the fast paths below */
#endif

/* Our writer puts no white space inside an event: a byte above ' ' ends
 * the scan at once. */
static inline size_t ws(const jq_src *t, size_t i) {
  if (i < t->n && (unsigned char)t->s[i] > ' ')
    return i;
  while (i < t->n) {
    char c = t->s[i];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
      break;
    i++;
  }
  return i;
}

/* A mask of the bytes of x (8, little or big end alike: only "is any"
 * and the lowest one's place are read) that are '"', '\\' or below 0x20.
 * The lowest flag of each term is exact; a false flag can only sit above a
 * true one of its term, so the lowest flag of the three is the first stop. */
static inline uint64_t stop_mask(uint64_t x) {
  uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
  return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((x - ONES * 0x20) & ~x)) & HIGHS;
}

/* A mapped file's pages before s[i] go back to the system (a later read
 * maps them again): a pass holds about RELEASE_STEP bytes of the file in
 * memory, not all of it. */
void jq_scan_release(jq_src *t, size_t i);

/* Records the first error (why, at offset `at`); returns 0. */
size_t jq_scan_fail(jq_src *t, size_t at, const char *why);

/* The string at s[i] (its opening quote): one past its closing quote, or
 * 0 and an error; *esc: it has escapes. */
size_t jq_scan_string(jq_src *t, size_t i, int *esc);

/* Pushes the string s[i..end) (quotes included, checked by jq_scan_string),
 * its escapes decoded. */
void jq_push_string(lua_State *L, jq_src *t, size_t i, size_t end, int esc);

/* The number at s[i]: one past it, or 0 and an error. *isint with *iv
 * when it is an integer literal that fits 64 bits, else *dv. */
size_t jq_scan_number(jq_src *t, size_t i, int *isint, int64_t *iv, double *dv);

/* One past the scalar at s[i] (string, number, true, false, null), or 0. */
size_t jq_scan_scalar(jq_src *t, size_t i);

/* One past the value at s[i] (after white space), or 0 and an error;
 * with L, the value pushed as lua-cjson would decode it (objects and arrays
 * as tables, null as the value at null_idx), but integers exact (on an
 * error the caller resets the stack). At most JQ_LOAD_MAX_DEPTH containers,
 * depth0 of them open around s[i] already (-1: a top object, which the
 * limit leaves out, as jq_scan_outline does). */
size_t jq_scan_value(lua_State *L, jq_src *t, size_t i, int null_idx, int depth0);

static inline size_t skip_value(jq_src *t, size_t i, int depth0) { return jq_scan_value(NULL, t, i, 0, depth0); }

static inline size_t push_value(lua_State *L, jq_src *t, size_t i, int null_idx, int depth0) {
  return jq_scan_value(L, t, i, null_idx, depth0);
}

/* The checked pass: the text is one JSON value and nothing else; for an
 * object, the values of its last "traceEvents", "jobqueProfile",
 * "stackFrames" and "samples" keys, escapes decoded (NONE: none). 1, or 0
 * and an error. */
int jq_scan_outline(jq_src *t, size_t *events, size_t *meta, size_t *frames, size_t *samples);

#endif
