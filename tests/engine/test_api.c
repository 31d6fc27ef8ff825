/* SPDX-License-Identifier: MIT */
/*
 * test_api.c — promises tern.h makes about the API as a whole: tern_errmsg()
 * is "" after every call that succeeds or finds nothing; a second handle in
 * one process is told the truth about the write lock; map_size grows when an
 * index is reopened with a larger one, which is TERN_EFULL's remedy; stats
 * count the catalog file, and tern_compact shrinks it.
 */
#include "tests/engine/enginetest.h"

#include "engine/util/counters.h"

#include <sys/stat.h>
#include <sys/wait.h>

/* Leaves a message behind: a failed open of a directory that is not there. */
static void leave_message(void) {
  tern_index *none;
  assert_int_equal(tern_open(&none, "/nonexistent/tern-api-test", 0, NULL), TERN_ENOTINDEX);
  assert_true(tern_errmsg()[0] != '\0');
}

/* Runs `expr` after a failure left a message, expects `want`, and checks that
 * the message is gone. */
#define CLEARS(want, expr)                                                                         \
  do {                                                                                             \
    leave_message();                                                                               \
    int rc_ = (expr);                                                                              \
    if (rc_ != (want)) fprintf(stderr, "%s: %d (%s)\n", #expr, rc_, tern_errmsg());                \
    assert_int_equal(rc_, (want));                                                                 \
    assert_string_equal(tern_errmsg(), "");                                                        \
  } while (0)

static int count_batch(void *payload, size_t i, int status, const void *val, size_t vlen) {
  (void)i, (void)val, (void)vlen;
  if (status == TERN_OK) ++*(int *)payload;
  return 0;
}

static void test_errmsg_cleared_on_success(void **state) {
  (void)state;
  char *dir = tu_tmpdir("errmsg");
  tern_index *idx;
  tern_txn *t;
  tern_snapshot *s;
  tern_postings *p;
  tern_stats *st;
  tern_options o;
  CLEARS(TERN_OK, tern_options_init(&o));
  CLEARS(TERN_OK, tern_open(&idx, dir, TERN_CREATE, NULL));
  CLEARS(TERN_OK, tern_get_options(idx, &o));
  CLEARS(TERN_OK, tern_txn_begin(&t, idx, 0));
  tern_term term = {"color", "red", 3};
  CLEARS(TERN_OK, tern_put(t, "a", 1, "1", 1, &term, 1));
  CLEARS(TERN_OK, tern_put(t, "b", 1, "2", 1, &term, 1));
  CLEARS(TERN_NOTFOUND, tern_delete(t, "zz", 2));
  CLEARS(TERN_OK, tern_delete(t, "b", 1));
  CLEARS(TERN_OK, tern_commit(t));
  CLEARS(TERN_OK, tern_txn_begin(&t, idx, 0));
  CLEARS(TERN_OK, tern_abort(t));
  CLEARS(TERN_OK, tern_flush(idx));
  CLEARS(TERN_OK, tern_snapshot_open(&s, idx));
  char buf[8];
  size_t n;
  CLEARS(TERN_OK, tern_get(s, "a", 1, buf, sizeof buf, &n));
  CLEARS(TERN_NOTFOUND, tern_get(s, "b", 1, buf, sizeof buf, &n));
  CLEARS(TERN_NOTFOUND, tern_get(s, "nope", 4, buf, sizeof buf, &n));
  tern_slice keys[2] = {{"a", 1}, {"nope", 4}};
  int found = 0;
  CLEARS(TERN_OK, tern_get_batch(s, keys, 2, count_batch, &found));
  assert_int_equal(found, 1);
  CLEARS(TERN_OK, tern_postings_open(&p, s, &term, 1));
  uint64_t doc;
  CLEARS(TERN_OK, tern_postings_next(p, &doc));
  tern_slice k, v;
  CLEARS(TERN_OK, tern_postings_doc(p, &k, &v));
  assert_int_equal(k.len, 1);
  CLEARS(TERN_OK, tern_postings_next(p, &doc));
  assert_true(doc == TERN_NO_MORE_DOCS);
  CLEARS(TERN_OK, tern_postings_close(p));
  CLEARS(TERN_OK, tern_snapshot_close(s));
  CLEARS(TERN_OK, tern_stats_get(&st, idx));
  CLEARS(TERN_OK, tern_stats_free(st));
  CLEARS(TERN_OK, tern_verify(idx));
  CLEARS(TERN_OK, tern_compact(idx));
  CLEARS(TERN_OK, tern_close(idx));
  free(dir);
}

/* Two handles on one directory in one process: the second writer is told
 * that this process holds the lock; a forked child is told another process
 * does. */
static void test_second_handle_message(void **state) {
  (void)state;
  char *dir = tu_tmpdir("twohandles");
  tern_index *a, *b;
  ET_OK(tern_open(&a, dir, TERN_CREATE, NULL));
  ET_OK(tern_open(&b, dir, 0, NULL));
  tern_txn *ta, *tb = NULL;
  ET_OK(tern_txn_begin(&ta, a, 0));
  assert_int_equal(tern_txn_begin(&tb, b, 0), TERN_EBUSY);
  assert_null(strstr(tern_errmsg(), "another process"));
  assert_non_null(strstr(tern_errmsg(), "this process"));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    tern_index *c;
    tern_txn *tc;
    if (tern_open(&c, dir, 0, NULL) != TERN_OK) _exit(2);
    if (tern_txn_begin(&tc, c, 0) != TERN_EBUSY) _exit(3);
    _exit(strstr(tern_errmsg(), "another process") ? 0 : 4);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  ET_OK(tern_abort(ta));
  ET_OK(tern_txn_begin(&tb, b, 0)); /* free again */
  ET_OK(tern_abort(tb));
  ET_OK(tern_close(b));
  ET_OK(tern_close(a));
  free(dir);
}

/* Puts documents of `vlen`-byte values in commits of 16 until a commit
 * fails; returns that status and the number of documents committed. */
static int fill(tern_index *idx, uint32_t from, uint32_t upto, size_t vlen, uint32_t *done) {
  uint8_t *val = calloc(1, vlen);
  assert_non_null(val);
  int rc = TERN_OK;
  uint32_t id = from;
  while (rc == TERN_OK && id < upto) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, 0));
    for (int i = 0; i < 16 && rc == TERN_OK; i++, id++) {
      uint8_t key[ET_KEY_MAX];
      memset(val, (int)(id & 0xff), vlen);
      rc = tern_put(t, key, et_key(id, 7, key), val, vlen, NULL, 0);
    }
    if (rc == TERN_OK) rc = tern_commit(t);
    else tern_abort(t);
    if (rc == TERN_OK) *done = id;
  }
  free(val);
  return rc;
}

static void check_docs(tern_index *idx, uint32_t n, size_t vlen) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  uint8_t *buf = malloc(vlen);
  for (uint32_t id = 0; id < n; id++) {
    uint8_t key[ET_KEY_MAX];
    size_t got;
    ET_OK(tern_get(s, key, et_key(id, 7, key), buf, vlen, &got));
    assert_int_equal(got, vlen);
    assert_int_equal(buf[0], id & 0xff);
    assert_int_equal(buf[vlen - 1], id & 0xff);
  }
  free(buf);
  ET_OK(tern_snapshot_close(s));
}

/* A 1 MiB map filled with buffered writes (write buffer larger than the
 * map) grows by itself (the writer doubles it and retries); reopening with
 * a larger map_size raises the stored option.  A smaller value, NULL
 * options or a read-only open never shrink it. */
static void test_map_size_grows(void **state) {
  (void)state;
  char *dir = tu_tmpdir("mapsize");
  tern_options o;
  tern_options_init(&o);
  o.map_size = 1u << 20;
  o.write_buffer_bytes = 64u << 20; /* keep everything in the catalog */
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  uint32_t done = 0;
  const size_t vlen = 2000;
  unsigned long grows = atomic_load(&tern_engine_count.map_grows);
  ET_OK(fill(idx, 0, 3008, vlen, &done)); /* 6 MB through a 1 MiB map */
  assert_int_equal(done, 3008);
  assert_true(atomic_load(&tern_engine_count.map_grows) - grows >= 3);
  check_docs(idx, done, vlen);
  ET_OK(tern_close(idx));

  o.map_size = 16u << 20;
  ET_OK(tern_open(&idx, dir, 0, &o));
  tern_options have;
  ET_OK(tern_get_options(idx, &have));
  assert_true(have.map_size == 16u << 20);
  assert_true(have.write_buffer_bytes == 64u << 20); /* the other options are kept */
  uint32_t more = done;
  ET_OK(fill(idx, done, done + 2000, vlen, &more));
  assert_int_equal(more, done + 2000);
  check_docs(idx, more, vlen);
  ET_OK(tern_close(idx));

  o.map_size = 2u << 20; /* smaller: ignored */
  ET_OK(tern_open(&idx, dir, 0, &o));
  ET_OK(tern_get_options(idx, &have));
  assert_true(have.map_size == 16u << 20);
  ET_OK(tern_close(idx));
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  ET_OK(tern_get_options(idx, &have));
  assert_true(have.map_size == 16u << 20);
  check_docs(idx, more, vlen);
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  free(dir);
}

static void test_stats_count_catalog(void **state) {
  (void)state;
  char *dir = tu_tmpdir("statscat");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  uint32_t done = 0;
  ET_OK(fill(idx, 0, 200, 100, &done));
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  char *cat = tu_path(dir, "catalog.mdb");
  struct stat sb;
  assert_int_equal(stat(cat, &sb), 0);
  assert_true(st->catalog_bytes == (uint64_t)sb.st_size);
  assert_true(st->catalog_bytes > 0);
  ET_OK(tern_stats_free(st));
  ET_OK(tern_close(idx));
  free(cat);
  free(dir);
}

static uint64_t catalog_bytes(tern_index *idx) {
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  uint64_t b = st->catalog_bytes;
  ET_OK(tern_stats_free(st));
  return b;
}

/* Buffered writes grow the catalog; tern_compact gives the space back when
 * the handle is alone, and leaves the catalog alone (but still compacts the
 * segments) while a snapshot or another handle is open.  Every document
 * stays readable, and later writes work. */
static void test_compact_shrinks_catalog(void **state) {
  (void)state;
  char *dir = tu_tmpdir("catcompact");
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 64u << 20; /* the writes stay in the catalog until compact */
  tern_index *idx, *other;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  const size_t vlen = 300;
  uint32_t done = 0;
  ET_OK(fill(idx, 0, 8000, vlen, &done));
  uint64_t grown = catalog_bytes(idx);
  assert_true(grown > (2u << 20));

  /* Not alone: a snapshot, then a second handle. */
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  ET_OK(tern_compact(idx));
  assert_true(catalog_bytes(idx) >= grown);
  ET_OK(tern_snapshot_close(s));
  ET_OK(fill(idx, done, done + 2000, vlen, &done));
  ET_OK(tern_open(&other, dir, TERN_RDONLY, NULL));
  ET_OK(tern_compact(idx));
  assert_true(catalog_bytes(idx) >= grown);
  check_docs(other, done, vlen);
  ET_OK(tern_close(other));

  /* Alone: the catalog shrinks to a small fraction. */
  ET_OK(fill(idx, done, done + 2000, vlen, &done));
  ET_OK(tern_compact(idx));
  uint64_t shrunk = catalog_bytes(idx);
  fprintf(stderr, "catalog: %llu bytes grown, %llu after compact\n", (unsigned long long)grown,
          (unsigned long long)shrunk);
  assert_true(shrunk < grown / 4);
  check_docs(idx, done, vlen);
  ET_OK(tern_verify(idx));
  ET_OK(fill(idx, done, done + 500, vlen, &done)); /* writes after the swap */
  check_docs(idx, done, vlen);
  ET_OK(tern_close(idx));
  ET_OK(tern_open(&idx, dir, 0, NULL));
  check_docs(idx, done, vlen);
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  free(dir);
}

typedef struct phases {
  char names[64][16];
  uint64_t done[64], total[64];
  size_t n;
} phases;

static void record_phase(void *payload, const char *phase, uint64_t done, uint64_t total) {
  phases *ph = payload;
  assert_true(done <= total);
  if (ph->n < 64) {
    snprintf(ph->names[ph->n], sizeof ph->names[0], "%s", phase);
    ph->done[ph->n] = done;
    ph->total[ph->n] = total;
    ph->n++;
  }
}

/* A bulk commit reports every phase in order, each from its start to its
 * end, and "write" counts every document. */
static void test_commit_progress(void **state) {
  (void)state;
  static const char *const order[] = {"sort", "resolve", "write", "terms", "sync", "commit", "merge"};
  char *dir = tu_tmpdir("progress");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
  phases ph = {0};
  ET_OK(tern_txn_set_progress(t, record_phase, &ph));
  const uint32_t n = 10000;
  for (uint32_t id = 0; id < n; id++) {
    uint8_t key[ET_KEY_MAX];
    tern_term term = {"color", id % 2 ? "odd" : "even", id % 2 ? 3 : 4};
    ET_OK(tern_put(t, key, et_key(id, 9, key), "v", 1, &term, 1));
  }
  ET_OK(tern_commit(t));
  size_t k = 0;
  for (size_t o = 0; o < sizeof order / sizeof order[0]; o++) {
    assert_true(k < ph.n);
    assert_string_equal(ph.names[k], order[o]); /* starts at 0 */
    assert_true(ph.done[k] == 0);
    uint64_t last = 0;
    while (k < ph.n && !strcmp(ph.names[k], order[o])) {
      assert_true(ph.done[k] >= last); /* never backwards */
      last = ph.done[k++];
    }
    assert_true(last == ph.total[k - 1]); /* ends complete */
    if (!strcmp(order[o], "write") || !strcmp(order[o], "sort")) assert_true(last == n);
  }
  assert_int_equal(k, ph.n);
  assert_int_equal(tern_txn_set_progress(NULL, record_phase, &ph), TERN_EINVAL);
  ET_OK(tern_close(idx));
  free(dir);
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_errmsg_cleared_on_success),
      cmocka_unit_test(test_second_handle_message),
      cmocka_unit_test(test_map_size_grows),
      cmocka_unit_test(test_stats_count_catalog),
      cmocka_unit_test(test_compact_shrinks_catalog),
      cmocka_unit_test(test_commit_progress),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
