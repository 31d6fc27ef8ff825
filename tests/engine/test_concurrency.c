/* SPDX-License-Identifier: MIT */
/*
 * test_concurrency.c — snapshots read by many threads while a writer
 * commits, flushes, merges and compacts.
 *
 * Keys come in groups; every commit rewrites (or deletes) one whole group
 * with one value, so a snapshot must see each group all-or-nothing with
 * one value (atomicity), and must see the same thing every time it is
 * read (isolation), postings included.  One reader also holds a snapshot
 * for the whole run.  With a 600-byte write buffer the writer's flushes and
 * merges run in its background worker, interleaved with its next commits
 * and with the readers.  Meant to pass under ThreadSanitizer too.
 */
#include "tests/engine/enginetest.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define GROUPS 8
#define PER_GROUP 8
#define READERS 3

typedef struct shared {
  tern_index *idx;
  atomic_int done;
  unsigned commits;
  atomic_ulong reads;
} shared;

static size_t key_of(unsigned g, unsigned k, uint8_t *out) {
  out[0] = (uint8_t)g;
  out[1] = 0;
  out[2] = (uint8_t)k;
  return 3;
}

typedef struct view {
  int present[GROUPS];
  uint64_t version[GROUPS];
  size_t postings[GROUPS];
} view;

/* Reads the snapshot whole; checks each group is consistent. */
static int read_view(tern_snapshot *s, view *v) {
  for (unsigned g = 0; g < GROUPS; g++) {
    int present = -1;
    uint64_t ver = 0;
    for (unsigned k = 0; k < PER_GROUP; k++) {
      uint8_t key[4], val[64];
      size_t vlen;
      int rc = tern_get(s, key, key_of(g, k, key), val, sizeof val, &vlen);
      if (rc != TERN_OK && rc != TERN_NOTFOUND) return -1;
      int here = rc == TERN_OK;
      if (present >= 0 && here != present) return -2; /* half a group */
      present = here;
      if (here) {
        uint64_t x;
        if (vlen < 8) return -3;
        memcpy(&x, val, 8);
        if (k > 0 && x != ver) return -4; /* two versions in a group */
        ver = x;
      }
    }
    v->present[g] = present;
    v->version[g] = ver;
    uint8_t gb = (uint8_t)g;
    tern_term t = {"group", &gb, 1};
    tern_postings *p;
    if (tern_postings_open(&p, s, &t, 1) != TERN_OK) return -5;
    size_t n = 0;
    uint64_t doc;
    while (tern_postings_next(p, &doc) == TERN_OK && doc != TERN_NO_MORE_DOCS)
      n++;
    tern_postings_close(p);
    if (n != (present ? PER_GROUP : 0)) return -6;
    v->postings[g] = n;
  }
  return 0;
}

static void *reader(void *arg) {
  shared *sh = arg;
  intptr_t bad = 0;
  while (!atomic_load(&sh->done) && !bad) {
    tern_snapshot *s;
    if (tern_snapshot_open(&s, sh->idx) != TERN_OK) return (void *)(intptr_t)-10;
    view first, again;
    int rc = read_view(s, &first);
    for (int rep = 0; rc == 0 && rep < 3; rep++) {
      rc = read_view(s, &again);
      if (rc == 0 && memcmp(&first, &again, sizeof first) != 0) rc = -7;
    }
    if (rc) bad = rc;
    tern_snapshot_close(s);
    atomic_fetch_add(&sh->reads, 1);
  }
  return (void *)bad;
}

static void writer(shared *sh, tu_rng *r) {
  for (unsigned i = 1; i <= sh->commits; i++) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, sh->idx, i % 11 == 0 ? TERN_TXN_BULK : 0));
    unsigned g = (unsigned)tu_below(r, GROUPS);
    int del = tu_below(r, 5) == 0;
    uint8_t val[64];
    uint64_t ver = i;
    memcpy(val, &ver, 8);
    size_t vlen = 8 + (size_t)tu_below(r, 56);
    memset(val + 8, (int)i, vlen - 8);
    for (unsigned k = 0; k < PER_GROUP; k++) {
      uint8_t key[4], gb = (uint8_t)g;
      size_t klen = key_of(g, k, key);
      tern_term term = {"group", &gb, 1};
      if (del) {
        int rc = tern_delete(t, key, klen);
        assert_true(rc == TERN_OK || rc == TERN_NOTFOUND);
      } else {
        ET_OK(tern_put(t, key, klen, val, vlen, &term, 1));
      }
    }
    ET_OK(tern_commit(t));
    if (i % 97 == 0) ET_OK(tern_compact(sh->idx));
    if (i % 31 == 0) ET_OK(tern_flush(sh->idx));
  }
}

static void test_readers_and_writer(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 51);
  char *dir = tu_tmpdir("conc");
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 600;
  shared sh = {0};
  sh.commits = 400 * tu_scale();
  ET_OK(tern_open(&sh.idx, dir, TERN_CREATE, &o));
  tern_snapshot *held;
  view held_view, held_again;
  ET_OK(tern_snapshot_open(&held, sh.idx));
  assert_int_equal(read_view(held, &held_view), 0);
  pthread_t th[READERS];
  for (int i = 0; i < READERS; i++)
    assert_int_equal(pthread_create(&th[i], NULL, reader, &sh), 0);
  writer(&sh, &r);
  atomic_store(&sh.done, 1);
  for (int i = 0; i < READERS; i++) {
    void *res;
    pthread_join(th[i], &res);
    if ((intptr_t)res) fprintf(stderr, "reader %d: failure %d\n", i, (int)(intptr_t)res);
    assert_int_equal((intptr_t)res, 0);
  }
  assert_int_equal(read_view(held, &held_again), 0);
  assert_memory_equal(&held_view, &held_again, sizeof held_view);
  tern_snapshot_close(held);
  fprintf(stderr, "[concurrency] %u commits, %lu snapshot reads\n", sh.commits,
          (unsigned long)atomic_load(&sh.reads));
  ET_OK(tern_verify(sh.idx));
  ET_OK(tern_close(sh.idx));
  free(dir);
}

/* A writer in another process merges and compacts while this process
 * opens snapshots: each sees a consistent commit of the other process,
 * even when a segment it was about to open has just been merged away. */
static void test_reader_process(void **state) {
  (void)state;
  char *dir = tu_tmpdir("xproc");
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 600;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  ET_OK(tern_close(idx));
  unsigned commits = 300 * tu_scale();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    shared sh = {0};
    sh.commits = commits;
    tu_rng r;
    tu_rng_init(&r, 53);
    if (tern_open(&sh.idx, dir, 0, NULL) != TERN_OK) _exit(2);
    writer(&sh, &r);
    _exit(tern_close(sh.idx) == TERN_OK ? 0 : 3);
  }
  ET_OK(tern_open(&idx, dir, 0, NULL));
  unsigned reads = 0;
  int status = 0;
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    tern_snapshot *s;
    ET_OK(tern_snapshot_open(&s, idx));
    view v;
    int rc = read_view(s, &v);
    if (rc) fprintf(stderr, "snapshot %u: failure %d\n", reads, rc);
    assert_int_equal(rc, 0);
    tern_snapshot_close(s);
    reads++;
    if (done == pid) break;
  }
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  fprintf(stderr, "[concurrency] other process: %u commits, %u snapshots here\n", commits, reads);
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  free(dir);
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_readers_and_writer),
                                     cmocka_unit_test(test_reader_process)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
