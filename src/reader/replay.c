/*
 * replay.c - ops:whatif([workers]): the recorded happens-before graph
 * (job_ops.h) replayed on W workers per queue, for each W asked (default
 * 1, 2, 4, 8, 16), with each queue's recorded workers (as recorded) and
 * with a worker per job (the span): the predicted session length of each. A discrete-event simulation (a binary heap of
 * times, each executor with at most one event pending: O(ops log ops) a
 * replay), a loop over events and a list of executors to move on at the
 * current time: no recursion.
 *
 * The queue's own rules (src/queue/worker.c's header, queue.c's
 * jq_queue_take, docs/internals.md "Queue: the scheduler"):
 * - every queue of the recording gets W workers (no more than it has jobs
 *   run by workers); a job is ready at the end of its JO_SUBMIT op (at the
 *   point of it where its first op began, when that lies inside it: the
 *   span ends after the publish, late when the thread was preempted), or once
 *   the last of its `after` dependencies (the JO_WAIT points before its
 *   first op) ended; a job without a submit op is ready at its recorded
 *   ready time (else its first op's);
 * - ready jobs go to their queue's FIFO; a free worker takes first from
 *   its own resume list, then the FIFO; an idle worker is found most
 *   recently freed first (it is the one still awake);
 * - a job runs its ops in order on the worker that took it: a wait
 *   (JO_WAIT, or JO_SUSPEND awaiting a job) on a job still running
 *   suspends it and frees the worker; when that job ends the waiter joins
 *   its worker's resume list; a cooperative yield (JO_SUSPEND, job -1)
 *   puts it at the end of that list at once, and a worker that last took
 *   a yielded job takes a queued one first when there is one, as the
 *   queue does; JO_BLOCK holds the worker until what it waits for ended;
 * - threads (the caller, other lanes) run their ops in order on their
 *   own, the caller from the session's start, another thread from its
 *   first op's recorded time: the time between two of their ops is their
 *   own work and keeps its recorded length (the caller's own work after
 *   its last op too, to the session's stop), so the caller submits
 *   at its recorded pace; a JO_WAIT/JO_BLOCK waits for what it names (a
 *   JO_BLOCK just before a JO_JOB is the thread running the jobs of a
 *   queue without workers, which needs no waiting); a job one of whose
 *   slices a thread ran (JO_JOB) is that thread's work and ends when the
 *   last of those ends; a job that ran inside a JO_BLOCK waiting for it on
 *   the waiter's lane (a queue without workers, made in a job: its jobs run
 *   on the worker thread that waits) runs there, when the waiter gets to
 *   that wait, and not on any queue's workers;
 * - a wait for every job of a queue (job -1; queue 0: of every queue)
 *   waits for the jobs of that queue submitted (in the recording) before
 *   the wait began;
 * - work ops (run, copies, submits, own work, JO_JOB) take their recorded
 *   time; nothing else costs anything: no scheduling overhead, no wake-up,
 *   no contention for the cores (docs/cli.md says where that is wrong).
 * A graph whose waits the replay can never satisfy (a cycle, a wait on a
 * job that is never submitted) ends with what finished and is partial.
 *
 * Owns: nothing past a call (scratch memory is a userdata).
 * Must not: run on the record path. Thread safety: one lua_State per call.
 */
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/job_ops.h"
#include "reader/scratch.h"
#include "reader/sort.h"

#if !defined(JQ_WHATIF_MAX)
#define JQ_WHATIF_MAX 64 /* worker counts one call replays */
#endif
#define W_RECORDED (-1) /* a replay with each queue's recorded workers */
#define JQ_STR_(x) #x
#define JQ_STR(x) JQ_STR_(x)

/* An executor's state in a replay. */
enum {
  XS_NEW,  /* a job not submitted yet */
  XS_NOW,  /* on the list of executors to move on now */
  XS_BUSY, /* in a work op, its own work or waiting to be ready (an event pending) */
  XS_WAIT, /* on a wait list, holding its thread (a thread, a blocked job, a job not yet ready) */
  XS_SUSP, /* a suspended job on a wait list: its worker is free */
  XS_LIST, /* on a FIFO or a resume list */
  XS_DONE
};

/* Who runs a job: the queue's workers, a thread slice by slice (JO_JOB),
 * or the executor blocked waiting for it on its lane (inline). */
enum { RM_THREAD, RM_QUEUE, RM_BY_THREAD, RM_INLINE };

/* What an executor's pending event ends. */
enum { B_OP = 1, B_GAP, B_TIMER, B_PUBLISH };

typedef struct rx {
  int64_t end;
  int32_t next;       /* the one list it is on: a FIFO, a resume list, a wait list */
  int32_t whead, wtail; /* a job: who waits for it */
  int32_t worker;     /* a job's worker (run's index), -1 none yet */
  int32_t jobs_left;  /* a job a thread runs: its JO_JOB ops not replayed yet */
  uint32_t pc;        /* its next op */
  uint8_t state, busy, gap_done, yielded;
} rx;

typedef struct rw {
  int32_t rhead, rtail; /* its resume list */
  int32_t prev, next;   /* its queue's idle list, most recently freed first */
  int32_t job;          /* what it runs, -1 idle */
  int32_t queue;
  uint8_t took_yielded, idle;
} rw;

typedef struct rq {
  uint32_t p0, np;   /* its jobs by submit time: order[p0 .. p0 + np) (queue 0: every job) */
  uint32_t done;     /* the first `done` of them have ended */
  int32_t njobs;     /* jobs its workers run */
  int32_t fhead, ftail; /* ready jobs */
  int32_t idle;      /* head of its idle workers */
} rq;

typedef struct rev {
  int64_t t;
  uint32_t seq;
  int32_t x;
} rev;

typedef struct jkey {
  int64_t t;
  int32_t x;
} jkey;

#define JKEY_LESS(c, a, b) ((a).t < (b).t)
JQ_SORT_DEFINE(sort_jkeys, jkey, int, JKEY_LESS)

enum { M_X, M_INFO, M_JOBS, M_MODE, M_OWNER, M_START, M_W, M_Q, M_AUX, M_ORDER, M_OKEY, M_KEYS, M_TMP, M_HEAP, M_NOW, M_N };

typedef struct replay {
  const jo_graph *g;
  rx *x;
  rw *w;
  rq *q;          /* 0 .. nq */
  int32_t *aux;   /* per op: a submit's job (-1 none); a wait for a whole queue: the jobs it
                     needs; a JO_BLOCK: the job it runs inline (-1 none) */
  int32_t *info;  /* per executor: a job's queue (1 .. nq), 0 a thread */
  int32_t *jobs;  /* per executor: the JO_JOB ops that run it (a job a thread runs: > 0) */
  uint8_t *mode;  /* per executor: RM_* */
  int32_t *owner; /* per op: its executor */
  int64_t *start; /* per executor: a job readied by time, not by a submit: when; else -1 */
  int32_t *order;
  int64_t *okey;
  rev *heap;
  size_t nheap;
  uint32_t seq;
  int32_t *now;
  size_t now0, now1, nnow; /* the list to move on now: nnow from now[now0] on, mod nex */
  int32_t all_head;  /* executors waiting for a whole queue */
  int32_t nq;
  int64_t t;         /* the replay's clock (ns) */
  int64_t work;      /* work ops' time, a thread's own work included (ns) */
} replay;

/* ---- the event heap ---- */

static int ev_less(const rev *a, const rev *b) { return a->t < b->t || (a->t == b->t && a->seq < b->seq); }

static void heap_push(replay *R, int32_t x, int64_t t) {
  size_t i = R->nheap++;
  rev e = {t, R->seq++, x};
  while (i > 0 && ev_less(&e, &R->heap[(i - 1) / 2])) {
    R->heap[i] = R->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  R->heap[i] = e;
}

static rev heap_pop(replay *R) {
  rev top = R->heap[0], last = R->heap[--R->nheap];
  size_t i = 0, n = R->nheap;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && ev_less(&R->heap[c + 1], &R->heap[c]))
      c++;
    if (!ev_less(&R->heap[c], &last))
      break;
    R->heap[i] = R->heap[c];
    i = c;
  }
  if (n)
    R->heap[i] = last;
  return top;
}

/* ---- lists ---- */

static void now_push(replay *R, int32_t x) {
  R->x[x].state = XS_NOW;
  R->now[R->now1] = x;
  R->now1 = R->now1 + 1 == R->g->nex ? 0 : R->now1 + 1; /* no division: a ring's wrap */
  R->nnow++;
}

static void list_add(replay *R, int32_t *head, int32_t *tail, int32_t x) {
  R->x[x].next = -1;
  if (*tail >= 0)
    R->x[*tail].next = x;
  else
    *head = x;
  *tail = x;
}

static int32_t list_take(replay *R, int32_t *head, int32_t *tail) {
  int32_t x = *head;
  *head = R->x[x].next;
  if (*head < 0)
    *tail = -1;
  return x;
}

static void idle_remove(replay *R, int32_t w) {
  rw *k = &R->w[w];
  if (!k->idle)
    return;
  if (k->prev >= 0)
    R->w[k->prev].next = k->next;
  else
    R->q[k->queue].idle = k->next;
  if (k->next >= 0)
    R->w[k->next].prev = k->prev;
  k->idle = 0;
}

static void idle_add(replay *R, int32_t w) {
  rw *k = &R->w[w];
  rq *q = &R->q[k->queue];
  k->idle = 1;
  k->prev = -1;
  k->next = q->idle;
  if (q->idle >= 0)
    R->w[q->idle].prev = w;
  q->idle = w;
}

/* ---- the scheduler ---- */

/* Worker w, free, takes its next job as jq_queue_take does, or idles. */
static void dispatch(replay *R, int32_t w) {
  rw *k = &R->w[w];
  rq *q = &R->q[k->queue];
  if (k->job >= 0)
    return;
  int32_t j = k->rhead;
  if (j >= 0 && R->x[j].yielded && k->took_yielded && q->fhead >= 0)
    j = -1; /* yields take turns with queued jobs */
  if (j >= 0) {
    list_take(R, &k->rhead, &k->rtail);
    k->took_yielded = R->x[j].yielded;
    R->x[j].yielded = 0;
  } else if (q->fhead >= 0) {
    j = list_take(R, &q->fhead, &q->ftail);
    R->x[j].worker = w;
    k->took_yielded = 0;
  } else {
    if (!k->idle)
      idle_add(R, w);
    return;
  }
  idle_remove(R, w);
  k->job = j;
  now_push(R, j);
}

static void enqueue(replay *R, int32_t x) {
  rq *q = &R->q[R->info[x]];
  R->x[x].state = XS_LIST;
  list_add(R, &q->fhead, &q->ftail, x);
  if (q->idle >= 0)
    dispatch(R, q->idle);
}

static void resume_push(replay *R, int32_t w, int32_t x) {
  R->x[x].state = XS_LIST;
  list_add(R, &R->w[w].rhead, &R->w[w].rtail, x);
  dispatch(R, w);
}

static void release(replay *R, int32_t x) {
  int32_t w = R->x[x].worker;
  R->w[w].job = -1;
  dispatch(R, w);
}

/* ---- waits ---- */

static int is_job(const replay *R, int32_t j) { return j >= 0 && (size_t)j < R->g->nex && R->g->ex[j].is_job; }

/* Whether what op o (of executor self) waits for has ended in the replay. */
static int cond_met(const replay *R, const jo_op *o, int32_t self) {
  if (o->job >= 0)
    return !is_job(R, o->job) || o->job == self || R->x[o->job].state == XS_DONE;
  if (o->queue < 0 || o->queue > R->nq)
    return 1;
  return R->q[o->queue].done >= (uint32_t)R->aux[o - R->g->ops];
}

static void wait_on(replay *R, int32_t x, const jo_op *o, int state) {
  R->x[x].state = (uint8_t)state;
  if (o->job >= 0) {
    list_add(R, &R->x[o->job].whead, &R->x[o->job].wtail, x);
  } else {
    R->x[x].next = R->all_head;
    R->all_head = x;
  }
}

static void wake(replay *R, int32_t x) {
  if (R->x[x].state == XS_SUSP)
    resume_push(R, R->x[x].worker, x);
  else
    now_push(R, x);
}

/* Wakes those waiting for a whole queue whose jobs have now all ended. */
static void wake_all_waiters(replay *R) {
  int32_t *link = &R->all_head;
  while (*link >= 0) {
    int32_t y = *link;
    const jo_op *o = &R->g->ops[R->g->ex[y].o0 + R->x[y].pc];
    if (cond_met(R, o, y)) {
      *link = R->x[y].next;
      wake(R, y);
    } else {
      link = &R->x[y].next;
    }
  }
}

static int prefix_advance(replay *R, int32_t q) {
  rq *p = &R->q[q];
  uint32_t d = p->done;
  while (p->done < p->np && R->x[R->order[p->p0 + p->done]].state == XS_DONE)
    p->done++;
  return p->done != d;
}

static void finish(replay *R, int32_t x) {
  rx *s = &R->x[x];
  s->state = XS_DONE;
  s->end = R->t;
  if (!R->g->ex[x].is_job)
    return;
  int32_t y = s->whead;
  s->whead = s->wtail = -1;
  while (y >= 0) {
    int32_t next = R->x[y].next;
    wake(R, y);
    y = next;
  }
  int moved = prefix_advance(R, 0) | prefix_advance(R, R->info[x]);
  if (moved && R->all_head >= 0)
    wake_all_waiters(R);
  if (s->worker >= 0)
    release(R, x);
}

/* ---- moving an executor on ---- */

static void schedule(replay *R, int32_t x, int64_t at, int busy) {
  R->x[x].state = XS_BUSY;
  R->x[x].busy = (uint8_t)busy;
  heap_push(R, x, at);
}

static void next_op(rx *s) {
  s->pc++;
  s->gap_done = 0;
}

/* What work op o's end does: a submit readies its job's start, a thread's
 * last slice of a job it runs ends that job. */
static void op_done(replay *R, const jo_op *o) {
  int32_t j = o->kind == JO_SUBMIT ? R->aux[o - R->g->ops] : -1;
  if (j >= 0 && R->x[j].state == XS_NEW)
    now_push(R, j);
  if (o->kind == JO_JOB && is_job(R, o->job) && R->x[o->job].jobs_left > 0 &&
      --R->x[o->job].jobs_left == 0)
    finish(R, o->job);
}

/* When, into submit op o, its job was published: the start of the job's
 * first op where that lies inside the submit (a submit's span ends after
 * the publish, and a thread preempted there ends it late), else its end. */
static int64_t published_after(const replay *R, const jo_op *o) {
  int32_t j = R->aux[o - R->g->ops];
  if (j < 0)
    return o->t1 - o->t0;
  const jo_exec *e = &R->g->ex[j];
  for (uint32_t k = 0; k < e->no; k++) {
    const jo_op *f = &R->g->ops[e->o0 + k];
    if (f->kind == JO_WAIT)
      continue; /* its after points: recorded at the submit's end */
    return f->t0 < o->t0 ? 0 : f->t0 < o->t1 ? f->t0 - o->t0 : o->t1 - o->t0;
  }
  return o->t1 - o->t0;
}

/* A thread's own work before its op pc (the caller's after its last op
 * too, to the stop): 1 when it takes time (its event is pending). */
static int own_work(replay *R, int32_t x) {
  const jo_exec *e = &R->g->ex[x];
  rx *s = &R->x[x];
  if (e->is_job || s->gap_done)
    return 0;
  s->gap_done = 1;
  int64_t from = s->pc ? R->g->ops[e->o0 + s->pc - 1].t1 : 0, to = from;
  if (s->pc < e->no)
    to = R->g->ops[e->o0 + s->pc].t0;
  else if (x == R->g->caller)
    to = R->g->stop;
  if (to <= from)
    return 0;
  schedule(R, x, R->t + (to - from), B_GAP);
  return 1;
}

/* Op o of x (a thread, or a job on its worker) now: 1 when x goes on with
 * its next op, 0 when it stops here (an event pending, a wait, a yield). */
static int step(replay *R, int32_t x, const jo_op *o) {
  rx *s = &R->x[x];
  const jo_exec *e = &R->g->ex[x];
  if (o->kind <= JO_JOB) { /* work */
    int64_t pub = o->kind == JO_SUBMIT ? published_after(R, o) : 0;
    if (o->kind == JO_SUBMIT && pub < o->t1 - o->t0) { /* its job published before the submit's end */
      schedule(R, x, R->t + pub, B_PUBLISH);
      return 0;
    }
    if (o->t1 > o->t0) {
      schedule(R, x, R->t + (o->t1 - o->t0), B_OP);
      return 0;
    }
    op_done(R, o);
    return 1;
  }
  if (o->kind == JO_SUSPEND && o->job < 0) { /* a cooperative yield */
    if (s->worker < 0)
      return 1;
    next_op(s);
    s->yielded = 1;
    R->w[s->worker].job = -1;
    resume_push(R, s->worker, x);
    return 0;
  }
  if (o->kind == JO_BLOCK && !e->is_job && s->pc + 1 < e->no && o[1].kind == JO_JOB)
    return 1; /* the thread runs the jobs of a queue without workers meanwhile */
  int32_t in = o->kind == JO_BLOCK && o->job >= 0 ? R->aux[o - R->g->ops] : -1;
  if (in >= 0 && R->x[in].state == XS_NEW)
    now_push(R, in); /* the job it waits for runs here meanwhile */
  if (cond_met(R, o, x))
    return 1;
  if (s->worker >= 0 && o->kind != JO_BLOCK) { /* suspended: its worker runs others */
    wait_on(R, x, o, XS_SUSP);
    release(R, x);
  } else {
    wait_on(R, x, o, XS_WAIT);
  }
  return 0;
}

/* Moves x on at the replay's time as far as it goes. A job not taken by a
 * worker yet waits for its after dependencies, then joins the FIFO. */
static void advance(replay *R, int32_t x) {
  const jo_exec *e = &R->g->ex[x];
  rx *s = &R->x[x];
  for (;;) {
    if (own_work(R, x))
      return;
    int queued = R->mode[x] == RM_QUEUE && s->worker < 0; /* not taken by a worker yet */
    if (s->pc >= e->no) {
      if (queued)
        enqueue(R, x);
      else
        finish(R, x);
      return;
    }
    const jo_op *o = &R->g->ops[e->o0 + s->pc];
    if (queued) {
      if (o->kind != JO_WAIT) {
        enqueue(R, x);
        return;
      }
      if (!cond_met(R, o, x)) {
        wait_on(R, x, o, XS_WAIT);
        return;
      }
    } else if (!step(R, x, o)) {
      return;
    }
    next_op(s);
  }
}

static void event_done(replay *R, int32_t x) {
  rx *s = &R->x[x];
  const jo_op *o = &R->g->ops[R->g->ex[x].o0 + s->pc];
  if (s->busy == B_PUBLISH) { /* the job goes, the submit goes on */
    op_done(R, o);
    schedule(R, x, R->t + (o->t1 - o->t0 - published_after(R, o)), B_OP);
    return;
  }
  if (s->busy == B_OP) {
    op_done(R, o);
    next_op(s);
  }
  now_push(R, x);
}

/* ---- a replay ---- */

/* Queue q's workers in a replay with W per queue (0: one per job;
 * W_RECORDED: its worker lanes in the recording, one per job when it has
 * none), never more than it has jobs for its workers. */
static int32_t workers_of(const replay *R, int32_t q, int32_t W) {
  int32_t n = R->q[q].njobs;
  if (W == W_RECORDED)
    W = q <= R->g->nqueues ? R->g->queue_workers[q - 1] : 0;
  return W > 0 && W < n ? W : n;
}

static void run_init(replay *R, int32_t W) {
  const jo_graph *g = R->g;
  for (size_t k = 0; k < g->nex; k++) {
    rx *s = &R->x[k];
    memset(s, 0, sizeof *s);
    s->next = s->whead = s->wtail = s->worker = -1;
    s->jobs_left = R->jobs[k];
  }
  int32_t nw = 0;
  for (int32_t q = 0; q <= R->nq; q++) {
    rq *p = &R->q[q];
    p->done = 0;
    p->fhead = p->ftail = p->idle = -1;
    int32_t n = q == 0 ? 0 : workers_of(R, q, W);
    for (int32_t i = n - 1; i >= 0; i--) { /* worker 0 heads the idle list */
      rw *k = &R->w[nw + i];
      memset(k, 0, sizeof *k);
      k->rhead = k->rtail = k->job = -1;
      k->queue = q;
      idle_add(R, nw + i);
    }
    nw += n;
  }
  R->all_head = -1;
  R->nheap = R->now0 = R->now1 = R->nnow = 0;
  R->seq = 0;
  R->t = 0;
}

/* One replay with W workers per queue (0: one per job; W_RECORDED: as
 * recorded): the session's
 * predicted length (ns); *partial set when some executor never ended. */
static int64_t run(replay *R, int32_t W, int *partial) {
  const jo_graph *g = R->g;
  if (g->nex == 0)
    return 0;
  run_init(R, W);
  for (size_t k = 0; k < g->nex; k++) {
    if (!g->ex[k].is_job)
      now_push(R, (int32_t)k);
    else if (R->start[k] >= 0)
      schedule(R, (int32_t)k, R->start[k], B_TIMER);
  }
  for (;;) {
    while (R->nnow) {
      int32_t x = R->now[R->now0];
      R->now0 = R->now0 + 1 == g->nex ? 0 : R->now0 + 1;
      R->nnow--;
      advance(R, x);
    }
    if (!R->nheap)
      break;
    rev ev = heap_pop(R);
    R->t = ev.t;
    event_done(R, ev.x);
  }
  for (size_t k = 0; k < g->nex; k++)
    if (R->x[k].state != XS_DONE)
      *partial = 1;
  return R->t;
}

/* ---- what every replay of a graph shares ---- */

static void *room(lua_State *L, jq_scratch *S, int b, size_t count, size_t size) {
  return jq_scratch_room(L, &S->b[b], count ? count : 1, size);
}

/* Which jobs the queues' workers run: not one a thread ran slice by slice
 * (JO_JOB ops name it), nor one that ran inside a blocked wait for it on
 * the waiter's own lane (a job of a queue without workers, run by the
 * thread that waits for it, a worker's too): that one runs when its
 * waiter gets to the wait (aux of the JO_BLOCK names it). */
static void prepare_modes(replay *R) {
  const jo_graph *g = R->g;
  for (size_t i = 0; i < g->nops; i++) {
    R->aux[i] = -1;
    const jo_op *o = &g->ops[i];
    if (o->kind == JO_JOB && is_job(R, o->job))
      R->jobs[o->job]++;
  }
  for (size_t k = 0; k < g->nex; k++)
    R->mode[k] = !g->ex[k].is_job ? RM_THREAD : R->jobs[k] ? RM_BY_THREAD : RM_QUEUE;
  for (size_t k = 0; k < g->nex; k++) {
    const jo_exec *e = &g->ex[k];
    for (uint32_t i = 0; i < e->no; i++) {
      const jo_op *o = &g->ops[e->o0 + i];
      if (o->kind != JO_BLOCK || !is_job(R, o->job) || (size_t)o->job == k || R->mode[o->job] != RM_QUEUE)
        continue;
      const jo_exec *x = &g->ex[o->job];
      if (x->no && x->lane >= 0 && x->lane == o->lane && g->ops[x->o0].t0 >= o->t0 &&
          g->ops[x->o0 + x->no - 1].t1 <= o->t1) {
        R->mode[o->job] = RM_INLINE;
        R->aux[e->o0 + i] = o->job;
      }
    }
  }
}

/* Each submit's job (aux), each job's queue (info) and, for a job the
 * workers run that no replayed op submits, when it is ready (start). */
static void prepare_jobs(replay *R) {
  const jo_graph *g = R->g;
  prepare_modes(R);
  R->nq = g->nqueues > 1 ? g->nqueues : 1;
  for (size_t k = 0; k < g->nex; k++) {
    const jo_exec *e = &g->ex[k];
    R->info[k] = e->is_job ? (e->queue > 0 ? e->queue : 1) : 0;
    if (R->info[k] > R->nq)
      R->nq = R->info[k];
    int by = e->sub >= 0 && (size_t)e->sub < g->nops ? R->owner[e->sub] : -1; /* who submits it */
    if (R->mode[k] == RM_QUEUE && by >= 0 && R->mode[by] != RM_BY_THREAD && g->ops[e->sub].kind == JO_SUBMIT)
      R->aux[e->sub] = (int32_t)k;
  }
  for (size_t k = 0; k < g->nex; k++) {
    const jo_exec *e = &g->ex[k];
    R->start[k] = R->mode[k] != RM_QUEUE ? -1 : e->ready >= 0 ? e->ready : e->no ? g->ops[e->o0].t0 : 0;
  }
  for (size_t i = 0; i < g->nops; i++)
    if (g->ops[i].kind == JO_SUBMIT && R->aux[i] >= 0)
      R->start[R->aux[i]] = -1;
}

/* The jobs of each queue by recorded submit time (queue 0: all of them),
 * and for each wait for a whole queue how many of them it waits for. */
static void prepare_order(lua_State *L, replay *R, jq_scratch *S) {
  const jo_graph *g = R->g;
  size_t nj = 0;
  for (size_t k = 0; k < g->nex; k++)
    nj += g->ex[k].is_job != 0;
  jkey *keys = room(L, S, M_KEYS, nj, sizeof *keys), *tmp = room(L, S, M_TMP, nj, sizeof *tmp);
  R->order = room(L, S, M_ORDER, 2 * nj, sizeof *R->order);
  R->okey = room(L, S, M_OKEY, 2 * nj, sizeof *R->okey);
  R->q = room(L, S, M_Q, (size_t)R->nq + 1, sizeof *R->q);
  memset(R->q, 0, ((size_t)R->nq + 1) * sizeof *R->q);
  nj = 0;
  for (size_t k = 0; k < g->nex; k++) {
    const jo_exec *e = &g->ex[k];
    if (!e->is_job)
      continue;
    int sub = e->sub >= 0 && (size_t)e->sub < g->nops;
    keys[nj].t = sub ? g->ops[e->sub].t1 : e->ready >= 0 ? e->ready : e->no ? g->ops[e->o0].t0 : 0;
    keys[nj++].x = (int32_t)k;
    R->q[R->info[k]].np++;
    R->q[R->info[k]].njobs += R->mode[k] == RM_QUEUE;
  }
  sort_jkeys(keys, tmp, nj, 0);
  R->q[0].np = (uint32_t)nj;
  for (int32_t q = 1, p0 = (int32_t)nj; q <= R->nq; p0 += (int32_t)R->q[q++].np)
    R->q[q].p0 = (uint32_t)p0;
  for (size_t i = 0; i < nj; i++) {
    rq *p = &R->q[R->info[keys[i].x]];
    R->order[i] = keys[i].x, R->okey[i] = keys[i].t;
    R->order[p->p0 + p->done] = keys[i].x, R->okey[p->p0 + p->done++] = keys[i].t;
  }
  for (size_t i = 0; i < g->nops; i++) {
    const jo_op *o = &g->ops[i];
    if ((o->kind == JO_WAIT || o->kind == JO_BLOCK) && o->job < 0 && o->queue >= 0 && o->queue <= R->nq) {
      const rq *p = &R->q[o->queue];
      uint32_t lo = 0, hi = p->np; /* the first of its jobs submitted after the wait began */
      while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (R->okey[p->p0 + mid] <= o->t0)
          lo = mid + 1;
        else
          hi = mid;
      }
      R->aux[i] = (int32_t)lo;
    }
  }
}

/* Work ops' time, the threads' own work between their ops included (the
 * caller's from the start to its stop; another thread's from its first op
 * to its last) (ns). */
static int64_t work_of(const replay *R) {
  const jo_graph *g = R->g;
  int64_t sum = 0;
  for (size_t k = 0; k < g->nex; k++) {
    const jo_exec *e = &g->ex[k];
    int64_t last = (int)k == g->caller || !e->no ? 0 : g->ops[e->o0].t0; /* another thread starts there */
    for (uint32_t i = 0; R->mode[k] != RM_BY_THREAD && i < e->no; i++) {
      const jo_op *o = &g->ops[e->o0 + i];
      if (o->kind <= JO_JOB && o->t1 > o->t0)
        sum += o->t1 - o->t0;
      if (!e->is_job && o->t0 > last)
        sum += o->t0 - last;
      last = o->t1;
    }
    if ((int)k == g->caller && g->stop > last)
      sum += g->stop - last;
  }
  return sum;
}

static void prepare(lua_State *L, replay *R, const jo_graph *g, jq_scratch *S) {
  memset(R, 0, sizeof *R);
  R->g = g;
  size_t n = g->nex;
  R->x = room(L, S, M_X, n, sizeof *R->x);
  R->info = room(L, S, M_INFO, n, sizeof *R->info);
  R->jobs = room(L, S, M_JOBS, n, sizeof *R->jobs);
  memset(R->jobs, 0, (n ? n : 1) * sizeof *R->jobs);
  R->mode = room(L, S, M_MODE, n, sizeof *R->mode);
  R->owner = room(L, S, M_OWNER, g->nops, sizeof *R->owner);
  for (size_t i = 0; i < g->nops; i++)
    R->owner[i] = -1;
  for (size_t k = 0; k < n; k++)
    for (uint32_t i = 0; i < g->ex[k].no; i++)
      R->owner[g->ex[k].o0 + i] = (int32_t)k;
  R->start = room(L, S, M_START, n, sizeof *R->start);
  R->w = room(L, S, M_W, n, sizeof *R->w);
  R->heap = room(L, S, M_HEAP, n, sizeof *R->heap);
  R->now = room(L, S, M_NOW, n, sizeof *R->now);
  R->aux = room(L, S, M_AUX, g->nops, sizeof *R->aux);
  prepare_jobs(R);
  prepare_order(L, R, S);
  R->work = work_of(R);
}

static void set_us(lua_State *L, const char *k, int64_t ns) {
  lua_pushnumber(L, (lua_Number)ns / 1e3);
  lua_setfield(L, -2, k);
}

/* The worker counts asked for (argument 2), or the default ones. */
static int worker_counts(lua_State *L, int32_t *ws) {
  static const int32_t dflt[] = {1, 2, 4, 8, 16};
  if (lua_isnoneornil(L, 2)) {
    memcpy(ws, dflt, sizeof dflt);
    return 5;
  }
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  luaL_argcheck(L, n >= 0 && n <= JQ_WHATIF_MAX, 2, "at most " JQ_STR(JQ_WHATIF_MAX) " worker counts");
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 2, i);
    int ok = 0;
    lua_Integer v = lua_tointegerx(L, -1, &ok);
    luaL_argcheck(L, ok && v >= 1 && v <= INT32_MAX, 2, "worker counts must be integers >= 1");
    ws[i - 1] = (int32_t)v;
    lua_pop(L, 1);
  }
  return (int)n;
}

/* whatif.queues: each queue's recorded workers, { {queue, workers} }. */
static void push_queues(lua_State *L, const jo_graph *g) {
  lua_createtable(L, g->nqueues, 0);
  for (int32_t q = 0; q < g->nqueues; q++) {
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, q + 1);
    lua_setfield(L, -2, "queue");
    lua_pushinteger(L, g->queue_workers[q]);
    lua_setfield(L, -2, "workers");
    lua_rawseti(L, -2, q + 1);
  }
  lua_setfield(L, -2, "queues");
}

int jq_ops_whatif(lua_State *L) {
  const jo_graph *g = jq_ops_check(L, 1);
  int32_t ws[JQ_WHATIF_MAX];
  int nw = worker_counts(L, ws);
  lua_settop(L, 2);
  jq_scratch *S = jq_scratch_new(L, M_N); /* 3 */
  replay R;
  prepare(L, &R, g, S);
  int partial = g->partial != 0;
  int64_t recorded = 0;
  for (int32_t q = 0; q < g->nqueues; q++)
    recorded += g->queue_workers[q];
  lua_createtable(L, 0, 9);
  lua_pushinteger(L, (lua_Integer)recorded);
  lua_setfield(L, -2, "recorded_workers");
  set_us(L, "recorded_us", g->stop);
  set_us(L, "work_us", R.work);
  lua_createtable(L, nw, 0);
  for (int i = 0; i < nw; i++) {
    int64_t t = run(&R, ws[i], &partial);
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, ws[i]);
    lua_setfield(L, -2, "workers");
    set_us(L, "predicted_us", t);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "predictions");
  set_us(L, "as_recorded_us", run(&R, W_RECORDED, &partial));
  push_queues(L, g);
  int64_t span = run(&R, 0, &partial);
  set_us(L, "span_us", span);
  if (span > 0) { /* the graph's parallelism: work over span */
    lua_pushnumber(L, (lua_Number)R.work / (lua_Number)span);
    lua_setfield(L, -2, "parallelism");
  }
  lua_pushboolean(L, partial);
  lua_setfield(L, -2, "partial");
  jq_scratch_free(S);
  return 1;
}
