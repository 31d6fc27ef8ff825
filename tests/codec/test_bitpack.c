/* SPDX-License-Identifier: MIT */
/*
 * test_bitpack.c — bitpack.h against a one-bit-at-a-time reference packer
 * and unpacker: random widths 0..32, counts 0..128 (full blocks take the
 * specialised unpack path, others the generic one), values at the width's
 * maximum, and unpacking from a buffer of exactly the packed size (ASan
 * catches any read past it).
 */
#include "codec/bitpack.h"
#include "tests/common/testutil.h"

#include <stdlib.h>
#include <string.h>

/* Reference: value i, bit j goes to stream bit i*w + j. */
static void ref_pack(uint8_t *out, const uint32_t *v, uint32_t n, unsigned w) {
  memset(out, 0, tern_packed_size(n, w));
  for (uint32_t i = 0; i < n; i++)
    for (unsigned j = 0; j < w; j++)
      if (v[i] >> j & 1) {
        size_t bit = (size_t)i * w + j;
        out[bit / 8] |= (uint8_t)(1u << (bit % 8));
      }
}

static void ref_unpack(uint32_t *v, const uint8_t *in, uint32_t n, unsigned w) {
  for (uint32_t i = 0; i < n; i++) {
    uint32_t x = 0;
    for (unsigned j = 0; j < w; j++) {
      size_t bit = (size_t)i * w + j;
      x |= (uint32_t)(in[bit / 8] >> (bit % 8) & 1) << j;
    }
    v[i] = x;
  }
}

static uint32_t random_value(tu_rng *r, unsigned w) {
  if (w == 0) return 0;
  uint32_t max = w == 32 ? UINT32_MAX : (1u << w) - 1;
  switch (tu_below(r, 4)) {
  case 0: return max;
  case 1: return 0;
  default: return (uint32_t)tu_next(r) & max;
  }
}

/* Packs and unpacks n values of width w; compares with the reference. */
static void round_trip(tu_rng *r, uint32_t n, unsigned w) {
  uint32_t v[TERN_PACK_N], got[TERN_PACK_N];
  uint8_t ref[4 * TERN_PACK_N];
  for (uint32_t i = 0; i < n; i++)
    v[i] = random_value(r, w);
  const size_t size = tern_packed_size(n, w);
  /* exactly `size` bytes on the heap so ASan sees any overrun */
  uint8_t *packed = malloc(size ? size : 1);
  assert_non_null(packed);
  memset(packed, 0xA5, size);
  tern_pack(packed, v, n, w);
  ref_pack(ref, v, n, w);
  assert_memory_equal(packed, ref, size);
  memset(got, 0xEE, sizeof got);
  tern_unpack(got, packed, n, w);
  assert_memory_equal(got, v, n * sizeof *v);
  ref_unpack(got, packed, n, w);
  assert_memory_equal(got, v, n * sizeof *v);
  if (n > 0) assert_true(tern_pack_width(v, n) <= w);
  free(packed);
}

static void test_every_width_full_block(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 1);
  for (unsigned rep = 0; rep < 20 * tu_scale(); rep++)
    for (unsigned w = 0; w <= 32; w++)
      round_trip(&r, TERN_PACK_N, w);
}

static void test_random_counts_and_widths(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 2);
  for (unsigned rep = 0; rep < 5000 * tu_scale(); rep++)
    round_trip(&r, (uint32_t)tu_below(&r, TERN_PACK_N + 1), (unsigned)tu_below(&r, 33));
}

static void test_small_counts(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 3);
  for (uint32_t n = 0; n <= 9; n++)
    for (unsigned w = 0; w <= 32; w++)
      round_trip(&r, n, w);
}

static void test_width(void **state) {
  (void)state;
  uint32_t v[TERN_PACK_N] = {0};
  assert_int_equal(tern_pack_width(v, 0), 0);
  assert_int_equal(tern_pack_width(v, TERN_PACK_N), 0);
  for (unsigned w = 1; w <= 32; w++) {
    v[77] = 1u << (w - 1);
    assert_int_equal(tern_pack_width(v, TERN_PACK_N), w);
  }
  v[3] = UINT32_MAX;
  assert_int_equal(tern_pack_width(v, TERN_PACK_N), 32);
  assert_int_equal(tern_packed_size(128, 32), 512);
  assert_int_equal(tern_packed_size(3, 3), 2);
  assert_int_equal(tern_packed_size(0, 17), 0);
}

/* A value wider than w is cut to its low w bits, not spilled into its neighbours. */
static void test_pack_masks(void **state) {
  (void)state;
  uint32_t v[TERN_PACK_N], got[TERN_PACK_N];
  uint8_t packed[4 * TERN_PACK_N];
  for (unsigned w = 1; w < 32; w++) {
    for (uint32_t i = 0; i < TERN_PACK_N; i++)
      v[i] = UINT32_MAX - i;
    tern_pack(packed, v, TERN_PACK_N, w);
    tern_unpack(got, packed, TERN_PACK_N, w);
    for (uint32_t i = 0; i < TERN_PACK_N; i++)
      assert_int_equal(got[i], v[i] & ((1u << w) - 1));
  }
}

int main(void) {
  tu_seed();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_width_full_block),
      cmocka_unit_test(test_random_counts_and_widths),
      cmocka_unit_test(test_small_counts),
      cmocka_unit_test(test_width),
      cmocka_unit_test(test_pack_masks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
