/*
 * json_scan.c - finds exact integer marker args in a trace's JSON text.
 *
 * A flat pass over the bytes: strings are skipped (escapes included),
 * containers pushed onto a fixed stack that records what each one is (the
 * top object, the events array, an event, an event's "args"), and the
 * literal after "arg" (or "value", a counter's) in an event's "args" is
 * read as a 64-bit integer.
 */
#include "json_scan.h"

#include <string.h>

enum { ROLE_NONE, ROLE_TOP, ROLE_EVENTS, ROLE_EVENT, ROLE_ARGS };
enum { KEY_OTHER, KEY_TRACE_EVENTS, KEY_ARGS, KEY_ARG };

typedef struct level {
  unsigned char is_object, role, want_key, key;
} level;

/* The key whose raw bytes (between the quotes, no escapes) are s[0..n). */
static unsigned char key_of(const char *s, size_t n) {
  if (n == 11 && memcmp(s, "traceEvents", 11) == 0)
    return KEY_TRACE_EVENTS;
  if (n == 4 && memcmp(s, "args", 4) == 0)
    return KEY_ARGS;
  if ((n == 3 && memcmp(s, "arg", 3) == 0) || (n == 5 && memcmp(s, "value", 5) == 0))
    return KEY_ARG; /* a marker's argument, a counter's value */
  return KEY_OTHER;
}

/* 1 and *out when s[0..n) is an integer literal beyond +-2^53 that fits
 * int64_t (a double would round it); else 0. */
static int big_integer(const char *s, size_t n, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  if (i < n && s[i] == '-') {
    neg = 1;
    i++;
  }
  if (i == n)
    return 0;
  const uint64_t limit = neg ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
  uint64_t v = 0;
  for (; i < n; i++) {
    unsigned d = (unsigned)((unsigned char)s[i] - '0');
    if (d > 9)
      return 0; /* a fraction or an exponent: a double in JSON's terms too */
    if (v > (limit - d) / 10)
      return 0; /* beyond 64 bits */
    v = v * 10 + d;
  }
  if (v <= (uint64_t)1 << 53)
    return 0; /* a double holds it exactly */
  if (!neg)
    *out = (int64_t)v;
  else
    *out = v == (uint64_t)1 << 63 ? INT64_MIN : -(int64_t)v;
  return 1;
}

static int is_token_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' ||
         c == 'E';
}

/* One past the token at text[i] (a string, a bracket, a bare literal), or
 * 0 when it is malformed; *escaped: a string with a backslash in it. */
static size_t token_end(const char *text, size_t len, size_t i, int *escaped) {
  unsigned char c = (unsigned char)text[i];
  size_t end = i + 1;
  *escaped = 0;
  if (c == '"') {
    while (end < len && text[end] != '"') {
      if (text[end] == '\\') {
        *escaped = 1;
        end++;
      }
      end++;
    }
    return end >= len ? 0 : end + 1;
  }
  if (c == '{' || c == '[')
    return end;
  if (!is_token_byte(c))
    return 0;
  while (end < len && is_token_byte((unsigned char)text[end]))
    end++;
  return end;
}

/* The role of a container that c opens under parent (NULL: at the top). */
static unsigned char child_role(const level *parent, unsigned char c) {
  if (!parent)
    return c == '{' ? ROLE_TOP : ROLE_EVENTS;
  if (c == '[' && parent->role == ROLE_TOP && parent->key == KEY_TRACE_EVENTS)
    return ROLE_EVENTS;
  if (c == '{' && parent->role == ROLE_EVENTS)
    return ROLE_EVENT;
  if (c == '{' && parent->role == ROLE_EVENT && parent->key == KEY_ARGS)
    return ROLE_ARGS;
  return ROLE_NONE;
}

int jq_json_scan_args(const char *text, size_t len, jq_scan_fn fn, void *ud) {
  level st[JQ_SCAN_MAX_DEPTH];
  int depth = 0; /* open containers; st[depth - 1] is the innermost */
  uint64_t index = 0;
  size_t i = 0;
  while (i < len) {
    unsigned char c = (unsigned char)text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':') {
      i++;
      continue;
    }
    if (c == ',') {
      if (depth > 0 && st[depth - 1].is_object)
        st[depth - 1].want_key = 1;
      i++;
      continue;
    }
    if (c == '}' || c == ']') {
      if (depth == 0)
        return -1;
      depth--;
      i++;
      continue;
    }
    level *parent = depth > 0 ? &st[depth - 1] : NULL;
    int escaped;
    size_t end = token_end(text, len, i, &escaped); /* one past the token */
    if (end == 0)
      return -1;
    if (c == '"' && parent && parent->is_object && parent->want_key) {
      parent->key = escaped ? KEY_OTHER : key_of(text + i + 1, end - i - 2);
      parent->want_key = 0;
      i = end;
      continue;
    }
    /* A value starts at i. */
    if (parent && parent->role == ROLE_EVENTS)
      index++;
    if (parent && parent->role == ROLE_EVENT && parent->key == KEY_ARGS)
      fn(ud, index, 0, 0, 0); /* a new "args": what an earlier one said is gone */
    if (parent && parent->role == ROLE_ARGS && parent->key == KEY_ARG) {
      int64_t v = 0;
      int exact = c != '"' && c != '{' && c != '[' && big_integer(text + i, end - i, &v);
      fn(ud, index, exact, v, 0);
    }
    if (c == '{' || c == '[') {
      unsigned char role = child_role(parent, c);
      if (parent && role == ROLE_EVENTS) { /* "traceEvents": the events start again */
        index = 0;
        fn(ud, 0, 0, 0, 1);
      }
      if (depth == JQ_SCAN_MAX_DEPTH)
        return -1;
      st[depth].is_object = c == '{';
      st[depth].role = role;
      st[depth].want_key = c == '{';
      st[depth].key = KEY_OTHER;
      depth++;
    }
    i = end;
  }
  return depth == 0 ? 0 : -1;
}
