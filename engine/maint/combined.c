/* SPDX-License-Identifier: MIT */
/*
 * combined.c — the worker's combined filter (combined.h): made apart from
 * the state it covers, installed as an edit, so that a long-running
 * process keeps the one filter over its overlapping segments that a
 * process opening the index makes at open (issue 21 item 6).
 *
 * Why an edit and not a change of idx->cur in place: gets read a state's
 * filter without any lock; a state never changes once installed.  The
 * edit writes nothing to the catalog (the filter is derived from the
 * segments, so the commit counter does not move) and the next state
 * shares everything else with the current one.
 */
#include "engine/maint/combined.h"
#include "engine/state/edit.h"

#include "codec/status.h"

/* Installs cf for the current state when it covers it; cf is consumed. */
static int install_filter(tern_index *idx, tern_cfilter *cf) {
  tern_install_lock(idx);
  tern_state *cur = NULL;
  int rc = tern_state_acquire(idx, 0, &cur);
  if (rc == TERN_OK && tern_state_cfilter_wanted(cur)) {
    tern_edit e;
    tern_edit_init(&e, cur);
    e.cf = cf;
    cf = NULL;
    rc = tern_log_and_apply(idx, &e);
    tern_edit_free(idx, &e); /* the filter, when the state did not adopt it */
    if (rc == TERN_EBUSY) { /* the state moved (another process): next time */
      tern_clear_error();
      rc = TERN_OK;
    }
  }
  if (cur) tern_state_release(idx, cur);
  tern_install_unlock(idx);
  tern_cfilter_discard(cf);
  return rc;
}

int tern_cfilter_refresh(tern_index *idx) {
  tern_state *st;
  TERN_TRY(tern_state_acquire(idx, 0, &st));
  tern_cfilter *cf = NULL;
  int wanted = tern_state_cfilter_wanted(st);
  if (wanted && tern_cfilter_make(st, &cf) != TERN_OK) tern_clear_error(); /* none: still right */
  tern_state_release(idx, st);
  return cf ? install_filter(idx, cf) : TERN_OK;
}
