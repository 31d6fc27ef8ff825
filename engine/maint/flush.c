/* SPDX-License-Identifier: MIT */
/*
 * flush.c — the write buffer written as a segment, installed as an edit.
 */
#include "engine/util/counters.h"
#include "engine/state/edit.h"
#include "engine/util/errwrap.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ flush */

/*
 * A flush freezes the buffer view of the newest commit (B), writes it as
 * segment N outside install_mu while commits go on, and installs N as one
 * edit under install_mu.  Every commit in between noted the keys it put
 * into or took out of the buffer (its edit's run: tern_flight_noted).  At the
 * install, a frozen doc whose key a later commit touched is deleted in N
 * (the newer document, if any, is still in the buffer: newest wins, and a
 * key deleted meanwhile stays deleted); the buffer keeps exactly the
 * touched keys it still holds (dropped whole and those put back: the cost
 * is the work done since the freeze, not the buffer's size).  In a version
 * 4 catalog "dropped whole" is a new generation; sweeps then remove the
 * older one's documents a few hundred per LMDB transaction (the worker,
 * between its other work; tern_flush and tern_compact at once).
 */
typedef struct flush_ctx {
  tern_index *idx;
  const tern_memseg *frozen;
  uint64_t number;
  uint8_t segid[TERN_SEGID_SIZE];
  tern_livedocs *ld; /* N's deletions, NULL: none */
  tern_mdoc *touched; /* keys commits touched since the freeze, sorted, unique */
  size_t ntouched;
} flush_ctx;

/* The keys of the noted runs, sorted and unique (pointing into the runs). */
static int gather_touched(flush_ctx *f, tern_mrun *const *runs, size_t nruns) {
  size_t n = 0;
  for (size_t i = 0; i < nruns; i++)
    n += runs[i]->n;
  tern_mdoc *all = malloc((n ? n : 1) * sizeof *all);
  uint32_t *perm = malloc((n ? n : 1) * sizeof *perm);
  f->touched = malloc((n ? n : 1) * sizeof *f->touched);
  int rc = all && perm && f->touched ? TERN_OK : tern_fail(TERN_ENOMEM, "flush: out of memory");
  size_t k = 0;
  for (size_t i = 0; rc == TERN_OK && i < nruns; i++)
    for (size_t j = 0; j < runs[i]->n; j++)
      all[k++] = runs[i]->docs[j];
  if (rc == TERN_OK) rc = tern_sort_by_key(perm, all, sizeof *all, n, NULL);
  for (size_t i = 0; rc == TERN_OK && i < n; i++) {
    const tern_mdoc *d = &all[perm[i]];
    const tern_mdoc *p = f->ntouched ? &f->touched[f->ntouched - 1] : NULL;
    if (p && !tern_key_cmp(p->key.p, p->key.len, d->key.p, d->key.len)) continue;
    f->touched[f->ntouched++] = *d;
  }
  free(all);
  free(perm);
  return rc;
}

/* N's live docs: its docs whose keys a commit touched since the freeze. */
static int frozen_deletions(flush_ctx *f) {
  uint32_t *dels = malloc((f->ntouched ? f->ntouched : 1) * sizeof *dels);
  if (!dels) return tern_fail(TERN_ENOMEM, "flush: out of memory");
  size_t n = 0;
  for (size_t i = 0; i < f->ntouched; i++) {
    ptrdiff_t r = tern_mdocs_find(f->frozen->docs, f->frozen->n, f->touched[i].key.p,
                                  f->touched[i].key.len);
    if (r >= 0) dels[n++] = (uint32_t)r;
  }
  tern_livedocs *none = NULL;
  int rc = TERN_OK;
  if (n) rc = tern_livedocs_new(&none, (uint32_t)f->frozen->n);
  if (n && rc == TERN_OK) rc = tern_livedocs_apply(&f->ld, none, dels, n);
  tern_livedocs_free(none);
  free(dels);
  return rc;
}

/* Segment N (written from f->frozen, reader ref: consumed) into the
 * catalog, as an edit.  REQUIRES: install_mu held. */
static int install_flush(flush_ctx *f, tern_segref *ref) {
  tern_index *idx = f->idx;
  assert(tern_install_held(idx));
  tern_mrun *const *runs;
  size_t nruns;
  int unknown;
  tern_flight_noted(idx, &runs, &nruns, &unknown);
  tern_state *cur = NULL;
  int rc = unknown ? TERN_WORKER_RETRY : tern_state_acquire(idx, 0, &cur);
  if (rc == TERN_OK) rc = gather_touched(f, runs, nruns);
  if (rc == TERN_OK) rc = frozen_deletions(f);
  if (rc != TERN_OK) {
    tern_segref_release(idx, ref);
    if (cur) tern_state_release(idx, cur);
    return rc;
  }
  tern_edit e;
  tern_edit_init(&e, cur);
  tern_rec_segment r = {{0}, f->frozen->n, 0, 0};
  memcpy(r.segid, f->segid, TERN_SEGID_SIZE);
  rc = tern_edit_add_segment(idx, &e, f->number, &r, ref, f->ld);
  f->ld = NULL;
  e.buf = TERN_EDIT_BUF_KEEP; /* the touched keys the buffer still holds */
  e.ops = f->touched;
  e.nops = f->ntouched;
  if (rc == TERN_OK) rc = tern_log_and_apply(idx, &e);
  if (rc == TERN_OK) TERN_COUNT(flushes);
  tern_edit_free(idx, &e);
  tern_state_release(idx, cur);
  return rc;
}

/* Documents a sweep removes at most: one short LMDB transaction (about
 * 0.1 ms), between which commits go on. */
#define SWEEP_DOCS 512u

/* One sweep (version 4): documents of the generations before the
 * buffer's, which a flush leaves in the catalog, removed as an edit. */
int tern_sweep_once(tern_index *idx, int *more) {
  tern_install_lock(idx);
  tern_state *cur = NULL;
  int rc = tern_state_acquire(idx, 0, &cur);
  *more = rc == TERN_OK && cur->rec.old_docs;
  if (*more) {
    tern_edit e;
    tern_edit_init(&e, cur);
    e.sweep = SWEEP_DOCS;
    rc = tern_log_and_apply(idx, &e);
    *more = rc == TERN_OK && e.rec.old_docs;
    tern_edit_free(idx, &e);
  }
  tern_install_unlock(idx);
  if (cur) tern_state_release(idx, cur);
  return rc;
}

int tern_sweep_all(tern_index *idx) {
  int more = 1, rc = TERN_OK;
  while (rc == TERN_OK && more)
    rc = tern_sweep_once(idx, &more);
  return rc;
}

int tern_flush_locked(tern_index *idx) {
  tern_state *st;
  tern_install_lock(idx);
  int rc = tern_state_acquire(idx, 1, &st);
  if (rc != TERN_OK || !st->buffer->n) {
    if (rc == TERN_OK) tern_state_release(idx, st);
    tern_install_unlock(idx);
    return rc;
  }
  flush_ctx f = {idx, st->buffer, tern_new_segment_number(idx, &st->rec), {0}, NULL, NULL, 0};
  tern_flight_freeze(idx);
  tern_install_unlock(idx);
  /* Outside the lock: commits go on while the segment is written. */
  char name[TERN_SEGNAME_MAX];
  tern_segment_name(name, f.number);
  tern_segref *ref = NULL;
  rc = tern_memseg_write(st->buffer, idx->dir, name, &idx->opts, f.segid);
  tern_rec_segment r = {{0}, st->buffer->n, 0, 0};
  memcpy(r.segid, f.segid, TERN_SEGID_SIZE);
  if (rc == TERN_OK) rc = tern_segref_preopen(idx, f.number, &r, &ref);
  tern_install_lock(idx);
  if (rc == TERN_OK) rc = install_flush(&f, ref); /* ref consumed */
  tern_flight_thaw(idx);
  if (rc != TERN_OK) tern_discard_new_segment(idx, name);
  tern_install_unlock(idx);
  tern_livedocs_free(f.ld);
  free(f.touched);
  tern_state_release(idx, st);
  return rc;
}
