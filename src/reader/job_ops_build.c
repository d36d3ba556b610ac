/* job_ops_build.c - (being written) */
#include <lauxlib.h>

#include "reader/job_ops.h"

int jq_ops_dump(lua_State *L) { return luaL_error(L, "dump: not written yet"); }
int jq_graph_ops(lua_State *L) { return luaL_error(L, "graph:ops: not written yet"); }
