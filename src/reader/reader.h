/*
 * reader.h - the face of jobque_profile.reader, the reading half in C:
 * the trace loader, the figures, the job graph, the page's columns and
 * the JSON text. Each jq_open_* sets its functions in the table on top of
 * the stack; only reader.c exports a symbol (luaopen_jobque_profile_reader).
 *
 * Owns: nothing past a call but the userdata it returns (columns, units,
 * graphs, texts: freed by their __gc).
 * Must not: run on the record path, nor in a worker's state (the queue's
 * workers open jobque.core only).
 * Thread safety: reentrant (one lua_State per call).
 */
#ifndef JQ_READER_H
#define JQ_READER_H

#include <lua.h>

#define JQ_LOAD_MAX_DEPTH 1000 /* containers, at most, inside a trace's top object */

/* The loader (load.c, with load_event.c, load_cells.c, json_scan.c):
 *   load_trace(hooks, path [, text]) -> st | nil, message [, "json" | "file"]:
 *     the trace at path (or the text) read through trace.lua's hooks */
void jq_open_load(lua_State *L);

/* The model's native columns (columns.c; the C API is columns.h):
 *   column_native(owner, field) -> the native column's userdata (not yet
 *     made a list), or nil */
void jq_open_columns(lua_State *L);

/* The report's figures (stats.c; each raises, naming it, on a value no
 * figure can be made of):
 *   stats_lanes(model, from, to, top, cat_index, names) -> the lane sweeps,
 *     their events and the marker kinds' units over [from, to]
 *   stats_counters(model, from, to) -> the counter tracks' figures
 *   stats_copies(model, from, to) -> the copies by category, not yet sorted */
void jq_open_stats(lua_State *L);

/* The job graph (graph.c builds it, graph_path.c its figures):
 *   job_graph(model) -> graph: the job graph of a model read by
 *     jobque_profile.trace (any shape the loader gives; graph.h)
 *   graph:count() -> jobs with a slice
 *   graph:latency([top]) -> the jobs' latencies (jobque_profile.graph)
 *   graph:ops(model) -> its happens-before graph (job_ops.h), whose
 *     critical_path() is the critical path (ops_path.c) */
void jq_open_graph(lua_State *L);

/* The page's data columns (page.c; the graph's part page_graph.c):
 *   page_ns(col, n, t0) -> "x1,x2,...": times as the page's integer
 *     nanoseconds since t0
 *   page_lane(cat, sname, args, job, n, env) -> c, n, a, ak, av: a lane's
 *     columns of the page's data (env.quoted must keep what it makes)
 *   page_markers(ts, kind, arg, n, t0, env) -> mt, mk, ma: the markers'
 *     columns (kinds interned in env.kinds/kind_index, odd args through
 *     env.other(arg))
 *   page_values(values, n) -> "v1,v2,...", min, max: a counter track's
 *     values
 *   page_graph(graph, model) -> the page's graph part (its JSON)
 *   page_time(us) -> us as the page's integer nanoseconds (a lone time) */
void jq_open_page(lua_State *L);

/* job_ops.c: reader.job_ops(t), a happens-before graph from a plain table
 * (job_ops.h); its methods critical_path, whatif and dump. */
void jq_open_job_ops(lua_State *L);

/* JSON text (json_text.c):
 *   json_text(v) -> text: a Lua value as JSON text (report --json,
 *     jobque_profile.util's json and quote) */
void jq_open_json_text(lua_State *L);

int luaopen_jobque_profile_reader(lua_State *L);

#endif
