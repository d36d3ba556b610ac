/*
 * proto_rd.h - what the protobuf reader's files share (proto_read.c: the
 * wire, the passes and the events; proto_json.c: the samples and the JSON
 * text's head and tail): the reader's state and its helpers. Not the
 * reader's face (proto_read.h is).
 * Owns: nothing. Must not: call Lua. Thread safety: one reading per state.
 */
#ifndef JQ_PROTO_RD_H
#define JQ_PROTO_RD_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/json_put.h"

/* ---- field numbers (Perfetto's protos, as the writer's) ---- */
enum {
  TP_CLOCK_SNAPSHOT = 6, TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11, TP_INTERNED = 12,
  TP_SEQ_FLAGS = 13, TP_CLOCK_ID = 58, TP_DEFAULTS = 59, TP_TRACK_DESC = 60, TP_PERF_SAMPLE = 66,
  TP_ATTRIBUTES = 126,
  TE_CATEGORIES = 22, TE_CATEGORY_IIDS = 3, TE_ANNOTATIONS = 4, TE_TYPE = 9, TE_NAME_IID = 10,
  TE_NAME = 23, TE_TRACK_UUID = 11, TE_EXTRA_COUNTER_VALUES = 12, TE_COUNTER_VALUE = 30,
  TE_EXTRA_COUNTER_UUIDS = 31, TE_DOUBLE_COUNTER_VALUE = 44, TE_EXTRA_DOUBLE_UUIDS = 45,
  TE_EXTRA_DOUBLE_VALUES = 46, TE_FLOW_IDS = 47, TE_TERMINATING_FLOW_IDS = 48,
  ID_CATEGORIES = 1, ID_NAMES = 2, ID_ANNOTATION_NAMES = 3, ID_FUNCTION_NAMES = 5, ID_FRAMES = 6,
  ID_CALLSTACKS = 7, ID_STRING_VALUES = 29,
  CLOCK_BOOTTIME = 6, CLOCK_LANE = 64,
};
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { TABLES = 7 }; /* a sequence's interned tables: names, categories, ... */
enum { T_NAMES, T_CATS, T_ANAMES, T_FNAMES, T_FRAMES, T_STACKS, T_SVALS };

#define MAX_ANNOTS 32 /* of one event; the writer puts at most 6 */
#define MAX_EXTRA 8   /* extra counter values of one event */

typedef struct str {
  const char *p;
  size_t n;
} str;

/* uint64 -> nonzero uint64, open addressing; 0 is "none". */
typedef struct u64map {
  uint64_t *k, *v;
  size_t cap, n;
} u64map;

/* splitmix64's finalizer: every bit of a key moves the slot (keys come from
 * the file: iids, uuids, job ids). */
static inline uint64_t map_mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static inline uint64_t map_get(const u64map *m, uint64_t key) {
  if (!m->cap)
    return 0;
  for (size_t i = (size_t)map_mix(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (m->v[i] == 0)
      return 0;
    if (m->k[i] == key)
      return m->v[i];
  }
}

static inline int map_put(u64map *m, uint64_t key, uint64_t val);

static inline int map_grow(u64map *m) {
  u64map g = {NULL, NULL, m->cap ? m->cap * 2 : 64, 0};
  g.k = malloc(g.cap * sizeof *g.k);
  g.v = calloc(g.cap, sizeof *g.v);
  if (!g.k || !g.v) {
    free(g.k);
    free(g.v);
    return ENOMEM;
  }
  for (size_t i = 0; i < m->cap; i++)
    if (m->v[i])
      map_put(&g, m->k[i], m->v[i]);
  free(m->k);
  free(m->v);
  *m = g;
  return 0;
}

/* Sets key to val (nonzero): 0 or ENOMEM. */
static inline int map_put(u64map *m, uint64_t key, uint64_t val) {
  if (2 * (m->n + 1) > m->cap && map_grow(m) != 0)
    return ENOMEM;
  size_t i = (size_t)map_mix(key) & (m->cap - 1);
  while (m->v[i] != 0 && m->k[i] != key)
    i = (i + 1) & (m->cap - 1);
  m->n += m->v[i] == 0;
  m->k[i] = key;
  m->v[i] = val;
  return 0;
}

static inline void map_clear(u64map *m) {
  if (m->cap)
    memset(m->v, 0, m->cap * sizeof *m->v);
  m->n = 0;
}

static inline void map_free(u64map *m) {
  free(m->k);
  free(m->v);
  memset(m, 0, sizeof *m);
}

/* ---- the reader's state ---- */

enum { K_OTHER, K_THREAD, K_PROCESS, K_COUNTER };

typedef struct track {
  uint64_t uuid;
  int kind, lane;    /* lane: a thread track's index */
  str name, key;     /* a counter's: the JSON's name and its args key */
  uint64_t rank;
  int has_rank;
  size_t top;        /* the innermost open slice on it: index + 1 into opens */
} track;

#define CLOSED ((size_t)-1) /* an open_slice's track once it ended */

typedef struct open_slice {
  size_t track, prev; /* prev: the one it is inside on its track (index + 1) */
  uint64_t ns;
  size_t at, len;     /* its begin's TrackEvent */
  struct seq *sq;
  uint32_t depth;     /* on its track, from 0 */
  int is_job;         /* a job's slice (category "job") */
  size_t job_at;      /* the innermost job slice open at it, itself included (index + 1), 0: none */
} open_slice;

/* A slice written later than its end: a span piece inside a job's slice
 * (the JSON has it right after that slice), an `after` arrow's end (its
 * time is found from its job's first slice once that is known). */
typedef struct later {
  size_t owner; /* a piece's job slice (index into opens); an end's job id */
  uint64_t a, z;
  uint32_t depth;
  open_slice o;
  track *t;
  size_t next;  /* an end's: the next waiting for the same job (index + 1), 0: none */
  int done;     /* an end's: written */
} later;

typedef struct first_slice {
  uint64_t a, z, ends; /* ns; the `after` ends put in it so far */
} first_slice;

typedef struct gframe {
  uint64_t id, parent;
  str name;
  char kind;
} gframe;

typedef struct gsample {
  uint64_t ns, iid, leaf, weight;
  int lane;
  str ctx;
} gsample;

typedef struct seq {
  uint64_t id;
  int lane, valid, clock; /* clock: the defaults' timestamp clock, 0 for BOOTTIME */
  uint64_t def_track, inc, nextra, ndextra;
  uint64_t extra[MAX_EXTRA], dextra[MAX_EXTRA];
  int64_t inc_boot;       /* BOOTTIME at inc 0 */
  u64map tab[TABLES];
} seq;

typedef struct rd {
  const unsigned char *s;
  size_t n;
  jq_vec *out;
  char *err;
  size_t errlen;
  int fail; /* ENOMEM or -1 */
  str profile;
  int64_t boot0;
  int has_boot0;
  track *tracks;
  size_t ntracks, captracks;
  u64map track_of; /* uuid -> index + 1 */
  int nlanes;
  str process_name;
  jq_vec strs;   /* str: the interned entries */
  jq_vec opens;  /* open_slice */
  jq_vec frames; /* gframe */
  jq_vec samples; /* gsample */
  u64map frame_of; /* id -> index + 1 */
  seq **seqs;
  size_t nseqs;
  u64map seq_of; /* sequence id -> index + 1 into seqs */
  jq_vec pieces;     /* later: pieces waiting for their job's slice */
  jq_vec afters;     /* later: `after` ends, waiting for their job's first slice */
  u64map after_head, after_tail; /* job id -> its first and last waiting end (index + 1) */
  jq_vec firsts;     /* first_slice */
  u64map first_of;   /* job id -> index + 1 into firsts */
  size_t last_c; /* where the last "C" event ends in out (0: none), its time, lane and name */
  uint64_t last_c_ns;
  int last_c_tid;
  str last_c_name;
} rd;

typedef struct field {
  uint32_t num;
  int wt;
  uint64_t v;    /* a varint's value, a fixed64's or fixed32's bits */
  size_t at, len; /* a length-delimited field's bytes; at also: where the field starts */
} field;

#define LIT(p, s) (memcpy((p), (s), sizeof(s) - 1), (p) + sizeof(s) - 1)
#define WHOLE ((size_t)-1) /* a damage of the whole file, not at a byte */

/* proto_read.c */
int pr_damaged(rd *r, size_t at, const char *why);
int pr_oom(rd *r);
int pr_varint(rd *r, size_t *at, size_t end, uint64_t *v);
int pr_next_field(rd *r, size_t *pos, size_t end, field *f);
str pr_field_str(const rd *r, const field *f);
char *pr_room(rd *r, size_t need);
void pr_done(rd *r, char *p);
char *pr_put_str(char *p, str s);
str pr_looked_up(const rd *r, const seq *sq, int t, uint64_t iid);
int pr_is_str(str s, const char *lit);

/* proto_json.c */
int pr_perf_sample(rd *r, seq *sq, const field *pf, uint64_t ns);
int pr_put_lanes(rd *r);
int pr_put_tail(rd *r);

#endif
