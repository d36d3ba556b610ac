/*
 * columns.c - the model's native columns: cells owned by a userdata,
 * made a Lua list when Lua first reads them; and jq_col_open, the C
 * readers' way in (see columns.h).
 *
 * An owner table with native columns has its own metatable: __index (a
 * field missing from the table: its column made a list, rawset into the
 * table, the column dropped from the metatable), __newindex (a field set:
 * raw, its column dropped), __pairs (every column made a list first, then
 * next), and the columns themselves under their field names. The cells' strings and lanes are indexes into the load's
 * lists, which the strings userdata keeps alive.
 * Owns: the cells and the strings' index (freed by the userdata's __gc).
 * Must not: be used by the record path. Thread safety: one lua_State per call.
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/columns.h"
#include "reader/scratch.h"

#define COLUMN_MT "jobque.column"
#define STRS_MT "jobque.strings"

static int l_strs_gc(lua_State *L) {
  jq_strs *s = luaL_checkudata(L, 1, STRS_MT);
  free(s->p);
  free(s->len);
  s->p = NULL;
  s->len = NULL;
  s->n = 0;
  return 0;
}

static int l_column_gc(lua_State *L) {
  jq_column *c = luaL_checkudata(L, 1, COLUMN_MT);
  free(c->v);
  free(c->tag);
  c->v = NULL;
  c->tag = NULL;
  c->n = 0;
  return 0;
}

static int l_column_tostring(lua_State *L) {
  jq_column *c = luaL_checkudata(L, 1, COLUMN_MT);
  lua_pushfstring(L, COLUMN_MT " (%I cells)", (LUAI_UACINT)c->n);
  return 1;
}

static int l_column_len(lua_State *L) {
  jq_column *c = luaL_checkudata(L, 1, COLUMN_MT);
  lua_pushinteger(L, (lua_Integer)c->n);
  return 1;
}

jq_strs *jq_strs_new(lua_State *L, int list, int lanes, size_t n) {
  list = lua_absindex(L, list);
  lanes = lua_absindex(L, lanes);
  jq_strs *s = lua_newuserdatauv(L, sizeof *s, 2);
  memset(s, 0, sizeof *s);
  if (luaL_newmetatable(L, STRS_MT)) {
    lua_pushcfunction(L, l_strs_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  lua_pushvalue(L, list);
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, lanes);
  lua_setiuservalue(L, -2, 2);
  if (n >= SIZE_MAX / sizeof(size_t) - 1)
    jq_nomem(L);
  s->p = calloc(n + 1, sizeof *s->p);
  s->len = calloc(n + 1, sizeof *s->len);
  if (!s->p || !s->len)
    jq_nomem(L);
  s->n = n;
  return s;
}

jq_column *jq_column_new(lua_State *L, int strs) {
  strs = lua_absindex(L, strs);
  jq_column *c = lua_newuserdatauv(L, sizeof *c, 1);
  memset(c, 0, sizeof *c);
  if (luaL_newmetatable(L, COLUMN_MT)) {
    lua_pushcfunction(L, l_column_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_column_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, l_column_len);
    lua_setfield(L, -2, "__len");
  }
  lua_setmetatable(L, -2);
  c->strs = luaL_checkudata(L, strs, STRS_MT);
  lua_pushvalue(L, strs);
  lua_setiuservalue(L, -2, 1);
  return c;
}

jq_column *jq_column_test(lua_State *L, int idx) { return luaL_testudata(L, idx, COLUMN_MT); }

void jq_column_push(lua_State *L, int idx, size_t k) {
  jq_column *c = lua_touserdata(L, idx);
  uint64_t b = c->v[k];
  switch (jq_cell_tag(c, k)) {
  case JQ_C_NUM:
    lua_pushnumber(L, jq_cell_num(c, k));
    break;
  case JQ_C_INT:
    lua_pushinteger(L, (lua_Integer)jq_cell_int(c, k));
    break;
  case JQ_C_STR:
  case JQ_C_LANE:
    lua_getiuservalue(L, idx, 1);
    lua_getiuservalue(L, -1, jq_cell_tag(c, k) == JQ_C_STR ? 1 : 2);
    lua_rawgeti(L, -1, (lua_Integer)b);
    lua_replace(L, -3);
    lua_pop(L, 1);
    break;
  case JQ_C_FALSE:
    lua_pushboolean(L, 0);
    break;
  default:
    lua_pushnil(L);
  }
}

void jq_column_list(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  jq_column *c = lua_touserdata(L, idx);
  size_t n = c->n;
  if (n > (size_t)INT32_MAX)
    jq_nomem(L);
  lua_getiuservalue(L, idx, 1);
  lua_getiuservalue(L, -1, 1); /* the strings */
  lua_getiuservalue(L, -2, 2); /* the lanes */
  int strs = lua_gettop(L) - 1, lanes = strs + 1;
  lua_createtable(L, (int)n, 0);
  for (size_t k = 0; k < n; k++) {
    int tag = jq_cell_tag(c, k);
    if (tag == JQ_C_NUM)
      lua_pushnumber(L, jq_cell_num(c, k));
    else if (tag == JQ_C_STR)
      lua_rawgeti(L, strs, (lua_Integer)c->v[k]);
    else if (tag == JQ_C_LANE)
      lua_rawgeti(L, lanes, (lua_Integer)c->v[k]);
    else
      jq_column_push(L, idx, k);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  lua_replace(L, strs - 1);
  lua_settop(L, strs - 1);
}

/* ---- the owner's metatable ---- */

static int l_owner_index(lua_State *L);

/* The owner's metatable (pushed) when it is ours: 1; else 0, nothing pushed. */
static int owner_mt(lua_State *L, int owner) {
  if (!lua_getmetatable(L, owner))
    return 0;
  lua_pushliteral(L, "__index");
  lua_rawget(L, -2);
  int ours = lua_tocfunction(L, -1) == l_owner_index;
  lua_pop(L, ours ? 1 : 2);
  return ours;
}

/* Makes owner[key] (key on top, kept) from the column mt[key] at `col`. */
static void make_list(lua_State *L, int owner, int mt, int col) {
  jq_column_list(L, col);
  lua_pushvalue(L, -2);
  lua_pushvalue(L, -2);
  lua_rawset(L, owner);
  lua_pop(L, 1);
  lua_pushvalue(L, -1);
  lua_pushnil(L);
  lua_rawset(L, mt);
}

/* __index(t, k): the column k made a list (once), or nil. */
static int l_owner_index(lua_State *L) {
  lua_settop(L, 2);
  if (lua_type(L, 2) != LUA_TSTRING || !lua_getmetatable(L, 1)) /* 3 */
    return 0;
  lua_pushvalue(L, 2);
  lua_rawget(L, 3); /* 4 */
  if (!jq_column_test(L, 4))
    return 0;
  lua_pushvalue(L, 2); /* 5 */
  make_list(L, 1, 3, 4);
  lua_rawget(L, 1);
  return 1;
}

/* __newindex(t, k, v): a field set from Lua (a native one included: its
 * raw field is absent) is set raw, and a native column of that name is
 * dropped, so that t[k] and the C readers see the new value (nil too). */
static int l_owner_newindex(lua_State *L) {
  lua_settop(L, 3);
  if (lua_type(L, 2) == LUA_TSTRING && lua_getmetatable(L, 1)) { /* 4 */
    lua_pushvalue(L, 2);
    if (lua_rawget(L, 4) == LUA_TUSERDATA && jq_column_test(L, -1)) {
      lua_pushvalue(L, 2);
      lua_pushnil(L);
      lua_rawset(L, 4);
    }
    lua_settop(L, 3);
  }
  lua_rawset(L, 1);
  return 0;
}

static int l_owner_next(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  if (lua_next(L, 1))
    return 2;
  lua_pushnil(L);
  return 1;
}

/* __pairs(t): every column made a list, then next, t, nil. */
static int l_owner_pairs(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  if (lua_getmetatable(L, 1)) { /* 2 */
    lua_pushnil(L);
    while (lua_next(L, 2)) { /* clearing the field being visited is allowed */
      if (lua_type(L, -2) == LUA_TSTRING && jq_column_test(L, -1)) {
        int col = lua_gettop(L);
        lua_pushvalue(L, col - 1);
        make_list(L, 1, 2, col);
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
  }
  lua_pushcfunction(L, l_owner_next);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

void jq_column_attach(lua_State *L, int owner, const char *field) {
  owner = lua_absindex(L, owner);
  if (!owner_mt(L, owner)) {
    if (lua_getmetatable(L, owner))
      luaL_error(L, "load_trace: a table of the model has a metatable");
    lua_createtable(L, 0, 5);
    lua_pushcfunction(L, l_owner_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_owner_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushcfunction(L, l_owner_pairs);
    lua_setfield(L, -2, "__pairs");
    lua_pushvalue(L, -1);
    lua_setmetatable(L, owner);
  }
  lua_insert(L, -2); /* mt, column */
  lua_setfield(L, -2, field);
  lua_pop(L, 1);
  lua_pushstring(L, field);
  lua_pushnil(L);
  lua_rawset(L, owner); /* raw: __newindex would drop the column */
}

jq_column *jq_column_get(lua_State *L, int owner, const char *field) {
  owner = lua_absindex(L, owner);
  if (lua_type(L, owner) != LUA_TTABLE || !owner_mt(L, owner))
    return NULL;
  jq_column *c = NULL;
  if (lua_getfield(L, -1, field) == LUA_TUSERDATA) {
    lua_pushstring(L, field);
    if (lua_rawget(L, owner) == LUA_TNIL)
      c = jq_column_test(L, -2);
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
  return c; /* kept alive by the owner's metatable */
}

int jq_column_field(lua_State *L, int owner, const char *field) {
  owner = lua_absindex(L, owner);
  if (jq_column_get(L, owner, field)) {
    lua_getmetatable(L, owner);
    lua_getfield(L, -1, field);
    lua_replace(L, -2);
    return LUA_TUSERDATA;
  }
  return lua_getfield(L, owner, field);
}

/* column_native(owner, field) -> the column's userdata, or nil. */
int jq_col_open(lua_State *L, int idx, jq_col *col) {
  idx = lua_absindex(L, idx);
  col->c = jq_column_test(L, idx);
  col->meta = 0;
  if (col->c) {
    lua_pushvalue(L, idx);
    col->n = (lua_Integer)col->c->n;
  } else if (lua_type(L, idx) != LUA_TTABLE) {
    return 0;
  } else if (!lua_getmetatable(L, idx)) {
    lua_pushvalue(L, idx);
    col->n = (lua_Integer)lua_rawlen(L, idx);
  } else { /* the memo: the list at [0], what t[i] gave at [i] */
    lua_pop(L, 1);
    col->n = luaL_len(L, idx);
    col->meta = 1;
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, idx);
    lua_rawseti(L, -2, 0);
  }
  col->idx = lua_gettop(L);
  return 1;
}

int jq_col_push_meta(lua_State *L, const jq_col *col, lua_Integer i) {
  if (i < 1) {
    lua_pushnil(L);
    return LUA_TNIL;
  }
  int type = lua_rawgeti(L, col->idx, i);
  if (type != LUA_TNIL)
    return type;
  lua_pop(L, 1);
  lua_rawgeti(L, col->idx, 0);
  type = lua_geti(L, -1, i);
  lua_remove(L, -2);
  if (type != LUA_TNIL) {
    lua_pushvalue(L, -1);
    lua_rawseti(L, col->idx, i);
  }
  return type;
}

int jq_col_field(lua_State *L, int owner, const char *field, jq_col *col) {
  jq_column_field(L, owner, field);
  if (!jq_col_open(L, -1, col)) {
    lua_pop(L, 1);
    return 0;
  }
  lua_remove(L, -2);
  col->idx = lua_gettop(L);
  return 1;
}

static int l_column_native(lua_State *L) {
  luaL_checkstring(L, 2);
  if (jq_column_get(L, 1, lua_tostring(L, 2))) {
    lua_getmetatable(L, 1);
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    return 1;
  }
  lua_pushnil(L);
  return 1;
}

/* The `index` of the lane at position `k` of the list at `lanes`, as a
 * cell's bits in *bits: 1, or 0 when it has none (not an integer). */
static int lane_index_bits(lua_State *L, int lanes, uint64_t k, uint64_t *bits) {
  lua_rawgeti(L, lanes, (lua_Integer)k);
  int ok = lua_type(L, -1) == LUA_TTABLE && lua_getfield(L, -1, "index") == LUA_TNUMBER && lua_isinteger(L, -1);
  if (ok) {
    int64_t i = (int64_t)lua_tointeger(L, -1);
    memcpy(bits, &i, sizeof i);
  }
  lua_settop(L, lanes);
  return ok;
}

/* column_lane_index(owner, field) -> true when owner[field] is a native
 * column (not yet made a list) whose lane cells became, in place, their
 * lane's `index` (an integer); false when it is no native column, or a lane
 * of it has no integer index (nothing changed: Lua does it). Each lane is
 * looked up once per run of cells on it. */
static int l_column_lane_index(lua_State *L) {
  const char *field = luaL_checkstring(L, 2);
  jq_column *c = jq_column_get(L, 1, field);
  lua_settop(L, 2);
  if (!c || !lua_getmetatable(L, 1)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  lua_pushvalue(L, 2);
  lua_rawget(L, 3);               /* 4: the column */
  lua_getiuservalue(L, 4, 1);     /* 5: its strings */
  lua_getiuservalue(L, 5, 2);     /* 6: the lanes */
  for (int pass = 0; pass < 2; pass++) {
    uint64_t last = 0, bits = 0;
    for (size_t k = 0; k < c->n; k++) {
      if (jq_cell_tag(c, k) != JQ_C_LANE)
        continue;
      if (c->v[k] != last || !last) {
        last = c->v[k];
        if (!lane_index_bits(L, 6, last, &bits)) {
          lua_pushboolean(L, 0);
          return 1;
        }
      }
      if (pass) {
        c->v[k] = bits;
        if (c->tag)
          c->tag[k] = JQ_C_INT;
      }
    }
  }
  if (c->tag0 == JQ_C_LANE)
    c->tag0 = JQ_C_INT;
  lua_pushboolean(L, 1);
  return 1;
}

void jq_open_columns(lua_State *L) {
  static const luaL_Reg fns[] = {{"column_native", l_column_native},
                                 {"column_lane_index", l_column_lane_index},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
