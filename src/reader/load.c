/*
 * load.c - load_trace: a trace file scanned straight into the model.
 *
 * The file is mapped (a pipe or a terminal is read into memory; a text
 * given is read in place): no second copy. A text shaped as ours is read
 * in one pass that checks the JSON as it goes, its "jobqueProfile" guessed
 * from the end and checked after; when anything is off, the checked way:
 * jq_scan_outline checks the whole text is JSON and finds the top object's
 * "traceEvents" and "jobqueProfile", then the events are read. The common
 * events (complete slices of a lane, markers, plain counters) go into C
 * cells (load_cells.c); any other is decoded into a Lua table and handed to
 * trace.lua's own code (hooks.rare), in file order; before the first that
 * may be a seed trace's chained slice, the publish events that tag the
 * chains are handed over (hooks.chain_tags). No byte outside the text is
 * read; no recursion; the cells and tables are malloc'd memory owned by the
 * loader's userdata (its __gc frees them: a raised error leaks nothing),
 * the mapping is a userdata's.
 * Owns: the mapping (its userdata). Must not: be used by the record path.
 * Thread safety: one lua_State per load.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>

#include "reader/load.h"
#include "reader/proto_read.h"
#include "reader/reader.h"

static void push_num(lua_State *L, const val *v) {
  if (v->kind == V_INT)
    lua_pushinteger(L, (lua_Integer)v->i);
  else if (v->kind == V_FLT)
    lua_pushnumber(L, v->d);
  else
    lua_pushnil(L);
}

static int same_id(const val *a, const val *b) {
  if (a->kind != b->kind)
    return 0;
  return a->kind == V_NONE || (a->kind == V_INT && a->i == b->i) || (a->kind == V_FLT && a->d == b->d);
}

static uint64_t id_hash(const val *v) {
  uint64_t b = 0;
  if (v->kind == V_INT)
    memcpy(&b, &v->i, sizeof b);
  else if (v->kind == V_FLT)
    memcpy(&b, &v->d, sizeof b);
  return (b + (uint64_t)v->kind) * 0x9E3779B97F4A7C15ULL;
}

/* The lane of the event's (pid, tid): its index, by hooks.lane(st, pid,
 * tid) when not met lately. */
static inline uint32_t lane_of(loader *ld, const val *pid, const val *tid) {
  lua_State *L = ld->L;
  lane_key *last = &ld->lane_keys[ld->last_lane];
  if (last->lane && same_id(&last->pid, pid) && same_id(&last->tid, tid))
    return last->lane;
  size_t slot = (id_hash(pid) ^ (id_hash(tid) >> 7)) >> 58; /* LANE_KEYS: 64 */
  lane_key *key = &ld->lane_keys[slot];
  ld->last_lane = (uint32_t)slot;
  if (key->lane && same_id(&key->pid, pid) && same_id(&key->tid, tid))
    return key->lane;
  lua_getfield(L, S_HOOKS, "lane");
  lua_pushvalue(L, S_ST);
  push_num(L, pid);
  push_num(L, tid);
  lua_call(L, 3, 1);
  luaL_checktype(L, -1, LUA_TTABLE);
  uint32_t k = jq_lane_index(ld);
  key->pid = *pid;
  key->tid = *tid;
  key->lane = k;
  return k;
}

static inline uint32_t use_lane(loader *ld, const ev *e) { return lane_of(ld, &e->pid, &e->tid); }

uint32_t jq_use_lane(loader *ld, const val *pid, const val *tid) { return lane_of(ld, pid, tid); }

/* hooks[name](st, the string at index idx). */
static void note_str(loader *ld, const char *name, uint32_t idx) {
  lua_State *L = ld->L;
  lua_getfield(L, S_HOOKS, name);
  lua_pushvalue(L, S_ST);
  lua_rawgeti(L, S_STRS, idx);
  lua_call(L, 2, 0);
}

static int time_ok(const val *v) {
  return is_num(v) && v->d >= -MAX_US && v->d <= MAX_US;
}

static int id_ok(const val *v) {
  return v->kind == V_NONE || is_num(v);
}

static void note_time(loader *ld, double ts, double stop) {
  if (ts < ld->t0)
    ld->t0 = ts;
  if (stop > ld->t1)
    ld->t1 = stop;
  ld->nev++;
}

enum { K_JOB = 1, K_SUBMIT, K_WAIT, K_COPY, K_SLICE };

/* What a complete event is (trace.lua's classify): its kind, and its
 * category's string in *cat; 0 when only the generic path reads it right:
 * a copy whose args the model keeps as a table among them, or a seed
 * trace's chained slice (trace.lua's read_complete knows its chain's tag). */
static int classify(loader *ld, const ev *e, uint32_t *cat) {
  jq_src *t = &ld->t;
  int plain_args = (e->amask & ~A_JOB) == 0 && (e->job.kind == V_NONE || e->job.kind == V_INT);
  if (e->cat.kind == V_NONE && (e->name.esc || (e->args.kind == V_OBJ && (is_str(t, &e->name, "publish") ||
                                   is_str(t, &e->name, "chunk") || is_str(t, &e->name, "stage_wait")))))
    return 0; /* a seed trace's chained slice, or (an escaped name) maybe one */
  if ((e->cat.kind != V_NONE && e->cat.kind != V_STR) || (e->cat.kind == V_STR && e->cat.esc))
    return 0;
  if (ld->ours && is_str(t, &e->cat, "copy")) {
    if ((e->amask & (A_ARG | A_OTHER | A_ON | A_QUEUE)) || (e->job.kind != V_NONE && e->job.kind != V_INT) ||
        (e->bytes.kind != V_NONE && e->bytes.kind != V_INT) || (e->acat.kind != V_NONE && e->acat.kind != V_STR))
      return 0;
    if (e->args.kind == V_OBJ && (e->amask & ~A_JOB) != 0 && e->amask != (A_JOB | A_BYTES | A_CAT))
      return 0; /* args kept as a table */
    *cat = e->acat.kind == V_STR ? jq_intern_val(ld, &e->acat) : ld->s_job;
    return K_COPY;
  }
  if (!plain_args || (ld->ours && is_str(t, &e->cat, "flow")))
    return 0;
  if (ld->ours && is_str(t, &e->cat, "job")) {
    *cat = e->name.kind == V_STR ? jq_intern_val(ld, &e->name) : ld->s_q;
    return K_JOB;
  }
  if (ld->ours && is_str(t, &e->cat, "submit")) {
    *cat = ld->s_submit;
    return K_SUBMIT;
  }
  const val *c = e->cat.kind == V_STR ? &e->cat : e->name.kind == V_STR ? &e->name : NULL;
  if (is_str(t, c ? c : &e->cat, "wait")) {
    *cat = ld->s_wait;
    return K_WAIT;
  }
  *cat = c ? jq_intern_val(ld, c) : ld->s_q;
  return K_SLICE;
}

static void lane_dirty(loader *ld, uint32_t k) {
  if (!lane_at(ld, k)->dirty) {
    lane_at(ld, k)->dirty = 1;
    note_dirty(ld, &ld->dirty_lanes, k);
  }
}

/* A complete event straight into its lane's columns: 1, or 0 when the
 * generic path must read it. */
static int fast_slice(loader *ld, const ev *e) {
  lua_State *L = ld->L;
  if (e->odd || !time_ok(&e->ts) || !id_ok(&e->pid) || !id_ok(&e->tid) ||
      (e->args.kind != V_NONE && e->args.kind != V_OBJ))
    return 0;
  if (e->dur.kind != V_NONE && !(is_num(&e->dur) && e->dur.d >= 0 && e->dur.d <= MAX_US))
    return 0;
  double ts = e->ts.d, dur = e->dur.kind == V_NONE ? 0 : e->dur.d;
  uint32_t cat = 0;
  int kind = classify(ld, e, &cat);
  if (!kind)
    return 0;
  uint32_t li = use_lane(ld, e);
  if (cat != ld->lastcat) {
    ld->lastcat = cat;
    note_str(ld, "category", cat);
  }
  lane_buf *lb = lane_at(ld, li);
  lane_dirty(ld, li);
  uint32_t kname = kind == K_JOB ? ld->s_job : kind == K_SUBMIT ? ld->s_submit : kind == K_WAIT ? ld->s_wait
                 : kind == K_COPY ? ld->s_copy : ld->s_slice;
  uint32_t name = e->name.kind == V_STR ? jq_intern_val(ld, &e->name) : 0;
  put_d(L, &lb->c[0], ts);
  put_d(L, &lb->c[1], dur);
  col_put(L, &lb->c[2], T_STR, cat);
  col_put(L, &lb->c[3], T_STR, kname);
  col_put(L, &lb->c[4], T_STR, name ? name : ld->s_q);
  if (e->job.kind == V_INT)
    put_i(L, &lb->c[5], e->job.i);
  else
    col_put(L, &lb->c[5], T_FALSE, 0);
  if (kind == K_COPY) {
    lua_Integer k = ++ld->ncopies;
    if (e->args.kind == V_OBJ && e->amask == (A_JOB | A_BYTES | A_CAT))
      put_i(L, &lb->c[6], k); /* the copy's index: the page rebuilds its args */
    else
      col_put(L, &lb->c[6], T_FALSE, 0);
    put_d(L, &ld->copy[0], ts);
    put_d(L, &ld->copy[1], dur);
    col_put(L, &ld->copy[2], T_LANE, li);
    col_put(L, &ld->copy[3], T_STR, cat);
    col_put(L, &ld->copy[4], T_STR, name ? name : ld->s_copy);
    if (e->job.kind == V_INT)
      put_i(L, &ld->copy[5], e->job.i);
    else
      col_put(L, &ld->copy[5], T_FALSE, 0);
    put_i(L, &ld->copy[6], e->bytes.kind == V_INT ? e->bytes.i : 0);
  } else {
    col_put(L, &lb->c[6], T_FALSE, 0);
  }
  note_time(ld, ts, ts + dur);
  return 1;
}

/* An id of a marker's column: the number, 0 for none. */
static void put_id(lua_State *L, cells *c, const val *v) {
  if (v->kind == V_FLT)
    put_d(L, c, v->d);
  else
    put_i(L, c, v->kind == V_INT ? v->i : 0);
}

/* A marker (an instant of scope g or p) straight into the model's columns:
 * 1, or 0 when the generic path must read it. */
static int fast_marker(loader *ld, const ev *e) {
  lua_State *L = ld->L;
  jq_src *t = &ld->t;
  if (e->odd || !time_ok(&e->ts) || !id_ok(&e->pid) || !id_ok(&e->tid) ||
      !(is_str(t, &e->s, "g") || is_str(t, &e->s, "p")))
    return 0;
  ld->nmarkers++;
  uint32_t kind = e->name.kind == V_STR ? jq_intern_val(ld, &e->name) : ld->s_q;
  if (kind != ld->lastkind) {
    ld->lastkind = kind;
    note_str(ld, "marker_kind", kind);
  }
  put_d(L, &ld->marker[0], e->ts.d);
  col_put(L, &ld->marker[1], T_STR, kind);
  const val *a = &e->arg;
  if (a->kind == V_INT)
    put_i(L, &ld->marker[2], a->i);
  else if (a->kind == V_FLT && a->d >= -0x1p63 && a->d < 0x1p63 && a->d == floor(a->d))
    put_i(L, &ld->marker[2], (int64_t)a->d);
  else if (a->kind == V_FLT)
    put_d(L, &ld->marker[2], a->d);
  else if (a->kind == V_STR)
    col_put(L, &ld->marker[2], T_STR, jq_intern_val(ld, a));
  else
    col_put(L, &ld->marker[2], T_NIL, 0);
  put_id(L, &ld->marker[3], &e->pid);
  put_id(L, &ld->marker[4], &e->tid);
  note_time(ld, e->ts.d, e->ts.d);
  return 1;
}

/* An id of an edge's args (job, on, queue) into its column: the integer,
 * nil when absent. */
static void put_opt_int(lua_State *L, cells *c, const val *v) {
  if (v->kind == V_INT)
    put_i(L, c, v->i);
  else
    col_put(L, c, T_NIL, 0);
}

/* A happens-before edge of ours (an instant of scope t, category "edge",
 * named by its kind) straight into the model's edge columns, its time into
 * extra_ts (trace.lua's add_edge): 1, or 0 when the generic path must read
 * it (args that are not integers, other keys, another name). */
static int fast_edge(loader *ld, const ev *e) {
  lua_State *L = ld->L;
  jq_src *t = &ld->t;
  if (e->odd || !time_ok(&e->ts) || !id_ok(&e->pid) || !id_ok(&e->tid) || !is_str(t, &e->s, "t") ||
      (e->args.kind != V_NONE && e->args.kind != V_OBJ) || (e->amask & ~(A_JOB | A_ON | A_QUEUE)) ||
      (e->job.kind != V_NONE && e->job.kind != V_INT) || (e->on.kind != V_NONE && e->on.kind != V_INT) ||
      (e->queue.kind != V_NONE && e->queue.kind != V_INT))
    return 0;
  int kind = is_str(t, &e->name, "waited for") ? 1 : is_str(t, &e->name, "after") ? 2
           : is_str(t, &e->name, "waited for all") ? 3 : 0;
  if (!kind)
    return 0;
  uint32_t li = use_lane(ld, e);
  double ts = e->ts.d;
  ld->nedges++;
  put_d(L, &ld->edge[0], ts);
  col_put(L, &ld->edge[1], T_LANE, li);
  put_i(L, &ld->edge[2], kind);
  put_opt_int(L, &ld->edge[3], &e->job);
  put_opt_int(L, &ld->edge[4], &e->on);
  put_opt_int(L, &ld->edge[5], &e->queue);
  note_time(ld, ts, ts);
  ld->nextra++;
  put_d(L, &ld->extra, ts);
  return 1;
}

/* ---- counters ("C" events) ---- */

static int member_less(const jq_src *t, const member *a, const member *b) {
  size_t n = a->len < b->len ? a->len : b->len;
  int c = memcmp(t->s + a->at, t->s + b->at, n);
  return c < 0 || (c == 0 && a->len < b->len);
}

/* The members of a "C" event's args (kept by read_members) into m[],
 * sorted by key (trace.lua's sorted_keys): their count, or -1 when only the
 * generic path reads them right (an escaped or repeated key, a string
 * value, a float a double may have rounded, too many keys). */
static int counter_members(const jq_src *t, const ev *e, member *m) {
  if (e->nmem < 0)
    return -1;
  int n = 0;
  for (int j = 0; j < e->nmem; j++) {
    const member *x = &e->mem[j];
    if (x->v.kind == V_STR || (x->v.kind == V_FLT && !(fabs(x->v.d) < 0x1p53)))
      return -1;
    int k = n++;
    for (; k > 0 && !member_less(t, &m[k - 1], x); k--) {
      if (!member_less(t, x, &m[k - 1]))
        return -1; /* the same key twice */
    }
    memmove(&m[k + 1], &m[k], (size_t)(n - 1 - k) * sizeof *m);
    m[k] = *x;
  }
  return n;
}

static uint64_t track_hash(int has_pid, int64_t pid, uint32_t name, uint32_t key) {
  uint64_t h = ((uint64_t)pid * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)name << 32 | key) ^ (uint64_t)has_pid;
  return (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ULL;
}

static void track_map_grow(loader *ld) {
  size_t size = ld->track_mask ? (ld->track_mask + 1) * 2 : 64;
  track_slot *tab = calloc(size, sizeof *tab);
  if (!tab)
    jq_nomem(ld->L);
  for (size_t k = 0; ld->track_map && k <= ld->track_mask; k++) {
    track_slot *s = &ld->track_map[k];
    if (!s->idx)
      continue;
    size_t j = track_hash(s->has_pid, s->pid, s->name, s->key) & (size - 1);
    while (tab[j].idx)
      j = (j + 1) & (size - 1);
    tab[j] = *s;
  }
  free(ld->track_map);
  ld->track_map = tab;
  ld->track_mask = size - 1;
}

/* The track of the event's name and pid for key m: its index, by
 * hooks.counter_track(st, name, pid, key) when not met yet. */
static uint32_t use_track(loader *ld, const ev *e, uint32_t name, const member *m) {
  lua_State *L = ld->L;
  int has_pid = e->pid.kind == V_INT;
  int64_t pid = has_pid ? e->pid.i : 0;
  uint32_t key = jq_intern(ld, ld->t.s + m->at, m->len);
  size_t j = track_hash(has_pid, pid, name, key) & ld->track_mask;
  for (; ld->track_map[j].idx; j = (j + 1) & ld->track_mask) {
    track_slot *s = &ld->track_map[j];
    if (s->name == name && s->key == key && s->has_pid == has_pid && s->pid == pid)
      return s->idx;
  }
  lua_getfield(L, S_HOOKS, "counter_track");
  lua_pushvalue(L, S_ST);
  lua_rawgeti(L, S_STRS, name);
  push_num(L, &e->pid);
  lua_rawgeti(L, S_STRS, key);
  lua_call(L, 4, 1);
  luaL_checktype(L, -1, LUA_TTABLE);
  uint32_t k = jq_item_index(ld, S_TRACKS, S_TRACKIDX, &ld->tracks, &ld->ntracks, sizeof(track_buf));
  track_slot *s = &ld->track_map[j];
  s->has_pid = has_pid;
  s->pid = pid;
  s->name = name;
  s->key = key;
  s->idx = k;
  if (++ld->ntrack_keys * 2 > ld->track_mask)
    track_map_grow(ld);
  return k;
}

/* A "C" event straight into its tracks (trace.lua's read_counter): 1, or
 * 0 when the generic path must read it. */
static int fast_counter(loader *ld, const ev *e) {
  lua_State *L = ld->L;
  member m[COUNTER_KEYS];
  if (e->odd || !time_ok(&e->ts) || (e->pid.kind != V_NONE && e->pid.kind != V_INT) || e->name.kind != V_STR ||
      e->name.esc || e->args.kind != V_OBJ)
    return 0;
  int n = counter_members(&ld->t, e, m);
  if (n < 0)
    return 0;
  double ts = e->ts.d;
  note_time(ld, ts, ts);
  ld->nextra++;
  put_d(L, &ld->extra, ts);
  uint32_t name = n > 0 ? jq_intern_val(ld, &e->name) : 0;
  for (int k = 0; k < n; k++) {
    const val *v = &m[k].v;
    if (!is_num(v))
      continue;
    uint32_t ti = use_track(ld, e, name, &m[k]);
    track_buf *tb = track_at(ld, ti);
    if (!tb->dirty) {
      tb->dirty = 1;
      note_dirty(ld, &ld->dirty_tracks, ti);
    }
    put_d(L, &tb->ts, ts);
    if (v->kind == V_FLT && v->d == floor(v->d)) /* |d| < 2^53: counter_members saw to it */
      put_i(L, &tb->value, (int64_t)v->d);
    else if (v->kind == V_FLT)
      put_d(L, &tb->value, v->d);
    else
      put_i(L, &tb->value, v->i);
  }
  return 1;
}

static void set_num(lua_State *L, int idx, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, idx, k);
}

static double get_num(lua_State *L, int idx, const char *k) {
  lua_getfield(L, idx, k);
  double v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

/* The loader's counts to st (before Lua reads an event), or back. */
static void sync_counts(loader *ld, int to_lua) {
  lua_State *L = ld->L;
  if (to_lua) {
    set_num(L, S_ST, "t0", ld->t0);
    set_num(L, S_ST, "t1", ld->t1);
    lua_pushinteger(L, ld->nev);
    lua_setfield(L, S_ST, "nev");
    lua_pushinteger(L, ld->nmarkers);
    lua_setfield(L, S_ST, "nmarkers");
    lua_pushinteger(L, ld->nextra);
    lua_setfield(L, S_ST, "nextra");
    lua_pushinteger(L, ld->nedges);
    lua_setfield(L, S_ST, "nedges");
    return;
  }
  ld->t0 = get_num(L, S_ST, "t0");
  ld->t1 = get_num(L, S_ST, "t1");
  ld->nev = (lua_Integer)get_num(L, S_ST, "nev");
  ld->nmarkers = (lua_Integer)get_num(L, S_ST, "nmarkers");
  ld->nextra = (lua_Integer)get_num(L, S_ST, "nextra");
  ld->nedges = (lua_Integer)get_num(L, S_ST, "nedges");
}

/* The generic path adds nothing to the columns for this event (read by
 * jq_read_event; e NULL: not an object): a metadata event, a "B", an instant
 * of another scope than g and p that is no edge. Anything else may (a
 * slice, a marker, an edge, a counter, an "E", a flow...): the cells go
 * into the lists first. */
static int touches_no_column(const jq_src *t, const ev *e) {
  if (!e)
    return 1;
  if (e->odd)
    return 0;
  if (is_str(t, &e->ph, "M") || is_str(t, &e->ph, "B"))
    return 1;
  if (e->cat.kind == V_STR && (e->cat.esc || is_str(t, &e->cat, "edge")))
    return 0;
  if (is_str(t, &e->ph, "i") || is_str(t, &e->ph, "I") || is_str(t, &e->ph, "R"))
    return e->s.kind != V_STR || (!e->s.esc && !is_str(t, &e->s, "g") && !is_str(t, &e->s, "p"));
  return 0;
}

/* Whether the event (not odd: its keys read) has the seed format's shape
 * (trace.lua's read_complete and seed_chain_tags: ph "X", no cat, args an
 * object, a name among `names`, which are NUL-separated); an escaped ph or
 * name, or an odd event, may have it. */
static int seed_shape(const jq_src *t, const ev *e, const char *names) {
  if (e->odd)
    return 1;
  if (e->ph.kind != V_STR || e->cat.kind != V_NONE || e->args.kind != V_OBJ || e->name.kind != V_STR)
    return 0;
  if (!e->ph.esc && !is_str(t, &e->ph, "X"))
    return 0;
  if (e->name.esc)
    return 1;
  for (const char *w = names; *w; w += strlen(w) + 1)
    if (is_str_n(t, &e->name, w, strlen(w)))
      return 1;
  return 0;
}

#define CHAINED_NAMES "publish\0chunk\0stage_wait\0"

/* The seed format's chain tags, before the first event that may be a
 * chained slice is read: every event of the array that may be a publish
 * decoded and handed to hooks.chain_tags(st, list), which sets st's. 1, or
 * 0 and an error (the JSON; the one pass reads a text not yet checked). */
static int chain_tags(loader *ld) {
  lua_State *L = ld->L;
  jq_src *t = &ld->t;
  size_t release_at = t->release_at, i = ws(t, ld->events_at + 1);
  t->release_at = NONE; /* the pages given back are read again: none given back on this account */
  lua_getfield(L, S_HOOKS, "chain_tags");
  lua_pushvalue(L, S_ST);
  lua_newtable(L);
  lua_Integer n = 0;
  while (i < t->n && t->s[i] != ']') {
    ev e;
    size_t end = t->s[i] == '{' ? jq_read_event(t, i, &e) : skip_value(t, i, EVENT_DEPTH - 1);
    if (end && t->s[i] == '{' && seed_shape(t, &e, "publish\0")) {
      if (!push_value(L, t, i, S_NULL, EVENT_DEPTH - 1))
        end = 0;
      else
        lua_rawseti(L, -2, ++n);
    }
    i = end ? ws(t, end) : t->n;
    if (i < t->n && t->s[i] == ',')
      i = ws(t, i + 1);
    else if (i < t->n && t->s[i] != ']')
      i = t->n; /* (the reading says what is wrong) */
  }
  t->release_at = release_at;
  if (i >= t->n) {
    lua_pop(L, 3);
    return (int)jq_scan_fail(t, i, "unexpected end of the text (a value expected)");
  }
  lua_call(L, 2, 0);
  ld->chain_tags = 1;
  return 1;
}

/* Any other event: decoded into a table, read by hooks.rare(st, e, index)
 * (trace.lua's own code). One past it, or 0: an error (the JSON), or the
 * hook said no (*said_no; its two results stay on the stack). */
static size_t rare(loader *ld, size_t at, lua_Integer index, const ev *e, int *said_no) {
  lua_State *L = ld->L;
  int top = lua_gettop(L);
  if (e && !ld->chain_tags && seed_shape(&ld->t, e, CHAINED_NAMES) && !chain_tags(ld))
    return 0;
  int flush = !touches_no_column(&ld->t, e);
  if (flush)
    jq_flush_all(ld, 0);
  sync_counts(ld, 1);
  lua_getfield(L, S_HOOKS, "rare");
  lua_pushvalue(L, S_ST);
  size_t end = push_value(L, &ld->t, at, S_NULL, 1);
  if (!end) {
    lua_settop(L, top);
    return 0;
  }
  lua_pushinteger(L, index);
  lua_call(L, 3, 2);
  if (lua_toboolean(L, -2)) {
    lua_settop(L, top);
    sync_counts(ld, 0);
    if (flush) { /* its copies are in the list now */
      lua_getfield(L, S_MODEL, "copy_ts");
      ld->ncopies = (lua_Integer)lua_rawlen(L, -1);
      lua_pop(L, 1);
    }
    return end;
  }
  *said_no = 1;
  return 0;
}

#define PROGRESS_STEP ((size_t)1 << 24)

static void progress(loader *ld, size_t at) {
  lua_State *L = ld->L;
  if (at <= ld->progress_at)
    return;
  ld->progress_at = at;
  if (lua_getfield(L, S_HOOKS, "progress") != LUA_TFUNCTION) {
    lua_pop(L, 1);
    return;
  }
  lua_pushinteger(L, (lua_Integer)at);
  lua_pushinteger(L, (lua_Integer)ld->t.n);
  lua_call(L, 2, 0);
}

/* One element of the events array, at s[i]: one past it; 0 and an error
 * (JSON); 0 with *said_no (the hook's answer on the stack). */
static size_t one_event(loader *ld, size_t i, lua_Integer index, int *said_no) {
  jq_src *t = &ld->t;
  ev e;
  if (t->s[i] != '{')
    return rare(ld, i, index, NULL, said_no);
  size_t end = jq_read_event(t, i, &e);
  if (!end)
    return 0;
  if (ld->ours) {
    ns_time(&e.ts);
    ns_time(&e.dur);
  }
  int done = 0;
  if (e.ph.kind == V_STR && !e.ph.esc && e.ph.end - e.ph.at == 3) {
    switch (t->s[e.ph.at + 1]) {
    case 'X':
      done = fast_slice(ld, &e);
      break;
    case 'i':
      done = ld->ours && is_str(t, &e.cat, "edge") ? fast_edge(ld, &e) : fast_marker(ld, &e);
      break;
    case 'I':
    case 'R':
      done = fast_marker(ld, &e);
      break;
    case 'C':
      done = fast_counter(ld, &e);
      break;
    default:
      break;
    }
  }
  if (done)
    return end;
  return rare(ld, i, index, &e, said_no) ? end : 0;
}

/* The events array at s[i] ('['), every element read in order: one past
 * it, or 0 (an error of the JSON in t, else *said_no with the hook's two
 * results on the stack). */
static size_t read_events(loader *ld, size_t i, int *said_no) {
  jq_src *t = &ld->t;
  lua_Integer index = 0;
  size_t next_progress = PROGRESS_STEP;
  ld->events_at = i;
  i = ws(t, i + 1);
  if (i < t->n && t->s[i] == ']')
    return i + 1;
  for (;;) {
    i = ws(t, i);
    if (i >= t->n)
      return jq_scan_fail(t, i, "unexpected end of the text (a value expected)");
    if (!(i = one_event(ld, i, ++index, said_no)))
      return 0;
    if (i >= next_progress) {
      next_progress = i + PROGRESS_STEP;
      progress(ld, i);
    }
    if (i >= t->release_at)
      jq_scan_release(t, i);
    i = ws(t, i);
    if (i < t->n && t->s[i] == ',') {
      i++;
      continue;
    }
    if (i < t->n && t->s[i] == ']')
      return i + 1;
    return jq_scan_fail(t, i, "expected ',' or ']'");
  }
}

/* ---- the file ---- */

/* The text of a load when it is a file's: mapped (a regular file), else
 * read into memory of its own (a pipe, a terminal, a directory's error). */
typedef struct mapping {
  void *addr; /* the mapping, or NULL */
  size_t len;
  jq_vec heap; /* the bytes read */
} mapping;

static int mapping_gc(lua_State *L) {
  mapping *m = lua_touserdata(L, 1);
  if (m->addr)
    munmap(m->addr, m->len);
  m->addr = NULL;
  jq_vec_free(&m->heap);
  return 0;
}

#define READ_STEP ((size_t)1 << 16)

/* The file open at fd read to its end into m->heap, cut to the length of
 * what was read (fd closed): 1, or 0 with a message pushed. */
static int read_all(lua_State *L, int fd, const char *path, mapping *m, jq_src *t) {
  jq_vec *b = &m->heap;
  for (;;) {
    if (jq_vec_reserve(b, READ_STEP) != 0) {
      close(fd);
      jq_nomem(L);
    }
    ssize_t got = read(fd, b->p + b->n, b->cap - b->n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      int err = errno;
      close(fd);
      lua_pushfstring(L, "cannot read %s: %s", path, strerror(err));
      return 0;
    }
    if (got == 0)
      break;
    b->n += (size_t)got;
  }
  close(fd);
  char *exact = realloc(b->p, b->n ? b->n : 1); /* no byte after the text: ASan watches it */
  if (exact) {
    b->p = exact;
    b->cap = b->n ? b->n : 1;
  }
  t->s = b->p;
  t->n = b->n;
  return 1;
}

/* The file at `path` as the text (its userdata at S_BOX): mapped, else
 * read. 1, or 0 with a message pushed. */
static int open_file(lua_State *L, const char *path, jq_src *t) {
  mapping *m = lua_newuserdatauv(L, sizeof *m, 0);
  memset(m, 0, sizeof *m);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, mapping_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_replace(L, S_BOX);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    int err = errno;
    if (fd >= 0)
      close(fd);
    lua_pushfstring(L, "cannot open %s: %s", path, strerror(err));
    return 0;
  }
  t->s = "";
  t->n = 0;
  if (S_ISREG(st.st_mode) && st.st_size == 0) {
    close(fd);
    return 1;
  }
  void *addr = S_ISREG(st.st_mode) ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  if (addr == MAP_FAILED)
    return read_all(L, fd, path, m, t);
  close(fd);
  madvise(addr, (size_t)st.st_size, MADV_SEQUENTIAL);
  m->addr = addr;
  m->len = (size_t)st.st_size;
  t->s = addr;
  t->n = m->len;
  t->mapped = 1;
  return 1;
}

/* The file's text, a protobuf trace (proto_read.c), made the JSON text of
 * its session in the box's heap: 1, or 0 with a message pushed naming the
 * file; raises "not enough memory". */
static int from_proto(lua_State *L, const char *path, jq_src *t) {
  mapping *m = lua_touserdata(L, S_BOX);
  jq_vec json;
  char err[256];
  jq_vec_init(&json);
  int rc = jq_proto_to_json(t->s, t->n, &json, err, sizeof err);
  if (rc == ENOMEM)
    return luaL_error(L, "not enough memory");
  if (rc != 0) {
    lua_pushfstring(L, "%s: %s", path, err);
    return 0;
  }
  if (m->addr)
    munmap(m->addr, m->len);
  m->addr = NULL;
  jq_vec_free(&m->heap);
  m->heap = json;
  t->s = json.p;
  t->n = json.n;
  t->mapped = 0;
  return 1;
}

/* ---- the reading ---- */

/* The loader's state made anew (its strings, lanes and tracks; the text
 * kept), as before a first reading. */
static void fresh_state(loader *ld) {
  lua_State *L = ld->L;
  jq_loader_free(ld);
  jq_src t = ld->t;
  memset(ld, 0, sizeof *ld);
  ld->L = L;
  ld->t = t;
  ld->t.err = NULL;
  ld->t.err_at = 0;
  ld->t.release_at = 0;
  lua_settop(L, S_TOP);
  for (int k = S_STRS; k <= S_TRACKIDX; k++) {
    lua_newtable(L);
    lua_replace(L, k);
  }
  jq_strs_grow(ld);
  track_map_grow(ld);
  ld->s_job = jq_intern(ld, "job", 3);
  ld->s_submit = jq_intern(ld, "submit", 6);
  ld->s_wait = jq_intern(ld, "wait", 4);
  ld->s_copy = jq_intern(ld, "copy", 4);
  ld->s_slice = jq_intern(ld, "slice", 5);
  ld->s_q = jq_intern(ld, "?", 1);
}

/* hooks.begin(meta, is_array) -> st | nil, message; then the model at
 * S_MODEL. 1, or 0 (the results on the stack; nothing when the meta's JSON
 * is bad). */
static int begin(loader *ld, size_t meta, int is_array) {
  lua_State *L = ld->L;
  lua_getfield(L, S_HOOKS, "begin");
  if (meta != NONE && ld->t.s[meta] != 'n') {
    size_t release_at = ld->t.release_at; /* the meta may come after the events: */
    ld->t.release_at = NONE;                /* no page is given back on its account */
    size_t end = push_value(L, &ld->t, meta, S_NULL, 0);
    ld->t.release_at = release_at;
    if (!end)
      return 0;
  } else {
    lua_pushnil(L);
  }
  lua_pushboolean(L, is_array);
  lua_call(L, 2, 2);
  if (lua_type(L, -2) != LUA_TTABLE)
    return 0;
  lua_pop(L, 1);
  lua_replace(L, S_ST);
  lua_getfield(L, S_ST, "ours");
  ld->ours = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, S_ST, "model");
  luaL_checktype(L, -1, LUA_TTABLE);
  lua_replace(L, S_MODEL);
  sync_counts(ld, 0);
  return 1;
}

/* The slots a load keeps; then the text: the string given, else the
 * file's. 1, or 0 with what to return pushed (nil, message, "file"). */
static int setup(lua_State *L, loader **ldp) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 3);
  luaL_checkstack(L, S_TOP + 20, "load_trace");
  lua_pushnil(L);                /* S_BOX */
  lua_pushlightuserdata(L, NULL); /* S_NULL: JSON's null, the value lua-cjson's cjson.null is */
  while (lua_gettop(L) < S_TOP)
    lua_pushnil(L);
  loader *ld = lua_newuserdatauv(L, sizeof *ld, 0);
  memset(ld, 0, sizeof *ld);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, jq_loader_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_replace(L, S_LD);
  ld->L = L;
  *ldp = ld;
  if (lua_type(L, S_TEXT) == LUA_TSTRING) {
    ld->t.s = lua_tolstring(L, S_TEXT, &ld->t.n);
    return 1;
  }
  const char *path = luaL_checkstring(L, S_PATH);
  if (open_file(L, path, &ld->t) && (!jq_is_proto(ld->t.s, ld->t.n) || from_proto(L, path, &ld->t)))
    return 1;
  luaL_pushfail(L);
  lua_insert(L, -2);
  lua_pushliteral(L, "file");
  return 0;
}

/* The loaded model's state: the cells into the lists, the counts to st. */
static int finish_load(loader *ld) {
  jq_flush_all(ld, 1);
  sync_counts(ld, 1);
  lua_pushvalue(ld->L, S_ST);
  return 1;
}

/* A key of the top object at s[i] (its quote): the value's place, or 0
 * when it is not a plain key followed by a colon; *is: 1 for
 * "traceEvents", 2 for "jobqueProfile", 3 for "stackFrames", 4 for
 * "samples", else 0. */
static size_t top_key(jq_src *t, size_t i, int *is) {
  int esc;
  size_t end = i < t->n && t->s[i] == '"' ? jq_scan_string(t, i, &esc) : 0;
  if (!end || esc)
    return 0;
  size_t len = end - i - 2;
  *is = len == 11 && memcmp(t->s + i + 1, "traceEvents", 11) == 0     ? 1
      : len == 13 && memcmp(t->s + i + 1, "jobqueProfile", 13) == 0 ? 2
      : len == 11 && memcmp(t->s + i + 1, "stackFrames", 11) == 0   ? 3
      : len == 7 && memcmp(t->s + i + 1, "samples", 7) == 0         ? 4
                                                                       : 0;
  i = ws(t, end);
  if (i >= t->n || t->s[i] != ':')
    return 0;
  return ws(t, i + 1);
}

#define META_WINDOW ((size_t)1 << 22) /* where, at the end, the metadata is looked for */

/* Where the value of the last "jobqueProfile" key after s[from] is, as a
 * guess (looked for backwards, in the text's last META_WINDOW bytes; the
 * reading checks it): NONE when none is there. */
static size_t guess_meta(jq_src *t, size_t from) {
  static const char key[] = "\"jobqueProfile\"";
  size_t klen = sizeof key - 1, lo = t->n > META_WINDOW ? t->n - META_WINDOW : 0;
  if (lo <= from)
    lo = from + 1;
  for (size_t k = t->n >= klen ? t->n - klen : 0; k >= lo && k + klen <= t->n; k--) {
    if (t->s[k] == '"' && memcmp(t->s + k, key, klen) == 0) {
      size_t i = ws(t, k + klen);
      if (i < t->n && t->s[i] == ':' && ws(t, i + 1) < t->n)
        return ws(t, i + 1);
    }
    if (k == 0)
      break;
  }
  return NONE;
}

/* A top key after the events (its value at s[i]; is: top_key's), in the
 * one pass: the frames read there; the samples too when the frames are
 * known (read, or before the events), else only checked, to be read at
 * the end (at[is]: where). One past the value, or 0 when the checked way
 * must read the text (bad JSON, a key given twice, a loop of frames:
 * what the checked way says about the JSON comes first). */
static size_t after_events(loader *ld, int is, size_t i, size_t *at) {
  if (is >= 3 && at[is] != NONE)
    return 0;
  at[is] = i;
  if (is == 3) {
    size_t end = jq_read_frames(ld, i);
    return ld->frames_loop ? 0 : end;
  }
  if (is == 4 && (ld->frames_read || at[3] != NONE)) {
    if (!ld->frames_read && (!jq_read_frames(ld, at[3]) || ld->frames_loop))
      return 0;
    return jq_read_samples(ld, i);
  }
  return skip_value(&ld->t, i, 0);
}

/* The reading in one pass, for a text shaped as ours and Chrome's are: an
 * object whose keys are plain, with "traceEvents" an array (or a bare
 * array), its "jobqueProfile" (which our writer puts last) found first by a
 * guess. Pass 2 of the checked path checks the JSON as it reads, and this
 * checks the rest of the text: the model, or -1 when anything is not so
 * (bad JSON, a guess that was wrong, an event the hooks refused, another
 * shape): the checked path then reads the text anew, and says what it
 * says in the order it says it. */
static int load_fast(loader *ld) {
  jq_src *t = &ld->t;
  size_t i = ws(t, 0), events = NONE, meta = NONE, guess = NONE, at[5] = {NONE, NONE, NONE, NONE, NONE};
  int is_array = t->s[i] == '[', is = 0;
  if (is_array) {
    events = i;
  } else if (t->s[i] == '{') {
    i = ws(t, i + 1);
    while (events == NONE) {
      if (!(i = top_key(t, i, &is)))
        return -1;
      if (is == 1) {
        events = i;
        break;
      }
      if (is == 2)
        meta = i;
      if (is >= 3 && at[is] != NONE)
        return -1; /* given twice: the checked way reads the last */
      at[is] = i;
      if (!(i = skip_value(t, i, 0)))
        return -1;
      i = ws(t, i);
      if (i >= t->n || t->s[i] != ',')
        return -1;
      i = ws(t, i + 1);
    }
    guess = guess_meta(t, events);
  } else {
    return -1;
  }
  if (events >= t->n || t->s[events] != '[' || !begin(ld, guess != NONE ? guess : meta, is_array))
    return -1;
  int said_no = 0;
  if (!(i = read_events(ld, events, &said_no)))
    return -1;
  if (!is_array) { /* the keys after the events */
    for (;;) {
      i = ws(t, i);
      if (i < t->n && t->s[i] == '}') {
        i++;
        break;
      }
      if (i >= t->n || t->s[i] != ',')
        return -1;
      if (!(i = top_key(t, ws(t, i + 1), &is)) || is == 1)
        return -1;
      if (is == 2)
        meta = i;
      if (!(i = after_events(ld, is, i, at)))
        return -1;
    }
    if (meta != (guess != NONE ? guess : meta) || (guess != NONE && meta == NONE))
      return -1;
  }
  if (ws(t, i) != t->n)
    return -1;
  int got = jq_samples_end(ld, at[3], at[4]);
  if (got <= 0)
    return got < 0 ? -1 : 2;
  return finish_load(ld);
}

/* What the JSON value at s[i] is, in a message's words. */
static const char *json_type(const jq_src *t, size_t i) {
  switch (t->s[i]) {
  case '{':
    return "object";
  case '[':
    return "array";
  case '"':
    return "string";
  case 'n':
    return "null";
  case 't':
  case 'f':
    return "boolean";
  default:
    return "number";
  }
}

/* A checked text whose top value (at s[top]) is no array: 1 when it is an
 * object whose "traceEvents" (at `events`) is an array or an empty object
 * (no events), else 0 with nil and the message pushed. */
static int object_shape(loader *ld, size_t top, size_t events) {
  const jq_src *t = &ld->t;
  lua_State *L = ld->L;
  char c = events != NONE ? t->s[events] : 0;
  if (t->s[top] == '{' && (c == '[' || (c == '{' && t->s[ws(t, events + 1)] == '}')))
    return 1;
  luaL_pushfail(L);
  if (t->s[top] != '{')
    lua_pushfstring(L, "not a trace: the JSON is a %s, not an object with a \"traceEvents\" array",
                    json_type(t, top));
  else if (events == NONE)
    lua_pushliteral(L, "not a trace: no \"traceEvents\" array");
  else
    lua_pushfstring(L, "not a trace: \"traceEvents\" is not an array (it is %s%s)",
                    c == 'n' ? "" : c == '{' ? "an " : "a ", json_type(t, events));
  return 0;
}

/* nil, "offset N: why", "json": what load_trace returns for bad JSON. */
static int json_error(loader *ld) {
  luaL_pushfail(ld->L);
  lua_pushfstring(ld->L, "offset %I: %s", (LUAI_UACINT)ld->t.err_at, ld->t.err);
  lua_pushliteral(ld->L, "json");
  return 3;
}

/* The checked reading: the whole text checked first (pass 1), then read
 * (pass 2). What load_trace returns, on the stack: its count. */
static int load_checked(loader *ld) {
  size_t events, meta, frames, samples;
  int said_no = 0;
  if (!jq_scan_outline(&ld->t, &events, &meta, &frames, &samples))
    return json_error(ld);
  size_t top = ws(&ld->t, 0);
  int is_array = ld->t.s[top] == '[';
  if (is_array)
    events = top;
  else if (!object_shape(ld, top, events))
    return 2;
  if (!begin(ld, meta, is_array))
    return 2;
  if (ld->t.s[events] == '[' && !read_events(ld, events, &said_no))
    return said_no ? 2 : json_error(ld);
  int got = jq_samples_end(ld, is_array ? NONE : frames, is_array ? NONE : samples);
  if (got <= 0)
    return got < 0 ? json_error(ld) : 2;
  return finish_load(ld);
}

/* load_trace(hooks, path [, text]) -> st | nil, message [, "json" | "file"] */
static int l_load_trace(lua_State *L) {
  loader *ld;
  if (!setup(L, &ld))
    return lua_gettop(L) - S_TOP;
  int n;
  if (ws(&ld->t, 0) == ld->t.n) {
    luaL_pushfail(L);
    lua_pushstring(L, ld->t.n ? "not a trace: the file is empty (only white space)" : "not a trace: the file is empty");
    n = 2;
  } else {
    fresh_state(ld);
    if ((n = load_fast(ld)) < 0) {
      fresh_state(ld);
      n = load_checked(ld);
    }
  }
  jq_loader_free(ld);
  lua_pushcfunction(L, mapping_gc); /* the model holds copies of what it needs: the file can go now */
  lua_pushvalue(L, S_BOX);
  if (lua_type(L, -1) == LUA_TUSERDATA)
    lua_call(L, 1, 0);
  else
    lua_pop(L, 2);
  return n;
}

void jq_open_load(lua_State *L) {
  static const luaL_Reg fns[] = {{"load_trace", l_load_trace}, {"order_samples", jq_order_samples}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
