/* SPDX-License-Identifier: MIT */
/*
 * test_bulk.c — a large TERN_TXN_BULK transaction (past the size where
 * the segment writer gathers documents on a helper thread): random key
 * order, keys put twice (the later wins), deletions of keys put earlier
 * in the same transaction and of committed keys, secondary terms; every
 * key and every term checked afterwards against a reference.
 */
#include "tests/engine/enginetest.h"

#define N (100000u)
#define TERMS 7

static size_t key_of(uint32_t id, uint8_t *out) {
  /* ids scattered so the input order is not key order */
  uint32_t x = id * 2654435761u;
  out[0] = (uint8_t)(x >> 24);
  out[1] = (uint8_t)(x >> 16);
  out[2] = (uint8_t)(x >> 8);
  out[3] = (uint8_t)x;
  out[4] = (uint8_t)(id & 1);
  out[5] = 0;
  out[6] = 0xff;
  return 5 + id % 3;
}

/* Values of 4 bytes, of 300 (every 5th: chunks of the gatherer fill up)
 * and of 3000 (every 1000th: referenced, not copied). */
static size_t value_of(uint32_t id, uint32_t version, uint8_t *out) {
  size_t len = id % 1000 == 0 ? 3000 : id % 5 == 0 ? 300 : 4;
  for (size_t i = 0; i < len; i++)
    out[i] = (uint8_t)(id * 31 + version * 7 + i);
  return len;
}

static void test_big_bulk(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 61);
  char *dir = tu_tmpdir("bulk");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  uint32_t n = N * tu_scale();
  uint32_t *version = calloc(n, sizeof *version); /* 0: absent */
  uint8_t key[8], val[3000], got[3000];
  /* A committed first half, so the bulk also replaces and deletes segment docs. */
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
  for (uint32_t id = 0; id < n / 2; id++) {
    size_t vlen = value_of(id, 1, val);
    ET_OK(tern_put(t, key, key_of(id, key), val, vlen, NULL, 0));
    version[id] = 1;
  }
  ET_OK(tern_commit(t));
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
  for (uint32_t k = 0; k < n + n / 4; k++) {
    uint32_t id = (uint32_t)tu_below(&r, n);
    size_t klen = key_of(id, key);
    if (tu_below(&r, 10) == 0) {
      int rc = tern_delete(t, key, klen);
      assert_int_equal(rc, version[id] ? TERN_OK : TERN_NOTFOUND);
      version[id] = 0;
      continue;
    }
    uint32_t ver = version[id] + 2;
    size_t vlen = value_of(id, ver, val);
    uint8_t term = (uint8_t)(id % TERMS);
    tern_term tt = {"mod", &term, 1};
    ET_OK(tern_put(t, key, klen, val, vlen, &tt, 1));
    version[id] = ver;
  }
  ET_OK(tern_commit(t));
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  size_t live = 0, per_term[TERMS] = {0};
  for (uint32_t id = 0; id < n; id++) {
    size_t vlen;
    int rc = tern_get(s, key, key_of(id, key), got, sizeof got, &vlen);
    if (!version[id]) {
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    ET_OK(rc);
    size_t want = value_of(id, version[id], val);
    assert_int_equal(vlen, want);
    assert_memory_equal(got, val, want);
    live++;
    if (version[id] > 1) per_term[id % TERMS]++;
  }
  for (uint8_t term = 0; term < TERMS; term++) {
    tern_term tt = {"mod", &term, 1};
    tern_postings *p;
    ET_OK(tern_postings_open(&p, s, &tt, 1));
    size_t cnt = 0;
    uint64_t doc;
    for (;;) {
      ET_OK(tern_postings_next(p, &doc));
      if (doc == TERN_NO_MORE_DOCS) break;
      tern_slice k, v;
      ET_OK(tern_postings_doc(p, &k, &v));
      cnt++;
    }
    assert_int_equal(cnt, per_term[term]);
    tern_postings_close(p);
  }
  tern_snapshot_close(s);
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->docs, live);
  tern_stats_free(st);
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  free(version);
  free(dir);
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_big_bulk)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
