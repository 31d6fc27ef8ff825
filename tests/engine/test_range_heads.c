/* SPDX-License-Identifier: MIT */
/*
 * test_range_heads.c — the range map's search tree (engine/state/
 * range_heads.h) against a textbook binary search over the same sorted heads:
 * every size from 1 to past 4 levels' worth (1, 2, 3 and 4 levels; full
 * and partial last nodes), heads drawn from a narrow range (many equal)
 * or the whole 64 bits, with 0 and UINT64_MAX among them; looked up at
 * every head, each head +-1, 0, UINT64_MAX and random values.
 */
#include "tests/common/testutil.h"

#include "engine/state/range_heads.h"
#include "tern.h"

#include <stdio.h>
#include <stdlib.h>

/* The textbook binary search: the first i with hi[i] >= head. */
static size_t lower_ref(const uint64_t *hi, size_t n, uint64_t head) {
  size_t lo = 0, len = n;
  while (len > 0) {
    size_t half = len / 2;
    if (hi[lo + half] < head) {
      lo += half + 1;
      len -= half + 1;
    } else {
      len = half;
    }
  }
  return lo;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static void check(const tern_range_heads *t, const uint64_t *hi, size_t n, uint64_t head) {
  size_t want = lower_ref(hi, n, head), got = tern_range_heads_lower(t, head);
  if (got != want)
    fail_msg("n %zu head %llu: got %zu, want %zu", n, (unsigned long long)head, got, want);
}

/* Heads for shape 0: narrow (many equal), 1: whole range, 2: all equal. */
static void make_heads(tu_rng *r, uint64_t *hi, size_t n, int shape) {
  for (size_t i = 0; i < n; i++)
    hi[i] = shape == 0 ? tu_below(r, n / 2 + 2) : shape == 1 ? tu_next(r) : 7;
  if (shape == 1 && n > 2) {
    hi[0] = 0;
    hi[1] = UINT64_MAX;
  }
  qsort(hi, n, sizeof *hi, cmp_u64);
}

static void run(tu_rng *r, size_t n, int shape) {
  uint64_t *hi = malloc(n * sizeof *hi);
  assert_non_null(hi);
  make_heads(r, hi, n, shape);
  tern_range_heads t;
  assert_int_equal(tern_range_heads_build(&t, hi, n), TERN_OK);
  assert_true(t.nlevels >= 1 && t.nlevels <= TERN_RANGE_LEVELS);
  check(&t, hi, n, 0);
  check(&t, hi, n, UINT64_MAX);
  for (size_t i = 0; i < n; i++) {
    check(&t, hi, n, hi[i]);
    check(&t, hi, n, hi[i] + 1);
    check(&t, hi, n, hi[i] - 1);
  }
  for (int k = 0; k < 200; k++)
    check(&t, hi, n, shape == 1 ? tu_next(r) : tu_below(r, n + 4));
  tern_range_heads_free(&t);
  assert_null(t.heads);
  free(hi);
}

static void test_lower_bound(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x4a11);
  for (size_t n = 1; n <= 600; n++)
    for (int shape = 0; shape < 3; shape++)
      run(&r, n, shape);
  /* 4 and 5 levels (8^3 < n), full and partial last nodes */
  size_t big[] = {4095, 4096, 4097, 32768, 32769 * tu_scale()};
  for (size_t i = 0; i < sizeof big / sizeof *big; i++)
    for (int shape = 0; shape < 3; shape++)
      run(&r, big[i], shape);
}

/* The levels the search reads: one node each, 2 for up to 64 ranges. */
static void test_levels(void **state) {
  (void)state;
  size_t sizes[] = {1, 8, 9, 64, 65, 512, 513};
  unsigned want[] = {1, 1, 2, 2, 3, 3, 4};
  uint64_t *hi = malloc(513 * sizeof *hi);
  assert_non_null(hi);
  for (size_t i = 0; i < 513; i++)
    hi[i] = 3 * i;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    tern_range_heads t;
    assert_int_equal(tern_range_heads_build(&t, hi, sizes[s]), TERN_OK);
    assert_int_equal(t.nlevels, want[s]);
    for (unsigned l = 0; l < t.nlevels; l++) /* every node a cache line */
      assert_int_equal((uintptr_t)(t.heads + t.level[l]) % 64, 0);
    tern_range_heads_free(&t);
  }
  free(hi);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lower_bound),
      cmocka_unit_test(test_levels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
