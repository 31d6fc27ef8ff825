/*
 * keymap.c — linear probing, XXH3 hashes, grows at half load.
 */
#include "engine/keymap.h"

#include "codec/status.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

void tern_keymap_init(tern_keymap *m) {
  m->slot = NULL;
  m->cap = m->n = 0;
}

void tern_keymap_free(tern_keymap *m) {
  free(m->slot);
  tern_keymap_init(m);
}

static size_t find(const tern_keymap *m, const tern_mdoc *ops, const void *key, size_t klen) {
  size_t mask = m->cap - 1, i = (size_t)XXH3_64bits(key, klen) & mask;
  for (;; i = (i + 1) & mask) {
    uint32_t s = m->slot[i];
    if (!s) return i;
    const tern_keyref *k = &ops[s - 1].key;
    if (k->len == klen && !memcmp(k->p, key, klen)) return i;
  }
}

int64_t tern_keymap_get(const tern_keymap *m, const tern_mdoc *ops, const void *key, size_t klen,
                        size_t *at) {
  *at = SIZE_MAX;
  if (!m->cap) return -1;
  *at = find(m, ops, key, klen);
  uint32_t s = m->slot[*at];
  return s ? (int64_t)s - 1 : -1;
}

static int grow(tern_keymap *m, const tern_mdoc *ops) {
  size_t cap = m->cap ? 2 * m->cap : 1024;
  tern_keymap nm = {calloc(cap, sizeof(uint32_t)), cap, 0};
  if (!nm.slot) return tern_fail(TERN_ENOMEM, "transaction key map: out of memory");
  for (size_t i = 0; i < m->cap; i++)
    if (m->slot[i]) {
      const tern_keyref *k = &ops[m->slot[i] - 1].key;
      nm.slot[find(&nm, ops, k->p, k->len)] = m->slot[i];
      nm.n++;
    }
  free(m->slot);
  *m = nm;
  return TERN_OK;
}

int tern_keymap_set(tern_keymap *m, const tern_mdoc *ops, uint32_t i, size_t at) {
  if (2 * (m->n + 1) > m->cap) {
    TERN_TRY(grow(m, ops));
    at = SIZE_MAX; /* positions moved */
  }
  if (at == SIZE_MAX) at = find(m, ops, ops[i].key.p, ops[i].key.len);
  if (!m->slot[at]) m->n++;
  m->slot[at] = i + 1;
  return TERN_OK;
}
