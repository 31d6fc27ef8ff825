/* SPDX-License-Identifier: MIT */
/*
 * snapshot.c — reads through a snapshot: one commit's state, held without
 * any LMDB transaction or lock, so many threads read at once.
 *
 * The path of one get: the buffer view (in memory: a filter and a hash
 * index over runs of 64 or more documents, binary search below), then the
 * segments newest first; in each, the key range and the bloom filter (no
 * I/O), the resident terms index to one terms block, the entry in that
 * block (with the doc id pulsed into it, or one postings read), the live
 * docs of the snapshot's generation, and the value (in the entry, or one
 * read).  At most one live document per key exists across all sources, so
 * the first live hit is the answer.
 */
#include "engine/util/counters.h"
#include "engine/util/errwrap.h"
#include "engine/state/index.h"

#include "codec/filter.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

int tern_snapshot_open(tern_snapshot **out, tern_index *idx) {
  tern_clear_error();
  if (out) *out = NULL;
  if (!out || !idx) return tern_fail(TERN_EINVAL, "tern_snapshot_open: NULL argument");
  tern_snapshot *s = calloc(1, sizeof *s);
  if (!s) return tern_fail(TERN_ENOMEM, "snapshot: out of memory");
  /* Counted before the catalog is read: no catalog swap (catalog_compact.c,
   * which restarts LMDB's transaction ids) while s->txnid means anything. */
  tern_mu_lock(idx);
  idx->snapshots++;
  tern_mu_unlock(idx);
  int rc = tern_state_acquire_at(idx, 1, &s->st, &s->txnid);
  if (rc != TERN_OK) {
    tern_mu_lock(idx);
    idx->snapshots--;
    tern_mu_unlock(idx);
    free(s);
    return rc;
  }
  s->idx = idx;
  s->buf = s->st->buffer;
  const tern_state *st = s->st;
  if (st->nslots == 1 && !st->ndisjoint && st->lines && !tern_state_has_cfilter(st)) {
    s->one = &st->slots[0];
    s->one_line = &st->lines[0];
  }
  *out = s;
  return TERN_OK;
}

/* A snapshot opened now would take idx->cur without reading the catalog
 * (this process holds the write lock: acquire_once's first case) — the
 * same commit when the sequence numbers match — or read the catalog at
 * LMDB's last transaction: the same commit when that is the one s was read
 * at (LMDB's meta page, read without a transaction; idx->mu keeps the map
 * from moving under it). */
int tern_snapshot_current(const tern_snapshot *s, int *current) {
  tern_clear_error();
  if (current) *current = 0;
  if (!s || !current) return tern_fail(TERN_EINVAL, "tern_snapshot_current: NULL argument");
  tern_index *idx = s->idx;
  tern_mu_lock(idx);
  const tern_state *cur = idx->cur;
  if (idx->cur_seq && cur && cur->rec.seq == idx->cur_seq) {
    *current = s->st->rec.seq == idx->cur_seq;
  } else if (s->txnid) {
    MDB_envinfo info;
    *current = mdb_env_info(idx->env, &info) == 0 && (uint64_t)info.me_last_txnid == s->txnid;
  }
  tern_mu_unlock(idx);
  return TERN_OK;
}

int tern_snapshot_close(tern_snapshot *s) {
  tern_clear_error();
  if (!s) return TERN_OK;
  unsigned iters = atomic_load(&s->iters);
  if (iters)
    return tern_fail(TERN_EBUSY,
                     "tern_snapshot_close: %u handles opened on it (postings, cursors, terms "
                     "enumerations, deleted-docs iterators) still open",
                     iters);
  tern_index *idx = s->idx;
  tern_state_release(idx, s->st);
  tern_mu_lock(idx);
  idx->snapshots--;
  tern_mu_unlock(idx);
  free(s);
  return TERN_OK;
}

/* n bytes from src to dst (apart): a value of up to 16 bytes, as a
 * primary-key index mostly holds, by two loads and two stores that may
 * overlap, not a call into memcpy that picks its way by size (about 30
 * instructions a get). */
static inline void copy_value(uint8_t *dst, const uint8_t *src, size_t n) {
  if (n > 16) {
    memcpy(dst, src, n);
  } else if (n >= 8) {
    uint64_t a, b;
    memcpy(&a, src, 8);
    memcpy(&b, src + n - 8, 8);
    memcpy(dst, &a, 8);
    memcpy(dst + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    memcpy(&a, src, 4);
    memcpy(&b, src + n - 4, 4);
    memcpy(dst, &a, 4);
    memcpy(dst + n - 4, &b, 4);
  } else if (n) { /* 1 to 3 */
    dst[0] = src[0];
    dst[n / 2] = src[n / 2];
    dst[n - 1] = src[n - 1];
  }
}

static int copy_out(const tern_slice *v, void *buf, size_t cap, size_t *vlen) {
  *vlen = v->len;
  if (v->len > cap) return TERN_ERANGE;
  copy_value(buf, v->data, v->len);
  return TERN_OK;
}

/* The buffer view's answer for the probe's key (its filter masks set):
 * 1 with *rc its status and *val its value, 0 when the buffer has none. */
static inline int buffer_get(const tern_memseg *b, const tern_seg_probe *p, tern_slice *val,
                             int *rc) {
  const uint8_t *rec, *v;
  size_t rlen, vlen;
  if (!tern_memseg_get_record(b, p->key, p->len, &p->fk, &rec, &rlen)) return 0;
  *rc = tern_rec_doc_value(rec, rlen, &v, &vlen);
  if (*rc == TERN_OK) *val = (tern_slice){v, vlen};
  return 1;
}

/* The direct path of a snapshot of one segment (s->one): the buffer view,
 * then that segment's range, filter line and block, as
 * tern_state_find_at's waves would take them for one slot, without the
 * state's search and loops.  Same answers, same counts.  The key's hash
 * is computed only when something reads it: not while the segment's
 * filter is idle (no page checked nor asked for: every probe of it would
 * be "skipped", tern_seg_filter_line_idle) and the buffer empty — a warm
 * index read by present keys — and then only for a key the block finds
 * absent, to ask for its filter page as a skipped probe does.  Its 8 bit
 * masks (tern_filter_key_init) only when a filter block or the buffer is
 * tested. */
static inline __attribute__((always_inline)) int find_one(tern_snapshot *s, tern_seg_probe *p,
                                                          tern_seg_cursor *c, tern_slice *val) {
  const tern_slot *sl = s->one;
  const tern_seg_filter_line *l = s->one_line;
  TERN_COUNT_GET(key_hashes, 1); /* a key prepared, hashed or not */
  int filter = TERN_SEG_FILTER_MAYBE, masked = 0;
  int idle = !s->buf->n && tern_seg_filter_line_idle(l);
  uint64_t page = 0;
  const uint8_t *line = NULL;
  if (idle) {
    p->fk.hash = 0; /* read by nothing below (filter "maybe": tern_seg_pk_find asks nothing) */
  } else {
    p->fk.hash = tern_filter_hash(p->key, p->len);
    line = tern_seg_filter_line_block(l, p->fk.hash, &page);
    if (line) { /* before the buffer's probe: the misses overlap */
      __builtin_prefetch(line);
      if (!l->settled) __builtin_prefetch(&l->checked[page / 64]);
    }
    if (s->buf->n) { /* nothing to find in an empty buffer */
      tern_filter_key_init(&p->fk, p->fk.hash);
      masked = 1;
      int rc;
      if (buffer_get(s->buf, p, val, &rc)) return rc;
    }
  }
  TERN_COUNT_GET(range_checks, 1);
  if (!tern_seg_gate_admits(&sl->gate, p)) return TERN_NOTFOUND;
  TERN_COUNT_GET(filter_checks, 1);
  if (!idle) { /* tern_seg_filter_line_gate's answer, in its two steps */
    const uint8_t *block = tern_seg_filter_line_decide(l, line, page, &filter);
    if (block || filter < 0) {
      if (!masked) tern_filter_key_init(&p->fk, p->fk.hash);
      filter = block ? tern_filter_block_has(block, &p->fk) : tern_seg_gate_filter(&sl->gate, p);
    }
    if (filter <= 0) return filter < 0 ? filter : TERN_NOTFOUND;
  }
  TERN_COUNT_GET(block_probes, 1);
  tern_term_entry e;
  uint32_t doc;
  /* the lookup reads the probe's hash (a miss after a skipped filter
   * page), never its masks */
  int rc = tern_seg_pk_find(sl->gate.seg, p, filter, c, &e, &doc);
  if (rc == TERN_NOTFOUND && idle) /* as the skipped probe's miss would */
    tern_seg_filter_missed(sl->gate.seg, tern_filter_hash(p->key, p->len));
  if (rc != TERN_OK) return rc;
  if (!tern_slot_is_live(sl, doc)) return TERN_NOTFOUND;
  return tern_seg_value(sl->gate.seg, &e, c, val);
}

/* An absent key on range-disjoint segments alone (an ingested index),
 * ended here as tern_state_find_at would end it (the map's one candidate
 * by heads, its filter line "absent"), without its calls: 1 when so.
 * Not while the map's gets mostly find their keys (no line tested then). */
static inline int map_rules_out(const tern_state *st, const tern_seg_probe *p,
                                tern_map_pos *pos) {
  const tern_range_entry *m = tern_state_map_inside(st, *pos);
  if (!m || st->noverlap || tern_state_map_block_first(st)) return 0;
  /* the line's answer goes on with pos: tern_state_find_at asks it no more */
  if ((pos->line = tern_state_map_line(st, m, p)) != 0) return 0;
  TERN_COUNT_GET(map_entries, 1);
  TERN_COUNT_GET(range_checks, 1);
  return 1;
}

/* The general path: the buffer view, then the segments newest first, the
 * key hashed once for all of them. */
static int find_state(tern_snapshot *s, tern_seg_probe *p, tern_seg_cursor *c, tern_slice *val) {
  /* The range map is searched by the key's head alone, and its entry
   * fetched, while the key is hashed: with many range-disjoint segments
   * the filter line's address then waits for neither in turn. */
  tern_map_pos pos = tern_state_ranges_at(s->st, p);
  tern_state_entry_prefetch(s->st, pos.at);
  tern_seg_probe_hash(p);
  TERN_COUNT_GET(key_hashes, 1);
  /* The segments' filter lines start on their way before the buffer's
   * probe: their cache misses and its own then overlap. */
  tern_state_cfilter_prefetch(s->st, p); /* both: a present key needs the lines */
  /* (nothing to overlap them with on range-disjoint slots alone and an
   * empty buffer: the line is read at once, below) */
  if (s->buf->n || s->st->noverlap || !s->st->ndisjoint) tern_state_prefetch_at(s->st, p, pos.at);
  if (s->buf->n) { /* an empty buffer (an ingested index) costs no call */
    int rc;
    if (buffer_get(s->buf, p, val, &rc)) return rc;
  }
  if (map_rules_out(s->st, p, &pos)) return TERN_NOTFOUND;
  tern_term_entry e;
  tern_state_hit hit;
  TERN_TRY(tern_state_find_at(s->st, p, pos, c, &e, &hit));
  return tern_seg_value(hit.slot->ref->seg, &e, c, val);
}

/* (index.h) A snapshot of one segment takes the direct path. */
static inline __attribute__((always_inline)) int snapshot_find(tern_snapshot *s, const void *key,
                                                               size_t klen, tern_seg_cursor *c,
                                                               tern_slice *val) {
  tern_seg_probe p;
  TERN_TRY(tern_seg_probe_head(&p, key, klen));
  if (s->one) return find_one(s, &p, c, val);
  return find_state(s, &p, c, val);
}

int tern_snapshot_find(tern_snapshot *s, const void *key, size_t klen, tern_seg_cursor *c,
                       tern_slice *val) {
  return snapshot_find(s, key, klen, c, val);
}

int tern_get(tern_snapshot *s, const void *key, size_t klen, void *buf, size_t cap, size_t *vlen) {
  tern_clear_error();
  if (!s || !key || klen == 0 || klen > TERN_KEY_MAX || !vlen || (cap && !buf))
    return tern_fail(TERN_EINVAL, "tern_get: bad arguments");
  tern_count_gets(1);
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  tern_slice v;
  int rc = snapshot_find(s, key, klen, &c, &v); /* inline: one frame */
  if (rc == TERN_OK) rc = copy_out(&v, buf, cap, vlen);
  if (tern_seg_cursor_holds(&c)) tern_seg_cursor_release(&c); /* it dies here: frees alone matter */
  return rc;
}

int tern_snapshot_seq(const tern_snapshot *snap, uint64_t *seq) {
  tern_clear_error();
  if (!snap || !seq) return tern_fail(TERN_EINVAL, "tern_snapshot_seq: NULL argument");
  *seq = snap->st->rec.seq;
  return TERN_OK;
}
