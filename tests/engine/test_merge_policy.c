/* SPDX-License-Identifier: MIT */
/*
 * test_merge_policy.c — the merge policy (engine/maint/merge.c) as a
 * writer sees it: how many segments stay after each commit, against a
 * reference that knows only the rule's arithmetic.
 *
 * Each bulk commit makes one segment of PER documents (above the floor
 * of 1,000, so the similarity of sizes decides).  With a merge factor of
 * f, f equal segments become one of f times their size, so after k such
 * commits the segments left are the digits of k written in base f, summed
 * (a counter: a carry is a merge).  Also: segments of unequal sizes wait
 * for peers; the small ones (up to 1,000 documents) merge with each other
 * whatever their sizes; factor 0 never merges; factors 1 and 33 are
 * refused; version 2 options get the default; every key is read back
 * against a reference after each commit.
 */
#include "tests/engine/enginetest.h"

enum { PER = 1200, KLEN = 12 };

static size_t digit_sum(size_t k, size_t base) {
  size_t s = 0;
  for (; k; k /= base)
    s += k % base;
  return s;
}

static size_t key_of(uint32_t id, char *out) { return (size_t)sprintf(out, "k%010u", id); }

/* One bulk commit of keys [from, from + n): one segment. */
static void put_segment(tern_index *idx, uint32_t from, uint32_t n) {
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
  for (uint32_t id = from; id < from + n; id++) {
    char k[KLEN];
    size_t kl = key_of(id, k);
    ET_OK(tern_put(t, k, kl, &id, sizeof id, NULL, 0));
  }
  ET_OK(tern_commit(t));
}

/* Every key below `n` reads back its id, and key `n` is absent. */
static void check_keys(tern_index *idx, uint32_t n) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  for (uint32_t id = 0; id <= n; id++) {
    char k[KLEN];
    size_t kl = key_of(id, k), vlen;
    uint32_t v = UINT32_MAX;
    int rc = tern_get(s, k, kl, &v, sizeof v, &vlen);
    if (id == n) {
      assert_int_equal(rc, TERN_NOTFOUND);
    } else {
      assert_int_equal(rc, TERN_OK);
      assert_int_equal(v, id);
    }
  }
  ET_OK(tern_snapshot_close(s));
}

static tern_index *open_new(const char *name, uint32_t factor, char **dirp) {
  et_prefer_tmpfs();
  char *dir = tu_tmpdir(name);
  tern_options o = et_options_merging(factor);
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o));
  *dirp = dir;
  return idx;
}

static void close_and_remove(tern_index *idx, char *dir) {
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

/* Equal segments, commit after commit: the base-f digit sum. */
static void counts_follow_base(uint32_t factor, size_t commits) {
  char *dir;
  tern_index *idx = open_new("merge-base", factor, &dir);
  for (size_t k = 1; k <= commits; k++) {
    put_segment(idx, (uint32_t)((k - 1) * PER), PER);
    size_t want = factor ? digit_sum(k, factor) : k;
    if (et_segment_count(idx) != want)
      fail_msg("factor %u, after %zu commits: %zu segments, want %zu", factor, k,
               et_segment_count(idx), want);
    check_keys(idx, (uint32_t)(k * PER));
  }
  close_and_remove(idx, dir);
}

static void test_default_factor_four(void **state) {
  (void)state;
  counts_follow_base(4, 17); /* 16 = 100 in base 4: one segment of 19,200 */
}

static void test_other_factors(void **state) {
  (void)state;
  counts_follow_base(2, 9);
  counts_follow_base(3, 10);
  counts_follow_base(0, 6); /* never merged */
}

/* Sizes each over 1.5 times the mean of the smaller ones: no bucket of
 * four, so nothing merges; then three peers of the smallest make one. */
static void test_unequal_sizes_wait(void **state) {
  (void)state;
  char *dir;
  tern_index *idx = open_new("merge-unequal", 4, &dir);
  static const uint32_t sizes[] = {1100, 2000, 3500, 6000, 11000};
  uint32_t next = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    put_segment(idx, next, sizes[i]);
    next += sizes[i];
    assert_int_equal(et_segment_count(idx), i + 1);
  }
  for (size_t i = 0; i < 3; i++) { /* 1,100 x 4 (within 1.5 of their mean) */
    put_segment(idx, next, 1100);
    next += 1100;
  }
  assert_int_equal(et_segment_count(idx), 5 - 1 + 1); /* four merged into one of 4,400 */
  check_keys(idx, next);
  close_and_remove(idx, dir);
}

/* Up to 1,000 documents: one bucket whatever the sizes. */
static void test_small_segments_merge_together(void **state) {
  (void)state;
  char *dir;
  tern_index *idx = open_new("merge-small", 4, &dir);
  static const uint32_t sizes[] = {3, 900, 40, 1000};
  uint32_t next = 0;
  for (size_t i = 0; i < 4; i++) {
    put_segment(idx, next, sizes[i]);
    next += sizes[i];
    assert_int_equal(et_segment_count(idx), i < 3 ? i + 1 : 1);
  }
  check_keys(idx, next);
  close_and_remove(idx, dir);
}

static void test_factor_checked(void **state) {
  (void)state;
  et_prefer_tmpfs();
  char *dir = tu_tmpdir("merge-opts");
  tern_index *idx;
  tern_options o = et_options_merging(1);
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE, &o), TERN_EINVAL);
  assert_non_null(strstr(tern_errmsg(), "merge_factor"));
  o.merge_factor = 33;
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE, &o), TERN_EINVAL);
  o.merge_factor = 32;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  tern_options got;
  ET_OK(tern_get_options(idx, &got));
  assert_int_equal(got.merge_factor, 32);
  ET_OK(tern_close(idx));
  /* Not stored: a reopen with version 2 options (no such field) or none
   * gets the default; a bad factor on reopen is refused too. */
  o.version = 2;
  o.merge_factor = 1;
  ET_OK(tern_open(&idx, dir, 0, &o));
  ET_OK(tern_get_options(idx, &got));
  assert_int_equal(got.merge_factor, 4);
  ET_OK(tern_close(idx));
  ET_OK(tern_open(&idx, dir, 0, NULL));
  ET_OK(tern_get_options(idx, &got));
  assert_int_equal(got.merge_factor, 4);
  ET_OK(tern_close(idx));
  o.version = TERN_OPTIONS_VERSION;
  assert_int_equal(tern_open(&idx, dir, 0, &o), TERN_EINVAL);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_factor_four),
      cmocka_unit_test(test_other_factors),
      cmocka_unit_test(test_unequal_sizes_wait),
      cmocka_unit_test(test_small_segments_merge_together),
      cmocka_unit_test(test_factor_checked),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
