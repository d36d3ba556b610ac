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
#include "reader/scratch.h"
#include "reader/reader.h"
#include "reader/sort.h"

#define JQ_FRAME_DEPTH 10000 /* a frame deeper than this is no frame of the model */
#define JQ_MAX_WEIGHT ((int64_t)1 << 53) /* a sample's weight, and the sum of a file's */

enum { F_DEEP = -1, F_ORPHAN = -2 }; /* a frame's code: its number (> 0), or why it has none */

/* ---- an object's members ---- */

/* Which member a key is: its index among a reader's, or -1. */
typedef int (*slot_fn)(const char *k, size_t len);

static int frame_slot(const char *k, size_t len) {
  return len == 4 && memcmp(k, "name", 4) == 0       ? 0
       : len == 8 && memcmp(k, "category", 8) == 0 ? 1
       : len == 6 && memcmp(k, "parent", 6) == 0   ? 2
                                                    : -1;
}

enum { M_TS, M_TID, M_PID, M_SF, M_WEIGHT, M_NAME, M_ARGS, M_JOB, M_SPAN, M_LINE, NMEM };

static int sample_slot(const char *k, size_t len) {
  switch (len) {
  case 2:
    return k[0] == 't' && k[1] == 's' ? M_TS : k[0] == 's' && k[1] == 'f' ? M_SF : -1;
  case 3:
    return memcmp(k, "tid", 3) == 0 ? M_TID : memcmp(k, "pid", 3) == 0 ? M_PID : -1;
  case 4:
    return memcmp(k, "name", 4) == 0 ? M_NAME : memcmp(k, "args", 4) == 0 ? M_ARGS : -1;
  case 6:
    return memcmp(k, "weight", 6) == 0 ? M_WEIGHT : -1;
  default:
    return -1;
  }
}

static int args_slot(const char *k, size_t len) {
  return len == 3 && memcmp(k, "job", 3) == 0    ? M_JOB
       : len == 4 && memcmp(k, "span", 4) == 0 ? M_SPAN
       : len == 4 && memcmp(k, "line", 4) == 0 ? M_LINE
                                                : -1;
}

/* The slot of the key s[at..end) (quotes included; esc: it has escapes,
 * decoded first). */
static int key_slot(loader *ld, size_t at, size_t end, int esc, slot_fn slot_of) {
  if (!esc)
    return slot_of(ld->t.s + at + 1, end - at - 2);
  size_t n;
  jq_push_string(ld->L, &ld->t, at, end, 1);
  const char *p = lua_tolstring(ld->L, -1, &n);
  int slot = slot_of(p, n);
  lua_pop(ld->L, 1);
  return slot;
}

/* The members of the object at s[i] ('{'; depth0 containers open around
 * its values): the value of a key of slot k into out[k] (the last one when
 * a key comes twice), others skipped (checked). One past the object, or 0
 * and an error. */
static size_t read_object(loader *ld, size_t i, slot_fn slot_of, val *out, int depth0) {
  jq_src *t = &ld->t;
  if (depth0 > JQ_LOAD_MAX_DEPTH)
    return jq_scan_fail(t, i, "nested too deep");
  i = ws(t, i + 1);
  if (i < t->n && t->s[i] == '}')
    return i + 1;
  for (;;) {
    int esc;
    size_t at = i, end = i < t->n && t->s[i] == '"' ? jq_scan_string(t, i, &esc) : jq_scan_fail(t, i, "expected a string key");
    if (!end)
      return 0;
    i = end < t->n && t->s[end] == ':' ? end : ws(t, end);
    if (i >= t->n || t->s[i] != ':')
      return jq_scan_fail(t, i, "expected ':' after a key");
    int k = key_slot(ld, at, end, esc, slot_of);
    val skip;
    if (!(i = jq_read_value(t, i + 1, k >= 0 ? &out[k] : &skip, depth0)))
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

/* The value of a decimal id as our writer writes it (digits, no leading
 * zero, at most 9 of them): 1 and *v, else 0. */
static int decimal_id(const char *p, size_t len, uint32_t *v) {
  if (len == 0 || len > 9 || (p[0] == '0' && len > 1))
    return 0;
  uint32_t x = 0;
  for (size_t k = 0; k < len; k++) {
    if (p[k] < '0' || p[k] > '9')
      return 0;
    x = x * 10 + (uint32_t)(p[k] - '0');
  }
  *v = x;
  return 1;
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

static inline frame *frame_at(loader *ld, size_t k) { return (frame *)(void *)ld->frame_buf.p + k; }

static inline uint32_t *places(loader *ld) { return (uint32_t *)(void *)ld->place_buf.p; }

static inline size_t nplaces(const loader *ld) { return ld->place_buf.n / sizeof(uint32_t); }

void jq_frames_free(loader *ld) {
  jq_vec_free(&ld->frame_buf);
  jq_vec_free(&ld->place_buf);
  jq_vec_free(&ld->num_buf);
}

/* One entry of stackFrames: its id at s[at..end), its value at s[i]. One
 * past the value, or 0 and an error. */
static size_t add_frame(loader *ld, size_t at, size_t end, int esc, size_t i) {
  val v, m[3];
  size_t next = jq_read_value(&ld->t, i, &v, 1);
  if (!next || v.kind != V_OBJ)
    return next;
  m[0].kind = m[1].kind = m[2].kind = V_NONE;
  if (!read_object(ld, v.at, frame_slot, m, 2))
    return 0;
  val id = {.kind = V_STR, .esc = esc, .at = at, .end = end};
  frame f = {.id = jq_intern_val(ld, &id)};
  f.name = m[0].kind == V_STR ? jq_intern_val(ld, &m[0]) : 0;
  f.cat = m[1].kind == V_STR ? jq_intern_val(ld, &m[1]) : 0;
  f.parent_id = id_index(ld, &m[2]);
  f.bad_parent = !f.parent_id && m[2].kind != V_NONE && m[2].kind != V_NULL;
  size_t np = nplaces(ld);
  if (np <= f.id) {
    uint32_t *p = jq_vec_room(&ld->place_buf, (size_t)f.id + 1, sizeof *p);
    if (!p)
      jq_nomem(ld->L);
    memset(p + np, 0, ((size_t)f.id + 1 - np) * sizeof *p);
  }
  uint32_t *place = places(ld);
  if (place[f.id]) { /* an id given twice: the last one says */
    *frame_at(ld, place[f.id] - 1) = f;
    return next;
  }
  if (!jq_vec_push(&ld->frame_buf, &f, sizeof f))
    jq_nomem(ld->L);
  place[f.id] = (uint32_t)++ld->nframes;
  return next;
}

/* The stackFrames object at s[i] read into the frames, in file order: one
 * past it, or 0 and an error. */
static size_t read_frame_list(loader *ld, size_t i) {
  jq_src *t = &ld->t;
  i = ws(t, i + 1);
  if (i < t->n && t->s[i] == '}')
    return i + 1;
  for (;;) {
    int esc;
    size_t at = i, end = i < t->n && t->s[i] == '"' ? jq_scan_string(t, i, &esc) : jq_scan_fail(t, i, "expected a string key");
    if (!end)
      return 0;
    i = ws(t, end);
    if (i >= t->n || t->s[i] != ':')
      return jq_scan_fail(t, i, "expected ':' after a key");
    if (!(i = add_frame(ld, at, end, esc, i + 1)))
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

/* Frame x's code from its parent's (the parent has one): a number, or
 * F_DEEP below JQ_FRAME_DEPTH, or F_ORPHAN below a parent not in the file. */
static void settle(loader *ld, frame *x) {
  if (x->bad_parent || (x->parent_id && !x->parent)) {
    x->code = F_ORPHAN;
    return;
  }
  const frame *p = x->parent ? frame_at(ld, x->parent - 1) : NULL;
  x->depth = p ? p->depth + 1 : 1;
  if (p && p->code < 0)
    x->code = p->code;
  else if (x->depth > JQ_FRAME_DEPTH)
    x->code = F_DEEP;
  else
    x->code = ++ld->nnumbered;
}

/* The frames numbered: in file order, each once its parent has a number
 * (a frame met before its parent is numbered right after it, with the
 * frames below it, depth first in file order), through an explicit stack. */
static void number_frames(loader *ld) {
  lua_State *L = ld->L;
  size_t n = ld->nframes, np = nplaces(ld);
  jq_scratch *s = jq_scratch_new(L, 3);
  uint32_t *first = jq_scratch_room(L, &s->b[0], n + 2, sizeof *first);
  uint32_t *kids = jq_scratch_room(L, &s->b[1], n + 1, sizeof *kids);
  uint32_t *stack = jq_scratch_room(L, &s->b[2], n + 1, sizeof *stack);
  memset(first, 0, (n + 2) * sizeof *first);
  for (size_t k = 0; k < n; k++) {
    frame *x = frame_at(ld, k);
    x->parent = x->parent_id && x->parent_id < np ? places(ld)[x->parent_id] : 0;
    first[x->parent + 1]++; /* children lists, by the parent's place + 1 (0: none) */
  }
  for (size_t k = 1; k <= n + 1; k++)
    first[k] += first[k - 1];
  for (size_t k = 0; k < n; k++) /* first[p] moves to the end of p's list, then back */
    kids[first[frame_at(ld, k)->parent]++] = (uint32_t)k;
  for (size_t k = n + 1; k > 0; k--)
    first[k] = first[k - 1];
  first[0] = 0;
  for (size_t k = 0; k < n; k++) {
    frame *x = frame_at(ld, k);
    x->seen = 1;
    if (x->code || (x->parent && !frame_at(ld, x->parent - 1)->code))
      continue;
    size_t top = 0;
    stack[top++] = (uint32_t)k;
    while (top > 0) {
      uint32_t j = stack[--top];
      settle(ld, frame_at(ld, j));
      for (uint32_t c = first[j + 2]; c > first[j + 1]; c--) { /* j's children: list j + 1 */
        frame *y = frame_at(ld, kids[c - 1]);
        if (y->seen && !y->code)
          stack[top++] = kids[c - 1];
      }
    }
  }
  jq_scratch_free(s);
  lua_pop(L, 1);
}

/* A frame left without a code is on a loop of parents or below one: the
 * first of them in file order, its parents walked until one comes again
 * (that one is on the loop): its id's string index, or 0 (no loop). */
static uint32_t find_loop(loader *ld) {
  for (size_t k = 0; k < ld->nframes; k++) {
    frame *x = frame_at(ld, k);
    if (x->code)
      continue;
    while (x->seen != 2) {
      x->seen = 2;
      x = frame_at(ld, x->parent - 1); /* a frame with no code has a parent with none */
    }
    return x->id;
  }
  return 0;
}

/* The frames' codes by their ids' decimal values, for the ids our writer
 * writes (a bound keeps the array near the frames' count; an id beyond it
 * is looked up by its string). */
static void decimal_codes(loader *ld) {
  size_t bound = 4 * ld->nframes + 1024;
  int32_t *num = jq_vec_room(&ld->num_buf, bound, sizeof *num);
  if (!num)
    jq_nomem(ld->L);
  memset(num, 0, bound * sizeof *num);
  lua_State *L = ld->L;
  for (size_t k = 0; k < ld->nframes; k++) {
    const frame *x = frame_at(ld, k);
    size_t len;
    lua_rawgeti(L, S_STRS, x->id);
    const char *p = lua_tolstring(L, -1, &len);
    uint32_t v;
    if (decimal_id(p, len, &v) && v < bound)
      num[v] = x->code;
    lua_pop(L, 1);
  }
}

size_t jq_read_frames(loader *ld, size_t i) {
  jq_frames_free(ld);
  ld->nframes = 0;
  ld->nnumbered = 0;
  ld->frames_loop = 0;
  ld->frames_read = 1;
  if (ld->t.s[i] != '{') {
    val v;
    ld->frames_read = 2; /* no object: no frames */
    return jq_read_value(&ld->t, i, &v, 0);
  }
  if (!(i = read_frame_list(ld, i)))
    return 0;
  number_frames(ld);
  if (!(ld->frames_loop = find_loop(ld)))
    decimal_codes(ld);
  return i;
}

/* model.frames: {n, name, category, parent, id}, by number. */
static void frames_to_model(loader *ld) {
  lua_State *L = ld->L;
  int n = ld->nnumbered;
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, n);
  lua_setfield(L, -2, "n");
  static const char *const names[] = {"name", "category", "parent", "id"};
  for (int c = 0; c < 4; c++) {
    lua_createtable(L, n, 0);
    for (size_t k = 0; k < ld->nframes; k++) {
      const frame *x = frame_at(ld, k);
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
        lua_pushinteger(L, x->parent ? frame_at(ld, x->parent - 1)->code : 0);
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
  while (k < SAMPLE_REASONS - 1 && ld->skip_why[k] && ld->skip_why[k] != why)
    k++; /* (the reasons are this file's literals, fewer than SAMPLE_REASONS) */
  ld->skip_why[k] = why;
  ld->skip_n[k]++;
  ld->nskipped++;
}

/* An id of a sample's args (job, span, line): 1 when it is an integer (an
 * integral float too), or absent or null (false), put into c when c is
 * not NULL; 0 when it is no integer. */
static int opt_int(lua_State *L, cells *c, const val *v) {
  if (v->kind == V_NONE || v->kind == V_NULL) {
    if (c)
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
  if (c)
    put_i(L, c, i);
  return 1;
}

typedef struct sample_ctx {
  size_t sf_at, sf_len; /* the last sf's bytes, and its code */
  int32_t sf_code;
  size_t name_at, name_len; /* the last name's bytes, and its string */
  uint32_t name;
} sample_ctx;

/* The code of a sample's sf: a frame's number, F_DEEP, F_ORPHAN, or 0
 * (no such frame). */
static int32_t sf_code(loader *ld, sample_ctx *cx, const val *sf) {
  const char *p = ld->t.s + sf->at;
  size_t len = sf->end - sf->at;
  if (len == cx->sf_len && memcmp(p, ld->t.s + cx->sf_at, len) == 0)
    return cx->sf_code;
  cx->sf_at = sf->at, cx->sf_len = len;
  if (ld->frames_read != 1)
    return cx->sf_code = 0;
  uint32_t v;
  size_t nnum = ld->num_buf.n / sizeof(int32_t);
  if (sf->kind == V_INT ? sf->i >= 0 && (uint64_t)sf->i < nnum && (v = (uint32_t)sf->i, 1)
                        : !sf->esc && decimal_id(p + 1, len - 2, &v) && v < nnum)
    return cx->sf_code = ((const int32_t *)(void *)ld->num_buf.p)[v];
  uint32_t idx = id_index(ld, sf);
  uint32_t place = idx < nplaces(ld) ? places(ld)[idx] : 0;
  return cx->sf_code = place ? frame_at(ld, place - 1)->code : 0;
}

/* A sample's weight: 1 and *w when v is an integer from 0 to
 * JQ_MAX_WEIGHT (an integral float too: 2.0, 1e3), else 0. */
static int sample_weight(const val *v, int64_t *w) {
  if (v->kind == V_INT) {
    if (v->i < 0 || v->i > JQ_MAX_WEIGHT)
      return 0;
    *w = v->i;
    return 1;
  }
  if (!(v->d >= 0 && v->d <= (double)JQ_MAX_WEIGHT) || v->d != floor(v->d))
    return 0;
  *w = (int64_t)v->d;
  return 1;
}

/* Why the sample whose members are m cannot be read, or NULL; *code: its
 * sf's, *weight its weight (1 when it gives none). The weights of the
 * samples read sum to at most JQ_MAX_WEIGHT, so that every sum of them is
 * an exact integer, and a double. */
static const char *bad_sample(loader *ld, sample_ctx *cx, val *m, int32_t *code, int64_t *weight) {
  if (m[M_TS].kind == V_NONE)
    return "no ts";
  if (!is_num(&m[M_TS]))
    return "ts is not a number";
  if (ld->ours)
    ns_time(&m[M_TS]);
  if (!(m[M_TS].d >= -MAX_US && m[M_TS].d <= MAX_US))
    return "ts out of range";
  if ((m[M_TID].kind != V_NONE && !is_num(&m[M_TID])) || (m[M_PID].kind != V_NONE && !is_num(&m[M_PID])))
    return "tid is not a number";
  if (m[M_SF].kind == V_NONE)
    return "no sf";
  if (m[M_SF].kind != V_STR && m[M_SF].kind != V_INT)
    return "sf is not a string";
  if ((*code = sf_code(ld, cx, &m[M_SF])) == 0)
    return "unknown sf";
  if (*code == F_DEEP)
    return "sf nests deeper than 10000";
  if (*code == F_ORPHAN)
    return "unknown parent";
  if (m[M_WEIGHT].kind != V_NONE && !is_num(&m[M_WEIGHT]))
    return "weight is not a number";
  if (m[M_WEIGHT].kind != V_NONE && !(m[M_WEIGHT].d >= 0))
    return "weight is negative";
  int64_t w = 1;
  if (m[M_WEIGHT].kind != V_NONE && !sample_weight(&m[M_WEIGHT], &w))
    return "weight is not an integer from 0 to 2^53";
  if (m[M_NAME].kind != V_NONE && m[M_NAME].kind != V_STR)
    return "name is not a string";
  if (!opt_int(ld->L, NULL, &m[M_JOB]))
    return "job is not an integer";
  if (!opt_int(ld->L, NULL, &m[M_SPAN]))
    return "span is not an integer";
  if (!opt_int(ld->L, NULL, &m[M_LINE]))
    return "line is not an integer";
  if (w > JQ_MAX_WEIGHT - ld->weight_sum)
    return "weights sum beyond 2^53";
  *weight = w;
  return NULL;
}

/* A sample read (its members m, its sf's code) into the columns. */
static void put_sample(loader *ld, sample_ctx *cx, const val *m, int32_t code, int64_t weight) {
  lua_State *L = ld->L;
  static const val pid1 = {.kind = V_INT, .i = 1, .d = 1};
  double ts = m[M_TS].d;
  put_d(L, &ld->smp[0], ts);
  col_put(L, &ld->smp[1], T_LANE, jq_use_lane(ld, m[M_PID].kind != V_NONE ? &m[M_PID] : &pid1, &m[M_TID]));
  put_i(L, &ld->smp[2], code);
  put_i(L, &ld->smp[3], weight);
  ld->weight_sum += weight;
  const val *name = &m[M_NAME];
  if (name->kind != V_STR) {
    col_put(L, &ld->smp[4], T_STR, jq_intern(ld, "no category", 11));
  } else {
    size_t len = name->end - name->at;
    if (!(cx->name && len == cx->name_len && memcmp(ld->t.s + name->at, ld->t.s + cx->name_at, len) == 0)) {
      cx->name = jq_intern_val(ld, name);
      cx->name_at = name->at, cx->name_len = len;
    }
    col_put(L, &ld->smp[4], T_STR, cx->name);
  }
  for (int k = 0; k < 3; k++)
    opt_int(L, &ld->smp[5 + k], &m[M_JOB + k]);
  ld->nsamples++; /* (its time widens no range: order_samples holds it against the session's) */
}

/* One element of the samples array, at s[i]: one past it, or 0 and an
 * error. */
static size_t one_sample(loader *ld, sample_ctx *cx, size_t i) {
  val m[NMEM];
  size_t end;
  if (ld->t.s[i] != '{') {
    if ((end = jq_read_value(&ld->t, i, &m[0], 1)))
      skip_sample(ld, "not an object");
    return end;
  }
  for (int k = 0; k < NMEM; k++)
    m[k].kind = V_NONE;
  if (!(end = read_object(ld, i, sample_slot, m, 2)))
    return 0;
  if (m[M_ARGS].kind == V_OBJ && !read_object(ld, m[M_ARGS].at, args_slot, m, 3))
    return 0;
  int32_t code = 0;
  int64_t weight = 1;
  const char *why = bad_sample(ld, cx, m, &code, &weight);
  if (why)
    skip_sample(ld, why);
  else
    put_sample(ld, cx, m, code, weight);
  return end;
}

size_t jq_read_samples(loader *ld, size_t i) {
  jq_src *t = &ld->t;
  ld->samples_read = 1;
  if (t->s[i] != '[') {
    val v;
    return jq_read_value(t, i, &v, 0);
  }
  sample_ctx cx = {.sf_len = (size_t)-1};
  ld->weight_sum = 0;
  i = ws(t, i + 1);
  if (i < t->n && t->s[i] == ']')
    return i + 1;
  for (;;) {
    if (i >= t->n)
      return jq_scan_fail(t, i, "unexpected end of the text (a value expected)");
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
      return i + 1;
    return jq_scan_fail(t, i, "expected ',' or ']'");
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

int jq_samples_end(loader *ld, size_t frames_at, size_t samples_at) {
  lua_State *L = ld->L;
  if (frames_at != NONE && !ld->frames_read && !jq_read_frames(ld, frames_at))
    return -1;
  if (ld->frames_loop) {
    luaL_pushfail(L);
    lua_pushliteral(L, "bad \"stackFrames\": the parents of frame \"");
    lua_rawgeti(L, S_STRS, ld->frames_loop);
    lua_pushliteral(L, "\" loop (it is its own ancestor)");
    lua_concat(L, 3);
    return 0;
  }
  if (samples_at != NONE && !ld->samples_read && !jq_read_samples(ld, samples_at))
    return -1;
  if (ld->frames_read == 1)
    frames_to_model(ld);
  sample_counts(ld);
  jq_frames_free(ld);
  return 1;
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

/* order_samples(model [, a, b]) -> kept, dropped, lo, hi (see load.h). */
int jq_order_samples(lua_State *L) {
  static const char *const names[] = {"sample_ts",  "sample_lane", "sample_frame", "sample_weight",
                                      "sample_cat", "sample_job",  "sample_span",  "sample_line"};
  jq_column *c[SAMPLE_COLS];
  luaL_checktype(L, 1, LUA_TTABLE);
  for (int k = 0; k < SAMPLE_COLS; k++)
    if (!(c[k] = jq_column_get(L, 1, names[k])) || c[k]->n != c[0]->n)
      return luaL_error(L, "order_samples: the sample columns are not the loader's");
  size_t all = c[0]->n;
  if (all > UINT32_MAX || c[1]->tag || c[1]->tag0 != JQ_C_INT || c[0]->tag || c[0]->tag0 != JQ_C_NUM)
    return luaL_error(L, "order_samples: the sample columns are not the loader's");
  int bounded = !lua_isnoneornil(L, 2);
  double a = bounded ? luaL_checknumber(L, 2) : 0, b = bounded ? luaL_checknumber(L, 3) : 0;
  jq_scratch *s = jq_scratch_new(L, 3);
  uint32_t *idx = jq_scratch_room(L, &s->b[0], all, sizeof *idx);
  uint32_t *tmp = jq_scratch_room(L, &s->b[1], all, sizeof *tmp);
  size_t n = 0;
  double lo = HUGE_VAL, hi = -HUGE_VAL;
  for (size_t k = 0; k < all; k++) {
    double ts = jq_cell_num(c[0], k);
    if (bounded && !(ts >= a && ts <= b))
      continue;
    lo = ts < lo ? ts : lo;
    hi = ts > hi ? ts : hi;
    idx[n++] = (uint32_t)k;
  }
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
  for (int k = 0; k < SAMPLE_COLS; k++)
    c[k]->n = n; /* those outside [a, b] dropped */
  jq_scratch_free(s);
  lua_pushinteger(L, (lua_Integer)n);
  lua_pushinteger(L, (lua_Integer)(all - n));
  if (n == 0)
    return 2;
  lua_pushnumber(L, lo);
  lua_pushnumber(L, hi);
  return 4;
}
