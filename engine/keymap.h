/*
 * keymap.h — a hash map from key bytes to the index of the latest
 * operation of a write transaction on that key, so that tern_delete can
 * tell whether the transaction itself has put or deleted the key.
 * Open addressing over the operations array; the keys live there.
 */
#ifndef TERN_ENGINE_KEYMAP_H
#define TERN_ENGINE_KEYMAP_H

#include "engine/memseg.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tern_keymap {
  uint32_t *slot; /* op index + 1; 0 empty */
  size_t cap, n;  /* cap a power of two */
} tern_keymap;

void tern_keymap_init(tern_keymap *m);
void tern_keymap_free(tern_keymap *m);
/* The latest op index of the key, or -1; *at its position in the table
 * (SIZE_MAX: none), for a tern_keymap_set of the same key right after. */
int64_t tern_keymap_get(const tern_keymap *m, const tern_mdoc *ops, const void *key, size_t klen,
                        size_t *at);
/* Records ops[i] as the latest op of its key; `at` from tern_keymap_get
 * of that key with no change to the map since, or SIZE_MAX. */
int tern_keymap_set(tern_keymap *m, const tern_mdoc *ops, uint32_t i, size_t at);

#endif
