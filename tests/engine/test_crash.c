/* SPDX-License-Identifier: MIT */
/*
 * test_crash.c — kill -9 at any instant leaves the last completed commit.
 *
 * A child process commits a deterministic sequence of transactions (puts,
 * replaces, deletes, some bulk; a write buffer of ~2 KiB so flushes and
 * merges run all the time) and reports each completed commit number on a
 * pipe.  The parent SIGKILLs it at a random moment, reopens the index and
 * checks that it holds exactly commit L (the last reported) or L + 1 (the
 * one in flight), key by key and term by term, and that tern_verify
 * passes.  Half the rounds flush and merge in the background worker, so
 * kills land between a worker's segment write and its install too.  The next round's child continues from there.
 * Rounds: 120 x TERN_TEST_SCALE.
 */
#include "tests/engine/enginetest.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NKEYS 64
#define COUNTER_KEY "\xff\xff counter"

typedef struct cmodel {
  int present[NKEYS];
  uint64_t writer[NKEYS]; /* commit that wrote the value */
  size_t vlen[NKEYS];
} cmodel;

static size_t value_of(uint64_t commit, uint32_t id, uint8_t *out) {
  size_t len =
      (size_t)((commit * 31 + id * 7) % 5 == 0 ? 200 + (commit % 700) : (commit + id) % 40);
  for (size_t i = 0; i < len; i++)
    out[i] = (uint8_t)(commit * 131 + id * 17 + i);
  return len;
}

static size_t key_of(uint32_t id, uint8_t *out) {
  memset(out, 0, 8);
  out[0] = 'k';
  out[1] = (uint8_t)id;
  return 3 + id % 4; /* trailing NULs: keys that are prefixes of others */
}

static unsigned commit_flags(uint64_t i) { return i % 7 == 0 ? TERN_TXN_BULK : 0; }

/* The operations of commit i, applied to a model (and, with t, to the index). */
static int commit_ops(uint64_t i, cmodel *m, tern_txn *t) {
  uint8_t key[8], val[1024];
  size_t nputs = 1 + i % 5;
  for (size_t j = 0; j < nputs; j++) {
    uint32_t id = (uint32_t)((i * 7 + j * 13) % NKEYS);
    size_t klen = key_of(id, key), vlen = value_of(i, id, val);
    uint8_t g = (uint8_t)('a' + id % 4);
    tern_term term = {"g", &g, 1};
    if (t) {
      int rc = tern_put(t, key, klen, val, vlen, &term, 1);
      if (rc != TERN_OK) return rc;
    }
    m->present[id] = 1;
    m->writer[id] = i;
    m->vlen[id] = vlen;
  }
  if (i % 3 == 0) {
    uint32_t id = (uint32_t)((i * 11) % NKEYS);
    if (t) {
      size_t klen = key_of(id, key);
      int rc = tern_delete(t, key, klen);
      if (rc != (m->present[id] ? TERN_OK : TERN_NOTFOUND)) return -1000;
    }
    m->present[id] = 0;
  }
  if (t) {
    uint8_t c[8];
    for (int b = 0; b < 8; b++)
      c[b] = (uint8_t)(i >> (8 * b));
    return tern_put(t, COUNTER_KEY, sizeof COUNTER_KEY - 1, c, 8, NULL, 0);
  }
  return TERN_OK;
}

static tern_options crash_options(void) {
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 2048;
  o.inline_value_max = 32;
  o.map_size = 64u << 20;
  return o;
}

/* Odd rounds run flushes and merges inside the commits (TERN_FOREGROUND),
 * even ones in the background worker, killed in the middle of them too. */
static void child_run(const char *dir, uint64_t start, cmodel m, int fd, unsigned round) {
  tern_options o = crash_options();
  tern_index *idx;
  if (tern_open(&idx, dir, TERN_CREATE | (round % 2 ? TERN_FOREGROUND : 0), &o) != TERN_OK)
    _exit(10);
  for (uint64_t i = start;; i++) {
    tern_txn *t;
    if (tern_txn_begin(&t, idx, commit_flags(i)) != TERN_OK) _exit(11);
    if (commit_ops(i, &m, t) != TERN_OK) _exit(12);
    if (tern_commit(t) != TERN_OK) _exit(13);
    if (write(fd, &i, sizeof i) != sizeof i) _exit(14);
  }
}

static uint64_t read_counter(tern_snapshot *s) {
  uint8_t c[8];
  size_t vlen;
  int rc = tern_get(s, COUNTER_KEY, sizeof COUNTER_KEY - 1, c, sizeof c, &vlen);
  if (rc == TERN_NOTFOUND) return 0;
  ET_OK(rc);
  assert_int_equal(vlen, 8);
  uint64_t v = 0;
  for (int b = 0; b < 8; b++)
    v |= (uint64_t)c[b] << (8 * b);
  return v;
}

static void check_index(tern_snapshot *s, const cmodel *m) {
  uint8_t key[8], val[1024], want[1024];
  for (uint32_t id = 0; id < NKEYS; id++) {
    size_t klen = key_of(id, key), vlen;
    int rc = tern_get(s, key, klen, val, sizeof val, &vlen);
    if (!m->present[id]) {
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    ET_OK(rc);
    size_t wl = value_of(m->writer[id], id, want);
    assert_int_equal(vlen, wl);
    if (wl) assert_memory_equal(val, want, wl);
  }
  for (uint8_t g = 'a'; g < 'a' + 4; g++) {
    tern_term term = {"g", &g, 1};
    tern_postings *p;
    ET_OK(tern_postings_open(&p, s, &term, 1));
    size_t n = 0, want_n = 0;
    uint64_t doc;
    for (;;) {
      ET_OK(tern_postings_next(p, &doc));
      if (doc == TERN_NO_MORE_DOCS) break;
      tern_slice k, v;
      ET_OK(tern_postings_doc(p, &k, &v));
      uint32_t id = ((const uint8_t *)k.data)[1];
      assert_true(id < NKEYS && m->present[id] && id % 4 == (uint32_t)(g - 'a'));
      n++;
    }
    for (uint32_t id = 0; id < NKEYS; id++)
      want_n += m->present[id] && id % 4 == (uint32_t)(g - 'a');
    assert_int_equal(n, want_n);
    tern_postings_close(p);
  }
}

static void test_crash_rounds(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 41);
  char *dir = tu_tmpdir("crash");
  cmodel m;
  memset(&m, 0, sizeof m);
  uint64_t at = 0; /* the commit the index holds */
  unsigned rounds = 120 * tu_scale(), in_flight = 0;
  for (unsigned round = 0; round < rounds; round++) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      child_run(dir, at + 1, m, fds[1], round);
    }
    close(fds[1]);
    uint64_t last = at, got;
    unsigned wait_reports = (unsigned)tu_below(&r, 6);
    for (unsigned k = 0; k < wait_reports && read(fds[0], &got, sizeof got) == sizeof got; k++)
      last = got;
    struct timespec ts = {0, (long)tu_below(&r, 3000) * 1000};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status)) fprintf(stderr, "child exited with %d\n", WEXITSTATUS(status));
    assert_true(WIFSIGNALED(status));
    while (read(fds[0], &got, sizeof got) == sizeof got)
      last = got;
    close(fds[0]);

    tern_index *idx;
    tern_options o = crash_options();
    ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
    ET_OK(tern_verify(idx));
    tern_snapshot *s;
    ET_OK(tern_snapshot_open(&s, idx));
    uint64_t c = read_counter(s);
    if (c != last && c != last + 1)
      fprintf(stderr, "round %u: index at commit %llu, last reported %llu\n", round,
              (unsigned long long)c, (unsigned long long)last);
    assert_true(c == last || c == last + 1);
    in_flight += c == last + 1;
    for (uint64_t i = at + 1; i <= c; i++)
      commit_ops(i, &m, NULL);
    at = c;
    check_index(s, &m);
    tern_snapshot_close(s);
    ET_OK(tern_close(idx));
  }
  fprintf(stderr, "[crash] %u rounds, %llu commits, %u kills with a commit in flight\n", rounds,
          (unsigned long long)at, in_flight);
  free(dir);
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_crash_rounds)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
