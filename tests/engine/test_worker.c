/* SPDX-License-Identifier: MIT */
/*
 * test_worker.c — flushes and merges in the background worker while the
 * caller keeps committing, and large plain transactions written as a
 * segment.
 *
 * The worker's file writes go through a file layer that sleeps on every
 * fsync made off the main thread, so that each flush and merge stays in
 * flight across many commits: puts replacing frozen keys, deletes of
 * frozen keys and of merge inputs' docs land between a segment's write
 * and its install.  Every check is against a reference model (id ->
 * value), keys binary with NULs, seeds printed.  TERN_TEST_SCALE
 * multiplies the commits.
 */
#include "tests/engine/enginetest.h"

#include "codec/io.h"
#include "engine/maint/worker.h"
#include "engine/util/counters.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define NIDS 160

static pthread_t g_main;
static atomic_int g_fail_writes; /* worker thread's writes fail with ENOSPC */
static atomic_ulong g_worker_syncs;

static int slow_fsync(int fd, int data_only) {
  if (!pthread_equal(pthread_self(), g_main)) {
    atomic_fetch_add(&g_worker_syncs, 1);
    struct timespec ts = {0, 300 * 1000};
    nanosleep(&ts, NULL);
  }
  return tern_io_system_vfs()->fsync(fd, data_only);
}

static ssize_t failing_write(int fd, const void *buf, size_t len) {
  if (atomic_load(&g_fail_writes) && !pthread_equal(pthread_self(), g_main)) {
    errno = ENOSPC;
    return -1;
  }
  return tern_io_system_vfs()->write(fd, buf, len);
}

static void install_vfs(void) {
  static tern_io_vfs v;
  v = *tern_io_system_vfs();
  v.fsync = slow_fsync;
  v.write = failing_write;
  g_main = pthread_self();
  tern_io_set_vfs(&v);
}

/* ------------------------------------------------------------ model */

typedef struct wmodel {
  uint32_t ver[NIDS]; /* 0: absent */
} wmodel;

static size_t value_of(uint32_t id, uint32_t ver, uint8_t *out) {
  size_t len = (id + ver) % 9 == 0 ? 80 + (id * 3 + ver) % 200 : 1 + (id + ver) % 24;
  for (size_t i = 0; i < len; i++)
    out[i] = (uint8_t)(id * 29 + ver * 13 + i);
  return len;
}

static void put_id(tern_txn *t, wmodel *m, uint32_t id, uint32_t ver) {
  uint8_t key[ET_KEY_MAX], val[512];
  size_t kl = et_key(id, 0x3017, key), vl = value_of(id, ver, val);
  uint8_t g = (uint8_t)(id % 5);
  tern_term term = {"g", &g, 1};
  ET_OK(tern_put(t, key, kl, val, vl, &term, 1));
  m->ver[id] = ver;
}

static void delete_id(tern_txn *t, wmodel *m, uint32_t id) {
  uint8_t key[ET_KEY_MAX];
  size_t kl = et_key(id, 0x3017, key);
  int rc = tern_delete(t, key, kl);
  if (rc != (m->ver[id] ? TERN_OK : TERN_NOTFOUND))
    fprintf(stderr, "delete %u: %d (model %u) %s\n", id, rc, m->ver[id], tern_errmsg());
  assert_int_equal(rc, m->ver[id] ? TERN_OK : TERN_NOTFOUND);
  m->ver[id] = 0;
}

/* Every id reads as the model says; postings of each group agree. */
static void check_snapshot(tern_snapshot *s, const wmodel *m) {
  uint8_t key[ET_KEY_MAX], got[512], want[512];
  size_t live[5] = {0};
  for (uint32_t id = 0; id < NIDS; id++) {
    size_t kl = et_key(id, 0x3017, key), vl;
    int rc = tern_get(s, key, kl, got, sizeof got, &vl);
    if (!m->ver[id]) {
      if (rc != TERN_NOTFOUND) fprintf(stderr, "id %u: %d, absent in the model\n", id, rc);
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    if (rc != TERN_OK) fprintf(stderr, "id %u: %d %s\n", id, rc, tern_errmsg());
    ET_OK(rc);
    size_t wl = value_of(id, m->ver[id], want);
    assert_int_equal(vl, wl);
    assert_memory_equal(got, want, wl);
    live[id % 5]++;
  }
  for (uint8_t g = 0; g < 5; g++) {
    tern_term term = {"g", &g, 1};
    tern_postings *p;
    ET_OK(tern_postings_open(&p, s, &term, 1));
    size_t n = 0;
    uint64_t doc;
    while (tern_postings_next(p, &doc) == TERN_OK && doc != TERN_NO_MORE_DOCS)
      n++;
    tern_postings_close(p);
    assert_int_equal(n, live[g]);
  }
}

static void check_index(tern_index *idx, const wmodel *m) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  check_snapshot(s, m);
  ET_OK(tern_snapshot_close(s));
}

static tern_index *open_small(const char *dir, uint64_t buffer) {
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = buffer;
  o.inline_value_max = 32;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  return idx;
}

/* ------------------------------------------------------------ tests */

/* Random commits over a small key space while the worker flushes and
 * merges: after each commit the index is the model, a snapshot held across
 * commits keeps its own, and after the barrier (tern_flush) the index is
 * sound and holds few segments. */
static void test_commits_during_background_work(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x3017);
  char *dir = tu_tmpdir("worker");
  tern_index *idx = open_small(dir, 1024 + tu_below(&r, 3072));
  wmodel m = {{0}}, held_m = {{0}};
  tern_snapshot *held = NULL;
  unsigned commits = 4000 * tu_scale(), ver = 1;
  unsigned long syncs0 = atomic_load(&g_worker_syncs);
  for (unsigned c = 0; c < commits; c++) {
    tern_txn *t;
    unsigned flags = tu_below(&r, 25) == 0 ? TERN_TXN_BULK : 0;
    ET_OK(tern_txn_begin(&t, idx, flags));
    wmodel next = m;
    size_t nops = 1 + tu_below(&r, tu_below(&r, 8) == 0 ? 40 : 4);
    for (size_t k = 0; k < nops; k++) {
      uint32_t id = (uint32_t)tu_below(&r, NIDS);
      if (tu_below(&r, 3) == 0)
        delete_id(t, &next, id);
      else
        put_id(t, &next, id, ver++);
    }
    int rc = tern_commit(t);
    if (rc != TERN_OK) fprintf(stderr, "commit %u: %d %s\n", c, rc, tern_errmsg());
    ET_OK(rc);
    m = next;
    if (c % 7 == 0) check_index(idx, &m);
    if (c % 150 == 0) {
      if (held) {
        check_snapshot(held, &held_m);
        ET_OK(tern_snapshot_close(held));
      }
      ET_OK(tern_snapshot_open(&held, idx));
      held_m = m;
    }
  }
  check_snapshot(held, &held_m);
  ET_OK(tern_snapshot_close(held));
  ET_OK(tern_flush(idx)); /* the barrier: the worker's work done, then the buffer */
  check_index(idx, &m);
  ET_OK(tern_verify(idx));
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->last_error, 0);
  assert_int_equal(st->buffered, 0);
  assert_true(st->nsegments < 20);
  fprintf(stderr, "[worker] %u commits, %zu segments at the end, %lu worker fsyncs\n", commits,
          st->nsegments, atomic_load(&g_worker_syncs) - syncs0);
  tern_stats_free(st);
  assert_true(atomic_load(&g_worker_syncs) > syncs0); /* the worker did the work */
  ET_OK(tern_close(idx));
  idx = open_small(dir, 4096);
  check_index(idx, &m);
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

/* Many one-document commits into a large buffer: commits merge only small
 * runs of the buffer view, the worker merges the older ones into one
 * (while commits go on); lookups and a held snapshot see the model. */
#define NBIG 6000
static void test_buffer_runs_merged_in_background(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x9a95);
  char *dir = tu_tmpdir("workerruns");
  tern_index *idx = open_small(dir, 64u << 20);
  uint32_t *ver = calloc(NBIG, sizeof *ver), *held_ver = calloc(NBIG, sizeof *held_ver);
  tern_snapshot *held = NULL;
  unsigned commits = 12000 * tu_scale();
  uint8_t key[ET_KEY_MAX], val[512], want[512];
  for (unsigned c = 1; c <= commits; c++) {
    uint32_t id = (uint32_t)tu_below(&r, NBIG);
    size_t kl = et_key(id, 0x9a95, key);
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, 0));
    if (ver[id] && tu_below(&r, 5) == 0) {
      ET_OK(tern_delete(t, key, kl));
      ver[id] = 0;
    } else {
      size_t vl = value_of(id, c, val);
      ET_OK(tern_put(t, key, kl, val, vl, NULL, 0));
      ver[id] = c;
    }
    ET_OK(tern_commit(t));
    if (c % 1000 == 0 || c == commits) {
      tern_snapshot *s;
      ET_OK(tern_snapshot_open(&s, idx));
      for (uint32_t i = 0; i < NBIG; i += 1 + (uint32_t)tu_below(&r, 7)) {
        size_t vl, kl2 = et_key(i, 0x9a95, key);
        int rc = tern_get(s, key, kl2, val, sizeof val, &vl);
        assert_int_equal(rc, ver[i] ? TERN_OK : TERN_NOTFOUND);
        if (ver[i]) {
          size_t wl = value_of(i, ver[i], want);
          assert_int_equal(vl, wl);
          assert_memory_equal(val, want, wl);
        }
      }
      ET_OK(tern_snapshot_close(s));
      if (held)
        for (uint32_t i = 0; i < NBIG; i += 1 + (uint32_t)tu_below(&r, 13)) {
          size_t vl, kl2 = et_key(i, 0x9a95, key);
          assert_int_equal(tern_get(held, key, kl2, val, sizeof val, &vl),
                           held_ver[i] ? TERN_OK : TERN_NOTFOUND);
        }
      if (held) ET_OK(tern_snapshot_close(held));
      ET_OK(tern_snapshot_open(&held, idx));
      memcpy(held_ver, ver, NBIG * sizeof *ver);
    }
  }
  ET_OK(tern_snapshot_close(held));
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->nsegments, 0); /* all of it in the buffer */
  tern_stats_free(st);
  /* Commits merge runs of up to TERN_MRUN_MERGE_MAX documents only (about
   * 400 runs of ~30 after 12,000 one-document commits): the runs left are
   * few because the worker merged groups of them. */
  tern_worker_wait(idx);
  tern_state *cur;
  ET_OK(tern_state_acquire(idx, 1, &cur));
  assert_non_null(cur->buffer);
  assert_true(cur->buffer->nruns <= 2 * TERN_WORKER_RUNS_MAX);
  tern_state_release(idx, cur);
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  free(ver);
  free(held_ver);
  tu_rmtree(dir);
  free(dir);
}

/* The buffer view's run count (1 when the worker settled it). */
static size_t buffer_runs(tern_index *idx) {
  tern_state *cur;
  ET_OK(tern_state_acquire(idx, 1, &cur));
  size_t n = cur->buffer ? cur->buffer->nruns : 0;
  tern_state_release(idx, cur);
  return n;
}

/* Kicks the worker `n` times back to back (the write lock held, as a
 * commit holds it), waiting for each kick's work before the next. */
static void kick_times(tern_index *idx, int n) {
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  for (int i = 0; i < n; i++) {
    tern_worker_nudge(idx);
    tern_worker_wait(idx);
  }
  ET_OK(tern_abort(t));
}

/* Commits c0 .. c0 + n - 1 of 200 random keys each (runs larger than
 * commits merge), pausing pause_ms after each; ver[id] is the commit
 * that wrote id last. */
static void commit_runs(tern_index *idx, tu_rng *r, uint32_t *ver, uint32_t c0, uint32_t n, int pause_ms) {
  uint8_t key[ET_KEY_MAX], val[512];
  for (uint32_t c = c0; c < c0 + n; c++) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, 0));
    for (int k = 0; k < 200; k++) {
      uint32_t id = (uint32_t)tu_below(r, NBIG);
      size_t kl = et_key(id, 0x5e77, key), vl = value_of(id, c, val);
      ET_OK(tern_put(t, key, kl, val, vl, NULL, 0));
      ver[id] = c;
    }
    ET_OK(tern_commit(t));
    struct timespec pause = {0, pause_ms * 1000L * 1000L};
    nanosleep(&pause, NULL);
  }
}

/* Waits up to 5 s (a linger is 50 ms) for the worker to settle the
 * buffer view's runs into one; the runs then. */
static size_t settled_runs(tern_index *idx) {
  size_t runs = 0;
  for (int waits = 0; waits < 500 && (runs = buffer_runs(idx)) > 1; waits++)
    usleep(10 * 1000);
  return runs;
}

/* Every key of the reference reads its latest value in snap. */
static void check_versions(tern_snapshot *snap, const uint32_t *ver) {
  uint8_t key[ET_KEY_MAX], val[512], want[512];
  for (uint32_t id = 0; id < NBIG; id++) {
    size_t vl, kl = et_key(id, 0x5e77, key);
    int rc = tern_get(snap, key, kl, val, sizeof val, &vl);
    assert_int_equal(rc, ver[id] ? TERN_OK : TERN_NOTFOUND);
    if (!ver[id]) continue;
    size_t wl = value_of(id, ver[id], want);
    assert_int_equal(vl, wl);
    assert_memory_equal(val, want, wl);
  }
}

/* Writes paused: the worker, its linger over, merges the buffer view's
 * runs into one (a get then tests one run, as after a reopen); a snapshot
 * held from before still reads what it saw, and every key reads its
 * latest value. */
static void test_buffer_runs_settled_when_idle(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x5e77);
  char *dir = tu_tmpdir("workersettle");
  tern_index *idx = open_small(dir, 64u << 20);
  uint32_t *ver = calloc(NBIG, sizeof *ver);
  commit_runs(idx, &r, ver, 1, 30, 0);
  tern_snapshot *held;
  ET_OK(tern_snapshot_open(&held, idx));
  assert_int_equal(settled_runs(idx), 1);
  tern_snapshot *now;
  ET_OK(tern_snapshot_open(&now, idx));
  check_versions(now, ver);
  check_versions(held, ver);
  ET_OK(tern_snapshot_close(now));
  ET_OK(tern_snapshot_close(held));
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  free(ver);
  tu_rmtree(dir);
  free(dir);
}

/* A sleeping worker is settled again by commits that find it asleep:
 * commits further apart than a linger (each settled, then the worker
 * asleep) and a burst after a long pause both end as one run, though no
 * commit gave the worker work.  (The worker once settled once per
 * linger and slept: the runs of every commit after that stayed until
 * work fell due, which a slow machine showed as a flaky test above.) */
static void test_sleeping_worker_settles_new_runs(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x5e78);
  char *dir = tu_tmpdir("workerstir");
  tern_index *idx = open_small(dir, 64u << 20);
  uint32_t *ver = calloc(NBIG, sizeof *ver);
  commit_runs(idx, &r, ver, 1, 1, 0);
  kick_times(idx, 1); /* the thread starts, lingers, sleeps */
  commit_runs(idx, &r, ver, 2, 4, 120); /* each past a linger */
  assert_int_equal(settled_runs(idx), 1);
  struct timespec pause = {0, 300 * 1000 * 1000};
  nanosleep(&pause, NULL);
  commit_runs(idx, &r, ver, 6, 5, 0);
  assert_int_equal(settled_runs(idx), 1);
  tern_snapshot *now;
  ET_OK(tern_snapshot_open(&now, idx));
  check_versions(now, ver);
  ET_OK(tern_snapshot_close(now));
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  free(ver);
  tu_rmtree(dir);
  free(dir);
}

/* A plain transaction larger than the write buffer (puts of new keys,
 * replaced buffered and segment keys, deletes of both, keys put then
 * deleted and put again) commits as a segment of its own; the buffered
 * keys it did not touch stay buffered. */
static void test_large_plain_transaction(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x5e61);
  char *dir = tu_tmpdir("spill");
  tern_index *idx;
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 1u << 20;
  o.inline_value_max = 32;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o));
  wmodel m = {{0}};
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK)); /* ids 0..59 in a segment */
  for (uint32_t id = 0; id < 60; id++)
    put_id(t, &m, id, 1);
  ET_OK(tern_commit(t));
  ET_OK(tern_txn_begin(&t, idx, 0)); /* ids 60..119 buffered */
  for (uint32_t id = 60; id < 120; id++)
    put_id(t, &m, id, 2);
  ET_OK(tern_commit(t));
  check_index(idx, &m);
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  size_t segs0 = st->nsegments;
  assert_int_equal(st->buffered, 60);
  tern_stats_free(st);
  /* Large: many versions of keys, far past write_buffer_bytes (1 MiB). */
  ET_OK(tern_txn_begin(&t, idx, 0));
  uint32_t ver = 3;
  for (unsigned k = 0; k < 12000; k++) {
    uint32_t id = (uint32_t)tu_below(&r, NIDS);
    if (id >= 90 && id < 120) continue; /* buffered keys left alone */
    if (tu_below(&r, 4) == 0)
      delete_id(t, &m, id);
    else
      put_id(t, &m, id, ver++);
  }
  for (uint32_t id = 0; id < 30; id++) /* put, deleted, put again */
    put_id(t, &m, id, ver++);
  for (uint32_t id = 0; id < 30; id++)
    delete_id(t, &m, id);
  for (uint32_t id = 0; id < 15; id++)
    put_id(t, &m, id, ver++);
  /* 40 KiB of values per document is far past 1 MiB in all. */
  uint8_t key[ET_KEY_MAX], *big = calloc(1, 40000);
  for (uint32_t id = 200; id < 260; id++) {
    size_t kl = et_key(id, 0x3017, key);
    ET_OK(tern_put(t, key, kl, big, 40000, NULL, 0));
  }
  ET_OK(tern_commit(t));
  check_index(idx, &m);
  ET_OK(tern_stats_get(&st, idx));
  assert_true(st->nsegments >= 1 && st->nsegments <= segs0 + 1);
  size_t untouched = 0;
  for (uint32_t id = 90; id < 120; id++)
    untouched += m.ver[id] != 0;
  assert_int_equal(st->buffered, untouched); /* only the buffered keys it left alone */
  tern_stats_free(st);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  for (uint32_t id = 200; id < 260; id++) {
    size_t kl = et_key(id, 0x3017, key), vl;
    uint8_t *got = malloc(40000);
    ET_OK(tern_get(s, key, kl, got, 40000, &vl));
    assert_int_equal(vl, 40000);
    assert_memory_equal(got, big, 40000);
    free(got);
  }
  ET_OK(tern_snapshot_close(s));
  free(big);
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

/* A flush failing in the worker: the commits go on and stay durable, the
 * failure shows in stats at once and as TERN_EPARTIAL from the next
 * commit (once); the buffer stays in the catalog, and tern_flush writes it
 * once the disk has room. */
static void test_background_failure(void **state) {
  (void)state;
  char *dir = tu_tmpdir("workerfail");
  tern_index *idx = open_small(dir, 2048);
  wmodel m = {{0}};
  atomic_store(&g_fail_writes, 1);
  uint32_t ver = 1;
  tern_stats *st = NULL;
  int rc = TERN_OK;
  char msg[512] = "";
  tern_txn *t;
  for (int round = 0; round < 100000 && rc == TERN_OK; round++) {
    ET_OK(tern_txn_begin(&t, idx, 0));
    put_id(t, &m, (uint32_t)round % NIDS, ver++);
    rc = tern_commit(t); /* TERN_EPARTIAL: the failure of an earlier commit's flush */
    snprintf(msg, sizeof msg, "%s", tern_errmsg());
    assert_true(rc == TERN_OK || rc == TERN_EPARTIAL);
    ET_OK(tern_stats_get(&st, idx));
    int failed = st->last_error != 0;
    if (failed) break;
    tern_stats_free(st);
    st = NULL;
  }
  assert_non_null(st);
  assert_int_equal(st->last_error, -ENOSPC);
  assert_non_null(strstr(st->last_error_msg, "No space"));
  tern_stats_free(st);
  if (rc == TERN_OK) { /* the failure came after that commit returned */
    ET_OK(tern_txn_begin(&t, idx, 0));
    put_id(t, &m, 0, ver++);
    rc = tern_commit(t);
    snprintf(msg, sizeof msg, "%s", tern_errmsg());
  }
  assert_int_equal(rc, TERN_EPARTIAL); /* reported once ... */
  assert_non_null(strstr(msg, "No space left on device"));
  ET_OK(tern_txn_begin(&t, idx, 0));
  put_id(t, &m, 1, ver++);
  rc = tern_commit(t); /* ... then retried after back-off (it may fail again) */
  assert_true(rc == TERN_OK || rc == TERN_EPARTIAL);
  check_index(idx, &m);
  atomic_store(&g_fail_writes, 0);
  /* The retry the last commit kicked may have failed too, after that
   * commit returned: then this flush, which succeeds, reports it. */
  rc = tern_flush(idx);
  assert_true(rc == TERN_OK || rc == TERN_EPARTIAL);
  if (rc == TERN_EPARTIAL) assert_non_null(strstr(tern_errmsg(), "No space left on device"));
  ET_OK(tern_flush(idx)); /* reported once */
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->buffered, 0);
  tern_stats_free(st);
  check_index(idx, &m);
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  idx = open_small(dir, 2048);
  check_index(idx, &m);
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

static unsigned long wakes(void) { return atomic_load(&tern_engine_count.worker_wakes); }

/* A worker that just finished lingers: kicks then only set a flag (no
 * futex wake in the committing thread); one asleep, after ~50 ms without
 * work, is woken by the next kick, and that kick's work is still done. */
static void test_lingering_worker_is_not_woken(void **state) {
  (void)state;
  char *dir = tu_tmpdir("workerlinger");
  tern_index *idx = open_small(dir, 64u << 20);
  uint8_t key[ET_KEY_MAX], val[512];
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  size_t kl = et_key(1, 0x11, key), vl = value_of(1, 1, val);
  ET_OK(tern_put(t, key, kl, val, vl, NULL, 0));
  ET_OK(tern_commit(t));
  kick_times(idx, 1); /* the thread starts (no wake) */
  unsigned long before = wakes();
  kick_times(idx, 200); /* each kick lands within the last work's linger */
  /* 0, but for a stall of the test thread past the whole linger once */
  assert_true(wakes() - before <= 1);
  struct timespec pause = {0, 300 * 1000 * 1000}; /* past the linger: asleep */
  nanosleep(&pause, NULL);
  before = wakes();
  kick_times(idx, 1);
  assert_int_equal(wakes() - before, 1);
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  et_prefer_tmpfs();
  install_vfs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_commits_during_background_work),
      cmocka_unit_test(test_buffer_runs_merged_in_background),
      cmocka_unit_test(test_buffer_runs_settled_when_idle),
      cmocka_unit_test(test_sleeping_worker_settles_new_runs),
      cmocka_unit_test(test_large_plain_transaction),
      cmocka_unit_test(test_background_failure),
      cmocka_unit_test(test_lingering_worker_is_not_woken),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
