/*
 * trace_load.h - core.load_trace, the native trace loader (issue 12).
 *
 * Scans a trace's JSON (a file mapped, or a string) straight into the
 * reader's columns; the events it does not read itself go, decoded, to
 * the reader's Lua code (see trace_load.c and lua/jobque_profile/trace.lua).
 * Owns: nothing past a call. Must not: run on the record path.
 * Thread safety: reentrant (one lua_State per call).
 */
#ifndef JQ_TRACE_LOAD_H
#define JQ_TRACE_LOAD_H

#include <lua.h>

#define JQ_LOAD_MAX_DEPTH 1000 /* lua-cjson's default limit */

/* Sets the reader's functions in the table on top of the stack:
 *   load_trace(hooks, path [, text]) -> true | nil, message | "fallback"
 *   sort_columns(t, fields, n): t's columns fields[1..] in the order of
 *     t[fields[1]]'s numbers, ties as they were (trace.lua's sort_columns)
 *   sort_jobs(list, field) -> true: graph.lua's jobs in the order of their
 *     numbers t[field], ties by t.id; nothing when it leaves them to Lua
 *   sort_numbers(list) -> true: numbers in ascending order (graph.lua's
 *     distributions); nothing when it leaves them to table.sort
 *   json_check(text) -> true, inexact | fail, message: the text is JSON as
 *     load_trace checks it (its words); inexact: it holds an integer a
 *     double would not give back (beyond 1e14, or -0)
 *   json_decode(text, null) -> value | fail, message: lua-cjson's decoding,
 *     integers exact (the cjson path's, for such a text)
 * (the page's columns are page.h's) */
void jq_open_reader(lua_State *L);

#endif
