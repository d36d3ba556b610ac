/*
 * sort.h - the reader's one sort: a stable merge sort, bottom-up (runs of
 * 1, 2, 4 ... merged pairwise: log2(n) passes whatever the comparator
 * does, even with NaNs; two runs already in order are copied, not merged;
 * input already in order is left as it is after one pass of comparisons,
 * which is what the passes would make of it), of indices by a comparator
 * (jq_sort_stable) or of a caller's own items (JQ_SORT_DEFINE).
 * No recursion, no allocation: the caller gives a second array of n items.
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

/* JQ_SORT_DEFINE(name, type, ctx_type, LESS) defines
 *   static void name(type *a, type *tmp, size_t n, ctx_type ctx)
 * which sorts a[0 .. n) by LESS(ctx, x, y) (whether item x must come before
 * item y; false for ties), ties kept in their order, through tmp (room for
 * n items). The one merge sort of the reader: jq_sort_stable is it over
 * indices and a comparator; a hot sort of many items instantiates it over
 * its keys copied side by side, so that it reads them in order and compares
 * them inline. */
#define JQ_SORT_DEFINE(name, type, ctx_type, LESS)                                                            \
  static inline void name(type *a, type *tmp, size_t n, ctx_type ctx) {                                      \
    type *src = a, *dst = tmp;                                                                                \
    (void)ctx;                                                                                                \
    size_t in_order_ = 1;                                                                                     \
    while (in_order_ < n && !LESS(ctx, a[in_order_], a[in_order_ - 1]))                                     \
      in_order_++;                                                                                            \
    if (in_order_ >= n)                                                                                       \
      return;                                                                                                 \
    for (size_t w = 1; w < n; w *= 2) {                                                                       \
      for (size_t lo = 0; lo < n; lo += 2 * w) {                                                              \
        size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;                           \
        size_t i = lo, j = mid, k = lo;                                                                       \
        if (mid < hi && LESS(ctx, src[mid], src[mid - 1])) {                                                 \
          while (i < mid && j < hi)                                                                           \
            dst[k++] = LESS(ctx, src[j], src[i]) ? src[j++] : src[i++];                                       \
        }                                                                                                     \
        memcpy(dst + k, src + i, (mid - i) * sizeof *dst);                                                    \
        k += mid - i;                                                                                         \
        memcpy(dst + k, src + j, (hi - j) * sizeof *dst);                                                     \
      }                                                                                                       \
      type *t_ = src;                                                                                         \
      src = dst, dst = t_;                                                                                    \
    }                                                                                                         \
    if (src != a)                                                                                             \
      memcpy(a, src, n * sizeof *a);                                                                          \
  }

/* Whether item a must come before item b (a strict order: false for ties). */
typedef int (*jq_less_fn)(void *ctx, uint32_t a, uint32_t b);

typedef struct jq_less_ctx {
  jq_less_fn less;
  void *ctx;
} jq_less_ctx;

#define JQ_LESS_BY_FN(c, x, y) ((c)->less((c)->ctx, (x), (y)))
JQ_SORT_DEFINE(jq_sort_by_fn, uint32_t, const jq_less_ctx *, JQ_LESS_BY_FN)

/* Sorts idx[0 .. n) by less, ties kept in their order, through tmp (room
 * for n indices). */
static inline void jq_sort_stable(uint32_t *idx, uint32_t *tmp, size_t n, jq_less_fn less, void *ctx) {
  jq_less_ctx c = {less, ctx};
  jq_sort_by_fn(idx, tmp, n, &c);
}

#endif
