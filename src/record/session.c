/*
 * session.c - the process-wide session: lanes, start/stop/save, registries.
 *
 * No Lua API and no formatting. Allocates only at start, on a thread's first
 * event in a session (its ring), on registration, and at save.
 *
 * The quiescence protocol that makes start/stop/save safe against threads
 * that are recording:
 *   recorder: busy = 1; (barrier); if state is still the armed word it read,
 *             write the event; busy = 0 (release).
 *   stop:     state = disarmed; membarrier() (a barrier on every running
 *             thread of the process); wait until every lane reads busy == 0
 *             (acquire).
 * After stop returns no recorder is inside a ring, and none can enter one
 * until the next start, so save may read rings and start may free them.
 * Where the kernel has no private expedited membarrier, recorders use a
 * full fence instead (jq_need_fence).
 */
#include "record/session.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

#include "record/json_writer.h"
#include "record/proto_writer.h"
#include "record/save_progress.h"
#include "record/sample_tables.h"
#include "record/sampler.h"

_Static_assert(JQ_MAX_LANES <= JQ_SAMPLER_LANES, "the sampler keeps every lane's thread");
#include "record/snapshot.h"

const uint32_t jq_palette[JQ_PALETTE_SIZE] = {
    0x5e96de, 0x43b08a, 0xac82e4, 0xc39536, 0xe08563, 0x4fc3d0,
    0xd678b4, 0x8385e8, 0x9bb54a, 0xd9675e, 0x5aa6a0, 0xb58f6b};

_Atomic uint32_t jq_session_state = 0;
_Thread_local jq_thread jq_self JQ_TLS_MODEL = {NULL, 0, 0, {0}, 0, NULL, 0, 0, 0, NULL, 0, 0};
int jq_need_fence = 0;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int initialized;
static pthread_key_t lane_key; /* its destructor marks a lane dead */

/* ---- lanes (lanes_mu) ---- */

static pthread_mutex_t control_mu = PTHREAD_MUTEX_INITIALIZER; /* start/stop/save */
static pthread_mutex_t lanes_mu = PTHREAD_MUTEX_INITIALIZER;
static jq_lane *all_lanes[JQ_MAX_LANES]; /* every lane struct ever made */
static int all_count;
static jq_lane *joined[JQ_MAX_LANES]; /* the session's lanes, in join order */
static int joined_count;
static int thread_names;              /* "thread N" counter of the session */
static uint64_t session_cap;
static uint64_t session_origin, session_stop;
static jq_save_where process_where; /* host and boot id, set at init */
static jq_save_where session_where; /* control_mu */
static jq_clock_scale session_scale;   /* ticks to ns, fixed when the session stops */
static int session_ever;               /* a session was started */
static _Atomic uint64_t session_lost;  /* events of threads with no lane */
static pthread_mutex_t sampling_mu = PTHREAD_MUTEX_INITIALIZER;
static jq_save_sampling session_sampling; /* (sampling_mu) */

/* ---- registries (reg_mu) ---- */

typedef struct jq_str {
  size_t len;
  uint32_t hash;
  char s[];
} jq_str;

typedef struct jq_category {
  jq_str *name; /* NULL: not registered */
  uint32_t color;
} jq_category;

#define MARKER_SLOTS (2 * JQ_MAX_MARKERS)

/* Lane sort keys: the threads named with jq_session_name_thread (a queue's
 * workers) sort below LANE_UNNAMED, other threads from there on in the
 * order they joined, the caller last. */
#define LANE_UNNAMED (1 << 30)
#define LANE_CALLER INT32_MAX

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
/* A registry of names (marker kinds, counters): ids from 1 in order of
 * registration, found lock-free. */
typedef struct name_table {
  jq_str *strs[JQ_MAX_MARKERS + 1];     /* by id; immutable once published */
  _Atomic uint32_t *total;              /* names registered */
  _Atomic uint32_t slots[MARKER_SLOTS]; /* open addressing: ids, 0 = empty */
} name_table;
_Atomic uint32_t jq_marker_total; /* marker kinds registered */
static _Atomic uint32_t counter_total;
static name_table marker_names = {{NULL}, &jq_marker_total, {0}};
static name_table counter_names = {{NULL}, &counter_total, {0}};
static jq_category *categories; /* JQ_MAX_TAG + 1 entries, made on first use */
static uint16_t category_ids[JQ_MAX_CATEGORIES]; /* registration order */
static int category_count;
static uint32_t next_auto_id = 1;

static void membarrier_all(void) {
#if defined(__linux__) && defined(__NR_membarrier)
  if (!jq_need_fence)
    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
#endif
}

static void lane_thread_exit(void *p) {
  jq_lane *lane = p;
  jq_sampler_lane_exit(lane); /* its timer goes with it */
  pthread_mutex_lock(&lanes_mu);
  lane->dead = 1;
  pthread_mutex_unlock(&lanes_mu);
}

/* The host's name and the kernel's boot id, "" each when unknown: read
 * once, at init (a boot id cannot change under a process). */
static void where_read(jq_save_where *w) {
  memset(w, 0, sizeof *w);
  if (gethostname(w->host, sizeof w->host - 1) != 0)
    w->host[0] = '\0';
  int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n;
    do
      n = read(fd, w->boot_id, sizeof w->boot_id - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    size_t len = n > 0 ? (size_t)n : 0;
    while (len > 0 && (w->boot_id[len - 1] == '\n' || w->boot_id[len - 1] == ' '))
      len--;
    w->boot_id[len] = '\0';
    for (size_t i = 0; i < len; i++) /* a UUID's text, or nothing */
      if (!((w->boot_id[i] >= '0' && w->boot_id[i] <= '9') ||
            (w->boot_id[i] >= 'a' && w->boot_id[i] <= 'f') || w->boot_id[i] == '-'))
        w->boot_id[0] = '\0';
  }
}

static void init(void) {
  jq_clock_init();
  jq_need_fence = 1;
#if defined(__linux__) && defined(__NR_membarrier)
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
    jq_need_fence = 0;
#endif
  pthread_key_create(&lane_key, lane_thread_exit);
  where_read(&process_where);
  initialized = 1;
}

void jq_session_init(void) {
  pthread_once(&init_once, init);
}

/* Runs when the library is unloaded (the last lua_State holding it closed, or
 * the process exits): frees what outlives sessions. */
__attribute__((destructor)) static void fini(void) {
  if (!initialized)
    return;
  pthread_key_delete(lane_key);
  /* Under the lanes' mutex: at exit (os.exit) a worker may still be
   * getting its lane. */
  pthread_mutex_lock(&lanes_mu);
  for (int i = 0; i < all_count; i++) /* a thread still alive may still record */
    if (!all_lanes[i]->dead && all_lanes[i] != jq_self.lane) {
      pthread_mutex_unlock(&lanes_mu);
      return;
    }
  for (int i = 0; i < all_count; i++) {
    free(all_lanes[i]->events);
    jq_stab_free(all_lanes[i]->stab);
    free(all_lanes[i]);
  }
  all_count = 0;
  pthread_mutex_unlock(&lanes_mu);
  for (uint32_t i = 1; i <= JQ_MAX_MARKERS; i++) {
    free(marker_names.strs[i]);
    free(counter_names.strs[i]);
  }
  if (categories) {
    for (uint32_t i = 0; i <= JQ_MAX_TAG; i++)
      free(categories[i].name);
    free(categories);
  }
}

/* ---- lanes ---- */

/* Gives `lane` a ring for the session being armed; lanes_mu held. */
static int lane_reset(jq_lane *lane, uint32_t state) {
  int rc = 0;
  if (lane->cap != session_cap || lane->events == NULL) {
    free(lane->events);
    lane->events = malloc((size_t)session_cap * sizeof(jq_event));
    lane->cap = lane->events ? session_cap : 0;
    rc = lane->events ? 0 : ENOMEM;
  }
  lane->count = 0;
  lane->dropped = 0;
  lane->full_at = 0;
  lane->gen = state;
  lane->index = joined_count;
  joined[joined_count++] = lane;
  return rc;
}

/* The calling thread's lane struct, made or recycled; lanes_mu held. */
#ifdef JQ_TESTING
static int test_lanes_full; /* (lanes_mu) specs: no new lane for any thread */
#define LANES_FULL test_lanes_full
#else
#define LANES_FULL 0
#endif

static jq_lane *lane_for_thread(uint32_t state) {
  jq_lane *lane = jq_self.lane;
  if (lane)
    return lane;
  for (int i = 0; i < all_count && !lane && !LANES_FULL; i++) /* a lane of an exited thread */
    if (all_lanes[i]->dead && all_lanes[i]->gen != state)
      lane = all_lanes[i];
  if (lane) {
    lane->dead = 0;
  } else {
    if (all_count == JQ_MAX_LANES || LANES_FULL)
      return NULL;
    lane = aligned_alloc(64, sizeof(jq_lane));
    if (!lane)
      return NULL;
    memset(lane, 0, sizeof *lane);
    all_lanes[all_count++] = lane;
  }
  lane->os_tid = (long)syscall(SYS_gettid);
  jq_self.lane = lane;
  pthread_setspecific(lane_key, lane);
  jq_sampler_lane_bound(lane);
  return lane;
}

jq_lane *jq_lane_join(uint32_t state) {
  jq_lane *lane = NULL;
  pthread_mutex_lock(&lanes_mu);
  if (atomic_load_explicit(&jq_session_state, memory_order_relaxed) == state) {
    lane = lane_for_thread(state);
    if (lane) {
      lane_reset(lane, state); /* no ring: every event is dropped and counted */
      if (jq_self.sort_key) {
        memcpy(lane->name, jq_self.name, sizeof lane->name);
        lane->sort_key = jq_self.sort_key;
        lane->queue = jq_self.queue;
      } else {
        snprintf(lane->name, sizeof lane->name, "thread %d", ++thread_names);
        lane->sort_key = LANE_UNNAMED + lane->index;
        lane->queue = 0;
      }
    } else {
      atomic_fetch_add_explicit(&session_lost, 1, memory_order_relaxed);
    }
  }
  pthread_mutex_unlock(&lanes_mu);
  if (lane) /* a sampling session: its tables and timer */
    jq_sampler_lane_joined(lane, state);
  return lane;
}

#ifdef JQ_TESTING
static _Atomic uint64_t test_calibration_hold_us; /* specs: the calibration takes this longer */
#endif

/* The stopped session's ticks-to-ns scale, once per session, so that every
 * save of it writes the same timestamps. It may wait (clock.c: a TSC's
 * baseline of 20 ms since the library loaded), so it comes after the
 * session's stop is stamped: that wait is nobody's work. */
static jq_clock_scale calibrate(void) {
#ifdef JQ_TESTING
  uint64_t us = atomic_load(&test_calibration_hold_us);
  struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000};
  while (us && nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
#endif
  return jq_clock_scale_from(session_origin);
}

/* control_mu held. */
static void stop_locked(void) {
  uint32_t state = atomic_load_explicit(&jq_session_state, memory_order_relaxed);
  if (!(state & 1u))
    return;
  atomic_store_explicit(&jq_session_state, state & ~1u, memory_order_seq_cst);
  membarrier_all();
  pthread_mutex_lock(&lanes_mu);
  for (int i = 0; i < all_count; i++) {
    for (int spins = 0; atomic_load_explicit(&all_lanes[i]->busy, memory_order_seq_cst); spins++)
      if (spins > 64)
        sched_yield();
  }
  pthread_mutex_unlock(&lanes_mu);
  jq_save_sampling sampled;
  if (jq_sampler_session_stop(&sampled)) /* a tick still pending finds sampling off */
    jq_session_set_sampling(&sampled);
  /* After the last recorder left its ring: every event read its clock
   * before this, so the session's stop is after its last event. */
  session_stop = jq_clock_ticks();
  session_scale = calibrate();
}

int jq_session_start(uint64_t events_per_lane) {
  jq_session_init();
  pthread_mutex_lock(&control_mu);
  /* Allocate first: a start that fails leaves the last session to be saved.
   * Only this thread and a start (control_mu) change the caller's ring. */
  jq_lane *self = jq_self.lane;
  jq_event *ring = NULL;
  if (!self || !self->events || self->cap != events_per_lane) {
    ring = malloc((size_t)events_per_lane * sizeof(jq_event));
    if (!ring) {
      stop_locked(); /* as documented: recording is off after a failed start */
      pthread_mutex_unlock(&control_mu);
      return ENOMEM;
    }
  }
  stop_locked();
  pthread_mutex_lock(&lanes_mu);
  uint32_t old = atomic_load_explicit(&jq_session_state, memory_order_relaxed);
  uint32_t state = ((old >> 1) + 1) << 1;
  if (state == 0) /* 2^31 sessions later: skip the word a fresh lane has */
    state = 2;
  /* A lane struct for a thread that has none; it may recycle the lane of an
   * exited thread, whose events then stay readable until lane_reset. */
  jq_lane *caller = lane_for_thread(state | 1u);
  if (!caller) {
    pthread_mutex_unlock(&lanes_mu);
    pthread_mutex_unlock(&control_mu);
    free(ring);
    return ENOMEM;
  }
  /* From here on nothing fails: the last session is replaced. */
  atomic_store_explicit(&jq_session_state, state, memory_order_relaxed);
  session_cap = events_per_lane;
  joined_count = 0;
  thread_names = 0;
  session_ever = 1;
  atomic_store_explicit(&session_lost, 0, memory_order_relaxed);
  /* Rings of lanes that may not record again go back to the allocator. */
  for (int i = 0; i < all_count; i++) {
    jq_lane *lane = all_lanes[i];
    if (lane != caller && lane->cap != events_per_lane) {
      free(lane->events);
      lane->events = NULL;
      lane->cap = 0;
    }
    lane->count = 0;
    lane->dropped = 0;
    if (lane->stab) /* emptied: it allocates nothing */
      jq_stab_prepare(lane);
  }
  pthread_mutex_lock(&sampling_mu);
  memset(&session_sampling, 0, sizeof session_sampling);
  pthread_mutex_unlock(&sampling_mu);
  if (ring) {
    free(caller->events);
    caller->events = ring;
    caller->cap = events_per_lane;
  }
  lane_reset(caller, state | 1u); /* the ring fits: it allocates nothing */
  strcpy(caller->name, "caller");
  caller->sort_key = LANE_CALLER;
  session_origin = jq_clock_ticks();
  session_where = process_where; /* with the origin: its readings on these clocks */
  session_where.realtime_ns = (int64_t)jq_clock_ns(CLOCK_REALTIME);
  session_where.boottime_ns = (int64_t)jq_clock_ns(CLOCK_BOOTTIME);
  session_where.monotonic_ns = (int64_t)jq_clock_ns(CLOCK_MONOTONIC);
  jq_save_sampling sampling; /* what jq_sampler_prepare staged, if anything */
  if (jq_sampler_session_begin(state | 1u, caller, &sampling))
    jq_session_set_sampling(&sampling);
  atomic_store_explicit(&jq_session_state, state | 1u, memory_order_release);
  pthread_mutex_unlock(&lanes_mu);
  pthread_mutex_unlock(&control_mu);
  return 0;
}

void jq_session_stop(void) {
  jq_session_init();
  pthread_mutex_lock(&control_mu);
  stop_locked();
  pthread_mutex_unlock(&control_mu);
}

void jq_session_set_sampling(const jq_save_sampling *s) {
  pthread_mutex_lock(&sampling_mu);
  session_sampling = *s;
  pthread_mutex_unlock(&sampling_mu);
}

void jq_session_name_thread(const char *name, int sort_key, int queue) {
  snprintf(jq_self.name, sizeof jq_self.name, "%s", name);
  jq_self.sort_key = sort_key > 0 ? sort_key : 1;
  jq_self.queue = queue > 0 ? queue : 0;
}

#ifdef JQ_TESTING
int jq_session_lane_structs(void) {
  pthread_mutex_lock(&lanes_mu);
  int n = all_count;
  pthread_mutex_unlock(&lanes_mu);
  return n;
}

void jq_session_test_lanes_full(int on) {
  pthread_mutex_lock(&lanes_mu);
  test_lanes_full = on;
  pthread_mutex_unlock(&lanes_mu);
}

void jq_session_test_calibration_hold(uint64_t us) {
  atomic_store(&test_calibration_hold_us, us);
}
#endif

/* ---- registries ---- */

static uint32_t hash_name(const char *s, size_t len) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

uint32_t jq_palette_color(const char *name, size_t len) {
  return jq_palette[hash_name(name, len) % JQ_PALETTE_SIZE];
}

static jq_str *str_new(const char *s, size_t len, uint32_t hash) {
  jq_str *p = malloc(sizeof(jq_str) + len + 1);
  if (p) {
    p->len = len;
    p->hash = hash;
    memcpy(p->s, s, len);
    p->s[len] = '\0';
  }
  return p;
}

static int str_eq(const jq_str *p, const char *s, size_t len, uint32_t hash) {
  return p->hash == hash && p->len == len && memcmp(p->s, s, len) == 0;
}

/* Lock-free: readers see a slot only after the name it points to. */
static uint32_t name_find(const name_table *t, const char *name, size_t len, uint32_t hash) {
  for (uint32_t i = hash % MARKER_SLOTS;; i = (i + 1) % MARKER_SLOTS) {
    uint32_t id = atomic_load_explicit(&t->slots[i], memory_order_acquire);
    if (id == 0 || str_eq(t->strs[id], name, len, hash))
      return id;
  }
}

static int name_intern(name_table *t, const char *name, size_t len, uint32_t *id) {
  uint32_t hash = hash_name(name, len);
  if ((*id = name_find(t, name, len, hash)) != 0)
    return 0;
  int rc = 0;
  pthread_mutex_lock(&reg_mu);
  if ((*id = name_find(t, name, len, hash)) == 0) {
    uint32_t n = atomic_load_explicit(t->total, memory_order_relaxed);
    jq_str *s = n < JQ_MAX_MARKERS ? str_new(name, len, hash) : NULL;
    if (s) {
      uint32_t i = hash % MARKER_SLOTS;
      while (atomic_load_explicit(&t->slots[i], memory_order_relaxed) != 0)
        i = (i + 1) % MARKER_SLOTS;
      t->strs[n + 1] = s;
      atomic_store_explicit(t->total, n + 1, memory_order_release);
      atomic_store_explicit(&t->slots[i], n + 1, memory_order_release);
      *id = n + 1;
    } else {
      rc = n < JQ_MAX_MARKERS ? ENOMEM : ENOSPC;
    }
  }
  pthread_mutex_unlock(&reg_mu);
  return rc;
}

int jq_marker_intern(const char *name, size_t len, uint32_t *id) {
  return name_intern(&marker_names, name, len, id);
}

int jq_counter_intern(const char *name, size_t len, uint32_t *id) {
  return name_intern(&counter_names, name, len, id);
}

/* reg_mu held. */
static int category_store(uint32_t id, const char *name, size_t len, uint32_t hash,
                          uint32_t color) {
  if (!categories) {
    categories = calloc(JQ_MAX_TAG + 1, sizeof(jq_category));
    if (!categories)
      return ENOMEM;
  }
  jq_category *c = &categories[id];
  if (!c->name && category_count == JQ_MAX_CATEGORIES)
    return ENOSPC;
  if (!c->name || !str_eq(c->name, name, len, hash)) {
    jq_str *s = str_new(name, len, hash);
    if (!s)
      return ENOMEM;
    if (!c->name)
      category_ids[category_count++] = (uint16_t)id;
    free(c->name);
    c->name = s;
  }
  c->color = color ? color : jq_palette[hash % JQ_PALETTE_SIZE];
  return 0;
}

int jq_category_set(uint32_t id, const char *name, size_t len, uint32_t color) {
  pthread_mutex_lock(&reg_mu);
  int rc = category_store(id, name, len, hash_name(name, len), color);
  pthread_mutex_unlock(&reg_mu);
  return rc;
}

int jq_category_intern(const char *name, size_t len, uint32_t color, uint32_t *id) {
  uint32_t hash = hash_name(name, len);
  int rc = 0;
  pthread_mutex_lock(&reg_mu);
  *id = 0;
  for (int i = category_count - 1; i >= 0 && !*id; i--) /* the newest holder of the name */
    if (str_eq(categories[category_ids[i]].name, name, len, hash))
      *id = category_ids[i];
  if (*id) {
    if (color)
      categories[*id].color = color;
  } else {
    while (next_auto_id <= JQ_MAX_TAG && categories && categories[next_auto_id].name)
      next_auto_id++;
    if (next_auto_id > JQ_MAX_TAG)
      rc = ENOSPC;
    else if ((rc = category_store(next_auto_id, name, len, hash, color)) == 0)
      *id = next_auto_id++;
  }
  pthread_mutex_unlock(&reg_mu);
  return rc;
}

/* ---- save ---- */

#define SORT_ITEM_MAX 128

/* Sorts n items of `size` bytes (<= SORT_ITEM_MAX) so that none comes
 * after one it is `after`; stable (an insertion sort: the lists are short). */
static void sort_stable(void *base, int n, size_t size, int (*after)(const void *, const void *)) {
  char tmp[SORT_ITEM_MAX];
  char *a = base;
  for (int i = 1; i < n; i++) {
    int j = i;
    memcpy(tmp, a + (size_t)i * size, size);
    for (; j > 0 && after(a + (size_t)(j - 1) * size, tmp); j--)
      memcpy(a + (size_t)j * size, a + (size_t)(j - 1) * size, size);
    memcpy(a + (size_t)j * size, tmp, size);
  }
}

static int name_after(const void *a, const void *b) {
  return ((const jq_save_name *)a)->id > ((const jq_save_name *)b)->id;
}

static int lane_after(const void *a, const void *b) {
  return ((const jq_save_lane *)a)->sort_key > ((const jq_save_lane *)b)->sort_key;
}

_Static_assert(sizeof(jq_save_name) <= SORT_ITEM_MAX && sizeof(jq_save_lane) <= SORT_ITEM_MAX,
               "sort_stable's scratch holds an item");

/* Copies the category and marker tables; reg_mu held. Names are copied into
 * one block, so a rename during the save cannot free what it reads. */
static int snapshot_registries(jq_save_view *v, void **block) {
  uint32_t nm = atomic_load_explicit(&jq_marker_total, memory_order_relaxed);
  uint32_t nc = atomic_load_explicit(&counter_total, memory_order_relaxed);
  size_t bytes = (nm + nc + (size_t)category_count) * sizeof(jq_save_name);
  for (int i = 0; i < category_count; i++)
    bytes += categories[category_ids[i]].name->len + 1;
  char *mem = malloc(bytes ? bytes : 1);
  if (!mem)
    return ENOMEM;
  jq_save_name *marks = (jq_save_name *)mem;
  jq_save_name *counters = marks + nm;
  jq_save_name *cats = counters + nc;
  char *text = (char *)(cats + category_count);
  for (uint32_t i = 0; i < nm + nc; i++) { /* names immutable until the library unloads */
    const jq_str *s = i < nm ? marker_names.strs[i + 1] : counter_names.strs[i - nm + 1];
    jq_save_name e = {i < nm ? i + 1 : i - nm + 1, 0, s->s, s->len};
    marks[i] = e;
  }
  int n = 0;
  for (int i = 0; i < category_count; i++) {
    uint16_t id = category_ids[i];
    const jq_category *c = &categories[id];
    memcpy(text, c->name->s, c->name->len + 1);
    jq_save_name e = {id, c->color, text, c->name->len};
    text += c->name->len + 1;
    cats[n++] = e;
  }
  sort_stable(cats, n, sizeof *cats, name_after); /* in id order */
  v->markers = marks;
  v->nmarkers = (int)nm;
  v->counters = counters;
  v->ncounters = (int)nc;
  v->categories = cats;
  v->ncategories = n;
  *block = mem;
  return 0;
}

/* What a lane is, from its sort key: only a queue's worker threads are
 * named (jq_session_name_thread), and get keys below LANE_UNNAMED. */
static const char *lane_role(int sort_key) {
  if (sort_key == LANE_CALLER)
    return "caller";
  return sort_key < LANE_UNNAMED ? "worker" : "other";
}

static void snapshot_lane(jq_save_lane *s, const jq_lane *l) {
  s->events = l->events;
  s->count = l->count;
  s->dropped = l->dropped;
  s->full_at = l->full_at;
  s->no_ring = l->cap == 0;
  s->sort_key = l->sort_key;
  s->role = lane_role(l->sort_key);
  s->queue = l->queue;
  s->stab = l->stab;
  s->os_tid = l->os_tid;
  memcpy(s->name, l->name, sizeof s->name);
}

int jq_session_save(const char *path, int proto, int progress, char *err, size_t errlen, int *errnum) {
  static jq_save_lane lanes[JQ_MAX_LANES]; /* control_mu held while in use */
  jq_session_init();
  *errnum = 0;
  jq_save_view v;
  memset(&v, 0, sizeof v);
  pthread_mutex_lock(&control_mu);
  if (jq_ring_armed()) {
    pthread_mutex_unlock(&control_mu);
    snprintf(err, errlen, "tracing is still on: call profile_stop() before profile_save()");
    return JQ_SAVE_ARMED;
  }
  /* Rings are quiescent (stop waited for them) and stay so while control_mu
   * is held; lanes_mu orders this read after any late join. */
  uint64_t recorded = 0, dropped = 0;
  pthread_mutex_lock(&lanes_mu);
  for (int i = 0; i < joined_count; i++)
    snapshot_lane(&lanes[v.nlanes++], joined[i]);
  sort_stable(lanes, v.nlanes, sizeof *lanes, lane_after); /* by sort key */
  pthread_mutex_unlock(&lanes_mu);
  for (int i = 0; i < v.nlanes; i++) {
    recorded += lanes[i].count;
    dropped += lanes[i].dropped;
  }
  v.lost = atomic_load_explicit(&session_lost, memory_order_relaxed);
  if (!session_ever || recorded + dropped + v.lost == 0) {
    int ever = session_ever; /* read before unlocking: start writes it */
    pthread_mutex_unlock(&control_mu);
    snprintf(err, errlen, ever ? "nothing was recorded: the last session has no events"
                               : "nothing was recorded: profile_start() was never called");
    return JQ_SAVE_EMPTY;
  }
  v.lanes = lanes;
  v.scale = session_scale;
  v.stop_ticks = session_stop;
  v.events_per_lane = session_cap;
  v.pid = (long)getpid();
  v.clock = jq_clock_name();
  pthread_mutex_lock(&sampling_mu);
  v.sampling = session_sampling;
  pthread_mutex_unlock(&sampling_mu);
  v.where = session_where;
  void *block = NULL;
  pthread_mutex_lock(&reg_mu);
  int rc = snapshot_registries(&v, &block);
  pthread_mutex_unlock(&reg_mu);
  jq_progress prog;
  jq_progress_begin(&prog, progress, path, recorded);
  v.progress = &prog;
  if (rc == 0)
    rc = proto ? jq_proto_save(&v, path, err, errlen) : jq_json_save(&v, path, err, errlen);
  else
    snprintf(err, errlen, "cannot save trace to '%s': out of memory", path);
  jq_progress_end(&prog);
  free(block);
  pthread_mutex_unlock(&control_mu);
  if (rc != 0) {
    *errnum = rc;
    return JQ_SAVE_IO;
  }
  return JQ_SAVE_OK;
}
