/*
 * snapshot.c — reads through a snapshot: one commit's state, held without
 * any LMDB transaction or lock, so many threads read at once.
 *
 * The path of one get: the buffer view (binary search in memory), then the
 * segments newest first; in each, the key range and the bloom filter (no
 * I/O), the resident terms index to one terms block, the entry in that
 * block (with the doc id pulsed into it, or one postings read), the live
 * docs of the snapshot's generation, and the value (in the entry, or one
 * read).  At most one live document per key exists across all sources, so
 * the first live hit is the answer.
 */
#include "engine/counters.h"
#include "engine/index.h"

#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

int tern_snapshot_open(tern_snapshot **out, tern_index *idx) {
  tern_clear_error();
  if (!out || !idx) return tern_fail(TERN_EINVAL, "tern_snapshot_open: NULL argument");
  *out = NULL;
  tern_snapshot *s = calloc(1, sizeof *s);
  if (!s) return tern_fail(TERN_ENOMEM, "snapshot: out of memory");
  int rc = tern_state_acquire(idx, 1, &s->st);
  if (rc != TERN_OK) {
    free(s);
    return rc;
  }
  s->idx = idx;
  s->buf = s->st->buffer;
  tern_mu_lock(idx);
  idx->snapshots++;
  tern_mu_unlock(idx);
  *out = s;
  return TERN_OK;
}

int tern_snapshot_close(tern_snapshot *s) {
  tern_clear_error();
  if (!s) return TERN_OK;
  unsigned iters = atomic_load(&s->iters);
  if (iters)
    return tern_fail(TERN_EBUSY, "tern_snapshot_close: %u postings iterators still open", iters);
  tern_index *idx = s->idx;
  tern_state_release(idx, s->st);
  tern_mu_lock(idx);
  idx->snapshots--;
  tern_mu_unlock(idx);
  free(s);
  return TERN_OK;
}

static int copy_out(const tern_slice *v, void *buf, size_t cap, size_t *vlen) {
  *vlen = v->len;
  if (v->len > cap) return TERN_ERANGE;
  if (v->len) memcpy(buf, v->data, v->len);
  return TERN_OK;
}

/* Finds the live value of `key`: the buffer view, then the segments newest
 * first, the key hashed once for all of them. */
static int view_get(tern_snapshot *s, const void *key, size_t klen, tern_seg_cursor *c,
                    tern_slice *val) {
  tern_seg_probe p;
  TERN_TRY(tern_seg_probe_init(&p, key, klen));
  TERN_COUNT_GET(key_hashes, 1);
  ptrdiff_t i = tern_memseg_find_hashed(s->buf, key, klen, p.fk.hash);
  if (i >= 0) return tern_memseg_value(s->buf, (size_t)i, val);
  tern_term_entry e;
  const tern_slot *sl;
  TERN_TRY(tern_state_find(s->st, &p, c, &e, &sl));
  return tern_seg_value(sl->ref->seg, &e, c, val);
}

int tern_get(tern_snapshot *s, const void *key, size_t klen, void *buf, size_t cap, size_t *vlen) {
  tern_clear_error();
  if (!s || !key || klen == 0 || klen > TERN_KEY_MAX || !vlen || (cap && !buf))
    return tern_fail(TERN_EINVAL, "tern_get: bad arguments");
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  tern_slice v;
  int rc = view_get(s, key, klen, &c, &v);
  if (rc == TERN_OK) rc = copy_out(&v, buf, cap, vlen);
  tern_seg_cursor_release(&c);
  return rc;
}

/* ------------------------------------------------------------ batch */

typedef struct batch_item {
  tern_keyref key; /* aux: input index */
} batch_item;

typedef struct batch_res {
  const uint8_t *val; /* NULL: not found yet */
  size_t vlen;
} batch_res;

static int batch_resolve(tern_snapshot *s, const batch_item *items, const uint32_t *order, size_t n,
                         batch_res *res, tern_arena *vals) {
  static const uint8_t empty = 0;
  for (size_t j = 0; j < n; j++) {
    const batch_item *it = &items[order[j]];
    ptrdiff_t i = tern_memseg_find(s->buf, it->key.p, it->key.len);
    if (i < 0) continue;
    tern_slice v;
    TERN_TRY(tern_memseg_value(s->buf, (size_t)i, &v));
    res[it->key.aux] = (batch_res){v.len ? v.data : &empty, v.len};
  }
  tern_seg_cursor *c = malloc(sizeof *c);
  if (!c) return tern_fail(TERN_ENOMEM, "batch: out of memory");
  int rc = TERN_OK;
  for (size_t si = s->st->nslots; rc == TERN_OK && si-- > 0;) {
    const tern_slot *sl = &s->st->slots[si];
    tern_seg_cursor_init(c); /* one cursor per segment: each block read once, in order */
    for (size_t j = 0; rc == TERN_OK && j < n; j++) {
      const batch_item *it = &items[order[j]];
      if (res[it->key.aux].val) continue;
      tern_term_entry e;
      uint32_t doc;
      tern_slice v;
      rc = tern_slot_find(sl, it->key.p, it->key.len, c, &e, &doc);
      if (rc == TERN_NOTFOUND) {
        rc = TERN_OK;
        continue;
      }
      if (rc == TERN_OK) rc = tern_seg_value(sl->ref->seg, &e, c, &v);
      if (rc != TERN_OK) break;
      uint8_t *copy = tern_arena_alloc(vals, v.len ? v.len : 1);
      if (!copy) {
        rc = tern_fail(TERN_ENOMEM, "batch: out of memory");
        break;
      }
      if (v.len) memcpy(copy, v.data, v.len);
      res[it->key.aux] = (batch_res){copy, v.len};
    }
    tern_seg_cursor_release(c);
  }
  free(c);
  return rc;
}

/* Sorting a batch pays for itself only by the reads it saves: when every
 * segment's terms are in the page cache (or the keys come sorted), the
 * keys are looked up in the order given and answered at once — no sort,
 * no copies, no scattered bookkeeping. */
static int batch_in_order_pays(const tern_snapshot *s, const tern_slice *keys, size_t n) {
  int sorted = 1;
  for (size_t i = 1; sorted && i < n; i++) {
    size_t a = keys[i - 1].len, b = keys[i].len, m = a < b ? a : b;
    int c = memcmp(keys[i - 1].data, keys[i].data, m);
    sorted = c < 0 || (c == 0 && a < b);
  }
  if (sorted) return 1;
  /* mincore costs a byte per page of the terms file: asked only when the
   * batch is large enough to pay for it (a small batch sorts cheaply). */
  uint64_t max_pages = (uint64_t)n * 16u;
  for (size_t si = 0; si < s->st->nslots; si++)
    if (!tern_seg_terms_resident(s->st->slots[si].ref->seg, max_pages)) return 0;
  return 1;
}

static int batch_in_order(tern_snapshot *s, const tern_slice *keys, size_t n, tern_batch_fn fn,
                          void *payload) {
  tern_seg_cursor *c = malloc(sizeof *c);
  if (!c) return tern_fail(TERN_ENOMEM, "batch: out of memory");
  tern_seg_cursor_init(c);
  int rc = TERN_OK;
  for (size_t i = 0; rc == TERN_OK && i < n; i++) {
    tern_slice v;
    int st = view_get(s, keys[i].data, keys[i].len, c, &v);
    if (st == TERN_OK) rc = fn(payload, i, TERN_OK, v.len ? v.data : "", v.len);
    else if (st == TERN_NOTFOUND) rc = fn(payload, i, TERN_NOTFOUND, NULL, 0);
    else rc = st;
  }
  tern_seg_cursor_release(c);
  free(c);
  return rc;
}

int tern_get_batch(tern_snapshot *s, const tern_slice *keys, size_t n, tern_batch_fn fn,
                   void *payload) {
  tern_clear_error();
  if (!s || (n && !keys) || !fn || n >= UINT32_MAX)
    return tern_fail(TERN_EINVAL, "tern_get_batch: bad arguments");
  for (size_t i = 0; i < n; i++)
    if (!keys[i].data || keys[i].len == 0 || keys[i].len > TERN_KEY_MAX)
      return tern_fail(TERN_EINVAL, "tern_get_batch: key %zu of %zu bytes", i, keys[i].len);
  if (n == 0) return TERN_OK;
  if (batch_in_order_pays(s, keys, n)) return batch_in_order(s, keys, n, fn, payload);
  batch_item *items = malloc(n * sizeof *items);
  uint32_t *order = malloc(n * sizeof *order);
  batch_res *res = calloc(n, sizeof *res);
  tern_arena vals;
  tern_arena_init(&vals);
  int rc = items && order && res ? TERN_OK : tern_fail(TERN_ENOMEM, "batch: out of memory");
  for (size_t i = 0; rc == TERN_OK && i < n; i++)
    items[i].key = (tern_keyref){keys[i].data, (uint32_t)keys[i].len, (uint32_t)i};
  if (rc == TERN_OK) rc = tern_sort_by_key(order, items, sizeof *items, n, NULL);
  if (rc == TERN_OK) rc = batch_resolve(s, items, order, n, res, &vals);
  for (size_t i = 0; rc == TERN_OK && i < n; i++) {
    int r = res[i].val ? fn(payload, i, TERN_OK, res[i].val, res[i].vlen)
                       : fn(payload, i, TERN_NOTFOUND, NULL, 0);
    if (r != 0) rc = r;
  }
  tern_arena_free(&vals);
  free(items);
  free(order);
  free(res);
  return rc;
}

int tern_snapshot_seq(const tern_snapshot *snap, uint64_t *seq) {
  tern_clear_error();
  if (!snap || !seq) return tern_fail(TERN_EINVAL, "tern_snapshot_seq: NULL argument");
  *seq = snap->st->rec.seq;
  return TERN_OK;
}
