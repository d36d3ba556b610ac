/*
 * json_writer.h - the buffered Perfetto JSON writer.
 *
 * Owns: the file format (traceEvents + the jobqueProfile sibling key), JSON
 * string escaping and number formatting. The file itself is written by
 * file_replace.c (atomic replace, symlinks followed, devices in place).
 * Must not: call Lua, take locks or read live lanes: it formats a snapshot
 * (jq_save_view, snapshot.h) that session.c built while the session was
 * quiescent; it knows the events only by their vocabulary (events.h).
 * Thread safety: reentrant; uses only its arguments.
 */
#ifndef JQ_JSON_WRITER_H
#define JQ_JSON_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "record/snapshot.h"

/* Returns 0, or an errno value with a message in `err`. */
int jq_json_save(const jq_save_view *v, const char *path, char *err, size_t errlen);

/* What a reader of the JSON gets back, for the protobuf writer to write the
 * same: the time (ns, as llround(us * 1000) reads it) of the k-th (from 1)
 * arrow end in a first slice from a to z, and a duration from a to z as the
 * JSON prints it (us, in 2048ths). */
uint64_t jq_json_after_ns(uint64_t a_ns, uint64_t z_ns, uint64_t k);
double jq_json_dur_us(uint64_t a_ns, uint64_t z_ns);

struct jq_save_links;
/* The text of the jobqueProfile object the JSON file would hold, for the
 * protobuf file's trace attribute (l: built for v). 0 with *text (malloc,
 * NUL-ended) and *len, or an errno. */
int jq_json_profile_text(const jq_save_view *v, const struct jq_save_links *l, char **text,
                         size_t *len);

#ifdef JQ_TESTING
/* What the writer prints for a slice from a_ns to z_ns (nanoseconds since
 * the session's start): `ts,"dur":dur`, at most 80 bytes, not terminated.
 * Returns its length (the specs' view of the times' rounding). */
#define JQ_JSON_SPAN_TEXT_MAX 80
size_t jq_json_span_text(char *out, uint64_t a_ns, uint64_t z_ns);
#endif

#endif
