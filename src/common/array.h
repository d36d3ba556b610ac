/*
 * array.h - the one growable buffer of the C code: jq_vec, bytes or typed
 * items in one malloc'd block that doubles as it fills (the reader's JSON
 * and page text, its scratch arrays), and jq_array_push, the same growth
 * for arrays kept as a pointer and two int counts (a job's dependants and
 * waiters, the finish worklist, a codec buffer's handles).
 *
 * Every growth reports a failure (-1 or NULL; nothing is changed then)
 * and the caller must act on it: the queue fails the call, the reader
 * raises "not enough memory" from memory a userdata owns (reader/scratch.h).
 * Owns: nothing (the caller owns each buffer and frees it with jq_vec_free
 * or free). Must not: call Lua, take locks.
 * Thread safety: none; one thread uses a buffer at a time.
 */
#ifndef JQ_ARRAY_H
#define JQ_ARRAY_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Appends the `size` bytes at item to *arr, which holds *n items in room
 * for *cap, doubling the room (from 4) when it is full. Returns 0, or -1
 * without memory (the array is then unchanged). */
static inline int jq_array_push(void **arr, int *n, int *cap, size_t size, const void *item) {
  if (*n == *cap) {
    if (*cap > (int)(((unsigned)-1 >> 1) / 2) || (size_t)*cap * 2 > ((size_t)-1) / (size ? size : 1))
      return -1;
    int ncap = *cap ? *cap * 2 : 4;
    void *p = realloc(*arr, size * (size_t)ncap);
    if (!p)
      return -1;
    *arr = p;
    *cap = ncap;
  }
  memcpy((char *)*arr + size * (size_t)*n, item, size);
  (*n)++;
  return 0;
}

/* A buffer: n bytes used of cap at p (NULL while cap is 0). All zero is an
 * empty buffer. Typed items are stored as their bytes: jq_vec_room gives
 * room for a count of them, jq_vec_push appends one. */
typedef struct jq_vec {
  char *p;
  size_t n, cap;
} jq_vec;

static inline void jq_vec_init(jq_vec *b) {
  b->p = NULL;
  b->n = b->cap = 0;
}

static inline void jq_vec_free(jq_vec *b) {
  free(b->p);
  jq_vec_init(b);
}

/* Room for `more` bytes past n (contents kept): 0, or -1 without memory
 * or when the size would overflow (the buffer unchanged). */
static inline int jq_vec_reserve(jq_vec *b, size_t more) {
  if (b->cap - b->n >= more)
    return 0;
  if (more > ((size_t)-1) / 2 - b->n)
    return -1;
  size_t cap = b->cap ? b->cap : 64;
  while (cap - b->n < more)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p)
    return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}

/* Appends len bytes at s: 0, or -1 (the buffer unchanged). */
static inline int jq_vec_add(jq_vec *b, const void *s, size_t len) {
  if (b->cap - b->n < len && jq_vec_reserve(b, len) != 0)
    return -1;
  if (len)
    memcpy(b->p + b->n, s, len);
  b->n += len;
  return 0;
}

/* The buffer as an array of count items of `size` bytes (n = count *
 * size, the first n bytes kept): its start, or NULL without memory or on
 * overflow (the buffer unchanged). */
static inline void *jq_vec_room(jq_vec *b, size_t count, size_t size) {
  if (size && count > ((size_t)-1) / 2 / size)
    return NULL;
  size_t want = count * size;
  if (want > b->n && jq_vec_reserve(b, want - b->n) != 0)
    return NULL;
  if (!b->p && jq_vec_reserve(b, 1) != 0) /* count 0: still a block to point at */
    return NULL;
  b->n = want;
  return b->p;
}

/* Appends one item of `size` bytes: its address in the buffer, or NULL. */
static inline void *jq_vec_push(jq_vec *b, const void *item, size_t size) {
  if (jq_vec_add(b, item, size) != 0)
    return NULL;
  return b->p + b->n - size;
}

#endif
