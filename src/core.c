/*
 * core.c - luaopen_jobque_core, the one exported symbol of jobque.core.
 *
 * Returns { profile = {...}, clock_source = "tsc"|"monotonic",
 * noop, monotonic_ns, palette_color, write_file, load_trace, page_ns, job_graph, stderr_is_tty, queue
 * functions } (and
 * `_test` in test builds). The profile functions
 * sit one level down so that Lua's error messages name them after the module
 * users require ('jobque_profile.profile_marker'), not after the core.
 */
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>

#include "bindings.h"
#include "columns.h"
#include "file_replace.h"
#include "graph.h"
#include "stats.h"
#include "trace.h"
#include "json_text.h"
#include "page.h"
#include "trace_load.h"

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

/* write_file(path, data) -> true | fail, message, errno
 * Writes `data` (a string, or a list of strings written in order) to
 * `path` with the rules of file_replace.h: what the library and the
 * jobque-profile command use for every file they write. */
static int l_write_file(lua_State *L) {
  size_t len;
  const char *path = luaL_checklstring(L, 1, &len);
  luaL_argcheck(L, strlen(path) == len, 1, "path contains a zero byte");
  lua_Integer n = 1;
  int list = lua_type(L, 2) == LUA_TTABLE;
  if (list) {
    n = (lua_Integer)lua_rawlen(L, 2);
    for (lua_Integer i = 1; i <= n; i++) {
      int t = lua_rawgeti(L, 2, i);
      if (t != LUA_TSTRING)
        luaL_argerror(L, 2, lua_pushfstring(L, "item %I is a %s, expected a string", (LUAI_UACINT)i,
                                            lua_typename(L, t)));
      lua_pop(L, 1);
    }
  } else if (lua_type(L, 2) != LUA_TSTRING) {
    luaL_typeerror(L, 2, "string or list of strings");
  }
  /* No call below raises until the file is released. */
  jq_replace file;
  int rc = jq_replace_open(&file, path);
  for (lua_Integer i = 1; i <= n && rc == 0; i++) {
    if (list)
      lua_rawgeti(L, 2, i);
    else
      lua_pushvalue(L, 2);
    const char *s = lua_tolstring(L, -1, &len); /* a string: no conversion */
    rc = jq_write_all(file.fd, s, len);
    lua_pop(L, 1);
    if (rc != 0)
      jq_replace_abort(&file);
  }
  if (rc == 0 && (rc = jq_replace_commit(&file)) == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  luaL_pushfail(L);
  char why[PATH_MAX + 32];
  lua_pushfstring(L, "cannot write '%s': %s", path,
                  jq_replace_reason_at(&file, rc, path, why, sizeof why));
  lua_pushinteger(L, rc);
  return 3;
}

/* stderr_is_tty() -> whether stderr is a terminal (the command's progress
 * shows only there). */
static int l_stderr_is_tty(lua_State *L) {
  lua_pushboolean(L, isatty(2));
  return 1;
}

__attribute__((visibility("default"))) int luaopen_jobque_core(lua_State *L) {
  jq_trace_init();
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
  lua_pushcfunction(L, l_write_file);
  lua_setfield(L, -2, "write_file");
  jq_open_reader(L); /* load_trace, sort_columns, ... (trace_load.h) */
  jq_open_page(L);   /* page_ns, page_lane, page_markers, page_values (page.h) */
  jq_open_json_text(L); /* json_text (json_text.h) */
  jq_open_graph(L);  /* job_graph (graph.h) */
  jq_open_stats(L);  /* stats_lanes, stats_counters, stats_copies (stats.h) */
  jq_open_columns(L); /* column_native (columns.h) */
  lua_pushcfunction(L, l_stderr_is_tty);
  lua_setfield(L, -2, "stderr_is_tty");
#ifdef JQ_TESTING
  jq_open_testing(L, luaopen_jobque_core);
  lua_setfield(L, -2, "_test");
#endif
  return 1;
}
