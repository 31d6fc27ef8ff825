/* SPDX-License-Identifier: MIT */
/*
 * test_seq.c — commit sequence numbers and the catalog map growing by
 * itself.
 *
 * Sequence numbers: random buffered, bulk and empty commits with flushes
 * between them; every non-empty commit's number is above the last, a
 * snapshot's number is that of the last commit before it, and every
 * snapshot held along the way answers each key with the value of the
 * last commit whose number is at most the snapshot's (the reference is the
 * history of (number, key, value), independent of the engine).
 *
 * Map growth: a writer in another process fills a 1 MiB map several times
 * over; this process, which had the index open all along, adopts the new
 * size at its next read (LMDB's MDB_MAP_RESIZED) and reads every document,
 * then writes more itself.
 */
#include "tests/engine/enginetest.h"

#include "engine/util/counters.h"

#include <sys/wait.h>
#include <unistd.h>

enum { NKEYS = 64, ROUNDS = 400, HELD = 12 };

typedef struct change {
  uint64_t seq;
  uint32_t key, val; /* val 0: deleted */
} change;

/* The value of `key` as of commit `seq` (0: none) in the history. */
static uint32_t value_at(const change *h, size_t n, uint32_t key, uint64_t seq) {
  uint32_t v = 0;
  for (size_t i = 0; i < n && h[i].seq <= seq; i++)
    if (h[i].key == key) v = h[i].val;
  return v;
}

static void check_snapshot(tern_snapshot *s, const change *h, size_t n, uint64_t salt) {
  uint64_t seq;
  ET_OK(tern_snapshot_seq(s, &seq));
  for (uint32_t k = 0; k < NKEYS; k++) {
    uint8_t key[ET_KEY_MAX];
    uint32_t got = 0, want = value_at(h, n, k, seq);
    size_t vlen;
    int rc = tern_get(s, key, et_key(k, salt, key), &got, sizeof got, &vlen);
    assert_int_equal(rc, want ? TERN_OK : TERN_NOTFOUND);
    if (want) assert_int_equal(got, want);
  }
}

/* One commit of 1..4 random puts and deletes; appends them to the history
 * under the number the commit returns. */
static uint64_t random_commit(tern_index *idx, tu_rng *r, uint64_t salt, uint32_t *cur,
                              change *h, size_t *nh, uint32_t *clock) {
  tern_txn *t;
  unsigned flags = tu_below(r, 8) == 0 ? TERN_TXN_BULK : 0;
  ET_OK(tern_txn_begin(&t, idx, flags));
  change mine[4];
  size_t n = tu_below(r, 5); /* 0: an empty commit */
  for (size_t i = 0; i < n; i++) {
    uint32_t k = (uint32_t)tu_below(r, NKEYS);
    uint8_t key[ET_KEY_MAX];
    size_t klen = et_key(k, salt, key);
    if (cur[k] && tu_below(r, 3) == 0) {
      ET_OK(tern_delete(t, key, klen));
      cur[k] = 0;
    } else {
      cur[k] = (*clock)++;
      ET_OK(tern_put(t, key, klen, &cur[k], sizeof cur[k], NULL, 0));
    }
    mine[i] = (change){0, k, cur[k]};
  }
  uint64_t seq = 12345;
  ET_OK(tern_commit_seq(t, &seq));
  for (size_t i = 0; i < n; i++) {
    mine[i].seq = seq;
    h[(*nh)++] = mine[i];
  }
  return n ? seq : 0;
}

static void test_commit_seq(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  tu_rng r;
  tu_rng_init(&r, seed ^ 0x736571);
  print_message("[seed] %llu\n", (unsigned long long)seed);
  uint64_t salt = tu_next(&r);
  char *dir = tu_tmpdir("seq");
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 2048;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  change *h = calloc(ROUNDS * 4, sizeof *h);
  assert_non_null(h);
  size_t nh = 0;
  uint32_t cur[NKEYS] = {0}, clock = 1;
  tern_snapshot *held[HELD] = {0};
  uint64_t last = 0;
  for (int round = 0; round < ROUNDS; round++) {
    tern_snapshot *before;
    ET_OK(tern_snapshot_open(&before, idx));
    uint64_t seen;
    ET_OK(tern_snapshot_seq(before, &seen));
    assert_true(seen >= last);
    uint64_t seq = random_commit(idx, &r, salt, cur, h, &nh, &clock);
    if (seq) { /* a change: a new number, not seen by the snapshot before it */
      assert_true(seq > last && seq > seen);
      last = seq;
    }
    tern_snapshot *after;
    ET_OK(tern_snapshot_open(&after, idx));
    uint64_t now;
    ET_OK(tern_snapshot_seq(after, &now));
    assert_true(now >= last);
    check_snapshot(after, h, nh, salt);
    ET_OK(tern_snapshot_close(after));
    size_t slot = tu_below(&r, HELD);
    if (held[slot]) {
      check_snapshot(held[slot], h, nh, salt);
      ET_OK(tern_snapshot_close(held[slot]));
    }
    held[slot] = before;
    if (tu_below(&r, 40) == 0) ET_OK(tern_flush(idx));
  }
  for (size_t i = 0; i < HELD; i++)
    if (held[i]) {
      check_snapshot(held[i], h, nh, salt);
      ET_OK(tern_snapshot_close(held[i]));
    }
  /* Edge cases. */
  uint64_t seq = 7;
  assert_int_equal(tern_commit_seq(NULL, &seq), TERN_EINVAL);
  assert_int_equal(seq, 0);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  assert_int_equal(tern_snapshot_seq(s, NULL), TERN_EINVAL);
  assert_int_equal(tern_snapshot_seq(NULL, &seq), TERN_EINVAL);
  ET_OK(tern_snapshot_close(s));
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  ET_OK(tern_commit_seq(t, NULL)); /* NULL: not wanted */
  ET_OK(tern_close(idx));
  free(h);
  tu_rmtree(dir);
  free(dir);
}

/* Puts n documents of vlen bytes (value: id's low byte) in commits of 16. */
static void fill(tern_index *idx, uint32_t from, uint32_t n, size_t vlen) {
  uint8_t *val = malloc(vlen);
  assert_non_null(val);
  for (uint32_t id = from; id < from + n;) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, 0));
    for (int i = 0; i < 16 && id < from + n; i++, id++) {
      uint8_t key[ET_KEY_MAX];
      memset(val, (int)(id & 0xff), vlen);
      ET_OK(tern_put(t, key, et_key(id, 3, key), val, vlen, NULL, 0));
    }
    ET_OK(tern_commit(t));
  }
  free(val);
}

static void check_fill(tern_index *idx, uint32_t n, size_t vlen) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  uint8_t *buf = malloc(vlen);
  assert_non_null(buf);
  for (uint32_t id = 0; id < n; id++) {
    uint8_t key[ET_KEY_MAX];
    size_t got;
    ET_OK(tern_get(s, key, et_key(id, 3, key), buf, vlen, &got));
    assert_int_equal(got, vlen);
    assert_int_equal(buf[0], id & 0xff);
  }
  free(buf);
  ET_OK(tern_snapshot_close(s));
}

static void test_map_grown_by_another_process(void **state) {
  (void)state;
  char *dir = tu_tmpdir("mapgrow");
  tern_options o;
  tern_options_init(&o);
  o.map_size = 1u << 20;
  o.write_buffer_bytes = 64u << 20; /* everything stays in the catalog */
  const size_t vlen = 2000;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o));
  fill(idx, 0, 16, vlen);
  check_fill(idx, 16, vlen);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { /* the other process: 4 MB through the 1 MiB map */
    tern_index *w;
    if (tern_open(&w, dir, TERN_FOREGROUND, NULL) != TERN_OK) _exit(2);
    unsigned long grows = atomic_load(&tern_engine_count.map_grows);
    fill(w, 16, 2000, vlen);
    int ok = atomic_load(&tern_engine_count.map_grows) > grows;
    _exit(tern_close(w) == TERN_OK && ok ? 0 : 3);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  unsigned long adopts = atomic_load(&tern_engine_count.map_adopts);
  ET_OK(tern_verify(idx)); /* the grown map, adopted at this read */
  check_fill(idx, 2016, vlen);
  assert_true(atomic_load(&tern_engine_count.map_adopts) > adopts);
  fill(idx, 2016, 500, vlen); /* and written on */
  check_fill(idx, 2516, vlen);
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_commit_seq),
      cmocka_unit_test(test_map_grown_by_another_process),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
