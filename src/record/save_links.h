/*
 * save_links.h - what a writer needs to know across the lanes of a
 * session's snapshot: which arrows have both ends recorded, the `after`
 * dependencies done by dependant, the spans' pieces, and the samples'
 * frames merged into one tree. Both writers (json_writer.c and
 * proto_writer.c) read the same facts from here.
 *
 * Owns: building and freeing a jq_save_links from a jq_save_view.
 * Must not: format output; call Lua.
 * Thread safety: reentrant; reads only the snapshot it is given.
 */
#ifndef JQ_SAVE_LINKS_H
#define JQ_SAVE_LINKS_H

#include <stddef.h>
#include <stdint.h>

#include "common/utf8.h"
#include "record/snapshot.h"
#include "record/spans.h"

/* One `after` dependency done: the arrow from its end to the dependant's
 * first slice. */
typedef struct jq_dep_edge {
  uint64_t dependant, dep; /* job ids */
  uint32_t edge;
} jq_dep_edge;

/* The samples' frames merged from every lane's tables: a node per distinct
 * path of frame texts, numbered in order of first use (lane order, then
 * each lane's stack ids, a parent's before its child's). Only the paths of
 * recorded samples are in it. */
typedef struct jq_tree_node {
  uint32_t parent; /* node, 0: a root */
  uint32_t frame;  /* the frame's id in lane `lane`'s tables */
  uint32_t hash;
  int lane;
} jq_tree_node;

typedef struct jq_frame_tree {
  jq_tree_node *nodes; /* nodes[1 .. n] */
  uint32_t n;
  uint32_t *slots; /* node ids by (parent, text), 0 = empty */
  size_t mask;
  uint32_t **node_of; /* per lane: its stack id -> node (0: not written) */
  uint64_t samples;   /* sample events written */
} jq_frame_tree;

typedef struct jq_save_links {
  const jq_save_view *v;
  uint16_t *cat_index;     /* tag -> 1 + index in v->categories, 0: none */
  uint64_t *submits;       /* job ids with a recorded submit, sorted */
  size_t nsubmits;
  uint64_t *wakes;         /* flow edges with a recorded start, sorted */
  size_t nwakes;
  jq_dep_edge *deps;       /* `after` dependencies done (JQ_EV_DEP), by dependant */
  size_t ndeps;
  uint64_t *firsts;        /* job ids with a recorded first slice, sorted */
  size_t nfirsts;
  uint16_t counts_queue;   /* the queue of the first JQ_EV_COUNTS */
  uint8_t counts_queues;   /* several queues recorded counts: a "jobs" track each */
  jq_pieces pieces;        /* spans cut at slices (spans.c) */
  jq_frame_tree *tree;     /* the samples' frames (NULL: no samples to write) */
} jq_save_links;


/* 0, or ENOMEM (free it all the same). */
int jq_save_links_init(jq_save_links *l, const jq_save_view *v);
void jq_save_links_free(jq_save_links *l);

/* Whether `key` is in the sorted array. */
int jq_links_has(const uint64_t *sorted, size_t n, uint64_t key);
/* The first of the dependencies done for job `job` in l->deps, or l->ndeps. */
size_t jq_links_first_dep(const jq_save_links *l, uint64_t job);
/* The error text recorded for `job` right after event i of a lane, or NULL. */
const jq_event *jq_links_text_after(const jq_save_lane *lane, uint64_t i, int64_t job);
/* Whether another lane of the view has lane `index`'s name (two unnamed
 * queues both have a "worker 0"). */
int jq_links_lane_name_shared(const jq_save_view *v, int index);
/* The text and kind (JQ_FRAME_*) of frame `frame` of lane `lane`'s tables. */
const char *jq_links_frame_text(const jq_save_view *v, int lane, uint32_t frame, size_t *len,
                                int *kind);

#endif
