/* SPDX-License-Identifier: MIT */
/*
 * txn.c — the write transaction.
 *
 * Operations accumulate in memory (an arena of key + document record
 * bytes, and an array of operations); nothing touches the catalog before
 * tern_commit.  Commit sorts the operations by key (the last one per key
 * wins), resolves each key against the segments newest first with the
 * same bloom-first exact lookup as reads, and then, in ONE LMDB write
 * transaction: writes the documents into the catalog's buffer (or, for a bulk
 * transaction, registers the segment they were just written to), records
 * a new live-docs generation for every segment that lost a document, and
 * bumps the commit counter.  Segment files are fsynced before that LMDB
 * commit; LMDB's commit is the single point where the change becomes
 * durable and visible.
 *
 * The commit is an edit (edit.h) installed by tern_log_and_apply, which
 * hands the next state forward without reading the catalog back.
 * Afterwards the worker is told (worker.h): it flushes a buffer grown past
 * write_buffer_bytes and runs the merge policy in the background, each as
 * an edit of its own.
 */
#include "engine/util/counters.h"
#include "engine/state/index.h"
#include "engine/util/bigmem.h"
#include "engine/state/edit.h"
#include "engine/write/bulkwrite.h"
#include "engine/buffer/keymap.h"
#include "engine/write/range.h"
#include "engine/write/txn_spill.h"
#include "engine/util/vec.h"
#include "engine/maint/worker.h"

#include "codec/status.h"

#include <assert.h>
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
  tern_keymap map; /* key -> latest op, built at the first lookup (tern_delete,
                      tern_txn_get, TERN_NOOVERWRITE): a put-only transaction hashes nothing */
  int mapped;
  int has_terms;      /* some put has secondary terms */
  tern_seg_cursor *probe; /* deletes' segment probes (one per transaction: it is large) */
  delloc *locs;           /* deletes' findings, so that commit probes those keys no more */
  size_t nlocs, caplocs;
  tern_krange *ranges;       /* tern_delete_range, bounds copied into the arena */
  size_t nranges, capranges;
  tern_progress_fn progress; /* tern_txn_set_progress; may be NULL */
  void *progress_payload;
  /* tern_txn_set_memory: past `memory` bytes a bulk transaction spills
   * (txn_spill.h) onto private states built on `base` (NULL: none yet). */
  uint64_t memory;
  uint64_t nterms; /* terms of the ops in memory, for the estimate */
  tern_state *base;
  uint64_t *spilled; /* numbers of the segments spills wrote */
  size_t nspilled, capspilled;
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

/* A transaction's operations array kept for the next one up to this many
 * (6 KiB); a larger one is freed with its transaction. */
enum { SPARE_OPS_MAX = 256 };

/* A zeroed transaction on idx, made of the handle's spare memory when it
 * has some (idx->txn_spare).  REQUIRES: the writer lock held. */
static tern_txn *txn_alloc(tern_index *idx) {
  tern_txn_spare *s = &idx->txn_spare;
  tern_txn *t = s->txn ? s->txn : malloc(sizeof *t);
  if (!t) return NULL;
  memset(t, 0, sizeof *t);
  t->idx = idx;
  t->arena = s->arena; /* empty, or tern_arena_init's */
  t->ops = s->ops;
  t->cap = s->cap;
  tern_keymap_init(&t->map);
  memset(s, 0, sizeof *s);
  return t;
}

/* Ends t's memory: kept as the handle's spare (its arena emptied, its
 * operations array when small), the rest freed.  REQUIRES: the writer lock
 * held, t's probe and lists released (its state is the caller's). */
static void txn_keep(tern_txn *t) {
  tern_txn_spare *s = &t->idx->txn_spare;
  assert(!s->txn && !s->ops && !s->arena.head); /* taken by t's begin, or never made */
  tern_keymap_free(&t->map);
  tern_arena_reset(&t->arena);
  if (t->cap > SPARE_OPS_MAX) {
    tern_big_free(t->ops, t->cap * sizeof *t->ops);
    t->ops = NULL;
    t->cap = 0;
  }
  *s = (tern_txn_spare){t, t->arena, t->ops, t->cap};
}

int tern_txn_begin(tern_txn **out, tern_index *idx, unsigned flags) {
  tern_clear_error();
  if (out) *out = NULL;
  if (!out || !idx || (flags & ~TERN_TXN_BULK))
    return tern_fail(TERN_EINVAL, "tern_txn_begin: bad arguments");
  TERN_TRY(tern_writer_lock(idx));
  tern_txn *t = txn_alloc(idx);
  /* With its buffer view, which a commit of this process hands forward:
   * deletes probe it in memory. */
  int rc = t ? tern_state_acquire(idx, 1, &t->st) : tern_fail(TERN_ENOMEM, "out of memory");
  if (rc != TERN_OK) {
    if (t) txn_keep(t);
    tern_writer_unlock(idx);
    return rc;
  }
  t->flags = flags;
  *out = t;
  return TERN_OK;
}

/* Removes the files of the spilled segments still listed (none the
 * catalog names: a commit unlists those it installed), after the private
 * state holding them went. */
static void discard_spilled(tern_txn *t) {
  for (size_t i = 0; i < t->nspilled; i++) {
    char name[TERN_SEGNAME_MAX];
    tern_segment_name(name, t->spilled[i]);
    tern_discard_new_segment(t->idx, name);
  }
  t->nspilled = 0;
}

static void txn_free(tern_txn *t) {
  if (t->probe) tern_seg_cursor_release(t->probe);
  if (t->base) { /* spilled: the private state goes, and the files nothing installed */
    tern_state_release(t->idx, t->st);
    t->st = t->base;
    discard_spilled(t);
  }
  free(t->spilled);
  free(t->probe);
  free(t->locs);
  free(t->ranges);
  tern_index *idx = t->idx;
  tern_state *st = t->st;
  txn_keep(t);
  tern_writer_unlock_state(idx, st);
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

static int spill(tern_txn *t);

/* Whether holding one more document of `bytes` and `nterms` terms would
 * take the transaction past its memory limit, counting what its commit
 * adds: the sorted order and doc ids (8 bytes an op), one field's (term,
 * doc) tuples at a time (24 bytes a term; all terms counted, as if one
 * field) and the writer's chunks. */
enum { SPILL_FIXED = 2 << 20 };
static int over_memory(const tern_txn *t, size_t bytes, size_t nterms) {
  size_t ops = t->nops < t->cap ? t->cap : 2 * t->cap; /* the array as the next push leaves it */
  uint64_t est = (uint64_t)t->arena.bytes + bytes + (uint64_t)ops * sizeof *t->ops +
                 (uint64_t)(t->nops + 1) * 8 + (t->nterms + nterms) * 24 + SPILL_FIXED;
  return est > t->memory;
}

int tern_txn_set_memory(tern_txn *txn, uint64_t bytes) {
  tern_clear_error();
  if (!txn) return tern_fail(TERN_EINVAL, "tern_txn_set_memory: NULL transaction");
  if (bytes && !(txn->flags & TERN_TXN_BULK))
    return tern_fail(TERN_EINVAL, "tern_txn_set_memory: a limit needs a TERN_TXN_BULK transaction");
  txn->memory = bytes;
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
  if (t->memory && t->nops && over_memory(t, klen + dlen, nterms)) TERN_TRY(spill(t));
  t->nterms += nterms;
  uint8_t *p = tern_arena_alloc(&t->arena, klen + dlen);
  if (!p) return tern_fail(TERN_ENOMEM, "transaction: out of memory");
  memcpy(p, key, klen);
  tern_rec_doc_encode(p + klen, val, vlen, terms, nterms);
  t->has_terms |= nterms > 0;
  return push_op(t, p, klen, p + klen, dlen, TERN_KEYPOS_NONE);
}

/* Whether the commit this transaction builds on holds a live document of
 * the probe's key (tern_state_find_key, as tern_get finds it): *has, and
 * for a segment's its slot and doc (*slot UINT32_MAX: the buffer view's). */
static int committed_find(tern_txn *t, const tern_seg_probe *p, int *has, uint32_t *slot,
                          uint32_t *doc) {
  const tern_state *st = t->st;
  *slot = UINT32_MAX;
  *has = 0;
  if (!t->probe) {
    if (!(t->probe = malloc(sizeof *t->probe))) return tern_fail(TERN_ENOMEM, "out of memory");
    tern_seg_cursor_init(t->probe);
  }
  tern_term_entry e;
  tern_state_hit hit;
  ptrdiff_t at;
  int rc = tern_state_find_key(st, p, t->probe, &e, &hit, &at);
  if (rc == TERN_NOTFOUND) return TERN_OK;
  TERN_TRY(rc);
  *has = 1;
  if (at < 0) {
    *slot = (uint32_t)(hit.slot - st->slots);
    *doc = hit.doc;
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

static int in_ranges(const tern_txn *t, const void *key, size_t klen) {
  for (size_t i = 0; i < t->nranges; i++)
    if (tern_krange_has(&t->ranges[i], key, klen)) return 1;
  return 0;
}

/* A bound of a range, copied into the arena (NULL: unbounded). */
static int copy_bound(tern_txn *t, const tern_slice *b, const uint8_t **p, size_t *len) {
  *p = NULL;
  *len = 0;
  if (!b) return TERN_OK;
  TERN_TRY(check_key(b->data, b->len));
  uint8_t *c = tern_arena_alloc(&t->arena, b->len);
  if (!c) return tern_fail(TERN_ENOMEM, "transaction: out of memory");
  memcpy(c, b->data, b->len);
  *p = c;
  *len = b->len;
  return TERN_OK;
}

int tern_delete_range(tern_txn *t, const tern_slice *from, const tern_slice *to) {
  tern_clear_error();
  if (!t) return tern_fail(TERN_EINVAL, "tern_delete_range: NULL transaction");
  tern_krange r;
  TERN_TRY(copy_bound(t, from, &r.from, &r.flen));
  TERN_TRY(copy_bound(t, to, &r.to, &r.tlen));
  if (r.from && r.to && tern_key_cmp(r.from, r.flen, r.to, r.tlen) >= 0) return TERN_OK; /* empty */
  tern_krange *v = tern_vec_room(t->ranges, t->nranges, &t->capranges, sizeof *v);
  if (!v) return tern_fail(TERN_ENOMEM, "transaction: out of memory");
  t->ranges = v;
  t->ranges[t->nranges++] = r;
  /* This transaction's own writes in the range are deleted too: the
   * commit applies them after the range, so they become deletions. */
  for (size_t i = 0; i < t->nops; i++)
    if (t->ops[i].doc && tern_krange_has(&r, t->ops[i].key.p, t->ops[i].key.len)) {
      t->ops[i].doc = NULL;
      t->ops[i].key.aux = 0;
    }
  return TERN_OK;
}

/* Maps the keys of the transaction's operations at its first delete or
 * read of its own writes (put keeps the map from then on): a transaction
 * that only puts never builds one. */
static int map_keys_once(tern_txn *t) {
  if (t->mapped) return TERN_OK;
  for (size_t i = 0; i < t->nops; i++)
    TERN_TRY(tern_keymap_set(&t->map, t->ops, (uint32_t)i, TERN_KEYPOS_NONE));
  t->mapped = 1;
  return TERN_OK;
}

int tern_delete(tern_txn *t, const void *key, size_t klen) {
  tern_clear_error();
  if (!t) return tern_fail(TERN_EINVAL, "tern_delete: NULL transaction");
  TERN_TRY(check_key(key, klen));
  TERN_TRY(map_keys_once(t));
  tern_seg_probe p;
  TERN_TRY(tern_seg_probe_init(&p, key, klen));
  /* The key's slot in the transaction's map is fetched while the committed
   * state is searched, not before: its cache miss then costs nothing.  The
   * search is wasted (its failure too) when the transaction wrote the key
   * or deleted its range: those answer first. */
  tern_keymap_prefetch(&t->map, p.fk.hash);
  int has;
  uint32_t slot = UINT32_MAX, doc = 0;
  int committed = committed_find(t, &p, &has, &slot, &doc);
  tern_keypos at;
  int64_t last = tern_keymap_get_hashed(&t->map, t->ops, key, klen, p.fk.hash, &at);
  if (last >= 0)
    has = t->ops[last].doc != NULL;
  else if (in_ranges(t, key, klen))
    has = 0; /* a range this transaction deleted */
  else
    TERN_TRY(committed);
  if (!has) return TERN_NOTFOUND;
  uint8_t *copy = tern_arena_alloc(&t->arena, klen);
  if (!copy) return tern_fail(TERN_ENOMEM, "transaction: out of memory");
  memcpy(copy, key, klen);
  if (last < 0) TERN_TRY(note_loc(t, slot, doc)); /* the key's first op: the committed doc */
  return push_op(t, copy, klen, NULL, 0, at);
}

/* ------------------------------------------------------------ commit */

/*
 * A commit builds an edit (edit.h) and installs it with
 * tern_log_and_apply: new live docs for every segment that lost a
 * document, and either its documents for the buffer (a run on top of the
 * buffer view) or, written as a segment of its own, that segment with its
 * keys taken out of the buffer.
 */
enum { SMALL_OPS = 8 };
typedef struct commit_ctx {
  tern_txn *t;
  uint32_t *uniq; /* op indices, one per key (its last op), in key order */
  size_t nuniq, uniq_bytes;
  tern_mdoc *sorted; /* the ops of uniq, in key order (the edit's buffer ops) */
  tern_u32vec *dels; /* per slot of t->st: docs that lose their document */
  int touched;       /* some slot has deletions (or is dropped) */
  uint8_t *dropped;  /* per slot: wholly inside a deleted range */
  tern_mdoc *ranged; /* buffered docs in deleted ranges that no op names, key order */
  size_t nranged, capranged;
  tern_edit e;
  /* uniq and sorted of a commit of up to SMALL_OPS keys: no allocation */
  uint32_t uniq_small[SMALL_OPS];
  tern_mdoc sorted_small[SMALL_OPS];
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
  c->uniq = n <= SMALL_OPS ? c->uniq_small : tern_big_alloc(c->uniq_bytes);
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
  tern_seg_cursor cur; /* on the stack, as tern_get's: no large allocation per commit */
  int rc = c->dels && found ? TERN_OK : tern_fail(TERN_ENOMEM, "commit: out of memory");
  size_t left = c->nuniq;
  if (rc == TERN_OK) rc = seed_found(c, found, &left);
  for (size_t s = st->nslots; rc == TERN_OK && left && s-- > 0;) {
    tern_seg_cursor_init(&cur);
    for (size_t i = 0; rc == TERN_OK && i < c->nuniq; i++) {
      if (found[i]) continue;
      const tern_keyref *k = &op_at(c, i)->key;
      tern_term_entry e;
      uint32_t doc;
      rc = tern_slot_find(&st->slots[s], k->p, k->len, &cur, &e, &doc);
      if (rc == TERN_OK) {
        found[i] = 1;
        left--;
        c->touched = 1;
        rc = tern_u32vec_push(&c->dels[s], doc);
      } else if (rc == TERN_NOTFOUND) {
        rc = TERN_OK;
      }
    }
    tern_seg_cursor_release(&cur);
  }
  free(found);
  return rc;
}

/* ---- deleted ranges: segments inside one dropped, the rest's live docs
 * in them marked, their buffered keys taken out */

static int note_ranged(void *ctx, const tern_mdoc *d) {
  commit_ctx *c = ctx;
  if (key_in_uniq(c, d->key.p, d->key.len) >= 0) return TERN_OK; /* an op decides */
  if (c->nranged && tern_key_cmp(c->ranged[c->nranged - 1].key.p, c->ranged[c->nranged - 1].key.len,
                                 d->key.p, d->key.len) >= 0)
    return TERN_OK; /* ranges overlap: once, in order */
  tern_mdoc *v = tern_vec_room(c->ranged, c->nranged, &c->capranged, sizeof *v);
  if (!v) return tern_fail(TERN_ENOMEM, "commit: out of memory");
  c->ranged = v;
  c->ranged[c->nranged++] = (tern_mdoc){{d->key.p, d->key.len, 0}, NULL};
  return TERN_OK;
}

static int cmp_range_from(const void *a, const void *b) {
  const tern_krange *x = a, *y = b;
  if (!x->from || !y->from) return (y->from == NULL) - (x->from == NULL);
  return tern_key_cmp(x->from, x->flen, y->from, y->flen);
}

static int resolve_ranges(commit_ctx *c) {
  tern_txn *t = c->t;
  tern_state *st = t->st;
  if (!t->nranges) return TERN_OK;
  qsort(t->ranges, t->nranges, sizeof *t->ranges, cmp_range_from);
  if (!c->dels && st->nslots && !(c->dels = calloc(st->nslots, sizeof *c->dels)))
    return tern_fail(TERN_ENOMEM, "commit: out of memory");
  if (!(c->dropped = calloc(st->nslots + 1, 1))) return tern_fail(TERN_ENOMEM, "commit: out of memory");
  for (size_t s = 0; s < st->nslots; s++) {
    for (size_t i = 0; !c->dropped[s] && i < t->nranges; i++)
      c->dropped[s] = (uint8_t)tern_krange_covers(&t->ranges[i], &st->slots[s]);
    if (c->dropped[s]) {
      TERN_TRY(tern_edit_drop_segment(&c->e, st->slots[s].ref->number));
      c->touched = 1;
      continue;
    }
    for (size_t i = 0; i < t->nranges; i++)
      TERN_TRY(tern_krange_slot_docs(&t->ranges[i], &st->slots[s], &c->dels[s]));
    c->touched |= c->dels[s].n > 0;
  }
  for (size_t i = 0; i < t->nranges; i++)
    TERN_TRY(tern_krange_buffer(&t->ranges[i], st->buffer, note_ranged, c));
  return TERN_OK;
}

/* The edit's new live docs: every segment that lost documents. */
static int edit_deletions(commit_ctx *c) {
  tern_state *st = c->t->st;
  for (size_t s = 0; c->dels && s < st->nslots; s++) {
    tern_u32vec *d = &c->dels[s];
    if (!d->n || (c->dropped && c->dropped[s])) continue;
    const tern_slot *sl = &st->slots[s];
    tern_livedocs *fresh = NULL, *next = NULL;
    const tern_livedocs *base = sl->live ? sl->live->ld : NULL;
    int rc = base ? TERN_OK : tern_livedocs_new(&fresh, sl->ref->max_doc);
    if (!base) base = fresh;
    if (rc == TERN_OK) rc = tern_livedocs_apply(&next, base, d->v, d->n);
    tern_livedocs_free(fresh);
    if (rc == TERN_OK) rc = tern_edit_set_livedocs(&c->e, sl->ref->number, next);
    TERN_TRY(rc);
  }
  return TERN_OK;
}

/* The ops of uniq in key order, and the run the buffer view gains: the
 * keys put, and those taken out of it (deleted: all, when the view is
 * not built and cannot say). */
static int edit_buffer_ops(commit_ctx *c, int puts) {
  const tern_memseg *view = c->t->st->buffer;
  size_t n = c->nuniq + c->nranged;
  c->sorted = n <= SMALL_OPS ? c->sorted_small : malloc((n ? n : 1) * sizeof *c->sorted);
  if (!c->sorted) return tern_fail(TERN_ENOMEM, "commit: out of memory");
  size_t bytes = 0; /* what the run copies at most: every key, the puts' records */
  for (size_t i = 0; i < c->nuniq; i++)
    bytes += op_at(c, i)->key.len + (puts && op_at(c, i)->doc ? op_at(c, i)->key.aux : 0);
  for (size_t j = 0; j < c->nranged; j++)
    bytes += c->ranged[j].key.len;
  TERN_TRY(tern_mrun_new(n, bytes, &c->e.run));
  for (size_t i = 0, j = 0, k = 0; k < n; k++) { /* ops and ranged keys, merged in key order */
    const tern_mdoc *op;
    if (j == c->nranged ||
        (i < c->nuniq && tern_key_cmp(op_at(c, i)->key.p, op_at(c, i)->key.len,
                                      c->ranged[j].key.p, c->ranged[j].key.len) < 0))
      op = op_at(c, i++);
    else
      op = &c->ranged[j++];
    c->sorted[k] = *op;
    if (puts && op->doc) {
      TERN_TRY(tern_mrun_push(c->e.run, op));
    } else if (!view || tern_memseg_find(view, op->key.p, op->key.len) >= 0) { /* buffered */
      tern_mdoc gone = {op->key, NULL};
      gone.key.aux = 0;
      TERN_TRY(tern_mrun_push(c->e.run, &gone));
    }
  }
  c->e.ops = c->sorted;
  c->e.nops = n;
  return TERN_OK;
}

/* Writes the live puts of a bulk transaction as one segment, opens it
 * and adds it to the edit; its keys leave the buffer. */
static int edit_bulk_segment(commit_ctx *c) {
  tern_txn *t = c->t;
  char name[TERN_SEGNAME_MAX];
  c->seg_number = tern_new_segment_number(t->idx, &t->st->rec);
  tern_segment_name(name, c->seg_number);
  int rc = tern_bulk_write(t->idx->dir, name, &t->idx->opts, t->ops, c->uniq, c->nuniq,
                           t->has_terms, &c->seg_docs, t->progress, t->progress_payload,
                           c->segid);
  tern_segref *ref = NULL;
  tern_rec_segment r = {{0}, c->seg_docs, 0, 0};
  memcpy(r.segid, c->segid, TERN_SEGID_SIZE);
  if (rc == TERN_OK && c->seg_docs) rc = tern_segref_preopen(t->idx, c->seg_number, &r, &ref);
  if (rc == TERN_OK && c->seg_docs)
    rc = tern_edit_add_segment(t->idx, &c->e, c->seg_number, &r, ref, NULL);
  if (rc != TERN_OK) {
    tern_seg_remove(t->idx->dir, name);
    c->seg_docs = 0;
    return rc;
  }
  if (!t->st->rec.buffered_docs) return TERN_OK;
  c->e.buf = TERN_EDIT_BUF_DROP;
  return edit_buffer_ops(c, 0);
}

/* Whether the commit writes its documents as a segment of their own: a
 * bulk transaction, or a plain one larger than the write buffer, which
 * would otherwise pass through the catalog's buffer (and a copy in the buffer
 * view) only to be flushed into a segment right after: written directly,
 * its peak memory is that of a bulk transaction. */
static int commits_as_segment(const tern_txn *t) {
  return (t->flags & TERN_TXN_BULK) || t->arena.bytes > t->idx->opts.write_buffer_bytes;
}

/* Moves the transaction onto the newest state when a flush or merge was
 * installed since it began, or idx->cur is not known to be the newest:
 * the keys' documents are the same, but where they live changed, so
 * tern_delete's findings go and every key is resolved again.  REQUIRES:
 * install_mu held. */
static int rebase(tern_txn *t) {
  tern_index *idx = t->idx;
  assert(tern_install_held(idx));
  tern_mu_lock(idx);
  int moved = idx->cur != t->st || idx->cur_seq != t->st->rec.seq;
  tern_mu_unlock(idx);
  if (!moved) return TERN_OK;
  tern_state *st;
  TERN_TRY(tern_state_acquire(idx, 1, &st));
  tern_state_release(idx, t->st);
  t->st = st;
  t->nlocs = 0;
  return TERN_OK;
}

static void commit_ctx_free(commit_ctx *c) {
  tern_txn *t = c->t;
  tern_edit_free(t->idx, &c->e);
  for (size_t s = 0; c->dels && s < t->st->nslots; s++)
    free(c->dels[s].v);
  free(c->dels);
  free(c->dropped);
  free(c->ranged);
  if (c->sorted != c->sorted_small) free(c->sorted);
  if (c->uniq != c->uniq_small) tern_big_free(c->uniq, c->uniq_bytes);
}

/* ---- spills (txn_spill.h) */

static int note_spilled(tern_txn *t, uint64_t number) {
  uint64_t *v = tern_vec_room(t->spilled, t->nspilled, &t->capspilled, sizeof *v);
  if (!v) return tern_fail(TERN_ENOMEM, "transaction: out of memory");
  t->spilled = v;
  t->spilled[t->nspilled++] = number;
  return TERN_OK;
}

/* The transaction's memory after a spill: no operation held. */
static void forget_ops(tern_txn *t) {
  tern_arena_free(&t->arena);
  tern_arena_init(&t->arena);
  tern_big_free(t->ops, t->cap * sizeof *t->ops);
  t->ops = NULL;
  t->nops = t->cap = 0;
  tern_keymap_free(&t->map);
  tern_keymap_init(&t->map);
  t->nlocs = 0;
  t->nranges = 0;
  t->nterms = 0;
}

/* Resolves and writes the operations so far as a segment, as a bulk
 * commit would, and moves the transaction onto the private state that
 * edit makes.  The first spill waits for the background worker, so that
 * nothing installs under the private states until the commit (no other
 * writer can start one: the transaction holds the write lock).  On
 * failure the transaction is as it was. */
static int spill(tern_txn *t) {
  tern_index *idx = t->idx;
  if (!t->base) tern_worker_wait(idx);
  commit_ctx c = {0};
  c.t = t;
  report(t, "sort", 0, t->nops);
  int rc = unique_ops(&c);
  report(t, "sort", t->nops, t->nops);
  tern_install_lock(idx);
  if (rc == TERN_OK && !t->base) rc = rebase(t);
  tern_edit_init(&c.e, t->st);
  if (rc == TERN_OK) rc = resolve_segments(&c);
  if (rc == TERN_OK) rc = resolve_ranges(&c);
  if (rc == TERN_OK) rc = edit_deletions(&c);
  if (rc == TERN_OK) rc = edit_bulk_segment(&c);
  if (rc == TERN_OK && c.seg_docs) {
    rc = note_spilled(t, c.seg_number);
    if (rc != TERN_OK) {
      char name[TERN_SEGNAME_MAX];
      tern_segment_name(name, c.seg_number);
      commit_ctx_free(&c);
      tern_discard_new_segment(idx, name);
      tern_install_unlock(idx);
      return rc;
    }
  }
  tern_state *next = NULL;
  if (rc == TERN_OK) rc = tern_spill_apply(idx, t->st, &c.e, &next);
  commit_ctx_free(&c); /* a failed spill's segment stays listed: txn_free removes it */
  if (rc == TERN_OK) {
    if (t->base)
      tern_state_release(idx, t->st);
    else
      t->base = t->st;
    t->st = next;
  }
  tern_install_unlock(idx);
  if (rc == TERN_OK) forget_ops(t);
  return rc;
}

/* Drops from the spilled list the segments the state holds (installed). */
static void unlist_installed(tern_txn *t) {
  size_t m = 0;
  for (size_t i = 0; i < t->nspilled; i++) {
    int held = 0;
    for (size_t s = 0; s < t->st->nslots && !held; s++)
      held = t->st->slots[s].ref->number == t->spilled[i];
    if (!held) t->spilled[m++] = t->spilled[i];
  }
  t->nspilled = m;
}

/* The commit of a transaction that spilled: the rest spilled too, then
 * one edit from the state it began on to its last private state. */
static int commit_spilled(tern_txn *t, int *segments_changed, tern_rec_state *rec) {
  tern_index *idx = t->idx;
  int rc = t->nops || t->nranges ? spill(t) : TERN_OK;
  if (rc != TERN_OK) return rc;
  tern_install_lock(idx);
  tern_edit e;
  tern_edit_init(&e, t->base);
  e.log_always = 1;
  tern_mdoc *drops = NULL;
  rc = tern_spill_compose(idx, t->base, t->st, &e, &drops);
  report(t, "commit", 0, 1);
  if (rc == TERN_OK) rc = tern_log_and_apply(idx, &e); /* TERN_EBUSY if the base moved */
  report(t, "commit", 1, 1);
  if (rc == TERN_OK) {
    *rec = e.rec;
    unlist_installed(t);
  }
  *segments_changed = rc == TERN_OK;
  tern_edit_free(idx, &e);
  free(drops);
  tern_install_unlock(idx);
  return rc;
}

static int commit_ops(tern_txn *t, int *segments_changed, tern_rec_state *rec) {
  if (t->base) return commit_spilled(t, segments_changed, rec);
  commit_ctx c = {0};
  c.t = t;
  int bulk = commits_as_segment(t);
  report(t, "sort", 0, t->nops);
  int rc = unique_ops(&c);
  tern_install_lock(t->idx); /* resolve to install: no flush or merge in between */
  if (rc == TERN_OK) rc = rebase(t);
  tern_edit_init(&c.e, t->st);
  c.e.log_always = 1; /* every commit with operations gets a number of its own */
  report(t, "sort", t->nops, t->nops);
  report(t, "resolve", 0, 1);
  if (rc == TERN_OK) rc = resolve_segments(&c);
  if (rc == TERN_OK) rc = resolve_ranges(&c);
  if (rc == TERN_OK) rc = edit_deletions(&c);
  report(t, "resolve", 1, 1);
  if (rc == TERN_OK && bulk) rc = edit_bulk_segment(&c);
  if (rc == TERN_OK && !bulk) {
    c.e.buf = TERN_EDIT_BUF_OPS;
    rc = edit_buffer_ops(&c, 1);
  }
  report(t, "commit", 0, 1);
  if (rc == TERN_OK) rc = tern_log_and_apply(t->idx, &c.e);
  report(t, "commit", 1, 1);
  if (rc == TERN_OK) *rec = c.e.rec;
  *segments_changed = rc == TERN_OK && (c.touched || c.seg_docs);
  int discard = rc != TERN_OK && bulk && c.seg_docs;
  commit_ctx_free(&c); /* releases the new segment's reader before its files may go */
  if (discard) {
    char name[TERN_SEGNAME_MAX];
    tern_segment_name(name, c.seg_number);
    tern_discard_new_segment(t->idx, name);
  }
  tern_install_unlock(t->idx);
  return rc;
}

/* Hands the flush or merges the commit made due to the worker.  The
 * commit is durable: TERN_EPARTIAL reports a failure of earlier
 * background work (once), not of this commit. */
static int after_commit(tern_index *idx, const tern_rec_state *rec, int segments_changed) {
  int failed = tern_worker_after_commit(idx, rec, segments_changed);
  if (!failed) return TERN_OK;
  char msg[TERN_REC_HEALTH_MSG_MAX + 1];
  tern_mu_lock(idx);
  snprintf(msg, sizeof msg, "%s", idx->last_error_msg);
  tern_mu_unlock(idx);
  return tern_fail(TERN_EPARTIAL, "%s: committed; a flush or merge after a commit failed (%s): %s",
                   idx->dir, tern_strerror(failed), msg);
}

int tern_commit_seq(tern_txn *t, uint64_t *seq) {
  tern_clear_error();
  if (seq) *seq = 0;
  if (!t) return tern_fail(TERN_EINVAL, "tern_commit: NULL transaction");
  int changed = 0;
  tern_rec_state rec = t->st->rec; /* nothing in it: the commit it began on */
  int work = t->nops || t->nranges;
  int rc = work ? commit_ops(t, &changed, &rec) : TERN_OK;
  if (rc == TERN_OK && seq) *seq = rec.seq;
  if (rc == TERN_OK && work) {
    report(t, "merge", 0, 1);
    rc = after_commit(t->idx, &rec, changed);
    report(t, "merge", 1, 1);
  }
  if (rc == TERN_OK) tern_clear_error();
  if (rc == TERN_OK || rc == TERN_EPARTIAL) TERN_COUNT(commits);
  txn_free(t);
  return rc;
}

int tern_commit(tern_txn *t) { return tern_commit_seq(t, NULL); }
/* ------------------------------------------------------------ txn_read.c */

/* The transaction's latest operation on `key` (*op NULL: none; its doc
 * NULL: a deletion, also for a key in a range the transaction deleted),
 * mapping a bulk transaction's keys at the first ask as tern_delete does,
 * and the commit it builds on. */
int tern_txn_find_own(tern_txn *t, const void *key, size_t klen, const tern_mdoc **op,
                      const tern_state **st) {
  TERN_TRY(map_keys_once(t));
  tern_keypos at;
  int64_t last = tern_keymap_get(&t->map, t->ops, key, klen, &at);
  /* A key in a range this transaction deleted, and not written since,
   * reads as deleted (an op without a document). */
  static const tern_mdoc ranged_out = {{NULL, 0, 0}, NULL};
  *op = last >= 0 ? &t->ops[last] : in_ranges(t, key, klen) ? &ranged_out : NULL;
  *st = t->st;
  return TERN_OK;
}
