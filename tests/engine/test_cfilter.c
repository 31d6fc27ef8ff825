/* SPDX-License-Identifier: MIT */
/*
 * test_cfilter.c — the combined filter over a state's overlapping slots
 * (engine/state/state_cfilter.c) never answers "absent" for a key a slot
 * holds, against a reference (key id -> version, 0: absent).
 *
 * Rounds, seeded: a writer puts new keys, overwrites and deletes old ones
 * and flushes (merges run as the policy, at a merge factor of 10, and
 * its worker decide);
 * then 3 to 6 segments of random keys (overlapping every range) are built
 * with the public builder and ingested by a process that exits at once,
 * so segments pile up.  After each round the index is opened read-only
 * (its state made from the catalog: the filter built when at least
 * TERN_CFILTER_MIN segments overlap) and every key id is looked up, plus
 * random keys never written.  Last, a writer opened on it: commits that
 * flush nothing hand the filter forward, a flush drops it (a slot it does
 * not cover); gets checked at each step.
 */
#include "tests/engine/enginetest.h"

#include "engine/maint/worker.h"
#include "engine/state/index.h"

#include <sys/wait.h>

enum { NKEYS = 5000, KLEN = 12, PART = 120, ROUNDS = 8 };

typedef struct world {
  tu_rng r;
  uint64_t salt;
  uint32_t ver[NKEYS]; /* 0: absent */
  uint32_t clock;
  char *dir;
  const char *idxname; /* the index's directory under dir */
} world;

/* 12 pseudo-random bytes of id: every segment's range spans them all. */
static void key_of(const world *w, uint32_t id, uint8_t *k) {
  uint64_t a = tu_mix(id ^ w->salt), b = tu_mix(a + id);
  memcpy(k, &a, 8);
  memcpy(k + 8, &b, 4);
}

static void check_all(const world *w, tern_index *idx, size_t *with_filter) {
  tern_snapshot *s;
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  if (s->st->cf) ++*with_filter;
  for (uint32_t id = 0; id < NKEYS; id++) {
    uint8_t k[KLEN];
    uint32_t v[2];
    size_t vlen;
    key_of(w, id, k);
    int rc = tern_get(s, k, KLEN, v, sizeof v, &vlen);
    if (w->ver[id] == 0) {
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    if (rc != TERN_OK) fail_msg("key %u version %u: %d (%s)", id, w->ver[id], rc, tern_errmsg());
    assert_int_equal(vlen, sizeof v);
    assert_int_equal(v[0], id);
    assert_int_equal(v[1], w->ver[id]);
  }
  for (uint32_t id = NKEYS; id < 3 * NKEYS; id++) { /* never written */
    uint8_t k[KLEN];
    uint32_t v[2];
    size_t vlen;
    key_of(w, id, k);
    assert_int_equal(tern_get(s, k, KLEN, v, sizeof v, &vlen), TERN_NOTFOUND);
  }
  assert_int_equal(tern_snapshot_close(s), TERN_OK);
}

static void put_id(world *w, tern_txn *t, uint32_t id) {
  uint8_t k[KLEN];
  key_of(w, id, k);
  uint32_t v[2] = {id, w->clock++};
  assert_int_equal(tern_put(t, k, KLEN, v, sizeof v, NULL, 0), TERN_OK);
  w->ver[id] = v[1];
}

/* Random puts, overwrites and deletes in a few transactions. */
static void random_commits(world *w, tern_index *idx, int txns) {
  for (int i = 0; i < txns; i++) {
    tern_txn *t;
    assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_OK);
    for (int op = 0; op < 60; op++) {
      uint32_t id = (uint32_t)tu_below(&w->r, NKEYS);
      if (tu_below(&w->r, 4) == 0) {
        uint8_t k[KLEN];
        key_of(w, id, k);
        /* the transaction's lookup of the key: through the filter too */
        assert_int_equal(tern_delete(t, k, KLEN), w->ver[id] ? TERN_OK : TERN_NOTFOUND);
        w->ver[id] = 0;
      } else {
        put_id(w, t, id);
      }
    }
    assert_int_equal(tern_commit(t), TERN_OK);
  }
}

typedef struct part_doc {
  uint8_t key[KLEN];
  uint32_t v[2];
} part_doc;

static int part_cmp(const void *a, const void *b) { return memcmp(a, b, KLEN); }

/* A segment of PART ids not taken by the round's other parts. */
static char *build_part(world *w, uint8_t *taken, int p) {
  char name[32];
  snprintf(name, sizeof name, "part%d", p);
  char *path = tu_path(w->dir, name);
  part_doc *d = calloc(PART, sizeof *d);
  assert_non_null(d);
  for (size_t i = 0; i < PART; i++) {
    uint32_t id;
    do id = (uint32_t)tu_below(&w->r, NKEYS);
    while (taken[id]);
    taken[id] = 1;
    key_of(w, id, d[i].key);
    d[i].v[0] = id;
    d[i].v[1] = w->clock++;
    w->ver[id] = d[i].v[1]; /* the ingested document wins */
  }
  qsort(d, PART, sizeof *d, part_cmp);
  tern_builder *b;
  assert_int_equal(tern_builder_open(&b, path, NULL), TERN_OK);
  for (size_t i = 0; i < PART; i++)
    assert_int_equal(tern_builder_add(b, d[i].key, KLEN, d[i].v, sizeof d[i].v, NULL, 0), TERN_OK);
  assert_int_equal(tern_builder_finish(b, NULL), TERN_OK);
  free(d);
  return path;
}

/* Ingested by a child without merges: the index keeps the parts as
 * segments. */
static void ingest_parts(world *w, char **paths, size_t n) {
  char *idxdir = tu_path(w->dir, w->idxname);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    tern_index *x;
    tern_options o = et_options_merging(0);
    if (tern_open(&x, idxdir, TERN_CREATE, &o) != TERN_OK) _exit(2);
    _exit(tern_ingest(x, (const char *const *)paths, n, 0) == TERN_OK ? 0 : 1);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  free(idxdir);
}

static void one_round(world *w) {
  char *idxdir = tu_path(w->dir, w->idxname);
  tern_index *idx;
  tern_options o = et_options_merging(10); /* slots pile up past TERN_CFILTER_MIN */
  assert_int_equal(tern_open(&idx, idxdir, TERN_CREATE, &o), TERN_OK);
  random_commits(w, idx, 1 + (int)tu_below(&w->r, 3));
  assert_int_equal(tern_flush(idx), TERN_OK);
  assert_int_equal(tern_close(idx), TERN_OK);
  uint8_t taken[NKEYS] = {0};
  size_t n = 3 + (size_t)tu_below(&w->r, 4);
  char *paths[6];
  for (size_t p = 0; p < n; p++)
    paths[p] = build_part(w, taken, (int)p);
  ingest_parts(w, paths, n);
  for (size_t p = 0; p < n; p++) {
    tu_rmtree(paths[p]);
    free(paths[p]);
  }
  free(idxdir);
}

/* A writer on a fresh index of 9 ingested segments (without merges: its
 * commits keep them as they are): the filter of its first
 * state goes forward through commits that flush nothing; a flush drops it
 * (a slot it does not cover). */
static void writer_keeps_then_drops(world *w) {
  w->idxname = "fresh";
  memset(w->ver, 0, sizeof w->ver);
  uint8_t taken[NKEYS] = {0};
  char *paths[9];
  for (int p = 0; p < 9; p++)
    paths[p] = build_part(w, taken, p);
  ingest_parts(w, paths, 9);
  for (int p = 0; p < 9; p++) {
    tu_rmtree(paths[p]);
    free(paths[p]);
  }
  char *idxdir = tu_path(w->dir, w->idxname);
  tern_index *idx;
  tern_options o = et_options_merging(0);
  assert_int_equal(tern_open(&idx, idxdir, TERN_FOREGROUND, &o), TERN_OK);
  size_t with = 0;
  check_all(w, idx, &with);
  assert_int_equal(with, 1);
  tern_snapshot *s;
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  const tern_cfilter *first = s->st->cf;
  assert_int_equal(tern_snapshot_close(s), TERN_OK);
  for (int i = 0; i < 4; i++) {
    random_commits(w, idx, 1); /* the 8 MiB buffer takes them all */
    check_all(w, idx, &with);
    assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
    assert_int_equal(s->st->nslots, 9);
    assert_ptr_equal(s->st->cf, first);
    assert_int_equal(tern_snapshot_close(s), TERN_OK);
  }
  assert_int_equal(tern_flush(idx), TERN_OK);
  check_all(w, idx, &with);
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  assert_null(s->st->cf);
  assert_int_equal(tern_snapshot_close(s), TERN_OK);
  assert_int_equal(tern_close(idx), TERN_OK);
  free(idxdir);
}

/* The current state's combined filter once the worker is idle (NULL: none). */
static const tern_cfilter *settled_filter(tern_index *idx, size_t *nslots) {
  tern_worker_wait(idx);
  tern_snapshot *s;
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  const tern_cfilter *cf = s->st->cf;
  *nslots = s->st->nslots;
  assert_int_equal(tern_snapshot_close(s), TERN_OK);
  return cf;
}

/* Ingests n new parts through the writer idx itself. */
static void ingest_here(world *w, tern_index *idx, size_t n) {
  uint8_t taken[NKEYS] = {0};
  char *paths[TERN_CFILTER_MIN + 2];
  assert_true(n <= TERN_CFILTER_MIN + 2);
  for (size_t p = 0; p < n; p++)
    paths[p] = build_part(w, taken, (int)p);
  assert_int_equal(tern_ingest(idx, (const char *const *)paths, n, 0), TERN_OK);
  for (size_t p = 0; p < n; p++) {
    tu_rmtree(paths[p]);
    free(paths[p]);
  }
}

/* A long-running writer (background worker): the states it installs
 * after its own ingest, flush and merge get the filter back from the
 * worker (engine/maint/combined.c) whenever enough slots overlap; every
 * key checked against the reference at each step, and after reopening. */
static void test_same_process_keeps_filter(void **state) {
  (void)state;
  et_prefer_tmpfs();
  world *w = calloc(1, sizeof *w);
  assert_non_null(w);
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  tu_rng_init(&w->r, seed ^ 0x5a3e);
  w->salt = tu_next(&w->r);
  w->clock = 1;
  w->dir = tu_tmpdir("cfilter-live");
  w->idxname = "idx";
  char *idxdir = tu_path(w->dir, w->idxname);
  tern_index *idx;
  /* A merge factor of 10: the 8 ingested slots, then 9, stay; the tenth
   * merges them. */
  tern_options o = et_options_merging(TERN_CFILTER_MIN + 2);
  assert_int_equal(tern_open(&idx, idxdir, TERN_CREATE, &o), TERN_OK);
  size_t with = 0, nslots = 0;
  /* Ingested: TERN_CFILTER_MIN overlapping slots of similar size (no merge). */
  ingest_here(w, idx, TERN_CFILTER_MIN);
  const tern_cfilter *first = settled_filter(idx, &nslots);
  assert_int_equal(nslots, TERN_CFILTER_MIN);
  assert_non_null(first);
  check_all(w, idx, &with);
  /* Commits that flush nothing, with deletes: the same filter. */
  for (int i = 0; i < 3; i++) {
    random_commits(w, idx, 1);
    assert_ptr_equal(settled_filter(idx, &nslots), first);
    check_all(w, idx, &with);
  }
  /* A flush adds a slot the filter does not cover: the worker makes
   * another (the buffer's keys are now in it). */
  assert_int_equal(tern_flush(idx), TERN_OK);
  assert_non_null(settled_filter(idx, &nslots));
  assert_int_equal(nslots, TERN_CFILTER_MIN + 1);
  check_all(w, idx, &with);
  /* One more ingested slot makes ten: the merge leaves one slot,
   * too few for a filter (TERN_CFILTER_MIN_WORKER); gets stay right. */
  ingest_here(w, idx, 1);
  const tern_cfilter *after = settled_filter(idx, &nslots);
  assert_true(nslots < TERN_CFILTER_MIN_WORKER ? after == NULL : after != NULL);
  check_all(w, idx, &with);
  assert_int_equal(tern_close(idx), TERN_OK);
  assert_int_equal(tern_open(&idx, idxdir, TERN_RDONLY, NULL), TERN_OK);
  check_all(w, idx, &with);
  assert_int_equal(tern_close(idx), TERN_OK);
  tu_rmtree(w->dir);
  free(idxdir);
  free(w->dir);
  free(w);
}

/* A writer's combined filter over as few slots as the worker makes one
 * for (TERN_CFILTER_MIN_WORKER: an incremental index's 3 or 4 segments):
 * every key, present, deleted or never written, answers as the
 * reference, with keys in the buffer too, the filter kept throughout. */
static void test_few_slots_keep_filter(void **state) {
  (void)state;
  et_prefer_tmpfs();
  world *w = calloc(1, sizeof *w);
  assert_non_null(w);
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  tu_rng_init(&w->r, seed ^ 0x3e21);
  w->salt = tu_next(&w->r);
  w->clock = 1;
  w->dir = tu_tmpdir("cfilter-few");
  w->idxname = "idx";
  char *idxdir = tu_path(w->dir, w->idxname);
  tern_index *idx;
  assert_int_equal(tern_open(&idx, idxdir, TERN_CREATE, NULL), TERN_OK);
  size_t with = 0, nslots = 0;
  ingest_here(w, idx, TERN_CFILTER_MIN_WORKER);
  assert_non_null(settled_filter(idx, &nslots));
  assert_int_equal(nslots, TERN_CFILTER_MIN_WORKER);
  check_all(w, idx, &with);
  for (int i = 0; i < 3; i++) { /* deletes and new versions, in the buffer */
    random_commits(w, idx, 1);
    assert_non_null(settled_filter(idx, &nslots));
    check_all(w, idx, &with);
  }
  /* Each order held fixed: table first (gets mostly present), which with
   * so few slots reads their own filter lines instead of the table
   * (TERN_CF_LINES_MAX), then the Bloom filter first. */
  assert_true(TERN_CFILTER_MIN_WORKER <= TERN_CF_LINES_MAX);
  for (unsigned order = 2; order >= 1; order--) {
    tern_cfilter_test_tuning.order = order;
    tern_mu_lock(idx);
    atomic_store(&idx->cur->cf_order, order == 2 ? TERN_CF_ORDER_MAX : 0);
    tern_mu_unlock(idx);
    tern_snapshot *s;
    assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
    assert_null(s->st->cf_view.router); /* no router for so few (state_cfilter.c) */
    assert_int_equal(tern_state_cf_lines_first(s->st), order == 2);
    assert_int_equal(tern_snapshot_close(s), TERN_OK);
    check_all(w, idx, &with);
  }
  tern_cfilter_test_tuning.order = 0;
  assert_int_equal(with, 6);
  assert_int_equal(tern_close(idx), TERN_OK);
  tu_rmtree(w->dir);
  free(idxdir);
  free(w->dir);
  free(w);
}

static void test_never_denies_a_held_key(void **state) {
  (void)state;
  et_prefer_tmpfs();
  world *w = calloc(1, sizeof *w);
  assert_non_null(w);
  uint64_t seed = tu_seed();
  tu_rng_init(&w->r, seed ^ 0xcf21);
  w->salt = tu_next(&w->r);
  w->clock = 1;
  w->dir = tu_tmpdir("cfilter");
  w->idxname = "idx";
  char *idxdir = tu_path(w->dir, w->idxname);
  size_t with = 0;
  for (int round = 0; round < ROUNDS; round++) {
    one_round(w);
    tern_index *idx;
    assert_int_equal(tern_open(&idx, idxdir, TERN_RDONLY, NULL), TERN_OK);
    check_all(w, idx, &with);
    assert_int_equal(tern_close(idx), TERN_OK);
  }
  printf("seed %llu: %zu of %d read-only opens had a combined filter\n", (unsigned long long)seed,
         with, ROUNDS);
  assert_true(with > 0); /* else this test proves nothing */
  writer_keeps_then_drops(w);
  tu_rmtree(w->dir);
  free(idxdir);
  free(w->dir);
  free(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_never_denies_a_held_key),
      cmocka_unit_test(test_same_process_keeps_filter),
      cmocka_unit_test(test_few_slots_keep_filter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
