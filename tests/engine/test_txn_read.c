/* SPDX-License-Identifier: MIT */
/*
 * test_txn_read.c — reads inside the write transaction (tern_txn_get), the
 * no-overwrite put (tern_put_flags with TERN_NOOVERWRITE -> TERN_EEXIST),
 * the memory a handle reuses from one transaction to the next, and the
 * busy timeout of tern_txn_begin, across threads and processes.
 * The transaction's view is checked against a reference (an array of the
 * keys' values, -1 for absent) through random puts, deletes, deleted
 * ranges and no-overwrite puts over a commit spread over segments and the buffer
 * (printed seed).
 */
#include "tests/engine/enginetest.h"

#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { NKEYS = 600, VMAX = 300 };

typedef struct model {
  int val[NKEYS]; /* value id, -1 absent */
} model;

static size_t key_of(uint32_t i, char *buf) { return (size_t)sprintf(buf, "key%04u", i); }

/* Value `id` of key i: its bytes repeat a pattern, length id % VMAX. */
static size_t val_of(uint32_t i, int id, uint8_t *buf) {
  size_t n = (size_t)id % VMAX;
  for (size_t j = 0; j < n; j++)
    buf[j] = (uint8_t)(i * 31u + (unsigned)id + j);
  return n;
}

static void expect_txn(tern_txn *t, const model *m, uint32_t i) {
  char k[16];
  uint8_t got[VMAX], want[VMAX];
  size_t vlen;
  int rc = tern_txn_get(t, k, key_of(i, k), got, sizeof got, &vlen);
  if (m->val[i] < 0) {
    if (rc != TERN_NOTFOUND) fail_msg("key %u: %d, want not found", i, rc);
    assert_string_equal(tern_errmsg(), "");
    return;
  }
  ET_OK(rc);
  size_t n = val_of(i, m->val[i], want);
  assert_int_equal(vlen, n);
  if (n) assert_memory_equal(got, want, n);
}

static void expect_snapshot(tern_index *idx, const model *m) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  for (uint32_t i = 0; i < NKEYS; i++) {
    char k[16];
    uint8_t got[VMAX], want[VMAX];
    size_t vlen;
    int rc = tern_get(s, k, key_of(i, k), got, sizeof got, &vlen);
    if (m->val[i] < 0) {
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    ET_OK(rc);
    size_t n = val_of(i, m->val[i], want);
    assert_int_equal(vlen, n);
    if (n) assert_memory_equal(got, want, n);
  }
  ET_OK(tern_snapshot_close(s));
}

/* One random operation on a random key, applied to the transaction and
 * the model alike. */
static void random_op(tu_rng *r, tern_txn *t, model *m, int *next_id) {
  uint32_t i = (uint32_t)tu_below(r, NKEYS);
  char k[16];
  size_t kl = key_of(i, k);
  uint8_t v[VMAX];
  tern_term term = {"f", "x", 1};
  if (tu_below(r, 60) == 0) { /* a deleted range [i, i + span): later reads see it gone */
    uint32_t span = 1 + (uint32_t)tu_below(r, 40), end = i + span;
    char k2[16];
    tern_slice from = {k, kl}, to = {k2, key_of(end, k2)};
    ET_OK(tern_delete_range(t, &from, end < NKEYS ? &to : NULL));
    for (uint32_t j = i; j < NKEYS && j < end; j++)
      m->val[j] = -1;
    return;
  }
  switch (tu_below(r, 4)) {
  case 0: { /* put */
    int id = (*next_id)++;
    ET_OK(tern_put(t, k, kl, v, val_of(i, id, v), &term, 1));
    m->val[i] = id;
    break;
  }
  case 1: { /* delete */
    int rc = tern_delete(t, k, kl);
    assert_int_equal(rc, m->val[i] < 0 ? TERN_NOTFOUND : TERN_OK);
    m->val[i] = -1;
    break;
  }
  default: { /* no-overwrite put */
    int id = (*next_id)++;
    int rc = tern_put_flags(t, TERN_NOOVERWRITE, k, kl, v, val_of(i, id, v), &term, 1);
    if (m->val[i] >= 0) {
      assert_int_equal(rc, TERN_EEXIST);
      assert_true(tern_errmsg()[0] != '\0');
    } else {
      ET_OK(rc);
      m->val[i] = id;
    }
  }
  }
}

/* Transactions of random operations over a commit in segments and the
 * buffer: every key as the reference says, inside the transaction and,
 * after the commit, through a snapshot; an aborted one changes nothing. */
static void test_txn_sees_its_writes(void **state) {
  (void)state;
  char *dir = tu_tmpdir("txn-read");
  tern_options o;
  ET_OK(tern_options_init(&o));
  o.write_buffer_bytes = 16 << 10; /* several segments */
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o));
  tu_rng r;
  tu_rng_init(&r, 0x7a1u);
  model m;
  for (uint32_t i = 0; i < NKEYS; i++)
    m.val[i] = -1;
  int next_id = 1;
  for (int round = 0; round < 12; round++) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, round % 3 == 2 ? TERN_TXN_BULK : 0));
    model before = m;
    for (int op = 0; op < 300; op++) {
      random_op(&r, t, &m, &next_id);
      expect_txn(t, &m, (uint32_t)tu_below(&r, NKEYS));
    }
    for (uint32_t i = 0; i < NKEYS; i++)
      expect_txn(t, &m, i);
    if (round % 4 == 3) {
      ET_OK(tern_abort(t));
      m = before;
    } else {
      ET_OK(tern_commit(t));
    }
    expect_snapshot(idx, &m);
  }
  /* ERANGE reports the size, as tern_get does. */
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  uint8_t v[VMAX];
  ET_OK(tern_put(t, "big", 3, v, 200, NULL, 0));
  size_t vlen = 0;
  assert_int_equal(tern_txn_get(t, "big", 3, v, 10, &vlen), TERN_ERANGE);
  assert_int_equal(vlen, 200);
  assert_int_equal(tern_txn_get(t, "", 0, v, 10, &vlen), TERN_EINVAL);
  assert_int_equal(tern_put_flags(t, 0x80, "k", 1, "v", 1, NULL, 0), TERN_EINVAL);
  ET_OK(tern_put_flags(t, 0, "big", 3, "v", 1, NULL, 0)); /* flags 0: overwrite */
  ET_OK(tern_abort(t));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

/* A handle reuses its last transaction's memory (its struct, arena chunk
 * and operations array) and its last state freed: transactions of 1 to 300
 * operations in turn (past the kept array's 256 and the stack's 8 in a
 * commit), some aborted, some bulk, each reading its own writes; a
 * snapshot held across the next commits still sees its own commit. */
static void test_reused_transaction_memory(void **state) {
  (void)state;
  char *dir = tu_tmpdir("txn-reuse");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  tu_rng r;
  tu_rng_init(&r, 0x5eedu);
  model m, held_m;
  for (uint32_t i = 0; i < NKEYS; i++)
    m.val[i] = -1;
  int next_id = 1;
  static const int sizes[] = {1, 300, 1, 9, 2, 257, 8, 1, 40, 1};
  tern_snapshot *held = NULL;
  for (int round = 0; round < 60; round++) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, round % 7 == 6 ? TERN_TXN_BULK : 0));
    model before = m;
    for (int op = 0; op < sizes[round % 10]; op++)
      random_op(&r, t, &m, &next_id);
    for (uint32_t i = 0; i < NKEYS; i += 7)
      expect_txn(t, &m, i);
    if (round % 5 == 4) {
      ET_OK(tern_abort(t));
      m = before;
    } else {
      ET_OK(tern_commit(t));
    }
    if (held && round % 4 == 3) { /* held over three commits: its state was never reused */
      model now = m;
      m = held_m;
      tern_snapshot *s = held;
      for (uint32_t i = 0; i < NKEYS; i++) {
        char k[16];
        uint8_t got[VMAX], want[VMAX];
        size_t vlen;
        int rc = tern_get(s, k, key_of(i, k), got, sizeof got, &vlen);
        assert_int_equal(rc, m.val[i] < 0 ? TERN_NOTFOUND : TERN_OK);
        if (rc == TERN_OK) {
          assert_int_equal(vlen, val_of(i, m.val[i], want));
          if (vlen) assert_memory_equal(got, want, vlen);
        }
      }
      ET_OK(tern_snapshot_close(held));
      held = NULL;
      m = now;
    }
    if (!held) {
      ET_OK(tern_snapshot_open(&held, idx));
      held_m = m;
    }
    expect_snapshot(idx, &m);
  }
  ET_OK(tern_snapshot_close(held));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

typedef struct holder {
  tern_index *idx;
  unsigned hold_ms;
} holder;

static void *hold_lock(void *arg) {
  holder *h = arg;
  tern_txn *t;
  if (tern_txn_begin(&t, h->idx, 0) != TERN_OK) return (void *)1;
  usleep(h->hold_ms * 1000u);
  tern_put(t, "held", 4, "1", 1, NULL, 0);
  return tern_commit(t) == TERN_OK ? NULL : (void *)2;
}

static char g_msg[512]; /* begin_timed's failure message (closing clears it) */

/* Begins a transaction on a handle opened with busy timeout `ms`; returns
 * the status and the time it took. */
static int begin_timed(const char *dir, uint32_t ms, uint64_t *took) {
  tern_options o;
  ET_OK(tern_options_init(&o));
  o.busy_timeout_ms = ms;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, 0, &o));
  tern_options got;
  ET_OK(tern_get_options(idx, &got));
  assert_int_equal(got.busy_timeout_ms, ms);
  tern_txn *t = NULL;
  uint64_t t0 = now_ms();
  int rc = tern_txn_begin(&t, idx, 0);
  *took = now_ms() - t0;
  snprintf(g_msg, sizeof g_msg, "%s", tern_errmsg());
  if (rc == TERN_OK)
    ET_OK(tern_abort(t));
  else
    assert_null(t);
  ET_OK(tern_close(idx));
  return rc;
}

/* Another process holds the write lock for 1.5 s: without a timeout,
 * TERN_EBUSY at once; with 300 ms, TERN_EBUSY after about 300 ms; with
 * 5 s, the transaction begins once the lock is free. */
static void test_busy_timeout_across_processes(void **state) {
  (void)state;
  char *dir = tu_tmpdir("txn-busy");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  ET_OK(tern_close(idx));
  int go[2];
  assert_int_equal(pipe(go), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(go[0]);
    tern_index *c;
    tern_txn *t;
    if (tern_open(&c, dir, 0, NULL) || tern_txn_begin(&t, c, 0)) _exit(2);
    if (write(go[1], "x", 1) != 1) _exit(3);
    usleep(1500 * 1000); /* long enough for the two refusals below, even loaded */
    tern_abort(t);
    tern_close(c);
    _exit(0);
  }
  close(go[1]);
  char x;
  assert_int_equal(read(go[0], &x, 1), 1); /* the child holds the lock */
  uint64_t took;
  assert_int_equal(begin_timed(dir, 0, &took), TERN_EBUSY);
  assert_true(took < 250); /* at once (a loaded machine may still take a while) */
  assert_int_equal(begin_timed(dir, 300, &took), TERN_EBUSY);
  assert_non_null(strstr(g_msg, "another process"));
  assert_non_null(strstr(g_msg, "waited 300 ms"));
  assert_true(took >= 300 && took < 1300);
  ET_OK(begin_timed(dir, 5000, &took));
  assert_true(took < 5000);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  close(go[0]);
  tu_rmtree(dir);
  free(dir);
}

/* A thread of the same handle holds the transaction: a second thread with
 * a timeout waits for its commit and sees it. */
static void test_busy_timeout_across_threads(void **state) {
  (void)state;
  char *dir = tu_tmpdir("txn-busy-threads");
  tern_options o;
  ET_OK(tern_options_init(&o));
  o.busy_timeout_ms = 5000;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  holder h = {idx, 200};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, hold_lock, &h), 0);
  usleep(50 * 1000);
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0)); /* waits for the holder's commit */
  size_t vlen;
  char v[4];
  ET_OK(tern_txn_get(t, "held", 4, v, sizeof v, &vlen));
  ET_OK(tern_abort(t));
  void *ret;
  assert_int_equal(pthread_join(th, &ret), 0);
  assert_null(ret);
  /* Options of version 1 (no busy_timeout_ms) still open an index. */
  ET_OK(tern_close(idx));
  tern_options old;
  ET_OK(tern_options_init(&old));
  old.version = 1;
  ET_OK(tern_open(&idx, dir, 0, &old));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_txn_sees_its_writes),
      cmocka_unit_test(test_reused_transaction_memory),
      cmocka_unit_test(test_busy_timeout_across_processes),
      cmocka_unit_test(test_busy_timeout_across_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
