/*
 * events.h - the event vocabulary: what the record path stores and what the
 * saved file calls it.
 *
 * Owns: the 32-byte event (jq_event), its kinds and their flags, the
 * packing of the queue's counts, the error text's slots, and the names the
 * writer gives events in the saved file that a reader of that file also
 * recognises (categories, event names, the top-level keys).
 * Must not: hold state, allocate or call anything: constants, one type and
 * pure inline helpers. The record path (ring.h), the session (session.c),
 * the spans (spans.c) and the writer (json_writer.c) include it; nothing
 * here includes them.
 * Thread safety: no state.
 */
#ifndef JQ_EVENTS_H
#define JQ_EVENTS_H

#include <stdint.h>

/* Event kinds. Spans have t0 < t1. The queue's are written by worker.c
 * (slices, copies in and out, awaits, parks, waits), lua_queue.c (submits,
 * copies of results, edges) and queue.c (flows, cancellations). */
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
  /* The job graph's events, kept in a block of their own. */
  JQ_EV_DEP = 32,   /* instant: a finished job released a dependant (an `after`
                       dependency done), recorded where it finished; arg = the
                       dependant's id, id = flow edge (from the await edges'
                       counter), t1 = the finished job's id (not a time: this
                       instant has no end), cat = the finished job's tag,
                       flags JQ_DEP_READY when it was the last dependency */
  /* Spans and counters. */
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
  JQ_EV_COUNTS,          /* instant: the queue's counts at the start (flag
                            JQ_COUNTS_START) and at the end of a slice, on the
                            lane that ran it: arg = jq_counts_pack(ready,
                            running, suspended), id = the state's Lua heap, KB
                            (at the end only),
                            cat = the queue's number (creation order, from 1,
                            saturated at 65535) */
  JQ_EV_EDGE = 37,       /* instant: a happens-before edge, recorded where the
                            waiter went on: flags = JQ_EDGE_*, arg = the job
                            waited for (0 for JQ_EDGE_ALL), t1 = the waiting
                            job's id (0: outside jobs; not a time, as for
                            JQ_EV_DEP), id = the queue's number for
                            JQ_EDGE_ALL (jq_queue_number), else 0, cat = the
                            op tag current there */
  JQ_EV_SAMPLE = 38      /* instant: one CPU-time sample of the thread's Lua
                            stack (sampler.c): id = the stack's id in the
                            lane's sample tables (sample_tables.h), arg = the
                            job running (0: outside jobs), cat = the job's tag
                            or the op tag, t1 = jq_sample_t1(line, weight):
                            not a time, as for JQ_EV_DEP */
};

/* A sample's t1: the leaf's current line (0: unknown) in the high 32 bits,
 * its weight (timer periods, saturated) in the low 32. */
static inline uint64_t jq_sample_t1(uint32_t line, uint64_t weight) {
  return (uint64_t)line << 32 | (weight > UINT32_MAX ? UINT32_MAX : weight);
}
static inline uint32_t jq_sample_line(uint64_t t1) { return (uint32_t)(t1 >> 32); }
static inline uint32_t jq_sample_weight(uint64_t t1) { return (uint32_t)t1; }

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

/* Flags of JQ_EV_EDGE: what the waiter waited for. */
enum {
  JQ_EDGE_WAIT = 1,  /* job:wait()/pwait() returned (from a job or any thread,
                        the job finished before or not) */
  JQ_EDGE_AFTER = 2, /* a dependency named in q:after (finished or not),
                        recorded by the submit; the waiter is the new job */
  JQ_EDGE_ALL = 3    /* wait_all/pwait_all or a scope's end returned: every
                        job of queue `id` finished */
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

/* Events of raw text after a JQ_EV_TEXT of `len` bytes. */
static inline uint64_t jq_text_slots(uint32_t len) {
  return ((uint64_t)len + 31) / 32;
}

/* How many ring entries the event at e takes (1 but for JQ_EV_TEXT): readers
 * of a ring step by this. */
static inline uint64_t jq_event_span(const jq_event *e) {
  return e->kind == JQ_EV_TEXT ? 1 + jq_text_slots(e->id) : 1;
}

/* The names the writer gives events in the saved file that readers of the
 * file key on (a trace from another program may use other names). */
#define JQ_KEY_EVENTS "traceEvents"     /* the top-level array of events */
#define JQ_KEY_PROFILE "jobqueProfile"  /* the top-level object of ours */
#define JQ_CAT_JOB "job"                /* a job's slice (JQ_EV_SLICE) */
#define JQ_CAT_SUBMIT "submit"          /* a submit (JQ_EV_SUBMIT) */
#define JQ_CAT_WAIT "wait"              /* a blocked wait (JQ_EV_WAIT) */
#define JQ_CAT_COPY "copy"              /* a copy between states (JQ_EV_COPY) */
#define JQ_CAT_FLOW "flow"              /* an arrow's end point (JQ_EV_FLOW, JQ_EV_DEP) */
#define JQ_NAME_COPY_IN "copy in"       /* JQ_EV_COPY names, by JQ_COPY_KIND */
#define JQ_NAME_COPY_OUT "copy out"
#define JQ_NAME_COPY_RESULT "copy result"
#define JQ_NAME_WAKE_JOB "wake job"     /* JQ_EV_FLOW */
#define JQ_NAME_DEP_DONE "dependency done" /* JQ_EV_DEP */
#define JQ_CAT_EDGE "edge"              /* a happens-before edge (JQ_EV_EDGE) */
#define JQ_NAME_EDGE_WAIT "waited for"  /* JQ_EV_EDGE names, by JQ_EDGE_* */
#define JQ_NAME_EDGE_AFTER "after"
#define JQ_NAME_EDGE_ALL "waited for all"

#endif
