/* SPDX-License-Identifier: MIT */
/*
 * edit_log.c — an edit written into the catalog (edit.h): one LMDB write
 * transaction that checks the catalog is at the edit's base commit,
 * writes the segment, live-docs, buffer and health records the edit
 * changes, recounts the segment records into the state record, and bumps
 * the commit counter.  LMDB's commit is the one point where the edit
 * becomes durable and visible to other processes.  The bodies of the
 * former per-writer callbacks (commit, bulk commit, flush, merge, health,
 * backup) are the sections below.
 */
#include "engine/state/edit.h"
#include "engine/util/counters.h"
#include "engine/util/vec.h"

#include "codec/status.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ segments */

static int log_segments(tern_index *idx, MDB_txn *t, const tern_edit *e, tern_rec_state *rec) {
  for (size_t i = 0; i < e->ndrops; i++)
    TERN_TRY(tern_catalog_del_segment(idx, t, e->drops[i]));
  for (size_t i = 0; i < e->nadds; i++) {
    const tern_edit_add *a = &e->adds[i];
    if (a->ld) TERN_TRY(tern_catalog_put_livedocs(idx, t, a->number, a->ld, a->rec.segid));
    TERN_TRY(tern_catalog_put_segment(idx, t, a->number, &a->rec));
    tern_number_used(rec, a->number);
  }
  if (e->number_used) tern_number_used(rec, e->number_used);
  return TERN_OK;
}

static const tern_slot *base_slot(const tern_state *st, uint64_t number) {
  for (size_t i = 0; i < st->nslots; i++)
    if (st->slots[i].ref->number == number) return &st->slots[i];
  return NULL;
}

/* A new live-docs generation for each segment the edit deletes from. */
static int log_livedocs(tern_index *idx, MDB_txn *t, const tern_edit *e) {
  for (size_t i = 0; i < e->nlives; i++) {
    const tern_edit_live *l = &e->lives[i];
    const tern_slot *sl = base_slot(e->base, l->number);
    assert(sl); /* the edit's builder took it from base */
    if (!sl)
      return tern_fail(TERN_EBUSY, "%s: edited segment %" PRIu64 " is not in the state", idx->dir,
                       l->number);
    tern_rec_segment r;
    memcpy(r.segid, sl->segid, TERN_SEGID_SIZE);
    r.max_doc = sl->ref->max_doc;
    r.deleted = tern_livedocs_deleted(l->ld);
    r.livedocs_gen = sl->gen + 1;
    TERN_TRY(tern_catalog_put_livedocs(idx, t, l->number, l->ld, sl->segid));
    TERN_TRY(tern_catalog_put_segment(idx, t, l->number, &r));
  }
  return TERN_OK;
}

/* ------------------------------------------------------------ buffer */

/* A commit's documents: put, or taken out of the buffer. */
static int log_buffer_ops(tern_index *idx, MDB_txn *t, const tern_edit *e, tern_rec_state *rec,
                          int *wrote) {
  for (size_t i = 0; i < e->nops; i++) {
    const tern_mdoc *op = &e->ops[i];
    size_t stored = 0, was;
    if (op->doc) /* put, or replaced: one descent for a new key */
      TERN_TRY(tern_catalog_replace_doc(idx, t, rec->buffer_gen, op->key.p, op->key.len, op->doc,
                                        op->key.aux, &stored, &was));
    else /* deleted: taken out when buffered */
      TERN_TRY(tern_catalog_take_doc(idx, t, rec->buffer_gen, op->key.p, op->key.len, &was));
    rec->buffered_docs = rec->buffered_docs + (stored != 0) - (was != 0);
    rec->buffered_bytes = rec->buffered_bytes - (uint64_t)was + stored;
    *wrote |= stored || was;
  }
  return TERN_OK;
}

/* A bulk commit: buffered documents of its keys leave the buffer (the
 * buffer is small, so it is scanned, not probed per key). */
static int log_buffer_drop(tern_index *idx, MDB_txn *t, const tern_edit *e, tern_rec_state *rec,
                           int *wrote) {
  if (!rec->buffered_docs) return TERN_OK;
  tern_u32vec hits = {0};
  MDB_cursor *cur = NULL;
  MDB_val k, v;
  int rc = tern_catalog_buffer_first(idx, t, rec->buffer_gen, &cur, &k, &v);
  while (rc == TERN_OK) {
    uint8_t key[TERN_KEY_MAX];
    size_t klen, dlen;
    const uint8_t *doc;
    rc = tern_catalog_decode_doc(idx, &k, &v, key, &klen, &doc, &dlen);
    ptrdiff_t at = rc == TERN_OK ? tern_mdocs_find(e->ops, e->nops, key, klen) : -1;
    if (at >= 0) rc = tern_u32vec_push(&hits, (uint32_t)at);
    if (rc == TERN_OK) rc = tern_catalog_buffer_next(idx, cur, rec->buffer_gen, &k, &v);
  }
  if (cur) mdb_cursor_close(cur);
  if (rc == TERN_NOTFOUND) rc = TERN_OK;
  for (size_t i = 0; rc == TERN_OK && i < hits.n; i++) {
    const tern_keyref *kr = &e->ops[hits.v[i]].key;
    size_t was;
    rc = tern_catalog_take_doc(idx, t, rec->buffer_gen, kr->p, kr->len, &was);
    rec->buffered_docs -= was != 0;
    rec->buffered_bytes -= was;
    *wrote |= was != 0;
  }
  free(hits.v);
  return rc;
}

typedef struct kept_doc {
  uint8_t *key, *doc;
  size_t klen, dlen;
} kept_doc;

/* Puts docs[0..n) into a buffer emptied: before version 4 the table is
 * dropped; in version 4 they go into the next generation, and the older
 * ones are left to sweeps (tern_catalog_sweep). */
static int put_kept(tern_index *idx, MDB_txn *t, const kept_doc *kept, size_t n,
                    tern_rec_state *rec) {
  if (TERN_CATALOG_BUFFER_IN_MAIN(idx->catalog_version)) {
    rec->buffer_gen++;
    rec->old_docs += rec->buffered_docs;
  } else {
    TERN_TRY(tern_catalog_buffer_empty(idx, t));
  }
  rec->buffered_docs = rec->buffered_bytes = 0;
  for (size_t i = 0; i < n; i++) {
    size_t stored;
    TERN_TRY(tern_catalog_put_doc(idx, t, rec->buffer_gen, kept[i].key, kept[i].klen, kept[i].doc,
                                  kept[i].dlen, &stored));
    rec->buffered_docs++;
    rec->buffered_bytes += stored;
  }
  return TERN_OK;
}

/* A flush: the buffer keeps the ops' keys it holds now, put back after
 * the whole buffer is emptied (the cost is the work done since the
 * freeze, not the buffer's size). */
static int log_buffer_keep(tern_index *idx, MDB_txn *t, const tern_edit *e, tern_rec_state *rec) {
  tern_arena a;
  tern_arena_init(&a);
  kept_doc *kept = malloc((e->nops ? e->nops : 1) * sizeof *kept);
  int rc = kept ? TERN_OK : tern_fail(TERN_ENOMEM, "flush: out of memory");
  size_t nk = 0;
  for (size_t i = 0; rc == TERN_OK && i < e->nops; i++) {
    const tern_keyref *kr = &e->ops[i].key;
    uint8_t lk[TERN_REC_MAINBUFKEY_MAX], key[TERN_KEY_MAX];
    MDB_val k = {0, lk}, v;
    rc = tern_catalog_get_doc(idx, t, rec->buffer_gen, kr->p, kr->len, &k, &v);
    if (rc == TERN_NOTFOUND) {
      rc = TERN_OK;
      continue;
    }
    size_t klen, dlen;
    const uint8_t *doc;
    if (rc == TERN_OK) rc = tern_catalog_decode_doc(idx, &k, &v, key, &klen, &doc, &dlen);
    uint8_t *p = rc == TERN_OK ? tern_arena_alloc(&a, klen + dlen + 1) : NULL;
    if (rc == TERN_OK && !p) rc = tern_fail(TERN_ENOMEM, "flush: out of memory");
    if (rc != TERN_OK) break;
    memcpy(p, key, klen);
    if (dlen) memcpy(p + klen, doc, dlen);
    kept[nk++] = (kept_doc){p, p + klen, klen, dlen};
  }
  if (rc == TERN_OK) rc = put_kept(idx, t, kept, nk, rec);
  free(kept);
  tern_arena_free(&a);
  return rc;
}

/* A backup: the buffer holds exactly the view's documents. */
static int log_buffer_copy(tern_index *idx, MDB_txn *t, const tern_edit *e, tern_rec_state *rec) {
  const tern_memseg *m = e->view;
  rec->buffered_docs = rec->buffered_bytes = 0;
  TERN_TRY(tern_memseg_flat(m));
  for (size_t i = 0; i < m->n; i++) {
    const tern_mdoc *d = &m->docs[i];
    size_t stored;
    TERN_TRY(tern_catalog_put_doc(idx, t, rec->buffer_gen, d->key.p, d->key.len, d->doc, d->key.aux,
                                  &stored));
    rec->buffered_docs++;
    rec->buffered_bytes += stored;
  }
  return TERN_OK;
}

static int log_buffer(tern_index *idx, MDB_txn *t, const tern_edit *e, tern_rec_state *rec,
                      int *wrote) {
  switch (e->buf) {
  case TERN_EDIT_BUF_OPS: return log_buffer_ops(idx, t, e, rec, wrote);
  case TERN_EDIT_BUF_DROP: return log_buffer_drop(idx, t, e, rec, wrote);
  case TERN_EDIT_BUF_KEEP: return log_buffer_keep(idx, t, e, rec);
  case TERN_EDIT_BUF_COPY: return log_buffer_copy(idx, t, e, rec);
  default: return TERN_OK;
  }
}

/* A sweep (version 4): documents of older generations removed, up to
 * e->sweep of them, as many as the state record counts. */
static int log_sweep(tern_index *idx, MDB_txn *t, const tern_edit *e, tern_rec_state *rec) {
  if (!e->sweep) return TERN_OK;
  size_t removed;
  TERN_TRY(tern_catalog_sweep(idx, t, rec->buffer_gen, e->sweep, &removed));
  if (removed > rec->old_docs || (removed < e->sweep && removed != rec->old_docs))
    return tern_catalog_damaged(
        idx, tern_fail(TERN_ECORRUPT,
                       "catalog: %zu documents of older buffer generations where the state "
                       "record counts %" PRIu64,
                       removed, rec->old_docs));
  rec->old_docs -= removed;
  return TERN_OK;
}

/* ------------------------------------------------------------ health */

static int log_health(tern_index *idx, MDB_txn *t, const tern_edit *e) {
  if (!e->health) return TERN_OK;
  uint8_t buf[TERN_REC_HEALTH_MAX];
  return tern_catalog_put_meta(idx, t, "health", buf, tern_rec_health_encode(buf, e->health));
}

/* ------------------------------------------------------------ the transaction */

/* Count and digest of the segment records a write transaction leaves. */
static int seal_segments(tern_index *idx, MDB_txn *t, tern_rec_state *rec) {
  MDB_cursor *c;
  TERN_TRY(tern_mdb_status(mdb_cursor_open(t, idx->dbi_segs, &c), "opening a cursor"));
  MDB_val k, v;
  rec->nsegments = rec->seg_digest = 0;
  int rc;
  for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    rec->nsegments++;
    rec->seg_digest ^= tern_rec_stored_seal(v.mv_data, v.mv_size);
  }
  mdb_cursor_close(c);
  return rc == MDB_NOTFOUND ? TERN_OK : tern_mdb_status(rc, "reading segment records");
}

/* The state record as t finds it.  Every write transaction of any process
 * moves LMDB's id by one, so when t's id follows this process's last edit
 * and the base is the commit that edit wrote, the record is the base's own
 * (~1k instructions of a one-document commit: a lookup, its seal, its
 * decode).  Otherwise it is read. */
static int log_state(tern_index *idx, MDB_txn *t, const tern_edit *e, tern_rec_state *rec) {
  if (e->base && idx->logged_txnid && (uint64_t)mdb_txn_id(t) == idx->logged_txnid + 1 &&
      e->base->rec.seq == idx->logged_seq) {
    *rec = e->base->rec;
    return TERN_OK;
  }
  TERN_COUNT(state_record_reads);
  TERN_TRY(tern_catalog_get_state_writing(idx, t, rec));
  return tern_catalog_count_buffer(idx, t, rec);
}

/* Whether a version 4 edit changes what the state record holds. */
static int changes_record(const tern_edit *e) {
  return e->nadds || e->ndrops || e->nlives || e->number_used || e->copy_counters || e->sweep ||
         e->buf == TERN_EDIT_BUF_KEEP || e->buf == TERN_EDIT_BUF_COPY;
}

/* The commit number t gets.  Version 4 takes LMDB's: the state record is
 * written only when it changes, or when nothing else is (an empty LMDB
 * commit would not take a number). */
static int log_counters(tern_index *idx, MDB_txn *t, const tern_edit *e, tern_rec_state *rec,
                        int wrote) {
  int v4 = TERN_CATALOG_BUFFER_IN_MAIN(idx->catalog_version);
  uint64_t id = (uint64_t)mdb_txn_id(t);
  if (e->copy_counters) {
    rec->seq = e->copy_seq;
    rec->seq_base = e->copy_seq - id;
    rec->next_segment = e->copy_next_segment;
  } else {
    rec->seq = v4 ? id + rec->seq_base : rec->seq + 1;
  }
  if (v4 && wrote && !changes_record(e)) return TERN_OK;
  return tern_catalog_put_state(idx, t, rec);
}

static int log_in(tern_index *idx, MDB_txn *t, tern_edit *e, tern_rec_state *rec) {
  TERN_TRY(log_state(idx, t, e, rec));
  if (e->base && rec->seq != e->base->rec.seq)
    return tern_fail(TERN_EBUSY, "%s: catalog changed under the writer", idx->dir);
  int wrote = e->health != NULL;
  TERN_TRY(log_buffer(idx, t, e, rec, &wrote));
  TERN_TRY(log_sweep(idx, t, e, rec));
  TERN_TRY(log_segments(idx, t, e, rec));
  TERN_TRY(log_livedocs(idx, t, e));
  TERN_TRY(log_health(idx, t, e));
  /* An edit that writes no segment record leaves their count and digest
   * as the state record read above has them: no walk (a commit of
   * buffered documents only). */
  if (e->nadds || e->ndrops || e->nlives) TERN_TRY(seal_segments(idx, t, rec));
  return log_counters(idx, t, e, rec, wrote);
}

int tern_edit_log(tern_index *idx, tern_edit *e) {
  assert(tern_install_held(idx));
  if (atomic_load(&idx->catalog_bad))
    return tern_fail(TERN_ECORRUPT, "%s/%s: catalog found damaged; nothing is written into it",
                     idx->dir, TERN_CATALOG_FILE);
  idx->commit_uncertain = 0;
  (void)tern_catalog_map_full(); /* forget an older one */
  for (int attempt = 0;; attempt++) {
    MDB_txn *t;
    TERN_TRY(tern_catalog_begin(idx, 0, &t));
    tern_rec_state rec;
    int rc = log_in(idx, t, e, &rec);
    if (rc != TERN_OK) {
      mdb_txn_abort(t);
      if (tern_catalog_map_full() && attempt < 16 && tern_catalog_grow(idx) == TERN_OK)
        continue;
      return rc;
    }
    uint64_t txnid = (uint64_t)mdb_txn_id(t);
    idx->logged_txnid = idx->logged_seq = 0; /* known again only once committed */
    int mrc = mdb_txn_commit(t);
    if (mrc == MDB_MAP_FULL && attempt < 16 && tern_catalog_grow(idx) == TERN_OK) continue;
    if (mrc != 0) {
      idx->commit_uncertain = 1;
      return tern_mdb_env_status(idx, mrc, "committing");
    }
    idx->logged_txnid = txnid;
    idx->logged_seq = rec.seq;
    e->rec = rec;
    return TERN_OK;
  }
}
