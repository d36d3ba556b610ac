/*
 * file_replace.c - replaces a file atomically, following symlinks (those
 * the kernel's protected_symlinks rule allows), keeping its mode and owner,
 * writing devices and FIFOs in place (file_replace.h states the rules).
 *
 * No Lua API, no locks, no stdio. Allocates the resolved path and the
 * temporary's name; both are freed by commit or abort.
 */
#define _GNU_SOURCE /* O_TMPFILE */
#include "common/file_replace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINKS 40      /* symlinks followed, as the kernel does */
#define RANDOM_CHARS 12   /* of a temporary's name: 62^12, about 2^71 */
#define BASE_MAX 200      /* bytes of the target's name kept in a temporary's */
#define TEMP_MARK ".jqtmp-"

#ifdef JQ_TESTING
static _Atomic int without_tmpfile;
void jq_replace_test_without_tmpfile(int on) {
  atomic_store(&without_tmpfile, on);
}
#define WITHOUT_TMPFILE() atomic_load(&without_tmpfile)
static _Atomic int hang_after_write;
void jq_replace_test_hang_after_write(int on) {
  atomic_store(&hang_after_write, on);
}
/* The killed-save specs: stop for good (until killed) with a file half written. */
static void maybe_hang(void) {
  while (atomic_load(&hang_after_write))
    pause();
}
#else
#define WITHOUT_TMPFILE() 0
static void maybe_hang(void) {}
#endif

int jq_write_all(int fd, const void *p, size_t n) {
  const char *q = p;
  while (n > 0) {
    ssize_t k = write(fd, q, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return k < 0 ? errno : EIO;
    q += k;
    n -= (size_t)k;
    maybe_hang();
  }
  return 0;
}

const char *jq_replace_reason(const jq_replace *r, int rc) {
  if (rc == EACCES && r->refused[0])
    return r->refused;
  if (rc == ENXIO && r->fifo)
    return "it is a FIFO that no process is reading";
  if (rc == EISDIR)
    return "it is a directory";
  return strerror(rc);
}

const char *jq_replace_reason_at(const jq_replace *r, int rc, const char *path, char *buf,
                                 size_t n) {
  if (rc != ENOTDIR || n == 0)
    return jq_replace_reason(r, rc);
  /* The first leading part of the path that exists and is not a directory. */
  for (const char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
    size_t len = (size_t)(slash - path);
    if (len + 1 > n || len >= PATH_MAX)
      break;
    char prefix[PATH_MAX];
    memcpy(prefix, path, len);
    prefix[len] = '\0';
    struct stat st;
    if (stat(prefix, &st) != 0)
      break;
    if (!S_ISDIR(st.st_mode)) {
      int k = snprintf(buf, n, "'%s' is not a directory", prefix);
      return k > 0 && (size_t)k < n ? buf : strerror(rc);
    }
  }
  return strerror(rc);
}

/* ---- names ---- */

static char *dup_n(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

/* The length of the directory part of `path`, with its slash ("a/b" -> 2,
 * "b" -> 0, "/b" -> 1). */
static size_t dir_len(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? (size_t)(slash - path) + 1 : 0;
}

/* The target of the symlink `path` (st: its lstat), read as `name` in the
 * directory dfd, joined to the link's directory (its first d bytes of
 * `path`) when relative. NULL with errno set on failure. */
static char *follow(int dfd, const char *name, const char *path, size_t d,
                    const struct stat *st) {
  size_t cap = st->st_size > 0 ? (size_t)st->st_size + 1 : 256;
  for (;;) {
    char *buf = malloc(cap);
    if (!buf)
      return NULL;
    ssize_t n = readlinkat(dfd, name, buf, cap);
    if (n < 0) {
      free(buf);
      return NULL;
    }
    if ((size_t)n < cap) {
      if (buf[0] == '/')
        d = 0;
      char *out = malloc(d + (size_t)n + 1);
      if (out) {
        memcpy(out, path, d);
        memcpy(out + d, buf, (size_t)n);
        out[d + (size_t)n] = '\0';
      }
      free(buf);
      return out;
    }
    free(buf); /* the link grew: try a larger buffer */
    if (cap > SIZE_MAX / 2) {
      errno = ENAMETOOLONG;
      return NULL;
    }
    cap *= 2;
  }
}

/* Whether the kernel would let this process follow the symlink `link` (its
 * lstat) in the directory `dir` (its stat) with protected_symlinks on
 * (fs/namei.c, may_follow_link): in a directory both sticky and writable by
 * all, only a link of the follower's or of the directory's owner. Applied
 * here, whatever the sysctl says, because this code follows the link and
 * then renames over its target, where the kernel never looks. (The kernel
 * compares the fsuid, which is the effective uid unless setfsuid changed it.) */
static int may_follow(const struct stat *dir, const struct stat *link) {
  if ((dir->st_mode & (S_ISVTX | S_IWOTH)) != (S_ISVTX | S_IWOTH))
    return 1;
  return link->st_uid == geteuid() || link->st_uid == dir->st_uid;
}

/* Says in r->refused why the link `path` (owned by uid) is not followed. */
static void refuse(jq_replace *r, const char *path, uid_t uid) {
  char owner[128], pwbuf[2048];
  struct passwd pw, *found = NULL;
  if (getpwuid_r(uid, &pw, pwbuf, sizeof pwbuf, &found) == 0 && found && found->pw_name[0])
    snprintf(owner, sizeof owner, "%s, uid %lu", found->pw_name, (unsigned long)uid);
  else
    snprintf(owner, sizeof owner, "uid %lu", (unsigned long)uid);
  snprintf(r->refused, sizeof r->refused,
           "not following the symlink '%s' (owned by %s): it is in a sticky world-writable "
           "directory and belongs neither to you nor to the directory's owner (the kernel's "
           "protected_symlinks rule); remove it or write elsewhere",
           path, owner);
}

/* Follows symlinks from `path` to what they finally name. Returns 0 with
 * *out (malloc'd) and *exists (and *st when it exists), or an errno value
 * (EACCES with r->refused for a link may_follow refuses). Each link is
 * checked and read in its directory opened once (O_PATH), so the directory
 * checked is the one the link is read from. */
static int resolve(jq_replace *r, const char *path, char **out, struct stat *st, int *exists) {
  char *cur = dup_n(path, strlen(path));
  if (!cur)
    return ENOMEM;
  for (int links = 0;; links++) {
    if (lstat(cur, st) != 0) {
      int e = errno;
      if (e == ENOENT) { /* a new file (or a missing directory: the open says) */
        *exists = 0;
        *out = cur;
        return 0;
      }
      free(cur);
      return e;
    }
    if (!S_ISLNK(st->st_mode)) {
      *exists = 1;
      *out = cur;
      return 0;
    }
    if (links == MAX_LINKS) {
      free(cur);
      return ELOOP;
    }
    size_t d = dir_len(cur);
    char *dir = d ? dup_n(cur, d) : dup_n(".", 1);
    if (!dir) {
      free(cur);
      return ENOMEM;
    }
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    struct stat dst;
    if (dfd < 0 || fstat(dfd, &dst) != 0 || fstatat(dfd, cur + d, st, AT_SYMLINK_NOFOLLOW) != 0) {
      int e = errno;
      if (dfd >= 0)
        close(dfd);
      if (e == ENOENT) /* gone since the lstat: look again */
        continue;
      free(cur);
      return e;
    }
    if (!S_ISLNK(st->st_mode)) { /* replaced since the lstat: look again */
      close(dfd);
      continue;
    }
    if (!may_follow(&dst, st)) {
      refuse(r, cur, st->st_uid);
      close(dfd);
      free(cur);
      return EACCES;
    }
    char *next = follow(dfd, cur + d, cur, d, st);
    int e = errno;
    close(dfd);
    free(cur);
    if (!next)
      return e ? e : ENOMEM;
    cur = next;
  }
}

static void random_chars(char *out, int n) {
  static const char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char b[RANDOM_CHARS];
  if (getrandom(b, (size_t)n, GRND_NONBLOCK) != n) { /* no entropy yet: a weaker mix */
    static _Atomic uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t x = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^
                 (atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15u) ^ (uintptr_t)&ts;
    for (int i = 0; i < n; i++) {
      x ^= x >> 33;
      x *= 0xff51afd7ed558ccdu;
      x ^= x >> 29;
      b[i] = (unsigned char)x;
    }
  }
  for (int i = 0; i < n; i++)
    out[i] = alphabet[b[i] % 62];
}

/* A fresh temporary name beside r->target into r->temp (allocated once):
 * "DIR/.NAME.jqtmp-PID-RANDOM". */
static int temp_name(jq_replace *r) {
  size_t d = dir_len(r->target);
  size_t base = strlen(r->target + d);
  if (base > BASE_MAX)
    base = BASE_MAX;
  size_t len = d + 1 + base + sizeof TEMP_MARK + 24 + RANDOM_CHARS;
  if (!r->temp && !(r->temp = malloc(len)))
    return ENOMEM;
  int n = snprintf(r->temp, len, "%.*s.%.*s" TEMP_MARK "%ld-", (int)d, r->target, (int)base,
                   r->target + d, (long)getpid());
  random_chars(r->temp + n, RANDOM_CHARS);
  r->temp[n + RANDOM_CHARS] = '\0';
  return 0;
}

/* The pid in a name made by temp_name, or 0 when `name` is not one. */
static long temp_pid(const char *name) {
  size_t n = strlen(name);
  if (name[0] != '.' || n < sizeof TEMP_MARK + 2 + RANDOM_CHARS)
    return 0;
  const char *end = name + n - RANDOM_CHARS; /* the random part */
  for (const char *c = end; *c; c++)
    if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')))
      return 0;
  if (end[-1] != '-')
    return 0;
  const char *digits = end - 1;
  while (digits > name && digits[-1] >= '0' && digits[-1] <= '9')
    digits--;
  size_t marklen = sizeof TEMP_MARK - 1;
  if (digits == end - 1 || (size_t)(digits - name) < marklen + 1 ||
      memcmp(digits - marklen, TEMP_MARK, marklen) != 0)
    return 0;
  if (end - 1 - digits > 9) /* no pid has that many digits */
    return 0;
  long pid = 0;
  for (const char *c = digits; c < end - 1; c++)
    pid = pid * 10 + (*c - '0');
  return pid;
}

/* Removes the temporaries of dead processes in the directory of r->target:
 * regular files of ours named by temp_name whose pid no longer exists.
 * Best effort: errors are ignored. */
static void remove_stale(const jq_replace *r) {
  size_t d = dir_len(r->target);
  char *dir = d ? dup_n(r->target, d) : dup_n(".", 1);
  if (!dir)
    return;
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free(dir);
  if (dfd < 0)
    return;
  DIR *dp = fdopendir(dfd);
  if (!dp) {
    close(dfd);
    return;
  }
  long self = (long)getpid();
  uid_t me = geteuid();
  struct dirent *e;
  while ((e = readdir(dp)) != NULL) {
    long pid = temp_pid(e->d_name);
    if (pid <= 0 || pid == self || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
      continue;
    struct stat st;
    if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        st.st_uid == me)
      unlinkat(dfd, e->d_name, 0);
  }
  closedir(dp);
}

/* ---- open ---- */

/* SIGPIPE (a FIFO's reader went away) and SIGXFSZ (a regular file grew
 * past the file-size limit) end the process by default: blocked from open
 * to commit or abort, our write fails with EPIPE or EFBIG instead. */
static void block_signals(jq_replace *r) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  sigaddset(&set, SIGXFSZ);
  sigemptyset(&r->pending_before);
  sigpending(&r->pending_before);
  if (pthread_sigmask(SIG_BLOCK, &set, &r->oldmask) == 0)
    r->blocked = 1;
}

/* Takes back a SIGPIPE or SIGXFSZ our writes raised (one that was pending
 * before, or that the caller blocks itself, stays), then restores the mask. */
static void unblock_signals(jq_replace *r) {
  if (!r->blocked)
    return;
  static const int ours[] = {SIGPIPE, SIGXFSZ};
  sigset_t pending;
  sigemptyset(&pending);
  if (sigpending(&pending) == 0) {
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++) {
      int sig = ours[i];
      if (!sigismember(&pending, sig) || sigismember(&r->pending_before, sig) ||
          sigismember(&r->oldmask, sig))
        continue;
      sigset_t one;
      sigemptyset(&one);
      sigaddset(&one, sig);
      struct timespec zero = {0, 0};
      while (sigtimedwait(&one, NULL, &zero) < 0 && errno == EINTR) {
      }
    }
  }
  pthread_sigmask(SIG_SETMASK, &r->oldmask, NULL);
  r->blocked = 0;
}

/* Opens a target that is not a regular file for writing in place. */
static int open_in_place(jq_replace *r, const struct stat *st) {
  r->fifo = S_ISFIFO(st->st_mode);
  /* O_NONBLOCK: a FIFO without a reader fails with ENXIO instead of blocking. */
  int fd = open(r->target, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno;
  struct stat now;
  int flags = fcntl(fd, F_GETFL);
  if (fstat(fd, &now) != 0 || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    int e = errno;
    close(fd);
    return e;
  }
  if (S_ISREG(now.st_mode) || S_ISDIR(now.st_mode)) { /* swapped since the lstat */
    close(fd);
    return EAGAIN;
  }
  r->fifo = S_ISFIFO(now.st_mode);
  r->fd = fd;
  r->in_place = 1;
  return 0;
}

/* Gives the new file the old one's owner and mode. */
static int keep_owner_and_mode(int fd, const struct stat *st) {
  if (st->st_uid != geteuid() || st->st_gid != getegid())
    (void)!fchown(fd, st->st_uid, st->st_gid); /* allowed to root, or to a group of ours */
  return fchmod(fd, st->st_mode & 07777) == 0 ? 0 : errno;
}

static int can_link_tmpfile(void) {
  struct stat st;
  return stat("/proc/self/fd", &st) == 0;
}

int jq_replace_open(jq_replace *r, const char *path) {
  memset(r, 0, sizeof *r);
  r->fd = -1;
  if (path[0] == '\0')
    return ENOENT;
  struct stat st;
  int exists = 0, rc;
  if ((rc = resolve(r, path, &r->target, &st, &exists)) != 0)
    return rc;
  block_signals(r);
  if (exists && S_ISDIR(st.st_mode)) {
    rc = EISDIR;
  } else if (exists && !S_ISREG(st.st_mode)) {
    rc = open_in_place(r, &st);
  } else {
    remove_stale(r);
    size_t d = dir_len(r->target);
    char *dir = d ? dup_n(r->target, d) : dup_n(".", 1);
    if (!dir) {
      rc = ENOMEM;
    } else if (!WITHOUT_TMPFILE() && can_link_tmpfile()) {
      r->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
      r->anonymous = r->fd >= 0;
      rc = r->fd >= 0 ? 0 : errno;
    } else {
      rc = EOPNOTSUPP;
    }
    free(dir);
    if (rc == EOPNOTSUPP || rc == EISDIR || rc == EINVAL) { /* no O_TMPFILE here */
      rc = 0;
      for (int tries = 0; tries < 100; tries++) {
        if ((rc = temp_name(r)) != 0)
          break;
        r->fd = open(r->temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        rc = r->fd >= 0 ? 0 : errno;
        if (rc != EEXIST)
          break;
      }
    }
    if (rc == 0 && exists && (rc = keep_owner_and_mode(r->fd, &st)) != 0)
      jq_replace_abort(r);
  }
  if (rc != 0) {
    int fifo = r->fifo;
    unblock_signals(r);
    free(r->target);
    free(r->temp);
    memset(r, 0, sizeof *r);
    r->fd = -1;
    r->fifo = fifo;
  }
  return rc;
}

/* ---- commit ---- */

static void release(jq_replace *r) {
  unblock_signals(r);
  free(r->target);
  free(r->temp);
  r->target = r->temp = NULL;
  r->fd = -1;
}

void jq_replace_abort(jq_replace *r) {
  if (r->fd >= 0)
    close(r->fd);
  if (r->temp && !r->anonymous && !r->in_place)
    unlink(r->temp);
  release(r);
}

/* Names the anonymous file r->fd at a fresh temporary name. */
static int link_tmpfile(jq_replace *r) {
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", r->fd);
  int rc = EEXIST;
  for (int tries = 0; tries < 100 && rc == EEXIST; tries++) {
    if ((rc = temp_name(r)) != 0)
      return rc;
    rc = linkat(AT_FDCWD, proc, AT_FDCWD, r->temp, AT_SYMLINK_FOLLOW) == 0 ? 0 : errno;
  }
  if (rc == 0)
    r->anonymous = 0; /* it has a name now: abort unlinks it */
  return rc;
}

int jq_replace_commit(jq_replace *r) {
  int rc = 0;
  if (r->in_place) {
    rc = close(r->fd) == 0 ? 0 : errno;
    r->fd = -1;
    release(r);
    return rc;
  }
  if (r->anonymous && (rc = link_tmpfile(r)) != 0) {
    jq_replace_abort(r);
    return rc;
  }
  rc = close(r->fd) == 0 ? 0 : errno;
  r->fd = -1;
  if (rc == 0 && rename(r->temp, r->target) != 0)
    rc = errno;
  if (rc == 0) {
    release(r);
    return 0;
  }
  jq_replace_abort(r);
  return rc;
}

int jq_replace_with(const char *path, int (*fill)(int fd, void *arg), void *arg, char *err,
                    size_t errlen) {
  jq_replace file;
  int rc = jq_replace_open(&file, path);
  if (rc == 0) {
    rc = fill(file.fd, arg);
    if (rc == 0)
      rc = jq_replace_commit(&file);
    else
      jq_replace_abort(&file);
  }
  if (rc != 0) {
    char why[PATH_MAX + 32];
    snprintf(err, errlen, "cannot write trace to '%s': %s", path,
             jq_replace_reason_at(&file, rc, path, why, sizeof why));
  }
  return rc;
}
