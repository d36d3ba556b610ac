/*
 * queue.c - jobs, their graph, and who runs what next.
 *
 * No Lua API and no Lua header. Everything marked (mu) in queue.h happens
 * under q->mu; the trace events recorded here (arrows from a finished job to
 * its waiters, cancellations) go through the lock-free ring and take no lock
 * of their own.
 */
#include "queue/queue.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/array.h"
#include "record/session.h"

static _Atomic uint64_t next_job_id = 1; /* ids are never reused: flows key on them */
static _Atomic uint32_t next_edge = 1;
static _Atomic int next_queue_seq = 1;

#ifdef JQ_TESTING
_Atomic long jq_test_live_queues, jq_test_double_finishes;
_Atomic long jq_test_wakes, jq_test_parked, jq_test_marks;
_Atomic int jq_test_hold_takes, jq_test_holding;

void jq_test_set_next_queue_seq(int seq) {
  atomic_store(&next_queue_seq, seq);
}
#endif

/* q->incoming once the queue closes: lock-free publishers see it in the
 * same compare-and-swap that would push their job. */
static jq_job closed_marker;
#define JQ_CLOSED (&closed_marker)

jq_queue *jq_queue_new(int nworkers, const char *name, const char *path, const char *cpath) {
  size_t size = (sizeof(jq_queue) + 63) & ~(size_t)63;
  jq_queue *q = aligned_alloc(64, size); /* its cache-line groups stay apart */
  if (!q)
    return NULL;
  memset(q, 0, size);
  q->workers = calloc((size_t)nworkers + 1, sizeof(jq_worker));
  q->path = strdup(path);
  q->cpath = strdup(cpath);
  if (!q->workers || !q->path || !q->cpath) {
    free(q->workers);
    free(q->path);
    free(q->cpath);
    free(q);
    return NULL;
  }
  atomic_init(&q->refs, 1);
#ifdef JQ_TESTING
  atomic_fetch_add(&jq_test_live_queues, 1);
#endif
  q->owner_thread = pthread_self();
  pthread_mutexattr_t attr; /* held for a few hundred ns at a time: spin before sleeping */
  pthread_mutexattr_init(&attr);
#if defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
  pthread_mutex_init(&q->mu, &attr);
  pthread_mutexattr_destroy(&attr);
  pthread_cond_init(&q->done_cv, NULL);
  pthread_mutex_init(&q->holders_mu, NULL);
  q->nworkers = nworkers;
  long ncores = sysconf(_SC_NPROCESSORS_ONLN);
  q->ncores = ncores > 0 ? (int)ncores : 1;
  q->seq = atomic_fetch_add(&next_queue_seq, 1);
  snprintf(q->name, sizeof q->name, "%s", name ? name : "");
  for (int i = 0; i <= nworkers; i++) {
    q->workers[i].q = q;
    q->workers[i].index = i;
    pthread_cond_init(&q->workers[i].cv, NULL);
  }
  return q;
}

void jq_queue_ref(jq_queue *q) {
  atomic_fetch_add_explicit(&q->refs, 1, memory_order_relaxed);
}

void jq_queue_unref(jq_queue *q) {
  if (atomic_fetch_sub_explicit(&q->refs, 1, memory_order_acq_rel) != 1)
    return;
  for (int i = 0; i <= q->nworkers; i++)
    pthread_cond_destroy(&q->workers[i].cv);
  pthread_cond_destroy(&q->done_cv);
  pthread_mutex_destroy(&q->mu);
  pthread_mutex_destroy(&q->holders_mu);
  for (jq_job *list = atomic_exchange(&q->pool, NULL), *next; list; list = next) {
    next = list->next;
    free(list);
  }
  for (jq_job *list = q->stash, *next; list; list = next) {
    next = list->next;
    free(list);
  }
  jq_buf_free(&q->init);
  free(q->workers);
  free(q->path);
  free(q->cpath);
  free(q);
#ifdef JQ_TESTING
  atomic_fetch_sub(&jq_test_live_queues, 1);
#endif
}

/* A block for a job with `extra` bytes of inline payload: from q's pool
 * when the creating thread asks and it fits, else from malloc. */
static jq_job *block_new(jq_queue *q, size_t extra, int *pooled) {
  *pooled = sizeof(jq_job) + extra <= JQ_JOB_BLOCK;
  if (!*pooled)
    return malloc(sizeof(jq_job) + extra);
  if (pthread_equal(pthread_self(), q->owner_thread)) {
    if (!q->stash && atomic_load_explicit(&q->pool, memory_order_relaxed))
      q->stash = atomic_exchange_explicit(&q->pool, NULL, memory_order_acquire);
    jq_job *job = q->stash;
    if (job) {
      q->stash = job->next;
      atomic_fetch_sub_explicit(&q->pooled, 1, memory_order_relaxed);
      return job;
    }
  }
  return malloc(JQ_JOB_BLOCK);
}

/* Gives a job's block back: to its queue's pool while there is room. */
static void block_free(jq_queue *q, jq_job *job) {
  if (!job->pooled || atomic_load_explicit(&q->pooled, memory_order_relaxed) >= JQ_POOL_MAX) {
    free(job);
    return;
  }
  atomic_fetch_add_explicit(&q->pooled, 1, memory_order_relaxed);
  jq_job *head = atomic_load_explicit(&q->pool, memory_order_relaxed);
  do
    job->next = head;
  while (!atomic_compare_exchange_weak_explicit(&q->pool, &head, job, memory_order_release,
                                                memory_order_relaxed));
}

jq_job *jq_job_new(jq_queue *q, jq_buf *payload, const char *src, int line) {
  size_t extra = payload->borrowed ? payload->len : 0;
  int pooled;
  jq_job *job = block_new(q, extra, &pooled);
  if (!job)
    return NULL;
  memset(job, 0, sizeof *job);
  job->pooled = pooled;
  atomic_init(&job->refs, 1);
  jq_queue_ref(q);
  job->q = q;
  job->id = atomic_fetch_add_explicit(&next_job_id, 1, memory_order_relaxed);
  job->tag = jq_self.tag;
  job->run_tag = job->tag;
  job->worker = -1;
  size_t n = strlen(src);
  if (n >= sizeof job->src)
    n = sizeof job->src - 1;
  memcpy(job->src, src, n);
  job->src[n] = '\0';
  job->line = line;
  job->payload = *payload;
  if (payload->borrowed) { /* one block for the job and its payload */
    memcpy(job->inline_payload, payload->data, payload->len);
    job->payload.data = job->inline_payload;
    job->payload.cap = payload->len;
  }
  memset(payload, 0, sizeof *payload);
  return job;
}

void jq_job_ref(jq_job *job) {
  atomic_fetch_add_explicit(&job->refs, 1, memory_order_relaxed);
}

/* Jobs whose last reference went, to be freed by the outermost unref on
 * this thread: freeing one drops references it holds (its failed
 * dependency, job handles in its results), and a chain of those must not
 * recurse as deep as it is long. */
static _Thread_local jq_job *unref_pending;
static _Thread_local int unref_active;

/* (holders_mu) Takes a job off its queue's list of results holding handles. */
static void unlink_holder(jq_queue *q, jq_job *job) {
  if (job->hold_prev)
    job->hold_prev->hold_next = job->hold_next;
  else
    q->holders = job->hold_next;
  if (job->hold_next)
    job->hold_next->hold_prev = job->hold_prev;
  job->hold_prev = job->hold_next = NULL;
  job->on_holders = 0;
}

static void free_job(jq_job *job) {
  if (job->on_holders) { /* (set before its last reference went; the close clears it holding one) */
    pthread_mutex_lock(&job->q->holders_mu);
    unlink_holder(job->q, job);
    pthread_mutex_unlock(&job->q->holders_mu);
  }
  jq_buf_free(&job->payload);
  jq_buf_free(&job->result);
  if (job->failed_dep)
    jq_job_unref(job->failed_dep);
  if (job->raised_dep)
    jq_job_unref(job->raised_dep);
  free(job->dependants);
  free(job->waiters);
  jq_queue *q = job->q;
  block_free(q, job);
  jq_queue_unref(q);
}

void jq_job_unref(jq_job *job) {
  if (atomic_fetch_sub_explicit(&job->refs, 1, memory_order_acq_rel) != 1)
    return;
  job->next = unref_pending; /* no list holds it any more */
  unref_pending = job;
  if (unref_active)
    return;
  unref_active = 1;
  while ((job = unref_pending) != NULL) {
    unref_pending = job->next;
    free_job(job);
  }
  unref_active = 0;
}

void jq_job_set_cause(jq_job *job, jq_job *cause, int reason) {
  job->fail_reason = reason;
  jq_job_ref(cause);
  job->failed_dep = cause;
  if (cause->chain_root) { /* cause failed because of another: one more link */
    job->chain_root = cause->chain_root;
    job->chain_len = cause->chain_len + 1;
    memcpy(job->chain_tail, cause->chain_tail, sizeof job->chain_tail);
  } else { /* cause is where the chain starts */
    job->chain_root = cause;
    job->chain_len = 2;
    memset(job->chain_tail, 0, sizeof job->chain_tail);
    job->chain_tail[0] = cause->id;
  }
  if (job->chain_len <= JQ_CHAIN_TAIL)
    job->chain_tail[job->chain_len - 1] = job->id;
  if (reason == JQ_FAIL_DEPENDENCY) /* counted against the failure that stopped it */
    job->report_root = cause->fail_reason == JQ_FAIL_DEPENDENCY ? cause->report_root : cause;
}

/* (mu) The one place a job is marked as cancelled by its queue's close
 * (jq_queue_cancel, and a dependant that became ready only as its queue
 * closes): counted, for what close returns, and recorded as a `cancelled`
 * instant on the calling lane. */
static void mark_cancelled(jq_queue *q, jq_job *job) {
  job->fail_reason = JQ_FAIL_CLOSED;
  q->cancelled++;
  jq_ring_put(JQ_EV_CANCEL, 0, job->tag, 0, (int64_t)job->id, 0, 0); /* on the cancelling lane */
}

void jq_queue_cancel(jq_queue *q, jq_job *job) {
  mark_cancelled(q, job);
  jq_queue_finish(q, job, JQ_JOB_FAILED);
}

/* (mu) Takes a job off the list of unobserved failures; the caller gets
 * the list's reference. */
static void unlink_failure(jq_queue *q, jq_job *job) {
  if (job->fail_prev)
    job->fail_prev->fail_next = job->fail_next;
  else
    q->fail_head = job->fail_next;
  if (job->fail_next)
    job->fail_next->fail_prev = job->fail_prev;
  else
    q->fail_tail = job->fail_prev;
  job->fail_prev = job->fail_next = NULL;
  job->on_fail_list = 0;
}

/* (mu) A job that finished FAILED: an error of its own (or one it let
 * escape from a wait) goes on the list of unobserved failures; one that
 * did not run because a dependency failed is counted against the failure
 * that stopped it; a cancelled one is neither (a close was asked for). */
static void note_failure(jq_queue *q, jq_job *job) {
  if (job->fail_reason == JQ_FAIL_CLOSED)
    return;
  if (job->fail_reason == JQ_FAIL_DEPENDENCY) {
    if (job->report_root)
      job->report_root->not_run++;
    return;
  }
  if (q->fail_list_dropped) /* closed: nothing could report it */
    return;
  jq_job_ref(job);
  job->on_fail_list = 1;
  job->fail_next = NULL;
  job->fail_prev = q->fail_tail;
  if (q->fail_tail)
    q->fail_tail->fail_next = job;
  else
    q->fail_head = job;
  q->fail_tail = job;
}

void jq_queue_observe(jq_queue *q, jq_job *job) {
  /* Up the chain while links are unobserved: a failure's message carries
   * the error of each job it names. Each job is marked once, so a long
   * chain costs its length once in all. The links that the caller's
   * references keep alive are never freed here. */
  while (job && job->q == q && !job->observed && job->state == JQ_JOB_FAILED) {
    job->observed = 1;
    if (job->on_fail_list) {
      unlink_failure(q, job);
      jq_job_unref(job); /* the list's (the caller holds this job or a later link) */
    }
    int linked = job->fail_reason == JQ_FAIL_DEPENDENCY || job->fail_reason == JQ_FAIL_AWAITED;
    job = linked ? job->failed_dep : NULL;
  }
}

jq_job *jq_queue_take_failure(jq_queue *q) {
  jq_job *job = q->fail_head;
  if (job) {
    unlink_failure(q, job);
    job->observed = 1;
  }
  return job;
}

/* (mu) Wakes one parked worker, if any. */
static void wake_one(jq_queue *q) {
  for (int i = 0; i < q->nworkers; i++) {
    jq_worker *w = &q->workers[i];
    if (w->parked) {
      w->parked = 0;
#ifdef JQ_TESTING
      atomic_fetch_add(&jq_test_wakes, 1);
#endif
      pthread_cond_signal(&w->cv);
      return;
    }
  }
}

void jq_queue_wake_for_incoming(jq_queue *q) {
  jq_job *head = atomic_load(&q->incoming); /* after the caller's count of running: seq_cst */
  if (head && head != JQ_CLOSED && atomic_load(&q->nparked) > 0 && !q->spinning)
    wake_one(q);
}

/* (mu) Appends a job to the list head..tail, linked through `next` (the
 * ready list, a resume list). */
static void fifo_append(jq_job **head, jq_job **tail, jq_job *job) {
  job->next = NULL;
  if (*tail)
    (*tail)->next = job;
  else
    *head = job;
  *tail = job;
}

/* (mu) A job's state changes: the counts of waiting and started jobs follow. */
static void set_state(jq_queue *q, jq_job *job, int state) {
  q->deps_waiting -= job->state == JQ_JOB_WAITING;
  q->live += (state == JQ_JOB_RUNNING) - (job->state == JQ_JOB_RUNNING);
  job->state = state;
}

void jq_queue_counts(jq_queue *q, int self_running, long *ready, long *running, long *suspended) {
  long on = atomic_load_explicit(&q->running, memory_order_relaxed) - self_running;
  *running = on < 0 ? 0 : on;
  *suspended = q->live - *running;
  *ready = jq_queue_unfinished(q) - q->deps_waiting - q->live;
}

/* (mu) Appends to the ready list. */
static void append_ready(jq_queue *q, jq_job *job) {
  set_state(q, job, JQ_JOB_READY);
  fifo_append(&q->ready_head, &q->ready_tail, job);
  atomic_store_explicit(&q->ready_hint, 1, memory_order_relaxed);
}

/* (mu) Makes a job ready and sees that someone will run it. */
static void push_ready(jq_queue *q, jq_job *job) {
  append_ready(q, job);
  if (q->nworkers == 0)
    pthread_cond_broadcast(&q->done_cv); /* the caller runs everything */
  else if (!q->spinning) /* a spinning worker will take it: no wake-up call */
    wake_one(q);
}

/* (mu) Puts a job whose coroutine can continue on its worker's resume list. */
static void push_resume(jq_queue *q, jq_job *job) {
  jq_worker *w = &q->workers[job->worker];
  fifo_append(&w->resume_head, &w->resume_tail, job);
  atomic_store_explicit(&w->resume_hint, 1, memory_order_relaxed);
  if (w->index == q->nworkers) {
    pthread_cond_broadcast(&q->done_cv);
  } else if (w->parked) {
    w->parked = 0;
    pthread_cond_signal(&w->cv);
  }
}

void jq_queue_requeue(jq_worker *w, jq_job *job) {
  job->yielded = 1;
  push_resume(w->q, job);
}

/* (mu) Puts a published job on the list of unfinished ones (close cancels
 * what is left there). */
static void link_unfinished(jq_queue *q, jq_job *job) {
  job->all_prev = NULL;
  job->all_next = q->all_head;
  if (q->all_head)
    q->all_head->all_prev = job;
  q->all_head = job;
}

/* (mu) Moves a list taken off `incoming` to the ready list, oldest first. */
static void move_incoming(jq_queue *q, jq_job *list) {
  jq_job *fifo = NULL;
  while (list) { /* the stack is newest first */
    jq_job *next = list->next;
    list->next = fifo;
    fifo = list;
    list = next;
  }
  while (fifo) {
    jq_job *job = fifo;
    fifo = fifo->next;
    link_unfinished(q, job);
    append_ready(q, job); /* the drainer takes work next; take() passes wake-ups on */
  }
}

/* (mu) Moves lock-free submissions to the ready list. */
static void drain_incoming(jq_queue *q) {
  jq_job *head = atomic_load_explicit(&q->incoming, memory_order_relaxed);
  if (!head || head == JQ_CLOSED) /* JQ_CLOSED is only set under mu */
    return;
  move_incoming(q, atomic_exchange_explicit(&q->incoming, NULL, memory_order_acquire));
}

/* A job without dependencies on a queue with workers: no mutex. A close
 * swaps JQ_CLOSED into `incoming` (draining what was there), so the push
 * either lands before the close and is drained by it, or sees JQ_CLOSED. */
static int publish_lock_free(jq_queue *q, jq_job *job) {
  jq_job *head = atomic_load_explicit(&q->incoming, memory_order_relaxed);
  if (head == JQ_CLOSED)
    return -1;
  jq_job_ref(job); /* the queue's reference, dropped when it finishes */
  atomic_fetch_add_explicit(&q->submitted, 1, memory_order_relaxed);
  job->state = JQ_JOB_READY;
  do {
    if (head == JQ_CLOSED) { /* closed meanwhile: take it all back */
      atomic_fetch_sub_explicit(&q->submitted, 1, memory_order_relaxed);
      job->state = JQ_JOB_WAITING;
      jq_job_unref(job);
      return -1;
    }
    job->next = head;
  } while (!atomic_compare_exchange_weak_explicit(&q->incoming, &head, job, memory_order_seq_cst,
                                                  memory_order_relaxed));
  /* Wake a parked worker only if no worker is awake and idle: an awake one
   * that runs nothing is spinning or about to look for work, and a worker
   * going to park re-checks `incoming` after counting itself parked. */
  int parked = atomic_load(&q->nparked);
  if (parked > 0 && q->nworkers - parked - atomic_load(&q->running) <= 0) {
    /* Whoever holds mu may be the worker going to park, which checked
     * `incoming` before this push: leaving the wake-up to a running
     * worker's next take lost it whenever that worker's job ran long (a
     * spec found a ready job waiting, with a worker parked, until an
     * unrelated job ended; forever when that job waited for it). So wait
     * for mu: its holders keep it for bookkeeping only, and the flag lets
     * a take that gets there first pass the wake-up on. */
    if (pthread_mutex_trylock(&q->mu) != 0) {
      atomic_store(&q->wake_pending, 1);
      pthread_mutex_lock(&q->mu);
    }
    atomic_store_explicit(&q->wake_pending, 0, memory_order_relaxed);
    wake_one(q);
    pthread_mutex_unlock(&q->mu);
  }
  return 0;
}

int jq_queue_publish(jq_queue *q, jq_job *job, jq_job **deps, int ndeps) {
  if (ndeps == 0 && q->nworkers > 0)
    return publish_lock_free(q, job);
  pthread_mutex_lock(&q->mu);
  if (q->closing) {
    pthread_mutex_unlock(&q->mu);
    return -1;
  }
  jq_job_ref(job); /* the queue's reference, dropped when it finishes */
  atomic_fetch_add_explicit(&q->submitted, 1, memory_order_relaxed);
  link_unfinished(q, job);
  job->state = JQ_JOB_WAITING;
  q->deps_waiting++; /* until set_state moves it on */
  for (int i = 0; i < ndeps; i++) {
    jq_job *d = deps[i];
    if (d->state == JQ_JOB_DONE)
      continue;
    if (d->state == JQ_JOB_FAILED || jq_array_push((void **)&d->dependants, &d->ndependants,
                                             &d->capdependants, sizeof job, &job) != 0) {
      /* A failed dependency (or no memory to wait for one): fails without running. */
      jq_job_set_cause(job, d, JQ_FAIL_DEPENDENCY);
      break;
    }
    jq_job_ref(job);
    job->deps_left++;
  }
  if (job->fail_reason) {
    job->deps_left = 0; /* dependants lists may still name it: finish skips it then */
    jq_queue_finish(q, job, JQ_JOB_FAILED);
  } else if (job->deps_left == 0) {
    push_ready(q, job);
  }
  pthread_mutex_unlock(&q->mu);
  return 0;
}

jq_job *jq_queue_take(jq_queue *q, jq_worker *w, int *resume) {
  /* A publisher that found mu taken asked for a wake-up: pass it on when
   * ready work is left after this take. */
  int pending = atomic_load(&q->wake_pending) && atomic_exchange(&q->wake_pending, 0);
  drain_incoming(q);
  jq_job *job = w->resume_head;
  /* Cooperative yields take turns with ready jobs: a job that yields in a
   * loop never starves the queued ones (nor they it). */
  if (job && job->yielded && w->took_yielded && q->ready_head)
    job = NULL;
  if (job) {
    w->took_yielded = job->yielded;
    job->yielded = 0;
    if (pending && q->ready_head && !q->spinning)
      wake_one(q);
    w->resume_head = job->next;
    if (!w->resume_head) {
      w->resume_tail = NULL;
      atomic_store_explicit(&w->resume_hint, 0, memory_order_relaxed);
    }
    *resume = 1;
    return job;
  }
  job = q->ready_head;
  if (job) {
    q->ready_head = job->next;
    if (!q->ready_head) {
      q->ready_tail = NULL;
      atomic_store_explicit(&q->ready_hint, 0, memory_order_relaxed);
    }
    set_state(q, job, JQ_JOB_RUNNING);
    job->worker = w->index;
    w->took_yielded = 0;
    *resume = 0;
    if (q->ready_head && !q->spinning)
      wake_one(q); /* more work than this worker: pass the wake-up on */
  }
  return job;
}

/* (mu) A job that finished with a result (or error) holding job handles
 * goes on its queue's list, for the close to release; after the close, it
 * is released at once. */
static void hold_result(jq_queue *q, jq_job *job) {
  job->holds_handles = 1;
  pthread_mutex_lock(&q->holders_mu);
  int released = q->holders_released;
  if (!released) {
    job->hold_prev = NULL;
    job->hold_next = q->holders;
    if (q->holders)
      q->holders->hold_prev = job;
    q->holders = job;
    job->on_holders = 1;
  }
  pthread_mutex_unlock(&q->holders_mu);
  if (released) {
    job->result_released = 1;
    jq_buf_free(&job->result);
  }
}

/* Waiters of another queue whose awaited job a finish on this thread
 * ended, linked through remote_next (each holds the waiter's reference). */
static _Thread_local jq_job *remote_resumes;

int jq_queue_remote_pending(void) {
  return remote_resumes != NULL;
}

void jq_queue_resume_remote(void) {
  while (remote_resumes) {
    jq_job *job = remote_resumes;
    remote_resumes = job->remote_next;
    job->remote_next = NULL;
    jq_queue *q = job->q; /* alive: the job holds it */
    pthread_mutex_lock(&q->mu);
    if (!jq_job_finished(job)) { /* a waiter cancelled by its queue's close is gone */
      job->await_remote = 0;
      /* Its awaited job's arrow, as a same-queue finish records it: the
       * edge was set by its await, and it runs no slice until resumed. */
      jq_ring_put(JQ_EV_FLOW, 0, job->remote_tag, job->resume_edge, (int64_t)job->id, 0, 0);
      push_resume(q, job);
    }
    pthread_mutex_unlock(&q->mu);
    jq_job_unref(job);
  }
}

int jq_queue_awaits_remote(jq_queue *q) {
  for (jq_job *job = q->all_head; job; job = job->all_next)
    if (job->await_remote)
      return 1;
  return 0;
}

jq_job *jq_queue_some_unfinished(jq_queue *q) {
  if (q->all_head)
    return q->all_head;
  /* Only a drain, under mu, unlinks what was pushed: the stack holds still. */
  jq_job *head = atomic_load_explicit(&q->incoming, memory_order_acquire);
  return head == JQ_CLOSED ? NULL : head;
}

/* (mu) The jobs awaiting `job`, which just finished: those of q resumed
 * now (with their arrow), those of other queues listed for
 * jq_queue_resume_remote (the list takes the reference). */
static void resume_waiters(jq_queue *q, jq_job *job) {
  for (int i = 0; i < job->nwaiters; i++) {
    jq_waiter *wt = &job->waiters[i];
    if (wt->job->q != q) { /* resumed once this thread holds no mutex; the list takes the reference */
      wt->job->remote_tag = job->tag;
      wt->job->remote_next = remote_resumes;
      remote_resumes = wt->job;
      continue;
    }
    if (!jq_job_finished(wt->job)) { /* a waiter cancelled by a close is gone */
      jq_ring_put(JQ_EV_FLOW, 0, job->tag, wt->edge, (int64_t)wt->job->id, 0, 0);
      push_resume(q, wt->job);
    }
    jq_job_unref(wt->job);
  }
  job->nwaiters = 0;
}

/* (mu) One job reached its end; dependants and waiters are handled by the
 * caller's worklist so a long chain does not recurse. Returns -1, doing
 * nothing, if it had finished already (a bug: counted in testing builds). */
static int finish_one(jq_queue *q, jq_job *job, int state, jq_job ***work, int *nwork,
                      int *capwork) {
  if (jq_job_finished(job)) {
#ifdef JQ_TESTING
    atomic_fetch_add(&jq_test_double_finishes, 1);
#endif
    return -1;
  }
  set_state(q, job, state);
  if (state == JQ_JOB_FAILED)
    note_failure(q, job);
  /* A job that never started drops its function and arguments now: job
   * handles among them could hold a cycle (a started job dropped them as
   * it started; nobody else touches an unstarted job's payload). */
  jq_buf_free(&job->payload);
  if (job->result.nhandles > 0)
    hold_result(q, job);
  atomic_store_explicit(&q->finished, atomic_load_explicit(&q->finished, memory_order_relaxed) + 1,
                        memory_order_relaxed); /* only written under mu */
  atomic_fetch_add_explicit(&q->finished_gen, 1, memory_order_relaxed);
  if (job->all_prev)
    job->all_prev->all_next = job->all_next;
  else
    q->all_head = job->all_next;
  if (job->all_next)
    job->all_next->all_prev = job->all_prev;
  job->all_prev = job->all_next = NULL;
  resume_waiters(q, job);
  for (int i = 0; i < job->ndependants; i++) {
    jq_job *d = job->dependants[i];
    /* Finished, or already on the worklist to fail (it lists this job
     * more than once, or another dependency failed first). */
    if (d->state != JQ_JOB_WAITING || d->fail_reason != JQ_FAIL_NONE) {
      jq_job_unref(d);
      continue;
    }
    if (state == JQ_JOB_FAILED) {
      jq_job_set_cause(d, job, JQ_FAIL_DEPENDENCY);
      if (jq_array_push((void **)work, nwork, capwork, sizeof d, &d) != 0)
        set_state(q, d, JQ_JOB_FAILED); /* no memory for the worklist: at least never runs */
      else
        continue; /* the worklist owns the reference now */
    } else {
      int ready = --d->deps_left == 0;
      if (jq_ring_armed()) /* the arrow of this dependency, and the dependant's ready time */
        jq_ring_put(JQ_EV_DEP, ready ? JQ_DEP_READY : 0, job->tag,
                    atomic_fetch_add_explicit(&next_edge, 1, memory_order_relaxed), (int64_t)d->id,
                    0, job->id);
      if (!ready) {
        jq_job_unref(d);
        continue;
      }
      if (!q->closing) {
        push_ready(q, d);
      } else {
        mark_cancelled(q, d); /* ready only now that its queue closes */
        if (jq_array_push((void **)work, nwork, capwork, sizeof d, &d) == 0)
          continue;
        set_state(q, d, JQ_JOB_FAILED);
      }
    }
    jq_job_unref(d);
  }
  job->ndependants = 0;
  /* Wake blocked threads only for what they wait for: a wait_all would
   * otherwise wake, look and sleep again at every job. */
  if (job->blocked_waiters || (q->waiting_all && jq_queue_unfinished(q) == 0))
    pthread_cond_broadcast(&q->done_cv);
  return 0;
}

void jq_queue_finish(jq_queue *q, jq_job *job, int state) {
  jq_job **work = NULL;
  int nwork = 0, capwork = 0;
  if (finish_one(q, job, state, &work, &nwork, &capwork) == 0)
    jq_job_unref(job); /* the queue's reference */
  while (nwork > 0) {
    jq_job *d = work[--nwork];
    if (d->state == JQ_JOB_WAITING && finish_one(q, d, JQ_JOB_FAILED, &work, &nwork, &capwork) == 0)
      jq_job_unref(d); /* the queue's reference */
    jq_job_unref(d); /* the worklist's */
  }
  free(work);
}

int jq_queue_await(jq_job *job, jq_job *waiter) {
  if (jq_job_finished(job))
    return 1;
  jq_waiter wt = {waiter, atomic_fetch_add_explicit(&next_edge, 1, memory_order_relaxed)};
  if (jq_array_push((void **)&job->waiters, &job->nwaiters, &job->capwaiters, sizeof wt, &wt) != 0)
    return -1;
  jq_job_ref(waiter);
  waiter->resume_edge = wt.edge;
  waiter->awaited = job->id;
  return 0;
}

void jq_queue_begin_close(jq_queue *q) {
  atomic_store(&q->closing, 1);
  jq_job *pushed = atomic_exchange(&q->incoming, JQ_CLOSED); /* no more pushes after these */
  if (pushed != JQ_CLOSED)
    move_incoming(q, pushed);
  /* Every job not started yet is cancelled: those ready, and those waiting
   * for dependencies (marked first, so that none of them fails as the
   * dependant of another instead). They go on one list through `next`
   * (the ready list's link: that list is emptied here). */
  jq_job *cancel = NULL;
  for (jq_job *job = q->all_head; job; job = job->all_next) {
    if ((job->state == JQ_JOB_READY || job->state == JQ_JOB_WAITING) &&
        job->fail_reason == JQ_FAIL_NONE) {
      mark_cancelled(q, job);
      job->next = cancel;
      cancel = job;
    }
  }
  q->ready_head = q->ready_tail = NULL;
  while (cancel) { /* the queue's reference keeps each alive until it finishes */
    jq_job *job = cancel;
    cancel = job->next;
    job->deps_left = 0;
    jq_queue_finish(q, job, JQ_JOB_FAILED);
  }
  atomic_store_explicit(&q->ready_hint, 0, memory_order_relaxed);
  for (int i = 0; i < q->nworkers; i++) {
    q->workers[i].parked = 0;
    pthread_cond_signal(&q->workers[i].cv);
  }
  pthread_cond_broadcast(&q->done_cv);
}

jq_job *jq_queue_suspended_on(jq_queue *q, jq_worker *w) {
  for (jq_job *job = q->all_head; job; job = job->all_next)
    if (job->state == JQ_JOB_RUNNING && job->worker == w->index && !job->on_cpu)
      return job;
  return NULL;
}

void jq_queue_fail_rest(jq_queue *q) {
  for (;;) { /* from the head again after each: a finish unlinks its dependants too */
    jq_job *job = q->all_head;
    while (job && job->on_cpu)
      job = job->all_next;
    if (!job)
      return;
    jq_queue_cancel(q, job);
  }
}

/* Whether it took a reference to `job`: not when its last one went
 * already (it is being freed, and leaves the holders' list itself). */
static int try_ref(jq_job *job) {
  int refs = atomic_load_explicit(&job->refs, memory_order_relaxed);
  while (refs > 0 && !atomic_compare_exchange_weak_explicit(&job->refs, &refs, refs + 1,
                                                            memory_order_relaxed,
                                                            memory_order_relaxed))
    ;
  return refs > 0;
}

/* ---- cycles of results that hold handles ----
 * At a close, the results of the queue's jobs that hold job handles are
 * searched for cycles (Tarjan's strongly connected components, without
 * recursion) through the handles in results, whatever queue the jobs are
 * on; the queue's results on a cycle are released. A cycle is complete once
 * its last job finished, and that job's queue closes after that: its close
 * finds the cycle. One search runs at a time (walk_mu, taken with no other
 * lock held; it takes queues' mu and holders_mu inside). */
static pthread_mutex_t walk_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t walk_gen; /* (walk_mu) this search's mark on the jobs it reached */

typedef struct walk_node {
  jq_job *job;   /* holds a reference during the search */
  int index, low;
  int next_edge; /* the next handle of its result to follow */
  int nedges;    /* handles in its result (0: not read, so not pinned) */
  int on_stack, self_loop;
} walk_node;

typedef struct walk {
  walk_node *nodes;
  int n, cap;
  int *stack, nstack, capstack; /* Tarjan's stack */
  int *path, npath, cappath;    /* the depth-first path */
} walk;

/* Pins the result of `job` if it can be read for handles: finished, holding
 * some, not released. */
static int walk_pin(jq_job *job) {
  pthread_mutex_lock(&job->q->mu);
  int ok = jq_job_finished(job) && job->holds_handles && !job->result_released;
  if (ok)
    job->result_pins++;
  pthread_mutex_unlock(&job->q->mu);
  return ok;
}

/* A job reached (alive: held by a pinned result, or by the caller). Returns
 * -1 without memory. */
static int walk_visit(walk *w, jq_job *job) {
  walk_node nd = {job, w->n, w->n, 0, 0, 1, 0};
  if (jq_array_push((void **)&w->stack, &w->nstack, &w->capstack, sizeof(int), &nd.index) != 0 ||
      jq_array_push((void **)&w->path, &w->npath, &w->cappath, sizeof(int), &nd.index) != 0 ||
      jq_array_push((void **)&w->nodes, &w->n, &w->cap, sizeof nd, &nd) != 0)
    return -1; /* the search stops: only the nodes made are let go */
  jq_job_ref(job);
  job->walk_gen = walk_gen;
  job->walk_slot = nd.index;
  job->walk_cyclic = 0;
  w->nodes[nd.index].nedges = walk_pin(job) ? job->result.nhandles : 0;
  return 0;
}

/* Searches from `root`, marking walk_cyclic on every job found on a cycle.
 * Returns -1 without memory. */
static int walk_from(walk *w, jq_job *root) {
  if (root->walk_gen == walk_gen)
    return 0;
  if (walk_visit(w, root) != 0)
    return -1;
  while (w->npath > 0) {
    int v = w->path[w->npath - 1];
    walk_node *nv = &w->nodes[v];
    if (nv->next_edge < nv->nedges) {
      jq_job *t = nv->job->result.handles[nv->next_edge++];
      if (t->walk_gen != walk_gen) {
        if (walk_visit(w, t) != 0)
          return -1;
      } else {
        walk_node *nt = &w->nodes[t->walk_slot];
        if (nt->on_stack && nt->index < nv->low)
          nv->low = nt->index;
        if (t->walk_slot == v)
          nv->self_loop = 1;
      }
      continue;
    }
    w->npath--;
    if (w->npath > 0) {
      walk_node *parent = &w->nodes[w->path[w->npath - 1]];
      if (nv->low < parent->low)
        parent->low = nv->low;
    }
    if (nv->low == nv->index) { /* v roots a component: what is above it on the stack */
      int from = w->nstack;
      while (w->stack[from - 1] != v)
        from--;
      from--;
      int cyclic = w->nstack - from > 1 || nv->self_loop;
      for (int i = from; i < w->nstack; i++) {
        w->nodes[w->stack[i]].on_stack = 0;
        w->nodes[w->stack[i]].job->walk_cyclic = cyclic;
      }
      w->nstack = from;
    }
  }
  return 0;
}

/* (walk_mu) Lets go of what the search holds. */
static void walk_free(walk *w) {
  for (int i = 0; i < w->n; i++) {
    if (w->nodes[i].nedges > 0)
      jq_result_unpin(w->nodes[i].job);
    jq_job_unref(w->nodes[i].job);
  }
  free(w->nodes);
  free(w->stack);
  free(w->path);
}

/* The end of a close: its jobs' results that hold job handles leave the
 * list, and those on a cycle (all of them, without memory for the search)
 * are released (one that a reader is decoding, at that reader's end). */
static void release_holders(jq_queue *q) {
  jq_job *taken = NULL;
  pthread_mutex_lock(&q->holders_mu);
  q->holders_released = 1;
  for (jq_job *job = q->holders, *next; job; job = next) {
    next = job->hold_next;
    if (try_ref(job)) {
      unlink_holder(q, job);
      job->hold_next = taken;
      taken = job;
    }
  }
  pthread_mutex_unlock(&q->holders_mu);
  if (!taken)
    return;
  walk w = {NULL, 0, 0, NULL, 0, 0, NULL, 0, 0};
  pthread_mutex_lock(&walk_mu);
  walk_gen++;
  int oom = 0;
  for (jq_job *job = taken; job && !oom; job = job->hold_next)
    oom = walk_from(&w, job) != 0;
  for (jq_job *job = taken; job; job = job->hold_next)
    job->on_holders = oom || (job->walk_gen == walk_gen && job->walk_cyclic); /* (reused: off the list) */
  walk_free(&w);
  pthread_mutex_unlock(&walk_mu);
  while (taken) {
    jq_job *job = taken;
    taken = job->hold_next;
    job->hold_next = NULL;
    int release = job->on_holders;
    job->on_holders = 0;
    jq_buf result = JQ_BUF_INIT;
    if (release) {
      pthread_mutex_lock(&q->mu);
      job->result_released = 1;
      if (job->result_pins == 0) {
        result = job->result;
        memset(&job->result, 0, sizeof job->result);
      }
      pthread_mutex_unlock(&q->mu);
    }
    jq_buf_free(&result); /* outside mu: it may free jobs of other queues, and those queues */
    jq_job_unref(job);
  }
}

int jq_result_pin(jq_job *job) {
  if (!job->holds_handles)
    return 0;
  pthread_mutex_lock(&job->q->mu);
  int released = job->result_released;
  if (!released)
    job->result_pins++;
  pthread_mutex_unlock(&job->q->mu);
  return released ? -1 : 0;
}

void jq_result_unpin(jq_job *job) {
  if (!job->holds_handles)
    return;
  jq_buf result = JQ_BUF_INIT;
  pthread_mutex_lock(&job->q->mu);
  if (--job->result_pins == 0 && job->result_released) {
    result = job->result;
    memset(&job->result, 0, sizeof job->result);
  }
  pthread_mutex_unlock(&job->q->mu);
  jq_buf_free(&result);
}

long jq_queue_close(jq_queue *q) {
  pthread_mutex_lock(&q->mu);
  jq_queue_fail_rest(q); /* waiting on jobs that can no longer run */
  long cancelled = q->cancelled;
  /* Failures nobody observed: nothing can report them any more, and each
   * holds its job (which holds the queue). Dropped outside mu: a job freed
   * here may drop the last reference to another queue. */
  jq_job *failed = q->fail_head;
  for (jq_job *job = failed; job; job = job->fail_next) {
    job->on_fail_list = 0;
    job->observed = 1;
  }
  q->fail_head = q->fail_tail = NULL;
  q->fail_list_dropped = 1;
  pthread_mutex_unlock(&q->mu);
  jq_queue_resume_remote(); /* waiters on other queues of the jobs failed here */
  while (failed) {
    jq_job *next = failed->fail_next;
    failed->fail_prev = failed->fail_next = NULL;
    jq_job_unref(failed);
    failed = next;
  }
  release_holders(q);
  return cancelled;
}

int jq_spin_until(int (*ready)(void *), void *arg, int yield_core) {
  uint64_t until = jq_clock_monotonic_ns() + JQ_SPIN_NS;
  for (int i = 0;; i++) {
    if (ready(arg))
      return 1;
    if ((i & 63) == 63 && jq_clock_monotonic_ns() > until)
      return 0;
    if (yield_core && (i & 15) == 15) {
      sched_yield(); /* let a thread waiting for this core (the submitter) run */
    } else {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }
}
