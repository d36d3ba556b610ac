/*
 * proto_writer.c - formats a session snapshot as a Perfetto protobuf trace:
 * a stream of TracePackets (0x0A, a varint length, the packet), written
 * through a 1 MiB buffer with write(2). Field numbers are Perfetto's
 * (docs/trace-format.md, "Protobuf", lists the ones used).
 *
 * The same events as json_writer.c, with the same names, categories, args
 * and arrow numbers: one packet sequence per lane, timestamps as deltas on
 * a sequence-scoped incremental clock tied to BOOTTIME, names interned per
 * sequence. A lane's slice ends, begins and instants are put in time order
 * first (a ring holds a slice at its end), ends before begins at one time,
 * a longer begin before a shorter one, so that every slice nests as
 * recorded.
 */
#include "record/proto_writer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/file_replace.h"
#include "record/events.h"
#include "record/json_writer.h"
#include "record/sample_tables.h"
#include "record/save_links.h"
#include "record/spans.h"

#if !defined(JQ_WRITE_BUFFER)
#define JQ_WRITE_BUFFER (1048576)
#endif

/* ---- field numbers (Perfetto's protos) ---- */
enum {
  TP_CLOCK_SNAPSHOT = 6, TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11, TP_INTERNED = 12,
  TP_SEQ_FLAGS = 13, TP_CLOCK_ID = 58, TP_DEFAULTS = 59, TP_TRACK_DESC = 60, TP_PERF_SAMPLE = 66,
  TP_FIRST_PACKET = 87, TP_ATTRIBUTES = 126,
  TE_CATEGORY_IIDS = 3, TE_ANNOTATIONS = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK_UUID = 11,
  TE_COUNTER_VALUE = 30, TE_DOUBLE_COUNTER_VALUE = 44, TE_FLOW_IDS = 47, TE_TERMINATING_FLOW_IDS = 48,
  DA_NAME_IID = 1, DA_BOOL = 2, DA_INT = 4, DA_DOUBLE = 5, DA_STRING = 6,
  ID_CATEGORIES = 1, ID_NAMES = 2, ID_ANNOTATION_NAMES = 3, ID_FUNCTION_NAMES = 5, ID_FRAMES = 6,
  ID_CALLSTACKS = 7, ID_MAPPING_PATHS = 17, ID_MAPPINGS = 19, ID_STRING_VALUES = 29,
  TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
  TD_SIBLING_ORDER_RANK = 12, TD_THREAD_ORDERING = 20,
  CS_CLOCKS = 1, CS_PRIMARY = 2, CLOCK_ID = 1, CLOCK_TIMESTAMP = 2, CLOCK_INCREMENTAL = 3,
};
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { CLOCK_REALTIME_ID = 1, CLOCK_MONOTONIC_ID = 3, CLOCK_BOOTTIME_ID = 6, CLOCK_LANE = 64 };

/* Track uuids: the process 1, lane l 2 + l, the others in ranges of their own. */
#define UUID_PROCESS 1u
#define UUID_LANE(l) (2u + (uint64_t)(l))
#define UUID_MARKER(id) ((1ull << 32) + (id))
#define UUID_COUNTER(id) ((2ull << 32) + (id))
#define UUID_JOBS(queue, k) ((3ull << 32) + (uint64_t)(queue) * 4 + (k))
#define UUID_HEAP(l) ((4ull << 32) + (uint64_t)(l))
#define UUID_AWAIT(job) ((8ull << 32) + (uint64_t)(job))

/* ---- the file ---- */
typedef struct out {
  uint8_t *base, *p, *end;
  int fd;
  int err;
} out;

static void out_flush(out *o) {
  if (!o->err)
    o->err = jq_write_all(o->fd, o->base, (size_t)(o->p - o->base));
  o->p = o->base;
}

static void out_put(out *o, const uint8_t *s, size_t n) {
  while (n > 0) {
    if (o->p == o->end)
      out_flush(o);
    size_t room = (size_t)(o->end - o->p), k = n < room ? n : room;
    memcpy(o->p, s, k);
    o->p += k;
    s += k;
    n -= k;
  }
}

static size_t varint_to(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

/* ---- one packet, built in a buffer that grows (offsets, never pointers,
 * across a write) ---- */
typedef struct pk {
  uint8_t *b;
  size_t n, cap;
  int oom;
} pk;

static int pk_room(pk *k, size_t need) {
  if (k->n + need <= k->cap)
    return 1;
  size_t cap = k->cap ? k->cap : 4096;
  while (cap < k->n + need)
    cap *= 2;
  uint8_t *b = realloc(k->b, cap);
  if (!b) {
    k->oom = 1;
    return 0;
  }
  k->b = b;
  k->cap = cap;
  return 1;
}

static inline __attribute__((always_inline)) void pk_varint(pk *k, uint64_t v) {
  if (k->n + 10 > k->cap && !pk_room(k, 10))
    return;
  uint8_t *p = k->b + k->n;
  if (v < 0x80) { /* most tags and small values: one byte */
    *p = (uint8_t)v;
    k->n++;
    return;
  }
  k->n += varint_to(p, v);
}

static inline __attribute__((always_inline)) void pk_uint(pk *k, uint32_t field, uint64_t v) {
  pk_varint(k, (uint64_t)field << 3);
  pk_varint(k, v);
}

static void pk_int(pk *k, uint32_t field, int64_t v) {
  pk_uint(k, field, (uint64_t)v);
}

static void pk_fixed64(pk *k, uint32_t field, uint64_t v) {
  pk_varint(k, ((uint64_t)field << 3) | 1);
  if (!pk_room(k, 8))
    return;
  for (int i = 0; i < 8; i++)
    k->b[k->n++] = (uint8_t)(v >> (8 * i));
}

static void pk_double(pk *k, uint32_t field, double x) {
  uint64_t v;
  memcpy(&v, &x, sizeof v);
  pk_fixed64(k, field, v);
}

/* A string field: the bytes as they are, but each byte of an invalid UTF-8
 * sequence as U+FFFD (a string must be UTF-8). */
/* The length of the valid UTF-8 character at s, or 0. */
static size_t utf8_char(const char *s, size_t n) {
  return (unsigned char)*s < 0x80 ? 1 : jq_utf8_seq((const unsigned char *)s, n);
}

static void pk_string(pk *k, uint32_t field, const char *s, size_t n) {
  size_t len = 0;
  for (size_t i = 0; i < n;) {
    size_t q = utf8_char(s + i, n - i);
    len += q ? q : 3;
    i += q ? q : 1;
  }
  pk_varint(k, ((uint64_t)field << 3) | 2);
  pk_varint(k, len);
  if (!pk_room(k, len))
    return;
  for (size_t i = 0; i < n;) {
    size_t q = utf8_char(s + i, n - i);
    if (q) {
      memcpy(k->b + k->n, s + i, q);
      k->n += q;
      i += q;
    } else {
      memcpy(k->b + k->n, "\xef\xbf\xbd", 3);
      k->n += 3;
      i++;
    }
  }
}

static void pk_cstring(pk *k, uint32_t field, const char *s) {
  pk_string(k, field, s, strlen(s));
}

/* A nested message: its tag and one byte of length, grown at pk_close. */
static size_t pk_open(pk *k, uint32_t field) {
  pk_varint(k, ((uint64_t)field << 3) | 2);
  if (!pk_room(k, 1))
    return 0;
  k->b[k->n] = 0;
  return k->n++;
}

static void pk_close(pk *k, size_t at) {
  if (k->oom)
    return;
  size_t len = k->n - at - 1;
  uint8_t tmp[10];
  size_t w = varint_to(tmp, len);
  if (w > 1) {
    if (!pk_room(k, w - 1))
      return;
    memmove(k->b + at + w, k->b + at + 1, len);
    k->n += w - 1;
  }
  memcpy(k->b + at, tmp, w);
}

/* ---- the writer ---- */

/* The names every sequence interns in its first packet: event names,
 * categories and argument names, each list numbered from 1. */
static const char *const static_names[] = {
    "copy", JQ_NAME_COPY_IN, JQ_NAME_COPY_OUT, JQ_NAME_COPY_RESULT, "cancelled", JQ_NAME_WAKE_JOB,
    "await", "wait", "wait all", "wake", JQ_NAME_DEP_DONE, "after", JQ_NAME_EDGE_WAIT,
    JQ_NAME_EDGE_ALL, "lane full: events dropped"};
enum {
  N_COPY = 1, N_COPY_IN, N_COPY_OUT, N_COPY_RESULT, N_CANCELLED, N_WAKE_JOB, N_AWAIT, N_WAIT,
  N_WAIT_ALL, N_WAKE, N_DEP_DONE, N_AFTER, N_EDGE_WAIT, N_EDGE_ALL, N_LANE_FULL, N_STATIC_END
};
static const char *const static_cats[] = {JQ_CAT_JOB, JQ_CAT_SUBMIT, JQ_CAT_COPY, JQ_CAT_FLOW,
                                          JQ_CAT_WAIT, JQ_CAT_EDGE, "await", "jobque", "worker"};
enum { C_JOB = 1, C_SUBMIT, C_COPY, C_FLOW, C_WAIT, C_EDGE, C_AWAIT, C_JOBQUE, C_WORKER, C_STATIC_END };
static const char *const arg_names[] = {"job", "bytes", "category", "failed", "error", "after",
                                        "dependant", "ready", "awaits", "on", "queue",
                                        "parked_us", "dropped", "span", "piece", "unclosed",
                                        "arg"};
enum {
  A_JOB = 1, A_BYTES, A_CATEGORY, A_FAILED, A_ERROR, A_AFTER, A_DEPENDANT, A_READY, A_AWAITS, A_ON,
  A_QUEUE, A_PARKED_US, A_DROPPED, A_SPAN, A_PIECE, A_UNCLOSED, A_ARG
};

#define NAME_MAX_BYTES 4096 /* of a category's name (session.h's JQ_MAX_NAME) */
#define NSTATIC(a) ((int)(sizeof(a) / sizeof(a)[0]))

/* What one lane's sequence writes, in time order. */
enum { CLS_END, CLS_BEGIN, CLS_POINT }; /* at one time: ends, then begins, then the rest */
enum {
  W_SUBMIT, W_SLICE, W_COPY, W_WAIT, W_AWAIT, W_PIECE, /* slices */
  W_AFTER, W_FLOW, W_DEP, W_MARKER, W_CANCEL, W_EDGE, W_PARK, W_COUNTER, W_COUNTS, W_FULL, W_SAMPLE
};

typedef struct rec {
  uint64_t t;     /* ns */
  uint64_t other; /* a slice's other end (ns) */
  uint64_t idx;   /* ring index, piece index, or dependency index */
  uint64_t seq;   /* order of making */
  uint8_t cls, what;
} rec;

static int cmp_rec(const void *a, const void *b) {
  const rec *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  if (x->cls != y->cls)
    return x->cls < y->cls ? -1 : 1;
  if (x->cls == CLS_BEGIN && x->other != y->other) /* the longer first: it holds the other */
    return x->other > y->other ? -1 : 1;
  if (x->cls == CLS_END && x->other != y->other) /* the later begun first: it is inside */
    return x->other > y->other ? -1 : 1;
  if (x->cls == CLS_END)
    return x->seq > y->seq ? -1 : x->seq < y->seq;
  if (x->what == W_SAMPLE && y->what == W_SAMPLE && x->other != y->other)
    return x->other < y->other ? -1 : 1; /* by ticks, as the JSON's (and its spans) */
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* An interned entry a packet adds. */
typedef struct intern {
  uint32_t field;
  uint64_t iid;
  const char *s;
  size_t len;
  char own[40]; /* for a name made here ("tag N") */
} intern;

/* A sample as its callstack iid stands for it (see put_sample). */
typedef struct sample_ctx {
  uint64_t iid, t, job, span, line;
  uint32_t node;
  uint16_t cat;
} sample_ctx;

typedef struct writer {
  const jq_save_view *v;
  const jq_save_links *l;
  out *o;
  pk k;
  /* the lane being written */
  int lane;
  uint32_t seq_id;
  uint64_t last_t;
  uint64_t gen;          /* the lane's generation: an iid table entry is valid with it */
  uint64_t *cat_name;    /* per tag: gen << 32 | the event-name iid of its name */
  uint64_t *cat_cat;     /* per tag: gen << 32 | the category iid of its name */
  uint64_t *submit_name; /* per tag: ... of "submit <name>" */
  uint64_t *marker_name; /* per marker kind */
  uint64_t next_name, next_cat;
  uint64_t *stack_sent;  /* per tree node: gen << 2 | 1 its frame interned here */
  uint64_t next_stack;   /* the last callstack iid of the sequence */
  sample_ctx last_sample; /* the sequence's last sample */
  jq_span_cursor spans;  /* the lane's span pieces, for its samples */
  char submit_text[8 + NAME_MAX_BYTES]; /* "submit <category>" */
  intern in[8];
  int nin;
  rec *recs;
  size_t nrecs, caprecs;
} writer;

/* ---- names ---- */

/* The name of tag `cat`: its category's, "job" for 0, "tag N". */
static const char *tag_name(const writer *w, uint16_t cat, size_t *len, char *own) {
  int i = w->l->cat_index[cat];
  if (i) {
    *len = w->v->categories[i - 1].len;
    return w->v->categories[i - 1].name;
  }
  if (cat == 0) {
    *len = 3;
    return "job";
  }
  *len = (size_t)snprintf(own, 40, "tag %u", (unsigned)cat);
  return own;
}

/* The iid of an interned entry (its table's `slot`), interning it in this
 * packet when the sequence has not seen it. */
static uint64_t intern_in(writer *w, uint64_t *slot, uint32_t field, const char *s, size_t len) {
  if ((*slot >> 32) == w->gen)
    return *slot & 0xffffffffu;
  uint64_t iid = field == ID_CATEGORIES ? w->next_cat++ : w->next_name++;
  *slot = (w->gen << 32) | iid;
  if (w->nin < NSTATIC(w->in)) {
    intern *e = &w->in[w->nin++];
    e->field = field;
    e->iid = iid;
    if (len < sizeof e->own) { /* a copy: s may be a caller's scratch */
      memcpy(e->own, s, len);
      e->s = e->own;
    } else {
      e->s = s;
    }
    e->len = len;
  }
  return iid;
}

static uint64_t cat_name_iid(writer *w, uint16_t cat) {
  char own[40];
  size_t len;
  const char *s = tag_name(w, cat, &len, own);
  return intern_in(w, &w->cat_name[cat], ID_NAMES, s, len);
}

static uint64_t cat_cat_iid(writer *w, uint16_t cat) {
  char own[40];
  size_t len;
  const char *s = tag_name(w, cat, &len, own);
  return intern_in(w, &w->cat_cat[cat], ID_CATEGORIES, s, len);
}

/* ---- packets ---- */

static void emit(writer *w) {
  uint8_t head[11];
  head[0] = 0x0A;
  size_t h = 1 + varint_to(head + 1, w->k.n);
  if (w->k.oom && !w->o->err)
    w->o->err = ENOMEM;
  if (!w->o->err) {
    out_put(w->o, head, h);
    out_put(w->o, w->k.b, w->k.n);
  }
  w->k.n = 0;
}

/* The start of a packet of the lane's sequence at time t (ns): its
 * sequence, flags, time delta and what it interns. */
static void packet_head(writer *w, uint64_t t) {
  pk *k = &w->k;
  pk_uint(k, TP_SEQ_ID, w->seq_id);
  pk_uint(k, TP_SEQ_FLAGS, 2); /* SEQ_NEEDS_INCREMENTAL_STATE */
  pk_uint(k, TP_TIMESTAMP, t - w->last_t);
  w->last_t = t;
  if (w->nin == 0)
    return;
  size_t at = pk_open(k, TP_INTERNED);
  for (int i = 0; i < w->nin; i++) {
    const intern *e = &w->in[i];
    size_t m = pk_open(k, e->field);
    pk_uint(k, 1, e->iid);
    pk_string(k, 2, e->s, e->len);
    pk_close(k, m);
  }
  pk_close(k, at);
  w->nin = 0;
}

static void annot_int(pk *k, uint64_t name, int64_t v) {
  size_t at = pk_open(k, TE_ANNOTATIONS);
  pk_uint(k, DA_NAME_IID, name);
  pk_int(k, DA_INT, v);
  pk_close(k, at);
}

static void annot_bool(pk *k, uint64_t name) {
  size_t at = pk_open(k, TE_ANNOTATIONS);
  pk_uint(k, DA_NAME_IID, name);
  pk_uint(k, DA_BOOL, 1);
  pk_close(k, at);
}

static void annot_string(pk *k, uint64_t name, const char *s, size_t len) {
  size_t at = pk_open(k, TE_ANNOTATIONS);
  pk_uint(k, DA_NAME_IID, name);
  pk_string(k, DA_STRING, s, len);
  pk_close(k, at);
}

/* The error text recorded after event i (an ellipsis ends a cut one). */
static void annot_error(writer *w, uint64_t i, int64_t job) {
  const jq_event *t = jq_links_text_after(&w->v->lanes[w->lane], i, job);
  if (!t)
    return;
  char text[JQ_TEXT_MAX + 4];
  size_t n = t->id;
  memcpy(text, (const char *)(t + 1), n);
  if (t->flags & JQ_TEXT_CUT) {
    memcpy(text + n, "\xe2\x80\xa6", 3);
    n += 3;
  }
  annot_string(&w->k, A_ERROR, text, n);
}

/* A slice's begin, a point's begin, or an instant: the track event's head. */
static size_t event_open(writer *w, int type, uint64_t track, uint64_t name, uint64_t cat) {
  size_t at = pk_open(&w->k, TP_TRACK_EVENT);
  pk_uint(&w->k, TE_TYPE, (uint64_t)type);
  if (track != UUID_LANE(w->lane))
    pk_uint(&w->k, TE_TRACK_UUID, track);
  if (cat)
    pk_uint(&w->k, TE_CATEGORY_IIDS, cat);
  if (name)
    pk_uint(&w->k, TE_NAME_IID, name);
  return at;
}

static void slice_end(writer *w, uint64_t t, uint64_t track) {
  packet_head(w, t);
  size_t at = pk_open(&w->k, TP_TRACK_EVENT);
  pk_uint(&w->k, TE_TYPE, TYPE_SLICE_END);
  if (track != UUID_LANE(w->lane))
    pk_uint(&w->k, TE_TRACK_UUID, track);
  pk_close(&w->k, at);
  emit(w);
}

/* ---- track descriptors ---- */

static void describe(writer *w, uint64_t uuid, const char *name, size_t len, int counter,
                     const char *share) {
  pk *k = &w->k;
  size_t at = pk_open(k, TP_TRACK_DESC);
  pk_uint(k, TD_UUID, uuid);
  pk_uint(k, TD_PARENT, UUID_PROCESS);
  pk_string(k, TD_NAME, name, len);
  if (counter) {
    size_t c = pk_open(k, TD_COUNTER);
    if (share) {
      pk_uint(k, 3, 2); /* unit: UNIT_COUNT */
      pk_cstring(k, 7, share); /* y_axis_share_key */
    }
    pk_close(k, c);
  }
  pk_close(k, at);
  emit(w);
}


/* ---- the events: the same names, categories, args and arrows as the JSON ---- */

static const jq_event *ev(const writer *w, uint64_t i) {
  return &w->v->lanes[w->lane].events[i];
}

static uint64_t ns_at(const writer *w, uint64_t ticks) {
  return jq_clock_to_ns(&w->v->scale, ticks);
}

static const uint8_t copy_names[4] = {N_COPY, N_COPY_IN, N_COPY_OUT, N_COPY_RESULT};

/* What a slice's begin is: its track, name, category and arrows. */
typedef struct begin {
  uint64_t track, name, cat, flow, term;
} begin;

/* Fills *b for record r (event e); 0 when it is not written. */
static int begin_of(writer *w, const rec *r, const jq_event *e, begin *bg) {
  const jq_save_links *l = w->l;
  uint64_t track = UUID_LANE(w->lane), name = 0, cat = 0, flow = 0, term = 0;
  switch (r->what) {
  case W_SUBMIT: {
    char own[40];
    size_t len;
    const char *s = tag_name(w, e->cat, &len, own);
    if (len > NAME_MAX_BYTES)
      len = NAME_MAX_BYTES;
    memcpy(w->submit_text, "submit ", 7); /* kept until the packet is made */
    memcpy(w->submit_text + 7, s, len);
    name = intern_in(w, &w->submit_name[e->cat], ID_NAMES, w->submit_text, len + 7);
    cat = C_SUBMIT, flow = (uint64_t)e->arg * 2;
    break;
  }
  case W_SLICE:
    name = cat_name_iid(w, e->cat), cat = C_JOB;
    if ((e->flags & JQ_SLICE_FIRST) && jq_links_has(l->submits, l->nsubmits, (uint64_t)e->arg))
      term = (uint64_t)e->arg * 2;
    else if ((e->flags & JQ_SLICE_RESUMED) && jq_links_has(l->wakes, l->nwakes, e->id))
      term = (uint64_t)e->id * 2 + 1;
    break;
  case W_COPY: name = copy_names[e->flags & JQ_COPY_KIND], cat = C_COPY; break;
  case W_WAIT: name = e->arg ? N_WAIT : N_WAIT_ALL, cat = C_WAIT; break;
  case W_AWAIT: name = N_AWAIT, cat = C_AWAIT, track = UUID_AWAIT(e->arg); break;
  case W_PIECE: {
    const jq_piece *pc = &l->pieces.p[r->idx];
    name = cat_name_iid(w, pc->cat), cat = cat_cat_iid(w, pc->cat);
    break;
  }
  case W_AFTER: name = N_AFTER, cat = C_FLOW, term = (uint64_t)l->deps[r->idx].edge * 2 + 1; break;
  case W_FLOW: name = N_WAKE_JOB, cat = C_FLOW, flow = (uint64_t)e->id * 2 + 1; break;
  case W_DEP:
    name = N_DEP_DONE, cat = C_FLOW;
    if (jq_links_has(l->firsts, l->nfirsts, (uint64_t)e->arg))
      flow = (uint64_t)e->id * 2 + 1;
    break;
  default: return 0;
  }
  *bg = (begin){track, name, cat, flow, term};
  return 1;
}

/* The args of record r's begin (event e), as the JSON's. */
static void begin_args(writer *w, const rec *r, const jq_event *e) {
  pk *k = &w->k;
  const jq_save_links *l = w->l;
  switch (r->what) {
  case W_SUBMIT: annot_int(k, A_JOB, e->arg); break;
  case W_SLICE:
    annot_int(k, A_JOB, e->arg);
    if (e->flags & JQ_SLICE_FAILED) {
      annot_bool(k, A_FAILED);
      annot_error(w, r->idx, e->arg);
    }
    break;
  case W_COPY: {
    char own[40];
    size_t len;
    const char *s = tag_name(w, e->cat, &len, own);
    annot_int(k, A_JOB, e->arg);
    annot_int(k, A_BYTES, (int64_t)e->id);
    annot_string(k, A_CATEGORY, s, len);
    if (e->flags & JQ_COPY_FAILED) {
      annot_bool(k, A_FAILED);
      annot_error(w, r->idx, e->arg);
    }
    break;
  }
  case W_WAIT:
    if (e->arg)
      annot_int(k, A_JOB, e->arg);
    break;
  case W_AWAIT:
    annot_int(k, A_JOB, e->arg);
    annot_int(k, A_AWAITS, (int64_t)e->id);
    break;
  case W_PIECE: {
    const jq_piece *pc = &l->pieces.p[r->idx];
    annot_int(k, A_SPAN, (int64_t)pc->span);
    if (pc->job)
      annot_int(k, A_JOB, (int64_t)pc->job);
    annot_int(k, A_PIECE, pc->piece);
    if (pc->unclosed)
      annot_bool(k, A_UNCLOSED);
    break;
  }
  case W_AFTER:
    annot_int(k, A_JOB, (int64_t)l->deps[r->idx].dependant);
    annot_int(k, A_AFTER, (int64_t)l->deps[r->idx].dep);
    break;
  case W_FLOW: annot_int(k, A_JOB, e->arg); break;
  case W_DEP:
    annot_int(k, A_JOB, (int64_t)e->t1);
    annot_int(k, A_DEPENDANT, e->arg);
    if (e->flags & JQ_DEP_READY)
      annot_bool(k, A_READY);
    break;
  default: break;
  }
}

/* A slice's begin (or a point's, with its end right after). */
static void put_begin(writer *w, const rec *r) {
  const jq_event *e = r->what == W_PIECE || r->what == W_AFTER ? NULL : ev(w, r->idx);
  begin bg;
  if (!begin_of(w, r, e, &bg))
    return;
  packet_head(w, r->t);
  size_t at = event_open(w, TYPE_SLICE_BEGIN, bg.track, bg.name, bg.cat);
  begin_args(w, r, e);
  if (bg.flow)
    pk_fixed64(&w->k, TE_FLOW_IDS, bg.flow);
  if (bg.term)
    pk_fixed64(&w->k, TE_TERMINATING_FLOW_IDS, bg.term);
  pk_close(&w->k, at);
  emit(w);
  if (r->cls == CLS_POINT)
    slice_end(w, r->t, bg.track);
}

static uint64_t marker_iid(writer *w, uint32_t id) {
  const jq_save_name *m = &w->v->markers[id - 1];
  return intern_in(w, &w->marker_name[id], ID_NAMES, m->name, m->len);
}

/* An instant: a marker on its kind's track, the others on the lane's. */
static void put_instant(writer *w, const rec *r) {
  pk *k = &w->k;
  const jq_event *e = r->what == W_FULL ? NULL : ev(w, r->idx);
  static const uint8_t edge_names[4] = {0, N_EDGE_WAIT, N_AFTER, N_EDGE_ALL};
  uint64_t name, cat, track = UUID_LANE(w->lane);
  switch (r->what) {
  case W_MARKER:
    if (e->id == 0 || e->id > (uint32_t)w->v->nmarkers)
      return;
    name = marker_iid(w, e->id), cat = 0, track = UUID_MARKER(e->id);
    break;
  case W_CANCEL: name = N_CANCELLED, cat = C_JOBQUE; break;
  case W_EDGE:
    if (e->flags < JQ_EDGE_WAIT || e->flags > JQ_EDGE_ALL)
      return;
    name = edge_names[e->flags], cat = C_EDGE;
    break;
  case W_PARK: name = N_WAKE, cat = C_WORKER; break;
  case W_FULL: name = N_LANE_FULL, cat = C_JOBQUE; break;
  default: return;
  }
  packet_head(w, r->t);
  size_t at = event_open(w, TYPE_INSTANT, track, name, cat);
  switch (r->what) {
  case W_MARKER: annot_int(k, A_ARG, e->arg); break;
  case W_CANCEL: {
    char own[40];
    size_t len;
    const char *s = tag_name(w, e->cat, &len, own);
    annot_int(k, A_JOB, e->arg);
    annot_string(k, A_CATEGORY, s, len);
    break;
  }
  case W_EDGE:
    if (e->t1)
      annot_int(k, A_JOB, (int64_t)e->t1);
    if (e->flags == JQ_EDGE_ALL)
      annot_int(k, A_QUEUE, (int64_t)e->id);
    else
      annot_int(k, A_ON, e->arg);
    break;
  case W_PARK: {
    uint64_t a = ns_at(w, e->t0), z = ns_at(w, e->t1);
    size_t d = pk_open(k, TE_ANNOTATIONS);
    pk_uint(k, DA_NAME_IID, A_PARKED_US);
    pk_double(k, DA_DOUBLE, jq_json_dur_us(a, z)); /* the JSON's, to the bit */
    pk_close(k, d);
    break;
  }
  case W_FULL: annot_int(k, A_DROPPED, (int64_t)w->v->lanes[w->lane].dropped); break;
  default: break;
  }
  pk_close(k, at);
  emit(w);
}

static void counter_packet(writer *w, uint64_t t, uint64_t track, int is_double, int64_t v) {
  packet_head(w, t);
  size_t at = pk_open(&w->k, TP_TRACK_EVENT);
  pk_uint(&w->k, TE_TYPE, TYPE_COUNTER);
  pk_uint(&w->k, TE_TRACK_UUID, track);
  if (is_double) {
    double x;
    memcpy(&x, &v, sizeof x);
    pk_double(&w->k, TE_DOUBLE_COUNTER_VALUE, x);
  } else {
    pk_int(&w->k, TE_COUNTER_VALUE, v);
  }
  pk_close(&w->k, at);
  emit(w);
}

static void put_counter(writer *w, const rec *r) {
  const jq_event *e = ev(w, r->idx);
  if (r->what == W_COUNTER) {
    if (e->id >= 1 && e->id <= (uint32_t)w->v->ncounters)
      counter_packet(w, r->t, UUID_COUNTER(e->id), (e->flags & JQ_COUNTER_DOUBLE) != 0, e->arg);
    return;
  }
  uint32_t queue = w->l->counts_queues ? e->cat : 0;
  for (int i = 0; i < 3; i++)
    counter_packet(w, r->t, UUID_JOBS(queue, i), 0, (int64_t)jq_counts_field(e->arg, i));
  if (!(e->flags & JQ_COUNTS_START)) /* the heap is sampled at slice ends */
    counter_packet(w, r->t, UUID_HEAP(w->lane), 0, (int64_t)e->id);
}

/* ---- samples: W perf_sample packets of an interned callstack ----
 * Perfetto's perf_sample has no field for what a reader of ours needs from
 * a sample beyond its stack (the JSON's category, job, span and line) nor a
 * frame's kind: each sample's callstack iid (reused by the next sample of
 * the lane when all of it is the same) also names an interned
 * debug_annotation_string_values entry, "JOB SPAN LINE KINDS CATEGORY"
 * (decimal, 0 for none; a letter per frame root first: l Lua, c C, r
 * synthetic; the category's name, the rest of the bytes). Perfetto keeps it
 * unused. */

/* Interns (in the packet being made) tree node `node`'s frames not sent
 * yet, each a function name, the one mapping, rel_pc its iid, and the
 * callstack `iid` of them, root first; puts their kinds' letters at
 * kinds (root first) and returns how many. */
static int intern_stack(writer *w, uint32_t node, uint64_t iid, char *kinds) {
  pk *k = &w->k;
  const jq_frame_tree *t = w->l->tree;
  uint32_t path[512]; /* a stack: at most sample_depth (256) frames and [truncated] */
  int n = 0;
  for (uint32_t id = node; id && n < (int)(sizeof path / sizeof path[0]); id = t->nodes[id].parent)
    path[n++] = id;
  for (int i = n - 1; i >= 0; i--) { /* root first; each new node's function and frame */
    uint32_t id = path[i];
    size_t len;
    int kind;
    const char *s = jq_links_frame_text(w->v, t->nodes[id].lane, t->nodes[id].frame, &len, &kind);
    kinds[n - 1 - i] = kind == JQ_FRAME_LUA ? 'l' : kind == JQ_FRAME_C ? 'c' : 'r';
    if ((w->stack_sent[id] >> 2) != w->gen)
      w->stack_sent[id] = w->gen << 2;
    if (w->stack_sent[id] & 1)
      continue;
    size_t m = pk_open(k, ID_FUNCTION_NAMES);
    pk_uint(k, 1, id);
    pk_string(k, 2, s, len);
    pk_close(k, m);
    m = pk_open(k, ID_FRAMES);
    pk_uint(k, 1, id);
    pk_uint(k, 2, id); /* function_name_id */
    pk_uint(k, 3, 1);  /* mapping_id: the one "lua" mapping */
    pk_uint(k, 4, id); /* rel_pc */
    pk_close(k, m);
    w->stack_sent[id] |= 1;
  }
  size_t m = pk_open(k, ID_CALLSTACKS);
  pk_uint(k, 1, iid);
  for (int i = n - 1; i >= 0; i--)
    pk_uint(k, 2, path[i]); /* frame_ids, root first */
  pk_close(k, m);
  return n;
}

/* Interns sample c's callstack and its context string (see above). */
static void intern_sample(writer *w, const sample_ctx *c) {
  char text[4 * 24 + 512 + NAME_MAX_BYTES], own[40];
  pk *k = &w->k;
  size_t at = pk_open(k, TP_INTERNED);
  char kinds[512];
  int n = intern_stack(w, c->node, c->iid, kinds);
  size_t len;
  const char *cat = c->cat == 0 && !w->l->cat_index[0] ? "no category" : tag_name(w, c->cat, &len, own);
  if (c->cat == 0 && !w->l->cat_index[0])
    len = strlen(cat);
  if (len > NAME_MAX_BYTES)
    len = NAME_MAX_BYTES;
  int h = snprintf(text, sizeof text, "%llu %llu %llu %.*s ", (unsigned long long)c->job,
                   (unsigned long long)c->span, (unsigned long long)c->line, n, kinds);
  memcpy(text + h, cat, len);
  size_t m = pk_open(k, ID_STRING_VALUES);
  pk_uint(k, 1, c->iid);
  pk_string(k, 2, text, (size_t)h + len);
  pk_close(k, m);
  pk_close(k, at);
}

static void put_sample(writer *w, const rec *r) {
  const jq_event *e = ev(w, r->idx);
  const jq_frame_tree *t = w->l->tree;
  uint32_t ns = w->v->lanes[w->lane].stab ? jq_stab_nstacks(w->v->lanes[w->lane].stab) : 0;
  if (!t || !t->node_of[w->lane] || e->id < 1 || e->id > ns)
    return;
  sample_ctx c = {0, r->t, (uint64_t)e->arg, jq_span_at(&w->spans, e->t0), jq_sample_line(e->t1),
                  t->node_of[w->lane][e->id], e->cat};
  sample_ctx *last = &w->last_sample;
  int fresh = !last->iid || c.t == last->t || c.node != last->node || c.cat != last->cat ||
              c.job != last->job || c.span != last->span || c.line != last->line;
  c.iid = fresh ? ++w->next_stack : last->iid; /* a new one at one time: samples stay apart */
  *last = c;
  uint64_t weight = jq_sample_weight(e->t1);
  long tid = w->v->lanes[w->lane].os_tid;
  for (uint64_t i = 0; i < weight && !w->o->err; i++) {
    pk *k = &w->k;
    packet_head(w, r->t);
    if (i == 0 && fresh)
      intern_sample(w, &c);
    size_t at = pk_open(k, TP_PERF_SAMPLE);
    pk_uint(k, 1, 0);
    pk_uint(k, 2, (uint64_t)w->v->pid);
    pk_uint(k, 3, (uint64_t)(tid > 0 ? tid : 0x40000000L + w->lane));
    pk_uint(k, 4, c.iid);
    pk_close(k, at);
    emit(w);
  }
}

/* ---- one lane: its records in time order, then its packets ---- */

static int add(writer *w, uint64_t t, uint64_t other, uint64_t idx, int cls, int what) {
  if (w->nrecs == w->caprecs) {
    size_t cap = w->caprecs ? 2 * w->caprecs : 1024;
    rec *r = realloc(w->recs, cap * sizeof *r);
    if (!r)
      return ENOMEM;
    w->recs = r;
    w->caprecs = cap;
  }
  w->recs[w->nrecs] = (rec){t, other, idx, w->nrecs, (uint8_t)cls, (uint8_t)what};
  w->nrecs++;
  return 0;
}

/* A slice from a to z (ns): a begin and an end, or a point when it has no
 * length (its begin and end written together). */
static int add_slice(writer *w, uint64_t a, uint64_t z, uint64_t idx, int what) {
  if (z <= a)
    return add(w, a, a, idx, CLS_POINT, what);
  int rc = add(w, a, z, idx, CLS_BEGIN, what);
  return rc ? rc : add(w, z, a, idx, CLS_END, what);
}

static int add_event(writer *w, uint64_t i) {
  const jq_event *e = ev(w, i);
  uint64_t a = ns_at(w, e->t0), z = ns_at(w, e->t1);
  switch (e->kind) {
  case JQ_EV_SUBMIT: return add_slice(w, a, z, i, W_SUBMIT);
  case JQ_EV_SLICE: {
    int rc = add_slice(w, a, z, i, W_SLICE);
    if (rc || !(e->flags & JQ_SLICE_FIRST))
      return rc;
    /* the ends of the arrows of its `after` dependencies, where a reader
     * of the JSON finds them: 1/2048 us apart from its start, at most at
     * its end */
    const jq_save_links *l = w->l;
    uint64_t rank = 0;
    for (size_t k = jq_links_first_dep(l, (uint64_t)e->arg);
         k < l->ndeps && l->deps[k].dependant == (uint64_t)e->arg && !rc; k++) {
      uint64_t t = jq_json_after_ns(a, z, ++rank);
      rc = add(w, t, t, k, CLS_POINT, W_AFTER);
    }
    return rc;
  }
  case JQ_EV_COPY: return add_slice(w, a, z, i, W_COPY);
  case JQ_EV_WAIT: return add_slice(w, a, z, i, W_WAIT);
  case JQ_EV_AWAIT: return add_slice(w, a, z, i, W_AWAIT);
  case JQ_EV_FLOW: return add(w, a, a, i, CLS_POINT, W_FLOW);
  case JQ_EV_DEP: return add(w, a, a, i, CLS_POINT, W_DEP);
  case JQ_EV_MARKER: return add(w, a, a, i, CLS_POINT, W_MARKER);
  case JQ_EV_CANCEL: return add(w, a, a, i, CLS_POINT, W_CANCEL);
  case JQ_EV_EDGE: return add(w, a, a, i, CLS_POINT, W_EDGE);
  case JQ_EV_PARK: return add(w, z, z, i, CLS_POINT, W_PARK);
  case JQ_EV_COUNTER: return add(w, a, a, i, CLS_POINT, W_COUNTER);
  case JQ_EV_COUNTS: return add(w, a, a, i, CLS_POINT, W_COUNTS);
  case JQ_EV_SAMPLE: return add(w, a, e->t0, i, CLS_POINT, W_SAMPLE);
  default: return 0; /* a text: with the event before it; span ends: as pieces */
  }
}

/* The lane's records: its events and span pieces, in time order. */
static int gather(writer *w) {
  const jq_save_lane *lane = &w->v->lanes[w->lane];
  jq_pieces *ps = (jq_pieces *)&w->l->pieces; /* made for this lane here */
  size_t piece = 0;
  int rc = jq_pieces_lane(ps, w->lane);
  w->nrecs = 0;
  for (uint64_t i = 0; i < lane->count && !rc; i += jq_event_span(&lane->events[i])) {
    rc = add_event(w, i);
    for (; !rc && piece < ps->n && ps->p[piece].lane == w->lane && ps->p[piece].anchor == i; piece++)
      rc = add_slice(w, ns_at(w, ps->p[piece].t0), ns_at(w, ps->p[piece].t1), piece, W_PIECE);
  }
  if (!rc && lane->dropped > 0) {
    uint64_t t = ns_at(w, lane->full_at);
    rc = add(w, t, t, 0, CLS_POINT, W_FULL);
  }
  size_t sorted = 1; /* a lane of instants alone is in order already */
  while (!rc && sorted < w->nrecs && cmp_rec(&w->recs[sorted - 1], &w->recs[sorted]) <= 0)
    sorted++;
  if (!rc && sorted < w->nrecs)
    qsort(w->recs, w->nrecs, sizeof *w->recs, cmp_rec);
  return rc;
}

/* The sequence's first packet: its incremental state cleared, the lane's
 * track and clock as defaults, the clock tied to BOOTTIME, the static
 * names interned. */
static void sequence_start(writer *w) {
  pk *k = &w->k;
  uint64_t boot0 = (uint64_t)w->v->where.boottime_ns;
  pk_uint(k, TP_TIMESTAMP, boot0);
  pk_uint(k, TP_CLOCK_ID, CLOCK_BOOTTIME_ID);
  pk_uint(k, TP_SEQ_ID, w->seq_id);
  pk_uint(k, TP_SEQ_FLAGS, 3); /* cleared, and needs it */
  pk_uint(k, TP_FIRST_PACKET, 1);
  size_t at = pk_open(k, TP_DEFAULTS);
  pk_uint(k, TP_CLOCK_ID, CLOCK_LANE);
  size_t d = pk_open(k, TP_TRACK_EVENT);
  pk_uint(k, TE_TRACK_UUID, UUID_LANE(w->lane));
  pk_close(k, d);
  pk_close(k, at);
  at = pk_open(k, TP_CLOCK_SNAPSHOT);
  size_t c = pk_open(k, CS_CLOCKS);
  pk_uint(k, CLOCK_ID, CLOCK_LANE);
  pk_uint(k, CLOCK_TIMESTAMP, 0);
  pk_uint(k, CLOCK_INCREMENTAL, 1);
  pk_close(k, c);
  c = pk_open(k, CS_CLOCKS);
  pk_uint(k, CLOCK_ID, CLOCK_BOOTTIME_ID);
  pk_uint(k, CLOCK_TIMESTAMP, boot0);
  pk_close(k, c);
  pk_close(k, at);
  at = pk_open(k, TP_INTERNED);
  for (int i = 0; i < NSTATIC(static_names); i++) {
    size_t m = pk_open(k, ID_NAMES);
    pk_uint(k, 1, (uint64_t)i + 1);
    pk_cstring(k, 2, static_names[i]);
    pk_close(k, m);
  }
  for (int i = 0; i < NSTATIC(static_cats); i++) {
    size_t m = pk_open(k, ID_CATEGORIES);
    pk_uint(k, 1, (uint64_t)i + 1);
    pk_cstring(k, 2, static_cats[i]);
    pk_close(k, m);
  }
  for (int i = 0; i < NSTATIC(arg_names); i++) {
    size_t m = pk_open(k, ID_ANNOTATION_NAMES);
    pk_uint(k, 1, (uint64_t)i + 1);
    pk_cstring(k, 2, arg_names[i]);
    pk_close(k, m);
  }
  size_t m = pk_open(k, ID_MAPPING_PATHS);
  pk_uint(k, 1, 1);
  pk_cstring(k, 2, "lua");
  pk_close(k, m);
  m = pk_open(k, ID_MAPPINGS);
  pk_uint(k, 1, 1);
  pk_uint(k, 7, 1); /* path_string_ids */
  pk_close(k, m);
  pk_close(k, at);
  emit(w);
  w->last_t = 0;
  w->next_name = N_STATIC_END;
  w->next_cat = C_STATIC_END;
  w->nin = 0;
  w->next_stack = 0;
  memset(&w->last_sample, 0, sizeof w->last_sample);
}

static int write_lane(writer *w, int lane) {
  w->lane = lane;
  w->seq_id = (uint32_t)lane + 1;
  w->gen++;
  int rc = gather(w);
  if (!rc)
    rc = jq_span_cursor_init(&w->spans, &w->l->pieces, lane);
  if (rc) {
    jq_span_cursor_free(&w->spans);
    return rc;
  }
  sequence_start(w);
  for (size_t i = 0; i < w->nrecs && !w->o->err; i++) {
    const rec *r = &w->recs[i];
    if (r->cls == CLS_END) {
      uint64_t track = r->what == W_AWAIT ? UUID_AWAIT(ev(w, r->idx)->arg) : UUID_LANE(lane);
      slice_end(w, r->t, track);
    } else if (r->what <= W_DEP) {
      put_begin(w, r);
    } else if (r->what == W_COUNTER || r->what == W_COUNTS) {
      put_counter(w, r);
    } else if (r->what == W_SAMPLE) {
      put_sample(w, r);
    } else {
      put_instant(w, r);
    }
  }
  jq_span_cursor_free(&w->spans);
  return 0;
}

/* ---- the setup: the clocks, the process, its lanes and other tracks ---- */

static void put_clocks(writer *w) {
  pk *k = &w->k;
  const jq_save_where *wh = &w->v->where;
  size_t at = pk_open(k, TP_CLOCK_SNAPSHOT);
  const struct { uint32_t id; int64_t ns; } clocks[3] = {
      {CLOCK_BOOTTIME_ID, wh->boottime_ns}, {CLOCK_REALTIME_ID, wh->realtime_ns},
      {CLOCK_MONOTONIC_ID, wh->monotonic_ns}};
  for (int i = 0; i < 3; i++) {
    size_t c = pk_open(k, CS_CLOCKS);
    pk_uint(k, CLOCK_ID, clocks[i].id);
    pk_uint(k, CLOCK_TIMESTAMP, (uint64_t)clocks[i].ns);
    pk_close(k, c);
  }
  pk_uint(k, CS_PRIMARY, CLOCK_BOOTTIME_ID);
  pk_close(k, at);
  pk_uint(k, TP_TIMESTAMP, (uint64_t)wh->boottime_ns);
  emit(w);
}

static void put_process_tracks(writer *w) {
  pk *k = &w->k;
  size_t at = pk_open(k, TP_TRACK_DESC); /* the root: lanes in our order */
  pk_uint(k, TD_UUID, 0);
  pk_uint(k, TD_THREAD_ORDERING, 1); /* EXPLICIT */
  pk_close(k, at);
  emit(w);
  at = pk_open(k, TP_TRACK_DESC);
  pk_uint(k, TD_UUID, UUID_PROCESS);
  size_t p = pk_open(k, TD_PROCESS);
  pk_uint(k, 1, (uint64_t)w->v->pid);
  pk_cstring(k, 6, "jobque_profile");
  pk_close(k, p);
  pk_close(k, at);
  emit(w);
  for (int l = 0; l < w->v->nlanes; l++) {
    const jq_save_lane *lane = &w->v->lanes[l];
    at = pk_open(k, TP_TRACK_DESC);
    pk_uint(k, TD_UUID, UUID_LANE(l));
    size_t t = pk_open(k, TD_THREAD);
    pk_uint(k, 1, (uint64_t)w->v->pid);
    pk_uint(k, 2, (uint64_t)(lane->os_tid > 0 ? lane->os_tid : 0x40000000L + l));
    pk_string(k, 5, lane->name, strnlen(lane->name, sizeof lane->name));
    pk_close(k, t);
    pk_uint(k, TD_SIBLING_ORDER_RANK, (uint64_t)l);
    pk_close(k, at);
    emit(w);
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The tracks of markers, counters, the queue's counts, heaps and awaits
 * that the events use, each described once. */
static int put_other_tracks(writer *w) {
  const jq_save_view *v = w->v;
  uint8_t *markers = calloc((size_t)v->nmarkers + 1, 1), *counters = calloc((size_t)v->ncounters + 1, 1);
  uint8_t *queues = calloc(65536, 1), *heaps = calloc((size_t)v->nlanes + 1, 1);
  uint64_t *awaits = NULL;
  size_t nawaits = 0, capawaits = 0;
  int rc = markers && counters && queues && heaps ? 0 : ENOMEM;
  for (int l = 0; l < v->nlanes && !rc; l++)
    for (uint64_t i = 0; i < v->lanes[l].count && !rc; i += jq_event_span(&v->lanes[l].events[i])) {
      const jq_event *e = &v->lanes[l].events[i];
      if (e->kind == JQ_EV_MARKER && e->id >= 1 && e->id <= (uint32_t)v->nmarkers)
        markers[e->id] = 1;
      else if (e->kind == JQ_EV_COUNTER && e->id >= 1 && e->id <= (uint32_t)v->ncounters)
        counters[e->id] = 1;
      else if (e->kind == JQ_EV_COUNTS) {
        queues[w->l->counts_queues ? e->cat : 0] = 1;
        heaps[l] |= !(e->flags & JQ_COUNTS_START);
      } else if (e->kind == JQ_EV_AWAIT) {
        if (nawaits == capawaits) {
          capawaits = capawaits ? 2 * capawaits : 256;
          uint64_t *a = realloc(awaits, capawaits * sizeof *a);
          if (!a) {
            rc = ENOMEM;
            break;
          }
          awaits = a;
        }
        awaits[nawaits++] = (uint64_t)e->arg;
      }
    }
  char name[NAME_MAX_BYTES + 64];
  for (int id = 1; id <= v->nmarkers && !rc; id++)
    if (markers[id])
      describe(w, UUID_MARKER(id), v->markers[id - 1].name, v->markers[id - 1].len, 0, NULL);
  for (int id = 1; id <= v->ncounters && !rc; id++)
    if (counters[id]) {
      size_t n = v->counters[id - 1].len < NAME_MAX_BYTES ? v->counters[id - 1].len : NAME_MAX_BYTES;
      memcpy(name, v->counters[id - 1].name, n);
      memcpy(name + n, " value", 6);
      describe(w, UUID_COUNTER(id), name, n + 6, 1, NULL);
    }
  static const char *const fields[3] = {"ready", "running", "suspended"};
  for (uint32_t q = 0; q < 65536 && !rc; q++)
    for (int i = 0; i < 3 && queues[q]; i++) {
      int n = w->l->counts_queues ? snprintf(name, sizeof name, "jobs (queue %u) %s", q, fields[i])
                                  : snprintf(name, sizeof name, "jobs %s", fields[i]);
      describe(w, UUID_JOBS(q, i), name, (size_t)n, 1, "jobs");
    }
  for (int l = 0; l < v->nlanes && !rc; l++)
    if (heaps[l]) {
      const char *ln = v->lanes[l].name;
      int n = jq_links_lane_name_shared(v, l)
                  ? snprintf(name, sizeof name, "heap %.40s (tid %d) KB", ln, l + 1)
                  : snprintf(name, sizeof name, "heap %.40s KB", ln);
      describe(w, UUID_HEAP(l), name, (size_t)n, 1, NULL);
    }
  if (!rc && nawaits)
    qsort(awaits, nawaits, sizeof *awaits, cmp_u64);
  for (size_t i = 0; i < nawaits && !rc; i++)
    if (i == 0 || awaits[i] != awaits[i - 1])
      describe(w, UUID_AWAIT(awaits[i]), "await", 5, 0, NULL);
  free(markers);
  free(counters);
  free(queues);
  free(heaps);
  free(awaits);
  return rc;
}

/* The trace attribute jobqueProfile: the JSON file's object of that name
 * (the legend, the lanes, the counts), for a reader of ours. */
static int put_attributes(writer *w) {
  char *text;
  size_t len;
  int rc = jq_json_profile_text(w->v, w->l, &text, &len);
  if (rc)
    return rc;
  pk *k = &w->k;
  size_t at = pk_open(k, TP_ATTRIBUTES);
  size_t a = pk_open(k, 1);
  pk_cstring(k, 1, "jobqueProfile");
  pk_string(k, 3, text, len);
  pk_close(k, a);
  pk_close(k, at);
  emit(w);
  free(text);
  return 0;
}

static int write_trace(writer *w) {
  put_clocks(w);
  int rc = put_attributes(w);
  if (rc)
    return rc;
  put_process_tracks(w);
  rc = put_other_tracks(w);
  for (int l = 0; l < w->v->nlanes && !rc && !w->o->err; l++)
    rc = write_lane(w, l);
  out_flush(w->o);
  return rc ? rc : w->o->err;
}

/* jq_replace_with's writer: the trace into the file's fd. */
static int proto_write_to(int fd, void *arg) {
  writer *w = arg;
  w->o->fd = fd;
  return write_trace(w);
}

int jq_proto_save(const jq_save_view *v, const char *path, char *err, size_t errlen) {
  jq_save_links links;
  out o = {NULL, NULL, NULL, -1, 0};
  writer w;
  memset(&w, 0, sizeof w);
  w.v = v;
  w.l = &links;
  w.o = &o;
  int rc = jq_save_links_init(&links, v);
  uint32_t nodes = links.tree ? links.tree->n : 0;
  w.cat_name = calloc(65536, sizeof(uint64_t));
  w.cat_cat = calloc(65536, sizeof(uint64_t));
  w.submit_name = calloc(65536, sizeof(uint64_t));
  w.marker_name = calloc((size_t)v->nmarkers + 1, sizeof(uint64_t));
  w.stack_sent = calloc((size_t)nodes + 1, sizeof(uint64_t));
  o.base = malloc(JQ_WRITE_BUFFER);
  if (rc || !w.cat_name || !w.cat_cat || !w.submit_name || !w.marker_name || !w.stack_sent ||
      !o.base) {
    snprintf(err, errlen, "cannot save trace to '%s': out of memory", path);
    rc = ENOMEM;
    goto done;
  }
  o.p = o.base;
  o.end = o.base + JQ_WRITE_BUFFER;
  rc = jq_replace_with(path, proto_write_to, &w, err, errlen);
done:
  jq_save_links_free(&links);
  free(w.cat_name);
  free(w.cat_cat);
  free(w.submit_name);
  free(w.marker_name);
  free(w.stack_sent);
  free(w.recs);
  free(w.k.b);
  free(o.base);
  return rc;
}
