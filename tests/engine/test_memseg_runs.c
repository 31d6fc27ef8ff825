/* SPDX-License-Identifier: MIT */
/*
 * test_memseg_runs.c — the layered buffer view (engine/buffer/memseg_runs.c)
 * against a reference array (id -> version, 0 absent), over random commits
 * of one to hundreds of puts and removals: every view, and older views
 * kept while newer ones are built on them, answers find (also a get's,
 * through the runs' filters, and a get's record, through the indexed
 * runs' documents by slot), value and its flat rank order exactly as
 * the reference of its own commit.
 */
#include "tests/engine/enginetest.h"

#include "engine/format/catalog_schema.h"
#include "engine/buffer/memseg.h"
#include "engine/maint/worker.h"

enum { NKEYS = 700, KEEP = 6 };

/* A run of the n docs (ascending, unique) copied with their bytes, as a
 * commit builds one: tern_mrun_new, then tern_mrun_push each. */
static int mrun_copy(const tern_mdoc *docs, size_t n, tern_mrun **out) {
  tern_mrun *r;
  int rc = tern_mrun_new(n, n * 8, &r); /* room for some of the bytes: the rest in chunks */
  for (size_t i = 0; rc == TERN_OK && i < n; i++) rc = tern_mrun_push(r, &docs[i]);
  if (rc == TERN_OK) *out = r;
  else if (r) tern_mrun_put(r);
  return rc;
}

typedef struct view {
  tern_memseg *m;
  uint32_t ver[NKEYS];
} view;

static uint8_t keys[NKEYS][ET_KEY_MAX];
static size_t klens[NKEYS];
static uint32_t *order; /* ids in key order */

static int cmp_ids(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return tern_key_cmp(keys[x], klens[x], keys[y], klens[y]);
}

static void make_keys(uint64_t salt) {
  order = malloc(NKEYS * sizeof *order);
  for (uint32_t i = 0; i < NKEYS; i++) {
    klens[i] = et_key(i, salt, keys[i]);
    order[i] = i;
  }
  qsort(order, NKEYS, sizeof *order, cmp_ids);
}

static void check_value(const tern_memseg *m, size_t h, uint32_t id, uint32_t ver) {
  tern_slice v;
  assert_int_equal(tern_memseg_value(m, h, &v), TERN_OK);
  uint8_t want[8];
  memcpy(want, &id, 4);
  memcpy(want + 4, &ver, 4);
  assert_int_equal(v.len, 8);
  assert_memory_equal(v.data, want, 8);
}

static void check_view(const view *w) {
  size_t live = 0;
  for (uint32_t i = 0; i < NKEYS; i++) {
    ptrdiff_t h = tern_memseg_find(w->m, keys[i], klens[i]);
    /* A get's find, the runs' filters tested first: the same answer
     * (a filter never rules out a key its run holds, tombstones too). */
    tern_filter_key fk;
    tern_filter_key_init(&fk, tern_filter_hash(keys[i], klens[i]));
    assert_int_equal(tern_memseg_find_key(w->m, keys[i], klens[i], &fk), h);
    /* A get's record, from the indexed runs' refs by slot: the same. */
    const uint8_t *rec = NULL;
    size_t rlen = 0;
    int got = tern_memseg_get_record(w->m, keys[i], klens[i], &fk, &rec, &rlen);
    assert_int_equal(got, h >= 0);
    if (!w->ver[i]) {
      assert_true(h < 0);
      continue;
    }
    live++;
    assert_true(h >= 0);
    check_value(w->m, (size_t)h, i, w->ver[i]);
    const tern_mdoc *d = tern_memseg_doc(w->m, (size_t)h);
    assert_ptr_equal(rec, d->doc);
    assert_int_equal(rlen, d->key.aux);
  }
  assert_int_equal(w->m->n, live);
  assert_int_equal(tern_memseg_flat(w->m), TERN_OK);
  size_t r = 0;
  for (size_t j = 0; j < NKEYS; j++) {
    uint32_t id = order[j];
    if (!w->ver[id]) continue;
    assert_int_equal(w->m->docs[r].key.len, klens[id]);
    assert_memory_equal(w->m->docs[r].key.p, keys[id], klens[id]);
    check_value(w->m, r, id, w->ver[id]);
    r++;
  }
}

/* One commit: distinct ids, puts and removals of present ids, as a run. */
static tern_memseg *commit(tu_rng *r, const view *prev, view *next, uint32_t *clock,
                           size_t merge_max) {
  memcpy(next->ver, prev->ver, sizeof next->ver);
  size_t want = tu_below(r, 10) ? 1 + tu_below(r, 4) : 1 + tu_below(r, 300);
  uint8_t *picked = calloc(NKEYS, 1);
  tern_mdoc *ops = malloc(want * sizeof *ops);
  uint8_t (*docs)[16] = malloc(want * sizeof *docs);
  size_t n = 0;
  for (size_t k = 0; k < want; k++) {
    uint32_t id = (uint32_t)tu_below(r, NKEYS);
    if (picked[id]) continue;
    picked[id] = 1;
    if (prev->ver[id] && tu_below(r, 3) == 0) { /* taken out of the buffer */
      next->ver[id] = 0;
      ops[n++] = (tern_mdoc){{keys[id], (uint32_t)klens[id], 0}, NULL};
      continue;
    }
    uint32_t ver = ++*clock;
    uint8_t val[8];
    memcpy(val, &id, 4);
    memcpy(val + 4, &ver, 4);
    size_t dlen = tern_rec_doc_encode(docs[n], val, 8, NULL, 0);
    assert_true(dlen <= sizeof docs[n]);
    next->ver[id] = ver;
    ops[n] = (tern_mdoc){{keys[id], (uint32_t)klens[id], (uint32_t)dlen}, docs[n]};
    n++;
  }
  uint32_t *perm = malloc((n ? n : 1) * sizeof *perm);
  tern_mdoc *sorted = malloc((n ? n : 1) * sizeof *sorted);
  assert_int_equal(tern_sort_by_key(perm, ops, sizeof *ops, n, NULL), TERN_OK);
  for (size_t i = 0; i < n; i++)
    sorted[i] = ops[perm[i]];
  tern_mrun *run = NULL;
  assert_int_equal(mrun_copy(sorted, n, &run), TERN_OK);
  size_t live = 0;
  for (uint32_t i = 0; i < NKEYS; i++)
    live += next->ver[i] != 0;
  tern_memseg *m;
  assert_int_equal(tern_memseg_layer(prev->m, run, live, 0, merge_max, &m), TERN_OK);
  free(picked);
  free(ops);
  free(docs);
  free(perm);
  free(sorted);
  return m;
}

/* The view m with the runs [from, to) merged, as the worker installs it;
 * the old view freed. */
static tern_memseg *merge_group(tern_memseg *m, size_t from, size_t to) {
  tern_mrun *merged;
  assert_int_equal(tern_mruns_merge(m, from, to, &merged), TERN_OK);
  tern_memseg *nm;
  assert_int_equal(tern_memseg_remerged(m, from, to, merged, &nm), TERN_OK);
  assert_int_equal(nm->nruns, m->nruns - (to - from) + 1);
  assert_int_equal(nm->n, m->n);
  tern_memseg_free(m);
  return nm;
}

/* Commits layered with merge_max; past TERN_WORKER_RUNS_MAX runs the
 * worker's group (tern_memseg_merge_window) merged, and every 5th commit
 * a random group, bottom or not. */
static void runs_against_reference(uint64_t seed, size_t merge_max) {
  tu_rng r;
  tu_rng_init(&r, seed);
  printf("seed %#llx, merge_max %zu\n", (unsigned long long)seed, merge_max);
  make_keys(tu_next(&r));
  view *ring = calloc(KEEP, sizeof *ring);
  tern_memseg *empty;
  assert_int_equal(tern_memseg_new(&empty), TERN_OK);
  assert_int_equal(tern_memseg_layered(empty, &ring[0].m), TERN_OK);
  check_view(&ring[0]);
  uint32_t clock = 0;
  size_t commits = 1500 * tu_scale(), indexed = 0, windows = 0;
  for (size_t c = 1; c <= commits; c++) {
    view *prev = &ring[(c - 1) % KEEP], *next = &ring[c % KEEP];
    tern_memseg *m = commit(&r, prev, next, &clock, merge_max);
    tern_memseg_free(next->m); /* the oldest view goes; its runs live on in newer ones */
    next->m = m;
    assert_true(m->nruns <= 2 * 10 + 2); /* O(log n) runs */
    for (size_t i = 0; i + 1 < m->nruns; i++) /* a commit merges no more than merge_max */
      assert_true(m->runs[i]->n + m->runs[i + 1]->n > merge_max ||
                  m->runs[i]->n > 2 * m->runs[i + 1]->n || i + 2 < m->nruns);
    if (m->nruns > TERN_WORKER_RUNS_MAX) { /* the worker's group */
      size_t from = 0, to = tern_memseg_merge_window(m, merge_max, &from);
      assert_true(to >= 2 && from + 2 <= to && to + 2 <= m->nruns);
      next->m = merge_group(m, from, to);
      assert_true(next->m->nruns <= TERN_WORKER_RUNS_MAX);
      check_view(next);
      windows++;
    }
    m = next->m;
    if (c % 5 == 0 && m->nruns >= 2) { /* any group of runs, as another window would */
      size_t from = (size_t)tu_below(&r, m->nruns);
      size_t to = from + 1 + (size_t)tu_below(&r, m->nruns - from);
      next->m = merge_group(m, from, to);
      check_view(next);
    }
    m = next->m;
    for (size_t i = 0; i < m->nruns; i++) { /* large runs are found by their hash index */
      assert_true((m->runs[i]->index.cap != 0) == (m->runs[i]->n >= TERN_MRUN_INDEXED));
      assert_true((m->runs[i]->fview.blocks != NULL) == (m->runs[i]->index.cap != 0));
      indexed += m->runs[i]->index.cap != 0;
    }
    if (c % 7 == 0 || c == commits) /* this view and every older one kept */
      for (size_t k = 0; k < KEEP && k <= c; k++)
        check_view(&ring[(c - k) % KEEP]);
  }
  assert_true(indexed > 0); /* both lookups, by index and by binary search, were checked */
  printf("worker groups merged: %zu\n", windows);
  for (size_t k = 0; k < KEEP; k++)
    tern_memseg_free(ring[k].m);
  free(ring);
  free(order);
}

/* Base b's slices are its runs' sketches transposed (runbase.h): bit i
 * of slice s is bit s of run i's sketch, for every run and bit. */
static void check_slices(const tern_runbase *b) {
  assert_int_equal(b->words, (b->n + 63) / 64);
  for (size_t i = 0; i < b->n; i++)
    for (unsigned s = 0; s < 256; s++) {
      int in_sketch = (int)(b->runs[i]->sketch[s / 64] >> (s % 64) & 1);
      int in_slice = (int)(b->slices[s * b->words + i / 64] >> (i % 64) & 1);
      assert_int_equal(in_slice, in_sketch);
    }
}

/* Commits with no worker to merge their runs, which pile up (a worker
 * polls every 10 ms; ~100 runs of a few dozen documents at 200,000
 * commits a second): each view holds the older runs through a base
 * shared with the views before it, not run by run (memseg.h,
 * tern_runbase), every view, the oldest kept ones too, still reads the
 * reference (its gets through the base's slices of the runs' sketches,
 * runbase.h, checked against the sketches), and the small runs' sketches
 * turn away the keys they lack. */
static void test_runs_share_a_base(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x62617365);
  printf("seed %#x\n", 0x62617365);
  make_keys(tu_next(&r));
  view *ring = calloc(KEEP, sizeof *ring);
  tern_memseg *empty;
  assert_int_equal(tern_memseg_new(&empty), TERN_OK);
  assert_int_equal(tern_memseg_layered(empty, &ring[0].m), TERN_OK);
  size_t most = 0, commits = 600;
  uint32_t clock = 0;
  for (size_t c = 1; c <= commits; c++) {
    view *prev = &ring[(c - 1) % KEEP], *next = &ring[c % KEEP];
    tern_memseg *m = commit(&r, prev, next, &clock, TERN_MRUN_MERGE_MAX);
    tern_memseg_free(next->m); /* the oldest view goes: its base lives on in newer ones */
    next->m = m;
    assert_true(m->nbase <= m->nruns);
    assert_true((m->base != NULL) == (m->nbase > 0));
    for (size_t i = 0; i < m->nbase; i++)
      assert_ptr_equal(m->base->runs[i], m->runs[i]);
    if (m->base && m->base != prev->m->base) check_slices(m->base); /* a new base */
    if (m->nruns > 40) /* a few runs past the base: the newest, and up to BASE_SLACK */
      assert_true(m->nruns - m->nbase <= 16);
    most = m->nruns > most ? m->nruns : most;
    if (c % 7 == 0 || c == commits)
      for (size_t k = 0; k < KEEP && k <= c; k++)
        check_view(&ring[(c - k) % KEEP]);
  }
  assert_true(most > 40); /* the runs piled up */
  /* The small runs' sketches turn away keys their runs lack (check_view
   * proved they turn away none they hold): of every (run, key) pair with
   * the key not in the run, at least 90%. */
  const tern_memseg *last = ring[commits % KEEP].m;
  size_t pairs = 0, turned = 0;
  for (size_t ri = 0; ri < last->nruns; ri++) {
    const tern_mrun *run = last->runs[ri];
    if (run->fview.blocks) continue; /* its filter decides */
    for (uint32_t i = 0; i < NKEYS; i++) {
      if (tern_mdocs_find(run->docs, run->n, keys[i], klens[i]) >= 0) continue;
      pairs++;
      turned += !tern_mrun_sketch_may_hold(run->sketch, tern_filter_hash(keys[i], klens[i]));
    }
  }
  printf("sketches turned away %zu of %zu absent keys\n", turned, pairs);
  assert_true(pairs > 0 && turned * 10 >= pairs * 9);
  for (size_t k = 0; k < KEEP; k++)
    tern_memseg_free(ring[k].m);
  free(ring);
  free(order);
}

static void test_runs_against_reference(void **state) {
  (void)state;
  runs_against_reference(0x72756e73, TERN_MRUN_MERGE_MAX_FOREGROUND);
}

/* The commits' smaller merge_max (a background worker): more runs left to
 * the worker's groups, the same answers. */
static void test_runs_small_merges(void **state) {
  (void)state;
  runs_against_reference(0x72756e74, TERN_MRUN_MERGE_MAX);
  runs_against_reference(0x72756e75, 8);
}

/* The worker's group on many one-document commits: run sizes grow
 * geometrically, so the runs stay few, and the documents its merges copy
 * stay within a small multiple of n log n (a group of all the older runs
 * each time would copy O(n^2 / TERN_MRUN_MERGE_MAX)). */
static void test_window_geometric(void **state) {
  (void)state;
  tern_memseg *empty, *m;
  assert_int_equal(tern_memseg_new(&empty), TERN_OK);
  assert_int_equal(tern_memseg_layered(empty, &m), TERN_OK);
  uint8_t doc[16];
  size_t dlen = tern_rec_doc_encode(doc, "v", 1, NULL, 0);
  size_t n = 200000, copied = 0, most = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t key[8];
    for (int b = 0; b < 8; b++) /* ascending: every key new */
      key[b] = (uint8_t)(i >> (56 - 8 * b));
    tern_mdoc d = {{key, 8, (uint32_t)dlen}, doc};
    tern_mrun *run = NULL;
    assert_int_equal(mrun_copy(&d, 1, &run), TERN_OK);
    tern_memseg *next;
    assert_int_equal(tern_memseg_layer(m, run, i + 1, 0, TERN_MRUN_MERGE_MAX, &next), TERN_OK);
    tern_memseg_free(m);
    m = next;
    if (m->nruns > TERN_WORKER_RUNS_MAX) {
      size_t from = 0, to = tern_memseg_merge_window(m, TERN_MRUN_MERGE_MAX, &from);
      assert_true(to >= 2);
      for (size_t k = from; k < to; k++)
        copied += m->runs[k]->n;
      m = merge_group(m, from, to);
    }
    most = m->nruns > most ? m->nruns : most;
  }
  printf("worker copies per document: %.2f; most runs: %zu\n", (double)copied / (double)n, most);
  assert_true(most <= TERN_WORKER_RUNS_MAX + 1);
  assert_true(copied <= 3 * n * 12); /* 3 per level, log2(n / 64) < 12 levels */
  assert_int_equal(tern_memseg_flat(m), TERN_OK);
  assert_int_equal(m->n, n);
  for (size_t i = 0; i < n; i += 997) { /* the keys are all there, in order */
    uint8_t key[8];
    for (int b = 0; b < 8; b++)
      key[b] = (uint8_t)(i >> (56 - 8 * b));
    assert_true(tern_memseg_find(m, key, 8) >= 0);
    assert_memory_equal(m->docs[i].key.p, key, 8);
  }
  tern_memseg_free(m);
}

/* A view whose stated total disagrees with its runs is refused. */
static void test_layer_checks_total(void **state) {
  (void)state;
  tern_memseg *empty, *base, *m = NULL;
  assert_int_equal(tern_memseg_new(&empty), TERN_OK);
  assert_int_equal(tern_memseg_layered(empty, &base), TERN_OK);
  uint8_t doc[16];
  size_t dlen = tern_rec_doc_encode(doc, "v", 1, NULL, 0);
  tern_mdoc d = {{(const uint8_t *)"k", 1, (uint32_t)dlen}, doc};
  tern_mrun *run = NULL;
  assert_int_equal(mrun_copy(&d, 1, &run), TERN_OK);
  assert_int_equal(tern_memseg_layer(base, run, 2, 0, TERN_MRUN_MERGE_MAX, &m), TERN_ECORRUPT);
  assert_null(m);
  tern_memseg_free(base);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_runs_against_reference),
      cmocka_unit_test(test_runs_small_merges),
      cmocka_unit_test(test_runs_share_a_base),
      cmocka_unit_test(test_window_geometric),
      cmocka_unit_test(test_layer_checks_total),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
