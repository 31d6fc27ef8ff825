/* SPDX-License-Identifier: MIT */
/*
 * test_writer_processes.c — two processes writing one index at once, each
 * waiting for the write lock (busy_timeout_ms).  Every commit is a
 * read-modify-write: a counter key read with tern_txn_get and put back one
 * higher, so a transaction that saw a commit older than the last one (two
 * writers not serialized, or a state not re-read after the other process
 * committed) loses an increment and the total comes out short.  Each
 * commit also claims a key with TERN_NOOVERWRITE: a key the other process
 * claimed first must be refused (TERN_EEXIST), so each claim key has
 * exactly one winner.  A small write buffer makes both processes flush
 * and merge in their workers meanwhile.  The reference is the children's
 * own record of what they committed and won, sent back through pipes.
 */
#include "tests/engine/enginetest.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NCOUNTERS = 16, NCLAIMS = 200, WRITERS = 2 };

static int get_counter(tern_txn *t, unsigned c, unsigned *value) {
  char key[16], buf[32];
  snprintf(key, sizeof key, "ctr%02u", c);
  size_t len = 0;
  int rc = tern_txn_get(t, key, strlen(key), buf, sizeof buf - 1, &len);
  *value = 0;
  if (rc == TERN_NOTFOUND) return TERN_OK;
  if (rc != TERN_OK) return rc;
  buf[len] = '\0';
  *value = (unsigned)strtoul(buf, NULL, 10);
  return TERN_OK;
}

/* One commit: counter c + 1, and claim key k for writer w (*won 1 when
 * it was free). */
static int one_commit(tern_index *idx, unsigned w, unsigned c, unsigned k, int *won) {
  tern_txn *t;
  int rc = tern_txn_begin(&t, idx, 0);
  if (rc != TERN_OK) return rc;
  unsigned v;
  char key[16], val[32];
  rc = get_counter(t, c, &v);
  snprintf(key, sizeof key, "ctr%02u", c);
  snprintf(val, sizeof val, "%u", v + 1);
  if (rc == TERN_OK) rc = tern_put(t, key, strlen(key), val, strlen(val), NULL, 0);
  snprintf(key, sizeof key, "claim%02u", k);
  snprintf(val, sizeof val, "w%u", w);
  if (rc == TERN_OK) {
    rc = tern_put_flags(t, TERN_NOOVERWRITE, key, strlen(key), val, strlen(val), NULL, 0);
    *won = rc == TERN_OK;
    if (rc == TERN_EEXIST) rc = TERN_OK;
  }
  if (rc != TERN_OK) {
    tern_abort(t);
    return rc;
  }
  rc = tern_commit(t);
  return rc == TERN_EPARTIAL ? TERN_OK : rc;
}

/* A writer process: `n` commits; writes to `fd` the claim keys it won
 * (one byte each). */
static int writer(const char *dir, unsigned w, unsigned n, int fd, int go) {
  char x;
  if (read(go, &x, 1) != 1) return 6; /* both start together */
  tern_options o;
  tern_options_init(&o);
  o.busy_timeout_ms = 60000;
  tern_index *idx;
  if (tern_open(&idx, dir, 0, &o) != TERN_OK) return 2;
  tu_rng r;
  tu_rng_init(&r, 71 + w);
  for (unsigned i = 0; i < n; i++) {
    unsigned c = (unsigned)tu_below(&r, NCOUNTERS), k = (unsigned)tu_below(&r, NCLAIMS);
    int won = 0;
    int rc = one_commit(idx, w, c, k, &won);
    if (rc != TERN_OK) {
      fprintf(stderr, "writer %u, commit %u: %s: %s\n", w, i, tern_strerror(rc), tern_errmsg());
      return 3;
    }
    uint8_t b = (uint8_t)k;
    if (won && write(fd, &b, 1) != 1) return 4;
    usleep((useconds_t)tu_below(&r, 1500)); /* the other's turn: it polls every 1 to 50 ms */
  }
  return tern_close(idx) == TERN_OK ? 0 : 5;
}

static void check_final(const char *dir, unsigned total, const int winner[NCLAIMS]) {
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  ET_OK(tern_verify(idx));
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  unsigned sum = 0;
  for (unsigned c = 0; c < NCOUNTERS; c++) {
    char key[16], buf[32];
    size_t len = 0;
    snprintf(key, sizeof key, "ctr%02u", c);
    int rc = tern_get(s, key, strlen(key), buf, sizeof buf - 1, &len);
    if (rc == TERN_NOTFOUND) continue;
    ET_OK(rc);
    buf[len] = '\0';
    sum += (unsigned)strtoul(buf, NULL, 10);
  }
  assert_int_equal(sum, total); /* no increment lost */
  for (unsigned k = 0; k < NCLAIMS; k++) {
    char key[16], buf[32], want[16];
    size_t len = 0;
    snprintf(key, sizeof key, "claim%02u", k);
    int rc = tern_get(s, key, strlen(key), buf, sizeof buf, &len);
    if (winner[k] < 0) {
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    ET_OK(rc);
    snprintf(want, sizeof want, "w%d", winner[k]);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(buf, want, len);
  }
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
}

static void test_two_writer_processes(void **state) {
  (void)state;
  char *dir = tu_tmpdir("writers");
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 2048; /* flushes and merges in both processes */
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  ET_OK(tern_close(idx));
  unsigned n = 400 * tu_scale();
  int fds[WRITERS][2], go[2];
  pid_t pids[WRITERS];
  assert_int_equal(pipe(go), 0);
  for (unsigned w = 0; w < WRITERS; w++) {
    assert_int_equal(pipe(fds[w]), 0);
    pids[w] = fork();
    assert_true(pids[w] >= 0);
    if (pids[w] == 0) {
      close(fds[w][0]);
      close(go[1]);
      _exit(writer(dir, w, n, fds[w][1], go[0]));
    }
    close(fds[w][1]);
  }
  close(go[0]);
  assert_int_equal(write(go[1], "xx", WRITERS), WRITERS);
  close(go[1]);
  int winner[NCLAIMS];
  for (unsigned k = 0; k < NCLAIMS; k++) winner[k] = -1;
  for (unsigned w = 0; w < WRITERS; w++) {
    uint8_t b;
    while (read(fds[w][0], &b, 1) == 1) {
      assert_true(b < NCLAIMS);
      assert_int_equal(winner[b], -1); /* claimed once, by one writer */
      winner[b] = (int)w;
    }
    close(fds[w][0]);
    int st;
    assert_int_equal(waitpid(pids[w], &st, 0), pids[w]);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
  }
  unsigned won[WRITERS] = {0};
  for (unsigned k = 0; k < NCLAIMS; k++)
    if (winner[k] >= 0) won[winner[k]]++;
  fprintf(stderr, "[writers] %u commits each; claims won: %u and %u\n", n, won[0], won[1]);
  check_final(dir, WRITERS * n, winner);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_two_writer_processes)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
