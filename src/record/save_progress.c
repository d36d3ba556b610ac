/*
 * save_progress.c - the progress line of a long save (save_progress.h).
 */
#include "record/save_progress.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t after_ns = 1000000000, every_ns = 250000000;

#ifdef JQ_TESTING
void jq_progress_timing(int64_t after_ms, int64_t every_ms) {
  after_ns = after_ms * 1000000;
  every_ns = every_ms * 1000000;
}
#endif

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void put(const char *s, size_t n) {
  while (n > 0) {
    ssize_t k = write(2, s, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return; /* a line lost: the save goes on */
    s += k;
    n -= (size_t)k;
  }
}

void jq_progress_begin(jq_progress *p, int asked, const char *path, uint64_t total) {
  memset(p, 0, sizeof *p);
  p->on = asked && isatty(2);
  p->path = path;
  p->total = total;
  p->t0 = p->last = now_ns();
}

/* `bytes` as "1.2 GB", "340.5 MB", "12.0 KB" or "512 bytes". */
static void size_text(char *out, size_t n, double bytes) {
  static const char *const units[] = {"KB", "MB", "GB", "TB"};
  if (bytes < 1000) {
    snprintf(out, n, "%.0f bytes", bytes);
    return;
  }
  int u = 0;
  for (bytes /= 1000; bytes >= 1000 && u < 3; bytes /= 1000)
    u++;
  snprintf(out, n, "%.1f %s", bytes, units[u]);
}

void jq_progress_at(jq_progress *p, uint64_t done, uint64_t bytes) {
  if (!p || !p->on)
    return;
  int64_t t = now_ns();
  if (t - p->t0 < after_ns || (p->shown && t - p->last < every_ns))
    return;
  p->last = t;
  double share = p->total ? (double)(done < p->total ? done : p->total) / (double)p->total : 1.0;
  char size[32], name[256], line[400];
  size_text(size, sizeof size, share > 0 ? (double)bytes / share : (double)bytes);
  size_t k = 0; /* the path, its control bytes as '?' (no escape reaches the terminal) */
  for (const char *s = p->path; *s && k < sizeof name - 4; s++)
    name[k++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
  if (p->path[k] && k >= sizeof name - 4)
    memcpy(name + k, "...", 3), k += 3;
  name[k] = 0;
  int n = snprintf(line, sizeof line, "\rjobque_profile: saving %s: %d%% of %s\033[K", name,
                   (int)(share * 100), size);
  put(line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1));
  p->shown = 1;
}

void jq_progress_end(jq_progress *p) {
  if (p && p->shown)
    put("\r\033[K", 4);
  if (p)
    p->shown = 0;
}
