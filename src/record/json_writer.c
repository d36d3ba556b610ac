/*
 * json_writer.c - formats a session snapshot as Perfetto-compatible JSON.
 *
 * No Lua API, no locks, no stdio on the per-event path: events are formatted
 * into one large buffer with the routines below and written with write(2).
 * One string escaper (json_escape) and one integer formatter (jq_put_u64,
 * digits.h, shared with the reader's page and graph writers)
 * produce everything; times are integer nanoseconds printed, with integer
 * arithmetic, as microseconds in 2048ths (see put_us).
 */
#define _GNU_SOURCE /* memfd_create */
#include "record/json_writer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/digits.h"
#include "common/file_replace.h"
#include "common/json_put.h"
#include "record/events.h"
#include "record/sample_tables.h"
#include "record/save_progress.h"
#include "record/save_links.h"
#include "record/spans.h"

#if !defined(JQ_WRITE_BUFFER)
#define JQ_WRITE_BUFFER (1048576)
#endif
#define EVENT_MAX 400 /* an event's bytes, less its escaped names */

typedef struct wbuf {
  char *p, *end; /* next byte, end of buffer */
  char *base;
  int fd;
  int err; /* first write error (errno) */
  jq_progress *prog; /* told at each flush: */
  uint64_t done, written; /* events written, bytes flushed */
} wbuf;

static void wbuf_flush(wbuf *b) {
  size_t n = (size_t)(b->p - b->base);
  if (b->err) { /* the save has failed: what is left is dropped, and no line shown */
    b->p = b->base;
    return;
  }
  b->err = jq_write_all(b->fd, b->base, n);
  b->p = b->base;
  b->written += n;
  jq_progress_at(b->prog, b->done, b->written);
}

/* Room for n more bytes (n <= JQ_WRITE_BUFFER). */
static inline char *wbuf_room(wbuf *b, size_t n) {
  if ((size_t)(b->end - b->p) < n)
    wbuf_flush(b);
  return b->p;
}

static void wbuf_put(wbuf *b, const char *s, size_t n) {
  while (n > 0) {
    size_t room = (size_t)(b->end - b->p);
    if (room == 0) {
      wbuf_flush(b);
      room = (size_t)(b->end - b->p);
    }
    size_t k = n < room ? n : room;
    memcpy(b->p, s, k);
    b->p += k;
    s += k;
    n -= k;
  }
}

#define PUT_LIT(b, lit) wbuf_put((b), (lit), sizeof(lit) - 1)
/* A list item: the literal starts with the comma, which the first item skips. */
#define PUT_ITEM(b, first, lit) wbuf_put((b), (lit) + !!(first), sizeof(lit) - 1 - !!(first))

static inline char *put_lit(char *p, const char *s, size_t n) {
  memcpy(p, s, n);
  return p + n;
}
#define LIT(p, lit) put_lit((p), (lit), sizeof(lit) - 1)

/* Hexadecimal digits: lower case, then upper case from 16. */
static const char hex_digits[] = "0123456789abcdef0123456789ABCDEF";

uint64_t jq_json_after_ns(uint64_t a_ns, uint64_t z_ns, uint64_t k) {
  return jq_ns_read(jq_after_point(a_ns, z_ns, k));
}

double jq_json_dur_us(uint64_t a_ns, uint64_t z_ns) {
  jq_us_time d = jq_us_diff(jq_us_of(a_ns), jq_us_of(z_ns > a_ns ? z_ns : a_ns));
  return (double)d.whole + d.frac / 2048.0;
}

static inline char *put_us(char *p, uint64_t ns) {
  return jq_put_us_time(p, jq_us_of(ns));
}

/* The length from a to z (ns, a <= z): the difference of the two printed
 * times, so that a reader's ts + dur is the end's time. */
static inline char *put_dur(char *p, uint64_t a, uint64_t z) {
  return jq_put_us_time(p, jq_us_diff(jq_us_of(a), jq_us_of(z)));
}

/* The longest escape of n input bytes: "\u00XX" per byte, 3 bytes of U+FFFD
 * per invalid byte. */
#define ESCAPED_MAX(n) ((n) * 6)

/* Per marker kind, the part of an event after its lane: the escaped name
 * and the start of args, ready to copy. The block has COPY_CHUNK bytes of
 * slack, so a short fragment is copied with one fixed-size memcpy. */
#define COPY_CHUNK 64
#define MARKER_TAIL "\",\"args\":{\"arg\":"

typedef struct fragments {
  char *text;
  size_t *off; /* fragment i is text[off[i] .. off[i + 1]) */
} fragments;

static int name_fragments(fragments *f, const jq_save_name *names, int n, const char *tail) {
  size_t bytes = COPY_CHUNK, tlen = strlen(tail);
  for (int i = 0; i < n; i++)
    bytes += ESCAPED_MAX(names[i].len) + tlen;
  f->text = malloc(bytes);
  f->off = malloc(sizeof(size_t) * ((size_t)n + 1));
  if (!f->text || !f->off)
    return ENOMEM;
  char *p = f->text;
  for (int i = 0; i < n; i++) {
    f->off[i] = (size_t)(p - f->text);
    p = jq_json_escape(p, names[i].name, names[i].len);
    p = put_lit(p, tail, tlen);
  }
  f->off[n] = (size_t)(p - f->text);
  memset(p, 0, COPY_CHUNK);
  return 0;
}

/* Copies n bytes from a source with COPY_CHUNK readable bytes into a
 * destination with COPY_CHUNK bytes of room. */
static inline char *copy_fragment(char *p, const char *s, size_t n) {
  if (n <= COPY_CHUNK)
    memcpy(p, s, COPY_CHUNK);
  else
    memcpy(p, s, n);
  return p + n;
}

static void put_string(wbuf *b, const char *s, size_t n) {
  if (ESCAPED_MAX(n) + 2 <= JQ_WRITE_BUFFER) {
    char *p = wbuf_room(b, ESCAPED_MAX(n) + 2);
    *p++ = '"';
    p = jq_json_escape(p, s, n);
    *p++ = '"';
    b->p = p;
  } else { /* a huge name: escape it in pieces that do not split a character */
    PUT_LIT(b, "\"");
    while (n > 0) {
      size_t k = n < 4096 ? n : 4096;
      while (k < n && k > 4092 && (((unsigned char)s[k]) & 0xc0) == 0x80)
        k--;
      char *p = wbuf_room(b, ESCAPED_MAX(k));
      b->p = jq_json_escape(p, s, k);
      s += k;
      n -= k;
    }
    PUT_LIT(b, "\"");
  }
}

static void put_number(wbuf *b, int64_t v) {
  char *p = wbuf_room(b, 24);
  b->p = jq_put_i64(p, v);
}

static void put_color(wbuf *b, uint32_t color) {
  char *p = wbuf_room(b, 9);
  *p++ = '"';
  *p++ = '#';
  for (int shift = 20; shift >= 0; shift -= 4)
    *p++ = hex_digits[16 + ((color >> shift) & 15)]; /* upper case */
  *p++ = '"';
  b->p = p;
}

/* The lane metadata: name and order, as Perfetto reads them. */
static void put_lane_meta(wbuf *b, const jq_save_lane *lane, int tid) {
  PUT_LIT(b, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":");
  put_number(b, tid);
  PUT_LIT(b, ",\"name\":\"thread_name\",\"args\":{\"name\":");
  put_string(b, lane->name, strlen(lane->name));
  PUT_LIT(b, "}},\n{\"ph\":\"M\",\"pid\":1,\"tid\":");
  put_number(b, tid);
  PUT_LIT(b, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
  put_number(b, tid - 1);
  PUT_LIT(b, "}}");
}

/* What events of several lanes need: the cross-lane facts (save_links.h)
 * and the escaped names of categories, counters and marker kinds. */
typedef struct context {
  const jq_save_view *v;
  jq_save_links *l;
  const fragments *marks;
  fragments cats;     /* escaped category names, in view order */
  fragments counters; /* escaped counter names, by id - 1 */
} context;

static int context_init(context *c, jq_save_links *l, const jq_save_view *v, const fragments *marks) {
  memset(c, 0, sizeof *c);
  c->v = v;
  c->l = l;
  c->marks = marks;
  if (jq_save_links_init(l, v) != 0)
    return ENOMEM;
  size_t bytes = COPY_CHUNK;
  for (int i = 0; i < v->ncategories; i++)
    bytes += ESCAPED_MAX(v->categories[i].len);
  c->cats.text = malloc(bytes);
  c->cats.off = malloc(sizeof(size_t) * ((size_t)v->ncategories + 1));
  if (!c->cats.text || !c->cats.off)
    return ENOMEM;
  char *p = c->cats.text;
  for (int i = 0; i < v->ncategories; i++) {
    c->cats.off[i] = (size_t)(p - c->cats.text);
    p = jq_json_escape(p, v->categories[i].name, v->categories[i].len);
  }
  c->cats.off[v->ncategories] = (size_t)(p - c->cats.text);
  return name_fragments(&c->counters, v->counters, v->ncounters, "");
}

static void context_free(context *c) {
  free(c->cats.text);
  free(c->cats.off);
  free(c->counters.text);
  free(c->counters.off);
  if (c->l)
    jq_save_links_free(c->l);
}

/* The name of tag `cat`, escaped: its category's, "job" untagged, "tag N". */
static char *put_cat(char *p, const context *c, uint16_t cat) {
  int i = c->l->cat_index[cat];
  if (i) {
    size_t n = c->cats.off[i] - c->cats.off[i - 1];
    memcpy(p, c->cats.text + c->cats.off[i - 1], n);
    return p + n;
  }
  if (cat == 0)
    return LIT(p, "job");
  p = LIT(p, "tag ");
  return jq_put_u64(p, cat);
}

static size_t cat_len(const context *c, uint16_t cat) {
  int i = c->l->cat_index[cat];
  return i ? c->cats.off[i] - c->cats.off[i - 1] : 16;
}

/* ts and dur of a slice from a to z (ns). */
static inline char *put_span_ns(char *p, uint64_t a, uint64_t z) {
  p = put_us(p, a);
  p = LIT(p, ",\"dur\":");
  return put_dur(p, a, z > a ? z : a);
}

#ifdef JQ_TESTING
size_t jq_json_span_text(char *out, uint64_t a_ns, uint64_t z_ns) {
  return (size_t)(put_span_ns(out, a_ns, z_ns) - out);
}
#endif

/* ts and dur of a span, from ticks. */
static char *put_span(char *p, const jq_clock_scale *s, const jq_event *e) {
  return put_span_ns(p, jq_clock_to_ns(s, e->t0), jq_clock_to_ns(s, e->t1));
}

/* The room an error text takes in args. */
#define ERROR_MAX (ESCAPED_MAX(JQ_TEXT_MAX) + 16)

/* ,"error":"..." for a text event (an ellipsis ends a cut message). */
static char *put_error(char *p, const jq_event *t) {
  if (!t)
    return p;
  p = LIT(p, ",\"error\":\"");
  p = jq_json_escape(p, (const char *)(t + 1), t->id);
  if (t->flags & JQ_TEXT_CUT)
    p = LIT(p, "\xe2\x80\xa6");
  *p++ = '"';
  return p;
}

static const char *const copy_names[4] = {"copy", JQ_NAME_COPY_IN, JQ_NAME_COPY_OUT,
                                                  JQ_NAME_COPY_RESULT};

/* One lane being written: its events' common part between ts and the name
 * (",\"pid\":1,\"tid\":N,\"name\":\""), made once. */
typedef struct lane_out {
  wbuf *b;
  const context *c;
  const jq_save_lane *lane;
  char head[COPY_CHUNK];
  size_t headlen;
  size_t piece; /* the next of c->l->pieces to write */
  int index;    /* the lane's, in the view */
  char heap[40 + ESCAPED_MAX(40)]; /* "heap <lane name>[ (tid N)]", escaped: its counter's name */
  size_t heaplen;
} lane_out;

static inline char *put_head(char *p, const lane_out *o) {
  memcpy(p, o->head, COPY_CHUNK); /* headlen <= COPY_CHUNK: one fixed-size copy */
  return p + o->headlen;
}

static inline uint64_t ns_at(const lane_out *o, uint64_t ticks) {
  return jq_clock_to_ns(&o->c->v->scale, ticks);
}

/* The start of a complete slice, up to its name: ph, ts, dur, pid, tid. */
static char *put_span_head(char *p, const lane_out *o, const jq_event *e) {
  p = LIT(p, ",\n{\"ph\":\"X\",\"ts\":");
  p = put_span(p, &o->c->v->scale, e);
  return put_head(p, o);
}

/* The start of an instant up to its name; scope `s` is "g" or "t". */
static char *put_instant_head(char *p, const lane_out *o, char scope, uint64_t ns) {
  p = LIT(p, ",\n{\"ph\":\"i\",\"s\":\"");
  *p++ = scope;
  p = LIT(p, "\",\"ts\":");
  p = put_us(p, ns);
  return put_head(p, o);
}

/* ,"bind_id":N,"flow_in":true (or flow_out). */
static char *put_bind(char *p, uint64_t bind, int out) {
  p = LIT(p, ",\"bind_id\":");
  p = jq_put_u64(p, bind);
  return out ? LIT(p, ",\"flow_out\":true") : LIT(p, ",\"flow_in\":true");
}

/* ,"failed":true with the error text recorded after event i, if any. */
static char *put_failed(char *p, const lane_out *o, uint64_t i, int64_t job) {
  p = LIT(p, ",\"failed\":true");
  return put_error(p, jq_links_text_after(o->lane, i, job));
}

static void put_marker(const lane_out *o, const jq_event *e) {
  const fragments *marks = o->c->marks;
  if (e->id == 0 || e->id > (uint32_t)o->c->v->nmarkers)
    return;
  size_t flen = marks->off[e->id] - marks->off[e->id - 1];
  char *p = wbuf_room(o->b, EVENT_MAX + flen);
  p = put_instant_head(p, o, 'g', ns_at(o, e->t0));
  p = copy_fragment(p, marks->text + marks->off[e->id - 1], flen);
  p = jq_put_i64(p, e->arg);
  o->b->p = LIT(p, "}}");
}

static void put_submit(const lane_out *o, const jq_event *e) {
  char *p = wbuf_room(o->b, EVENT_MAX + cat_len(o->c, e->cat));
  p = put_span_head(p, o, e);
  p = LIT(p, "submit ");
  p = put_cat(p, o->c, e->cat);
  p = LIT(p, "\",\"cat\":\"" JQ_CAT_SUBMIT "\",\"args\":{\"job\":");
  p = jq_put_i64(p, e->arg);
  p = LIT(p, "}");
  p = put_bind(p, (uint64_t)e->arg * 2, 1);
  o->b->p = LIT(p, "}");
}

/* The head of a zero-length slice at time t, up to its name (Perfetto
 * binds flows to slices, so arrows start and end on such points). */
static char *put_point_at(char *p, const lane_out *o, jq_us_time t) {
  p = LIT(p, ",\n{\"ph\":\"X\",\"ts\":");
  p = jq_put_us_time(p, t);
  p = LIT(p, ",\"dur\":0");
  return put_head(p, o);
}

static char *put_point_head(char *p, const lane_out *o, uint64_t t0) {
  return put_point_at(p, o, jq_us_of(ns_at(o, t0)));
}

/* The ends of the arrows from a job's `after` dependencies: one zero-length
 * slice per dependency in the job's first slice `e`, since a slice carries
 * one bind_id and the first one has the submit's. The k-th lies k/2048 us
 * after the slice's start (at most at its end): speedscope ends a
 * zero-length slice before it begins another slice at the same time, so
 * such a slice at its parent's start, or beside another, is never opened. */
static void put_after_ends(const lane_out *o, const jq_event *e) {
  const context *c = o->c;
  uint64_t a = ns_at(o, e->t0), z = ns_at(o, e->t1), rank = 0;
  for (size_t k = jq_links_first_dep(c->l, (uint64_t)e->arg); k < c->l->ndeps && c->l->deps[k].dependant == (uint64_t)e->arg;
       k++) {
    char *p = wbuf_room(o->b, EVENT_MAX);
    p = put_point_at(p, o, jq_after_point(a, z, ++rank));
    p = LIT(p, "after\",\"cat\":\"" JQ_CAT_FLOW "\",\"args\":{\"job\":");
    p = jq_put_i64(p, e->arg);
    p = LIT(p, ",\"after\":");
    p = jq_put_u64(p, c->l->deps[k].dep);
    p = LIT(p, "}");
    p = put_bind(p, (uint64_t)c->l->deps[k].edge * 2 + 1, 0);
    o->b->p = LIT(p, "}");
  }
}

/* An `after` dependency done, where it finished: a zero-length slice that
 * starts the arrow to the dependant's first slice (when that was recorded),
 * and marks when the dependant became ready. */
static void put_dep(const lane_out *o, const jq_event *e) {
  const context *c = o->c;
  char *p = wbuf_room(o->b, EVENT_MAX);
  p = put_point_head(p, o, e->t0);
  p = LIT(p, JQ_NAME_DEP_DONE "\",\"cat\":\"" JQ_CAT_FLOW "\",\"args\":{\"job\":");
  p = jq_put_u64(p, e->t1);
  p = LIT(p, ",\"dependant\":");
  p = jq_put_i64(p, e->arg);
  if (e->flags & JQ_DEP_READY)
    p = LIT(p, ",\"ready\":true");
  p = LIT(p, "}");
  if (jq_links_has(c->l->firsts, c->l->nfirsts, (uint64_t)e->arg))
    p = put_bind(p, (uint64_t)e->id * 2 + 1, 1);
  o->b->p = LIT(p, "}");
}

/* A slice of a job; its arrow in from the submit (first slice) or from the
 * finished job it awaited (resumed), when that end was recorded too. */
static void put_slice(const lane_out *o, const jq_event *e, uint64_t i) {
  const context *c = o->c;
  char *p = wbuf_room(o->b, EVENT_MAX + cat_len(c, e->cat) + ERROR_MAX);
  p = put_span_head(p, o, e);
  p = put_cat(p, c, e->cat);
  p = LIT(p, "\",\"cat\":\"" JQ_CAT_JOB "\",\"args\":{\"job\":");
  p = jq_put_i64(p, e->arg);
  if (e->flags & JQ_SLICE_FAILED)
    p = put_failed(p, o, i, e->arg);
  p = LIT(p, "}");
  if ((e->flags & JQ_SLICE_FIRST) && jq_links_has(c->l->submits, c->l->nsubmits, (uint64_t)e->arg))
    p = put_bind(p, (uint64_t)e->arg * 2, 0);
  else if ((e->flags & JQ_SLICE_RESUMED) && jq_links_has(c->l->wakes, c->l->nwakes, e->id))
    p = put_bind(p, (uint64_t)e->id * 2 + 1, 0);
  o->b->p = LIT(p, "}");
  if (e->flags & JQ_SLICE_FIRST)
    put_after_ends(o, e);
}

static void put_copy(const lane_out *o, const jq_event *e, uint64_t i) {
  char *p = wbuf_room(o->b, EVENT_MAX + cat_len(o->c, e->cat) + ERROR_MAX);
  p = put_span_head(p, o, e);
  const char *name = copy_names[e->flags & JQ_COPY_KIND];
  p = put_lit(p, name, strlen(name));
  p = LIT(p, "\",\"cat\":\"" JQ_CAT_COPY "\",\"args\":{\"job\":");
  p = jq_put_i64(p, e->arg);
  p = LIT(p, ",\"bytes\":");
  p = jq_put_u64(p, e->id);
  p = LIT(p, ",\"category\":\"");
  p = put_cat(p, o->c, e->cat);
  p = LIT(p, "\"");
  if (e->flags & JQ_COPY_FAILED)
    p = put_failed(p, o, i, e->arg);
  o->b->p = LIT(p, "}}");
}

static void put_cancel(const lane_out *o, const jq_event *e) {
  char *p = wbuf_room(o->b, EVENT_MAX + cat_len(o->c, e->cat));
  p = put_instant_head(p, o, 't', ns_at(o, e->t0));
  p = LIT(p, "cancelled\",\"cat\":\"jobque\",\"args\":{\"job\":");
  p = jq_put_i64(p, e->arg);
  p = LIT(p, ",\"category\":\"");
  p = put_cat(p, o->c, e->cat);
  o->b->p = LIT(p, "\"}}");
}

/* The arrow's start: a zero-length slice (Perfetto binds flows to slices). */
static void put_flow(const lane_out *o, const jq_event *e) {
  char *p = wbuf_room(o->b, EVENT_MAX);
  p = put_point_head(p, o, e->t0);
  p = LIT(p, JQ_NAME_WAKE_JOB "\",\"cat\":\"" JQ_CAT_FLOW "\",\"args\":{\"job\":");
  p = jq_put_i64(p, e->arg);
  p = LIT(p, "}");
  p = put_bind(p, (uint64_t)e->id * 2 + 1, 1);
  o->b->p = LIT(p, "}");
}

/* Lower-case hexadecimal digits of v, no leading zeros. */
static char *put_hex(char *p, uint64_t v) {
  char tmp[16];
  int n = 0;
  do {
    tmp[n++] = hex_digits[v & 15];
    v >>= 4;
  } while (v);
  while (n)
    *p++ = tmp[--n];
  return p;
}

/* An await: an async begin and end pair keyed by the waiting job. */
static void put_await(const lane_out *o, const jq_event *e) {
  char *p = wbuf_room(o->b, 2 * EVENT_MAX);
  for (int end = 0; end < 2; end++) {
    p = LIT(p, ",\n{\"ph\":\"");
    *p++ = end ? 'e' : 'b';
    p = LIT(p, "\",\"ts\":");
    p = put_us(p, ns_at(o, end ? e->t1 : e->t0));
    p = put_head(p, o);
    p = LIT(p, "await\",\"cat\":\"await\",\"id2\":{\"local\":\"0x");
    p = put_hex(p, (uint64_t)e->arg);
    p = LIT(p, "\"},\"args\":{\"job\":");
    p = jq_put_i64(p, e->arg);
    p = LIT(p, ",\"awaits\":");
    p = jq_put_u64(p, e->id);
    p = LIT(p, "}}");
  }
  o->b->p = p;
}

static void put_wait(const lane_out *o, const jq_event *e) {
  char *p = wbuf_room(o->b, EVENT_MAX);
  p = put_span_head(p, o, e);
  if (e->arg) {
    p = LIT(p, "wait\",\"cat\":\"" JQ_CAT_WAIT "\",\"args\":{\"job\":");
    p = jq_put_i64(p, e->arg);
    p = LIT(p, "}}");
  } else {
    p = LIT(p, "wait all\",\"cat\":\"" JQ_CAT_WAIT "\"}");
  }
  o->b->p = p;
}

/* A happens-before edge: an instant on the lane where the waiter went on,
 * named by what it waited for; args.job the waiting job (none outside
 * jobs), args.on the job waited for (a wait, an after) or args.queue the
 * queue's number (every job of it). */
static void put_edge(const lane_out *o, const jq_event *e) {
  static const char *const names[4] = {NULL, JQ_NAME_EDGE_WAIT, JQ_NAME_EDGE_AFTER, JQ_NAME_EDGE_ALL};
  if (e->flags < JQ_EDGE_WAIT || e->flags > JQ_EDGE_ALL)
    return;
  char *p = wbuf_room(o->b, EVENT_MAX);
  p = put_instant_head(p, o, 't', ns_at(o, e->t0));
  p = put_lit(p, names[e->flags], strlen(names[e->flags]));
  p = LIT(p, "\",\"cat\":\"" JQ_CAT_EDGE "\",\"args\":{");
  if (e->t1) {
    p = LIT(p, "\"job\":");
    p = jq_put_u64(p, e->t1);
    *p++ = ',';
  }
  if (e->flags == JQ_EDGE_ALL) {
    p = LIT(p, "\"queue\":");
    p = jq_put_u64(p, e->id);
  } else {
    p = LIT(p, "\"on\":");
    p = jq_put_i64(p, e->arg);
  }
  o->b->p = LIT(p, "}}");
}

/* A park: an instant where the worker woke, with how long it slept. */
static void put_park(const lane_out *o, const jq_event *e) {
  char *p = wbuf_room(o->b, EVENT_MAX);
  uint64_t a = ns_at(o, e->t0), z = ns_at(o, e->t1);
  p = put_instant_head(p, o, 't', z);
  p = LIT(p, "wake\",\"cat\":\"worker\",\"args\":{\"parked_us\":");
  p = put_dur(p, a, z > a ? z : a);
  o->b->p = LIT(p, "}}");
}

/* Where the lane stopped recording, when its ring filled. */
static void put_lane_full(const lane_out *o) {
  char *p = wbuf_room(o->b, EVENT_MAX);
  p = put_instant_head(p, o, 't', ns_at(o, o->lane->full_at));
  p = LIT(p, "lane full: events dropped\",\"cat\":\"jobque\",\"args\":{\"dropped\":");
  p = jq_put_u64(p, o->lane->dropped);
  o->b->p = LIT(p, "}}");
}

/* The pieces of spans written after event i of the lane (spans.c). */
static void put_pieces(lane_out *o, uint64_t i) {
  const jq_pieces *ps = &o->c->l->pieces;
  for (; o->piece < ps->n && ps->p[o->piece].lane == o->index && ps->p[o->piece].anchor == i;
       o->piece++) {
    const jq_piece *pc = &ps->p[o->piece];
    size_t clen = cat_len(o->c, pc->cat);
    char *p = wbuf_room(o->b, EVENT_MAX + 2 * clen);
    p = LIT(p, ",\n{\"ph\":\"X\",\"ts\":");
    p = put_span_ns(p, ns_at(o, pc->t0), ns_at(o, pc->t1));
    p = put_head(p, o);
    p = put_cat(p, o->c, pc->cat);
    p = LIT(p, "\",\"cat\":\"");
    p = put_cat(p, o->c, pc->cat);
    p = LIT(p, "\",\"args\":{\"span\":");
    p = jq_put_u64(p, pc->span);
    if (pc->job) {
      p = LIT(p, ",\"job\":");
      p = jq_put_u64(p, pc->job);
    }
    p = LIT(p, ",\"piece\":");
    p = jq_put_u64(p, pc->piece);
    if (pc->unclosed)
      p = LIT(p, ",\"unclosed\":true");
    o->b->p = LIT(p, "}}");
  }
}

/* A double as JSON: the shortest of %.15g and %.17g that reads back the
 * same (profile_counter refuses non-finite values). */
/* The start of a counter event up to its name. */
static char *put_counter_head(char *p, const lane_out *o, uint64_t ticks) {
  p = LIT(p, ",\n{\"ph\":\"C\",\"ts\":");
  p = put_us(p, ns_at(o, ticks));
  return put_head(p, o);
}

/* profile_counter: track "<name> value". */
static void put_counter(const lane_out *o, const jq_event *e) {
  const fragments *f = &o->c->counters;
  if (e->id == 0 || e->id > (uint32_t)o->c->v->ncounters)
    return;
  size_t flen = f->off[e->id] - f->off[e->id - 1];
  char *p = wbuf_room(o->b, EVENT_MAX + flen);
  p = put_counter_head(p, o, e->t0);
  p = copy_fragment(p, f->text + f->off[e->id - 1], flen);
  p = LIT(p, "\",\"args\":{\"value\":");
  if (e->flags & JQ_COUNTER_DOUBLE) {
    double x;
    memcpy(&x, &e->arg, sizeof x);
    p = jq_put_double(p, x);
  } else {
    p = jq_put_i64(p, e->arg);
  }
  o->b->p = LIT(p, "}}");
}

/* The queue's counts at a slice's start or end: "jobs" (ready, running, suspended;
 * "jobs (queue N)" when several queues recorded them) and "heap <lane>"
 * (KB). */
static void put_counts(const lane_out *o, const jq_event *e) {
  char *p = wbuf_room(o->b, 2 * EVENT_MAX + o->heaplen);
  static const char *const keys[3] = {"\"ready\":", ",\"running\":", ",\"suspended\":"};
  p = put_counter_head(p, o, e->t0);
  p = LIT(p, "jobs");
  if (o->c->l->counts_queues) {
    p = LIT(p, " (queue ");
    p = jq_put_u64(p, e->cat);
    p = LIT(p, ")");
  }
  p = LIT(p, "\",\"args\":{");
  for (int k = 0; k < 3; k++) {
    p = put_lit(p, keys[k], strlen(keys[k]));
    p = jq_put_u64(p, (uint64_t)jq_counts_field(e->arg, k));
  }
  p = LIT(p, "}}");
  if (e->flags & JQ_COUNTS_START) { /* the heap is sampled at slice ends */
    o->b->p = p;
    return;
  }
  p = put_counter_head(p, o, e->t0);
  p = put_lit(p, o->heap, o->heaplen);
  p = LIT(p, "\",\"args\":{\"KB\":");
  p = jq_put_u64(p, e->id);
  o->b->p = LIT(p, "}}");
}

static void put_lane_events(wbuf *b, const context *c, const jq_save_lane *lane, int tid) {
  lane_out o = {b, c, lane, {0}, 0, 0, tid - 1, {0}, 0};
  char *hp = LIT(o.heap, "heap ");
  hp = jq_json_escape(hp, lane->name, strnlen(lane->name, sizeof lane->name));
  if (jq_links_lane_name_shared(c->v, o.index)) { /* a track per lane: "heap worker 0 (tid 3)" */
    hp = LIT(hp, " (tid ");
    hp = jq_put_u64(hp, (uint64_t)tid);
    hp = LIT(hp, ")");
  }
  o.heaplen = (size_t)(hp - o.heap);
  char *h = LIT(o.head, ",\"pid\":1,\"tid\":");
  h = jq_put_u64(h, (uint64_t)tid);
  h = LIT(h, ",\"name\":\"");
  o.headlen = (size_t)(h - o.head);
  if (jq_pieces_lane(&c->l->pieces, o.index) != 0) {
    if (!b->err)
      b->err = ENOMEM;
    return;
  }
  uint64_t done = b->done;
  for (uint64_t i = 0; i < lane->count && !b->err; i += jq_event_span(&lane->events[i])) {
    /* (a failed write or allocation ends the save: the rest would go nowhere) */
    const jq_event *e = &lane->events[i];
    b->done = done + i; /* for the progress line, at a flush */
    switch (e->kind) {
    case JQ_EV_MARKER: put_marker(&o, e); break;
    case JQ_EV_SUBMIT: put_submit(&o, e); break;
    case JQ_EV_SLICE: put_slice(&o, e, i); break;
    case JQ_EV_COPY: put_copy(&o, e, i); break;
    case JQ_EV_CANCEL: put_cancel(&o, e); break;
    case JQ_EV_FLOW: put_flow(&o, e); break;
    case JQ_EV_AWAIT: put_await(&o, e); break;
    case JQ_EV_WAIT: put_wait(&o, e); break;
    case JQ_EV_PARK: put_park(&o, e); break;
    case JQ_EV_DEP: put_dep(&o, e); break;
    case JQ_EV_EDGE: put_edge(&o, e); break;
    case JQ_EV_COUNTER: put_counter(&o, e); break;
    case JQ_EV_COUNTS: put_counts(&o, e); break;
    default: break; /* JQ_EV_TEXT: written with the event before it; span ends: as pieces */
    }
    if (o.piece < c->l->pieces.n && c->l->pieces.p[o.piece].lane == o.index &&
        c->l->pieces.p[o.piece].anchor == i)
      put_pieces(&o, i);
  }
  if (lane->dropped > 0)
    put_lane_full(&o);
}

/* ---- samples: "stackFrames" and "samples" ----
 * Each lane's tables (sample_tables.c) number its own frames and stacks;
 * the file has one prefix tree merged from all of them: a node per
 * distinct path of frame texts, numbered in order of first use (lane
 * order, then each lane's stack ids, a parent's before its child's). Only
 * the paths of recorded samples are written. */

static const char *const frame_kinds[3] = {"lua", "C", "runtime"};

static void put_stack_frames(wbuf *b, const context *c) {
  const jq_frame_tree *t = c->l->tree;
  PUT_LIT(b, ",\n\"stackFrames\":{");
  for (uint32_t id = 1; id <= t->n; id++) {
    const jq_tree_node *nd = &t->nodes[id];
    size_t len;
    int kind;
    const char *s = jq_links_frame_text(c->v, nd->lane, nd->frame, &len, &kind);
    const char *k = frame_kinds[kind >= 0 && kind <= JQ_FRAME_RUNTIME ? kind : JQ_FRAME_RUNTIME];
    char *p = wbuf_room(b, 96 + ESCAPED_MAX(len));
    p = id == 1 ? LIT(p, "\n\"") : LIT(p, ",\n\"");
    p = jq_put_u64(p, id);
    p = LIT(p, "\":{\"name\":\"");
    p = jq_json_escape(p, s, len);
    p = LIT(p, "\",\"category\":\"");
    p = put_lit(p, k, strlen(k));
    *p++ = '"';
    if (nd->parent) {
      p = LIT(p, ",\"parent\":\"");
      p = jq_put_u64(p, nd->parent);
      *p++ = '"';
    }
    b->p = LIT(p, "}");
  }
  PUT_LIT(b, "}");
}

/* ns as microseconds with three decimals. */
static char *put_us3(char *p, uint64_t ns) {
  p = jq_put_u64(p, ns / 1000);
  unsigned f = (unsigned)(ns % 1000);
  p[0] = '.';
  p[1] = (char)('0' + f / 100);
  p[2] = (char)('0' + f / 10 % 10);
  p[3] = (char)('0' + f % 10);
  return p + 4;
}

/* The name of a sample's tag: its category's, else "no category" or "tag N". */
static char *put_sample_cat(char *p, const context *c, uint16_t cat) {
  return cat == 0 && !c->l->cat_index[0] ? LIT(p, "no category") : put_cat(p, c, cat);
}

/* One sample, with pid 1 as every event has (speedscope names a lane
 * "pid NaN" without it): args has the job (none outside jobs), the innermost span
 * piece's span on its lane at its time (none outside spans) and the leaf's
 * line (none unknown). */
static void put_sample(wbuf *b, const context *c, const uint32_t *node_of, int tid,
                       const jq_event *e, uint64_t span, int first) {
  char *p = wbuf_room(b, EVENT_MAX + cat_len(c, e->cat));
  p = first ? LIT(p, "\n{\"pid\":1,\"tid\":") : LIT(p, ",\n{\"pid\":1,\"tid\":");
  p = jq_put_u64(p, (uint64_t)tid);
  p = LIT(p, ",\"ts\":");
  p = put_us3(p, jq_clock_to_ns(&c->v->scale, e->t0));
  p = LIT(p, ",\"sf\":\"");
  p = jq_put_u64(p, node_of[e->id]);
  p = LIT(p, "\",\"weight\":");
  p = jq_put_u64(p, jq_sample_weight(e->t1));
  p = LIT(p, ",\"name\":\"");
  p = put_sample_cat(p, c, e->cat);
  p = LIT(p, "\",\"args\":");
  char sep = '{';
  if (e->arg) {
    *p++ = sep, sep = ',';
    p = LIT(p, "\"job\":");
    p = jq_put_i64(p, e->arg);
  }
  if (span) {
    *p++ = sep, sep = ',';
    p = LIT(p, "\"span\":");
    p = jq_put_u64(p, span);
  }
  if (jq_sample_line(e->t1)) {
    *p++ = sep, sep = ',';
    p = LIT(p, "\"line\":");
    p = jq_put_u64(p, jq_sample_line(e->t1));
  }
  if (sep == '{')
    *p++ = '{';
  b->p = LIT(p, "}}");
}

typedef struct sample_at {
  uint64_t t0, i; /* time, index in the ring */
} sample_at;

static int cmp_sample_at(const void *a, const void *b) {
  const sample_at *x = a, *y = b;
  if (x->t0 != y->t0)
    return x->t0 < y->t0 ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* Lane l's samples by time, with the span each lies in. */
static int put_lane_samples(wbuf *b, const context *c, int l, int *first) {
  const jq_save_lane *lane = &c->v->lanes[l];
  const uint32_t *node_of = c->l->tree->node_of[l];
  uint32_t ns = lane->stab ? jq_stab_nstacks(lane->stab) : 0;
  size_t n = 0;
  for (uint64_t i = 0; i < lane->count; i += jq_event_span(&lane->events[i]))
    n += lane->events[i].kind == JQ_EV_SAMPLE && lane->events[i].id >= 1 && lane->events[i].id <= ns;
  if (n == 0)
    return 0;
  sample_at *at = malloc(n * sizeof *at);
  jq_span_cursor cur;
  int rc = jq_pieces_lane(&c->l->pieces, l);
  if (rc == 0)
    rc = jq_span_cursor_init(&cur, &c->l->pieces, l);
  else
    memset(&cur, 0, sizeof cur);
  if (!at || rc != 0) {
    free(at);
    jq_span_cursor_free(&cur);
    return ENOMEM;
  }
  n = 0;
  for (uint64_t i = 0; i < lane->count; i += jq_event_span(&lane->events[i])) {
    const jq_event *e = &lane->events[i];
    if (e->kind == JQ_EV_SAMPLE && e->id >= 1 && e->id <= ns)
      at[n++] = (sample_at){e->t0, i};
  }
  qsort(at, n, sizeof *at, cmp_sample_at); /* a sample's time may be before the events just before it */
  for (size_t k = 0; k < n && !b->err; k++) {
    const jq_event *e = &lane->events[at[k].i];
    put_sample(b, c, node_of, l + 1, e, jq_span_at(&cur, e->t0), *first);
    *first = 0;
  }
  free(at);
  jq_span_cursor_free(&cur);
  return 0;
}

/* "stackFrames" and "samples", when the session sampled or has samples. */
static void put_samples(wbuf *b, const context *c) {
  if (!c->l->tree)
    return;
  put_stack_frames(b, c);
  PUT_LIT(b, ",\n\"samples\":[");
  int first = 1;
  for (int l = 0; l < c->v->nlanes && !b->err; l++)
    if (c->l->tree->node_of[l] && put_lane_samples(b, c, l, &first) != 0 && !b->err)
      b->err = ENOMEM; /* the file is not written */
  PUT_LIT(b, "]");
}

/* jobqueProfile.sampling, when the session sampled. */
static void put_sampling(wbuf *b, const context *ctx) {
  const jq_save_sampling *sm = &ctx->v->sampling;
  if (sm->hz <= 0)
    return;
  PUT_LIT(b, ",\"sampling\":{\"hz\":");
  put_number(b, sm->hz);
  PUT_LIT(b, ",\"periodNs\":");
  put_number(b, (int64_t)sm->period_ns);
  PUT_LIT(b, ",\"clock\":\"thread-cpu\",\"depth\":");
  put_number(b, sm->depth);
  PUT_LIT(b, ",\"samples\":");
  put_number(b, ctx->l->tree ? (int64_t)ctx->l->tree->samples : 0);
  PUT_LIT(b, ",\"signals\":");
  put_number(b, (int64_t)sm->signals);
  PUT_LIT(b, ",\"ticks\":");
  put_number(b, (int64_t)sm->ticks);
  PUT_LIT(b, "}");
}

/* A lane's sampling counters in laneInfo, when the session sampled. */
static void put_lane_sampling(wbuf *b, const context *ctx, const jq_save_lane *l) {
  if (ctx->v->sampling.hz <= 0)
    return;
  jq_stab_counts none = {0, 0, 0, 0, NULL};
  const jq_stab_counts *n = l->stab ? jq_stab_counts_of((jq_stab *)l->stab) : &none;
  PUT_LIT(b, ",\"samples\":");
  put_number(b, (int64_t)n->samples);
  PUT_LIT(b, ",\"sampleWeight\":");
  put_number(b, (int64_t)n->weight);
  PUT_LIT(b, ",\"samplesSkipped\":{\"userHook\":");
  put_number(b, (int64_t)n->skipped_user_hook);
  PUT_LIT(b, ",\"tableFull\":");
  put_number(b, (int64_t)n->skipped_table_full);
  PUT_LIT(b, "}");
  if (n->error) {
    PUT_LIT(b, ",\"sampleError\":");
    put_string(b, n->error, strlen(n->error));
  }
}

/* Where the session sits in time and place: for lining up traces of
 * several processes (or of a trace and a system one). */
static void put_where(wbuf *b, const jq_save_where *w) {
  if (w->host[0]) {
    PUT_LIT(b, ",\"host\":");
    put_string(b, w->host, strlen(w->host));
  }
  if (w->boot_id[0]) {
    PUT_LIT(b, ",\"bootId\":");
    put_string(b, w->boot_id, strlen(w->boot_id));
  }
  PUT_LIT(b, ",\"clocks\":{\"realtimeNs\":");
  put_number(b, w->realtime_ns);
  PUT_LIT(b, ",\"boottimeNs\":");
  put_number(b, w->boottime_ns);
  PUT_LIT(b, ",\"monotonicNs\":");
  put_number(b, w->monotonic_ns);
  PUT_LIT(b, "}");
}

/* "laneInfo": one object per lane, in tid order. */
static void put_lane_info(wbuf *b, const context *ctx) {
  const jq_save_view *v = ctx->v;
  PUT_LIT(b, ",\n\"laneInfo\":[");
  for (int i = 0; i < v->nlanes; i++) {
    const jq_save_lane *l = &v->lanes[i];
    PUT_ITEM(b, i == 0, ",\n{\"tid\":");
    put_number(b, i + 1);
    PUT_LIT(b, ",\"name\":");
    put_string(b, l->name, strlen(l->name));
    /* Its role (session.c): names alone are ambiguous, a queue may be named
     * "thread" or "caller". */
    PUT_LIT(b, ",\"role\":");
    put_string(b, l->role, strlen(l->role));
    if (l->queue > 0) {
      PUT_LIT(b, ",\"queue\":");
      put_number(b, l->queue);
    }
    if (l->os_tid > 0) {
      PUT_LIT(b, ",\"osTid\":");
      put_number(b, l->os_tid);
    }
    PUT_LIT(b, ",\"recorded\":");
    put_number(b, (int64_t)l->count);
    PUT_LIT(b, ",\"dropped\":");
    put_number(b, (int64_t)l->dropped);
    PUT_LIT(b, ",\"unclosedSpans\":");
    put_number(b, (int64_t)ctx->l->pieces.unclosed[i]);
    if (l->dropped) {
      char *p = wbuf_room(b, 16 + JQ_US_MAX);
      p = LIT(p, ",\"fullAtUs\":");
      b->p = put_us(p, jq_clock_to_ns(&v->scale, l->full_at));
    }
    if (l->no_ring)
      PUT_LIT(b, ",\"error\":\"out of memory for this lane's ring\"");
    put_lane_sampling(b, ctx, l);
    PUT_LIT(b, "}");
  }
}

/* The jobqueProfile object, from { to }. */
static void put_profile_object(wbuf *b, const context *ctx) {
  const jq_save_view *v = ctx->v;
  PUT_LIT(b, "{\"version\":1,\"clock\":");
  put_string(b, v->clock, strlen(v->clock));
  PUT_LIT(b, ",\"pid\":");
  put_number(b, v->pid);
  put_where(b, &v->where);
  PUT_LIT(b, ",\"eventsPerLane\":");
  put_number(b, (int64_t)v->events_per_lane);
  /* The session's bounds, on the events' timeline: zero is its start. */
  uint64_t stop = jq_clock_to_ns(&v->scale, v->stop_ticks);
  char *p = wbuf_room(b, 48 + 2 * JQ_US_MAX);
  p = LIT(p, ",\"durationUs\":");
  p = put_us(p, stop);
  p = LIT(p, ",\"startUs\":0.000,\"stopUs\":");
  b->p = put_us(p, stop);
  PUT_LIT(b, ",\"lostEvents\":");
  put_number(b, (int64_t)v->lost);
  /* As in the seed's format (version 1), "lanes" is the lane count; the
   * details of each lane are in "laneInfo". */
  PUT_LIT(b, ",\"lanes\":");
  put_number(b, v->nlanes);
  put_sampling(b, ctx);
  put_lane_info(b, ctx);
  PUT_LIT(b, "],\n\"categories\":[");
  for (int i = 0; i < v->ncategories; i++) {
    const jq_save_name *c = &v->categories[i];
    PUT_ITEM(b, i == 0, ",\n{\"id\":");
    put_number(b, c->id);
    PUT_LIT(b, ",\"name\":");
    put_string(b, c->name, c->len);
    PUT_LIT(b, ",\"color\":");
    put_color(b, c->color);
    PUT_LIT(b, "}");
  }
  PUT_LIT(b, "],\n\"markers\":[");
  for (int i = 0; i < v->nmarkers; i++) {
    const jq_save_name *m = &v->markers[i];
    PUT_ITEM(b, i == 0, ",\n{\"id\":");
    put_number(b, m->id);
    PUT_LIT(b, ",\"name\":");
    put_string(b, m->name, m->len);
    PUT_LIT(b, "}");
  }
  PUT_LIT(b, "]}");
}

static void put_profile(wbuf *b, const context *ctx) {
  PUT_LIT(b, "\n]");
  put_samples(b, ctx);
  PUT_LIT(b, ",\n\"" JQ_KEY_PROFILE "\":");
  put_profile_object(b, ctx);
  PUT_LIT(b, "}\n");
}

int jq_json_profile_text(const jq_save_view *v, const jq_save_links *l, char **text, size_t *len) {
  context ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.v = v;
  ctx.l = (jq_save_links *)l; /* read only: the object reads the view and the links */
  *text = NULL;
  *len = 0;
  wbuf b = {NULL, NULL, NULL, -1, 0, NULL, 0, 0};
  if (!(b.base = malloc(JQ_WRITE_BUFFER)))
    return ENOMEM;
  b.p = b.base;
  b.end = b.base + JQ_WRITE_BUFFER;
  b.fd = memfd_create("jobque-profile", MFD_CLOEXEC);
  if (b.fd < 0) {
    int e = errno;
    free(b.base);
    return e;
  }
  put_profile_object(&b, &ctx);
  wbuf_flush(&b);
  free(b.base);
  int rc = b.err;
  off_t end = rc ? 0 : lseek(b.fd, 0, SEEK_END);
  if (!rc && end < 0)
    rc = errno;
  size_t n = end > 0 ? (size_t)end : 0;
  if (!rc && !(*text = malloc(n + 1)))
    rc = ENOMEM;
  for (size_t got = 0; !rc && got < n;) {
    ssize_t r = pread(b.fd, *text + got, n - got, (off_t)got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      rc = r < 0 ? errno : EIO;
    else
      got += (size_t)r;
  }
  close(b.fd);
  if (rc) {
    free(*text);
    *text = NULL;
    return rc;
  }
  (*text)[n] = '\0';
  *len = n;
  return 0;
}

static void write_trace(wbuf *b, const context *c) {
  const jq_save_view *v = c->v;
  PUT_LIT(b, "{\"" JQ_KEY_EVENTS "\":[\n"
             "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"jobque_profile\"}}");
  for (int i = 0; i < v->nlanes; i++)
    put_lane_meta(b, &v->lanes[i], i + 1);
  uint64_t done = 0;
  for (int i = 0; i < v->nlanes && !b->err; i++) {
    put_lane_events(b, c, &v->lanes[i], i + 1); /* (b->done counts its events) */
    b->done = done += v->lanes[i].count;
  }
  put_profile(b, c);
  wbuf_flush(b);
}

typedef struct json_job {
  wbuf *b;
  const context *c;
} json_job;

/* jq_replace_with's writer: the trace into the file's fd. */
static int json_write_to(int fd, void *arg) {
  json_job *j = arg;
  j->b->fd = fd;
  write_trace(j->b, j->c);
  return j->b->err;
}

int jq_json_save(const jq_save_view *v, const char *path, char *err, size_t errlen) {
  fragments marks = {NULL, NULL};
  context ctx;
  jq_save_links links;
  memset(&ctx, 0, sizeof ctx);
  wbuf b = {NULL, NULL, NULL, -1, 0, v->progress, 0, 0};
  int rc = ENOMEM;
  if (name_fragments(&marks, v->markers, v->nmarkers, MARKER_TAIL) != 0 ||
      context_init(&ctx, &links, v, &marks) != 0 || !(b.base = malloc(JQ_WRITE_BUFFER))) {
    snprintf(err, errlen, "cannot save trace to '%s': out of memory", path);
    goto done;
  }
  b.p = b.base;
  b.end = b.base + JQ_WRITE_BUFFER;
  json_job job = {&b, &ctx};
  rc = jq_replace_with(path, json_write_to, &job, err, errlen);
done:
  context_free(&ctx);
  free(marks.text);
  free(marks.off);
  free(b.base);
  return rc;
}
