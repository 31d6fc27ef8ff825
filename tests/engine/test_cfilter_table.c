/* SPDX-License-Identifier: MIT */
/*
 * test_cfilter_table.c — the combined filter as a table naming the slots
 * that may hold a key (engine/state/cfilter.h, state_cfilter.c,
 * cfilter_builder.c): every get equals a reference (key id -> version,
 * 0: absent), and for every key the slots the table names are a superset
 * of the covered slots whose segment holds it (live or deleted), read
 * from the segments themselves, and the Bloom filter asked before the
 * table lets every such key through.
 *
 * Seeded rounds build an index of many overlapping segments: parts of
 * random keys ingested (a key a part shares with an older segment
 * overwrites it there), commits that overwrite and delete keys living in
 * older segments, flushed, all by child processes that exit at once (no
 * merges).  Each layout is read through a read-only handle with the
 * table at its default shape, with fingerprints narrowed to 2 bits
 * (collisions: many slots named per key), with buckets overloaded (most
 * overflow: every slot probed in turn) and both; for fewer slots than open
 * builds a table for, the handle's builder thread makes it.  Last, a
 * writer with a small buffer commits while its worker and a reader's
 * builder make and install tables: gets through both handles checked
 * after every commit.
 */
#include "tests/engine/enginetest.h"

#include "codec/segment.h"
#include "engine/maint/combined.h"
#include "engine/maint/worker.h"
#include "engine/state/index.h"

#include <sys/wait.h>

enum { NKEYS = 4000, KLEN = 12, PART = 300 };

typedef struct world {
  uint64_t seed; /* the test's (tu_seed), printed */
  tu_rng r;
  uint64_t salt;
  uint32_t ver[NKEYS]; /* 0: absent */
  uint32_t clock;
  char *dir, *idxdir;
} world;

/* 12 pseudo-random bytes of id: every segment's range spans them all. */
static void key_of(const world *w, uint32_t id, uint8_t *k) {
  uint64_t a = tu_mix(id ^ w->salt), b = tu_mix(a + id);
  memcpy(k, &a, 8);
  memcpy(k + 8, &b, 4);
}

/* A world for one test, on tmpfs where there is one: the run's seed
 * (printed) mixed with the test's own constant. */
static world *world_new(uint64_t mix, const char *tag) {
  et_prefer_tmpfs();
  world *w = calloc(1, sizeof *w);
  assert_non_null(w);
  w->seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)w->seed);
  tu_rng_init(&w->r, w->seed ^ mix);
  w->salt = tu_next(&w->r);
  w->clock = 1;
  w->dir = tu_tmpdir(tag);
  w->idxdir = tu_path(w->dir, "idx");
  return w;
}

static void world_free(world *w) {
  tu_rmtree(w->dir);
  free(w->idxdir);
  free(w->dir);
  free(w);
}

/* Every key id (and as many never written) through a snapshot of idx;
 * returns whether the snapshot's state had a combined filter. */
static int check_all(const world *w, tern_index *idx) {
  tern_snapshot *s;
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  int with = s->st->cf != NULL;
  for (uint32_t id = 0; id < 2 * NKEYS; id++) {
    uint8_t k[KLEN];
    uint32_t v[2];
    size_t vlen;
    key_of(w, id, k);
    int rc = tern_get(s, k, KLEN, v, sizeof v, &vlen);
    if (id >= NKEYS || w->ver[id] == 0) {
      if (rc != TERN_NOTFOUND) fail_msg("key %u absent: %d", id, rc);
      continue;
    }
    if (rc != TERN_OK) fail_msg("key %u version %u: %d (%s)", id, w->ver[id], rc, tern_errmsg());
    assert_int_equal(vlen, sizeof v);
    assert_int_equal(v[0], id);
    assert_int_equal(v[1], w->ver[id]);
  }
  assert_int_equal(tern_snapshot_close(s), TERN_OK);
  return with;
}

typedef struct part_doc {
  uint8_t key[KLEN];
  uint32_t v[2];
} part_doc;

static int part_cmp(const void *a, const void *b) { return memcmp(a, b, KLEN); }

/* A segment of n random ids not taken by the ingest's other parts (ids
 * older segments hold included: ingested, they overwrite those). */
static char *build_part(world *w, uint8_t *taken, int p, size_t n) {
  char name[32];
  snprintf(name, sizeof name, "part%d", p);
  char *path = tu_path(w->dir, name);
  part_doc *d = calloc(n, sizeof *d);
  assert_non_null(d);
  for (size_t i = 0; i < n; i++) {
    uint32_t id;
    do id = (uint32_t)tu_below(&w->r, NKEYS);
    while (taken[id]);
    taken[id] = 1;
    key_of(w, id, d[i].key);
    d[i].v[0] = id;
    d[i].v[1] = w->clock++;
    w->ver[id] = d[i].v[1];
  }
  qsort(d, n, sizeof *d, part_cmp);
  tern_builder *b;
  assert_int_equal(tern_builder_open(&b, path, NULL), TERN_OK);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(tern_builder_add(b, d[i].key, KLEN, d[i].v, sizeof d[i].v, NULL, 0), TERN_OK);
  assert_int_equal(tern_builder_finish(b, NULL), TERN_OK);
  free(d);
  return path;
}

/* Random overwrites and deletes in one transaction of idx, or (idx NULL)
 * the same operations on the reference alone (the same draws). */
static void random_commit(world *w, tern_index *idx, int ops) {
  tern_txn *t = NULL;
  if (idx) assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_OK);
  for (int op = 0; op < ops; op++) {
    uint32_t id = (uint32_t)tu_below(&w->r, NKEYS);
    uint8_t k[KLEN];
    key_of(w, id, k);
    if (tu_below(&w->r, 3) == 0) {
      if (t) assert_int_equal(tern_delete(t, k, KLEN), w->ver[id] ? TERN_OK : TERN_NOTFOUND);
      w->ver[id] = 0;
    } else {
      uint32_t v[2] = {id, w->clock++};
      if (t) assert_int_equal(tern_put(t, k, KLEN, v, sizeof v, NULL, 0), TERN_OK);
      w->ver[id] = v[1];
    }
  }
  if (t) assert_int_equal(tern_commit(t), TERN_OK);
}

/* One step of the layout, by a child that exits at once (no merge runs
 * after it): n parts ingested, or (n == 0) a few commits flushed as a
 * segment that overwrites and deletes keys of older ones. */
static void grow(world *w, size_t n) {
  char *paths[4];
  uint8_t taken[NKEYS] = {0};
  for (size_t p = 0; p < n; p++)
    paths[p] = build_part(w, taken, (int)p, PART / 2 + (size_t)tu_below(&w->r, PART));
  int commits = n ? 0 : 1 + (int)tu_below(&w->r, 3);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    tern_index *x;
    tern_options o = et_options_merging(0); /* the parts stay segments */
    if (tern_open(&x, w->idxdir, TERN_CREATE | TERN_FOREGROUND, &o) != TERN_OK) _exit(2);
    int rc = n ? tern_ingest(x, (const char *const *)paths, n, 0) : TERN_OK;
    for (int i = 0; rc == TERN_OK && i < commits; i++)
      random_commit(w, x, 150);
    if (rc == TERN_OK && commits) rc = tern_flush(x);
    _exit(rc == TERN_OK ? 0 : 1);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (int i = 0; i < commits; i++) /* the child's operations, on the reference */
    random_commit(w, NULL, 150);
  for (size_t p = 0; p < n; p++) {
    tu_rmtree(paths[p]);
    free(paths[p]);
  }
}

/* The slots probed in turn by st: its overlap list, or all. */
static size_t in_turn(const tern_state *st, const uint32_t **ids) {
  *ids = st->ndisjoint ? st->overlap : NULL;
  return st->ndisjoint ? st->noverlap : st->nslots;
}

typedef struct table_seen {
  size_t overflowed, named_many, keys;
  size_t routed; /* tables read with a router */
} table_seen;

/* For every key id: the slots st's table names are a superset of the
 * slots probed in turn whose segment holds the key, live or deleted
 * (found there by the segment's own lookup), newest first, each once. */
static void check_superset(const world *w, const tern_state *st, table_seen *seen) {
  const uint32_t *ids;
  size_t n = in_turn(st, &ids);
  for (uint32_t id = 0; id < NKEYS; id++) {
    uint8_t k[KLEN];
    key_of(w, id, k);
    tern_seg_probe p;
    assert_int_equal(tern_seg_probe_init(&p, k, KLEN), TERN_OK);
    uint32_t cand[TERN_CFILTER_ENTRIES];
    /* the Bloom filter alone names nothing: every slot, as an overflow */
    size_t nc = st->cf_view.buckets ? tern_cfilter_candidates(&st->cf_view, p.fk.hash, cand)
                                    : TERN_CFILTER_ALL;
    seen->keys++;
    int all = nc == TERN_CFILTER_ALL; /* every slot probed: none need be named */
    if (all) {
      seen->overflowed++;
      nc = 0;
    }
    seen->named_many += nc > 1;
    for (size_t j = 1; j < nc; j++)
      assert_true(cand[j - 1] > cand[j]);
    for (size_t i = 0; i < n; i++) {
      uint32_t slot = ids ? ids[i] : (uint32_t)i;
      tern_seg_cursor c;
      tern_seg_cursor_init(&c);
      tern_term_entry e;
      uint32_t doc;
      int rc = tern_seg_pk_find(st->slots[slot].ref->seg, &p, 1, &c, &e, &doc);
      tern_seg_cursor_release(&c);
      assert_true(rc == TERN_OK || rc == TERN_NOTFOUND);
      if (rc != TERN_OK) continue;
      assert_true(tern_filter_view_may_contain(st->cf_view.bloom, &p.fk)); /* asked first */
      int named = all;
      for (size_t j = 0; j < nc; j++)
        named |= cand[j] == slot;
      if (!named) fail_msg("key %u in slot %u: not named (%zu named)", id, slot, nc);
    }
  }
}

/* Buckets marked overflowed in st's table. */
static size_t overflowed_buckets(const tern_state *st) {
  size_t n = 0;
  for (uint32_t b = 0; b < st->cf_view.nbuckets; b++)
    n += tern_load16(st->cf_view.buckets + (size_t)b * TERN_CFILTER_BUCKET) == TERN_CFILTER_OVERFLOWED;
  return n;
}

static const tern_cfilter_tuning k_tunings[] = {
    {0, 0, 0, 0, 0, 0},   /* as built for real: the router first, the table for its escapes */
    {0, 0, 0, 1, 0, 0},   /* the table alone */
    {14, 0, 0, 1, 0, 0},  /* 2-bit fingerprints: collisions */
    {0, 64, 0, 1, 0, 0},  /* 64 entries a bucket on average: most overflow */
    {12, 28, 0, 1, 0, 0}, /* both, some buckets overflowed */
    {12, 28, 0, 0, 0, 0}, /* the same under the router: its escapes meet them */
    /* more keys than a table is kept for (any layout's): the router, its
     * escapes read the lines; more than a router is built for: the Bloom
     * filter alone */
    {0, 0, 0, 0, 1, 0},
    {0, 0, 0, 0, 1, 1},
};
enum { TUNING_NO_TABLE = 6, TUNING_BLOOM_ALONE = 7 };

/* idx's current state's order of the combined filter's lines (index.h:
 * cf_order), forced to `order` (1: Bloom filter first, 2: table first)
 * while gets run, or (0) learnt again. */
static void force_order(tern_index *idx, uint32_t order) {
  tern_cfilter_test_tuning.order = order;
  tern_mu_lock(idx);
  if (order && idx->cur) atomic_store(&idx->cur->cf_order, order == 2 ? TERN_CF_ORDER_MAX : 0);
  tern_mu_unlock(idx);
}

/* Every get against the reference in both orders of the combined
 * filter's lines (the table alone must do for the Bloom filter). */
static void check_both_orders(const world *w, tern_index *idx) {
  uint32_t learnt = tern_cfilter_test_tuning.order;
  for (uint32_t order = 1; order <= 2; order++) {
    force_order(idx, order);
    check_all(w, idx);
  }
  force_order(idx, learnt);
}

/* Filter checks the gets of NKEYS keys never written make, Bloom filter
 * first: with a combined filter, its one line a key but for its false
 * positives; without, a line per slot. */
static uint64_t absent_filter_checks(const world *w, tern_index *idx) {
  uint32_t learnt = tern_cfilter_test_tuning.order;
  force_order(idx, 1);
  tern_snapshot *s;
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  uint64_t before = tern_get_count.filter_checks;
  for (uint32_t id = NKEYS; id < 2 * NKEYS; id++) {
    uint8_t k[KLEN], v[8];
    size_t vlen;
    key_of(w, id, k);
    assert_int_equal(tern_get(s, k, KLEN, v, sizeof v, &vlen), TERN_NOTFOUND);
  }
  uint64_t checks = tern_get_count.filter_checks - before;
  assert_int_equal(tern_snapshot_close(s), TERN_OK);
  force_order(idx, learnt);
  return checks;
}

/* The layout as it is now, read through read-only handles with each
 * tuning: every get against the reference, the table against the
 * segments. */
static void check_layout(const world *w, table_seen *seen, size_t *with) {
  for (size_t t = 0; t < sizeof k_tunings / sizeof *k_tunings; t++) {
    tern_cfilter_test_tuning = k_tunings[t];
    tern_index *idx;
    assert_int_equal(tern_open(&idx, w->idxdir, TERN_RDONLY, NULL), TERN_OK);
    check_all(w, idx); /* the first state: built at open, or the builder kicked */
    tern_cfbuilder_wait(idx);
    check_both_orders(w, idx);
    tern_snapshot *s;
    assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
    const uint32_t *ids;
    size_t n = in_turn(s->st, &ids);
    if (n >= TERN_CFILTER_MIN_WORKER) assert_non_null(s->st->cf); /* terms in the page cache */
    if (s->st->cf) {
      ++*with;
      check_superset(w, s->st, &seen[t]);
      const tern_router *rt = s->st->cf_view.router;
      int tableless = k_tunings[t].table_keys != 0, alone = k_tunings[t].router_keys != 0;
      assert_true(tableless ? s->st->cf_view.buckets == NULL : s->st->cf_view.buckets != NULL);
      /* a router over more segments than a get reads the lines of */
      if (alone || k_tunings[t].no_router || s->st->cf_view.ncovered <= TERN_CF_LINES_MAX)
        assert_null(rt);
      else
        assert_non_null(rt);
      seen[t].routed += rt != NULL;
      size_t over = overflowed_buckets(s->st);
      if (k_tunings[t].load == 64) assert_true(over * 2 > s->st->cf_view.nbuckets);
      if (tableless) { /* the Bloom filter (sized by the slots' max_doc) and the router */
        assert_true(absent_filter_checks(w, idx) < NKEYS + NKEYS / 4);
        size_t keys = 0;
        for (size_t i = 0; i < n; i++)
          keys += (size_t)s->st->slots[ids ? ids[i] : i].ref->max_doc;
        size_t mem = tern_cfilter_memory(s->st->cf) - (rt ? rt->bytes : 0);
        assert_true(mem >= keys * TERN_FILTER_BITS_PER_KEY / 8);
        assert_true(mem <= keys * TERN_FILTER_BITS_PER_KEY / 8 + 2 * TERN_FILTER_BLOCK_SIZE);
      } else if (k_tunings[t].load == 0) {
        assert_true(over * 10 <= s->st->cf_view.nbuckets + 10); /* rare */
        size_t keys = 0; /* 32 bits a key (cfilter.h), and the Bloom filter's 10 */
        for (size_t i = 0; i < n; i++)
          keys += (size_t)s->st->slots[ids ? ids[i] : i].ref->max_doc;
        size_t table = (keys / TERN_CFILTER_LOAD + 1) * TERN_CFILTER_BUCKET;
        if (rt) { /* 1.125 cells a key and more (router.c), of the width router.h picks */
          assert_true((size_t)rt->ncells >= keys * 9 / 8);
          assert_int_equal(rt->bits, tern_router_bits_for(s->st->cf_view.ncovered));
          table += rt->bytes;
        }
        size_t mem = tern_cfilter_memory(s->st->cf);
        assert_true(mem >= table + keys * TERN_FILTER_BITS_PER_KEY / 8);
        assert_true(mem <= table + keys * TERN_FILTER_BITS_PER_KEY / 8 + 2 * TERN_FILTER_BLOCK_SIZE);
      }
    }
    assert_int_equal(tern_snapshot_close(s), TERN_OK);
    assert_int_equal(check_all(w, idx), n >= TERN_CFILTER_MIN_WORKER);
    assert_int_equal(tern_close(idx), TERN_OK);
  }
  tern_cfilter_test_tuning = (tern_cfilter_tuning){0, 0, 0, 0, 0, 0};
}

static void test_names_every_holder(void **state) {
  (void)state;
  world *w = world_new(0x7ab1e, "cftable");
  table_seen seen[sizeof k_tunings / sizeof *k_tunings] = {{0}};
  size_t with = 0;
  for (int step = 0; step < 12; step++) {
    grow(w, tu_below(&w->r, 3) ? 1 + (size_t)tu_below(&w->r, 3) : 0);
    check_layout(w, seen, &with);
  }
  printf("seed %llu: %zu tables; keys named by several slots %zu (2-bit fingerprints), "
         "in overflowed buckets %zu (overloaded)\n",
         (unsigned long long)w->seed, with, seen[2].named_many, seen[3].overflowed);
  /* else this test proves nothing */
  assert_true(with > 8);
  assert_true(seen[2].named_many * 4 > seen[2].keys);
  assert_true(seen[3].overflowed * 2 > seen[3].keys);
  assert_true(seen[4].overflowed > 0 && seen[4].named_many > 0);
  assert_true(seen[5].overflowed > 0 && seen[5].named_many > 0);
  assert_true(seen[0].routed > 0 && seen[5].routed > 0); /* the router's path was read */
  assert_true(seen[TUNING_NO_TABLE].routed > 0); /* a router without a table was read */
  for (int t = TUNING_NO_TABLE; t <= TUNING_BLOOM_ALONE; t++) /* no table names anything */
    assert_true(seen[t].keys > 0 && seen[t].overflowed == seen[t].keys);
  world_free(w);
}

/* A writer with a 32 KiB buffer (flushes and merges in its worker, which
 * makes and installs tables) and a read-only handle (its builder thread
 * makes tables for the states it reloads), both read after every commit
 * while the tables are made and installed beside the commits. */
static void test_built_while_committing(void **state) {
  (void)state;
  world *w = world_new(0xc0331, "cftable-live");
  grow(w, 3); /* 3 segments: the reader's first state wants a table */
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 32 << 10;
  tern_index *wr, *rd;
  assert_int_equal(tern_open(&wr, w->idxdir, 0, &o), TERN_OK);
  assert_int_equal(tern_open(&rd, w->idxdir, TERN_RDONLY, NULL), TERN_OK);
  size_t with_w = 0, with_r = 0;
  for (int i = 0; i < 80; i++) {
    random_commit(w, wr, 40 + (int)tu_below(&w->r, 200));
    if (i % 8 == 0) { /* some states read once their tables are in */
      tern_worker_wait(wr);
      tern_cfbuilder_wait(rd);
    }
    with_w += (size_t)check_all(w, wr);
    with_r += (size_t)check_all(w, rd);
  }
  tern_worker_wait(wr);
  tern_cfbuilder_wait(wr);
  with_w += (size_t)check_all(w, wr);
  assert_int_equal(tern_close(wr), TERN_OK);
  check_all(w, rd);
  assert_int_equal(tern_close(rd), TERN_OK);
  printf("seed %llu: gets through a table: writer %zu, reader %zu of 81 rounds\n",
         (unsigned long long)w->seed, with_w, with_r);
  assert_true(with_w > 0 && with_r > 0); /* else this test proves nothing */
  world_free(w);
}

/* A handle closed while its builder may be building: nothing leaks or
 * hangs (the stop flag), and a reopened handle reads every key right. */
static void test_close_while_building(void **state) {
  (void)state;
  world *w = world_new(0xc105e, "cftable-close");
  for (int i = 0; i < 3; i++)
    grow(w, 2);
  for (int i = 0; i < 20; i++) {
    tern_index *idx;
    assert_int_equal(tern_open(&idx, w->idxdir, TERN_RDONLY, NULL), TERN_OK);
    tern_snapshot *s;
    assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK); /* kicks the builder */
    assert_int_equal(tern_snapshot_close(s), TERN_OK);
    if (i % 2) usleep((useconds_t)tu_below(&w->r, 300));
    assert_int_equal(tern_close(idx), TERN_OK);
  }
  tern_index *idx;
  assert_int_equal(tern_open(&idx, w->idxdir, TERN_RDONLY, NULL), TERN_OK);
  check_all(w, idx);
  assert_int_equal(tern_close(idx), TERN_OK);
  world_free(w);
}

/* tern_stats_get's filter_bytes. */
static uint64_t filter_bytes(tern_index *idx) {
  tern_stats *st;
  assert_int_equal(tern_stats_get(&st, idx), TERN_OK);
  uint64_t b = st->filter_bytes;
  tern_stats_free(st);
  return b;
}

/* The worker's combined filter given up when its interrupt is set (a
 * kick, a close: engine/maint/worker.c), made when it is not: a writing
 * handle without threads (TERN_FOREGROUND: no builder, no worker thread
 * to make one meanwhile) over 3 overlapping segments, with every tier of
 * the filter. */
static void test_refresh_interrupted(void **state) {
  (void)state;
  world *w = world_new(0x1e7e5, "cftable-refresh");
  grow(w, 3);
  for (size_t t = 0; t < sizeof k_tunings / sizeof *k_tunings; t++) {
    tern_cfilter_test_tuning = k_tunings[t];
    tern_index *idx;
    assert_int_equal(tern_open(&idx, w->idxdir, TERN_FOREGROUND, NULL), TERN_OK);
    assert_int_equal(check_all(w, idx), 0); /* 3 slots: none made at open */
    atomic_int interrupt = 1;
    assert_int_equal(tern_cfilter_refresh(idx, &interrupt), TERN_OK);
    assert_int_equal(check_all(w, idx), 0);
    assert_int_equal(filter_bytes(idx), 0);
    atomic_store(&interrupt, 0);
    assert_int_equal(tern_cfilter_refresh(idx, &interrupt), TERN_OK);
    assert_int_equal(check_all(w, idx), 1);
    tern_snapshot *s; /* tern_stats_get gives the filter's memory */
    assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
    uint64_t mem = tern_cfilter_memory(s->st->cf);
    assert_int_equal(tern_snapshot_close(s), TERN_OK);
    assert_true(mem > 0);
    assert_int_equal(filter_bytes(idx), mem);
    assert_int_equal(tern_close(idx), TERN_OK);
  }
  tern_cfilter_test_tuning = (tern_cfilter_tuning){0, 0, 0, 0, 0, 0};
  world_free(w);
}

/* A writer's first state kicks its builder (3 overlapping segments), and
 * a bulk transaction spills while the filter is built: the builder must
 * not install the filter under it (the spilled commit installs onto the
 * state it began on: TERN_EBUSY otherwise); the commit succeeds and every
 * key reads as the reference says, through this handle and a new one. */
static void test_spilled_transaction_meanwhile(void **state) {
  (void)state;
  world *w = world_new(0x5b111, "cftable-spill");
  grow(w, 3);
  for (int round = 0; round < 3; round++) {
    tern_index *wr;
    assert_int_equal(tern_open(&wr, w->idxdir, 0, NULL), TERN_OK);
    tern_txn *t;
    assert_int_equal(tern_txn_begin(&t, wr, TERN_TXN_BULK), TERN_OK); /* kicks the builder */
    assert_int_equal(tern_txn_set_memory(t, (2u << 20) + (96u << 10)), TERN_OK);
    for (uint32_t i = 0; i < 3 * NKEYS; i++) { /* spills: past the 2 MiB the commit keeps */
      uint32_t id = (uint32_t)tu_below(&w->r, NKEYS);
      uint8_t k[KLEN];
      key_of(w, id, k);
      uint32_t v[2] = {id, w->clock++};
      assert_int_equal(tern_put(t, k, KLEN, v, sizeof v, NULL, 0), TERN_OK);
      w->ver[id] = v[1];
    }
    /* the builder, kicked again, has had time to build and try */
    tern_mu_lock(wr);
    tern_cfbuilder_kick(wr);
    tern_mu_unlock(wr);
    usleep(60 * 1000);
    assert_int_equal(tern_commit(t), TERN_OK);
    tern_cfbuilder_wait(wr);
    tern_worker_wait(wr);
    check_all(w, wr);
    assert_int_equal(tern_close(wr), TERN_OK);
    tern_index *rd;
    assert_int_equal(tern_open(&rd, w->idxdir, TERN_RDONLY, NULL), TERN_OK);
    check_all(w, rd);
    assert_int_equal(tern_close(rd), TERN_OK);
  }
  world_free(w);
}

/* Gets of ids [from, to) through snapshot s, each against the reference
 * (ids >= NKEYS never written), with only_present those the reference
 * holds; returns how many were present. */
static size_t get_range(const world *w, tern_snapshot *s, uint32_t from, uint32_t to,
                        int only_present) {
  size_t present = 0;
  for (uint32_t id = from; id < to; id++) {
    if (only_present && (id >= NKEYS || w->ver[id] == 0)) continue;
    uint8_t k[KLEN];
    uint32_t v[2];
    size_t vlen;
    key_of(w, id, k);
    int rc = tern_get(s, k, KLEN, v, sizeof v, &vlen);
    if (id >= NKEYS || w->ver[id] == 0) {
      if (rc != TERN_NOTFOUND) fail_msg("key %u absent: %d", id, rc);
      continue;
    }
    if (rc != TERN_OK) fail_msg("key %u version %u: %d (%s)", id, w->ver[id], rc, tern_errmsg());
    assert_int_equal(v[1], w->ver[id]);
    present++;
  }
  return present;
}

/* The order of the combined filter's lines follows the gets: a run of
 * present keys turns it to the table first, a run of absent ones back to
 * the Bloom filter first (state.c, cf_learn), two counted gets against
 * the order needed to turn it, every answer right meanwhile and in a mix
 * of both. */
static void test_order_learnt(void **state) {
  (void)state;
  world *w = world_new(0x0dde7, "cftable-order");
  for (int i = 0; i < 3; i++) /* 6 slots: within the 3..7 a table is built for, every seed */
    grow(w, 2);
  grow(w, 0); /* overwrites and deletes */
  tern_index *idx;
  assert_int_equal(tern_open(&idx, w->idxdir, TERN_RDONLY, NULL), TERN_OK);
  check_all(w, idx);
  tern_cfbuilder_wait(idx);
  tern_snapshot *s;
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  assert_non_null(s->st->cf); /* at least 4 slots probed in turn */
  assert_int_equal(tern_state_cf_table_first(s->st), 0); /* as made */
  size_t present = 0;
  for (int pass = 0; pass < 4; pass++) /* about 1 in 16 present gets may turn it */
    present += get_range(w, s, 0, NKEYS, 1);
  assert_true(present > 1000);
  assert_int_equal(tern_state_cf_table_first(s->st), 1);
  for (int pass = 0; pass < 4; pass++)
    assert_int_equal(get_range(w, s, NKEYS, 2 * NKEYS, 0), 0);
  assert_int_equal(tern_state_cf_table_first(s->st), 0);
  get_range(w, s, 0, NKEYS, 1);
  get_range(w, s, 0, NKEYS, 1);
  assert_int_equal(tern_state_cf_table_first(s->st), 1);
  /* Hysteresis: from the saturated counter one absent get that counts
   * (its hash picked) leaves the table first, a second turns it. */
  uint32_t counted[2];
  size_t nc = 0;
  for (uint32_t id = NKEYS; id < 2 * NKEYS && nc < 2; id++) {
    uint8_t k[KLEN];
    key_of(w, id, k);
    tern_seg_probe p;
    assert_int_equal(tern_seg_probe_init(&p, k, KLEN), TERN_OK);
    uint32_t cand[TERN_CFILTER_ENTRIES];
    if ((p.fk.hash & (TERN_CF_LEARN_EVERY - 1)) == 0 &&
        tern_cfilter_candidates(&s->st->cf_view, p.fk.hash, cand) != TERN_CFILTER_ALL)
      counted[nc++] = id; /* an overflowed bucket teaches nothing */
  }
  assert_int_equal(nc, 2);
  assert_int_equal(get_range(w, s, counted[0], counted[0] + 1, 0), 0);
  assert_int_equal(tern_state_cf_table_first(s->st), 1);
  assert_int_equal(get_range(w, s, counted[1], counted[1] + 1, 0), 0);
  assert_int_equal(tern_state_cf_table_first(s->st), 0);
  get_range(w, s, 0, 2 * NKEYS, 0); /* a mix: either order, every answer right */
  assert_int_equal(tern_snapshot_close(s), TERN_OK);
  check_all(w, idx);
  assert_int_equal(tern_close(idx), TERN_OK);
  world_free(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names_every_holder),
      cmocka_unit_test(test_built_while_committing),
      cmocka_unit_test(test_close_while_building),
      cmocka_unit_test(test_refresh_interrupted),
      cmocka_unit_test(test_spilled_transaction_meanwhile),
      cmocka_unit_test(test_order_learnt),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
