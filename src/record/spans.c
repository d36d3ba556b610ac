/*
 * spans.c - pairs span begins and ends and cuts them into pieces.
 *
 * The record path keeps no span stack: profile_begin and profile_end each
 * record an instant carrying the job they ran in (ring.h). Here, at save,
 * the events of each job are put in time order with the job's slices
 * (which may be on several lanes), matched as a stack, and each logical
 * span becomes one piece per slice it covers, so that the file nests per
 * lane. Iterative throughout; memory grows with the span events only.
 */
#include "record/spans.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { ITEM_SLICE, ITEM_BEGIN, ITEM_END };

typedef struct item {
  uint64_t job, t0, t1, idx;
  uint64_t co; /* a span event's coroutine (ring.h); 0 for slices */
  int lane;
  uint16_t cat;
  uint8_t type, last;
  uint8_t after; /* a span event of a close handler run after its job's end */
} item;

typedef struct open_span {
  uint64_t start;  /* of its current piece */
  uint64_t anchor; /* outside jobs: its begin's event, which its piece follows */
  uint64_t id;
  uint64_t co;     /* the coroutine that opened it */
  uint32_t piece;
  uint16_t cat;
} open_span;

typedef struct builder {
  jq_pieces *out;
  size_t cap;
  open_span *stack;
  size_t depth, stack_cap;
  uint64_t next_id, stop;
  int err;
} builder;

static int cmp_item(const void *a, const void *b) {
  const item *x = a, *y = b;
  if (x->job != y->job)
    return x->job < y->job ? -1 : 1;
  if (x->job != 0) { /* a job's events: by time, a slice before what it holds */
    if (x->t0 != y->t0)
      return x->t0 < y->t0 ? -1 : 1;
    if ((x->type == ITEM_SLICE) != (y->type == ITEM_SLICE))
      return x->type == ITEM_SLICE ? -1 : 1;
  }
  if (x->lane != y->lane)
    return x->lane < y->lane ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int cmp_piece(const void *a, const void *b) {
  const jq_piece *x = a, *y = b;
  if (x->lane != y->lane)
    return x->lane < y->lane ? -1 : 1;
  if (x->anchor != y->anchor)
    return x->anchor < y->anchor ? -1 : 1;
  if (x->t0 != y->t0)
    return x->t0 < y->t0 ? -1 : 1;
  return x->depth < y->depth ? -1 : x->depth > y->depth;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Appends the piece of the span at stack position d, [its start, t1], on
 * `lane` after its event `anchor`. */
static void add_piece(builder *b, size_t d, int lane, uint64_t anchor, uint64_t job, uint64_t t1,
                      int unclosed) {
  if (b->out->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    jq_piece *p = realloc(b->out->p, cap * sizeof *p);
    if (!p) {
      b->err = ENOMEM;
      return;
    }
    b->out->p = p;
    b->cap = cap;
  }
  open_span *s = &b->stack[d];
  uint64_t t0 = s->start < t1 ? s->start : t1;
  jq_piece pc = {t0, t1, s->id, job, anchor, ++s->piece, (uint32_t)d, lane, s->cat,
                 (uint8_t)unclosed};
  b->out->p[b->out->n++] = pc;
  if (unclosed)
    b->out->unclosed[lane]++;
}

static void push_span(builder *b, const item *it) {
  if (b->depth == b->stack_cap) {
    size_t cap = b->stack_cap ? b->stack_cap * 2 : 64;
    open_span *s = realloc(b->stack, cap * sizeof *s);
    if (!s) {
      b->err = ENOMEM;
      return;
    }
    b->stack = s;
    b->stack_cap = cap;
  }
  open_span s = {it->t0, it->idx, ++b->next_id, it->co, 0, it->cat};
  b->stack[b->depth++] = s;
}

/* How deep below the innermost span an end looks for its coroutine's:
 * bounds the pairing at save to SCAN_MAX steps an end, whatever a job's
 * ends from coroutines without spans of their own. */
#define SCAN_MAX 256

/* The end `it` closes the innermost span its coroutine opened (the
 * innermost of all when its coroutine has none open among the SCAN_MAX
 * innermost: one opened while recording was off, or in another coroutine), at t, on `lane` after
 * `anchor` (outside jobs, `job` 0: each after its own begin). The spans opened above it (by other coroutines of the job,
 * e.g. a generator's that yielded) are cut there and continue from t, so
 * that the pieces still nest. */
static void close_span(builder *b, const item *it, int lane, uint64_t anchor, uint64_t job,
                       uint64_t t) {
  size_t d = b->depth - 1, floor = b->depth > SCAN_MAX ? b->depth - SCAN_MAX : 0;
  while (d > floor && b->stack[d].co != it->co)
    d--;
  if (b->stack[d].co != it->co)
    d = b->depth - 1;
  for (size_t k = b->depth - 1; k > d && !b->err; k--) {
    add_piece(b, k, lane, job ? anchor : b->stack[k].anchor, job, t, 0);
    b->stack[k].start = t;
    if (!job)
      b->stack[k].anchor = it->idx; /* outside jobs: the next piece follows this end */
  }
  add_piece(b, d, lane, job ? anchor : b->stack[d].anchor, job, t, 0);
  memmove(&b->stack[d], &b->stack[d + 1], (b->depth - d - 1) * sizeof b->stack[0]);
  b->depth--;
}

/* Every span still open gets a piece up to t1 on `at`'s lane (the last
 * one, unclosed, when `close`). */
static void cut_all(builder *b, const item *at, uint64_t t1, int close) {
  for (size_t d = 0; d < b->depth; d++)
    add_piece(b, d, at->lane, at->idx, at->job, t1, close);
  if (close)
    b->depth = 0;
}

/* Spans outside jobs: one lane's, in ring order, items[0..n). Each is one
 * piece, written after its begin. */
static void build_thread(builder *b, const item *items, size_t n) {
  b->depth = 0;
  for (size_t i = 0; i < n && !b->err; i++) {
    const item *it = &items[i];
    if (it->type == ITEM_BEGIN) {
      push_span(b, it);
    } else if (b->depth > 0) {
      close_span(b, it, it->lane, 0, 0, it->t0);
    }
  }
  while (b->depth > 0 && !b->err) { /* open at the stop */
    b->depth--;
    add_piece(b, b->depth, items[0].lane, b->stack[b->depth].anchor, 0, b->stop, 1);
  }
}

/* One job's items[0..n), by time. `cur` is the segment its events lie in:
 * a recorded slice, or, for events outside any (the slice was running at
 * the stop, or dropped), from the event to the stop on its lane; the
 * events of close handlers run after the job's end stay in the last one. */
static void build_job(builder *b, const item *items, size_t n) {
  item cur = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  int have = 0;
  b->depth = 0;
  for (size_t i = 0; i < n && !b->err; i++) {
    const item *it = &items[i];
    if (it->type == ITEM_SLICE) {
      if (have)
        cut_all(b, &cur, cur.t1, 0);
      cur = *it;
      have = 1;
      for (size_t d = 0; d < b->depth; d++)
        b->stack[d].start = cur.t0;
    } else if (it->type == ITEM_BEGIN) {
      /* a close handler's begin, after the job's end, stays in the last
       * segment (its pieces end there); others outside it start one */
      if (!have || (!it->after && (it->lane != cur.lane || it->t0 > cur.t1))) {
        if (have)
          cut_all(b, &cur, cur.t1, 0);
        cur = *it;
        cur.t1 = it->after ? it->t0 : b->stop;
        have = 1;
        for (size_t d = 0; d < b->depth; d++)
          b->stack[d].start = cur.t0;
      }
      push_span(b, it);
    } else if (b->depth > 0) { /* an end after the slice (a to-be-closed close): at its end */
      close_span(b, it, cur.lane, cur.idx, cur.job, it->t0 < cur.t1 ? it->t0 : cur.t1);
    }
  }
  if (have && !b->err)
    cut_all(b, &cur, cur.t1, 1);
}

/* The items: every span event, and the slices of the jobs that have one. */
static item *collect(const jq_save_view *v, size_t *count, int *err) {
  size_t nspan = 0, njobs = 0;
  for (int l = 0; l < v->nlanes; l++)
    for (uint64_t i = 0; i < v->lanes[l].count; i += jq_event_span(&v->lanes[l].events[i])) {
      uint8_t k = v->lanes[l].events[i].kind;
      nspan += k == JQ_EV_SPAN_BEGIN || k == JQ_EV_SPAN_END;
    }
  *count = 0;
  if (nspan == 0)
    return NULL;
  uint64_t *jobs = malloc(nspan * sizeof *jobs);
  *err = ENOMEM;
  if (!jobs)
    return NULL;
  for (int l = 0; l < v->nlanes; l++)
    for (uint64_t i = 0; i < v->lanes[l].count; i += jq_event_span(&v->lanes[l].events[i])) {
      const jq_event *e = &v->lanes[l].events[i];
      if ((e->kind == JQ_EV_SPAN_BEGIN || e->kind == JQ_EV_SPAN_END) && e->arg != 0)
        jobs[njobs++] = (uint64_t)e->arg;
    }
  qsort(jobs, njobs, sizeof *jobs, cmp_u64);
  size_t nitems = nspan;
  for (int l = 0; l < v->nlanes; l++)
    for (uint64_t i = 0; i < v->lanes[l].count; i += jq_event_span(&v->lanes[l].events[i])) {
      const jq_event *e = &v->lanes[l].events[i];
      uint64_t job = (uint64_t)e->arg;
      nitems += e->kind == JQ_EV_SLICE && njobs && bsearch(&job, jobs, njobs, sizeof job, cmp_u64);
    }
  item *items = malloc(nitems * sizeof *items);
  for (int l = 0; l < v->nlanes && items; l++)
    for (uint64_t i = 0; i < v->lanes[l].count; i += jq_event_span(&v->lanes[l].events[i])) {
      const jq_event *e = &v->lanes[l].events[i];
      uint64_t job = (uint64_t)e->arg;
      int span = e->kind == JQ_EV_SPAN_BEGIN || e->kind == JQ_EV_SPAN_END;
      if (!span && !(e->kind == JQ_EV_SLICE && njobs && bsearch(&job, jobs, njobs, sizeof job, cmp_u64)))
        continue;
      item it = {job, e->t0, span ? e->t0 : e->t1, i, span ? e->t1 : 0, l, e->cat,
                 (uint8_t)(e->kind == JQ_EV_SLICE ? ITEM_SLICE
                           : e->kind == JQ_EV_SPAN_BEGIN ? ITEM_BEGIN : ITEM_END),
                 (uint8_t)((e->flags & JQ_SLICE_LAST) != 0),
                 (uint8_t)(span && (e->flags & JQ_SPAN_AFTER_END))};
      items[(*count)++] = it;
    }
  free(jobs);
  *err = items ? 0 : ENOMEM;
  if (items)
    qsort(items, *count, sizeof *items, cmp_item);
  return items;
}

int jq_pieces_build(jq_pieces *out, const jq_save_view *v) {
  memset(out, 0, sizeof *out);
  out->unclosed = calloc((size_t)v->nlanes + 1, sizeof(uint64_t));
  if (!out->unclosed)
    return ENOMEM;
  size_t n;
  int err = 0;
  item *items = collect(v, &n, &err);
  if (!items)
    return err;
  builder b = {out, 0, NULL, 0, 0, 0, v->stop_ticks, 0};
  for (size_t i = 0; i < n && !b.err;) {
    size_t j = i + 1;
    while (j < n && items[j].job == items[i].job && (items[i].job != 0 || items[j].lane == items[i].lane))
      j++;
    if (items[i].job == 0)
      build_thread(&b, items + i, j - i);
    else
      build_job(&b, items + i, j - i);
    i = j;
  }
  free(items);
  free(b.stack);
  if (!b.err)
    qsort(out->p, out->n, sizeof *out->p, cmp_piece);
  return b.err;
}

void jq_pieces_free(jq_pieces *out) {
  free(out->p);
  free(out->unclosed);
  memset(out, 0, sizeof *out);
}

/* ---- the span of an instant ---- */

static int cmp_start(const void *a, const void *b) {
  const jq_piece *x = a, *y = b;
  if (x->t0 != y->t0)
    return x->t0 < y->t0 ? -1 : 1;
  if (x->depth != y->depth)
    return x->depth < y->depth ? -1 : 1;
  return x->t1 > y->t1 ? -1 : x->t1 < y->t1; /* the longer one holds the other */
}

int jq_span_cursor_init(jq_span_cursor *c, const jq_pieces *ps, int lane) {
  memset(c, 0, sizeof *c);
  size_t a = 0;
  while (a < ps->n && ps->p[a].lane < lane)
    a++;
  size_t z = a;
  while (z < ps->n && ps->p[z].lane == lane)
    z++;
  if (z == a)
    return 0;
  c->p = malloc((z - a) * sizeof *c->p);
  c->open = malloc((z - a) * sizeof *c->open);
  if (!c->p || !c->open)
    return ENOMEM;
  c->n = z - a;
  memcpy(c->p, ps->p + a, c->n * sizeof *c->p);
  qsort(c->p, c->n, sizeof *c->p, cmp_start);
  return 0;
}

uint64_t jq_span_at(jq_span_cursor *c, uint64_t t) {
  while (c->next < c->n && c->p[c->next].t0 <= t) {
    uint64_t start = c->p[c->next].t0;
    while (c->nopen > 0 && c->p[c->open[c->nopen - 1]].t1 <= start)
      c->nopen--; /* ended before this one starts */
    c->open[c->nopen++] = c->next++;
  }
  while (c->nopen > 0 && c->p[c->open[c->nopen - 1]].t1 <= t)
    c->nopen--;
  return c->nopen > 0 ? c->p[c->open[c->nopen - 1]].span : 0;
}

void jq_span_cursor_free(jq_span_cursor *c) {
  free(c->p);
  free(c->open);
  memset(c, 0, sizeof *c);
}
