/* replay.c - (being written) */
#include <lauxlib.h>

#include "reader/job_ops.h"

int jq_ops_whatif(lua_State *L) { return luaL_error(L, "jq_ops_whatif: not written yet"); }
