/* SPDX-License-Identifier: MIT */
/*
 * combined.c — the worker's combined filter (combined.h): made apart from
 * the state it covers, then installed as a new state that is the current
 * one with the filter (tern_state_install_cfilter), so that a
 * long-running process keeps the one filter over its overlapping
 * segments that a process opening the index makes (issue 21 item 6).
 *
 * Why a new state and not a change of idx->cur in place: gets read a
 * state's filter without any lock; a state never changes once installed.
 * Nothing is written to the catalog (the filter is derived from the
 * segments, so the commit counter does not move) and the new state
 * shares everything else with the current one.
 */
#include "engine/maint/combined.h"
#include "engine/state/edit.h"

#include "codec/status.h"

int tern_cfilter_refresh(tern_index *idx, const atomic_int *interrupt) {
  tern_state *st;
  TERN_TRY(tern_state_acquire(idx, 0, &st));
  tern_cfilter *cf = NULL;
  int wanted = tern_state_cfilter_wanted(st);
  /* none (still right): interrupted, or memory, or a damaged block */
  if (wanted && tern_cfilter_make(st, interrupt, &cf) != TERN_OK) tern_clear_error();
  tern_state_release(idx, st);
  if (!cf) return TERN_OK;
  tern_install_lock(idx);
  tern_state_install_cfilter(idx, &cf, 0); /* when the current state still wants it */
  tern_install_unlock(idx);
  tern_cfilter_discard(cf); /* not installed: the state moved on (next run) */
  return TERN_OK;
}
