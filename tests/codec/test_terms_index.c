/*
 * test_terms_index.c — the resident terms index (codec/terms_index.c):
 * separators written and decoded, then find() of random keys checked
 * against a linear scan of the sorted separators, for key sets whose
 * separators tie on their first 8 and 16 bytes (paths, URLs), with
 * lengths on both sides of 8 and 16 and binary bytes, and keys that leave
 * the prefix all separators share (the index skips it).
 */
#include "tests/common/testutil.h"

#include "codec/terms_index.h"

#include <stdlib.h>
#include <string.h>

typedef struct key {
  uint8_t b[40];
  size_t len;
} key;

static int key_cmp(const key *x, const key *y) {
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->b, y->b, n);
  return c ? c : (x->len > y->len) - (x->len < y->len);
}
static int key_qcmp(const void *x, const void *y) { return key_cmp(x, y); }

/* A key over a 3-byte alphabet, the first `fixed` bytes the same for all:
 * ties on the first heads. */
static void random_key(tu_rng *r, key *k, size_t fixed) {
  k->len = 1 + (size_t)tu_below(r, sizeof k->b);
  for (size_t i = 0; i < k->len; i++)
    k->b[i] = i < fixed ? (uint8_t)'/' : (uint8_t)(tu_below(r, 3) == 0 ? 0 : 'a' + tu_below(r, 2));
}

static void check_find(size_t fixed) {
  tu_rng r;
  tu_rng_init(&r, 0x7E51 + fixed);
  size_t n = 200 + (size_t)tu_below(&r, 800);
  key *sep = calloc(n, sizeof *sep);
  assert_non_null(sep);
  for (size_t i = 0; i < n; i++) random_key(&r, &sep[i], fixed);
  qsort(sep, n, sizeof *sep, key_qcmp);
  size_t m = 0; /* unique, ascending; block 0's separator is empty */
  sep[m++].len = 0;
  for (size_t i = 1; i < n; i++)
    if (key_cmp(&sep[i], &sep[m - 1]) > 0) sep[m++] = sep[i];
  tern_bytebuf out = {0};
  for (size_t i = 0; i < m; i++)
    assert_int_equal(tern_terms_index_put(&out, i ? sep[i - 1].b : NULL, i ? sep[i - 1].len : 0,
                                          sep[i].b, sep[i].len, 1),
                     TERN_OK);
  tern_terms_index ix;
  const uint8_t *p = out.p;
  assert_int_equal(tern_terms_index_decode(&ix, &p, out.p + out.len, m, m, 1, "test"), TERN_OK);
  for (int t = 0; t < 5000; t++) {
    key k;
    random_key(&r, &k, fixed);
    if (t % 7 == 0) k = sep[tu_below(&r, m)]; /* exactly a separator */
    /* off the prefix every separator shares: below or above them all */
    if (t % 11 == 0 && fixed) k.b[tu_below(&r, fixed < k.len ? fixed : k.len)] = (uint8_t)tu_below(&r, 256);
    uint64_t want = 0; /* the last separator <= k */
    for (size_t b = 0; b < m; b++)
      if (key_cmp(&sep[b], &k) <= 0) want = b;
    assert_int_equal(tern_terms_index_find(&ix, k.b, k.len), want);
  }
  tern_terms_index_free(&ix);
  tern_bytebuf_free(&out);
  free(sep);
}

static void test_find_against_scan(void **state) {
  (void)state;
  const size_t fixed[] = {0, 5, 8, 12, 16, 20, 30};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) check_find(fixed[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_find_against_scan)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
