/*
 * bindings.h - the pieces of jobque.core that push Lua functions.
 *
 * jq_open_profile and jq_open_testing leave one new table on the stack;
 * jq_open_queue and jq_open_testing_codec add to the table on its top.
 * Only core.c exports a symbol (luaopen_jobque_core); these are hidden.
 */
#ifndef JQ_BINDINGS_H
#define JQ_BINDINGS_H

#include <lua.h>

/* The seed page's API: profile_* functions and PROFILE_COLOR_* constants. */
void jq_open_profile(lua_State *L);

/* Queues and jobs: adds queue_new, queue_current, hardware_threads,
 * queue_methods, queue_collect and queue_submit_chunk to the table on the top of the stack. Workers' states open
 * jobque.core with `open_core` (luaopen_jobque_core, passed by core.c). */
void jq_open_queue(lua_State *L, lua_CFunction open_core);

#ifdef JQ_TESTING
/* Test-only helpers: native threads with their own lua_States, which open
 * jobque.core with `open_core`. */
void jq_open_testing(lua_State *L, lua_CFunction open_core);
/* The codec's test binding (testing_codec.c): adds codec_roundtrip and
 * codec_boxes to the table on the top of the stack. */
void jq_open_testing_codec(lua_State *L);
/* The sample tables' test binding (testing_samples.c): adds put_sample,
 * put_runtime_sample, sampling_set, stab_limit and sample_error. */
void jq_open_testing_samples(lua_State *L);
/* The heap watch (testing_alloc.c): adds alloc_watch and alloc_fail. */
void jq_open_testing_alloc(lua_State *L);
#endif

int luaopen_jobque_core(lua_State *L);

#endif
