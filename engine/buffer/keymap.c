/* SPDX-License-Identifier: MIT */
/*
 * keymap.c — linear probing, XXH3 hashes (the filters'), grows at half load; a
 * built map, which never grows, is filled to TERN_KEYMAP_BUILT_LOAD.  Each slot
 * keeps 32 bits of its key's hash beside the op index, so a probe compares
 * key bytes only on a hash match and growing rehashes no key.
 */
#include "engine/buffer/keymap.h"
#include "engine/buffer/memseg.h"
#include "engine/util/zalloc.h"

#include "codec/filter.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

/* A slot: op index + 1 in the low 32 bits (0: empty), the hash above. */
#define SLOT_OP(s) ((uint32_t)(s))
#define SLOT_HASH(s) ((uint32_t)((s) >> 32))

void tern_keymap_init(tern_keymap *m) {
  m->slot = NULL;
  m->cap = m->n = 0;
}

void tern_keymap_free(tern_keymap *m) {
  free(m->slot);
  tern_keymap_init(m);
}

static size_t find(const tern_keymap *m, const tern_mdoc *ops, const void *key, size_t klen,
                   uint32_t h) {
  size_t at = tern_keymap_home(h, m->cap);
  for (; tern_keymap_match(m, h, &at); at = tern_keymap_next(at, m->cap)) {
    const tern_keyref *k = &ops[SLOT_OP(m->slot[at]) - 1].key;
    if (k->len == klen && !memcmp(k->p, key, klen)) break;
  }
  return at;
}

static uint32_t hash_of(const void *key, size_t klen) {
  return (uint32_t)tern_filter_hash(key, klen);
}

int64_t tern_keymap_get(const tern_keymap *m, const tern_mdoc *ops, const void *key, size_t klen,
                        tern_keypos *pos) {
  return tern_keymap_get_hashed(m, ops, key, klen, tern_filter_hash(key, klen), pos);
}

int64_t tern_keymap_get_hashed(const tern_keymap *m, const tern_mdoc *ops, const void *key,
                               size_t klen, uint64_t hash, tern_keypos *pos) {
  *pos = TERN_KEYPOS_NONE;
  pos->hash = (uint32_t)hash;
  if (!m->cap) return -1;
  pos->at = find(m, ops, key, klen, pos->hash);
  pos->valid = 1;
  uint32_t op = SLOT_OP(m->slot[pos->at]);
  return op ? (int64_t)op - 1 : -1;
}

int64_t tern_keymap_find(const tern_keymap *m, const tern_mdoc *docs, const void *key, size_t klen,
                         uint64_t hash) {
  if (!m->cap) return -1;
  uint32_t op = SLOT_OP(m->slot[find(m, docs, key, klen, (uint32_t)hash)]);
  return op ? (int64_t)op - 1 : -1;
}

static int grow_to(tern_keymap *m, size_t cap) {
  uint64_t *slot = tern_calloc_written(cap, sizeof *slot); /* probed before set */
  if (!slot) return tern_fail(TERN_ENOMEM, "transaction key map: out of memory");
  for (size_t i = 0; i < m->cap; i++) {
    uint64_t s = m->slot[i];
    if (!s) continue;
    size_t j = tern_keymap_home(SLOT_HASH(s), cap);
    while (slot[j])
      j = tern_keymap_next(j, cap);
    slot[j] = s;
  }
  free(m->slot);
  m->slot = slot;
  m->cap = cap;
  return TERN_OK;
}

static int grow(tern_keymap *m) { return grow_to(m, m->cap ? 2 * m->cap : 1024); }

int tern_keymap_build(tern_keymap *m, const tern_mdoc *docs, size_t n) {
  tern_keymap_init(m);
  if (n >= UINT32_MAX / 2) return tern_fail(TERN_EINVAL, "key map: %zu keys", n);
  /* Never grows: filled to TERN_KEYMAP_BUILT_LOAD, not to half as a
   * growing map is (a large buffer run's index was a quarter of its
   * memory); a probe of a key it holds still reads about two slots. */
  uint64_t want = (uint64_t)n * 100 / TERN_KEYMAP_BUILT_LOAD + 16; /* no overflow in 32 bits */
  if (want > SIZE_MAX / sizeof *m->slot) return tern_fail(TERN_ENOMEM, "key map: %zu keys", n);
  size_t cap = (size_t)want;
  TERN_TRY(grow_to(m, cap));
  for (size_t i = 0; i < n; i++) {
    uint32_t h = hash_of(docs[i].key.p, docs[i].key.len);
    size_t at = tern_keymap_home(h, cap);
    while (m->slot[at]) /* keys are unique: no compare */
      at = tern_keymap_next(at, cap);
    m->slot[at] = (uint64_t)h << 32 | (i + 1);
  }
  m->n = n;
  return TERN_OK;
}

int tern_keymap_set(tern_keymap *m, const tern_mdoc *ops, uint32_t i, tern_keypos pos) {
  if (2 * (m->n + 1) > m->cap) {
    TERN_TRY(grow(m));
    pos.valid = 0; /* positions moved; the hash holds */
  }
  uint32_t h = pos.valid || pos.hash ? pos.hash : hash_of(ops[i].key.p, ops[i].key.len);
  size_t at = pos.valid ? pos.at : find(m, ops, ops[i].key.p, ops[i].key.len, h);
  if (!m->slot[at]) m->n++;
  m->slot[at] = (uint64_t)h << 32 | (i + 1);
  return TERN_OK;
}
