/* SPDX-License-Identifier: MIT */
/* Varints, zig-zag and fixed-width little-endian coding against plain
 * arithmetic references, and hostile varint bytes. */
#include "codec/coding.h"
#include "tests/common/testutil.h"

static void test_fixed_width_is_little_endian(void **state) {
  (void)state;
  uint8_t b[8];
  tern_store64(b, 0x0102030405060708ull);
  for (int i = 0; i < 8; i++) assert_int_equal(b[i], 8 - i);
  assert_int_equal(tern_load64(b), 0x0102030405060708ull);
  assert_int_equal(tern_load32(b + 1), 0x04050607u);
  assert_int_equal(tern_load16(b + 3), 0x0405u);
}

static void test_varint_round_trip_random(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 1);
  uint8_t buf[TERN_VARINT64_MAX * 64];
  for (unsigned round = 0; round < 2000 * tu_scale(); round++) {
    uint64_t vals[64];
    size_t off = 0;
    for (int i = 0; i < 64; i++) {
      vals[i] = tu_next(&r) >> tu_below(&r, 64);
      size_t n = tern_put_varint(buf + off, vals[i]);
      assert_int_equal(n, tern_varint_len(vals[i]));
      off += n;
    }
    const uint8_t *p = buf, *end = buf + off;
    for (int i = 0; i < 64; i++) {
      uint64_t v;
      assert_int_equal(tern_get_varint(&p, end, &v), 0);
      assert_int_equal(v, vals[i]);
    }
    assert_ptr_equal(p, end);
  }
}

static void test_varint_edges(void **state) {
  (void)state;
  uint8_t buf[TERN_VARINT64_MAX];
  const uint64_t edges[] = {0, 1, 127, 128, 16383, 16384, UINT32_MAX, UINT64_MAX};
  for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
    size_t n = tern_put_varint(buf, edges[i]);
    const uint8_t *p = buf;
    uint64_t v;
    assert_int_equal(tern_get_varint(&p, buf + n, &v), 0);
    assert_int_equal(v, edges[i]);
    /* Every shorter prefix is an error, not a read past the end. */
    for (size_t k = 0; k < n; k++) {
      p = buf;
      assert_int_equal(tern_get_varint(&p, buf + k, &v), -1);
      assert_ptr_equal(p, buf);
    }
  }
  assert_int_equal(tern_put_varint(buf, UINT64_MAX), TERN_VARINT64_MAX);
}

static void test_varint_rejects_overflow(void **state) {
  (void)state;
  uint8_t over[11];
  memset(over, 0xff, sizeof over);
  const uint8_t *p = over;
  uint64_t v;
  assert_int_equal(tern_get_varint(&p, over + sizeof over, &v), -1);
  uint8_t ten[10];
  memset(ten, 0xff, 9);
  ten[9] = 0x02; /* bit 64 set */
  p = ten;
  assert_int_equal(tern_get_varint(&p, ten + 10, &v), -1);
}

static void test_zigzag_and_bitwidth(void **state) {
  (void)state;
  const int64_t vals[] = {0, -1, 1, -2, 2, INT64_MAX, INT64_MIN};
  for (size_t i = 0; i < sizeof vals / sizeof *vals; i++)
    assert_true(tern_unzigzag(tern_zigzag(vals[i])) == vals[i]);
  assert_int_equal(tern_zigzag(-1), 1);
  assert_int_equal(tern_zigzag(1), 2);
  assert_true(tern_zigzag(-2) == 3);
  assert_true(tern_zigzag(INT64_MAX) == UINT64_MAX - 1);
  assert_true(tern_zigzag(INT64_MIN) == UINT64_MAX);
  assert_int_equal(tern_bitwidth(0), 0);
  assert_int_equal(tern_bitwidth(1), 1);
  assert_int_equal(tern_bitwidth(255), 8);
  assert_int_equal(tern_bitwidth(256), 9);
  assert_int_equal(tern_bitwidth(UINT64_MAX), 64);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixed_width_is_little_endian),
      cmocka_unit_test(test_varint_round_trip_random),
      cmocka_unit_test(test_varint_edges),
      cmocka_unit_test(test_varint_rejects_overflow),
      cmocka_unit_test(test_zigzag_and_bitwidth),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
