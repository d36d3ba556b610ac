/*
 * clock.c - picks the tick source and calibrates ticks against nanoseconds.
 *
 * No Lua API, no allocation, no locks (jq_clock_init runs under pthread_once
 * in the caller).
 */
#include "record/clock.h"

#include <stdlib.h>
#include <string.h>
#if JQ_HAVE_TSC
#include <cpuid.h>
#endif

int jq_clock_tsc = 0;

/* The calibration anchor: one (ticks, ns) pair taken when the library loaded. */
static uint64_t anchor_ticks, anchor_ns;

#if JQ_HAVE_TSC
static int cpu_has_invariant_tsc(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
    return 0;
  __cpuid(0x80000007u, a, b, c, d);
  return (d >> 8) & 1u; /* "TscInvariant": constant rate, runs in deep C-states */
}
#endif

/* Reads ticks and ns as close together as the machine allows. */
static void read_pair(uint64_t *ticks, uint64_t *ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 5; i++) {
    uint64_t t0 = jq_clock_ticks();
    uint64_t n = jq_clock_monotonic_ns();
    uint64_t t1 = jq_clock_ticks();
    if (t1 - t0 < best) {
      best = t1 - t0;
      *ticks = t0 + (t1 - t0) / 2;
      *ns = n;
    }
  }
}

void jq_clock_init(void) {
  const char *want = getenv("JOBQUE_PROFILE_CLOCK");
#if JQ_HAVE_TSC
  jq_clock_tsc = cpu_has_invariant_tsc();
  if (want && strcmp(want, "tsc") == 0)
    jq_clock_tsc = 1;
#endif
  if (want && strcmp(want, "monotonic") == 0)
    jq_clock_tsc = 0;
  read_pair(&anchor_ticks, &anchor_ns);
}

const char *jq_clock_name(void) {
  return jq_clock_tsc ? "tsc" : "monotonic";
}

jq_clock_scale jq_clock_scale_from(uint64_t origin) {
  jq_clock_scale s;
  s.origin = origin;
  if (!jq_clock_tsc) {
    s.mult = (uint64_t)1 << 32; /* ticks are nanoseconds */
    return s;
  }
  uint64_t ticks, ns;
  read_pair(&ticks, &ns);
  while (ns - anchor_ns < 20000000u) /* too short a baseline: widen it */
    read_pair(&ticks, &ns);
  uint64_t dt = ticks - anchor_ticks;
  if (dt == 0)
    dt = 1;
  s.mult = (uint64_t)(((unsigned __int128)(ns - anchor_ns) << 32) / dt);
  return s;
}
