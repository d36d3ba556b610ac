/*
 * array.h - the one growable-array append (job dependants and waiters, the
 * finish worklist, a buffer's handles).
 *
 * No Lua, no locks: the caller owns the array.
 */
#ifndef JQ_ARRAY_H
#define JQ_ARRAY_H

#include <stdlib.h>
#include <string.h>

/* Appends the `size` bytes at item to *arr, which holds *n items in room
 * for *cap, doubling the room (from 4) when it is full. Returns 0, or -1
 * without memory (the array is then unchanged). */
static inline int jq_array_push(void **arr, int *n, int *cap, size_t size, const void *item) {
  if (*n == *cap) {
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

#endif
