/*
 * save_progress.h - the progress line of a long save (profile_save's
 * {progress = true}): one line on stderr, only when stderr is a terminal
 * and the save has run for a second, updated at most 4 times a second as
 * the writer flushes its buffer, and cleared at the end:
 *   jobque_profile: saving big.pftrace: 40% of 1.2 GB
 * (the share of the session's events written, and the file's size as it
 * will be at that pace), cut to one row of the terminal (a line that
 * wraps cannot be rewritten by "\r"), the path's controls and non-UTF-8
 * bytes as '?'.
 * Owns: nothing. Must not: be used by the record path; allocate.
 * Thread safety: one save at a time (the session's control mutex).
 */
#ifndef JQ_SAVE_PROGRESS_H
#define JQ_SAVE_PROGRESS_H

#include <stdint.h>

typedef struct jq_progress {
  int on;           /* asked, and stderr is a terminal */
  int shown;        /* a line is on the terminal */
  const char *path; /* as given */
  uint64_t total;   /* the events to write */
  int64_t t0, last; /* CLOCK_MONOTONIC ns: the start, the last line */
} jq_progress;

void jq_progress_begin(jq_progress *p, int asked, const char *path, uint64_t total);
/* At a flush: `done` events of total written, `bytes` in the file so far. */
void jq_progress_at(jq_progress *p, uint64_t done, uint64_t bytes);
/* Clears the line, if one is shown. */
void jq_progress_end(jq_progress *p);

#ifdef JQ_TESTING
/* The wait before the first line and between lines (ms): 1000 and 250. */
void jq_progress_timing(int64_t after_ms, int64_t every_ms);
#endif

#endif
