/*
 * txn.c — the write transaction.
 *
 * Operations accumulate in memory (an arena of key + document record
 * bytes, and an array of operations); nothing touches the catalog before
 * tern_commit.  Commit sorts the operations by key (the last one per key
 * wins), resolves each key against the segments newest first with the
 * same bloom-first exact lookup as reads, and then, in ONE LMDB write
 * transaction: writes the documents into the buffer DBI (or, for a bulk
 * transaction, registers the segment they were just written to), records
 * a new live-docs generation for every segment that lost a document, and
 * bumps the commit counter.  Segment files are fsynced before that LMDB
 * commit; LMDB's commit is the single point where the change becomes
 * durable and visible.
 *
 * Afterwards, still holding the write lock, the writer flushes a buffer
 * grown past write_buffer_bytes and runs the merge policy, each as a
 * commit of its own.
 */
#include "engine/counters.h"
#include "engine/index.h"
#include "engine/bigmem.h"
#include "engine/bulkwrite.h"
#include "engine/keymap.h"
#include "engine/vec.h"
#include "engine/worker.h"

#include "codec/status.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where tern_delete found a key in the commit it builds on: segment slot
 * `slot`, doc `doc`, or the buffer (slot UINT32_MAX), for operation `op`. */
typedef struct delloc {
  uint32_t op, slot, doc;
} delloc;

struct tern_txn {
  tern_index *idx;
  unsigned flags;
  tern_state *st; /* the commit this transaction builds on */
  tern_arena arena;
  tern_mdoc *ops;
  size_t nops, cap;
  tern_keymap map; /* key -> latest op; bulk: built at the first delete */
  int mapped;
  int has_terms;      /* some put has secondary terms */
  tern_seg_cursor *probe; /* deletes' segment probes (one per transaction: it is large) */
  delloc *locs;           /* deletes' findings, so that commit probes those keys no more */
  size_t nlocs, caplocs;
  tern_progress_fn progress; /* tern_txn_set_progress; may be NULL */
  void *progress_payload;
};

static void report(const tern_txn *t, const char *phase, uint64_t done, uint64_t total) {
  if (t->progress) t->progress(t->progress_payload, phase, done, total);
}

int tern_txn_set_progress(tern_txn *txn, tern_progress_fn fn, void *payload) {
  tern_clear_error();
  if (!txn) return tern_fail(TERN_EINVAL, "tern_txn_set_progress: NULL transaction");
  txn->progress = fn;
  txn->progress_payload = payload;
  return TERN_OK;
}

int tern_txn_begin(tern_txn **out, tern_index *idx, unsigned flags) {
  tern_clear_error();
  if (out) *out = NULL;
  if (!out || !idx || (flags & ~TERN_TXN_BULK))
    return tern_fail(TERN_EINVAL, "tern_txn_begin: bad arguments");
  TERN_TRY(tern_writer_lock(idx));
  tern_txn *t = calloc(1, sizeof *t);
  /* With its buffer view, which a commit of this process hands forward:
   * deletes probe it in memory. */
  int rc = t ? tern_state_acquire(idx, 1, &t->st) : tern_fail(TERN_ENOMEM, "out of memory");
  if (rc != TERN_OK) {
    free(t);
    tern_writer_unlock(idx);
    return rc;
  }
  t->idx = idx;
  t->flags = flags;
  t->mapped = !(flags & TERN_TXN_BULK);
  tern_arena_init(&t->arena);
  tern_keymap_init(&t->map);
  *out = t;
  return TERN_OK;
}

static void txn_free(tern_txn *t) {
  if (t->probe) tern_seg_cursor_release(t->probe);
  free(t->probe);
  free(t->locs);
  tern_state_release(t->idx, t->st);
  tern_arena_free(&t->arena);
  tern_keymap_free(&t->map);
  tern_big_free(t->ops, t->cap * sizeof *t->ops);
  tern_writer_unlock(t->idx);
  free(t);
}

int tern_abort(tern_txn *t) {
  tern_clear_error();
  if (!t) return TERN_OK; /* tern.h: NULL is a no-op */
  txn_free(t);
  return TERN_OK;
}

static int check_key(const void *key, size_t klen) {
  if (!key || klen == 0 || klen > TERN_KEY_MAX)
    return tern_fail(TERN_EINVAL, "key of %zu bytes (1 to %u)", klen, TERN_KEY_MAX);
  return TERN_OK;
}

static int check_doc(const void *val, size_t vlen, const tern_term *terms, size_t nterms) {
  if ((!val && vlen) || vlen > TERN_VALUE_MAX)
    return tern_fail(TERN_EINVAL, "value of %zu bytes (0 to %u)", vlen, TERN_VALUE_MAX);
  if (nterms && !terms) return tern_fail(TERN_EINVAL, "%zu terms and no array", nterms);
  for (size_t i = 0; i < nterms; i++) {
    const tern_term *t = &terms[i];
    size_t fl = t->field ? strnlen(t->field, TERN_FIELD_MAX + 1) : 0;
    if (fl == 0 || fl > TERN_FIELD_MAX)
      return tern_fail(TERN_EINVAL, "term %zu: field name of 1 to %u bytes wanted", i,
                       TERN_FIELD_MAX);
    if (!t->term || t->len == 0 || t->len > TERN_KEY_MAX)
      return tern_fail(TERN_EINVAL, "term %zu: %zu bytes (1 to %u)", i, t->len, TERN_KEY_MAX);
  }
  return TERN_OK;
}

/* Appends an op: kcopy[0..klen) is the key's copy in the arena, doc its
 * record (NULL: a deletion). */
static int push_op(tern_txn *t, const uint8_t *kcopy, size_t klen, const uint8_t *doc,
                   size_t dlen, tern_keypos at) {
  if (t->nops >= UINT32_MAX - 2) return tern_fail(TERN_EINVAL, "transaction too large");
  if (t->nops == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 64;
    tern_mdoc *o = tern_big_realloc(t->ops, t->cap * sizeof *o, cap * sizeof *o);
    if (!o) return tern_fail(TERN_ENOMEM, "transaction: out of memory");
    t->ops = o;
    t->cap = cap;
  }
  t->ops[t->nops] = (tern_mdoc){{kcopy, (uint32_t)klen, (uint32_t)dlen}, doc};
  if (t->mapped) TERN_TRY(tern_keymap_set(&t->map, t->ops, (uint32_t)t->nops, at));
  t->nops++;
  return TERN_OK;
}

int tern_put(tern_txn *t, const void *key, size_t klen, const void *val, size_t vlen,
             const tern_term *terms, size_t nterms) {
  tern_clear_error();
  if (!t) return tern_fail(TERN_EINVAL, "tern_put: NULL transaction");
  TERN_TRY(check_key(key, klen));
  TERN_TRY(check_doc(val, vlen, terms, nterms));
  size_t dlen = tern_rec_doc_size(vlen, terms, nterms);
  if (dlen > UINT32_MAX / 2) return tern_fail(TERN_EINVAL, "document of %zu bytes", dlen);
  uint8_t *p = tern_arena_alloc(&t->arena, klen + dlen);
  if (!p) return tern_fail(TERN_ENOMEM, "transaction: out of memory");
  memcpy(p, key, klen);
  tern_rec_doc_encode(p + klen, val, vlen, terms, nterms);
  t->has_terms |= nterms > 0;
  return push_op(t, p, klen, p + klen, dlen, TERN_KEYPOS_NONE);
}

/* Where the commit this transaction builds on has a document `key`: its
 * buffer view (*slot UINT32_MAX), a segment slot and doc, or nowhere
 * (*has 0); probed in memory, segments newest first, no LMDB read. */
static int committed_find(tern_txn *t, const void *key, size_t klen, int *has, uint32_t *slot,
                          uint32_t *doc) {
  const tern_state *st = t->st;
  *slot = UINT32_MAX;
  *has = tern_memseg_find(st->buffer, key, klen) >= 0;
  if (*has || !st->nslots) return TERN_OK;
  if (!t->probe) {
    if (!(t->probe = malloc(sizeof *t->probe))) return tern_fail(TERN_ENOMEM, "out of memory");
    tern_seg_cursor_init(t->probe);
  }
  for (size_t i = st->nslots; i-- > 0;) {
    tern_term_entry e;
    int rc = tern_slot_find(&st->slots[i], key, klen, t->probe, &e, doc);
    if (rc == TERN_OK) {
      *has = 1;
      *slot = (uint32_t)i;
      return TERN_OK;
    }
    if (rc != TERN_NOTFOUND) return rc;
  }
  return TERN_OK;
}

static int note_loc(tern_txn *t, uint32_t slot, uint32_t doc) {
  if (t->nlocs == t->caplocs) {
    size_t cap = t->caplocs ? 2 * t->caplocs : 64;
    delloc *l = realloc(t->locs, cap * sizeof *l);
    if (!l) return tern_fail(TERN_ENOMEM, "transaction: out of memory");
    t->locs = l;
    t->caplocs = cap;
  }
  t->locs[t->nlocs++] = (delloc){(uint32_t)t->nops, slot, doc};
  return TERN_OK;
}

int tern_delete(tern_txn *t, const void *key, size_t klen) {
  tern_clear_error();
  if (!t) return tern_fail(TERN_EINVAL, "tern_delete: NULL transaction");
  TERN_TRY(check_key(key, klen));
  if (!t->mapped) {
    for (size_t i = 0; i < t->nops; i++)
      TERN_TRY(tern_keymap_set(&t->map, t->ops, (uint32_t)i, TERN_KEYPOS_NONE));
    t->mapped = 1;
  }
  tern_keypos at;
  int64_t last = tern_keymap_get(&t->map, t->ops, key, klen, &at);
  int has;
  uint32_t slot = UINT32_MAX, doc = 0;
  if (last >= 0)
    has = t->ops[last].doc != NULL;
  else
    TERN_TRY(committed_find(t, key, klen, &has, &slot, &doc));
  if (!has) return TERN_NOTFOUND;
  uint8_t *p = tern_arena_alloc(&t->arena, klen);
  if (!p) return tern_fail(TERN_ENOMEM, "transaction: out of memory");
  memcpy(p, key, klen);
  if (last < 0) TERN_TRY(note_loc(t, slot, doc)); /* the key's first op: the committed doc */
  return push_op(t, p, klen, NULL, 0, at);
}

/* ------------------------------------------------------------ commit */

typedef struct commit_ctx {
  tern_txn *t;
  uint32_t *uniq; /* op indices, one per key (its last op), in key order */
  size_t nuniq, uniq_bytes;
  tern_u32vec *dels; /* per slot of t->st: docs that lose their document */
  int touched;  /* some slot has deletions */
  tern_slot_edit *edits; /* per slot: its new live docs, handed to the next state */
  tern_mrun *run;        /* buffered: the keys put into or taken out of the buffer */
  /* bulk: */
  uint64_t seg_number;
  uint32_t seg_docs;
  uint8_t segid[TERN_SEGID_SIZE];
} commit_ctx;

static inline const tern_mdoc *op_at(const commit_ctx *c, size_t i) {
  return &c->t->ops[c->uniq[i]];
}

/* Sorts the ops by key and keeps the last op of each key. */
static int unique_ops(commit_ctx *c) {
  tern_txn *t = c->t;
  size_t n = t->nops;
  c->uniq_bytes = (n ? n : 1) * sizeof *c->uniq;
  c->uniq = tern_big_alloc(c->uniq_bytes);
  if (!c->uniq) return tern_fail(TERN_ENOMEM, "commit: out of memory");
  int dups;
  TERN_TRY(tern_sort_by_key(c->uniq, t->ops, sizeof *t->ops, n, &dups));
  if (!dups) { /* the common import: nothing to drop, no pass over random memory */
    c->nuniq = n;
    return TERN_OK;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const tern_keyref *k = &t->ops[c->uniq[i]].key;
    if (m > 0) {
      const tern_keyref *p = &t->ops[c->uniq[m - 1]].key;
      if (p->len == k->len && !memcmp(p->p, k->p, k->len)) {
        c->uniq[m - 1] = c->uniq[i]; /* stable sort: the later op wins */
        continue;
      }
    }
    c->uniq[m++] = c->uniq[i];
  }
  c->nuniq = m;
  return TERN_OK;
}

static ptrdiff_t key_in_uniq(const commit_ctx *c, const void *key, size_t klen);

/* The keys tern_delete already found (its first op was that delete):
 * their committed documents need no probe. */
static int seed_found(commit_ctx *c, uint8_t *found, size_t *left) {
  const tern_txn *t = c->t;
  for (size_t j = 0; j < t->nlocs; j++) {
    const delloc *l = &t->locs[j];
    const tern_keyref *k = &t->ops[l->op].key;
    ptrdiff_t i = key_in_uniq(c, k->p, k->len);
    if (i < 0 || found[i]) continue;
    found[i] = 1;
    (*left)--;
    if (l->slot == UINT32_MAX) continue; /* in the buffer: no segment has it */
    c->touched = 1;
    TERN_TRY(tern_u32vec_push(&c->dels[l->slot], l->doc));
  }
  return TERN_OK;
}

/* Finds, for every key, its live document in the segments (newest first,
 * each segment visited in key order with one cursor). */
static int resolve_segments(commit_ctx *c) {
  tern_state *st = c->t->st;
  if (!st->nslots || !c->nuniq) return TERN_OK;
  c->dels = calloc(st->nslots, sizeof *c->dels);
  uint8_t *found = calloc(c->nuniq, 1);
  tern_seg_cursor *cur = malloc(sizeof *cur);
  int rc = c->dels && found && cur ? TERN_OK : tern_fail(TERN_ENOMEM, "commit: out of memory");
  size_t left = c->nuniq;
  if (rc == TERN_OK) rc = seed_found(c, found, &left);
  for (size_t s = st->nslots; rc == TERN_OK && left && s-- > 0;) {
    tern_seg_cursor_init(cur);
    for (size_t i = 0; rc == TERN_OK && i < c->nuniq; i++) {
      if (found[i]) continue;
      const tern_keyref *k = &op_at(c, i)->key;
      tern_term_entry e;
      uint32_t doc;
      rc = tern_slot_find(&st->slots[s], k->p, k->len, cur, &e, &doc);
      if (rc == TERN_OK) {
        found[i] = 1;
        left--;
        c->touched = 1;
        rc = tern_u32vec_push(&c->dels[s], doc);
      } else if (rc == TERN_NOTFOUND) {
        rc = TERN_OK;
      }
    }
    tern_seg_cursor_release(cur);
  }
  free(cur);
  free(found);
  return rc;
}

/* A new live-docs generation for every segment that lost documents. */
static int apply_deletions(commit_ctx *c, MDB_txn *mt) {
  tern_state *st = c->t->st;
  tern_index *idx = c->t->idx;
  if (c->touched && !(c->edits = calloc(st->nslots, sizeof *c->edits)))
    return tern_fail(TERN_ENOMEM, "commit: out of memory");
  for (size_t s = 0; c->dels && s < st->nslots; s++) {
    tern_u32vec *d = &c->dels[s];
    if (!d->n) continue;
    const tern_slot *sl = &st->slots[s];
    tern_livedocs *fresh = NULL, *next = NULL;
    const tern_livedocs *base = sl->live ? sl->live->ld : NULL;
    int rc = base ? TERN_OK : tern_livedocs_new(&fresh, sl->ref->max_doc);
    if (!base) base = fresh;
    if (rc == TERN_OK) rc = tern_livedocs_apply(&next, base, d->v, d->n);
    tern_rec_segment r;
    memcpy(r.segid, sl->segid, TERN_SEGID_SIZE);
    r.max_doc = sl->ref->max_doc;
    if (rc == TERN_OK) {
      r.deleted = tern_livedocs_deleted(next);
      r.livedocs_gen = sl->gen + 1;
      c->edits[s] = (tern_slot_edit){next, r.deleted};
      rc = tern_catalog_put_livedocs(idx, mt, sl->ref->number, next, sl->segid);
    }
    if (rc == TERN_OK) rc = tern_catalog_put_segment(idx, mt, sl->ref->number, &r);
    tern_livedocs_free(fresh);
    TERN_TRY(rc);
  }
  return TERN_OK;
}

/* Buffered commit: the documents go into the buffer DBI. */
static int apply_buffered(void *ctx, MDB_txn *mt, tern_rec_state *rec) {
  commit_ctx *c = ctx;
  tern_index *idx = c->t->idx;
  if (rec->seq != c->t->st->rec.seq)
    return tern_fail(TERN_EBUSY, "%s: catalog changed under the writer", idx->dir);
  for (size_t i = 0; i < c->nuniq; i++) {
    const tern_mdoc *op = op_at(c, i);
    uint8_t lk[TERN_REC_BUFKEY_MAX];
    MDB_val k = {tern_rec_bufkey(lk, op->key.p, op->key.len), lk}, v;
    int rc = mdb_get(mt, idx->dbi_buf, &k, &v), found = rc == 0;
    if (rc == 0) {
      rec->buffered_docs--;
      rec->buffered_bytes -= k.mv_size + v.mv_size;
      if (!op->doc) rc = mdb_del(mt, idx->dbi_buf, &k, NULL);
    } else if (rc == MDB_NOTFOUND) {
      rc = 0;
    }
    if (rc != 0) return tern_mdb_env_status(idx, rc, "writing the buffer");
    if (op->doc || found) TERN_TRY(tern_mrun_push(c->run, op));
    if (op->doc) {
      size_t stored;
      TERN_TRY(tern_catalog_put_doc(idx, mt, op->key.p, op->key.len, op->doc, op->key.aux, &stored));
      rec->buffered_docs++;
      rec->buffered_bytes += stored;
    }
  }
  return apply_deletions(c, mt);
}

static ptrdiff_t key_in_uniq(const commit_ctx *c, const void *key, size_t klen) {
  size_t lo = 0, hi = c->nuniq;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const tern_keyref *k = &op_at(c, mid)->key;
    int cmp = tern_key_cmp(k->p, k->len, key, klen);
    if (cmp == 0) return (ptrdiff_t)mid;
    if (cmp < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* Removes from the buffer DBI the documents of keys this transaction
 * writes: the buffer is small, so it is scanned, not probed per key. */
static int unbuffer_keys(commit_ctx *c, MDB_txn *mt, tern_rec_state *rec) {
  tern_index *idx = c->t->idx;
  tern_u32vec hits = {0};
  MDB_cursor *cur;
  TERN_TRY(tern_mdb_status(mdb_cursor_open(mt, idx->dbi_buf, &cur), "opening a cursor"));
  MDB_val k, v;
  int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST), trc = TERN_OK;
  for (; rc == 0 && trc == TERN_OK; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    uint8_t key[TERN_KEY_MAX];
    size_t klen, dlen;
    const uint8_t *doc;
    trc = tern_catalog_decode_doc(idx, &k, &v, key, &klen, &doc, &dlen);
    if (trc != TERN_OK) break;
    ptrdiff_t at = key_in_uniq(c, key, klen);
    if (at < 0) continue;
    rec->buffered_docs--;
    rec->buffered_bytes -= k.mv_size + v.mv_size;
    trc = tern_u32vec_push(&hits, (uint32_t)at);
  }
  mdb_cursor_close(cur);
  if (trc == TERN_OK && rc != MDB_NOTFOUND) trc = tern_mdb_status(rc, "reading the buffer");
  for (size_t i = 0; trc == TERN_OK && i < hits.n; i++) {
    const tern_keyref *kr = &op_at(c, hits.v[i])->key;
    uint8_t lk[TERN_REC_BUFKEY_MAX];
    MDB_val dk = {tern_rec_bufkey(lk, kr->p, kr->len), lk};
    trc = tern_mdb_status(mdb_del(mt, idx->dbi_buf, &dk, NULL), "removing buffered documents");
  }
  free(hits.v);
  return trc;
}

/* Bulk commit: the documents are segment c->seg_number; buffered
 * documents of the same keys leave the buffer. */
static int apply_bulk(void *ctx, MDB_txn *mt, tern_rec_state *rec) {
  commit_ctx *c = ctx;
  tern_index *idx = c->t->idx;
  if (rec->seq != c->t->st->rec.seq)
    return tern_fail(TERN_EBUSY, "%s: catalog changed under the writer", idx->dir);
  if (rec->buffered_docs) TERN_TRY(unbuffer_keys(c, mt, rec));
  if (c->seg_docs) {
    tern_rec_segment r = {{0}, c->seg_docs, 0, 0};
    memcpy(r.segid, c->segid, TERN_SEGID_SIZE);
    TERN_TRY(tern_catalog_put_segment(idx, mt, c->seg_number, &r));
    tern_number_used(rec, c->seg_number);
  }
  return apply_deletions(c, mt);
}

/* Writes the live puts of a bulk transaction as one segment. */
static int write_bulk_segment(commit_ctx *c, char *name) {
  tern_txn *t = c->t;
  c->seg_number = tern_new_segment_number(t->idx, &t->st->rec);
  tern_segment_name(name, c->seg_number);
  int rc = tern_bulk_write(t->idx->dir, name, &t->idx->opts, t->ops, c->uniq, c->nuniq,
                           t->has_terms, &c->seg_docs, t->progress, t->progress_payload,
                           c->segid);
  if (rc != TERN_OK) {
    tern_seg_remove(t->idx->dir, name);
    c->seg_docs = 0;
  }
  return rc;
}

/* Whether the commit writes its documents as a segment of their own: a
 * bulk transaction, or a plain one larger than the write buffer, which
 * would otherwise pass through the buffer DBI (and a copy in the buffer
 * view) only to be flushed into a segment right after: written directly,
 * its peak memory is that of a bulk transaction. */
static int commits_as_segment(const tern_txn *t) {
  return (t->flags & TERN_TXN_BULK) || t->arena.bytes > t->idx->opts.write_buffer_bytes;
}

/* Moves the transaction onto the newest state when the worker installed a
 * flush or merge since it began (install_mu held): the keys' documents
 * are the same, but where they live changed, so tern_delete's findings go
 * and every key is resolved again. */
static int rebase(tern_txn *t) {
  tern_index *idx = t->idx;
  pthread_mutex_lock(&idx->mu);
  int moved = idx->cur != t->st || idx->cur_behind;
  idx->cur_behind = 0;
  pthread_mutex_unlock(&idx->mu);
  if (!moved) return TERN_OK;
  tern_state *st;
  TERN_TRY(tern_state_acquire(idx, 1, &st));
  tern_state_release(idx, t->st);
  t->st = st;
  t->nlocs = 0;
  return TERN_OK;
}

static int commit_ops(tern_txn *t, int *segments_changed, tern_rec_state *rec) {
  commit_ctx c = {0};
  c.t = t;
  char name[TERN_SEGNAME_MAX] = "";
  int bulk = commits_as_segment(t);
  report(t, "sort", 0, t->nops);
  int rc = unique_ops(&c);
  pthread_mutex_lock(&t->idx->install_mu); /* resolve to hand-off: no install in between */
  if (rc == TERN_OK) rc = rebase(t);
  report(t, "sort", t->nops, t->nops);
  report(t, "resolve", 0, 1);
  if (rc == TERN_OK) rc = resolve_segments(&c);
  report(t, "resolve", 1, 1);
  if (rc == TERN_OK && bulk) rc = write_bulk_segment(&c, name);
  if (rc == TERN_OK && !bulk) rc = tern_mrun_new(c.nuniq, &c.run);
  report(t, "commit", 0, 1);
  if (rc == TERN_OK) rc = tern_commit_catalog(t->idx, bulk ? apply_bulk : apply_buffered, &c, rec);
  report(t, "commit", 1, 1);
  if (rc != TERN_OK && bulk && c.seg_docs) tern_discard_new_segment(t->idx, name);
  *segments_changed = rc == TERN_OK && (c.touched || c.seg_docs);
  /* For a flush in flight; a commit that may have landed unseen (its
   * mdb_txn_commit failed) is one the flush cannot follow. */
  if (rc == TERN_OK || t->idx->commit_uncertain)
    tern_worker_note(t->idx, rc == TERN_OK ? c.run : NULL, bulk || rc != TERN_OK);
  if (rc == TERN_OK && !bulk) { /* the next state, without reading the catalog back */
    tern_state_handoff(t->idx, t->st, rec, c.edits, c.run);
    c.run = NULL;
  }
  pthread_mutex_unlock(&t->idx->install_mu);
  tern_mrun_put(c.run);
  for (size_t s = 0; c.edits && s < t->st->nslots; s++)
    tern_livedocs_free(c.edits[s].ld);
  free(c.edits);
  for (size_t s = 0; c.dels && s < t->st->nslots; s++)
    free(c.dels[s].v);
  free(c.dels);
  tern_big_free(c.uniq, c.uniq_bytes);
  return rc;
}

/* Hands the flush or merges the commit made due to the worker.  The
 * commit is durable: TERN_EPARTIAL reports a failure of earlier
 * background work (once), not of this commit. */
static int after_commit(tern_index *idx, const tern_rec_state *rec, int segments_changed) {
  int failed = tern_worker_after_commit(idx, rec, segments_changed);
  if (!failed) return TERN_OK;
  char msg[TERN_REC_HEALTH_MSG_MAX + 1];
  pthread_mutex_lock(&idx->mu);
  snprintf(msg, sizeof msg, "%s", idx->last_error_msg);
  pthread_mutex_unlock(&idx->mu);
  return tern_fail(TERN_EPARTIAL, "%s: committed; a flush or merge after a commit failed (%s): %s",
                   idx->dir, tern_strerror(failed), msg);
}

int tern_commit(tern_txn *t) {
  tern_clear_error();
  if (!t) return tern_fail(TERN_EINVAL, "tern_commit: NULL transaction");
  int changed = 0;
  tern_rec_state rec;
  int rc = t->nops ? commit_ops(t, &changed, &rec) : TERN_OK;
  if (rc == TERN_OK && t->nops) {
    report(t, "merge", 0, 1);
    rc = after_commit(t->idx, &rec, changed);
    report(t, "merge", 1, 1);
  }
  if (rc == TERN_OK) tern_clear_error();
  if (rc == TERN_OK || rc == TERN_EPARTIAL) TERN_COUNT(commits);
  txn_free(t);
  return rc;
}

/* ------------------------------------------------------------ txn_read.c */

/* The transaction's latest operation on `key` (*op NULL: none; its doc
 * NULL: a deletion), mapping a bulk transaction's keys at the first ask as
 * tern_delete does, and the commit it builds on. */
int tern_txn_find_own(tern_txn *t, const void *key, size_t klen, const tern_mdoc **op,
                      const tern_state **st) {
  if (!t->mapped) {
    for (size_t i = 0; i < t->nops; i++)
      TERN_TRY(tern_keymap_set(&t->map, t->ops, (uint32_t)i, TERN_KEYPOS_NONE));
    t->mapped = 1;
  }
  tern_keypos at;
  int64_t last = tern_keymap_get(&t->map, t->ops, key, klen, &at);
  *op = last >= 0 ? &t->ops[last] : NULL;
  *st = t->st;
  return TERN_OK;
}
