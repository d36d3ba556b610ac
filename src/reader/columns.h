/*
 * columns.h - the model's native columns: a column the loader built in C
 * stays C cells, owned by a userdata, until Lua reads it; and the one
 * reader C code has for a column, native cells or a Lua list (jq_col).
 *
 * The loader (load_cells.c) hands a column to its owner table (a lane, a
 * counter track, the model) with jq_column_attach: the owner's raw field
 * is cleared and its metatable's __index makes the Lua list on the first
 * read of the field (rawset into the owner: once), its __newindex sets a
 * field raw and drops its column, its __pairs makes them all first.
 * A C reader opens a column with jq_col_open or jq_col_field and reads its
 * items with jq_col_push, jq_col_num and jq_col_str: the cells directly, a
 * column already made a list (or a list a caller built) as a list, a list
 * with a metatable as Lua reads it.
 * Owns: the cells (freed by the column's __gc). Must not: be used by the
 * record path. Thread safety: one lua_State per call.
 */
#ifndef JQ_COLUMNS_H
#define JQ_COLUMNS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <lua.h>

#include "reader/number.h"

/* A cell's kind (the loader's tags). */
enum { JQ_C_NUM, JQ_C_INT, JQ_C_STR, JQ_C_FALSE, JQ_C_NIL, JQ_C_LANE };

/* The strings a load met, by index (1-based): their bytes are the Lua
 * strings' in the list the userdata keeps (user value 1; the lanes list,
 * for JQ_C_LANE cells, is user value 2). */
typedef struct jq_strs {
  size_t n;
  const char **p; /* p[k], len[k]: string k (p[0] unused) */
  size_t *len;
} jq_strs;

/* A column: n cells, each 8 bytes (a double's bits, an int64, a string's
 * or a lane's index), a tag byte each only when they mix kinds. User
 * value 1: the jq_strs userdata. */
typedef struct jq_column {
  size_t n;
  uint64_t *v;
  unsigned char *tag; /* NULL: every cell's kind is tag0 */
  unsigned char tag0;
  const jq_strs *strs;
} jq_column;

static inline int jq_cell_tag(const jq_column *c, size_t k) { return c->tag ? c->tag[k] : c->tag0; }

static inline double jq_cell_num(const jq_column *c, size_t k) {
  double d;
  memcpy(&d, &c->v[k], sizeof d);
  return d;
}

static inline int64_t jq_cell_int(const jq_column *c, size_t k) {
  int64_t i;
  memcpy(&i, &c->v[k], sizeof i);
  return i;
}

/* The bytes of the string of a JQ_C_STR cell (its index), and its length. */
static inline const char *jq_column_str(const jq_column *c, uint64_t idx, size_t *len) {
  *len = c->strs->len[idx];
  return c->strs->p[idx];
}

/* Whether the cell k is the string s (a literal). */
#define JQ_CELL_IS(c, k, s)                                                                                       \
  (jq_cell_tag((c), (k)) == JQ_C_STR && (c)->strs->len[(c)->v[k]] == sizeof(s) - 1 &&                          \
   memcmp((c)->strs->p[(c)->v[k]], (s), sizeof(s) - 1) == 0)

/* ---- for the loader ---- */

/* A new strings userdata (pushed) for the strings list at `list` (n
 * strings) and the lanes list at `lanes`; its p/len arrays to fill. */
jq_strs *jq_strs_new(lua_State *L, int list, int lanes, size_t n);

/* A new empty column (pushed) of the strings userdata at `strs`: the
 * arrays put in its v and tag (malloc'd) are its own, freed by its __gc. */
jq_column *jq_column_new(lua_State *L, int strs);

/* The column on top (popped) becomes the field `field` of the table at
 * `owner`: the raw field cleared, the owner's metatable made (or reused). */
void jq_column_attach(lua_State *L, int owner, const char *field);

/* ---- for C readers ---- */

/* The native column of owner[field] not yet made a list (nothing pushed),
 * or NULL (the field is a Lua value: read it as one). */
jq_column *jq_column_get(lua_State *L, int owner, const char *field);

/* Pushes the native column (its userdata) of owner[field], or the field's
 * value (read raw when it is there, else as owner[field]); returns the
 * pushed value's type (LUA_TUSERDATA for a native column). */
int jq_column_field(lua_State *L, int owner, const char *field);

/* The column at idx, or NULL when the value there is not one. */
jq_column *jq_column_test(lua_State *L, int idx);

/* Pushes cell k (0-based) of the column whose userdata is at idx as the
 * Lua value it stands for. */
void jq_column_push(lua_State *L, int idx, size_t k);

/* Pushes the Lua list of the column at idx (a new table). */
void jq_column_list(lua_State *L, int idx);

/* ---- for C readers: one column, native cells or a Lua list ---- */

/* An open column. Items are 1-based; a native column's items past its
 * cells, and a list's past its end, are nil. */
typedef struct jq_col {
  const jq_column *c; /* the native column, or NULL: a Lua list */
  int idx;            /* the stack index of the column's userdata, the list or its memo */
  int meta;           /* a list with a metatable: idx holds its memo */
  lua_Integer n;      /* its length: the cells, or #list (its __len too) */
} jq_col;

/* Opens the value at idx as a column and pushes exactly one value for it
 * (keep it on the stack while the column is read): the native column's
 * userdata, a list without a metatable itself (read raw), or, for a table
 * with a metatable, a memo of what Lua reads from it: item i is t[i] (its
 * __index, once per i: what it raises is raised), kept in the memo so a
 * string's bytes stay put. Returns 1; 0 (nothing pushed) when the value
 * is neither a column nor a table. */
int jq_col_open(lua_State *L, int idx, jq_col *col);

/* jq_col_open of owner[field] (a native column not yet made a list, else
 * the field as Lua reads it): 1 and one value pushed, or 0 and nothing. */
int jq_col_field(lua_State *L, int owner, const char *field, jq_col *col);

/* Pushes item i (i >= 1) of a list with a metatable: columns.c. */
int jq_col_push_meta(lua_State *L, const jq_col *col, lua_Integer i);

/* Pushes item i; returns its type. */
static inline int jq_col_push(lua_State *L, const jq_col *col, lua_Integer i) {
  const jq_column *c = col->c;
  if (col->meta)
    return jq_col_push_meta(L, col, i);
  if (!c)
    return lua_rawgeti(L, col->idx, i);
  if (i < 1 || (lua_Unsigned)i > c->n) {
    lua_pushnil(L);
    return LUA_TNIL;
  }
  int tag = jq_cell_tag(c, (size_t)i - 1);
  if (tag == JQ_C_NUM)
    lua_pushnumber(L, jq_cell_num(c, (size_t)i - 1));
  else if (tag == JQ_C_INT)
    lua_pushinteger(L, (lua_Integer)jq_cell_int(c, (size_t)i - 1));
  else
    jq_column_push(L, col->idx, (size_t)i - 1);
  return lua_type(L, -1);
}

/* Cell k (0-based) of a native column as a number (NIL: not a number). */
static inline jq_num jq_cell_number(const jq_column *c, size_t k) {
  int t = jq_cell_tag(c, k);
  if (t == JQ_C_NUM)
    return jq_num_flt(jq_cell_num(c, k));
  if (t == JQ_C_INT)
    return jq_num_int((lua_Integer)jq_cell_int(c, k));
  return jq_num_nil();
}

/* Item i as a number (NIL when it is not one); nothing left pushed. */
static inline jq_num jq_col_num(lua_State *L, const jq_col *col, lua_Integer i) {
  const jq_column *c = col->c;
  if (c)
    return i < 1 || (lua_Unsigned)i > c->n ? jq_num_nil() : jq_cell_number(c, (size_t)i - 1);
  jq_col_push(L, col, i);
  jq_num x = jq_num_at(L, -1);
  lua_pop(L, 1);
  return x;
}

/* The bytes of item i and their length when it is a string, else NULL;
 * nothing left pushed. The bytes stay put while the column is open (the
 * column's strings or the list hold the string): their address can key a
 * cache. */
static inline const char *jq_col_str(lua_State *L, const jq_col *col, lua_Integer i, size_t *len) {
  const jq_column *c = col->c;
  if (c) {
    if (i < 1 || (lua_Unsigned)i > c->n || jq_cell_tag(c, (size_t)i - 1) != JQ_C_STR)
      return NULL;
    return jq_column_str(c, c->v[i - 1], len);
  }
  const char *p = jq_col_push(L, col, i) == LUA_TSTRING ? lua_tolstring(L, -1, len) : NULL;
  lua_pop(L, 1);
  return p;
}

/* Sets column_native(owner, field) -> the native column's userdata (not
 * yet made a list), or nil, in the table on top. */
void jq_open_columns(lua_State *L);

#endif
