/*
 * sample_tables.h - a lane's tables of sampled frames and stacks, and the
 * one function that records a sample.
 *
 * Owns: jq_stab (frames interned by their text, stacks as a prefix tree of
 * (parent stack, frame) pairs, per lane, at most JQ_STAB_MAX of each, the
 * lane's sample counters), jq_sample_put (interns a stack and puts one
 * JQ_EV_SAMPLE into the calling thread's lane), and reading them back for
 * the writer.
 * Must not: lock; allocate in jq_sample_put_runtime (called from a signal
 * handler); call Lua.
 * Thread safety: a lane's tables are written only by the lane's own thread,
 * inside the record path's busy protocol (ring.h, session.c), and read or
 * reset only by the controller with the lane quiescent.
 */
#ifndef JQ_SAMPLE_TABLES_H
#define JQ_SAMPLE_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "record/ring.h"

#define JQ_STAB_MAX 65536 /* frames, and stacks, a lane holds */

/* A frame's category in the file ("lua", "C", "runtime"). */
enum { JQ_FRAME_LUA = 0, JQ_FRAME_C, JQ_FRAME_RUNTIME };

/* One frame of a sample, as the hook read it: its text (e.g.
 * "heavy (job.lua:12)", "sort [C]", "[copy in]") and category. */
typedef struct jq_frame_text {
  const char *text;
  size_t len;
  int kind; /* JQ_FRAME_* */
} jq_frame_text;

typedef struct jq_stab jq_stab; /* sample_tables.c */

/* Gives `lane` its tables (allocated once, kept with the lane) and empties
 * them, with the synthetic frames and stacks ("[table full]", "[truncated]",
 * the JQ_ACT_* ones) interned first. Called by the controller with the lane
 * quiescent, or by the lane's thread before it samples. 0, or ENOMEM. */
int jq_stab_prepare(jq_lane *lane);
void jq_stab_free(jq_stab *t);

/* Records one sample on the calling thread's lane: frames[0..n) innermost
 * first (frames[0] is the leaf), `truncated` when the stack was deeper (a
 * root frame "[truncated]" goes above them), the job (0: none), the tag, the
 * leaf's line (0: unknown), the weight and the time (0: now). A table that
 * fills records the stack "[table full]" instead and counts it. Does
 * nothing without an armed session or tables. Not async-signal-safe. */
void jq_sample_put(const jq_frame_text *frames, int n, int truncated, int64_t job, uint16_t tag,
                   uint32_t line, uint64_t weight, uint64_t t0);

/* The same for a tick in no Lua: the one-frame stack of activity `act`
 * (JQ_ACT_*, sampler.h), interned by jq_stab_prepare. Async-signal-safe:
 * no allocation, no lock; the caller has checked that the lane is not
 * inside the record path (its busy flag). Returns 1 when it recorded the
 * sample, 0 when it could not (no armed session, the thread has not joined
 * it yet, the lane has no tables yet, a bad `act`): the caller keeps the
 * weight for the lane's next sample. A full ring stores nothing and
 * counts a dropped event, as for any event: that returns 0 too. */
int jq_sample_put_runtime(int act, int64_t job, uint16_t tag, uint64_t weight, uint64_t t0);

/* Counts `ticks` skipped because the running state has a hook that is not
 * the sampler's (laneInfo samplesSkipped.userHook), on the calling
 * thread's lane. Async-signal-safe, under the same conditions and with the
 * same result as jq_sample_put_runtime. */
int jq_sample_skip_user_hook(uint64_t ticks);

/* Records why the lane cannot sample (laneInfo sampleError): a copy of
 * `text`, at most 127 bytes; NULL clears it. By the controller, or at the
 * lane's join under the lane registry's mutex (the lane is quiescent).
 * jq_stab_prepare clears it. */
void jq_stab_set_error(jq_stab *t, const char *text);

/* The lane's sampling counters (laneInfo): samples, their weight, ticks
 * skipped and why, and why the lane could not sample (NULL: it could; a
 * string that outlives the save, or jq_stab_set_error's copy). Only
 * jq_stab_prepare resets them. */
typedef struct jq_stab_counts {
  uint64_t samples, weight;
  uint64_t skipped_user_hook, skipped_table_full;
  const char *error;
} jq_stab_counts;
jq_stab_counts *jq_stab_counts_of(jq_stab *t);

/* Reading back (the writer): frames and stacks have ids from 1. */
uint32_t jq_stab_nframes(const jq_stab *t);
const char *jq_stab_frame(const jq_stab *t, uint32_t id, size_t *len, int *kind);
uint32_t jq_stab_nstacks(const jq_stab *t);
/* Stack `id`'s frame, and its parent stack (0: a root). */
uint32_t jq_stab_stack(const jq_stab *t, uint32_t id, uint32_t *parent);

#ifdef JQ_TESTING
/* While nonzero, tables hold at most this many frames and stacks each
 * (the synthetic ones included), so a spec can fill them. */
void jq_stab_test_limit(uint32_t max);
#endif

#endif
