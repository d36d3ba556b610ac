/*
 * testing_codec.c - the codec's own test binding (built with -DJQ_TESTING).
 *
 * Round-trips values through codec.c between two fresh lua_States, with
 * no queue: one state makes the values, a second one gets them and checks
 * them. Handles are "boxes", reference-counted C objects of this file, so
 * the handle interface is tested without job handles.
 * Thread safety: the count of live boxes is atomic; the rest runs on the
 * calling thread.
 */
#ifdef JQ_TESTING

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "bindings.h"
#include "queue/codec.h"

#define BOX_MT "jobque.test.box"

typedef struct box {
  _Atomic int refs;
  lua_Integer value;
} box;

static _Atomic long live_boxes;

static void box_ref(void *obj) {
  atomic_fetch_add(&((box *)obj)->refs, 1);
}

static void box_unref(void *obj) {
  box *b = obj;
  if (atomic_fetch_sub(&b->refs, 1) == 1) {
    free(b);
    atomic_fetch_sub(&live_boxes, 1);
  }
}

/* Pushes a handle for b, which takes a reference. */
static void box_push(lua_State *L, void *obj) {
  box **h = lua_newuserdatauv(L, sizeof *h, 0);
  *h = NULL;
  luaL_setmetatable(L, BOX_MT);
  box_ref(obj);
  *h = obj;
}

static void *box_from_value(lua_State *L, int idx) {
  box **h = luaL_testudata(L, idx, BOX_MT);
  return h ? *h : NULL;
}

/* Userdata with a __name of "refused" are refused with a hint. */
static const char *box_refused(lua_State *L, int idx, int returned, const char **hint) {
  (void)returned;
  int named = luaL_getmetafield(L, idx, "__name") == LUA_TSTRING;
  int refused = named && strcmp(lua_tostring(L, -1), "refused") == 0;
  if (named)
    lua_pop(L, 1);
  if (!refused)
    return NULL;
  *hint = "a hint";
  return "a refused thing";
}

static const jq_handle_ops box_handles = {box_from_value, box_push, box_ref, box_unref,
                                          box_refused};

/* box(n) -> a new box holding n */
static int l_box(lua_State *L) {
  lua_Integer v = luaL_checkinteger(L, 1);
  box *b = malloc(sizeof *b);
  if (!b)
    return luaL_error(L, "out of memory");
  atomic_init(&b->refs, 0);
  b->value = v;
  atomic_fetch_add(&live_boxes, 1);
  box_push(L, b);
  return 1;
}

static int l_box_value(lua_State *L) {
  box **h = luaL_checkudata(L, 1, BOX_MT);
  lua_pushinteger(L, (*h)->value);
  return 1;
}

static int l_box_gc(lua_State *L) {
  box **h = luaL_checkudata(L, 1, BOX_MT);
  if (*h)
    box_unref(*h);
  *h = NULL;
  return 0;
}

/* The standard libraries, and a global `box`, in a fresh state: protected. */
static int open_state(lua_State *L) {
  luaL_openlibs(L);
  if (luaL_newmetatable(L, BOX_MT)) {
    lua_pushcfunction(L, l_box_gc);
    lua_setfield(L, -2, "__gc");
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, l_box_value);
    lua_setfield(L, -2, "value");
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_box);
  lua_setglobal(L, "box");
  return 0;
}

typedef struct trip {
  const char *make, *check;
  jq_buf buf;
  char err[512];
} trip;

/* In the first state: runs `make` and encodes what it returns. Protected;
 * an encoding failure is returned as a message. */
static int make_values(lua_State *L) {
  trip *t = lua_touserdata(L, 1);
  lua_settop(L, 0);
  open_state(L);
  if (luaL_loadstring(L, t->make) != LUA_OK)
    return lua_error(L);
  lua_call(L, 0, LUA_MULTRET);
  if (jq_encode(L, 1, lua_gettop(L), &t->buf, "argument", 1, &box_handles, t->err,
                sizeof t->err) != 0)
    lua_pushfstring(L, "encode: %s", t->err);
  else
    lua_pushnil(L);
  return 1;
}

/* In the second state: decodes the values and returns tostring(check(...)). */
static int check_values(lua_State *L) {
  trip *t = lua_touserdata(L, 1);
  lua_settop(L, 0);
  open_state(L);
  if (luaL_loadstring(L, t->check) != LUA_OK)
    return lua_error(L);
  int n = jq_decode(L, &t->buf);
  lua_call(L, n, 1);
  luaL_tolstring(L, -1, NULL);
  return 1;
}

/* Runs f(t) in a new state; leaves its result or error message (a string,
 * or nil) in out. Returns whether it ran without error. */
static int in_new_state(lua_CFunction f, trip *t, char *out, size_t outlen) {
  lua_State *S = luaL_newstate();
  if (!S) {
    snprintf(out, outlen, "cannot create a lua_State");
    return 0;
  }
  lua_pushcfunction(S, f);
  lua_pushlightuserdata(S, t);
  int rc = lua_pcall(S, 1, 1, 0);
  const char *s = lua_tostring(S, -1);
  snprintf(out, outlen, "%s", s ? s : "");
  lua_close(S);
  return rc == LUA_OK;
}

/* _test.codec_roundtrip(make, check) -> result | nil, message
 * `make` (Lua source) returns values in one fresh state; they are encoded,
 * that state is closed, and a second fresh one decodes them and calls
 * `check` (Lua source) with them: its result, as a string. Fails with
 * "encode: ...", "make: ..." or "check: ..." (decoding errors included). */
static int l_codec_roundtrip(lua_State *L) {
  trip t;
  memset(&t, 0, sizeof t);
  t.make = luaL_checkstring(L, 1);
  t.check = luaL_checkstring(L, 2);
  char out[2048];
  const char *stage = "make";
  if (in_new_state(make_values, &t, out, sizeof out) && out[0] == '\0') {
    stage = "check";
    if (in_new_state(check_values, &t, out, sizeof out)) {
      jq_buf_free(&t.buf);
      lua_pushstring(L, out);
      return 1;
    }
  }
  jq_buf_free(&t.buf);
  luaL_pushfail(L);
  if (strncmp(out, "encode: ", 8) == 0)
    lua_pushstring(L, out);
  else
    lua_pushfstring(L, "%s: %s", stage, out);
  return 2;
}

/* _test.codec_boxes() -> boxes alive now (0 once every handle is gone) */
static int l_codec_boxes(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)atomic_load(&live_boxes));
  return 1;
}

void jq_open_testing_codec(lua_State *L) {
  lua_pushcfunction(L, l_codec_roundtrip);
  lua_setfield(L, -2, "codec_roundtrip");
  lua_pushcfunction(L, l_codec_boxes);
  lua_setfield(L, -2, "codec_boxes");
}

#endif
