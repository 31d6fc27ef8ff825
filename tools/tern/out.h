/* SPDX-License-Identifier: MIT */
/*
 * out.h — buffered output to a file descriptor.
 *
 * get and search may print millions of lines; stdio's per-call locking and
 * small buffer cost more than the lookups, so output goes through one large
 * buffer written with write(2).  A write error is remembered and reported
 * once, by out_close().
 */
#ifndef TERN_CLI_OUT_H
#define TERN_CLI_OUT_H

#include <stddef.h>
#include <stdint.h>

typedef struct out_buf {
  int fd;
  char *buf;
  size_t len, cap;
  int err; /* first write error, -errno */
} out_buf;

/* Standard output and standard error, each with its own buffer. */
extern out_buf g_out, g_err;

void out_write(out_buf *o, const void *p, size_t n);
void out_str(out_buf *o, const char *s);
/* One byte: inline into the buffer when it has room (two a line of get's
 * output, once a call each). */
static inline void out_char(out_buf *o, char c) {
  if (o->len < o->cap) {
    o->buf[o->len++] = c;
    return;
  }
  out_write(o, &c, 1);
}
void out_u64(out_buf *o, uint64_t v);
/* Writes p[0..n) in the escaped form of escape.h. */
void out_escaped(out_buf *o, const void *p, size_t n);
/* Writes p[0..n) as a JSON string, quotes included. */
void out_json_string(out_buf *o, const char *s);
/* Writes what is buffered; returns 0 or the first write error (-errno). */
int out_flush(out_buf *o);
/* Flushes both buffers and frees them; reports a failed write on stderr and
 * returns 2, else returns rc. */
int out_finish(int rc);

#endif
