/* SPDX-License-Identifier: MIT */
/*
 * arena.c — chunks from 1 KiB, doubling up to 64 MiB (small transactions stay
 * small; an import of millions of documents makes few chunks).
 */
#include "engine/util/arena.h"

#include "engine/util/bigmem.h"

#include <stdlib.h>

struct tern_arena_chunk {
  tern_arena_chunk *next;
  size_t size;
};

/* The first chunk is small enough for malloc's per-thread cache (requests
 * up to ~1 KiB): a one-document transaction and its buffer run each take
 * one, and a larger first chunk went through malloc's large bins (and
 * their consolidation) on every commit.  Chunks double from there. */
enum { CHUNK_MIN = 1 << 10, CHUNK_MAX = 64 << 20 };

void tern_arena_init(tern_arena *a) {
  a->head = NULL;
  a->p = a->end = NULL;
  a->bytes = 0;
}

void tern_arena_init_buf(tern_arena *a, uint8_t *buf, size_t size) {
  tern_arena_init(a);
  if (!size) return;
  a->p = buf;
  a->end = buf + size;
}

uint8_t *tern_arena_alloc_chunk(tern_arena *a, size_t n) {
  size_t size = a->head ? a->head->size * 2 : CHUNK_MIN;
  if (size > CHUNK_MAX) size = CHUNK_MAX;
  if (size < n + sizeof(tern_arena_chunk)) size = n + sizeof(tern_arena_chunk);
  tern_arena_chunk *c = tern_big_alloc(size);
  if (!c) return NULL;
  c->next = a->head;
  c->size = size;
  a->head = c;
  a->p = (uint8_t *)(c + 1) + n;
  a->end = (uint8_t *)c + size;
  a->bytes += n;
  return (uint8_t *)(c + 1);
}

void tern_arena_reset(tern_arena *a) {
  tern_arena_chunk *first = NULL;
  for (tern_arena_chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    if (!n && c->size == CHUNK_MIN) /* the oldest chunk */
      first = c;
    else
      tern_big_free(c, c->size);
  }
  tern_arena_init(a);
  if (!first) return;
  a->head = first;
  a->p = (uint8_t *)(first + 1);
  a->end = (uint8_t *)first + first->size;
}

void tern_arena_free(tern_arena *a) {
  tern_arena_chunk *c = a->head;
  while (c) {
    tern_arena_chunk *n = c->next;
    tern_big_free(c, c->size);
    c = n;
  }
  tern_arena_init(a);
}
