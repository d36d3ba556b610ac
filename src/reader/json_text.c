/*
 * json_text.c - json_text(v): a Lua value as JSON text, the one JSON writer
 * of the reader (report --json, jobque_profile.util's json and quote, so
 * the page's args and names).
 *
 * A string is quoted with \" \\ \b \f \n \r \t and \u00XX for the other
 * control bytes, \uXXXX for the characters a terminal or a JavaScript
 * reader would act on rather than show (the C1 controls U+0080..U+009F,
 * U+2028 and U+2029, the bidi controls U+061C, U+200E, U+200F,
 * U+202A..U+202E, U+2066..U+2069), each sequence of bytes that is not
 * UTF-8 as U+FFFD; a
 * number as number_text.h's jq_json_number writes it (an integer in
 * decimal; a float to 14 significant digits, or 17 when 14 do not read
 * back as it; NaN and the infinities null); a table with nothing in it
 * (next) or with a t[1] is a list of t[1 .. #t]; any other table an object
 * of its string keys (as pairs gives them: its __pairs when it has one) in
 * Lua's order of strings, each value t[k]; anything else null. Tables are
 * read as Lua reads them (__len, __index, __pairs). Nesting is walked with
 * an explicit stack of frames, not C recursion: a value nested deeper than
 * the Lua stack can hold (a cycle, say) raises "stack overflow (json_text:
 * nesting too deep)".
 * Owns: nothing past a call (its buffers are a scratch userdata's).
 * Must not: run on the record path.
 * Thread safety: reentrant (one lua_State per call).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/number_text.h"
#include "reader/reader.h"
#include "reader/scratch.h"
#include "reader/sort.h"

/* The text being written: a jq_vec in a scratch userdata (its __gc frees
 * it when an error is raised), not a luaL_Buffer, whose stack discipline
 * the walk below, pushing keys and values as it goes, could not keep. */
typedef struct jbuf {
  lua_State *L;
  jq_vec *v;
} jbuf;

static void jb_add(jbuf *b, const char *s, size_t len) { jq_scratch_add(b->L, b->v, s, len); }

static void jb_char(jbuf *b, char c) { jb_add(b, &c, 1); }

static void jb_str(jbuf *b, const char *s) { jb_add(b, s, strlen(s)); }

/* The bytes at s[i] (a byte of 0x80 or more): the length of the UTF-8
 * character they start; else 0, and *skip the bytes one U+FFFD replaces:
 * the lead and the continuation bytes that could still have made a
 * character with it (the "maximal subpart" the Unicode standard
 * recommends replacing, as TextDecoder does). Overlong forms, surrogates
 * and code points beyond U+10FFFF are no characters. */
static size_t utf8_char(const unsigned char *s, size_t len, size_t i, size_t *skip) {
  unsigned char c = s[i], lo = 0x80, hi = 0xBF;
  size_t need;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    lo = c == 0xE0 ? 0xA0 : 0x80; /* E0 80..9F: overlong */
    hi = c == 0xED ? 0x9F : 0xBF; /* ED A0..BF: a surrogate */
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    lo = c == 0xF0 ? 0x90 : 0x80; /* F0 80..8F: overlong */
    hi = c == 0xF4 ? 0x8F : 0xBF; /* F4 90..BF: beyond U+10FFFF */
  } else { /* a continuation byte, C0, C1 (overlong) or F5..FF */
    *skip = 1;
    return 0;
  }
  size_t k = 1;
  for (; k <= need && i + k < len; k++) {
    if (s[i + k] < lo || s[i + k] > hi)
      break;
    lo = 0x80, hi = 0xBF;
  }
  if (k > need)
    return k;
  *skip = k;
  return 0;
}

/* Whether the character of the n bytes at p (UTF-8) is one written as
 * \uXXXX (see the top): 1 and its code point in *cp. */
static int unseen(const unsigned char *p, size_t n, unsigned *cp) {
  if (n == 2)
    *cp = (unsigned)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
  else if (n == 3)
    *cp = (unsigned)(p[0] & 0x0F) << 12 | (unsigned)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
  else
    return 0;
  unsigned c = *cp;
  return (c >= 0x80 && c <= 0x9F) || c == 0x61C || c == 0x200E || c == 0x200F || c == 0x2028 || c == 0x2029
      || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

/* Appends s as a JSON string: each sequence that is not UTF-8 as U+FFFD. */
static void add_quoted(jbuf *b, const char *s, size_t len) {
  jb_char(b, '"');
  size_t from = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x80) {
      size_t skip, n = utf8_char((const unsigned char *)s, len, i, &skip);
      unsigned cp;
      if (n && unseen((const unsigned char *)s + i, n, &cp)) {
        char esc[8];
        jb_add(b, s + from, i - from);
        snprintf(esc, sizeof esc, "\\u%04x", cp);
        jb_str(b, esc);
        from = i + n;
        i = from - 1;
        continue;
      }
      if (n) {
        i += n - 1;
        continue;
      }
      jb_add(b, s + from, i - from);
      jb_str(b, "\xEF\xBF\xBD"); /* U+FFFD */
      from = i + skip;
      i = from - 1;
      continue;
    }
    if (c != '"' && c != '\\' && !iscntrl(c)) /* Lua's %c is iscntrl */
      continue;
    jb_add(b, s + from, i - from);
    from = i + 1;
    char esc[8];
    const char *named = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\b' ? "\\b" : c == '\f' ? "\\f"
                      : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
    if (named) {
      jb_str(b, named);
    } else {
      snprintf(esc, sizeof esc, "\\u%04x", c);
      jb_str(b, esc);
    }
  }
  jb_add(b, s + from, len - from);
  jb_char(b, '"');
}

/* Appends the number at idx (number_text.h's report --json rule). */
static void add_number(lua_State *L, jbuf *b, int idx) {
  char text[JQ_NUMBER_TEXT];
  jb_add(b, text, jq_json_number(text, jq_num_at(L, idx)));
}

/* A table being written: its stack index, its keys' list (0: a list),
 * the item written last and how many there are. */
typedef struct frame {
  int t, keys;
  lua_Integer i, n;
} frame;

/* #t as util.json's `for i = 1, #t` takes it: an integer, a float floored
 * (NaN: none), a numeric string converted; anything else raises. */
static lua_Integer list_length(lua_State *L, int t) {
  lua_len(L, t);
  int isnum;
  lua_Integer n = lua_tointegerx(L, -1, &isnum);
  if (!isnum) {
    lua_Number f = lua_tonumberx(L, -1, &isnum);
    if (!isnum)
      luaL_error(L, "'for' limit must be a number");
    n = f != f || f < 1 ? 0 : f >= 0x1p63 ? LUA_MAXINTEGER : (lua_Integer)floor(f);
  }
  lua_pop(L, 1);
  return n;
}

typedef struct key_order {
  lua_State *L;
  int keys;
} key_order;

static int key_less(void *ctx, uint32_t a, uint32_t b) {
  const key_order *o = ctx;
  lua_rawgeti(o->L, o->keys, (lua_Integer)a + 1);
  lua_rawgeti(o->L, o->keys, (lua_Integer)b + 1);
  int less = lua_compare(o->L, -2, -1, LUA_OPLT); /* two strings: no metamethod */
  lua_pop(o->L, 2);
  return less;
}

/* Pushes the list of the string keys of the table at t, in Lua's order
 * of strings; returns how many. The keys come from its __pairs when it
 * has one (as pairs gives them), else from next. */
static lua_Integer push_keys(lua_State *L, jq_scratch *s, int t) {
  lua_newtable(L);
  int keys = lua_gettop(L);
  lua_Integer n = 0;
  int meta = luaL_getmetafield(L, t, "__pairs") != LUA_TNIL;
  if (meta) { /* f, s, k = __pairs(t) */
    lua_pushvalue(L, t);
    lua_call(L, 1, 3);
  } else {
    lua_pushnil(L);
  }
  for (;;) {
    if (meta) { /* k = f(s, k) */
      lua_pushvalue(L, -3);
      lua_pushvalue(L, -3);
      lua_pushvalue(L, -3);
      lua_call(L, 2, 1);
      lua_replace(L, -2);
      if (lua_isnil(L, -1))
        break;
    } else if (!lua_next(L, t)) {
      lua_pushnil(L);
      break;
    } else {
      lua_pop(L, 1);
    }
    if (lua_type(L, -1) == LUA_TSTRING) {
      lua_pushvalue(L, -1);
      lua_rawseti(L, keys, ++n);
    }
  }
  lua_settop(L, keys);
  if ((lua_Unsigned)n > UINT32_MAX)
    luaL_error(L, "json_text: too many keys");
  uint32_t *idx = jq_scratch_room(L, &s->b[1], 2 * (size_t)n, sizeof *idx);
  for (uint32_t k = 0; k < (uint32_t)n; k++)
    idx[k] = k;
  key_order o = {L, keys};
  jq_sort_stable(idx, idx + n, (size_t)n, key_less, &o);
  lua_createtable(L, n < INT32_MAX ? (int)n : 0, 0);
  for (lua_Integer k = 0; k < n; k++) {
    lua_rawgeti(L, keys, (lua_Integer)idx[k] + 1);
    lua_rawseti(L, -2, k + 1);
  }
  lua_replace(L, keys);
  return n;
}

/* The table on top opened for writing (its '[' or '{' written, its keys
 * pushed for an object): a list when it is empty (next) or has a t[1]. */
static frame open_table(lua_State *L, jbuf *b, jq_scratch *s) {
  frame f = {lua_gettop(L), 0, 0, 0};
  luaL_checkstack(L, 8, "json_text: nesting too deep");
  lua_pushnil(L);
  int empty = !lua_next(L, f.t);
  lua_settop(L, f.t);
  if (empty || lua_geti(L, f.t, 1) != LUA_TNIL) {
    lua_settop(L, f.t);
    f.n = list_length(L, f.t);
    jb_char(b, '[');
  } else {
    lua_settop(L, f.t);
    f.n = push_keys(L, s, f.t);
    f.keys = f.t + 1;
    jb_char(b, '{');
  }
  return f;
}

/* Pushes the next item of f (its separator and key written) and returns
 * 1; or writes f's closing bracket, drops f's values and returns 0. */
static int next_item(lua_State *L, jbuf *b, frame *f) {
  if (f->i >= f->n) {
    jb_char(b, f->keys ? '}' : ']');
    lua_settop(L, f->t - 1);
    return 0;
  }
  if (f->i++ > 0)
    jb_char(b, ',');
  if (!f->keys) {
    lua_geti(L, f->t, f->i);
    return 1;
  }
  lua_rawgeti(L, f->keys, f->i);
  size_t len;
  const char *k = lua_tolstring(L, -1, &len);
  add_quoted(b, k, len);
  jb_char(b, ':');
  lua_gettable(L, f->t);
  return 1;
}

/* Writes the value on top (popped), a table's items in turn through an
 * explicit stack of frames (in scratch buffer 0): no C recursion, however
 * deep the value nests; a nesting the Lua stack cannot hold raises. */
static void add_value(lua_State *L, jbuf *b, jq_scratch *s) {
  size_t depth = 0;
  for (;;) {
    int top = lua_gettop(L);
    switch (lua_type(L, top)) {
    case LUA_TSTRING: {
      size_t len;
      const char *str = lua_tolstring(L, top, &len);
      add_quoted(b, str, len);
      break;
    }
    case LUA_TNUMBER:
      add_number(L, b, top);
      break;
    case LUA_TBOOLEAN:
      jb_str(b, lua_toboolean(L, top) ? "true" : "false");
      break;
    case LUA_TTABLE: {
      frame f = open_table(L, b, s);
      frame *stack = jq_scratch_room(L, &s->b[0], depth + 1, sizeof *stack);
      stack[depth++] = f;
      break;
    }
    default:
      jb_str(b, "null");
    }
    if (lua_type(L, top) != LUA_TTABLE)
      lua_settop(L, top - 1);
    while (depth > 0 && !next_item(L, b, (frame *)s->b[0].p + (depth - 1)))
      depth--;
    if (depth == 0)
      return;
  }
}

/* json_text(v) -> v as JSON text. */
static int l_json_text(lua_State *L) {
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  jq_scratch *s = jq_scratch_new(L, 3); /* 2: the text, the frames, the key order */
  jbuf b = {L, &s->b[2]};
  lua_pushvalue(L, 1);
  add_value(L, &b, s);
  lua_pushlstring(L, b.v->p ? b.v->p : "", b.v->n);
  jq_scratch_free(s); /* now, not at the next collection: it can be a hundred MB */
  return 1;
}

void jq_open_json_text(lua_State *L) {
  lua_pushcfunction(L, l_json_text);
  lua_setfield(L, -2, "json_text");
}
