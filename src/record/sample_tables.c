/*
 * sample_tables.c - a lane's frames and stacks, and recording a sample.
 *
 * Frames are interned by their text, stacks as (parent stack, frame) pairs,
 * in open-addressing tables sized once for JQ_STAB_MAX entries (at most half
 * full), so that interning never rehashes. The synthetic frames come first,
 * each with a root stack of the same id: "[table full]", "[truncated]" and
 * one per JQ_ACT_* activity; they are never looked up by text (a frame the
 * hook reads has a "[C]", "(...)" or "<...>" in it), so the hash tables
 * hold only the hook's frames. A sample is one JQ_EV_SAMPLE in the lane's
 * ring, written inside the record path's busy protocol (ring.h, session.c)
 * like any event: the interning happens inside it too, so the controller
 * never reads tables that a recorder is changing, and the signal handler
 * (which writes only when the lane is not busy) never interrupts it.
 * Thread safety: see sample_tables.h.
 */
#include "record/sample_tables.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record/sampler.h"

#define SLOTS (2 * JQ_STAB_MAX) /* a power of 2 */
#define FRAME_TEXT_MAX 1024     /* longer frame texts are cut (at a character) */
#define TEXT_BYTES_MAX (64u << 20)

/* The synthetic frames, and the root stacks of the same ids. */
enum {
  SYN_TABLE_FULL = 1,
  SYN_TRUNCATED,
  SYN_ACT_FIRST, /* JQ_ACT_NONE's; the activities follow in JQ_ACT_* order */
  SYN_COUNT = SYN_ACT_FIRST + JQ_ACT_COUNT - JQ_ACT_NONE - 1 /* the last id */
};

static const char *const syn_text[SYN_COUNT + 1] = {
    NULL,         "[table full]", "[truncated]", "[no Lua]",   "[copy in]",
    "[copy out]", "[copy result]", "[submit]",   "[scheduler]"};
_Static_assert(SYN_COUNT == 8 && JQ_ACT_SCHEDULER == JQ_ACT_COUNT - 1,
               "one synthetic frame per activity");

typedef struct frame_ent {
  uint32_t off, len, hash;
  int kind;
} frame_ent;

typedef struct stack_ent {
  uint32_t parent, frame;
} stack_ent;

struct jq_stab {
  uint32_t nframes, nstacks;
  frame_ent *frames;   /* by id; [0] unused */
  stack_ent *stacks;   /* by id; [0] unused */
  uint32_t *fslots;    /* frame ids by hash, 0 = empty */
  uint32_t *sslots;    /* stack ids by hash, 0 = empty */
  char *text;          /* the hook's frame texts */
  size_t text_len, text_cap;
  int dirty;           /* the hash tables hold something */
  jq_stab_counts counts;
  char error[128];
};

#ifdef JQ_TESTING
static _Atomic uint32_t test_limit;
void jq_stab_test_limit(uint32_t max) {
  atomic_store(&test_limit, max);
}
static uint32_t stab_max(void) {
  uint32_t m = atomic_load_explicit(&test_limit, memory_order_relaxed);
  return m && m < JQ_STAB_MAX ? m : JQ_STAB_MAX;
}
#else
static uint32_t stab_max(void) {
  return JQ_STAB_MAX;
}
#endif

void jq_stab_free(jq_stab *t) {
  if (!t)
    return;
  free(t->frames);
  free(t->stacks);
  free(t->fslots);
  free(t->sslots);
  free(t->text);
  free(t);
}

static jq_stab *stab_new(void) {
  jq_stab *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  t->frames = calloc(JQ_STAB_MAX + 1, sizeof *t->frames);
  t->stacks = calloc(JQ_STAB_MAX + 1, sizeof *t->stacks);
  t->fslots = calloc(SLOTS, sizeof *t->fslots);
  t->sslots = calloc(SLOTS, sizeof *t->sslots);
  if (!t->frames || !t->stacks || !t->fslots || !t->sslots) {
    jq_stab_free(t);
    return NULL;
  }
  return t;
}

/* Empties `t`, then interns the synthetic frames and their stacks. */
static void stab_reset(jq_stab *t) {
  if (t->dirty) {
    memset(t->fslots, 0, SLOTS * sizeof *t->fslots);
    memset(t->sslots, 0, SLOTS * sizeof *t->sslots);
    t->dirty = 0;
  }
  t->text_len = 0;
  memset(&t->counts, 0, sizeof t->counts);
  t->error[0] = '\0';
  for (uint32_t id = 1; id <= SYN_COUNT; id++) {
    frame_ent f = {0, 0, 0, JQ_FRAME_RUNTIME};
    t->frames[id] = f;
    t->stacks[id] = (stack_ent){0, id};
  }
  t->nframes = t->nstacks = SYN_COUNT;
}

int jq_stab_prepare(jq_lane *lane) {
  if (!lane->stab && !(lane->stab = stab_new()))
    return ENOMEM;
  stab_reset(lane->stab);
  return 0;
}

void jq_stab_set_error(jq_stab *t, const char *text) {
  size_t n = text ? strlen(text) : 0;
  if (n >= sizeof t->error) {
    n = sizeof t->error - 1;
    while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80) /* text[n] continues a character */
      n--;
  }
  if (n)
    memcpy(t->error, text, n);
  t->error[n] = '\0';
  t->counts.error = n ? t->error : NULL;
}

jq_stab_counts *jq_stab_counts_of(jq_stab *t) {
  return &t->counts;
}

uint32_t jq_stab_nframes(const jq_stab *t) {
  return t->nframes;
}

const char *jq_stab_frame(const jq_stab *t, uint32_t id, size_t *len, int *kind) {
  if (id == 0 || id > t->nframes)
    return NULL;
  *kind = t->frames[id].kind;
  if (id <= SYN_COUNT) {
    *len = strlen(syn_text[id]);
    return syn_text[id];
  }
  *len = t->frames[id].len;
  return t->text + t->frames[id].off;
}

uint32_t jq_stab_nstacks(const jq_stab *t) {
  return t->nstacks;
}

uint32_t jq_stab_stack(const jq_stab *t, uint32_t id, uint32_t *parent) {
  if (id == 0 || id > t->nstacks) {
    *parent = 0;
    return 0;
  }
  *parent = t->stacks[id].parent;
  return t->stacks[id].frame;
}

/* ---- interning (the lane's own thread, inside the busy protocol) ---- */

static uint32_t hash_text(const char *s, size_t n) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

static uint32_t hash_pair(uint32_t parent, uint32_t frame) {
  uint64_t k = ((uint64_t)parent << 32 | frame) * 0x9e3779b97f4a7c15u;
  return (uint32_t)(k >> 32);
}

/* Room for n more bytes of text; 0 when the lane's text is at its bound
 * or memory is short. */
static int text_room(jq_stab *t, size_t n) {
  if (t->text_cap - t->text_len >= n)
    return 1;
  if (t->text_len + n > TEXT_BYTES_MAX)
    return 0;
  size_t cap = t->text_cap ? t->text_cap : 65536;
  while (cap - t->text_len < n)
    cap *= 2;
  char *p = realloc(t->text, cap);
  if (!p)
    return 0;
  t->text = p;
  t->text_cap = cap;
  return 1;
}

/* The id of frame `f` (its text cut to FRAME_TEXT_MAX bytes), interned;
 * 0 when the table is full. */
static uint32_t frame_intern(jq_stab *t, const jq_frame_text *f) {
  size_t n = f->len;
  if (n > FRAME_TEXT_MAX) {
    n = FRAME_TEXT_MAX;
    while (n > 0 && ((unsigned char)f->text[n] & 0xc0) == 0x80)
      n--;
  }
  uint32_t h = hash_text(f->text, n), i = h & (SLOTS - 1), id;
  while ((id = t->fslots[i]) != 0) {
    const frame_ent *e = &t->frames[id];
    if (e->hash == h && e->len == n && memcmp(t->text + e->off, f->text, n) == 0)
      return id;
    i = (i + 1) & (SLOTS - 1);
  }
  if (t->nframes >= stab_max() || !text_room(t, n))
    return 0;
  id = ++t->nframes;
  memcpy(t->text + t->text_len, f->text, n);
  t->frames[id] = (frame_ent){(uint32_t)t->text_len, (uint32_t)n, h, f->kind};
  t->text_len += n;
  t->fslots[i] = id;
  t->dirty = 1;
  return id;
}

/* The id of the stack `frame` above `parent`, interned; 0 when full. */
static uint32_t stack_intern(jq_stab *t, uint32_t parent, uint32_t frame) {
  uint32_t i = hash_pair(parent, frame) & (SLOTS - 1), id;
  while ((id = t->sslots[i]) != 0) {
    if (t->stacks[id].parent == parent && t->stacks[id].frame == frame)
      return id;
    i = (i + 1) & (SLOTS - 1);
  }
  if (t->nstacks >= stab_max())
    return 0;
  id = ++t->nstacks;
  t->stacks[id] = (stack_ent){parent, frame};
  t->sslots[i] = id;
  t->dirty = 1;
  return id;
}

/* The stack of frames[0..n) (innermost first), under "[truncated]" when
 * `truncated`; "[table full]" (counted) when it does not fit. */
static uint32_t stack_of(jq_stab *t, const jq_frame_text *frames, int n, int truncated) {
  uint32_t s = truncated ? SYN_TRUNCATED : 0;
  for (int i = n - 1; i >= 0; i--) {
    uint32_t f = frame_intern(t, &frames[i]);
    if (!f || !(s = stack_intern(t, s, f))) {
      t->counts.skipped_table_full++;
      return SYN_TABLE_FULL;
    }
  }
  return s ? s : SYN_ACT_FIRST; /* no frame at all: "[no Lua]" */
}

/* ---- recording ---- */

static void count_sample(jq_stab *t, uint64_t weight) {
  t->counts.samples++;
  t->counts.weight += weight;
}

void jq_sample_put(const jq_frame_text *frames, int n, int truncated, int64_t job, uint16_t tag,
                   uint32_t line, uint64_t weight, uint64_t t0) {
  uint32_t state = atomic_load_explicit(&jq_session_state, memory_order_acquire);
  if (!(state & 1u))
    return;
  jq_lane *lane = jq_self.lane;
  if (lane == NULL || lane->gen != state) {
    lane = jq_lane_join(state);
    if (lane == NULL)
      return;
  }
  jq_lane_announce(lane); /* then re-check the session */
  if (atomic_load_explicit(&jq_session_state, memory_order_seq_cst) == state &&
      (lane->stab || jq_stab_prepare(lane) == 0)) {
    jq_stab *t = lane->stab;
    uint32_t stack = stack_of(t, frames, n < 0 ? 0 : n, truncated);
    if (jq_ring_store(lane, JQ_EV_SAMPLE, 0, tag, stack, job, t0, jq_sample_t1(line, weight)))
      count_sample(t, weight);
  }
  atomic_store_explicit(&lane->busy, 0, memory_order_release);
}

/* The calling thread's lane when a signal handler may write to it: joined
 * to the armed session, with tables, not inside the record path; NULL
 * otherwise. On success the lane is announced (busy): the caller ends with
 * stab_leave. */
static jq_lane *stab_enter(void) {
  uint32_t state = atomic_load_explicit(&jq_session_state, memory_order_acquire);
  jq_lane *lane = jq_self.lane;
  if (!(state & 1u) || lane == NULL || lane->gen != state ||
      atomic_load_explicit(&lane->busy, memory_order_relaxed))
    return NULL;
  jq_lane_announce(lane);
  if (atomic_load_explicit(&jq_session_state, memory_order_seq_cst) != state || !lane->stab) {
    atomic_store_explicit(&lane->busy, 0, memory_order_release);
    return NULL;
  }
  return lane;
}

static void stab_leave(jq_lane *lane) {
  atomic_store_explicit(&lane->busy, 0, memory_order_release);
}

int jq_sample_put_runtime(int act, int64_t job, uint16_t tag, uint64_t weight, uint64_t t0) {
  if (act <= JQ_ACT_LUA || act >= JQ_ACT_COUNT)
    return 0;
  jq_lane *lane = stab_enter();
  if (!lane)
    return 0;
  uint32_t stack = (uint32_t)(SYN_ACT_FIRST + act - JQ_ACT_NONE);
  int stored = jq_ring_store(lane, JQ_EV_SAMPLE, 0, tag, stack, job, t0, jq_sample_t1(0, weight));
  if (stored)
    count_sample(lane->stab, weight);
  stab_leave(lane);
  return stored;
}

int jq_sample_skip_user_hook(uint64_t ticks) {
  jq_lane *lane = stab_enter();
  if (!lane)
    return 0;
  lane->stab->counts.skipped_user_hook += ticks;
  stab_leave(lane);
  return 1;
}
