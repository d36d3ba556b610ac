/*
 * reader.c - luaopen_jobque_profile_reader, the one exported symbol of
 * jobque_profile.reader: the reading half's C functions (reader.h) in one
 * table, with write_file (common/write_file.h), stderr_is_tty and
 * same_file.
 *
 * The Lua modules that read traces back (lua/jobque_profile/) require it;
 * nothing on the record path or in a worker's state does.
 */
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>

#include "common/write_file.h"
#include "reader/reader.h"

/* stderr_is_tty() -> whether stderr is a terminal (the command's progress
 * shows only there). */
static int l_stderr_is_tty(lua_State *L) {
  lua_pushboolean(L, isatty(2));
  return 1;
}

/* same_file(a, b) -> whether the paths a and b name one file (the same
 * device and inode, links followed): false when either cannot be
 * stat'ed (a file not yet written is no other). */
static int l_same_file(lua_State *L) {
  const char *a = luaL_checkstring(L, 1), *b = luaL_checkstring(L, 2);
  struct stat sa, sb;
  lua_pushboolean(L, stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
  return 1;
}

__attribute__((visibility("default"))) int luaopen_jobque_profile_reader(lua_State *L) {
  lua_createtable(L, 0, 24);
  jq_open_load(L);
  jq_open_columns(L);
  jq_open_stats(L);
  jq_open_graph(L);
  jq_open_page(L);
  jq_open_job_ops(L);
  jq_open_json_text(L);
  lua_pushcfunction(L, jq_l_write_file);
  lua_setfield(L, -2, "write_file");
  lua_pushcfunction(L, l_stderr_is_tty);
  lua_setfield(L, -2, "stderr_is_tty");
  lua_pushcfunction(L, l_same_file);
  lua_setfield(L, -2, "same_file");
  return 1;
}
