/* SPDX-License-Identifier: MIT */
/*
 * deleted_docs.c — a snapshot's live-document count and, per segment, the
 * deleted doc ids (tern.h, "ordered"), walked by the live docs' own
 * iterator: O(deleted), whatever the segment's size.
 */
#include "engine/state/index.h"

#include "codec/status.h"

#include <stdlib.h>

struct tern_deleted {
  tern_snapshot *snap;
  int none; /* the segment has no deletions */
  tern_ld_iter it;
};

int tern_snapshot_count(tern_snapshot *snap, uint64_t *live) {
  tern_clear_error();
  if (!snap || !live) return tern_fail(TERN_EINVAL, "tern_snapshot_count: NULL argument");
  const tern_state *st = snap->st;
  uint64_t n = snap->buf->n;
  for (size_t i = 0; i < st->nslots; i++)
    n += st->slots[i].ref->max_doc - st->slots[i].deleted;
  *live = n;
  return TERN_OK;
}

size_t tern_snapshot_nsegments(tern_snapshot *snap) {
  tern_clear_error();
  return snap ? snap->st->nslots : 0;
}

int tern_deleted_open(tern_deleted **out, tern_snapshot *snap, size_t i) {
  tern_clear_error();
  if (out) *out = NULL;
  if (!out || !snap || i >= snap->st->nslots)
    return tern_fail(TERN_EINVAL, "tern_deleted_open: no segment %zu", i);
  tern_deleted *d = calloc(1, sizeof *d);
  if (!d) return tern_fail(TERN_ENOMEM, "deleted docs: out of memory");
  const tern_slot *sl = &snap->st->slots[i];
  if (sl->live)
    tern_livedocs_iter_deleted(&d->it, sl->live->ld);
  else
    d->none = 1;
  d->snap = snap;
  atomic_fetch_add(&snap->iters, 1); /* tern_snapshot_close refuses while it is open */
  *out = d;
  return TERN_OK;
}

int tern_deleted_next(tern_deleted *d, uint64_t *doc) {
  tern_clear_error();
  if (!d || !doc) return tern_fail(TERN_EINVAL, "tern_deleted_next: NULL argument");
  uint32_t x = d->none ? TERN_LD_END : tern_ld_iter_next(&d->it);
  *doc = x == TERN_LD_END ? TERN_NO_MORE_DOCS : x;
  return TERN_OK;
}

uint64_t tern_deleted_cost(const tern_deleted *d) {
  tern_clear_error();
  return !d || d->none ? 0 : tern_ld_iter_cost(&d->it);
}

int tern_deleted_close(tern_deleted *d) {
  tern_clear_error();
  if (!d) return TERN_OK;
  atomic_fetch_sub(&d->snap->iters, 1);
  free(d);
  return TERN_OK;
}
