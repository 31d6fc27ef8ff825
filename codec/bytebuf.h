/* SPDX-License-Identifier: MIT */
/*
 * bytebuf.h — a growable byte buffer for building small files in memory
 * (the terms index, the field table).  Growth doubles, so appending is
 * amortized O(1); a failed growth leaves the buffer as it was.
 */
#ifndef TERN_BYTEBUF_H
#define TERN_BYTEBUF_H

#include "codec/coding.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

typedef struct tern_bytebuf {
  uint8_t *p;
  size_t len, cap;
} tern_bytebuf;

static inline int tern_bytebuf_reserve(tern_bytebuf *b, size_t extra) {
  if (b->cap - b->len >= extra) return TERN_OK;
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->len < extra) cap *= 2;
  uint8_t *q = realloc(b->p, cap);
  if (!q) return tern_fail(TERN_ENOMEM, "out of memory (%zu bytes)", cap);
  b->p = q;
  b->cap = cap;
  return TERN_OK;
}

static inline int tern_bytebuf_put(tern_bytebuf *b, const void *src, size_t n) {
  TERN_TRY(tern_bytebuf_reserve(b, n));
  if (n) memcpy(b->p + b->len, src, n);
  b->len += n;
  return TERN_OK;
}

static inline int tern_bytebuf_varint(tern_bytebuf *b, uint64_t v) {
  TERN_TRY(tern_bytebuf_reserve(b, TERN_VARINT64_MAX));
  b->len += tern_put_varint(b->p + b->len, v);
  return TERN_OK;
}

/* A varint length, then the bytes. */
static inline int tern_bytebuf_bytes(tern_bytebuf *b, const void *src, size_t n) {
  TERN_TRY(tern_bytebuf_varint(b, n));
  return tern_bytebuf_put(b, src, n);
}

static inline void tern_bytebuf_free(tern_bytebuf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

#endif
