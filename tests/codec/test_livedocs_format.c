/* SPDX-License-Identifier: MIT */
/* .liv bytes under attack: every single-byte flip and every truncation of
 * small files (one per form and both layouts), wrong segment id / max_doc /
 * count, and bodies that pass the frame but lie inside (re-framed flips,
 * truncations and random bytes): always an error status, never a crash. */
#include "codec/frame.h"
#include "codec/livedocs.h"
#include "tests/common/testutil.h"

#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t SEGID[16] = "segment-id-0002";

typedef struct sample {
  uint32_t max_doc;
  uint32_t deleted;
  uint8_t *buf;
  size_t len;
} sample;

#define SHAPES 8

/* A small .liv of each shape. */
static void make_sample(sample *s, int shape) {
  uint32_t max_doc = shape == 4 || shape == 6 ? 70000 : 3000, n = 0;
  uint32_t *d = malloc(max_doc * sizeof *d);
  assert_non_null(d);
  for (uint32_t i = 0; i < max_doc; i++) {
    int del = shape == 0   ? i % 97 == 3                            /* sparse array */
              : shape == 1 ? (i >= 100 && i < 900)                  /* runs set, one run */
              : shape == 2 ? (i * 2654435761u) % 3 == 0             /* bitmap */
              : shape == 3 ? 1                                      /* runs set, all */
              : shape == 4 ? (i * 2654435761u) % 5 < 2              /* dense layout, two chunks */
              : shape == 5 ? i % 100 < 10                           /* chunk record of runs */
              : shape == 6 ? i < 65536 || i % 50 == 7               /* full chunk, then an array */
                           : 0;                                     /* runs set, empty */
    if (del) d[n++] = i;
  }
  tern_livedocs *empty, *ld;
  assert_int_equal(tern_livedocs_new(&empty, max_doc), TERN_OK);
  assert_int_equal(tern_livedocs_apply(&ld, empty, d, n), TERN_OK);
  assert_int_equal(tern_livedocs_write(ld, SEGID, &s->buf, &s->len), TERN_OK);
  s->max_doc = max_doc;
  s->deleted = tern_livedocs_deleted(ld);
  tern_livedocs_free(ld);
  tern_livedocs_free(empty);
  free(d);
}

static int try_read(const sample *s, const uint8_t *buf, size_t len) {
  tern_livedocs *ld = NULL;
  int rc = tern_livedocs_read(&ld, buf, len, SEGID, s->max_doc, s->deleted);
  if (rc == TERN_OK) {
    /* a body that passes must at least be a consistent set */
    tern_ld_iter it;
    tern_livedocs_iter_deleted(&it, ld);
    uint32_t n = 0;
    while (tern_ld_iter_next(&it) != TERN_LD_END) n++;
    assert_int_equal(n, s->deleted);
    tern_livedocs_free(ld);
  }
  return rc;
}

static void test_every_byte_flip_and_truncation(void **state) {
  (void)state;
  for (int shape = 0; shape < SHAPES; shape++) {
    sample s;
    make_sample(&s, shape);
    assert_int_equal(try_read(&s, s.buf, s.len), TERN_OK);
    uint8_t *copy = malloc(s.len);
    assert_non_null(copy);
    for (size_t i = 0; i < s.len; i++) {
      memcpy(copy, s.buf, s.len);
      copy[i] ^= (uint8_t)(1u << (i % 8));
      int rc = try_read(&s, copy, s.len);
      assert_true(rc == TERN_ECORRUPT || rc == TERN_EVERSION);
    }
    for (size_t len = 0; len < s.len; len++) assert_int_equal(try_read(&s, s.buf, len), TERN_ECORRUPT);
    free(copy);
    free(s.buf);
  }
}

/* Encoding in place (tern_livedocs_encode, as the catalog writes a
 * record into LMDB's reserved value) makes the bytes a read of every
 * shape gives back the same set from, a re-encoding of the read set is
 * byte-identical, and room of any other size is refused untouched. */
static void test_encode_in_place(void **state) {
  (void)state;
  for (int shape = 0; shape < SHAPES; shape++) {
    sample s;
    make_sample(&s, shape);
    tern_livedocs *ld;
    assert_int_equal(tern_livedocs_read(&ld, s.buf, s.len, SEGID, s.max_doc, s.deleted), TERN_OK);
    size_t n = tern_livedocs_encoded_len(ld);
    assert_int_equal(n, s.len);
    uint8_t *dst = malloc(n + 1);
    assert_non_null(dst);
    memset(dst, 0xa5, n + 1);
    assert_int_equal(tern_livedocs_encode(ld, SEGID, dst, n - 1), TERN_EINVAL);
    assert_int_equal(tern_livedocs_encode(ld, SEGID, dst, n + 1), TERN_EINVAL);
    for (size_t i = 0; i <= n; i++) assert_int_equal(dst[i], 0xa5); /* nothing written */
    assert_int_equal(tern_livedocs_encode(ld, SEGID, dst, n), TERN_OK);
    assert_memory_equal(dst, s.buf, n);
    assert_int_equal(dst[n], 0xa5); /* not one byte past */
    tern_livedocs_free(ld);
    free(dst);
    free(s.buf);
  }
}

static void test_wrong_identity(void **state) {
  (void)state;
  sample s;
  make_sample(&s, 0);
  tern_livedocs *ld;
  uint8_t other[16];
  memcpy(other, SEGID, 16);
  other[15] ^= 1;
  assert_int_equal(tern_livedocs_read(&ld, s.buf, s.len, other, s.max_doc, s.deleted), TERN_ECORRUPT);
  assert_int_equal(tern_livedocs_read(&ld, s.buf, s.len, SEGID, s.max_doc + 1, s.deleted), TERN_ECORRUPT);
  assert_int_equal(tern_livedocs_read(&ld, s.buf, s.len, SEGID, s.max_doc - 1, s.deleted), TERN_ECORRUPT);
  assert_int_equal(tern_livedocs_read(&ld, s.buf, s.len, SEGID, s.max_doc, s.deleted + 1), TERN_ECORRUPT);
  assert_int_equal(tern_livedocs_read(&ld, s.buf, s.len, SEGID, s.max_doc, s.deleted - 1), TERN_ECORRUPT);
  assert_true(strlen(tern_errmsg()) > 0);
  assert_int_equal(tern_livedocs_read(&ld, s.buf, s.len, SEGID, s.max_doc, s.deleted), TERN_OK);
  tern_livedocs_free(ld);
  free(s.buf);
}

/* A newer version is EVERSION, not ECORRUPT. */
static void test_newer_version(void **state) {
  (void)state;
  sample s;
  make_sample(&s, 1);
  const uint8_t *body;
  size_t body_len;
  assert_int_equal(tern_frame_open_buffer(s.buf, s.len, TERN_KIND_LIVEDOCS, TERN_LIVEDOCS_VERSION, SEGID,
                                          "t", NULL, &body, &body_len),
                   TERN_OK);
  uint8_t *nb;
  size_t nlen;
  assert_int_equal(tern_frame_wrap(&nb, &nlen, TERN_KIND_LIVEDOCS, TERN_LIVEDOCS_VERSION + 1, SEGID, body,
                                   body_len),
                   TERN_OK);
  tern_livedocs *ld;
  assert_int_equal(tern_livedocs_read(&ld, nb, nlen, SEGID, s.max_doc, s.deleted), TERN_EVERSION);
  free(nb);
  free(s.buf);
}

/* Bodies re-framed after damage get past the checksum: the body checks
 * alone must catch them (or yield a consistent set). */
static void test_malformed_bodies(void **state) {
  (void)state;
  tu_rng rng;
  tu_rng_init(&rng, 21);
  for (int shape = 0; shape < SHAPES; shape++) {
    sample s;
    make_sample(&s, shape);
    const uint8_t *body0;
    size_t blen;
    assert_int_equal(tern_frame_open_buffer(s.buf, s.len, TERN_KIND_LIVEDOCS, TERN_LIVEDOCS_VERSION,
                                            SEGID, "t", NULL, &body0, &blen),
                     TERN_OK);
    uint8_t *body = malloc(blen + 64);
    assert_non_null(body);
    size_t limit = blen < 4000 ? blen : 4000; /* the dense sample is big: sample its bytes */
    for (size_t k = 0; k < limit; k++) {
      size_t i = blen < 4000 ? k : (size_t)tu_below(&rng, blen);
      for (int variant = 0; variant < 3; variant++) {
        memcpy(body, body0, blen);
        body[i] = variant == 0 ? (uint8_t)(body[i] ^ (1u << tu_below(&rng, 8)))
                  : variant == 1 ? (uint8_t)tu_next(&rng)
                                 : (uint8_t)(body[i] + 1);
        uint8_t *nb;
        size_t nlen;
        assert_int_equal(tern_frame_wrap(&nb, &nlen, TERN_KIND_LIVEDOCS, TERN_LIVEDOCS_VERSION, SEGID,
                                         body, blen),
                         TERN_OK);
        int rc = try_read(&s, nb, nlen);
        assert_true(rc == TERN_OK || rc == TERN_ECORRUPT);
        free(nb);
      }
    }
    for (size_t cut = 0; cut < blen; cut += blen < 4000 ? 1 : 97) { /* body truncations */
      uint8_t *nb;
      size_t nlen;
      assert_int_equal(tern_frame_wrap(&nb, &nlen, TERN_KIND_LIVEDOCS, TERN_LIVEDOCS_VERSION, SEGID, body0,
                                       cut),
                       TERN_OK);
      assert_int_equal(try_read(&s, nb, nlen), TERN_ECORRUPT);
      free(nb);
    }
    for (int extra = 1; extra < 64; extra += 9) { /* trailing bytes */
      memcpy(body, body0, blen);
      memset(body + blen, 0, (size_t)extra);
      uint8_t *nb;
      size_t nlen;
      assert_int_equal(tern_frame_wrap(&nb, &nlen, TERN_KIND_LIVEDOCS, TERN_LIVEDOCS_VERSION, SEGID, body,
                                       blen + (size_t)extra),
                       TERN_OK);
      assert_int_equal(try_read(&s, nb, nlen), TERN_ECORRUPT);
      free(nb);
    }
    free(body);
    free(s.buf);
  }
  /* random bodies behind a plausible header */
  for (int round = 0; round < 3000; round++) {
    uint8_t body[256];
    size_t blen = 16 + (size_t)tu_below(&rng, 240);
    tu_fill(&rng, body, blen);
    uint32_t max_doc = (uint32_t)tu_below(&rng, 200000), del = (uint32_t)tu_below(&rng, 50);
    for (int i = 0; i < 4; i++) body[i] = (uint8_t)(max_doc >> (8 * i)), body[4 + i] = (uint8_t)(del >> (8 * i));
    body[8] = (uint8_t)tu_below(&rng, 3);
    body[9] = body[10] = body[11] = 0;
    body[12] = (uint8_t)tu_below(&rng, 4);
    body[13] = body[14] = body[15] = 0;
    uint8_t *nb;
    size_t nlen;
    assert_int_equal(tern_frame_wrap(&nb, &nlen, TERN_KIND_LIVEDOCS, TERN_LIVEDOCS_VERSION, SEGID, body, blen),
                     TERN_OK);
    sample s = {.max_doc = max_doc, .deleted = del};
    int rc = try_read(&s, nb, nlen);
    assert_true(rc == TERN_OK || rc == TERN_ECORRUPT);
    free(nb);
  }
}

/* The layout follows the set's shape: runs sets are layout 2; a directory
 * is dense when that is smaller, and only then. */
static void test_layout_choice(void **state) {
  (void)state;
  static const uint8_t want[SHAPES] = {0, 2, 1, 2, 1, 0, 0, 2};
  for (int shape = 0; shape < SHAPES; shape++) {
    sample s;
    make_sample(&s, shape);
    assert_int_equal(s.buf[TERN_FRAME_HEADER_SIZE + 8], want[shape]);
    if (shape == 4) assert_true(s.len <= 48 + 16 + 8 * ((70000 + 63) / 64));
    if (shape == 0) assert_true(s.len < 48 + 16 + 8 * ((3000 + 63) / 64));
    if (want[shape] == 2) assert_int_equal(s.len, 48 + 16 + 8 * (shape != 7)); /* one run, or none */
    if (shape == 5) assert_int_equal(s.buf[TERN_FRAME_HEADER_SIZE + 16 + 4], 3); /* a runs record */
    if (shape == 6) assert_int_equal(s.buf[TERN_FRAME_HEADER_SIZE + 16 + 4], 4); /* a full record */
    free(s.buf);
  }
}

/* A body wrapped in a frame, read against max_doc and deleted. */
static int read_body(const uint8_t *body, size_t blen, uint32_t max_doc, uint32_t deleted) {
  uint8_t *nb;
  size_t nlen;
  assert_int_equal(tern_frame_wrap(&nb, &nlen, TERN_KIND_LIVEDOCS, TERN_LIVEDOCS_VERSION, SEGID, body, blen),
                   TERN_OK);
  tern_livedocs *ld = NULL;
  int rc = tern_livedocs_read(&ld, nb, nlen, SEGID, max_doc, deleted);
  tern_livedocs_free(ld);
  free(nb);
  return rc;
}

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Well-formed bodies in a shape the cost rule would not pick are corrupt:
 * each set has exactly one encoding. */
static void test_shape_must_be_canonical(void **state) {
  (void)state;
  uint8_t body[16 + 8 * 300];
  /* 20 runs of 10 in 3000 docs: a directory (168 bytes) beats a runs set (208) */
  memset(body, 0, sizeof body);
  put32(body, 3000);
  put32(body + 4, 200);
  body[8] = 2;
  put32(body + 12, 20);
  for (uint32_t i = 0; i < 20; i++) put32(body + 16 + 8 * i, i * 100), put32(body + 20 + 8 * i, i * 100 + 9);
  assert_int_equal(read_body(body, 16 + 8 * 20, 3000, 200), TERN_ECORRUPT);
  /* 3 of those runs: a runs set is right */
  put32(body + 4, 30);
  put32(body + 12, 3);
  assert_int_equal(read_body(body, 16 + 8 * 3, 3000, 30), TERN_OK);
  /* touching runs are not maximal */
  put32(body + 16 + 8, 10);
  assert_int_equal(read_body(body, 16 + 8 * 3, 3000, 30), TERN_ECORRUPT);
  /* more runs than a runs set may hold */
  put32(body + 4, 300);
  put32(body + 12, 300);
  for (uint32_t i = 0; i < 300; i++) put32(body + 16 + 8 * i, i * 200000), put32(body + 20 + 8 * i, i * 200000);
  assert_int_equal(read_body(body, 16 + 8 * 300, 60000000, 300), TERN_ECORRUPT);
  /* one run 100..899 as a chunk record of runs: the runs set is smaller */
  memset(body, 0, sizeof body);
  put32(body, 3000);
  put32(body + 4, 800);
  body[8] = 0;
  put32(body + 12, 1);
  put32(body + 16, 0); /* chunk 0 */
  body[20] = 3;        /* runs */
  body[22] = 1;        /* one run */
  put32(body + 24, 800);
  put32(body + 28, 100u << 16 | 899u);
  assert_int_equal(read_body(body, 32, 3000, 800), TERN_ECORRUPT);
  /* 300 docs in 29 runs of 1000: chunk records of runs (16 + 12 + 4 x 29
   * = 144 bytes) tie the dense bitset (16 + 8 x 16): the tie is chunk
   * records, so the same docs as a dense body are not canonical (a
   * fuzzer's find: it read back, then rewrote as chunk records) */
  uint32_t docs[300], nd = 0;
  for (uint32_t r = 0; r < 29; r++)
    for (uint32_t q = 0; q < (r < 10 ? 11u : 10u); q++) docs[nd++] = r * 34 + q;
  assert_int_equal(nd, 300);
  tern_livedocs *empty, *set;
  assert_int_equal(tern_livedocs_new(&empty, 1000), TERN_OK);
  assert_int_equal(tern_livedocs_apply(&set, empty, docs, nd), TERN_OK);
  uint8_t *liv;
  size_t liv_len;
  assert_int_equal(tern_livedocs_write(set, SEGID, &liv, &liv_len), TERN_OK);
  assert_int_equal(liv[TERN_FRAME_HEADER_SIZE + 8], 0); /* chunk records */
  assert_int_equal(liv_len, 48 + 144);
  free(liv);
  tern_livedocs_free(set);
  tern_livedocs_free(empty);
  memset(body, 0, sizeof body);
  put32(body, 1000);
  put32(body + 4, 300);
  body[8] = 1; /* dense */
  put32(body + 12, 16);
  for (uint32_t i = 0; i < nd; i++) body[16 + docs[i] / 8] |= (uint8_t)(1u << (docs[i] % 8));
  assert_int_equal(read_body(body, 16 + 8 * 16, 1000, 300), TERN_ECORRUPT);
  /* an empty directory: the empty runs set is the encoding */
  memset(body, 0, sizeof body);
  put32(body, 3000);
  assert_int_equal(read_body(body, 16, 3000, 0), TERN_ECORRUPT);
  body[8] = 2;
  assert_int_equal(read_body(body, 16, 3000, 0), TERN_OK);
}

int main(void) {
  tu_seed();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_byte_flip_and_truncation),
      cmocka_unit_test(test_encode_in_place),
      cmocka_unit_test(test_wrong_identity),
      cmocka_unit_test(test_newer_version),
      cmocka_unit_test(test_malformed_bodies),
      cmocka_unit_test(test_layout_choice),
      cmocka_unit_test(test_shape_must_be_canonical),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
