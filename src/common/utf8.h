/*
 * utf8.h - whether bytes are a valid UTF-8 character: the one check of the
 * writers (which escape or replace what is not) and the reader.
 * Owns: nothing. Must not: allocate, call Lua, take locks.
 * Thread safety: pure functions.
 */
#ifndef JQ_UTF8_H
#define JQ_UTF8_H

#include <stddef.h>

/* Length of a valid UTF-8 sequence at s (at most n bytes), or 0. */
static inline size_t jq_utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len;
  unsigned min;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4, min = 0x10000;
  } else {
    return 0;
  }
  if (n < len)
    return 0;
  unsigned cp = c & (0x3fu >> (len - 1));
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3fu);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

#endif
