/*
 * save_links.c - the cross-lane facts of a snapshot that both writers need
 * (save_links.h): recorded arrow ends, dependencies by dependant, span
 * pieces (spans.c), and the samples' merged frame tree.
 */
#include "record/save_links.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record/events.h"
#include "record/sample_tables.h"

static int tree_build(jq_frame_tree **out, const jq_save_view *v);
static void tree_free(jq_frame_tree *t, int nlanes);

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int cmp_dep(const void *a, const void *b) {
  const jq_dep_edge *x = a, *y = b;
  if (x->dependant != y->dependant)
    return x->dependant < y->dependant ? -1 : 1;
  return x->edge < y->edge ? -1 : x->edge > y->edge;
}

int jq_links_has(const uint64_t *sorted, size_t n, uint64_t key) {
  return n && bsearch(&key, sorted, n, sizeof key, cmp_u64) != NULL;
}

int jq_save_links_init(jq_save_links *c, const jq_save_view *v) {
  memset(c, 0, sizeof *c);
  c->v = v;
  c->cat_index = calloc(65536, sizeof(uint16_t));
  size_t ns = 0, nw = 0, nd = 0, nf = 0;
  for (int l = 0; l < v->nlanes; l++)
    for (uint64_t i = 0; i < v->lanes[l].count; i += jq_event_span(&v->lanes[l].events[i])) {
      const jq_event *e = &v->lanes[l].events[i];
      ns += e->kind == JQ_EV_SUBMIT;
      nw += e->kind == JQ_EV_FLOW;
      nd += e->kind == JQ_EV_DEP;
      nf += e->kind == JQ_EV_SLICE && (e->flags & JQ_SLICE_FIRST);
      if (e->kind == JQ_EV_COUNTS && !c->counts_queues) {
        c->counts_queues = c->counts_queue && c->counts_queue != e->cat;
        c->counts_queue = e->cat;
      }
    }
  c->submits = malloc(sizeof(uint64_t) * (ns ? ns : 1));
  c->wakes = malloc(sizeof(uint64_t) * (nw ? nw : 1));
  c->deps = malloc(sizeof(jq_dep_edge) * (nd ? nd : 1));
  c->firsts = malloc(sizeof(uint64_t) * (nf ? nf : 1));
  if (!c->cat_index || !c->submits || !c->wakes || !c->deps || !c->firsts)
    return ENOMEM;
  for (int i = 0; i < v->ncategories; i++)
    c->cat_index[v->categories[i].id & 0xffff] = (uint16_t)(i + 1);
  if (jq_pieces_build(&c->pieces, v) != 0 || tree_build(&c->tree, v) != 0)
    return ENOMEM;
  for (int l = 0; l < v->nlanes && ns + nw > 0; l++) /* a marker-only trace skips this */
    for (uint64_t i = 0; i < v->lanes[l].count; i += jq_event_span(&v->lanes[l].events[i])) {
      const jq_event *e = &v->lanes[l].events[i];
      if (e->kind == JQ_EV_SUBMIT)
        c->submits[c->nsubmits++] = (uint64_t)e->arg;
      else if (e->kind == JQ_EV_FLOW)
        c->wakes[c->nwakes++] = e->id;
      else if (e->kind == JQ_EV_DEP)
        c->deps[c->ndeps++] = (jq_dep_edge){(uint64_t)e->arg, e->t1, e->id};
      else if (e->kind == JQ_EV_SLICE && (e->flags & JQ_SLICE_FIRST))
        c->firsts[c->nfirsts++] = (uint64_t)e->arg;
    }
  qsort(c->submits, c->nsubmits, sizeof(uint64_t), cmp_u64);
  qsort(c->wakes, c->nwakes, sizeof(uint64_t), cmp_u64);
  qsort(c->deps, c->ndeps, sizeof(jq_dep_edge), cmp_dep);
  qsort(c->firsts, c->nfirsts, sizeof(uint64_t), cmp_u64);
  return 0;
}

void jq_save_links_free(jq_save_links *c) {
  free(c->cat_index);
  free(c->submits);
  free(c->wakes);
  free(c->deps);
  free(c->firsts);
  jq_pieces_free(&c->pieces);
  tree_free(c->tree, c->v ? c->v->nlanes : 0);
}

size_t jq_links_first_dep(const jq_save_links *c, uint64_t job) {
  size_t lo = 0, hi = c->ndeps;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c->deps[mid].dependant < job)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

const jq_event *jq_links_text_after(const jq_save_lane *lane, uint64_t i, int64_t job) {
  uint64_t k = i + 1;
  if (k >= lane->count)
    return NULL;
  const jq_event *t = &lane->events[k];
  if (t->kind != JQ_EV_TEXT || t->arg != job || t->id > JQ_TEXT_MAX ||
      jq_text_slots(t->id) > lane->count - k - 1)
    return NULL;
  return t;
}


int jq_links_lane_name_shared(const jq_save_view *v, int index) {
  const char *name = v->lanes[index].name;
  for (int i = 0; i < v->nlanes; i++)
    if (i != index && strncmp(v->lanes[i].name, name, sizeof v->lanes[i].name) == 0)
      return 1;
  return 0;
}

/* ---- the samples' merged frames ---- */


const char *jq_links_frame_text(const jq_save_view *v, int lane, uint32_t frame, size_t *len,
                              int *kind) {
  const char *s = jq_stab_frame(v->lanes[lane].stab, frame, len, kind);
  if (!s)
    *len = 0, *kind = JQ_FRAME_RUNTIME;
  return s ? s : "";
}

/* The node for `frame` of lane `lane` under node `parent`, made if new. */
static uint32_t tree_intern(jq_frame_tree *t, const jq_save_view *v, uint32_t parent, int lane,
                            uint32_t frame) {
  size_t len, olen;
  int kind, okind;
  const char *s = jq_links_frame_text(v, lane, frame, &len, &kind);
  uint32_t h = parent * 2654435761u;
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)s[i]) * 16777619u;
  size_t i = h & t->mask;
  for (uint32_t id; (id = t->slots[i]) != 0; i = (i + 1) & t->mask) {
    const jq_tree_node *nd = &t->nodes[id];
    if (nd->hash != h || nd->parent != parent)
      continue;
    const char *o = jq_links_frame_text(v, nd->lane, nd->frame, &olen, &okind);
    if (olen == len && memcmp(o, s, len) == 0)
      return id;
  }
  uint32_t id = ++t->n;
  t->nodes[id] = (jq_tree_node){parent, frame, h, lane};
  t->slots[i] = id;
  return id;
}

/* Marks lane l's stacks that a sample uses, and their ancestors (a
 * parent's id is below its child's); returns how many. */
static size_t mark_used(uint32_t *used, const jq_save_lane *lane, uint32_t nstacks) {
  size_t n = 0;
  for (uint64_t i = 0; i < lane->count; i += jq_event_span(&lane->events[i])) {
    const jq_event *e = &lane->events[i];
    if (e->kind == JQ_EV_SAMPLE && e->id >= 1 && e->id <= nstacks)
      used[e->id] = 1;
  }
  for (uint32_t id = nstacks; id >= 1; id--) {
    uint32_t parent;
    if (!used[id])
      continue;
    n++;
    jq_stab_stack(lane->stab, id, &parent);
    if (parent >= 1 && parent < id)
      used[parent] = 1;
  }
  return n;
}

static void tree_free(jq_frame_tree *t, int nlanes) {
  if (!t)
    return;
  for (int l = 0; l < nlanes && t->node_of; l++)
    free(t->node_of[l]);
  free(t->node_of);
  free(t->nodes);
  free(t->slots);
  free(t);
}

/* The merged tree of the view's samples; *out NULL when there are none. */
static int tree_build(jq_frame_tree **out, const jq_save_view *v) {
  *out = NULL;
  jq_frame_tree *t = calloc(1, sizeof *t);
  if (!t || !(t->node_of = calloc((size_t)v->nlanes + 1, sizeof *t->node_of))) {
    free(t);
    return ENOMEM;
  }
  size_t total = 0;
  for (int l = 0; l < v->nlanes; l++) {
    const jq_save_lane *lane = &v->lanes[l];
    if (!lane->stab)
      continue;
    uint32_t ns = jq_stab_nstacks(lane->stab);
    if (!(t->node_of[l] = calloc((size_t)ns + 1, sizeof(uint32_t)))) {
      tree_free(t, v->nlanes);
      return ENOMEM;
    }
    total += mark_used(t->node_of[l], lane, ns);
    for (uint64_t i = 0; i < lane->count; i += jq_event_span(&lane->events[i]))
      t->samples += lane->events[i].kind == JQ_EV_SAMPLE && lane->events[i].id >= 1 &&
                    lane->events[i].id <= ns;
  }
  if (t->samples == 0 && v->sampling.hz <= 0) { /* no samples to write */
    tree_free(t, v->nlanes);
    return 0;
  }
  size_t slots = 2;
  while (slots < 2 * total)
    slots *= 2;
  t->mask = slots - 1;
  t->nodes = malloc((total + 1) * sizeof *t->nodes);
  t->slots = calloc(slots, sizeof *t->slots);
  if (!t->nodes || !t->slots) {
    tree_free(t, v->nlanes);
    return ENOMEM;
  }
  for (int l = 0; l < v->nlanes; l++) {
    uint32_t *node_of = t->node_of[l];
    for (uint32_t id = 1; node_of && id <= jq_stab_nstacks(v->lanes[l].stab); id++) {
      uint32_t parent, frame = jq_stab_stack(v->lanes[l].stab, id, &parent);
      if (node_of[id])
        node_of[id] = tree_intern(t, v, parent ? node_of[parent] : 0, l, frame);
    }
  }
  *out = t;
  return 0;
}

