/* SPDX-License-Identifier: MIT */
/*
 * txn_spill.c — the private states of a bulk transaction that spilled
 * (txn_spill.h): applying a spill's edit without the catalog, and the one
 * edit a commit installs for all of them.
 */
#include "engine/write/txn_spill.h"

#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

int tern_spill_apply(tern_index *idx, tern_state *st, tern_edit *e, tern_state **out) {
  *out = NULL;
  if (!st->buffer) return tern_fail(TERN_ENOMEM, "bulk transaction: no buffer view to spill on");
  tern_rec_state rec = st->rec;
  rec.nsegments = st->nslots + e->nadds - e->ndrops;
  for (size_t i = 0; i < e->nadds; i++)
    if (e->adds[i].number >= rec.next_segment) rec.next_segment = e->adds[i].number + 1;
  if (e->number_used >= rec.next_segment) rec.next_segment = e->number_used + 1;
  /* A bulk edit's run holds tombstones of buffered keys only (edit.h). */
  for (size_t i = 0; e->run && i < e->run->n; i++) {
    ptrdiff_t h = tern_memseg_find(st->buffer, e->run->docs[i].key.p, e->run->docs[i].key.len);
    if (h < 0) continue;
    const tern_mdoc *d = tern_memseg_doc(st->buffer, (size_t)h);
    rec.buffered_docs--;
    uint64_t gone = (uint64_t)d->key.len + d->key.aux;
    rec.buffered_bytes = rec.buffered_bytes > gone ? rec.buffered_bytes - gone : 0;
  }
  e->rec = rec;
  tern_mu_lock(idx);
  int rc = tern_state_apply(idx, st, e, out);
  tern_mu_unlock(idx);
  if (rc == TERN_OK && !(*out)->buffer) { /* never read the catalog's buffer instead */
    tern_state_release(idx, *out);
    *out = NULL;
    rc = tern_fail(TERN_ENOMEM, "bulk transaction: out of memory");
  }
  return rc;
}

static const tern_slot *slot_numbered(const tern_state *st, uint64_t number) {
  for (size_t i = 0; i < st->nslots; i++)
    if (st->slots[i].ref->number == number) return &st->slots[i];
  return NULL;
}

/* A copy of a live-docs set (NULL: none) the edit can own. */
static int copy_live(const tern_slot *sl, tern_livedocs **out) {
  *out = NULL;
  if (!sl->live) return TERN_OK;
  return tern_livedocs_apply(out, sl->live->ld, NULL, 0);
}

/* Segments: fin's not in base are added, base's not in fin dropped,
 * base's whose live docs fin replaced get them. */
static int compose_segments(tern_index *idx, const tern_state *base, const tern_state *fin,
                            tern_edit *e) {
  for (size_t i = 0; i < base->nslots; i++)
    if (!slot_numbered(fin, base->slots[i].ref->number))
      TERN_TRY(tern_edit_drop_segment(e, base->slots[i].ref->number));
  for (size_t i = 0; i < fin->nslots; i++) {
    const tern_slot *sl = &fin->slots[i];
    const tern_slot *old = slot_numbered(base, sl->ref->number);
    tern_livedocs *ld;
    if (old && old->live == sl->live) continue;
    TERN_TRY(copy_live(sl, &ld));
    if (old) {
      TERN_TRY(tern_edit_set_livedocs(e, sl->ref->number, ld));
      continue;
    }
    tern_rec_segment r = {{0}, sl->ref->max_doc, 0, 0};
    memcpy(r.segid, sl->segid, TERN_SEGID_SIZE);
    tern_mu_lock(idx);
    sl->ref->refs++; /* the edit's reference */
    tern_mu_unlock(idx);
    TERN_TRY(tern_edit_add_segment(idx, e, sl->ref->number, &r, sl->ref, ld));
  }
  return TERN_OK;
}

/* The buffer: base's documents fin's view no longer has leave it. */
static int compose_buffer(const tern_state *base, const tern_state *fin, tern_edit *e,
                          tern_mdoc **drops) {
  const tern_memseg *b = base->buffer;
  *drops = NULL;
  if (!base->rec.buffered_docs) return TERN_OK;
  if (!b || !fin->buffer) return tern_fail(TERN_ENOMEM, "bulk transaction: out of memory");
  TERN_TRY(tern_memseg_flat(b));
  size_t n = 0;
  *drops = malloc((b->n ? b->n : 1) * sizeof **drops);
  if (!*drops) return tern_fail(TERN_ENOMEM, "bulk transaction: out of memory");
  for (size_t i = 0; i < b->n; i++)
    if (tern_memseg_find(fin->buffer, b->docs[i].key.p, b->docs[i].key.len) < 0)
      (*drops)[n++] = (tern_mdoc){{b->docs[i].key.p, b->docs[i].key.len, 0}, NULL};
  if (!n) return TERN_OK;
  TERN_TRY(tern_mrun_new(n, 0, &e->run));
  for (size_t i = 0; i < n; i++)
    TERN_TRY(tern_mrun_push(e->run, &(*drops)[i]));
  e->buf = TERN_EDIT_BUF_DROP;
  e->ops = *drops;
  e->nops = n;
  return TERN_OK;
}

int tern_spill_compose(tern_index *idx, const tern_state *base, const tern_state *fin,
                       tern_edit *e, tern_mdoc **drops) {
  *drops = NULL;
  e->number_used = fin->rec.next_segment > 0 ? fin->rec.next_segment - 1 : 0;
  TERN_TRY(compose_segments(idx, base, fin, e));
  return compose_buffer(base, fin, e, drops);
}
