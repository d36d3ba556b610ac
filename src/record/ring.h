/*
 * ring.h - per-lane event rings and the record path.
 *
 * Owns: the 32-byte event, the lane (one per recording thread), and
 * jq_ring_put(), the only code that runs for every traced event.
 * Must not: allocate, lock, format, call Lua, or make any system call but
 * the clock. A full ring never wraps: it counts what it drops.
 * Thread safety: a lane is written only by its own thread. The controller
 * (start/stop/save in trace.c) touches a lane only after the lane's `busy`
 * flag reads 0 with the session off; see the protocol in trace.c.
 */
#ifndef JQ_RING_H
#define JQ_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "record/clock.h"

#if defined(__GNUC__)
#define JQ_LIKELY(x) __builtin_expect(!!(x), 1)
#define JQ_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define JQ_LIKELY(x) (x)
#define JQ_UNLIKELY(x) (x)
#endif

/* Event kinds. Spans have t0 < t1. The queue's are written by worker.c
 * (slices, copies in and out, awaits, parks, waits), lua_queue.c (submits,
 * copies of results) and queue.c (flows, cancellations). */
enum {
  JQ_EV_MARKER = 1, /* instant: id = marker kind, arg = user argument */
  JQ_EV_SUBMIT,     /* span: a submit on the submitting lane; arg = job id */
  JQ_EV_SLICE,      /* span: one resume of a job's coroutine; arg = job id,
                       id = flow edge when flags has JQ_SLICE_RESUMED */
  JQ_EV_FLOW,       /* instant: arrow from a finished job to a waiter; id =
                       edge, arg = the waiting job's id */
  JQ_EV_AWAIT,      /* span: a job suspended awaiting another; arg = job id,
                       id = awaited job id */
  JQ_EV_WAIT,       /* span: a thread blocked waiting; arg = job id, 0 = all */
  JQ_EV_PARK,       /* span: a worker parked with nothing to run */
  JQ_EV_TEXT,       /* the error of the failed slice just before it: arg =
                       job id, id = bytes of text, which fill the next
                       jq_text_slots(id) events; flags JQ_TEXT_CUT */
  JQ_EV_CANCEL,     /* instant: a job cancelled here by its queue's close;
                       arg = job id, cat = the job's tag */
  JQ_EV_COPY,       /* span: values copied between states for a job; flags =
                       JQ_COPY_IN/OUT/RESULT, arg = job id, id = bytes
                       (saturated at UINT32_MAX), cat = the job's tag */
  /* Job graph (issue 11, sections 3-4): kept in a block of their own. */
  JQ_EV_DEP = 32,   /* instant: a finished job released a dependant (an `after`
                       dependency done), recorded where it finished; arg = the
                       dependant's id, id = flow edge (from the await edges'
                       counter), t1 = the finished job's id (not a time: this
                       instant has no end), cat = the finished job's tag,
                       flags JQ_DEP_READY when it was the last dependency */
  /* Spans and counters (issue 11, sections 1-2). */
  JQ_EV_SPAN_BEGIN = 33, /* instant: profile_begin; cat = the span's category,
                            arg = the job it ran in (0: outside jobs), t1 =
                            the lua_State (coroutine) that called it. The
                            writer pairs begins and ends per job (or per lane
                            outside jobs), an end with its coroutine's
                            innermost begin, and cuts them at the job's slices */
  JQ_EV_SPAN_END,        /* instant: profile_end; arg and t1 as for the begin */
  JQ_EV_COUNTER,         /* instant: profile_counter; id = counter name id,
                            arg = the value (a double's bits with
                            JQ_COUNTER_DOUBLE) */
  JQ_EV_COUNTS           /* instant: the queue's counts at the start (flag
                            JQ_COUNTS_START) and at the end of a slice, on the
                            lane that ran it: arg = jq_counts_pack(ready,
                            running, suspended), id = the state's Lua heap, KB
                            (at the end only),
                            cat = the queue's number (creation order, from 1,
                            saturated at 65535) */
};

/* Flags of JQ_EV_SPAN_BEGIN/END. */
enum {
  JQ_SPAN_AFTER_END = 1 /* recorded by a close handler run after the job's end
                           (its coroutine's reset: it failed, or was cancelled) */
};

/* Flags of JQ_EV_COUNTS. */
enum {
  JQ_COUNTS_START = 1 /* taken as a slice starts: no heap sample */
};

/* Flags of JQ_EV_COUNTER. */
enum {
  JQ_COUNTER_DOUBLE = 1 /* arg holds the bits of a double */
};

/* The queue's counts as one JQ_EV_COUNTS arg: 21 bits each, saturated. */
#define JQ_COUNT_BITS 21
#define JQ_COUNT_MAX ((1L << JQ_COUNT_BITS) - 1)
static inline int64_t jq_counts_pack(long ready, long running, long suspended) {
  long v[3] = {ready, running, suspended};
  int64_t packed = 0;
  for (int i = 0; i < 3; i++) {
    long x = v[i] < 0 ? 0 : v[i] > JQ_COUNT_MAX ? JQ_COUNT_MAX : v[i];
    packed |= (int64_t)x << (JQ_COUNT_BITS * i);
  }
  return packed;
}
static inline long jq_counts_field(int64_t packed, int i) {
  return (long)(((uint64_t)packed >> (JQ_COUNT_BITS * i)) & (uint64_t)JQ_COUNT_MAX);
}

/* Flags of JQ_EV_DEP. */
enum {
  JQ_DEP_READY = 1 /* the dependant became ready here */
};

/* What a JQ_EV_COPY copied. */
enum {
  JQ_COPY_IN = 1, /* a job's function and arguments, decoded on its worker */
  JQ_COPY_OUT,    /* its results, encoded on its worker */
  JQ_COPY_RESULT, /* its results, decoded where a wait returns them */
  JQ_COPY_KIND = 3,
  JQ_COPY_FAILED = 8 /* the job failed here (its last event): JQ_EV_TEXT follows */
};

/* The most bytes of an error message a trace keeps; JQ_TEXT_CUT marks a
 * message that was longer (cut at a UTF-8 character boundary). */
#if !defined(JQ_TEXT_MAX)
#define JQ_TEXT_MAX 256
#endif
#define JQ_TEXT_CUT 1

/* Flags of JQ_EV_SLICE. */
enum {
  JQ_SLICE_FIRST = 1,   /* the job's first slice: the submit's arrow ends here */
  JQ_SLICE_RESUMED = 2, /* resumed after an await: that arrow ends here */
  JQ_SLICE_LAST = 4,    /* the job finished in this slice */
  JQ_SLICE_FAILED = 8   /* ... with an error */
};

typedef struct jq_event {
  uint64_t t0;  /* ticks */
  uint64_t t1;  /* ticks at the end of a span; 0 for an instant */
  int64_t arg;  /* user argument */
  uint32_t id;  /* marker kind */
  uint16_t cat; /* op tag current when the event was recorded */
  uint8_t kind;
  uint8_t flags;
} jq_event;

_Static_assert(sizeof(jq_event) == 32, "a trace event is 32 bytes");

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
  /* Cold, under the lane registry's mutex (trace.c). */
  int dead;              /* the owning thread has exited */
  int index;             /* position in the session's join order */
  int sort_key;          /* lane order in the saved file */
  char name[40];
} __attribute__((aligned(64))) jq_lane;

/* Per-thread state: the lane (NULL before the thread's first traced event)
 * and the op tag of profile_tag, which outlives sessions. */
typedef struct jq_thread {
  jq_lane *lane;
  uint16_t tag;
  int sort_key;  /* lane order; 0: not named (a "thread N" lane) */
  char name[40]; /* lane name set by jq_trace_name_thread */
  /* Spans: the job running on this thread now (0: none), and the open-span
   * count of whatever runs (the job's, set by the runner around each
   * resume; NULL: the thread's own, own_depth). Counted whether tracing is
   * on or not, so that profile_end knows whether anything is open. */
  uint64_t job;
  uint64_t *span_depth;
  uint64_t own_depth;
  uint8_t span_flags; /* of the span events it records (JQ_SPAN_AFTER_END) */
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
 * it a seq_cst exchange does (see the protocol in trace.c). */
static inline void jq_lane_announce(jq_lane *lane) {
  extern int jq_need_fence;
  if (JQ_UNLIKELY(jq_need_fence)) {
    atomic_exchange_explicit(&lane->busy, 1, memory_order_seq_cst);
  } else {
    atomic_store_explicit(&lane->busy, 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
  }
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
  if (JQ_LIKELY(atomic_load_explicit(&jq_session_state, memory_order_seq_cst) == state)) {
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
    } else {
      if (lane->dropped++ == 0)
        lane->full_at = now;
    }
  }
  atomic_store_explicit(&lane->busy, 0, memory_order_release);
}

/* Events of raw text after a JQ_EV_TEXT of `len` bytes. */
static inline uint64_t jq_text_slots(uint32_t len) {
  return ((uint64_t)len + 31) / 32;
}

/* How many ring entries the event at e takes (1 but for JQ_EV_TEXT): readers
 * of a ring step by this. */
static inline uint64_t jq_event_span(const jq_event *e) {
  return e->kind == JQ_EV_TEXT ? 1 + jq_text_slots(e->id) : 1;
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
