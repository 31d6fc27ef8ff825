/* SPDX-License-Identifier: MIT */
/*
 * txn_read.c — reads inside the write transaction (tern_txn_get) and the
 * put that reads first (tern_put_flags with TERN_NOOVERWRITE).
 *
 * What the transaction sees of a key: its own latest operation on it (a
 * put's document, or a delete), else the commit it began on — the buffer
 * view and the segments newest first, looked up as tern_get does.  Only
 * the lookup reaches into the transaction (tern_txn_find_own, txn.c); the
 * rest is the snapshot's read path over the transaction's state.
 */
#include "engine/util/counters.h"
#include "engine/state/index.h"

#include "codec/status.h"

#include <string.h>

/* The value the transaction sees for `key`: TERN_OK with *val (valid until
 * the transaction's next call; c released by the caller), TERN_NOTFOUND. */
static int txn_sees(tern_txn *t, const void *key, size_t klen, tern_seg_cursor *c,
                    tern_slice *val) {
  const tern_mdoc *op;
  const tern_state *st;
  TERN_TRY(tern_txn_find_own(t, key, klen, &op, &st));
  if (op) {
    if (!op->doc) return TERN_NOTFOUND; /* deleted by the transaction */
    const uint8_t *v;
    size_t vlen;
    TERN_TRY(tern_rec_doc_value(op->doc, op->key.aux, &v, &vlen));
    *val = (tern_slice){v, vlen};
    return TERN_OK;
  }
  tern_seg_probe p;
  TERN_TRY(tern_seg_probe_init(&p, key, klen));
  tern_term_entry e;
  tern_state_hit hit;
  ptrdiff_t i;
  TERN_TRY(tern_state_find_key(st, &p, c, &e, &hit, &i));
  if (i >= 0) return tern_memseg_value(st->buffer, (size_t)i, val);
  return tern_seg_value(hit.slot->ref->seg, &e, c, val);
}

int tern_txn_get(tern_txn *txn, const void *key, size_t klen, void *buf, size_t cap, size_t *vlen) {
  tern_clear_error();
  if (!txn || !key || klen == 0 || klen > TERN_KEY_MAX || !vlen || (cap && !buf))
    return tern_fail(TERN_EINVAL, "tern_txn_get: bad arguments");
  tern_count_gets(1);
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  tern_slice v;
  int rc = txn_sees(txn, key, klen, &c, &v);
  if (rc == TERN_OK) {
    *vlen = v.len;
    if (v.len > cap)
      rc = TERN_ERANGE;
    else if (v.len)
      memcpy(buf, v.data, v.len);
  }
  tern_seg_cursor_release(&c);
  return rc;
}

int tern_put_flags(tern_txn *txn, unsigned flags, const void *key, size_t klen, const void *val,
                   size_t vlen, const tern_term *terms, size_t nterms) {
  tern_clear_error();
  if (!txn || (flags & ~TERN_NOOVERWRITE) || !key || klen == 0 || klen > TERN_KEY_MAX)
    return tern_fail(TERN_EINVAL, "tern_put_flags: bad arguments");
  if (flags & TERN_NOOVERWRITE) {
    tern_seg_cursor c;
    tern_seg_cursor_init(&c);
    tern_slice v;
    int rc = txn_sees(txn, key, klen, &c, &v);
    tern_seg_cursor_release(&c);
    if (rc == TERN_OK)
      return tern_fail(TERN_EEXIST, "tern_put_flags: the key exists (TERN_NOOVERWRITE)");
    if (rc != TERN_NOTFOUND) return rc;
    tern_clear_error();
  }
  return tern_put(txn, key, klen, val, vlen, terms, nterms);
}
