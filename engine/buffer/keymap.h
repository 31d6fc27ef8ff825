/* SPDX-License-Identifier: MIT */
/*
 * keymap.h — a hash map from key bytes to the index of the latest
 * operation of a write transaction on that key, so that tern_delete can
 * tell whether the transaction itself has put or deleted the key, and
 * the point-lookup index of a large buffer run (memseg_runs.c).  Open
 * addressing over the operations (or documents) array; the keys live
 * there.  A key is filed under the low 32 bits of its filter hash
 * (codec/filter.h), so a get hashes its key once for the buffer and every
 * segment.
 */
#ifndef TERN_ENGINE_KEYMAP_H
#define TERN_ENGINE_KEYMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct tern_mdoc tern_mdoc; /* memseg.h */

typedef struct tern_keymap {
  uint64_t *slot; /* op index + 1, hash << 32; 0 empty */
  size_t cap, n;
} tern_keymap;

void tern_keymap_init(tern_keymap *m);
void tern_keymap_free(tern_keymap *m);
/* Where a lookup found a key (or its empty slot), for a tern_keymap_set
 * of the same key right after: no second hash or probe. */
typedef struct tern_keypos {
  size_t at;
  uint32_t hash;
  int valid;
} tern_keypos;
#define TERN_KEYPOS_NONE ((tern_keypos){0, 0, 0})
/* The latest op index of the key, or -1; *pos where it is. */
int64_t tern_keymap_get(const tern_keymap *m, const tern_mdoc *ops, const void *key, size_t klen,
                        tern_keypos *pos);
/* The same for a key whose tern_filter_hash the caller has: hash. */
int64_t tern_keymap_get_hashed(const tern_keymap *m, const tern_mdoc *ops, const void *key,
                               size_t klen, uint64_t hash, tern_keypos *pos);
/* A map of docs[0..n) (unique keys), sized for n once: it never grows. */
int tern_keymap_build(tern_keymap *m, const tern_mdoc *docs, size_t n);
/* The index in docs of the key whose tern_filter_hash is hash, or -1. */
int64_t tern_keymap_find(const tern_keymap *m, const tern_mdoc *docs, const void *key, size_t klen,
                         uint64_t hash);
/* The slot a key of hash h is probed from: h scaled to [0, cap) (any
 * cap, not only powers of two). */
static inline size_t tern_keymap_home(uint32_t h, size_t cap) {
  return (size_t)(((uint64_t)h * cap) >> 32);
}
/* The probe sequence every lookup of a key of hash h follows, from *at
 * (first tern_keymap_home): 1 at the next slot, *at or after it, whose
 * key has hash h (the caller compares the key, then goes on from *at + 1
 * wrapped: tern_keymap_next); 0 at the empty slot that ends it. */
static inline size_t tern_keymap_next(size_t at, size_t cap) { return at + 1 == cap ? 0 : at + 1; }
static inline int tern_keymap_match(const tern_keymap *m, uint32_t h, size_t *at) {
  for (size_t i = *at;; i = tern_keymap_next(i, m->cap)) {
    uint64_t s = m->slot[i];
    *at = i;
    if (!s) return 0;
    if ((uint32_t)(s >> 32) == h) return 1;
  }
}
/* Percent of its slots a built map (tern_keymap_build) fills. */
#define TERN_KEYMAP_BUILT_LOAD 70u
/* Starts fetching the slot a find of hash reads first (a hint). */
static inline void tern_keymap_prefetch(const tern_keymap *m, uint64_t hash) {
  if (m->cap) __builtin_prefetch(&m->slot[tern_keymap_home((uint32_t)hash, m->cap)]);
}
/* Records ops[i] as the latest op of its key; pos from tern_keymap_get of
 * that key with no change to the map since, or TERN_KEYPOS_NONE. */
int tern_keymap_set(tern_keymap *m, const tern_mdoc *ops, uint32_t i, tern_keypos pos);

#endif
