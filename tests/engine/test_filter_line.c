/* SPDX-License-Identifier: MIT */
/*
 * test_filter_line.c — a segment's filter line (codec/segment.h,
 * tern_seg_filter_line), which a get over many segments keeps beside each
 * slot (engine/state_ranges.c), against the segment's own gate
 * (tern_seg_gate_filter) and a reference of its keys.
 *
 * A segment of random keys is written by a bulk commit and opened with the
 * codec.  Before any filter page is checked the line decides nothing (an
 * unchecked page is never trusted).  Once every page is checked
 * (tern_seg_verify) the line answers exactly what the gate's filter does
 * ("absent" or "maybe"), never "absent" for a key the segment holds, and
 * "absent" for most random keys.  A
 * segment without a filter has a line that decides nothing.  Then gets
 * through the index (slots probed in turn and the range map, both using
 * the lines) are checked against the reference.
 */
#include "tests/engine/enginetest.h"

#include "codec/filter.h"
#include "codec/segment.h"
#include "codec/segment_internal.h" /* tern_seg_filter_missed */

#include <dirent.h>

enum { NKEYS = 3000, KLEN = 14, NPROBES = 20000 };

static int key_cmp(const void *a, const void *b) { return memcmp(a, b, KLEN); }

/* An index in a fresh directory whose one segment holds keys[0..NKEYS). */
static tern_index *make_index(char **dir, uint32_t bloom_bits, uint8_t (*keys)[KLEN], tu_rng *r) {
  et_prefer_tmpfs();
  *dir = tu_tmpdir("filterline");
  tern_options o;
  tern_options_init(&o);
  o.bloom_bits_per_key = bloom_bits;
  tern_index *idx;
  assert_int_equal(tern_open(&idx, *dir, TERN_CREATE | TERN_FOREGROUND, &o), TERN_OK);
  tern_txn *t;
  assert_int_equal(tern_txn_begin(&t, idx, TERN_TXN_BULK), TERN_OK);
  for (size_t i = 0; i < NKEYS; i++) {
    tu_fill(r, keys[i], KLEN);
    assert_int_equal(tern_put(t, keys[i], KLEN, keys[i], KLEN, NULL, 0), TERN_OK);
  }
  assert_int_equal(tern_commit(t), TERN_OK);
  qsort(keys, NKEYS, KLEN, key_cmp);
  return idx;
}

/* The index's one segment, opened with the codec. */
static tern_seg *open_segment(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  char name[64] = "";
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (strstr(e->d_name, ".tix") && tern_seg_file_segment(e->d_name, name, sizeof name) == 0)
      break;
  closedir(d);
  assert_true(name[0] != '\0');
  tern_seg *s;
  assert_int_equal(tern_seg_open(&s, dir, name, TERN_IO_MMAP), TERN_OK);
  return s;
}

static void probe_of(tern_seg_probe *p, const uint8_t *key) {
  assert_int_equal(tern_seg_probe_init(p, key, KLEN), TERN_OK);
}

/* The line against the gate for random keys and every held key; returns
 * how many random keys the line ruled out. */
static size_t compare(const tern_seg *s, uint8_t (*keys)[KLEN], tu_rng *r, int checked) {
  tern_seg_gate g;
  tern_seg_gate_of(s, &g);
  tern_seg_filter_line l;
  tern_seg_filter_line_of(s, &l);
  size_t ruled_out = 0;
  for (size_t i = 0; i < NPROBES; i++) {
    uint8_t key[KLEN];
    tu_fill(r, key, KLEN);
    tern_seg_probe p;
    probe_of(&p, key);
    int absent = tern_seg_filter_line_absent(&l, &p.fk);
    int test = tern_seg_filter_line_test(&l, &p.fk);
    int gate = tern_seg_gate_filter(&g, &p);
    assert_true(gate >= 0);
    assert_int_equal(absent, test == 0);
    if (!checked || !g.filter.blocks) assert_int_equal(test, -1); /* unchecked: nothing */
    if (checked && g.filter.blocks) assert_int_equal(test, gate); /* the gate's own answer */
    /* line_gate: the gate's answer whenever it gives one; unchecked and
     * never asked for (nothing missed yet), "skipped" as the gate says */
    int lg = tern_seg_filter_line_gate(&l, &p.fk);
    if (lg >= 0) assert_int_equal(lg, gate);
    if (test >= 0) assert_int_equal(lg, test);
    if (!checked && g.filter.blocks) assert_int_equal(lg, TERN_SEG_FILTER_SKIPPED);
    /* idle (nothing checked nor asked): every answer "skipped" */
    if (tern_seg_filter_line_idle(&l)) assert_int_equal(lg, TERN_SEG_FILTER_SKIPPED);
    assert_int_equal(tern_seg_filter_line_idle(&l), !checked && g.filter.blocks != NULL);
    if (absent) assert_null(bsearch(key, keys, NKEYS, KLEN, key_cmp));
    ruled_out += (size_t)absent;
  }
  for (size_t i = 0; i < NKEYS; i++) { /* a filter never denies a key it holds */
    tern_seg_probe p;
    probe_of(&p, keys[i]);
    assert_int_equal(tern_seg_filter_line_absent(&l, &p.fk), 0);
  }
  return ruled_out;
}

/* A settled line (tern_seg_filter_line_settle): not before its pages are
 * checked, then (the cached pages checked by the settle itself) it reads
 * no bitmap and answers exactly as the gate; never "absent" for a held key. */
static void check_settled(const tern_seg *s, uint8_t (*keys)[KLEN], tu_rng *r) {
  tern_seg_filter_line l;
  tern_seg_filter_line_of(s, &l);
  tern_seg_filter_line_settle(s, &l, 0);
  assert_int_equal(l.settled, 0); /* nothing checked yet: never settled from the bitmap */
  tern_seg_filter_line_settle(s, &l, 1);
  assert_int_equal(l.settled, 1); /* just written: every page cached */
  tern_seg_gate g;
  tern_seg_gate_of(s, &g);
  for (size_t i = 0; i < NPROBES; i++) {
    uint8_t key[KLEN];
    tu_fill(r, key, KLEN);
    tern_seg_probe p;
    probe_of(&p, key);
    assert_int_equal(tern_seg_filter_line_test(&l, &p.fk), tern_seg_gate_filter(&g, &p));
  }
  for (size_t i = 0; i < NKEYS; i++) {
    tern_seg_probe p;
    probe_of(&p, keys[i]);
    assert_int_equal(tern_seg_filter_line_absent(&l, &p.fk), 0);
  }
}

/* Pages asked for (a miss after a skipped probe, segment_filter.c):
 * line_gate leaves them to the gate (it checks whether the page arrived),
 * and answers as the gate once the page is checked. */
static void check_asked(const tern_seg *s, tern_seg_filter_line *l, tu_rng *r) {
  tern_seg_gate g;
  tern_seg_gate_of(s, &g);
  size_t left = 0;
  for (size_t i = 0; i < NPROBES; i++) {
    uint8_t key[KLEN];
    tu_fill(r, key, KLEN);
    tern_seg_probe p;
    probe_of(&p, key);
    tern_seg_filter_missed(s, p.fk.hash);
    assert_false(tern_seg_filter_line_idle(l)); /* a page asked for */
    int test = tern_seg_filter_line_test(l, &p.fk);
    int lg = tern_seg_filter_line_gate(l, &p.fk);
    if (test < 0) assert_int_equal(lg, -1);
    left += lg < 0;
    int gate = tern_seg_gate_filter(&g, &p); /* checks the page: just written, cached */
    assert_true(gate == 0 || gate == 1);
    if (lg >= 0) assert_int_equal(lg, gate);
    assert_int_equal(tern_seg_filter_line_gate(l, &p.fk), gate); /* checked now */
  }
  assert_true(left > 0);
}

static void test_line_against_gate(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  tu_rng r;
  tu_rng_init(&r, seed);
  printf("seed %llu\n", (unsigned long long)seed);
  static uint8_t keys[NKEYS][KLEN];
  for (int filtered = 1; filtered >= 0; filtered--) {
    char *dir;
    tern_index *idx = make_index(&dir, filtered ? TERN_FILTER_BITS_PER_KEY : 0, keys, &r);
    tern_seg *s = open_segment(dir);
    assert_int_equal(compare(s, keys, &r, 0), 0);
    if (filtered) { /* settled on a segment of its own, opened afresh */
      tern_seg *s2 = open_segment(dir);
      check_settled(s2, keys, &r);
      tern_seg_close(s2);
      tern_seg *s3 = open_segment(dir);
      tern_seg_filter_line l3;
      tern_seg_filter_line_of(s3, &l3);
      check_asked(s3, &l3, &r);
      tern_seg_close(s3);
    }
    assert_int_equal(tern_seg_verify(s), TERN_OK); /* every filter page checked */
    size_t out = compare(s, keys, &r, 1);
    printf("%s: %zu of %d random keys ruled out by the line\n",
           filtered ? "filtered" : "no filter", out, NPROBES);
    if (filtered)
      assert_true(out * 10 >= (size_t)NPROBES * 9); /* about 1% false positives */
    else
      assert_int_equal(out, 0);
    tern_seg_close(s);
    assert_int_equal(tern_close(idx), TERN_OK);
    tu_rmtree(dir);
    free(dir);
  }
}

/* Gets through the index against the reference once its filter pages are
 * checked (tern_verify), over one segment and over many overlapping ones
 * (bulk commits of random keys: slots probed in turn, each ruled out by
 * its line). */
static void test_gets_with_lines(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  tu_rng r;
  tu_rng_init(&r, seed ^ 0x11);
  printf("seed %llu\n", (unsigned long long)seed);
  enum { NSEG = 9, PER = 400 };
  static uint8_t all[NSEG * PER][KLEN];
  et_prefer_tmpfs();
  char *dir = tu_tmpdir("filterline-gets");
  tern_index *idx;
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, NULL), TERN_OK);
  for (size_t sgi = 0; sgi < NSEG; sgi++) {
    tern_txn *t;
    assert_int_equal(tern_txn_begin(&t, idx, TERN_TXN_BULK), TERN_OK);
    for (size_t i = 0; i < PER; i++) {
      uint8_t *k = all[sgi * PER + i];
      tu_fill(&r, k, KLEN);
      assert_int_equal(tern_put(t, k, KLEN, k, KLEN, NULL, 0), TERN_OK);
    }
    assert_int_equal(tern_commit(t), TERN_OK);
  }
  qsort(all, NSEG * PER, KLEN, key_cmp);
  assert_int_equal(tern_verify(idx), TERN_OK); /* every filter page checked */
  tern_snapshot *s;
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  printf("%zu segments\n", tern_snapshot_nsegments(s));
  assert_true(tern_snapshot_nsegments(s) >= 2);
  for (size_t i = 0; i < 20000; i++) {
    uint8_t key[KLEN], val[KLEN];
    if (i % 2)
      memcpy(key, all[tu_below(&r, NSEG * PER)], KLEN);
    else
      tu_fill(&r, key, KLEN);
    int held = bsearch(key, all, NSEG * PER, KLEN, key_cmp) != NULL;
    size_t vlen = 0;
    int rc = tern_get(s, key, KLEN, val, sizeof val, &vlen);
    assert_int_equal(rc, held ? TERN_OK : TERN_NOTFOUND);
    if (held) assert_memory_equal(val, key, KLEN);
  }
  assert_int_equal(tern_snapshot_close(s), TERN_OK);
  assert_int_equal(tern_close(idx), TERN_OK);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_line_against_gate),
      cmocka_unit_test(test_gets_with_lines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
