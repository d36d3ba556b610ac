/*
 * trace_load.c - core.load_trace: a trace file scanned straight into the
 * reader's columns (issue 12).
 *
 * The file is mapped (or the text given is read in place): no second copy.
 * Pass 1 checks the whole text is JSON (RFC 8259: strings with their
 * escapes and surrogate pairs, numbers with exponents, nothing after the
 * value) with an explicit stack of at most JQ_LOAD_MAX_DEPTH containers,
 * and finds the top object's "traceEvents" and "jobqueProfile". Pass 2
 * walks the events: the common ones (complete slices of a lane, markers)
 * go straight into the lanes' columns; any other is decoded into a Lua
 * table and handed to the reader's own code (hooks.rare), in file order.
 * No byte outside the buffer is read; no recursion; every allocation is
 * Lua's (a raised error leaks nothing: the mapping is a userdata's).
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

#include "trace_load.h"

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
  if (!t->err) {
    t->err = why;
    t->err_at = at;
  }
  return 0;
}

static size_t ws(const src *t, size_t i) {
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

static size_t str_end(src *t, size_t i, int *esc) {
  *esc = 0;
  for (size_t k = i + 1; k < t->n;) {
    while (k < t->n && !STOP[(unsigned char)t->s[k]])
      k++;
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
    luaL_addchar(&b, e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r'
                     : e == 't' ? '\t' : e);
    k += 2;
  }
  luaL_pushresult(&b);
}

static int digit(const src *t, size_t i) {
  return i < t->n && t->s[i] >= '0' && t->s[i] <= '9';
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The number at s[i]: one past it, or 0 and an error. *isint with *iv
 * when it is an integer literal that fits 64 bits, else *dv. */
static size_t number(src *t, size_t i, int *isint, int64_t *iv, double *dv) {
  size_t k = i;
  int neg = k < t->n && t->s[k] == '-', has_frac = 0, has_exp = 0, dropped = 0, digits = 0, scale = 0;
  k += (size_t)neg;
  if (!digit(t, k))
    return fail(t, i, "bad number");
  uint64_t m = 0;
  if (t->s[k] == '0')
    k++;
  else
    for (; digit(t, k); k++)
      if (digits < 19)
        m = m * 10 + (uint64_t)(t->s[k] - '0'), digits++;
      else
        dropped = 1;
  int over = dropped || m > (uint64_t)INT64_MAX + (uint64_t)neg;
  if (k < t->n && t->s[k] == '.') {
    has_frac = 1;
    if (!digit(t, ++k))
      return fail(t, k, "bad number (a digit must follow the point)");
    for (; digit(t, k); k++)
      if (digits < 19) {
        m = m * 10 + (uint64_t)(t->s[k] - '0');
        digits += m != 0;
        scale++;
      } else {
        dropped = 1;
      }
  }
  int e10 = 0;
  if (k < t->n && (t->s[k] == 'e' || t->s[k] == 'E')) {
    has_exp = 1;
    k++;
    int eneg = k < t->n && t->s[k] == '-';
    k += (size_t)(k < t->n && (t->s[k] == '-' || t->s[k] == '+'));
    if (!digit(t, k))
      return fail(t, k, "bad number (a digit must follow the exponent)");
    for (; digit(t, k); k++)
      e10 = e10 < 100000 ? e10 * 10 + (t->s[k] - '0') : e10;
    e10 = eneg ? -e10 : e10;
  }
  *isint = !has_frac && !has_exp && !over;
  if (*isint) {
    *iv = neg ? (m == (uint64_t)1 << 63 ? INT64_MIN : -(int64_t)m) : (int64_t)m;
    return k;
  }
  int p = e10 - scale;
  if (!dropped && m < ((uint64_t)1 << 53) && p >= -22 && p <= 22) { /* exact operands: correctly rounded */
    double d = p < 0 ? (double)m / POW10[-p] : (double)m * POW10[p];
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
 * JQ_LOAD_MAX_DEPTH containers (with L, two Lua slots each). */
static size_t walk(lua_State *L, src *t, size_t i, int null_idx) {
  char kind[JQ_LOAD_MAX_DEPTH];
  lua_Integer count[JQ_LOAD_MAX_DEPTH];
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
    if (depth == JQ_LOAD_MAX_DEPTH)
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

static size_t skip_value(src *t, size_t i) {
  return walk(NULL, t, i, 0);
}

static size_t push_value(lua_State *L, src *t, size_t i, int null_idx) {
  return walk(L, t, i, null_idx);
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
 * skipped: one past it, or 0 and an error. */
static size_t read_val(src *t, size_t i, val *v) {
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
    return v->end = skip_value(t, i);
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

typedef struct ev {
  val ph, ts, dur, pid, tid, name, cat, s, args, job, bytes, acat, arg;
  int amask; /* the keys args has (A_*) */
  int odd;   /* an escaped key: only the generic path reads it right */
} ev;

/* The key at s[i]: one past its colon; *slot its field of e (NULL: one we
 * do not read). */
typedef struct key_name {
  const char *name;
  size_t len;
} key_name;

#define KEY(s) {s, sizeof(s) - 1}

static size_t read_key(src *t, size_t i, val **slot, ev *e, int in_args) {
  static const key_name top[] = {KEY("ph"),  KEY("ts"),  KEY("dur"), KEY("pid"),  KEY("tid"),
                                 KEY("name"), KEY("cat"), KEY("s"),   KEY("args"), {NULL, 0}};
  static const key_name inner[] = {KEY("job"), KEY("bytes"), KEY("category"), KEY("arg"), {NULL, 0}};
  int esc;
  i = ws(t, i);
  size_t end = i < t->n && t->s[i] == '"' ? str_end(t, i, &esc) : fail(t, i, "expected a string key");
  if (!end)
    return 0;
  const key_name *names = in_args ? inner : top;
  size_t len = end - i - 2;
  val *fields[] = {&e->ph, &e->ts, &e->dur, &e->pid, &e->tid, &e->name, &e->cat, &e->s, &e->args};
  val *afields[] = {&e->job, &e->bytes, &e->acat, &e->arg};
  *slot = NULL;
  if (esc)
    e->odd = 1;
  for (int k = 0; !esc && names[k].name; k++)
    if (len == names[k].len && t->s[i + 1] == names[k].name[0] && memcmp(t->s + i + 1, names[k].name, len) == 0) {
      *slot = in_args ? afields[k] : fields[k];
      if (in_args)
        e->amask |= 1 << k;
      break;
    }
  if (in_args && !*slot)
    e->amask |= A_OTHER;
  i = ws(t, end);
  if (i >= t->n || t->s[i] != ':')
    return fail(t, i, "expected ':' after a key");
  return i + 1;
}

static size_t read_args(src *t, size_t i, ev *e);

/* The members of the object at s[i] ('{') into e (in_args: an event's
 * "args"): one past it, or 0. */
static size_t read_members(src *t, size_t i, ev *e, int in_args) {
  i = ws(t, i + 1);
  if (i < t->n && t->s[i] == '}')
    return i + 1;
  for (;;) {
    val *slot, skip;
    if (!(i = read_key(t, i, &slot, e, in_args)))
      return 0;
    i = slot == &e->args ? read_args(t, i, e) : read_val(t, i, slot ? slot : &skip);
    if (!i)
      return 0;
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
static size_t read_args(src *t, size_t i, ev *e) {
  e->amask = 0;
  e->job.kind = e->bytes.kind = e->acat.kind = e->arg.kind = V_NONE;
  i = ws(t, i);
  if (i >= t->n || t->s[i] != '{')
    return read_val(t, i, &e->args);
  e->args.kind = V_OBJ;
  e->args.at = i;
  return read_members(t, i, e, 1);
}

/* The event object at s[i] ('{') into *e: one past it, or 0. */
static size_t read_event(src *t, size_t i, ev *e) {
  memset(e, 0, sizeof *e);
  return read_members(t, i, e, 0);
}

/* ---- the loader: Lua stack slots it keeps ---- */

enum {
  S_HOOKS = 1, S_PATH, S_TEXT, S_BOX, S_NULL, S_ST, S_MTS, S_MKIND, S_MARG, S_MPID, S_MTID,
  S_CTS, S_CDUR, S_CLANE, S_CCAT, S_CNAME, S_CJOB, S_CBYTES, /* the copies' columns */
  S_XTS, /* model.extra_ts */
  S_KJOB, S_KSUBMIT, S_KWAIT, S_KCOPY, S_KSLICE, S_Q, S_KCOPYNAME, S_CACHE, S_LASTCAT, S_LASTKIND,
  S_LANE, S_LTS, S_LDUR, S_LCAT, S_LKIND, S_LSNAME, S_LJOB, S_LARGS,
  S_TRACKS, /* the counter tracks met: [3k+1] the track, [3k+2] its ts, [3k+3] its values */
  S_TOP = S_TRACKS
};

#define CACHE_N 8
#define TRACKS_N 32     /* counter tracks the loader finds without asking trace.lua */
#define TRACK_BYTES 120 /* of a track's event name and key, at most, for that */

/* A counter track the loader knows: the pid, name and key that make it. */
typedef struct track_id {
  int has_pid;
  int64_t pid;
  size_t name_len, key_len;
  char bytes[TRACK_BYTES]; /* the name, then the key */
} track_id;

typedef struct loader {
  lua_State *L;
  src t;
  int ours, has_lane, cache_next;
  double t0, t1;
  lua_Integer nev, nmarkers, ncopies, nextra, ln;
  int ntracks;
  track_id tracks[TRACKS_N];
  val lpid, ltid; /* the current lane's */
  struct {
    size_t at, len;
  } cache[CACHE_N];
} loader;

/* Pushes the string v (a V_STR) through a small cache of Lua strings. */
static void push_cached(loader *ld, const val *v) {
  lua_State *L = ld->L;
  size_t len = v->end - v->at;
  if (v->esc) {
    push_str(L, &ld->t, v->at, v->end, 1);
    return;
  }
  for (int k = 0; k < CACHE_N; k++)
    if (ld->cache[k].len == len && memcmp(ld->t.s + ld->cache[k].at, ld->t.s + v->at, len) == 0) {
      lua_rawgeti(L, S_CACHE, k + 1);
      return;
    }
  int k = ld->cache_next;
  ld->cache_next = (k + 1) % CACHE_N;
  push_str(L, &ld->t, v->at, v->end, 0);
  lua_pushvalue(L, -1);
  lua_rawseti(L, S_CACHE, k + 1);
  ld->cache[k].at = v->at;
  ld->cache[k].len = len;
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

static void flush_lane(loader *ld) {
  if (ld->has_lane) {
    lua_pushinteger(ld->L, ld->ln);
    lua_setfield(ld->L, S_LANE, "n");
    ld->has_lane = 0;
  }
}

/* The lane of (pid, tid) current, by hooks.lane(st, pid, tid). */
static void use_lane(loader *ld, const ev *e) {
  static const char *const cols[] = {"ts", "dur", "cat", "kind", "sname", "job", "args"};
  lua_State *L = ld->L;
  if (ld->has_lane && same_id(&ld->lpid, &e->pid) && same_id(&ld->ltid, &e->tid))
    return;
  flush_lane(ld);
  lua_getfield(L, S_HOOKS, "lane");
  lua_pushvalue(L, S_ST);
  push_num(L, &e->pid);
  push_num(L, &e->tid);
  lua_call(L, 3, 1);
  luaL_checktype(L, -1, LUA_TTABLE);
  lua_replace(L, S_LANE);
  for (int k = 0; k < 7; k++) {
    lua_getfield(L, S_LANE, cols[k]);
    lua_replace(L, S_LTS + k);
  }
  lua_getfield(L, S_LANE, "n");
  ld->ln = lua_tointeger(L, -1);
  lua_pop(L, 1);
  ld->lpid = e->pid;
  ld->ltid = e->tid;
  ld->has_lane = 1;
}

/* hooks[name](st, <the value on top>) when it differs from the one in slot
 * `last` (categories and marker kinds, in order of first appearance). */
static void note_name(loader *ld, const char *name, int last) {
  lua_State *L = ld->L;
  if (lua_rawequal(L, -1, last))
    return;
  lua_pushvalue(L, -1);
  lua_replace(L, last);
  lua_getfield(L, S_HOOKS, name);
  lua_pushvalue(L, S_ST);
  lua_pushvalue(L, -3);
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

enum { K_JOB = S_KJOB, K_SUBMIT = S_KSUBMIT, K_WAIT = S_KWAIT, K_COPY = S_KCOPY, K_SLICE = S_KSLICE };

/* What a complete event is (trace.lua's classify): the slot of its kind's
 * name, and its category pushed; 0 (nothing pushed) when only the generic
 * path reads it right, -1 for a seed trace's chained slice. */
static int classify(loader *ld, const ev *e) {
  src *t = &ld->t;
  lua_State *L = ld->L;
  int plain_args = (e->amask & ~A_JOB) == 0 && (e->job.kind == V_NONE || e->job.kind == V_INT);
  if (e->cat.kind == V_NONE && e->name.esc)
    return 0; /* (is it a seed trace's?) */
  if (e->cat.kind == V_NONE && e->args.kind == V_OBJ &&
      (is_str(t, &e->name, "publish") || is_str(t, &e->name, "chunk") || is_str(t, &e->name, "stage_wait")))
    return -1;
  if ((e->cat.kind != V_NONE && e->cat.kind != V_STR) || (e->cat.kind == V_STR && e->cat.esc))
    return 0;
  if (ld->ours && is_str(t, &e->cat, "copy")) {
    if ((e->amask & (A_ARG | A_OTHER)) || (e->job.kind != V_NONE && e->job.kind != V_INT) ||
        (e->bytes.kind != V_NONE && e->bytes.kind != V_INT) || (e->acat.kind != V_NONE && e->acat.kind != V_STR))
      return 0;
    if (e->acat.kind == V_STR)
      push_cached(ld, &e->acat);
    else
      lua_pushvalue(L, K_JOB);
    return K_COPY;
  }
  if (!plain_args || (ld->ours && is_str(t, &e->cat, "flow")))
    return 0;
  if (ld->ours && is_str(t, &e->cat, "job")) {
    if (e->name.kind == V_STR)
      push_cached(ld, &e->name);
    else
      lua_pushvalue(L, S_Q);
    return K_JOB;
  }
  if (ld->ours && is_str(t, &e->cat, "submit")) {
    lua_pushvalue(L, K_SUBMIT);
    return K_SUBMIT;
  }
  const val *c = e->cat.kind == V_STR ? &e->cat : e->name.kind == V_STR ? &e->name : NULL;
  if (c)
    push_cached(ld, c);
  else
    lua_pushvalue(L, S_Q);
  if (is_str(t, c ? c : &e->cat, "wait")) {
    lua_pop(L, 1);
    lua_pushvalue(L, K_WAIT);
    return K_WAIT;
  }
  return K_SLICE;
}

static void put_num(lua_State *L, int col, lua_Integer k, double x) {
  lua_pushnumber(L, x);
  lua_rawseti(L, col, k);
}

/* col[k] = the event's name, or else the value at slot `otherwise`. */
static void put_name(loader *ld, int col, lua_Integer k, const ev *e, int otherwise) {
  if (e->name.kind == V_STR)
    push_cached(ld, &e->name);
  else
    lua_pushvalue(ld->L, otherwise);
  lua_rawseti(ld->L, col, k);
}

/* An event's job id for a job column: the integer, or false for none. */
static void push_job(lua_State *L, const ev *e) {
  if (e->job.kind == V_INT)
    lua_pushinteger(L, (lua_Integer)e->job.i);
  else
    lua_pushboolean(L, 0);
}

/* A copy into the model's copy columns (trace.lua's add_copy): ts, dur,
 * lane, category (on top, popped), name, job (false: none), bytes. */
static void add_copy(loader *ld, const ev *e, double ts, double dur) {
  lua_State *L = ld->L;
  lua_Integer k = ++ld->ncopies;
  lua_rawseti(L, S_CCAT, k);
  put_num(L, S_CTS, k, ts);
  put_num(L, S_CDUR, k, dur);
  lua_pushvalue(L, S_LANE);
  lua_rawseti(L, S_CLANE, k);
  put_name(ld, S_CNAME, k, e, S_KCOPYNAME);
  push_job(L, e);
  lua_rawseti(L, S_CJOB, k);
  lua_pushinteger(L, e->bytes.kind == V_INT ? (lua_Integer)e->bytes.i : 0);
  lua_rawseti(L, S_CBYTES, k);
}

/* A copy's args column (its keys are job, bytes and category at most):
 * the copy's index when they are all three, else as the generic path
 * decodes them. */
static void push_copy_args(loader *ld, const ev *e) {
  lua_State *L = ld->L;
  if (e->args.kind != V_OBJ || (e->amask & ~A_JOB) == 0) { /* none, {} or {job: N}: the job column says it */
    lua_pushboolean(L, 0);
    return;
  }
  if (e->amask == (A_JOB | A_BYTES | A_CAT) && e->job.kind == V_INT && e->bytes.kind == V_INT &&
      e->acat.kind == V_STR) {
    lua_pushinteger(L, ld->ncopies);
    return;
  }
  lua_createtable(L, 0, 3);
  if (e->job.kind != V_NONE) {
    push_num(L, &e->job);
    lua_setfield(L, -2, "job");
  }
  if (e->bytes.kind != V_NONE) {
    push_num(L, &e->bytes);
    lua_setfield(L, -2, "bytes");
  }
  if (e->acat.kind != V_NONE) {
    push_cached(ld, &e->acat);
    lua_setfield(L, -2, "category");
  }
}

/* A complete event straight into its lane's columns: 1, or 0 when the
 * generic path must read it, -1 for a seed trace (the cjson path's). */
static int fast_slice(loader *ld, const ev *e) {
  lua_State *L = ld->L;
  if (e->odd || !time_ok(&e->ts) || !id_ok(&e->pid) || !id_ok(&e->tid) ||
      (e->args.kind != V_NONE && e->args.kind != V_OBJ))
    return 0;
  if (e->dur.kind != V_NONE && !(is_num(&e->dur) && e->dur.d >= 0 && e->dur.d <= MAX_US))
    return 0;
  double ts = e->ts.d, dur = e->dur.kind == V_NONE ? 0 : e->dur.d;
  int kind = classify(ld, e);
  if (kind <= 0)
    return kind;
  use_lane(ld, e); /* the category stays on top */
  lua_Integer n = ++ld->ln;
  note_name(ld, "category", S_LASTCAT);
  lua_pushvalue(L, -1);
  lua_rawseti(L, S_LCAT, n);
  if (kind == K_COPY)
    add_copy(ld, e, ts, dur);
  else
    lua_pop(L, 1);
  put_num(L, S_LTS, n, ts);
  put_num(L, S_LDUR, n, dur);
  lua_pushvalue(L, kind);
  lua_rawseti(L, S_LKIND, n);
  put_name(ld, S_LSNAME, n, e, S_Q);
  push_job(L, e);
  lua_rawseti(L, S_LJOB, n);
  if (kind == K_COPY)
    push_copy_args(ld, e);
  else
    lua_pushboolean(L, 0);
  lua_rawseti(L, S_LARGS, n);
  note_time(ld, ts, ts + dur);
  return 1;
}

/* A marker (an instant of scope g or p) straight into the model's columns:
 * 1, or 0 when the generic path must read it. */
static int fast_marker(loader *ld, const ev *e) {
  lua_State *L = ld->L;
  src *t = &ld->t;
  if (e->odd || !time_ok(&e->ts) || !id_ok(&e->pid) || !id_ok(&e->tid) ||
      !(is_str(t, &e->s, "g") || is_str(t, &e->s, "p")))
    return 0;
  lua_Integer n = ++ld->nmarkers;
  if (e->name.kind == V_STR)
    push_cached(ld, &e->name);
  else
    lua_pushvalue(L, S_Q);
  note_name(ld, "marker_kind", S_LASTKIND); /* the kind stays on top */
  lua_rawseti(L, S_MKIND, n);
  put_num(L, S_MTS, n, e->ts.d);
  const val *a = &e->arg;
  if (a->kind == V_INT || (a->kind == V_FLT && a->d >= -0x1p63 && a->d < 0x1p63 && a->d == floor(a->d)))
    lua_pushinteger(L, a->kind == V_INT ? (lua_Integer)a->i : (lua_Integer)a->d);
  else if (a->kind == V_FLT)
    lua_pushnumber(L, a->d);
  else if (a->kind == V_STR)
    push_str(L, t, a->at, a->end, a->esc);
  else
    lua_pushnil(L);
  lua_rawseti(L, S_MARG, n);
  if (e->pid.kind == V_NONE)
    lua_pushinteger(L, 0);
  else
    push_num(L, &e->pid);
  lua_rawseti(L, S_MPID, n);
  if (e->tid.kind == V_NONE)
    lua_pushinteger(L, 0);
  else
    push_num(L, &e->tid);
  lua_rawseti(L, S_MTID, n);
  note_time(ld, e->ts.d, e->ts.d);
  return 1;
}

/* ---- counters ("C" events) ---- */

#define COUNTER_KEYS 8 /* of a "C" event's args, at most, for the fast path */

typedef struct member {
  size_t at, len; /* the key's bytes (no quotes, no escapes) */
  val v;
} member;

static int member_less(const src *t, const member *a, const member *b) {
  size_t n = a->len < b->len ? a->len : b->len;
  int c = memcmp(t->s + a->at, t->s + b->at, n);
  return c < 0 || (c == 0 && a->len < b->len);
}

/* The members of a "C" event's args (an object, pass 1 checked it) into
 * m[], sorted by key (trace.lua's sorted_keys): their count, or -1 when
 * only the generic path reads them right (an escaped or repeated key, a
 * string value, a float a double may have rounded, too many keys). */
static int counter_members(const src *t, size_t i, member *m) {
  src scan = *t; /* errors cannot happen: the text is valid JSON */
  int n = 0;
  i = ws(&scan, i + 1);
  while (i < scan.n && scan.s[i] == '"') {
    int esc;
    size_t end = str_end(&scan, i, &esc);
    if (!end || esc || n == COUNTER_KEYS)
      return -1;
    member *x = &m[n];
    x->at = i + 1;
    x->len = end - i - 2;
    i = ws(&scan, end) + 1; /* the colon */
    if (!(i = read_val(&scan, i, &x->v)))
      return -1;
    if (x->v.kind == V_STR || (x->v.kind == V_FLT && !(fabs(x->v.d) < 0x1p53)))
      return -1;
    int k = n++;
    for (; k > 0 && !member_less(&scan, &m[k - 1], x); k--) {
      if (!member_less(&scan, x, &m[k - 1]))
        return -1; /* the same key twice */
    }
    member tmp = *x;
    memmove(&m[k + 1], &m[k], (size_t)(n - 1 - k) * sizeof *m);
    m[k] = tmp;
    i = ws(&scan, i);
    if (i < scan.n && scan.s[i] == ',')
      i = ws(&scan, i + 1);
  }
  return n;
}

/* The track of the event's name and pid for key m: its three tables
 * pushed (the track, its ts, its values), from the loader's own list, else
 * from hooks.counter_track(st, name, pid, key) (added to the list). */
static void push_track(loader *ld, const ev *e, const member *m) {
  lua_State *L = ld->L;
  const src *t = &ld->t;
  const char *name = t->s + e->name.at + 1;
  size_t name_len = e->name.end - e->name.at - 2;
  int has_pid = e->pid.kind == V_INT;
  int k = 0;
  for (; k < ld->ntracks; k++) {
    const track_id *id = &ld->tracks[k];
    if (id->has_pid == has_pid && (!has_pid || id->pid == e->pid.i) && id->name_len == name_len &&
        id->key_len == m->len && memcmp(id->bytes, name, name_len) == 0 &&
        memcmp(id->bytes + name_len, t->s + m->at, m->len) == 0)
      break;
  }
  if (k < ld->ntracks) {
    for (int c = 1; c <= 3; c++)
      lua_rawgeti(L, S_TRACKS, 3 * k + c);
    return;
  }
  lua_getfield(L, S_HOOKS, "counter_track");
  lua_pushvalue(L, S_ST);
  lua_pushlstring(L, name, name_len);
  push_num(L, &e->pid);
  lua_pushlstring(L, t->s + m->at, m->len);
  lua_call(L, 4, 1);
  luaL_checktype(L, -1, LUA_TTABLE);
  lua_getfield(L, -1, "ts");
  lua_getfield(L, -2, "value");
  if (ld->ntracks < TRACKS_N && name_len + m->len <= TRACK_BYTES) {
    track_id *id = &ld->tracks[ld->ntracks++];
    id->has_pid = has_pid;
    id->pid = has_pid ? e->pid.i : 0;
    id->name_len = name_len;
    id->key_len = m->len;
    memcpy(id->bytes, name, name_len);
    memcpy(id->bytes + name_len, t->s + m->at, m->len);
    for (int c = 1; c <= 3; c++) {
      lua_pushvalue(L, -4 + c);
      lua_rawseti(L, S_TRACKS, 3 * (ld->ntracks - 1) + c);
    }
  }
}

/* A counter's value as trace.lua keeps it: integers as integers. */
static void push_counter_value(lua_State *L, const val *v) {
  if (v->kind == V_FLT && v->d == floor(v->d)) /* |d| < 2^53: counter_members saw to it */
    lua_pushinteger(L, (lua_Integer)v->d);
  else
    push_num(L, v);
}

/* A "C" event straight into its tracks (trace.lua's read_counter): 1, or
 * 0 when the generic path must read it. */
static int fast_counter(loader *ld, const ev *e) {
  lua_State *L = ld->L;
  member m[COUNTER_KEYS];
  if (e->odd || !time_ok(&e->ts) || (e->pid.kind != V_NONE && e->pid.kind != V_INT) || e->name.kind != V_STR ||
      e->name.esc || e->args.kind != V_OBJ)
    return 0;
  int n = counter_members(&ld->t, e->args.at, m);
  if (n < 0)
    return 0;
  double ts = e->ts.d;
  note_time(ld, ts, ts);
  put_num(L, S_XTS, ++ld->nextra, ts);
  for (int k = 0; k < n; k++) {
    if (!is_num(&m[k].v))
      continue;
    push_track(ld, e, &m[k]);
    lua_getfield(L, -3, "n");
    lua_Integer c = lua_tointeger(L, -1) + 1;
    lua_pop(L, 1);
    lua_pushinteger(L, c);
    lua_setfield(L, -4, "n");
    put_num(L, -3, c, ts);
    push_counter_value(L, &m[k].v);
    lua_rawseti(L, -2, c);
    lua_pop(L, 3);
  }
  return 1;
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
    flush_lane(ld);
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
  ld->ncopies = (lua_Integer)lua_rawlen(L, S_CTS);
}

/* Any other event: decoded into a table, read by hooks.rare(st, e, index)
 * (trace.lua's own code). 1, 0 and an error (the JSON), or -2 when the hook
 * said no (its two results stay on the stack). */
static int rare(loader *ld, size_t at, lua_Integer index) {
  lua_State *L = ld->L;
  int top = lua_gettop(L);
  sync_counts(ld, 1);
  lua_getfield(L, S_HOOKS, "rare");
  lua_pushvalue(L, S_ST);
  if (!push_value(L, &ld->t, at, S_NULL)) {
    lua_settop(L, top);
    return 0;
  }
  lua_pushinteger(L, index);
  lua_call(L, 3, 2);
  if (lua_toboolean(L, -2) && lua_type(L, -2) != LUA_TSTRING) {
    lua_settop(L, top);
    sync_counts(ld, 0);
    return 1;
  }
  return -2;
}

#define PROGRESS_STEP ((size_t)1 << 24)

static void progress(loader *ld, size_t at) {
  lua_State *L = ld->L;
  if (lua_getfield(L, S_HOOKS, "progress") != LUA_TFUNCTION) {
    lua_pop(L, 1);
    return;
  }
  lua_pushinteger(L, (lua_Integer)at);
  lua_pushinteger(L, (lua_Integer)ld->t.n);
  lua_call(L, 2, 0);
}

/* One element of the events array, at s[i]: one past it; 0 and an error
 * (JSON); or 0 with ld->t.err NULL and the hook's answer on the stack. */
static size_t one_event(loader *ld, size_t i, lua_Integer index, int *fallback) {
  src *t = &ld->t;
  ev e;
  if (t->s[i] == '{') {
    size_t end = read_event(t, i, &e);
    if (!end)
      return 0;
    int done = 0;
    if (is_str(t, &e.ph, "X"))
      done = fast_slice(ld, &e);
    else if (is_str(t, &e.ph, "i") || is_str(t, &e.ph, "I") || is_str(t, &e.ph, "R"))
      done = fast_marker(ld, &e);
    else if (is_str(t, &e.ph, "C"))
      done = fast_counter(ld, &e);
    if (done < 0) {
      *fallback = 1;
      return 0;
    }
    if (done)
      return end;
  }
  int r = rare(ld, i, index);
  return r == 1 ? skip_value(t, i) : 0;
}

/* The events array at s[i] ('['), every element read in order. 1, or 0
 * (an error of the JSON in t, else the hook's two results on the stack,
 * else *fallback). */
static int read_events(loader *ld, size_t i, int *fallback) {
  src *t = &ld->t;
  lua_Integer index = 0;
  size_t next_progress = PROGRESS_STEP;
  i = ws(t, i + 1);
  if (i < t->n && t->s[i] == ']')
    return 1;
  for (;;) {
    i = ws(t, i);
    if (i >= t->n)
      return (int)fail(t, i, "unexpected end of the text (a value expected)");
    if (!(i = one_event(ld, i, ++index, fallback)))
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
      return 1;
    return (int)fail(t, i, "expected ',' or ']'");
  }
}

#define NONE ((size_t)-1)

/* Pass 1: the text is one JSON value and nothing else; for an object, the
 * values of its "traceEvents" and "jobqueProfile" keys (NONE: none; a key
 * with escapes in it sets *odd). 1, or 0 and an error. */
static int outline(src *t, size_t *events, size_t *meta, int *odd) {
  size_t i = ws(t, 0);
  *events = *meta = NONE;
  *odd = 0;
  if (i < t->n && t->s[i] == '{') {
    i = ws(t, i + 1);
    while (i < t->n && t->s[i] != '}') {
      int esc;
      size_t end = t->s[i] == '"' ? str_end(t, i, &esc) : fail(t, i, "expected a string key");
      if (!end)
        return 0;
      size_t len = end - i - 2, *slot = NULL;
      *odd |= esc;
      if (!esc && len == 11 && memcmp(t->s + i + 1, "traceEvents", 11) == 0)
        slot = events;
      if (!esc && len == 13 && memcmp(t->s + i + 1, "jobqueProfile", 13) == 0)
        slot = meta;
      i = ws(t, end);
      if (i >= t->n || t->s[i] != ':')
        return (int)fail(t, i, "expected ':' after a key");
      i = ws(t, i + 1);
      if (slot)
        *slot = i;
      if (!(i = skip_value(t, i)))
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
  } else if (!(i = skip_value(t, i))) {
    return 0;
  }
  i = ws(t, i);
  if (i < t->n)
    return (int)fail(t, i, "text after the JSON value");
  return 1;
}

/* ---- the binding ---- */

typedef struct mapping {
  void *addr;
  size_t len;
} mapping;

static int mapping_gc(lua_State *L) {
  mapping *m = lua_touserdata(L, 1);
  if (m->addr)
    munmap(m->addr, m->len);
  m->addr = NULL;
  return 0;
}

/* Maps the file at `path` (its userdata at S_BOX): 1, or 0 with an error
 * message pushed (-1: not a regular file, which the caller reads another way). */
static int map_file(lua_State *L, const char *path, src *t) {
  mapping *m = lua_newuserdatauv(L, sizeof *m, 0);
  m->addr = NULL;
  m->len = 0;
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
  if (!S_ISREG(st.st_mode) || st.st_size == 0) {
    close(fd);
    return -1;
  }
  void *addr = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  close(fd);
  if (addr == MAP_FAILED)
    return -1;
  madvise(addr, (size_t)st.st_size, MADV_SEQUENTIAL);
  m->addr = addr;
  m->len = (size_t)st.st_size;
  t->s = addr;
  t->n = m->len;
  t->mapped = 1;
  (void)err;
  return 1;
}

/* hooks.begin(meta, is_array) -> st | nil, message | "fallback"; then the
 * model's columns from st.model into their slots. 1, or 0 (the results on
 * the stack). */
static int begin(loader *ld, size_t meta, int is_array) {
  lua_State *L = ld->L;
  lua_getfield(L, S_HOOKS, "begin");
  if (meta != NONE && ld->t.s[meta] != 'n') {
    if (!push_value(L, &ld->t, meta, S_NULL))
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
  lua_getfield(L, S_ST, "model");
  static const char *const cols[] = {"marker_ts",  "marker_kind",   "marker_arg", "marker_pid", "marker_tid",
                                     "copy_ts",    "copy_dur",      "copy_lane",  "copy_category",
                                     "copy_name",  "copy_job",      "copy_bytes", "extra_ts"};
  enum { NCOLS = sizeof cols / sizeof cols[0] };
  for (int k = 0; k < NCOLS; k++) {
    lua_getfield(L, -1 - k, cols[k]);
    luaL_checktype(L, -1, LUA_TTABLE);
  }
  for (int k = NCOLS - 1; k >= 0; k--)
    lua_replace(L, S_MTS + k);
  lua_pop(L, 2);
  sync_counts(ld, 0);
  return 1;
}

/* The slots a load keeps; then the text: the string given, else the file
 * mapped. 1, or 0 with what to return pushed (nil, message | "fallback"). */
static int setup(lua_State *L, loader *ld) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 3);
  luaL_checkstack(L, S_TOP + 20, "load_trace");
  lua_pushnil(L); /* S_BOX */
  lua_getfield(L, S_HOOKS, "null");
  for (int k = S_ST; k < S_KJOB; k++)
    lua_pushnil(L);
  static const char *const kinds[] = {"job", "submit", "wait", "copy", "slice", "?", "copy"};
  for (int k = 0; k < 7; k++)
    lua_pushstring(L, kinds[k]);
  lua_createtable(L, CACHE_N, 0);
  while (lua_gettop(L) < S_TOP)
    lua_pushnil(L);
  lua_createtable(L, 3 * TRACKS_N, 0);
  lua_replace(L, S_TRACKS);
  memset(ld, 0, sizeof *ld);
  ld->L = L;
  if (lua_type(L, S_TEXT) == LUA_TSTRING) {
    ld->t.s = lua_tolstring(L, S_TEXT, &ld->t.n);
    lua_getfield(L, S_HOOKS, "exact");
    if (lua_toboolean(L, -1)) { /* the specs': a copy with no byte after it, for ASan to watch */
      char *copy = lua_newuserdatauv(L, ld->t.n ? ld->t.n : 1, 0);
      memcpy(copy, ld->t.s, ld->t.n);
      ld->t.s = copy;
      lua_replace(L, S_BOX);
    }
    lua_pop(L, 1);
    return 1;
  }
  const char *path = luaL_checkstring(L, S_PATH);
  int r = map_file(L, path, &ld->t);
  if (r == 1)
    return 1;
  if (r == 0) {
    luaL_pushfail(L);
    lua_insert(L, -2);
  } else {
    lua_pushliteral(L, "fallback");
  }
  return 0;
}

/* load_trace(hooks, path [, text]) -> st | nil, message [, "json"] | "fallback" */
static int load(lua_State *L, loader *ld);

static int l_load_trace(lua_State *L) {
  loader ld;
  if (!setup(L, &ld))
    return lua_gettop(L) - S_TOP;
  int n = load(L, &ld);
  if (ld.t.mapped) { /* the model holds copies of what it needs: the file can go now */
    lua_pushcfunction(L, mapping_gc);
    lua_pushvalue(L, S_BOX);
    lua_call(L, 1, 0);
  }
  return n;
}

static int load(lua_State *L, loader *ldp) {
  loader ld = *ldp;
  size_t events, meta;
  int odd, fallback = 0;
  if (ws(&ld.t, 0) == ld.t.n) { /* the cjson path's words, for the same file */
    luaL_pushfail(L);
    lua_pushstring(L, ld.t.n ? "not a trace: the file is empty (only white space)" : "not a trace: the file is empty");
    return 2;
  }
  if (!outline(&ld.t, &events, &meta, &odd)) {
    luaL_pushfail(L);
    lua_pushfstring(L, "offset %I: %s", (LUAI_UACINT)ld.t.err_at, ld.t.err);
    lua_pushliteral(L, "json");
    return 3;
  }
  size_t top = ws(&ld.t, 0);
  int is_array = ld.t.s[top] == '[';
  if (is_array)
    events = top;
  if (odd || events == NONE || ld.t.s[events] != '[') {
    lua_pushliteral(L, "fallback");
    return 1;
  }
  if (!begin(&ld, meta, is_array))
    return 2;
  if (!read_events(&ld, events, &fallback)) {
    if (fallback) {
      lua_pushliteral(L, "fallback");
      return 1;
    }
    if (!ld.t.err)
      return 2;
    luaL_pushfail(L);
    lua_pushfstring(L, "offset %I: %s", (LUAI_UACINT)ld.t.err_at, ld.t.err);
    lua_pushliteral(L, "json");
    return 3;
  }
  sync_counts(&ld, 1);
  lua_pushvalue(L, S_ST);
  return 1;
}

/* ---- sort_columns ---- */

typedef struct keyed {
  double ts;
  lua_Integer i; /* 1-based */
} keyed;

/* Sorts a[0..n) by ts, ties by i (a merge sort: stable, n log n, no
 * recursion), through tmp. */
static void merge_sort(keyed *a, keyed *tmp, size_t n) {
  for (size_t w = 1; w < n; w *= 2) {
    for (size_t lo = 0; lo < n - w; lo += 2 * w) {
      size_t mid = lo + w, hi = mid + w < n ? mid + w : n, x = lo, y = mid, k = lo;
      while (x < mid && y < hi)
        tmp[k++] = a[y].ts < a[x].ts ? a[y++] : a[x++];
      while (x < mid)
        tmp[k++] = a[x++];
      while (y < hi)
        tmp[k++] = a[y++];
      memcpy(a + lo, tmp + lo, (hi - lo) * sizeof *a);
    }
  }
}

/* sort_columns(t, fields, n): the columns t[fields[k]][1..n] put in the
 * order of the first one's numbers (ties: as they were), each a new table;
 * nothing done when they are in order already (trace.lua's sort_columns). */
static int l_sort_columns(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_checkinteger(L, 3);
  luaL_argcheck(L, n >= 0 && (lua_Unsigned)n < ((size_t)-1 / 2) / sizeof(keyed), 3, "count out of range");
  lua_rawgeti(L, 2, 1);
  lua_pushvalue(L, 4);
  if (lua_gettable(L, 1) != LUA_TTABLE) /* 5: the first column */
    return luaL_error(L, "sort_columns: no column %s", luaL_tolstring(L, 4, NULL));
  keyed *a = lua_newuserdatauv(L, (size_t)(n ? n : 1) * 2 * sizeof *a, 0);
  int sorted = 1;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, 5, i);
    int ok;
    a[i - 1].ts = lua_tonumberx(L, -1, &ok);
    a[i - 1].i = i;
    lua_pop(L, 1);
    if (!ok)
      return luaL_error(L, "sort_columns: item %I is not a number", (LUAI_UACINT)i);
    if (i > 1 && a[i - 1].ts < a[i - 2].ts)
      sorted = 0;
  }
  if (sorted)
    return 0;
  merge_sort(a, a + n, (size_t)n);
  lua_Integer nf = (lua_Integer)lua_rawlen(L, 2);
  for (lua_Integer f = 1; f <= nf; f++) {
    lua_rawgeti(L, 2, f); /* 7: the field's name */
    lua_pushvalue(L, -1);
    if (lua_gettable(L, 1) != LUA_TTABLE) /* 8: the old column */
      return luaL_error(L, "sort_columns: no column %s", luaL_tolstring(L, 7, NULL));
    lua_createtable(L, (int)(n < INT32_MAX ? n : INT32_MAX), 0);
    for (lua_Integer k = 0; k < n; k++) {
      lua_rawgeti(L, 8, a[k].i);
      lua_rawseti(L, -2, k + 1);
    }
    lua_pushvalue(L, 7);
    lua_pushvalue(L, 9);
    lua_rawset(L, 1); /* t[name] = the new one */
    lua_settop(L, 6);
  }
  return 0;
}

/* ---- sort_jobs ---- */

/* *out = the number at the top of the stack, popped; 0 when it is not a
 * number a double holds exactly (an integer beyond 2^53, or NaN). */
static int exact_number(lua_State *L, double *out) {
  int ok = 0;
  if (lua_isinteger(L, -1)) {
    lua_Integer x = lua_tointeger(L, -1);
    ok = x <= ((lua_Integer)1 << 53) && x >= -((lua_Integer)1 << 53);
    *out = (double)x;
  } else if (lua_type(L, -1) == LUA_TNUMBER) {
    *out = (double)lua_tonumber(L, -1);
    ok = *out == *out;
  }
  lua_pop(L, 1);
  return ok;
}

/* The list at index 1 (n items) rearranged: item k+1 becomes the item
 * a[k].i was (through a copy, popped). */
static void put_in_order(lua_State *L, const keyed *a, size_t n) {
  lua_createtable(L, (int)n, 0); /* the items as they were */
  int old = lua_gettop(L);
  for (size_t k = 1; k <= n; k++) {
    lua_rawgeti(L, 1, (lua_Integer)k);
    lua_rawseti(L, old, (lua_Integer)k);
  }
  for (size_t k = 0; k < n; k++) {
    lua_rawgeti(L, old, a[k].i);
    lua_rawseti(L, 1, (lua_Integer)k + 1);
  }
  lua_pop(L, 1);
}

/* sort_jobs(list, field) -> true: the tables list[1..#list] put in the
 * order of their numbers t[field], ties by their t.id (graph.lua's
 * sort_jobs); nothing (the list untouched) when an item is not a table or
 * its value or id not a number exact as a double: the Lua sort does those. */
static int l_sort_jobs(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *field = luaL_checkstring(L, 2);
  lua_Unsigned un = lua_rawlen(L, 1);
  luaL_argcheck(L, un < ((size_t)-1 / 4) / sizeof(keyed) && un < INT32_MAX, 1, "list too long");
  size_t n = (size_t)un;
  keyed *a = lua_newuserdatauv(L, (n ? n : 1) * 3 * sizeof *a, 0); /* 3 */
  keyed *tmp = a + n, *v = tmp + n; /* v[k].ts: item k+1's value */
  for (size_t k = 0; k < n; k++) {
    if (lua_rawgeti(L, 1, (lua_Integer)k + 1) != LUA_TTABLE)
      return 0;
    lua_getfield(L, -1, "id");
    int ok = exact_number(L, &a[k].ts);
    lua_getfield(L, -1, field);
    ok = ok && exact_number(L, &v[k].ts);
    lua_pop(L, 1);
    if (!ok)
      return 0;
    a[k].i = (lua_Integer)k + 1;
  }
  merge_sort(a, tmp, n); /* by id, then (stable) by value: ties by id */
  for (size_t k = 0; k < n; k++)
    a[k].ts = v[a[k].i - 1].ts;
  merge_sort(a, tmp, n);
  put_in_order(L, a, n);
  lua_pushboolean(L, 1);
  return 1;
}

/* sort_numbers(list) -> true: the numbers list[1..#list] in ascending
 * order (equal ones stay as they were: 3 and 3.0 are equal); nothing (the
 * list untouched) when one is not a number exact as a double. */
static int l_sort_numbers(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Unsigned un = lua_rawlen(L, 1);
  luaL_argcheck(L, un < ((size_t)-1 / 4) / sizeof(keyed) && un < INT32_MAX, 1, "list too long");
  size_t n = (size_t)un;
  keyed *a = lua_newuserdatauv(L, (n ? n : 1) * 2 * sizeof *a, 0); /* 2 */
  int sorted = 1;
  for (size_t k = 0; k < n; k++) {
    lua_rawgeti(L, 1, (lua_Integer)k + 1);
    if (!exact_number(L, &a[k].ts))
      return 0;
    a[k].i = (lua_Integer)k + 1;
    if (k > 0 && a[k].ts < a[k - 1].ts)
      sorted = 0;
  }
  lua_pushboolean(L, 1);
  if (sorted)
    return 1;
  merge_sort(a, a + n, n);
  put_in_order(L, a, n);
  lua_pushvalue(L, 3);
  return 1;
}

void jq_open_reader(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"load_trace", l_load_trace}, {"sort_columns", l_sort_columns}, {"sort_jobs", l_sort_jobs},
      {"sort_numbers", l_sort_numbers}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
