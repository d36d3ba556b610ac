/*
 * testing_samples.c - the sample tables' test binding (built with
 * -DJQ_TESTING).
 *
 * Puts samples on the calling thread's lane without timers or signals, so
 * that a spec writes a file whose samples it knows by construction; sets the
 * session's sampling figures; shrinks the tables so that they fill.
 * Thread safety: each function acts on the calling thread's lane (as the
 * sampler's hook does); sampling_set and stab_limit on process-wide values.
 */
#ifdef JQ_TESTING

#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "bindings.h"
#include "record/sample_tables.h"
#include "record/sampler.h"
#include "record/session.h"
#include "record/snapshot.h"

#define FRAMES_MAX 512

static lua_Integer opt_field(lua_State *L, int t, const char *key, lua_Integer def) {
  if (lua_isnoneornil(L, t))
    return def;
  lua_getfield(L, t, key);
  lua_Integer v = lua_isnil(L, -1) ? def : luaL_checkinteger(L, -1);
  lua_pop(L, 1);
  return v;
}

static int kind_of(lua_State *L, const char *kind) {
  static const char *const kinds[] = {"lua", "C", "runtime", NULL};
  lua_pushstring(L, kind);
  int k = luaL_checkoption(L, -1, NULL, kinds);
  lua_pop(L, 1);
  return k; /* JQ_FRAME_LUA, JQ_FRAME_C, JQ_FRAME_RUNTIME in this order */
}

/* put_sample({{text, kind}, ...} root first, {job=, tag=, line=, weight=,
 * truncated=, t0=}): one sample on the calling thread's lane, as the
 * sampler's hook records it (kind "lua", "C" or "runtime"; weight 1 and
 * the other fields 0 by default; t0 in ticks, 0: now). */
static int l_put_sample(lua_State *L) {
  static jq_frame_text frames[FRAMES_MAX]; /* the caller's thread only: specs */
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 1);
  luaL_argcheck(L, n >= 0 && n <= FRAMES_MAX, 1, "at most 512 frames");
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    luaL_checktype(L, -1, LUA_TTABLE);
    lua_geti(L, -1, 1);
    lua_geti(L, -2, 2);
    jq_frame_text *f = &frames[n - i]; /* innermost first */
    f->text = luaL_checklstring(L, -2, &f->len);
    f->kind = kind_of(L, luaL_checkstring(L, -1));
    lua_pop(L, 3); /* the text stays alive in argument 1 */
  }
  int truncated = 0;
  if (!lua_isnoneornil(L, 2)) {
    lua_getfield(L, 2, "truncated");
    truncated = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  jq_sample_put(frames, (int)n, truncated, (int64_t)opt_field(L, 2, "job", 0),
                (uint16_t)opt_field(L, 2, "tag", 0), (uint32_t)opt_field(L, 2, "line", 0),
                (uint64_t)opt_field(L, 2, "weight", 1), (uint64_t)opt_field(L, 2, "t0", 0));
  return 0;
}

/* put_runtime_sample(activity, {job=, tag=, weight=}) -> recorded: a tick
 * in no Lua ("no Lua", "copy in", "copy out", "copy result", "submit",
 * "scheduler"), as the signal handler records it. */
static int l_put_runtime_sample(lua_State *L) {
  static const char *const acts[] = {"no Lua", "copy in", "copy out", "copy result",
                                     "submit", "scheduler", NULL};
  int act = JQ_ACT_NONE + luaL_checkoption(L, 1, NULL, acts);
  lua_pushboolean(L, jq_sample_put_runtime(act, (int64_t)opt_field(L, 2, "job", 0),
                                           (uint16_t)opt_field(L, 2, "tag", 0),
                                           (uint64_t)opt_field(L, 2, "weight", 1), 0));
  return 1;
}

/* sampling_set{hz=, depth=, period_ns=, signals=, ticks=}: the session's
 * sampling figures, as the sampler sets them (after profile_start). */
static int l_sampling_set(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  jq_save_sampling s = {(int)opt_field(L, 1, "hz", 0), (int)opt_field(L, 1, "depth", 0),
                        (uint64_t)opt_field(L, 1, "period_ns", 0),
                        (uint64_t)opt_field(L, 1, "signals", 0),
                        (uint64_t)opt_field(L, 1, "ticks", 0)};
  jq_session_set_sampling(&s);
  return 0;
}

/* stab_limit(n): tables hold at most n frames and n stacks each, the 8
 * synthetic ones included (0: as built). */
static int l_stab_limit(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_argcheck(L, n >= 0 && n <= JQ_STAB_MAX, 1, "0 to 65536 expected");
  jq_stab_test_limit((uint32_t)n);
  return 0;
}

/* sample_error(text): the calling thread's lane cannot sample, and says so
 * in laneInfo (call it with the session stopped: the lane is quiescent). */
static int l_sample_error(lua_State *L) {
  const char *text = luaL_optstring(L, 1, NULL);
  jq_lane *lane = jq_self.lane;
  if (!lane || (!lane->stab && jq_stab_prepare(lane) != 0))
    return luaL_error(L, "sample_error: the thread has no lane or no tables");
  jq_stab_set_error(lane->stab, text);
  return 0;
}

void jq_open_testing_samples(lua_State *L) {
  static const luaL_Reg funcs[] = {{"put_sample", l_put_sample},
                                   {"put_runtime_sample", l_put_runtime_sample},
                                   {"sampling_set", l_sampling_set},
                                   {"stab_limit", l_stab_limit},
                                   {"sample_error", l_sample_error},
                                   {NULL, NULL}};
  luaL_setfuncs(L, funcs, 0);
}

#endif
