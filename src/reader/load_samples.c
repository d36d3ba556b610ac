/*
 * load_samples.c - a trace's CPU samples read into the model: its
 * "stackFrames" object (a prefix tree of call paths, ids as strings) into
 * model.frames, renumbered so that each frame comes after its parent, and
 * its "samples" array into the model's sample_* columns (C cells, native
 * until Lua reads them, as the events' are), whichever of the two keys
 * comes first in the file. A sample the model cannot hold (an unknown sf,
 * a frame below a parent that is not in the file or nested deeper than
 * JQ_FRAME_DEPTH, a field of the wrong type) is skipped and counted under
 * its reason; a loop among the frames' parents makes the file unreadable.
 * No recursion: the frames are numbered through an explicit stack, a loop
 * found by walking the parents of the frames left unnumbered.
 * Owns: nothing (the frames' working memory is a scratch userdata's).
 * Must not: be used by the record path. Thread safety: one lua_State per
 * load.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/columns.h"
#include "reader/load.h"
#include "reader/reader.h"
#include "reader/sort.h"

#define JQ_FRAME_DEPTH 10000 /* a frame deeper than this is no frame of the model */

enum { F_DEEP = -1, F_ORPHAN = -2 }; /* a frame's code: its number (> 0), or why it has none */

/* ---- an object's members ---- */

/* Whether the key s[at..end) (quotes included; esc: it has escapes) is
 * `word` (len bytes). */
static int key_eq(loader *ld, size_t at, size_t end, int esc, const char *word, size_t len) {
  if (!esc)
    return end - at - 2 == len && memcmp(ld->t.s + at + 1, word, len) == 0;
  size_t n;
  jq_push_string(ld->L, &ld->t, at, end, 1);
  const char *p = lua_tolstring(ld->L, -1, &n);
  int same = n == len && memcmp(p, word, len) == 0;
  lua_pop(ld->L, 1);
  return same;
}

/* The members of the object at s[i] ('{'; depth0 containers open around
 * its values): the value of the key keys[k] into out[k] (V_NONE when
 * absent; the last one when a key comes twice), others skipped (checked).
 * One past the object, or 0 and an error. */
static size_t read_object(loader *ld, size_t i, const char *const *keys, int nkeys, val *out, int depth0) {
  jq_src *t = &ld->t;
  for (int k = 0; k < nkeys; k++)
    out[k].kind = V_NONE;
  if (depth0 > JQ_LOAD_MAX_DEPTH)
    return jq_scan_fail(t, i, "nested too deep");
  i = ws(t, i + 1);
  if (i < t->n && t->s[i] == '}')
    return i + 1;
  for (;;) {
    int esc;
    size_t at = i < t->n && t->s[i] == '"' ? i : NONE;
    size_t end = at != NONE ? jq_scan_string(t, at, &esc) : jq_scan_fail(t, i, "expected a string key");
    if (!end)
      return 0;
    i = ws(t, end);
    if (i >= t->n || t->s[i] != ':')
      return jq_scan_fail(t, i, "expected ':' after a key");
    val skip, *slot = &skip;
    for (int k = 0; k < nkeys; k++)
      if (key_eq(ld, at, end, esc, keys[k], strlen(keys[k])))
        slot = &out[k];
    if (!(i = jq_read_value(t, i + 1, slot, depth0)))
      return 0;
    i = ws(t, i);
    if (i < t->n && t->s[i] == ',') {
      i = ws(t, i + 1);
      continue;
    }
    if (i < t->n && t->s[i] == '}')
      return i + 1;
    return jq_scan_fail(t, i, "expected ',' or '}'");
  }
}

/* The string index of an id: a string's (escapes decoded), an integer's
 * decimal text; 0 for any other value. */
static uint32_t id_index(loader *ld, const val *v) {
  if (v->kind == V_STR)
    return jq_intern_val(ld, v);
  if (v->kind == V_INT) {
    char b[24];
    int n = snprintf(b, sizeof b, "%lld", (long long)v->i);
    return jq_intern(ld, b, (size_t)n);
  }
  return 0;
}

/* ---- the frames ---- */

typedef struct frame {
  uint32_t id, name, cat; /* string indexes (name, cat: 0 when the file gives none) */
  uint32_t parent_id;     /* the parent's id's string index; 0: a root */
  uint32_t parent;        /* the parent's place + 1 (0: a root, or a parent not in the file) */
  int32_t code;           /* its number (> 0), F_DEEP, F_ORPHAN; 0: none yet */
  uint32_t depth;
  int bad_parent; /* a parent that is neither an id nor null */
  int seen;       /* the numbering met it in file order (2: the loop walk) */
} frame;

enum { B_FRAMES, B_PLACE, B_FIRST, B_KIDS, B_STACK, NBUF };

typedef struct frames {
  jq_scratch *s;
  frame *f;
  size_t n;
  uint32_t *place; /* a string index -> its frame's place + 1 (0: no frame) */
  size_t nplace;
  int32_t next; /* the last number given */
} frames;

/* One entry of stackFrames: its id at s[at..end), its value v. */
static size_t add_frame(loader *ld, frames *fs, size_t at, size_t end, int esc, size_t i) {
  static const char *const keys[] = {"name", "category", "parent"};
  val v, m[3];
  size_t next = jq_read_value(&ld->t, i, &v, 1);
  if (!next || v.kind != V_OBJ)
    return next;
  if (!read_object(ld, v.at, keys, 3, m, 2))
    return 0;
  val id = {.kind = V_STR, .esc = esc, .at = at, .end = end};
  frame f = {.id = jq_intern_val(ld, &id)};
  f.name = m[0].kind == V_STR ? jq_intern_val(ld, &m[0]) : 0;
  f.cat = m[1].kind == V_STR ? jq_intern_val(ld, &m[1]) : 0;
  f.parent_id = id_index(ld, &m[2]);
  f.bad_parent = !f.parent_id && m[2].kind != V_NONE && m[2].kind != V_NULL;
  if (fs->nplace <= f.id) {
    fs->place = jq_scratch_room(ld->L, &fs->s->b[B_PLACE], f.id + 1, sizeof *fs->place);
    memset(fs->place + fs->nplace, 0, (f.id + 1 - fs->nplace) * sizeof *fs->place);
    fs->nplace = f.id + 1;
  }
  uint32_t *place = fs->place;
  if (place[f.id]) { /* an id given twice: the last one says */
    fs->f[place[f.id] - 1] = f;
    return next;
  }
  fs->f = jq_scratch_room(ld->L, &fs->s->b[B_FRAMES], fs->n + 1, sizeof *fs->f);
  fs->f[fs->n++] = f;
  place[f.id] = (uint32_t)fs->n;
  return next;
}

/* The stackFrames object at s[i] read into fs->f, in file order: 1, or 0
 * and an error. */
static int read_frames(loader *ld, frames *fs, size_t i) {
  jq_src *t = &ld->t;
  i = ws(t, i + 1);
  if (i < t->n && t->s[i] == '}')
    return 1;
  for (;;) {
    int esc;
    size_t at = i, end = i < t->n && t->s[i] == '"' ? jq_scan_string(t, i, &esc) : jq_scan_fail(t, i, "expected a string key");
    if (!end)
      return 0;
    i = ws(t, end);
    if (i >= t->n || t->s[i] != ':')
      return (int)jq_scan_fail(t, i, "expected ':' after a key");
    if (!(i = add_frame(ld, fs, at, end, esc, i + 1)))
      return 0;
    i = ws(t, i);
    if (i < t->n && t->s[i] == ',') {
      i = ws(t, i + 1);
      continue;
    }
    if (i < t->n && t->s[i] == '}')
      return 1;
    return (int)jq_scan_fail(t, i, "expected ',' or '}'");
  }
}

/* Frame x's code from its parent's (the parent has one): a number, or
 * F_DEEP below JQ_FRAME_DEPTH, or F_ORPHAN below a parent not in the file. */
static void settle(frames *fs, frame *x) {
  if (x->bad_parent || (x->parent_id && !x->parent)) {
    x->code = F_ORPHAN;
    return;
  }
  const frame *p = x->parent ? &fs->f[x->parent - 1] : NULL;
  x->depth = p ? p->depth + 1 : 1;
  if (p && p->code < 0)
    x->code = p->code;
  else if (x->depth > JQ_FRAME_DEPTH)
    x->code = F_DEEP;
  else
    x->code = ++fs->next;
}

/* The frames numbered: in file order, each once its parent has a number
 * (a frame met before its parent is numbered right after it, with the
 * frames below it, depth first in file order), through an explicit stack. */
static void number_frames(lua_State *L, frames *fs) {
  size_t n = fs->n;
  uint32_t *first = jq_scratch_room(L, &fs->s->b[B_FIRST], n + 2, sizeof *first);
  uint32_t *kids = jq_scratch_room(L, &fs->s->b[B_KIDS], n + 1, sizeof *kids);
  uint32_t *stack = jq_scratch_room(L, &fs->s->b[B_STACK], n + 1, sizeof *stack);
  memset(first, 0, (n + 2) * sizeof *first);
  for (size_t k = 0; k < n; k++) {
    frame *x = &fs->f[k];
    x->parent = x->parent_id && x->parent_id < fs->nplace ? fs->place[x->parent_id] : 0;
    first[x->parent + 1]++; /* children lists, by the parent's place + 1 (0: none) */
  }
  for (size_t k = 1; k <= n + 1; k++)
    first[k] += first[k - 1];
  for (size_t k = 0; k < n; k++) /* first[p] moves to the end of p's list, then back */
    kids[first[fs->f[k].parent]++] = (uint32_t)k;
  for (size_t k = n + 1; k > 0; k--)
    first[k] = first[k - 1];
  first[0] = 0;
  for (size_t k = 0; k < n; k++) {
    frame *x = &fs->f[k];
    x->seen = 1;
    if (x->code || (x->parent && !fs->f[x->parent - 1].code))
      continue;
    size_t top = 0;
    stack[top++] = (uint32_t)k;
    while (top > 0) {
      uint32_t j = stack[--top];
      settle(fs, &fs->f[j]);
      for (uint32_t c = first[j + 2]; c > first[j + 1]; c--) { /* j's children: list j + 1 */
        frame *y = &fs->f[kids[c - 1]];
        if (y->seen && !y->code)
          stack[top++] = kids[c - 1];
      }
    }
  }
}

/* A frame left without a code is on a loop of parents or below one: the
 * first of them in file order, its parents walked until one comes again
 * (that one is on the loop). 1, or 0 with nil and the message pushed. */
static int find_loop(loader *ld, frames *fs) {
  for (size_t k = 0; k < fs->n; k++) {
    if (fs->f[k].code)
      continue;
    frame *x = &fs->f[k];
    while (x->seen != 2) {
      x->seen = 2;
      x = &fs->f[x->parent - 1]; /* a frame with no code has a parent with none */
    }
    luaL_pushfail(ld->L);
    lua_pushliteral(ld->L, "bad \"stackFrames\": the parents of frame \"");
    lua_rawgeti(ld->L, S_STRS, x->id);
    lua_pushliteral(ld->L, "\" loop (it is its own ancestor)");
    lua_concat(ld->L, 3);
    return 0;
  }
  return 1;
}

/* model.frames: {n, name, category, parent, id}, by number. */
static void frames_to_model(loader *ld, const frames *fs) {
  lua_State *L = ld->L;
  int n = fs->next;
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, n);
  lua_setfield(L, -2, "n");
  static const char *const names[] = {"name", "category", "parent", "id"};
  for (int c = 0; c < 4; c++) {
    lua_createtable(L, n, 0);
    for (size_t k = 0; k < fs->n; k++) {
      const frame *x = &fs->f[k];
      if (x->code <= 0)
        continue;
      if (c == 0 && x->name)
        lua_rawgeti(L, S_STRS, x->name);
      else if (c == 0)
        lua_pushliteral(L, "?");
      else if (c == 1 && x->cat)
        lua_rawgeti(L, S_STRS, x->cat);
      else if (c == 1)
        lua_pushboolean(L, 0);
      else if (c == 2)
        lua_pushinteger(L, x->parent ? fs->f[x->parent - 1].code : 0);
      else
        lua_rawgeti(L, S_STRS, x->id);
      lua_rawseti(L, -2, x->code);
    }
    lua_setfield(L, -2, names[c]);
  }
  lua_setfield(L, S_MODEL, "frames");
}

/* ---- the samples ---- */

/* Counts a sample skipped under `why` (in order of first appearance). */
static void skip_sample(loader *ld, const char *why) {
  int k = 0;
  while (k < SAMPLE_REASONS && ld->skip_why[k] && ld->skip_why[k] != why)
    k++;
  if (k == SAMPLE_REASONS)
    k--; /* more reasons than there are: cannot be, the reasons are this file's literals */
  ld->skip_why[k] = why;
  ld->skip_n[k]++;
  ld->nskipped++;
}

/* An id of a sample's args (job, span, line): the integer (an integral
 * float too), false when absent or null; 0 when it is no integer. */
static int opt_int(lua_State *L, cells *c, const val *v, int put) {
  if (v->kind == V_NONE || v->kind == V_NULL) {
    if (put)
      col_put(L, c, T_FALSE, 0);
    return 1;
  }
  int64_t i = v->i;
  if (v->kind == V_FLT) {
    if (!(v->d >= -9.2e18 && v->d <= 9.2e18) || v->d != floor(v->d))
      return 0;
    i = (int64_t)v->d;
  } else if (v->kind != V_INT) {
    return 0;
  }
  if (put)
    put_i(L, c, i);
  return 1;
}

typedef struct sample_ctx {
  frames *fs;
  size_t sf_at, sf_len; /* the last sf's bytes, and its code */
  int32_t sf_code;
  size_t name_at, name_len; /* the last name's bytes, and its string */
  uint32_t name;
} sample_ctx;

/* The code of a sample's sf: a frame's number, F_DEEP, F_ORPHAN, or 0
 * (no such frame). */
static int32_t sf_code(loader *ld, sample_ctx *cx, const val *sf) {
  size_t len = sf->end - sf->at;
  if (len == cx->sf_len && memcmp(ld->t.s + sf->at, ld->t.s + cx->sf_at, len) == 0)
    return cx->sf_code;
  uint32_t idx = id_index(ld, sf);
  const frames *fs = cx->fs;
  uint32_t place = idx < fs->nplace ? fs->place[idx] : 0;
  cx->sf_at = sf->at, cx->sf_len = len;
  return cx->sf_code = place ? fs->f[place - 1].code : 0;
}

/* Why the sample whose members are m (ts tid pid sf weight name, and its
 * args' job span line) cannot be read, or NULL; *code: its sf's. */
static const char *bad_sample(loader *ld, sample_ctx *cx, val *m, int32_t *code) {
  if (m[0].kind == V_NONE)
    return "no ts";
  if (!is_num(&m[0]))
    return "ts is not a number";
  if (ld->ours)
    ns_time(&m[0]);
  if (!(m[0].d >= -MAX_US && m[0].d <= MAX_US))
    return "ts out of range";
  if ((m[1].kind != V_NONE && !is_num(&m[1])) || (m[2].kind != V_NONE && !is_num(&m[2])))
    return "tid is not a number";
  if (m[3].kind == V_NONE)
    return "no sf";
  if (m[3].kind != V_STR && m[3].kind != V_INT)
    return "sf is not a string";
  if ((*code = sf_code(ld, cx, &m[3])) == 0)
    return "unknown sf";
  if (*code == F_DEEP)
    return "sf nests deeper than 10000";
  if (*code == F_ORPHAN)
    return "unknown parent";
  if (m[4].kind != V_NONE && !is_num(&m[4]))
    return "weight is not a number";
  if (m[4].kind != V_NONE && !(m[4].d >= 0))
    return "weight is negative";
  if (m[4].kind == V_FLT && m[4].d > 1e300)
    return "weight is not finite";
  if (m[5].kind != V_NONE && m[5].kind != V_STR)
    return "name is not a string";
  if (!opt_int(ld->L, NULL, &m[7], 0))
    return "job is not an integer";
  if (!opt_int(ld->L, NULL, &m[8], 0))
    return "span is not an integer";
  if (!opt_int(ld->L, NULL, &m[9], 0))
    return "line is not an integer";
  return NULL;
}

/* A sample read (its members m, its sf's code) into the columns. */
static void put_sample(loader *ld, sample_ctx *cx, const val *m, int32_t code) {
  lua_State *L = ld->L;
  static const val pid1 = {.kind = V_INT, .i = 1, .d = 1};
  double ts = m[0].d;
  put_d(L, &ld->smp[0], ts);
  col_put(L, &ld->smp[1], T_LANE, jq_use_lane(ld, m[2].kind != V_NONE ? &m[2] : &pid1, &m[1]));
  put_i(L, &ld->smp[2], code);
  if (m[4].kind == V_FLT)
    put_d(L, &ld->smp[3], m[4].d);
  else
    put_i(L, &ld->smp[3], m[4].kind == V_INT ? m[4].i : 1);
  if (m[5].kind != V_STR) {
    col_put(L, &ld->smp[4], T_STR, jq_intern(ld, "no category", 11));
  } else {
    size_t len = m[5].end - m[5].at;
    if (!(cx->name && len == cx->name_len && memcmp(ld->t.s + m[5].at, ld->t.s + cx->name_at, len) == 0)) {
      cx->name = jq_intern_val(ld, &m[5]);
      cx->name_at = m[5].at, cx->name_len = len;
    }
    col_put(L, &ld->smp[4], T_STR, cx->name);
  }
  for (int k = 0; k < 3; k++)
    opt_int(L, &ld->smp[5 + k], &m[7 + k], 1);
  if (ts < ld->t0)
    ld->t0 = ts;
  if (ts > ld->t1)
    ld->t1 = ts;
  ld->nsamples++;
}

/* One element of the samples array, at s[i]: one past it, or 0 and an
 * error. */
static size_t one_sample(loader *ld, sample_ctx *cx, size_t i) {
  static const char *const keys[] = {"ts", "tid", "pid", "sf", "weight", "name", "args"};
  static const char *const arg_keys[] = {"job", "span", "line"};
  val m[10];
  size_t end;
  if (ld->t.s[i] != '{') {
    if ((end = jq_read_value(&ld->t, i, &m[0], 1)))
      skip_sample(ld, "not an object");
    return end;
  }
  if (!(end = read_object(ld, i, keys, 7, m, 2)))
    return 0;
  if (m[6].kind == V_OBJ) {
    if (!read_object(ld, m[6].at, arg_keys, 3, m + 7, 3))
      return 0;
  } else {
    m[7].kind = m[8].kind = m[9].kind = V_NONE;
  }
  int32_t code = 0;
  const char *why = bad_sample(ld, cx, m, &code);
  if (why)
    skip_sample(ld, why);
  else
    put_sample(ld, cx, m, code);
  return end;
}

/* The samples array at s[i]: 1, or 0 and an error. */
static int read_samples(loader *ld, frames *fs, size_t i) {
  jq_src *t = &ld->t;
  sample_ctx cx = {.fs = fs, .sf_len = (size_t)-1};
  i = ws(t, i + 1);
  if (i < t->n && t->s[i] == ']')
    return 1;
  for (;;) {
    if (i >= t->n)
      return (int)jq_scan_fail(t, i, "unexpected end of the text (a value expected)");
    if (!(i = one_sample(ld, &cx, i)))
      return 0;
    if (i >= t->release_at)
      jq_scan_release(t, i);
    i = ws(t, i);
    if (i < t->n && t->s[i] == ',') {
      i = ws(t, i + 1);
      continue;
    }
    if (i < t->n && t->s[i] == ']')
      return 1;
    return (int)jq_scan_fail(t, i, "expected ',' or ']'");
  }
}

/* model.nsamples, samples_skipped and sample_skips ({why, n}, in order of
 * first appearance). */
static void sample_counts(loader *ld) {
  lua_State *L = ld->L;
  lua_pushinteger(L, ld->nsamples);
  lua_setfield(L, S_MODEL, "nsamples");
  lua_pushinteger(L, ld->nskipped);
  lua_setfield(L, S_MODEL, "samples_skipped");
  lua_newtable(L);
  for (int k = 0; k < SAMPLE_REASONS && ld->skip_why[k]; k++) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, ld->skip_why[k]);
    lua_setfield(L, -2, "why");
    lua_pushinteger(L, ld->skip_n[k]);
    lua_setfield(L, -2, "n");
    lua_rawseti(L, -2, k + 1);
  }
  lua_setfield(L, S_MODEL, "sample_skips");
}

int jq_load_samples(loader *ld, size_t frames_at, size_t samples_at) {
  lua_State *L = ld->L;
  int top = lua_gettop(L);
  frames fs = {.s = jq_scratch_new(L, NBUF)};
  int ok = 1;
  if (frames_at != NONE && ld->t.s[frames_at] == '{') {
    if (!read_frames(ld, &fs, frames_at))
      ok = -1;
    else if (number_frames(L, &fs), !find_loop(ld, &fs)) {
      jq_scratch_free(fs.s);
      return 0; /* nil and the message on the stack */
    } else
      frames_to_model(ld, &fs);
  }
  if (ok > 0 && samples_at != NONE && ld->t.s[samples_at] == '[' && !read_samples(ld, &fs, samples_at))
    ok = -1;
  if (ok > 0)
    sample_counts(ld);
  jq_scratch_free(fs.s);
  lua_settop(L, top);
  return ok;
}

/* ---- the columns by lane, then time ---- */

typedef struct by_lane {
  const jq_column *lane, *ts;
} by_lane;

static int lane_ts_less(void *ctx, uint32_t a, uint32_t b) {
  const by_lane *c = ctx;
  int64_t la = jq_cell_int(c->lane, a), lb = jq_cell_int(c->lane, b);
  return la != lb ? la < lb : jq_cell_num(c->ts, a) < jq_cell_num(c->ts, b);
}

int jq_order_samples(lua_State *L) {
  static const char *const names[] = {"sample_ts",  "sample_lane", "sample_frame", "sample_weight",
                                      "sample_cat", "sample_job",  "sample_span",  "sample_line"};
  jq_column *c[SAMPLE_COLS];
  luaL_checktype(L, 1, LUA_TTABLE);
  for (int k = 0; k < SAMPLE_COLS; k++)
    if (!(c[k] = jq_column_get(L, 1, names[k])) || c[k]->n != c[0]->n)
      return luaL_error(L, "order_samples: the sample columns are not the loader's");
  size_t n = c[0]->n;
  if (n > UINT32_MAX || c[1]->tag || c[1]->tag0 != JQ_C_INT || c[0]->tag || c[0]->tag0 != JQ_C_NUM)
    return luaL_error(L, "order_samples: the sample columns are not the loader's");
  jq_scratch *s = jq_scratch_new(L, 3);
  uint32_t *idx = jq_scratch_room(L, &s->b[0], n, sizeof *idx);
  uint32_t *tmp = jq_scratch_room(L, &s->b[1], n, sizeof *tmp);
  for (size_t k = 0; k < n; k++)
    idx[k] = (uint32_t)k;
  by_lane ctx = {c[1], c[0]};
  jq_sort_stable(idx, tmp, n, lane_ts_less, &ctx);
  size_t moved = 0;
  while (moved < n && idx[moved] == moved)
    moved++;
  if (moved < n) {
    uint64_t *v = jq_scratch_room(L, &s->b[2], n, sizeof *v);
    for (int k = 0; k < SAMPLE_COLS; k++) {
      for (size_t j = 0; j < n; j++)
        v[j] = c[k]->v[idx[j]];
      memcpy(c[k]->v, v, n * sizeof *v);
      if (c[k]->tag) {
        unsigned char *t = (unsigned char *)(void *)v;
        for (size_t j = 0; j < n; j++)
          t[j] = c[k]->tag[idx[j]];
        memcpy(c[k]->tag, t, n);
      }
    }
  }
  jq_scratch_free(s);
  lua_pushboolean(L, 1);
  return 1;
}
