/* SPDX-License-Identifier: MIT */
/*
 * test_record.c — the catalog's records (engine/format/catalog_schema.c) and the
 * generic record coder under them (codec/record.c): round trips on random
 * values, and every truncation, extension and byte flip of an encoded
 * record either decodes to something valid or is TERN_ECORRUPT, never a
 * crash (ASan watches the bounds).  The coder is checked on random tuples
 * of fields against the list of fields that made them.
 */
#include "tests/common/testutil.h"

#include "engine/format/catalog_schema.h"
#include "tern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every prefix of buf must be rejected; flipped bytes must not crash. */
#define CHECK_MUTATIONS(buf, len, DECODE)                                                          \
  do {                                                                                             \
    for (size_t cut_ = 0; cut_ < (len); cut_++)                                                    \
      assert_int_equal(DECODE((buf), cut_), TERN_ECORRUPT);                                        \
    uint8_t *ext_ = malloc((len) + 1);                                                             \
    memcpy(ext_, (buf), (len));                                                                    \
    ext_[(len)] = 0;                                                                               \
    assert_int_equal(DECODE(ext_, (len) + 1), TERN_ECORRUPT);                                      \
    for (size_t mi_ = 0; mi_ < (len); mi_++)                                                       \
      for (int bit = 0; bit < 8; bit++) {                                                          \
        memcpy(ext_, (buf), (len));                                                                \
        ext_[mi_] ^= (uint8_t)(1u << bit);                                                         \
        int rc_ = DECODE(ext_, (len));                                                             \
        assert_true(rc_ == TERN_OK || rc_ == TERN_ECORRUPT || rc_ == TERN_EVERSION);               \
      }                                                                                            \
    free(ext_);                                                                                    \
  } while (0)

static int dec_state(const uint8_t *b, size_t n) {
  tern_rec_state s;
  return tern_rec_state_decode(&s, b, n);
}

static void test_state_roundtrip(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 11);
  for (int i = 0; i < 1000; i++) {
    tern_rec_state s = {tu_next(&r) >> tu_below(&r, 64), tu_next(&r) >> tu_below(&r, 64),
                        tu_next(&r) >> tu_below(&r, 64), tu_next(&r) >> tu_below(&r, 64),
                        tu_next(&r) >> tu_below(&r, 64), tu_next(&r), 0, 0, 0};
    uint8_t buf[TERN_REC_STATE_MAX];
    size_t n = tern_rec_state_encode(buf, &s);
    tern_rec_state d;
    assert_int_equal(tern_rec_state_decode(&d, buf, n), TERN_OK);
    assert_memory_equal(&d, &s, sizeof s);
    if (i < 20) CHECK_MUTATIONS(buf, n, dec_state);
  }
}

static int dec_state4(const uint8_t *b, size_t n) {
  tern_rec_state s;
  return tern_rec_state4_decode(&s, b, n);
}

/* Version 4 stores seq_base, next_segment, buffer_gen, old_docs and the
 * segments' count and digest; the rest is not stored and decodes as 0. */
static void test_state4_roundtrip(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 12);
  for (int i = 0; i < 1000; i++) {
    tern_rec_state s = {0};
    s.seq_base = tu_next(&r) >> tu_below(&r, 64);
    s.next_segment = tu_next(&r) >> tu_below(&r, 64);
    s.buffer_gen = tu_next(&r) >> tu_below(&r, 64);
    s.old_docs = tu_next(&r) >> tu_below(&r, 64);
    s.nsegments = tu_next(&r) >> tu_below(&r, 64);
    s.seg_digest = tu_next(&r);
    uint8_t buf[TERN_REC_STATE_MAX];
    size_t n = tern_rec_state4_encode(buf, &s);
    tern_rec_state d, full = s;
    full.seq = full.buffered_docs = full.buffered_bytes = 7;
    assert_int_equal(tern_rec_state4_encode(buf, &full), n); /* those are not stored */
    assert_int_equal(tern_rec_state4_decode(&d, buf, n), TERN_OK);
    assert_memory_equal(&d, &s, sizeof s);
    assert_int_equal(tern_rec_state4_decode(&d, buf, n - 1), TERN_ECORRUPT);
    if (i < 20) CHECK_MUTATIONS(buf, n, dec_state4);
  }
}

static int dec_segment(const uint8_t *b, size_t n) {
  tern_rec_segment s;
  return tern_rec_segment_decode(&s, b, n);
}

static void test_segment_roundtrip(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 12);
  for (int i = 0; i < 1000; i++) {
    tern_rec_segment s;
    tu_fill(&r, s.segid, sizeof s.segid);
    s.max_doc = 1 + tu_below(&r, UINT32_MAX - 2);
    s.deleted = tu_below(&r, 3) ? tu_below(&r, s.max_doc + 1) : 0;
    s.livedocs_gen = s.deleted ? 1 + tu_below(&r, 1000) : 0;
    uint8_t buf[TERN_REC_SEGMENT_MAX];
    size_t n = tern_rec_segment_encode(buf, &s);
    tern_rec_segment d;
    assert_int_equal(tern_rec_segment_decode(&d, buf, n), TERN_OK);
    assert_memory_equal(d.segid, s.segid, sizeof s.segid);
    assert_int_equal(d.max_doc, s.max_doc);
    assert_int_equal(d.deleted, s.deleted);
    assert_int_equal(d.livedocs_gen, s.livedocs_gen);
    if (i < 10) CHECK_MUTATIONS(buf, n, dec_segment);
  }
  /* inconsistent records */
  tern_rec_segment bad = {{0}, 10, 11, 1};
  uint8_t buf[TERN_REC_SEGMENT_MAX];
  size_t n = tern_rec_segment_encode(buf, &bad);
  assert_int_equal(dec_segment(buf, n), TERN_ECORRUPT);
  bad = (tern_rec_segment){{0}, 10, 3, 0};
  n = tern_rec_segment_encode(buf, &bad);
  assert_int_equal(dec_segment(buf, n), TERN_ECORRUPT);
  bad = (tern_rec_segment){{0}, 0, 0, 0};
  n = tern_rec_segment_encode(buf, &bad);
  assert_int_equal(dec_segment(buf, n), TERN_ECORRUPT);
  uint8_t key[8];
  uint64_t num;
  tern_rec_segkey_encode(key, 0x0102030405060708ull);
  assert_int_equal(key[0], 1);
  assert_int_equal(tern_rec_segkey_decode(key, 8, &num), TERN_OK);
  assert_true(num == 0x0102030405060708ull);
  assert_int_equal(tern_rec_segkey_decode(key, 7, &num), TERN_ECORRUPT);
}

static int dec_options(const uint8_t *b, size_t n) {
  tern_rec_options o;
  int rc = tern_rec_options_decode(&o, b, n);
  if (rc == TERN_OK) tern_rec_options_free(&o);
  return rc;
}

static void test_options_roundtrip(void **state) {
  (void)state;
  tern_field_option f[3] = {{"title", 4}, {"a", 0}, {"\x01\xff", 64}};
  tern_options o;
  tern_options_init(&o);
  o.pulsing_threshold = 7;
  o.inline_value_max = 1024;
  o.bloom_bits_per_key = 0;
  o.write_buffer_bytes = 12345678901ull;
  o.map_size = 1ull << 40;
  o.fields = f;
  o.nfields = 3;
  uint8_t *buf;
  size_t n;
  assert_int_equal(tern_rec_options_encode(&o, &buf, &n), TERN_OK);
  tern_rec_options d;
  assert_int_equal(tern_rec_options_decode(&d, buf, n), TERN_OK);
  assert_int_equal(d.pulsing_threshold, 7);
  assert_int_equal(d.inline_value_max, 1024);
  assert_int_equal(d.bloom_bits_per_key, 0);
  assert_true(d.write_buffer_bytes == 12345678901ull);
  assert_true(d.map_size == 1ull << 40);
  assert_int_equal(d.nfields, 3);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(d.fields[i].name_len, strlen(f[i].field));
    assert_memory_equal(d.fields[i].name, f[i].field, d.fields[i].name_len);
    assert_int_equal(d.fields[i].threshold, f[i].threshold);
  }
  tern_rec_options_free(&d);
  CHECK_MUTATIONS(buf, n, dec_options);
  free(buf);
}

static int dec_format(const uint8_t *b, size_t n) {
  uint32_t v;
  return tern_rec_format_decode(b, n, &v);
}

/* A stored format value: payload and seal (catalog version 2 on). */
static size_t stored_format(uint8_t buf[TERN_REC_FORMAT_SIZE + TERN_REC_SEAL_SIZE]) {
  tern_rec_format_encode(buf);
  tern_rec_seal("format", 6, buf, TERN_REC_FORMAT_SIZE);
  return TERN_REC_FORMAT_SIZE + TERN_REC_SEAL_SIZE;
}

static void test_format(void **state) {
  (void)state;
  uint8_t buf[TERN_REC_FORMAT_SIZE + TERN_REC_SEAL_SIZE];
  uint32_t v;
  size_t n = stored_format(buf);
  assert_int_equal(tern_rec_format_decode(buf, n, &v), TERN_OK);
  assert_int_equal(v, TERN_CATALOG_VERSION);
  buf[4] = (uint8_t)(TERN_CATALOG_VERSION + 1);
  assert_int_equal(tern_rec_format_decode(buf, n, &v), TERN_EVERSION);
  buf[4] = 2; /* version 2 (state record in "meta"): still read */
  tern_rec_seal("format", 6, buf, TERN_REC_FORMAT_SIZE);
  assert_int_equal(tern_rec_format_decode(buf, n, &v), TERN_OK);
  assert_int_equal(v, 2);
  buf[4] = 1; /* version 1: unsealed, older, refused (none deployed) */
  assert_int_equal(tern_rec_format_decode(buf, TERN_REC_FORMAT_SIZE, &v), TERN_EVERSION);
  buf[4] = 0;
  assert_int_equal(tern_rec_format_decode(buf, n, &v), TERN_ECORRUPT);
  stored_format(buf);
  buf[0] = 'T';
  assert_int_equal(tern_rec_format_decode(buf, n, &v), TERN_ECORRUPT);
  stored_format(buf);
  for (size_t cut = 0; cut < n; cut++)
    assert_int_equal(dec_format(buf, cut), TERN_ECORRUPT);
  for (size_t at = 0; at < n; at++) { /* every byte is covered: magic, version or seal */
    stored_format(buf);
    buf[at] ^= 0x10;
    int rc = dec_format(buf, n);
    assert_true(rc == TERN_ECORRUPT || (at >= 4 && at < 8 && rc == TERN_EVERSION));
  }
}

/* The seal binds the key: the same payload under another key fails. */
static void test_seal(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 12);
  for (int i = 0; i < 200; i++) {
    uint8_t key[16], val[64 + TERN_REC_SEAL_SIZE];
    size_t klen = 1 + (size_t)tu_below(&r, sizeof key), plen = (size_t)tu_below(&r, 64), got;
    tu_fill(&r, key, klen);
    tu_fill(&r, val, plen);
    tern_rec_seal(key, klen, val, plen);
    size_t vlen = plen + TERN_REC_SEAL_SIZE;
    assert_int_equal(tern_rec_unseal(key, klen, val, vlen, &got, "test"), TERN_OK);
    assert_int_equal(got, plen);
    size_t at = (size_t)tu_below(&r, vlen);
    val[at] ^= (uint8_t)(1u << tu_below(&r, 8));
    assert_int_equal(tern_rec_unseal(key, klen, val, vlen, &got, "test"), TERN_ECORRUPT);
    tern_rec_seal(key, klen, val, plen);
    key[tu_below(&r, klen)] ^= 1;
    assert_int_equal(tern_rec_unseal(key, klen, val, vlen, &got, "test"), TERN_ECORRUPT);
    for (size_t cut = 0; cut < TERN_REC_SEAL_SIZE; cut++)
      assert_int_equal(tern_rec_unseal(key, klen, val, cut, &got, "test"), TERN_ECORRUPT);
  }
}

static int dec_health(const uint8_t *b, size_t n) {
  tern_rec_health h;
  return tern_rec_health_decode(&h, b, n);
}

static void test_health_roundtrip(void **state) {
  (void)state;
  tern_rec_health h = {0}, d;
  h.status = TERN_ECORRUPT;
  h.seq = 123456789;
  h.nbad = 3;
  h.bad[0] = 1, h.bad[1] = 77, h.bad[2] = UINT64_MAX >> 1;
  snprintf(h.msg, sizeof h.msg, "segment s000000000077: checksum mismatch");
  uint8_t buf[TERN_REC_HEALTH_MAX];
  size_t n = tern_rec_health_encode(buf, &h);
  assert_int_equal(tern_rec_health_decode(&d, buf, n), TERN_OK);
  assert_int_equal(d.status, h.status);
  assert_int_equal(d.seq, h.seq);
  assert_int_equal(d.nbad, 3);
  assert_true(d.bad[2] == h.bad[2]);
  assert_string_equal(d.msg, h.msg);
  CHECK_MUTATIONS(buf, n, dec_health);
}

static int dec_doc(const uint8_t *b, size_t n) {
  tern_rec_doc d;
  int rc = tern_rec_doc_decode(&d, b, n);
  if (rc != TERN_OK) return rc;
  tern_rec_terms it;
  tern_rec_term t;
  tern_rec_terms_init(&it, &d);
  while ((rc = tern_rec_terms_next(&it, &t)) == 1) {
  }
  return rc;
}

static void test_doc_roundtrip(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 13);
  static const char *fields[4] = {"a", "body", "x\xff", "zzzzzzzz"};
  for (int i = 0; i < 500; i++) {
    size_t vlen = tu_below(&r, 4) == 0 ? 0 : (size_t)tu_below(&r, 3000);
    uint8_t *val = malloc(vlen + 1), terms_bytes[8][40];
    tu_fill(&r, val, vlen);
    tern_term terms[8];
    size_t nt = (size_t)tu_below(&r, 9);
    for (size_t t = 0; t < nt; t++) {
      terms[t].field = fields[tu_below(&r, 4)];
      terms[t].len = 1 + (size_t)tu_below(&r, 40);
      tu_fill(&r, terms_bytes[t], terms[t].len);
      terms[t].term = terms_bytes[t];
    }
    size_t n = tern_rec_doc_size(vlen, terms, nt);
    uint8_t *buf = malloc(n);
    assert_int_equal(tern_rec_doc_encode(buf, val, vlen, terms, nt), n);
    tern_rec_doc d;
    assert_int_equal(tern_rec_doc_decode(&d, buf, n), TERN_OK);
    assert_int_equal(d.vlen, vlen);
    if (vlen) assert_memory_equal(d.val, val, vlen);
    const uint8_t *v2;
    size_t vl2;
    assert_int_equal(tern_rec_doc_value(buf, n, &v2, &vl2), TERN_OK);
    assert_int_equal(vl2, vlen);
    assert_int_equal(d.nterms, nt);
    tern_rec_terms it;
    tern_rec_term t;
    tern_rec_terms_init(&it, &d);
    for (size_t k = 0; k < nt; k++) {
      assert_int_equal(tern_rec_terms_next(&it, &t), 1);
      assert_int_equal(t.flen, strlen(terms[k].field));
      assert_memory_equal(t.field, terms[k].field, t.flen);
      assert_int_equal(t.tlen, terms[k].len);
      assert_memory_equal(t.term, terms[k].term, t.tlen);
    }
    assert_int_equal(tern_rec_terms_next(&it, &t), 0);
    if (i < 10 && n < 400) CHECK_MUTATIONS(buf, n, dec_doc);
    free(buf);
    free(val);
  }
}

/* ---------------------------------------------------------------- coder */

enum { F_VARINT, F_U8, F_U32, F_U64, F_BYTES, F_KINDS };

typedef struct field {
  int kind;
  uint64_t v;
  uint8_t bytes[40];
  size_t n;
} field;

/* Reads fields[0..n) back from r; TERN_ECORRUPT at the first that fails. */
static int read_fields(tern_rec_reader *r, const field *fields, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const field *f = &fields[i];
    uint64_t v = 0;
    uint32_t v32 = 0;
    const uint8_t *b = NULL;
    int rc;
    switch (f->kind) {
    case F_VARINT: rc = tern_rec_get_varint(r, &v); break;
    case F_U8: rc = tern_rec_get_bytes(r, 1, &b), v = b ? b[0] : 0; break;
    case F_U32: rc = tern_rec_get_u32(r, &v32), v = v32; break;
    case F_U64: rc = tern_rec_get_u64(r, &v); break;
    default: rc = tern_rec_get_bytes(r, f->n, &b); break;
    }
    if (rc != TERN_OK) return rc;
    if (f->kind == F_BYTES) {
      assert_non_null(b);
      assert_memory_equal(b, f->bytes, f->n);
    } else {
      assert_true(v == f->v);
    }
  }
  return tern_rec_get_done(r);
}

static void test_coder(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 13);
  for (int round = 0; round < 2000; round++) {
    field fields[12];
    size_t n = tu_below(&r, 12), cap = 0;
    for (size_t i = 0; i < n; i++) {
      field *f = &fields[i];
      f->kind = (int)tu_below(&r, F_KINDS);
      f->v = tu_next(&r) >> tu_below(&r, 64);
      if (f->kind == F_U8) f->v &= 0xff;
      if (f->kind == F_U32) f->v &= 0xffffffffu;
      f->n = tu_below(&r, sizeof f->bytes + 1);
      tu_fill(&r, f->bytes, f->n);
      cap += TERN_REC_VARINT_MAX + 8 + f->n;
    }
    uint8_t *buf = malloc(cap + 1), *extra = malloc(cap + 2);
    tern_rec_writer w = {buf};
    size_t want = 0;
    for (size_t i = 0; i < n; i++) {
      const field *f = &fields[i];
      switch (f->kind) {
      case F_VARINT: tern_rec_put_varint(&w, f->v), want += tern_rec_varint_size(f->v); break;
      case F_U8: tern_rec_put_u8(&w, (uint8_t)f->v), want += 1; break;
      case F_U32: tern_rec_put_u32(&w, (uint32_t)f->v), want += 4; break;
      case F_U64: tern_rec_put_u64(&w, f->v), want += 8; break;
      default: tern_rec_put_bytes(&w, f->bytes, f->n), want += f->n; break;
      }
    }
    size_t len = (size_t)(w.p - buf);
    assert_int_equal(len, want);
    tern_rec_reader rd = tern_rec_reader_of(buf, len, "test");
    assert_int_equal(read_fields(&rd, fields, n), TERN_OK);
    /* A prefix fails inside a field or at the end, unless it cuts only
     * zero-length byte strings; a longer record has trailing bytes. */
    size_t cut = len ? tu_below(&r, len) : 0;
    rd = tern_rec_reader_of(buf, cut, "test");
    if (cut < len) assert_int_equal(read_fields(&rd, fields, n), TERN_ECORRUPT);
    memcpy(extra, buf, len);
    extra[len] = (uint8_t)tu_next(&r);
    rd = tern_rec_reader_of(extra, len + 1, "test");
    assert_int_equal(read_fields(&rd, fields, n), TERN_ECORRUPT);
    free(buf);
    free(extra);
  }
  /* Big-endian keys sort as their numbers. */
  for (int i = 0; i < 1000; i++) {
    uint64_t a = tu_next(&r) >> tu_below(&r, 64), b = tu_next(&r) >> tu_below(&r, 64), got;
    uint8_t ka[8], kb[8];
    tern_rec_be64_encode(ka, a);
    tern_rec_be64_encode(kb, b);
    int c = memcmp(ka, kb, 8);
    assert_true((c < 0) == (a < b) && (c == 0) == (a == b));
    assert_int_equal(tern_rec_be64_decode(ka, 8, &got, "key"), TERN_OK);
    assert_true(got == a);
    assert_int_equal(tern_rec_be64_decode(ka, 7, &got, "key"), TERN_ECORRUPT);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_state_roundtrip),
      cmocka_unit_test(test_state4_roundtrip),   cmocka_unit_test(test_segment_roundtrip),
      cmocka_unit_test(test_options_roundtrip), cmocka_unit_test(test_format),
      cmocka_unit_test(test_doc_roundtrip),     cmocka_unit_test(test_seal),
      cmocka_unit_test(test_health_roundtrip),  cmocka_unit_test(test_coder),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
