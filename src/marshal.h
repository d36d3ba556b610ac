/*
 * marshal.h - copies Lua values between lua_States through a byte buffer.
 *
 * Owns: the wire format of values that cross states (arguments, results,
 * errors, job functions with their upvalues).
 * Must not: raise a Lua error while it holds malloc'd memory; encode returns
 * an error message instead, and decode runs under the caller's pcall with
 * nothing of its own allocated.
 * Thread safety: a buffer is written by one thread and then read by others
 * only after being published under the queue's mutex.
 */
#ifndef JQ_MARSHAL_H
#define JQ_MARSHAL_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

struct jq_job;

typedef struct jq_buf {
  char *data;
  size_t len, cap;
  struct jq_job **jobs; /* job handles inside, each holding a reference */
  int njobs, capjobs;
  int nvalues;          /* how many values were encoded */
  int borrowed;         /* data is not ours to free (a stack buffer, a job's block) */
} jq_buf;

#define JQ_BUF_INIT {NULL, 0, 0, NULL, 0, 0, 0, 0}

/* A buffer that starts in caller-provided memory and moves to the heap only
 * if it outgrows it. */
static inline jq_buf jq_buf_on(char *mem, size_t size) {
  jq_buf b = {mem, 0, size, NULL, 0, 0, 0, 1};
  return b;
}

/* Releases the buffer and the job references it holds. */
void jq_buf_free(jq_buf *b);

/* Encodes the `n` values at stack indices first..first+n-1 of L. Returns 0,
 * or -1 with a message in err such as
 *   argument #2, field "conn": userdata cannot be sent to a worker
 * `label` names the values ("argument", "result", "upvalue"), numbered from
 * `number`. The buffer is left empty on failure. */
int jq_encode(lua_State *L, int first, int n, jq_buf *out, const char *label, int number,
              char *err, size_t errlen);

/* Pushes the buffer's values onto L; returns how many. Raises on a value that
 * cannot be rebuilt here (a C function whose module is missing). */
int jq_decode(lua_State *L, const jq_buf *b);

/* FNV-1a, 64 bits, of n bytes. */
uint64_t jq_hash64(const char *p, size_t n);

/* Hooks for job handles, provided by lua_queue.c. */
struct jq_job *jq_job_from_value(lua_State *L, int idx); /* NULL if not a job */
void jq_job_push(lua_State *L, struct jq_job *job);      /* takes a new reference */
void jq_job_ref(struct jq_job *job);
void jq_job_unref(struct jq_job *job);

#endif
