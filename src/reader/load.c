/*
 * trace_load.c - core.load_trace: a trace file scanned straight into the
 * reader's columns (issue 12).
 *
 * The file is mapped (or the text given is read in place): no second copy.
 * A text shaped as ours is read in one pass that checks the JSON as it
 * goes, its "jobqueProfile" guessed from the end and checked after; when
 * anything is off, the checked way: pass 1 checks the whole text is JSON
 * (RFC 8259: strings with their escapes and surrogate pairs, numbers with
 * exponents, nothing after the value) with an explicit stack of at most
 * JQ_LOAD_MAX_DEPTH containers, and finds the top object's "traceEvents"
 * and "jobqueProfile"; pass 2 walks the events: the common ones (complete
 * slices of a lane, markers, plain counters) go into columns of C cells
 * made Lua lists of their exact length at the end; any other is decoded
 * into a Lua table and handed to the reader's own code (hooks.rare), in
 * file order. No byte outside the buffer is read; no recursion; the cells
 * and tables are malloc'd memory owned by the loader's userdata (its __gc
 * frees them: a raised error leaks nothing), the mapping is a userdata's.
 * Owns: the mapping (its userdata). Must not: be used by the record path.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>

#include "reader/columns.h"
#include "reader/reader.h"

#define MAX_US 3e15 /* trace.lua's MAX_US */

typedef struct src {
  const char *s;
  size_t n;
  size_t err_at;
  const char *err;   /* NULL: no error */
  size_t release_at; /* where release is due next */
  int mapped;
} src;

#define RELEASE_STEP ((size_t)1 << 24)
#define NONE ((size_t)-1) /* no place in the text */

/* Eight bytes read as one word: the scans below test eight at a time. */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define JQ_SWAR 1 /* the word's lowest byte is the first in memory: the fast paths below */
#endif

/* A mapped file's pages before s[i] go back to the system (a later read
 * maps them again): a pass holds about RELEASE_STEP bytes of the file in
 * memory, not all of it. */
static void release(src *t, size_t i) {
  t->release_at = i + RELEASE_STEP;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (t->mapped && i / page > 0)
    madvise((char *)t->s, i / page * page, MADV_DONTNEED);
}

static size_t fail(src *t, size_t at, const char *why) {
  if (at == 0 && t->n >= 3 && memcmp(t->s, "\xEF\xBB\xBF", 3) == 0)
    why = "a UTF-8 byte order mark, which JSON does not allow: remove the first 3 bytes";
  if (!t->err) {
    t->err = why;
    t->err_at = at;
  }
  return 0;
}

/* Our writer puts no white space inside an event: a byte above ' ' ends
 * the scan at once. */
static inline size_t ws(const src *t, size_t i) {
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

static int hex4(const src *t, size_t i, unsigned *out) {
  unsigned v = 0;
  if (i + 4 > t->n)
    return 0;
  for (size_t k = i; k < i + 4; k++) {
    unsigned char c = (unsigned char)t->s[k];
    unsigned d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 16;
    if (d == 16)
      return 0;
    v = v * 16 + d;
  }
  *out = v;
  return 1;
}

/* The \u escape at s[i] (the backslash): one past it (a pair takes 12
 * bytes), the code point in *cp; 0 and an error when it is malformed or
 * a lone surrogate. */
static size_t u_escape(src *t, size_t i, unsigned *cp) {
  unsigned hi, lo;
  if (!hex4(t, i + 2, &hi))
    return fail(t, i, "bad \\u escape (4 hex digits expected)");
  if (hi >= 0xDC00 && hi <= 0xDFFF)
    return fail(t, i, "lone low surrogate in a \\u escape");
  if (hi < 0xD800 || hi > 0xDBFF) {
    *cp = hi;
    return i + 6;
  }
  if (i + 12 > t->n || t->s[i + 6] != '\\' || t->s[i + 7] != 'u' || !hex4(t, i + 8, &lo) ||
      lo < 0xDC00 || lo > 0xDFFF)
    return fail(t, i, "lone high surrogate in a \\u escape (a low one must follow)");
  *cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
  return i + 12;
}

/* The string at s[i] (its opening quote): one past its closing quote, or
 * 0 and an error; *esc: it has escapes. */
/* The bytes a string's scan stops at: the quote, the backslash, controls. */
static const unsigned char STOP[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1 /* " */, ['\\'] = 1};

/* A mask of the bytes of x (8, little or big end alike: only "is any"
 * and the lowest one's place are read) that are '"', '\\' or below 0x20.
 * The lowest flag of each term is exact; a false flag can only sit above a
 * true one of its term, so the lowest flag of the three is the first stop. */
static inline uint64_t stop_mask(uint64_t x) {
  uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
  return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((x - ONES * 0x20) & ~x)) & HIGHS;
}

/* The first k >= i with STOP[s[k]], or n. */
static inline size_t next_stop(const src *t, size_t k) {
  const char *s = t->s;
  size_t n = t->n;
  for (; k + 8 <= n; k += 8) {
    uint64_t x;
    memcpy(&x, s + k, 8);
    uint64_t m = stop_mask(x);
    if (m) {
#ifdef JQ_SWAR
      return k + (size_t)__builtin_ctzll(m) / 8; /* the lowest flag: the first byte in memory */
#else
      for (; !STOP[(unsigned char)s[k]]; k++)
        ;
      return k;
#endif
    }
  }
  while (k < n && !STOP[(unsigned char)s[k]])
    k++;
  return k;
}

static size_t str_end(src *t, size_t i, int *esc) {
  *esc = 0;
  for (size_t k = i + 1; k < t->n;) {
    k = next_stop(t, k);
    if (k >= t->n)
      break;
    unsigned char c = (unsigned char)t->s[k];
    if (c == '"')
      return k + 1;
    if (c < 0x20)
      return fail(t, k, "control character in a string (escape it)");
    *esc = 1;
    if (k + 1 >= t->n)
      break;
    char e = t->s[k + 1];
    if (e == 'u') {
      unsigned cp;
      k = u_escape(t, k, &cp);
      if (!k)
        return 0;
    } else if (strchr("\"\\/bfnrt", e) && e) {
      k += 2;
    } else {
      return fail(t, k, "bad escape in a string");
    }
  }
  return fail(t, i, "unterminated string");
}

static size_t put_utf8(char *out, unsigned cp) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | cp >> 12);
    out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | cp >> 18);
  out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* The byte a backslash escape stands for, by its letter e (not u). */
static char unescaped(char e) {
  return e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e;
}

/* Pushes the string s[i..end) (quotes included, checked by str_end). */
static void push_str(lua_State *L, src *t, size_t i, size_t end, int esc) {
  if (!esc) {
    lua_pushlstring(L, t->s + i + 1, end - i - 2);
    return;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (size_t k = i + 1; k < end - 1;) {
    char c = t->s[k];
    if (c != '\\') {
      luaL_addchar(&b, c);
      k++;
      continue;
    }
    char e = t->s[k + 1];
    if (e == 'u') {
      unsigned cp = 0;
      char u[4];
      k = u_escape(t, k, &cp); /* checked already: never 0 here */
      luaL_addlstring(&b, u, put_utf8(u, cp));
      continue;
    }
    luaL_addchar(&b, unescaped(e));
    k += 2;
  }
  luaL_pushresult(&b);
}

#define IS_DIGIT(c) ((unsigned)((c) - '0') <= 9)

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* 5^k for k <= 27 (5^27 < 2^63). */
static const uint64_t POW5[] = {1ull, 5ull, 25ull, 125ull, 625ull, 3125ull, 15625ull, 78125ull, 390625ull,
                                1953125ull, 9765625ull, 48828125ull, 244140625ull, 1220703125ull,
                                6103515625ull, 30517578125ull, 152587890625ull, 762939453125ull,
                                3814697265625ull, 19073486328125ull, 95367431640625ull,
                                476837158203125ull, 2384185791015625ull, 11920928955078125ull,
                                59604644775390625ull, 298023223876953125ull, 1490116119384765625ull,
                                7450580596923828125ull};

/* The number at s[i]: one past it, or 0 and an error. *isint with *iv
 * when it is an integer literal that fits 64 bits, else *dv. */
static size_t number(src *t, size_t i, int *isint, int64_t *iv, double *dv) {
  const char *s = t->s, *p = s + i, *e = s + t->n;
  int neg = p < e && *p == '-', has_frac = 0, has_exp = 0, dropped = 0, digits = 0, scale = 0;
  p += neg;
  if (p >= e || !IS_DIGIT(*p))
    return fail(t, i, "bad number");
  uint64_t m = 0;
  if (*p == '0') {
    p++;
  } else {
    const char *lead = p, *cap = e - p > 19 ? p + 19 : e;
    for (; p < cap && IS_DIGIT(*p); p++)
      m = m * 10 + (uint64_t)(*p - '0');
    digits = (int)(p - lead);
    for (; p < e && IS_DIGIT(*p); p++)
      dropped = 1;
  }
  int over = dropped || m > (uint64_t)INT64_MAX + (uint64_t)neg;
  if (p < e && *p == '.') {
    has_frac = 1;
    if (++p >= e || !IS_DIGIT(*p))
      return fail(t, (size_t)(p - s), "bad number (a digit must follow the point)");
    for (; p < e && IS_DIGIT(*p); p++)
      if (digits < 19) {
        m = m * 10 + (uint64_t)(*p - '0');
        digits += m != 0;
        scale++;
      } else {
        dropped = 1;
      }
  }
  int e10 = 0;
  if (p < e && (*p == 'e' || *p == 'E')) {
    has_exp = 1;
    p++;
    int eneg = p < e && *p == '-';
    p += p < e && (*p == '-' || *p == '+');
    if (p >= e || !IS_DIGIT(*p))
      return fail(t, (size_t)(p - s), "bad number (a digit must follow the exponent)");
    for (; p < e && IS_DIGIT(*p); p++)
      e10 = e10 < 100000 ? e10 * 10 + (*p - '0') : e10;
    e10 = eneg ? -e10 : e10;
  }
  size_t k = (size_t)(p - s);
  *isint = !has_frac && !has_exp && !over;
  if (*isint) {
    *iv = neg ? (m == (uint64_t)1 << 63 ? INT64_MIN : -(int64_t)m) : (int64_t)m;
    return k;
  }
  /* m and 10^|e| (|e| <= 22: 5^22 < 2^53) are exact doubles, and one IEEE
   * division or product of exact operands is the correctly rounded value,
   * as strtod's (and lua-cjson's) is. */
  int p10 = e10 - scale;
  if (!dropped && m < ((uint64_t)1 << 53) && p10 >= -22 && p10 <= 22) {
    double d = p10 < 0 ? (double)m / POW10[-p10] : (double)m * POW10[p10];
    *dv = neg ? -d : d;
    return k;
  }
  /* A binary fraction with more digits (our writer's times, in 2048ths of
   * a microsecond: 1365095.783203125): m / 10^s = (m / 5^s) / 2^s, exact
   * when 5^s divides m and leaves less than 2^53. */
  if (!dropped && p10 < 0 && p10 >= -27 && m % POW5[-p10] == 0 && m / POW5[-p10] < ((uint64_t)1 << 53)) {
    double d = ldexp((double)(m / POW5[-p10]), p10);
    *dv = neg ? -d : d;
    return k;
  }
  char small[64], *buf = small;
  size_t len = k - i;
  if (len >= sizeof small && !(buf = malloc(len + 1)))
    return fail(t, i, "not enough memory for a number");
  memcpy(buf, t->s + i, len);
  buf[len] = 0;
  *dv = strtod(buf, NULL);
  if (buf != small)
    free(buf);
  return k;
}

static size_t literal(src *t, size_t i, const char *word) {
  size_t len = strlen(word);
  if (t->n - i < len || memcmp(t->s + i, word, len) != 0)
    return fail(t, i, "expected a value");
  return i + len;
}

/* One past the scalar at s[i] (string, number, true, false, null). */
static size_t scalar_end(src *t, size_t i) {
  int esc, isint;
  int64_t iv;
  double dv;
  switch (t->s[i]) {
  case '"':
    return str_end(t, i, &esc);
  case 't':
    return literal(t, i, "true");
  case 'f':
    return literal(t, i, "false");
  case 'n':
    return literal(t, i, "null");
  default:
    return number(t, i, &isint, &iv, &dv);
  }
}

/* Pushes the scalar at s[i]: one past it, or 0 (the stack unchanged). */
static size_t push_scalar(lua_State *L, src *t, size_t i, int null_idx) {
  int esc, isint = 0;
  int64_t iv = 0;
  double dv = 0;
  size_t end;
  switch (t->s[i]) {
  case '"':
    if ((end = str_end(t, i, &esc)))
      push_str(L, t, i, end, esc);
    return end;
  case 't':
  case 'f':
    if ((end = literal(t, i, t->s[i] == 't' ? "true" : "false")))
      lua_pushboolean(L, t->s[i] == 't');
    return end;
  case 'n':
    if ((end = literal(t, i, "null")))
      lua_pushvalue(L, null_idx);
    return end;
  default:
    if (!(end = number(t, i, &isint, &iv, &dv)))
      return 0;
    if (isint)
      lua_pushinteger(L, (lua_Integer)iv);
    else
      lua_pushnumber(L, dv);
    return end;
  }
}

/* One past the value at s[i] (after white space), or 0 and an error;
 * with L, the value pushed as lua-cjson would decode it (objects and arrays
 * as tables, null as the value at null_idx), but integers exact (on an
 * error the caller resets the stack). An explicit stack of at most
 * JQ_LOAD_MAX_DEPTH containers, depth0 of them open around s[i] already
 * (-1: a top object, which the limit leaves out, as outline does; with L,
 * two Lua slots each). */
static size_t walk(lua_State *L, src *t, size_t i, int null_idx, int depth0) {
  char kind[JQ_LOAD_MAX_DEPTH + 1];
  lua_Integer count[JQ_LOAD_MAX_DEPTH + 1];
  int depth = 0;
  for (;;) {
    i = ws(t, i);
    if (i >= t->n)
      return fail(t, i, "unexpected end of the text (a value expected)");
    char c = t->s[i];
    if (c != '{' && c != '[') {
      if (!(i = L ? push_scalar(L, t, i, null_idx) : scalar_end(t, i)))
        return 0;
      goto done;
    }
    if (depth0 + depth >= JQ_LOAD_MAX_DEPTH)
      return fail(t, i, "nested too deep");
    if (L) {
      luaL_checkstack(L, 4, "trace nested too deep");
      lua_newtable(L);
    }
    kind[depth] = c;
    count[depth++] = 0;
    i = ws(t, i + 1);
    if (i < t->n && t->s[i] == (c == '{' ? '}' : ']')) {
      depth--;
      i++;
      goto done;
    }
    if (c == '[')
      continue;
  key:
    i = ws(t, i);
    int esc;
    size_t end = i < t->n && t->s[i] == '"' ? str_end(t, i, &esc) : fail(t, i, "expected a string key");
    if (!end)
      return 0;
    if (L)
      push_str(L, t, i, end, esc);
    i = ws(t, end);
    if (i >= t->n || t->s[i] != ':')
      return fail(t, i, "expected ':' after a key");
    i++;
    continue;
  done: /* a value read (with L, on top of the stack) */
    if (depth == 0)
      return i;
    if (L && kind[depth - 1] == '{')
      lua_rawset(L, -3);
    else if (L)
      lua_rawseti(L, -2, ++count[depth - 1]);
    if (i >= t->release_at)
      release(t, i);
    i = ws(t, i);
    if (i < t->n && t->s[i] == ',') {
      i++;
      if (kind[depth - 1] == '{')
        goto key;
      continue;
    }
    if (i < t->n && t->s[i] == (kind[depth - 1] == '{' ? '}' : ']')) {
      depth--;
      i++;
      goto done;
    }
    return fail(t, i, kind[depth - 1] == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static size_t skip_value(src *t, size_t i, int depth0) {
  return walk(NULL, t, i, 0, depth0);
}

static size_t push_value(lua_State *L, src *t, size_t i, int null_idx, int depth0) {
  return walk(L, t, i, null_idx, depth0);
}

/* ---- events ---- */

enum { V_NONE, V_INT, V_FLT, V_STR, V_TRUE, V_FALSE, V_NULL, V_OBJ, V_ARR };

typedef struct val {
  int kind, esc;
  int64_t i;
  double d;
  size_t at, end; /* a string's bytes: quotes included */
} val;

/* Reads the value at s[i] (after white space) into *v, containers
 * skipped (depth0 of them open around it): one past it, or 0 and an error. */
static inline size_t read_val(src *t, size_t i, val *v, int depth0) {
  int isint;
  i = ws(t, i);
  if (i >= t->n)
    return fail(t, i, "unexpected end of the text (a value expected)");
  v->at = i;
  v->esc = 0;
  switch (t->s[i]) {
  case '{':
  case '[':
    v->kind = t->s[i] == '{' ? V_OBJ : V_ARR;
    return v->end = skip_value(t, i, depth0);
  case '"':
    v->kind = V_STR;
    return v->end = str_end(t, i, &v->esc);
  case 't':
  case 'f':
  case 'n':
    v->kind = t->s[i] == 't' ? V_TRUE : t->s[i] == 'f' ? V_FALSE : V_NULL;
    return v->end = scalar_end(t, i);
  default:
    v->end = number(t, i, &isint, &v->i, &v->d);
    v->kind = isint ? V_INT : V_FLT;
    if (isint)
      v->d = (double)v->i;
    return v->end;
  }
}

static inline int is_str_n(const src *t, const val *v, const char *word, size_t len) {
  return v->kind == V_STR && !v->esc && v->end - v->at == len + 2 && memcmp(t->s + v->at + 1, word, len) == 0;
}

/* v is the string literal `word` (no escapes in it). */
#define is_str(t, v, word) is_str_n(t, v, word, sizeof(word) - 1)

enum { A_JOB = 1, A_BYTES = 2, A_CAT = 4, A_ARG = 8, A_OTHER = 16 };

#define COUNTER_KEYS 8 /* of a "C" event's args, at most, for the fast path */

typedef struct member {
  size_t at, len; /* the key's bytes (no quotes, no escapes) */
  val v;
} member;

typedef struct ev {
  val ph, ts, dur, pid, tid, name, cat, s, args, job, bytes, acat, arg;
  int amask; /* the keys args has (A_*) */
  int odd;   /* an escaped key: only the generic path reads it right */
  member mem[COUNTER_KEYS]; /* args' members in file order (a counter's) */
  int nmem;                 /* their count; -1: more, or an escaped key */
} ev;

/* The field of e the event's key k (len bytes, no escapes) fills: NULL for
 * one we do not read. */
static val *top_field(ev *e, const char *k, size_t len) {
  switch (len) {
  case 1:
    return k[0] == 's' ? &e->s : NULL;
  case 2:
    return k[0] == 'p' && k[1] == 'h' ? &e->ph : k[0] == 't' && k[1] == 's' ? &e->ts : NULL;
  case 3:
    return memcmp(k, "dur", 3) == 0 ? &e->dur : memcmp(k, "pid", 3) == 0 ? &e->pid
         : memcmp(k, "tid", 3) == 0 ? &e->tid : memcmp(k, "cat", 3) == 0 ? &e->cat : NULL;
  case 4:
    return memcmp(k, "name", 4) == 0 ? &e->name : memcmp(k, "args", 4) == 0 ? &e->args : NULL;
  default:
    return NULL;
  }
}

/* The same for a key of the event's args (its A_* bit in *bit). */
static val *args_field(ev *e, const char *k, size_t len, int *bit) {
  *bit = A_OTHER;
  if (len == 3 && memcmp(k, "job", 3) == 0)
    return *bit = A_JOB, &e->job;
  if (len == 5 && memcmp(k, "bytes", 5) == 0)
    return *bit = A_BYTES, &e->bytes;
  if (len == 8 && memcmp(k, "category", 8) == 0)
    return *bit = A_CAT, &e->acat;
  if (len == 3 && memcmp(k, "arg", 3) == 0)
    return *bit = A_ARG, &e->arg;
  return NULL;
}

#ifdef JQ_SWAR
/* A key's bytes as one word (the first byte lowest, zeros after it). */
#define B8(c, k) ((uint64_t)(unsigned char)(c) << 8 * (k))
#define KW2(a, b) (B8(a, 0) | B8(b, 1))
#define KW3(a, b, c) (KW2(a, b) | B8(c, 2))
#define KW4(a, b, c, d) (KW3(a, b, c) | B8(d, 3))
#define KW5(a, b, c, d, e) (KW4(a, b, c, d) | B8(e, 4))
#define KW8(a, b, c, d, e, f, g, h) (KW5(a, b, c, d, e) | B8(f, 5) | B8(g, 6) | B8(h, 7))

/* The key whose bytes are the word w (n < 8 of them: the others zeros)
 * or, for n == 8, w and w2 == 0: top_field's and args_field's answer. */
static inline val *word_field(ev *e, uint64_t w, uint64_t w2, size_t n, int in_args) {
  if (in_args) {
    val *v = NULL;
    int bit = A_OTHER;
    if (n == 3 && w == KW3('j', 'o', 'b'))
      v = &e->job, bit = A_JOB;
    else if (n == 5 && w == KW5('b', 'y', 't', 'e', 's'))
      v = &e->bytes, bit = A_BYTES;
    else if (n == 8 && w == KW8('c', 'a', 't', 'e', 'g', 'o', 'r', 'y') && !w2)
      v = &e->acat, bit = A_CAT;
    else if (n == 3 && w == KW3('a', 'r', 'g'))
      v = &e->arg, bit = A_ARG;
    e->amask |= bit;
    return v;
  }
  switch (n) {
  case 1:
    return w == 's' ? &e->s : NULL;
  case 2:
    return w == KW2('p', 'h') ? &e->ph : w == KW2('t', 's') ? &e->ts : NULL;
  case 3:
    return w == KW3('d', 'u', 'r') ? &e->dur : w == KW3('p', 'i', 'd') ? &e->pid
         : w == KW3('t', 'i', 'd') ? &e->tid : w == KW3('c', 'a', 't') ? &e->cat : NULL;
  case 4:
    return w == KW4('n', 'a', 'm', 'e') ? &e->name : w == KW4('a', 'r', 'g', 's') ? &e->args : NULL;
  default:
    return NULL;
  }
}
#endif

/* The key at s[i]: one past its colon; *slot its field of e (NULL: one we
 * do not read). */
static size_t read_key(src *t, size_t i, val **slot, ev *e, int in_args, size_t *kat, size_t *klen) {
  int esc;
  i = ws(t, i);
#ifdef JQ_SWAR
  /* A key of at most 15 bytes with no escape: its closing quote found
   * in one or two words, and the key told by them. */
  if (i + 17 <= t->n && t->s[i] == '"') {
    uint64_t w, w2 = 0, m;
    size_t n;
    memcpy(&w, t->s + i + 1, 8);
    if ((m = stop_mask(w))) {
      n = (size_t)__builtin_ctzll(m) / 8;
    } else {
      memcpy(&w2, t->s + i + 9, 8);
      n = (m = stop_mask(w2)) ? 8 + (size_t)__builtin_ctzll(m) / 8 : 0;
    }
    if (m && t->s[i + 1 + n] == '"') {
      if (n < 8)
        w &= ~(~0ULL << 8 * n); /* (n == 0: w is 0) */
      else
        w2 &= ~(~0ULL << 8 * (n - 8));
      *slot = word_field(e, w, w2, n, in_args);
      *kat = i + 1;
      *klen = n;
      size_t end = i + n + 2;
      i = end < t->n && t->s[end] == ':' ? end : ws(t, end);
      if (i >= t->n || t->s[i] != ':')
        return fail(t, i, "expected ':' after a key");
      return i + 1;
    }
  }
#endif
  size_t end = i < t->n && t->s[i] == '"' ? str_end(t, i, &esc) : fail(t, i, "expected a string key");
  if (!end)
    return 0;
  *slot = NULL;
  *kat = i + 1;
  *klen = end - i - 2;
  if (esc) {
    e->odd = 1;
    if (in_args) {
      e->amask |= A_OTHER;
      e->nmem = -1;
    }
  } else if (in_args) {
    int bit;
    *slot = args_field(e, t->s + i + 1, end - i - 2, &bit);
    e->amask |= bit;
  } else {
    *slot = top_field(e, t->s + i + 1, end - i - 2);
  }
  i = end < t->n && t->s[end] == ':' ? end : ws(t, end);
  if (i >= t->n || t->s[i] != ':')
    return fail(t, i, "expected ':' after a key");
  return i + 1;
}

static size_t read_args(src *t, size_t i, ev *e, int depth0);

/* The members of the object at s[i] ('{', depth0 containers open with it)
 * into e (in_args: an event's "args"): one past it, or 0. */
static size_t read_members(src *t, size_t i, ev *e, int in_args, int depth0) {
  i = ws(t, i + 1);
  if (i < t->n && t->s[i] == '}')
    return i + 1;
  for (;;) {
    val *slot, skip;
    size_t kat, klen;
    if (!(i = read_key(t, i, &slot, e, in_args, &kat, &klen)))
      return 0;
    i = slot == &e->args ? read_args(t, i, e, depth0) : read_val(t, i, slot ? slot : &skip, depth0);
    if (!i)
      return 0;
    if (in_args && e->nmem >= 0) { /* kept for a counter: its args are not read twice */
      if (e->nmem == COUNTER_KEYS) {
        e->nmem = -1;
      } else {
        member *m = &e->mem[e->nmem++];
        m->at = kat;
        m->len = klen;
        m->v = slot ? *slot : skip;
      }
    }
    i = ws(t, i);
    if (i < t->n && t->s[i] == ',') {
      i++;
      continue;
    }
    if (i < t->n && t->s[i] == '}')
      return i + 1;
    return fail(t, i, "expected ',' or '}'");
  }
}

/* An event's "args" value at s[i] (a later "args" key replaces what an
 * earlier one said): its keys of interest in e when it is an object. */
static size_t read_args(src *t, size_t i, ev *e, int depth0) {
  e->amask = e->nmem = 0;
  e->job.kind = e->bytes.kind = e->acat.kind = e->arg.kind = V_NONE;
  i = ws(t, i);
  if (i >= t->n || t->s[i] != '{')
    return read_val(t, i, &e->args, depth0);
  if (depth0 + 1 > JQ_LOAD_MAX_DEPTH)
    return fail(t, i, "nested too deep");
  e->args.kind = V_OBJ;
  e->args.at = i;
  return read_members(t, i, e, 1, depth0 + 1);
}

/* The events array and an event: the containers open around an event's
 * member (walk's count, which leaves the top object out). */
#define EVENT_DEPTH 2

/* The event object at s[i] ('{') into *e: one past it, or 0. */
static size_t read_event(src *t, size_t i, ev *e) {
  e->ph.kind = e->ts.kind = e->dur.kind = e->pid.kind = e->tid.kind = e->name.kind = V_NONE;
  e->cat.kind = e->s.kind = e->args.kind = e->job.kind = e->bytes.kind = e->acat.kind = V_NONE;
  e->arg.kind = V_NONE;
  e->amask = e->odd = e->nmem = 0;
  return read_members(t, i, e, 0, EVENT_DEPTH);
}

/* ---- columns built in C ----
 * A column of the model is filled here as 8-byte cells (a tag per cell
 * only once two kinds of value meet in it), then made a Lua list of its
 * exact length at the end (or before the reader's Lua code reads an event
 * that may add to it): no list grows by doubling, and the peak is the model
 * plus the cells not yet turned into lists. */

enum { T_NUM, T_INT, T_STR, T_FALSE, T_NIL, T_LANE };

typedef struct cells {
  size_t n, cap;
  uint64_t *v;        /* a double's bits, an integer, a string's or a lane's index */
  unsigned char *tag; /* NULL while every cell's tag is tag0 */
  unsigned char tag0;
} cells;

#define LANE_COLS 7
#define COPY_COLS 7
#define MARKER_COLS 5

typedef struct lane_buf {
  cells c[LANE_COLS]; /* ts dur cat kind sname job args */
  int dirty;
} lane_buf;

typedef struct track_buf {
  cells ts, value;
  int dirty;
} track_buf;

/* A string of the model: its index in the list at S_STRS. */
typedef struct str_slot {
  const char *p; /* the Lua string's bytes (the list keeps it) */
  size_t len;
  uint64_t hash;
  uint32_t idx; /* 0: a free slot */
} str_slot;

/* A counter track by its event's pid, name and key (strings' indexes). */
typedef struct track_slot {
  int64_t pid;
  uint32_t name, key, idx; /* idx 0: a free slot */
  int has_pid;
} track_slot;

/* A (pid, tid) met lately, and its lane. */
typedef struct lane_key {
  val pid, tid;
  uint32_t lane; /* 0: none */
} lane_key;

#define LANE_KEYS 64

/* ---- the loader: Lua stack slots it keeps ---- */

enum {
  S_HOOKS = 1, S_PATH, S_TEXT, S_BOX, S_NULL, S_ST, S_MODEL,
  S_LD,        /* the loader (a userdata: its C memory freed by __gc) */
  S_STRS,      /* the model's strings the loader met, by index */
  S_LANES,     /* the lanes met, by index; S_LANEIDX: lane -> index */
  S_LANEIDX,
  S_TRACKS,    /* the counter tracks met, by index; S_TRACKIDX: track -> index */
  S_TRACKIDX,
  S_CSTRS,     /* at the end: the strings' userdata of the native columns */
  S_TOP = S_CSTRS
};

typedef struct loader {
  lua_State *L;
  src t;
  int ours;
  double t0, t1;
  lua_Integer nev, nmarkers, ncopies, nextra;
  size_t progress_at; /* the farthest progress reported */
  /* the strings */
  str_slot *strs;
  size_t strs_mask, nstrs;
  uint32_t s_job, s_submit, s_wait, s_copy, s_slice, s_q, lastcat, lastkind;
  /* the lanes and counter tracks, by index - 1 */
  lane_buf *lanes;
  size_t nlanes, lanes_cap;
  track_buf *tracks;
  size_t ntracks, tracks_cap;
  track_slot *track_map;
  size_t track_mask, ntrack_keys;
  lane_key lane_keys[LANE_KEYS];
  uint32_t last_lane;
  /* the ones holding cells, by index */
  uint32_t *dirty_lanes, *dirty_tracks;
  size_t ndirty_lanes, ndirty_tracks;
  /* the model's columns */
  cells copy[COPY_COLS];     /* ts dur lane category name job bytes */
  cells marker[MARKER_COLS]; /* ts kind arg pid tid */
  cells extra;               /* extra_ts */
  uint32_t *order;           /* time_order's */
  size_t events_at;          /* the events array's '[' */
  int chain_tags;            /* the seed format's chain tags handed to Lua (chain_tags) */
} loader;

static void nomem(lua_State *L) {
  lua_pushliteral(L, "not enough memory");
  lua_error(L);
}

static void col_free(cells *c) {
  free(c->v);
  free(c->tag);
  memset(c, 0, sizeof *c);
}

static void col_grow(lua_State *L, cells *c) {
  size_t cap = c->cap ? c->cap * 2 : 64;
  if (cap > SIZE_MAX / sizeof *c->v)
    nomem(L);
  uint64_t *v = realloc(c->v, cap * sizeof *v);
  if (!v)
    nomem(L);
  c->v = v;
  if (c->tag) {
    unsigned char *tag = realloc(c->tag, cap);
    if (!tag)
      nomem(L);
    c->tag = tag;
  }
  c->cap = cap;
}

static void col_mixed(lua_State *L, cells *c) {
  if (!(c->tag = malloc(c->cap)))
    nomem(L);
  memset(c->tag, c->tag0, c->n);
}

static inline void col_put(lua_State *L, cells *c, int tag, uint64_t bits) {
  if (c->n == c->cap)
    col_grow(L, c);
  if (c->n == 0 && !c->tag)
    c->tag0 = (unsigned char)tag;
  else if (!c->tag && tag != c->tag0)
    col_mixed(L, c);
  if (c->tag)
    c->tag[c->n] = (unsigned char)tag;
  c->v[c->n++] = bits;
}

static inline void put_d(lua_State *L, cells *c, double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  col_put(L, c, T_NUM, b);
}

static inline void put_i(lua_State *L, cells *c, int64_t i) {
  uint64_t b;
  memcpy(&b, &i, sizeof b);
  col_put(L, c, T_INT, b);
}

/* Pushes a cell. */
static inline void push_cell(lua_State *L, int tag, uint64_t b) {
  double d;
  int64_t i;
  switch (tag) {
  case T_NUM:
    memcpy(&d, &b, sizeof d);
    lua_pushnumber(L, d);
    break;
  case T_INT:
    memcpy(&i, &b, sizeof i);
    lua_pushinteger(L, (lua_Integer)i);
    break;
  case T_STR:
    lua_rawgeti(L, S_STRS, (lua_Integer)b);
    break;
  case T_LANE:
    lua_rawgeti(L, S_LANES, (lua_Integer)b);
    break;
  case T_FALSE:
    lua_pushboolean(L, 0);
    break;
  default:
    lua_pushnil(L);
  }
}

/* The cells of c become items base+1 .. base+n of the list t[name] (t at
 * the absolute index `owner`): a new list of exactly base+n items (the
 * first base copied) when the cells are as many as those already there,
 * else appended; in the order `order` gives (NULL: as they are). c
 * emptied (its memory freed when `last`). */
static void col_flush(lua_State *L, cells *c, int owner, const char *name, lua_Integer base, int last,
                      const uint32_t *order) {
  if (c->n > 0) {
    lua_getfield(L, owner, name);
    int old = lua_gettop(L);
    lua_Integer n = (lua_Integer)c->n;
    int fresh = n >= base && base + n <= INT32_MAX;
    if (fresh) {
      lua_createtable(L, (int)(base + n), 0);
      for (lua_Integer k = 1; k <= base; k++) {
        lua_rawgeti(L, old, k);
        lua_rawseti(L, -2, k);
      }
    } else {
      luaL_checktype(L, old, LUA_TTABLE);
      lua_pushvalue(L, old);
    }
    if (order) {
      for (lua_Integer k = 0; k < n; k++) {
        push_cell(L, c->tag ? c->tag[order[k]] : c->tag0, c->v[order[k]]);
        lua_rawseti(L, -2, base + k + 1);
      }
    } else if (c->tag) {
      for (lua_Integer k = 0; k < n; k++) {
        push_cell(L, c->tag[k], c->v[k]);
        lua_rawseti(L, -2, base + k + 1);
      }
    } else if (c->tag0 == T_NUM) {
      for (lua_Integer k = 0; k < n; k++) {
        double d;
        memcpy(&d, &c->v[k], sizeof d);
        lua_pushnumber(L, d);
        lua_rawseti(L, -2, base + k + 1);
      }
    } else if (c->tag0 == T_STR) {
      for (lua_Integer k = 0; k < n; k++) {
        lua_rawgeti(L, S_STRS, (lua_Integer)c->v[k]);
        lua_rawseti(L, -2, base + k + 1);
      }
    } else {
      for (lua_Integer k = 0; k < n; k++) {
        push_cell(L, c->tag0, c->v[k]);
        lua_rawseti(L, -2, base + k + 1);
      }
    }
    if (fresh)
      lua_setfield(L, owner, name);
    lua_settop(L, old - 1);
  }
  c->n = 0;
  free(c->tag);
  c->tag = NULL;
  if (last)
    col_free(c);
}

static void loader_free(loader *ld) {
  for (size_t k = 0; k < ld->nlanes; k++)
    for (int c = 0; c < LANE_COLS; c++)
      col_free(&ld->lanes[k].c[c]);
  for (size_t k = 0; k < ld->ntracks; k++) {
    col_free(&ld->tracks[k].ts);
    col_free(&ld->tracks[k].value);
  }
  for (int c = 0; c < COPY_COLS; c++)
    col_free(&ld->copy[c]);
  for (int c = 0; c < MARKER_COLS; c++)
    col_free(&ld->marker[c]);
  col_free(&ld->extra);
  free(ld->lanes);
  free(ld->tracks);
  free(ld->strs);
  free(ld->track_map);
  free(ld->dirty_lanes);
  free(ld->dirty_tracks);
  free(ld->order);
  ld->order = NULL;
  ld->lanes = NULL;
  ld->tracks = NULL;
  ld->strs = NULL;
  ld->track_map = NULL;
  ld->dirty_lanes = ld->dirty_tracks = NULL;
  ld->nlanes = ld->ntracks = ld->lanes_cap = ld->tracks_cap = 0;
  ld->nstrs = ld->strs_mask = ld->ntrack_keys = ld->track_mask = 0;
  ld->ndirty_lanes = ld->ndirty_tracks = 0;
}

static int loader_gc(lua_State *L) {
  loader_free(lua_touserdata(L, 1));
  return 0;
}

/* ---- the model's strings ---- */

/* The n (<= 8) bytes at p as one word, only those read: for n >= 4 the
 * first four and the last four (overlapping), for n < 4 the first, middle
 * and last byte. For a given n, two texts give the same word only when
 * they are the same bytes. */
static inline uint64_t short_word(const char *p, size_t n) {
  if (n >= 4) {
    uint32_t a, b;
    memcpy(&a, p, 4);
    memcpy(&b, p + n - 4, 4);
    return (uint64_t)a << 32 | b;
  }
  if (!n)
    return 0;
  return (uint64_t)(unsigned char)p[0] << 16 | (uint64_t)(unsigned char)p[n / 2] << 8 | (unsigned char)p[n - 1];
}

/* The model's strings are short (names, categories, counter keys): hashed
 * a word at a time, only their own bytes read. */
static uint64_t hash_bytes(const char *p, size_t len) {
  uint64_t h = (uint64_t)len * 0x9E3779B97F4A7C15ULL, w;
  size_t k = 0;
  for (; len - k > 8; k += 8) {
    memcpy(&w, p + k, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 32;
  }
  if (len - k == 8)
    memcpy(&w, p + k, 8);
  else
    w = short_word(p + k, len - k);
  h = (h ^ w) * 0x94D049BB133111EBULL;
  return h ^ (h >> 31);
}

/* a[0..len) and b[0..len) hold the same bytes. */
static inline int same_bytes(const char *a, const char *b, size_t len) {
  if (len > 16)
    return memcmp(a, b, len) == 0;
  if (len >= 8) {
    uint64_t x, y, u, v;
    memcpy(&x, a, 8);
    memcpy(&y, b, 8);
    memcpy(&u, a + len - 8, 8);
    memcpy(&v, b + len - 8, 8);
    return x == y && u == v;
  }
  return short_word(a, len) == short_word(b, len);
}

static void strs_grow(loader *ld) {
  size_t size = ld->strs_mask ? (ld->strs_mask + 1) * 2 : 256;
  str_slot *tab = calloc(size, sizeof *tab);
  if (!tab)
    nomem(ld->L);
  for (size_t k = 0; ld->strs && k <= ld->strs_mask; k++) {
    if (!ld->strs[k].idx)
      continue;
    size_t j = ld->strs[k].hash & (size - 1);
    while (tab[j].idx)
      j = (j + 1) & (size - 1);
    tab[j] = ld->strs[k];
  }
  free(ld->strs);
  ld->strs = tab;
  ld->strs_mask = size - 1;
}

/* The index of the string p[0..len) in the list at S_STRS (put there when
 * new). */
static uint32_t intern(loader *ld, const char *p, size_t len) {
  uint64_t h = hash_bytes(p, len);
  size_t j = h & ld->strs_mask;
  for (; ld->strs[j].idx; j = (j + 1) & ld->strs_mask)
    if (ld->strs[j].hash == h && ld->strs[j].len == len && same_bytes(ld->strs[j].p, p, len))
      return ld->strs[j].idx;
  if (ld->nstrs >= UINT32_MAX - 1)
    nomem(ld->L);
  lua_State *L = ld->L;
  uint32_t idx = (uint32_t)++ld->nstrs;
  lua_pushlstring(L, p, len);
  const char *kept = lua_tostring(L, -1);
  lua_rawseti(L, S_STRS, idx);
  ld->strs[j].p = kept;
  ld->strs[j].len = len;
  ld->strs[j].hash = h;
  ld->strs[j].idx = idx;
  if (ld->nstrs * 2 > ld->strs_mask)
    strs_grow(ld);
  return idx;
}

/* The index of the string v (a V_STR), its escapes decoded. */
static uint32_t intern_val(loader *ld, const val *v) {
  if (!v->esc)
    return intern(ld, ld->t.s + v->at + 1, v->end - v->at - 2);
  size_t len;
  push_str(ld->L, &ld->t, v->at, v->end, 1);
  const char *p = lua_tolstring(ld->L, -1, &len);
  uint32_t idx = intern(ld, p, len);
  lua_pop(ld->L, 1);
  return idx;
}

static void push_num(lua_State *L, const val *v) {
  if (v->kind == V_INT)
    lua_pushinteger(L, (lua_Integer)v->i);
  else if (v->kind == V_FLT)
    lua_pushnumber(L, v->d);
  else
    lua_pushnil(L);
}

static int same_id(const val *a, const val *b) {
  if (a->kind != b->kind)
    return 0;
  return a->kind == V_NONE || (a->kind == V_INT && a->i == b->i) || (a->kind == V_FLT && a->d == b->d);
}

/* Room for one more item in a growable array of `size`-byte items. */
static void *room(lua_State *L, void *p, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return p;
  size_t c = *cap ? *cap * 2 : 16;
  if (c > SIZE_MAX / size / 2)
    nomem(L);
  void *q = realloc(p, c * size);
  if (!q)
    nomem(L);
  memset((char *)q + *cap * size, 0, (c - *cap) * size);
  *cap = c;
  return q;
}

/* The index of the table on top (popped) in the list at `list` (by index)
 * and `index` (table -> index), put there when new; *fresh says it was. */
static uint32_t table_index(lua_State *L, int list, int index, size_t count, int *fresh) {
  lua_pushvalue(L, -1);
  if (lua_rawget(L, index) == LUA_TNUMBER) {
    uint32_t k = (uint32_t)lua_tointeger(L, -1);
    lua_pop(L, 2);
    *fresh = 0;
    return k;
  }
  lua_pop(L, 1);
  if (count >= UINT32_MAX - 1)
    nomem(L);
  uint32_t k = (uint32_t)count + 1;
  lua_pushvalue(L, -1);
  lua_rawseti(L, list, k);
  lua_pushinteger(L, k);
  lua_rawset(L, index);
  *fresh = 1;
  return k;
}

static uint64_t id_hash(const val *v) {
  uint64_t b = 0;
  if (v->kind == V_INT)
    memcpy(&b, &v->i, sizeof b);
  else if (v->kind == V_FLT)
    memcpy(&b, &v->d, sizeof b);
  return (b + (uint64_t)v->kind) * 0x9E3779B97F4A7C15ULL;
}

/* The index of the lane on top (popped), made a lane of the loader when new. */
static uint32_t lane_index(loader *ld) {
  lua_State *L = ld->L;
  int fresh;
  uint32_t k = table_index(L, S_LANES, S_LANEIDX, ld->nlanes, &fresh);
  if (fresh) {
    ld->lanes = room(L, ld->lanes, &ld->lanes_cap, ld->nlanes, sizeof *ld->lanes);
    uint32_t *d = realloc(ld->dirty_lanes, ld->lanes_cap * sizeof *ld->dirty_lanes);
    if (!d)
      nomem(L);
    ld->dirty_lanes = d;
    ld->nlanes++;
  }
  return k;
}

/* The lane of the event's (pid, tid): its index, by hooks.lane(st, pid,
 * tid) when not met lately. */
static uint32_t use_lane(loader *ld, const ev *e) {
  lua_State *L = ld->L;
  lane_key *last = &ld->lane_keys[ld->last_lane];
  if (last->lane && same_id(&last->pid, &e->pid) && same_id(&last->tid, &e->tid))
    return last->lane;
  size_t slot = (id_hash(&e->pid) ^ (id_hash(&e->tid) >> 7)) >> 58; /* LANE_KEYS: 64 */
  lane_key *key = &ld->lane_keys[slot];
  ld->last_lane = (uint32_t)slot;
  if (key->lane && same_id(&key->pid, &e->pid) && same_id(&key->tid, &e->tid))
    return key->lane;
  lua_getfield(L, S_HOOKS, "lane");
  lua_pushvalue(L, S_ST);
  push_num(L, &e->pid);
  push_num(L, &e->tid);
  lua_call(L, 3, 1);
  luaL_checktype(L, -1, LUA_TTABLE);
  uint32_t k = lane_index(ld);
  key->pid = e->pid;
  key->tid = e->tid;
  key->lane = k;
  return k;
}

/* hooks[name](st, the string at index idx). */
static void note_str(loader *ld, const char *name, uint32_t idx) {
  lua_State *L = ld->L;
  lua_getfield(L, S_HOOKS, name);
  lua_pushvalue(L, S_ST);
  lua_rawgeti(L, S_STRS, idx);
  lua_call(L, 2, 0);
}

static int is_num(const val *v) {
  return v->kind == V_INT || v->kind == V_FLT;
}

static int time_ok(const val *v) {
  return is_num(v) && v->d >= -MAX_US && v->d <= MAX_US;
}

static int id_ok(const val *v) {
  return v->kind == V_NONE || is_num(v);
}

static void note_time(loader *ld, double ts, double stop) {
  if (ts < ld->t0)
    ld->t0 = ts;
  if (stop > ld->t1)
    ld->t1 = stop;
  ld->nev++;
}

enum { K_JOB = 1, K_SUBMIT, K_WAIT, K_COPY, K_SLICE };

/* What a complete event is (trace.lua's classify): its kind, and its
 * category's string in *cat; 0 when only the generic path reads it right:
 * a copy whose args the model keeps as a table among them, or a seed
 * trace's chained slice (trace.lua's read_complete knows its chain's tag). */
static int classify(loader *ld, const ev *e, uint32_t *cat) {
  src *t = &ld->t;
  int plain_args = (e->amask & ~A_JOB) == 0 && (e->job.kind == V_NONE || e->job.kind == V_INT);
  if (e->cat.kind == V_NONE && (e->name.esc || (e->args.kind == V_OBJ && (is_str(t, &e->name, "publish") ||
                                   is_str(t, &e->name, "chunk") || is_str(t, &e->name, "stage_wait")))))
    return 0; /* a seed trace's chained slice, or (an escaped name) maybe one */
  if ((e->cat.kind != V_NONE && e->cat.kind != V_STR) || (e->cat.kind == V_STR && e->cat.esc))
    return 0;
  if (ld->ours && is_str(t, &e->cat, "copy")) {
    if ((e->amask & (A_ARG | A_OTHER)) || (e->job.kind != V_NONE && e->job.kind != V_INT) ||
        (e->bytes.kind != V_NONE && e->bytes.kind != V_INT) || (e->acat.kind != V_NONE && e->acat.kind != V_STR))
      return 0;
    if (e->args.kind == V_OBJ && (e->amask & ~A_JOB) != 0 && e->amask != (A_JOB | A_BYTES | A_CAT))
      return 0; /* args kept as a table */
    *cat = e->acat.kind == V_STR ? intern_val(ld, &e->acat) : ld->s_job;
    return K_COPY;
  }
  if (!plain_args || (ld->ours && is_str(t, &e->cat, "flow")))
    return 0;
  if (ld->ours && is_str(t, &e->cat, "job")) {
    *cat = e->name.kind == V_STR ? intern_val(ld, &e->name) : ld->s_q;
    return K_JOB;
  }
  if (ld->ours && is_str(t, &e->cat, "submit")) {
    *cat = ld->s_submit;
    return K_SUBMIT;
  }
  const val *c = e->cat.kind == V_STR ? &e->cat : e->name.kind == V_STR ? &e->name : NULL;
  if (is_str(t, c ? c : &e->cat, "wait")) {
    *cat = ld->s_wait;
    return K_WAIT;
  }
  *cat = c ? intern_val(ld, c) : ld->s_q;
  return K_SLICE;
}

static void lane_dirty(loader *ld, uint32_t k) {
  if (!ld->lanes[k - 1].dirty) {
    ld->lanes[k - 1].dirty = 1;
    ld->dirty_lanes[ld->ndirty_lanes++] = k;
  }
}

/* A complete event straight into its lane's columns: 1, or 0 when the
 * generic path must read it. */
static int fast_slice(loader *ld, const ev *e) {
  lua_State *L = ld->L;
  if (e->odd || !time_ok(&e->ts) || !id_ok(&e->pid) || !id_ok(&e->tid) ||
      (e->args.kind != V_NONE && e->args.kind != V_OBJ))
    return 0;
  if (e->dur.kind != V_NONE && !(is_num(&e->dur) && e->dur.d >= 0 && e->dur.d <= MAX_US))
    return 0;
  double ts = e->ts.d, dur = e->dur.kind == V_NONE ? 0 : e->dur.d;
  uint32_t cat = 0;
  int kind = classify(ld, e, &cat);
  if (!kind)
    return 0;
  uint32_t li = use_lane(ld, e);
  if (cat != ld->lastcat) {
    ld->lastcat = cat;
    note_str(ld, "category", cat);
  }
  lane_buf *lb = &ld->lanes[li - 1];
  lane_dirty(ld, li);
  uint32_t kname = kind == K_JOB ? ld->s_job : kind == K_SUBMIT ? ld->s_submit : kind == K_WAIT ? ld->s_wait
                 : kind == K_COPY ? ld->s_copy : ld->s_slice;
  uint32_t name = e->name.kind == V_STR ? intern_val(ld, &e->name) : 0;
  put_d(L, &lb->c[0], ts);
  put_d(L, &lb->c[1], dur);
  col_put(L, &lb->c[2], T_STR, cat);
  col_put(L, &lb->c[3], T_STR, kname);
  col_put(L, &lb->c[4], T_STR, name ? name : ld->s_q);
  if (e->job.kind == V_INT)
    put_i(L, &lb->c[5], e->job.i);
  else
    col_put(L, &lb->c[5], T_FALSE, 0);
  if (kind == K_COPY) {
    lua_Integer k = ++ld->ncopies;
    if (e->args.kind == V_OBJ && e->amask == (A_JOB | A_BYTES | A_CAT))
      put_i(L, &lb->c[6], k); /* the copy's index: the page rebuilds its args */
    else
      col_put(L, &lb->c[6], T_FALSE, 0);
    put_d(L, &ld->copy[0], ts);
    put_d(L, &ld->copy[1], dur);
    col_put(L, &ld->copy[2], T_LANE, li);
    col_put(L, &ld->copy[3], T_STR, cat);
    col_put(L, &ld->copy[4], T_STR, name ? name : ld->s_copy);
    if (e->job.kind == V_INT)
      put_i(L, &ld->copy[5], e->job.i);
    else
      col_put(L, &ld->copy[5], T_FALSE, 0);
    put_i(L, &ld->copy[6], e->bytes.kind == V_INT ? e->bytes.i : 0);
  } else {
    col_put(L, &lb->c[6], T_FALSE, 0);
  }
  note_time(ld, ts, ts + dur);
  return 1;
}

/* An id of a marker's column: the number, 0 for none. */
static void put_id(lua_State *L, cells *c, const val *v) {
  if (v->kind == V_FLT)
    put_d(L, c, v->d);
  else
    put_i(L, c, v->kind == V_INT ? v->i : 0);
}

/* A marker (an instant of scope g or p) straight into the model's columns:
 * 1, or 0 when the generic path must read it. */
static int fast_marker(loader *ld, const ev *e) {
  lua_State *L = ld->L;
  src *t = &ld->t;
  if (e->odd || !time_ok(&e->ts) || !id_ok(&e->pid) || !id_ok(&e->tid) ||
      !(is_str(t, &e->s, "g") || is_str(t, &e->s, "p")))
    return 0;
  ld->nmarkers++;
  uint32_t kind = e->name.kind == V_STR ? intern_val(ld, &e->name) : ld->s_q;
  if (kind != ld->lastkind) {
    ld->lastkind = kind;
    note_str(ld, "marker_kind", kind);
  }
  put_d(L, &ld->marker[0], e->ts.d);
  col_put(L, &ld->marker[1], T_STR, kind);
  const val *a = &e->arg;
  if (a->kind == V_INT)
    put_i(L, &ld->marker[2], a->i);
  else if (a->kind == V_FLT && a->d >= -0x1p63 && a->d < 0x1p63 && a->d == floor(a->d))
    put_i(L, &ld->marker[2], (int64_t)a->d);
  else if (a->kind == V_FLT)
    put_d(L, &ld->marker[2], a->d);
  else if (a->kind == V_STR)
    col_put(L, &ld->marker[2], T_STR, intern_val(ld, a));
  else
    col_put(L, &ld->marker[2], T_NIL, 0);
  put_id(L, &ld->marker[3], &e->pid);
  put_id(L, &ld->marker[4], &e->tid);
  note_time(ld, e->ts.d, e->ts.d);
  return 1;
}

/* ---- counters ("C" events) ---- */

static int member_less(const src *t, const member *a, const member *b) {
  size_t n = a->len < b->len ? a->len : b->len;
  int c = memcmp(t->s + a->at, t->s + b->at, n);
  return c < 0 || (c == 0 && a->len < b->len);
}

/* The members of a "C" event's args (kept by read_members) into m[],
 * sorted by key (trace.lua's sorted_keys): their count, or -1 when only the
 * generic path reads them right (an escaped or repeated key, a string
 * value, a float a double may have rounded, too many keys). */
static int counter_members(const src *t, const ev *e, member *m) {
  if (e->nmem < 0)
    return -1;
  int n = 0;
  for (int j = 0; j < e->nmem; j++) {
    const member *x = &e->mem[j];
    if (x->v.kind == V_STR || (x->v.kind == V_FLT && !(fabs(x->v.d) < 0x1p53)))
      return -1;
    int k = n++;
    for (; k > 0 && !member_less(t, &m[k - 1], x); k--) {
      if (!member_less(t, x, &m[k - 1]))
        return -1; /* the same key twice */
    }
    memmove(&m[k + 1], &m[k], (size_t)(n - 1 - k) * sizeof *m);
    m[k] = *x;
  }
  return n;
}

static uint64_t track_hash(int has_pid, int64_t pid, uint32_t name, uint32_t key) {
  uint64_t h = ((uint64_t)pid * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)name << 32 | key) ^ (uint64_t)has_pid;
  return (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ULL;
}

static void track_map_grow(loader *ld) {
  size_t size = ld->track_mask ? (ld->track_mask + 1) * 2 : 64;
  track_slot *tab = calloc(size, sizeof *tab);
  if (!tab)
    nomem(ld->L);
  for (size_t k = 0; ld->track_map && k <= ld->track_mask; k++) {
    track_slot *s = &ld->track_map[k];
    if (!s->idx)
      continue;
    size_t j = track_hash(s->has_pid, s->pid, s->name, s->key) & (size - 1);
    while (tab[j].idx)
      j = (j + 1) & (size - 1);
    tab[j] = *s;
  }
  free(ld->track_map);
  ld->track_map = tab;
  ld->track_mask = size - 1;
}

/* The track of the event's name and pid for key m: its index, by
 * hooks.counter_track(st, name, pid, key) when not met yet. */
static uint32_t use_track(loader *ld, const ev *e, uint32_t name, const member *m) {
  lua_State *L = ld->L;
  int has_pid = e->pid.kind == V_INT;
  int64_t pid = has_pid ? e->pid.i : 0;
  uint32_t key = intern(ld, ld->t.s + m->at, m->len);
  size_t j = track_hash(has_pid, pid, name, key) & ld->track_mask;
  for (; ld->track_map[j].idx; j = (j + 1) & ld->track_mask) {
    track_slot *s = &ld->track_map[j];
    if (s->name == name && s->key == key && s->has_pid == has_pid && s->pid == pid)
      return s->idx;
  }
  lua_getfield(L, S_HOOKS, "counter_track");
  lua_pushvalue(L, S_ST);
  lua_rawgeti(L, S_STRS, name);
  push_num(L, &e->pid);
  lua_rawgeti(L, S_STRS, key);
  lua_call(L, 4, 1);
  luaL_checktype(L, -1, LUA_TTABLE);
  int fresh;
  uint32_t k = table_index(L, S_TRACKS, S_TRACKIDX, ld->ntracks, &fresh);
  if (fresh) {
    ld->tracks = room(L, ld->tracks, &ld->tracks_cap, ld->ntracks, sizeof *ld->tracks);
    uint32_t *d = realloc(ld->dirty_tracks, ld->tracks_cap * sizeof *ld->dirty_tracks);
    if (!d) /* the old list stays the loader's: freed with it */
      nomem(L);
    ld->dirty_tracks = d;
    ld->ntracks++;
  }
  track_slot *s = &ld->track_map[j];
  s->has_pid = has_pid;
  s->pid = pid;
  s->name = name;
  s->key = key;
  s->idx = k;
  if (++ld->ntrack_keys * 2 > ld->track_mask)
    track_map_grow(ld);
  return k;
}

/* A "C" event straight into its tracks (trace.lua's read_counter): 1, or
 * 0 when the generic path must read it. */
static int fast_counter(loader *ld, const ev *e) {
  lua_State *L = ld->L;
  member m[COUNTER_KEYS];
  if (e->odd || !time_ok(&e->ts) || (e->pid.kind != V_NONE && e->pid.kind != V_INT) || e->name.kind != V_STR ||
      e->name.esc || e->args.kind != V_OBJ)
    return 0;
  int n = counter_members(&ld->t, e, m);
  if (n < 0)
    return 0;
  double ts = e->ts.d;
  note_time(ld, ts, ts);
  ld->nextra++;
  put_d(L, &ld->extra, ts);
  uint32_t name = n > 0 ? intern_val(ld, &e->name) : 0;
  for (int k = 0; k < n; k++) {
    const val *v = &m[k].v;
    if (!is_num(v))
      continue;
    uint32_t ti = use_track(ld, e, name, &m[k]);
    track_buf *tb = &ld->tracks[ti - 1];
    if (!tb->dirty) {
      tb->dirty = 1;
      ld->dirty_tracks[ld->ndirty_tracks++] = ti;
    }
    put_d(L, &tb->ts, ts);
    if (v->kind == V_FLT && v->d == floor(v->d)) /* |d| < 2^53: counter_members saw to it */
      put_i(L, &tb->value, (int64_t)v->d);
    else if (v->kind == V_FLT)
      put_d(L, &tb->value, v->d);
    else
      put_i(L, &tb->value, v->i);
  }
  return 1;
}

/* ---- the cells into the model ---- */

static lua_Integer int_field(lua_State *L, int idx, const char *k) {
  lua_getfield(L, idx, k);
  lua_Integer v = lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

static inline double cell_d(const cells *c, uint32_t k) {
  double d;
  memcpy(&d, &c->v[k], sizeof d);
  return d;
}

/* The order of the cells of ts (times: doubles) by time, ties as they are
 * (a merge sort: stable, no recursion), in ld->order: NULL when they are in
 * it already. trace.lua's sort_columns sorts a whole column the same way,
 * so sorting its last cells first changes nothing but its work. */
static const uint32_t *time_order(loader *ld, const cells *ts) {
  size_t n = ts->n;
  if (n < 2 || ts->tag || ts->tag0 != T_NUM)
    return NULL;
  size_t k = 1;
  while (k < n && !(cell_d(ts, (uint32_t)k) < cell_d(ts, (uint32_t)k - 1)))
    k++;
  if (k == n)
    return NULL;
  if (n >= UINT32_MAX || n > SIZE_MAX / (3 * sizeof *ld->order))
    nomem(ld->L);
  free(ld->order);
  if (!(ld->order = malloc(3 * n * sizeof *ld->order)))
    nomem(ld->L);
  uint32_t *a = ld->order, *tmp = a + n, *run = tmp + n;
  /* A natural merge sort: the runs already in time order (a counter track
   * sampled on two threads is two runs, as our writer writes lane by lane)
   * merged pairwise until one is left. run[r]: where run r begins. */
  size_t nrun = 0;
  run[nrun++] = 0;
  for (k = 0; k < n; k++) {
    a[k] = (uint32_t)k;
    if (k > 0 && cell_d(ts, (uint32_t)k) < cell_d(ts, (uint32_t)k - 1))
      run[nrun++] = (uint32_t)k;
  }
  while (nrun > 1) {
    size_t out = 0;
    for (size_t r = 0; r < nrun; r += 2) {
      size_t lo = run[r], mid = r + 1 < nrun ? run[r + 1] : n, hi = r + 2 < nrun ? run[r + 2] : n;
      size_t x = lo, y = mid, o = lo;
      while (x < mid && y < hi) /* the right one only when strictly earlier: stable */
        tmp[o++] = cell_d(ts, a[y]) < cell_d(ts, a[x]) ? a[y++] : a[x++];
      while (x < mid)
        tmp[o++] = a[x++];
      while (y < hi)
        tmp[o++] = a[y++];
      run[out++] = (uint32_t)lo;
    }
    nrun = out;
    uint32_t *t = a;
    a = tmp, tmp = t;
  }
  if (a != ld->order)
    memcpy(ld->order, a, n * sizeof *a);
  return ld->order;
}

/* ---- native columns: the cells kept as they are (columns.h) ---- */

/* The cells of c, all of owner[name] (none in a Lua list), become its
 * native column, in the order `order` gives (NULL: as they are); c
 * emptied, its memory the column's (or freed). */
static void col_native(loader *ld, cells *c, int owner, const char *name, const uint32_t *order) {
  lua_State *L = ld->L;
  size_t n = c->n;
  jq_column *col = jq_column_new(L, S_CSTRS);
  col->tag0 = c->tag0;
  if (order) {
    if (!(col->v = malloc(n * sizeof *col->v)))
      nomem(L);
    for (size_t k = 0; k < n; k++)
      col->v[k] = c->v[order[k]];
    if (c->tag) {
      if (!(col->tag = malloc(n)))
        nomem(L);
      for (size_t k = 0; k < n; k++)
        col->tag[k] = c->tag[order[k]];
    }
    col_free(c);
  } else { /* its exact size */
    uint64_t *v = realloc(c->v, n * sizeof *v);
    col->v = v ? v : c->v;
    c->v = NULL;
    if (c->tag) {
      unsigned char *tag = realloc(c->tag, n);
      col->tag = tag ? tag : c->tag;
      c->tag = NULL;
    }
    col_free(c);
  }
  col->n = n;
  jq_column_attach(L, owner, name);
}

/* trace.lua's markers_to_lanes for native markers (the cells of pid and
 * tid, in the order `order`; their ts native already): each lane's
 * marker_ts (the markers of its pid and tid, by model.lane_cache), and
 * model.loose_marker_ts for the others; marker_pid and marker_tid gone. */
static void markers_to_lanes(loader *ld, const uint32_t *order) {
  lua_State *L = ld->L;
  const cells *ts = &ld->marker[0], *pid = &ld->marker[3], *tid = &ld->marker[4];
  size_t n = ts->n;
  int top = lua_gettop(L);
  if (n > UINT32_MAX || n > SIZE_MAX / 16)
    nomem(L);
  uint32_t *lane = lua_newuserdatauv(L, n * sizeof *lane + 1, 0);
  lua_getfield(L, S_MODEL, "lane_cache");
  int cache = lua_gettop(L);
  uint64_t last_p = 0, last_t = 0;
  int last_pt = -1, last_tt = -1;
  uint32_t last = 0;
  for (size_t k = 0; k < n; k++) {
    size_t i = order ? order[k] : k;
    int pt = pid->tag ? pid->tag[i] : pid->tag0, tt = tid->tag ? tid->tag[i] : tid->tag0;
    if (!(pt == last_pt && tt == last_tt && pid->v[i] == last_p && tid->v[i] == last_t)) {
      last = 0;
      push_cell(L, pt, pid->v[i]);
      if (lua_type(L, cache) == LUA_TTABLE && lua_rawget(L, cache) == LUA_TTABLE) {
        push_cell(L, tt, tid->v[i]);
        if (lua_rawget(L, -2) == LUA_TTABLE)
          last = lane_index(ld);
        else
          lua_pop(L, 1);
      }
      lua_settop(L, cache);
      last_pt = pt, last_tt = tt, last_p = pid->v[i], last_t = tid->v[i];
    }
    lane[k] = last;
  }
  /* the times grouped by lane (a counting sort), each group a column */
  size_t nl = ld->nlanes + 1;
  size_t *at = lua_newuserdatauv(L, (nl + 1) * sizeof *at, 0);
  uint64_t *v = lua_newuserdatauv(L, n * sizeof *v + 1, 0);
  memset(at, 0, (nl + 1) * sizeof *at);
  for (size_t k = 0; k < n; k++)
    at[lane[k] + 1]++;
  for (size_t l = 1; l <= nl; l++)
    at[l] += at[l - 1];
  for (size_t k = 0; k < n; k++)
    v[at[lane[k]]++] = ts->v[order ? order[k] : k];
  for (size_t l = nl; l > 0; l--) /* at[l]: the start of group l again */
    at[l] = at[l - 1];
  at[0] = 0;
  for (size_t l = 0; l < nl; l++) {
    size_t m = at[l + 1] - at[l];
    if (l > 0 && m == 0)
      continue;
    int owner = S_MODEL;
    if (l > 0) {
      lua_rawgeti(L, S_LANES, (lua_Integer)l);
      owner = lua_gettop(L);
    }
    const char *name = l > 0 ? "marker_ts" : "loose_marker_ts";
    if (m == 0) {
      lua_newtable(L);
      lua_setfield(L, owner, name);
    } else {
      jq_column *col = jq_column_new(L, S_CSTRS);
      col->tag0 = T_NUM;
      if (!(col->v = malloc(m * sizeof *col->v)))
        nomem(L);
      memcpy(col->v, v + at[l], m * sizeof *col->v);
      col->n = m;
      jq_column_attach(L, owner, name);
    }
    if (l > 0)
      lua_pop(L, 1);
  }
  lua_pushnil(L);
  lua_setfield(L, S_MODEL, "marker_pid");
  lua_pushnil(L);
  lua_setfield(L, S_MODEL, "marker_tid");
  lua_settop(L, top);
}

/* The strings' userdata of the native columns (at S_CSTRS): the bytes of
 * each string of the list at S_STRS, by index. */
static void native_strings(loader *ld) {
  lua_State *L = ld->L;
  jq_strs *s = jq_strs_new(L, S_STRS, S_LANES, ld->nstrs);
  for (size_t j = 0; ld->strs && j <= ld->strs_mask; j++) {
    const str_slot *x = &ld->strs[j];
    if (x->idx && x->idx <= ld->nstrs)
      s->p[x->idx] = x->p, s->len[x->idx] = x->len;
  }
  lua_replace(L, S_CSTRS);
}

/* The greatest of a lane's durations (trace.lua's order_lanes: 0, else
 * the float that beats it). */
static void set_maxdur(loader *ld, const cells *dur, int lane) {
  lua_State *L = ld->L;
  double max = 0;
  int any = 0;
  for (size_t k = 0; k < dur->n; k++) {
    int tag = dur->tag ? dur->tag[k] : dur->tag0;
    if (tag != T_NUM)
      luaL_error(L, "load_trace: a duration is not a number");
    double d = cell_d(dur, (uint32_t)k);
    if (d > max)
      max = d, any = 1;
  }
  if (any)
    lua_pushnumber(L, max);
  else
    lua_pushinteger(L, 0);
  lua_setfield(L, lane, "maxdur");
}

/* Every cell into the model's lists (`last`: the load's end, the cells put
 * in time order and their memory freed as each column is done; a column
 * with no item in Lua stays native, see columns.h). */
static void flush_all(loader *ld, int last) {
  static const char *const lane_cols[] = {"ts", "dur", "cat", "kind", "sname", "job", "args"};
  static const char *const copy_cols[] = {"copy_ts", "copy_dur", "copy_lane", "copy_category",
                                          "copy_name", "copy_job", "copy_bytes"};
  static const char *const marker_cols[] = {"marker_ts", "marker_kind", "marker_arg", "marker_pid", "marker_tid"};
  lua_State *L = ld->L;
  int native = last;
  if (native)
    native_strings(ld);
  for (size_t d = 0; d < ld->ndirty_lanes; d++) {
    uint32_t k = ld->dirty_lanes[d];
    lane_buf *lb = &ld->lanes[k - 1];
    lua_rawgeti(L, S_LANES, k);
    int lane = lua_gettop(L);
    lua_Integer base = int_field(L, lane, "n"), n = (lua_Integer)lb->c[0].n;
    const uint32_t *order = last ? time_order(ld, &lb->c[0]) : NULL;
    if (native && base == 0 && n > 0) {
      set_maxdur(ld, &lb->c[1], lane);
      for (int c = 0; c < LANE_COLS; c++)
        col_native(ld, &lb->c[c], lane, lane_cols[c], order);
    } else {
      for (int c = 0; c < LANE_COLS; c++)
        col_flush(L, &lb->c[c], lane, lane_cols[c], base, last, order);
    }
    lua_pushinteger(L, base + n);
    lua_setfield(L, lane, "n");
    lua_pop(L, 1);
    lb->dirty = 0;
  }
  ld->ndirty_lanes = 0;
  for (size_t d = 0; d < ld->ndirty_tracks; d++) {
    uint32_t k = ld->dirty_tracks[d];
    track_buf *tb = &ld->tracks[k - 1];
    lua_rawgeti(L, S_TRACKS, k);
    int track = lua_gettop(L);
    lua_Integer base = int_field(L, track, "n"), n = (lua_Integer)tb->ts.n;
    const uint32_t *order = last ? time_order(ld, &tb->ts) : NULL;
    if (native && base == 0 && n > 0) {
      col_native(ld, &tb->value, track, "value", order);
      col_native(ld, &tb->ts, track, "ts", order);
    } else {
      col_flush(L, &tb->value, track, "value", base, last, order);
      col_flush(L, &tb->ts, track, "ts", base, last, order);
    }
    lua_pushinteger(L, base + n);
    lua_setfield(L, track, "n");
    lua_pop(L, 1);
    tb->dirty = 0;
  }
  ld->ndirty_tracks = 0;
  lua_Integer base = ld->ncopies - (lua_Integer)ld->copy[0].n;
  int copies_native = native && base == 0 && ld->copy[0].n > 0;
  for (int c = 0; c < COPY_COLS; c++) {
    if (copies_native)
      col_native(ld, &ld->copy[c], S_MODEL, copy_cols[c], NULL);
    else
      col_flush(L, &ld->copy[c], S_MODEL, copy_cols[c], base, last, NULL);
  }
  base = ld->nmarkers - (lua_Integer)ld->marker[0].n;
  const uint32_t *order = last ? time_order(ld, &ld->marker[0]) : NULL;
  if (native && base == 0 && ld->marker[0].n > 0) {
    markers_to_lanes(ld, order);
    for (int c = 2; c >= 0; c--)
      col_native(ld, &ld->marker[c], S_MODEL, marker_cols[c], order);
    col_free(&ld->marker[3]);
    col_free(&ld->marker[4]);
  } else {
    for (int c = MARKER_COLS - 1; c >= 0; c--)
      col_flush(L, &ld->marker[c], S_MODEL, marker_cols[c], base, last, order);
  }
  order = last ? time_order(ld, &ld->extra) : NULL;
  base = ld->nextra - (lua_Integer)ld->extra.n;
  if (native && base == 0 && ld->extra.n > 0)
    col_native(ld, &ld->extra, S_MODEL, "extra_ts", order);
  else
    col_flush(L, &ld->extra, S_MODEL, "extra_ts", base, last, order);
}

static void set_num(lua_State *L, int idx, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, idx, k);
}

static double get_num(lua_State *L, int idx, const char *k) {
  lua_getfield(L, idx, k);
  double v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

/* The loader's counts to st (before Lua reads an event), or back. */
static void sync_counts(loader *ld, int to_lua) {
  lua_State *L = ld->L;
  if (to_lua) {
    set_num(L, S_ST, "t0", ld->t0);
    set_num(L, S_ST, "t1", ld->t1);
    lua_pushinteger(L, ld->nev);
    lua_setfield(L, S_ST, "nev");
    lua_pushinteger(L, ld->nmarkers);
    lua_setfield(L, S_ST, "nmarkers");
    lua_pushinteger(L, ld->nextra);
    lua_setfield(L, S_ST, "nextra");
    return;
  }
  ld->t0 = get_num(L, S_ST, "t0");
  ld->t1 = get_num(L, S_ST, "t1");
  ld->nev = (lua_Integer)get_num(L, S_ST, "nev");
  ld->nmarkers = (lua_Integer)get_num(L, S_ST, "nmarkers");
  ld->nextra = (lua_Integer)get_num(L, S_ST, "nextra");
}

/* The generic path adds nothing to the columns for this event (read by
 * read_event; e NULL: not an object): a metadata event, a "B", an instant
 * of another scope than g and p. Anything else may (a slice, a marker, a
 * counter, an "E", a flow...): the cells go into the lists first. */
static int touches_no_column(const src *t, const ev *e) {
  if (!e)
    return 1;
  if (e->odd)
    return 0;
  if (is_str(t, &e->ph, "M") || is_str(t, &e->ph, "B"))
    return 1;
  if (is_str(t, &e->ph, "i") || is_str(t, &e->ph, "I") || is_str(t, &e->ph, "R"))
    return e->s.kind != V_STR || (!e->s.esc && !is_str(t, &e->s, "g") && !is_str(t, &e->s, "p"));
  return 0;
}

/* Whether the event (not odd: its keys read) has the seed format's shape
 * (trace.lua's read_complete and seed_chain_tags: ph "X", no cat, args an
 * object, a name among `names`, which are NUL-separated); an escaped ph or
 * name, or an odd event, may have it. */
static int seed_shape(const src *t, const ev *e, const char *names) {
  if (e->odd)
    return 1;
  if (e->ph.kind != V_STR || e->cat.kind != V_NONE || e->args.kind != V_OBJ || e->name.kind != V_STR)
    return 0;
  if (!e->ph.esc && !is_str(t, &e->ph, "X"))
    return 0;
  if (e->name.esc)
    return 1;
  for (const char *w = names; *w; w += strlen(w) + 1)
    if (is_str_n(t, &e->name, w, strlen(w)))
      return 1;
  return 0;
}

#define CHAINED_NAMES "publish\0chunk\0stage_wait\0"

/* The seed format's chain tags, before the first event that may be a
 * chained slice is read: every event of the array that may be a publish
 * decoded and handed to hooks.chain_tags(st, list), which sets st's. 1, or
 * 0 and an error (the JSON; the one pass reads a text not yet checked). */
static int chain_tags(loader *ld) {
  lua_State *L = ld->L;
  src *t = &ld->t;
  size_t release_at = t->release_at, i = ws(t, ld->events_at + 1);
  t->release_at = NONE; /* the pages given back are read again: none given back on this account */
  lua_getfield(L, S_HOOKS, "chain_tags");
  lua_pushvalue(L, S_ST);
  lua_newtable(L);
  lua_Integer n = 0;
  while (i < t->n && t->s[i] != ']') {
    ev e;
    size_t end = t->s[i] == '{' ? read_event(t, i, &e) : skip_value(t, i, EVENT_DEPTH - 1);
    if (end && t->s[i] == '{' && seed_shape(t, &e, "publish\0")) {
      if (!push_value(L, t, i, S_NULL, EVENT_DEPTH - 1))
        end = 0;
      else
        lua_rawseti(L, -2, ++n);
    }
    i = end ? ws(t, end) : t->n;
    if (i < t->n && t->s[i] == ',')
      i = ws(t, i + 1);
    else if (i < t->n && t->s[i] != ']')
      i = t->n; /* (the reading says what is wrong) */
  }
  t->release_at = release_at;
  if (i >= t->n) {
    lua_pop(L, 3);
    return (int)fail(t, i, "unexpected end of the text (a value expected)");
  }
  lua_call(L, 2, 0);
  ld->chain_tags = 1;
  return 1;
}

/* Any other event: decoded into a table, read by hooks.rare(st, e, index)
 * (trace.lua's own code). One past it, or 0: an error (the JSON), or the
 * hook said no (*said_no; its two results stay on the stack). */
static size_t rare(loader *ld, size_t at, lua_Integer index, const ev *e, int *said_no) {
  lua_State *L = ld->L;
  int top = lua_gettop(L);
  if (e && !ld->chain_tags && seed_shape(&ld->t, e, CHAINED_NAMES) && !chain_tags(ld))
    return 0;
  int flush = !touches_no_column(&ld->t, e);
  if (flush)
    flush_all(ld, 0);
  sync_counts(ld, 1);
  lua_getfield(L, S_HOOKS, "rare");
  lua_pushvalue(L, S_ST);
  size_t end = push_value(L, &ld->t, at, S_NULL, 1);
  if (!end) {
    lua_settop(L, top);
    return 0;
  }
  lua_pushinteger(L, index);
  lua_call(L, 3, 2);
  if (lua_toboolean(L, -2)) {
    lua_settop(L, top);
    sync_counts(ld, 0);
    if (flush) { /* its copies are in the list now */
      lua_getfield(L, S_MODEL, "copy_ts");
      ld->ncopies = (lua_Integer)lua_rawlen(L, -1);
      lua_pop(L, 1);
    }
    return end;
  }
  *said_no = 1;
  return 0;
}

#define PROGRESS_STEP ((size_t)1 << 24)

static void progress(loader *ld, size_t at) {
  lua_State *L = ld->L;
  if (at <= ld->progress_at)
    return;
  ld->progress_at = at;
  if (lua_getfield(L, S_HOOKS, "progress") != LUA_TFUNCTION) {
    lua_pop(L, 1);
    return;
  }
  lua_pushinteger(L, (lua_Integer)at);
  lua_pushinteger(L, (lua_Integer)ld->t.n);
  lua_call(L, 2, 0);
}

/* A time of ours as the model holds it: the nanoseconds our writer
 * recorded, which it printed in 2048ths of a microsecond (trace.lua's
 * ns_time, the same operations). */
static void ns_time(val *v) {
  if (v->kind == V_FLT)
    v->d = floor(v->d * 1000 + 0.5) / 1000;
}

/* One element of the events array, at s[i]: one past it; 0 and an error
 * (JSON); 0 with *said_no (the hook's answer on the stack). */
static size_t one_event(loader *ld, size_t i, lua_Integer index, int *said_no) {
  src *t = &ld->t;
  ev e;
  if (t->s[i] != '{')
    return rare(ld, i, index, NULL, said_no);
  size_t end = read_event(t, i, &e);
  if (!end)
    return 0;
  if (ld->ours) {
    ns_time(&e.ts);
    ns_time(&e.dur);
  }
  int done = 0;
  if (e.ph.kind == V_STR && !e.ph.esc && e.ph.end - e.ph.at == 3) {
    switch (t->s[e.ph.at + 1]) {
    case 'X':
      done = fast_slice(ld, &e);
      break;
    case 'i':
    case 'I':
    case 'R':
      done = fast_marker(ld, &e);
      break;
    case 'C':
      done = fast_counter(ld, &e);
      break;
    default:
      break;
    }
  }
  if (done)
    return end;
  return rare(ld, i, index, &e, said_no) ? end : 0;
}

/* The events array at s[i] ('['), every element read in order: one past
 * it, or 0 (an error of the JSON in t, else *said_no with the hook's two
 * results on the stack). */
static size_t read_events(loader *ld, size_t i, int *said_no) {
  src *t = &ld->t;
  lua_Integer index = 0;
  size_t next_progress = PROGRESS_STEP;
  ld->events_at = i;
  i = ws(t, i + 1);
  if (i < t->n && t->s[i] == ']')
    return i + 1;
  for (;;) {
    i = ws(t, i);
    if (i >= t->n)
      return fail(t, i, "unexpected end of the text (a value expected)");
    if (!(i = one_event(ld, i, ++index, said_no)))
      return 0;
    if (i >= next_progress) {
      next_progress = i + PROGRESS_STEP;
      progress(ld, i);
    }
    if (i >= t->release_at)
      release(t, i);
    i = ws(t, i);
    if (i < t->n && t->s[i] == ',') {
      i++;
      continue;
    }
    if (i < t->n && t->s[i] == ']')
      return i + 1;
    return fail(t, i, "expected ',' or ']'");
  }
}

/* The key s[i..end) (its quotes included, checked by str_end) is `word`
 * (len bytes) once its escapes are decoded. */
static int key_is(src *t, size_t i, size_t end, int esc, const char *word, size_t len) {
  if (!esc)
    return end - i - 2 == len && memcmp(t->s + i + 1, word, len) == 0;
  size_t w = 0;
  for (size_t k = i + 1; k < end - 1;) {
    char u[4];
    size_t n = 1;
    if (t->s[k] != '\\') {
      u[0] = t->s[k++];
    } else if (t->s[k + 1] == 'u') {
      unsigned cp = 0;
      k = u_escape(t, k, &cp); /* checked already: never 0 here */
      n = put_utf8(u, cp);
    } else {
      u[0] = unescaped(t->s[k + 1]);
      k += 2;
    }
    if (n > len - w || memcmp(word + w, u, n) != 0)
      return 0;
    w += n;
  }
  return w == len;
}

/* Pass 1 of the checked path: the text is one JSON value and nothing else;
 * for an object, the values of its last "traceEvents" and "jobqueProfile"
 * keys, escapes decoded (NONE: none). 1, or 0 and an error. */
static int outline(src *t, size_t *events, size_t *meta) {
  size_t i = ws(t, 0);
  *events = *meta = NONE;
  if (i < t->n && t->s[i] == '{') {
    i = ws(t, i + 1);
    while (i < t->n && t->s[i] != '}') {
      int esc;
      size_t end = t->s[i] == '"' ? str_end(t, i, &esc) : fail(t, i, "expected a string key");
      if (!end)
        return 0;
      size_t *slot = key_is(t, i, end, esc, "traceEvents", 11)     ? events
                   : key_is(t, i, end, esc, "jobqueProfile", 13) ? meta
                                                                 : NULL;
      i = ws(t, end);
      if (i >= t->n || t->s[i] != ':')
        return (int)fail(t, i, "expected ':' after a key");
      i = ws(t, i + 1);
      if (slot)
        *slot = i;
      if (!(i = skip_value(t, i, 0)))
        return 0;
      i = ws(t, i);
      if (i < t->n && t->s[i] == ',') {
        i = ws(t, i + 1);
        if (i >= t->n || t->s[i] != '"')
          return (int)fail(t, i, "expected a string key");
      } else if (i >= t->n || t->s[i] != '}') {
        return (int)fail(t, i, "expected ',' or '}'");
      }
    }
    if (i >= t->n)
      return (int)fail(t, i, "unexpected end of the text (expected '}')");
    i++;
  } else if (!(i = skip_value(t, i, 0))) {
    return 0;
  }
  i = ws(t, i);
  if (i < t->n)
    return (int)fail(t, i, "text after the JSON value");
  return 1;
}

/* ---- the file ---- */

/* The text of a load when it is a file's: mapped (a regular file), else
 * read into memory of its own (a pipe, a terminal, a directory's error). */
typedef struct mapping {
  void *addr; /* the mapping, or NULL */
  size_t len;
  char *heap; /* the bytes read, or NULL */
} mapping;

static int mapping_gc(lua_State *L) {
  mapping *m = lua_touserdata(L, 1);
  if (m->addr)
    munmap(m->addr, m->len);
  m->addr = NULL;
  free(m->heap);
  m->heap = NULL;
  return 0;
}

/* The file open at fd read to its end into m->heap, exactly as long as
 * what was read (fd closed): 1, or 0 with a message pushed. */
static int read_all(lua_State *L, int fd, const char *path, mapping *m, src *t) {
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      size_t grown = cap ? cap * 2 : (size_t)1 << 16;
      char *p = grown > cap ? realloc(m->heap, grown) : NULL;
      if (!p) {
        close(fd);
        nomem(L);
      }
      m->heap = p;
      cap = grown;
    }
    ssize_t got = read(fd, m->heap + n, cap - n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      int err = errno;
      close(fd);
      lua_pushfstring(L, "cannot read %s: %s", path, strerror(err));
      return 0;
    }
    if (got == 0)
      break;
    n += (size_t)got;
  }
  close(fd);
  char *exact = realloc(m->heap, n ? n : 1); /* no byte after the text: ASan watches it */
  if (exact)
    m->heap = exact;
  t->s = m->heap;
  t->n = n;
  return 1;
}

/* The file at `path` as the text (its userdata at S_BOX): mapped, else
 * read. 1, or 0 with a message pushed. */
static int open_file(lua_State *L, const char *path, src *t) {
  mapping *m = lua_newuserdatauv(L, sizeof *m, 0);
  memset(m, 0, sizeof *m);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, mapping_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_replace(L, S_BOX);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    int err = errno;
    if (fd >= 0)
      close(fd);
    lua_pushfstring(L, "cannot open %s: %s", path, strerror(err));
    return 0;
  }
  t->s = "";
  t->n = 0;
  if (S_ISREG(st.st_mode) && st.st_size == 0) {
    close(fd);
    return 1;
  }
  void *addr = S_ISREG(st.st_mode) ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  if (addr == MAP_FAILED)
    return read_all(L, fd, path, m, t);
  close(fd);
  madvise(addr, (size_t)st.st_size, MADV_SEQUENTIAL);
  m->addr = addr;
  m->len = (size_t)st.st_size;
  t->s = addr;
  t->n = m->len;
  t->mapped = 1;
  return 1;
}

/* ---- the reading ---- */

/* The loader's state made anew (its strings, lanes and tracks; the text
 * kept), as before a first reading. */
static void fresh_state(loader *ld) {
  lua_State *L = ld->L;
  loader_free(ld);
  src t = ld->t;
  memset(ld, 0, sizeof *ld);
  ld->L = L;
  ld->t = t;
  ld->t.err = NULL;
  ld->t.err_at = 0;
  ld->t.release_at = 0;
  lua_settop(L, S_TOP);
  for (int k = S_STRS; k <= S_TRACKIDX; k++) {
    lua_newtable(L);
    lua_replace(L, k);
  }
  strs_grow(ld);
  track_map_grow(ld);
  ld->s_job = intern(ld, "job", 3);
  ld->s_submit = intern(ld, "submit", 6);
  ld->s_wait = intern(ld, "wait", 4);
  ld->s_copy = intern(ld, "copy", 4);
  ld->s_slice = intern(ld, "slice", 5);
  ld->s_q = intern(ld, "?", 1);
}

/* hooks.begin(meta, is_array) -> st | nil, message; then the model at
 * S_MODEL. 1, or 0 (the results on the stack; nothing when the meta's JSON
 * is bad). */
static int begin(loader *ld, size_t meta, int is_array) {
  lua_State *L = ld->L;
  lua_getfield(L, S_HOOKS, "begin");
  if (meta != NONE && ld->t.s[meta] != 'n') {
    size_t release_at = ld->t.release_at; /* the meta may come after the events: */
    ld->t.release_at = NONE;                /* no page is given back on its account */
    size_t end = push_value(L, &ld->t, meta, S_NULL, 0);
    ld->t.release_at = release_at;
    if (!end)
      return 0;
  } else {
    lua_pushnil(L);
  }
  lua_pushboolean(L, is_array);
  lua_call(L, 2, 2);
  if (lua_type(L, -2) != LUA_TTABLE)
    return 0;
  lua_pop(L, 1);
  lua_replace(L, S_ST);
  lua_getfield(L, S_ST, "ours");
  ld->ours = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, S_ST, "model");
  luaL_checktype(L, -1, LUA_TTABLE);
  lua_replace(L, S_MODEL);
  sync_counts(ld, 0);
  return 1;
}

/* The slots a load keeps; then the text: the string given, else the
 * file's. 1, or 0 with what to return pushed (nil, message, "file"). */
static int setup(lua_State *L, loader **ldp) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 3);
  luaL_checkstack(L, S_TOP + 20, "load_trace");
  lua_pushnil(L);                /* S_BOX */
  lua_pushlightuserdata(L, NULL); /* S_NULL: JSON's null, the value lua-cjson's cjson.null is */
  while (lua_gettop(L) < S_TOP)
    lua_pushnil(L);
  loader *ld = lua_newuserdatauv(L, sizeof *ld, 0);
  memset(ld, 0, sizeof *ld);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, loader_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_replace(L, S_LD);
  ld->L = L;
  *ldp = ld;
  if (lua_type(L, S_TEXT) == LUA_TSTRING) {
    ld->t.s = lua_tolstring(L, S_TEXT, &ld->t.n);
    return 1;
  }
  if (open_file(L, luaL_checkstring(L, S_PATH), &ld->t))
    return 1;
  luaL_pushfail(L);
  lua_insert(L, -2);
  lua_pushliteral(L, "file");
  return 0;
}

/* The loaded model's state: the cells into the lists, the counts to st. */
static int finish_load(loader *ld) {
  flush_all(ld, 1);
  sync_counts(ld, 1);
  lua_pushvalue(ld->L, S_ST);
  return 1;
}

/* A key of the top object at s[i] (its quote): the value's place, or 0
 * when it is not a plain key followed by a colon; *is: 1 for
 * "traceEvents", 2 for "jobqueProfile", else 0. */
static size_t top_key(src *t, size_t i, int *is) {
  int esc;
  size_t end = i < t->n && t->s[i] == '"' ? str_end(t, i, &esc) : 0;
  if (!end || esc)
    return 0;
  size_t len = end - i - 2;
  *is = len == 11 && memcmp(t->s + i + 1, "traceEvents", 11) == 0     ? 1
      : len == 13 && memcmp(t->s + i + 1, "jobqueProfile", 13) == 0 ? 2
                                                                       : 0;
  i = ws(t, end);
  if (i >= t->n || t->s[i] != ':')
    return 0;
  return ws(t, i + 1);
}

#define META_WINDOW ((size_t)1 << 22) /* where, at the end, the metadata is looked for */

/* Where the value of the last "jobqueProfile" key after s[from] is, as a
 * guess (looked for backwards, in the text's last META_WINDOW bytes; the
 * reading checks it): NONE when none is there. */
static size_t guess_meta(src *t, size_t from) {
  static const char key[] = "\"jobqueProfile\"";
  size_t klen = sizeof key - 1, lo = t->n > META_WINDOW ? t->n - META_WINDOW : 0;
  if (lo <= from)
    lo = from + 1;
  for (size_t k = t->n >= klen ? t->n - klen : 0; k >= lo && k + klen <= t->n; k--) {
    if (t->s[k] == '"' && memcmp(t->s + k, key, klen) == 0) {
      size_t i = ws(t, k + klen);
      if (i < t->n && t->s[i] == ':' && ws(t, i + 1) < t->n)
        return ws(t, i + 1);
    }
    if (k == 0)
      break;
  }
  return NONE;
}

/* The reading in one pass, for a text shaped as ours and Chrome's are: an
 * object whose keys are plain, with "traceEvents" an array (or a bare
 * array), its "jobqueProfile" (which our writer puts last) found first by a
 * guess. Pass 2 of the checked path checks the JSON as it reads, and this
 * checks the rest of the text: the model, or -1 when anything is not so
 * (bad JSON, a guess that was wrong, an event the hooks refused, another
 * shape): the checked path then reads the text anew, and says what it
 * says in the order it says it. */
static int load_fast(loader *ld) {
  src *t = &ld->t;
  size_t i = ws(t, 0), events = NONE, meta = NONE, guess = NONE;
  int is_array = t->s[i] == '[', is = 0;
  if (is_array) {
    events = i;
  } else if (t->s[i] == '{') {
    i = ws(t, i + 1);
    while (events == NONE) {
      if (!(i = top_key(t, i, &is)))
        return -1;
      if (is == 1) {
        events = i;
        break;
      }
      if (is == 2)
        meta = i;
      if (!(i = skip_value(t, i, 0)))
        return -1;
      i = ws(t, i);
      if (i >= t->n || t->s[i] != ',')
        return -1;
      i = ws(t, i + 1);
    }
    guess = guess_meta(t, events);
  } else {
    return -1;
  }
  if (events >= t->n || t->s[events] != '[' || !begin(ld, guess != NONE ? guess : meta, is_array))
    return -1;
  int said_no = 0;
  if (!(i = read_events(ld, events, &said_no)))
    return -1;
  if (!is_array) { /* the keys after the events */
    for (;;) {
      i = ws(t, i);
      if (i < t->n && t->s[i] == '}') {
        i++;
        break;
      }
      if (i >= t->n || t->s[i] != ',')
        return -1;
      if (!(i = top_key(t, ws(t, i + 1), &is)) || is == 1)
        return -1;
      if (is == 2)
        meta = i;
      if (!(i = skip_value(t, i, 0)))
        return -1;
    }
    if (meta != (guess != NONE ? guess : meta) || (guess != NONE && meta == NONE))
      return -1;
  }
  if (ws(t, i) != t->n)
    return -1;
  return finish_load(ld);
}

/* What the JSON value at s[i] is, in a message's words. */
static const char *json_type(const src *t, size_t i) {
  switch (t->s[i]) {
  case '{':
    return "object";
  case '[':
    return "array";
  case '"':
    return "string";
  case 'n':
    return "null";
  case 't':
  case 'f':
    return "boolean";
  default:
    return "number";
  }
}

/* A checked text whose top value (at s[top]) is no array: 1 when it is an
 * object whose "traceEvents" (at `events`) is an array or an empty object
 * (no events), else 0 with nil and the message pushed. */
static int object_shape(loader *ld, size_t top, size_t events) {
  const src *t = &ld->t;
  lua_State *L = ld->L;
  char c = events != NONE ? t->s[events] : 0;
  if (t->s[top] == '{' && (c == '[' || (c == '{' && t->s[ws(t, events + 1)] == '}')))
    return 1;
  luaL_pushfail(L);
  if (t->s[top] != '{')
    lua_pushfstring(L, "not a trace: the JSON is a %s, not an object with a \"traceEvents\" array",
                    json_type(t, top));
  else if (events == NONE)
    lua_pushliteral(L, "not a trace: no \"traceEvents\" array");
  else
    lua_pushfstring(L, "not a trace: \"traceEvents\" is not an array (it is %s%s)",
                    c == 'n' ? "" : c == '{' ? "an " : "a ", json_type(t, events));
  return 0;
}

/* nil, "offset N: why", "json": what load_trace returns for bad JSON. */
static int json_error(loader *ld) {
  luaL_pushfail(ld->L);
  lua_pushfstring(ld->L, "offset %I: %s", (LUAI_UACINT)ld->t.err_at, ld->t.err);
  lua_pushliteral(ld->L, "json");
  return 3;
}

/* The checked reading: the whole text checked first (pass 1), then read
 * (pass 2). What load_trace returns, on the stack: its count. */
static int load_checked(loader *ld) {
  size_t events, meta;
  int said_no = 0;
  if (!outline(&ld->t, &events, &meta))
    return json_error(ld);
  size_t top = ws(&ld->t, 0);
  int is_array = ld->t.s[top] == '[';
  if (is_array)
    events = top;
  else if (!object_shape(ld, top, events))
    return 2;
  if (!begin(ld, meta, is_array))
    return 2;
  if (ld->t.s[events] == '[' && !read_events(ld, events, &said_no))
    return said_no ? 2 : json_error(ld);
  return finish_load(ld);
}

/* load_trace(hooks, path [, text]) -> st | nil, message [, "json" | "file"] */
static int l_load_trace(lua_State *L) {
  loader *ld;
  if (!setup(L, &ld))
    return lua_gettop(L) - S_TOP;
  int n;
  if (ws(&ld->t, 0) == ld->t.n) {
    luaL_pushfail(L);
    lua_pushstring(L, ld->t.n ? "not a trace: the file is empty (only white space)" : "not a trace: the file is empty");
    n = 2;
  } else {
    fresh_state(ld);
    if ((n = load_fast(ld)) < 0) {
      fresh_state(ld);
      n = load_checked(ld);
    }
  }
  loader_free(ld);
  lua_pushcfunction(L, mapping_gc); /* the model holds copies of what it needs: the file can go now */
  lua_pushvalue(L, S_BOX);
  if (lua_type(L, -1) == LUA_TUSERDATA)
    lua_call(L, 1, 0);
  else
    lua_pop(L, 2);
  return n;
}

void jq_open_load(lua_State *L) {
  static const luaL_Reg fns[] = {{"load_trace", l_load_trace}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
