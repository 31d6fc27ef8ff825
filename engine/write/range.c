/* SPDX-License-Identifier: MIT */
/*
 * range.c — what a key range deletes (range.h): tern_delete_range's
 * commit drops the segments wholly inside it, marks the live docs of the
 * others' keys in it (one pass over that part of their dictionary, no
 * per-key write in the catalog's buffer) and takes the buffered keys in it out.
 */
#include "engine/write/range.h"

#include "codec/status.h"

#include <stdlib.h>

int tern_krange_has(const tern_krange *r, const void *key, size_t klen) {
  if (r->from && tern_key_cmp(key, klen, r->from, r->flen) < 0) return 0;
  if (r->to && tern_key_cmp(key, klen, r->to, r->tlen) >= 0) return 0;
  return 1;
}

int tern_krange_covers(const tern_krange *r, const tern_slot *s) {
  const tern_seg_gate *g = &s->gate;
  if (g->lo > g->hi) return 0; /* no key at all: left to the merge policy */
  return tern_krange_has(r, g->min, g->min_len) && tern_krange_has(r, g->max, g->max_len);
}

int tern_krange_slot_docs(const tern_krange *r, const tern_slot *s, tern_u32vec *dels) {
  const tern_segref *ref = s->ref;
  tern_seg_cursor *c = malloc(sizeof *c);
  if (!c) return tern_fail(TERN_ENOMEM, "delete range: out of memory");
  tern_seg_cursor_init(c);
  tern_term_entry e;
  int rc = r->from ? tern_seg_seek_ceil(ref->seg, ref->unique, r->from, r->flen, c, &e)
                   : tern_seg_first_term(ref->seg, ref->unique, c, &e);
  for (; rc == TERN_OK; rc = tern_seg_next_term(ref->seg, c, &e)) {
    if (!tern_krange_has(r, e.term, e.len)) break;
    if (e.ordinal >= ref->max_doc) {
      rc = tern_fail(TERN_ECORRUPT, "segment %s: key ordinal past max_doc", ref->name);
      break;
    }
    uint32_t doc = (uint32_t)e.ordinal;
    if (tern_slot_is_live(s, doc) && (rc = tern_u32vec_push(dels, doc)) != TERN_OK) break;
  }
  tern_seg_cursor_release(c);
  free(c);
  return rc == TERN_NOTFOUND ? TERN_OK : rc;
}

int tern_krange_buffer(const tern_krange *r, const tern_memseg *view, tern_krange_fn fn, void *ctx) {
  if (!view || !view->n) return TERN_OK;
  TERN_TRY(tern_memseg_flat(view));
  size_t lo = 0, hi = view->n;
  while (r->from && lo < hi) { /* the first key >= from */
    size_t mid = lo + (hi - lo) / 2;
    const tern_keyref *k = &view->docs[mid].key;
    if (tern_key_cmp(k->p, k->len, r->from, r->flen) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (size_t i = lo; i < view->n; i++) {
    const tern_keyref *k = &view->docs[i].key;
    if (!tern_krange_has(r, k->p, k->len)) break;
    TERN_TRY(fn(ctx, &view->docs[i]));
  }
  return TERN_OK;
}
