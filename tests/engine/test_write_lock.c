/* SPDX-License-Identifier: MIT */
/*
 * test_write_lock.c — the write lock across processes (engine/state/writer.c):
 * write.lock's owner word, taken and let go without a system call, and
 * each handle's liveness byte, which lets a writer take the word over
 * from a holder that died — never from one alive.  Also the older
 * protocol (flock(LOCK_EX) per transaction): both exclude each other.
 */
#include "tests/engine/enginetest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

/* write.lock's owner word as a process reads it from the file. */
static uint64_t owner_word(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/write.lock", dir);
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  uint8_t b[8] = {0};
  assert_int_equal(pread(fd, b, sizeof b, 0), (ssize_t)sizeof b);
  close(fd);
  uint64_t w;
  memcpy(&w, b, sizeof w); /* native order: the word is an atomic in memory */
  return w;
}

static void set_owner_word(const char *dir, uint64_t w) {
  char path[4096];
  snprintf(path, sizeof path, "%s/write.lock", dir);
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, &w, sizeof w, 0), (ssize_t)sizeof w);
  close(fd);
}

static void wait_child(pid_t pid, int code) {
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), code);
}

static void put_one(tern_index *idx, const char *key, const char *val) {
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  ET_OK(tern_put(t, key, strlen(key), val, strlen(val), NULL, 0));
  ET_OK(tern_commit(t));
}

static int has_key(tern_index *idx, const char *key) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  char buf[64];
  size_t len;
  int rc = tern_get(s, key, strlen(key), buf, sizeof buf, &len);
  ET_OK(tern_snapshot_close(s));
  assert_true(rc == TERN_OK || rc == TERN_NOTFOUND);
  return rc == TERN_OK;
}

/* A child that holds the lock until told: it says "ready" once it holds
 * it, then waits for "go" (alarm: a parent that failed never says go). */
typedef struct handshake {
  int go[2], ready[2];
} handshake;

static void handshake_open(handshake *h) {
  assert_int_equal(pipe(h->go), 0);
  assert_int_equal(pipe(h->ready), 0);
}

/* In the child: 0 once told to go, -1 if the parent is gone. */
static int child_ready_then_wait(handshake *h) {
  alarm(20);
  char b;
  return write(h->ready[1], "r", 1) == 1 && read(h->go[0], &b, 1) == 1 ? 0 : -1;
}

static void parent_await_ready(handshake *h) {
  char b;
  assert_int_equal(read(h->ready[0], &b, 1), 1);
}

static void parent_say_go(handshake *h) { assert_int_equal(write(h->go[1], "g", 1), 1); }

static void handshake_close(handshake *h) {
  close(h->go[0]);
  close(h->go[1]);
  close(h->ready[0]);
  close(h->ready[1]);
}

/* A process that dies inside a transaction leaves the owner word set: the
 * next writer sees its liveness byte free and takes the word over; what
 * the dead one put is not there. */
static void test_dead_holder_taken_over(void **state) {
  (void)state;
  et_prefer_tmpfs();
  char *dir = tu_tmpdir("wlock-dead");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  put_one(idx, "before", "1");
  ET_OK(tern_close(idx));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    tern_index *c;
    tern_txn *t;
    if (tern_open(&c, dir, 0, NULL) != TERN_OK || tern_txn_begin(&t, c, 0) != TERN_OK) _exit(2);
    if (tern_put(t, "lost", 4, "x", 1, NULL, 0) != TERN_OK) _exit(3);
    _exit(0); /* dies holding the write lock */
  }
  wait_child(pid, 0);
  uint64_t left = owner_word(dir);
  assert_int_equal(left >> 32, (uint64_t)pid); /* the dead process's id is still there */
  ET_OK(tern_open(&idx, dir, 0, NULL));
  put_one(idx, "after", "2"); /* taken over */
  assert_true(has_key(idx, "before"));
  assert_true(has_key(idx, "after"));
  assert_false(has_key(idx, "lost"));
  assert_int_equal(owner_word(dir), 0); /* let go at the commit */
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

/* A live holder in another process is never taken from: TERN_EBUSY
 * naming another process, until it commits; then the word is free. */
static void test_live_holder_excludes(void **state) {
  (void)state;
  et_prefer_tmpfs();
  char *dir = tu_tmpdir("wlock-live");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  handshake h;
  handshake_open(&h);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    tern_index *c;
    tern_txn *t;
    if (tern_open(&c, dir, 0, NULL) != TERN_OK || tern_txn_begin(&t, c, 0) != TERN_OK) _exit(2);
    if (tern_put(t, "theirs", 6, "y", 1, NULL, 0) != TERN_OK) _exit(3);
    if (child_ready_then_wait(&h) != 0) _exit(4);
    _exit(tern_commit(t) == TERN_OK && tern_close(c) == TERN_OK ? 0 : 5);
  }
  parent_await_ready(&h);
  tern_txn *t = NULL;
  for (int i = 0; i < 3; i++) { /* as often as asked */
    assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_EBUSY);
    assert_non_null(strstr(tern_errmsg(), "another process holds the write lock"));
  }
  assert_int_equal(owner_word(dir) >> 32, (uint64_t)pid);
  parent_say_go(&h);
  wait_child(pid, 0);
  assert_int_equal(owner_word(dir), 0);
  put_one(idx, "mine", "z");
  assert_true(has_key(idx, "theirs"));
  assert_true(has_key(idx, "mine"));
  ET_OK(tern_close(idx));
  handshake_close(&h);
  tu_rmtree(dir);
  free(dir);
}

static int flock_in_child(const char *dir, int op) {
  char path[4096];
  snprintf(path, sizeof path, "%s/write.lock", dir);
  int fd = open(path, O_RDWR);
  if (fd < 0) return -1;
  int rc = flock(fd, op);
  close(fd);
  return rc;
}

/* An older tern takes flock(LOCK_EX) per transaction: while one does,
 * this version's writer gets TERN_EBUSY naming it; once this version has
 * written, its handle holds LOCK_SH and an older writer's LOCK_EX fails. */
static void test_older_protocol_excluded(void **state) {
  (void)state;
  et_prefer_tmpfs();
  char *dir = tu_tmpdir("wlock-older");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  ET_OK(tern_close(idx));
  handshake h;
  handshake_open(&h);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { /* the older writer, mid-transaction */
    char path[4096];
    snprintf(path, sizeof path, "%s/write.lock", dir);
    int fd = open(path, O_RDWR);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) _exit(2);
    _exit(child_ready_then_wait(&h) == 0 ? 0 : 3);
  }
  parent_await_ready(&h);
  ET_OK(tern_open(&idx, dir, 0, NULL));
  tern_txn *t = NULL;
  assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_EBUSY);
  assert_non_null(strstr(tern_errmsg(), "older tern"));
  parent_say_go(&h);
  wait_child(pid, 0);
  put_one(idx, "k", "v"); /* the older one let go */
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(flock_in_child(dir, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK ? 0 : 2);
  wait_child(pid, 0);
  ET_OK(tern_close(idx));
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(flock_in_child(dir, LOCK_EX | LOCK_NB) == 0 ? 0 : 2); /* closed: free */
  wait_child(pid, 0);
  handshake_close(&h);
  tu_rmtree(dir);
  free(dir);
}

/* A word left by no live handle — a pid reaped long ago, this process's
 * own pid with a token none of its handles has, garbage — is taken over
 * at the first write. */
static void test_stale_words_taken_over(void **state) {
  (void)state;
  et_prefer_tmpfs();
  char *dir = tu_tmpdir("wlock-stale");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  ET_OK(tern_close(idx));
  pid_t gone = fork();
  assert_true(gone >= 0);
  if (gone == 0) _exit(0);
  wait_child(gone, 0);
  const uint64_t stale[] = {(uint64_t)gone << 32 | 1u, (uint64_t)getpid() << 32 | 0xfffeu,
                            0xdeadbeefcafef00dull};
  for (size_t i = 0; i < sizeof stale / sizeof *stale; i++) {
    set_owner_word(dir, stale[i]);
    ET_OK(tern_open(&idx, dir, 0, NULL));
    char key[16];
    snprintf(key, sizeof key, "k%zu", i);
    put_one(idx, key, "v");
    assert_true(has_key(idx, key));
    assert_int_equal(owner_word(dir), 0);
    ET_OK(tern_close(idx));
  }
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dead_holder_taken_over),
      cmocka_unit_test(test_live_holder_excludes),
      cmocka_unit_test(test_older_protocol_excluded),
      cmocka_unit_test(test_stale_words_taken_over),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
