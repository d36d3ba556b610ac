/*
 * lua_coroutine.c - coroutine.resume and coroutine.wrap, as Lua 5.4's
 * (lcorolib.c, 5.4.4 and later), with the sampler's running-coroutine
 * pointer kept current: a Lua 5.4 hook belongs to one coroutine, and
 * nothing in Lua's API names the coroutine running on a thread, so the
 * signal handler reads the pointer these functions and the runner set.
 *
 * Owns: the two functions and their installer (lua_coroutine.h).
 * Must not: raise between setting the pointer and putting the previous one
 * back (lua_resume returns every error of the coroutine as a status);
 * keep state of its own.
 * Thread safety: touches only the calling thread's jq_self (sampler.h).
 */
#include "record/lua_coroutine.h"

#include <lauxlib.h>
#include <lualib.h>

#include "record/sampler.h"

/* Lua 5.4.6 renamed lua_resetthread to lua_closethread, which also takes
 * the state the closing runs from (for its C-stack count). */
#if LUA_VERSION_RELEASE_NUM >= 50406
#define close_coroutine(co, from) lua_closethread((co), (from))
#else
#define close_coroutine(co, from) ((void)(from), lua_resetthread(co))
#endif

/* Runs `co` from L with the top `narg` values of L as its arguments, the
 * sampler pointing at `co` meanwhile. Returns how many values it yielded or
 * returned, now on L's top; or -1 with the error value on L's top. */
static int run_coroutine(lua_State *L, lua_State *co, int narg) {
  if (!lua_checkstack(co, narg)) {
    lua_pushliteral(L, "too many arguments to resume");
    return -1;
  }
  lua_xmove(L, co, narg);
  int nres;
  lua_State *outer = jq_sampler_swap(co);
  int status = lua_resume(co, L, narg, &nres);
  jq_sampler_back(outer);
  if (status != LUA_OK && status != LUA_YIELD) {
    lua_xmove(co, L, 1); /* its error value */
    return -1;
  }
  if (!lua_checkstack(L, nres + 1)) { /* + 1: resume's leading boolean */
    lua_pop(co, nres);
    lua_pushliteral(L, "too many results to resume");
    return -1;
  }
  lua_xmove(co, L, nres);
  return nres;
}

/* coroutine.resume(co, ...) -> true, ... | false, err */
static int l_coroutine_resume(lua_State *L) {
  lua_State *co = lua_tothread(L, 1);
  luaL_argexpected(L, co != NULL, 1, "thread");
  int n = run_coroutine(L, co, lua_gettop(L) - 1);
  lua_pushboolean(L, n >= 0);
  if (n < 0) {
    lua_insert(L, -2); /* false, err */
    return 2;
  }
  lua_insert(L, -(n + 1));
  return n + 1;
}

/* The function coroutine.wrap returns: its coroutine is upvalue 1. An error
 * is raised again in the caller; when the coroutine died of it, its
 * to-be-closed variables are closed first (with the sampler pointing at it:
 * the __close handlers run there), and the closing's outcome is what is
 * raised. A string gets the caller's position in front, as error() does. */
static int l_coroutine_wrapped(lua_State *L) {
  lua_State *co = lua_tothread(L, lua_upvalueindex(1));
  int n = run_coroutine(L, co, lua_gettop(L));
  if (n >= 0)
    return n;
  int status = lua_status(co);
  if (status != LUA_OK && status != LUA_YIELD) {
    lua_State *outer = jq_sampler_swap(co);
    status = close_coroutine(co, L);
    jq_sampler_back(outer);
    lua_xmove(co, L, 1);
  }
  if (status != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
  }
  return lua_error(L);
}

/* coroutine.wrap(f) -> a function that resumes a new coroutine running f */
static int l_coroutine_wrap(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_State *co = lua_newthread(L);
  lua_pushvalue(L, 1);
  lua_xmove(L, co, 1); /* the coroutine's body */
  lua_pushcclosure(L, l_coroutine_wrapped, 1);
  return 1;
}

/* debug.gethook([thread]) as Lua's (upvalue 1), except that the sampler's
 * count hook (a sample pending on that coroutine) reads as no hook: a
 * coroutine created while a sample is pending inherits it (lua_newthread
 * copies the hook), and code that saves and restores hooks must not get
 * "external hook" back, which debug.sethook refuses. */
static int l_debug_gethook(lua_State *L) {
  lua_State *co = lua_isthread(L, 1) ? lua_tothread(L, 1) : L;
  if (jq_sampler_hook_is_ours(co)) {
    luaL_pushfail(L);
    return 1;
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* Sets t[name] = f (t at `t`, raw) when t[name] is a C function now. */
static void replace_c_function(lua_State *L, int t, const char *name, lua_CFunction f) {
  lua_pushstring(L, name);
  lua_rawget(L, t);
  int is_c = lua_iscfunction(L, -1);
  lua_pop(L, 1);
  if (is_c) {
    lua_pushstring(L, name);
    lua_pushcfunction(L, f);
    lua_rawset(L, t);
  }
}

void jq_coroutine_install(lua_State *L) {
  luaL_checkstack(L, 5, NULL);
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  int loaded = lua_gettop(L);
  lua_pushliteral(L, LUA_COLIBNAME);
  if (lua_type(L, loaded) == LUA_TTABLE && lua_rawget(L, loaded) == LUA_TTABLE) {
    replace_c_function(L, loaded + 1, "resume", l_coroutine_resume);
    replace_c_function(L, loaded + 1, "wrap", l_coroutine_wrap);
  }
  lua_settop(L, loaded);
  lua_pushliteral(L, LUA_DBLIBNAME);
  if (lua_type(L, loaded) == LUA_TTABLE && lua_rawget(L, loaded) == LUA_TTABLE) {
    lua_pushliteral(L, "gethook");
    lua_rawget(L, loaded + 1);
    lua_CFunction f = lua_tocfunction(L, -1);
    if (f != NULL && f != l_debug_gethook) { /* Lua's (or another C one): wrapped */
      lua_pushcclosure(L, l_debug_gethook, 1);
      lua_pushliteral(L, "gethook");
      lua_insert(L, -2);
      lua_rawset(L, loaded + 1);
    }
  }
  lua_settop(L, loaded - 1);
}

#ifdef JQ_TESTING

static int l_coroutine_install(lua_State *L) {
  jq_coroutine_install(L);
  return 0;
}

static int l_coroutine_lua(lua_State *L) {
  return luaopen_coroutine(L);
}

static int l_coroutine_sampled(lua_State *L) {
  lua_State *running = atomic_load_explicit(&jq_self.sample_L, memory_order_relaxed);
  lua_pushstring(L, running == NULL ? "none" : running == L ? "self" : "other");
  return 1;
}

void jq_open_testing_coroutine(lua_State *L) {
  static const luaL_Reg funcs[] = {{"coroutine_install", l_coroutine_install},
                                   {"coroutine_lua", l_coroutine_lua},
                                   {"coroutine_sampled", l_coroutine_sampled},
                                   {NULL, NULL}};
  luaL_setfuncs(L, funcs, 0);
}

#endif
