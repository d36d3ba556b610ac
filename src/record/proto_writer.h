/*
 * proto_writer.h - writes a session snapshot as a Perfetto protobuf trace
 * (a stream of TracePackets: docs/trace-format.md, "Protobuf").
 *
 * Owns: the protobuf encoding of the events json_writer.c writes as JSON.
 * Must not: call Lua; format per event with stdio.
 * Thread safety: reentrant; reads only the snapshot it is given.
 */
#ifndef JQ_PROTO_WRITER_H
#define JQ_PROTO_WRITER_H

#include <stddef.h>

#include "record/snapshot.h"

/* Writes the snapshot to `path` (replaced atomically: file_replace.h).
 * 0, or an errno with err filled. */
int jq_proto_save(const jq_save_view *v, const char *path, char *err, size_t errlen);

#endif
