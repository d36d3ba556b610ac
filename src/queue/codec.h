/*
 * codec.h - copies Lua values between lua_States through a byte buffer.
 *
 * Owns: the wire format of values that cross states (arguments, results,
 * errors, job functions with their upvalues).
 * Must not: raise a Lua error while it holds malloc'd memory; encode returns
 * an error message instead, and decode runs under the caller's pcall with
 * nothing of its own allocated.
 * Knows nothing of queues or jobs: userdata that stand for shared C objects
 * (job handles) cross through a jq_handle_ops interface that the codec's
 * user supplies. The header names lua_State only as a struct, so holders of
 * buffers (queue.h) need no Lua header.
 * Thread safety: a buffer is written by one thread and then read by others
 * only after being published (under the queue's mutex, for the queue).
 */
#ifndef JQ_CODEC_H
#define JQ_CODEC_H

#include <stddef.h>
#include <stdint.h>

struct lua_State;

/* Handles: userdata standing for a C object shared between states (a job).
 * The codec carries the object, holding a reference, and asks the user to
 * make a new handle for it on the other side. */
typedef struct jq_handle_ops {
  /* The object the handle at idx stands for, or NULL if it is none. */
  void *(*from_value)(struct lua_State *L, int idx);
  /* Pushes a new handle for obj (the handle takes a reference of its own). */
  void (*push)(struct lua_State *L, void *obj);
  void (*ref)(void *obj);
  void (*unref)(void *obj);
  /* For other userdata: what it is, for the message ("a queue"), with a
   * hint on what to do instead in *hint (`returned`: the value is a result
   * or error going back to the waiting side); NULL for plain userdata. */
  const char *(*refused)(struct lua_State *L, int idx, int returned, const char **hint);
} jq_handle_ops;

typedef struct jq_buf {
  char *data;
  size_t len, cap;
  void **handles;            /* objects of handles inside, each holding a reference */
  int nhandles, caphandles;
  const jq_handle_ops *ops;  /* whose handles they are (set while encoding) */
  int nvalues;               /* how many values were encoded */
  int borrowed;              /* data is not ours to free (a stack buffer, a job's block) */
} jq_buf;

#define JQ_BUF_INIT {NULL, 0, 0, NULL, 0, 0, NULL, 0, 0}

/* A buffer that starts in caller-provided memory and moves to the heap only
 * if it outgrows it. */
static inline jq_buf jq_buf_on(char *mem, size_t size) {
  jq_buf b = {mem, 0, size, NULL, 0, 0, NULL, 0, 1};
  return b;
}

/* Releases the buffer and the references its handles hold. */
void jq_buf_free(jq_buf *b);

/* Encodes the `n` values at stack indices first..first+n-1 of L into the
 * empty buffer `out`. Returns 0, or -1 with a message in err such as
 *   argument #2, field "conn": userdata cannot be sent to a worker
 * `label` names the values ("argument", "result", "upvalue"), numbered from
 * `number`. Handles are recognised by `ops` (NULL: none are). The buffer is
 * left empty on failure. Never raises: it runs protected, and a memory error
 * is a failure with the message "not enough memory". */
int jq_encode(struct lua_State *L, int first, int n, jq_buf *out, const char *label, int number,
              const jq_handle_ops *ops, char *err, size_t errlen);

/* Pushes the buffer's values onto L; returns how many. Raises on a value that
 * cannot be rebuilt here (a C function whose module is missing). */
int jq_decode(struct lua_State *L, const jq_buf *b);

/* FNV-1a, 64 bits, of n bytes. */
uint64_t jq_hash64(const char *p, size_t n);

#endif
