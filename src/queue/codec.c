/*
 * codec.c - the wire format of values that cross lua_States.
 *
 * One record per value: a tag byte, then its payload. Tables and Lua
 * functions get reference numbers in encounter order, so shared and cyclic
 * references are rebuilt as such. Functions travel as bytecode (lua_dump)
 * plus their upvalues; upvalues shared between closures are re-joined.
 * Values that are loaded modules (package.loaded[name]), and C functions
 * found in them, travel by name and are looked up (or required) on the other
 * side; the globals table, and any upvalue named _ENV, travel as "the
 * globals over there".
 *
 * Encoding never raises: it runs protected (a memory error included) and
 * returns -1 with a message that names where the bad value sits (argument
 * #2, field "conn", ...), or "not enough memory". Decoding raises, and runs
 * under the caller's pcall.
 */
#include "queue/codec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "common/array.h"

#if !defined(JQ_CODEC_DEPTH)
#define JQ_CODEC_DEPTH 200 /* nesting of tables and functions */
#endif
#if !defined(JQ_FUNCTION_CACHE)
#define JQ_FUNCTION_CACHE 512 /* loaded functions kept per state */
#endif

enum {
  T_NIL = 'n', T_FALSE = 'f', T_TRUE = 't', T_INT = 'i', T_FLOAT = 'd', T_STRING = 's',
  T_TABLE = 'T', T_END = 'E', T_REF = 'R', T_LUAFN = 'L', T_CFN = 'C', T_MODULE = 'M',
  T_GLOBALS = 'G', T_HANDLE = 'J', T_JOIN = 'U'
};

/* Registry keys (their addresses). */
static const char NAMES_KEY = 0;   /* value -> "module\0field" or "module" */
static const char DUMPS_KEY = 0;   /* function -> bytecode (weak keys) */
static const char LOADED_FN_KEY = 0; /* bytecode hash -> loaded function */
static const char REFS_KEY = 0;      /* the decoder's reference table, reused */

void jq_buf_free(jq_buf *b) {
  for (int i = 0; i < b->nhandles; i++)
    b->ops->unref(b->handles[i]);
  free(b->handles);
  if (!b->borrowed)
    free(b->data);
  memset(b, 0, sizeof *b);
}

uint64_t jq_hash64(const char *p, size_t n) {
  uint64_t h = 14695981039346656037u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)p[i]) * 1099511628211u;
  return h;
}

/* ---- encoding ---- */

typedef struct segment {
  char kind; /* 'a' argument, 'f' string field, 'i' integer field, 'b' boolean field, 'd' float
              * field, 'v' under a key of another type (s: its type), 'k' a key, 'u' upvalue */
  const char *s;
  size_t len;
  lua_Integer i;
  lua_Number d;
} segment;

typedef struct enc {
  lua_State *L;
  jq_buf *b;
  const jq_handle_ops *ops; /* what handles are (NULL: none) */
  int cache;    /* stack index: value -> reference number (nil until needed) */
  int names;    /* stack index: value -> name (nil until needed) */
  int upvals;   /* stack index: upvalue id -> reference * 256 + index (nil until needed) */
  int dumps;    /* stack index: function -> bytecode */
  int globals;  /* stack index: this state's globals */
  int nrefs;
  int oom;
  int old_names; /* the name cache it used was made before this encode */
  segment path[JQ_CODEC_DEPTH + 2];
  int depth;
  const char *label;
  const char *dest; /* where the values go, for messages: "sent to a worker", ... */
  char *err;
  size_t errlen;
} enc;

static void put(enc *e, const void *p, size_t n) {
  jq_buf *b = e->b;
  if (e->oom)
    return;
  if (b->cap - b->len < n) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n)
      cap *= 2;
    char *d = b->borrowed ? malloc(cap) : realloc(b->data, cap);
    if (!d) {
      e->oom = 1;
      return;
    }
    if (b->borrowed && b->len)
      memcpy(d, b->data, b->len);
    b->borrowed = 0;
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

static void put_byte(enc *e, char c) {
  put(e, &c, 1);
}

static void put_u64(enc *e, uint64_t v) {
  put(e, &v, sizeof v);
}

static void put_str(enc *e, const char *s, size_t len) {
  put_u64(e, len);
  put(e, s, len);
}

/* The text of path segment i ("argument #2", "field "conn"", ...) in out. */
static size_t segment_text(const enc *e, int i, char *out, size_t cap) {
  const segment *s = &e->path[i];
  int n = 0;
  switch (s->kind) {
  case 'a': n = snprintf(out, cap, "%s #%lld", e->label, (long long)s->i); break;
  case 'f':
    n = snprintf(out, cap, "field \"%.*s%s\"", (int)(s->len > 60 ? 60 : s->len), s->s,
                 s->len > 60 ? "\xe2\x80\xa6" : "");
    break;
  case 'i': n = snprintf(out, cap, "[%lld]", (long long)s->i); break;
  case 'b': n = snprintf(out, cap, "[%s]", s->i ? "true" : "false"); break;
  case 'd': n = snprintf(out, cap, "[%.14g]", (double)s->d); break;
  case 'v': n = snprintf(out, cap, "the value of a %s key", s->s); break;
  case 'k': n = snprintf(out, cap, "a table key"); break;
  case 'u': n = snprintf(out, cap, "upvalue '%.60s'", s->s ? s->s : "?"); break;
  default: out[0] = '\0'; break;
  }
  return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* Writes "argument #2, field "conn": <what>" into e->err. A path too long
 * for it keeps its first and last segments around an ellipsis: the reason
 * is never cut. */
static int fail(enc *e, const char *what) {
  char seg[128];
  int nseg = (e->depth < JQ_CODEC_DEPTH + 1 ? e->depth : JQ_CODEC_DEPTH + 1) + 1;
  size_t reason = strlen(what) + 2; /* ": " what */
  size_t room = e->errlen > reason + 1 ? e->errlen - reason - 1 : 0;
  size_t total = 0;
  for (int i = 0; i < nseg; i++)
    total += (i ? 2 : 0) + segment_text(e, i, seg, sizeof seg);
  static const char gap[] = ", \xe2\x80\xa6"; /* ", ..." with an ellipsis */
  int head = nseg, tail = nseg; /* segments [0, head) and [tail, nseg) are written */
  if (total > room) {
    size_t used = 0, budget = room / 3;
    for (head = 0; head < nseg; head++) {
      size_t k = (head ? 2 : 0) + segment_text(e, head, seg, sizeof seg);
      if (used + k > budget)
        break;
      used += k;
    }
    used += sizeof gap - 1;
    for (tail = nseg; tail > head; tail--) {
      size_t k = 2 + segment_text(e, tail - 1, seg, sizeof seg);
      if (used + k > room)
        break;
      used += k;
    }
  }
  size_t n = 0;
  for (int i = 0; i < nseg; i++) {
    if (i >= head && i < tail) {
      if (i == head && n + sizeof gap - 1 <= room) {
        memcpy(e->err + n, gap, sizeof gap - 1);
        n += sizeof gap - 1;
      }
      continue;
    }
    size_t k = segment_text(e, i, seg, sizeof seg);
    size_t sep = (n ? 2 : 0);
    if (n + sep + k > room)
      break;
    memcpy(e->err + n, ", ", sep);
    memcpy(e->err + n + sep, seg, k);
    n += sep + k;
  }
  if (e->errlen > 0)
    snprintf(e->err + n, e->errlen - n, "%s%s", n ? ": " : "", what);
  return -1;
}

/* fail() with a formatted reason (no Lua allocation: encode may hold
 * malloc'd memory). */
static int failf(enc *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(enc *e, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return fail(e, what);
}

/* Whether the name on the top ("module" or "module\0field") still leads
 * to the value at idx in package.loaded: the name cache may be older than
 * the last change to it. */
static int still_loaded(lua_State *L, int idx) {
  size_t len;
  const char *name = lua_tolstring(L, -1, &len);
  size_t modlen = strlen(name);
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushlstring(L, name, modlen);
  int t = lua_rawget(L, -2);
  if (modlen < len && t == LUA_TTABLE) {
    lua_pushstring(L, name + modlen + 1);
    lua_rawget(L, -2);
    lua_remove(L, -2);
  }
  int same = lua_rawequal(L, -1, idx);
  lua_pop(L, 2);
  return same;
}

/* The name a loaded module, or a C function in one, travels by. */
static int lookup_name(enc *e, int idx, int rebuild) {
  lua_State *L = e->L;
  if (lua_isnil(L, e->names)) { /* the slot jq_encode reserved */
    e->old_names = lua_rawgetp(L, LUA_REGISTRYINDEX, &NAMES_KEY) == LUA_TTABLE;
    lua_replace(L, e->names);
  }
  if (!lua_istable(L, e->names)) { /* rebuild: 0 = may rebuild, 1 = rebuild now, 2 = never */
    if (rebuild == 2)
      return 0;
    rebuild = 1;
  }
  if (rebuild != 1) {
    lua_pushvalue(L, idx);
    if (lua_rawget(L, e->names) == LUA_TSTRING) {
      if (still_loaded(L, idx))
        return 1;
      lua_pop(L, 1);
      return rebuild == 0 ? lookup_name(e, idx, 1) : 0; /* unloaded or replaced since */
    }
    lua_pop(L, 1);
    return 0;
  }
  /* (Re)build: modules may have loaded since the last time. */
  lua_newtable(L);
  int names = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  int loaded = names + 1;
  lua_pushnil(L);
  while (lua_next(L, loaded)) { /* modname at loaded+1, module at loaded+2 */
    int mod = loaded + 2;
    size_t modlen;
    const char *modname = lua_type(L, mod - 1) == LUA_TSTRING ? lua_tolstring(L, mod - 1, &modlen)
                                                               : NULL;
    if (modname && strlen(modname) == modlen && lua_istable(L, mod)) {
      lua_pushvalue(L, mod);
      lua_pushvalue(L, mod - 1);
      lua_rawset(L, names); /* names[module] = "module" */
      lua_pushnil(L);
      while (lua_next(L, mod)) { /* field at mod+1, value at mod+2 */
        if (lua_type(L, mod + 1) == LUA_TSTRING && lua_iscfunction(L, mod + 2)) {
          lua_pushvalue(L, mod + 2);
          if (lua_rawget(L, names) == LUA_TNIL) { /* the first name found wins */
            lua_pushvalue(L, mod + 2);
            lua_pushfstring(L, "%s%c%s", modname, 0, lua_tostring(L, mod + 1));
            lua_rawset(L, names); /* names[cfunction] = "module\0field" */
          }
          lua_pop(L, 1);
        }
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_pushvalue(L, names);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &NAMES_KEY);
  lua_replace(L, e->names);
  return lookup_name(e, idx, 2);
}

/* The scratch table at stack slot `slot`, made on first use. */
static int scratch(lua_State *L, int slot) {
  if (lua_isnil(L, slot)) {
    lua_newtable(L);
    lua_replace(L, slot);
  }
  return slot;
}

/* Gives the table or function at idx the next reference number. */
static int new_ref(enc *e, int idx) {
  lua_State *L = e->L;
  lua_pushvalue(L, idx);
  lua_pushinteger(L, e->nrefs);
  lua_rawset(L, scratch(L, e->cache));
  return e->nrefs++;
}

static int encode_value(enc *e, int idx);
static int encode_object(enc *e, int idx);

static int encode_table(enc *e, int idx) {
  lua_State *L = e->L;
  put_byte(e, T_TABLE);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int k = lua_gettop(L) - 1;
    segment *s = &e->path[e->depth];
    s->kind = 'k';
    if (encode_value(e, k) != 0)
      return -1;
    if (lua_type(L, k) == LUA_TSTRING) {
      s->kind = 'f';
      s->s = lua_tolstring(L, k, &s->len);
    } else if (lua_isinteger(L, k)) {
      s->kind = 'i';
      s->i = lua_tointeger(L, k);
    } else if (lua_type(L, k) == LUA_TBOOLEAN) {
      s->kind = 'b';
      s->i = lua_toboolean(L, k);
    } else if (lua_type(L, k) == LUA_TNUMBER) {
      s->kind = 'd';
      s->d = lua_tonumber(L, k);
    } else {
      s->kind = 'v';
      s->s = luaL_typename(L, k);
    }
    if (encode_value(e, k + 1) != 0)
      return -1;
    lua_pop(L, 1);
  }
  put_byte(e, T_END);
  return 0;
}

typedef struct dump_state {
  int init;
  luaL_Buffer b;
} dump_state;

/* As in string.dump: the buffer starts once lua_dump has read the function
 * on the top of the stack. */
static int dump_writer(lua_State *L, const void *p, size_t n, void *ud) {
  dump_state *d = ud;
  if (!d->init) {
    d->init = 1;
    luaL_buffinit(L, &d->b);
  }
  luaL_addlstring(&d->b, p, n);
  return 0;
}

/* Pushes the bytecode of the function at idx, behind an 8-byte hash of it
 * that the decoder's function cache keys on (cached per function). */
static void push_bytecode(enc *e, int idx) {
  lua_State *L = e->L;
  lua_pushvalue(L, idx);
  if (lua_rawget(L, e->dumps) == LUA_TSTRING)
    return;
  lua_pop(L, 1);
  dump_state d;
  d.init = 0;
  lua_pushvalue(L, idx);
  lua_dump(L, dump_writer, &d, 0); /* keep debug info: tracebacks name lines */
  if (!d.init)
    luaL_buffinit(L, &d.b);
  luaL_pushresult(&d.b);
  lua_remove(L, -2);
  size_t len;
  const char *code = lua_tolstring(L, -1, &len);
  uint64_t h = jq_hash64(code, len);
  luaL_Buffer b;
  char *out = luaL_buffinitsize(L, &b, len + sizeof h);
  memcpy(out, &h, sizeof h);
  memcpy(out + sizeof h, code, len);
  luaL_pushresultsize(&b, len + sizeof h);
  lua_remove(L, -2);
  lua_pushvalue(L, idx);
  lua_pushvalue(L, -2);
  lua_rawset(L, e->dumps);
}

static int encode_function(enc *e, int idx) {
  lua_State *L = e->L;
  int nups = 0, shareable = 1;
  const char *name;
  while ((name = lua_getupvalue(L, idx, nups + 1)) != NULL) {
    if (!lua_rawequal(L, -1, e->globals) && strcmp(name, "_ENV") != 0)
      shareable = 0;
    lua_pop(L, 1);
    nups++;
  }
  /* A function that sees nothing but globals cannot be part of a cycle, and
   * the decoder hands out one closure per bytecode for it: no reference. */
  int ref = shareable ? -1 : new_ref(e, idx);
  if (nups > 255)
    return fail(e, "function has more than 255 upvalues");
  push_bytecode(e, idx);
  size_t len;
  const char *code = lua_tolstring(L, -1, &len);
  put_byte(e, T_LUAFN);
  put_str(e, code, len);
  lua_pop(L, 1);
  put_byte(e, (char)nups);
  put_byte(e, (char)shareable);
  for (int i = 1; i <= nups; i++) {
    segment *s = &e->path[e->depth];
    s->kind = 'u';
    s->s = lua_getupvalue(L, idx, i);
    int globals = lua_rawequal(L, -1, e->globals) || (s->s && strcmp(s->s, "_ENV") == 0);
    lua_pop(L, 1);
    if (globals) { /* a job sees the globals of where it runs */
      put_byte(e, T_GLOBALS);
      continue;
    }
    void *id = lua_upvalueid(L, idx, i);
    lua_pushlightuserdata(L, id);
    if (lua_rawget(L, scratch(L, e->upvals)) == LUA_TNUMBER) { /* shared with an earlier closure */
      lua_Integer where = lua_tointeger(L, -1);
      lua_pop(L, 1);
      put_byte(e, T_JOIN);
      put_u64(e, (uint64_t)where);
      continue;
    }
    lua_pop(L, 1);
    lua_pushlightuserdata(L, id);
    lua_pushinteger(L, (lua_Integer)ref * 256 + i);
    lua_rawset(L, e->upvals);
    lua_getupvalue(L, idx, i);
    if (encode_value(e, lua_gettop(L)) != 0)
      return -1;
    lua_pop(L, 1);
  }
  return 0;
}

/* A handle travels as its object, which the buffer holds a reference to;
 * any other userdata is refused, by what the user calls it. */
static int encode_handle(enc *e, int idx) {
  lua_State *L = e->L;
  const jq_handle_ops *ops = e->ops;
  void *obj = ops ? ops->from_value(L, idx) : NULL;
  if (!obj) {
    const char *hint = NULL;
    int returned = e->dest[0] == 'r'; /* "returned to the caller" */
    const char *what = ops && ops->refused ? ops->refused(L, idx, returned, &hint) : NULL;
    if (what && hint)
      return failf(e, "%s cannot be %s (%s)", what, e->dest, hint);
    return failf(e, "%s cannot be %s", what ? what : "userdata", e->dest);
  }
  jq_buf *b = e->b;
  if (jq_array_push((void **)&b->handles, &b->nhandles, &b->caphandles, sizeof obj, &obj) != 0) {
    e->oom = 1;
    return 0;
  }
  ops->ref(obj);
  put_byte(e, T_HANDLE);
  put_u64(e, (uint64_t)(b->nhandles - 1));
  return 0;
}

static int encode_value(enc *e, int idx) {
  lua_State *L = e->L;
  if (!lua_checkstack(L, 12))
    return fail(e, "out of Lua stack space");
  switch (lua_type(L, idx)) {
  case LUA_TNIL:
    put_byte(e, T_NIL);
    return 0;
  case LUA_TBOOLEAN:
    put_byte(e, lua_toboolean(L, idx) ? T_TRUE : T_FALSE);
    return 0;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      put_byte(e, T_INT);
      put_u64(e, (uint64_t)lua_tointeger(L, idx));
    } else {
      lua_Number d = lua_tonumber(L, idx);
      put_byte(e, T_FLOAT);
      put(e, &d, sizeof d);
    }
    return 0;
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    put_byte(e, T_STRING);
    put_str(e, s, len);
    return 0;
  }
  case LUA_TTABLE:
  case LUA_TFUNCTION:
    return encode_object(e, idx);
  case LUA_TUSERDATA:
    return encode_handle(e, idx);
  case LUA_TTHREAD:
    return failf(e, "a coroutine cannot be %s", e->dest);
  default:
    return failf(e, "%s cannot be %s", luaL_typename(L, idx), e->dest);
  }
}

/* Tables and functions: by reference if seen, by name if a module's, else
 * whole (one level deeper on the path). */
static int encode_object(enc *e, int idx) {
  lua_State *L = e->L;
  if (lua_rawequal(L, idx, e->globals)) {
    put_byte(e, T_GLOBALS);
    return 0;
  }
  if (!lua_isnil(L, e->cache)) {
    lua_pushvalue(L, idx);
    if (lua_rawget(L, e->cache) == LUA_TNUMBER) {
      put_byte(e, T_REF);
      put_u64(e, (uint64_t)lua_tointeger(L, -1));
      lua_pop(L, 1);
      return 0;
    }
    lua_pop(L, 1);
  }
  int is_c = lua_iscfunction(L, idx);
  int is_lua_fn = !is_c && lua_type(L, idx) == LUA_TFUNCTION; /* never a module member by name */
  if (!is_lua_fn && (lookup_name(e, idx, 0) || (is_c && lookup_name(e, idx, 1)))) {
    size_t len;
    const char *name = lua_tolstring(L, -1, &len);
    put_byte(e, is_c ? T_CFN : T_MODULE);
    put_str(e, name, len);
    lua_pop(L, 1);
    return 0;
  }
  if (is_c)
    return failf(e, "a C function cannot be %s (only those of loaded modules can)", e->dest);
  if (e->depth >= JQ_CODEC_DEPTH)
    return fail(e, "tables or functions nested too deeply");
  e->depth++;
  e->path[e->depth].kind = 0;
  int rc;
  if (lua_type(L, idx) == LUA_TFUNCTION) {
    rc = encode_function(e, idx);
  } else {
    new_ref(e, idx);
    rc = encode_table(e, idx);
  }
  if (rc == 0)
    e->depth--;
  return rc;
}

static int encode_all(lua_State *L, int first, int n, jq_buf *out, const char *label, int number,
                      const jq_handle_ops *ops, char *err, size_t errlen, int *old_names) {
  enc e; /* not zeroed whole: path[] is written before it is read */
  e.nrefs = 0;
  e.oom = 0;
  e.old_names = 0;
  e.depth = 0;
  e.L = L;
  e.b = out;
  e.ops = ops;
  out->ops = ops;
  e.label = label;
  /* Results and errors go back to whoever waits; the rest to a worker. */
  e.dest = strcmp(label, "result") == 0 || strcmp(label, "error") == 0 ? "returned to the caller"
                                                                       : "sent to a worker";
  e.err = err;
  e.errlen = errlen;
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 16)) {
    snprintf(err, errlen, "out of Lua stack space");
    return -1;
  }
  lua_pushnil(L);
  e.cache = lua_gettop(L);
  lua_pushnil(L);
  e.upvals = lua_gettop(L);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &DUMPS_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &DUMPS_KEY);
  }
  e.dumps = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  e.globals = lua_gettop(L);
  lua_pushnil(L); /* the names table goes here when first needed */
  e.names = lua_gettop(L);
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    e.depth = 0;
    e.path[0].kind = 'a';
    e.path[0].i = number + i;
    rc = encode_value(&e, first + i);
  }
  lua_settop(L, top);
  *old_names = e.old_names && !e.oom; /* out of memory: no second try */
  if (rc == 0 && e.oom) {
    snprintf(err, errlen, "out of memory");
    rc = -1;
  }
  if (rc != 0) {
    jq_buf_free(out); /* leaves it empty and unborrowed */
    return -1;
  }
  out->nvalues = n;
  return 0;
}

/* jq_encode's arguments, for encode_protected. */
typedef struct encode_call {
  int n;
  jq_buf *out;
  const char *label;
  int number;
  const jq_handle_ops *ops;
  char *err;
  size_t errlen;
  int rc;
} encode_call;

/* Encodes its arguments 2..n+1 (argument 1: the encode_call). Runs
 * protected: a memory error raised by the Lua API unwinds to jq_encode,
 * which frees the buffer. */
static int encode_protected(lua_State *L) {
  encode_call *c = lua_touserdata(L, 1);
  int old_names;
  c->rc = encode_all(L, 2, c->n, c->out, c->label, c->number, c->ops, c->err, c->errlen,
                     &old_names);
  if (c->rc == 0 || !old_names)
    return 0;
  /* The name cache predates this send, and so may a module's (re)loading,
   * which made the module's table look like any other (the cache is made
   * again at a C function it does not know, but by then such a table is
   * being copied): try once more with a cache made first, before refusing. */
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &NAMES_KEY);
  c->rc = encode_all(L, 2, c->n, c->out, c->label, c->number, c->ops, c->err, c->errlen,
                     &old_names);
  return 0;
}

int jq_encode(lua_State *L, int first, int n, jq_buf *out, const char *label, int number,
              const jq_handle_ops *ops, char *err, size_t errlen) {
  encode_call c = {n, out, label, number, ops, err, errlen, -1};
  first = lua_absindex(L, first);
  if (!lua_checkstack(L, n + 2)) { /* (fails without raising) */
    snprintf(err, errlen, n > 1000 ? "out of Lua stack space" : "not enough memory");
    return -1;
  }
  lua_pushcfunction(L, encode_protected);
  lua_pushlightuserdata(L, &c);
  for (int i = 0; i < n; i++)
    lua_pushvalue(L, first + i);
  int status = lua_pcall(L, n + 1, 0, 0);
  if (status != LUA_OK) { /* out of memory (nothing else raises there) */
    snprintf(err, errlen, "%s", lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1)
                                                                : "not enough memory");
    lua_pop(L, 1);
    jq_buf_free(out);
    return -1;
  }
  return c.rc;
}

/* ---- decoding ---- */

typedef struct dec {
  lua_State *L;
  const jq_buf *b;
  const char *p, *end;
  int refs;  /* stack index: reference number -> value */
  int nrefs;
  int cache; /* stack index: hash -> shareable loaded function; [-hash] its bytecode */
} dec;

static uint64_t get_u64(dec *d) {
  uint64_t v;
  memcpy(&v, d->p, sizeof v);
  d->p += sizeof v;
  return v;
}

static void add_ref(dec *d, int idx) {
  lua_pushvalue(d->L, idx);
  lua_rawseti(d->L, d->refs, ++d->nrefs);
}

/* Pushes package.loaded[name], requiring it if need be. */
static void push_module(lua_State *L, const char *name, size_t len) {
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushlstring(L, name, len);
  if (lua_rawget(L, -2) == LUA_TNIL) {
    lua_pop(L, 1);
    lua_getglobal(L, "require");
    if (!lua_isfunction(L, -1))
      luaL_error(L, "cannot load module '%s' here: no require", name);
    lua_pushlstring(L, name, len);
    lua_call(L, 1, 1);
  }
  lua_remove(L, -2);
}

static void decode_value(dec *d);

/* The cached function for this hash, if its bytecode is this one. */
static int cached_function(dec *d, lua_Integer key, const char *code, size_t len) {
  lua_State *L = d->L;
  if (lua_rawgeti(L, d->cache, key) != LUA_TFUNCTION) {
    lua_pop(L, 1);
    return 0;
  }
  size_t n;
  lua_rawgeti(L, d->cache, -key);
  const char *s = lua_tolstring(L, -1, &n);
  int same = s && n == len && memcmp(s, code, len) == 0;
  lua_pop(L, same ? 1 : 2);
  return same;
}

static void decode_function(dec *d) {
  lua_State *L = d->L;
  size_t len = (size_t)get_u64(d) - sizeof(uint64_t);
  uint64_t hash = get_u64(d);
  lua_Integer key = (lua_Integer)(hash >> 2) + 2; /* > 1: [1] counts entries */
  const char *code = d->p;
  d->p += len;
  int nups = (unsigned char)*d->p++;
  int shareable = *d->p++;
  if (shareable && cached_function(d, key, code, len)) {
    d->p += nups; /* its upvalues are all T_GLOBALS records */
    return;
  }
  if (luaL_loadbufferx(L, code, len, "=job", "b") != LUA_OK)
    lua_error(L);
  int f = lua_gettop(L);
  if (!shareable)
    add_ref(d, f);
  for (int i = 1; i <= nups; i++) {
    if (*d->p == T_JOIN) {
      d->p++;
      uint64_t where = get_u64(d);
      lua_rawgeti(L, d->refs, (lua_Integer)(where / 256) + 1);
      lua_upvaluejoin(L, f, i, -1, (int)(where % 256));
      lua_pop(L, 1);
    } else {
      decode_value(d);
      lua_setupvalue(L, f, i);
    }
  }
  if (shareable) {
    lua_pushvalue(L, f);
    lua_rawseti(L, d->cache, key);
    lua_pushlstring(L, code, len);
    lua_rawseti(L, d->cache, -key);
    lua_rawgeti(L, d->cache, 1); /* [1] counts the entries */
    lua_pushinteger(L, lua_tointeger(L, -1) + 1);
    lua_rawseti(L, d->cache, 1);
    lua_pop(L, 1);
  }
}

static void decode_value(dec *d) {
  lua_State *L = d->L;
  luaL_checkstack(L, 8, "values nested too deeply");
  char tag = *d->p++;
  switch (tag) {
  case T_NIL: lua_pushnil(L); break;
  case T_FALSE: lua_pushboolean(L, 0); break;
  case T_TRUE: lua_pushboolean(L, 1); break;
  case T_INT: lua_pushinteger(L, (lua_Integer)get_u64(d)); break;
  case T_FLOAT: {
    lua_Number v;
    memcpy(&v, d->p, sizeof v);
    d->p += sizeof v;
    lua_pushnumber(L, v);
    break;
  }
  case T_STRING: {
    size_t len = (size_t)get_u64(d);
    lua_pushlstring(L, d->p, len);
    d->p += len;
    break;
  }
  case T_TABLE:
    lua_newtable(L);
    add_ref(d, -1);
    while (*d->p != T_END) {
      decode_value(d);
      decode_value(d);
      lua_rawset(L, -3);
    }
    d->p++;
    break;
  case T_REF: lua_rawgeti(L, d->refs, (lua_Integer)get_u64(d) + 1); break;
  case T_LUAFN: decode_function(d); break;
  case T_GLOBALS: lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS); break;
  case T_HANDLE: d->b->ops->push(L, d->b->handles[get_u64(d)]); break;
  case T_MODULE: {
    size_t len = (size_t)get_u64(d);
    push_module(L, d->p, len);
    d->p += len;
    break;
  }
  case T_CFN: {
    size_t len = (size_t)get_u64(d);
    const char *name = d->p;
    d->p += len;
    size_t mlen = strlen(name); /* "module\0field" */
    push_module(L, name, mlen);
    lua_pushlstring(L, name + mlen + 1, len - mlen - 1);
    if (!lua_istable(L, -2) || lua_rawget(L, -2) != LUA_TFUNCTION)
      luaL_error(L, "C function '%s.%s' is not available here", name, name + mlen + 1);
    lua_remove(L, -2);
    break;
  }
  default:
    luaL_error(L, "corrupt value record (tag %d)", tag);
  }
}

int jq_decode(lua_State *L, const jq_buf *b) {
  dec d;
  d.L = L;
  d.b = b;
  d.p = b->data;
  d.end = b->data + b->len;
  d.nrefs = 0;
  luaL_checkstack(L, b->nvalues + 8, "too many values");
  /* Borrow the reusable reference table (a decode nested inside a require
   * that this decode triggered finds none and makes its own). */
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &REFS_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
  }
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &REFS_KEY);
  d.refs = lua_gettop(L);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &LOADED_FN_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &LOADED_FN_KEY);
  }
  d.cache = lua_gettop(L);
  lua_rawgeti(L, d.cache, 1);
  lua_Integer cached = lua_tointeger(L, -1);
  lua_pop(L, 1);
  if (cached > JQ_FUNCTION_CACHE) { /* bounded: start afresh */
    lua_newtable(L);
    lua_replace(L, d.cache);
    lua_pushvalue(L, d.cache);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &LOADED_FN_KEY);
  }
  for (int i = 0; i < b->nvalues; i++)
    decode_value(&d);
  for (int i = 1; i <= d.nrefs; i++) { /* empty it for the next decode */
    lua_pushnil(L);
    lua_rawseti(L, d.refs, i);
  }
  lua_pushvalue(L, d.refs);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &REFS_KEY); /* give it back */
  lua_remove(L, d.cache);
  lua_remove(L, d.refs);
  return b->nvalues;
}
