/* SPDX-License-Identifier: MIT */
/*
 * test_stats_counters.c — tern_stats.counters, the process's totals a
 * service exports: gets counted exactly across threads (tern_get, each key
 * of tern_get_batch, tern_txn_get), commits, flushes and merges as they
 * are installed, reads and bytes, pages checked and the reads that found
 * their pages checked already.  Deltas between two tern_stats_get calls
 * against counts the test keeps itself.
 */
#include "tests/engine/enginetest.h"

#include <pthread.h>

enum { NDOCS = 2000, THREADS = 4, GETS_PER_THREAD = 5000 };

static tern_counters counters(tern_index *idx) {
  tern_stats *s;
  ET_OK(tern_stats_get(&s, idx));
  tern_counters c = s->counters;
  ET_OK(tern_stats_free(s));
  return c;
}

static size_t key_of(uint32_t i, char *buf) { return (size_t)sprintf(buf, "doc%06u", i); }

typedef struct getter {
  tern_snapshot *s;
  uint64_t salt;
} getter;

static void *get_many(void *arg) {
  getter *g = arg;
  tu_rng r;
  tu_rng_init(&r, g->salt);
  for (int i = 0; i < GETS_PER_THREAD; i++) {
    char k[16], v[64];
    size_t vlen;
    int rc = tern_get(g->s, k, key_of((uint32_t)tu_below(&r, 2 * NDOCS), k), v, sizeof v, &vlen);
    if (rc != TERN_OK && rc != TERN_NOTFOUND) return (void *)1;
  }
  return NULL;
}

static int ignore(void *payload, size_t i, int status, const void *val, size_t vlen) {
  (void)payload, (void)i, (void)status, (void)val, (void)vlen;
  return 0;
}

static void test_counters(void **state) {
  (void)state;
  char *dir = tu_tmpdir("stats-counters");
  tern_options o;
  ET_OK(tern_options_init(&o));
  o.write_buffer_bytes = 8 << 10;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o));
  tern_counters c0 = counters(idx);
  int commits = 0;
  for (uint32_t i = 0; i < NDOCS; i += 100) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, 0));
    for (uint32_t j = i; j < i + 100; j++) {
      char k[16];
      size_t kl = key_of(j, k);
      ET_OK(tern_put(t, k, kl, k, kl, NULL, 0));
    }
    ET_OK(tern_commit(t));
    commits++;
  }
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  char v[64];
  size_t vlen;
  ET_OK(tern_txn_get(t, "doc000001", 9, v, sizeof v, &vlen));
  ET_OK(tern_abort(t)); /* not a commit */
  tern_counters c1 = counters(idx);
  assert_int_equal(c1.commits - c0.commits, (uint64_t)commits);
  assert_true(c1.flushes > c0.flushes); /* 8 KiB buffer: foreground flushes */
  assert_int_equal(c1.gets - c0.gets, 1);

  ET_OK(tern_compact(idx));
  tern_counters c2 = counters(idx);
  assert_true(c2.merges > c1.merges);
  assert_int_equal(c2.commits, c1.commits);

  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  getter g[THREADS];
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) {
    g[i] = (getter){s, tu_seed() + (uint64_t)i};
    assert_int_equal(pthread_create(&th[i], NULL, get_many, &g[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) {
    void *ret;
    assert_int_equal(pthread_join(th[i], &ret), 0);
    assert_null(ret);
  }
  tern_slice keys[3] = {{"doc000001", 9}, {"doc000002", 9}, {"nope", 4}};
  ET_OK(tern_get_batch(s, keys, 3, ignore, NULL));
  tern_counters c3 = counters(idx);
  assert_int_equal(c3.gets - c2.gets, (uint64_t)THREADS * GETS_PER_THREAD + 3);
  assert_true(c3.reads > c2.reads);
  assert_true(c3.bytes_read > c2.bytes_read);
  assert_true(c3.cache_hits - c2.cache_hits <= c3.reads - c2.reads);
  assert_true(c3.cache_hits > c2.cache_hits); /* keys share blocks: most reads hit */
  ET_OK(tern_snapshot_close(s));

  ET_OK(tern_verify(idx));
  tern_counters c4 = counters(idx);
  assert_true(c4.pages_checked > c3.pages_checked); /* verify checks every page */
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counters),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
