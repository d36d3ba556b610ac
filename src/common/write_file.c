/*
 * write_file.c - write_file(path, data), the Lua binding of file_replace.h
 * that jobque.core and jobque_profile.reader both export.
 */
#include <limits.h>
#include <string.h>

#include <lauxlib.h>

#include "common/file_replace.h"
#include "common/write_file.h"

/* write_file(path, data) -> true | fail, message, errno
 * Writes `data` (a string, or a list of strings written in order) to
 * `path` with the rules of file_replace.h: what the library and the
 * jobque-profile command use for every file they write. */
int jq_l_write_file(lua_State *L) {
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

