/* SPDX-License-Identifier: MIT */
/*
 * test_keymap.c — engine/buffer/keymap.c against a reference (the latest op index
 * of each key, by linear search) on random keys with many repeats, empty
 * and 1,000-byte keys and shared prefixes, through several growths; half
 * the sets reuse the position of the lookup before them, as tern_delete does.
 * A built map (a buffer run's index) against its keys and keys it lacks,
 * at its load.  And the build of a large map: its slot pages are each faulted in once, by
 * a write (engine/util/zalloc.h: a read first would map the zero page, and
 * the write after it would flush the TLB of every CPU of the process).
 */
#include "tests/engine/enginetest.h"

#include "engine/buffer/keymap.h"
#include "engine/buffer/memseg.h"

#include <sys/resource.h>

enum { NDISTINCT = 3000, NOPS = 20000 };

static void test_keymap_against_reference(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x6b65796d);
  uint64_t salt = tu_next(&r);
  static uint8_t keys[NDISTINCT][ET_KEY_MAX];
  static size_t klens[NDISTINCT];
  for (uint32_t i = 0; i < NDISTINCT; i++)
    klens[i] = et_key(i, salt, keys[i]);
  klens[0] = 0; /* the empty key too */
  tern_mdoc *ops = malloc(NOPS * sizeof *ops);
  int64_t latest[NDISTINCT];
  for (size_t i = 0; i < NDISTINCT; i++)
    latest[i] = -1;
  tern_keymap m;
  tern_keymap_init(&m);
  for (uint32_t i = 0; i < NOPS; i++) {
    uint32_t id = (uint32_t)tu_below(&r, tu_below(&r, 4) ? 200 : NDISTINCT);
    ops[i] = (tern_mdoc){{keys[id], (uint32_t)klens[id], 0}, NULL};
    tern_keypos pos = TERN_KEYPOS_NONE;
    if (tu_below(&r, 2))
      assert_int_equal(tern_keymap_get(&m, ops, keys[id], klens[id], &pos), latest[id]);
    assert_int_equal(tern_keymap_set(&m, ops, i, pos), TERN_OK);
    latest[id] = i;
    if (i % 997 == 0)
      for (uint32_t k = 0; k < NDISTINCT; k++) {
        tern_keypos p;
        assert_int_equal(tern_keymap_get(&m, ops, keys[k], klens[k], &p), latest[k]);
      }
  }
  size_t distinct = 0;
  for (uint32_t k = 0; k < NDISTINCT; k++) {
    tern_keypos p;
    assert_int_equal(tern_keymap_get(&m, ops, keys[k], klens[k], &p), latest[k]);
    distinct += latest[k] >= 0;
  }
  assert_int_equal(m.n, distinct);
  tern_keymap_free(&m);
  free(ops);
}

static long minor_faults(void) {
  struct rusage ru;
  assert_int_equal(getrusage(RUSAGE_THREAD, &ru), 0);
  return ru.ru_minflt;
}

static void test_keymap_build_faults_each_page_once(void **state) {
  (void)state;
  if (TU_TSAN) skip(); /* its shadow memory faults several pages for each of ours */
  enum { N = 200000 }; /* 285,730 slots: 2.2 MiB, a mapping of its own */
  tern_mdoc *docs = malloc(N * sizeof *docs);
  uint8_t *keys = malloc((size_t)N * 8);
  assert_non_null(docs);
  assert_non_null(keys);
  for (uint32_t i = 0; i < N; i++) {
    uint64_t k = (uint64_t)i * 0x9E3779B97F4A7C15ull;
    memcpy(keys + 8 * (size_t)i, &k, 8);
    docs[i] = (tern_mdoc){{keys + 8 * (size_t)i, 8, 0}, NULL};
  }
  tern_keymap m;
  long before = minor_faults();
  assert_int_equal(tern_keymap_build(&m, docs, N), TERN_OK);
  long faults = minor_faults() - before;
  long pages = (long)(m.cap * sizeof *m.slot / 4096);
  print_message("keymap build: %ld minor faults for %ld slot pages\n", faults, pages);
  /* A read first would fault twice a page (the zero page, then its copy);
   * a sanitizer's shadow memory adds about a quarter. */
  assert_true(faults < pages + pages / 2);
  for (uint32_t i = 0; i < N; i += 997)
    assert_int_equal(
        tern_keymap_find(&m, docs, docs[i].key.p, 8, tern_filter_hash(docs[i].key.p, 8)),
        (int64_t)i);
  tern_keymap_free(&m);
  free(keys);
  free(docs);
}

/* A built map (a buffer run's index) of n unique keys, for sizes around
 * its small minimum and a large one: every key at its own index, keys it
 * lacks absent (the probe sequences wrap past the last slot), and its
 * slots loaded to TERN_KEYMAP_BUILT_LOAD percent, not left half empty. */
static void test_keymap_build_against_reference(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0x6275696c64);
  static const size_t sizes[] = {1, 2, 15, 16, 17, 64, 1000, 65536, 100003};
  for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
    size_t n = sizes[t];
    tern_mdoc *docs = malloc((n + 1000) * sizeof *docs);
    uint8_t *keys = malloc((n + 1000) * 12);
    assert_non_null(docs);
    assert_non_null(keys);
    for (size_t i = 0; i < n + 1000; i++) { /* 12 random bytes: unique but by chance */
      for (int b = 0; b < 12; b++) keys[12 * i + (size_t)b] = (uint8_t)tu_next(&r);
      memcpy(keys + 12 * i, &i, sizeof(uint32_t)); /* unique for sure */
      docs[i] = (tern_mdoc){{keys + 12 * i, 12, 0}, NULL};
    }
    tern_keymap m;
    assert_int_equal(tern_keymap_build(&m, docs, n), TERN_OK);
    assert_int_equal(m.n, n);
    assert_true(m.cap > n);
    assert_true(m.cap <= n * 100 / TERN_KEYMAP_BUILT_LOAD + 16);
    for (size_t i = 0; i < n + 1000; i++) {
      const uint8_t *k = docs[i].key.p;
      int64_t want = i < n ? (int64_t)i : -1; /* the last 1,000: not in the map */
      assert_int_equal(tern_keymap_find(&m, docs, k, 12, tern_filter_hash(k, 12)), want);
    }
    tern_keymap_free(&m);
    free(keys);
    free(docs);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_keymap_against_reference),
      cmocka_unit_test(test_keymap_build_against_reference),
      cmocka_unit_test(test_keymap_build_faults_each_page_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
