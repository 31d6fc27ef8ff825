/* SPDX-License-Identifier: MIT */
/*
 * edit.c — building an edit, and tern_log_and_apply: the one place that
 * writes the catalog and moves idx->cur for a write of this process
 * (edit.h).  Also the record of what edits do to the buffer while a flush
 * is in flight (the flush carries it into its segment: flush.c).
 */
#include "engine/state/edit.h"
#include "engine/util/thread.h"
#include "engine/util/vec.h"

#include "codec/status.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void tern_edit_init(tern_edit *e, tern_state *base) {
  memset(e, 0, sizeof *e);
  e->base = base;
  e->buf = TERN_EDIT_BUF_SAME;
}

void tern_edit_free(tern_index *idx, tern_edit *e) {
  for (size_t i = 0; i < e->nadds; i++) {
    if (e->adds[i].ref) tern_segref_release(idx, e->adds[i].ref);
    if (!e->borrowed_ld) tern_livedocs_free(e->adds[i].ld);
  }
  for (size_t i = 0; i < e->nlives; i++)
    tern_livedocs_free(e->lives[i].ld);
  free(e->adds);
  free(e->drops);
  free(e->lives);
  tern_mrun_put(e->run);
  if (e->buf == TERN_EDIT_BUF_VIEW) tern_memseg_free(e->view);
  tern_cfilter_discard(e->cf); /* not adopted */
  e->cf = NULL;
  e->adds = NULL;
  e->drops = NULL;
  e->lives = NULL;
  e->nadds = e->ndrops = e->nlives = 0;
  e->run = NULL;
  e->view = NULL;
}

int tern_edit_add_segment(tern_index *idx, tern_edit *e, uint64_t number,
                          const tern_rec_segment *r, tern_segref *ref, tern_livedocs *ld) {
  tern_edit_add *a = tern_vec_room(e->adds, e->nadds, &e->capadds, sizeof *a);
  if (!a) {
    if (ref) tern_segref_release(idx, ref);
    if (!e->borrowed_ld) tern_livedocs_free(ld);
    return tern_fail(TERN_ENOMEM, "edit: out of memory");
  }
  e->adds = a;
  a = &e->adds[e->nadds++];
  a->number = number;
  a->rec = *r;
  a->rec.deleted = ld ? tern_livedocs_deleted(ld) : 0;
  a->rec.livedocs_gen = ld ? 1 : 0;
  a->ref = ref;
  a->ld = ld;
  return TERN_OK;
}

int tern_edit_drop_segment(tern_edit *e, uint64_t number) {
  uint64_t *d = tern_vec_room(e->drops, e->ndrops, &e->capdrops, sizeof *d);
  if (!d) return tern_fail(TERN_ENOMEM, "edit: out of memory");
  e->drops = d;
  e->drops[e->ndrops++] = number;
  return TERN_OK;
}

int tern_edit_set_livedocs(tern_edit *e, uint64_t number, tern_livedocs *ld) {
  tern_edit_live *l = tern_vec_room(e->lives, e->nlives, &e->caplives, sizeof *l);
  if (!l) {
    tern_livedocs_free(ld);
    return tern_fail(TERN_ENOMEM, "edit: out of memory");
  }
  e->lives = l;
  e->lives[e->nlives++] = (tern_edit_live){number, ld};
  return TERN_OK;
}

int tern_edit_writes_catalog(const tern_edit *e) {
  return e->log_always || e->nadds || e->ndrops || e->nlives || e->number_used || e->health ||
         e->sweep || e->copy_counters ||
         (e->buf != TERN_EDIT_BUF_SAME && e->buf != TERN_EDIT_BUF_VIEW);
}

/* ------------------------------------------------------------ the install lock */

void tern_install_lock(tern_index *idx) {
  assert(!tern_mu_held(idx)); /* LOCKS: install_mu before mu */
  tern_lock_spinning(&idx->install_mu); /* the worker and a commit: neither sleeps on it */
#ifndef NDEBUG
  atomic_store_explicit(&idx->install_owner, tern_lock_self(), memory_order_relaxed);
#endif
}

void tern_install_unlock(tern_index *idx) {
  assert(tern_install_held(idx));
#ifndef NDEBUG
  atomic_store_explicit(&idx->install_owner, 0, memory_order_relaxed);
#endif
  pthread_mutex_unlock(&idx->install_mu);
}

/* ------------------------------------------------------------ the flush in flight */

void tern_flight_freeze(tern_index *idx) {
  assert(tern_install_held(idx));
  tern_flight *f = &idx->flight;
  f->frozen = 1;
  f->unknown = 0;
  f->nruns = 0;
}

/* An edit's changes to the buffer, for the flush in flight. */
static void flight_note(tern_index *idx, tern_mrun *run, int unknown) {
  tern_flight *f = &idx->flight;
  if (!f->frozen) return;
  if (unknown) f->unknown = 1;
  if (!run || !run->n || f->unknown) return;
  tern_mrun **r = tern_vec_room(f->runs, f->nruns, &f->cap, sizeof *r);
  if (!r) { /* cannot follow this edit: the flush starts over */
    f->unknown = 1;
    return;
  }
  f->runs = r;
  atomic_fetch_add(&run->refs, 1);
  f->runs[f->nruns++] = run;
}

void tern_flight_noted(tern_index *idx, tern_mrun *const **runs, size_t *n, int *unknown) {
  assert(tern_install_held(idx));
  *runs = idx->flight.runs;
  *n = idx->flight.nruns;
  *unknown = idx->flight.unknown;
}

void tern_flight_thaw(tern_index *idx) {
  assert(tern_install_held(idx));
  tern_flight *f = &idx->flight;
  for (size_t i = 0; i < f->nruns; i++)
    tern_mrun_put(f->runs[i]);
  f->nruns = 0;
  f->frozen = f->unknown = 0;
}

/* What a flush in flight must hear of an edit (logged, or possibly
 * logged: its mdb_txn_commit failed). */
static void note_for_flight(tern_index *idx, const tern_edit *e, int logged) {
  switch (e->buf) {
  case TERN_EDIT_BUF_SAME:
  case TERN_EDIT_BUF_VIEW: break;
  case TERN_EDIT_BUF_OPS: flight_note(idx, logged ? e->run : NULL, !logged); break;
  default: flight_note(idx, NULL, 1); break;
  }
}

/* ------------------------------------------------------------ log and apply */

/* Makes the next state and installs it (under idx->mu).  idx->cur may be
 * the same commit read back from the catalog by a reader meanwhile (a
 * snapshot's acquire between the LMDB commit and here): replaced by the
 * state made here, which has the buffer view. */
static void install(tern_index *idx, tern_edit *e) {
  assert(tern_install_held(idx));
  tern_mu_lock(idx);
  assert(idx->cur);
  assert(idx->cur == e->base || idx->cur->rec.seq == e->rec.seq);
  tern_state *next = NULL;
  if (tern_state_apply(idx, e->base, e, &next) == TERN_OK) {
    tern_state_put_locked(idx, idx->cur);
    idx->cur = next;
    idx->cur_seq = e->rec.seq;
  } else {
    idx->cur_seq = 0; /* stale: the next acquire reads the catalog */
  }
  tern_mu_unlock(idx);
}

int tern_log_and_apply(tern_index *idx, tern_edit *e) {
  assert(tern_install_held(idx));
  assert(e->base);
  tern_mu_lock(idx);
  assert(e->base->refs > 0); /* refs change under mu (state.c) */
  int current = idx->cur == e->base && idx->cur_seq == e->base->rec.seq;
  tern_mu_unlock(idx);
  if (!current)
    return tern_fail(TERN_EBUSY, "%s: the state moved under the edit", idx->dir);
  int writes = tern_edit_writes_catalog(e);
  int rc = TERN_OK;
  if (writes) {
    rc = tern_edit_log(idx, e);
    if (rc != TERN_OK) {
      if (idx->commit_uncertain) note_for_flight(idx, e, 0);
      return rc;
    }
  } else if (e->buf == TERN_EDIT_BUF_SAME && !e->cf) {
    e->rec = e->base->rec; /* changes nothing */
    return TERN_OK;
  } else {
    e->rec = e->base->rec;
  }
  note_for_flight(idx, e, 1);
  if (e->ndrops) tern_segments_dropped(idx, e->drops, e->ndrops);
  install(idx, e);
  return TERN_OK;
}
