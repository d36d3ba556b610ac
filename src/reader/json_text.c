/*
 * json_text.c - core.json_text(v): a Lua value as JSON text, the same bytes
 * as jobque_profile.util's json (report --json, the page's args), in C: the
 * figures of a big trace are millions of values.
 *
 * The rules are util.json's: a string quoted with \" \\ \b \f \n \r \t and
 * \u00XX for the other control bytes, each sequence of bytes that is not
 * UTF-8 as U+FFFD; a number as number_text.h's jq_json_number writes it
 * (an integer in decimal; a float to 14 significant digits, or 17 when 14
 * do not read back as it; NaN and the infinities null); a table with nothing in it or with a [1] a list of
 * 1 .. #t; any other table an object of its string keys in Lua's order of
 * strings; anything else null. Tables are read as Lua reads them (__len,
 * __index); one with a __pairs, or nesting deeper than JQ_JSON_MAX_DEPTH,
 * makes it give nil, and util.json does the work.
 * Owns: nothing past a call. Must not: run on the record path.
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

#if !defined(JQ_JSON_MAX_DEPTH)
#define JQ_JSON_MAX_DEPTH 64 /* deeper: util.json, which has no C stack to mind */
#endif

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

/* Appends s as a JSON string: each sequence that is not UTF-8 as U+FFFD. */
static void add_quoted(jbuf *b, const char *s, size_t len) {
  jb_char(b, '"');
  size_t from = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x80) {
      size_t skip, n = utf8_char((const unsigned char *)s, len, i, &skip);
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

static int add_value(lua_State *L, jbuf *b, int idx, int depth);

/* Pushes t[k] (with its __index) for the table at idx and appends it. */
static int add_item(lua_State *L, jbuf *b, int depth) {
  int ok = add_value(L, b, lua_gettop(L), depth);
  lua_pop(L, 1);
  return ok;
}

/* The table at idx as a list or an object; 0 when util.json must do it. */
static int add_table(lua_State *L, jbuf *b, int idx, int depth) {
  if (depth >= JQ_JSON_MAX_DEPTH || !lua_checkstack(L, 8))
    return 0;
  if (luaL_getmetafield(L, idx, "__pairs") != LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  lua_pushnil(L);
  int empty = !lua_next(L, idx);
  if (!empty)
    lua_pop(L, 2);
  int list = empty || lua_geti(L, idx, 1) != LUA_TNIL;
  if (!empty)
    lua_pop(L, 1);
  if (list) {
    lua_len(L, idx);
    int isnum;
    lua_Integer n = lua_tointegerx(L, -1, &isnum);
    lua_pop(L, 1);
    if (!isnum)
      return 0; /* a __len that is no integer: the Lua loop's error, not ours */
    jb_char(b, '[');
    for (lua_Integer i = 1; i <= n; i++) {
      if (i > 1)
        jb_char(b, ',');
      lua_geti(L, idx, i);
      if (!add_item(L, b, depth + 1))
        return 0;
    }
    jb_char(b, ']');
    return 1;
  }
  /* An object: its string keys in Lua's order (an insertion sort through
   * lua_compare: objects have a handful of keys), each value as t[k]. */
  int keys = lua_gettop(L) + 1, nk = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      if (!lua_checkstack(L, 4))
        return 0;
      lua_pushvalue(L, -1);
      lua_insert(L, keys + nk); /* the key kept below the iteration's */
      nk++;
      for (int j = keys + nk - 1; j > keys && lua_compare(L, j, j - 1, LUA_OPLT); j--) {
        lua_pushvalue(L, j); /* swap j and j - 1 */
        lua_copy(L, j - 1, j);
        lua_replace(L, j - 1);
      }
    }
  }
  jb_char(b, '{');
  for (int k = 0; k < nk; k++) {
    if (k > 0)
      jb_char(b, ',');
    size_t len;
    const char *s = lua_tolstring(L, keys + k, &len);
    add_quoted(b, s, len);
    jb_char(b, ':');
    lua_pushvalue(L, keys + k);
    lua_gettable(L, idx);
    if (!add_item(L, b, depth + 1))
      return 0;
  }
  jb_char(b, '}');
  lua_settop(L, keys - 1);
  return 1;
}

/* Appends the value at idx; 0 when util.json must do it. */
static int add_value(lua_State *L, jbuf *b, int idx, int depth) {
  switch (lua_type(L, idx)) {
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    add_quoted(b, s, len);
    return 1;
  }
  case LUA_TNUMBER:
    add_number(L, b, idx);
    return 1;
  case LUA_TBOOLEAN:
    jb_str(b, lua_toboolean(L, idx) ? "true" : "false");
    return 1;
  case LUA_TTABLE:
    return add_table(L, b, idx, depth);
  default:
    jb_str(b, "null");
    return 1;
  }
}

/* json_text(v) -> v as JSON text, or nil when util.json must do it. */
static int l_json_text(lua_State *L) {
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  jq_scratch *s = jq_scratch_new(L, 1); /* 2 */
  jbuf b = {L, &s->b[0]};
  if (!add_value(L, &b, 1, 0)) {
    jq_scratch_free(s);
    lua_pushnil(L);
    return 1;
  }
  lua_pushlstring(L, b.v->p ? b.v->p : "", b.v->n);
  jq_scratch_free(s); /* now, not at the next collection: it can be a hundred MB */
  return 1;
}

void jq_open_json_text(lua_State *L) {
  lua_pushcfunction(L, l_json_text);
  lua_setfield(L, -2, "json_text");
}
