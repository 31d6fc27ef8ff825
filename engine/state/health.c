/* SPDX-License-Identifier: MIT */
/*
 * health.c — failures of the work a commit runs after it is durable
 * (flush, merge), and the segments that failed verification as merge
 * input.
 *
 * The commit stays: tern_commit returns TERN_EPARTIAL with the cause in
 * tern_errmsg().  The failure is kept in this process and, when the
 * catalog can still be written, in meta "health" so that `tern stats` in
 * another process shows it and merges in every process skip a segment
 * found damaged instead of failing on it after every commit.
 */
#include "engine/state/edit.h"
#include "engine/util/errwrap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const tern_rec_health *tern_state_health(const tern_state *st) {
  static const tern_rec_health empty;
  return st->health ? st->health : &empty;
}

tern_rec_health *tern_health_copy(const tern_rec_health *h, int *rc) {
  *rc = TERN_OK;
  if (!h->status && !h->seq && !h->nbad && !h->msg[0]) return NULL; /* empty */
  tern_rec_health *c = malloc(sizeof *c);
  if (!c) *rc = tern_fail(TERN_ENOMEM, "state: out of memory");
  else *c = *h;
  return c;
}

int tern_health_is_bad(const tern_state *st, uint64_t number) {
  const tern_rec_health *h = tern_state_health(st);
  for (size_t i = 0; i < h->nbad; i++)
    if (h->bad[i] == number) return 1;
  return 0;
}

static int segment_listed(const tern_state *st, uint64_t number) {
  for (size_t i = 0; i < st->nslots; i++)
    if (st->slots[i].ref->number == number) return 1;
  return 0;
}

/* The health record after a failure: kept, and bad segments no longer
 * in the catalog forgotten. */
static void health_after(const tern_state *st, int status, const char *msg, uint64_t bad,
                         tern_rec_health *h) {
  *h = *tern_state_health(st);
  h->status = status;
  h->seq = st->rec.seq;
  snprintf(h->msg, sizeof h->msg, "%s", msg);
  size_t m = 0;
  for (size_t i = 0; i < h->nbad; i++)
    if (h->bad[i] != bad && segment_listed(st, h->bad[i])) h->bad[m++] = h->bad[i];
  h->nbad = m;
  if (bad && h->nbad < TERN_REC_HEALTH_BAD_MAX) h->bad[h->nbad++] = bad;
}

/* The failure written into the catalog as an edit. */
static void log_health(tern_index *idx, int status, const char *msg, uint64_t bad) {
  tern_install_lock(idx);
  tern_state *cur;
  if (tern_state_acquire(idx, 0, &cur) == TERN_OK) {
    tern_edit e;
    tern_rec_health h;
    tern_edit_init(&e, cur);
    health_after(cur, status, msg, bad, &h);
    e.health = &h;
    (void)tern_log_and_apply(idx, &e);
    tern_edit_free(idx, &e);
    tern_state_release(idx, cur);
  }
  tern_install_unlock(idx);
}

void tern_health_keep_msg(tern_index *idx) {
  char msg[TERN_REC_HEALTH_MSG_MAX + 1];
  snprintf(msg, sizeof msg, "%s", tern_errmsg());
  tern_mu_lock(idx);
  snprintf(idx->last_error_msg, sizeof idx->last_error_msg, "%s", msg);
  tern_mu_unlock(idx);
}

int tern_health_publish(tern_index *idx, int status, uint64_t bad_segment) {
  char msg[TERN_REC_HEALTH_MSG_MAX + 1];
  tern_mu_lock(idx);
  idx->last_error = status;
  snprintf(msg, sizeof msg, "%s", idx->last_error_msg);
  tern_mu_unlock(idx);
  /* Best effort: a catalog that cannot take this small write (full map,
   * full disk, found damaged) still has the failure in this process. */
  if (!atomic_load(&idx->catalog_bad)) log_health(idx, status, msg, bad_segment);
  tern_fail(status, "%s", msg); /* the cause, not the health write's outcome */
  return status;
}

int tern_health_note(tern_index *idx, int status, uint64_t bad_segment) {
  tern_health_keep_msg(idx);
  return tern_health_publish(idx, status, bad_segment);
}

int tern_post_commit_failed(tern_index *idx, int status) {
  tern_health_note(idx, status, 0);
  return tern_fail_wrap(TERN_EPARTIAL, "%s: committed; the work after the commit failed (%s)",
                        idx->dir, tern_strerror(status));
}
