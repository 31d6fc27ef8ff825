/* SPDX-License-Identifier: MIT */
/*
 * test_snapshot_current.c — tern_snapshot_current: whether a snapshot
 * opened now would see the same commit.
 *
 * In one process: random commits (buffered, bulk, empty), flushes and
 * write transactions left open for a while, with up to HELD snapshots
 * held; after every step each held snapshot's answer is checked against
 * the reference — the sequence number of a snapshot opened then, and
 * whether anything changed the index since it was opened.  It must never
 * say 1 when the fresh snapshot sees another commit, and (no write
 * transaction open, foreground mode: this process holds no write lock)
 * must say 1 when nothing changed.
 *
 * Across processes: a child commits while the parent holds a snapshot;
 * the parent's snapshot is then not current, and one opened after is,
 * and sees the child's document.
 */
#include "tests/engine/enginetest.h"

#include <sys/wait.h>
#include <unistd.h>

enum { ROUNDS = 300, HELD = 6 };

typedef struct held {
  tern_snapshot *s;
  int changed; /* something committed since it was opened */
} held;

static uint64_t seq_now(tern_index *idx) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  uint64_t seq;
  ET_OK(tern_snapshot_seq(s, &seq));
  ET_OK(tern_snapshot_close(s));
  return seq;
}

static int current(tern_snapshot *s) {
  int c = 7;
  ET_OK(tern_snapshot_current(s, &c));
  assert_true(c == 0 || c == 1);
  return c;
}

/* Each held snapshot against the reference; `exact`: no write lock held
 * by this process, so an unchanged index must be reported current. */
static void check_all(tern_index *idx, held *h, int exact) {
  uint64_t now = seq_now(idx);
  for (size_t i = 0; i < HELD; i++) {
    if (!h[i].s) continue;
    uint64_t seq;
    ET_OK(tern_snapshot_seq(h[i].s, &seq));
    int c = current(h[i].s);
    if (c) assert_int_equal(seq, now); /* never current when a later commit is seen */
    if (seq != now) assert_int_equal(c, 0);
    if (exact && !h[i].changed) assert_int_equal(c, 1);
  }
}

static void mark_changed(held *h) {
  for (size_t i = 0; i < HELD; i++) h[i].changed = 1;
}

/* A commit of 0..3 puts (0: an empty commit, which changes nothing). */
static void random_commit(tern_index *idx, tu_rng *r, held *h, uint32_t *clock) {
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, tu_below(r, 6) == 0 ? TERN_TXN_BULK : 0));
  size_t n = tu_below(r, 4);
  for (size_t i = 0; i < n; i++) {
    uint8_t key[ET_KEY_MAX];
    uint32_t v = (*clock)++;
    ET_OK(tern_put(t, key, et_key((uint32_t)tu_below(r, 50), 1, key), &v, sizeof v, NULL, 0));
  }
  ET_OK(tern_commit(t));
  if (n) mark_changed(h);
}

/* A write transaction held open while snapshots are opened and checked
 * (this process then holds the write lock), then committed or aborted. */
static void open_txn_round(tern_index *idx, tu_rng *r, held *h) {
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  assert_int_equal(current(s), 1); /* nothing committed since: the same commit */
  check_all(idx, h, 0);
  uint8_t key[ET_KEY_MAX];
  uint32_t v = 1;
  ET_OK(tern_put(t, key, et_key(99, 1, key), &v, sizeof v, NULL, 0));
  int commit = (int)tu_below(r, 2);
  if (commit) {
    ET_OK(tern_commit(t));
    mark_changed(h);
    assert_int_equal(current(s), 0);
  } else {
    ET_OK(tern_abort(t));
  }
  check_all(idx, h, 0);
  ET_OK(tern_snapshot_close(s));
}

static void test_one_process(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  tu_rng r;
  tu_rng_init(&r, seed ^ 0x637572);
  print_message("[seed] %llu\n", (unsigned long long)seed);
  char *dir = tu_tmpdir("current");
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 1024;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o));
  held h[HELD] = {{0}};
  uint32_t clock = 1;
  for (int round = 0; round < ROUNDS; round++) {
    size_t slot = tu_below(&r, HELD);
    switch (tu_below(&r, 8)) {
    case 0: case 1: case 2: random_commit(idx, &r, h, &clock); break;
    case 3:
      ET_OK(tern_flush(idx));
      mark_changed(h); /* a flush may write the catalog: "changed" is not asserted 1 */
      break;
    case 4: open_txn_round(idx, &r, h); break;
    default:
      if (h[slot].s) ET_OK(tern_snapshot_close(h[slot].s));
      ET_OK(tern_snapshot_open(&h[slot].s, idx));
      h[slot].changed = 0;
      break;
    }
    check_all(idx, h, 1);
  }
  for (size_t i = 0; i < HELD; i++) ET_OK(tern_snapshot_close(h[i].s));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

static void test_other_process(void **state) {
  (void)state;
  char *dir = tu_tmpdir("current2");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, NULL));
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  assert_int_equal(current(s), 1);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { /* the other process: one commit through its own handle */
    tern_index *w;
    tern_txn *t;
    int ok = tern_open(&w, dir, TERN_FOREGROUND, NULL) == TERN_OK &&
             tern_txn_begin(&t, w, 0) == TERN_OK && tern_put(t, "k", 1, "v", 1, NULL, 0) == 0 &&
             tern_commit(t) == TERN_OK && tern_close(w) == TERN_OK;
    _exit(ok ? 0 : 1);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_int_equal(current(s), 0);
  size_t vlen;
  char v[4];
  assert_int_equal(tern_get(s, "k", 1, v, sizeof v, &vlen), TERN_NOTFOUND);
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_snapshot_open(&s, idx));
  assert_int_equal(current(s), 1);
  ET_OK(tern_get(s, "k", 1, v, sizeof v, &vlen));
  assert_int_equal(vlen, 1);
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_process),
      cmocka_unit_test(test_other_process),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
