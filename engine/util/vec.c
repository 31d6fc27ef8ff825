/* SPDX-License-Identifier: MIT */
#include "engine/util/vec.h"

#include "codec/status.h"

#include <stdlib.h>

void *tern_vec_room(void *items, size_t n, size_t *cap, size_t size) {
  if (n < *cap) return items;
  size_t want = *cap ? 2 * *cap : 16;
  void *more = want > SIZE_MAX / size ? NULL : realloc(items, want * size);
  if (more) *cap = want;
  return more;
}

int tern_u32vec_push(tern_u32vec *d, uint32_t x) {
  uint32_t *v = tern_vec_room(d->v, d->n, &d->cap, sizeof *v);
  if (!v) return tern_fail(TERN_ENOMEM, "out of memory");
  d->v = v;
  d->v[d->n++] = x;
  return TERN_OK;
}

int tern_u64vec_push(tern_u64vec *d, uint64_t x) {
  uint64_t *v = tern_vec_room(d->v, d->n, &d->cap, sizeof *v);
  if (!v) return tern_fail(TERN_ENOMEM, "out of memory");
  d->v = v;
  d->v[d->n++] = x;
  return TERN_OK;
}
