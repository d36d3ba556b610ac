/*
 * load_event.c - one event of the events array read into an ev: the keys
 * the loader reads (ph, ts, dur, pid, tid, name, cat, s, args and, in args,
 * job, bytes, category, arg, on, queue) as values in place, a counter's args kept in
 * file order, keys of at most 15 bytes told a word at a time. Containers
 * inside are skipped (checked); an escaped key marks the event odd (the
 * generic path reads it).
 * Owns: nothing. Must not: be used by the record path. Thread safety:
 * reentrant.
 */
#include <string.h>

#include "reader/load.h"
#include "reader/reader.h"

/* Reads the value at s[i] (after white space) into *v, containers
 * skipped (depth0 of them open around it): one past it, or 0 and an error. */
static inline size_t read_val(jq_src *t, size_t i, val *v, int depth0) {
  int isint;
  i = ws(t, i);
  if (i >= t->n)
    return jq_scan_fail(t, i, "unexpected end of the text (a value expected)");
  v->at = i;
  v->esc = 0;
  switch (t->s[i]) {
  case '{':
  case '[':
    v->kind = t->s[i] == '{' ? V_OBJ : V_ARR;
    return v->end = skip_value(t, i, depth0);
  case '"':
    v->kind = V_STR;
    return v->end = jq_scan_string(t, i, &v->esc);
  case 't':
  case 'f':
  case 'n':
    v->kind = t->s[i] == 't' ? V_TRUE : t->s[i] == 'f' ? V_FALSE : V_NULL;
    return v->end = jq_scan_scalar(t, i);
  default:
    v->end = jq_scan_number(t, i, &isint, &v->i, &v->d);
    v->kind = isint ? V_INT : V_FLT;
    if (isint)
      v->d = (double)v->i;
    return v->end;
  }
}

/* The field of e the event's key k (len bytes, no escapes) fills: NULL for
 * one we do not read. */
static val *top_field(ev *e, const char *k, size_t len) {
  switch (len) {
  case 1:
    return k[0] == 's' ? &e->s : NULL;
  case 2:
    return k[0] == 'p' && k[1] == 'h' ? &e->ph : k[0] == 't' && k[1] == 's' ? &e->ts : NULL;
  case 3:
    return memcmp(k, "dur", 3) == 0 ? &e->dur : memcmp(k, "pid", 3) == 0 ? &e->pid
         : memcmp(k, "tid", 3) == 0 ? &e->tid : memcmp(k, "cat", 3) == 0 ? &e->cat : NULL;
  case 4:
    return memcmp(k, "name", 4) == 0 ? &e->name : memcmp(k, "args", 4) == 0 ? &e->args : NULL;
  default:
    return NULL;
  }
}

/* The same for a key of the event's args (its A_* bit in *bit). */
static val *args_field(ev *e, const char *k, size_t len, int *bit) {
  *bit = A_OTHER;
  if (len == 3 && memcmp(k, "job", 3) == 0)
    return *bit = A_JOB, &e->job;
  if (len == 5 && memcmp(k, "bytes", 5) == 0)
    return *bit = A_BYTES, &e->bytes;
  if (len == 8 && memcmp(k, "category", 8) == 0)
    return *bit = A_CAT, &e->acat;
  if (len == 3 && memcmp(k, "arg", 3) == 0)
    return *bit = A_ARG, &e->arg;
  if (len == 2 && memcmp(k, "on", 2) == 0)
    return *bit = A_ON, &e->on;
  if (len == 5 && memcmp(k, "queue", 5) == 0)
    return *bit = A_QUEUE, &e->queue;
  return NULL;
}

#ifdef JQ_SWAR
/* A key's bytes as one word (the first byte lowest, zeros after it). */
#define B8(c, k) ((uint64_t)(unsigned char)(c) << 8 * (k))
#define KW2(a, b) (B8(a, 0) | B8(b, 1))
#define KW3(a, b, c) (KW2(a, b) | B8(c, 2))
#define KW4(a, b, c, d) (KW3(a, b, c) | B8(d, 3))
#define KW5(a, b, c, d, e) (KW4(a, b, c, d) | B8(e, 4))
#define KW8(a, b, c, d, e, f, g, h) (KW5(a, b, c, d, e) | B8(f, 5) | B8(g, 6) | B8(h, 7))

/* The key whose bytes are the word w (n < 8 of them: the others zeros)
 * or, for n == 8, w and w2 == 0: top_field's and args_field's answer. */
static inline val *word_field(ev *e, uint64_t w, uint64_t w2, size_t n, int in_args) {
  if (in_args) {
    val *v = NULL;
    int bit = A_OTHER;
    if (n == 3 && w == KW3('j', 'o', 'b'))
      v = &e->job, bit = A_JOB;
    else if (n == 5 && w == KW5('b', 'y', 't', 'e', 's'))
      v = &e->bytes, bit = A_BYTES;
    else if (n == 8 && w == KW8('c', 'a', 't', 'e', 'g', 'o', 'r', 'y') && !w2)
      v = &e->acat, bit = A_CAT;
    else if (n == 3 && w == KW3('a', 'r', 'g'))
      v = &e->arg, bit = A_ARG;
    else if (n == 2 && w == KW2('o', 'n'))
      v = &e->on, bit = A_ON;
    else if (n == 5 && w == KW5('q', 'u', 'e', 'u', 'e'))
      v = &e->queue, bit = A_QUEUE;
    e->amask |= bit;
    return v;
  }
  switch (n) {
  case 1:
    return w == 's' ? &e->s : NULL;
  case 2:
    return w == KW2('p', 'h') ? &e->ph : w == KW2('t', 's') ? &e->ts : NULL;
  case 3:
    return w == KW3('d', 'u', 'r') ? &e->dur : w == KW3('p', 'i', 'd') ? &e->pid
         : w == KW3('t', 'i', 'd') ? &e->tid : w == KW3('c', 'a', 't') ? &e->cat : NULL;
  case 4:
    return w == KW4('n', 'a', 'm', 'e') ? &e->name : w == KW4('a', 'r', 'g', 's') ? &e->args : NULL;
  default:
    return NULL;
  }
}
#endif

/* The key at s[i]: one past its colon; *slot its field of e (NULL: one we
 * do not read). */
static size_t read_key(jq_src *t, size_t i, val **slot, ev *e, int in_args, size_t *kat, size_t *klen) {
  int esc;
  i = ws(t, i);
#ifdef JQ_SWAR
  /* A key of at most 15 bytes with no escape: its closing quote found
   * in one or two words, and the key told by them. */
  if (i + 17 <= t->n && t->s[i] == '"') {
    uint64_t w, w2 = 0, m;
    size_t n;
    memcpy(&w, t->s + i + 1, 8);
    if ((m = stop_mask(w))) {
      n = (size_t)__builtin_ctzll(m) / 8;
    } else {
      memcpy(&w2, t->s + i + 9, 8);
      n = (m = stop_mask(w2)) ? 8 + (size_t)__builtin_ctzll(m) / 8 : 0;
    }
    if (m && t->s[i + 1 + n] == '"') {
      if (n < 8)
        w &= ~(~0ULL << 8 * n); /* (n == 0: w is 0) */
      else
        w2 &= ~(~0ULL << 8 * (n - 8));
      *slot = word_field(e, w, w2, n, in_args);
      *kat = i + 1;
      *klen = n;
      size_t end = i + n + 2;
      i = end < t->n && t->s[end] == ':' ? end : ws(t, end);
      if (i >= t->n || t->s[i] != ':')
        return jq_scan_fail(t, i, "expected ':' after a key");
      return i + 1;
    }
  }
#endif
  size_t end = i < t->n && t->s[i] == '"' ? jq_scan_string(t, i, &esc) : jq_scan_fail(t, i, "expected a string key");
  if (!end)
    return 0;
  *slot = NULL;
  *kat = i + 1;
  *klen = end - i - 2;
  if (esc) {
    e->odd = 1;
    if (in_args) {
      e->amask |= A_OTHER;
      e->nmem = -1;
    }
  } else if (in_args) {
    int bit;
    *slot = args_field(e, t->s + i + 1, end - i - 2, &bit);
    e->amask |= bit;
  } else {
    *slot = top_field(e, t->s + i + 1, end - i - 2);
  }
  i = end < t->n && t->s[end] == ':' ? end : ws(t, end);
  if (i >= t->n || t->s[i] != ':')
    return jq_scan_fail(t, i, "expected ':' after a key");
  return i + 1;
}

static size_t read_args(jq_src *t, size_t i, ev *e, int depth0);

/* The members of the object at s[i] ('{', depth0 containers open with it)
 * into e (in_args: an event's "args"): one past it, or 0. */
static size_t read_members(jq_src *t, size_t i, ev *e, int in_args, int depth0) {
  i = ws(t, i + 1);
  if (i < t->n && t->s[i] == '}')
    return i + 1;
  for (;;) {
    val *slot, skip;
    size_t kat, klen;
    if (!(i = read_key(t, i, &slot, e, in_args, &kat, &klen)))
      return 0;
    i = slot == &e->args ? read_args(t, i, e, depth0) : read_val(t, i, slot ? slot : &skip, depth0);
    if (!i)
      return 0;
    if (in_args && e->nmem >= 0) { /* kept for a counter: its args are not read twice */
      if (e->nmem == COUNTER_KEYS) {
        e->nmem = -1;
      } else {
        member *m = &e->mem[e->nmem++];
        m->at = kat;
        m->len = klen;
        m->v = slot ? *slot : skip;
      }
    }
    i = ws(t, i);
    if (i < t->n && t->s[i] == ',') {
      i++;
      continue;
    }
    if (i < t->n && t->s[i] == '}')
      return i + 1;
    return jq_scan_fail(t, i, "expected ',' or '}'");
  }
}

/* An event's "args" value at s[i] (a later "args" key replaces what an
 * earlier one said): its keys of interest in e when it is an object. */
static size_t read_args(jq_src *t, size_t i, ev *e, int depth0) {
  e->amask = e->nmem = 0;
  e->job.kind = e->bytes.kind = e->acat.kind = e->arg.kind = e->on.kind = e->queue.kind = V_NONE;
  i = ws(t, i);
  if (i >= t->n || t->s[i] != '{')
    return read_val(t, i, &e->args, depth0);
  if (depth0 + 1 > JQ_LOAD_MAX_DEPTH)
    return jq_scan_fail(t, i, "nested too deep");
  e->args.kind = V_OBJ;
  e->args.at = i;
  return read_members(t, i, e, 1, depth0 + 1);
}

size_t jq_read_value(jq_src *t, size_t i, val *v, int depth0) { return read_val(t, i, v, depth0); }

/* The event object at s[i] ('{') into *e: one past it, or 0. */
size_t jq_read_event(jq_src *t, size_t i, ev *e) {
  e->ph.kind = e->ts.kind = e->dur.kind = e->pid.kind = e->tid.kind = e->name.kind = V_NONE;
  e->cat.kind = e->s.kind = e->args.kind = e->job.kind = e->bytes.kind = e->acat.kind = V_NONE;
  e->arg.kind = e->on.kind = e->queue.kind = V_NONE;
  e->amask = e->odd = e->nmem = 0;
  return read_members(t, i, e, 0, EVENT_DEPTH);
}

