/*
 * json_scan.c - the loader's JSON scanner: strings (escapes, surrogate
 * pairs, the bytes that end a string found eight at a time), numbers
 * (integers exact to 64 bits, doubles correctly rounded), values walked
 * with an explicit stack of at most JQ_LOAD_MAX_DEPTH containers (skipped,
 * or pushed as Lua values), and the checked pass over a whole text.
 * RFC 8259 is the rule: nothing after the value, no raw control character
 * in a string, no "1." nor "01". No byte outside the text is read; no
 * recursion.
 * Owns: nothing (the text is its caller's). Must not: be used by the record
 * path. Thread safety: reentrant (one jq_src per call).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <lauxlib.h>

#include "reader/json_scan.h"
#include "reader/reader.h"

/* A mapped file's pages before s[i] go back to the system (a later read
 * maps them again): a pass holds about RELEASE_STEP bytes of the file in
 * memory, not all of it. */
void jq_scan_release(jq_src *t, size_t i) {
  t->release_at = i + RELEASE_STEP;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (t->mapped && i / page > 0)
    madvise((char *)t->s, i / page * page, MADV_DONTNEED);
}

size_t jq_scan_fail(jq_src *t, size_t at, const char *why) {
  if (at == 0 && t->n >= 3 && memcmp(t->s, "\xEF\xBB\xBF", 3) == 0)
    why = "a UTF-8 byte order mark, which JSON does not allow: remove the first 3 bytes";
  if (!t->err) {
    t->err = why;
    t->err_at = at;
  }
  return 0;
}


static int hex4(const jq_src *t, size_t i, unsigned *out) {
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
static size_t u_escape(jq_src *t, size_t i, unsigned *cp) {
  unsigned hi, lo;
  if (!hex4(t, i + 2, &hi))
    return jq_scan_fail(t, i, "bad \\u escape (4 hex digits expected)");
  if (hi >= 0xDC00 && hi <= 0xDFFF)
    return jq_scan_fail(t, i, "lone low surrogate in a \\u escape");
  if (hi < 0xD800 || hi > 0xDBFF) {
    *cp = hi;
    return i + 6;
  }
  if (i + 12 > t->n || t->s[i + 6] != '\\' || t->s[i + 7] != 'u' || !hex4(t, i + 8, &lo) ||
      lo < 0xDC00 || lo > 0xDFFF)
    return jq_scan_fail(t, i, "lone high surrogate in a \\u escape (a low one must follow)");
  *cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
  return i + 12;
}

/* The string at s[i] (its opening quote): one past its closing quote, or
 * 0 and an error; *esc: it has escapes. */
/* The bytes a string's scan stops at: the quote, the backslash, controls. */
static const unsigned char STOP[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1 /* " */, ['\\'] = 1};


/* The first k >= i with STOP[s[k]], or n. */
static inline size_t next_stop(const jq_src *t, size_t k) {
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

size_t jq_scan_string(jq_src *t, size_t i, int *esc) {
  *esc = 0;
  for (size_t k = i + 1; k < t->n;) {
    k = next_stop(t, k);
    if (k >= t->n)
      break;
    unsigned char c = (unsigned char)t->s[k];
    if (c == '"')
      return k + 1;
    if (c < 0x20)
      return jq_scan_fail(t, k, "control character in a string (escape it)");
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
      return jq_scan_fail(t, k, "bad escape in a string");
    }
  }
  return jq_scan_fail(t, i, "unterminated string");
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

/* Pushes the string s[i..end) (quotes included, checked by jq_scan_string). */
void jq_push_string(lua_State *L, jq_src *t, size_t i, size_t end, int esc) {
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
size_t jq_scan_number(jq_src *t, size_t i, int *isint, int64_t *iv, double *dv) {
  const char *s = t->s, *p = s + i, *e = s + t->n;
  int neg = p < e && *p == '-', has_frac = 0, has_exp = 0, dropped = 0, digits = 0, scale = 0;
  p += neg;
  if (p >= e || !IS_DIGIT(*p))
    return jq_scan_fail(t, i, "bad number");
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
      return jq_scan_fail(t, (size_t)(p - s), "bad number (a digit must follow the point)");
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
      return jq_scan_fail(t, (size_t)(p - s), "bad number (a digit must follow the exponent)");
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
    return jq_scan_fail(t, i, "not enough memory for a number");
  memcpy(buf, t->s + i, len);
  buf[len] = 0;
  *dv = strtod(buf, NULL);
  if (buf != small)
    free(buf);
  return k;
}

static size_t literal(jq_src *t, size_t i, const char *word) {
  size_t len = strlen(word);
  if (t->n - i < len || memcmp(t->s + i, word, len) != 0)
    return jq_scan_fail(t, i, "expected a value");
  return i + len;
}

/* One past the scalar at s[i] (string, number, true, false, null). */
size_t jq_scan_scalar(jq_src *t, size_t i) {
  int esc, isint;
  int64_t iv;
  double dv;
  switch (t->s[i]) {
  case '"':
    return jq_scan_string(t, i, &esc);
  case 't':
    return literal(t, i, "true");
  case 'f':
    return literal(t, i, "false");
  case 'n':
    return literal(t, i, "null");
  default:
    return jq_scan_number(t, i, &isint, &iv, &dv);
  }
}

/* Pushes the scalar at s[i]: one past it, or 0 (the stack unchanged). */
static size_t push_scalar(lua_State *L, jq_src *t, size_t i, int null_idx) {
  int esc, isint = 0;
  int64_t iv = 0;
  double dv = 0;
  size_t end;
  switch (t->s[i]) {
  case '"':
    if ((end = jq_scan_string(t, i, &esc)))
      jq_push_string(L, t, i, end, esc);
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
    if (!(end = jq_scan_number(t, i, &isint, &iv, &dv)))
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
 * (-1: a top object, which the limit leaves out, as jq_scan_outline does; with L,
 * two Lua slots each). */
size_t jq_scan_value(lua_State *L, jq_src *t, size_t i, int null_idx, int depth0) {
  char kind[JQ_LOAD_MAX_DEPTH + 1];
  lua_Integer count[JQ_LOAD_MAX_DEPTH + 1];
  int depth = 0;
  for (;;) {
    i = ws(t, i);
    if (i >= t->n)
      return jq_scan_fail(t, i, "unexpected end of the text (a value expected)");
    char c = t->s[i];
    if (c != '{' && c != '[') {
      if (!(i = L ? push_scalar(L, t, i, null_idx) : jq_scan_scalar(t, i)))
        return 0;
      goto done;
    }
    if (depth0 + depth >= JQ_LOAD_MAX_DEPTH)
      return jq_scan_fail(t, i, "nested too deep");
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
    size_t end = i < t->n && t->s[i] == '"' ? jq_scan_string(t, i, &esc) : jq_scan_fail(t, i, "expected a string key");
    if (!end)
      return 0;
    if (L)
      jq_push_string(L, t, i, end, esc);
    i = ws(t, end);
    if (i >= t->n || t->s[i] != ':')
      return jq_scan_fail(t, i, "expected ':' after a key");
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
      jq_scan_release(t, i);
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
    return jq_scan_fail(t, i, kind[depth - 1] == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}


/* The key s[i..end) (its quotes included, checked by jq_scan_string) is `word`
 * (len bytes) once its escapes are decoded. */
static int key_is(jq_src *t, size_t i, size_t end, int esc, const char *word, size_t len) {
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
int jq_scan_outline(jq_src *t, size_t *events, size_t *meta, size_t *frames, size_t *samples) {
  size_t i = ws(t, 0);
  *events = *meta = *frames = *samples = NONE;
  if (i < t->n && t->s[i] == '{') {
    i = ws(t, i + 1);
    while (i < t->n && t->s[i] != '}') {
      int esc;
      size_t end = t->s[i] == '"' ? jq_scan_string(t, i, &esc) : jq_scan_fail(t, i, "expected a string key");
      if (!end)
        return 0;
      size_t *slot = key_is(t, i, end, esc, "traceEvents", 11)     ? events
                   : key_is(t, i, end, esc, "jobqueProfile", 13) ? meta
                   : key_is(t, i, end, esc, "stackFrames", 11)   ? frames
                   : key_is(t, i, end, esc, "samples", 7)        ? samples
                                                                 : NULL;
      i = ws(t, end);
      if (i >= t->n || t->s[i] != ':')
        return (int)jq_scan_fail(t, i, "expected ':' after a key");
      i = ws(t, i + 1);
      if (slot)
        *slot = i;
      if (!(i = skip_value(t, i, 0)))
        return 0;
      i = ws(t, i);
      if (i < t->n && t->s[i] == ',') {
        i = ws(t, i + 1);
        if (i >= t->n || t->s[i] != '"')
          return (int)jq_scan_fail(t, i, "expected a string key");
      } else if (i >= t->n || t->s[i] != '}') {
        return (int)jq_scan_fail(t, i, "expected ',' or '}'");
      }
    }
    if (i >= t->n)
      return (int)jq_scan_fail(t, i, "unexpected end of the text (expected '}')");
    i++;
  } else if (!(i = skip_value(t, i, 0))) {
    return 0;
  }
  i = ws(t, i);
  if (i < t->n)
    return (int)jq_scan_fail(t, i, "text after the JSON value");
  return 1;
}

