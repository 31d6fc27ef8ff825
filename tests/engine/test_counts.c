/* SPDX-License-Identifier: MIT */
/*
 * test_counts.c — the work a commit does, counted (engine/util/counters.h):
 * a one-document commit and the snapshot after it open no segment, read
 * the catalog once each and load neither a state nor the buffer from it
 * (the commit hands its state forward); a flush or bulk commit opens its
 * new segment exactly once.  Values are checked against a reference map on
 * random puts and deletes (seeded), so the handed-forward states are
 * right as well as cheap.
 *
 * A get over many segments hashes its key once, checks every segment's
 * range (with disjoint ranges: one search of the state's range map),
 * tests the filter of each segment whose range admits the key (newest
 * first, down to the one holding it; the map's candidate's line first,
 * its order fixed) and searches a block only where the filter lets the
 * key through: counted per get and checked against a reference of the
 * segments' key ranges and their filters' answers asked through the codec
 * (its gate: tests/common/seg_lookup.h).
 */
#include "tests/engine/enginetest.h"

#include "codec/filter.h"
#include "codec/segment.h"
#include "engine/state/index.h"
#include "engine/util/counters.h"
#include "tests/common/seg_lookup.h"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NIDS = 400 };

typedef struct counts {
  unsigned long seg_opens, catalog_reads, state_loads, buffer_loads, record_reads;
} counts;

static counts now(void) {
  return (counts){atomic_load(&tern_engine_count.seg_opens),
                  atomic_load(&tern_engine_count.catalog_reads),
                  atomic_load(&tern_engine_count.state_loads),
                  atomic_load(&tern_engine_count.buffer_loads),
                  atomic_load(&tern_engine_count.state_record_reads)};
}

/* A new index in a fresh directory (bloom_bits: filter bits per key, 0
 * none); *dirp (may be NULL) its path, the caller's. */
static tern_index *open_fresh(char **dirp, uint32_t bloom_bits) {
  et_prefer_tmpfs();
  char *dir = tu_tmpdir("counts");
  tern_options o = et_options_merging(0); /* the segments as written: the counts are theirs */
  o.bloom_bits_per_key = bloom_bits;
  tern_index *idx;
  /* Flushes inside the commits that make them due: the counters are the
   * process's, and background work would land in any window. */
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o), TERN_OK);
  if (dirp)
    *dirp = dir;
  else
    free(dir);
  return idx;
}

static void check_all(tern_index *idx, const uint32_t *ver, uint64_t salt) {
  tern_snapshot *s;
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  for (uint32_t id = 0; id < NIDS; id++) {
    uint8_t key[ET_KEY_MAX];
    size_t klen = et_key(id, salt, key), vlen;
    uint32_t got;
    int rc = tern_get(s, key, klen, &got, sizeof got, &vlen);
    if (!ver[id]) {
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    assert_int_equal(rc, TERN_OK);
    assert_int_equal(vlen, sizeof got);
    assert_int_equal(got, ver[id]);
  }
  assert_int_equal(tern_snapshot_close(s), TERN_OK);
}

static void put_range(tern_index *idx, unsigned flags, uint32_t from, uint32_t to, uint32_t *ver,
                      uint64_t salt, uint32_t v) {
  tern_txn *t;
  assert_int_equal(tern_txn_begin(&t, idx, flags), TERN_OK);
  for (uint32_t id = from; id < to; id++) {
    uint8_t key[ET_KEY_MAX];
    size_t klen = et_key(id, salt, key);
    ver[id] = v;
    assert_int_equal(tern_put(t, key, klen, &v, sizeof v, NULL, 0), TERN_OK);
  }
  assert_int_equal(tern_commit(t), TERN_OK);
}

static void test_commit_counts(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x636f756e);
  uint64_t salt = tu_next(&r);
  uint32_t ver[NIDS] = {0}, clock = 1;
  int merges = 0;
  tern_index *idx = open_fresh(NULL, TERN_FILTER_BITS_PER_KEY);

  /* A bulk commit and a flush each open their new segment once: at the
   * next state, not to read back its id. */
  counts c0 = now();
  put_range(idx, TERN_TXN_BULK, 0, NIDS / 2, ver, salt, clock++);
  check_all(idx, ver, salt);
  assert_int_equal(now().seg_opens - c0.seg_opens, 1);
  put_range(idx, 0, NIDS / 2, 3 * NIDS / 4, ver, salt, clock++);
  c0 = now();
  assert_int_equal(tern_flush(idx), TERN_OK);
  check_all(idx, ver, salt);
  assert_int_equal(now().seg_opens - c0.seg_opens, 1);
  check_all(idx, ver, salt); /* the buffer view exists: commits extend it */

  for (int round = 0; round < 300; round++) {
    uint32_t id = (uint32_t)tu_below(&r, NIDS);
    uint8_t key[ET_KEY_MAX];
    size_t klen = et_key(id, salt, key);
    counts before = now();
    tern_txn *t;
    assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_OK);
    if (ver[id] && tu_below(&r, 3) == 0) { /* in a segment or the buffer */
      assert_int_equal(tern_delete(t, key, klen), TERN_OK);
      ver[id] = 0;
    } else {
      uint32_t v = clock++;
      assert_int_equal(tern_put(t, key, klen, &v, sizeof v, NULL, 0), TERN_OK);
      ver[id] = v;
    }
    assert_int_equal(tern_commit(t), TERN_OK);
    counts mid = now();
    tern_snapshot *s;
    assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
    counts after = now();
    uint32_t got;
    size_t vlen;
    int rc = tern_get(s, key, klen, &got, sizeof got, &vlen);
    assert_int_equal(rc, ver[id] ? TERN_OK : TERN_NOTFOUND);
    if (ver[id]) assert_int_equal(got, ver[id]);
    assert_int_equal(tern_snapshot_close(s), TERN_OK);
    if (mid.seg_opens != before.seg_opens) { /* the merge policy ran a merge */
      merges++;
      assert_int_equal(mid.seg_opens - before.seg_opens, 1); /* its output, once */
      assert_int_equal(mid.state_loads, before.state_loads); /* an edit: nothing read back */
    } else { /* the commit: one catalog read (is the cached state current?) */
      assert_true(mid.catalog_reads - before.catalog_reads <= 1);
      assert_int_equal(mid.state_loads, before.state_loads);
      assert_int_equal(mid.buffer_loads, before.buffer_loads);
    }
    /* the snapshot: one read, no state or buffer built */
    assert_true(after.catalog_reads - mid.catalog_reads <= 1);
    assert_int_equal(after.seg_opens, mid.seg_opens);
    assert_int_equal(after.state_loads, mid.state_loads);
    assert_true(after.buffer_loads - mid.buffer_loads <= (mid.seg_opens != before.seg_opens));
    if (round % 50 == 49) check_all(idx, ver, salt);
  }
  assert_true(merges < 30); /* most rounds are plain commits */
  check_all(idx, ver, salt);
  assert_int_equal(tern_verify(idx), TERN_OK);
  assert_int_equal(tern_close(idx), TERN_OK);
}

/* ---------------------------------------------------------------- gets */

enum { NSEGS = 6, PERSEG = 300, KLEN = 12 };

typedef struct seg_ref {
  uint8_t keys[PERSEG][KLEN]; /* sorted */
  tern_seg *seg;              /* opened through the codec: the filter's own answers */
} seg_ref;

static int key_cmp(const void *a, const void *b) { return memcmp(a, b, KLEN); }

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Opens the index's segments with the codec, oldest (lowest name) first. */
static void open_segments(const char *dir, seg_ref *segs) {
  char *names[NSEGS + 1];
  size_t n = 0;
  DIR *d = opendir(dir);
  assert_non_null(d);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    char name[64];
    if (!strstr(e->d_name, ".tix") || !tern_seg_file_segment(e->d_name, name, sizeof name))
      continue;
    assert_true(n < NSEGS);
    names[n++] = strdup(name);
  }
  closedir(d);
  assert_int_equal(n, NSEGS);
  qsort(names, n, sizeof *names, name_cmp);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(tern_seg_open(&segs[i].seg, dir, names[i], TERN_IO_MMAP), TERN_OK);
    /* Verified: every filter page checked, so its answers are the filter's
     * own, not "skipped" (codec/segment_filter.c). */
    assert_int_equal(tern_seg_verify(segs[i].seg), TERN_OK);
    free(names[i]);
  }
}

static int holds(const seg_ref *s, const uint8_t *key) {
  return bsearch(key, s->keys, PERSEG, KLEN, key_cmp) != NULL;
}

static int in_range(const seg_ref *s, const uint8_t *key) {
  return memcmp(key, s->keys[0], KLEN) >= 0 && memcmp(key, s->keys[PERSEG - 1], KLEN) <= 0;
}

/* The counts a get of key must make: segments newest first down to the
 * one holding it; a filter tested where the range admits the key, a block
 * searched where the filter also does. */
static tern_get_counts expected(const seg_ref *segs, int disjoint, const uint8_t *key,
                                int *found) {
  /* disjoint: the map's one search (NSEGS >= TERN_RANGE_MAP_MIN) */
  tern_get_counts want = {.key_hashes = 1, .range_checks = disjoint ? 1 : NSEGS};
  *found = 0;
  for (size_t i = NSEGS; i-- > 0 && !*found;) {
    if (!in_range(&segs[i], key)) continue;
    want.filter_checks++;
    const tern_seg_field *f = tern_seg_unique_field(segs[i].seg);
    if (!tu_seg_may_contain(segs[i].seg, f, key, KLEN)) {
      assert_false(holds(&segs[i], key)); /* a filter never denies a key it holds */
      continue;
    }
    want.block_probes++;
    *found = holds(&segs[i], key);
  }
  return want;
}

static void check_get(tern_snapshot *s, const seg_ref *segs, int disjoint, const uint8_t *key,
                      tern_get_counts *sum) {
  int found;
  tern_get_counts want = expected(segs, disjoint, key, &found);
  tern_get_counts before = tern_get_count;
  uint8_t val[KLEN];
  size_t vlen;
  int rc = tern_get(s, key, KLEN, val, sizeof val, &vlen);
  assert_int_equal(rc, found ? TERN_OK : TERN_NOTFOUND);
  if (found) assert_memory_equal(val, key, KLEN);
  assert_int_equal(tern_get_count.key_hashes - before.key_hashes, want.key_hashes);
  assert_int_equal(tern_get_count.range_checks - before.range_checks, want.range_checks);
  assert_int_equal(tern_get_count.filter_checks - before.filter_checks, want.filter_checks);
  assert_int_equal(tern_get_count.block_probes - before.block_probes, want.block_probes);
  sum->filter_checks += want.filter_checks;
  sum->block_probes += want.block_probes;
}

/* NSEGS bulk segments (too few for the merge policy to merge); keys of 12
 * random bytes, either all spread over the same range (every segment's
 * range admits every key) or with segment i's keys all starting with byte
 * i (ranges disjoint: one filter at most per get); and overlapping ranges
 * without filters (every segment in range is searched). */
/* Item 2 of "one edit": across thousands of commits, bulk commits,
 * flushes and merges of one process (with and without the background
 * worker), no state and no buffer view is ever loaded from the catalog
 * after the first transaction: every write hands its state forward as an
 * edit.  Values are checked against the reference as it goes. */
static void no_reloads(unsigned flags) {
  tu_rng r;
  uint64_t seed = tu_seed();
  tu_rng_init(&r, seed);
  uint64_t salt = tu_next(&r);
  uint32_t ver[NIDS] = {0}, clock = 1;
  et_prefer_tmpfs();
  char *dir = tu_tmpdir("noreload");
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 4096; /* a flush every few dozen commits */
  tern_index *idx;
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE | flags, &o), TERN_OK);
  put_range(idx, 0, 0, 8, ver, salt, clock++); /* the first view: loaded once */
  counts c0 = now();
  unsigned bulks = 0, flushes = 0;
  for (int round = 0; round < 3000; round++) {
    unsigned kind = (unsigned)tu_below(&r, 100);
    if (kind < 3) { /* a bulk commit of a range */
      uint32_t from = (uint32_t)tu_below(&r, NIDS - 40);
      put_range(idx, TERN_TXN_BULK, from, from + 1 + (uint32_t)tu_below(&r, 39), ver, salt,
                clock++);
      bulks++;
      continue;
    }
    if (kind < 5) {
      assert_int_equal(tern_flush(idx), TERN_OK);
      flushes++;
      continue;
    }
    uint32_t id = (uint32_t)tu_below(&r, NIDS);
    uint8_t key[ET_KEY_MAX];
    size_t klen = et_key(id, salt, key);
    tern_txn *t;
    assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_OK);
    if (ver[id] && kind < 30) {
      assert_int_equal(tern_delete(t, key, klen), TERN_OK);
      ver[id] = 0;
    } else {
      uint32_t v = clock++;
      assert_int_equal(tern_put(t, key, klen, &v, sizeof v, NULL, 0), TERN_OK);
      ver[id] = v;
    }
    assert_int_equal(tern_commit(t), TERN_OK);
    if (round % 500 == 499) check_all(idx, ver, salt);
  }
  check_all(idx, ver, salt);
  counts c1 = now();
  tern_stats *st;
  assert_int_equal(tern_stats_get(&st, idx), TERN_OK);
  size_t nseg = st->nsegments;
  assert_int_equal(tern_stats_free(st), TERN_OK);
  print_message("no reloads (%s): %u bulk commits, %u flushes, %lu segments opened (%zu left), "
                "%lu catalog reads, %lu states and %lu buffers loaded; seed %llu\n",
                flags ? "foreground" : "worker", bulks, flushes, c1.seg_opens - c0.seg_opens, nseg,
                c1.catalog_reads - c0.catalog_reads, c1.state_loads - c0.state_loads,
                c1.buffer_loads - c0.buffer_loads, (unsigned long long)seed);
  assert_true(c1.seg_opens - c0.seg_opens > bulks + nseg); /* merges ran */
  assert_int_equal(c1.state_loads, c0.state_loads);
  assert_int_equal(c1.buffer_loads, c0.buffer_loads);
  assert_int_equal(tern_verify(idx), TERN_OK);
  assert_int_equal(tern_close(idx), TERN_OK);
  tu_rmtree(dir);
  free(dir);
}

static void test_no_reloads(void **state) {
  (void)state;
  no_reloads(TERN_FOREGROUND);
  no_reloads(0);
}


/* The commit counter read once per taking of the write lock was the
 * largest repeated lookup of a one-document commit: the lock is let go at
 * every commit, and taking it again re-read the catalog's state record to
 * learn whether another process had committed meanwhile.  Now LMDB's
 * transaction id, unmoved since the lock was let go, says nothing was: a
 * begin and commit read the catalog not at all (with snapshots opened in
 * between, each of which reads it).  Values against the reference (seeded).
 * Then another process commits while the lock is free: the next begin
 * must read the catalog and its transaction see that commit; a begin that
 * trusted the state it had would miss the key (and its commit would build
 * on a stale state). */
static void test_begin_reads_no_catalog(void **state) {
  (void)state;
  tu_rng r;
  uint64_t seed = tu_seed();
  tu_rng_init(&r, seed);
  uint64_t salt = tu_next(&r);
  uint32_t ver[NIDS] = {0}, clock = 1;
  char *dir;
  tern_index *idx = open_fresh(&dir, TERN_FILTER_BITS_PER_KEY);
  put_range(idx, 0, 0, 8, ver, salt, clock++); /* the first state and view: read once */
  unsigned long reads = 0, record_reads = 0;
  for (int round = 0; round < 400; round++) {
    uint32_t id = (uint32_t)tu_below(&r, NIDS);
    uint8_t key[ET_KEY_MAX];
    size_t klen = et_key(id, salt, key);
    counts before = now();
    tern_txn *t;
    assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_OK);
    if (ver[id] && tu_below(&r, 3) == 0) {
      assert_int_equal(tern_delete(t, key, klen), TERN_OK);
      ver[id] = 0;
    } else {
      uint32_t v = clock++;
      assert_int_equal(tern_put(t, key, klen, &v, sizeof v, NULL, 0), TERN_OK);
      ver[id] = v;
    }
    assert_int_equal(tern_commit(t), TERN_OK);
    reads += now().catalog_reads - before.catalog_reads;
    record_reads += now().record_reads - before.record_reads;
    if (round % 40 == 39) check_all(idx, ver, salt); /* a snapshot between commits */
  }
  print_message("begin reads no catalog: 400 commits, %lu catalog reads, %lu state records read "
                "by their write transactions; seed %llu\n",
                reads, record_reads, (unsigned long long)seed);
  assert_int_equal(reads, 0);
  assert_int_equal(record_reads, 0); /* each commit's record is its base's (edit_log.c) */
  check_all(idx, ver, salt);

  uint8_t key[ET_KEY_MAX];
  size_t klen = et_key(NIDS - 1, salt, key);
  uint32_t theirs = clock++;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    tern_index *w;
    if (tern_open(&w, dir, TERN_FOREGROUND, NULL) != TERN_OK) _exit(2);
    tern_txn *t;
    int ok = tern_txn_begin(&t, w, 0) == TERN_OK &&
             tern_put(t, key, klen, &theirs, sizeof theirs, NULL, 0) == TERN_OK &&
             tern_commit(t) == TERN_OK;
    _exit(tern_close(w) == TERN_OK && ok ? 0 : 3);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ver[NIDS - 1] = theirs;
  counts c0 = now();
  tern_txn *t;
  assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_OK);
  assert_true(now().catalog_reads - c0.catalog_reads >= 1); /* the id moved: read */
  uint32_t got = 0;
  size_t vlen = 0;
  assert_int_equal(tern_txn_get(t, key, klen, &got, sizeof got, &vlen), TERN_OK);
  assert_int_equal(got, theirs);
  uint8_t mine[ET_KEY_MAX];
  size_t mlen = et_key(0, salt, mine);
  uint32_t v = clock++;
  assert_int_equal(tern_put(t, mine, mlen, &v, sizeof v, NULL, 0), TERN_OK);
  ver[0] = v;
  assert_int_equal(tern_commit(t), TERN_OK);
  /* LMDB's id moved past this process's last commit: the record is read */
  assert_true(now().record_reads - c0.record_reads >= 1);
  check_all(idx, ver, salt);
  assert_int_equal(tern_verify(idx), TERN_OK);
  assert_int_equal(tern_close(idx), TERN_OK);
  tu_rmtree(dir);
  free(dir);
}

/* The other half of the rule: another process's commit is noticed by the
 * commit counter and loaded once (one state, one buffer view when asked),
 * and nothing more after that while this process writes again. */
static void test_reload_after_other_process(void **state) {
  (void)state;
  char *dir;
  tern_index *idx = open_fresh(&dir, TERN_FILTER_BITS_PER_KEY);
  uint32_t ver[NIDS] = {0};
  put_range(idx, 0, 0, 10, ver, 99, 1);
  check_all(idx, ver, 99);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    tern_index *w;
    if (tern_open(&w, dir, TERN_FOREGROUND, NULL) != TERN_OK) _exit(2);
    tern_txn *t;
    uint32_t v = 2;
    uint8_t key[ET_KEY_MAX];
    int ok = tern_txn_begin(&t, w, 0) == TERN_OK &&
             tern_put(t, key, et_key(20, 99, key), &v, sizeof v, NULL, 0) == TERN_OK &&
             tern_commit(t) == TERN_OK;
    _exit(tern_close(w) == TERN_OK && ok ? 0 : 3);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ver[20] = 2;
  counts c0 = now();
  check_all(idx, ver, 99); /* another process committed: one state loaded */
  counts c1 = now();
  assert_int_equal(c1.state_loads - c0.state_loads, 1);
  put_range(idx, 0, 30, 40, ver, 99, 3); /* the transaction's view: one buffer load */
  check_all(idx, ver, 99);
  counts c2 = now();
  assert_int_equal(c2.state_loads, c1.state_loads);
  assert_true(c2.buffer_loads - c1.buffer_loads <= 1);
  for (int i = 0; i < 50; i++) put_range(idx, 0, 40 + (uint32_t)i, 41 + (uint32_t)i, ver, 99, 4);
  check_all(idx, ver, 99);
  counts c3 = now();
  assert_int_equal(c3.state_loads, c2.state_loads);
  assert_int_equal(c3.buffer_loads, c2.buffer_loads);
  assert_int_equal(tern_close(idx), TERN_OK);
  tu_rmtree(dir);
  free(dir);
}

static void test_get_probes(void **state) {
  (void)state;
  for (int mode = 0; mode < 3; mode++) {
    int disjoint = mode == 1, filtered = mode != 2; /* mode 2: segments without filters */
    tu_rng r;
    tu_rng_init(&r, 0x70726f62u + (uint64_t)mode);
    char *dir;
    tern_index *idx = open_fresh(&dir, filtered ? TERN_FILTER_BITS_PER_KEY : 0);
    seg_ref *segs = calloc(NSEGS, sizeof *segs);
    assert_non_null(segs);
    for (size_t i = 0; i < NSEGS; i++) {
      tern_txn *t;
      assert_int_equal(tern_txn_begin(&t, idx, TERN_TXN_BULK), TERN_OK);
      for (size_t k = 0; k < PERSEG; k++) {
        tu_fill(&r, segs[i].keys[k], KLEN);
        if (disjoint) segs[i].keys[k][0] = (uint8_t)(0x10 * (i + 1));
        assert_int_equal(tern_put(t, segs[i].keys[k], KLEN, segs[i].keys[k], KLEN, NULL, 0),
                         TERN_OK);
      }
      assert_int_equal(tern_commit(t), TERN_OK);
      qsort(segs[i].keys, PERSEG, KLEN, key_cmp);
    }
    tern_stats *st;
    assert_int_equal(tern_stats_get(&st, idx), TERN_OK);
    assert_int_equal(st->nsegments, NSEGS);
    tern_stats_free(st);
    open_segments(dir, segs);
    assert_int_equal(tern_verify(idx), TERN_OK); /* the index's filter pages checked too */
    tern_snapshot *s;
    assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
    tern_cfilter_test_tuning.order = 1; /* lines first: filters tested, as the model says */
    tern_get_counts absent = {0}, present = {0};
    for (int round = 0; round < 2000; round++) {
      uint8_t key[KLEN];
      if (round % 2) { /* present, in a random segment */
        const seg_ref *sg = &segs[tu_below(&r, NSEGS)];
        memcpy(key, sg->keys[tu_below(&r, PERSEG)], KLEN);
        check_get(s, segs, disjoint, key, &present);
      } else { /* random: absent but for a 2^-96 chance */
        tu_fill(&r, key, KLEN);
        if (disjoint && round % 4 == 0) key[0] = (uint8_t)(0x10 * (1 + tu_below(&r, NSEGS)));
        check_get(s, segs, disjoint, key, &absent);
      }
    }
    /* Edge keys: every segment's first and last key, and keys just off them. */
    for (size_t i = 0; i < NSEGS; i++) {
      uint8_t key[KLEN];
      for (int end = 0; end < 2; end++) {
        memcpy(key, segs[i].keys[end ? PERSEG - 1 : 0], KLEN);
        check_get(s, segs, disjoint, key, &present);
        key[KLEN - 1] = (uint8_t)(key[KLEN - 1] + (end ? 1 : -1));
        check_get(s, segs, disjoint, key, &absent);
      }
    }
    /* Absent keys reach a block only through a false positive (about 1%
     * at the default 10 bits per key). */
    printf("probes (%s ranges%s): absent keys: %lu filter checks, %lu block probes\n",
           disjoint ? "disjoint" : "overlapping", filtered ? "" : ", no filters",
           absent.filter_checks, absent.block_probes);
    if (filtered)
      assert_true(absent.block_probes * 20 <= absent.filter_checks);
    else
      assert_int_equal(absent.block_probes, absent.filter_checks);
    if (!disjoint) assert_true(absent.filter_checks >= 1000 * (NSEGS - 1));
    assert_int_equal(tern_snapshot_close(s), TERN_OK);
    tern_cfilter_test_tuning.order = 0;
    for (size_t i = 0; i < NSEGS; i++)
      tern_seg_close(segs[i].seg);
    free(segs);
    assert_int_equal(tern_close(idx), TERN_OK);
    free(dir);
  }
}

/* With the background worker merging the buffer's runs while one-document
 * commits go on, every transaction starts from the view its predecessor
 * handed forward: none reads the buffer back from the catalog (a read of
 * the worker's inside a commit's window once made the next transaction
 * rebuild the view at O(buffer), a multi-millisecond stall). */
static void test_worker_keeps_view(void **state) {
  (void)state;
  et_prefer_tmpfs();
  char *dir = tu_tmpdir("counts-worker");
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 1u << 30; /* no flush: only the runs' merges */
  tern_index *idx;
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE, &o), TERN_OK);
  uint64_t commits = 30000 * (uint64_t)tu_scale(), first = 0;
  for (uint64_t i = 0; i < commits; i++) {
    char key[32];
    int klen = snprintf(key, sizeof key, "key-%08llu", (unsigned long long)i);
    tern_txn *t;
    assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_OK);
    assert_int_equal(tern_put(t, key, (size_t)klen, &i, sizeof i, NULL, 0), TERN_OK);
    assert_int_equal(tern_commit(t), TERN_OK);
    if (i == 0) first = atomic_load(&tern_engine_count.buffer_loads);
  }
  assert_int_equal(atomic_load(&tern_engine_count.buffer_loads) - first, 0);
  tern_snapshot *s;
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  for (uint64_t i = 0; i < commits; i += 97) {
    char key[32];
    int klen = snprintf(key, sizeof key, "key-%08llu", (unsigned long long)i);
    uint64_t got = 0;
    size_t vlen;
    assert_int_equal(tern_get(s, key, (size_t)klen, &got, sizeof got, &vlen), TERN_OK);
    assert_int_equal(got, i);
  }
  tern_snapshot_close(s);
  tern_close(idx);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_commit_counts),
      cmocka_unit_test(test_no_reloads),
      cmocka_unit_test(test_reload_after_other_process),
      cmocka_unit_test(test_begin_reads_no_catalog),
      cmocka_unit_test(test_get_probes),
      cmocka_unit_test(test_worker_keeps_view),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
