/*
 * columns.h - the model's native columns: a column the loader
 * built in C stays C cells, owned by a userdata, until Lua reads it.
 *
 * The loader (load_cells.c) hands a column to its owner table (a lane, a
 * counter track, the model) with jq_column_attach: the owner's raw field
 * is cleared and its metatable's __index makes the Lua list on the first
 * read of the field (rawset into the owner: once), its __newindex sets a
 * field raw and drops its column, its __pairs makes them all first. C readers (stats.c, graph.c, page.c) ask jq_column_get or
 * jq_column_field and read the cells directly; a column already made a
 * list is read as a list.
 * Owns: the cells (freed by the column's __gc). Must not: be used by the
 * record path. Thread safety: one lua_State per call.
 */
#ifndef JQ_COLUMNS_H
#define JQ_COLUMNS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <lua.h>

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

/* Sets column_native(owner, field) -> the native column's userdata (not
 * yet made a list), or nil, in the table on top. */
void jq_open_columns(lua_State *L);

#endif
