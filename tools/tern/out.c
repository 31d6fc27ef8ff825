/* SPDX-License-Identifier: MIT */
/*
 * out.c — the buffered output of out.h.
 */
#include "out.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "escape.h"

enum { OUT_CAP = 1 << 20 };

out_buf g_out = {.fd = 1}, g_err = {.fd = 2};

static void write_all(out_buf *o, const char *p, size_t n) {
  while (n > 0 && !o->err) {
    ssize_t w = write(o->fd, p, n);
    if (w < 0) {
      if (errno != EINTR) o->err = -errno;
      continue;
    }
    p += w;
    n -= (size_t)w;
  }
}

int out_flush(out_buf *o) {
  write_all(o, o->buf, o->len);
  o->len = 0;
  return o->err;
}

/* Ensures `n` (<= OUT_CAP) free bytes; allocates the buffer on first use
 * (without one, writes go straight through). */
static char *reserve(out_buf *o, size_t n) {
  if (!o->buf) {
    o->buf = malloc(OUT_CAP);
    if (!o->buf) return NULL;
    o->cap = OUT_CAP;
  }
  if (o->cap - o->len < n) out_flush(o);
  return o->buf + o->len;
}

void out_write(out_buf *o, const void *p, size_t n) {
  if (n >= OUT_CAP / 2 || !reserve(o, n)) {
    out_flush(o);
    write_all(o, p, n);
    return;
  }
  memcpy(o->buf + o->len, p, n);
  o->len += n;
}

void out_str(out_buf *o, const char *s) { out_write(o, s, strlen(s)); }

void out_u64(out_buf *o, uint64_t v) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
  out_write(o, tmp, (size_t)n);
}

void out_escaped(out_buf *o, const void *p, size_t n) {
  const char *s = p;
  const size_t chunk = OUT_CAP / 8;
  while (n > 0) {
    size_t take = n < chunk ? n : chunk;
    char *dst = reserve(o, ESC_ENCODED_MAX(take));
    if (!dst) {
      char tmp[ESC_ENCODED_MAX(64)];
      take = n < 64 ? n : 64;
      write_all(o, tmp, esc_encode(s, take, tmp));
    } else {
      o->len += esc_encode(s, take, dst);
    }
    s += take;
    n -= take;
  }
}

void out_json_string(out_buf *o, const char *s) {
  out_char(o, '"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out_char(o, '\\');
      out_char(o, (char)c);
    } else if (c < 0x20) {
      char tmp[8];
      snprintf(tmp, sizeof tmp, "\\u%04x", c);
      out_str(o, tmp);
    } else {
      out_char(o, (char)c);
    }
  }
  out_char(o, '"');
}

int out_finish(int rc) {
  int err = out_flush(&g_err);
  int oerr = out_flush(&g_out);
  free(g_out.buf);
  free(g_err.buf);
  g_out.buf = g_err.buf = NULL;
  if (oerr) {
    fprintf(stderr, "tern: write error: %s\n", strerror(-oerr));
    return 2;
  }
  return err ? 2 : rc;
}
