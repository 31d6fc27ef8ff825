/* SPDX-License-Identifier: MIT */
/*
 * test_ingest_reader.c — a reader sees an ingest whole or not at all.
 *
 * The index holds OLD keys (some in a segment, some in the write buffer),
 * each valued 0.  Every round r = 1..ROUNDS ingests, in one tern_ingest
 * call, several segments built with the public builder: the old keys cut
 * into three key ranges, all rewritten to value r, and a fourth segment of
 * NEW keys of round r, valued r.  Meanwhile a reader thread opens
 * snapshot after snapshot and checks each against the only states that
 * exist: for some v, every old key valued v, the new keys of rounds 1..v
 * present with their round's value, and those of later rounds absent.  A
 * mix (some of a round's segments visible, others not) fails.
 */
#include "tests/engine/enginetest.h"

#include <pthread.h>
#include <stdatomic.h>

enum { OLD = 3000, NEW = 500, ROUNDS = 12, SEGS = 3 };

static size_t old_key(uint32_t i, char *out) { return (size_t)sprintf(out, "old%06u", i); }
static size_t new_key(uint32_t r, uint32_t i, char *out) {
  return (size_t)sprintf(out, "new%02u-%06u", r, i);
}

typedef struct shared {
  tern_index *idx;
  atomic_int done;
  atomic_int bad;         /* inconsistent snapshots seen */
  atomic_int snapshots;   /* snapshots checked */
  atomic_int maxround;    /* the newest round a snapshot saw */
  atomic_int rounds_seen; /* distinct rounds seen (bit set) */
} shared;

static int get_u32(tern_snapshot *s, const char *k, size_t kl, uint32_t *v) {
  size_t vlen = 0;
  int rc = tern_get(s, k, kl, v, sizeof *v, &vlen);
  if (rc == TERN_OK && vlen != sizeof *v) return -1000;
  return rc;
}

/* Checks one snapshot; returns the round it shows, or -1 if it is a mix. */
static int check_snapshot(tern_snapshot *s) {
  char k[32];
  uint32_t v0;
  if (get_u32(s, k, old_key(0, k), &v0) != TERN_OK) return -1;
  for (uint32_t i = 0; i < OLD; i++) {
    uint32_t v;
    if (get_u32(s, k, old_key(i, k), &v) != TERN_OK || v != v0) {
      fprintf(stderr, "old key %u: not %u\n", i, v0);
      return -1;
    }
  }
  for (uint32_t r = 1; r <= ROUNDS; r++)
    for (uint32_t i = 0; i < NEW; i += 7) {
      uint32_t v;
      int rc = get_u32(s, k, new_key(r, i, k), &v);
      int want = r <= v0;
      if (want ? rc != TERN_OK || v != r : rc != TERN_NOTFOUND) {
        fprintf(stderr, "new key %u of round %u: rc %d with the old keys at round %u\n", i, r, rc,
                v0);
        return -1;
      }
    }
  uint64_t count;
  if (tern_snapshot_count(s, &count) != TERN_OK || count != OLD + (uint64_t)v0 * NEW) return -1;
  return (int)v0;
}

static void *reader(void *arg) {
  shared *sh = arg;
  while (!atomic_load(&sh->done)) {
    tern_snapshot *s;
    if (tern_snapshot_open(&s, sh->idx) != TERN_OK) {
      atomic_fetch_add(&sh->bad, 1);
      break;
    }
    int r = check_snapshot(s);
    tern_snapshot_close(s);
    atomic_fetch_add(&sh->snapshots, 1);
    if (r < 0) {
      atomic_fetch_add(&sh->bad, 1);
      continue;
    }
    atomic_fetch_or(&sh->rounds_seen, 1 << r);
    int m = atomic_load(&sh->maxround);
    if (r < m) atomic_fetch_add(&sh->bad, 1); /* time went backwards */
    while (r > m && !atomic_compare_exchange_weak(&sh->maxround, &m, r)) {
    }
  }
  return NULL;
}

/* The round's segments: old keys [a, b) valued r, and its new keys. */
static void build_old(const char *path, uint32_t a, uint32_t b, uint32_t r) {
  tern_builder *bl;
  ET_OK(tern_builder_open(&bl, path, NULL));
  char k[32];
  for (uint32_t i = a; i < b; i++)
    ET_OK(tern_builder_add(bl, k, old_key(i, k), &r, sizeof r, NULL, 0));
  ET_OK(tern_builder_finish(bl, NULL));
}

static void build_new(const char *path, uint32_t r) {
  tern_builder *bl;
  ET_OK(tern_builder_open(&bl, path, NULL));
  char k[32];
  for (uint32_t i = 0; i < NEW; i++)
    ET_OK(tern_builder_add(bl, k, new_key(r, i, k), &r, sizeof r, NULL, 0));
  ET_OK(tern_builder_finish(bl, NULL));
}

static void run(unsigned open_flags) {
  char *dir = tu_tmpdir("ingest_reader");
  char *idxdir = tu_path(dir, "idx");
  shared sh;
  memset(&sh, 0, sizeof sh);
  ET_OK(tern_open(&sh.idx, idxdir, TERN_CREATE | open_flags, NULL));
  /* the old keys: two thirds in a segment, the rest in the buffer */
  char k[32];
  uint32_t zero = 0;
  for (int part = 0; part < 2; part++) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, sh.idx, part == 0 ? TERN_TXN_BULK : 0));
    for (uint32_t i = part == 0 ? 0 : 2 * OLD / 3; i < (part == 0 ? 2 * OLD / 3 : OLD); i++)
      ET_OK(tern_put(t, k, old_key(i, k), &zero, sizeof zero, NULL, 0));
    ET_OK(tern_commit(t));
  }
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, reader, &sh), 0);
  for (uint32_t r = 1; r <= ROUNDS; r++) {
    char *paths[SEGS + 1];
    for (int s = 0; s <= SEGS; s++) {
      char name[32];
      sprintf(name, "r%02u-s%d", r, s);
      paths[s] = tu_path(dir, name);
      if (s < SEGS)
        build_old(paths[s], (uint32_t)s * OLD / SEGS, (uint32_t)(s + 1) * OLD / SEGS, r);
      else
        build_new(paths[s], r);
    }
    /* let the reader check a few snapshots of the state before */
    int seen = atomic_load(&sh.snapshots);
    while (atomic_load(&sh.snapshots) < seen + 2 && !atomic_load(&sh.bad))
      usleep(1000);
    ET_OK(tern_ingest(sh.idx, (const char *const *)paths, SEGS + 1, 0));
    for (int s = 0; s <= SEGS; s++)
      free(paths[s]);
  }
  int seen = atomic_load(&sh.snapshots);
  while (atomic_load(&sh.snapshots) < seen + 2 && !atomic_load(&sh.bad))
    usleep(1000);
  atomic_store(&sh.done, 1);
  assert_int_equal(pthread_join(th, NULL), 0);
  printf("%s: %d snapshots checked, newest round seen %d, rounds seen %#x\n",
         open_flags & TERN_FOREGROUND ? "foreground" : "background worker",
         atomic_load(&sh.snapshots), atomic_load(&sh.maxround), atomic_load(&sh.rounds_seen));
  assert_int_equal(atomic_load(&sh.bad), 0);
  assert_int_equal(atomic_load(&sh.maxround), ROUNDS);
  /* every state was seen: the reader waited out each round */
  assert_int_equal(atomic_load(&sh.rounds_seen), (1 << (ROUNDS + 1)) - 1);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, sh.idx));
  assert_int_equal(check_snapshot(s), ROUNDS);
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_verify(sh.idx));
  ET_OK(tern_close(sh.idx));
  tu_rmtree(dir);
  free(idxdir);
  free(dir);
}

static void test_reader_sees_before_or_after(void **state) {
  (void)state;
  run(0);
  run(TERN_FOREGROUND);
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reader_sees_before_or_after),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
