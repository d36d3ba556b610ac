/*
 * spans.h - the pieces of spans, as the saved file has them.
 *
 * Owns: pairing the JQ_EV_SPAN_BEGIN/END events of a session (per job, in
 * time order across lanes; outside jobs, per lane in ring order), cutting
 * each logical span at the slices of its job (a piece per slice it spans),
 * and closing what was left open (at its job's last slice, or at the stop).
 * Must not: call Lua or format output (json_writer.c writes the pieces).
 * Thread safety: reentrant; reads only the snapshot it is given.
 */
#ifndef JQ_SPANS_H
#define JQ_SPANS_H

#include <stddef.h>
#include <stdint.h>

#include "record/snapshot.h"

typedef struct jq_piece {
  uint64_t t0, t1;  /* ticks */
  uint64_t span;    /* the logical span's id, from 1, unique in the session */
  uint64_t job;     /* 0: outside jobs */
  uint64_t anchor;  /* written right after this event of its lane */
  uint32_t piece;   /* 1-based */
  uint32_t depth;   /* open spans around it in its job (or lane), for order */
  int lane;         /* index in the view's lanes */
  uint16_t cat;
  uint8_t unclosed; /* the last piece of a span closed by its job's end or the stop */
} jq_piece;

/* The session's span pieces, made one lane at a time: what they are made
 * from (the items, 24 bytes per span event and per slice of a job with
 * spans, and each lane's groups) is kept for the save. */
typedef struct jq_pieces {
  jq_piece *p; /* the pieces of lane `lane` (by anchor, start, depth) */
  size_t n;
  int lane;    /* the lane they are of; -1: none made yet */
  uint64_t *unclosed; /* per lane: spans closed by a job's end or the stop */
  const jq_save_view *v;
  struct jq_span_item *items; /* spans.c's */
  size_t nitems;
  struct jq_span_group *groups; /* by lane: groups[goff[l] .. goff[l + 1]) */
  uint64_t *goff;
} jq_pieces;

/* Reads the view's spans (the unclosed counts made; no pieces yet).
 * Returns 0 or ENOMEM; jq_pieces_free in either case. */
int jq_pieces_build(jq_pieces *out, const jq_save_view *v);
/* The pieces of `lane` into p and n (those of another lane are freed):
 * 0 or ENOMEM (then none are held). */
int jq_pieces_lane(jq_pieces *ps, int lane);
void jq_pieces_free(jq_pieces *out);

/* The innermost piece of a lane that holds an instant (a sample), for
 * instants asked in time order: a sweep over the lane's pieces by start. */
typedef struct jq_span_cursor {
  jq_piece *p;   /* a copy of the lane's pieces, by start then depth */
  size_t n, next;
  size_t *open;  /* pieces started and not yet ended, innermost last */
  size_t nopen;
} jq_span_cursor;

/* Returns 0 or ENOMEM; jq_span_cursor_free in either case. */
int jq_span_cursor_init(jq_span_cursor *c, const jq_pieces *ps, int lane);
/* The span id of the innermost piece with t0 <= t < t1, or 0; t must not
 * be less than the t of the call before. */
uint64_t jq_span_at(jq_span_cursor *c, uint64_t t);
void jq_span_cursor_free(jq_span_cursor *c);

#endif
