/*
 * write_file.h - the Lua face of file_replace.h, shared by both modules.
 * Owns: nothing past a call. Must not: run on the record path.
 * Thread safety: reentrant (one lua_State per call).
 */
#ifndef JQ_WRITE_FILE_H
#define JQ_WRITE_FILE_H

#include <lua.h>

/* write_file(path, data) -> true | fail, message, errno: writes `data` (a
 * string, or a list of strings written in order) to `path` with the rules
 * of file_replace.h (what the library and the jobque-profile command use
 * for every file they write). */
int jq_l_write_file(lua_State *L);

#endif
