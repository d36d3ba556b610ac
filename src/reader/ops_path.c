/*
 * ops_path.c - the critical path of a happens-before graph (job_ops.h):
 * ops:critical_path([{steps = false}]) and jq_ops_walk (the page's path,
 * page_graph.c).
 *
 * The walk starts at the executor that ended last (the caller's thread on
 * ties, then the first executor) and goes back in time. At an op it takes
 * the op's own time as a step of the op's kind, then goes to the
 * predecessor of the op's start that ended LATEST among:
 *   - the executor's previous work op (program order), over the JO_WAIT,
 *     JO_BLOCK and JO_SUSPEND ops between (they last as long as what they
 *     wait for);
 *   - what each of those waited for, if it ended by then (a job's end; for
 *     a whole queue, the job of it submitted before the wait ended that
 *     ended last, the first executor on ties); a file whose wait returned
 *     before its job ended is inconsistent, and that job is no predecessor;
 *   - before a job's first work op, its JO_SUBMIT's end (a job may start
 *     before its submit's span ends: the walk then goes into that submit).
 * Ties pick program order, then the submit, then the wait nearest in
 * program order. The time between that end and the op's start is
 * labelled by what covers it: a job not yet started, ready latency while
 * every worker of its queue (as recorded, else the lanes its jobs ran on)
 * was in a slice or copy, scheduling delay the rest; a suspension, worker
 * busy while its own worker ran other jobs (held_by the one that ran
 * longest), resume latency the rest; a blocked wait, blocked before what
 * it waited for ended (all of it when the trace does not say), resume
 * latency after; nothing, resume latency after a wait, else the op's own
 * kind. Steps of one kind and owner that meet are merged. A loop with a
 * step limit (the ops and the executors twice over; reaching it marks the
 * path cut): no recursion. Sorts and binary searches: O(ops log ops).
 *
 * Owns: nothing past a call (its arrays are a scratch userdata).
 * Must not: run on the record path. Thread safety: one lua_State per call.
 */
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/job_ops.h"
#include "reader/reader.h"
#include "reader/scratch.h"
#include "reader/sort.h"

const char *const jq_path_kinds[JP_N] = {
    "run",           "copy in",       "copy out",         "copy result", "submit",         "caller",
    "job on caller", "ready latency", "scheduling delay", "worker busy", "resume latency", "blocked"};

/* The scratch's buffers. */
enum { B_FIN, B_LOP, B_LOP0, B_QJ, B_QJ0, B_QMAX, B_QP, B_QP0, B_QW, B_ACC, B_TMP, B_QT, B_STEPS, B_JOBS, B_N };

typedef struct lane_op { /* a job's op that held its worker's lane */
  int64_t t0, t1;
  int32_t exec;
} lane_op;

typedef struct qjob { /* a job of a queue, by the time it was submitted */
  int64_t sub;
  int32_t exec;
} qjob;

typedef struct qpt { /* a queue's busy workers: n from t on; acc all-busy time before t */
  int64_t t, acc;
  int32_t n;
} qpt;

typedef struct walk {
  lua_State *L;
  const jo_graph *g;
  jq_scratch *s;
  int64_t *fin;    /* an executor's end (its last op's t1), -1 without ops */
  lane_op *lop;    /* by lane, each lane's by t0: lop[lop0[l] .. lop0[l + 1]) */
  uint32_t *lop0;
  int32_t nl;      /* lanes */
  qjob *qj;        /* queue q's jobs (0: every job) by submit: qj[qj0[q] .. qj0[q + 1]) */
  uint32_t *qj0;
  int32_t *qmax;   /* qmax[k]: the job ending last among its queue's up to k */
  qpt *qp;         /* queue q's busy count steps: qp[qp0[q] .. qp0[q + 1]) */
  uint32_t *qp0;
  int32_t *qw;     /* queue q's workers (0: every job's) */
  int32_t nq;      /* queues 1 .. nq (0 is every job) */
  int64_t *acc;    /* per executor, zero between uses: the lane split's sums */
} walk;

static int is_work(int kind) { return kind != JO_WAIT && kind != JO_BLOCK && kind != JO_SUSPEND; }

/* A job's op that holds its worker (its lane busy). */
static int holds_worker(const jo_op *o) { return o->kind != JO_SUSPEND && o->kind != JO_WAIT && o->lane >= 0; }

static void *room(walk *w, int b, size_t n, size_t size) {
  return jq_scratch_room(w->L, &w->s->b[b], n ? n : 1, size);
}

static int64_t sub_time(const jo_graph *g, const jo_exec *e) {
  if (e->sub >= 0 && (size_t)e->sub < g->nops)
    return g->ops[e->sub].t0;
  return e->no ? g->ops[e->o0].t0 : e->ready;
}

static int32_t queue_of(const walk *w, const jo_exec *e) { return e->queue >= 1 && e->queue <= w->nq ? e->queue : 0; }

#define LOP_LESS(ctx, x, y) ((void)(ctx), (x).t0 < (y).t0)
JQ_SORT_DEFINE(sort_lops, lane_op, void *, LOP_LESS)
#define QJ_LESS(ctx, x, y) ((void)(ctx), (x).sub < (y).sub)
JQ_SORT_DEFINE(sort_qjobs, qjob, void *, QJ_LESS)

/* Moves lo to the first index of [lo, hi) where BEFORE(k) is false (it is
 * true on a prefix of the range): a binary search. */
#define FIRST_NOT(lo, hi, BEFORE)                                                                              \
  do {                                                                                                         \
    while ((lo) < (hi)) {                                                                                      \
      size_t k_ = (size_t)(lo) + ((size_t)(hi) - (size_t)(lo)) / 2;                                            \
      if (BEFORE(k_))                                                                                          \
        (lo) = k_ + 1;                                                                                         \
      else                                                                                                     \
        (hi) = k_;                                                                                             \
    }                                                                                                          \
  } while (0)

/* Each lane's ops that held it, by start. */
static void index_lanes(walk *w) {
  const jo_graph *g = w->g;
  size_t n = 0;
  w->nl = g->nlanes;
  for (size_t k = 0; k < g->nops; k++)
    if (g->ops[k].lane >= w->nl)
      w->nl = g->ops[k].lane + 1;
  w->lop0 = room(w, B_LOP0, (size_t)w->nl + 2, sizeof *w->lop0);
  memset(w->lop0, 0, ((size_t)w->nl + 2) * sizeof *w->lop0);
  for (size_t x = 0; x < g->nex; x++)
    for (uint32_t k = 0; g->ex[x].is_job && k < g->ex[x].no; k++)
      if (holds_worker(&g->ops[g->ex[x].o0 + k]))
        w->lop0[g->ops[g->ex[x].o0 + k].lane + 2]++, n++;
  for (int32_t l = 0; l < w->nl; l++)
    w->lop0[l + 2] += w->lop0[l + 1];
  w->lop = room(w, B_LOP, n, sizeof *w->lop);
  for (size_t x = 0; x < g->nex; x++)
    for (uint32_t k = 0; g->ex[x].is_job && k < g->ex[x].no; k++) {
      const jo_op *o = &g->ops[g->ex[x].o0 + k];
      if (holds_worker(o))
        w->lop[w->lop0[o->lane + 1]++] = (lane_op){o->t0, o->t1, (int32_t)x};
    }
  lane_op *tmp = room(w, B_TMP, n, sizeof *tmp);
  for (int32_t l = 0; l < w->nl; l++)
    sort_lops(w->lop + w->lop0[l], tmp, w->lop0[l + 1] - w->lop0[l], NULL);
}

/* Each queue's jobs by submit time, and the one ending last up to each. */
static void index_queue_jobs(walk *w) {
  const jo_graph *g = w->g;
  w->qj0 = room(w, B_QJ0, (size_t)w->nq + 3, sizeof *w->qj0);
  memset(w->qj0, 0, ((size_t)w->nq + 3) * sizeof *w->qj0);
  size_t n = 0;
  for (size_t x = 0; x < g->nex; x++)
    if (g->ex[x].is_job && w->fin[x] >= 0) {
      int32_t q = queue_of(w, &g->ex[x]);
      w->qj0[2]++, n++;
      if (q)
        w->qj0[q + 2]++, n++;
    }
  for (int32_t q = 0; q <= w->nq; q++)
    w->qj0[q + 2] += w->qj0[q + 1];
  w->qj = room(w, B_QJ, n, sizeof *w->qj);
  for (size_t x = 0; x < g->nex; x++)
    if (g->ex[x].is_job && w->fin[x] >= 0) {
      int32_t q = queue_of(w, &g->ex[x]);
      qjob j = {sub_time(g, &g->ex[x]), (int32_t)x};
      w->qj[w->qj0[1]++] = j;
      if (q)
        w->qj[w->qj0[q + 1]++] = j;
    }
  qjob *tmp = room(w, B_TMP, n, sizeof *tmp);
  w->qmax = room(w, B_QMAX, n, sizeof *w->qmax);
  for (int32_t q = 0; q <= w->nq; q++) {
    uint32_t a = w->qj0[q], b = w->qj0[q + 1];
    sort_qjobs(w->qj + a, tmp, b - a, NULL);
    for (uint32_t k = a; k < b; k++) {
      int32_t x = w->qj[k].exec;
      w->qmax[k] = k > a && w->fin[w->qmax[k - 1]] >= w->fin[x] ? w->qmax[k - 1] : x;
    }
  }
}

/* Sorts a[0 .. n) (any int64s) through tmp: a radix sort by 16 bits at
 * a time, a digit every key shares skipped; cnt: room for 4 * 65536. */
static void sort_times(int64_t *a, int64_t *tmp, size_t n, uint32_t *cnt) {
  memset(cnt, 0, 4 * 65536 * sizeof *cnt);
  for (size_t k = 0; k < n; k++) {
    uint64_t u = (uint64_t)a[k] ^ ((uint64_t)1 << 63);
    for (int d = 0; d < 4; d++)
      cnt[d * 65536 + ((u >> (16 * d)) & 0xFFFF)]++;
  }
  for (int d = 0; d < 4; d++) {
    uint32_t *c = cnt + d * 65536, sum = 0;
    if (n && c[(((uint64_t)a[0] ^ ((uint64_t)1 << 63)) >> (16 * d)) & 0xFFFF] == n)
      continue; /* every key has this digit */
    for (size_t v = 0; v < 65536; v++) {
      uint32_t x = c[v];
      c[v] = sum, sum += x;
    }
    for (size_t k = 0; k < n; k++)
      tmp[c[(((uint64_t)a[k] ^ ((uint64_t)1 << 63)) >> (16 * d)) & 0xFFFF]++] = a[k];
    memcpy(a, tmp, n * sizeof *a);
  }
}

/* Queue q's busy changes into qp[a .. a + 2n): its ops' starts st[0 .. n)
 * and ends en[0 .. n), each sorted, merged by time (ends before starts at
 * one time; changes alike at one time are alike: no order among them). */
static void merge_busy(walk *w, uint32_t a, int64_t *st, int64_t *en, size_t n, int64_t *tmp, uint32_t *cnt) {
  sort_times(st, tmp, n, cnt);
  sort_times(en, tmp, n, cnt);
  for (size_t i = 0, j = 0, k = a; i < n || j < n; k++)
    w->qp[k] = j < n && (i >= n || en[j] <= st[i]) ? (qpt){en[j++], 0, -1} : (qpt){st[i++], 0, 1};
}

/* Queue q's busy steps: its jobs' ops that held a worker, as +1 at their
 * start and -1 at their end, summed by time; with the all-busy time. */
static void index_queue_busy(walk *w) {
  const jo_graph *g = w->g;
  int64_t *st = NULL, *en = NULL;
  w->qp0 = room(w, B_QP0, (size_t)w->nq + 3, sizeof *w->qp0);
  memset(w->qp0, 0, ((size_t)w->nq + 3) * sizeof *w->qp0);
  for (int pass = 0; pass < 2; pass++) { /* count, then fill */
    for (size_t x = 0; x < g->nex; x++)
      for (uint32_t k = 0; g->ex[x].is_job && k < g->ex[x].no; k++) {
        const jo_op *o = &g->ops[g->ex[x].o0 + k];
        int32_t q = queue_of(w, &g->ex[x]);
        for (int32_t qq = 0; holds_worker(o) && qq <= q; qq += q ? q : 1) {
          if (!pass)
            w->qp0[qq + 2] += 2;
          else
            st[w->qp0[qq + 1] / 2] = o->t0, en[w->qp0[qq + 1] / 2] = o->t1, w->qp0[qq + 1] += 2;
        }
      }
    if (!pass) {
      for (int32_t q = 0; q <= w->nq; q++)
        w->qp0[q + 2] += w->qp0[q + 1];
      w->qp = room(w, B_QP, w->qp0[w->nq + 2], sizeof *w->qp);
      st = room(w, B_QT, w->qp0[w->nq + 2] + 2, sizeof *st); /* starts, then ends */
      en = st + w->qp0[w->nq + 2] / 2 + 1;
    }
  }
  size_t most = 1;
  for (int32_t q = 0; q <= w->nq; q++)
    most = (w->qp0[q + 1] - w->qp0[q]) / 2 > most ? (w->qp0[q + 1] - w->qp0[q]) / 2 : most;
  int64_t *tmp = room(w, B_TMP, most * sizeof *tmp + 4 * 65536 * sizeof(uint32_t), 1);
  uint32_t *cnt = (uint32_t *)(tmp + most);
  for (int32_t q = 0; q <= w->nq; q++) {
    uint32_t a = w->qp0[q], b = w->qp0[q + 1];
    merge_busy(w, a, st + a / 2, en + a / 2, (b - a) / 2, tmp, cnt);
    int32_t n = 0;
    int64_t acc = 0;
    for (uint32_t k = a; k < b; k++) {
      if (k > a && n >= w->qw[q])
        acc += w->qp[k].t - w->qp[k - 1].t;
      n += w->qp[k].n;
      w->qp[k].acc = acc, w->qp[k].n = n;
    }
  }
}

/* Queue q's workers: as recorded, else the lanes its jobs ran on. */
static void count_workers(walk *w) {
  const jo_graph *g = w->g;
  w->qw = room(w, B_QW, (size_t)w->nq + 1, sizeof *w->qw);
  memset(w->qw, 0, ((size_t)w->nq + 1) * sizeof *w->qw);
  int32_t recorded = 0;
  for (int32_t q = 1; q <= w->nq; q++)
    if (q <= g->nqueues && g->queue_workers[q - 1] > 0)
      w->qw[q] = g->queue_workers[q - 1], recorded += w->qw[q];
  for (int32_t l = 0; l < w->nl; l++) { /* a lane's jobs' queue */
    int32_t q = -1;
    for (uint32_t k = w->lop0[l]; k < w->lop0[l + 1] && q != -2; k++) {
      int32_t qk = queue_of(w, &g->ex[w->lop[k].exec]);
      q = q == -1 || q == qk ? qk : -2;
    }
    if (q > 0 && !(q <= g->nqueues && g->queue_workers[q - 1] > 0))
      w->qw[q]++;
    if (q != -1)
      w->qw[0]++;
  }
  if (recorded > w->qw[0])
    w->qw[0] = recorded;
}

static void prepare(walk *w) {
  const jo_graph *g = w->g;
  w->fin = room(w, B_FIN, g->nex, sizeof *w->fin);
  w->acc = room(w, B_ACC, g->nex, sizeof *w->acc);
  w->nq = g->nqueues;
  for (size_t x = 0; x < g->nex; x++) {
    int last = jq_ops_last_op(g, (int32_t)x);
    w->fin[x] = last >= 0 ? g->ops[last].t1 : -1;
    w->acc[x] = 0;
    if (g->ex[x].is_job && g->ex[x].queue > w->nq)
      w->nq = g->ex[x].queue;
  }
  index_lanes(w);
  index_queue_jobs(w);
  count_workers(w);
  index_queue_busy(w);
}

/* The job of queue q (0: any) submitted before t that ended last, not x; -1 none. */
static int32_t queue_last(const walk *w, int32_t q, int64_t t, int32_t x) {
  if (q < 0 || q > w->nq)
    return -1;
  uint32_t lo = w->qj0[q], hi = w->qj0[q + 1]; /* the first submitted at or after t */
#define SUB_BEFORE(k) (w->qj[k].sub < t)
  FIRST_NOT(lo, hi, SUB_BEFORE);
  int32_t j = lo > w->qj0[q] ? w->qmax[lo - 1] : -1;
  return j == x ? -1 : j;
}

/* The all-busy time of queue q before t. */
static int64_t busy_before(const walk *w, int32_t q, int64_t t) {
  uint32_t lo = w->qp0[q], hi = w->qp0[q + 1]; /* the first step after t */
#define STEP_BY(k) (w->qp[k].t <= t)
  FIRST_NOT(lo, hi, STEP_BY);
  if (lo == w->qp0[q])
    return 0;
  const qpt *p = &w->qp[lo - 1];
  return p->acc + (p->n >= w->qw[q] ? t - p->t : 0);
}

/* ---- the steps, pushed latest first ---- */

typedef struct at { /* a step's owner and what it names */
  int32_t owner, lane, job, cat;
} at;

static void push_step(walk *w, int kind, int64_t t0, int64_t t1, at a, int32_t held) {
  if (t1 <= t0)
    return;
  jq_vec *v = &w->s->b[B_STEPS];
  jp_step *last = v->n ? (jp_step *)(v->p + v->n) - 1 : NULL;
  if (last && last->kind == kind && last->owner == a.owner && last->lane == a.lane && last->job == a.job &&
      last->cat == a.cat && last->held_by == held && last->t0 == t1) {
    last->t0 = t0;
    return;
  }
  jp_step st = {t0, t1, kind, a.owner, a.lane, a.job, a.cat, held};
  jq_scratch_add(w->L, v, &st, sizeof st);
}

/* [t0, t1) of a job not yet started: ready latency while every worker of
 * its queue was busy, scheduling delay the rest (shown in that order). */
static void push_ready(walk *w, int64_t t0, int64_t t1, at a) {
  int32_t q = queue_of(w, &w->g->ex[a.owner]);
  int64_t busy = w->qw[q] > 0 ? busy_before(w, q, t1) - busy_before(w, q, t0) : t1 - t0;
  if (busy > t1 - t0)
    busy = t1 - t0;
  push_step(w, JP_SCHED, t0 + busy, t1, a, -1);
  a.lane = -1;
  push_step(w, JP_READY, t0, t0 + busy, a, -1);
}

/* [t0, t1) of a job suspended, to resume on lane a.lane: worker busy for
 * the time that lane ran other jobs (held_by the one that ran longest, the
 * first on ties), from the first of them; resume latency the rest. */
static void push_suspended(walk *w, int64_t t0, int64_t t1, at a) {
  int32_t l = a.lane;
  if (l < 0 || l >= w->nl) {
    push_step(w, JP_RESUME, t0, t1, a, -1);
    return;
  }
  uint32_t lo = w->lop0[l], hi = w->lop0[l + 1], end = hi; /* the first starting at or after t0 */
#define LOP_BEFORE(k) (w->lop[k].t0 < t0)
  FIRST_NOT(lo, hi, LOP_BEFORE);
  if (lo > w->lop0[l] && w->lop[lo - 1].t1 > t0)
    lo--;
  int64_t busy = 0, first = t1;
  int32_t held = -1;
  for (uint32_t k = lo; k < end && w->lop[k].t0 < t1; k++) {
    const lane_op *o = &w->lop[k];
    int64_t a0 = o->t0 > t0 ? o->t0 : t0, a1 = o->t1 < t1 ? o->t1 : t1;
    if (o->exec == a.owner || a1 <= a0)
      continue;
    w->acc[o->exec] += a1 - a0;
    busy += a1 - a0;
    first = a0 < first ? a0 : first;
    if (held < 0 || w->acc[o->exec] > w->acc[held])
      held = o->exec;
  }
  for (uint32_t k = lo; k < end && w->lop[k].t0 < t1; k++)
    w->acc[w->lop[k].exec] = 0;
  push_step(w, JP_RESUME, first + busy, t1, a, -1);
  push_step(w, JP_BUSY, first, first + busy, a, held);
  push_step(w, JP_RESUME, t0, first, a, -1);
}

/* ---- one step back ---- */

/* A work op's step kind, by its JO_* kind (JO_RUN .. JO_JOB). */
static const int of_op[] = {JP_RUN, JP_COPY_IN, JP_COPY_OUT, JP_COPY_RESULT, JP_SUBMIT, JP_CALLER, JP_JOB_ON_CALLER};

/* The predecessor of a point in executor e: which (P_*), its end, where. */
enum { P_NONE, P_PROG, P_SUB, P_TARGET };
typedef struct pred {
  int how;
  int64_t end;
  int32_t exec, op; /* where the walk goes on: executor and op index in ops[] */
} pred;

/* What non-work op c waited for: its end (-1 unknown), *x the executor. */
static int64_t target_end(const walk *w, const jo_op *c, int32_t e, int32_t *x) {
  *x = -1;
  if (c->job >= 0 && (size_t)c->job < w->g->nex && c->job != e)
    *x = c->job;
  else if (c->job < 0 && c->kind != JO_SUSPEND)
    *x = queue_last(w, c->queue, c->t1, e);
  return *x >= 0 ? w->fin[*x] : -1;
}

/* The executor whose ops hold ops[op], -1 none (executors hold their ops
 * in order: ex[x].o0 grows with x). */
static int32_t exec_of(const jo_graph *g, uint32_t op) {
  size_t lo = 0, hi = g->nex; /* the first starting after op */
#define EXEC_BY(k) (g->ex[k].o0 <= op)
  FIRST_NOT(lo, hi, EXEC_BY);
  while (lo > 0 && g->ex[lo - 1].no == 0) /* executors without ops share an o0 */
    lo--;
  return lo > 0 && op < g->ex[lo - 1].o0 + g->ex[lo - 1].no ? (int32_t)lo - 1 : -1;
}

/* The latest-finishing predecessor of the point T in executor e, before
 * ops[s] and the non-work ops down to ops[*wk] (the work op before them,
 * or e's first op - 1). */
static pred find_pred(const walk *w, int32_t e, int32_t s, int64_t T, int32_t *wk) {
  const jo_graph *g = w->g;
  const jo_exec *ex = &g->ex[e];
  int32_t k = s;
  while (k >= (int32_t)ex->o0 && !is_work(g->ops[k].kind))
    k--;
  *wk = k;
  pred p = {P_NONE, -1, -1, -1};
  if (k >= (int32_t)ex->o0)
    p = (pred){P_PROG, g->ops[k].t1, e, k};
  else if (ex->is_job && ex->sub >= 0 && (size_t)ex->sub < g->nops) {
    int32_t by = exec_of(g, (uint32_t)ex->sub); /* the executor holding the submit */
    if (by >= 0 && by != e)
      p = (pred){P_SUB, g->ops[ex->sub].t1, by, ex->sub};
  }
  for (int32_t c = s; c > k; c--) {
    int32_t x;
    int64_t end = target_end(w, &g->ops[c], e, &x);
    if (x >= 0 && end >= 0 && end <= T && (p.how == P_NONE || end > p.end))
      p = (pred){P_TARGET, end, x, jq_ops_last_op(g, x)};
  }
  if (p.how != P_NONE && p.end > T)
    p.end = T;
  return p;
}

static at at_job(const walk *w, int32_t e, int32_t lane) {
  const jo_exec *ex = &w->g->ex[e];
  return (at){e, lane >= 0 ? lane : ex->lane, ex->is_job ? e : -1, ex->is_job ? ex->cat : -1};
}

/* Labels [F, T) in executor e: the non-work ops ops[k + 1 .. s] cover
 * parts of it; o the op after them (work, or NULL); p the predecessor. */
static void push_gap(walk *w, int32_t e, int32_t s, int32_t k, int64_t F, int64_t T, const jo_op *o, pred p) {
  const jo_graph *g = w->g;
  const jo_exec *ex = &g->ex[e];
  at a = at_job(w, e, o ? o->lane : -1);
  int bare = p.how == P_TARGET ? JP_RESUME /* what nothing covers */
             : !ex->is_job     ? JP_CALLER
             : o               ? of_op[o->kind - JO_RUN]
                               : JP_RESUME;
  int before_start = ex->is_job && k < (int32_t)ex->o0;
  int64_t cur = T;
  for (int32_t c = s; c > k && cur > F; c--) {
    const jo_op *op = &g->ops[c];
    int64_t c0 = op->t0 > F ? op->t0 : F, c1 = op->t1 < cur ? op->t1 : cur;
    if (c1 < cur) { /* nothing covers [c1, cur) */
      if (before_start)
        push_ready(w, c1 > F ? c1 : F, cur, a);
      else
        push_step(w, bare, c1 > F ? c1 : F, cur, a, -1);
    }
    if (c0 < c1 && op->kind == JO_SUSPEND)
      push_suspended(w, c0, c1, a);
    else if (c0 < c1 && op->kind == JO_BLOCK) {
      int32_t x;
      int64_t end = target_end(w, op, e, &x), m = end < 0 ? c1 : end < c0 ? c0 : end > c1 ? c1 : end;
      push_step(w, JP_RESUME, m, c1, a, -1);
      push_step(w, JP_BLOCKED, c0, m, a, -1);
    }
    if (c0 < cur)
      cur = c0;
  }
  if (cur > F && before_start)
    push_ready(w, F, cur, a);
  else if (cur > F)
    push_step(w, bare, F, cur, a, -1);
}

/* Pushes op o's time up to t as a step of its kind (o is a work op of e). */
static void push_work(walk *w, int32_t e, const jo_op *o, int64_t t) {
  const jo_graph *g = w->g;
  const jo_exec *ex = &g->ex[e];
  at a = at_job(w, e, o->lane);
  if (!ex->is_job) {
    a.job = o->kind == JO_OWN ? -1 : o->job;
    a.cat = o->cat >= 0                                                 ? o->cat
            : o->kind == JO_JOB && o->job >= 0 && (size_t)o->job < g->nex ? g->ex[o->job].cat
                                                                        : -1;
  } else if (o->cat >= 0) {
    a.cat = o->cat;
  }
  push_step(w, of_op[o->kind - JO_RUN], o->t0 < t ? o->t0 : t, t, a, -1);
}

/* Where the walk enters executor x at time t, given op: op, or the last
 * of x's ops starting before t when op starts after it. */
static int32_t settle(const jo_graph *g, int32_t x, int32_t op, int64_t t) {
  if (g->ops[op].t0 <= t)
    return op;
  uint32_t lo = g->ex[x].o0, hi = (uint32_t)op; /* the first starting at or after t */
#define OP_BEFORE(k) (g->ops[k].t0 < t)
  FIRST_NOT(lo, hi, OP_BEFORE);
  return (int32_t)(lo > g->ex[x].o0 ? lo - 1 : lo);
}

int jq_ops_has_job(const jo_graph *g) {
  for (size_t x = 0; x < g->nex; x++)
    if (g->ex[x].is_job && g->ex[x].no)
      return 1;
  return 0;
}

/* The executor that ended last: the caller's thread on ties, then the first. */
static int32_t last_exec(const walk *w) {
  int32_t e = -1;
  for (size_t x = 0; x < w->g->nex; x++)
    if (w->fin[x] >= 0 && (e < 0 || w->fin[x] > w->fin[e] || (w->fin[x] == w->fin[e] && (int)x == w->g->caller)))
      e = (int32_t)x;
  return e;
}

static void reverse_steps(jp_step *a, size_t n) {
  for (size_t k = 0; k < n / 2; k++) {
    jp_step x = a[k];
    a[k] = a[n - 1 - k], a[n - 1 - k] = x;
  }
}

/* Job x (-1: none) on the path, unless it is the last one there: the job
 * the walk is in, or the one a thread's JO_JOB ran (a queue without workers). */
static void add_job(walk *w, int32_t x) {
  jq_vec *jobs = &w->s->b[B_JOBS];
  if (x >= 0 && (size_t)x < w->g->nex && (!jobs->n || ((int32_t *)(jobs->p + jobs->n))[-1] != x))
    jq_scratch_add(w->L, jobs, &x, sizeof x);
}

/* The walk: steps and jobs latest first, then turned to time order. */
void jq_ops_walk(lua_State *L, const jo_graph *g, jo_path *p) {
  memset(p, 0, sizeof *p);
  walk w;
  memset(&w, 0, sizeof w);
  w.L = L, w.g = g, w.s = jq_scratch_new(L, B_N);
  prepare(&w);
  int32_t e = last_exec(&w), i = jq_ops_last_op(g, e);
  int64_t t = p->finish = w.fin[e];
  for (size_t steps = 0, limit = 2 * (g->nops + g->nex) + 16;; steps++) {
    if (steps == limit) {
      p->cut = 1;
      break;
    }
    const jo_op *o = &g->ops[i];
    add_job(&w, g->ex[e].is_job ? e : o->kind == JO_JOB ? o->job : -1);
    int32_t s = i, k;
    int64_t T = t;
    if (is_work(o->kind)) {
      push_work(&w, e, o, t);
      T = o->t0 < t ? o->t0 : t;
      s = i - 1;
    } else {
      o = NULL;
    }
    pred pr = find_pred(&w, e, s, T, &k);
    if (pr.how == P_NONE) { /* the start: the waits before it last as long as they did */
      int64_t F = s > k && g->ops[k + 1].t0 < T ? g->ops[k + 1].t0 : T;
      push_gap(&w, e, s, k, F, T, o, pr);
      t = F;
      break;
    }
    push_gap(&w, e, s, k, pr.end, T, o, pr);
    e = pr.exec, t = pr.end;
    i = settle(g, e, pr.op, t);
  }
  p->start = t;
  jq_vec *v = &w.s->b[B_STEPS], *j = &w.s->b[B_JOBS];
  p->steps = (jp_step *)v->p, p->nsteps = v->n / sizeof *p->steps;
  p->jobs = (int32_t *)j->p, p->njobs = j->n / sizeof *p->jobs;
  reverse_steps(p->steps, p->nsteps);
  for (size_t k = 0; k < p->njobs / 2; k++) {
    int32_t x = p->jobs[k];
    p->jobs[k] = p->jobs[p->njobs - 1 - k], p->jobs[p->njobs - 1 - k] = x;
  }
}

/* ---- ops:critical_path() ---- */

static void set_us(lua_State *L, const char *k, int64_t ns) {
  jq_ops_push_us(L, ns);
  lua_setfield(L, -2, k);
}

/* Pushes user value u's entry for index i (0-based), nil when i < 0. */
static void push_name(lua_State *L, int gidx, int u, int32_t i) {
  if (i < 0) {
    lua_pushnil(L);
    return;
  }
  lua_getiuservalue(L, gidx, u);
  lua_rawgeti(L, -1, (lua_Integer)i + 1);
  lua_remove(L, -2);
}

static void push_steps(lua_State *L, int gidx, const jo_path *p) {
  lua_createtable(L, p->nsteps < INT32_MAX ? (int)p->nsteps : 0, 0);
  for (size_t k = 0; k < p->nsteps; k++) {
    const jp_step *s = &p->steps[k];
    lua_createtable(L, 0, 7);
    lua_pushstring(L, jq_path_kinds[s->kind]);
    lua_setfield(L, -2, "kind");
    set_us(L, "start_us", s->t0);
    set_us(L, "dur_us", s->t1 - s->t0);
    push_name(L, gidx, JU_LANES, s->lane);
    lua_setfield(L, -2, "lane");
    if (s->job >= 0)
      jq_ops_push_job_id(L, gidx, s->job), lua_setfield(L, -2, "job");
    push_name(L, gidx, JU_CATS, s->cat);
    lua_setfield(L, -2, "category");
    if (s->held_by >= 0)
      jq_ops_push_job_id(L, gidx, s->held_by), lua_setfield(L, -2, "held_by");
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
}

int jq_path_by_kind(const jo_path *p, int64_t *us, int *order) {
  for (int k = 0; k < JP_N; k++)
    us[k] = 0;
  for (size_t k = 0; k < p->nsteps; k++)
    us[p->steps[k].kind] += p->steps[k].t1 - p->steps[k].t0;
  int n = 0;
  for (int k = 0; k < JP_N; k++)
    if (us[k] > 0) {
      int m = n++;
      while (m > 0 && (us[order[m - 1]] < us[k] ||
                       (us[order[m - 1]] == us[k] && strcmp(jq_path_kinds[order[m - 1]], jq_path_kinds[k]) > 0)))
        order[m] = order[m - 1], m--;
      order[m] = k;
    }
  return n;
}

/* Pushes by_kind: { {kind=, us=}, ... } (most first, ties by kind name). */
static void push_by_kind(lua_State *L, const jo_path *p) {
  int64_t us[JP_N];
  int order[JP_N], n = jq_path_by_kind(p, us, order);
  lua_createtable(L, n, 0);
  for (int k = 0; k < n; k++) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, jq_path_kinds[order[k]]);
    lua_setfield(L, -2, "kind");
    set_us(L, "us", us[order[k]]);
    lua_rawseti(L, -2, k + 1);
  }
}

typedef struct cat_us {
  int64_t us;
  const char *name;
} cat_us;

#define CAT_LESS(ctx, x, y) ((void)(ctx), (x).us > (y).us || ((x).us == (y).us && strcmp((x).name, (y).name) < 0))
JQ_SORT_DEFINE(sort_cats, cat_us, void *, CAT_LESS)

/* Pushes by_category: the run steps' time by category, most first, ties
 * by name (bytes). */
static void push_by_category(lua_State *L, int gidx, const jo_graph *g, const jo_path *p) {
  jq_scratch *s = jq_scratch_new(L, 1);
  size_t nc = g->ncats > 0 ? (size_t)g->ncats : 0;
  cat_us *c = jq_scratch_room(L, &s->b[0], 2 * nc + 1, sizeof *c), *tmp = c + nc;
  lua_getiuservalue(L, gidx, JU_CATS);
  for (size_t k = 0; k < nc; k++) {
    lua_rawgeti(L, -1, (lua_Integer)k + 1);
    c[k] = (cat_us){0, lua_tostring(L, -1)}; /* kept alive by the table */
    lua_pop(L, 1);
  }
  for (size_t k = 0; k < p->nsteps; k++)
    if (p->steps[k].kind == JP_RUN && p->steps[k].cat >= 0 && p->steps[k].cat < g->ncats)
      c[p->steps[k].cat].us += p->steps[k].t1 - p->steps[k].t0;
  size_t n = 0;
  for (size_t k = 0; k < nc; k++)
    if (c[k].us > 0 && c[k].name)
      c[n++] = c[k];
  sort_cats(c, tmp, n, NULL);
  lua_createtable(L, (int)n, 0);
  for (size_t k = 0; k < n; k++) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, c[k].name);
    lua_setfield(L, -2, "name");
    set_us(L, "run_us", c[k].us);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  jq_scratch_free(s);
  lua_replace(L, -3); /* over the scratch */
  lua_pop(L, 1);      /* the names */
}

typedef struct held_us {
  int64_t us;
  size_t first; /* its first step's index (SIZE_MAX: none) */
  int32_t exec; /* the executor that held the worker; nex: none named */
} held_us;

#define HELD_LESS(ctx, x, y) ((void)(ctx), (x).us > (y).us || ((x).us == (y).us && (x).first < (y).first))
JQ_SORT_DEFINE(sort_held, held_us, void *, HELD_LESS)

/* Pushes held_by: the worker busy steps' time by the job that held the
 * worker, { {job=, us=}, ... } most first, ties in order of first step (a
 * step naming no job: a row without job). What the text names, without
 * the steps. */
static void push_held_by(lua_State *L, int gidx, const jo_graph *g, const jo_path *p) {
  jq_scratch *s = jq_scratch_new(L, 1);
  size_t nx = g->nex + 1;
  held_us *h = jq_scratch_room(L, &s->b[0], 2 * nx, sizeof *h), *tmp = h + nx;
  for (size_t x = 0; x < nx; x++)
    h[x] = (held_us){0, SIZE_MAX, (int32_t)x};
  for (size_t k = 0; k < p->nsteps; k++) {
    const jp_step *st = &p->steps[k];
    if (st->kind != JP_BUSY)
      continue;
    held_us *r = &h[st->held_by >= 0 && (size_t)st->held_by < g->nex ? (size_t)st->held_by : g->nex];
    r->us += st->t1 - st->t0;
    if (r->first == SIZE_MAX)
      r->first = k;
  }
  size_t n = 0;
  for (size_t x = 0; x < nx; x++)
    if (h[x].first != SIZE_MAX)
      h[n++] = h[x];
  sort_held(h, tmp, n, NULL);
  lua_createtable(L, n < INT32_MAX ? (int)n : 0, 0);
  for (size_t k = 0; k < n; k++) {
    lua_createtable(L, 0, 2);
    if ((size_t)h[k].exec < g->nex)
      jq_ops_push_job_id(L, gidx, h[k].exec), lua_setfield(L, -2, "job");
    set_us(L, "us", h[k].us);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  jq_scratch_free(s);
  lua_replace(L, -2); /* over the scratch */
}

/* The jobs' run time: their slices (every op of a job but its copy in and
 * out and its suspensions), wherever they ran. A thread's JO_JOB ops are
 * the same slices (and copies) seen from the thread that ran them: not
 * counted again. */
int64_t jq_ops_total_run(const jo_graph *g) {
  int64_t run = 0;
  for (size_t x = 0; x < g->nex; x++)
    for (uint32_t k = 0; g->ex[x].is_job && k < g->ex[x].no; k++) {
      const jo_op *o = &g->ops[g->ex[x].o0 + k];
      if (o->kind != JO_COPY_IN && o->kind != JO_COPY_OUT && o->kind != JO_SUSPEND)
        run += o->t1 - o->t0;
    }
  return run;
}

static void set_ratio(lua_State *L, const char *k, int64_t a, int64_t b) {
  if (b > 0) {
    lua_pushnumber(L, (lua_Number)a / (lua_Number)b);
    lua_setfield(L, -2, k);
  }
}

/* ops:critical_path([{steps = false}]) -> nil without jobs, else the path
 * (docs/cli.md); steps = false leaves out its steps (a table each: the
 * text needs only the sums) */
int jq_ops_critical_path(lua_State *L) {
  jo_graph *g = jq_ops_check(L, 1);
  int with_steps = 1;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_getfield(L, 2, "steps");
    with_steps = !(lua_isboolean(L, -1) && !lua_toboolean(L, -1));
  }
  lua_settop(L, 1);
  if (!jq_ops_has_job(g)) {
    lua_pushnil(L);
    return 1;
  }
  jo_path p;
  jq_ops_walk(L, g, &p); /* 2: its scratch */
  int64_t dur = p.finish - p.start, run = jq_ops_total_run(g);
  lua_createtable(L, 0, 16);
  set_us(L, "duration_us", dur);
  set_us(L, "start_us", p.start);
  set_us(L, "finish_us", p.finish);
  set_us(L, "session_us", g->stop);
  set_us(L, "total_run_us", run);
  set_ratio(L, "share", dur, g->stop);
  set_ratio(L, "achieved", run, g->stop);
  lua_createtable(L, p.njobs < INT32_MAX ? (int)p.njobs : 0, 0);
  for (size_t k = 0; k < p.njobs; k++)
    jq_ops_push_job_id(L, 1, p.jobs[k]), lua_rawseti(L, -2, (lua_Integer)k + 1);
  lua_setfield(L, -2, "jobs");
  if (with_steps) {
    push_steps(L, 1, &p);
    lua_setfield(L, -2, "steps");
  }
  push_held_by(L, 1, g, &p);
  lua_setfield(L, -2, "held_by");
  push_by_kind(L, &p);
  lua_setfield(L, -2, "by_kind");
  push_by_category(L, 1, g, &p);
  lua_setfield(L, -2, "by_category");
  lua_pushboolean(L, g->partial || p.cut);
  lua_setfield(L, -2, "partial");
  if (g->partial || p.cut) {
    lua_pushstring(L, g->partial ? g->partial_why : "the walk stopped at its step limit");
    lua_setfield(L, -2, "partial_why");
  }
  jq_scratch_free(lua_touserdata(L, 2)); /* the walk's, now (the command stops the collector) */
  return 1;
}
