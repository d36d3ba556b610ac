/*
 * proto_read.h - a Perfetto protobuf trace that jobque_profile wrote
 * (docs/trace-format.md, "Protobuf") read back as the JSON text of the same
 * session, for the one loader of traces (load.c).
 * Owns: the text it makes (the caller frees it). Must not: call Lua, be
 * used by the record path. Thread safety: pure, on the caller's buffers.
 */
#ifndef JQ_PROTO_READ_H
#define JQ_PROTO_READ_H

#include <stddef.h>

#include "common/array.h"

/* Whether the n bytes at s are a protobuf trace rather than JSON: the
 * first byte is 0x0A (a packet's tag) and the first one that is not white
 * space is neither '{' nor '['. */
int jq_is_proto(const char *s, size_t n);

/* The JSON text of the trace at s (n bytes) into *out (empty at the call):
 * 0; or ENOMEM; or -1 with a sentence in err ("a Perfetto trace not
 * written by jobque_profile (open it in Perfetto)", "damaged protobuf at
 * byte N (why)"). *out holds nothing to free unless 0 is returned. */
int jq_proto_to_json(const char *s, size_t n, jq_vec *out, char *err, size_t errlen);

#endif
