/* SPDX-License-Identifier: MIT */
/*
 * test_partial.c — every failure after a commit reaches the next call
 * (tern.h, tern_commit: TERN_EPARTIAL), and compact writes nothing when
 * an input is damaged.
 *
 * A fault (EIO, ENOSPC; faultfs.h) in the background worker's flush,
 * after a commit returned, must be returned once as TERN_EPARTIAL by the
 * first tern_commit, tern_flush or tern_compact after it, the data whole
 * and the failure in stats meanwhile; before, tern_flush and tern_compact
 * swallowed it, and so the commits after them returned TERN_OK.  Then:
 * tern_compact on an index with a damaged segment returns TERN_ECORRUPT
 * naming it and leaves every file and the catalog's buffer and health as
 * they were (before, it flushed the buffer into a new segment and wrote
 * a health record first).
 */
#include "tests/engine/enginetest.h"
#include "tests/engine/faultfs.c"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#define NDOCS 400

static void put_range(tern_index *idx, uint32_t from, uint32_t to, int *rc_out) {
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  for (uint32_t i = from; i < to; i++) {
    char key[16], val[64];
    int kl = snprintf(key, sizeof key, "k%06u", i);
    memset(val, 'v', sizeof val);
    ET_OK(tern_put(t, key, (size_t)kl, val, sizeof val, NULL, 0));
  }
  *rc_out = tern_commit(t);
}

static void expect_all(tern_index *idx, uint32_t n) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  for (uint32_t i = 0; i < n; i++) {
    char key[16], val[64];
    size_t vl;
    int kl = snprintf(key, sizeof key, "k%06u", i);
    ET_OK(tern_get(s, key, (size_t)kl, val, sizeof val, &vl));
    assert_int_equal(vl, 64);
  }
  ET_OK(tern_snapshot_close(s));
}

static tern_index *open_small(const char *dir, unsigned flags) {
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 4096; /* the first commit below makes the worker flush */
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, flags, &o));
  return idx;
}

enum next_call { NEXT_FLUSH, NEXT_COMPACT, NEXT_COMMIT, NNEXT };
static const char *const next_name[NNEXT] = {"tern_flush", "tern_compact", "tern_commit"};

/* A commit returns; the worker's flush after it meets `err` at its
 * first segment write; `next` must return TERN_EPARTIAL, once. */
static void worker_failure_reaches(enum next_call next, int err) {
  char *dir = tu_tmpdir("partial");
  tern_index *idx = open_small(dir, TERN_CREATE);
  ff_reset();
  ff_fail_nth(FF_WRITE, 1, err);
  int rc;
  uint32_t n = 0;
  /* Small commits (each well under write_buffer_bytes: they write no
   * segment themselves) until the worker's flush met the fault. */
  while (!ff_fired() && n < NDOCS) {
    put_range(idx, n, n + 10, &rc);
    ET_OK(rc);
    n += 10;
    ET_OK(tern_verify(idx)); /* waits for the worker, forgets nothing */
  }
  assert_true(ff_fired());
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->last_error, -err); /* stats shows it at once */
  ET_OK(tern_stats_free(st));
  ff_reset();
  switch (next) {
  case NEXT_FLUSH: rc = tern_flush(idx); break;
  case NEXT_COMPACT: rc = tern_compact(idx); break;
  default: put_range(idx, n, n + 1, &rc); break;
  }
  if (rc != TERN_EPARTIAL)
    fprintf(stderr, "%s after a worker failure (%s): %d %s\n", next_name[next], strerror(err), rc,
            tern_errmsg());
  assert_int_equal(rc, TERN_EPARTIAL);
  assert_non_null(strstr(tern_errmsg(), strerror(err)));
  /* Reported once: the next calls succeed. */
  put_range(idx, n + 1, n + 2, &rc);
  ET_OK(rc);
  ET_OK(tern_flush(idx));
  expect_all(idx, n);
  if (next == NEXT_COMMIT) expect_all(idx, n + 2);
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

static void test_worker_failure_reaches_next_call(void **state) {
  (void)state;
  ff_install();
  static const int errs[] = {EIO, ENOSPC};
  for (int next = 0; next < NNEXT; next++)
    for (int e = 0; e < 2; e++) worker_failure_reaches((enum next_call)next, errs[e]);
  ff_uninstall();
}

/* The names and bytes of every file in dir, as one string (for comparing). */
static char *snapshot_dir(const char *dir) {
  size_t cap = 1 << 20, len = 0;
  char *out = calloc(1, cap);
  assert_non_null(out);
  struct dirent **ents;
  int n = scandir(dir, &ents, NULL, alphasort);
  assert_true(n >= 0);
  for (int i = 0; i < n; i++) {
    const char *name = ents[i]->d_name;
    if (name[0] != '.' && strcmp(name, "catalog.mdb-lock") != 0) {
      char *p = tu_path(dir, name);
      size_t fl;
      uint8_t *b = tu_read_file(p, &fl);
      uint64_t h = 1469598103934665603ull;
      for (size_t k = 0; k < fl; k++) h = (h ^ b[k]) * 1099511628211ull;
      len += (size_t)snprintf(out + len, cap - len, "%s %zu %016llx\n", name, fl,
                              (unsigned long long)h);
      free(b);
      free(p);
    }
    free(ents[i]);
  }
  free(ents);
  return out;
}

static void test_compact_checks_inputs_first(void **state) {
  (void)state;
  char *dir = tu_tmpdir("compactbad");
  tern_options o;
  tern_options_init(&o);
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o));
  int rc;
  put_range(idx, 0, 100, &rc);
  ET_OK(rc);
  ET_OK(tern_flush(idx));
  put_range(idx, 100, 200, &rc);
  ET_OK(rc);
  ET_OK(tern_flush(idx));
  put_range(idx, 200, 220, &rc); /* in the buffer: compact would flush it first */
  ET_OK(rc);
  ET_OK(tern_close(idx));
  char *seg = tu_path(dir, "s000000000001.tim");
  size_t len;
  uint8_t *b = tu_read_file(seg, &len);
  b[len / 2] ^= 0x5a;
  tu_write_file(seg, b, len);
  free(b);
  char *before = snapshot_dir(dir);
  ET_OK(tern_open(&idx, dir, TERN_FOREGROUND, NULL));
  rc = tern_compact(idx);
  assert_int_equal(rc, TERN_ECORRUPT);
  assert_non_null(strstr(tern_errmsg(), "s000000000001"));
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->buffered, 20);   /* not flushed */
  assert_int_equal(st->nsegments, 2);
  assert_int_equal(st->last_error, 0);  /* no health record written */
  ET_OK(tern_stats_free(st));
  ET_OK(tern_close(idx));
  char *after = snapshot_dir(dir);
  if (strcmp(before, after) != 0)
    fprintf(stderr, "compact on a damaged index wrote:\nbefore:\n%safter:\n%s", before, after);
  assert_string_equal(before, after);
  free(before);
  free(after);
  free(seg);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  et_prefer_tmpfs();
  tu_seed();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_worker_failure_reaches_next_call),
      cmocka_unit_test(test_compact_checks_inputs_first),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
