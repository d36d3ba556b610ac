/*
 * lua_coroutine.h - coroutine.resume and coroutine.wrap that tell the
 * sampler which coroutine runs on this thread.
 *
 * Owns: the two replacement functions and their installer. They behave as
 * Lua's own (results, errors and their messages, wrap's position prefix and
 * its closing of a coroutine that died) and keep jq_sampler_swap (sampler.h)
 * current around each lua_resume.
 * Must not: keep any state of its own; touch a coroutine table entry the
 * user replaced with a Lua function.
 * Thread safety: the functions run on the thread of the state that calls
 * them and touch only that thread's jq_self.
 */
#ifndef JQ_LUA_COROUTINE_H
#define JQ_LUA_COROUTINE_H

#include <lua.h>

/* Replaces `resume` and `wrap` in L's loaded coroutine library
 * (package.loaded.coroutine, which the global `coroutine` normally is),
 * and wraps `gethook` of its loaded debug library so that a sample pending
 * on a coroutine reads as no hook.
 * An entry that is not a C function (a user's or a tool's wrapper written in
 * Lua) is kept as it is; a state without the library is left alone.
 * Idempotent. Raises only on a memory error. */
void jq_coroutine_install(lua_State *L);

#ifdef JQ_TESTING
/* The specs' hooks, added to the table on the top of the stack:
 * coroutine_install() (jq_coroutine_install on the calling state),
 * coroutine_lua() (a fresh table of Lua's own coroutine library) and
 * coroutine_sampled() ("none", "self" or "other": what this thread's
 * running-coroutine pointer holds, seen from the calling coroutine). */
void jq_open_testing_coroutine(lua_State *L);
#endif

#endif
