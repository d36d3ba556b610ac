/*
 * stats.h - jobque_profile.stats' per-event loops in C (issue 12).
 *
 * Owns: nothing past a call but the marker units it returns and the busy
 * pieces they read (userdata).
 * Must not: change the model it reads. Thread safety: reentrant (one
 * lua_State per call).
 */
#ifndef JQ_STATS_H
#define JQ_STATS_H

#include <lua.h>

/* Sets the figures' functions in the table on top of the stack (see
 * stats.c; each returns nil when it leaves the input to stats.lua):
 *   stats_lanes(model, from, to, top, cat_index, names) -> the lane sweeps,
 *     their events and the marker kinds' units over [from, to]
 *   stats_counters(model, from, to) -> stats.lua's counter_stats
 *   stats_copies(model, from, to) -> stats.lua's copies, not yet sorted */
void jq_open_stats(lua_State *L);

#endif
