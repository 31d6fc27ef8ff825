/* SPDX-License-Identifier: MIT */
/*
 * maint.c — the public maintenance calls: flush, compaction,
 * verification and statistics (the flush itself is flush.c, merges
 * merge.c; both run here with the worker drained).
 */
#include "engine/util/errwrap.h"
#include "engine/util/counters.h"
#include "engine/state/index.h"
#include "engine/maint/worker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int tern_flush(tern_index *idx) {
  tern_clear_error();
  if (!idx) return tern_fail(TERN_EINVAL, "tern_flush: NULL index");
  TERN_TRY(tern_writer_lock(idx));
  int pending = tern_worker_drain(idx);
  int rc;
  while ((rc = tern_flush_locked(idx)) == TERN_WORKER_RETRY) {
  }
  if (rc == TERN_OK) rc = tern_sweep_all(idx);
  if (rc == TERN_OK && (rc = tern_merge_policy_run(idx)) != TERN_OK)
    rc = tern_post_commit_failed(idx, rc);
  rc = tern_worker_report(idx, rc, pending);
  if (rc == TERN_OK) tern_worker_nudge(idx); /* the combined filter the flush dropped */
  tern_writer_unlock(idx);
  return rc;
}

int tern_compact(tern_index *idx) {
  tern_clear_error();
  if (!idx) return tern_fail(TERN_EINVAL, "tern_compact: NULL index");
  TERN_TRY(tern_writer_lock(idx));
  int pending = tern_worker_drain(idx);
  /* Every input checked before anything is written: a damaged segment
   * leaves the index as it was (no flush, no health record). */
  int rc = tern_merge_verify_all(idx);
  if (rc == TERN_OK) {
    while ((rc = tern_flush_locked(idx)) == TERN_WORKER_RETRY) {
    }
  }
  if (rc == TERN_OK) rc = tern_sweep_all(idx);
  if (rc == TERN_OK) rc = tern_merge_everything(idx);
  if (rc == TERN_OK) rc = tern_catalog_compact(idx);
  rc = tern_worker_report(idx, rc, pending);
  tern_writer_unlock(idx);
  return rc;
}

/* ------------------------------------------------------------ verify */

typedef struct verify_ctx {
  tern_index *idx;
  MDB_txn *t;
  const tern_state *st;
  size_t seen;
  uint64_t max_number;
} verify_ctx;

static int verify_segment_record(void *ctx, uint64_t number, const tern_rec_segment *r) {
  verify_ctx *v = ctx;
  tern_index *idx = v->idx;
  if (v->seen >= v->st->nslots || v->st->slots[v->seen].ref->number != number)
    return tern_fail(TERN_ECORRUPT, "%s/%s: segment records changed while verifying", idx->dir,
                     TERN_CATALOG_FILE);
  const tern_slot *sl = &v->st->slots[v->seen++];
  if (number > v->max_number) v->max_number = number;
  TERN_TRY(tern_seg_verify(sl->ref->seg));
  if (r->livedocs_gen == 0) return TERN_OK;
  const uint8_t *buf;
  size_t len;
  TERN_TRY(tern_catalog_get_livedocs(idx, v->t, number, &buf, &len));
  tern_livedocs *ld;
  int rc = tern_livedocs_read(&ld, buf, len, r->segid, (uint32_t)r->max_doc, (uint32_t)r->deleted);
  if (rc != TERN_OK)
    return tern_fail_wrap(rc, "%s/%s: live docs of segment %s (generation %" PRIu64 ")", idx->dir,
                          TERN_CATALOG_FILE, sl->ref->name, r->livedocs_gen);
  int ok = tern_livedocs_deleted(ld) == r->deleted && tern_livedocs_max_doc(ld) == r->max_doc;
  tern_livedocs_free(ld);
  if (!ok)
    return tern_fail(TERN_ECORRUPT, "%s/%s: live docs of segment %s disagree with its record",
                     idx->dir, TERN_CATALOG_FILE, sl->ref->name);
  return TERN_OK;
}

/* Every live-docs value belongs to a segment with deletions. */
static int verify_livedocs_keys(verify_ctx *v) {
  MDB_cursor *c;
  TERN_TRY(tern_mdb_status(mdb_cursor_open(v->t, v->idx->dbi_live, &c), "cursor"));
  MDB_val k, d;
  int rc = mdb_cursor_get(c, &k, &d, MDB_FIRST), trc = TERN_OK;
  for (; rc == 0 && trc == TERN_OK; rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
    uint64_t number;
    trc = tern_rec_segkey_decode(k.mv_data, k.mv_size, &number);
    int found = 0;
    for (size_t i = 0; trc == TERN_OK && i < v->st->nslots; i++)
      found |= v->st->slots[i].ref->number == number && v->st->slots[i].gen > 0;
    if (trc == TERN_OK && !found)
      trc = tern_fail(TERN_ECORRUPT, "%s/%s: live docs of segment %" PRIu64 " without a record",
                      v->idx->dir, TERN_CATALOG_FILE, number);
  }
  mdb_cursor_close(c);
  if (trc == TERN_OK && rc != MDB_NOTFOUND) trc = tern_mdb_status(rc, "reading live docs");
  return trc;
}

/* The buffer: records decode, totals match, and no buffered key is also
 * live in a segment. */
static int verify_buffer(verify_ctx *v, const tern_memseg *m) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < m->n; i++) {
    tern_rec_doc d;
    int rc = tern_rec_doc_decode(&d, m->docs[i].doc, m->docs[i].key.aux);
    if (rc != TERN_OK)
      return tern_fail_wrap(rc, "%s/%s: buffered document %zu", v->idx->dir, TERN_CATALOG_FILE, i);
  }
  bytes = m->stored_bytes;
  if (m->n != v->st->rec.buffered_docs || bytes != v->st->rec.buffered_bytes)
    return tern_fail(TERN_ECORRUPT,
                     "%s/%s: buffer holds %zu documents of %" PRIu64 " bytes; state says %" PRIu64
                     " of %" PRIu64,
                     v->idx->dir, TERN_CATALOG_FILE, m->n, bytes, v->st->rec.buffered_docs,
                     v->st->rec.buffered_bytes);
  tern_seg_cursor *c = malloc(sizeof *c);
  if (!c) return tern_fail(TERN_ENOMEM, "out of memory");
  int rc = TERN_OK;
  for (size_t s = 0; rc == TERN_OK && s < v->st->nslots; s++) {
    tern_seg_cursor_init(c);
    for (size_t i = 0; rc == TERN_OK && i < m->n; i++) {
      tern_term_entry e;
      uint32_t doc;
      rc = tern_slot_find(&v->st->slots[s], m->docs[i].key.p, m->docs[i].key.len, c, &e, &doc);
      if (rc == TERN_OK)
        rc = tern_fail(TERN_ECORRUPT, "%s: buffered key also live in segment %s", v->idx->dir,
                       v->st->slots[s].ref->name);
      else if (rc == TERN_NOTFOUND)
        rc = TERN_OK;
    }
    tern_seg_cursor_release(c);
  }
  free(c);
  return rc;
}

static int verify_once(tern_index *idx) {
  tern_state *st;
  TERN_TRY(tern_state_acquire(idx, 0, &st));
  MDB_txn *t;
  int rc = tern_mdb_status(mdb_txn_begin(idx->env, NULL, MDB_RDONLY, &t), "beginning a read");
  if (rc == TERN_OK) {
    verify_ctx v = {idx, t, st, 0, 0};
    tern_rec_state rec;
    rc = tern_catalog_get_state(idx, t, &rec);
    if (rc == TERN_OK && rec.seq != st->rec.seq)
      rc = tern_fail(TERN_EBUSY, "%s: a commit happened while verifying", idx->dir);
    if (rc == TERN_OK) rc = tern_catalog_each_segment(idx, t, &rec, verify_segment_record, &v);
    if (rc == TERN_OK && v.seen != st->nslots)
      rc = tern_fail(TERN_ECORRUPT, "%s: segment count changed", idx->dir);
    if (rc == TERN_OK && st->nslots && v.max_number >= rec.next_segment)
      rc = tern_fail(TERN_ECORRUPT, "%s/%s: segment %" PRIu64 " not below next number %" PRIu64,
                     idx->dir, TERN_CATALOG_FILE, v.max_number, rec.next_segment);
    if (rc == TERN_OK) rc = verify_livedocs_keys(&v);
    tern_memseg *m = NULL; /* the durable buffer, not this process's view of it */
    if (rc == TERN_OK) rc = tern_catalog_count_buffer(idx, t, &rec);
    if (rc == TERN_OK) rc = tern_buffer_read(idx, t, &rec, &m);
    if (rc == TERN_OK) rc = verify_buffer(&v, m);
    tern_memseg_free(m);
    mdb_txn_abort(t);
  }
  tern_state_release(idx, st);
  return rc;
}

int tern_verify(tern_index *idx) {
  tern_clear_error();
  if (!idx) return tern_fail(TERN_EINVAL, "tern_verify: NULL index");
  int rc;
  tern_worker_wait(idx); /* its installs would make the reads below start over */
  /* A map another process grew is adopted here, before env_rw is held
   * (adopting takes it for writing). */
  tern_state *st;
  if (tern_state_acquire(idx, 0, &st) == TERN_OK) tern_state_release(idx, st);
  /* The catalog is read twice (state, then records): another writer's
   * commit in between means verifying again. */
  pthread_rwlock_rdlock(&idx->env_rw);
  for (int attempt = 0; (rc = verify_once(idx)) == TERN_EBUSY && attempt < 8; attempt++) {
  }
  pthread_rwlock_unlock(&idx->env_rw);
  /* A file the commit lists and the directory lacks is damage, as a
   * damaged one is: the index cannot serve that commit. */
  if (rc == -ENOENT) rc = tern_fail_wrap(TERN_ECORRUPT, "a file of the last commit is missing");
  return rc;
}

/* ------------------------------------------------------------ stats */

/* This process's own note when it has one (it may be newer than any the
 * catalog could take), else the catalog's. */
static void stats_health(tern_index *idx, const tern_state *st, tern_stats *s, char *msg) {
  const size_t cap = TERN_REC_HEALTH_MSG_MAX + 1;
  const tern_rec_health *h = tern_state_health(st);
  tern_mu_lock(idx);
  if (idx->last_error) {
    s->last_error = idx->last_error;
    snprintf(msg, cap, "%s", idx->last_error_msg);
  } else {
    s->last_error = h->status;
    s->last_error_commit = h->seq;
    snprintf(msg, cap, "%s", h->msg);
  }
  tern_mu_unlock(idx);
  if (idx->last_error && h->status == idx->last_error && !strcmp(h->msg, msg))
    s->last_error_commit = h->seq;
  s->last_error_msg = msg;
  s->nskipped = h->nbad;
}

/* Bytes of the catalog file: LMDB never shrinks it, tern_compact does. */
static uint64_t catalog_file_bytes(tern_index *idx) {
  int fd;
  struct stat sb;
  pthread_rwlock_rdlock(&idx->env_rw);
  int ok = mdb_env_get_fd(idx->env, &fd) == 0 && fstat(fd, &sb) == 0;
  pthread_rwlock_unlock(&idx->env_rw);
  return ok ? (uint64_t)sb.st_size : 0;
}

/* The process's totals (tern_counters): the engine's counts and the file
 * layer's. */
static void stats_counters(tern_counters *c) {
  c->gets = tern_gets_total();
  c->commits = atomic_load_explicit(&tern_engine_count.commits, memory_order_relaxed);
  c->flushes = atomic_load_explicit(&tern_engine_count.flushes, memory_order_relaxed);
  c->merges = atomic_load_explicit(&tern_engine_count.merges, memory_order_relaxed);
  tern_io_stats io;
  tern_io_global_stats(&io);
  uint64_t first_touch;
  tern_io_check_counts(&c->pages_checked, &first_touch);
  c->reads = io.reads;
  c->bytes_read = io.bytes;
  c->cache_hits = io.reads > first_touch ? io.reads - first_touch : 0;
}

int tern_stats_get(tern_stats **out, tern_index *idx) {
  tern_clear_error();
  if (out) *out = NULL;
  if (!out || !idx) return tern_fail(TERN_EINVAL, "tern_stats_get: NULL argument");
  tern_state *st;
  TERN_TRY(tern_state_acquire(idx, 0, &st));
  tern_stats *s = calloc(1, sizeof *s + TERN_REC_HEALTH_MSG_MAX + 1);
  if (s && st->nslots) s->segments = calloc(st->nslots, sizeof *s->segments);
  if (!s || (st->nslots && !s->segments)) {
    free(s);
    tern_state_release(idx, st);
    return tern_fail(TERN_ENOMEM, "stats: out of memory");
  }
  stats_health(idx, st, s, (char *)(s + 1));
  s->nsegments = st->nslots;
  s->buffered = st->rec.buffered_docs;
  s->docs = st->rec.buffered_docs;
  for (size_t i = 0; i < st->nslots; i++) {
    const tern_slot *sl = &st->slots[i];
    tern_segment_stats *g = &s->segments[i];
    tern_seg_summary sum;
    tern_seg_summarize(sl->ref->seg, &sum);
    g->id = sl->ref->number;
    g->max_doc = sl->ref->max_doc;
    g->deleted = sl->deleted;
    g->livedocs_form = sl->live ? tern_livedocs_form(sl->live->ld) : "none";
    g->livedocs_bytes = sl->live ? tern_livedocs_memory(sl->live->ld) : 0;
    g->terms = sum.terms;
    g->pulsed_terms = sum.pulsed_terms;
    g->bytes_terms = sum.bytes_terms;
    g->bytes_index = sum.bytes_index;
    g->bytes_postings = sum.bytes_postings;
    g->bytes_filter = sum.bytes_filter;
    g->bytes_values = sum.bytes_values;
    g->bytes = sum.bytes;
    s->docs += g->max_doc - g->deleted;
    s->deleted += g->deleted;
  }
  s->filter_bytes = tern_cfilter_memory(st->cf);
  tern_state_release(idx, st);
  s->catalog_bytes = catalog_file_bytes(idx);
  stats_counters(&s->counters);
  *out = s;
  return TERN_OK;
}

int tern_stats_free(tern_stats *s) {
  tern_clear_error();
  if (!s) return TERN_OK;
  free(s->segments);
  free(s);
  return TERN_OK;
}
