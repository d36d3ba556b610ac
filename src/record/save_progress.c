/*
 * save_progress.c - the progress line of a long save (save_progress.h).
 */
#include "record/save_progress.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
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

/* The terminal's width in columns (80 when it does not say). */
static int term_cols(void) {
  struct winsize ws;
  if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return 80;
}

/* The length of the UTF-8 sequence at s (n bytes left), 0 for a byte of
 * none; *shown: whether it may reach the terminal (no C1 control,
 * U+0080..U+009F). */
static size_t utf8_len(const unsigned char *s, size_t n, int *shown) {
  size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
  if (len == 0 || s[0] > 0xf4 || len > n)
    return 0;
  uint32_t c = s[0] & (0x7f >> len);
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    c = c << 6 | (s[i] & 0x3f);
  }
  if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
      (c >= 0xd800 && c <= 0xdfff))
    return 0;
  *shown = c > 0x9f;
  return len;
}

/* The path's last bytes for the terminal, in name (NAME_MAX_BYTES + 4):
 * control bytes (C0, DEL, C1) and bytes of no valid UTF-8 as '?', no more
 * than `room` columns (a character beyond ASCII counted as 2, as wide
 * ones are), its start cut to "..." when it is longer. */
#define NAME_MAX_BYTES 1024
static void shown_name(char *name, const char *path, int room) {
  size_t len = strlen(path), from = len > NAME_MAX_BYTES ? len - NAME_MAX_BYTES : 0;
  const unsigned char *s = (const unsigned char *)path;
  char buf[NAME_MAX_BYTES + 1];
  size_t k = 0;
  int cols = 0;
  for (size_t i = from; i < len;) {
    int shown = s[i] >= 0x20 && s[i] != 0x7f;
    size_t n = s[i] >= 0x80 ? utf8_len(s + i, len - i, &shown) : 1;
    if (n == 0 || !shown) { /* a control character, or a byte of no character: one '?' */
      buf[k++] = '?';
      i += n ? n : 1;
      cols++;
    } else {
      memcpy(buf + k, s + i, n);
      k += n;
      i += n;
      cols += n > 1 ? 2 : 1;
    }
  }
  buf[k] = 0;
  size_t at = 0;
  int cut = from > 0;
  while (cols + (cut ? 3 : 0) > room && at < k) { /* drop characters from the start */
    cols -= (unsigned char)buf[at] >= 0x80 ? 2 : 1;
    at++;
    while (at < k && ((unsigned char)buf[at] & 0xc0) == 0x80)
      at++;
    cut = 1;
  }
  snprintf(name, NAME_MAX_BYTES + 4, "%s%s", cut ? "..." : "", buf + at);
}

void jq_progress_at(jq_progress *p, uint64_t done, uint64_t bytes) {
  if (!p || !p->on)
    return;
  int64_t t = now_ns();
  if (t - p->t0 < after_ns || (p->shown && t - p->last < every_ns))
    return;
  p->last = t;
  double share = p->total ? (double)(done < p->total ? done : p->total) / (double)p->total : 1.0;
  char size[32], tail[64], name[NAME_MAX_BYTES + 4], line[NAME_MAX_BYTES + 128];
  size_text(size, sizeof size, share > 0 ? (double)bytes / share : (double)bytes);
  static const char head[] = "jobque_profile: saving ";
  int ntail = snprintf(tail, sizeof tail, ": %d%% of %s", (int)(share * 100), size);
  /* One row of the terminal, the last column left free: a line that
   * wrapped could not be rewritten or cleared by "\r". */
  int room = term_cols() - 1 - (int)(sizeof head - 1) - ntail;
  shown_name(name, p->path, room > 4 ? room : 4);
  int n = snprintf(line, sizeof line, "\r%s%s%s\033[K", head, name, tail);
  put(line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1));
  p->shown = 1;
}

void jq_progress_end(jq_progress *p) {
  if (p && p->shown)
    put("\r\033[K", 4);
  if (p)
    p->shown = 0;
}
