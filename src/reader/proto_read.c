/*
 * proto_read.c - a .pftrace that jobque_profile wrote, read back as the JSON
 * text of the same session (docs/trace-format.md, "Protobuf"): the loader
 * (load.c) then reads that text as it reads a JSON trace, so both files of
 * a session make one model, with no second reading of events to keep in
 * step with the first.
 *
 * Two passes over the packets. The first checks their framing and finds
 * what events need first: the trace attribute `jobqueProfile` (its absence
 * means another tool's trace), the session's clock snapshot and the track
 * descriptors (lanes, counters). The second follows each packet sequence's
 * interning and incremental clock and writes the events as the JSON writer
 * does: a slice's end makes its "X" (or an await's "b" and "e"), instants,
 * counters ("C", the values of one name at one time in one), and perf
 * samples (proto_json.c), whose stacks and context (the string their
 * callstack iid names) become "stackFrames" and "samples". Times are the
 * JSON's exactly: common/json_put.h prints them from the same nanoseconds;
 * where the JSON's order of slices at one time depends on the order the
 * writer puts them in, it is kept: a span piece inside a job's slice comes
 * after that slice, an `after` arrow's end after its job's first slice, at
 * the time the JSON gives it.
 */
#include "reader/proto_read.h"
#include "reader/json_scan.h"
#include "reader/proto_rd.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/events.h"

/* ---- the wire ---- */


int pr_damaged(rd *r, size_t at, const char *why) {
  if (!r->fail) {
    if (at == WHOLE)
      snprintf(r->err, r->errlen, "damaged protobuf (%s)", why);
    else
      snprintf(r->err, r->errlen, "damaged protobuf at byte %zu (%s)", at, why);
    r->fail = -1;
  }
  return -1;
}

/* Another tool's trace: it has no trace attribute jobqueProfile. */
static int foreign(rd *r) {
  if (!r->fail) {
    snprintf(r->err, r->errlen, "a Perfetto trace not written by jobque_profile (open it in Perfetto)");
    r->fail = -1;
  }
  return -1;
}

int pr_oom(rd *r) {
  if (!r->fail)
    r->fail = ENOMEM;
  return -1;
}

/* A varint at *at (moved past it): 0, 1 when it runs past end, 2 when
 * longer than 10 bytes. */
static int varint_at(const unsigned char *s, size_t *at, size_t end, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*at >= end)
      return 1;
    unsigned b = s[(*at)++];
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return 2;
}

int pr_varint(rd *r, size_t *at, size_t end, uint64_t *v) {
  size_t start = *at;
  int rc = varint_at(r->s, at, end, v);
  return rc == 0   ? 0
       : rc == 1 ? pr_damaged(r, start, "a number runs past the end of its message")
                 : pr_damaged(r, start, "a number longer than 10 bytes");
}


/* The next field of the message ending at end: 1, 0 at its end, -1. */
int pr_next_field(rd *r, size_t *pos, size_t end, field *f) {
  if (*pos >= end)
    return 0;
  size_t start = *pos;
  uint64_t tag;
  if (pr_varint(r, pos, end, &tag) != 0)
    return -1;
  f->num = (uint32_t)(tag >> 3);
  f->wt = (int)(tag & 7);
  f->at = start;
  f->v = 0;
  f->len = 0;
  if (tag >> 3 == 0 || tag >> 32)
    return pr_damaged(r, start, "a field numbered 0 or above 2^29");
  switch (f->wt) {
  case 0: return pr_varint(r, pos, end, &f->v) == 0 ? 1 : -1;
  case 1:
  case 5: {
    size_t w = f->wt == 1 ? 8 : 4;
    if (end - *pos < w)
      return pr_damaged(r, start, "a field runs past the end of its message");
    f->v = 0;
    for (size_t i = 0; i < w; i++)
      f->v |= (uint64_t)r->s[*pos + i] << (8 * i);
    *pos += w;
    return 1;
  }
  case 2: {
    uint64_t len;
    if (pr_varint(r, pos, end, &len) != 0)
      return -1;
    if (len > end - *pos)
      return pr_damaged(r, start, "a field runs past the end of its message");
    f->at = *pos;
    f->len = (size_t)len;
    *pos += (size_t)len;
    return 1;
  }
  default: return pr_damaged(r, start, "a group or an unknown wire type: not a field jobque_profile writes");
  }
}

str pr_field_str(const rd *r, const field *f) {
  return (str){(const char *)r->s + f->at, f->len};
}

/* ---- output ---- */

/* Room for `need` more bytes of JSON: where to write, or NULL (ENOMEM). */
char *pr_room(rd *r, size_t need) {
  if (jq_vec_reserve(r->out, need) != 0) {
    pr_oom(r);
    return NULL;
  }
  return r->out->p + r->out->n;
}

void pr_done(rd *r, char *p) {
  r->out->n = (size_t)(p - r->out->p);
}


char *pr_put_str(char *p, str s) {
  *p++ = '"';
  p = jq_json_escape(p, s.p, s.n);
  *p++ = '"';
  return p;
}

/* ---- the first pass: framing, the attribute, the clocks, the tracks ---- */

static int read_attributes(rd *r, const field *pf) {
  size_t pos = pf->at, end = pf->at + pf->len;
  field f;
  int got;
  while ((got = pr_next_field(r, &pos, end, &f)) > 0) {
    if (f.num != 1 || f.wt != 2)
      continue;
    size_t q = f.at, qend = f.at + f.len;
    field g;
    str key = {NULL, 0}, val = {NULL, 0};
    int has_val = 0;
    while ((got = pr_next_field(r, &q, qend, &g)) > 0) {
      if (g.num == 1 && g.wt == 2)
        key = pr_field_str(r, &g);
      else if (g.num == 3 && g.wt == 2)
        val = pr_field_str(r, &g), has_val = 1;
    }
    if (got < 0)
      return -1;
    if (has_val && key.n == 13 && memcmp(key.p, "jobqueProfile", 13) == 0 && !r->profile.p)
      r->profile = val;
  }
  return got;
}

/* A clock snapshot: the BOOTTIME reading into *boot, the lane clock's
 * into *lane (has: bit 1 boot, bit 2 lane). */
static int read_clocks(rd *r, const field *pf, int64_t *boot, uint64_t *lane, int *has) {
  size_t pos = pf->at, end = pf->at + pf->len;
  field f;
  int got;
  *has = 0;
  while ((got = pr_next_field(r, &pos, end, &f)) > 0) {
    if (f.num != 1 || f.wt != 2)
      continue;
    size_t q = f.at, qend = f.at + f.len;
    field g;
    uint64_t id = 0, ts = 0;
    while ((got = pr_next_field(r, &q, qend, &g)) > 0) {
      if (g.num == 1 && g.wt == 0)
        id = g.v;
      else if (g.num == 2 && g.wt == 0)
        ts = g.v;
    }
    if (got < 0)
      return -1;
    if (id == CLOCK_BOOTTIME && ts <= INT64_MAX)
      *boot = (int64_t)ts, *has |= 1;
    else if (id == CLOCK_LANE)
      *lane = ts, *has |= 2;
  }
  return got;
}

static int add_track(rd *r, const track *t) {
  if (map_get(&r->track_of, t->uuid))
    return 0; /* described once by the writer; a repeat adds nothing */
  if (r->ntracks == r->captracks) {
    size_t cap = r->captracks ? 2 * r->captracks : 64;
    track *nt = realloc(r->tracks, cap * sizeof *nt);
    if (!nt)
      return pr_oom(r);
    r->tracks = nt;
    r->captracks = cap;
  }
  r->tracks[r->ntracks++] = *t;
  return map_put(&r->track_of, t->uuid, r->ntracks) ? pr_oom(r) : 0;
}

/* A thread's or process's descriptor: name and kind into t. */
static int read_owner(rd *r, const field *pf, track *t, int kind) {
  size_t pos = pf->at, end = pf->at + pf->len;
  field f;
  int got;
  t->kind = kind;
  while ((got = pr_next_field(r, &pos, end, &f)) > 0)
    if (f.wt == 2 && ((kind == K_THREAD && f.num == 5) || (kind == K_PROCESS && f.num == 6)))
      t->name = pr_field_str(r, &f);
  return got;
}

static int read_track(rd *r, const field *pf) {
  size_t pos = pf->at, end = pf->at + pf->len;
  field f;
  int got, has_uuid = 0;
  track t;
  memset(&t, 0, sizeof t);
  while ((got = pr_next_field(r, &pos, end, &f)) > 0) {
    if (f.num == 1 && f.wt == 0)
      t.uuid = f.v, has_uuid = 1;
    else if (f.num == 2 && f.wt == 2 && t.kind != K_THREAD && t.kind != K_PROCESS)
      t.name = pr_field_str(r, &f);
    else if (f.num == 3 && f.wt == 2)
      got = read_owner(r, &f, &t, K_PROCESS);
    else if (f.num == 4 && f.wt == 2)
      got = read_owner(r, &f, &t, K_THREAD);
    else if (f.num == 8 && f.wt == 2 && t.kind == K_OTHER)
      t.kind = K_COUNTER;
    else if (f.num == 12 && f.wt == 0)
      t.rank = f.v, t.has_rank = 1;
    if (got < 0)
      return -1;
  }
  if (got < 0 || !has_uuid)
    return got < 0 ? -1 : 0;
  if (t.kind == K_PROCESS && !r->process_name.p)
    r->process_name = t.name;
  if (t.kind == K_COUNTER) { /* "<the JSON's name> <its key>" */
    size_t k = t.name.n;
    while (k > 0 && t.name.p[k - 1] != ' ')
      k--;
    t.key = k ? (str){t.name.p + k, t.name.n - k} : (str){"value", 5};
    t.name.n = k ? k - 1 : t.name.n;
  }
  return add_track(r, &t);
}

/* Lanes: the thread tracks in sibling_order_rank order (then file order). */
static int number_lanes(rd *r) {
  int n = 0;
  for (size_t i = 0; i < r->ntracks; i++)
    n += r->tracks[i].kind == K_THREAD;
  if (n == 0)
    return pr_damaged(r, WHOLE, "no thread track is described");
  int *seen = calloc((size_t)n, sizeof *seen);
  if (!seen)
    return pr_oom(r);
  int next = 0, rc = 0;
  for (size_t i = 0; i < r->ntracks && !rc; i++) {
    track *t = &r->tracks[i];
    if (t->kind != K_THREAD)
      continue;
    int lane = t->has_rank && t->rank < (uint64_t)n ? (int)t->rank : -1;
    if (lane < 0 || seen[lane])
      rc = pr_damaged(r, WHOLE, "the thread tracks' sibling_order_rank are not 0, 1, 2, ...");
    else
      seen[lane] = 1, t->lane = lane, next++;
  }
  free(seen);
  r->nlanes = n;
  return rc;
}

/* The attribute jobqueProfile is one JSON object and nothing else (it is
 * copied into the JSON text whole: a damaged one would be reported at a
 * byte of that text, and one that closed the object could add events). */
static int check_profile(rd *r) {
  jq_src t = {r->profile.p, r->profile.n, 0, NULL, NONE, 0};
  size_t i = ws(&t, 0), end;
  const char *why;
  if (i >= t.n || t.s[i] != '{')
    why = "not an object", end = i;
  else if (!(end = skip_value(&t, i, 0)))
    why = t.err, end = t.err_at;
  else if ((end = ws(&t, end)) < t.n)
    why = "text after the object";
  else
    return 0;
  char msg[128];
  snprintf(msg, sizeof msg, "its attribute jobqueProfile is not a JSON object: %s", why);
  return pr_damaged(r, (size_t)((const unsigned char *)r->profile.p - r->s) + end, msg);
}

static int first_pass(rd *r) {
  size_t pos = 0;
  while (pos < r->n) {
    size_t start = pos;
    field pkt;
    if (r->s[pos] != 0x0A)
      return pr_damaged(r, start, "a field other than a packet at the top level");
    pos++;
    uint64_t len;
    int rc = varint_at(r->s, &pos, r->n, &len);
    if (rc != 0)
      return pr_damaged(r, start, rc == 1 ? "a packet's length runs past the end of the file"
                                       : "a packet's length is a number longer than 10 bytes");
    if (len > r->n - pos)
      return pr_damaged(r, start, "a packet runs past the end of the file");
    size_t q = pos, end = pos + (size_t)len;
    pos = end;
    int got, has_seq = 0;
    field f;
    size_t clocks = 0, clocks_len = 0;
    while ((got = pr_next_field(r, &q, end, &f)) > 0) {
      if (f.num == TP_ATTRIBUTES && f.wt == 2)
        got = read_attributes(r, &f);
      else if (f.num == TP_TRACK_DESC && f.wt == 2)
        got = read_track(r, &f);
      else if (f.num == TP_SEQ_ID)
        has_seq = 1;
      else if (f.num == TP_CLOCK_SNAPSHOT && f.wt == 2)
        clocks = f.at, clocks_len = f.len;
      if (got < 0)
        return -1;
    }
    if (got < 0)
      return -1;
    if (clocks_len && !has_seq && !r->has_boot0) {
      pkt.at = clocks, pkt.len = clocks_len;
      int64_t boot = 0;
      uint64_t unused;
      int has;
      if (read_clocks(r, &pkt, &boot, &unused, &has) != 0)
        return -1;
      if (has & 1)
        r->boot0 = boot, r->has_boot0 = 1;
    }
  }
  if (!r->profile.p)
    return foreign(r);
  if (check_profile(r) != 0)
    return -1;
  if (!r->has_boot0)
    return pr_damaged(r, WHOLE, "no clock snapshot of the session's start");
  return number_lanes(r);
}

/* ---- the second pass: the sequences ---- */

/* Sequence `id`'s state, made at its first packet (each in a block of its
 * own: open slices point at it while more sequences come). */
static seq *seq_of(rd *r, uint64_t id) {
  uint64_t k = map_get(&r->seq_of, id);
  if (k)
    return r->seqs[k - 1];
  if ((r->nseqs & (r->nseqs - 1)) == 0) { /* room doubles at powers of two */
    seq **ns = realloc(r->seqs, (r->nseqs ? 2 * r->nseqs : 1) * sizeof *ns);
    if (!ns) {
      pr_oom(r);
      return NULL;
    }
    r->seqs = ns;
  }
  seq *sq = calloc(1, sizeof *sq);
  if (!sq || map_put(&r->seq_of, id, r->nseqs + 1) != 0) {
    free(sq);
    pr_oom(r);
    return NULL;
  }
  r->seqs[r->nseqs++] = sq;
  sq->id = id;
  sq->lane = -1;
  return sq;
}

static void seq_clear(seq *sq) {
  for (int t = 0; t < TABLES; t++)
    map_clear(&sq->tab[t]);
  sq->clock = 0, sq->def_track = 0, sq->nextra = sq->ndextra = 0;
  sq->valid = 1;
}

static const track *track_at(const rd *r, uint64_t uuid) {
  uint64_t i = map_get(&r->track_of, uuid);
  return i ? &r->tracks[i - 1] : NULL;
}

/* An entry of table t: its bytes, or an empty str (p NULL) when unknown. */
str pr_looked_up(const rd *r, const seq *sq, int t, uint64_t iid) {
  uint64_t i = map_get(&sq->tab[t], iid);
  return i ? ((const str *)(const void *)r->strs.p)[i - 1] : (str){NULL, 0};
}

/* Interned data: each entry (iid 1, then its bytes: a name's field 2, or
 * the whole message of a frame or a callstack) into the sequence's table. */
static int read_interned(rd *r, seq *sq, const field *pf) {
  static const struct { uint32_t field; int table, whole; } kinds[] = {
      {ID_NAMES, T_NAMES, 0}, {ID_CATEGORIES, T_CATS, 0}, {ID_ANNOTATION_NAMES, T_ANAMES, 0},
      {ID_FUNCTION_NAMES, T_FNAMES, 0}, {ID_FRAMES, T_FRAMES, 1}, {ID_CALLSTACKS, T_STACKS, 1},
      {ID_STRING_VALUES, T_SVALS, 0}};
  size_t pos = pf->at, end = pf->at + pf->len;
  field f;
  int got;
  while ((got = pr_next_field(r, &pos, end, &f)) > 0) {
    int k = 0;
    while (k < (int)(sizeof kinds / sizeof kinds[0]) && kinds[k].field != f.num)
      k++;
    if (k == (int)(sizeof kinds / sizeof kinds[0]) || f.wt != 2)
      continue;
    size_t q = f.at, qend = f.at + f.len;
    field g;
    uint64_t iid = 0;
    str val = kinds[k].whole ? pr_field_str(r, &f) : (str){"", 0};
    while ((got = pr_next_field(r, &q, qend, &g)) > 0) {
      if (g.num == 1 && g.wt == 0)
        iid = g.v;
      else if (g.num == 2 && g.wt == 2 && !kinds[k].whole)
        val = pr_field_str(r, &g);
    }
    if (got < 0)
      return -1;
    if (jq_vec_add(&r->strs, &val, sizeof val) != 0 ||
        map_put(&sq->tab[kinds[k].table], iid, r->strs.n / sizeof val) != 0)
      return pr_oom(r);
  }
  return got;
}

/* A list of uint64s, repeated or packed, into a (at most MAX_EXTRA). */
static int add_u64s(rd *r, const field *f, uint64_t *a, uint64_t *n) {
  if (f->wt == 0) {
    if (*n < MAX_EXTRA)
      a[(*n)++] = f->v;
    return 0;
  }
  size_t q = f->at, qend = f->at + f->len;
  while (q < qend) {
    uint64_t v;
    if (pr_varint(r, &q, qend, &v) != 0)
      return -1;
    if (*n < MAX_EXTRA)
      a[(*n)++] = v;
  }
  return 0;
}

static int read_defaults(rd *r, seq *sq, const field *pf) {
  size_t pos = pf->at, end = pf->at + pf->len;
  field f;
  int got;
  while ((got = pr_next_field(r, &pos, end, &f)) > 0) {
    if (f.num == TP_CLOCK_ID && f.wt == 0) {
      sq->clock = f.v == CLOCK_BOOTTIME ? 0 : f.v == CLOCK_LANE ? CLOCK_LANE : -1;
    } else if (f.num == TP_TRACK_EVENT && f.wt == 2) {
      size_t q = f.at, qend = f.at + f.len;
      field g;
      sq->nextra = sq->ndextra = 0;
      while ((got = pr_next_field(r, &q, qend, &g)) > 0) {
        if (g.num == TE_TRACK_UUID && g.wt == 0)
          sq->def_track = g.v;
        else if (g.num == TE_EXTRA_COUNTER_UUIDS && (g.wt == 0 || g.wt == 2))
          got = add_u64s(r, &g, sq->extra, &sq->nextra) == 0 ? 1 : -1;
        else if (g.num == TE_EXTRA_DOUBLE_UUIDS && (g.wt == 0 || g.wt == 2))
          got = add_u64s(r, &g, sq->dextra, &sq->ndextra) == 0 ? 1 : -1;
        if (got < 0)
          return -1;
      }
      if (got < 0)
        return -1;
      const track *t = track_at(r, sq->def_track);
      if (t && t->kind == K_THREAD)
        sq->lane = t->lane;
    }
  }
  return got;
}

/* ---- events ---- */

typedef struct te {
  int type, has_track, nannot, has_cv, has_dcv;
  uint64_t track, name_iid, cat_iid, flow, term;
  str name, cat;
  size_t annot_at[MAX_ANNOTS], annot_len[MAX_ANNOTS];
  int64_t cv;
  double dcv;
  uint64_t extra_uuid[MAX_EXTRA], nextra_uuid, dextra_uuid[MAX_EXTRA], ndextra_uuid;
  uint64_t extra[MAX_EXTRA], nextra, dextra[MAX_EXTRA], ndextra; /* values: an int64's or double's bits */
} te;

static int read_te_field(rd *r, te *e, const field *f) {
  switch (f->num) {
  case TE_TYPE: e->type = (int)f->v; break;
  case TE_TRACK_UUID: e->track = f->v, e->has_track = 1; break;
  case TE_NAME_IID: e->name_iid = f->v; break;
  case TE_NAME: if (f->wt == 2) e->name = pr_field_str(r, f); break;
  case TE_CATEGORY_IIDS: if (!e->cat_iid) e->cat_iid = f->v; break;
  case TE_CATEGORIES: if (f->wt == 2 && !e->cat.p) e->cat = pr_field_str(r, f); break;
  case TE_ANNOTATIONS:
    if (f->wt == 2 && e->nannot < MAX_ANNOTS)
      e->annot_at[e->nannot] = f->at, e->annot_len[e->nannot++] = f->len;
    break;
  case TE_FLOW_IDS: if (f->wt == 1 && !e->flow) e->flow = f->v; break;
  case TE_TERMINATING_FLOW_IDS: if (f->wt == 1 && !e->term) e->term = f->v; break;
  case TE_COUNTER_VALUE: e->cv = (int64_t)f->v, e->has_cv = 1; break;
  case TE_DOUBLE_COUNTER_VALUE:
    if (f->wt == 1)
      memcpy(&e->dcv, &f->v, sizeof e->dcv), e->has_dcv = 1;
    break;
  case TE_EXTRA_COUNTER_UUIDS: return add_u64s(r, f, e->extra_uuid, &e->nextra_uuid);
  case TE_EXTRA_DOUBLE_UUIDS: return add_u64s(r, f, e->dextra_uuid, &e->ndextra_uuid);
  case TE_EXTRA_COUNTER_VALUES: return add_u64s(r, f, e->extra, &e->nextra);
  case TE_EXTRA_DOUBLE_VALUES:
    if (f->wt == 1 && e->ndextra < MAX_EXTRA)
      e->dextra[e->ndextra++] = f->v;
    break;
  default: break;
  }
  return 0;
}

/* The track event at [at, at + len) of sequence sq, its names looked up. */
static int read_te(rd *r, const seq *sq, size_t at, size_t len, te *e) {
  size_t pos = at, end = at + len;
  field f;
  int got;
  memset(e, 0, sizeof *e);
  while ((got = pr_next_field(r, &pos, end, &f)) > 0)
    if (read_te_field(r, e, &f) != 0)
      return -1;
  if (got < 0)
    return -1;
  if (!e->has_track)
    e->track = sq->def_track;
  if (!e->name.p && e->name_iid)
    e->name = pr_looked_up(r, sq, T_NAMES, e->name_iid);
  if (!e->cat.p && e->cat_iid)
    e->cat = pr_looked_up(r, sq, T_CATS, e->cat_iid);
  return 0;
}

/* One debug annotation as `"key":value` (none when it has no value or
 * name we know). */
/* The debug annotation at [at, at + len): its name (p NULL when none
 * known) and its value's field (wt -1 when it has none). 0, or -1. */
static int read_annot(rd *r, const seq *sq, size_t at, size_t len, str *key, field *val) {
  size_t pos = at, end = at + len;
  field f;
  int got;
  *key = (str){NULL, 0};
  *val = (field){0, -1, 0, 0, 0};
  while ((got = pr_next_field(r, &pos, end, &f)) > 0) {
    if (f.num == 1 && f.wt == 0)
      *key = pr_looked_up(r, sq, T_ANAMES, f.v);
    else if (f.num == 10 && f.wt == 2)
      *key = pr_field_str(r, &f);
    else if ((f.num >= 2 && f.num <= 6) || f.num == 17)
      *val = f;
  }
  return got < 0 ? -1 : 0;
}

static int put_annot(rd *r, const seq *sq, size_t at, size_t len, int *first) {
  field val;
  str key;
  if (read_annot(r, sq, at, len, &key, &val) != 0)
    return -1;
  if (!key.p || val.wt < 0)
    return 0;
  double x;
  memcpy(&x, &val.v, sizeof x);
  if (val.num == 5 && !isfinite(x)) /* no JSON number */
    return pr_damaged(r, val.at, "a double that is not a finite number");
  str sv = val.num == 6 && val.wt == 2 ? pr_field_str(r, &val)
         : val.num == 17 ? pr_looked_up(r, sq, T_SVALS, val.v) : (str){NULL, 0};
  char *p = pr_room(r, 64 + 6 * (key.n + sv.n));
  if (!p)
    return -1;
  *p++ = *first ? '{' : ',';
  *first = 0;
  p = pr_put_str(p, key);
  *p++ = ':';
  if (val.num == 2)
    p = val.v ? LIT(p, "true") : LIT(p, "false");
  else if (val.num == 3)
    p = jq_put_u64(p, val.v);
  else if (val.num == 4)
    p = jq_put_i64(p, (int64_t)val.v);
  else if (val.num == 5) { /* a float as the JSON's (its one, parked_us, has a point): 9706.0, not 9706 */
    char *d = p;
    p = jq_put_double(p, x);
    while (d < p && (*d == '-' || (*d >= '0' && *d <= '9')))
      d++;
    if (d == p)
      p = LIT(p, ".0");
  } else
    p = pr_put_str(p, sv);
  pr_done(r, p);
  return 0;
}

/* ,"args":{...} of e's annotations (none without any). */
static int put_args(rd *r, const seq *sq, const te *e) {
  int first = 1;
  if (!e->nannot)
    return 0;
  char *p = pr_room(r, 16);
  if (!p)
    return -1;
  pr_done(r, LIT(p, ",\"args\":"));
  for (int i = 0; i < e->nannot; i++)
    if (put_annot(r, sq, e->annot_at[i], e->annot_len[i], &first) != 0)
      return -1;
  if (!(p = pr_room(r, 2)))
    return -1;
  pr_done(r, first ? LIT(p, "{}") : LIT(p, "}"));
  return 0;
}

/* ",\n{"ph":"P","ts":T" and the rest of an event's head up to its tid. */
static char *put_head(rd *r, char ph, const char *s, uint64_t ns, size_t more) {
  char *p = pr_room(r, 128 + more);
  if (!p)
    return NULL;
  p = LIT(p, ",\n{\"ph\":\"");
  *p++ = ph;
  *p++ = '"';
  if (s) {
    p = LIT(p, ",\"s\":\"");
    *p++ = *s;
    *p++ = '"';
  }
  p = LIT(p, ",\"ts\":");
  return jq_put_us_time(p, jq_us_of(ns));
}

static char *put_tid_name(char *p, int tid, str name) {
  p = LIT(p, ",\"pid\":1,\"tid\":");
  p = jq_put_u64(p, (uint64_t)tid);
  p = LIT(p, ",\"name\":");
  return pr_put_str(p, name);
}

/* The "job" integer among e's annotations, or 0. */
static int64_t annot_job(rd *r, const seq *sq, const te *e) {
  for (int i = 0; i < e->nannot; i++) {
    str key;
    field val;
    if (read_annot(r, sq, e->annot_at[i], e->annot_len[i], &key, &val) == 0 && val.num == 4 &&
        val.wt == 0 && pr_is_str(key, "job"))
      return (int64_t)val.v;
  }
  return 0;
}

/* ,"id2":{"local":"0x<job in lower-case hex>"} */
static char *put_id2(char *p, uint64_t v) {
  char hex[16];
  int n = 0;
  p = LIT(p, ",\"id2\":{\"local\":\"0x");
  do
    hex[n++] = jq_hex_lower[v & 15];
  while ((v >>= 4) != 0);
  while (n > 0)
    *p++ = hex[--n];
  return LIT(p, "\"}");
}

int pr_is_str(str s, const char *lit) {
  size_t n = strlen(lit);
  return s.p && s.n == n && memcmp(s.p, lit, n) == 0;
}

/* A slice that began at ns a (event b of sequence sq) and ends at z: an
 * "X" on a lane's track, an await's "b" and "e" on another. An arrow's
 * end point (category "flow") has "dur":0, as the JSON writer puts it; at,
 * when not NULL, is its time as the JSON has it. */
static int put_slice(rd *r, const seq *sq, const track *t, uint64_t a, uint64_t z, const te *b,
                     const jq_us_time *at) {
  int tid = (t->kind == K_THREAD ? t->lane : sq->lane) + 1;
  str name = b->name.p ? b->name : (str){"", 0};
  uint64_t job = t->kind == K_THREAD ? 0 : (uint64_t)annot_job(r, sq, b);
  for (int k = 0; k < (t->kind == K_THREAD ? 1 : 2); k++) {
    char ph = t->kind == K_THREAD ? 'X' : k == 0 ? 'b' : 'e';
    char *p = put_head(r, ph, NULL, k == 0 ? a : z, 6 * (name.n + b->cat.n) + 128);
    if (!p)
      return -1;
    if (at) { /* the head's time replaced by the JSON's */
      while (p[-1] != ':')
        p--;
      p = jq_put_us_time(p, *at);
    }
    if (ph == 'X' && pr_is_str(b->cat, JQ_CAT_FLOW)) {
      p = LIT(p, ",\"dur\":0");
    } else if (ph == 'X') {
      p = LIT(p, ",\"dur\":");
      p = jq_put_us_time(p, jq_us_diff(jq_us_of(a), jq_us_of(z)));
    }
    p = put_tid_name(p, tid, name);
    if (b->cat.p) {
      p = LIT(p, ",\"cat\":");
      p = pr_put_str(p, b->cat);
    }
    if (ph != 'X')
      p = put_id2(p, job);
    pr_done(r, p);
    if (put_args(r, sq, b) != 0)
      return -1;
    if (!(p = pr_room(r, 64)))
      return -1;
    if (b->flow || b->term) {
      p = LIT(p, ",\"bind_id\":");
      p = jq_put_u64(p, b->flow ? b->flow : b->term);
      p = b->flow ? LIT(p, ",\"flow_out\":true") : LIT(p, ",\"flow_in\":true");
    }
    pr_done(r, LIT(p, "}"));
  }
  return 0;
}

/* An instant: on a lane's track with its category ("s":"t"), a marker on
 * its kind's track ("s":"g"). */
static int put_instant(rd *r, const seq *sq, const track *t, uint64_t ns, const te *e) {
  int on_lane = t->kind == K_THREAD, tid = (on_lane ? t->lane : sq->lane) + 1;
  str name = e->name.p ? e->name : (str){"", 0};
  char *p = put_head(r, 'i', on_lane ? "t" : "g", ns, 6 * (name.n + e->cat.n) + 64);
  if (!p)
    return -1;
  p = put_tid_name(p, tid, name);
  if (e->cat.p) {
    p = LIT(p, ",\"cat\":");
    p = pr_put_str(p, e->cat);
  }
  pr_done(r, p);
  if (put_args(r, sq, e) != 0 || !(p = pr_room(r, 1)))
    return -1;
  pr_done(r, LIT(p, "}"));
  return 0;
}

/* A counter value on track uuid: a "C" of the track's name and key. */
static int put_counter(rd *r, const seq *sq, uint64_t uuid, uint64_t ns, int is_double, uint64_t bits,
                       size_t at) {
  const track *t = track_at(r, uuid);
  if (!t || t->kind != K_COUNTER)
    return pr_damaged(r, at, "a counter value on a track that is no counter track");
  double x;
  memcpy(&x, &bits, sizeof x);
  if (is_double && !isfinite(x)) /* no JSON number */
    return pr_damaged(r, at, "a double that is not a finite number");
  int tid = sq->lane + 1;
  char *p;
  if (r->last_c && r->out->n == r->last_c && r->last_c_ns == ns && r->last_c_tid == tid &&
      r->last_c_name.n == t->name.n && memcmp(r->last_c_name.p, t->name.p, t->name.n) == 0) {
    /* another value of the same name at the same time: one event, as the
     * JSON's queue counts ("ready", "running", "suspended") */
    r->out->n -= 2;
    if (!(p = pr_room(r, 64 + 6 * t->key.n)))
      return -1;
    *p++ = ',';
  } else {
    if (!(p = put_head(r, 'C', NULL, ns, 6 * (t->name.n + t->key.n) + 96)))
      return -1;
    p = put_tid_name(p, tid, t->name);
    p = LIT(p, ",\"args\":{");
  }
  p = pr_put_str(p, t->key);
  *p++ = ':';
  if (is_double) {
    p = jq_put_double(p, x);
  } else {
    p = jq_put_i64(p, (int64_t)bits);
  }
  pr_done(r, LIT(p, "}}"));
  r->last_c = r->out->n, r->last_c_ns = ns, r->last_c_tid = tid, r->last_c_name = t->name;
  return 0;
}

/* The extra counter values of an event, on the tracks it or the
 * sequence's defaults name. */
static int put_extra_counters(rd *r, const seq *sq, const te *e, uint64_t ns, size_t at) {
  const uint64_t *u = e->nextra_uuid ? e->extra_uuid : sq->extra;
  uint64_t nu = e->nextra_uuid ? e->nextra_uuid : sq->nextra;
  if (e->nextra > nu)
    return pr_damaged(r, at, "more extra counter values than counter tracks");
  for (uint64_t i = 0; i < e->nextra; i++)
    if (put_counter(r, sq, u[i], ns, 0, e->extra[i], at) != 0)
      return -1;
  u = e->ndextra_uuid ? e->dextra_uuid : sq->dextra;
  nu = e->ndextra_uuid ? e->ndextra_uuid : sq->ndextra;
  if (e->ndextra > nu)
    return pr_damaged(r, at, "more extra counter values than counter tracks");
  for (uint64_t i = 0; i < e->ndextra; i++)
    if (put_counter(r, sq, u[i], ns, 1, e->dextra[i], at) != 0)
      return -1;
  return 0;
}

/* Whether e has an annotation named `key`. */
static int has_annot(rd *r, const seq *sq, const te *e, const char *name) {
  for (int i = 0; i < e->nannot; i++) {
    str key;
    field val;
    if (read_annot(r, sq, e->annot_at[i], e->annot_len[i], &key, &val) == 0 && pr_is_str(key, name))
      return 1;
  }
  return 0;
}

/* `after` end w, at the time the JSON has: the k-th end of a job is
 * 1/2048 us after its first slice's start (at most at its end). */
static int put_after(rd *r, const later *w) {
  uint64_t f = map_get(&r->first_of, w->owner);
  jq_us_time us = jq_us_of(w->a);
  if (f) {
    first_slice *fs = &((first_slice *)(void *)r->firsts.p)[f - 1];
    jq_us_time j = jq_after_point(fs->a, fs->z, ++fs->ends);
    if (jq_ns_read(j) == w->a)
      us = j;
  }
  te b;
  if (read_te(r, w->o.sq, w->o.at, w->o.len, &b) != 0)
    return -1;
  return put_slice(r, w->o.sq, w->t, w->a, w->z, &b, &us);
}

/* The `after` ends waiting for job `job`'s first slice (all: job 0 and
 * all set), in the order they came. */
static int put_afters(rd *r, uint64_t job, int all) {
  if (all) {
    size_t n = r->afters.n / sizeof(later);
    for (size_t i = 0; i < n; i++) {
      later w = ((later *)(void *)r->afters.p)[i];
      if (!w.done && put_after(r, &w) != 0)
        return -1;
    }
    return 0;
  }
  uint64_t head = map_get(&r->after_head, job);
  if (head == 0 || head == UINT64_MAX) /* none waits (UINT64_MAX: those that did are written) */
    return 0;
  for (uint64_t k = head; k;) {
    later *w = &((later *)(void *)r->afters.p)[k - 1];
    later copy = *w;
    w->done = 1;
    if (put_after(r, &copy) != 0)
      return -1;
    k = copy.next;
  }
  return map_put(&r->after_head, job, UINT64_MAX) != 0 ? pr_oom(r) : 0;
}

/* Puts end w to wait for its job's first slice. */
static int wait_after(rd *r, later *w) {
  uint64_t tail = map_get(&r->after_tail, w->owner);
  if (map_get(&r->after_head, w->owner) == UINT64_MAX)
    tail = 0; /* a chain written already: a new one */
  if (jq_vec_add(&r->afters, w, sizeof *w) != 0)
    return pr_oom(r);
  uint64_t k = r->afters.n / sizeof *w;
  if (tail)
    ((later *)(void *)r->afters.p)[tail - 1].next = k;
  else if (map_put(&r->after_head, w->owner, k) != 0)
    return pr_oom(r);
  return map_put(&r->after_tail, w->owner, k) != 0 ? pr_oom(r) : 0;
}

static int cmp_piece(const void *x, const void *y) {
  const later *a = x, *b = y;
  if (a->a != b->a)
    return a->a < b->a ? -1 : 1;
  return a->depth < b->depth ? -1 : a->depth > b->depth;
}

/* Job slice `idx` (of job `job`) ended: it is the job's first slice when
 * none began before it; the pieces waiting for it are written. */
static int job_slice_ended(rd *r, size_t idx, int64_t job, uint64_t a, uint64_t z) {
  uint64_t f = map_get(&r->first_of, (uint64_t)job);
  first_slice *fs = (first_slice *)(void *)r->firsts.p;
  if (!f) {
    first_slice n = {a, z, 0};
    if (jq_vec_add(&r->firsts, &n, sizeof n) != 0 ||
        map_put(&r->first_of, (uint64_t)job, r->firsts.n / sizeof n) != 0)
      return pr_oom(r);
  } else if (a < fs[f - 1].a) {
    fs[f - 1].a = a, fs[f - 1].z = z;
  }
  if ((!f || a <= fs[f - 1].a) && put_afters(r, (uint64_t)job, 0) != 0)
    return -1; /* the JSON: a first slice, its after ends, its pieces */
  later *p = (later *)(void *)r->pieces.p;
  size_t n = r->pieces.n / sizeof *p, k = n;
  while (k > 0 && p[k - 1].owner == idx)
    k--;
  qsort(p + k, n - k, sizeof *p, cmp_piece); /* by start, then depth: the JSON's order */
  for (size_t i = k; i < n; i++) {
    te b;
    p = (later *)(void *)r->pieces.p;
    later w = p[i];
    if (read_te(r, w.o.sq, w.o.at, w.o.len, &b) != 0 || put_slice(r, w.o.sq, w.t, w.a, w.z, &b, NULL) != 0)
      return -1;
  }
  r->pieces.n = k * sizeof *p;
  return 0;
}

/* The innermost job slice open on t (index into opens), or CLOSED. */
static size_t open_job(const rd *r, const track *t) {
  const open_slice *os = (const open_slice *)(const void *)r->opens.p;
  return t->top && os[t->top - 1].job_at ? os[t->top - 1].job_at - 1 : CLOSED;
}

/* A slice's end: the innermost open slice of its track ends at ns (the
 * slices closed at the top of the list are dropped from it). A span piece
 * inside a job's slice waits for it, an `after` end for the pass's end. */
static int end_slice(rd *r, track *t, uint64_t ns, size_t at) {
  if (!t->top)
    return pr_damaged(r, at, "a slice ends that did not begin");
  open_slice *os = (open_slice *)(void *)r->opens.p;
  size_t idx = t->top - 1;
  open_slice o = os[idx];
  if (ns < o.ns)
    return pr_damaged(r, at, "a slice ends before it begins");
  os[idx].track = CLOSED;
  t->top = o.prev;
  te b;
  if (read_te(r, o.sq, o.at, o.len, &b) != 0)
    return -1;
  later w = {0, o.ns, ns, o.depth, o, t, 0, 0};
  if (t->kind == K_THREAD && ns == o.ns && pr_is_str(b.name, "after") && pr_is_str(b.cat, JQ_CAT_FLOW)) {
    w.owner = (size_t)annot_job(r, o.sq, &b);
    uint64_t f = map_get(&r->first_of, w.owner);
    const first_slice *fs = f ? &((const first_slice *)(const void *)r->firsts.p)[f - 1] : NULL;
    if (fs && fs->a <= ns && ns <= fs->z) { /* at its first slice's end: that ended just before */
      if (put_after(r, &w) != 0)
        return -1;
    } else if (wait_after(r, &w) != 0) {
      return -1;
    }
  } else if (t->kind == K_THREAD && (w.owner = open_job(r, t)) != CLOSED && has_annot(r, o.sq, &b, "piece")) {
    if (jq_vec_add(&r->pieces, &w, sizeof w) != 0)
      return pr_oom(r);
  } else if (put_slice(r, o.sq, t, o.ns, ns, &b, NULL) != 0 ||
             (o.is_job && job_slice_ended(r, idx, annot_job(r, o.sq, &b), o.ns, ns) != 0)) {
    return -1;
  }
  size_t n = r->opens.n / sizeof *os;
  os = (open_slice *)(void *)r->opens.p;
  while (n > 0 && os[n - 1].track == CLOSED)
    n--;
  r->opens.n = n * sizeof *os;
  return 0;
}

static int begin_slice(rd *r, seq *sq, track *t, uint64_t ns, const te *e, size_t at, size_t len) {
  const open_slice *os = (const open_slice *)(const void *)r->opens.p;
  open_slice o = {(size_t)(t - r->tracks), t->top, ns, at, len, sq,
                  t->top ? os[t->top - 1].depth + 1 : 0, t->kind == K_THREAD && pr_is_str(e->cat, JQ_CAT_JOB),
                  t->top ? os[t->top - 1].job_at : 0};
  if (jq_vec_add(&r->opens, &o, sizeof o) != 0)
    return pr_oom(r);
  t->top = r->opens.n / sizeof o;
  if (o.is_job)
    ((open_slice *)(void *)r->opens.p)[t->top - 1].job_at = t->top;
  return 0;
}

/* A track event at ns. */
static int track_event(rd *r, seq *sq, const field *f, uint64_t ns) {
  te e;
  if (read_te(r, sq, f->at, f->len, &e) != 0)
    return -1;
  if (sq->lane < 0)
    return pr_damaged(r, f->at, "an event on a sequence without a lane track as its default");
  uint64_t i = map_get(&r->track_of, e.track);
  track *t = i ? &r->tracks[i - 1] : NULL;
  if (e.type == TYPE_SLICE_BEGIN || e.type == TYPE_SLICE_END || e.type == TYPE_INSTANT) {
    if (!t || t->kind == K_COUNTER || t->kind == K_PROCESS)
      return pr_damaged(r, f->at, "a slice or instant on a track not described as a lane's, a marker's or an await's");
    int rc = e.type == TYPE_SLICE_BEGIN ? begin_slice(r, sq, t, ns, &e, f->at, f->len)
           : e.type == TYPE_SLICE_END   ? end_slice(r, t, ns, f->at)
                                        : put_instant(r, sq, t, ns, &e);
    if (rc != 0)
      return -1;
  } else if (e.type == TYPE_COUNTER) {
    if (!e.has_cv && !e.has_dcv)
      return pr_damaged(r, f->at, "a counter event without a value");
    uint64_t bits;
    memcpy(&bits, e.has_dcv ? (const void *)&e.dcv : (const void *)&e.cv, sizeof bits);
    if (put_counter(r, sq, e.track, ns, e.has_dcv, bits, f->at) != 0)
      return -1;
  }
  return put_extra_counters(r, sq, &e, ns, f->at);
}

/* ---- packets ---- */

typedef struct pkt {
  int has_seq, has_ts, has_clock;
  uint64_t seq_id, flags, ts, clock;
  field interned, defaults, clocks, event, sample;
} pkt;

/* The packet's time since the session's start (ns) into *ns: 0, 1 when
 * it has none, -1. */
static int packet_time(rd *r, seq *sq, const pkt *k, size_t at, uint64_t *ns) {
  if (!k->has_ts)
    return 1;
  int64_t clock = k->has_clock ? (k->clock == CLOCK_BOOTTIME ? 0 : k->clock == CLOCK_LANE ? CLOCK_LANE : -1)
                               : sq->clock;
  int64_t boot;
  if (clock == 0) {
    if (k->ts > INT64_MAX)
      return pr_damaged(r, at, "a time beyond 2^63 ns");
    boot = (int64_t)k->ts;
  } else if (clock == CLOCK_LANE && sq->inc_boot != INT64_MIN) {
    sq->inc += k->ts;
    if (sq->inc > (uint64_t)INT64_MAX - (uint64_t)(sq->inc_boot > 0 ? sq->inc_boot : 0))
      return pr_damaged(r, at, "a time beyond 2^63 ns");
    boot = sq->inc_boot + (int64_t)sq->inc;
  } else {
    return pr_damaged(r, at, "a time on a clock with no snapshot");
  }
  if (boot < r->boot0)
    return pr_damaged(r, at, "an event before the session's start");
  *ns = (uint64_t)(boot - r->boot0);
  return 0;
}

static int read_packet_fields(rd *r, size_t pos, size_t end, pkt *k) {
  field f;
  int got;
  memset(k, 0, sizeof *k);
  while ((got = pr_next_field(r, &pos, end, &f)) > 0) {
    switch (f.num) {
    case TP_SEQ_ID: k->seq_id = f.v, k->has_seq = f.wt == 0; break;
    case TP_SEQ_FLAGS: k->flags = f.v; break;
    case TP_TIMESTAMP: k->ts = f.v, k->has_ts = f.wt == 0; break;
    case TP_CLOCK_ID: k->clock = f.v, k->has_clock = f.wt == 0; break;
    case TP_INTERNED: if (f.wt == 2) k->interned = f; break;
    case TP_DEFAULTS: if (f.wt == 2) k->defaults = f; break;
    case TP_CLOCK_SNAPSHOT: if (f.wt == 2) k->clocks = f; break;
    case TP_TRACK_EVENT: if (f.wt == 2) k->event = f; break;
    case TP_PERF_SAMPLE: if (f.wt == 2) k->sample = f; break;
    default: break;
    }
  }
  return got;
}

/* One packet of the second pass (its bytes at [pos, end)). */
static int packet(rd *r, size_t pos, size_t end) {
  pkt k;
  if (read_packet_fields(r, pos, end, &k) < 0)
    return -1;
  if (!k.has_seq || k.seq_id == 0)
    return 0; /* setup packets: read in the first pass */
  seq *sq = seq_of(r, k.seq_id);
  if (!sq)
    return -1;
  if (k.flags & 1) {
    seq_clear(sq);
    sq->inc_boot = INT64_MIN;
  }
  if ((k.flags & 2) && !sq->valid)
    return 0; /* as Perfetto: needs a state the sequence never had */
  if (k.clocks.len) {
    int64_t boot = 0;
    uint64_t lane = 0;
    int has;
    if (read_clocks(r, &k.clocks, &boot, &lane, &has) != 0)
      return -1;
    if (has == 3 && lane <= (uint64_t)INT64_MAX)
      sq->inc = lane, sq->inc_boot = boot - (int64_t)lane;
  }
  if ((k.interned.len && read_interned(r, sq, &k.interned) != 0) ||
      (k.defaults.len && read_defaults(r, sq, &k.defaults) != 0))
    return -1;
  uint64_t ns = 0;
  int rc = packet_time(r, sq, &k, pos, &ns);
  if (rc < 0)
    return -1;
  if ((k.event.len || k.sample.len) && rc == 1)
    return pr_damaged(r, pos, "an event without a time");
  if (k.event.len && track_event(r, sq, &k.event, ns) != 0)
    return -1;
  if (k.sample.len && pr_perf_sample(r, sq, &k.sample, ns) != 0)
    return -1;
  return 0;
}

static int second_pass(rd *r) {
  size_t pos = 0;
  while (pos < r->n) {
    uint64_t len;
    pos++;
    if (pr_varint(r, &pos, r->n, &len) != 0 || packet(r, pos, pos + (size_t)len) != 0)
      return -1;
    pos += (size_t)len;
  }
  for (size_t i = 0; i < r->ntracks; i++)
    if (r->tracks[i].top)
      return pr_damaged(r, WHOLE, "a slice begins that never ends");
  return put_afters(r, 0, 1);
}

/* ---- the entry points ---- */

int jq_is_proto(const char *s, size_t n) {
  if (n == 0 || s[0] != 0x0A)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
      return c != '{' && c != '[';
  }
  return 0; /* white space alone */
}

int jq_proto_to_json(const char *s, size_t n, jq_vec *out, char *err, size_t errlen) {
  rd r;
  memset(&r, 0, sizeof r);
  r.s = (const unsigned char *)s;
  r.n = n;
  r.out = out;
  r.err = err;
  r.errlen = errlen;
  if (first_pass(&r) == 0 && pr_put_lanes(&r) == 0 && second_pass(&r) == 0)
    pr_put_tail(&r);
  for (size_t i = 0; i < r.nseqs; i++) {
    for (int t = 0; t < TABLES; t++)
      map_free(&r.seqs[i]->tab[t]);
    free(r.seqs[i]);
  }
  map_free(&r.seq_of);
  free(r.seqs);
  free(r.tracks);
  map_free(&r.track_of);
  map_free(&r.frame_of);
  jq_vec_free(&r.strs);
  jq_vec_free(&r.opens);
  jq_vec_free(&r.frames);
  jq_vec_free(&r.samples);
  jq_vec_free(&r.pieces);
  jq_vec_free(&r.afters);
  map_free(&r.after_head);
  map_free(&r.after_tail);
  jq_vec_free(&r.firsts);
  map_free(&r.first_of);
  if (r.fail)
    jq_vec_free(out);
  if (r.fail == ENOMEM)
    snprintf(err, errlen, "not enough memory");
  return r.fail;
}
