/*
 * snapshot.h - the session's snapshot: what save hands to the writer.
 *
 * Owns: the types of the snapshot (jq_save_view, its lanes and names),
 * which session.c fills from the stopped session and json_writer.c and
 * spans.c read. A header of its own so that the writer sees the events
 * and this view, never the session or the record path.
 * Must not: declare functions or hold state.
 * Thread safety: a view is read-only once built. Its lanes point into the
 * session's rings, which stay quiescent while jq_session_save holds the
 * session's control mutex, as it does until the writer returns; its names
 * are copies or never freed.
 */
#ifndef JQ_SNAPSHOT_H
#define JQ_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "record/clock.h"
#include "record/events.h"

typedef struct jq_save_lane {
  const jq_event *events;
  uint64_t count;
  uint64_t dropped;
  uint64_t full_at; /* ticks */
  int no_ring;      /* the lane's ring could not be allocated */
  char name[40];
  int sort_key;
  const char *role; /* "worker", "caller" or "other" (a static string) */
  int queue;        /* a worker lane's queue number (from 1), else 0 */
  const struct jq_stab *stab; /* the lane's sample tables (sample_tables.h);
                                 NULL: the session did not sample here */
  long os_tid;                /* the OS thread id (gettid) that recorded it */
} jq_save_lane;

/* Where the session sits in time and on which machine: the three clocks
 * read together at its start (its timeline's zero), the host's name and the
 * kernel's boot id ("" when unknown). For traces of several processes. */
typedef struct jq_save_where {
  int64_t realtime_ns, boottime_ns, monotonic_ns;
  char host[256];
  char boot_id[40];
} jq_save_where;

/* The session's sampling (jobqueProfile.sampling): hz 0 = it did not sample. */
typedef struct jq_save_sampling {
  int hz;
  int depth;
  uint64_t period_ns;
  uint64_t signals; /* SIGPROF deliveries taken */
  uint64_t ticks;   /* timer periods they carried: 1 + si_overrun each */
} jq_save_sampling;

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
  jq_save_sampling sampling;
  jq_save_where where;
  struct jq_progress *progress; /* the save's progress line (save_progress.h): the writers
                                   report at each flush */
} jq_save_view;

#endif
