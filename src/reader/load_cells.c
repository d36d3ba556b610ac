/*
 * load_cells.c - the loader's storage: a column of the model is filled as
 * 8-byte cells (a tag per cell only once two kinds of value meet in it),
 * then, at the end, kept as a native column (columns.h) or made a Lua list
 * of its exact length (before trace.lua reads an event that may add to it,
 * too): no list grows by doubling, and the peak is the model plus the cells
 * not yet handed over. Also the model's strings (interned once: a cell
 * holds an index), the lanes' indexes, and the time order of a column's
 * cells (a natural merge sort).
 * Owns: the cells and tables of a loader (freed by jq_loader_free, its
 * userdata's __gc). Must not: be used by the record path. Thread safety:
 * one lua_State per load.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "reader/columns.h"
#include "reader/scratch.h"
#include "reader/load.h"
#include "reader/sort.h"

void jq_col_free(cells *c) {
  jq_vec_free(&c->v);
  jq_vec_free(&c->tag);
  c->n = 0;
}

/* The cells' tags kept one by one from now on (a cell of another kind than
 * tag0 comes). */
void jq_col_mixed(lua_State *L, cells *c) {
  unsigned char *tag = jq_vec_room(&c->tag, c->n, 1);
  if (!tag)
    jq_nomem(L);
  memset(tag, c->tag0, c->n);
}

/* Pushes a cell. */
static inline void push_cell(lua_State *L, int tag, uint64_t b) {
  double d;
  int64_t i;
  switch (tag) {
  case T_NUM:
    memcpy(&d, &b, sizeof d);
    lua_pushnumber(L, d);
    break;
  case T_INT:
    memcpy(&i, &b, sizeof i);
    lua_pushinteger(L, (lua_Integer)i);
    break;
  case T_STR:
    lua_rawgeti(L, S_STRS, (lua_Integer)b);
    break;
  case T_LANE:
    lua_rawgeti(L, S_LANES, (lua_Integer)b);
    break;
  case T_FALSE:
    lua_pushboolean(L, 0);
    break;
  default:
    lua_pushnil(L);
  }
}

/* The cells of c become items base+1 .. base+n of the list t[name] (t at
 * the absolute index `owner`): a new list of exactly base+n items (the
 * first base copied) when the cells are as many as those already there,
 * else appended; in the order `order` gives (NULL: as they are). c
 * emptied (its memory freed when `last`). */
static void col_flush(lua_State *L, cells *c, int owner, const char *name, lua_Integer base, int last,
                      const uint32_t *order) {
  if (c->n > 0) {
    lua_getfield(L, owner, name);
    int old = lua_gettop(L);
    lua_Integer n = (lua_Integer)c->n;
    const uint64_t *v = cells_v(c);
    int fresh = n >= base && base + n <= INT32_MAX;
    if (fresh) {
      lua_createtable(L, (int)(base + n), 0);
      for (lua_Integer k = 1; k <= base; k++) {
        lua_rawgeti(L, old, k);
        lua_rawseti(L, -2, k);
      }
    } else {
      luaL_checktype(L, old, LUA_TTABLE);
      lua_pushvalue(L, old);
    }
    if (order) {
      for (lua_Integer k = 0; k < n; k++) {
        push_cell(L, cell_tag(c, order[k]), v[order[k]]);
        lua_rawseti(L, -2, base + k + 1);
      }
    } else if (c->tag.p) {
      for (lua_Integer k = 0; k < n; k++) {
        push_cell(L, cell_tag(c, (size_t)k), v[k]);
        lua_rawseti(L, -2, base + k + 1);
      }
    } else if (c->tag0 == T_NUM) {
      for (lua_Integer k = 0; k < n; k++) {
        double d;
        memcpy(&d, &v[k], sizeof d);
        lua_pushnumber(L, d);
        lua_rawseti(L, -2, base + k + 1);
      }
    } else if (c->tag0 == T_STR) {
      for (lua_Integer k = 0; k < n; k++) {
        lua_rawgeti(L, S_STRS, (lua_Integer)v[k]);
        lua_rawseti(L, -2, base + k + 1);
      }
    } else {
      for (lua_Integer k = 0; k < n; k++) {
        push_cell(L, c->tag0, v[k]);
        lua_rawseti(L, -2, base + k + 1);
      }
    }
    if (fresh)
      lua_setfield(L, owner, name);
    lua_settop(L, old - 1);
  }
  c->n = c->v.n = 0;
  jq_vec_free(&c->tag);
  if (last)
    jq_col_free(c);
}

void jq_loader_free(loader *ld) {
  for (size_t k = 1; k <= ld->nlanes; k++)
    for (int c = 0; c < LANE_COLS; c++)
      jq_col_free(&lane_at(ld, (uint32_t)k)->c[c]);
  for (size_t k = 1; k <= ld->ntracks; k++) {
    jq_col_free(&track_at(ld, (uint32_t)k)->ts);
    jq_col_free(&track_at(ld, (uint32_t)k)->value);
  }
  for (int c = 0; c < COPY_COLS; c++)
    jq_col_free(&ld->copy[c]);
  for (int c = 0; c < EDGE_COLS; c++)
    jq_col_free(&ld->edge[c]);
  for (int c = 0; c < SAMPLE_COLS; c++)
    jq_col_free(&ld->smp[c]);
  jq_frames_free(ld);
  for (int c = 0; c < MARKER_COLS; c++)
    jq_col_free(&ld->marker[c]);
  jq_col_free(&ld->extra);
  jq_vec_free(&ld->lanes);
  jq_vec_free(&ld->tracks);
  jq_vec_free(&ld->dirty_lanes);
  jq_vec_free(&ld->dirty_tracks);
  jq_vec_free(&ld->order);
  free(ld->strs);
  free(ld->track_map);
  ld->strs = NULL;
  ld->track_map = NULL;
  ld->nlanes = ld->ntracks = 0;
  ld->nstrs = ld->strs_mask = ld->ntrack_keys = ld->track_mask = 0;
}

int jq_loader_gc(lua_State *L) {
  jq_loader_free(lua_touserdata(L, 1));
  return 0;
}

/* ---- the model's strings ---- */

/* The n (<= 8) bytes at p as one word, only those read: for n >= 4 the
 * first four and the last four (overlapping), for n < 4 the first, middle
 * and last byte. For a given n, two texts give the same word only when
 * they are the same bytes. */
static inline uint64_t short_word(const char *p, size_t n) {
  if (n >= 4) {
    uint32_t a, b;
    memcpy(&a, p, 4);
    memcpy(&b, p + n - 4, 4);
    return (uint64_t)a << 32 | b;
  }
  if (!n)
    return 0;
  return (uint64_t)(unsigned char)p[0] << 16 | (uint64_t)(unsigned char)p[n / 2] << 8 | (unsigned char)p[n - 1];
}

/* The model's strings are short (names, categories, counter keys): hashed
 * a word at a time, only their own bytes read. */
static uint64_t hash_bytes(const char *p, size_t len) {
  uint64_t h = (uint64_t)len * 0x9E3779B97F4A7C15ULL, w;
  size_t k = 0;
  for (; len - k > 8; k += 8) {
    memcpy(&w, p + k, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 32;
  }
  if (len - k == 8)
    memcpy(&w, p + k, 8);
  else
    w = short_word(p + k, len - k);
  h = (h ^ w) * 0x94D049BB133111EBULL;
  return h ^ (h >> 31);
}

/* a[0..len) and b[0..len) hold the same bytes. */
static inline int same_bytes(const char *a, const char *b, size_t len) {
  if (len > 16)
    return memcmp(a, b, len) == 0;
  if (len >= 8) {
    uint64_t x, y, u, v;
    memcpy(&x, a, 8);
    memcpy(&y, b, 8);
    memcpy(&u, a + len - 8, 8);
    memcpy(&v, b + len - 8, 8);
    return x == y && u == v;
  }
  return short_word(a, len) == short_word(b, len);
}

void jq_strs_grow(loader *ld) {
  size_t size = ld->strs_mask ? (ld->strs_mask + 1) * 2 : 256;
  str_slot *tab = calloc(size, sizeof *tab);
  if (!tab)
    jq_nomem(ld->L);
  for (size_t k = 0; ld->strs && k <= ld->strs_mask; k++) {
    if (!ld->strs[k].idx)
      continue;
    size_t j = ld->strs[k].hash & (size - 1);
    while (tab[j].idx)
      j = (j + 1) & (size - 1);
    tab[j] = ld->strs[k];
  }
  free(ld->strs);
  ld->strs = tab;
  ld->strs_mask = size - 1;
}

/* The index of the string p[0..len) in the list at S_STRS (put there when
 * new). */
uint32_t jq_intern(loader *ld, const char *p, size_t len) {
  uint64_t h = hash_bytes(p, len);
  size_t j = h & ld->strs_mask;
  for (; ld->strs[j].idx; j = (j + 1) & ld->strs_mask)
    if (ld->strs[j].hash == h && ld->strs[j].len == len && same_bytes(ld->strs[j].p, p, len))
      return ld->strs[j].idx;
  if (ld->nstrs >= UINT32_MAX - 1)
    jq_nomem(ld->L);
  lua_State *L = ld->L;
  uint32_t idx = (uint32_t)++ld->nstrs;
  lua_pushlstring(L, p, len);
  const char *kept = lua_tostring(L, -1);
  lua_rawseti(L, S_STRS, idx);
  ld->strs[j].p = kept;
  ld->strs[j].len = len;
  ld->strs[j].hash = h;
  ld->strs[j].idx = idx;
  if (ld->nstrs * 2 > ld->strs_mask)
    jq_strs_grow(ld);
  return idx;
}

/* The index of the string v (a V_STR), its escapes decoded. */
uint32_t jq_intern_val(loader *ld, const val *v) {
  if (!v->esc)
    return jq_intern(ld, ld->t.s + v->at + 1, v->end - v->at - 2);
  size_t len;
  jq_push_string(ld->L, &ld->t, v->at, v->end, 1);
  const char *p = lua_tolstring(ld->L, -1, &len);
  uint32_t idx = jq_intern(ld, p, len);
  lua_pop(ld->L, 1);
  return idx;
}

/* The index of the table on top (popped) in the list at `list` (by index)
 * and `index` (table -> index), put there when new; *fresh says it was. */
uint32_t jq_table_index(lua_State *L, int list, int index, size_t count, int *fresh) {
  lua_pushvalue(L, -1);
  if (lua_rawget(L, index) == LUA_TNUMBER) {
    uint32_t k = (uint32_t)lua_tointeger(L, -1);
    lua_pop(L, 2);
    *fresh = 0;
    return k;
  }
  lua_pop(L, 1);
  if (count >= UINT32_MAX - 1)
    jq_nomem(L);
  uint32_t k = (uint32_t)count + 1;
  lua_pushvalue(L, -1);
  lua_rawseti(L, list, k);
  lua_pushinteger(L, k);
  lua_rawset(L, index);
  *fresh = 1;
  return k;
}

/* The index of the table on top (popped) in the list at `list` (by index)
 * and `index` (table -> index); when new, an item of `size` zero bytes is
 * added to `items` (*count of them) for it. */
uint32_t jq_item_index(loader *ld, int list, int index, jq_vec *items, size_t *count, size_t size) {
  int fresh;
  uint32_t k = jq_table_index(ld->L, list, index, *count, &fresh);
  if (fresh) {
    void *item = jq_vec_room(items, *count + 1, size);
    if (!item)
      jq_nomem(ld->L);
    memset((char *)item + *count * size, 0, size);
    ++*count;
  }
  return k;
}

/* The index of the lane on top (popped), made a lane of the loader when new. */
uint32_t jq_lane_index(loader *ld) {
  return jq_item_index(ld, S_LANES, S_LANEIDX, &ld->lanes, &ld->nlanes, sizeof(lane_buf));
}

/* ---- the cells into the model ---- */

static lua_Integer int_field(lua_State *L, int idx, const char *k) {
  lua_getfield(L, idx, k);
  lua_Integer v = lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

/* Whether cell a of the time column (ctx) is earlier than cell b. */
static int earlier(void *ctx, uint32_t a, uint32_t b) {
  return cell_d(ctx, a) < cell_d(ctx, b);
}

/* The order of the cells of ts (times: doubles) by time, ties as they are
 * (jq_sort_stable), in ld->order: NULL when they are in it already.
 * trace.lua's sort_columns sorts a whole column the same way, so sorting
 * its last cells first changes nothing but its work. */
static const uint32_t *time_order(loader *ld, const cells *ts) {
  size_t n = ts->n;
  if (n < 2 || ts->tag.p || ts->tag0 != T_NUM)
    return NULL;
  size_t k = 1;
  while (k < n && !(cell_d(ts, (uint32_t)k) < cell_d(ts, (uint32_t)k - 1)))
    k++;
  if (k == n)
    return NULL;
  uint32_t *a = n < UINT32_MAX ? jq_vec_room(&ld->order, 2 * n, sizeof *a) : NULL;
  if (!a)
    jq_nomem(ld->L);
  for (k = 0; k < n; k++)
    a[k] = (uint32_t)k;
  jq_sort_stable(a, a + n, n, earlier, (void *)ts);
  return a;
}

/* ---- native columns: the cells kept as they are (columns.h) ---- */

/* The cells of c, all of owner[name] (none in a Lua list), become its
 * native column, in the order `order` gives (NULL: as they are); c
 * emptied, its memory the column's (or freed). */
static void col_native(loader *ld, cells *c, int owner, const char *name, const uint32_t *order) {
  lua_State *L = ld->L;
  size_t n = c->n;
  jq_column *col = jq_column_new(L, S_CSTRS);
  col->tag0 = c->tag0;
  if (order) {
    if (!(col->v = malloc(n * sizeof *col->v)))
      jq_nomem(L);
    for (size_t k = 0; k < n; k++)
      col->v[k] = cells_v(c)[order[k]];
    if (c->tag.p) {
      if (!(col->tag = malloc(n)))
        jq_nomem(L);
      for (size_t k = 0; k < n; k++)
        col->tag[k] = (unsigned char)c->tag.p[order[k]];
    }
  } else { /* the cells' own memory, cut to its exact size */
    uint64_t *v = realloc(c->v.p, n * sizeof *v);
    col->v = v ? v : cells_v(c);
    jq_vec_init(&c->v);
    if (c->tag.p) {
      unsigned char *tag = realloc(c->tag.p, n);
      col->tag = tag ? tag : (unsigned char *)c->tag.p;
      jq_vec_init(&c->tag);
    }
  }
  jq_col_free(c);
  col->n = n;
  jq_column_attach(L, owner, name);
}

/* trace.lua's markers_to_lanes for native markers (the cells of pid and
 * tid, in the order `order`; their ts native already): each lane's
 * marker_ts (the markers of its pid and tid, by model.lane_cache), and
 * model.loose_marker_ts for the others; marker_pid and marker_tid gone. */
static void markers_to_lanes(loader *ld, const uint32_t *order) {
  lua_State *L = ld->L;
  const cells *ts = &ld->marker[0], *pid = &ld->marker[3], *tid = &ld->marker[4];
  size_t n = ts->n;
  int top = lua_gettop(L);
  if (n > UINT32_MAX || n > SIZE_MAX / 16)
    jq_nomem(L);
  uint32_t *lane = lua_newuserdatauv(L, n * sizeof *lane + 1, 0);
  lua_getfield(L, S_MODEL, "lane_cache");
  int cache = lua_gettop(L);
  uint64_t last_p = 0, last_t = 0;
  int last_pt = -1, last_tt = -1;
  uint32_t last = 0;
  for (size_t k = 0; k < n; k++) {
    size_t i = order ? order[k] : k;
    int pt = cell_tag(pid, i), tt = cell_tag(tid, i);
    uint64_t pv = cells_v(pid)[i], tv = cells_v(tid)[i];
    if (!(pt == last_pt && tt == last_tt && pv == last_p && tv == last_t)) {
      last = 0;
      push_cell(L, pt, pv);
      if (lua_type(L, cache) == LUA_TTABLE && lua_rawget(L, cache) == LUA_TTABLE) {
        push_cell(L, tt, tv);
        if (lua_rawget(L, -2) == LUA_TTABLE)
          last = jq_lane_index(ld);
        else
          lua_pop(L, 1);
      }
      lua_settop(L, cache);
      last_pt = pt, last_tt = tt, last_p = pv, last_t = tv;
    }
    lane[k] = last;
  }
  /* the times grouped by lane (a counting sort), each group a column */
  size_t nl = ld->nlanes + 1;
  size_t *at = lua_newuserdatauv(L, (nl + 1) * sizeof *at, 0);
  uint64_t *v = lua_newuserdatauv(L, n * sizeof *v + 1, 0);
  memset(at, 0, (nl + 1) * sizeof *at);
  for (size_t k = 0; k < n; k++)
    at[lane[k] + 1]++;
  for (size_t l = 1; l <= nl; l++)
    at[l] += at[l - 1];
  for (size_t k = 0; k < n; k++)
    v[at[lane[k]]++] = cells_v(ts)[order ? order[k] : k];
  for (size_t l = nl; l > 0; l--) /* at[l]: the start of group l again */
    at[l] = at[l - 1];
  at[0] = 0;
  for (size_t l = 0; l < nl; l++) {
    size_t m = at[l + 1] - at[l];
    if (l > 0 && m == 0)
      continue;
    int owner = S_MODEL;
    if (l > 0) {
      lua_rawgeti(L, S_LANES, (lua_Integer)l);
      owner = lua_gettop(L);
    }
    const char *name = l > 0 ? "marker_ts" : "loose_marker_ts";
    if (m == 0) {
      lua_newtable(L);
      lua_setfield(L, owner, name);
    } else {
      jq_column *col = jq_column_new(L, S_CSTRS);
      col->tag0 = T_NUM;
      if (!(col->v = malloc(m * sizeof *col->v)))
        jq_nomem(L);
      memcpy(col->v, v + at[l], m * sizeof *col->v);
      col->n = m;
      jq_column_attach(L, owner, name);
    }
    if (l > 0)
      lua_pop(L, 1);
  }
  lua_pushnil(L);
  lua_setfield(L, S_MODEL, "marker_pid");
  lua_pushnil(L);
  lua_setfield(L, S_MODEL, "marker_tid");
  lua_settop(L, top);
}

/* The strings' userdata of the native columns (at S_CSTRS): the bytes of
 * each string of the list at S_STRS, by index. */
static void native_strings(loader *ld) {
  lua_State *L = ld->L;
  jq_strs *s = jq_strs_new(L, S_STRS, S_LANES, ld->nstrs);
  for (size_t j = 0; ld->strs && j <= ld->strs_mask; j++) {
    const str_slot *x = &ld->strs[j];
    if (x->idx && x->idx <= ld->nstrs)
      s->p[x->idx] = x->p, s->len[x->idx] = x->len;
  }
  lua_replace(L, S_CSTRS);
}

/* The greatest of a lane's durations (trace.lua's order_lanes: 0, else
 * the float that beats it). */
static void set_maxdur(loader *ld, const cells *dur, int lane) {
  lua_State *L = ld->L;
  double max = 0;
  int any = 0;
  for (size_t k = 0; k < dur->n; k++) {
    int tag = cell_tag(dur, k);
    if (tag != T_NUM)
      luaL_error(L, "load_trace: a duration is not a number");
    double d = cell_d(dur, (uint32_t)k);
    if (d > max)
      max = d, any = 1;
  }
  if (any)
    lua_pushnumber(L, max);
  else
    lua_pushinteger(L, 0);
  lua_setfield(L, lane, "maxdur");
}

/* The model's columns `cols` (n of them, named `names`, `count` items in
 * all) into its lists, in file order; native (kept C cells) when `native`
 * and none of their items is in Lua yet. */
static void model_columns(loader *ld, cells *cols, int n, const char *const *names, lua_Integer count, int native,
                          int last) {
  lua_Integer base = count - (lua_Integer)cols[0].n;
  int keep = native && base == 0 && cols[0].n > 0;
  for (int c = 0; c < n; c++) {
    if (keep)
      col_native(ld, &cols[c], S_MODEL, names[c], NULL);
    else
      col_flush(ld->L, &cols[c], S_MODEL, names[c], base, last, NULL);
  }
}

/* Every cell into the model's lists (`last`: the load's end, the cells put
 * in time order and their memory freed as each column is done; a column
 * with no item in Lua stays native, see columns.h). */
void jq_flush_all(loader *ld, int last) {
  static const char *const lane_cols[] = {"ts", "dur", "cat", "kind", "sname", "job", "args"};
  static const char *const copy_cols[] = {"copy_ts", "copy_dur", "copy_lane", "copy_category",
                                          "copy_name", "copy_job", "copy_bytes"};
  static const char *const marker_cols[] = {"marker_ts", "marker_kind", "marker_arg", "marker_pid", "marker_tid"};
  static const char *const edge_cols[] = {"edge_ts", "edge_lane", "edge_kind", "edge_job", "edge_on", "edge_queue"};
  static const char *const sample_cols[] = {"sample_ts",  "sample_lane", "sample_frame", "sample_weight",
                                            "sample_cat", "sample_job",  "sample_span",  "sample_line"};
  lua_State *L = ld->L;
  int native = last;
  if (native)
    native_strings(ld);
  const uint32_t *dirty = (const uint32_t *)(void *)ld->dirty_lanes.p;
  for (size_t d = 0; d < ld->dirty_lanes.n / sizeof *dirty; d++) {
    uint32_t k = dirty[d];
    lane_buf *lb = lane_at(ld, k);
    lua_rawgeti(L, S_LANES, k);
    int lane = lua_gettop(L);
    lua_Integer base = int_field(L, lane, "n"), n = (lua_Integer)lb->c[0].n;
    const uint32_t *order = last ? time_order(ld, &lb->c[0]) : NULL;
    if (native && base == 0 && n > 0) {
      set_maxdur(ld, &lb->c[1], lane);
      for (int c = 0; c < LANE_COLS; c++)
        col_native(ld, &lb->c[c], lane, lane_cols[c], order);
    } else {
      for (int c = 0; c < LANE_COLS; c++)
        col_flush(L, &lb->c[c], lane, lane_cols[c], base, last, order);
    }
    lua_pushinteger(L, base + n);
    lua_setfield(L, lane, "n");
    lua_pop(L, 1);
    lb->dirty = 0;
  }
  ld->dirty_lanes.n = 0;
  dirty = (const uint32_t *)(void *)ld->dirty_tracks.p;
  for (size_t d = 0; d < ld->dirty_tracks.n / sizeof *dirty; d++) {
    uint32_t k = dirty[d];
    track_buf *tb = track_at(ld, k);
    lua_rawgeti(L, S_TRACKS, k);
    int track = lua_gettop(L);
    lua_Integer base = int_field(L, track, "n"), n = (lua_Integer)tb->ts.n;
    const uint32_t *order = last ? time_order(ld, &tb->ts) : NULL;
    if (native && base == 0 && n > 0) {
      col_native(ld, &tb->value, track, "value", order);
      col_native(ld, &tb->ts, track, "ts", order);
    } else {
      col_flush(L, &tb->value, track, "value", base, last, order);
      col_flush(L, &tb->ts, track, "ts", base, last, order);
    }
    lua_pushinteger(L, base + n);
    lua_setfield(L, track, "n");
    lua_pop(L, 1);
    tb->dirty = 0;
  }
  ld->dirty_tracks.n = 0;
  model_columns(ld, ld->copy, COPY_COLS, copy_cols, ld->ncopies, native, last);
  model_columns(ld, ld->edge, EDGE_COLS, edge_cols, ld->nedges, native, last);
  model_columns(ld, ld->smp, SAMPLE_COLS, sample_cols, ld->nsamples, native, last);
  lua_Integer base = ld->nmarkers - (lua_Integer)ld->marker[0].n;
  const uint32_t *order = last ? time_order(ld, &ld->marker[0]) : NULL;
  if (native && base == 0 && ld->marker[0].n > 0) {
    markers_to_lanes(ld, order);
    for (int c = 2; c >= 0; c--)
      col_native(ld, &ld->marker[c], S_MODEL, marker_cols[c], order);
    jq_col_free(&ld->marker[3]);
    jq_col_free(&ld->marker[4]);
  } else {
    for (int c = MARKER_COLS - 1; c >= 0; c--)
      col_flush(L, &ld->marker[c], S_MODEL, marker_cols[c], base, last, order);
  }
  order = last ? time_order(ld, &ld->extra) : NULL;
  base = ld->nextra - (lua_Integer)ld->extra.n;
  if (native && base == 0 && ld->extra.n > 0)
    col_native(ld, &ld->extra, S_MODEL, "extra_ts", order);
  else
    col_flush(L, &ld->extra, S_MODEL, "extra_ts", base, last, order);
}

