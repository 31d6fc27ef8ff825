/* SPDX-License-Identifier: MIT */
/*
 * test_integrity.c — never destroy, never serve wrong, say what failed:
 * the scenarios of issue 9 (a 0-byte catalog then create/import, a
 * dropped segments table then put, an emptied meta table then import),
 * interrupted creation told apart from damage, non-regular files, merges
 * that refuse damaged input without retrying it, post-commit failures
 * reported (TERN_EPARTIAL, stats, the CLI's warning), a failed import
 * leaving no index, snapshots closed under open iterators, read-only
 * opens by a user who cannot write the directory, and tern_fail_wrap.
 */
#include "tests/engine/enginetest.h"
#include "tests/engine/rawcatalog.h"

#include "engine/util/errwrap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <lmdb.h>
#include <pwd.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <xxhash.h>

static const char *g_bin;

/* XOR of the hashes of a directory's segment files, and their count. */
static uint64_t segments_digest(const char *dir, unsigned *n) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  uint64_t h = 0;
  *n = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] != 's') continue;
    char *p = tu_path(dir, e->d_name);
    size_t len;
    uint8_t *b = tu_read_file(p, &len);
    h ^= XXH3_64bits(b, len) ^ XXH3_64bits(e->d_name, strlen(e->d_name));
    (*n)++;
    free(b);
    free(p);
  }
  closedir(d);
  return h;
}

static void put_range(tern_index *idx, unsigned from, unsigned to, unsigned flags) {
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, flags));
  for (unsigned i = from; i < to; i++) {
    char k[16], v[16];
    snprintf(k, sizeof k, "k%05u", i);
    snprintf(v, sizeof v, "v%05u", i);
    ET_OK(tern_put(t, k, strlen(k), v, strlen(v), NULL, 0));
  }
  ET_OK(tern_commit(t));
}

/* An index of two segments and a buffer. */
static char *make_index(const char *tag) {
  char *dir = tu_tmpdir(tag);
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  put_range(idx, 0, 500, TERN_TXN_BULK);
  put_range(idx, 500, 1000, TERN_TXN_BULK);
  put_range(idx, 1000, 1010, 0);
  ET_OK(tern_close(idx));
  return dir;
}

static int run_cli(const char *const *args) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(devnull, 1);
    execv(g_bin, (char *const *)args);
    _exit(98);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  return WEXITSTATUS(status);
}

static void raw_drop(const char *dir, const char *table, int del) {
  char *cat = tu_path(dir, "catalog.mdb");
  rc_drop(cat, table, del);
  free(cat);
}

static void expect_open_fails(const char *dir, unsigned flags, int want) {
  tern_index *idx = NULL;
  int rc = tern_open(&idx, dir, flags, NULL);
  if (rc != want)
    fprintf(stderr, "tern_open(%s, %u) = %d (%s), wanted %d\n", dir, flags, rc, tern_errmsg(), want);
  assert_int_equal(rc, want);
  assert_null(idx);
}

/* The three destructive replays of the issue: each now refuses and
 * leaves every segment file as it was. */
static void test_issue_scenarios(void **state) {
  (void)state;
  char *tsvdir = tu_tmpdir("tsv"), *tsv = tu_path(tsvdir, "a.tsv");
  free(tsvdir);
  tu_write_file(tsv, "x\t1\ny\t2\n", 8);
  for (int scenario = 0; scenario < 3; scenario++) {
    char *dir = make_index("scenario");
    unsigned n0, n1;
    uint64_t h0 = segments_digest(dir, &n0);
    assert_int_equal(n0, 10);
    char *cat = tu_path(dir, "catalog.mdb");
    if (scenario == 0) tu_write_file(cat, "", 0);
    if (scenario == 1) raw_drop(dir, "segments", 1);
    if (scenario == 2) raw_drop(dir, "meta", 0);
    size_t len0;
    uint8_t *cat0 = tu_read_file(cat, &len0);
    expect_open_fails(dir, TERN_CREATE, TERN_ECORRUPT);
    expect_open_fails(dir, 0, TERN_ECORRUPT);
    expect_open_fails(dir, TERN_RDONLY, TERN_ECORRUPT);
    const char *create[] = {g_bin, "create", dir, NULL};
    const char *import[] = {g_bin, "import", "-q", dir, tsv, NULL};
    const char *put[] = {g_bin, "put", dir, "z", "3", NULL};
    assert_int_equal(run_cli(create), 2);
    assert_int_equal(run_cli(import), 2);
    assert_int_equal(run_cli(put), 2);
    assert_true(segments_digest(dir, &n1) == h0);
    assert_int_equal(n1, n0);
    size_t len1;
    uint8_t *cat1 = tu_read_file(cat, &len1);
    assert_int_equal(len1, len0); /* nothing written into the damaged catalog */
    assert_memory_equal(cat1, cat0, len0);
    free(cat0);
    free(cat1);
    free(cat);
    free(dir);
  }
  free(tsv);
}

/* LMDB initialised the file but the creating transaction never landed:
 * creation may go on in an empty directory, never beside segment files. */
static void test_interrupted_creation(void **state) {
  (void)state;
  for (int with_segments = 0; with_segments < 2; with_segments++) {
    char *dir = tu_tmpdir("halfcreated");
    char *cat = tu_path(dir, "catalog.mdb");
    MDB_env *env;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_open(env, cat, MDB_NOSUBDIR, 0666), 0);
    mdb_env_close(env);
    if (with_segments) {
      char *seg = tu_path(dir, "s000000000001.tim");
      tu_write_file(seg, "committed bytes", 15);
      free(seg);
    }
    expect_open_fails(dir, 0, with_segments ? TERN_ECORRUPT : TERN_ENOTINDEX);
    if (with_segments) {
      expect_open_fails(dir, TERN_CREATE, TERN_ECORRUPT);
    } else {
      tern_index *idx;
      ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
      put_range(idx, 0, 3, 0);
      ET_OK(tern_verify(idx));
      ET_OK(tern_close(idx));
    }
    free(cat);
    free(dir);
  }
}

/* Non-regular files where tern expects a file: an error at once, no hang. */
static void test_non_regular_files(void **state) {
  (void)state;
  const char *names[] = {"write.lock", "catalog.mdb-lock", "catalog.mdb"};
  for (int i = 0; i < 3; i++)
    for (int fifo = 0; fifo < 2; fifo++) {
      char *dir = make_index("nonreg");
      char *p = tu_path(dir, names[i]);
      unlink(p);
      assert_int_equal(fifo ? mkfifo(p, 0666) : mkdir(p, 0777), 0);
      alarm(20); /* a hang fails the test */
      expect_open_fails(dir, 0, TERN_ECORRUPT);
      if (i > 0) expect_open_fails(dir, TERN_RDONLY, TERN_ECORRUPT);
      alarm(0);
      assert_non_null(strstr(tern_errmsg(), names[i]));
      free(p);
      free(dir);
    }
}

static void flip_middle(const char *dir, const char *name) {
  char *p = tu_path(dir, name);
  size_t len;
  uint8_t *b = tu_read_file(p, &len);
  b[len / 2] ^= 0x5a;
  tu_write_file(p, b, len);
  free(b);
  free(p);
}

static size_t segment_count(tern_index *idx, tern_stats **keep) {
  tern_stats *s;
  ET_OK(tern_stats_get(&s, idx));
  size_t n = s->nsegments;
  if (keep)
    *keep = s;
  else
    tern_stats_free(s);
  return n;
}

/* A merge whose input fails verification: refused before writing, the
 * commit that ran it durable (TERN_EPARTIAL), the failure in stats, the
 * input kept byte for byte, and not retried by the next commits. */
static void test_merge_refuses_damaged_input(void **state) {
  (void)state;
  char *dir = tu_tmpdir("mergebad");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  for (unsigned s = 0; s < 3; s++)
    put_range(idx, s * 10, s * 10 + 10, TERN_TXN_BULK);
  assert_int_equal(segment_count(idx, NULL), 3);
  ET_OK(tern_close(idx));
  flip_middle(dir, "s000000000001.tim");
  char *seg = tu_path(dir, "s000000000001.tim");
  size_t blen;
  uint8_t *bad = tu_read_file(seg, &blen);
  ET_OK(tern_open(&idx, dir, TERN_FOREGROUND, NULL)); /* the merge inside the commit */
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
  ET_OK(tern_put(t, "k00090", 6, "v", 1, NULL, 0));
  int rc = tern_commit(t); /* the fourth small segment: the policy merges four */
  assert_int_equal(rc, TERN_EPARTIAL);
  assert_non_null(strstr(tern_errmsg(), "s000000000001"));
  tern_stats *st;
  assert_int_equal(segment_count(idx, &st), 4);
  assert_int_equal(st->last_error, TERN_ECORRUPT);
  assert_non_null(strstr(st->last_error_msg, "s000000000001"));
  assert_int_equal(st->nskipped, 1);
  tern_stats_free(st);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx)); /* the commit is visible */
  char v[8];
  size_t vlen;
  ET_OK(tern_get(s, "k00090", 6, v, sizeof v, &vlen));
  ET_OK(tern_snapshot_close(s));
  /* The next commit merges the three sound segments and the new one. */
  put_range(idx, 100, 110, TERN_TXN_BULK);
  assert_int_equal(segment_count(idx, NULL), 2);
  rc = tern_verify(idx);
  assert_int_equal(rc, TERN_ECORRUPT);
  assert_non_null(strstr(tern_errmsg(), "s000000000001"));
  rc = tern_compact(idx);
  assert_int_equal(rc, TERN_ECORRUPT);
  assert_non_null(strstr(tern_errmsg(), "s000000000001"));
  assert_int_equal(segment_count(idx, NULL), 2);
  ET_OK(tern_close(idx));
  size_t alen;
  uint8_t *after = tu_read_file(seg, &alen);
  assert_int_equal(alen, blen);
  assert_memory_equal(after, bad, blen);
  /* Another process sees the note: `tern stats` prints it. */
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->last_error, TERN_ECORRUPT);
  assert_true(st->last_error_commit > 0);
  assert_int_equal(st->nskipped, 1);
  tern_stats_free(st);
  ET_OK(tern_close(idx));
  free(after);
  free(bad);
  free(seg);
  free(dir);
}

/* The CLI: a one-line warning and exit 0 when only the post-commit work
 * failed; a failed import into a new directory leaves nothing. */
static void test_cli_reports(void **state) {
  (void)state;
  char *dir = tu_tmpdir("cliwarn");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  for (unsigned s = 0; s < 3; s++) /* the import's is the fourth: a merge */
    put_range(idx, s * 10, s * 10 + 10, TERN_TXN_BULK);
  ET_OK(tern_close(idx));
  flip_middle(dir, "s000000000002.tim");
  char *aux = tu_tmpdir("cliwarn-files"); /* the inputs and the failed import's target */
  char *tsv = tu_path(aux, "more.tsv");
  tu_write_file(tsv, "new1\tx\nnew2\ty\n", 14);
  const char *import[] = {g_bin, "import", "-q", dir, tsv, NULL};
  assert_int_equal(run_cli(import), 0);
  const char *stats[] = {g_bin, "stats", dir, NULL};
  assert_int_equal(run_cli(stats), 0);
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->last_error, TERN_ECORRUPT);
  tern_stats_free(st);
  ET_OK(tern_close(idx));
  /* A failed import into a new directory: no index left behind. */
  char *bad = tu_path(aux, "bad.tsv");
  tu_write_file(bad, "ok\t1\n\tempty key\n", 16);
  char *fresh = tu_path(aux, "fresh-index");
  const char *imp2[] = {g_bin, "import", "-q", fresh, bad, NULL};
  assert_int_equal(run_cli(imp2), 2);
  struct stat sb;
  assert_int_equal(stat(fresh, &sb), -1);
  free(fresh);
  free(bad);
  free(tsv);
  free(aux);
  free(dir);
}

static void test_snapshot_close_busy(void **state) {
  (void)state;
  char *dir = tu_tmpdir("snapbusy");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  tern_txn *t;
  tern_term term = {"color", "red", 3};
  ET_OK(tern_txn_begin(&t, idx, 0));
  ET_OK(tern_put(t, "a", 1, "1", 1, &term, 1));
  ET_OK(tern_commit(t));
  ET_OK(tern_flush(idx));
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  tern_postings *p;
  ET_OK(tern_postings_open(&p, s, &term, 1));
  assert_int_equal(tern_snapshot_close(s), TERN_EBUSY);
  uint64_t doc;
  ET_OK(tern_postings_next(p, &doc)); /* still usable */
  assert_true(doc != TERN_NO_MORE_DOCS);
  tern_slice k, v;
  ET_OK(tern_postings_doc(p, &k, &v));
  assert_int_equal(k.len, 1);
  ET_OK(tern_postings_close(p));
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  free(dir);
}

/* Runs as `nobody` (we are root in CI), or skips saying why. */
static void test_rdonly_other_user(void **state) {
  (void)state;
  struct passwd *pw = getpwnam("nobody");
  if (geteuid() != 0 || !pw) {
    printf("skipped: needs root and a user \"nobody\" to read as another user\n");
    return;
  }
  char *dir = make_index("otheruser");
  /* tu_tmpdir's directory sits in $TMPDIR, which others may traverse;
   * the index's own directory is made readable, never writable, to them. */
  chmod(dir, 0755);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGBUS, SIG_DFL), signal(SIGSEGV, SIG_DFL), signal(SIGABRT, SIG_DFL);
    if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) _exit(90);
    if (access(dir, R_OK | X_OK) != 0) _exit(97); /* $TMPDIR closed to others */
    if (access(dir, W_OK) == 0) _exit(91);        /* the point: it cannot write */
    tern_index *idx;
    int rc = tern_open(&idx, dir, TERN_RDONLY, NULL);
    if (rc != TERN_OK) {
      fprintf(stderr, "open as nobody: %s: %s\n", tern_strerror(rc), tern_errmsg());
      _exit(92);
    }
    tern_snapshot *s;
    if (tern_snapshot_open(&s, idx) != TERN_OK) _exit(93);
    char v[16];
    size_t vlen;
    for (unsigned i = 0; i < 1010; i++) {
      char k[16], want[16];
      snprintf(k, sizeof k, "k%05u", i);
      snprintf(want, sizeof want, "v%05u", i);
      if (tern_get(s, k, strlen(k), v, sizeof v, &vlen) != TERN_OK || vlen != strlen(want) ||
          memcmp(v, want, vlen))
        _exit(94);
    }
    if (tern_verify(idx) != TERN_OK) _exit(95);
    tern_snapshot_close(s);
    if (tern_open(&idx, dir, 0, NULL) == TERN_OK) _exit(96); /* writing needs access */
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 97)
    printf("skipped: %s is not reachable by nobody (set TMPDIR to a traversable directory)\n", dir);
  else
    assert_int_equal(WEXITSTATUS(status), 0);
  free(dir);
}

/* A full disk is ENOSPC, from the segment writer and from LMDB's commit
 * alike (LMDB reports a short write as EIO).  Needs a small filesystem:
 * a 1 MiB tmpfs mounted for the test (root), else skipped. */
static void test_enospc_is_enospc(void **state) {
  (void)state;
  char *mnt = tu_tmpdir("enospc");
  if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") != 0) {
    printf("skipped: cannot mount a small tmpfs (%s)\n", strerror(errno));
    free(mnt);
    return;
  }
  char *dir = tu_path(mnt, "ix");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  static char big[100000];
  memset(big, 'y', sizeof big);
  int rc = TERN_OK, commits = 0;
  for (int i = 0; i < 40 && rc == TERN_OK; i++) { /* buffered: LMDB's commit fills the disk */
    tern_txn *t;
    char k[16];
    snprintf(k, sizeof k, "big%d", i);
    ET_OK(tern_txn_begin(&t, idx, 0));
    ET_OK(tern_put(t, k, strlen(k), big, sizeof big, NULL, 0));
    rc = tern_commit(t);
    commits += rc == TERN_OK;
  }
  assert_int_equal(rc, -ENOSPC);
  assert_true(commits > 0);
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK)); /* the segment writer too */
  for (int i = 0; i < 50; i++) {
    char k[16];
    snprintf(k, sizeof k, "bulk%d", i);
    ET_OK(tern_put(t, k, strlen(k), big, sizeof big, NULL, 0));
  }
  assert_int_equal(tern_commit(t), -ENOSPC);
  ET_OK(tern_verify(idx)); /* what was committed is intact */
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  size_t vlen;
  ET_OK(tern_get(s, "big0", 4, NULL, 0, &vlen) == TERN_ERANGE ? TERN_OK : TERN_EINVAL);
  assert_int_equal(vlen, sizeof big);
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  umount(mnt);
  free(dir);
  free(mnt);
}

/* The wrap helper keeps the cause even when formatting into its buffer. */
static void test_fail_wrap(void **state) {
  (void)state;
  int rc = tern_fail(TERN_ECORRUPT, "block 7: bad checksum %d", 42);
  rc = tern_fail_wrap(rc, "%s/%s", "/ix", "catalog.mdb");
  assert_int_equal(rc, TERN_ECORRUPT);
  assert_string_equal(tern_errmsg(), "/ix/catalog.mdb: block 7: bad checksum 42");
  /* Wrapping twice, and a long cause: truncated, never garbled. */
  char longer[700];
  memset(longer, 'x', sizeof longer - 1);
  longer[sizeof longer - 1] = 0;
  tern_fail(-ENOSPC, "%s", longer);
  rc = tern_fail_wrap(tern_fail_wrap(-ENOSPC, "inner"), "outer");
  assert_int_equal(rc, -ENOSPC);
  assert_int_equal(strncmp(tern_errmsg(), "outer: inner: xxx", 17), 0);
  tern_clear_error();
  tern_fail_wrap(TERN_EINVAL, "only %s", "prefix");
  assert_string_equal(tern_errmsg(), "only prefix");
}

int main(void) {
  et_prefer_tmpfs();
  g_bin = getenv("TERN_BIN");
  if (!g_bin) {
    fprintf(stderr, "TERN_BIN is not set to the tern binary; run through ctest\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_issue_scenarios),
      cmocka_unit_test(test_interrupted_creation),
      cmocka_unit_test(test_non_regular_files),
      cmocka_unit_test(test_merge_refuses_damaged_input),
      cmocka_unit_test(test_cli_reports),
      cmocka_unit_test(test_snapshot_close_busy),
      cmocka_unit_test(test_rdonly_other_user),
      cmocka_unit_test(test_fail_wrap),
      cmocka_unit_test(test_enospc_is_enospc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
