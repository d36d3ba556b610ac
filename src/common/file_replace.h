/*
 * file_replace.h - writes a file the way a careful editor does.
 *
 * Owns: the rules for every file jobque.core writes (traces, and whatever
 * Lua writes through core.write_file):
 *   - a symlink at the target is followed (a chain of them, dangling or
 *     not, up to 40): the file it points to is replaced, the link stays;
 *     but, as the kernel's protected_symlinks rule says, never a link in a
 *     sticky world-writable directory (a /tmp) that belongs neither to this
 *     process (its effective uid) nor to the directory's owner: that fails
 *     with EACCES before anything is written, and the reason names the link
 *     and its owner. Links among the path's directories are the kernel's
 *     to resolve (under its own protected_symlinks setting);
 *   - a regular file (or no file) is replaced atomically: the new contents
 *     go to an anonymous O_TMPFILE in the target's directory, which gets a
 *     name only when complete (linked to a random temporary name, then
 *     renamed over the target); where the file system has no O_TMPFILE, to
 *     an exclusively created temporary ".NAME.jqtmp-PID-RANDOM" instead.
 *     Every replace removes such temporaries of processes that no longer
 *     exist (owned by this user, in the same directory);
 *   - an existing file's mode and owner (where permitted) carry over; a new
 *     file gets 0666 less the umask;
 *   - a target that exists and is not a regular file (a device, a FIFO) is
 *     written in place; a FIFO without a reader fails at once (ENXIO), and
 *     a reader that goes away gives EPIPE, never SIGPIPE; a directory fails
 *     with EISDIR;
 *   - a write past the file-size limit (ulimit -f) fails with EFBIG, never
 *     a SIGXFSZ that ends the process.
 * Not against power loss: nothing is fsync'd.
 * Must not: call Lua, or take locks.
 * Thread safety: reentrant; a jq_replace belongs to one thread from open to
 * commit or abort (the SIGPIPE and SIGXFSZ mask is that thread's).
 */
#ifndef JQ_FILE_REPLACE_H
#define JQ_FILE_REPLACE_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct jq_replace {
  int fd;          /* write the contents here */
  int in_place;    /* fd is the target itself (not a regular file) */
  int anonymous;   /* fd is an O_TMPFILE that has no name yet */
  int fifo;        /* the target is a FIFO */
  int blocked;     /* SIGPIPE and SIGXFSZ are blocked (from open to commit or abort) */
  sigset_t oldmask, pending_before;
  char *target;    /* the path that gets replaced: symlinks resolved */
  char *temp;      /* the temporary's name (when it has one) */
  /* After an open that failed with EACCES on a link it would not follow:
   * why (jq_replace_reason's text); otherwise empty. */
  char refused[PATH_MAX + 256];
} jq_replace;

/* Prepares to replace `path`. Returns 0 with r->fd open for writing, or an
 * errno value (nothing then needs closing). */
int jq_replace_open(jq_replace *r, const char *path);

/* Puts the written contents in place and releases r. Returns 0 or an errno
 * value; on failure the target is as it was (unless written in place). */
int jq_replace_commit(jq_replace *r);

/* Drops what was written and releases r. */
void jq_replace_abort(jq_replace *r);

/* Replaces `path` with what fill(fd, arg) writes (0 or an errno): open,
 * write, then commit, or abort on a failure. 0, or an errno with err set
 * to "cannot write trace to 'PATH': REASON". */
int jq_replace_with(const char *path, int (*fill)(int fd, void *arg), void *arg, char *err,
                    size_t errlen);

/* Writes all n bytes to fd, retrying after EINTR. Returns 0 or errno. */
int jq_write_all(int fd, const void *p, size_t n);

/* The reason to show for an error of open or commit: strerror, or a clearer
 * sentence (a FIFO nobody reads, a link not followed). Valid after
 * commit/abort too. */
const char *jq_replace_reason(const jq_replace *r, int rc);

/* The same, but for ENOTDIR it names the part of `path` in the way
 * ("'a/b' is not a directory"), written into buf (n bytes). */
const char *jq_replace_reason_at(const jq_replace *r, int rc, const char *path, char *buf,
                                 size_t n);

#ifdef JQ_TESTING
/* Non-zero: act as if the file system had no O_TMPFILE. */
void jq_replace_test_without_tmpfile(int on);
/* Non-zero: the next write of a file blocks for good after its first bytes
 * (the killed-save specs kill the process then, deterministically). */
void jq_replace_test_hang_after_write(int on);
#endif

#endif
