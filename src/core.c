/*
 * core.c - luaopen_jobque_core, the one exported symbol of jobque.core.
 *
 * Returns { profile = {...}, clock_source = "tsc"|"monotonic",
 * noop, monotonic_ns, palette_color, write_file, the queue's functions
 * (queue_new, queue_current, queue_collect, queue_submit_chunk,
 * hardware_threads, queue_methods) } (and `_test` in test builds): the
 * recorder and the queue, all a worker's state loads (the reading half is
 * jobque_profile.reader, src/reader/). The profile functions
 * sit one level down so that Lua's error messages name them after the module
 * users require ('jobque_profile.profile_marker'), not after the core.
 */
#include <lauxlib.h>

#include "bindings.h"
#include "common/write_file.h"
#include "record/lua_coroutine.h"
#include "record/session.h"

/* The benchmarks' baseline: a C function that takes arguments and does nothing. */
static int l_noop(lua_State *L) {
  (void)L;
  return 0;
}

/* Monotonic nanoseconds, for benchmarks and tools that time things. */
static int l_monotonic_ns(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)jq_clock_monotonic_ns());
  return 1;
}

/* palette_color(name) -> the colour profile_category gives `name` when it
 * is registered without one (0xRRGGBB); trace readers colour categories a
 * trace did not register the same way. */
static int l_palette_color(lua_State *L) {
  size_t len;
  const char *name = luaL_checklstring(L, 1, &len);
  lua_pushinteger(L, (lua_Integer)jq_palette_color(name, len));
  return 1;
}

__attribute__((visibility("default"))) int luaopen_jobque_core(lua_State *L) {
  jq_session_init();
  lua_createtable(L, 0, 8);
  jq_open_queue(L, luaopen_jobque_core);
  jq_open_profile(L);
  lua_setfield(L, -2, "profile");
  lua_pushstring(L, jq_clock_name());
  lua_setfield(L, -2, "clock_source");
  lua_pushcfunction(L, l_noop);
  lua_setfield(L, -2, "noop");
  lua_pushcfunction(L, l_monotonic_ns);
  lua_setfield(L, -2, "monotonic_ns");
  lua_pushcfunction(L, l_palette_color);
  lua_setfield(L, -2, "palette_color");
  lua_pushcfunction(L, jq_l_write_file);
  lua_setfield(L, -2, "write_file");
#ifdef JQ_TESTING
  jq_open_testing(L, luaopen_jobque_core);
  jq_open_testing_coroutine(L);
  lua_setfield(L, -2, "_test");
#endif
  return 1;
}
