/*
 * session.h - the one recording session of the process.
 *
 * Owns: arming and disarming (start/stop), the lanes of every thread that
 * records, the category and marker registries (which outlive sessions), and
 * the snapshot that save hands to the writer (its type is in snapshot.h,
 * so that the writer sees neither the session nor the record path).
 * Must not: call Lua (lua_profile.c is the binding) or format output
 * (json_writer.c does).
 * Thread safety: every function here may be called from any thread at any
 * time, including while other threads record. Start, stop and save are
 * serialised by one control mutex; registries by another; the record path
 * (ring.h) takes neither.
 */
#ifndef JQ_SESSION_H
#define JQ_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "record/ring.h"

#if !defined(JQ_MAX_LANES)
#define JQ_MAX_LANES 1024 /* threads that can record in one process */
#endif
#if !defined(JQ_MAX_MARKERS)
#define JQ_MAX_MARKERS 4096 /* marker kinds */
#endif
#if !defined(JQ_MAX_CATEGORIES)
#define JQ_MAX_CATEGORIES 4096 /* named categories */
#endif
#define JQ_MAX_TAG 65535u     /* largest op tag / category id */
#define JQ_MAX_NAME 4096      /* longest category or marker name, in bytes */
#define JQ_PALETTE_SIZE 12

extern const uint32_t jq_palette[JQ_PALETTE_SIZE];

/* Once per process; every entry point below calls it. */
void jq_session_init(void);

/* Arms a fresh session with rings of `events_per_lane` events; stops the
 * current one first. The calling thread becomes the "caller" lane.
 * Returns 0, or ENOMEM when the caller's ring cannot be allocated: it is
 * allocated first, so the last session (stopped, if it was running) is
 * still there for jq_session_save. */
int jq_session_start(uint64_t events_per_lane);
void jq_session_stop(void);
/* Whether a session is armed: jq_ring_armed (ring.h). */

/* The session's sampling, as the file's jobqueProfile.sampling gives it
 * (snapshot.h; hz 0: it did not sample). A start sets it to zero: the
 * sampler sets it after jq_session_start, and again with its totals at
 * stop. Any thread, any time (a mutex of its own). */
struct jq_save_sampling;
void jq_session_set_sampling(const struct jq_save_sampling *s);

/* Names the calling thread's lane in this and later sessions ("worker 0"),
 * placed by sort_key (smaller first; unnamed threads follow, the caller
 * comes last); `queue` is the number of the queue whose worker it is
 * (laneInfo's queue; 0: none). */
void jq_session_name_thread(const char *name, int sort_key, int queue);

/* The color a name gets when none is given: a stable hash into the palette. */
uint32_t jq_palette_color(const char *name, size_t len);

/* Registries. Each returns 0 or an error code: ENOMEM, or ENOSPC when the
 * registry is full. */
int jq_marker_intern(const char *name, size_t len, uint32_t *id);
extern _Atomic uint32_t jq_marker_total;
static inline uint32_t jq_marker_count(void) {
  return atomic_load_explicit(&jq_marker_total, memory_order_relaxed);
}
/* Counter names (profile_counter), ids from 1, as many as marker kinds. */
int jq_counter_intern(const char *name, size_t len, uint32_t *id);
int jq_category_set(uint32_t id, const char *name, size_t len, uint32_t color);
int jq_category_intern(const char *name, size_t len, uint32_t color, uint32_t *id);

/* Why a save did not happen. */
enum { JQ_SAVE_OK = 0, JQ_SAVE_ARMED, JQ_SAVE_EMPTY, JQ_SAVE_IO };

/* Writes the last session to `path` (atomically), as protobuf when `proto`,
 * with a progress line on a terminal when `progress` (save_progress.h). On
 * failure fills `err` and, for JQ_SAVE_IO, `*errnum`. */
int jq_session_save(const char *path, int proto, int progress, char *err, size_t errlen, int *errnum);

#ifdef JQ_TESTING
/* Number of lanes ever created (for the thread-reuse spec). */
int jq_session_lane_structs(void);
/* While on, a thread without a lane gets none, as when JQ_MAX_LANES are
 * taken: its events are lost (and counted). */
void jq_session_test_lanes_full(int on);
/* Every stop's clock calibration takes `us` microseconds longer (0: as
 * built), so a spec can tell a stop stamped before it from one after. */
void jq_session_test_calibration_hold(uint64_t us);
#endif

#endif
