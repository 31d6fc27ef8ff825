/* SPDX-License-Identifier: MIT */
/*
 * key_range.h — the half-open key range [lo, hi) a walk in key order
 * keeps (cursor.c, doc_terms.c, export.c): tern_bounds' `from` and its
 * prefix give lo, `to` and the prefix's successor give hi.
 */
#ifndef TERN_ENGINE_READ_KEY_RANGE_H
#define TERN_ENGINE_READ_KEY_RANGE_H

#include "engine/buffer/memseg.h"
#include "tern.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tern_key_range {
  uint8_t lo[TERN_KEY_MAX], hi[TERN_KEY_MAX];
  size_t lolen, hilen; /* lolen 0: from the first key */
  int has_hi;          /* 0: to the last key */
} tern_key_range;

/* The range of bounds b (NULL: every key).  The caller has checked the
 * bounds' lengths (<= TERN_KEY_MAX) and their data. */
void tern_key_range_set(tern_key_range *r, const tern_bounds *b);
/* The range [from, to): a NULL or empty `from` is no lower bound, a NULL
 * `to` (or one without data) no upper bound. */
void tern_key_range_between(tern_key_range *r, const tern_slice *from, const tern_slice *to);

/* Whether key lies below the range's upper bound. */
static inline int tern_key_range_below_hi(const tern_key_range *r, const void *key, size_t klen) {
  return !r->has_hi || tern_key_cmp(key, klen, r->hi, r->hilen) < 0;
}

/* Whether no key lies in the range. */
static inline int tern_key_range_empty(const tern_key_range *r) {
  return r->has_hi && tern_key_cmp(r->lo, r->lolen, r->hi, r->hilen) >= 0;
}

#endif
