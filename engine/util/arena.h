/* SPDX-License-Identifier: MIT */
/*
 * arena.h — a bump allocator of chunks, freed all at once.  Holds the
 * bytes of a write transaction's documents and of a buffer view, whose
 * lifetimes are those of the transaction and of the view: no per-document
 * malloc, no per-document free.
 */
#ifndef TERN_ENGINE_ARENA_H
#define TERN_ENGINE_ARENA_H

#include <stddef.h>
#include <stdint.h>

typedef struct tern_arena_chunk tern_arena_chunk;
typedef struct tern_arena {
  tern_arena_chunk *head;
  uint8_t *p, *end; /* free space of the head chunk */
  size_t bytes;     /* bytes handed out */
} tern_arena;

void tern_arena_init(tern_arena *a);
/* An arena that hands out buf[0..size) first (the caller's memory, never
 * freed here: a buffer run's own allocation), then chunks. */
void tern_arena_init_buf(tern_arena *a, uint8_t *buf, size_t size);
/* tern_arena_alloc when the head chunk has no room: a new chunk. */
uint8_t *tern_arena_alloc_chunk(tern_arena *a, size_t n);
/* n bytes (unaligned), or NULL when out of memory.  Inline: a commit
 * takes one per document it copies, nearly all from the head chunk. */
static inline uint8_t *tern_arena_alloc(tern_arena *a, size_t n) {
  if (!a->p || (size_t)(a->end - a->p) < n) return tern_arena_alloc_chunk(a, n);
  uint8_t *r = a->p;
  a->p += n;
  a->bytes += n;
  return r;
}
void tern_arena_free(tern_arena *a);
/* Empties the arena for reuse: its first chunk is kept when it has the
 * smallest size (what a small transaction takes), the others freed. */
void tern_arena_reset(tern_arena *a);

#endif
