/*
 * json_writer.h - the buffered Perfetto JSON writer.
 *
 * Owns: the file format (traceEvents + the jobqueProfile sibling key), JSON
 * string escaping and number formatting. The file itself is written by
 * file_replace.c (atomic replace, symlinks followed, devices in place).
 * Must not: call Lua, take locks or read live lanes: it formats a snapshot
 * (jq_save_view) that trace.c built while the session was quiescent.
 * Thread safety: reentrant; uses only its arguments.
 */
#ifndef JQ_JSON_WRITER_H
#define JQ_JSON_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "record/clock.h"
#include "record/ring.h"

typedef struct jq_save_lane {
  const jq_event *events;
  uint64_t count;
  uint64_t dropped;
  uint64_t full_at; /* ticks */
  int no_ring;      /* the lane's ring could not be allocated */
  char name[40];
  int sort_key;
  const char *role; /* "worker", "caller" or "other" (a static string) */
} jq_save_lane;

typedef struct jq_save_name {
  uint32_t id;
  uint32_t color; /* 0xRRGGBB (categories only) */
  const char *name;
  size_t len;
} jq_save_name;

typedef struct jq_save_view {
  const jq_save_lane *lanes; /* in file order */
  int nlanes;
  const jq_save_name *categories; /* by id */
  int ncategories;
  const jq_save_name *markers; /* markers[i] has id i + 1 */
  int nmarkers;
  const jq_save_name *counters; /* counters[i] has id i + 1 */
  int ncounters;
  jq_clock_scale scale;      /* zero = session start */
  uint64_t stop_ticks;
  uint64_t events_per_lane;
  uint64_t lost;             /* events from threads that got no lane */
  long pid;
  const char *clock;
} jq_save_view;

/* Returns 0, or an errno value with a message in `err`. */
int jq_json_save(const jq_save_view *v, const char *path, char *err, size_t errlen);

#ifdef JQ_TESTING
/* What the writer prints for a slice from a_ns to z_ns (nanoseconds since
 * the session's start): `ts,"dur":dur`, at most 80 bytes, not terminated.
 * Returns its length (the specs' view of the times' rounding). */
#define JQ_JSON_SPAN_TEXT_MAX 80
size_t jq_json_span_text(char *out, uint64_t a_ns, uint64_t z_ns);
#endif

#endif
