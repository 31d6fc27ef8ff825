/* SPDX-License-Identifier: MIT */
/*
 * fuzz_record.c — the catalog records (engine/format/catalog_schema.c over the
 * generic coder codec/record.c).  Input: a selector
 * byte, then the record: 0 format, 1 options, 2 state, 3 segment key,
 * 4 segment, 5 document (terms walked), 6 buffer value (then [u16 LE key
 * length][LMDB key][value]).  What decodes and has an encoder must decode
 * again, encoded, to the same fields.
 */
#include "codec/coding.h"
#include "engine/format/catalog_schema.h"
#include "tern.h"
#include "tests/fuzz/fuzz.h"

#include <string.h>

static int doc(const uint8_t *p, size_t n) {
  tern_rec_doc d;
  int rc = tern_rec_doc_decode(&d, p, n);
  if (rc != TERN_OK) return rc;
  tern_rec_terms it;
  tern_rec_term t;
  tern_rec_terms_init(&it, &d);
  uint64_t k = 0;
  while ((rc = tern_rec_terms_next(&it, &t)) == 1) { /* 0: no more */
    FUZZ_ASSERT(t.flen >= 1 && t.tlen >= 1);
    k++;
  }
  FUZZ_ASSERT(rc == 0 && k == d.nterms); /* the decode checked every term */
  const uint8_t *v;
  size_t vl;
  if (rc == TERN_OK) FUZZ_ASSERT(tern_rec_doc_value(p, n, &v, &vl) == TERN_OK && vl == d.vlen);
  return rc;
}

static int bufval(const uint8_t *p, size_t n) {
  if (n < 2) return TERN_EINVAL;
  size_t kl = tern_load16(p);
  if (kl > n - 2) return TERN_EINVAL;
  uint8_t key[TERN_KEY_MAX];
  size_t klen;
  const uint8_t *d;
  size_t dlen;
  int rc = tern_rec_bufval_decode(p + 2, kl, p + 2 + kl, n - 2 - kl, key, &klen, &d, &dlen);
  if (rc == TERN_OK) {
    FUZZ_ASSERT(klen >= 1 && klen <= TERN_KEY_MAX);
    uint8_t lk[TERN_REC_BUFKEY_MAX];
    size_t lklen = tern_rec_bufkey(lk, key, klen);
    FUZZ_ASSERT(lklen == kl && memcmp(lk, p + 2, kl) == 0);
  }
  return rc;
}

int fuzz_record(const uint8_t *data, size_t size) {
  if (size < 1) return TERN_EINVAL;
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  int rc = TERN_EINVAL;
  switch (data[0]) {
  case 0: { /* the seal re-stamped, so the checks behind it run */
    uint8_t sealed[64];
    uint32_t v;
    if (n < TERN_REC_SEAL_SIZE || n > sizeof sealed) {
      rc = tern_rec_format_decode(p, n, &v);
      break;
    }
    memcpy(sealed, p, n);
    tern_rec_seal("format", 6, sealed, n - TERN_REC_SEAL_SIZE);
    rc = tern_rec_format_decode(sealed, n, &v);
    if (rc == TERN_OK) FUZZ_ASSERT(v >= TERN_CATALOG_VERSION_MIN && v <= TERN_CATALOG_VERSION);
    break;
  }
  case 1: {
    tern_rec_options o;
    rc = tern_rec_options_decode(&o, p, n);
    if (rc == TERN_OK) tern_rec_options_free(&o);
    break;
  }
  case 2: {
    tern_rec_state s;
    rc = tern_rec_state_decode(&s, p, n);
    if (rc == TERN_OK) {
      uint8_t out[TERN_REC_STATE_MAX];
      size_t len = tern_rec_state_encode(out, &s);
      tern_rec_state t;
      FUZZ_ASSERT(tern_rec_state_decode(&t, out, len) == TERN_OK && len <= n);
      FUZZ_ASSERT(t.seq == s.seq && t.next_segment == s.next_segment &&
                  t.buffered_docs == s.buffered_docs && t.buffered_bytes == s.buffered_bytes &&
                  t.nsegments == s.nsegments && t.seg_digest == s.seg_digest);
    }
    break;
  }
  case 3: {
    uint64_t num;
    rc = tern_rec_segkey_decode(p, n, &num);
    break;
  }
  case 4: {
    tern_rec_segment s;
    rc = tern_rec_segment_decode(&s, p, n);
    if (rc == TERN_OK) {
      uint8_t out[TERN_REC_SEGMENT_MAX];
      size_t len = tern_rec_segment_encode(out, &s);
      tern_rec_segment t;
      FUZZ_ASSERT(tern_rec_segment_decode(&t, out, len) == TERN_OK && len <= n);
      FUZZ_ASSERT(!memcmp(t.segid, s.segid, sizeof s.segid) && t.max_doc == s.max_doc &&
                  t.deleted == s.deleted && t.livedocs_gen == s.livedocs_gen);
    }
    break;
  }
  case 5:
    rc = doc(p, n);
    break;
  case 6:
    rc = bufval(p, n);
    break;
  case 7: { /* catalog version 4's state record */
    tern_rec_state s;
    rc = tern_rec_state4_decode(&s, p, n);
    if (rc == TERN_OK) {
      uint8_t out[TERN_REC_STATE_MAX];
      size_t len = tern_rec_state4_encode(out, &s);
      tern_rec_state t;
      FUZZ_ASSERT(tern_rec_state4_decode(&t, out, len) == TERN_OK && len <= n);
      FUZZ_ASSERT(t.seq_base == s.seq_base && t.next_segment == s.next_segment &&
                  t.buffer_gen == s.buffer_gen && t.nsegments == s.nsegments &&
                  t.seg_digest == s.seg_digest);
    }
    break;
  }
  default:
    break;
  }
  return rc;
}

FUZZ_DEFINE_ENTRY(fuzz_record)
