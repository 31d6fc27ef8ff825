/*
 * test_counts.c — the work a commit does, counted (engine/counters.h):
 * a one-document commit and the snapshot after it open no segment, read
 * the catalog once each and load neither a state nor the buffer from it
 * (the commit hands its state forward); a flush or bulk commit opens its
 * new segment exactly once.  Values are checked against a reference map on
 * random puts and deletes (seeded), so the handed-forward states are
 * right as well as cheap.
 */
#include "tests/engine/enginetest.h"

#include "engine/counters.h"

enum { NIDS = 400 };

typedef struct counts {
  unsigned long seg_opens, catalog_reads, state_loads, buffer_loads;
} counts;

static counts now(void) {
  return (counts){atomic_load(&tern_engine_count.seg_opens),
                  atomic_load(&tern_engine_count.catalog_reads),
                  atomic_load(&tern_engine_count.state_loads),
                  atomic_load(&tern_engine_count.buffer_loads)};
}

static tern_index *open_fresh(void) {
  et_prefer_tmpfs();
  char *dir = tu_tmpdir("counts");
  tern_options o;
  tern_options_init(&o);
  tern_index *idx;
  /* Merges inside the commits that make them due: the counters are the
   * process's, and a background merge would land in any window. */
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o), TERN_OK);
  free(dir);
  return idx;
}

static void check_all(tern_index *idx, const uint32_t *ver, uint64_t salt) {
  tern_snapshot *s;
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  for (uint32_t id = 0; id < NIDS; id++) {
    uint8_t key[ET_KEY_MAX];
    size_t klen = et_key(id, salt, key), vlen;
    uint32_t got;
    int rc = tern_get(s, key, klen, &got, sizeof got, &vlen);
    if (!ver[id]) {
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    assert_int_equal(rc, TERN_OK);
    assert_int_equal(vlen, sizeof got);
    assert_int_equal(got, ver[id]);
  }
  assert_int_equal(tern_snapshot_close(s), TERN_OK);
}

static void put_range(tern_index *idx, unsigned flags, uint32_t from, uint32_t to, uint32_t *ver,
                      uint64_t salt, uint32_t v) {
  tern_txn *t;
  assert_int_equal(tern_txn_begin(&t, idx, flags), TERN_OK);
  for (uint32_t id = from; id < to; id++) {
    uint8_t key[ET_KEY_MAX];
    size_t klen = et_key(id, salt, key);
    ver[id] = v;
    assert_int_equal(tern_put(t, key, klen, &v, sizeof v, NULL, 0), TERN_OK);
  }
  assert_int_equal(tern_commit(t), TERN_OK);
}

static void test_commit_counts(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x636f756e);
  uint64_t salt = tu_next(&r);
  uint32_t ver[NIDS] = {0}, clock = 1;
  int merges = 0;
  tern_index *idx = open_fresh();

  /* A bulk commit and a flush each open their new segment once: at the
   * next state, not to read back its id. */
  counts c0 = now();
  put_range(idx, TERN_TXN_BULK, 0, NIDS / 2, ver, salt, clock++);
  check_all(idx, ver, salt);
  assert_int_equal(now().seg_opens - c0.seg_opens, 1);
  put_range(idx, 0, NIDS / 2, 3 * NIDS / 4, ver, salt, clock++);
  c0 = now();
  assert_int_equal(tern_flush(idx), TERN_OK);
  check_all(idx, ver, salt);
  assert_int_equal(now().seg_opens - c0.seg_opens, 1);
  check_all(idx, ver, salt); /* the buffer view exists: commits extend it */

  for (int round = 0; round < 300; round++) {
    uint32_t id = (uint32_t)tu_below(&r, NIDS);
    uint8_t key[ET_KEY_MAX];
    size_t klen = et_key(id, salt, key);
    counts before = now();
    tern_txn *t;
    assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_OK);
    if (ver[id] && tu_below(&r, 3) == 0) { /* in a segment or the buffer */
      assert_int_equal(tern_delete(t, key, klen), TERN_OK);
      ver[id] = 0;
    } else {
      uint32_t v = clock++;
      assert_int_equal(tern_put(t, key, klen, &v, sizeof v, NULL, 0), TERN_OK);
      ver[id] = v;
    }
    assert_int_equal(tern_commit(t), TERN_OK);
    counts mid = now();
    tern_snapshot *s;
    assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
    counts after = now();
    uint32_t got;
    size_t vlen;
    int rc = tern_get(s, key, klen, &got, sizeof got, &vlen);
    assert_int_equal(rc, ver[id] ? TERN_OK : TERN_NOTFOUND);
    if (ver[id]) assert_int_equal(got, ver[id]);
    assert_int_equal(tern_snapshot_close(s), TERN_OK);
    if (mid.seg_opens != before.seg_opens) { /* the merge policy ran a merge */
      merges++;
      assert_int_equal(mid.seg_opens - before.seg_opens, 1); /* its output, once */
      assert_int_equal(mid.state_loads - before.state_loads, 1);
    } else { /* the commit: one catalog read (is the cached state current?) */
      assert_true(mid.catalog_reads - before.catalog_reads <= 1);
      assert_int_equal(mid.state_loads, before.state_loads);
      assert_int_equal(mid.buffer_loads, before.buffer_loads);
    }
    /* the snapshot: one read, no state or buffer built */
    assert_true(after.catalog_reads - mid.catalog_reads <= 1);
    assert_int_equal(after.seg_opens, mid.seg_opens);
    assert_int_equal(after.state_loads, mid.state_loads);
    assert_true(after.buffer_loads - mid.buffer_loads <= (mid.seg_opens != before.seg_opens));
    if (round % 50 == 49) check_all(idx, ver, salt);
  }
  assert_true(merges < 30); /* most rounds are plain commits */
  check_all(idx, ver, salt);
  assert_int_equal(tern_verify(idx), TERN_OK);
  assert_int_equal(tern_close(idx), TERN_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_commit_counts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
