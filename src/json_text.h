/*
 * json_text.h - core.json_text(v): a Lua value as JSON text, the bytes of
 * jobque_profile.util's json, in C (see json_text.c).
 * Owns: nothing past a call. Must not: run on the record path.
 * Thread safety: reentrant (one lua_State per call).
 */
#ifndef JQ_JSON_TEXT_H
#define JQ_JSON_TEXT_H

#include <lua.h>

/* Sets json_text(v) -> text, or nil when util.json must do it, in the
 * table on top of the stack. */
void jq_open_json_text(lua_State *L);

#endif
