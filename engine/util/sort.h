/* SPDX-License-Identifier: MIT */
/*
 * sort.h — sorting byte strings fast enough for bulk imports.
 *
 * tern assigns doc ids in key order, so every segment it writes starts by
 * sorting its keys (10M keys at import).  A comparison sort through
 * memcmp costs ~n log n cache-missing comparisons; this is an MSD sort
 * over 8-byte big-endian chunks of the keys, each chunk sorted as an
 * integer by a stable MSD radix sort of 16-bit digits that skips digits
 * where all keys agree (common key prefixes cost nothing).  Keys that tie on a chunk recurse on
 * the next one.  Already sorted input is detected in one pass.
 */
#ifndef TERN_ENGINE_SORT_H
#define TERN_ENGINE_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Records sorted by tern_sort_by_key begin with this member. */
typedef struct tern_keyref {
  const uint8_t *p;
  uint32_t len;
  uint32_t aux; /* free for the record's owner (a length, a doc id) */
} tern_keyref;

/* Stable sort of n records (each `stride` bytes, beginning with a
 * tern_keyref) by their keys in byte order, shorter first on a common
 * prefix.  perm[0..n) receives the record indices in that order.
 * n < 2^32.  *dups (when dups is not NULL) is 1 when two keys are equal,
 * 0 when all differ.  TERN_ENOMEM on failure. */
int tern_sort_by_key(uint32_t *perm, const void *base, size_t stride, size_t n, int *dups);

/* Sorts v[0..n) ascending. */
int tern_sort_u32(uint32_t *v, size_t n);

#endif
