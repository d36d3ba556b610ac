/*
 * spans.c - pairs span begins and ends and cuts them into pieces.
 *
 * The record path keeps no span stack: profile_begin and profile_end each
 * record an instant carrying the job they ran in (ring.h). Here, at save,
 * the events of each job are put in time order with the job's slices
 * (which may be on several lanes), matched as a stack, and each logical
 * span becomes one piece per slice it covers, so that the file nests per
 * lane. Iterative throughout.
 *
 * Memory (docs/profiler.md, "Saving"): the items (24 bytes per span event
 * and per slice of a job with spans: a time, a job and where the event is)
 * are kept for the whole save, sorted by job; the pieces are made for one
 * lane at a time (jq_pieces_lane), from the groups (a job's items, or a
 * thread's outside jobs) that touch that lane, each group's first span id
 * kept so that a span has one id whichever lane is made.
 */
#include "record/spans.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { ITEM_SLICE, ITEM_BEGIN, ITEM_END };

/* A span event, or a slice of a job that has some: where it is in the
 * view (type << 62 | lane << 46 | ring index) with its job and start;
 * the rest is read from the event. */
typedef struct jq_span_item {
  uint64_t job, t0, ref;
} item;

#define REF(type, lane, idx) ((uint64_t)(type) << 62 | (uint64_t)(lane) << 46 | (uint64_t)(idx))
#define REF_TYPE(r) ((int)((r) >> 62))
#define REF_LANE(r) ((int)(((r) >> 46) & 0xffff))
#define REF_IDX(r) ((r) & ((1ull << 46) - 1))

/* A group's entry in a lane's list: where its items start, its first span id - 1. */
typedef struct jq_span_group {
  uint64_t start, base;
} group;

typedef struct open_span {
  uint64_t start;  /* of its current piece */
  uint64_t anchor; /* outside jobs: its begin's event, which its piece follows */
  uint64_t id;
  uint64_t co;     /* the coroutine that opened it */
  uint32_t piece;
  uint16_t cat;
} open_span;

/* Where a job's events lie: a recorded slice, or a stretch outside any. */
typedef struct segment {
  uint64_t job, t0, t1, idx;
  int lane;
} segment;

typedef struct builder {
  const jq_save_view *v;
  jq_pieces *out;
  int lane;        /* the lane whose pieces are kept; -1: none (the unclosed counted) */
  size_t cap;
  open_span *stack;
  size_t depth, stack_cap;
  uint64_t next_id, stop;
  int err;
} builder;

static const jq_event *item_event(const builder *b, const item *it) {
  return &b->v->lanes[REF_LANE(it->ref)].events[REF_IDX(it->ref)];
}

static int cmp_item(const void *a, const void *b) {
  const item *x = a, *y = b;
  if (x->job != y->job)
    return x->job < y->job ? -1 : 1;
  if (x->job != 0) { /* a job's events: by time, a slice before what it holds */
    if (x->t0 != y->t0)
      return x->t0 < y->t0 ? -1 : 1;
    int xs = REF_TYPE(x->ref) == ITEM_SLICE, ys = REF_TYPE(y->ref) == ITEM_SLICE;
    if (xs != ys)
      return xs ? -1 : 1;
  }
  uint64_t xr = x->ref & ~(3ull << 62), yr = y->ref & ~(3ull << 62); /* lane, then ring index */
  return xr < yr ? -1 : xr > yr;
}

static int cmp_piece(const void *a, const void *b) {
  const jq_piece *x = a, *y = b;
  if (x->lane != y->lane)
    return x->lane < y->lane ? -1 : 1;
  if (x->anchor != y->anchor)
    return x->anchor < y->anchor ? -1 : 1;
  if (x->t0 != y->t0)
    return x->t0 < y->t0 ? -1 : 1;
  if (x->depth != y->depth)
    return x->depth < y->depth ? -1 : 1;
  if (x->span != y->span) /* (one order, whatever the sort) */
    return x->span < y->span ? -1 : 1;
  return x->piece < y->piece ? -1 : x->piece > y->piece;
}

/* The piece of the span at stack position d, [its start, t1], on `lane`
 * after its event `anchor`: kept when on the builder's lane; counted in
 * unclosed when the builder keeps none. */
static void add_piece(builder *b, size_t d, int lane, uint64_t anchor, uint64_t job, uint64_t t1,
                      int unclosed) {
  open_span *s = &b->stack[d];
  ++s->piece;
  if (b->lane < 0) {
    if (unclosed)
      b->out->unclosed[lane]++;
    return;
  }
  if (lane != b->lane)
    return;
  if (b->out->n == b->cap) {
    size_t cap = b->cap ? b->cap + b->cap / 2 : 256;
    jq_piece *p = realloc(b->out->p, cap * sizeof *p);
    if (!p) {
      b->err = ENOMEM;
      return;
    }
    b->out->p = p;
    b->cap = cap;
  }
  uint64_t t0 = s->start < t1 ? s->start : t1;
  jq_piece pc = {t0, t1, s->id, job, anchor, s->piece, (uint32_t)d, lane, s->cat, (uint8_t)unclosed};
  b->out->p[b->out->n++] = pc;
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
  const jq_event *e = item_event(b, it);
  open_span s = {it->t0, REF_IDX(it->ref), ++b->next_id, e->t1, 0, e->cat};
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
  uint64_t co = item_event(b, it)->t1;
  size_t d = b->depth - 1, floor = b->depth > SCAN_MAX ? b->depth - SCAN_MAX : 0;
  while (d > floor && b->stack[d].co != co)
    d--;
  if (b->stack[d].co != co)
    d = b->depth - 1;
  for (size_t k = b->depth - 1; k > d && !b->err; k--) {
    add_piece(b, k, lane, job ? anchor : b->stack[k].anchor, job, t, 0);
    b->stack[k].start = t;
    if (!job)
      b->stack[k].anchor = REF_IDX(it->ref); /* outside jobs: the next piece follows this end */
  }
  add_piece(b, d, lane, job ? anchor : b->stack[d].anchor, job, t, 0);
  memmove(&b->stack[d], &b->stack[d + 1], (b->depth - d - 1) * sizeof b->stack[0]);
  b->depth--;
}

/* Every span still open gets a piece up to t1 on `at`'s lane (the last
 * one, unclosed, when `close`). */
static void cut_all(builder *b, const segment *at, uint64_t t1, int close) {
  for (size_t d = 0; d < b->depth; d++)
    add_piece(b, d, at->lane, at->idx, at->job, t1, close);
  if (close)
    b->depth = 0;
}

/* Spans outside jobs: one lane's, in ring order, items[0..n). Each is one
 * piece, written after its begin. */
static void build_thread(builder *b, const item *items, size_t n) {
  b->depth = 0;
  int lane = REF_LANE(items[0].ref);
  for (size_t i = 0; i < n && !b->err; i++) {
    const item *it = &items[i];
    if (REF_TYPE(it->ref) == ITEM_BEGIN) {
      push_span(b, it);
    } else if (b->depth > 0) {
      close_span(b, it, lane, 0, 0, it->t0);
    }
  }
  while (b->depth > 0 && !b->err) { /* open at the stop */
    b->depth--;
    add_piece(b, b->depth, lane, b->stack[b->depth].anchor, 0, b->stop, 1);
  }
}

/* The segment an item starts: a slice's, or from a span begin outside any. */
static segment segment_of(const item *it, uint64_t t1) {
  segment s = {it->job, it->t0, t1, REF_IDX(it->ref), REF_LANE(it->ref)};
  return s;
}

/* One job's items[0..n), by time. `cur` is the segment its events lie in:
 * a recorded slice, or, for events outside any (the slice was running at
 * the stop, or dropped), from the event to the stop on its lane; the
 * events of close handlers run after the job's end stay in the last one. */
static void build_job(builder *b, const item *items, size_t n) {
  segment cur = {0, 0, 0, 0, 0};
  int have = 0;
  b->depth = 0;
  for (size_t i = 0; i < n && !b->err; i++) {
    const item *it = &items[i];
    int type = REF_TYPE(it->ref);
    if (type == ITEM_SLICE) {
      if (have)
        cut_all(b, &cur, cur.t1, 0);
      cur = segment_of(it, item_event(b, it)->t1);
      have = 1;
      for (size_t d = 0; d < b->depth; d++)
        b->stack[d].start = cur.t0;
    } else if (type == ITEM_BEGIN) {
      /* a close handler's begin, after the job's end, stays in the last
       * segment (its pieces end there); others outside it start one */
      int after = (item_event(b, it)->flags & JQ_SPAN_AFTER_END) != 0;
      if (!have || (!after && (REF_LANE(it->ref) != cur.lane || it->t0 > cur.t1))) {
        if (have)
          cut_all(b, &cur, cur.t1, 0);
        cur = segment_of(it, after ? it->t0 : b->stop);
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

static int cmp_job(const void *a, const void *b) {
  const item *x = a, *y = b;
  return x->job < y->job ? -1 : x->job > y->job;
}

static int is_span(uint8_t kind) {
  return kind == JQ_EV_SPAN_BEGIN || kind == JQ_EV_SPAN_END;
}

/* The item of event i of lane l. */
static item item_at(const jq_save_view *v, int l, uint64_t i) {
  const jq_event *e = &v->lanes[l].events[i];
  int type = e->kind == JQ_EV_SLICE ? ITEM_SLICE : e->kind == JQ_EV_SPAN_BEGIN ? ITEM_BEGIN : ITEM_END;
  item it = {(uint64_t)e->arg, e->t0, REF(type, l, i)};
  return it;
}

/* The items: every span event, and the slices of the jobs that have one,
 * sorted (cmp_item). The span events first, sorted: the jobs that have
 * spans are found among them; then the slices of those jobs added. */
static item *collect(const jq_save_view *v, size_t *count, int *err) {
  size_t nspan = 0, n = 0;
  for (int l = 0; l < v->nlanes; l++)
    for (uint64_t i = 0; i < v->lanes[l].count; i += jq_event_span(&v->lanes[l].events[i]))
      nspan += is_span(v->lanes[l].events[i].kind);
  *count = 0;
  *err = 0;
  if (nspan == 0)
    return NULL;
  item *items = malloc(nspan * sizeof *items);
  for (int l = 0; l < v->nlanes && items; l++)
    for (uint64_t i = 0; i < v->lanes[l].count; i += jq_event_span(&v->lanes[l].events[i]))
      if (is_span(v->lanes[l].events[i].kind))
        items[n++] = item_at(v, l, i);
  if (!items) {
    *err = ENOMEM;
    return NULL;
  }
  qsort(items, n, sizeof *items, cmp_item); /* the jobs with spans, in order */
  size_t first = 0;
  while (first < n && items[first].job == 0)
    first++;
  size_t nslices = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int l = 0; l < v->nlanes; l++)
      for (uint64_t i = 0; i < v->lanes[l].count; i += jq_event_span(&v->lanes[l].events[i])) {
        const jq_event *e = &v->lanes[l].events[i];
        item key = {(uint64_t)e->arg, 0, 0};
        if (e->kind != JQ_EV_SLICE || first == n || e->arg == 0 ||
            !bsearch(&key, items + first, nspan - first, sizeof *items, cmp_job))
          continue;
        if (pass == 0)
          nslices++;
        else
          items[n++] = item_at(v, l, i);
      }
    if (pass == 0 && nslices) {
      item *grown = realloc(items, (nspan + nslices) * sizeof *items);
      if (!grown) {
        free(items);
        *err = ENOMEM;
        return NULL;
      }
      items = grown;
    }
  }
  qsort(items, n, sizeof *items, cmp_item);
  *count = n;
  return items;
}


/* The end of the group that starts at items[i]: a job's items, or a
 * thread's outside jobs. */
static size_t group_end(const item *items, size_t n, size_t i) {
  size_t j = i + 1;
  while (j < n && items[j].job == items[i].job &&
         (items[i].job != 0 || REF_LANE(items[j].ref) == REF_LANE(items[i].ref)))
    j++;
  return j;
}

static void build_group(builder *b, const item *items, size_t n) {
  if (items[0].job == 0)
    build_thread(b, items, n);
  else
    build_job(b, items, n);
}

/* Each lane's groups (ps->groups[ps->goff[l] .. ps->goff[l + 1])): the
 * groups with an item on it, each with its first span id - 1 (a group's
 * pieces lie on the lanes of its items). */
static int index_groups(jq_pieces *ps, const jq_save_view *v) {
  const item *items = ps->items;
  uint64_t *last = malloc((size_t)v->nlanes * sizeof *last);
  ps->goff = calloc((size_t)v->nlanes + 1, sizeof *ps->goff);
  if (!last || !ps->goff) {
    free(last);
    return ENOMEM;
  }
  size_t total = 0;
  for (int pass = 0; pass < 2; pass++) {
    uint64_t base = 0;
    for (int l = 0; l < v->nlanes; l++)
      last[l] = UINT64_MAX;
    for (size_t i = 0; i < ps->nitems;) {
      size_t j = group_end(items, ps->nitems, i);
      for (size_t k = i; k < j; k++) {
        int l = REF_LANE(items[k].ref);
        if (last[l] == i)
          continue;
        last[l] = i;
        if (pass == 0)
          ps->goff[l + 1]++, total++;
        else
          ps->groups[ps->goff[l]++] = (group){i, base};
      }
      for (size_t k = i; k < j; k++)
        base += REF_TYPE(items[k].ref) == ITEM_BEGIN;
      i = j;
    }
    if (pass == 0) {
      for (int l = 0; l < v->nlanes; l++)
        ps->goff[l + 1] += ps->goff[l];
      if (!(ps->groups = malloc((total ? total : 1) * sizeof *ps->groups))) {
        free(last);
        return ENOMEM;
      }
    } else {
      for (int l = v->nlanes; l > 0; l--) /* back from the ends the fill left */
        ps->goff[l] = ps->goff[l - 1];
      ps->goff[0] = 0;
    }
  }
  free(last);
  return 0;
}

int jq_pieces_build(jq_pieces *out, const jq_save_view *v) {
  memset(out, 0, sizeof *out);
  out->v = v;
  out->lane = -1;
  out->unclosed = calloc((size_t)v->nlanes + 1, sizeof(uint64_t));
  if (!out->unclosed)
    return ENOMEM;
  int err = 0;
  out->items = collect(v, &out->nitems, &err);
  if (err || !out->items)
    return err;
  if ((err = index_groups(out, v)) != 0)
    return err;
  builder b = {v, out, -1, 0, NULL, 0, 0, 0, v->stop_ticks, 0}; /* the unclosed counted */
  for (size_t i = 0; i < out->nitems && !b.err;) {
    size_t j = group_end(out->items, out->nitems, i);
    build_group(&b, out->items + i, j - i);
    i = j;
  }
  free(b.stack);
  return b.err;
}

int jq_pieces_lane(jq_pieces *ps, int lane) {
  if (ps->lane == lane)
    return 0;
  free(ps->p);
  ps->p = NULL;
  ps->n = 0;
  ps->lane = -1;
  if (!ps->items)
    return 0;
  builder b = {ps->v, ps, lane, 0, NULL, 0, 0, 0, ps->v->stop_ticks, 0};
  for (uint64_t g = ps->goff[lane]; g < ps->goff[lane + 1] && !b.err; g++) {
    size_t i = (size_t)ps->groups[g].start;
    b.next_id = ps->groups[g].base;
    build_group(&b, ps->items + i, group_end(ps->items, ps->nitems, i) - i);
  }
  free(b.stack);
  if (b.err)
    return b.err;
  qsort(ps->p, ps->n, sizeof *ps->p, cmp_piece);
  ps->lane = lane;
  return 0;
}

void jq_pieces_free(jq_pieces *out) {
  free(out->p);
  free(out->unclosed);
  free(out->items);
  free(out->groups);
  free(out->goff);
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
