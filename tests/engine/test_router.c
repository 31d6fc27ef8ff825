/* SPDX-License-Identifier: MIT */
/*
 * test_router.c — engine/state/router.c against a reference (a sorted
 * array of hash -> value, repeats of one hash merged: their value if they
 * agree, else the escape): every built hash answers its value, for cell
 * widths 2, 4 and 8 (values up to the escape's), sets of 0 to 200,003 keys, hashes repeated with
 * equal and with different values, every key one hash; hashes not built answer a value the cells
 * can hold; the memory is 1.125 to 1.25 cells a key for large sets.
 */
#include "tests/engine/enginetest.h"

#include "engine/state/router.h"
#include "codec/status.h"

#include <stdlib.h>

typedef struct pair {
  uint64_t hash;
  uint8_t value;
} pair;

static int pair_cmp(const void *a, const void *b) {
  const pair *x = a, *y = b;
  return (x->hash > y->hash) - (x->hash < y->hash);
}

/* The reference: pairs sorted by hash, each hash once. */
static size_t reference(pair *p, size_t n, uint8_t escape) {
  qsort(p, n, sizeof *p, pair_cmp);
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    if (w && p[w - 1].hash == p[i].hash) {
      if (p[w - 1].value != p[i].value) p[w - 1].value = escape;
      continue;
    }
    p[w++] = p[i];
  }
  return w;
}

/* n keys of values < nvalues, a fraction `repeat` of them (in 1/1000s)
 * a copy of an earlier key's hash (half of those with another value). */
static void check_one(tu_rng *r, size_t n, uint32_t nvalues, unsigned repeat, uint32_t bits) {
  assert_true(bits == 2 || bits == 4 || bits == 8);
  uint8_t escape = (uint8_t)((1u << bits) - 1);
  assert_true(nvalues <= escape);
  uint64_t *hash = malloc((n ? n : 1) * sizeof *hash);
  uint8_t *value = malloc(n ? n : 1);
  pair *ref = malloc((n ? n : 1) * sizeof *ref);
  assert_true(hash && value && ref);
  for (size_t i = 0; i < n; i++) {
    hash[i] = tu_next(r);
    value[i] = (uint8_t)tu_below(r, nvalues);
    if (i && tu_below(r, 1000) < repeat) {
      size_t j = (size_t)tu_below(r, i);
      hash[i] = hash[j];
      if (tu_below(r, 2)) value[i] = value[j];
    }
    ref[i] = (pair){hash[i], value[i]};
  }
  size_t m = reference(ref, n, escape);
  tern_router rt;
  assert_int_equal(tern_router_build(&rt, hash, value, n, bits, NULL), TERN_OK);
  assert_int_equal(rt.bits, bits);
  /* 1.125 cells a key at least; at most 1.25 and three segments from
   * 100,000 keys (binary fuse sizes: more cells a key for fewer keys) */
  assert_int_equal(rt.bytes, ((size_t)rt.ncells * bits + 7) / 8);
  assert_true((size_t)rt.ncells >= n * 9 / 8);
  if (n >= 100000) assert_true((size_t)rt.ncells <= n * 5 / 4 + 3 * (size_t)rt.seglen);
  for (size_t i = 0; i < m; i++)
    if (tern_router_get(&rt, ref[i].hash) != ref[i].value)
      fail_msg("n %zu bits %u: key %zu of hash %llx answers %u, built with %u", n, bits, i,
               (unsigned long long)ref[i].hash, tern_router_get(&rt, ref[i].hash), ref[i].value);
  for (size_t i = 0; i < 1000; i++)
    assert_true(tern_router_get(&rt, tu_next(r)) <= escape);
  tern_router_free(&rt);
  assert_null(rt.cells);
  free(hash);
  free(value);
  free(ref);
}

static void test_router_against_reference(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  tu_rng r;
  tu_rng_init(&r, seed ^ 0x726f757465ull);
  static const size_t sizes[] = {0, 1, 2, 3, 7, 64, 1000, 10007, 200003};
  static const struct {
    uint32_t values, bits;
  } widths[] = {{1, 2}, {3, 2}, {4, 4}, {15, 4}, {9, 8}, {200, 8}, {254, 8}};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
    for (size_t v = 0; v < sizeof widths / sizeof *widths; v++) {
      check_one(&r, sizes[s], widths[v].values, 0, widths[v].bits);
      check_one(&r, sizes[s], widths[v].values, 50, widths[v].bits); /* 5% repeated hashes */
    }
  check_one(&r, 5000, 3, 900, 2); /* nearly every hash repeated */
}

/* Every key one hash: one entry, its value or the escape. */
static void test_router_one_hash(void **state) {
  (void)state;
  enum { N = 1000 };
  uint64_t hash[N];
  uint8_t value[N];
  for (uint32_t agree = 0; agree < 2; agree++) {
    for (size_t i = 0; i < N; i++) {
      hash[i] = 0x1234567890abcdefull;
      value[i] = agree ? 2 : (uint8_t)(i % 3);
    }
    tern_router rt;
    assert_int_equal(tern_router_build(&rt, hash, value, N, 2, NULL), TERN_OK);
    assert_int_equal(tern_router_get(&rt, 0x1234567890abcdefull), agree ? 2u : 3u);
    tern_router_free(&rt);
  }
}

static void test_router_refuses(void **state) {
  (void)state;
  uint64_t h = 1;
  uint8_t v = 0;
  tern_router rt;
  atomic_int stop = 1; /* a close under way */
  assert_int_equal(tern_router_build(&rt, &h, &v, 1, 2, &stop), TERN_ESTOPPED);
  assert_null(rt.cells);
  assert_int_equal(tern_router_build(&rt, &h, &v, 1, 3, NULL), TERN_EINVAL);
  assert_null(rt.cells);
  tern_clear_error();
  assert_int_equal(tern_router_bits_for(1), 2);
  assert_int_equal(tern_router_bits_for(2), 4);
  assert_int_equal(tern_router_bits_for(4), 4);
  assert_int_equal(tern_router_bits_for(5), 8);
  assert_int_equal(tern_router_bits_for(255), 8);
  assert_int_equal(tern_router_bits_for(256), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_router_against_reference),
      cmocka_unit_test(test_router_one_hash),
      cmocka_unit_test(test_router_refuses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
