/*
 * proto_json.c - the parts of a .pftrace's JSON text (proto_read.c) that
 * come from more than one event: the lanes' names and order at the head;
 * the perf samples gathered as they come, their frames (each callstack's
 * path, named from the sequence's interned function names, its kinds from
 * the sample's context string) and their "stackFrames" and "samples" at
 * the tail, then the jobqueProfile object from the trace attribute.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reader/proto_rd.h"

/* ---- samples ---- */

/* Frame iid's function name in sequence sq (empty when unknown). */
static str frame_name(rd *r, const seq *sq, uint64_t iid) {
  str fm = pr_looked_up(r, sq, T_FRAMES, iid);
  size_t pos = (size_t)(fm.p ? (const unsigned char *)fm.p - r->s : 0), end = pos + fm.n;
  field f;
  uint64_t fn = 0;
  while (fm.p && pr_next_field(r, &pos, end, &f) > 0)
    if (f.num == 2 && f.wt == 0)
      fn = f.v;
  str name = fn ? pr_looked_up(r, sq, T_FNAMES, fn) : (str){NULL, 0};
  return name.p ? name : (str){"", 0};
}

/* The stack of callstack iid: its frames (root first) added to the
 * file's frames with their kinds (ctx's letters), its leaf into *leaf. */
static int add_stack(rd *r, const seq *sq, uint64_t iid, str kinds, uint64_t *leaf, size_t at) {
  str cs = pr_looked_up(r, sq, T_STACKS, iid);
  if (!cs.p)
    return pr_damaged(r, at, "a sample of a callstack not interned on its sequence");
  size_t pos = (size_t)((const unsigned char *)cs.p - r->s), end = pos + cs.n;
  field f;
  uint64_t parent = 0, n = 0;
  int got;
  while ((got = pr_next_field(r, &pos, end, &f)) > 0) {
    if (f.num != 2 || f.wt != 0)
      continue;
    if (f.v == 0)
      return pr_damaged(r, f.at, "a frame id 0");
    if (!map_get(&r->frame_of, f.v)) {
      char k = n < kinds.n ? kinds.p[n] : 'r';
      gframe g = {f.v, parent, frame_name(r, sq, f.v), k};
      if (jq_vec_add(&r->frames, &g, sizeof g) != 0 ||
          map_put(&r->frame_of, f.v, r->frames.n / sizeof g) != 0)
        return pr_oom(r);
    }
    parent = f.v, n++;
  }
  if (got < 0)
    return -1;
  if (n == 0)
    return pr_damaged(r, at, "a sample of an empty callstack");
  *leaf = parent;
  return 0;
}

/* The kinds' letters of a sample's context "JOB SPAN LINE KINDS CATEGORY". */
static str ctx_kinds(str ctx) {
  size_t i = 0;
  for (int sp = 0; sp < 3 && i < ctx.n; i++)
    sp += ctx.p[i] == ' ';
  size_t k = i;
  while (k < ctx.n && ctx.p[k] != ' ')
    k++;
  return (str){ctx.p + i, i <= ctx.n ? k - i : 0};
}

int pr_perf_sample(rd *r, seq *sq, const field *pf, uint64_t ns) {
  size_t pos = pf->at, end = pf->at + pf->len;
  field f;
  int got;
  uint64_t iid = 0, leaf = 0;
  while ((got = pr_next_field(r, &pos, end, &f)) > 0)
    if (f.num == 4 && f.wt == 0)
      iid = f.v;
  if (got < 0)
    return -1;
  if (sq->lane < 0)
    return pr_damaged(r, pf->at, "a sample on a sequence without a lane track as its default");
  gsample *last = r->samples.n ? (gsample *)(void *)(r->samples.p + r->samples.n) - 1 : NULL;
  if (last && last->lane == sq->lane && last->ns == ns && last->iid == iid) {
    last->weight++; /* a sample of weight W is W packets */
    return 0;
  }
  str ctx = pr_looked_up(r, sq, T_SVALS, iid);
  if (!ctx.p)
    ctx = (str){"0 0 0  no category", 18};
  if (add_stack(r, sq, iid, ctx_kinds(ctx), &leaf, pf->at) != 0)
    return -1;
  gsample g = {ns, iid, leaf, 1, sq->lane, ctx};
  return jq_vec_add(&r->samples, &g, sizeof g) ? pr_oom(r) : 0;
}

/* ---- the JSON ---- */

/* The head: the process's and lanes' names and the lanes' order. */
int pr_put_lanes(rd *r) {
  str pname = r->process_name.p ? r->process_name : (str){"jobque_profile", 14};
  char *p = pr_room(r, 128 + 6 * pname.n);
  if (!p)
    return -1;
  p = LIT(p, "{\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":");
  p = pr_put_str(p, pname);
  pr_done(r, LIT(p, "}}"));
  const track **of_lane = calloc((size_t)r->nlanes + 1, sizeof *of_lane); /* no scan of the tracks per lane */
  if (!of_lane)
    return pr_oom(r);
  for (size_t i = 0; i < r->ntracks; i++)
    if (r->tracks[i].kind == K_THREAD)
      of_lane[r->tracks[i].lane] = &r->tracks[i];
  for (int l = 0; l < r->nlanes; l++) {
    const track *t = of_lane[l];
    str name = t && t->name.p ? t->name : (str){"", 0};
    if (!(p = pr_room(r, 256 + 6 * name.n))) {
      free(of_lane);
      return -1;
    }
    p = LIT(p, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":");
    p = jq_put_u64(p, (uint64_t)l + 1);
    p = LIT(p, ",\"name\":\"thread_name\",\"args\":{\"name\":");
    p = pr_put_str(p, name);
    p = LIT(p, "}},\n{\"ph\":\"M\",\"pid\":1,\"tid\":");
    p = jq_put_u64(p, (uint64_t)l + 1);
    p = LIT(p, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
    p = jq_put_u64(p, (uint64_t)l);
    pr_done(r, LIT(p, "}}"));
  }
  free(of_lane);
  return 0;
}

static int cmp_frame(const void *a, const void *b) {
  const gframe *x = a, *y = b;
  return x->id < y->id ? -1 : x->id > y->id;
}

static int put_frames(rd *r) {
  gframe *fr = (gframe *)(void *)r->frames.p;
  size_t n = r->frames.n / sizeof *fr;
  qsort(fr, n, sizeof *fr, cmp_frame);
  char *p = pr_room(r, 32);
  if (!p)
    return -1;
  pr_done(r, LIT(p, ",\n\"stackFrames\":{"));
  for (size_t i = 0; i < n; i++) {
    static const char *const kinds[] = {"lua", "C", "runtime"};
    const char *k = kinds[fr[i].kind == 'l' ? 0 : fr[i].kind == 'c' ? 1 : 2];
    if (!(p = pr_room(r, 128 + 6 * fr[i].name.n)))
      return -1;
    p = i == 0 ? LIT(p, "\n\"") : LIT(p, ",\n\"");
    p = jq_put_u64(p, fr[i].id);
    p = LIT(p, "\":{\"name\":");
    p = pr_put_str(p, fr[i].name);
    p = LIT(p, ",\"category\":\"");
    memcpy(p, k, strlen(k));
    p += strlen(k);
    *p++ = '"';
    if (fr[i].parent) {
      p = LIT(p, ",\"parent\":\"");
      p = jq_put_u64(p, fr[i].parent);
      *p++ = '"';
    }
    pr_done(r, LIT(p, "}"));
  }
  if (!(p = pr_room(r, 2)))
    return -1;
  pr_done(r, LIT(p, "}"));
  return 0;
}

/* A decimal of a sample's context at *i (moved past it and its space). */
static uint64_t ctx_number(str ctx, size_t *i) {
  uint64_t v = 0;
  while (*i < ctx.n && ctx.p[*i] >= '0' && ctx.p[*i] <= '9' && v < UINT64_MAX / 10)
    v = v * 10 + (uint64_t)(ctx.p[(*i)++] - '0');
  while (*i < ctx.n && ctx.p[*i] != ' ')
    (*i)++;
  *i += *i < ctx.n;
  return v;
}

static int put_sample(rd *r, const gsample *g, int first) {
  size_t i = 0;
  uint64_t nums[3];
  for (int k = 0; k < 3; k++)
    nums[k] = ctx_number(g->ctx, &i);
  while (i < g->ctx.n && g->ctx.p[i] != ' ')
    i++; /* the kinds */
  i += i < g->ctx.n;
  str cat = {g->ctx.p + i, g->ctx.n - i};
  char *p = pr_room(r, 256 + 6 * cat.n);
  if (!p)
    return -1;
  p = first ? LIT(p, "\n{\"pid\":1,\"tid\":") : LIT(p, ",\n{\"pid\":1,\"tid\":");
  p = jq_put_u64(p, (uint64_t)g->lane + 1);
  p = LIT(p, ",\"ts\":");
  p = jq_put_u64(p, g->ns / 1000);
  *p++ = '.';
  for (unsigned f = (unsigned)(g->ns % 1000), d = 100; d; d /= 10)
    *p++ = (char)('0' + f / d % 10);
  p = LIT(p, ",\"sf\":\"");
  p = jq_put_u64(p, g->leaf);
  p = LIT(p, "\",\"weight\":");
  p = jq_put_u64(p, g->weight);
  p = LIT(p, ",\"name\":");
  p = pr_put_str(p, cat);
  p = LIT(p, ",\"args\":");
  static const char *const keys[3] = {"\"job\":", "\"span\":", "\"line\":"};
  char sep = '{';
  for (int k = 0; k < 3; k++)
    if (nums[k]) {
      *p++ = sep, sep = ',';
      memcpy(p, keys[k], strlen(keys[k]));
      p = jq_put_u64(p + strlen(keys[k]), nums[k]);
    }
  if (sep == '{')
    *p++ = '{';
  pr_done(r, LIT(p, "}}"));
  return 0;
}

/* The samples by lane, each lane's in file order (a counting sort: the
 * writer's sequences are in lane order already). */
static int order_samples(rd *r) {
  gsample *g = (gsample *)(void *)r->samples.p;
  size_t n = r->samples.n / sizeof *g, sorted = 1;
  while (sorted < n && g[sorted - 1].lane <= g[sorted].lane)
    sorted++;
  if (sorted >= n)
    return 0;
  size_t *at = calloc((size_t)r->nlanes + 1, sizeof *at);
  gsample *o = malloc(n * sizeof *o);
  if (!at || !o) {
    free(at);
    free(o);
    return pr_oom(r);
  }
  for (size_t i = 0; i < n; i++)
    at[g[i].lane + 1]++;
  for (int l = 0; l < r->nlanes; l++)
    at[l + 1] += at[l];
  for (size_t i = 0; i < n; i++)
    o[at[g[i].lane]++] = g[i];
  memcpy(g, o, n * sizeof *o);
  free(o);
  free(at);
  return 0;
}

static int put_samples(rd *r) {
  gsample *g = (gsample *)(void *)r->samples.p;
  size_t n = r->samples.n / sizeof *g;
  if (order_samples(r) != 0)
    return -1;
  if (put_frames(r) != 0)
    return -1;
  char *p = pr_room(r, 16);
  if (!p)
    return -1;
  pr_done(r, LIT(p, ",\n\"samples\":["));
  for (size_t i = 0; i < n; i++)
    if (put_sample(r, &g[i], i == 0) != 0)
      return -1;
  if (!(p = pr_room(r, 2)))
    return -1;
  pr_done(r, LIT(p, "]"));
  return 0;
}

int pr_put_tail(rd *r) {
  char *p = pr_room(r, 8);
  if (!p)
    return -1;
  pr_done(r, LIT(p, "\n]"));
  if (r->samples.n && put_samples(r) != 0)
    return -1;
  if (!(p = pr_room(r, 32 + r->profile.n)))
    return -1;
  p = LIT(p, ",\n\"jobqueProfile\":");
  memcpy(p, r->profile.p, r->profile.n);
  pr_done(r, LIT(p + r->profile.n, "}\n"));
  return 0;
}

