/* SPDX-License-Identifier: MIT */
/*
 * test_io_queue.c — the read queue (codec/io.h, tern_rqueue) on each
 * backend: io_uring, the thread pool, synchronous pread.  Random page
 * ranges read through it are compared with the file's bytes; every read
 * counted once; pages checked on completion; a damaged page, a failed and
 * a short completion (through the table's read_done), io_uring refused
 * (its uring_init failing as seccomp would), and misuse; a whole file
 * loaded in order (tern_rfile_load) on each backend, with the same faults;
 * reads flushed to the device before a wait; a queue kept for reuse.
 */
#include "tests/common/testutil.h"

#include "codec/io.h"
#include "codec/status.h"

#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGES 200u
#define SEED 77u

/* --------------------------------------------------------- a test VFS */

static int refuse_uring;       /* errno uring_init fails with, 0: the system's */
static uint64_t done_calls, fail_at, short_at;
static int fail_err;

static int t_uring_init(unsigned entries, void *ring) {
  return refuse_uring ? -refuse_uring : tern_io_system_vfs()->uring_init(entries, ring);
}

static ssize_t t_read_done(int fd, void *buf, size_t len, off_t off, ssize_t res) {
  (void)fd, (void)buf, (void)len, (void)off;
  done_calls++;
  if (done_calls == fail_at) return -fail_err;
  if (done_calls == short_at && res > 0) return res / 2;
  return res;
}

static tern_io_vfs test_vfs;

static void use_test_vfs(void) {
  test_vfs = *tern_io_system_vfs();
  test_vfs.uring_init = t_uring_init;
  test_vfs.read_done = t_read_done;
  refuse_uring = 0;
  done_calls = fail_at = short_at = 0;
  fail_err = EIO;
  tern_io_set_vfs(&test_vfs);
}

/* -------------------------------------------------------------- a file */

static char *dir, *path;
static uint8_t *ref; /* the file's bytes */

static void write_file(void) {
  dir = tu_tmpdir("ioq");
  path = tu_path(dir, "f.pages");
  tern_wfile *w;
  assert_int_equal(tern_wfile_create(&w, path), TERN_OK);
  tu_rng r;
  tu_rng_init(&r, 1);
  uint8_t page[TERN_IO_PAGE];
  for (unsigned p = 0; p < PAGES; p++) {
    tu_fill(&r, page, sizeof page);
    assert_int_equal(tern_wfile_append_page(w, page, SEED), TERN_OK);
  }
  assert_int_equal(tern_wfile_commit(w), TERN_OK);
  size_t len;
  ref = tu_read_file(path, &len);
  assert_int_equal(len, (size_t)PAGES * TERN_IO_PAGE);
}

static void remove_file(void) {
  tu_rmtree(dir);
  free(dir);
  free(path);
  free(ref);
}

static tern_rfile *open_checked(tern_io_mode mode) {
  tern_rfile *f;
  assert_int_equal(tern_rfile_open(&f, path, mode), TERN_OK);
  assert_int_equal(tern_rfile_set_page_trailers(f, SEED), TERN_OK);
  return f;
}

/* ------------------------------------------------------------- the tests */

static tern_rqueue *open_queue(tern_rq_kind kind, unsigned depth) {
  tern_io_set_queue_kind(kind);
  tern_rqueue *q;
  assert_int_equal(tern_rqueue_open(&q, depth), TERN_OK);
  tern_rq_kind got = tern_rqueue_kind(q);
  if (kind == TERN_RQ_SYNC) assert_int_equal(got, TERN_RQ_SYNC);
  if (kind == TERN_RQ_THREADS) assert_int_equal(got, TERN_RQ_THREADS);
  if (kind == TERN_RQ_URING) assert_true(got == TERN_RQ_URING || got == TERN_RQ_THREADS);
  return q;
}

/* Random ranges of 1 to 8 pages, up to depth in flight, each compared as
 * it completes; reads counted one per submission. */
static void random_reads(tern_rq_kind kind, tern_io_mode mode, uint64_t salt) {
  tern_rfile *f = open_checked(mode);
  enum { DEPTH = 8, READS = 300 };
  tern_rqueue *q = open_queue(kind, DEPTH);
  tu_rng r;
  tu_rng_init(&r, salt);
  uint8_t *bufs[DEPTH];
  uint64_t offs[DEPTH];
  size_t lens[DEPTH] = {0}; /* 0: buffer i free (tag i not in flight) */
  for (int i = 0; i < DEPTH; i++) bufs[i] = malloc(8 * TERN_IO_PAGE);
  unsigned sent = 0, got = 0;
  while (got < READS) {
    for (unsigned i = 0; i < DEPTH && sent < READS; i++) {
      if (lens[i]) continue;
      uint64_t first = tu_below(&r, PAGES), n = 1 + tu_below(&r, 8);
      if (first + n > PAGES) n = PAGES - first;
      offs[i] = first * TERN_IO_PAGE;
      lens[i] = (size_t)n * TERN_IO_PAGE;
      assert_int_equal(tern_rqueue_submit(q, f, offs[i], lens[i], bufs[i], i), TERN_OK);
      sent++;
      if (tu_below(&r, 3) == 0) tern_rqueue_flush(q); /* sent now, taken at a later wait */
    }
    uint64_t tag;
    assert_int_equal(tern_rqueue_wait(q, &tag), TERN_OK);
    assert_true(tag < DEPTH);
    assert_memory_equal(bufs[tag], ref + offs[tag], lens[tag]);
    for (uint64_t off = offs[tag]; off < offs[tag] + lens[tag]; off += TERN_IO_PAGE)
      assert_true(tern_rfile_page_checked(f, off));
    lens[tag] = 0;
    got++;
  }
  uint64_t tag;
  assert_int_equal(tern_rqueue_wait(q, &tag), TERN_NOTFOUND);
  tern_io_stats st;
  tern_rfile_stats(f, &st);
  assert_int_equal(st.reads, READS);
  tern_rqueue_close(q);
  for (int i = 0; i < DEPTH; i++) free(bufs[i]);
  tern_rfile_close(f);
}

static void test_each_backend(void **state) {
  (void)state;
  write_file();
  static const tern_rq_kind kinds[] = {TERN_RQ_AUTO, TERN_RQ_URING, TERN_RQ_THREADS, TERN_RQ_SYNC};
  for (size_t k = 0; k < 4; k++) {
    random_reads(kinds[k], TERN_IO_MMAP, 10 + k);
    random_reads(kinds[k], TERN_IO_PREAD, 20 + k);
  }
  tern_io_set_queue_kind(TERN_RQ_AUTO);
  remove_file();
}

/* One read of `pages` pages at page `first`, its status. */
static int one_read(tern_rfile *f, tern_rq_kind kind, uint64_t first, uint64_t pages) {
  tern_rqueue *q = open_queue(kind, 2);
  uint8_t *buf = malloc(pages * TERN_IO_PAGE);
  assert_int_equal(tern_rqueue_submit(q, f, first * TERN_IO_PAGE, pages * TERN_IO_PAGE, buf, 7), TERN_OK);
  uint64_t tag = 0;
  int rc = tern_rqueue_wait(q, &tag);
  assert_int_equal(tag, 7);
  if (rc == TERN_OK) assert_memory_equal(buf, ref + first * TERN_IO_PAGE, pages * TERN_IO_PAGE);
  tern_rqueue_close(q);
  free(buf);
  return rc;
}

static void test_faults_and_damage(void **state) {
  (void)state;
  write_file();
  use_test_vfs();
  static const tern_rq_kind kinds[] = {TERN_RQ_URING, TERN_RQ_THREADS, TERN_RQ_SYNC};
  for (size_t k = 0; k < 3; k++) {
    /* a failed completion: its errno, the file named, nothing checked */
    tern_rfile *f = open_checked(TERN_IO_PREAD);
    done_calls = 0;
    fail_at = 1;
    assert_int_equal(one_read(f, kinds[k], 3, 2), -EIO);
    assert_non_null(strstr(tern_errmsg(), "f.pages"));
    assert_false(tern_rfile_page_checked(f, 3 * TERN_IO_PAGE));
    /* a short completion: finished by pread, right bytes */
    done_calls = 0;
    fail_at = 0;
    short_at = 1;
    assert_int_equal(one_read(f, kinds[k], 5, 4), TERN_OK);
    short_at = 0;
    tern_rfile_close(f);
  }
  /* io_uring refused (seccomp: EPERM; no kernel support: ENOSYS) */
  int errs[] = {EPERM, ENOSYS};
  for (int e = 0; e < 2; e++) {
    refuse_uring = errs[e];
    tern_io_set_queue_kind(TERN_RQ_AUTO);
    tern_rqueue *q;
    assert_int_equal(tern_rqueue_open(&q, 4), TERN_OK);
    assert_int_equal(tern_rqueue_kind(q), TERN_RQ_THREADS);
    tern_rqueue_close(q);
    tern_rfile *f = open_checked(TERN_IO_MMAP);
    assert_int_equal(one_read(f, TERN_RQ_AUTO, 0, 3), TERN_OK);
    tern_rfile_close(f);
  }
  refuse_uring = 0;
  tern_io_set_vfs(NULL);
  /* a damaged page: TERN_ECORRUPT naming the file, on every backend */
  uint8_t *bad = malloc((size_t)PAGES * TERN_IO_PAGE);
  memcpy(bad, ref, (size_t)PAGES * TERN_IO_PAGE);
  bad[9 * TERN_IO_PAGE + 100] ^= 1;
  tu_write_file(path, bad, (size_t)PAGES * TERN_IO_PAGE);
  free(bad);
  for (size_t k = 0; k < 3; k++) {
    tern_rfile *f = open_checked(TERN_IO_PREAD);
    assert_int_equal(one_read(f, kinds[k], 8, 3), TERN_ECORRUPT);
    assert_non_null(strstr(tern_errmsg(), "f.pages"));
    assert_int_equal(one_read(f, kinds[k], 11, 2), TERN_OK);
    tern_rfile_close(f);
  }
  tern_io_set_queue_kind(TERN_RQ_AUTO);
  remove_file();
}

static void test_misuse(void **state) {
  (void)state;
  write_file();
  tern_rfile *f = open_checked(TERN_IO_PREAD);
  tern_rqueue *q;
  assert_int_equal(tern_rqueue_open(&q, 0), TERN_EINVAL);
  assert_int_equal(tern_rqueue_open(&q, 1), TERN_OK);
  uint8_t *buf = malloc(2 * TERN_IO_PAGE);
  uint64_t tag;
  assert_int_equal(tern_rqueue_wait(q, &tag), TERN_NOTFOUND);
  assert_int_equal(tern_rqueue_submit(q, f, 100, TERN_IO_PAGE, buf, 0), TERN_EINVAL);
  assert_int_equal(tern_rqueue_submit(q, f, 0, 100, buf, 0), TERN_EINVAL);
  assert_int_equal(tern_rqueue_submit(q, f, (uint64_t)PAGES * TERN_IO_PAGE, TERN_IO_PAGE, buf, 0),
                   TERN_ECORRUPT);
  assert_int_equal(tern_rqueue_submit(q, f, 0, TERN_IO_PAGE, buf, 1), TERN_OK);
  assert_int_equal(tern_rqueue_submit(q, f, 0, TERN_IO_PAGE, buf + TERN_IO_PAGE, 2), TERN_EBUSY);
  tern_rqueue_close(q); /* with a read in flight */
  free(buf);
  tern_rfile_close(f);
  remove_file();
}

/* A queue kept between uses: reusable while idle, deep enough, and
 * with the backend asked for and the table of system calls unchanged;
 * reused, it reads right. */
static void test_reusable(void **state) {
  (void)state;
  write_file();
  tern_rfile *f = open_checked(TERN_IO_PREAD);
  tern_rqueue *q = open_queue(TERN_RQ_AUTO, 4);
  assert_true(tern_rqueue_reusable(q, 4));
  assert_true(tern_rqueue_reusable(q, 1));
  assert_false(tern_rqueue_reusable(q, 5));
  uint8_t *buf = malloc(TERN_IO_PAGE);
  assert_int_equal(tern_rqueue_submit(q, f, 3 * TERN_IO_PAGE, TERN_IO_PAGE, buf, 1), TERN_OK);
  assert_false(tern_rqueue_reusable(q, 1)); /* a read in flight */
  tern_rqueue_flush(q);
  assert_false(tern_rqueue_reusable(q, 1)); /* sent, not taken */
  uint64_t tag;
  assert_int_equal(tern_rqueue_wait(q, &tag), TERN_OK);
  assert_true(tern_rqueue_reusable(q, 1));
  tern_io_set_queue_kind(TERN_RQ_THREADS);
  assert_false(tern_rqueue_reusable(q, 1)); /* another backend asked for */
  tern_io_set_queue_kind(TERN_RQ_AUTO);
  assert_true(tern_rqueue_reusable(q, 1));
  use_test_vfs();
  assert_false(tern_rqueue_reusable(q, 1)); /* another table */
  tern_io_set_vfs(NULL);
  assert_true(tern_rqueue_reusable(q, 1));
  for (unsigned pg = 0; pg < PAGES; pg += 37) { /* reused: reads right */
    assert_int_equal(tern_rqueue_submit(q, f, pg * TERN_IO_PAGE, TERN_IO_PAGE, buf, pg), TERN_OK);
    assert_int_equal(tern_rqueue_wait(q, &tag), TERN_OK);
    assert_int_equal(tag, pg);
    assert_memory_equal(buf, ref + pg * TERN_IO_PAGE, TERN_IO_PAGE);
  }
  tern_rqueue_close(q);
  free(buf);
  tern_rfile_close(f);
  remove_file();
}

/* tern_rfile_load: every page read once (whole 512 KiB reads, the pages
 * checked before skipped), checked, counted; a failed or short completion
 * and a damaged page on each backend. */
static void test_load(void **state) {
  (void)state;
  write_file();
  use_test_vfs();
  static const tern_rq_kind kinds[] = {TERN_RQ_AUTO, TERN_RQ_URING, TERN_RQ_THREADS, TERN_RQ_SYNC};
  const uint64_t per_read = TERN_RQ_LOAD_MAX / TERN_IO_PAGE;
  for (size_t k = 0; k < 4; k++) {
    tern_io_set_queue_kind(kinds[k]);
    for (int mode = 0; mode < 2; mode++) {
      tern_rfile *f = open_checked(mode ? TERN_IO_PREAD : TERN_IO_MMAP);
      uint8_t page[TERN_IO_PAGE];
      const uint8_t *p;
      /* a page checked before: the load starts after it */
      assert_int_equal(tern_rfile_read(f, 0, TERN_IO_PAGE, page, &p), TERN_OK);
      tern_rfile_reset_stats(f);
      done_calls = 0;
      assert_int_equal(tern_rfile_load(f, 1 + (unsigned)k), TERN_OK);
      for (unsigned pg = 0; pg < PAGES; pg++) assert_true(tern_rfile_page_checked(f, pg * TERN_IO_PAGE));
      tern_io_stats st;
      tern_rfile_stats(f, &st);
      assert_int_equal(st.reads, (PAGES - 1 + per_read - 1) / per_read);
      assert_int_equal(st.bytes, (uint64_t)(PAGES - 1) * TERN_IO_PAGE);
      assert_int_equal(done_calls, st.reads);
      /* all checked: nothing more to read */
      assert_int_equal(tern_rfile_load(f, 2), TERN_OK);
      tern_rfile_stats(f, &st);
      assert_int_equal(st.reads, (PAGES - 1 + per_read - 1) / per_read);
      tern_rfile_close(f);
    }
    /* a failed completion: its errno, the file named; a short one: loaded */
    for (int fault = 0; fault < 2; fault++) {
      tern_rfile *f = open_checked(TERN_IO_PREAD);
      done_calls = 0;
      fail_at = fault == 0 ? 2 : 0;
      short_at = fault == 1 ? 1 : 0;
      int rc = tern_rfile_load(f, 2);
      if (fault == 0) {
        assert_int_equal(rc, -EIO);
        assert_non_null(strstr(tern_errmsg(), "f.pages"));
      } else {
        assert_int_equal(rc, TERN_OK);
        for (unsigned pg = 0; pg < PAGES; pg++) assert_true(tern_rfile_page_checked(f, pg * TERN_IO_PAGE));
      }
      fail_at = short_at = 0;
      tern_rfile_close(f);
    }
  }
  tern_io_set_vfs(NULL);
  /* a damaged page: TERN_ECORRUPT naming the file */
  uint8_t *bad = malloc((size_t)PAGES * TERN_IO_PAGE);
  memcpy(bad, ref, (size_t)PAGES * TERN_IO_PAGE);
  bad[150 * TERN_IO_PAGE + 7] ^= 4;
  tu_write_file(path, bad, (size_t)PAGES * TERN_IO_PAGE);
  free(bad);
  for (size_t k = 0; k < 4; k++) {
    tern_io_set_queue_kind(kinds[k]);
    tern_rfile *f = open_checked(TERN_IO_MMAP);
    assert_int_equal(tern_rfile_load(f, 4), TERN_ECORRUPT);
    assert_non_null(strstr(tern_errmsg(), "f.pages"));
    assert_false(tern_rfile_page_checked(f, 150 * TERN_IO_PAGE));
    tern_rfile_close(f);
  }
  tern_io_set_queue_kind(TERN_RQ_AUTO);
  remove_file();
}

int main(void) {
  tu_seed();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_each_backend),
      cmocka_unit_test(test_faults_and_damage),
      cmocka_unit_test(test_misuse),
      cmocka_unit_test(test_reusable),
      cmocka_unit_test(test_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
