/*
 * clock.h - the trace clock: raw ticks on the record path, nanoseconds at save.
 *
 * Owns: the choice of tick source (an invariant TSC where the CPU has one,
 * CLOCK_MONOTONIC otherwise) and the conversion of ticks to nanoseconds.
 * Must not: allocate, lock or call Lua. jq_clock_ticks() is the only part on
 * the record path.
 * Thread safety: jq_clock_init() runs once (pthread_once) before any tick is
 * read; after that the source never changes, so every reader is safe.
 */
#ifndef JQ_CLOCK_H
#define JQ_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define JQ_HAVE_TSC 1
#else
#define JQ_HAVE_TSC 0
#endif

/* Set once by jq_clock_init(): non-zero when ticks are TSC cycles. */
extern int jq_clock_tsc;

/* Clock `id` in nanoseconds (0 when it cannot be read). */
static inline uint64_t jq_clock_ns(clockid_t id) {
  struct timespec ts;
  if (clock_gettime(id, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t jq_clock_monotonic_ns(void) {
  return jq_clock_ns(CLOCK_MONOTONIC);
}

/* Record path: one instruction with a TSC, one vDSO call without. */
static inline uint64_t jq_clock_ticks(void) {
#if JQ_HAVE_TSC
  if (jq_clock_tsc)
    return __rdtsc();
#endif
  return jq_clock_monotonic_ns();
}

/* A tick-to-nanosecond conversion: ns = ((ticks - origin) * mult) >> 32. */
typedef struct jq_clock_scale {
  uint64_t origin;
  uint64_t mult;
} jq_clock_scale;

/* Picks the tick source; honours JOBQUE_PROFILE_CLOCK=monotonic|tsc. */
void jq_clock_init(void);

/* "tsc" or "monotonic". */
const char *jq_clock_name(void);

/* A scale whose zero is the tick `origin`. With a TSC this measures the tick
 * rate against CLOCK_MONOTONIC over the whole life of the library (at least
 * 20 ms, waiting if it must), so the error is a few parts per million. */
jq_clock_scale jq_clock_scale_from(uint64_t origin);

static inline uint64_t jq_clock_to_ns(const jq_clock_scale *s, uint64_t ticks) {
  if (ticks <= s->origin)
    return 0;
  return (uint64_t)(((unsigned __int128)(ticks - s->origin) * s->mult) >> 32);
}

#endif
