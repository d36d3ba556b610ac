/*
 * sort.h - the reader's one sort: a stable merge sort of indices by a
 * caller's "less" with a context, bottom-up (runs of 1, 2, 4 ... merged
 * pairwise; two runs already in order are copied, not merged, so sorted
 * input costs one comparison a run). No recursion, no allocation: the
 * caller gives a second array of n indices.
 *
 * Owns: nothing. Must not: allocate, call Lua (the comparator may, if it
 * raises nothing while the caller holds memory no userdata owns).
 * Thread safety: reentrant.
 */
#ifndef JQ_SORT_H
#define JQ_SORT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Whether item a must come before item b (a strict order: false for ties). */
typedef int (*jq_less_fn)(void *ctx, uint32_t a, uint32_t b);

/* Sorts idx[0 .. n) by less, ties kept in their order, through tmp (room
 * for n indices). */
static inline void jq_sort_stable(uint32_t *idx, uint32_t *tmp, size_t n, jq_less_fn less, void *ctx) {
  uint32_t *src = idx, *dst = tmp;
  for (size_t w = 1; w < n; w *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * w) {
      size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      size_t i = lo, j = mid, k = lo;
      if (mid < hi && less(ctx, src[mid], src[mid - 1])) {
        while (i < mid && j < hi)
          dst[k++] = less(ctx, src[j], src[i]) ? src[j++] : src[i++];
      }
      memcpy(dst + k, src + i, (mid - i) * sizeof *dst);
      k += mid - i;
      memcpy(dst + k, src + j, (hi - j) * sizeof *dst);
    }
    uint32_t *t = src;
    src = dst, dst = t;
  }
  if (src != idx)
    memcpy(idx, src, n * sizeof *idx);
}

#endif
