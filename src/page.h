/*
 * page.h - the timeline page's data columns written from C (issue 12).
 *
 * The same bytes as jobque_profile.html's Lua loops, which remain for a
 * build without the core (see page.c).
 * Owns: nothing past a call. Must not: run on the record path.
 * Thread safety: reentrant (one lua_State per call).
 */
#ifndef JQ_PAGE_H
#define JQ_PAGE_H

#include <lua.h>

/* Sets the page writer's functions in the table on top of the stack:
 *   page_ns(col, n, t0) -> "x1,x2,...": times as the page's integer
 *     nanoseconds since t0
 *   page_lane(cat, sname, args, job, n, env) -> c, n, a, ak, av: a lane's
 *     columns of the page's data (env.quoted must keep what it makes)
 *   page_markers(ts, kind, arg, n, t0, env) -> mt, mk, ma: the markers'
 *     columns (kinds interned in env.kinds/kind_index, odd args through
 *     env.other(arg))
 *   page_values(values, n) -> "v1,v2,...", min, max: a counter track's
 *     values */
void jq_open_page(lua_State *L);

#endif
