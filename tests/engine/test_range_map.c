/* SPDX-License-Identifier: MIT */
/*
 * test_range_map.c — gets over many range-disjoint segments (the state's
 * range map, engine/state/state_ranges.c) against a reference.
 *
 * 13 segments with pairwise disjoint key ranges are built with the public
 * builder and ingested in one call (9 of 200 documents and 4 of 1,500: the
 * merges off: the gets meet them all).  Nine share their keys'
 * 8-byte head ("same-hea..."), so the search must break ties by the whole
 * key.  Every key, keys just off every segment's ends,
 * keys between and beyond the segments are looked up against a sorted
 * reference, and each get tests one range, not 13 (counted).  Then
 * overlapping bulk commits (new keys between the segments' keys: each a
 * segment spanning every range, 3 in all; a get
 * then tests the map's one range and theirs), rewrites and deletes in the
 * write buffer, a deleted range that drops
 * whole segments, and a reopen (the state rebuilt from the catalog): the
 * same checks each time.  Then the map's learnt order: streams of present
 * keys strictly inside the ranges probe blocks and test no filter line,
 * streams of absent ones test the line and probe (almost) no block, each
 * answer checked, on the ingest's state and on a reopened one.  And a
 * map whose keys all share a 23-byte prefix: each get compares its key
 * with one range, not every range in turn.  Every state is also read by
 * tern_get_batch (which sends each key to its map slot) against the
 * reference.
 */
#include "tests/engine/enginetest.h"

#include "engine/util/counters.h"

enum { NSEG = 13, SMALL = 200, LARGE = 1500, MAXK = 9 * SMALL + 4 * LARGE + 4000 };

typedef struct entry {
  char key[40];
  size_t len;
  uint32_t ver; /* 0: absent */
} entry;

typedef struct ref {
  entry *v;
  size_t n;
} ref;

static size_t seg_key(int seg, uint32_t j, char *out) {
  if (seg < 9) return (size_t)sprintf(out, "same-head%02d-%06u", seg, j * 2);
  return (size_t)sprintf(out, "%c%02d-%06u", 'a' + seg, seg, j * 2);
}

static int entry_cmp(const void *x, const void *y) {
  const entry *a = x, *b = y;
  size_t n = a->len < b->len ? a->len : b->len;
  int c = memcmp(a->key, b->key, n);
  return c ? c : (a->len > b->len) - (a->len < b->len);
}

static entry *ref_find(ref *r, const char *key, size_t len) {
  entry e;
  memcpy(e.key, key, len);
  e.len = len;
  return bsearch(&e, r->v, r->n, sizeof e, entry_cmp);
}

static void ref_add(ref *r, const char *key, size_t len, uint32_t ver) {
  entry *e = ref_find(r, key, len);
  if (e) {
    e->ver = ver;
    return;
  }
  assert_true(r->n < MAXK);
  entry x = {{0}, len, ver};
  memcpy(x.key, key, len);
  size_t at = r->n;
  while (at > 0 && entry_cmp(&r->v[at - 1], &x) > 0)
    at--;
  memmove(&r->v[at + 1], &r->v[at], (r->n - at) * sizeof x);
  r->v[at] = x;
  r->n++;
}

static void check_key(tern_snapshot *s, ref *r, const char *key, size_t len) {
  entry *e = ref_find(r, key, len);
  uint32_t v = 0;
  size_t vlen = 0;
  int rc = tern_get(s, key, len, &v, sizeof v, &vlen);
  if (e && e->ver) {
    if (rc != TERN_OK)
      fprintf(stderr, "%.*s: %d, expected version %u\n", (int)len, key, rc, e->ver);
    assert_int_equal(rc, TERN_OK);
    assert_int_equal(vlen, sizeof v);
    assert_int_equal(v, e->ver);
  } else {
    if (rc != TERN_NOTFOUND) fprintf(stderr, "%.*s: %d, expected absent\n", (int)len, key, rc);
    assert_int_equal(rc, TERN_NOTFOUND);
  }
}

/* Every reference key, and keys just off each: one byte more, the last
 * byte one less and one more, a prefix; plus keys outside every range. */
static void check_all(tern_snapshot *s, ref *r, unsigned long *range_checks, size_t *gets) {
  unsigned long before = tern_get_count.range_checks;
  size_t n = 0;
  for (size_t i = 0; i < r->n; i++) {
    char k[48];
    size_t len = r->v[i].len;
    memcpy(k, r->v[i].key, len);
    check_key(s, r, k, len);
    k[len] = '!';
    check_key(s, r, k, len + 1);
    k[len - 1]--;
    check_key(s, r, k, len);
    k[len - 1] += 2;
    check_key(s, r, k, len);
    check_key(s, r, k, len - 3);
    n += 5;
  }
  static const char *const outside[] = {
      "",     "0",        "same-hea",      "same-head", "same-head99",
      "zzzz", "\xff\xff", "same-head08-9", "j09-",      "r17-999999"};
  for (size_t i = 0; i < sizeof outside / sizeof *outside; i++)
    if (outside[i][0]) {
      check_key(s, r, outside[i], strlen(outside[i]));
      n++;
    }
  *range_checks = tern_get_count.range_checks - before;
  *gets = n;
}

/* tern_get_batch of every reference key and of each with '!' appended
 * (absent), 1,000 keys a call, against the reference. */
typedef struct batch_check {
  ref *r;
  const tern_slice *keys;
  size_t checked;
} batch_check;

static int batch_answer(void *payload, size_t i, int status, const void *val, size_t vlen) {
  batch_check *b = payload;
  entry *e = ref_find(b->r, b->keys[i].data, b->keys[i].len);
  if (e && e->ver) {
    uint32_t v;
    assert_int_equal(status, TERN_OK);
    assert_int_equal(vlen, sizeof v);
    memcpy(&v, val, sizeof v);
    assert_int_equal(v, e->ver);
  } else {
    assert_int_equal(status, TERN_NOTFOUND);
  }
  b->checked++;
  return 0;
}

static void check_batch(tern_snapshot *s, ref *r) {
  size_t n = 2 * r->n;
  tern_slice *keys = malloc(n * sizeof *keys);
  char (*bang)[48] = malloc(r->n * sizeof *bang);
  assert_true(keys && bang);
  for (size_t i = 0; i < r->n; i++) {
    memcpy(bang[i], r->v[i].key, r->v[i].len);
    bang[i][r->v[i].len] = '!';
    keys[2 * i] = (tern_slice){r->v[i].key, r->v[i].len};
    keys[2 * i + 1] = (tern_slice){bang[i], r->v[i].len + 1};
  }
  batch_check b = {r, NULL, 0};
  for (size_t at = 0; at < n; at += 1000) {
    b.keys = keys + at;
    ET_OK(tern_get_batch(s, keys + at, n - at < 1000 ? n - at : 1000, batch_answer, &b));
  }
  assert_int_equal(b.checked, n);
  free(bang);
  free(keys);
}

static void build(const char *path, int seg, ref *r) {
  tern_builder *b;
  ET_OK(tern_builder_open(&b, path, NULL));
  uint32_t n = seg < 9 ? SMALL : LARGE;
  for (uint32_t j = 0; j < n; j++) {
    char k[40];
    size_t len = seg_key(seg, j, k);
    uint32_t ver = 1;
    ET_OK(tern_builder_add(b, k, len, &ver, sizeof ver, NULL, 0));
    ref_add(r, k, len, ver);
  }
  ET_OK(tern_builder_finish(b, NULL));
}

/* most_ranges: the most ranges a get may test (0: any number). */
static void check_index(tern_index *idx, ref *r, const char *when, unsigned long most_ranges) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  unsigned long checks;
  size_t gets;
  check_all(s, r, &checks, &gets);
  check_batch(s, r);
  printf("%s: %zu segments, %zu gets, %.2f ranges tested a get\n", when, et_segment_count(idx),
         gets, (double)checks / (double)gets);
  if (most_ranges) assert_true(checks <= most_ranges * gets); /* not one a segment */
  ET_OK(tern_snapshot_close(s));
}

/* What each test works in: its seed, reference, directory and the
 * segments' paths. */
typedef struct fixture {
  tu_rng rng;
  ref r;
  char *dir, *idxdir;
  char *paths[NSEG];
} fixture;

static void fixture_init(fixture *f, const char *name) {
  memset(f, 0, sizeof *f); /* paths a test leaves unset: NULL, freed as such */
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  tu_rng_init(&f->rng, seed);
  f->r = (ref){calloc(MAXK, sizeof(entry)), 0};
  f->dir = tu_tmpdir(name);
  f->idxdir = tu_path(f->dir, "idx");
}

static void fixture_free(fixture *f) {
  for (int i = 0; i < NSEG; i++)
    free(f->paths[i]);
  free(f->r.v);
  tu_rmtree(f->dir);
  free(f->idxdir);
  free(f->dir);
}

/* The NSEG segments built under f->dir (their paths into f->paths,
 * the keys into f->r) and ingested into a new index at f->idxdir opened
 * with o, in a shuffled order (the map sorts by range, not by number). */
static tern_index *ingest_segments(fixture *f, const tern_options *o) {
  for (int i = 0; i < NSEG; i++) {
    char name[16];
    sprintf(name, "seg%02d", i);
    f->paths[i] = tu_path(f->dir, name);
    build(f->paths[i], i, &f->r);
  }
  tern_index *idx;
  ET_OK(tern_open(&idx, f->idxdir, TERN_CREATE | TERN_FOREGROUND, o));
  char *order[NSEG];
  memcpy(order, f->paths, sizeof order);
  for (int i = NSEG - 1; i > 0; i--) {
    int j = (int)tu_below(&f->rng, (uint64_t)i + 1);
    char *x = order[i];
    order[i] = order[j];
    order[j] = x;
  }
  ET_OK(tern_ingest(idx, (const char *const *)order, NSEG, 0));
  assert_int_equal(et_segment_count(idx), NSEG);
  return idx;
}

static void test_disjoint_segments(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f, "range_map");
  tern_options o = et_options_merging(0);
  tern_index *idx = ingest_segments(&f, &o);
  check_index(idx, &f.r, "ingested", 1);

  /* overlapping bulk commits: 1,100 new keys between the segments' keys,
   * spread over every range (a segment each) */
  for (int round = 0; round < 3; round++) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
    for (uint32_t k = 0; k < 1100; k++) {
      char key[40];
      size_t len = seg_key((int)(k % NSEG), (uint32_t)round * 100 + k / NSEG, key);
      key[len - 1]++; /* odd: between the segment's keys */
      uint32_t ver = (uint32_t)(2 + round);
      ET_OK(tern_put(t, key, len, &ver, sizeof ver, NULL, 0));
      ref_add(&f.r, key, len, ver);
    }
    ET_OK(tern_commit(t));
    assert_int_equal(et_segment_count(idx), NSEG + (size_t)round + 1);
    check_index(idx, &f.r, "after an overlapping bulk commit", 2 + round);
  }
  /* rewrites and deletes of the segments' keys, in the buffer */
  {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, 0));
    for (int k = 0; k < 300; k++) {
      int seg = (int)tu_below(&f.rng, NSEG);
      char key[40];
      size_t len = seg_key(seg, (uint32_t)tu_below(&f.rng, SMALL), key);
      entry *e = ref_find(&f.r, key, len);
      if (tu_below(&f.rng, 2)) {
        uint32_t ver = 9;
        ET_OK(tern_put(t, key, len, &ver, sizeof ver, NULL, 0));
        ref_add(&f.r, key, len, ver);
        continue;
      }
      int rc = tern_delete(t, key, len);
      assert_int_equal(rc, e && e->ver ? TERN_OK : TERN_NOTFOUND);
      if (e) e->ver = 0;
    }
    ET_OK(tern_commit(t));
    check_index(idx, &f.r, "after rewrites and deletes", 0);
  }

  /* a range dropping whole segments (k10 to m12, same-head00 and 01) and
   * cutting two others */
  {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, 0));
    tern_slice from = {"j09-000100", 10}, to = {"same-head02-000300", 18};
    ET_OK(tern_delete_range(t, &from, &to));
    ET_OK(tern_commit(t));
    for (size_t i = 0; i < f.r.n; i++) {
      entry x = {{0}, from.len, 0}, y = {{0}, to.len, 0};
      memcpy(x.key, from.data, from.len);
      memcpy(y.key, to.data, to.len);
      if (entry_cmp(&f.r.v[i], &x) >= 0 && entry_cmp(&f.r.v[i], &y) < 0) f.r.v[i].ver = 0;
    }
    check_index(idx, &f.r, "after a deleted range", 0);
  }
  ET_OK(tern_close(idx));
  ET_OK(tern_open(&idx, f.idxdir, TERN_FOREGROUND, &o));
  check_index(idx, &f.r, "reopened", 0);
  ET_OK(tern_compact(idx));
  check_index(idx, &f.r, "compacted", 0);
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  fixture_free(&f);
}

/* A key strictly inside segment seg's range by heads (seg >= 9: the
 * heads "j09-0001" ... differ from its first and last keys'): present
 * (an even number, in the segment) or absent (odd). */
static size_t inside_key(tu_rng *rng, int present, char *out) {
  int seg = 9 + (int)tu_below(rng, NSEG - 9);
  uint32_t j = 100 + (uint32_t)tu_below(rng, 1200);
  size_t len = seg_key(seg, j, out);
  if (!present) out[len - 1]++;
  return len;
}

/* n gets of such keys, each against the reference; the filter checks and
 * block probes they made. */
static void gets_inside(tern_snapshot *s, ref *r, tu_rng *rng, int present, size_t n,
                        unsigned long *filters, unsigned long *blocks) {
  tern_get_counts before = tern_get_count;
  for (size_t i = 0; i < n; i++) {
    char k[40];
    size_t len = inside_key(rng, present, k);
    check_key(s, r, k, len);
  }
  *filters = tern_get_count.filter_checks - before.filter_checks;
  *blocks = tern_get_count.block_probes - before.block_probes;
}

/* Present keys, then absent, twice, each after gets that teach the order. */
static void check_orders(tern_index *idx, ref *r, tu_rng *rng, const char *when) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  enum { N = 2000 };
  unsigned long filters, blocks;
  for (int round = 0; round < 2; round++) {
    gets_inside(s, r, rng, 1, N, &filters, &blocks); /* learning */
    gets_inside(s, r, rng, 1, N, &filters, &blocks);
    printf("%s, present: %lu filter checks, %lu block probes in %d gets\n", when, filters,
           blocks, N);
    assert_int_equal(filters, 0);
    assert_int_equal(blocks, N);
    gets_inside(s, r, rng, 0, N, &filters, &blocks);
    gets_inside(s, r, rng, 0, N, &filters, &blocks);
    printf("%s, absent: %lu filter checks, %lu block probes in %d gets\n", when, filters, blocks,
           N);
    assert_int_equal(filters, N);
    assert_true(blocks < N / 20); /* the filter's false positives */
  }
  ET_OK(tern_snapshot_close(s));
}

/* The map's learnt order (tern_state.map_order): while the gets mostly
 * find their keys, a candidate's filter line is not tested (its block
 * decides); while they mostly do not, the line is, and ends most of them.
 * Either way every answer is the reference's. */
static void test_learnt_order(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f, "range_order");
  tern_options o = et_options_merging(0);
  tern_index *idx = ingest_segments(&f, &o);
  check_orders(idx, &f.r, &f.rng, "ingested"); /* the state the ingest's edit made */
  ET_OK(tern_close(idx));
  ET_OK(tern_open(&idx, f.idxdir, TERN_RDONLY, NULL));
  check_orders(idx, &f.r, &f.rng, "reopened"); /* made from the catalog: lines settled */
  ET_OK(tern_close(idx));
  fixture_free(&f);
}

/* Keys of one tenant and day, an hour a segment: every key starts with
 * the 23 bytes of PREFIX, and so with the same 8-byte head. */
#define PREFIX "tenant-0042/2026-12-04T"
enum { HOURS = 12, PERHOUR = 300 };

static size_t hour_key(int hour, uint32_t j, char *out) {
  return (size_t)sprintf(out, PREFIX "%02d:%06u", hour, j * 2);
}

/* A map whose ranges' keys share far more than their first 8 bytes: its
 * heads are taken past the shared prefix, so that a get compares its key
 * with one range (two when its head ties a range's end), not with every
 * range in turn; keys without the prefix (shorter, other tenants, other
 * days) fall in no range.  Every answer against the reference. */
static void test_shared_prefix(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f, "range_prefix");
  for (int h = 0; h < HOURS; h++) {
    char name[16];
    sprintf(name, "hour%02d", h);
    f.paths[h] = tu_path(f.dir, name);
    tern_builder *b;
    ET_OK(tern_builder_open(&b, f.paths[h], NULL));
    for (uint32_t j = 0; j < PERHOUR; j++) {
      char k[48];
      size_t len = hour_key(h, j, k);
      uint32_t ver = (uint32_t)h + 1;
      ET_OK(tern_builder_add(b, k, len, &ver, sizeof ver, NULL, 0));
      ref_add(&f.r, k, len, ver);
    }
    ET_OK(tern_builder_finish(b, NULL));
  }
  tern_options o = et_options_merging(0);
  tern_index *idx;
  ET_OK(tern_open(&idx, f.idxdir, TERN_CREATE | TERN_FOREGROUND, &o));
  ET_OK(tern_ingest(idx, (const char *const *)f.paths, HOURS, 0));
  assert_int_equal(et_segment_count(idx), HOURS);
  for (int pass = 0; pass < 2; pass++) { /* the ingest's state, then one from the catalog */
    tern_snapshot *s;
    ET_OK(tern_snapshot_open(&s, idx));
    unsigned long before = tern_get_count.map_entries;
    size_t gets = 0;
    for (int i = 0; i < 4000; i++) { /* present and absent (odd), every hour */
      char k[48];
      size_t len = hour_key((int)tu_below(&f.rng, HOURS), (uint32_t)tu_below(&f.rng, PERHOUR), k);
      if (i % 2) k[len - 1]++;
      check_key(s, &f.r, k, len);
      gets++;
    }
    static const char *const off[] = {PREFIX,
                                      "tenant-0042/2026-12-04",
                                      "tenant-0041/2026-12-04T05:000010",
                                      "tenant-0043/2026-12-04T05:000010",
                                      "tenant-0042/2026-12-03T05:000010",
                                      "tenant-0042/2026-12-04T00:",
                                      "tenant-0042/2026-12-04T03:999999",
                                      "tenant-0042/2026-12-04T11:000598",
                                      "tenant-0042/2026-12-04T11:000599",
                                      "tenant-0042/2026-12-04T99:000000",
                                      "tenant"};
    for (size_t i = 0; i < sizeof off / sizeof *off; i++, gets++)
      check_key(s, &f.r, off[i], strlen(off[i]));
    unsigned long entries = tern_get_count.map_entries - before;
    check_batch(s, &f.r);
    printf("shared prefix (%s): %zu gets, %.2f map entries compared a get\n",
           pass ? "reopened" : "ingested", gets, (double)entries / (double)gets);
    assert_true(entries <= gets + gets / 20); /* not HOURS a get */
    ET_OK(tern_snapshot_close(s));
    ET_OK(tern_close(idx));
    ET_OK(tern_open(&idx, f.idxdir, TERN_FOREGROUND, &o));
  }
  /* A second tenant's day, an hour a segment (24): the map's prefix is now
   * "tenant-004", so each tenant's ranges tie by head, and a get finds its
   * range among them by whole keys in two binary searches, not walking
   * every tied range. */
  char *more[24];
  for (int h = 0; h < 24; h++) {
    char name[16];
    sprintf(name, "t43h%02d", h);
    more[h] = tu_path(f.dir, name);
    tern_builder *b;
    ET_OK(tern_builder_open(&b, more[h], NULL));
    for (uint32_t j = 0; j < 100; j++) {
      char k[48];
      size_t len = (size_t)sprintf(k, "tenant-0043/2026-12-04T%02d:%06u", h, j * 2);
      uint32_t ver = 100 + (uint32_t)h;
      ET_OK(tern_builder_add(b, k, len, &ver, sizeof ver, NULL, 0));
      ref_add(&f.r, k, len, ver);
    }
    ET_OK(tern_builder_finish(b, NULL));
  }
  ET_OK(tern_ingest(idx, (const char *const *)more, 24, 0));
  assert_int_equal(et_segment_count(idx), HOURS + 24);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  unsigned long before = tern_get_count.map_entries;
  size_t gets = 0;
  for (int i = 0; i < 4000; i++, gets++) {
    char k[48];
    int t43 = i % 2;
    size_t len = (size_t)sprintf(k, "tenant-00%d/2026-12-04T%02d:%06u", t43 ? 43 : 42,
                                 (int)tu_below(&f.rng, t43 ? 24 : HOURS),
                                 (uint32_t)tu_below(&f.rng, t43 ? 200 : 2 * PERHOUR));
    check_key(s, &f.r, k, len); /* even: present; odd: absent */
  }
  unsigned long entries = tern_get_count.map_entries - before;
  printf("two tenants: %zu gets, %.2f map entries compared a get\n", gets,
         (double)entries / (double)gets);
  check_batch(s, &f.r);
  assert_true(entries <= 13 * gets); /* walking every tied range: about 19 */
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  for (int h = 0; h < 24; h++)
    free(more[h]);
  fixture_free(&f);
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_disjoint_segments),
      cmocka_unit_test(test_learnt_order),
      cmocka_unit_test(test_shared_prefix),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
