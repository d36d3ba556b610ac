/*
 * load.h - what the loader's files share (load.c reads a trace into the
 * model; load_event.c reads one event's members; load_cells.c keeps the
 * model's columns as C cells and hands them to the model at the end): an
 * event as read, the cells, the loader's state and the Lua stack slots it
 * keeps. Not the reader's face (reader.h is).
 * Owns: nothing (the loader's memory is its userdata's: jq_loader_gc).
 * Must not: be used by the record path. Thread safety: one lua_State per load.
 */
#ifndef JQ_LOAD_H
#define JQ_LOAD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <lua.h>

#include "common/array.h"
#include "reader/json_scan.h"
#include "reader/scratch.h"

#define MAX_US 3e15 /* trace.lua's MAX_US */

/* ---- an event's members (load_event.c) ---- */

enum { V_NONE, V_INT, V_FLT, V_STR, V_TRUE, V_FALSE, V_NULL, V_OBJ, V_ARR };

typedef struct val {
  int kind, esc;
  int64_t i;
  double d;
  size_t at, end; /* a string's bytes: quotes included */
} val;

static inline int is_str_n(const jq_src *t, const val *v, const char *word, size_t len) {
  return v->kind == V_STR && !v->esc && v->end - v->at == len + 2 && memcmp(t->s + v->at + 1, word, len) == 0;
}

/* v is the string literal `word` (no escapes in it). */
#define is_str(t, v, word) is_str_n(t, v, word, sizeof(word) - 1)

enum { A_JOB = 1, A_BYTES = 2, A_CAT = 4, A_ARG = 8, A_OTHER = 16, A_ON = 32, A_QUEUE = 64 };

#define COUNTER_KEYS 8 /* of a "C" event's args, at most, for the fast path */

typedef struct member {
  size_t at, len; /* the key's bytes (no quotes, no escapes) */
  val v;
} member;

typedef struct ev {
  val ph, ts, dur, pid, tid, name, cat, s, args, job, bytes, acat, arg, on, queue;
  int amask; /* the keys args has (A_*) */
  int odd;   /* an escaped key: only the generic path reads it right */
  member mem[COUNTER_KEYS]; /* args' members in file order (a counter's) */
  int nmem;                 /* their count; -1: more, or an escaped key */
} ev;

/* ---- columns built in C ----
 * A column of the model is filled here as 8-byte cells (a tag per cell
 * only once two kinds of value meet in it), then made a Lua list of its
 * exact length at the end (or before the reader's Lua code reads an event
 * that may add to it): no list grows by doubling, and the peak is the model
 * plus the cells not yet turned into lists. */

enum { T_NUM, T_INT, T_STR, T_FALSE, T_NIL, T_LANE };

typedef struct cells {
  jq_vec v;   /* the cells, 8 bytes each: a double's bits, an integer, a string's or a lane's index */
  jq_vec tag; /* a tag byte per cell; empty (p NULL) while every cell's tag is tag0 */
  size_t n;
  unsigned char tag0;
} cells;

static inline uint64_t *cells_v(const cells *c) { return (uint64_t *)(void *)c->v.p; }

static inline int cell_tag(const cells *c, size_t k) { return c->tag.p ? (unsigned char)c->tag.p[k] : c->tag0; }

#define LANE_COLS 7
#define COPY_COLS 7
#define EDGE_COLS 6
#define MARKER_COLS 5
#define SAMPLE_COLS 8 /* ts lane frame weight cat job span line */
#define SAMPLE_REASONS 24 /* why samples were skipped: more than load_samples.c has */

typedef struct lane_buf {
  cells c[LANE_COLS]; /* ts dur cat kind sname job args */
  int dirty;
} lane_buf;

typedef struct track_buf {
  cells ts, value;
  int dirty;
} track_buf;

/* A string of the model: its index in the list at S_STRS. */
typedef struct str_slot {
  const char *p; /* the Lua string's bytes (the list keeps it) */
  size_t len;
  uint64_t hash;
  uint32_t idx; /* 0: a free slot */
} str_slot;

/* A counter track by its event's pid, name and key (strings' indexes). */
typedef struct track_slot {
  int64_t pid;
  uint32_t name, key, idx; /* idx 0: a free slot */
  int has_pid;
} track_slot;

/* A (pid, tid) met lately, and its lane. */
typedef struct lane_key {
  val pid, tid;
  uint32_t lane; /* 0: none */
} lane_key;

#define LANE_KEYS 64

/* ---- the loader: Lua stack slots it keeps ---- */

enum {
  S_HOOKS = 1, S_PATH, S_TEXT, S_BOX, S_NULL, S_ST, S_MODEL,
  S_LD,        /* the loader (a userdata: its C memory freed by __gc) */
  S_STRS,      /* the model's strings the loader met, by index */
  S_LANES,     /* the lanes met, by index; S_LANEIDX: lane -> index */
  S_LANEIDX,
  S_TRACKS,    /* the counter tracks met, by index; S_TRACKIDX: track -> index */
  S_TRACKIDX,
  S_CSTRS,     /* at the end: the strings' userdata of the native columns */
  S_TOP = S_CSTRS
};

typedef struct loader {
  lua_State *L;
  jq_src t;
  int ours;
  double t0, t1;
  lua_Integer nev, nmarkers, ncopies, nextra, nedges;
  size_t progress_at; /* the farthest progress reported */
  /* the strings */
  str_slot *strs;
  size_t strs_mask, nstrs;
  uint32_t s_job, s_submit, s_wait, s_copy, s_slice, s_q, lastcat, lastkind;
  /* the lanes and counter tracks, by index - 1 (lane_buf and track_buf items) */
  jq_vec lanes, tracks;
  size_t nlanes, ntracks;
  track_slot *track_map;
  size_t track_mask, ntrack_keys;
  lane_key lane_keys[LANE_KEYS];
  uint32_t last_lane;
  /* the ones holding cells, by index (uint32_t items) */
  jq_vec dirty_lanes, dirty_tracks;
  /* the model's columns */
  cells copy[COPY_COLS];     /* ts dur lane category name job bytes */
  cells edge[EDGE_COLS];     /* ts lane kind job on queue */
  cells marker[MARKER_COLS]; /* ts kind arg pid tid */
  cells extra;               /* extra_ts */
  /* the samples and their frames (load_samples.c) */
  cells smp[SAMPLE_COLS];
  lua_Integer nsamples, nskipped;
  int64_t weight_sum; /* the weights of the samples read: at most JQ_MAX_WEIGHT */
  const char *skip_why[SAMPLE_REASONS]; /* why samples were skipped, in order of first appearance */
  lua_Integer skip_n[SAMPLE_REASONS];
  jq_vec frame_buf;  /* the frames, in file order */
  jq_vec place_buf;  /* uint32_t by string index: the frame of that id's place + 1 */
  jq_vec num_buf;    /* int32_t by an id's decimal value: the frame's number, or why it has none */
  size_t nframes;
  int32_t nnumbered;
  uint32_t frames_loop; /* the string index of the id of a frame on a loop of parents; 0: none */
  int frames_read, samples_read;
  jq_vec order;              /* time_order's indexes */
  size_t events_at;          /* the events array's '[' */
  int chain_tags;            /* the seed format's chain tags handed to Lua (chain_tags) */
} loader;


/* The events array and an event: the containers open around an event's
 * member (walk's count, which leaves the top object out). */
#define EVENT_DEPTH 2

static inline int is_num(const val *v) { return v->kind == V_INT || v->kind == V_FLT; }

/* A time of ours as the model holds it: the nanoseconds our writer
 * recorded, which it printed in 2048ths of a microsecond (trace.lua's
 * ns_time, the same operations). */
static inline void ns_time(val *v) {
  if (v->kind == V_FLT)
    v->d = floor(v->d * 1000 + 0.5) / 1000;
}

/* ---- load_event.c ---- */

/* The event object at s[i] ('{') into *e: one past it, or 0 and an error. */
size_t jq_read_event(jq_src *t, size_t i, ev *e);

/* The value at s[i] (after white space) into *v, containers skipped
 * (depth0 of them open around it): one past it, or 0 and an error. */
size_t jq_read_value(jq_src *t, size_t i, val *v, int depth0);

/* ---- load_cells.c: the cells, the model's strings, the lanes' indexes ---- */

void jq_col_free(cells *c);
void jq_col_mixed(lua_State *L, cells *c);

/* Appends a cell of kind `tag` (T_*). */
static inline void col_put(lua_State *L, cells *c, int tag, uint64_t bits) {
  unsigned char t = (unsigned char)tag;
  if (c->n == 0 && !c->tag.p)
    c->tag0 = t;
  else if (!c->tag.p && t != c->tag0)
    jq_col_mixed(L, c);
  if ((c->tag.p && !jq_vec_push(&c->tag, &t, 1)) || !jq_vec_push(&c->v, &bits, sizeof bits))
    jq_nomem(L);
  c->n++;
}

static inline void put_d(lua_State *L, cells *c, double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  col_put(L, c, T_NUM, b);
}

static inline void put_i(lua_State *L, cells *c, int64_t i) {
  uint64_t b;
  memcpy(&b, &i, sizeof b);
  col_put(L, c, T_INT, b);
}

static inline double cell_d(const cells *c, uint32_t k) {
  double d;
  memcpy(&d, &cells_v(c)[k], sizeof d);
  return d;
}

/* The loader's C memory freed (idempotent); jq_loader_gc: its userdata's __gc. */
void jq_loader_free(loader *ld);
int jq_loader_gc(lua_State *L);

/* The table of the model's strings grown (or made). */
void jq_strs_grow(loader *ld);

/* The index of the string p[0..len) in the list at S_STRS (put there when
 * new); jq_intern_val: of the string v (a V_STR), its escapes decoded. */
uint32_t jq_intern(loader *ld, const char *p, size_t len);
uint32_t jq_intern_val(loader *ld, const val *v);

/* The index of the table on top (popped) in the list at `list` (by index)
 * and `index` (table -> index), put there when new; *fresh says it was. */
uint32_t jq_table_index(lua_State *L, int list, int index, size_t count, int *fresh);

/* The index of the table on top (popped) in the list at `list` (by index)
 * and `index` (table -> index); when new, an item of `size` zero bytes is
 * added to `items` (*count of them) for it. */
uint32_t jq_item_index(loader *ld, int list, int index, jq_vec *items, size_t *count, size_t size);

/* The index of the lane on top (popped), made a lane of the loader when new. */
uint32_t jq_lane_index(loader *ld);

/* Lane k's and counter track k's cells (k from 1). */
static inline lane_buf *lane_at(loader *ld, uint32_t k) { return (lane_buf *)(void *)ld->lanes.p + (k - 1); }

static inline track_buf *track_at(loader *ld, uint32_t k) { return (track_buf *)(void *)ld->tracks.p + (k - 1); }

/* Puts k (a lane's or a track's index) in the list `dirty`: it holds cells. */
static inline void note_dirty(loader *ld, jq_vec *dirty, uint32_t k) {
  if (!jq_vec_push(dirty, &k, sizeof k))
    jq_nomem(ld->L);
}

/* Every cell into the model's lists (`last`: the load's end, the cells put
 * in time order and their memory freed as each column is done; a column
 * with no item in Lua stays native, see columns.h). */
void jq_flush_all(loader *ld, int last);

/* ---- load.c and load_samples.c ---- */

/* The lane of (pid, tid): its index (the lanes met lately cached). */
uint32_t jq_use_lane(loader *ld, const val *pid, const val *tid);

/* The top object's "stackFrames" value at s[i] read and its frames
 * numbered (ld->frames_read; ld->frames_loop names a frame on a loop of
 * parents, when there is one): one past it, or 0 and an error. */
size_t jq_read_frames(loader *ld, size_t i);

/* The top object's "samples" value at s[i] read into the sample columns
 * (the frames read already, if the file has any; ld->samples_read): one
 * past it, or 0 and an error. */
size_t jq_read_samples(loader *ld, size_t i);

/* Once every key is read: the frames at `frames` and the samples at
 * `samples` not read yet (NONE: none) read, then model.frames and the
 * samples' counts: 1; 0 with nil and a message pushed (a loop of the
 * frames' parents); -1 when the JSON is bad (t's error). */
int jq_samples_end(loader *ld, size_t frames, size_t samples);

/* The loader's frames freed (jq_loader_free). */
void jq_frames_free(loader *ld);

/* order_samples(model [, a, b]): the sample columns by lane (their lanes'
 * indexes already) then time, those whose time is outside [a, b] (when
 * given) dropped: returns how many are kept and dropped, and (when some
 * are kept) the earliest and latest time kept. */
int jq_order_samples(lua_State *L);

#endif
