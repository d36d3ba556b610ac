/*
 * ring.h - per-lane event rings and the record path.
 *
 * Owns: the lane (one per recording thread), the thread's recording state,
 * and jq_ring_put(), the only code that runs for every recorded event. The
 * events themselves (kinds, flags, layout) are the vocabulary of events.h.
 * Must not: allocate, lock, format, call Lua, or make any system call but
 * the clock. A full ring never wraps: it counts what it drops.
 * Thread safety: a lane is written only by its own thread. The controller
 * (start/stop/save in session.c) touches a lane only after the lane's `busy`
 * flag reads 0 with the session off; see the protocol in session.c.
 */
#ifndef JQ_RING_H
#define JQ_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "record/clock.h"
#include "record/events.h"

#if defined(__GNUC__)
#define JQ_LIKELY(x) __builtin_expect(!!(x), 1)
#define JQ_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define JQ_LIKELY(x) (x)
#define JQ_UNLIKELY(x) (x)
#endif

/* The session word: generation << 1 | armed. */
extern _Atomic uint32_t jq_session_state;

typedef struct jq_lane {
  /* Hot, written by the owning thread only. */
  _Atomic uint32_t busy; /* 1 while the owner is inside the record path */
  uint32_t gen;          /* session word of the session this lane joined */
  uint64_t count;        /* events stored */
  uint64_t cap;          /* ring capacity (0: no ring, every event dropped) */
  jq_event *events;
  uint64_t dropped;      /* events that found the ring full */
  uint64_t full_at;      /* ticks of the first dropped event */
  /* Cold, under the lane registry's mutex (session.c). */
  int dead;              /* the owning thread has exited */
  int index;             /* position in the session's join order */
  int sort_key;          /* lane order in the saved file */
  int queue;             /* a worker lane's queue number (from 1), else 0 */
  long os_tid;           /* the OS thread id (gettid) of the thread it is bound to */
  char name[40];
  /* The sampler's tables of frames and stacks (sample_tables.h): NULL until
   * a sampling session prepares the lane; written by the owning thread
   * inside the record path's protocol, reset by the controller. */
  struct jq_stab *stab;
} __attribute__((aligned(64))) jq_lane;

/* Per-thread state: the lane (NULL before the thread's first recorded event)
 * and the op tag of profile_tag, which outlives sessions. */
typedef struct jq_thread {
  jq_lane *lane;
  uint16_t tag;
  int sort_key;  /* lane order; 0: not named (a "thread N" lane) */
  char name[40]; /* lane name set by jq_session_name_thread */
  /* Spans: the job running on this thread now (0: none), and the open-span
   * count of whatever runs (the job's, set by the runner around each
   * resume; NULL: the thread's own, own_depth). Counted whether recording is
   * on or not, so that profile_end knows whether anything is open. */
  uint64_t job;
  uint64_t *span_depth;
  uint64_t own_depth;
  uint8_t span_flags; /* of the span events it records (JQ_SPAN_AFTER_END) */
  int queue;          /* a queue's worker: the queue's number (from 1); else 0 */
  /* The sampler (sampler.h): the coroutine running Lua on this thread now
   * (a lua_State *; NULL: no Lua), what the thread does when it runs none
   * (JQ_ACT_*) and for which job. Written by this thread only, read by its
   * own signal handler. */
  void *_Atomic sample_L;
  _Atomic uint8_t sample_act;
  _Atomic int64_t sample_job;
} jq_thread;

/* The open-span count of the code running on this thread. */
static inline uint64_t *jq_span_depth(jq_thread *self) {
  return self->span_depth ? self->span_depth : &self->own_depth;
}

/* initial-exec: a plain %fs-relative access instead of a __tls_get_addr
 * call on every event. A dlopen'ed library may use it for a few bytes: glibc
 * keeps static TLS surplus for exactly this (glibc.rtld.optional_static_tls). */
#define JQ_TLS_MODEL __attribute__((tls_model("initial-exec")))
extern _Thread_local jq_thread jq_self JQ_TLS_MODEL;

/* Out of line: gives the calling thread a lane in the armed session `state`
 * (allocating its ring). Returns NULL when no lane can be had; the loss is
 * counted. */
jq_lane *jq_lane_join(uint32_t state);

/* Announces a write to the lane, before the recorder re-checks the session.
 * The controller's membarrier() orders the two for us; on kernels without
 * it a seq_cst exchange does (see the protocol in session.c). */
static inline void jq_lane_announce(jq_lane *lane) {
  extern int jq_need_fence;
  if (JQ_UNLIKELY(jq_need_fence)) {
    atomic_exchange_explicit(&lane->busy, 1, memory_order_seq_cst);
  } else {
    atomic_store_explicit(&lane->busy, 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
  }
}

/* Stores one event in `lane`'s ring, or counts it dropped when the ring is
 * full; returns whether it stored it. Only inside the protocol: after
 * jq_lane_announce(lane) and a re-check that the session is still the one
 * the lane joined, before busy goes back to 0. `t0` 0 means now. */
static inline int jq_ring_store(jq_lane *lane, uint8_t kind, uint8_t flags, uint16_t cat,
                                uint32_t id, int64_t arg, uint64_t t0, uint64_t t1) {
  uint64_t now = t0 ? t0 : jq_clock_ticks();
  uint64_t i = lane->count;
  if (JQ_LIKELY(i < lane->cap)) {
    jq_event *e = &lane->events[i];
    e->t0 = now;
    e->t1 = t1;
    e->arg = arg;
    e->id = id;
    e->cat = cat;
    e->kind = kind;
    e->flags = flags;
    lane->count = i + 1;
    return 1;
  }
  if (lane->dropped++ == 0)
    lane->full_at = now;
  return 0;
}

/* Records one event on the calling thread's lane; does nothing when no
 * session is armed. `t0` 0 means now; `cat` is an op tag. */
static inline void jq_ring_put(uint8_t kind, uint8_t flags, uint16_t cat, uint32_t id,
                               int64_t arg, uint64_t t0, uint64_t t1) {
  uint32_t state = atomic_load_explicit(&jq_session_state, memory_order_acquire);
  if (JQ_LIKELY(!(state & 1u)))
    return;
  jq_thread *self = &jq_self;
  jq_lane *lane = self->lane;
  if (JQ_UNLIKELY(lane == NULL || lane->gen != state)) {
    lane = jq_lane_join(state);
    if (lane == NULL)
      return;
  }
  jq_lane_announce(lane); /* then re-check the session */
  if (JQ_LIKELY(atomic_load_explicit(&jq_session_state, memory_order_seq_cst) == state))
    jq_ring_store(lane, kind, flags, cat, id, arg, t0, t1);
  atomic_store_explicit(&lane->busy, 0, memory_order_release);
}


/* Records the error text of job `job` (the failed slice recorded just
 * before): at most JQ_TEXT_MAX bytes, cut at a UTF-8 character boundary,
 * stored in the ring after its header event. A ring without room for all of
 * it drops it whole and counts one dropped event. No allocation, no lock, no
 * formatting: a bounded memcpy. */
static inline void jq_ring_put_text(uint16_t cat, int64_t job, const char *text, size_t len) {
  uint32_t state = atomic_load_explicit(&jq_session_state, memory_order_acquire);
  if (!(state & 1u))
    return;
  jq_lane *lane = jq_self.lane;
  if (lane == NULL || lane->gen != state) /* the slice before it joined: nothing to attach to */
    return;
  uint8_t flags = 0;
  if (len > JQ_TEXT_MAX) {
    len = JQ_TEXT_MAX;
    while (len > 0 && ((unsigned char)text[len] & 0xc0) == 0x80) /* text[len] continues a character */
      len--;
    flags = JQ_TEXT_CUT;
  }
  jq_lane_announce(lane);
  if (atomic_load_explicit(&jq_session_state, memory_order_seq_cst) == state) {
    uint64_t i = lane->count, need = 1 + jq_text_slots((uint32_t)len);
    if (i < lane->cap && lane->cap - i >= need) {
      jq_event *e = &lane->events[i];
      e->t0 = jq_clock_ticks();
      e->t1 = 0;
      e->arg = job;
      e->id = (uint32_t)len;
      e->cat = cat;
      e->kind = JQ_EV_TEXT;
      e->flags = flags;
      memcpy(e + 1, text, len);
      lane->count = i + need;
    } else {
      if (lane->dropped++ == 0)
        lane->full_at = jq_clock_ticks();
    }
  }
  atomic_store_explicit(&lane->busy, 0, memory_order_release);
}

/* A marker: an instant carrying the thread's current op tag. */
static inline void jq_ring_marker(uint32_t id, int64_t arg) {
  jq_ring_put(JQ_EV_MARKER, 0, jq_self.tag, id, arg, 0, 0);
}

/* Whether a session is armed (a hint for callers that prepare an event). */
static inline int jq_ring_armed(void) {
  return atomic_load_explicit(&jq_session_state, memory_order_relaxed) & 1u;
}

/* A span measured around some work: t0 = jq_span_begin() before it (0 when
 * no session is armed), then jq_span_end(...) after it, which records the
 * span if a session was armed at both ends and returns its end (else 0). */
static inline uint64_t jq_span_begin(void) {
  return jq_ring_armed() ? jq_clock_ticks() : 0;
}

static inline uint64_t jq_span_end(uint8_t kind, uint8_t flags, uint16_t cat, uint32_t id,
                                   int64_t arg, uint64_t t0) {
  if (!t0 || !jq_ring_armed())
    return 0;
  uint64_t t1 = jq_clock_ticks();
  jq_ring_put(kind, flags, cat, id, arg, t0, t1);
  return t1;
}

/* A byte count as a JQ_EV_COPY carries it: saturated at UINT32_MAX. */
static inline uint32_t jq_copy_bytes(size_t n) {
  return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

#endif
