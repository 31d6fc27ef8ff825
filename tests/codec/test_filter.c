/* SPDX-License-Identifier: MIT */
/*
 * test_filter.c — the split-block Bloom filter: no false negatives on random
 * binary keys, the false-positive rate on 1M absent keys (printed; asserted
 * loosely), the body's bytes against the layout of docs/FORMAT.md
 * computed independently here, a filter built in steps equal to one built
 * at once, and corrupt bodies.
 */
#include "codec/filter.h"
#include "tern.h"
#include "tests/common/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Key i of a set: a tag byte (present / absent sets never meet), i, and
 * random bytes (NUL included) of random length. */
static size_t make_key(tu_rng *r, uint8_t *key, uint8_t tag, uint32_t i) {
  size_t len = 5 + tu_below(r, 40);
  key[0] = tag;
  memcpy(key + 1, &i, 4);
  tu_fill(r, key + 5, len - 5);
  return len;
}

/* The bit docs/FORMAT.md says key hash h sets in word i: read from the body's bytes. */
static int ref_bit_set(const uint8_t *body, uint64_t h, unsigned i) {
  static const uint32_t salt[8] = {0x47b6137bu, 0x44974d91u, 0x8824ad5bu, 0xa2b7289du,
                                   0x705495c7u, 0x2df1424bu, 0x9efc4947u, 0x5c6bfb31u};
  uint32_t nblocks = (uint32_t)body[4] | (uint32_t)body[5] << 8 | (uint32_t)body[6] << 16 |
                     (uint32_t)body[7] << 24;
  uint64_t block = ((h >> 32) * nblocks) >> 32;
  unsigned bit = (uint32_t)((uint32_t)h * salt[i]) >> 26;
  const uint8_t *word = body + TERN_FILTER_HEADER_SIZE + block * 64 + 8 * i;
  return word[bit / 8] >> (bit % 8) & 1;
}

static uint8_t *build(const uint64_t *h, size_t n, uint32_t bpk, size_t *len) {
  *len = tern_filter_body_size(n, bpk);
  assert_true(*len > 0);
  uint8_t *body = malloc(*len);
  assert_non_null(body);
  assert_int_equal(tern_filter_build(body, *len, h, n, bpk), 0);
  return body;
}

static void check_no_false_negatives(tu_rng *r, size_t n, uint32_t bpk) {
  uint64_t *h = malloc((n ? n : 1) * sizeof *h);
  uint8_t key[64];
  for (size_t i = 0; i < n; i++)
    h[i] = tern_filter_hash(key, make_key(r, key, 'P', (uint32_t)i));
  size_t len;
  uint8_t *body = build(h, n, bpk, &len);
  assert_int_equal(len, TERN_FILTER_HEADER_SIZE + 64 * (n * bpk > 0 ? (n * bpk + 511) / 512 : 1));
  tern_filter *f, *in_place;
  assert_int_equal(tern_filter_load(&f, body, len, "test"), 0);
  assert_true(tern_filter_memory(f) >= len - TERN_FILTER_HEADER_SIZE);
  /* probed where it lies: the same answers, no copy */
  assert_int_equal(tern_filter_open(&in_place, body, len, "test"), 0);
  assert_true(tern_filter_memory(in_place) < 64);
  for (size_t i = 0; i < 2000; i++) {
    uint64_t x = tu_next(r);
    assert_int_equal(tern_filter_may_contain(in_place, x), tern_filter_may_contain(f, x));
    /* a probe reads one 64-byte block, 64-aligned past the 32-byte frame
     * header: inside one 4 KiB page of the file */
    size_t off = tern_filter_block_offset(f, x);
    assert_true(off >= TERN_FILTER_HEADER_SIZE && off + 64 <= len);
    assert_int_equal((32 + off) % 64, 0);
  }
  assert_int_equal(tern_filter_nblocks_of(len), (len - TERN_FILTER_HEADER_SIZE) / 64);
  tern_filter_free(in_place);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(tern_filter_may_contain(f, h[i]), 1);
    for (unsigned w = 0; w < 8; w++)
      assert_true(ref_bit_set(body, h[i], w));
  }
  /* bits set: at most 8 per key, and exactly the keys' bits */
  size_t ones = 0;
  for (size_t i = 16; i < len; i++)
    ones += (size_t)__builtin_popcount(body[i]);
  assert_true(ones <= 8 * n);
  tern_filter_free(f);
  free(body);
  free(h);
}

static void test_no_false_negatives(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 1);
  static const size_t ns[] = {0, 1, 2, 51, 52, 1000, 100000};
  static const uint32_t bpks[] = {1, 5, 10, 16, 64};
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
    for (size_t b = 0; b < sizeof bpks / sizeof bpks[0]; b++)
      check_no_false_negatives(&r, ns[a], bpks[b]);
}

/* A filter built in steps (sized for more keys than it is given, the
 * hashes added in uneven chunks, as the engine's combined filter adds a
 * segment's keys) holds the same bytes as one built at once for the
 * same size. */
static void test_built_in_steps(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  tu_rng r;
  tu_rng_init(&r, seed);
  enum { N = 50000, BOUND = 60000 };
  uint64_t *h = malloc(BOUND * sizeof *h);
  assert_non_null(h);
  for (size_t i = 0; i < BOUND; i++)
    h[i] = tu_next(&r);
  size_t len = tern_filter_body_size(BOUND, 10);
  uint8_t *body = malloc(len), *steps = malloc(len);
  assert_non_null(body);
  assert_non_null(steps);
  /* at once: the N keys and BOUND - N repeats of the first (same bits) */
  for (size_t i = N; i < BOUND; i++)
    h[i] = h[0];
  assert_int_equal(tern_filter_build(body, len, h, BOUND, 10), TERN_OK);
  assert_int_equal(tern_filter_init(steps, len, BOUND, 10), TERN_OK);
  for (size_t at = 0; at < N;) {
    size_t n = 1 + (size_t)tu_below(&r, 5000);
    if (n > N - at) n = N - at;
    tern_filter_add(steps, h + at, n);
    at += n;
  }
  assert_memory_equal(body, steps, len);
  /* a body of the wrong size: refused, named */
  assert_int_equal(tern_filter_init(steps, len - 64, BOUND, 10), TERN_EINVAL);
  free(body);
  free(steps);
  free(h);
}

static void test_empty_and_one(void **state) {
  (void)state;
  size_t len;
  uint8_t *body = build(NULL, 0, 10, &len);
  assert_int_equal(len, TERN_FILTER_HEADER_SIZE + 64);
  tern_filter *f;
  assert_int_equal(tern_filter_load(&f, body, len, "empty"), 0);
  tu_rng r;
  tu_rng_init(&r, 2);
  for (int i = 0; i < 10000; i++)
    assert_int_equal(tern_filter_may_contain(f, tu_next(&r)), 0);
  tern_filter_free(f);
  free(body);

  uint64_t h = tern_filter_hash("k", 1);
  body = build(&h, 1, 10, &len);
  assert_int_equal(tern_filter_load(&f, body, len, "one"), 0);
  assert_int_equal(tern_filter_may_contain(f, h), 1);
  tern_filter_free(f);
  free(body);
  tern_filter_free(NULL);
}

/* The hash is part of the format: pinned. */
static void test_hash_pinned(void **state) {
  (void)state;
  assert_true(tern_filter_hash("", 0) == 0x2D06800538D394C2ull);
  assert_true(tern_filter_hash("a\0b", 3) == XXH3_64bits("a\0b", 3));
  uint64_t h = 0x0123456789abcdefull;
  size_t len;
  uint8_t *body = build(&h, 1, 10, &len);
  static const uint8_t header[16] = {1, 0, 0, 0, 1, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0};
  assert_memory_equal(body, header, 16);
  free(body);
}

static void test_false_positive_rate(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 3);
  static const uint32_t bpks[] = {10, 16};
  const size_t n = 200000, probes = 1000000;
  uint64_t *h = malloc(n * sizeof *h);
  uint8_t key[64];
  for (size_t i = 0; i < n; i++)
    h[i] = tern_filter_hash(key, make_key(&r, key, 'P', (uint32_t)i));
  for (size_t b = 0; b < 2; b++) {
    size_t len;
    uint8_t *body = build(h, n, bpks[b], &len);
    tern_filter *f;
    assert_int_equal(tern_filter_load(&f, body, len, "fpr"), 0);
    size_t fp = 0;
    for (size_t i = 0; i < probes; i++)
      fp += (size_t)tern_filter_may_contain(
          f, tern_filter_hash(key, make_key(&r, key, 'A', (uint32_t)i)));
    double rate = (double)fp / (double)probes;
    printf("[filter] %zu keys, %u bits/key (%zu bytes): %zu of %zu absent keys pass, FPR %.4f%%\n",
           n, bpks[b], len, fp, probes, 100.0 * rate);
    assert_true(rate <= (bpks[b] == 10 ? 0.02 : 0.004));
    assert_true(fp > 0); /* a filter that rejects everything would be wrong */
    tern_filter_free(f);
    free(body);
  }
  free(h);
}

static void expect_corrupt(const uint8_t *body, size_t len) {
  tern_filter *f = (tern_filter *)1;
  assert_int_equal(tern_filter_load(&f, body, len, "seg.flt"), TERN_ECORRUPT);
  assert_null(f);
  assert_non_null(strstr(tern_errmsg(), "seg.flt"));
}

static void test_corrupt_bodies(void **state) {
  (void)state;
  uint64_t h[3] = {1, 2, 3};
  size_t len;
  uint8_t *body = build(h, 3, 10, &len); /* one block */
  uint8_t *buf = malloc(len + 128);
  memcpy(buf, body, len);
  memset(buf + len, 0, 128);
  expect_corrupt(buf, 0);
  expect_corrupt(buf, 15);
  expect_corrupt(buf, 16);
  expect_corrupt(buf, TERN_FILTER_HEADER_SIZE);
  expect_corrupt(buf, len - 1);
  expect_corrupt(buf, len + 1);
  expect_corrupt(buf, len + 64);
  for (size_t at = 0; at < TERN_FILTER_HEADER_SIZE; at++) { /* every header byte matters (or must stay in range) */
    memcpy(buf, body, len);
    buf[at] ^= 0x40;
    tern_filter *f;
    int rc = tern_filter_load(&f, buf, len, "seg.flt");
    if (at >= 8 && at < 12 && rc == 0) { /* bits per key: informational, but in range */
      tern_filter_free(f);
      continue;
    }
    assert_int_equal(rc, TERN_ECORRUPT);
  }
  memcpy(buf, body, len);
  buf[8] = 0; /* bits per key 0 */
  expect_corrupt(buf, len);
  buf[8] = 65;
  expect_corrupt(buf, len);
  free(buf);
  free(body);

  /* the writer's own errors */
  uint8_t small[96];
  assert_int_equal(tern_filter_body_size(10, 0), 0);
  assert_int_equal(tern_filter_body_size(10, 65), 0);
  assert_int_equal(tern_filter_body_size(SIZE_MAX / 2, 64), 0);
  assert_int_equal(tern_filter_build(small, 96, h, 3, 0), TERN_EINVAL);
  assert_int_equal(tern_filter_build(small, 95, h, 3, 10), TERN_EINVAL);
  assert_int_equal(tern_filter_build(small, 96, h, 3, 10), 0);
  assert_int_equal(tern_filter_nblocks_of(95), 0);
  assert_int_equal(tern_filter_nblocks_of(TERN_FILTER_HEADER_SIZE - 1), 0);
}

int main(void) {
  tu_seed();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_false_negatives), cmocka_unit_test(test_empty_and_one),
      cmocka_unit_test(test_hash_pinned),        cmocka_unit_test(test_false_positive_rate),
      cmocka_unit_test(test_corrupt_bodies),     cmocka_unit_test(test_built_in_steps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
