/*
 * json_scan.h - finds exact integer marker args in a trace's JSON text.
 *
 * lua-cjson (Debian's 2.1.0) decodes every number as a double, so an
 * `args.arg` beyond 2^53 (a marker stamped with math.maxinteger) comes back
 * rounded; so does a counter's `args.value`. The reader calls this scan for such files only: one pass over
 * the text, no recursion (a fixed stack of container kinds), no allocation.
 * Owns: nothing. Must not: call Lua (core.c is the binding).
 * Thread safety: reentrant; uses only its arguments.
 */
#ifndef JQ_JSON_SCAN_H
#define JQ_JSON_SCAN_H

#include <stddef.h>
#include <stdint.h>

#define JQ_SCAN_MAX_DEPTH 1024 /* deeper than lua-cjson's default limit (1000) */

/* Called for event `index` (1-based, in "traceEvents" order, or the bare
 * array's) whose "args" object says what "arg" (or "value") is: exact = 1 and its value
 * when "arg" is an integer literal beyond +-2^53 that fits 64 bits, else
 * exact = 0 (what was reported for that event before no longer holds: a
 * later "args" or "arg" key replaces an earlier one, as in lua-cjson). A
 * second "traceEvents" key restarts the count (reset = 1, index 0). */
typedef void (*jq_scan_fn)(void *ud, uint64_t index, int exact, int64_t value, int reset);

/* Returns 0, or -1 when the text is not JSON this scan can follow (too
 * deep, or malformed): then nothing it reported can be trusted. */
int jq_json_scan_args(const char *text, size_t len, jq_scan_fn fn, void *ud);

#endif
