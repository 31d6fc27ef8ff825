/* SPDX-License-Identifier: MIT */
/*
 * escape.c — encoder and decoder of the escaped form (see escape.h).
 *
 * Both are on the import/get hot paths, so the common case (a run of bytes
 * needing no escape) is handled a run at a time: eight bytes a test when
 * encoding, memchr for the next backslash when decoding.
 */
#include "escape.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char k_hex[] = "0123456789abcdef";

/* Non-zero for the bytes the encoder must escape; the value is the letter of a
 * named escape, or 'x' for \xHH. */
static const char k_escape[256] = {
    ['\0'] = 'x', [0x01] = 'x', [0x02] = 'x',  [0x03] = 'x', [0x04] = 'x', [0x05] = 'x',
    [0x06] = 'x', [0x07] = 'x', [0x08] = 'x',  ['\t'] = 't', ['\n'] = 'n', [0x0b] = 'x',
    [0x0c] = 'x', ['\r'] = 'r', [0x0e] = 'x',  [0x0f] = 'x', [0x10] = 'x', [0x11] = 'x',
    [0x12] = 'x', [0x13] = 'x', [0x14] = 'x',  [0x15] = 'x', [0x16] = 'x', [0x17] = 'x',
    [0x18] = 'x', [0x19] = 'x', [0x1a] = 'x',  [0x1b] = 'x', [0x1c] = 'x', [0x1d] = 'x',
    [0x1e] = 'x', [0x1f] = 'x', ['\\'] = '\\', [0x7f] = 'x',
};

/* Non-zero when one of the 8 bytes in x needs an escape: a byte below 0x20,
 * a backslash or 0x7f.  Exact for "any" (each test is the classic
 * has-zero-byte / has-byte-below-n word trick, n <= 0x80), so a word that
 * passes is copied as it is. */
static inline uint64_t word_needs_escape(uint64_t x) {
  const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
  uint64_t below = (x - 0x20 * ones) & ~x;
  uint64_t bs = x ^ (0x5c * ones), del = x ^ (0x7f * ones);
  return (below | ((bs - ones) & ~bs) | ((del - ones) & ~del)) & highs;
}

/* The first index at or after i whose byte needs an escape, or len: eight
 * bytes a step (most keys and values need none), then byte by byte. */
static size_t plain_run_end(const uint8_t *s, size_t i, size_t len) {
  for (; i + 8 <= len; i += 8) {
    uint64_t x;
    memcpy(&x, s + i, 8);
    if (word_needs_escape(x)) break;
  }
  while (i < len && !k_escape[s[i]])
    i++;
  return i;
}

size_t esc_encode(const void *src, size_t len, char *dst) {
  const uint8_t *s = src;
  char *d = dst;
  size_t i = 0;
  while (i < len) {
    size_t run = plain_run_end(s, i, len);
    memcpy(d, s + i, run - i);
    d += run - i;
    if (run == len) break;
    uint8_t c = s[run];
    *d++ = '\\';
    *d++ = k_escape[c];
    if (k_escape[c] == 'x') {
      *d++ = k_hex[c >> 4];
      *d++ = k_hex[c & 15];
    }
    i = run + 1;
  }
  return (size_t)(d - dst);
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Appends byte c to the reason so that the reason itself stays one printable
 * line whatever c is. */
static void append_shown(char *buf, size_t cap, unsigned char c) {
  size_t n = strlen(buf);
  if (c > 0x20 && c < 0x7f)
    snprintf(buf + n, cap - n, "%c", c);
  else
    snprintf(buf + n, cap - n, "<0x%02x>", c);
}

/* Fills *err for the escape starting at in[at] (a backslash). */
static int bad_escape(const char *in, size_t len, size_t at, esc_error *err) {
  err->offset = at;
  snprintf(err->reason, sizeof err->reason, "bad escape \\");
  if (at + 1 >= len) {
    snprintf(err->reason, sizeof err->reason, "bad escape: \\ at end of field");
    return -1;
  }
  append_shown(err->reason, sizeof err->reason, (unsigned char)in[at + 1]);
  if (in[at + 1] == 'x')
    for (size_t k = at + 2; k < len && k < at + 4; k++)
      append_shown(err->reason, sizeof err->reason, (unsigned char)in[k]);
  return -1;
}

int esc_decode(const char *in, size_t len, char *out, size_t *outlen, esc_error *err) {
  size_t i = 0, o = 0;
  while (i < len) {
    const char *bs = memchr(in + i, '\\', len - i);
    size_t run = bs ? (size_t)(bs - in) - i : len - i;
    if (out + o != in + i) memmove(out + o, in + i, run);
    o += run;
    i += run;
    if (!bs) break;
    if (i + 1 >= len) return bad_escape(in, len, i, err);
    char c = in[i + 1];
    size_t used = 2;
    switch (c) {
    case '\\': out[o++] = '\\'; break;
    case 't': out[o++] = '\t'; break;
    case 'n': out[o++] = '\n'; break;
    case 'r': out[o++] = '\r'; break;
    case 'x': {
      int hi = i + 2 < len ? hex_value(in[i + 2]) : -1;
      int lo = i + 3 < len ? hex_value(in[i + 3]) : -1;
      if (hi < 0 || lo < 0) return bad_escape(in, len, i, err);
      out[o++] = (char)(hi << 4 | lo);
      used = 4;
      break;
    }
    default: return bad_escape(in, len, i, err);
    }
    i += used;
  }
  *outlen = o;
  return 0;
}
