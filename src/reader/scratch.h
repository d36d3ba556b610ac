/*
 * scratch.h - a reader call's working memory: jq_vecs (common/array.h)
 * owned by a userdata on the Lua stack, so that an error raised mid-way
 * (by the call itself or by a metamethod it runs) leaks nothing: the
 * userdata's __gc frees them; jq_scratch_free frees them at once.
 *
 *   jq_scratch_new(L, n)            pushes a scratch of n empty buffers
 *   jq_scratch_room(L, b, count, size)  b as room for count items (kept),
 *                                   raising "not enough memory"
 *   jq_scratch_add(L, b, s, len)    appends bytes, raising the same
 *
 * Owns: its buffers. Must not: be used by the record path.
 * Thread safety: one lua_State per call.
 */
#ifndef JQ_SCRATCH_H
#define JQ_SCRATCH_H

#include <lauxlib.h>
#include <lua.h>

#include "common/array.h"

#define JQ_SCRATCH_MT "jobque.reader_scratch"

typedef struct jq_scratch {
  int n;
  jq_vec b[]; /* n buffers */
} jq_scratch;

static inline void jq_scratch_free(jq_scratch *s) {
  for (int k = 0; k < s->n; k++)
    jq_vec_free(&s->b[k]);
}

static inline int jq_scratch_gc(lua_State *L) {
  jq_scratch_free(lua_touserdata(L, 1));
  return 0;
}

/* Raises "not enough memory", bare (no position: the command tells it
 * from other errors by its text), as Lua's own allocation failure does. */
static inline int jq_nomem(lua_State *L) {
  lua_pushliteral(L, "not enough memory");
  return lua_error(L);
}

static inline jq_scratch *jq_scratch_new(lua_State *L, int n) {
  jq_scratch *s = lua_newuserdatauv(L, sizeof *s + (size_t)n * sizeof(jq_vec), 0);
  s->n = n;
  for (int k = 0; k < n; k++)
    jq_vec_init(&s->b[k]);
  if (luaL_newmetatable(L, JQ_SCRATCH_MT)) {
    lua_pushcfunction(L, jq_scratch_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  return s;
}

static inline void *jq_scratch_room(lua_State *L, jq_vec *b, size_t count, size_t size) {
  void *p = jq_vec_room(b, count, size);
  if (!p)
    jq_nomem(L);
  return p;
}

static inline void jq_scratch_add(lua_State *L, jq_vec *b, const void *s, size_t len) {
  if (jq_vec_add(b, s, len) != 0)
    jq_nomem(L);
}

#endif
