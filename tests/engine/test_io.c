/* SPDX-License-Identifier: MIT */
/*
 * test_io.c — the read costs the engine promises, counted by the file
 * layer (codec/io.h): a get of a present key reads one terms block (doc id
 * pulsed, value inline); absent keys are rejected by the filter without
 * reading, but for its false positives; a batch of keys in one segment
 * reads each block once.
 */
#include "tests/engine/enginetest.h"

#include "codec/io.h"

#define N 20000u

static size_t key_of(uint32_t i, char *out) { return (size_t)sprintf(out, "user:%08u", i * 2); }

/* Checks key N-1-i's value: the batch's input order is reversed keys. */
static int batch_cb(void *payload, size_t i, int status, const void *val, size_t vlen) {
  size_t *calls = payload;
  char key[32];
  assert_int_equal(i, *calls);
  (*calls)++;
  assert_int_equal(status, TERN_OK);
  size_t klen = key_of((uint32_t)(N - 1 - i), key);
  assert_int_equal(vlen, klen);
  assert_memory_equal(val, key, klen);
  return 0;
}

/* The same counts whichever way segments are read (mapping or pread). */
static void check_read_counts(unsigned open_flags) {
  char *dir = tu_tmpdir("io");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  tern_txn *t;
  char key[32];
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
  for (uint32_t i = 0; i < N; i++) {
    size_t klen = key_of(i, key);
    ET_OK(tern_put(t, key, klen, key, klen, NULL, 0));
  }
  ET_OK(tern_commit(t));
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->nsegments, 1);
  uint64_t blocks = st->segments[0].bytes_terms / 4096 + 1;
  tern_stats_free(st);
  ET_OK(tern_close(idx));
  ET_OK(tern_open(&idx, dir, open_flags, NULL));
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  char buf[64];
  size_t vlen;
  tern_io_stats io;

  tern_io_reset_global_stats();
  for (uint32_t i = 0; i < N; i += 7) {
    ET_OK(tern_get(s, key, key_of(i, key), buf, sizeof buf, &vlen));
    assert_int_equal(vlen, key_of(i, key));
  }
  tern_io_global_stats(&io);
  assert_int_equal(io.reads, (N + 6) / 7); /* one block each */

  tern_io_reset_global_stats();
  uint32_t absent = 0;
  for (uint32_t i = 0; i < N; i += 3, absent++) {
    size_t klen = (size_t)sprintf(key, "user:%08u", i * 2 + 1);
    assert_int_equal(tern_get(s, key, klen, buf, sizeof buf, &vlen), TERN_NOTFOUND);
  }
  tern_io_global_stats(&io);
  fprintf(stderr, "[io] %llu reads for %u absent keys (filter false positives)\n",
          (unsigned long long)io.reads, absent);
  assert_true(io.reads <= absent / 20); /* 10 bits per key: ~1% */

  tern_slice *keys = malloc(N * sizeof *keys);
  char *kb = malloc(N * 16);
  for (uint32_t i = 0; i < N; i++) { /* reverse order: the batch sorts */
    size_t klen = key_of(N - 1 - i, kb + i * 16);
    keys[i] = (tern_slice){kb + i * 16, klen};
  }
  tern_io_reset_global_stats();
  size_t calls = 0;
  ET_OK(tern_get_batch(s, keys, N, batch_cb, &calls));
  assert_int_equal(calls, N);
  tern_io_global_stats(&io);
  fprintf(stderr, "[io] batch of %u keys: %llu reads, %llu terms blocks\n", N,
          (unsigned long long)io.reads, (unsigned long long)blocks);
  /* each block once; mapped and warm, the batch goes in chunks of 4,096
   * keys, each the way its index measured cheaper, and a chunk that goes
   * the other way than the one before takes the block at its start from
   * the mapping again (no I/O) */
  uint64_t chunks = (open_flags & TERN_PREAD) ? 0 : (N + 4095) / 4096;
  assert_true(io.reads <= blocks + chunks);
  assert_true(io.reads >= 1);
  free(keys);
  free(kb);
  tern_snapshot_close(s);
  ET_OK(tern_close(idx));
  free(dir);
}

static void test_read_counts_mapped(void **state) {
  (void)state;
  check_read_counts(0);
}

static void test_read_counts_pread(void **state) {
  (void)state;
  check_read_counts(TERN_PREAD);
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_read_counts_mapped),
                                     cmocka_unit_test(test_read_counts_pread)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
