/*
 * queue.h - the job graph and its scheduling.
 *
 * Owns: jobs (state, payload, result, dependants, waiters), the ready list,
 * each worker's scheduling fields and resume list, and the queue's single
 * mutex.
 * Must not: call Lua or include a Lua header (worker.c runs jobs in
 * lua_States and keeps the runner's fields; lua_queue.c is the binding), or
 * allocate on the scheduling path beyond growing a job's dependant and
 * waiter arrays.
 * Thread safety: every field marked (mu) is read and written under q->mu;
 * a job's refs are atomic; payloads are touched by one thread at a time.
 */
#ifndef JQ_QUEUE_H
#define JQ_QUEUE_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "queue/codec.h"

enum { JQ_JOB_WAITING, JQ_JOB_READY, JQ_JOB_RUNNING, JQ_JOB_DONE, JQ_JOB_FAILED };

/* Why a job failed without an error value of its own: a dependency failed,
 * its queue closed, or it raised, unchanged, the error of a job it waited
 * for (so a chain of failures is stored as links, not as ever longer text),
 * or its worker ran out of memory where a Lua error could not be stored. */
enum { JQ_FAIL_NONE, JQ_FAIL_DEPENDENCY, JQ_FAIL_CLOSED, JQ_FAIL_AWAITED, JQ_FAIL_NOMEM };

/* How many links next to the root a failure chain remembers. */
#define JQ_CHAIN_TAIL 3

typedef struct jq_waiter {
  struct jq_job *job; /* the job that awaits (holds a reference) */
  uint32_t edge;      /* flow id of the arrow from the awaited job's end */
} jq_waiter;

typedef struct jq_job {
  /* Set by the submitter, then only read. */
  struct jq_queue *q;   /* holds a queue reference */
  uint64_t id;          /* process-wide, never reused */
  jq_buf payload;       /* function and arguments, until it starts */
  char src[60];         /* where it was submitted: chunk (short_src) */
  int line;             /* ... and line, or -1 */
  int pooled;           /* a JQ_JOB_BLOCK block: goes back to its queue's pool */
  /* Written after publishing, by whoever runs or finishes it. */
  _Atomic int refs;
  uint16_t tag;         /* op tag at submit */
  /* (mu) */
  int blocked_waiters;  /* threads blocked in wait() on it (not jobs: those are waiters) */
  int state;
  int fail_reason;       /* JQ_FAIL_* when it failed without running */
  int worker;            /* where its coroutine lives once started, else -1 */
  int deps_left;
  int on_cpu;            /* a slice of it is running now: nobody else may finish it */
  int yielded;           /* on a resume list after a cooperative yield */
  struct jq_job *failed_dep; /* for JQ_FAIL_DEPENDENCY and _AWAITED (holds a reference) */
  /* A failure chain (failed_dep set): the job where it started (kept alive
   * through the failed_dep links), how many jobs it has, this one included,
   * and the ids of the first jobs from the root on (root first). Written
   * before the job finishes, then only read. */
  struct jq_job *chain_root;
  long chain_len;
  uint64_t chain_tail[JQ_CHAIN_TAIL];
  /* A JQ_FAIL_DEPENDENCY failure: the nearest job up the chain that failed
   * for another reason (kept alive through the failed_dep links). Written
   * before the job finishes, then only read. */
  struct jq_job *report_root;
  /* (mu) Unobserved failures (see the queue's fail_head): whether a wait,
   * pwait or status returned its error (or a report listed it), whether it
   * is on its queue's list of failures, and how many jobs did not run
   * because it failed (its dependants, theirs, ...). */
  int observed;
  int on_fail_list;
  long not_run;
  struct jq_job *fail_prev, *fail_next;
  struct jq_job *next;   /* link in the ready list or a resume list */
  struct jq_job *all_prev, *all_next; /* the queue's unfinished jobs */
  struct jq_job **dependants; /* each holds a reference */
  int ndependants, capdependants;
  jq_waiter *waiters;
  int nwaiters, capwaiters;
  /* A job that awaits a job of another queue: whether it does now (mu of
   * its own queue), and, once that job ended, the link in the finishing
   * thread's list of waiters to resume (jq_queue_resume_remote) with the
   * ended job's tag (written under the other queue's mu). */
  int await_remote;
  struct jq_job *remote_next;
  uint16_t remote_tag;
  /* Written by the thread running it, read by readers after it finished. */
  jq_buf result;         /* results, or the error value */
  /* A result (or error) holding job handles can close a cycle of jobs that
   * hold each other, which no reference count frees: the close of the
   * queue releases it when it is on such a cycle. holds_handles is set
   * when it finishes, then only read. (mu) readers decoding it now, and
   * whether the close released it (freed at the last reader's end).
   * (holders_mu) its queue's list. (walk_mu, queue.c) the cycle search's. */
  int holds_handles;
  int result_pins, result_released;
  int on_holders;
  struct jq_job *hold_prev, *hold_next;
  uint64_t walk_gen;
  int walk_slot, walk_cyclic;
  /* The worker that runs it only. */
  int coref;             /* registry ref of its coroutine (set when it starts) */
  uint32_t resume_edge;  /* flow into the slice that resumes it */
  uint64_t yield_ticks;  /* when it last yielded to await */
  uint64_t awaited;      /* job id it awaits */
  struct jq_job *raised_dep; /* the failed job whose error it last got from a wait or pwait
                              * (holds a reference), and a hash of that message */
  uint64_t raised_hash;
  uint64_t span_depth;   /* spans open in it (profile_begin), by the thread running it */
  uint16_t run_tag;      /* the op tag current in it when it last yielded (its
                          * profile_tag survives awaits); `tag` until then */
  char inline_payload[]; /* a small payload lives in the job's own block */
} jq_job;

typedef struct jq_worker {
  struct jq_queue *q;
  int index;             /* 0..n-1; n is the caller */
  pthread_t thread;
  int started;
  /* (mu) */
  pthread_cond_t cv;
  int parked;
  jq_job *resume_head, *resume_tail; /* jobs whose coroutine may continue */
  _Atomic int resume_hint; /* resume list non-empty (read without mu) */
  int suspended;         /* coroutines alive in this state awaiting or yielded */
  int took_yielded;      /* its last take resumed a cooperative yield: a ready job goes next */
} jq_worker;

typedef struct jq_queue {
  /* Publishers' line: lock-free submits touch only this one, so a submit
   * does not miss in the cache on what the workers write per job. */
  alignas(64) _Atomic(jq_job *) incoming; /* jobs submitted without dependencies,
                                      * pushed without mu (a LIFO stack); whoever
                                      * takes work under mu moves them to the ready
                                      * list in order. JQ_CLOSED once closing. */
  _Atomic long submitted; /* jobs ever published */
  /* Freed job blocks, pushed by whichever thread drops a job last; the
   * creating thread takes them back for its next submits, so job blocks do
   * not cross threads through malloc (whose arena lock they would fight
   * over). */
  alignas(64) _Atomic(jq_job *) pool;
  _Atomic int pooled;     /* blocks in pool and stash */
  jq_job *stash;          /* taken from pool; the creating thread's own */
  pthread_t owner_thread; /* the thread that created the queue */
  /* Hints read by publishers, written by workers when they park or run. */
  alignas(64) _Atomic int nparked; /* workers parked */
  _Atomic int running;    /* workers running a job slice */
  _Atomic int wake_pending; /* a publisher found mu taken: the next take wakes a worker */
  alignas(64) _Atomic int refs;
  pthread_mutex_t mu;
  pthread_cond_t done_cv; /* the caller waits here */
  /* (mu) */
  jq_job *ready_head, *ready_tail;
  _Atomic int ready_hint; /* ready list non-empty (read without mu by spinners) */
  jq_job *all_head;      /* every published, unfinished job */
  _Atomic int closing;   /* written under mu; read without it too */
  _Atomic long finished; /* jobs finished (written under mu): submitted - finished are unfinished */
  int waiting_all;       /* threads blocked in wait_all */
  long deps_waiting;     /* jobs published that wait for dependencies (JQ_JOB_WAITING) */
  long live;             /* jobs started and not finished (JQ_JOB_RUNNING) */
  /* Jobs that failed with an error of their own (or one they let escape
   * from a wait) that nobody observed yet, oldest first; each holds a
   * reference. wait_all and pwait_all report and empty it, close drops it. */
  jq_job *fail_head, *fail_tail;
  int fail_list_dropped; /* close dropped the list: later failures are not kept */
  long cancelled;        /* jobs its close failed as cancelled */
  _Atomic int spinning;  /* a worker is spinning for work (written under mu) */
  _Atomic unsigned finished_gen; /* bumped at each finish (read without mu) */
  int inits_done;
  char init_error[512];
  int start_failed;      /* init_error says why a worker could not start, not why init failed */
  /* Fixed at creation. */
  int nworkers;
  int ncores;            /* online cores when it was made */
  jq_worker *workers;    /* nworkers + 1 entries: the last is the caller */
  jq_buf init;
  const jq_handle_ops *handles; /* how job handles cross states (set by the binding) */
  char *path, *cpath;
  char name[48];
  int seq;               /* creation order, for lane order */
  const void *owner;     /* main thread of the creating state */
  /* Jobs whose result holds job handles (see jq_job's holds_handles), not
   * referenced by the list: a job leaves it when freed. Its own mutex,
   * taken last (a job may be freed under any queue's mu), never with
   * another lock taken while held. */
  pthread_mutex_t holders_mu;
  jq_job *holders;
  int holders_released;  /* the close released them: later ones go at once */
} jq_queue;

/* The most workers a queue can have. */
#define JQ_MAX_WORKERS 256

/* Lifetime. */
void jq_job_ref(jq_job *job);
void jq_job_unref(jq_job *job);
jq_queue *jq_queue_new(int nworkers, const char *name, const char *path, const char *cpath);
void jq_queue_ref(jq_queue *q);
void jq_queue_unref(jq_queue *q);

/* A new job holding `payload` (taken: a borrowed one is copied into the
 * job's own block), tagged with the caller's op tag,
 * submitted at src:line. */
jq_job *jq_job_new(jq_queue *q, jq_buf *payload, const char *src, int line);

/* Publishes a job: ready now, or once each of deps[0..n) finished. Returns 0,
 * or -1 when the queue is closing (the job is then not published). */
int jq_queue_publish(jq_queue *q, jq_job *job, jq_job **deps, int ndeps);

/* (mu) Takes the next thing worker w should run: a job to resume (*resume =
 * 1) or to start; NULL when there is none. */
jq_job *jq_queue_take(jq_queue *q, jq_worker *w, int *resume);

/* (mu) Records that `job` finished in `state` (DONE or FAILED): fails or
 * readies its dependants, wakes its waiters. */
void jq_queue_finish(jq_queue *q, jq_job *job, int state);

/* (mu of job's queue) Makes `waiter` (a job suspending on its worker, of
 * this queue or another) await `job`; returns 0, 1 if `job` already
 * finished, or -1 without memory. */
int jq_queue_await(jq_job *job, jq_job *waiter);

/* A finish resumes the waiters of its job that belong to another queue only
 * once the finishing thread holds no queue's mutex (one queue's mutex is
 * never held while another's is taken): it collects them, and whoever
 * dropped the mutex calls this, holding none, to put each on its worker's
 * resume list. jq_queue_remote_pending says whether any are collected. */
void jq_queue_resume_remote(void);
int jq_queue_remote_pending(void);

/* (mu) Whether a job of q awaits a job of another queue now (its resume
 * comes from a finish on another thread). */
int jq_queue_awaits_remote(jq_queue *q);
/* (mu) An unfinished job of q, or NULL when the list of unfinished jobs and
 * the lock-free submissions not moved there yet are both empty. */
jq_job *jq_queue_some_unfinished(jq_queue *q);

/* (mu) A job that yielded cooperatively goes to the back of w's resume list. */
void jq_queue_requeue(jq_worker *w, jq_job *job);

/* (mu) After a worker counted itself running: wakes a parked worker when
 * jobs wait in `incoming` (a lock-free publisher that pushed while that
 * worker was still counted idle left the wake-up to it). */
void jq_queue_wake_for_incoming(jq_queue *q);

/* (mu) Starts closing: every job not started yet (ready, or waiting for
 * its dependencies) is cancelled, workers are woken. */
void jq_queue_begin_close(jq_queue *q);

/* (mu) Fails an unfinished job as cancelled by its queue's close, and
 * finishes it. Every cancellation goes through here (and the one place
 * that marks a job cancelled, mark_cancelled in queue.c, which also
 * records a `cancelled` instant on the calling lane). */
void jq_queue_cancel(jq_queue *q, jq_job *job);

/* (mu) A wait, pwait or status returned the error of the failed `job`:
 * it, and the jobs of its chain whose error its message carries, are
 * observed and leave the list of unobserved failures. */
void jq_queue_observe(jq_queue *q, jq_job *job);

/* (mu) Takes the oldest unobserved failure off q's list (marking it
 * observed) and hands over the list's reference; NULL when none is left. */
jq_job *jq_queue_take_failure(jq_queue *q);

/* Before decoding a finished job's result (or error value): returns 0, or
 * -1 when its queue's close released it (it held job handles). After 0,
 * jq_result_unpin once decoded. Without mu. */
int jq_result_pin(jq_job *job);
void jq_result_unpin(jq_job *job);

/* (mu) An unfinished job whose coroutine is suspended on w (not running). */
jq_job *jq_queue_suspended_on(jq_queue *q, jq_worker *w);

/* (mu) Fails every job still unfinished (the end of a close), except those
 * with a slice running (they finish when it ends). */
void jq_queue_fail_rest(jq_queue *q);

/* The end of a close, after jq_workers_stop (worker.c): fails the jobs
 * still unfinished, drops the failures nobody observed and releases the
 * results that hold job handles. Returns how many jobs the close
 * cancelled. */
long jq_queue_close(jq_queue *q);

/* The queue's number as the trace gives it (a worker lane's laneInfo
 * queue, a wait_all's edge): its creation order from 1, the queues made
 * after the first 2^20 - 2 sharing the last number. */
static inline uint32_t jq_queue_number(const jq_queue *q) {
  return q->seq > 0 && q->seq < (1 << 20) - 1 ? (uint32_t)q->seq : (uint32_t)(1 << 20) - 1;
}

/* Before `job` finishes: it fails because `cause` failed (reason
 * JQ_FAIL_DEPENDENCY or JQ_FAIL_AWAITED). Takes a reference to `cause`
 * (which must have finished) and extends its failure chain. */
void jq_job_set_cause(jq_job *job, jq_job *cause, int reason);

#ifdef JQ_TESTING
/* Specs only: queues alive now, and finishes refused because the job had
 * finished already (always 0 unless a bug). */
extern _Atomic long jq_test_live_queues, jq_test_double_finishes;
/* Specs only: the creation number the next queue gets. */
void jq_test_set_next_queue_seq(int seq);
/* Specs only: wake-up signals sent to parked workers, workers parked now
 * (all queues), marks set by jobs (_test.mark); while jq_test_hold_takes is
 * set, a worker that took a new job waits (holding mu, before it counts
 * itself running) with jq_test_holding set. */
extern _Atomic long jq_test_wakes, jq_test_parked, jq_test_marks;
extern _Atomic int jq_test_hold_takes, jq_test_holding;
#endif

/* The size of a pooled job block (the job and an inline payload), and how
 * many blocks a queue keeps for reuse at most. */
#define JQ_JOB_BLOCK 512
#if defined(__SANITIZE_ADDRESS__)
#define JQ_POOL_MAX 0 /* AddressSanitizer sees every job freed: a refcount bug shows */
#else
#define JQ_POOL_MAX 4096
#endif

#if !defined(JQ_SPIN_NS)
#define JQ_SPIN_NS 20000 /* how long a thread looks for work or a result before it sleeps */
#endif

/* Without mu: polls ready(arg), pausing (and, with yield_core, now and then
 * giving the core away) for up to JQ_SPIN_NS. Returns whether it became
 * ready. Saves a futex sleep and wake-up when the answer comes quickly. */
int jq_spin_until(int (*ready)(void *), void *arg, int yield_core);

/* (mu) The queue's counts for a trace: jobs ready (published, dependencies
 * done, not started; those being submitted right now included), running
 * (a slice of theirs runs, the calling thread's excluded: it has just
 * ended one) and suspended (started, not running: awaiting, or after a
 * cooperative yield). `self_running` is 1 when the caller is a worker
 * counted in q->running. */
void jq_queue_counts(jq_queue *q, int self_running, long *ready, long *running, long *suspended);

/* Jobs published and not finished yet: exact under mu, a hint without. */
static inline long jq_queue_unfinished(jq_queue *q) {
  return atomic_load_explicit(&q->submitted, memory_order_relaxed) -
         atomic_load_explicit(&q->finished, memory_order_relaxed);
}

static inline int jq_job_finished(const jq_job *job) {
  return job->state == JQ_JOB_DONE || job->state == JQ_JOB_FAILED;
}

#endif
