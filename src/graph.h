/*
 * graph.h - core.job_graph: the job graph of a trace model in flat C
 * arrays (issue 12), for jobque_profile.graph and the page's graph part.
 *
 * Owns: nothing past a call but its graph userdata (freed by __gc).
 * Must not: run on the record path.
 * Thread safety: reentrant (one lua_State per call).
 */
#ifndef JQ_GRAPH_H
#define JQ_GRAPH_H

#include <lua.h>

/* Sets in the table on top of the stack:
 *   job_graph(model) -> graph | nil: the job graph of a model read by
 *     jobque_profile.trace (graph.lua's build), or nil when the model holds
 *     what it does not handle exactly (graph.lua's Lua code does it then).
 *   graph:count() -> jobs with a slice
 *   graph:latency([top]) -> graph.lua's latency(g, top)
 *   graph:critical_path() -> graph.lua's critical_path(g)
 *   graph:page(model) -> the page's GRAPH JSON (html.lua's graph_data), or
 *     nil when a value cannot be written as the Lua code writes it */
void jq_open_graph(lua_State *L);

#endif
