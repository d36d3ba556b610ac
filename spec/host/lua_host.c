/*
 * lua_host.c - a minimal `lua5.4 script [args]` for sanitizer runs.
 *
 * Debian's lua5.4 is not instrumented, and preloading a sanitizer runtime
 * into it also instruments every shell the specs start. This host is built
 * with the same -fsanitize flag as jobque.core, links Debian's liblua5.4,
 * and runs one script with `arg` set as lua.c sets it.
 */
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL)
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s script [args]\n", argv[0]);
    return 2;
  }
  lua_State *L = luaL_newstate();
  if (L == NULL) {
    fprintf(stderr, "%s: cannot create a Lua state\n", argv[0]);
    return 1;
  }
  luaL_openlibs(L);
  lua_createtable(L, argc, 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - 1);
  }
  lua_setglobal(L, "arg");
  lua_pushcfunction(L, traceback);
  int status = luaL_loadfile(L, argv[1]);
  if (status == LUA_OK) {
    for (int i = 2; i < argc; i++)
      lua_pushstring(L, argv[i]);
    status = lua_pcall(L, argc - 2, 0, 1);
  }
  if (status != LUA_OK)
    fprintf(stderr, "%s: %s\n", argv[0], lua_tostring(L, -1));
  lua_close(L);
  return status == LUA_OK ? EXIT_SUCCESS : EXIT_FAILURE;
}
