/* SPDX-License-Identifier: MIT */
/*
 * test_batch_io.c — cold tern_get_batch through the read queue (engine/
 * batch.c): on every backend (io_uring, io_uring refused, the thread pool,
 * synchronous reads, read_depth 0) the answers of random batches (present,
 * absent and repeated keys, values inline and in .val, two segments
 * whose keys interleave, or two range-disjoint ones) are
 * those of a reference; a failed queued read gives its errno and no
 * answer, a short one the right answers (fault layer, faultfs.h); the
 * queue reads no terms block twice and no more reads than one block at a
 * time would; batches on one open index share its spare queue.
 */
#include "tests/engine/enginetest.h"
#include "tests/engine/faultfs.c"

#include "codec/io.h"
#include "engine/read/batch_load.h"

#include <cmocka.h>
#include <dirent.h>
#include <sys/vfs.h>

#define NKEYS 30000u /* keys 0, 2, 4, ...: present; odd ones absent */
#define BATCH_MAX 3000u
/* Keys a batch: 3000 is more than a key per block and per .val page of
 * each segment, so a cold batch loads the files whole and goes in order
 * (batch_load.c); 60 is fewer, so it sorts and reads the blocks it needs
 * in runs (batch.c).  Each test runs both. */
static size_t batch_n = BATCH_MAX; /* this test's */
static const size_t k_batches[] = {60, BATCH_MAX};

static size_t key_of(uint32_t i, char *out) { return (size_t)sprintf(out, "key:%08u", i); }

/* Value of key i: long (in .val) for every fifth one, else short (inline). */
static size_t val_of(uint32_t i, char *out) {
  size_t n = i % 5 == 0 ? 300 : 1 + i % 40;
  for (size_t k = 0; k < n; k++) out[k] = (char)('a' + (i * 7 + k) % 26);
  return n;
}

static char *dir;
static char last_err[512]; /* tern_errmsg() of the last cold_batch */

/* Two segments: even thousands first, then odd ones (keys interleave);
 * disjoint: the lower half of the keys first, then the upper (two
 * range-disjoint segments: the state's range map sends each key of a batch
 * to one of them). */
static void build(int disjoint) {
  dir = tu_tmpdir("batchio");
  tern_index *idx;
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 1u << 30; /* no flush until the bulk commits */
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o));
  char k[32], v[512];
  for (int part = 0; part < 2; part++) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
    for (uint32_t i = 0; i < NKEYS; i += 2)
      if ((disjoint ? (int)(i >= NKEYS / 2) : (int)((i / 1000) % 2)) == part)
        ET_OK(tern_put(t, k, key_of(i, k), v, val_of(i, v), NULL, 0));
    ET_OK(tern_commit(t));
  }
  ET_OK(tern_close(idx));
}

typedef struct check {
  const uint32_t *ids;
  size_t calls;
} check;

static int check_cb(void *payload, size_t i, int status, const void *val, size_t vlen) {
  check *c = payload;
  assert_int_equal(i, c->calls);
  c->calls++;
  uint32_t id = c->ids[i];
  if (id % 2 || id >= NKEYS) {
    assert_int_equal(status, TERN_NOTFOUND);
    return 0;
  }
  char v[512];
  assert_int_equal(status, TERN_OK);
  assert_int_equal(vlen, val_of(id, v));
  assert_memory_equal(val, v, vlen);
  return 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* A random batch: ids (any order, repeats, absent ones; sorted: ascending
 * and distinct, so keys come sorted) and their keys. */
static void random_batch(tu_rng *r, uint32_t *ids, tern_slice *keys, char *kb, int sorted) {
  for (size_t i = 0; i < batch_n; i++) ids[i] = (uint32_t)tu_below(r, NKEYS + 200);
  if (sorted) {
    qsort(ids, batch_n, sizeof *ids, cmp_u32);
    for (size_t i = 1; i < batch_n; i++)
      if (ids[i] <= ids[i - 1]) ids[i] = ids[i - 1] + 1;
  }
  for (size_t i = 0; i < batch_n; i++) keys[i] = (tern_slice){kb + i * 16, key_of(ids[i], kb + i * 16)};
}

/* Drops the index's files from the page cache: a batch whose terms are
 * all cached is answered in order, without the queue (batch.c). */
static void evict(void) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || !strncmp(e->d_name, "catalog", 7)) continue; /* segment files */
    char *p = tu_path(dir, e->d_name);
    tern_io_evict_path(p);
    free(p);
  }
  closedir(d);
}

/* A fresh open (nothing checked: every block cold), one batch; its status
 * and the reads it made. */
static unsigned open_flags = TERN_RDONLY; /* | TERN_PREAD for the copying mode */

static int cold_batch(uint32_t depth, const uint32_t *ids, const tern_slice *keys, tern_batch_fn fn,
                      tern_io_stats *io) {
  tern_index *idx;
  tern_options o;
  tern_options_init(&o);
  o.read_depth = depth;
  evict();
  ET_OK(tern_open(&idx, dir, open_flags, &o));
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  check c = {ids, 0};
  tern_io_reset_global_stats();
  int rc = tern_get_batch(s, keys, batch_n, fn, &c);
  snprintf(last_err, sizeof last_err, "%s", tern_errmsg());
  tern_io_global_stats(io);
  assert_int_equal(c.calls, rc == TERN_OK ? batch_n : 0); /* no answer after a failure */
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  return rc;
}

/* Bytes of the index's .tim and .val files. */
static uint64_t data_bytes(void) {
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  uint64_t b = 0;
  for (size_t i = 0; i < st->nsegments; i++) b += st->segments[i].bytes_terms + st->segments[i].bytes_values;
  assert_int_equal(st->nsegments, 2);
  tern_stats_free(st);
  ET_OK(tern_close(idx));
  return b;
}

static void backends_agree(int disjoint) {
  build(disjoint);
  uint64_t bytes = data_bytes();
  tu_rng r;
  tu_rng_init(&r, 25);
  uint32_t *ids = malloc(BATCH_MAX * sizeof *ids);
  tern_slice *keys = malloc(BATCH_MAX * sizeof *keys);
  char *kb = malloc(BATCH_MAX * 16);
  ff_install();
  for (int round = 0; round < 6; round++) {
    batch_n = k_batches[round % 2];
    random_batch(&r, ids, keys, kb, round >= 4); /* the last ones sorted: cold, they queue too */
    tern_io_stats one, io;
    /* read_depth 0: one block at a time, each once (the reference count) */
    assert_int_equal(cold_batch(0, ids, keys, check_cb, &one), TERN_OK);
    static const tern_rq_kind kinds[] = {TERN_RQ_AUTO, TERN_RQ_AUTO, TERN_RQ_THREADS, TERN_RQ_SYNC};
    for (int k = 0; k < 4; k++) {
      tern_io_set_queue_kind(kinds[k]);
      ff_refuse_uring(k == 1 ? EPERM : 0); /* seccomp's answer: the pool */
      uint64_t before = ff_count(FF_AREAD);
      assert_int_equal(cold_batch(32, ids, keys, check_cb, &io), TERN_OK);
      uint64_t queued = ff_count(FF_AREAD) - before;
      assert_true(queued > 0); /* it went through the queue */
      print_message("  batch %zu backend %d: %llu reads (%llu queued), %llu bytes (one at a time: "
                    "%llu reads)\n", batch_n, k, (unsigned long long)io.reads,
                    (unsigned long long)queued, (unsigned long long)io.bytes,
                    (unsigned long long)one.reads);
      if (batch_n < BATCH_MAX) {
        assert_true(io.reads <= one.reads); /* never a block twice, runs merge some */
        assert_true(io.bytes < bytes / 2);  /* the blocks needed, not the files */
      } else {
        /* loaded whole: each file in reads of up to 512 KiB, then every
         * key answered from the page cache (one counted read each, no I/O) */
        assert_true(queued <= bytes / TERN_RQ_LOAD_MAX + 4);
        assert_true(io.reads <= queued + 2 * batch_n);
        assert_true(io.bytes <= bytes + (io.reads - queued) * TERN_IO_PAGE);
      }
    }
    tern_io_set_queue_kind(TERN_RQ_AUTO);
    ff_refuse_uring(0);
    /* pread mode: blocks and values copied, never mapped (never loaded) */
    open_flags = TERN_RDONLY | TERN_PREAD;
    assert_int_equal(cold_batch(32, ids, keys, check_cb, &io), TERN_OK);
    assert_true(io.reads <= one.reads);
    open_flags = TERN_RDONLY;
  }
  ff_uninstall();
  free(ids);
  free(keys);
  free(kb);
  tu_rmtree(dir);
  free(dir);
}

static void test_backends_agree(void **state) {
  (void)state;
  backends_agree(0);
}

static void test_backends_agree_disjoint(void **state) {
  (void)state;
  backends_agree(1);
}

static void test_failed_and_short_reads(void **state) {
  (void)state;
  build(0);
  tu_rng r;
  tu_rng_init(&r, 26);
  uint32_t *ids = malloc(BATCH_MAX * sizeof *ids);
  tern_slice *keys = malloc(BATCH_MAX * sizeof *keys);
  char *kb = malloc(BATCH_MAX * 16);
  ff_install();
  static const tern_rq_kind kinds[] = {TERN_RQ_AUTO, TERN_RQ_THREADS, TERN_RQ_SYNC};
  for (int k = 0; k < 6; k++) {
    batch_n = k_batches[k / 3];
    random_batch(&r, ids, keys, kb, 0);
    tern_io_set_queue_kind(kinds[k % 3]);
    tern_io_stats io;
    uint64_t n;
    for (n = 1;; n += 1 + n / 4) {
      ff_reset();
      ff_fail_nth(FF_AREAD, n, EIO);
      int rc = cold_batch(32, ids, keys, check_cb, &io);
      if (!ff_fired()) {
        assert_int_equal(rc, TERN_OK);
        break;
      }
      assert_int_equal(rc, -EIO);
      assert_true(strstr(last_err, ".tim") || strstr(last_err, ".val")); /* the file named */
    }
    print_message("  batch %zu backend %d: failed the 1st to %lluth queued read\n", batch_n, k % 3,
                  (unsigned long long)n);
    for (n = 1; n < 40; n += 7) {
      ff_reset();
      ff_short_nth(n);
      assert_int_equal(cold_batch(32, ids, keys, check_cb, &io), TERN_OK);
    }
  }
  tern_io_set_queue_kind(TERN_RQ_AUTO);
  ff_uninstall();
  free(ids);
  free(keys);
  free(kb);
  tu_rmtree(dir);
  free(dir);
}

/* read_depth: 0 to 1024, per open, reported by tern_get_options. */
static void test_read_depth_option(void **state) {
  (void)state;
  build(0);
  tern_index *idx;
  tern_options o;
  tern_options_init(&o);
  assert_int_equal(o.read_depth, 32);
  o.read_depth = 1025;
  assert_int_equal(tern_open(&idx, dir, TERN_RDONLY, &o), TERN_EINVAL);
  assert_null(idx);
  o.read_depth = 7;
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, &o));
  tern_options got;
  ET_OK(tern_get_options(idx, &got));
  assert_int_equal(got.read_depth, 7);
  ET_OK(tern_close(idx));
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL)); /* not stored: the default again */
  ET_OK(tern_get_options(idx, &got));
  assert_int_equal(got.read_depth, 32);
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

/* Cold batches on one open index share its spare read queue (engine/read/
 * queue_spare.c): one io_uring set-up for them all while the backend
 * asked for stays, a new queue when it changes; the answers right on
 * each.  Each batch takes its keys from ids this open has not read yet,
 * so that it is cold (a block read once stays checked). */
static void test_spare_queue(void **state) {
  (void)state;
  build(0);
  ff_install();
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  tu_rng r;
  tu_rng_init(&r, 27);
  batch_n = 60;
  uint32_t ids[60];
  tern_slice keys[60];
  char kb[60 * 16];
  static const tern_rq_kind kinds[] = {TERN_RQ_AUTO,    TERN_RQ_AUTO, TERN_RQ_AUTO,
                                       TERN_RQ_THREADS, TERN_RQ_THREADS, TERN_RQ_SYNC,
                                       TERN_RQ_AUTO};
  enum { ROUNDS = sizeof kinds / sizeof *kinds, SPAN = NKEYS / ROUNDS };
  for (uint32_t round = 0; round < ROUNDS; round++) {
    tern_io_set_queue_kind(kinds[round]);
    for (size_t i = 0; i < batch_n; i++) {
      ids[i] = round * SPAN + (uint32_t)tu_below(&r, SPAN);
      keys[i] = (tern_slice){kb + i * 16, key_of(ids[i], kb + i * 16)};
    }
    evict();
    uint64_t inits = ff_uring_inits(), queued = ff_count(FF_AREAD);
    tern_snapshot *s;
    ET_OK(tern_snapshot_open(&s, idx));
    check c = {ids, 0};
    ET_OK(tern_get_batch(s, keys, batch_n, check_cb, &c));
    assert_int_equal(c.calls, batch_n);
    ET_OK(tern_snapshot_close(s));
    assert_true(ff_count(FF_AREAD) > queued); /* cold: through a queue */
    uint64_t setups = ff_uring_inits() - inits;
    if (kinds[round] != TERN_RQ_AUTO) assert_int_equal(setups, 0);
    else if (round > 0 && kinds[round - 1] == TERN_RQ_AUTO) assert_int_equal(setups, 0); /* kept */
    else assert_int_equal(setups, 1); /* one for the blocks and the values of both segments */
  }
  ET_OK(tern_close(idx));
  tern_io_set_queue_kind(TERN_RQ_AUTO);
  ff_uninstall();
  tu_rmtree(dir);
  free(dir);
}

/* When a cold batch loads its files whole (batch_load.c): with a key per
 * block and per value page of all the segments together — not of each
 * (keys spread over range-disjoint segments fall a share in each) — and
 * never with read_depth 0 or in pread mode. */
static void test_load_decision(void **state) {
  (void)state;
  build(0);
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  uint64_t sum = 0, each = 0; /* blocks + value pages: summed, and the most of one segment */
  for (size_t i = 0; i < st->nsegments; i++) {
    uint64_t b = tern_io_npages(st->segments[i].bytes_terms), p = tern_io_npages(st->segments[i].bytes_values);
    uint64_t most = b > p ? b : p;
    each = most > each ? most : each;
    sum += p; /* the value pages dominate here (every fifth value is 300 bytes) */
  }
  tern_stats_free(st);
  assert_true(each + 1 < sum);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  assert_int_equal(tern_batch_load(s, (size_t)each + 1), 0); /* enough for one segment: no */
  assert_int_equal(tern_batch_load(s, (size_t)sum), 1);      /* read whole now */
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  tern_options o;
  tern_options_init(&o);
  o.read_depth = 0;
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, &o));
  ET_OK(tern_snapshot_open(&s, idx));
  assert_int_equal(tern_batch_load(s, 1u << 30), 0); /* no queue: no load */
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  ET_OK(tern_open(&idx, dir, TERN_RDONLY | TERN_PREAD, NULL));
  ET_OK(tern_snapshot_open(&s, idx));
  assert_int_equal(tern_batch_load(s, 1u << 30), 0); /* not mapped: no load */
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  /* Not tmpfs: cold means out of the page cache here, and tmpfs files never
   * leave it.  /var/tmp is on disk by the FHS. */
  if (!getenv("TMPDIR") && access("/var/tmp", W_OK) == 0) setenv("TMPDIR", "/var/tmp", 0);
  struct statfs fs;
  const char *t = getenv("TMPDIR");
  if (statfs(t ? t : "/tmp", &fs) == 0 && fs.f_type == 0x01021994 /* TMPFS_MAGIC */) {
    print_message("TMPDIR is tmpfs: no cold reads to test\n");
    return 0;
  }
  tu_seed();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backends_agree),
      cmocka_unit_test(test_backends_agree_disjoint),
      cmocka_unit_test(test_failed_and_short_reads),
      cmocka_unit_test(test_read_depth_option),
      cmocka_unit_test(test_load_decision),
      cmocka_unit_test(test_spare_queue),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
