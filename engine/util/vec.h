/* SPDX-License-Identifier: MIT */
/*
 * vec.h — growable arrays of the engine's bookkeeping (doc lists of a
 * commit or a merge, segment numbers, free pages, slots): one growth rule
 * for all of them.
 */
#ifndef TERN_ENGINE_VEC_H
#define TERN_ENGINE_VEC_H

#include <stddef.h>
#include <stdint.h>

/* `items` (n of `size` bytes in *cap) with room for one more: itself, or
 * a reallocation to twice the capacity (16 at first).  NULL when out of
 * memory, `items` then left as it was. */
void *tern_vec_room(void *items, size_t n, size_t *cap, size_t size);

typedef struct tern_u32vec {
  uint32_t *v;
  size_t n, cap;
} tern_u32vec;

typedef struct tern_u64vec {
  uint64_t *v;
  size_t n, cap;
} tern_u64vec;

/* Appends x; TERN_ENOMEM (the vector unchanged) when out of memory. */
int tern_u32vec_push(tern_u32vec *d, uint32_t x);
int tern_u64vec_push(tern_u64vec *d, uint64_t x);

#endif
