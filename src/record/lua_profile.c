/*
 * lua_profile.c - Lua bindings of the recording session (the seed page's API).
 *
 * Validates every argument before any side effect and maps session.c's error
 * codes to Lua: bad arguments raise through luaL_arg*, a full registry or
 * exhausted memory raises luaL_error, and a save that cannot happen returns
 * false, message (and errno when the file system said no).
 * profile_marker and profile_tag are the record path: no allocation, no lock
 * and no Lua call beyond reading their arguments (the string form of
 * profile_marker registers the name the first time it sees it).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "bindings.h"
#include "record/lua_coroutine.h"
#include "record/sampler.h"
#include "record/session.h"

#define DEFAULT_EVENTS_PER_LANE 65536

static const char *check_name(lua_State *L, int arg, size_t *len) {
  const char *s = luaL_checklstring(L, arg, len);
  luaL_argcheck(L, *len > 0, arg, "name must not be empty");
  if (*len > JQ_MAX_NAME)
    luaL_argerror(L, arg, lua_pushfstring(L, "name is longer than %d bytes", JQ_MAX_NAME));
  return s;
}

static uint32_t opt_color(lua_State *L, int arg) {
  if (lua_isnoneornil(L, arg))
    return 0;
  lua_Integer c = luaL_checkinteger(L, arg);
  if (c < 0 || c > 0xffffff)
    luaL_argerror(L, arg,
                  lua_pushfstring(L, "color must be 0xRRGGBB (0 to 0xFFFFFF), got %I", (LUAI_UACINT)c));
  return (uint32_t)c;
}

static uint32_t check_category_id(lua_State *L, int arg) {
  lua_Integer id = luaL_checkinteger(L, arg);
  if (id < 1 || id > (lua_Integer)JQ_MAX_TAG)
    luaL_argerror(L, arg, lua_pushfstring(L, "category id must be in 1..%d, got %I",
                                          (int)JQ_MAX_TAG, (LUAI_UACINT)id));
  return (uint32_t)id;
}

static int registry_error(lua_State *L, const char *fn, int rc, const char *what, int limit) {
  if (rc == ENOSPC)
    return luaL_error(L, "%s: too many %s (the limit is %d)", fn, what, limit);
  return luaL_error(L, "%s: out of memory", fn);
}

/* The value of option `key` (at the top of the stack): an integer in
 * lo..hi, or a raise in jobque.new's style. */
static int option_integer(lua_State *L, const char *key, int lo, int hi) {
  int isnum;
  lua_Integer v = lua_tointegerx(L, -1, &isnum);
  if (!isnum || lua_type(L, -1) != LUA_TNUMBER || v < lo || v > hi) {
    const char *got = luaL_tolstring(L, -1, NULL);
    luaL_error(L, "profile_start: option '%s' must be an integer from %d to %d, got %s", key, lo,
               hi, got);
  }
  return (int)v;
}

/* profile_start's options (the table at `arg`): sample_hz, sample_depth.
 * Any other key raises, naming those it knows. */
static void check_options(lua_State *L, int arg, int *hz, int *depth) {
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, arg) != 0) {
    const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    if (key && strcmp(key, "sample_hz") == 0) {
      *hz = option_integer(L, key, 0, JQ_SAMPLE_HZ_MAX);
    } else if (key && strcmp(key, "sample_depth") == 0) {
      *depth = option_integer(L, key, 1, JQ_SAMPLE_DEPTH_MAX);
    } else {
      lua_pushvalue(L, -2);
      luaL_error(L, "profile_start: unknown option '%s' (known: sample_hz, sample_depth)",
                 luaL_tolstring(L, -1, NULL));
    }
    lua_pop(L, 1);
  }
}

static const char SENTINEL_KEY = 0; /* registry: the state's closing sentinel */

static int sentinel_gc(lua_State *L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  jq_sampler_state_closing(lua_tothread(L, -1));
  return 0;
}

/* A state that starts a sampling session: made ready for it (may raise,
 * before anything is staged): coroutine.resume/wrap replaced, and a
 * sentinel whose __gc, when the state closes, tells the sampler to stop
 * sampling it. */
static void sampling_in_state(lua_State *L) {
  jq_coroutine_install(L); /* resume/wrap that keep the running coroutine current */
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &SENTINEL_KEY) == LUA_TNIL) {
    lua_newuserdatauv(L, 1, 0);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, sentinel_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &SENTINEL_KEY);
  }
  lua_pop(L, 1);
}

/* profile_start([events_per_lane = 65536 [, options]])
 * Options: sample_hz (0..10000, 0: no sampling), sample_depth (1..256,
 * default 64). Every check comes first; out of memory (or a sampler that
 * cannot start on this thread) raises with the last session kept for
 * profile_save (the ring and the caller's timer are made before the
 * session is replaced). */
static int l_profile_start(lua_State *L) {
  lua_Integer n = luaL_optinteger(L, 1, DEFAULT_EVENTS_PER_LANE);
  if (n <= 0)
    luaL_argerror(L, 1, lua_pushfstring(L, "events_per_lane must be a positive integer, got %I",
                                        (LUAI_UACINT)n));
  if ((uint64_t)n > SIZE_MAX / sizeof(jq_event) / 2)
    luaL_argerror(L, 1, lua_pushfstring(L, "events_per_lane %I is too large to allocate",
                                        (LUAI_UACINT)n));
  int hz = 0, depth = JQ_SAMPLE_DEPTH_DEFAULT;
  if (!lua_isnoneornil(L, 2))
    check_options(L, 2, &hz, &depth);
  if (hz > 0)
    sampling_in_state(L);
  char err[256];
  if (jq_sampler_prepare(L, hz, depth, err, sizeof err) != 0)
    return luaL_error(L, "profile_start: %s", err);
  if (jq_session_start((uint64_t)n) != 0) {
    jq_sampler_unstage();
    return luaL_error(L,
                      "profile_start: cannot allocate %I events per lane (%I MiB a lane): "
                      "out of memory; pass a smaller events_per_lane",
                      (LUAI_UACINT)n, (LUAI_UACINT)((uint64_t)n * sizeof(jq_event) >> 20));
  }
  return 0;
}

static int l_profile_stop(lua_State *L) {
  (void)L;
  jq_session_stop();
  return 0;
}

/* Whether `path` names a Perfetto protobuf file by its extension. */
static int proto_by_name(const char *path, size_t len) {
  static const char *const ext[] = {".pftrace", ".perfetto-trace"};
  for (int i = 0; i < 2; i++) {
    size_t n = strlen(ext[i]);
    if (len >= n && strcmp(path + len - n, ext[i]) == 0)
      return 1;
  }
  return 0;
}

/* profile_save's options (the table at 2, if any): format, progress.
 * Returns whether to write protobuf: the format asked, else by the path's
 * extension; *progress: whether a progress line was asked. */
static int save_options(lua_State *L, const char *path, size_t len, int *progress) {
  int proto = proto_by_name(path, len);
  *progress = 0;
  if (lua_isnoneornil(L, 2))
    return proto;
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, 2) != 0) {
    const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    if (key && strcmp(key, "format") == 0) {
      const char *f = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
      if (f && strcmp(f, "json") == 0)
        proto = 0;
      else if (f && strcmp(f, "proto") == 0)
        proto = 1;
      else
        luaL_argerror(L, 2, lua_pushfstring(L, "format must be \"json\" or \"proto\", got %s",
                                            lua_type(L, -1) == LUA_TSTRING
                                                ? lua_pushfstring(L, "\"%s\"", f)
                                                : luaL_typename(L, -1)));
    } else if (key && strcmp(key, "progress") == 0) {
      if (!lua_isboolean(L, -1))
        luaL_argerror(L, 2, lua_pushfstring(L, "progress must be a boolean, got %s", luaL_typename(L, -1)));
      *progress = lua_toboolean(L, -1);
    } else {
      lua_pushvalue(L, -2);
      luaL_error(L, "profile_save: unknown option '%s' (known: format, progress)", luaL_tolstring(L, -1, NULL));
    }
    lua_pop(L, 1);
  }
  return proto;
}

/* profile_save(path [, {format = "json" | "proto", progress = bool}]) -> true | false, message [, errno]
 * Protobuf when asked, or by the extension (.pftrace, .perfetto-trace);
 * else JSON. The file is written by file_replace.h's rules: replaced
 * atomically, a symlink at `path` followed, mode and owner kept, a device
 * or FIFO written in place (so /dev/full gives false, "... No space left
 * on device", 28). */
static int l_profile_save(lua_State *L) {
  size_t len;
  const char *path = luaL_checklstring(L, 1, &len);
  luaL_argcheck(L, strlen(path) == len, 1, "path contains a zero byte");
  int progress;
  int proto = save_options(L, path, len, &progress);
  char err[2 * PATH_MAX + 512]; /* the path, and a link of its chain (file_replace.h) */
  int errnum;
  int rc = jq_session_save(path, proto, progress, err, sizeof err, &errnum);
  if (rc == JQ_SAVE_OK) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushboolean(L, 0);
  lua_pushstring(L, err);
  if (rc != JQ_SAVE_IO)
    return 2;
  lua_pushinteger(L, errnum);
  return 3;
}

/* profile_is_on() -> boolean */
static int l_profile_is_on(lua_State *L) {
  lua_pushboolean(L, jq_ring_armed());
  return 1;
}

/* profile_category(id, name [, color]) -> id
 * profile_category(name [, color]) -> id */
static int l_profile_category(lua_State *L) {
  size_t len;
  uint32_t id;
  int rc;
  if (lua_type(L, 1) == LUA_TNUMBER) {
    id = check_category_id(L, 1);
    const char *name = check_name(L, 2, &len);
    uint32_t color = opt_color(L, 3);
    rc = jq_category_set(id, name, len, color);
  } else if (lua_type(L, 1) == LUA_TSTRING) {
    const char *name = check_name(L, 1, &len);
    uint32_t color = opt_color(L, 2);
    rc = jq_category_intern(name, len, color, &id);
  } else {
    return luaL_typeerror(L, 1, "integer id or string name");
  }
  if (rc != 0)
    return registry_error(L, "profile_category", rc, "categories", JQ_MAX_CATEGORIES);
  lua_pushinteger(L, id);
  return 1;
}

/* profile_tag(tag): tag 0 clears it */
static int l_profile_tag(lua_State *L) {
  lua_Integer tag = luaL_checkinteger(L, 1);
  if (tag < 0 || tag > (lua_Integer)JQ_MAX_TAG)
    luaL_argerror(L, 1, lua_pushfstring(L, "tag must be in 0..%d, got %I", (int)JQ_MAX_TAG,
                                        (LUAI_UACINT)tag));
  jq_self.tag = (uint16_t)tag;
  return 0;
}

/* profile_current_tag() -> the calling thread's tag */
static int l_profile_current_tag(lua_State *L) {
  lua_pushinteger(L, jq_self.tag);
  return 1;
}

/* The id of the marker kind named by argument `arg`, registered on first
 * use; a full registry raises in the name of `fn`, the function called. */
static uint32_t intern_marker(lua_State *L, int arg, const char *fn) {
  size_t len;
  const char *name = check_name(L, arg, &len);
  uint32_t id;
  int rc = jq_marker_intern(name, len, &id);
  if (rc != 0)
    registry_error(L, fn, rc, "marker kinds", JQ_MAX_MARKERS);
  return id;
}

/* profile_marker(id_or_name [, arg = 0])
 * With recording off this returns before reading its arguments: the Lua
 * counterpart of compiling the call away, and what keeps an unrecorded call
 * within a few percent of an empty C call. Arguments are checked whenever
 * recording is on. */
static int l_profile_marker(lua_State *L) {
  if (JQ_LIKELY(!jq_ring_armed()))
    return 0;
  uint32_t id;
  int isnum;
  if (JQ_LIKELY(lua_type(L, 1) == LUA_TNUMBER)) {
    lua_Integer n = lua_tointegerx(L, 1, &isnum);
    if (JQ_UNLIKELY(!isnum || n < 1 || n > (lua_Integer)jq_marker_count()))
      return luaL_argerror(L, 1,
                           isnum ? lua_pushfstring(L, "unknown marker id %I (get ids from "
                                                      "profile_marker_id)", (LUAI_UACINT)n)
                                 : "number has no integer representation");
    id = (uint32_t)n;
  } else if (lua_type(L, 1) == LUA_TSTRING) {
    id = intern_marker(L, 1, "profile_marker");
  } else {
    return luaL_typeerror(L, 1, "marker id or name");
  }
  lua_Integer arg = lua_tointegerx(L, 2, &isnum); /* one API call when it is an integer */
  if (JQ_UNLIKELY(!isnum) && !lua_isnoneornil(L, 2))
    arg = luaL_checkinteger(L, 2); /* raises the standard message */
  jq_ring_marker(id, (int64_t)arg);
  return 0;
}

/* profile_marker_id(name) -> id */
static int l_profile_marker_id(lua_State *L) {
  lua_pushinteger(L, intern_marker(L, 1, "profile_marker_id"));
  return 1;
}

/* ---- spans and counters ---- */

/* The category of a span, argument 1: an id, or a name registered on first
 * use and then found in this state's cache (upvalue 1), so that a span by
 * name takes no lock. */
static uint16_t span_category(lua_State *L, const char *fn) {
  int isnum;
  if (JQ_LIKELY(lua_type(L, 1) == LUA_TNUMBER)) {
    lua_Integer id = lua_tointegerx(L, 1, &isnum);
    if (JQ_UNLIKELY(!isnum || id < 1 || id > (lua_Integer)JQ_MAX_TAG))
      luaL_argerror(L, 1, isnum ? lua_pushfstring(L, "category id must be in 1..%d, got %I",
                                                  (int)JQ_MAX_TAG, (LUAI_UACINT)id)
                                : "number has no integer representation");
    return (uint16_t)id;
  }
  if (lua_type(L, 1) != LUA_TSTRING)
    return (uint16_t)luaL_typeerror(L, 1, "category id or name");
  lua_pushvalue(L, 1);
  lua_Integer id = lua_rawget(L, lua_upvalueindex(1)) == LUA_TNUMBER ? lua_tointeger(L, -1) : 0;
  lua_pop(L, 1);
  if (JQ_UNLIKELY(id == 0)) {
    size_t len;
    const char *name = check_name(L, 1, &len);
    uint32_t got;
    int rc = jq_category_intern(name, len, 0, &got);
    if (rc != 0)
      registry_error(L, fn, rc, "categories", JQ_MAX_CATEGORIES);
    lua_pushvalue(L, 1);
    lua_pushinteger(L, (lua_Integer)got);
    lua_rawset(L, lua_upvalueindex(1));
    id = (lua_Integer)got;
  }
  return (uint16_t)id;
}

/* Opens a span of the category at argument 1. Recording off, it only counts
 * (so that a profile_end later knows something is open). */
static void span_begin(lua_State *L, const char *fn) {
  jq_thread *self = &jq_self;
  uint64_t *depth = jq_span_depth(self);
  if (JQ_LIKELY(!jq_ring_armed())) {
    (*depth)++;
    return;
  }
  uint16_t cat = span_category(L, fn);
  (*depth)++;
  jq_ring_put(JQ_EV_SPAN_BEGIN, self->span_flags, cat, 0, (int64_t)self->job, 0, (uint64_t)(uintptr_t)L);
}

/* Closes a span of the coroutine L (the innermost it opened: spans.c
 * pairs them); returns 0 when none was open in the job (or thread). */
static int span_end(lua_State *L) {
  jq_thread *self = &jq_self;
  uint64_t *depth = jq_span_depth(self);
  if (JQ_UNLIKELY(*depth == 0))
    return 0;
  (*depth)--;
  if (jq_ring_armed())
    jq_ring_put(JQ_EV_SPAN_END, self->span_flags, 0, 0, (int64_t)self->job, 0, (uint64_t)(uintptr_t)L);
  return 1;
}

/* profile_begin(cat) */
static int l_profile_begin(lua_State *L) {
  span_begin(L, "profile_begin");
  return 0;
}

/* profile_end(): raises while recording when no span is open. */
static int l_profile_end(lua_State *L) {
  if (JQ_UNLIKELY(!span_end(L)) && jq_ring_armed())
    return luaL_error(L, "profile_end: no span is open here (each profile_end needs a "
                         "profile_begin before it, in the same job or, outside jobs, thread)");
  return 0;
}

/* Zones. Each open zone is its own object, so that closing one twice can
 * be told apart from closing the next: a table whose slot 1 says whether its
 * span is open, with the zone metatable. Closed ones wait in this state's
 * free list (upvalue 2 of profile_zone, 1 of __close) for the next
 * profile_zone, so a zone allocates only when more are open at once than
 * ever before in the state (the free list grows then too). */
#define ZONE_OPEN 1 /* the slot of the flag */

/* profile_zone(cat) -> a zone object, whose __close ends the span. */
static int l_profile_zone(lua_State *L) {
  span_begin(L, "profile_zone");
  int free_list = lua_upvalueindex(2);
  lua_Integer n = (lua_Integer)lua_rawlen(L, free_list);
  if (JQ_LIKELY(n > 0)) {
    lua_rawgeti(L, free_list, n);
    lua_pushnil(L);
    lua_rawseti(L, free_list, n);
  } else {
    lua_createtable(L, 1, 0);
    lua_pushvalue(L, lua_upvalueindex(3));
    lua_setmetatable(L, -2);
  }
  lua_pushboolean(L, 1);
  lua_rawseti(L, -2, ZONE_OPEN);
  return 1;
}

/* The zone's __close(zone [, err]): ends the zone's span and puts the zone
 * in the free list. Closing a closed zone touches no span: it raises while
 * recording, unless an error is closing it (raising then would hide that
 * error), and does nothing while recording is off (as profile_end). */
static int l_zone_close(lua_State *L) {
  int for_error = !lua_isnoneornil(L, 2);
  if (JQ_UNLIKELY(!lua_getmetatable(L, 1) || !lua_rawequal(L, -1, lua_upvalueindex(2))))
    return luaL_typeerror(L, 1, "profile_zone");
  lua_pop(L, 1);
  if (JQ_UNLIKELY(lua_rawgeti(L, 1, ZONE_OPEN) != LUA_TBOOLEAN || !lua_toboolean(L, -1))) {
    if (jq_ring_armed() && !for_error)
      return luaL_error(L, "profile_zone: this zone is already closed (a zone closes once: "
                           "when its to-be-closed variable goes out of scope, or by one call "
                           "of its __close)");
    return 0;
  }
  lua_pushboolean(L, 0);
  lua_rawseti(L, 1, ZONE_OPEN);
  lua_settop(L, 1);
  lua_rawseti(L, lua_upvalueindex(1), (lua_Integer)lua_rawlen(L, lua_upvalueindex(1)) + 1);
  span_end(L);
  return 0;
}

/* profile_span's end: after fn returned (or raised, or after yields). */
static int span_done(lua_State *L, int status, lua_KContext ctx) {
  span_end(L);
  if (status != LUA_OK && status != LUA_YIELD)
    return lua_error(L); /* fn's error, unchanged */
  return lua_gettop(L) - (int)ctx;
}

/* profile_span(cat, fn, ...) -> fn(...)'s results; fn may yield (await). */
static int l_profile_span(lua_State *L) {
  luaL_checkany(L, 2); /* before the span opens: a raise here leaves nothing open */
  span_begin(L, "profile_span");
  int status = lua_pcallk(L, lua_gettop(L) - 2, LUA_MULTRET, 0, 1, span_done);
  return span_done(L, status, 1);
}

/* profile_counter(name, value): recording off, returns before reading them.
 * The name must be a string and the value a number: Lua would convert
 * others (a number name to a new string: an allocation on every call). */
static int l_profile_counter(lua_State *L) {
  if (JQ_LIKELY(!jq_ring_armed()))
    return 0;
  if (JQ_UNLIKELY(lua_type(L, 1) != LUA_TSTRING))
    return luaL_typeerror(L, 1, "string");
  if (JQ_UNLIKELY(lua_type(L, 2) != LUA_TNUMBER))
    return luaL_typeerror(L, 2, "number");
  size_t len;
  const char *name = check_name(L, 1, &len);
  int isnum;
  int64_t arg;
  uint8_t flags = 0;
  lua_Integer i = lua_tointegerx(L, 2, &isnum);
  if (isnum && lua_isinteger(L, 2)) {
    arg = (int64_t)i;
  } else {
    lua_Number x = luaL_checknumber(L, 2);
    if (!(x - x == 0))
      return luaL_argerror(L, 2, "value must be a finite number");
    double d = (double)x;
    memcpy(&arg, &d, sizeof arg);
    flags = JQ_COUNTER_DOUBLE;
  }
  uint32_t id;
  int rc = jq_counter_intern(name, len, &id);
  if (rc != 0)
    return registry_error(L, "profile_counter", rc, "counters", JQ_MAX_MARKERS);
  jq_ring_put(JQ_EV_COUNTER, flags, 0, id, arg, 0, 0);
  return 0;
}

static const luaL_Reg span_funcs[] = {
    {"profile_begin", l_profile_begin},
    {"profile_zone", l_profile_zone},
    {"profile_span", l_profile_span},
    {NULL, NULL}};

static const luaL_Reg profile_funcs[] = {
    {"profile_start", l_profile_start},
    {"profile_stop", l_profile_stop},
    {"profile_save", l_profile_save},
    {"profile_is_on", l_profile_is_on},
    {"profile_category", l_profile_category},
    {"profile_tag", l_profile_tag},
    {"profile_current_tag", l_profile_current_tag},
    {"profile_marker", l_profile_marker},
    {"profile_marker_id", l_profile_marker_id},
    {"profile_end", l_profile_end},
    {"profile_counter", l_profile_counter},
    {NULL, NULL}};

static const char *const color_names[] = {"BLUE", "GREEN", "PURPLE", "AMBER",
                                          "CORAL", "TEAL", "MAGENTA", "INDIGO"};

void jq_open_profile(lua_State *L) {
  luaL_newlib(L, profile_funcs);
  lua_newtable(L); /* upvalue 1: category name -> id */
  lua_newtable(L); /* upvalue 2: the free zones */
  lua_createtable(L, 0, 2); /* upvalue 3: the zone metatable */
  lua_pushvalue(L, -2);
  lua_pushvalue(L, -2);
  lua_pushcclosure(L, l_zone_close, 2);
  lua_setfield(L, -2, "__close");
  lua_pushliteral(L, "profile_zone");
  lua_setfield(L, -2, "__name");
  luaL_setfuncs(L, span_funcs, 3);
  for (int i = 0; i < 8; i++) {
    lua_pushfstring(L, "PROFILE_COLOR_%s", color_names[i]);
    lua_pushinteger(L, jq_palette[i]);
    lua_rawset(L, -3);
  }
  lua_createtable(L, JQ_PALETTE_SIZE, 0);
  for (int i = 0; i < JQ_PALETTE_SIZE; i++) {
    lua_pushinteger(L, jq_palette[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "PROFILE_PALETTE");
}
