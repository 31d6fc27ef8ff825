/* SPDX-License-Identifier: MIT */
/*
 * range.h — a key range [from, to) of tern_delete_range (range.c): which
 * keys, which segments lie wholly inside it, and the live documents and
 * buffered keys it deletes.
 */
#ifndef TERN_ENGINE_RANGE_H
#define TERN_ENGINE_RANGE_H

#include "engine/state/index.h"
#include "engine/util/vec.h"

typedef struct tern_krange {
  const uint8_t *from, *to; /* NULL: unbounded */
  size_t flen, tlen;
} tern_krange;

/* Whether from <= key < to. */
int tern_krange_has(const tern_krange *r, const void *key, size_t klen);
/* Whether every key of the slot's segment lies in the range (it can be
 * dropped whole). */
int tern_krange_covers(const tern_krange *r, const tern_slot *s);
/* Appends to dels the slot's live docs whose keys lie in the range
 * (engine segments: a key's doc id is its rank). */
int tern_krange_slot_docs(const tern_krange *r, const tern_slot *s, tern_u32vec *dels);
/* Calls fn for each document of the (flat) buffer view in the range. */
typedef int (*tern_krange_fn)(void *ctx, const tern_mdoc *d);
int tern_krange_buffer(const tern_krange *r, const tern_memseg *view, tern_krange_fn fn, void *ctx);

#endif
