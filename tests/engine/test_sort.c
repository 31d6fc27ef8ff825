/* SPDX-License-Identifier: MIT */
/*
 * test_sort.c — engine/util/sort.c against qsort with a stable tie-break, on
 * random keys with long shared prefixes, duplicates, embedded NULs and
 * keys that are prefixes of others; and tern_sort_u32 against qsort.
 */
#include "tests/common/testutil.h"

#include "engine/util/sort.h"
#include "tern.h"

#include <stdlib.h>
#include <string.h>

typedef struct rec {
  tern_keyref k;
  uint32_t orig;
} rec;

static int cmp_rec(const void *a, const void *b) {
  const rec *x = a, *y = b;
  size_t n = x->k.len < y->k.len ? x->k.len : y->k.len;
  int c = n ? memcmp(x->k.p, y->k.p, n) : 0;
  if (!c) c = (x->k.len > y->k.len) - (x->k.len < y->k.len);
  if (!c) c = (x->orig > y->orig) - (x->orig < y->orig);
  return c;
}

static void run(tu_rng *r, size_t n, int shape) {
  uint8_t *bytes = malloc(n * 40 + 1);
  rec *recs = malloc(n * sizeof *recs), *ref = malloc(n * sizeof *ref);
  uint32_t *perm = malloc(n * sizeof *perm);
  assert_true(bytes && recs && ref && perm);
  static const uint8_t alpha[3] = {0, 1, 0xff};
  for (size_t i = 0; i < n; i++) {
    uint8_t *p = bytes + i * 40;
    size_t len;
    switch (shape) {
    case 0: /* random lengths and bytes */
      len = (size_t)tu_below(r, 40);
      tu_fill(r, p, len);
      break;
    case 1: /* tiny alphabet: many duplicates and prefixes */
      len = (size_t)tu_below(r, 12);
      for (size_t k = 0; k < len; k++)
        p[k] = alpha[tu_below(r, 3)];
      break;
    default: /* long common prefix, then a number */
      len = 24 + (size_t)tu_below(r, 4);
      memset(p, 'p', 20);
      for (size_t k = 20; k < len; k++)
        p[k] = (uint8_t)('0' + tu_below(r, 10));
      break;
    }
    recs[i] = (rec){{p, (uint32_t)len, 0}, (uint32_t)i};
  }
  memcpy(ref, recs, n * sizeof *ref);
  qsort(ref, n, sizeof *ref, cmp_rec);
  int dups = -1, want_dups = 0;
  assert_int_equal(tern_sort_by_key(perm, recs, sizeof *recs, n, &dups), TERN_OK);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(perm[i], ref[i].orig);
  for (size_t i = 1; i < n; i++)
    want_dups |= ref[i].k.len == ref[i - 1].k.len &&
                 (ref[i].k.len == 0 || !memcmp(ref[i].k.p, ref[i - 1].k.p, ref[i].k.len));
  assert_int_equal(dups, want_dups);
  /* sorted input stays put */
  rec *sorted = malloc((n ? n : 1) * sizeof *sorted);
  for (size_t i = 0; i < n; i++)
    sorted[i] = recs[ref[i].orig];
  assert_int_equal(tern_sort_by_key(perm, sorted, sizeof *sorted, n, &dups), TERN_OK);
  assert_int_equal(dups, want_dups);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(perm[i], i);
  free(sorted);
  free(bytes);
  free(recs);
  free(ref);
  free(perm);
}

static void test_sort_keys(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 21);
  size_t sizes[] = {0, 1, 2, 3, 23, 24, 25, 100, 1000, 20000 * tu_scale()};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
    for (int shape = 0; shape < 3; shape++)
      run(&r, sizes[s], shape);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static void test_sort_u32(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 22);
  size_t sizes[] = {0, 1, 5, 24, 25, 300, 100000};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    size_t n = sizes[s];
    uint32_t *v = malloc((n ? n : 1) * 4), *w = malloc((n ? n : 1) * 4);
    for (size_t i = 0; i < n; i++)
      v[i] = (uint32_t)(tu_next(&r) >> (s % 2 ? 40 : 32));
    memcpy(w, v, n * 4);
    qsort(w, n, 4, cmp_u32);
    assert_int_equal(tern_sort_u32(v, n), TERN_OK);
    if (n) assert_memory_equal(v, w, n * 4);
    free(v);
    free(w);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sort_keys),
      cmocka_unit_test(test_sort_u32),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
