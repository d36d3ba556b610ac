/* ops_path.c - (being written) */
#include <lauxlib.h>

#include "reader/job_ops.h"

int jq_ops_critical_path(lua_State *L) { return luaL_error(L, "jq_ops_critical_path: not written yet"); }
