/* SPDX-License-Identifier: MIT */
/* Live docs against a plain bitset reference: every deletion pattern at
 * sizes around the 65,536-doc chunk boundary, every query (is_live, both
 * iterators with next, next_batch and advance mixed, cost, counts,
 * deleted docs counted over ranges, an array filtered by is_live),
 * copy-on-write isolation, the choice between a runs set and a chunk
 * directory, and .liv round trips; hostile .liv bytes in
 * test_livedocs_format.c. */
#include "codec/livedocs.h"
#include "codec/livedocs_impl.h" /* white box: which shape a set took */
#include "tests/common/testutil.h"

#include "codec/status.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the reference: a bitset of deleted docs --- */

typedef struct ref {
  uint32_t max_doc;
  uint32_t deleted;
  uint64_t *bits;
} ref;

static void ref_init(ref *r, uint32_t max_doc) {
  r->max_doc = max_doc;
  r->deleted = 0;
  r->bits = calloc((size_t)max_doc / 64 + 1, 8);
  assert_non_null(r->bits);
}
static int ref_has(const ref *r, uint32_t d) { return (int)((r->bits[d >> 6] >> (d & 63)) & 1); }
static void ref_del(ref *r, uint32_t d) {
  if (!ref_has(r, d)) r->deleted++;
  r->bits[d >> 6] |= 1ull << (d & 63);
}
static void ref_copy(ref *dst, const ref *src) {
  ref_init(dst, src->max_doc);
  memcpy(dst->bits, src->bits, ((size_t)src->max_doc / 64 + 1) * 8);
  dst->deleted = src->deleted;
}
/* First doc >= from that is deleted (want == 1) or live (want == 0). */
static uint32_t ref_next(const ref *r, uint32_t from, int want_deleted) {
  for (uint32_t d = from; d < r->max_doc; d++)
    if (ref_has(r, d) == want_deleted) return d;
  return TERN_LD_END;
}

/* Sets bits [at, at + n) of a chunk's words, none at or past len. */
static void set_span(uint64_t *words, uint32_t at, uint32_t n, uint32_t len) {
  for (uint32_t q = 0; q < n && at + q < len; q++) words[(at + q) >> 6] |= 1ull << ((at + q) & 63u);
}

/* --- patterns --- */

enum { P_RANDOM, P_CLUSTERED, P_UNIFORM, P_SCATTERED, P_EMPTY, P_ALL, P_COUNT };

/* The docs a pattern deletes (any order, may repeat); *n set. */
static uint32_t *pattern_docs(tu_rng *rng, int pattern, uint32_t max_doc, double rate, size_t *n) {
  size_t cap = (size_t)max_doc + 16, k = 0;
  uint32_t *d = malloc(cap * sizeof *d);
  assert_non_null(d);
  switch (pattern) {
  case P_RANDOM:
    for (uint32_t i = 0; i < max_doc; i++)
      if ((double)tu_below(rng, 1u << 30) < rate * (double)(1u << 30)) d[k++] = i;
    break;
  case P_CLUSTERED: {
    uint64_t want = (uint64_t)(rate * max_doc), runs = 1 + tu_below(rng, 6);
    for (uint64_t r = 0; r < runs && max_doc; r++) {
      uint32_t len = (uint32_t)(want / runs + 1), at = (uint32_t)tu_below(rng, max_doc);
      for (uint32_t i = at; i < max_doc && i - at < len; i++) d[k++] = i;
    }
    break;
  }
  case P_UNIFORM: {
    uint32_t every = rate > 0 ? (uint32_t)(1.0 / rate) : 1;
    for (uint32_t i = (uint32_t)tu_below(rng, every); i < max_doc; i += every) d[k++] = i;
    break;
  }
  case P_SCATTERED:
    for (uint32_t w = 0; (uint64_t)w * 64 < max_doc; w++) {
      uint32_t i = w * 64 + (uint32_t)tu_below(rng, 64);
      if (i < max_doc) d[k++] = i;
    }
    break;
  case P_ALL:
    for (uint32_t i = 0; i < max_doc; i++) d[k++] = i;
    break;
  default:
    break;
  }
  for (size_t i = k; i > 1; i--) { /* shuffle: apply takes any order */
    size_t j = tu_below(rng, i);
    uint32_t t = d[i - 1];
    d[i - 1] = d[j];
    d[j] = t;
  }
  *n = k;
  return d;
}

/* --- checks of every query against the reference --- */

static void check_counts(const tern_livedocs *ld, const ref *r) {
  assert_int_equal(tern_livedocs_max_doc(ld), r->max_doc);
  assert_int_equal(tern_livedocs_deleted(ld), r->deleted);
  assert_int_equal(tern_livedocs_live(ld), r->max_doc - r->deleted);
  size_t dense = (size_t)r->max_doc / 8;
  /* data within 1% of the dense bitset's bytes, plus a fixed header */
  assert_true(tern_livedocs_memory(ld) <= dense + dense / 100 + 512);
}

static void check_is_live(const tern_livedocs *ld, const ref *r, tu_rng *rng) {
  if (r->max_doc <= 300000) {
    for (uint32_t d = 0; d < r->max_doc; d++) assert_int_equal(tern_livedocs_is_live(ld, d), !ref_has(r, d));
  } else {
    for (int i = 0; i < 200000; i++) {
      uint32_t d = (uint32_t)tu_below(rng, r->max_doc);
      assert_int_equal(tern_livedocs_is_live(ld, d), !ref_has(r, d));
    }
  }
  assert_int_equal(tern_livedocs_is_live(ld, r->max_doc), 0);
  assert_int_equal(tern_livedocs_is_live(ld, UINT32_MAX), 0);
}

static void check_walk(const tern_livedocs *ld, const ref *r, int live) {
  tern_ld_iter it;
  if (live)
    tern_livedocs_iter_live(&it, ld);
  else
    tern_livedocs_iter_deleted(&it, ld);
  assert_int_equal(tern_ld_iter_cost(&it), live ? r->max_doc - r->deleted : r->deleted);
  uint32_t want = ref_next(r, 0, !live), got, seen = 0;
  while ((got = tern_ld_iter_next(&it)) != TERN_LD_END) {
    if (got != want)
      print_error("walk %s of max_doc %u (%u deleted, %s): got %u, want %u\n", live ? "live" : "deleted",
                  r->max_doc, r->deleted, tern_livedocs_form(ld), got, want);
    assert_int_equal(got, want);
    assert_int_equal(it.doc, got);
    want = ref_next(r, got + 1, !live);
    seen++;
  }
  assert_int_equal(want, TERN_LD_END);
  assert_int_equal(seen, live ? r->max_doc - r->deleted : r->deleted);
  assert_int_equal(tern_ld_iter_next(&it), TERN_LD_END); /* stays done */
  assert_int_equal(tern_ld_iter_advance(&it, 0), TERN_LD_END);
}

/* Mixed next() and advance() to random targets, some behind the cursor. */
static void check_advance(const tern_livedocs *ld, const ref *r, int live, tu_rng *rng) {
  for (int round = 0; round < 4; round++) {
    tern_ld_iter it;
    if (live)
      tern_livedocs_iter_live(&it, ld);
    else
      tern_livedocs_iter_deleted(&it, ld);
    uint32_t pos = 0; /* first doc not yet returned or skipped */
    for (int step = 0; step < 300; step++) {
      uint32_t got, want;
      uint64_t kind = tu_below(rng, 4);
      if (kind == 0) {
        got = tern_ld_iter_next(&it);
        want = ref_next(r, pos, !live);
      } else {
        uint64_t span = kind == 1 ? 70 : kind == 2 ? 70000 : (uint64_t)r->max_doc / 8 + 2;
        uint32_t target = (uint32_t)(pos + tu_below(rng, span)) - (kind == 1 && pos > 10 ? 10 : 0);
        if (tu_below(rng, 50) == 0) target = r->max_doc + (uint32_t)tu_below(rng, 3);
        got = tern_ld_iter_advance(&it, target);
        want = ref_next(r, target > pos ? target : pos, !live);
      }
      assert_int_equal(got, want);
      if (got == TERN_LD_END) break;
      pos = got + 1;
    }
  }
}

/* next_batch() with caps from 1 up, checked doc by doc; rounds after the
 * first mix in next() and advance().  Nothing may be written past cap. */
static void check_batch(const tern_livedocs *ld, const ref *r, int live, tu_rng *rng) {
  static const size_t caps[] = {1, 2, 3, 5, 16, 63, 64, 65, 255, 1024};
  uint32_t *out = malloc((1024 + 8) * sizeof *out);
  assert_non_null(out);
  for (int round = 0; round < 3; round++) {
    tern_ld_iter it;
    if (live)
      tern_livedocs_iter_live(&it, ld);
    else
      tern_livedocs_iter_deleted(&it, ld);
    uint32_t pos = 0, want; /* first doc not yet returned or skipped */
    for (;;) {
      uint64_t kind = round ? tu_below(rng, 8) : 0;
      if (kind < 5) {
        size_t cap = caps[tu_below(rng, round ? 10 : 4) + (round ? 0 : 6)];
        for (size_t i = 0; i < 8; i++) out[cap + i] = 0xdeadbeefu;
        size_t got = tern_ld_iter_next_batch(&it, out, cap);
        assert_true(got <= cap);
        for (size_t i = 0; i < 8; i++) assert_int_equal(out[cap + i], 0xdeadbeefu);
        for (size_t i = 0; i < got; i++) {
          want = ref_next(r, pos, !live);
          if (out[i] != want)
            print_error("batch %s of max_doc %u (%u deleted, %s), cap %zu: out[%zu] = %u, want %u\n",
                        live ? "live" : "deleted", r->max_doc, r->deleted, tern_livedocs_form(ld), cap, i,
                        out[i], want);
          assert_int_equal(out[i], want);
          pos = want + 1;
        }
        if (!got) {
          assert_int_equal(ref_next(r, pos, !live), TERN_LD_END);
          assert_int_equal(tern_ld_iter_next_batch(&it, out, cap), 0); /* stays done */
          assert_int_equal(tern_ld_iter_next(&it), TERN_LD_END);
          break;
        }
        assert_int_equal(it.doc, out[got - 1]);
      } else {
        uint32_t got;
        if (kind == 5) {
          got = tern_ld_iter_next(&it);
          want = ref_next(r, pos, !live);
        } else {
          uint32_t target = pos + (uint32_t)tu_below(rng, kind == 6 ? 300 : 70000);
          got = tern_ld_iter_advance(&it, target);
          want = ref_next(r, target, !live);
        }
        assert_int_equal(got, want);
        if (got == TERN_LD_END) break;
        pos = got + 1;
      }
    }
  }
  free(out);
}

/* Deleted docs in [from, to), counted through the deleted-docs iterator
 * (advance, then next): the library has no range count, since nothing in
 * it asked for one. */
static uint32_t count_deleted(const tern_livedocs *ld, uint32_t from, uint32_t to) {
  uint32_t max_doc = tern_livedocs_max_doc(ld), n = 0;
  if (to > max_doc) to = max_doc;
  if (from >= to) return 0;
  tern_ld_iter it;
  tern_livedocs_iter_deleted(&it, ld);
  for (uint32_t d = tern_ld_iter_advance(&it, from); d != TERN_LD_END && d < to;
       d = tern_ld_iter_next(&it))
    n++;
  return n;
}

/* Keeps the docs of the sorted docs[0..n) that are live (so none >=
 * max_doc), by tern_livedocs_is_live; how many remain. */
static size_t live_filter(const tern_livedocs *ld, uint32_t *docs, size_t n) {
  size_t out = 0;
  for (size_t i = 0; i < n; i++) {
    docs[out] = docs[i];
    out += (size_t)tern_livedocs_is_live(ld, docs[i]);
  }
  return out;
}

static void check_count_deleted(const tern_livedocs *ld, const ref *r, tu_rng *rng) {
  /* prefix counts of the reference make every range O(1) */
  uint32_t *pre = malloc(((size_t)r->max_doc + 1) * sizeof *pre);
  assert_non_null(pre);
  pre[0] = 0;
  for (uint32_t d = 0; d < r->max_doc; d++) pre[d + 1] = pre[d] + (uint32_t)ref_has(r, d);
  assert_int_equal(count_deleted(ld, 0, r->max_doc), r->deleted);
  assert_int_equal(count_deleted(ld, 0, UINT32_MAX), r->deleted);
  assert_int_equal(count_deleted(ld, 5, 5), 0);
  assert_int_equal(count_deleted(ld, 9, 3), 0);
  for (int i = 0; i < 500; i++) {
    uint32_t a = (uint32_t)tu_below(rng, (uint64_t)r->max_doc + 1);
    uint32_t b = i & 1 ? (uint32_t)tu_below(rng, (uint64_t)r->max_doc + 1)
                       : a + (uint32_t)tu_below(rng, 200);
    if (i % 7 == 0) a &= ~0xffffu, b = a + 65536 * (uint32_t)tu_below(rng, 3); /* chunk edges */
    uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
    uint32_t chi = hi > r->max_doc ? r->max_doc : hi, clo = lo > chi ? chi : lo;
    assert_int_equal(count_deleted(ld, lo, hi), pre[chi] - pre[clo]);
  }
  free(pre);
}

static void check_filter(const tern_livedocs *ld, const ref *r, tu_rng *rng) {
  size_t n = 0, cap = 4096;
  uint32_t *docs = malloc((cap + 4) * sizeof *docs), *want = malloc((cap + 4) * sizeof *want);
  assert_non_null(docs);
  assert_non_null(want);
  uint64_t step = (uint64_t)r->max_doc / cap + 1;
  for (uint64_t d = tu_below(rng, step + 1); d < r->max_doc && n < cap; d += 1 + tu_below(rng, 2 * step))
    docs[n++] = (uint32_t)d;
  size_t w = 0;
  for (size_t i = 0; i < n; i++)
    if (!ref_has(r, docs[i])) want[w++] = docs[i];
  docs[n++] = r->max_doc; /* not of this segment: dropped */
  assert_int_equal(live_filter(ld, docs, n), w);
  assert_memory_equal(docs, want, w * sizeof *docs);
  assert_int_equal(live_filter(ld, docs, 0), 0);
  free(docs);
  free(want);
}

static const uint8_t SEGID[16] = "segment-id-0001";

static void check_round_trip(const tern_livedocs *ld, const ref *r) {
  uint8_t *buf, *buf2;
  size_t len, len2;
  assert_int_equal(tern_livedocs_write(ld, SEGID, &buf, &len), TERN_OK);
  tern_livedocs *back;
  assert_int_equal(tern_livedocs_read(&back, buf, len, SEGID, r->max_doc, r->deleted), TERN_OK);
  assert_int_equal(tern_livedocs_deleted(back), r->deleted);
  assert_int_equal(tern_livedocs_memory(back), tern_livedocs_memory(ld));
  assert_string_equal(tern_livedocs_form(back), tern_livedocs_form(ld));
  check_walk(back, r, 0);
  assert_int_equal(tern_livedocs_write(back, SEGID, &buf2, &len2), TERN_OK);
  assert_int_equal(len2, len); /* one encoding per set */
  assert_memory_equal(buf2, buf, len);
  assert_int_equal(tern_livedocs_read(&back, buf, len, SEGID, r->max_doc, r->deleted + 1) < 0, 1);
  tern_livedocs_free(back);
  free(buf);
  free(buf2);
}

static void check_all(const tern_livedocs *ld, const ref *r, tu_rng *rng) {
  check_counts(ld, r);
  check_is_live(ld, r, rng);
  check_walk(ld, r, 0);
  check_walk(ld, r, 1);
  check_advance(ld, r, 0, rng);
  check_advance(ld, r, 1, rng);
  check_batch(ld, r, 0, rng);
  check_batch(ld, r, 1, rng);
  check_count_deleted(ld, r, rng);
  check_filter(ld, r, rng);
  check_round_trip(ld, r);
}

/* Applies docs in a few batches; each generation is checked, and the
 * previous one must still match its own reference afterwards. */
static void run_pattern(tu_rng *rng, uint32_t max_doc, int pattern, double rate) {
  size_t n;
  uint32_t *docs = pattern_docs(rng, pattern, max_doc, rate, &n);
  ref r, old_r;
  ref_init(&r, max_doc);
  tern_livedocs *ld;
  assert_int_equal(tern_livedocs_new(&ld, max_doc), TERN_OK);
  assert_string_equal(tern_livedocs_form(ld), "none");
  size_t done = 0;
  int batches = 1 + (int)tu_below(rng, 3);
  uint32_t *batch = malloc((n + 8) * sizeof *batch);
  assert_non_null(batch);
  for (int b = 0; b < batches; b++) {
    size_t take = b + 1 == batches ? n - done : (size_t)tu_below(rng, n - done + 1), m = 0;
    for (size_t i = 0; i < take; i++) batch[m++] = docs[done + i];
    for (size_t i = 0; i < 4 && done; i++) batch[m++] = docs[tu_below(rng, done)]; /* no-ops */
    if (take) batch[m++] = docs[done]; /* a duplicate within the batch */
    ref_copy(&old_r, &r);
    for (size_t i = 0; i < take; i++) ref_del(&r, docs[done + i]);
    tern_livedocs *next;
    assert_int_equal(tern_livedocs_apply(&next, ld, batch, m), TERN_OK);
    check_counts(ld, &old_r); /* the old generation is unchanged */
    check_walk(ld, &old_r, 0);
    tern_livedocs_free(ld);
    ld = next;
    done += take;
    free(old_r.bits);
  }
  free(batch);
  check_all(ld, &r, rng);
  if (pattern == P_EMPTY) assert_string_equal(tern_livedocs_form(ld), "none");
  if (pattern == P_ALL && max_doc) assert_string_equal(tern_livedocs_form(ld), "runs");
  tern_livedocs_free(ld);
  free(r.bits);
  free(docs);
}

static const uint32_t SIZES[] = {0, 1, 2, 63, 64, 65, 65535, 65536, 65537, 131072, 200003};

static void run_sizes(int pattern, const double *rates, size_t nrates, uint64_t salt) {
  tu_rng rng;
  tu_rng_init(&rng, salt);
  for (size_t s = 0; s < sizeof SIZES / sizeof *SIZES; s++)
    for (size_t i = 0; i < nrates; i++) run_pattern(&rng, SIZES[s], pattern, rates[i]);
}

static void test_random(void **state) {
  (void)state;
  const double rates[] = {0.001, 0.01, 0.05, 0.3, 0.97};
  run_sizes(P_RANDOM, rates, 5, 11);
}
static void test_clustered(void **state) {
  (void)state;
  const double rates[] = {0.001, 0.05, 0.5};
  run_sizes(P_CLUSTERED, rates, 3, 12);
}
static void test_uniform(void **state) {
  (void)state;
  const double rates[] = {0.001, 0.01, 0.05, 0.5};
  run_sizes(P_UNIFORM, rates, 4, 13);
}
static void test_scattered(void **state) {
  (void)state;
  const double rates[] = {0};
  run_sizes(P_SCATTERED, rates, 1, 14);
}
static void test_empty_and_all(void **state) {
  (void)state;
  const double rates[] = {0};
  run_sizes(P_EMPTY, rates, 1, 15);
  run_sizes(P_ALL, rates, 1, 16);
}

/* A larger segment, is_live sampled; every chunk takes a different pattern. */
static void test_large_mixed(void **state) {
  (void)state;
  tu_rng rng;
  tu_rng_init(&rng, 17);
  uint32_t max_doc = 1000003;
  ref r;
  ref_init(&r, max_doc);
  size_t cap = 0, n = 0;
  uint32_t *all = NULL;
  for (uint32_t c = 0; (uint64_t)c * 65536 < max_doc; c++) {
    uint32_t len = max_doc - c * 65536 < 65536 ? max_doc - c * 65536 : 65536;
    size_t k;
    double rates[] = {0.0005, 0.01, 0.04, 0.2};
    uint32_t *d = pattern_docs(&rng, (int)tu_below(&rng, P_COUNT), len, rates[tu_below(&rng, 4)], &k);
    all = realloc(all, (cap = n + k + 1) * sizeof *all);
    for (size_t i = 0; i < k; i++) all[n++] = d[i] + c * 65536;
    free(d);
  }
  (void)cap;
  for (size_t i = 0; i < n; i++) ref_del(&r, all[i]);
  tern_livedocs *empty, *ld;
  assert_int_equal(tern_livedocs_new(&empty, max_doc), TERN_OK);
  assert_int_equal(tern_livedocs_apply(&ld, empty, all, n), TERN_OK);
  check_all(ld, &r, &rng);
  tern_livedocs_free(ld);
  tern_livedocs_free(empty);
  free(all);
  free(r.bits);
}

static void test_apply_rejects_out_of_range(void **state) {
  (void)state;
  tern_livedocs *ld, *out = (tern_livedocs *)(uintptr_t)1;
  assert_int_equal(tern_livedocs_new(&ld, 1000), TERN_OK);
  uint32_t docs[] = {3, 999, 1000};
  assert_int_equal(tern_livedocs_apply(&out, ld, docs, 3), TERN_EINVAL);
  assert_ptr_equal(out, (tern_livedocs *)(uintptr_t)1); /* nothing made */
  assert_int_equal(tern_livedocs_deleted(ld), 0);
  assert_int_equal(tern_livedocs_apply(&out, ld, docs, 2), TERN_OK);
  assert_int_equal(tern_livedocs_deleted(out), 2);
  tern_livedocs *again;
  assert_int_equal(tern_livedocs_apply(&again, out, docs, 2), TERN_OK); /* re-deleting: no-op */
  assert_int_equal(tern_livedocs_deleted(again), 2);
  assert_int_equal(tern_livedocs_apply(&again, out, NULL, 1) , TERN_EINVAL);
  tern_livedocs_free(again);
  tern_livedocs *zero;
  assert_int_equal(tern_livedocs_new(&zero, 0), TERN_OK);
  uint32_t d0 = 0;
  assert_int_equal(tern_livedocs_apply(&again, zero, &d0, 1), TERN_EINVAL);
  assert_int_equal(tern_livedocs_apply(&again, zero, NULL, 0), TERN_OK);
  tern_livedocs_free(again);
  tern_livedocs_free(zero);
  assert_int_equal(tern_livedocs_new(&zero, UINT32_MAX), TERN_EINVAL);
  tern_livedocs_free(out);
  tern_livedocs_free(ld);
}

/* The largest max_doc: chunk arithmetic must not overflow near 2^32. */
static void test_max_doc_limit(void **state) {
  (void)state;
  uint32_t max_doc = UINT32_MAX - 1;
  tern_livedocs *ld, *next;
  assert_int_equal(tern_livedocs_new(&ld, max_doc), TERN_OK);
  uint32_t docs[] = {0, 65536, max_doc - 1, max_doc - 2, max_doc - 64};
  assert_int_equal(tern_livedocs_apply(&next, ld, docs, 5), TERN_OK);
  assert_int_equal(tern_livedocs_deleted(next), 5);
  assert_int_equal(tern_livedocs_is_live(next, max_doc - 1), 0);
  assert_int_equal(tern_livedocs_is_live(next, max_doc - 3), 1);
  assert_int_equal(count_deleted(next, max_doc - 100, max_doc), 3);
  tern_ld_iter it;
  tern_livedocs_iter_deleted(&it, next);
  assert_int_equal(tern_ld_iter_advance(&it, max_doc - 63), max_doc - 2);
  assert_int_equal(tern_ld_iter_next(&it), max_doc - 1);
  assert_int_equal(tern_ld_iter_next(&it), TERN_LD_END);
  tern_livedocs_iter_live(&it, next);
  assert_int_equal(tern_ld_iter_advance(&it, max_doc - 3), max_doc - 3);
  assert_int_equal(tern_ld_iter_next(&it), TERN_LD_END);
  tern_livedocs_free(next);
  tern_livedocs_free(ld);
}

/* Generations share chunks across threads: each thread derives and drops
 * its own generations of one shared base while reading it (run under TSan
 * and ASan to check the reference counts). */
static tern_livedocs *g_base;
static void *thread_main(void *arg) {
  uint32_t salt = (uint32_t)(uintptr_t)arg;
  for (uint32_t i = 0; i < 200; i++) {
    uint32_t d = (salt * 7919u + i * 104729u) % tern_livedocs_max_doc(g_base);
    tern_livedocs *g;
    if (tern_livedocs_apply(&g, g_base, &d, 1) != TERN_OK) return (void *)1;
    if (tern_livedocs_is_live(g, d) || tern_livedocs_deleted(g) < tern_livedocs_deleted(g_base))
      return (void *)1;
    (void)tern_livedocs_is_live(g_base, d);
    tern_livedocs_free(g);
  }
  return NULL;
}
static void test_shared_chunks_across_threads(void **state) {
  (void)state;
  tern_livedocs *empty;
  assert_int_equal(tern_livedocs_new(&empty, 300000), TERN_OK);
  uint32_t docs[600];
  for (uint32_t i = 0; i < 600; i++) docs[i] = i * 499;
  assert_int_equal(tern_livedocs_apply(&g_base, empty, docs, 600), TERN_OK);
  tern_livedocs_free(empty);
  pthread_t t[4];
  for (uintptr_t i = 0; i < 4; i++) assert_int_equal(pthread_create(&t[i], NULL, thread_main, (void *)i), 0);
  for (int i = 0; i < 4; i++) {
    void *rc;
    pthread_join(t[i], &rc);
    assert_null(rc);
  }
  assert_int_equal(tern_livedocs_deleted(g_base), 600);
  tern_livedocs_free(g_base);
}

/* The forms chosen are the smallest in the obvious cases. */
static void test_forms(void **state) {
  (void)state;
  tern_livedocs *empty, *ld;
  assert_int_equal(tern_livedocs_new(&empty, 65536), TERN_OK);
  uint32_t d[40000];
  for (uint32_t i = 0; i < 60; i++) d[i] = i * 1000;
  assert_int_equal(tern_livedocs_apply(&ld, empty, d, 60), TERN_OK);
  assert_string_equal(tern_livedocs_form(ld), "sparse");
  tern_livedocs_free(ld);
  for (uint32_t i = 0; i < 40000; i++) d[i] = 1000 + i;
  assert_int_equal(tern_livedocs_apply(&ld, empty, d, 40000), TERN_OK);
  assert_string_equal(tern_livedocs_form(ld), "runs");
  tern_livedocs_free(ld);
  for (uint32_t i = 0; i < 30000; i++) d[i] = i * 2 + (i & 1); /* no runs, too full for arrays */
  assert_int_equal(tern_livedocs_apply(&ld, empty, d, 30000), TERN_OK);
  assert_string_equal(tern_livedocs_form(ld), "dense");
  assert_true(tern_livedocs_memory(ld) <= 8192 + 512);
  tern_livedocs_free(ld);
  tern_livedocs_free(empty);
}

/* A set of a few runs is held as one list of runs: a few bytes, whatever
 * the segment's size; up to LD_SET_RUNS_MAX runs, beyond that a directory;
 * deleting the gaps between runs turns a directory back into runs. */
static void test_runs_set(void **state) {
  (void)state;
  tu_rng rng;
  tu_rng_init(&rng, 18);
  uint32_t max_doc = 6000011;
  tern_livedocs *empty, *ld, *next;
  assert_int_equal(tern_livedocs_new(&empty, max_doc), TERN_OK);
  assert_null(empty->slots);
  assert_true(tern_livedocs_memory(empty) <= 64);
  ref r;
  ref_init(&r, max_doc);
  /* four clustered runs across chunk boundaries, one ending at max_doc */
  uint32_t *d = malloc(200000 * sizeof *d), n = 0;
  assert_non_null(d);
  const uint32_t at[4][2] = {{65530, 65536 * 3 + 7}, {1000000, 1000000}, {2000000, 2012345},
                             {max_doc - 500, max_doc - 1}};
  for (int i = 0; i < 4; i++)
    for (uint32_t x = at[i][0]; x <= at[i][1]; x++) d[n++] = x, ref_del(&r, x);
  assert_int_equal(tern_livedocs_apply(&ld, empty, d, n), TERN_OK);
  assert_null(ld->slots);
  assert_int_equal(ld->nruns, 4);
  assert_true(tern_livedocs_memory(ld) <= 48 + 4 * 8); /* CRoaring: ~117 bytes for such sets */
  assert_string_equal(tern_livedocs_form(ld), "runs");
  check_all(ld, &r, &rng);
  /* LD_SET_RUNS_MAX runs: still a runs set; one more: a directory */
  ref r2;
  ref_copy(&r2, &r);
  n = 0;
  for (uint32_t i = 4; i < LD_SET_RUNS_MAX; i++) {
    uint32_t x = 2100000 + i * 15000;
    for (uint32_t k = 0; k < 1 + (i % 3); k++) d[n++] = x + k, ref_del(&r2, x + k);
  }
  assert_int_equal(tern_livedocs_apply(&next, ld, d, n), TERN_OK);
  assert_null(next->slots);
  assert_int_equal(next->nruns, LD_SET_RUNS_MAX);
  check_all(next, &r2, &rng);
  check_walk(ld, &r, 0); /* the old generation is unchanged */
  tern_livedocs_free(ld);
  ld = next;
  uint32_t one = 1500001;
  assert_int_equal(tern_livedocs_apply(&next, ld, &one, 1), TERN_OK);
  ref_del(&r2, one);
  assert_non_null(next->slots);
  check_all(next, &r2, &rng);
  tern_livedocs_free(ld);
  ld = next;
  /* 300 short runs: a directory; deleting the gaps leaves one run */
  ref r3;
  ref_init(&r3, 70000);
  tern_livedocs *e3, *gap;
  assert_int_equal(tern_livedocs_new(&e3, 70000), TERN_OK);
  n = 0;
  for (uint32_t i = 0; i < 300; i++)
    for (uint32_t k = 0; k < 10; k++) d[n++] = 100 + i * 15 + k, ref_del(&r3, 100 + i * 15 + k);
  assert_int_equal(tern_livedocs_apply(&next, e3, d, n), TERN_OK);
  assert_non_null(next->slots);
  check_all(next, &r3, &rng);
  n = 0;
  for (uint32_t x = 100; x < 100 + 300 * 15; x++)
    if (!ref_has(&r3, x)) d[n++] = x, ref_del(&r3, x);
  assert_int_equal(tern_livedocs_apply(&gap, next, d, n), TERN_OK);
  assert_null(gap->slots);
  assert_int_equal(gap->nruns, 1);
  check_all(gap, &r3, &rng);
  tern_livedocs_free(gap);
  tern_livedocs_free(next);
  tern_livedocs_free(e3);
  tern_livedocs_free(ld);
  tern_livedocs_free(empty);
  free(d);
  free(r.bits);
  free(r2.bits);
  free(r3.bits);
}

/* A chunk's runs counted from its own form (tern_ld_chunk_runs, what
 * settling a set reads) equal those of its words, with its first and last
 * doc, for chunks of every form, full and partial lengths, sparse to
 * dense, scattered and clustered. */
static void test_chunk_runs(void **state) {
  (void)state;
  tu_rng rng;
  tu_rng_init(&rng, 0x72756e73);
  printf("seed %#x\n", 0x72756e73);
  uint64_t *words = calloc(LD_CHUNK_WORDS, 8), *back = calloc(LD_CHUNK_WORDS, 8);
  assert_non_null(words);
  assert_non_null(back);
  int seen[8] = {0};
  for (int round = 0; round < 400; round++) {
    uint32_t len = round % 3 ? 65536u : 1u + (uint32_t)tu_below(&rng, 65536);
    uint32_t nw = (len + 63u) / 64u, n = (uint32_t)tu_below(&rng, round % 5 ? 3000 : len + 1);
    uint32_t span = 1u + (uint32_t)tu_below(&rng, 64); /* clustered deletions */
    memset(words, 0, 8u * LD_CHUNK_WORDS);
    for (uint32_t i = 0; i < n; i++) {
      uint32_t at = (uint32_t)tu_below(&rng, len);
      set_span(words, at, span, len);
    }
    if (round % 7 == 0) words[0] |= 1; /* the first doc, and the last */
    if (round % 11 == 0) words[(len - 1u) >> 6] |= 1ull << ((len - 1u) & 63u);
    ld_chunk k;
    tern_ld_chunk_choose(&k, words, len);
    if (k.n == 0) continue; /* no chunk */
    assert_int_equal(tern_ld_chunk_build(&k, words, len), TERN_OK);
    seen[k.form & 7] = 1;
    memset(back, 0, 8u * LD_CHUNK_WORDS);
    tern_ld_chunk_to_words(&k, back);
    assert_memory_equal(back, words, 8u * nw);
    int first, last;
    assert_int_equal(tern_ld_chunk_runs(&k, len, &first, &last), tern_ld_count_runs(words, nw));
    assert_int_equal(first, (int)(words[0] & 1u));
    assert_int_equal(last, (int)((words[(len - 1u) >> 6] >> ((len - 1u) & 63u)) & 1u));
    if (k.p) tern_ld_payload_release(k.p);
  }
  assert_true(seen[LD_ARRAY] && seen[LD_BITMAP] && seen[LD_RUNS] && seen[LD_FULL]);
  free(words);
  free(back);
}

/* A few deletions joined to an array chunk without a bitmap
 * (tern_ld_chunk_rebuild_sparse) make the very chunk the bitmap's way
 * makes: form, shift, lengths and payload bytes; or decline (0) exactly
 * when that way picks another form, and say "nothing new" (2) exactly
 * when every offset was deleted already. */
static void test_chunk_rebuild_sparse(void **state) {
  (void)state;
  tu_rng rng;
  tu_rng_init(&rng, 0x73706172);
  printf("seed %#x\n", 0x73706172);
  uint64_t *words = calloc(LD_CHUNK_WORDS, 8);
  uint16_t *room = malloc(70000 * sizeof *room);
  assert_non_null(words);
  assert_non_null(room);
  int outcomes[3] = {0}, shifts[2] = {0};
  for (int round = 0; round < 3000; round++) {
    uint32_t len = round % 4 ? 65536u : 1u + (uint32_t)tu_below(&rng, 65536);
    uint32_t nw = (len + 63u) / 64u;
    /* an old chunk: none, or an array of up to a few thousand offsets */
    memset(words, 0, 8u * LD_CHUNK_WORDS);
    uint32_t olds = round % 5 == 0 ? 0 : (uint32_t)tu_below(&rng, round % 3 ? 300 : 6000);
    uint32_t span = 1u + (uint32_t)tu_below(&rng, round % 7 ? 2 : 40);
    for (uint32_t i = 0; i < olds; i++) {
      uint32_t at = (uint32_t)tu_below(&rng, len);
      set_span(words, at, span, len);
    }
    if (round % 6 == 1) { /* bursts near a bucket's bound: 10-40 offsets in a window of 2^6..2^10 */
      for (uint32_t b = (uint32_t)tu_below(&rng, 8); b-- > 0;) {
        uint32_t w = 64u << tu_below(&rng, 5), at = (uint32_t)tu_below(&rng, len);
        for (uint32_t q = 10u + (uint32_t)tu_below(&rng, 31); q-- > 0;) {
          uint32_t d = at + (uint32_t)tu_below(&rng, w);
          if (d < len) words[d >> 6] |= 1ull << (d & 63u);
        }
      }
    }
    ld_chunk old;
    tern_ld_chunk_choose(&old, words, len);
    int have_old = old.n > 0 && old.form == LD_ARRAY;
    if (have_old) assert_int_equal(tern_ld_chunk_build(&old, words, len), TERN_OK);
    else memset(words, 0, 8u * LD_CHUNK_WORDS);
    /* a commit's few deletions, some of them deleted already */
    uint32_t m = 1u + (uint32_t)tu_below(&rng, 64);
    uint16_t add[64];
    for (uint32_t i = 0; i < m; i++) {
      add[i] = (uint16_t)tu_below(&rng, len);
      if (have_old && i % 3 == 0 && old.n) { /* one of the old ones */
        uint64_t w;
        uint32_t wi = (uint32_t)tu_below(&rng, nw);
        while (!(w = words[wi])) wi = (wi + 1u) % nw;
        add[i] = (uint16_t)(wi * 64u + (uint32_t)__builtin_ctzll(w));
      }
    }
    for (uint32_t i = 1; i < m; i++) /* ascending, repeats kept */
      for (uint32_t j = i; j > 0 && add[j - 1] > add[j]; j--) {
        uint16_t t = add[j];
        add[j] = add[j - 1];
        add[j - 1] = t;
      }
    ld_chunk sparse;
    int rc = tern_ld_chunk_rebuild_sparse(&sparse, have_old ? &old : NULL, add, m, len, room);
    /* the bitmap's way */
    uint32_t before = have_old ? old.n : 0;
    for (uint32_t i = 0; i < m; i++) words[add[i] >> 6] |= 1ull << (add[i] & 63u);
    ld_chunk want;
    tern_ld_chunk_choose(&want, words, len);
    assert_true(rc >= 0 && rc <= 2);
    outcomes[rc]++;
    if (rc == 2) {
      assert_true(have_old);
      assert_int_equal(want.n, before);
    } else if (rc == 0) {
      assert_int_not_equal(want.form, LD_ARRAY);
    } else {
      assert_int_equal(want.form, LD_ARRAY);
      assert_int_equal(tern_ld_chunk_build(&want, words, len), TERN_OK);
      assert_int_equal(sparse.form, want.form);
      assert_int_equal(sparse.shift, want.shift);
      shifts[want.shift > 8]++;
      assert_int_equal(sparse.len, want.len);
      assert_int_equal(sparse.n, want.n);
      size_t bytes = tern_ld_payload_bytes(want.form, want.shift, want.len, want.n);
      assert_memory_equal(sparse.p->data, want.p->data, bytes);
      tern_ld_payload_release(sparse.p);
      tern_ld_payload_release(want.p);
    }
    if (have_old) tern_ld_payload_release(old.p);
  }
  printf("sparse rebuilds: %d declined, %d built (%d of one-byte entries, %d of two), %d "
         "unchanged\n",
         outcomes[0], outcomes[1], shifts[0], shifts[1], outcomes[2]);
  assert_true(outcomes[0] > 0 && outcomes[1] > 0 && outcomes[2] > 0);
  assert_true(shifts[0] > 0 && shifts[1] > 0); /* both entry widths built */
  free(words);
  free(room);
}

/* A chunk's form priced from its runs (tern_ld_chunk_choose_runs, no
 * bitmap) is the one its bitmap gets (tern_ld_chunk_choose): form, shift,
 * lengths and bytes, on random runs of every length — single docs, runs
 * of 10-40 that fill buckets up to the scan bound and past it, runs over
 * whole buckets — in full and short chunks. */
static void test_chunk_choose_runs(void **state) {
  (void)state;
  tu_rng rng;
  tu_rng_init(&rng, 0x63727573);
  printf("seed %#x\n", 0x63727573);
  uint64_t *words = calloc(LD_CHUNK_WORDS, 8);
  uint32_t *first = malloc(70000 * sizeof *first), *last = malloc(70000 * sizeof *last);
  assert_non_null(words);
  assert_non_null(first);
  assert_non_null(last);
  int seen[8] = {0};
  for (int round = 0; round < 3000; round++) {
    uint32_t len = round % 3 ? 65536u : 1u + (uint32_t)tu_below(&rng, 65536);
    uint32_t nw = (len + 63u) / 64u, runs = 1u + (uint32_t)tu_below(&rng, round % 4 ? 40 : 400);
    uint32_t longest = round % 5 == 0 ? 1u : 1u << tu_below(&rng, round % 7 ? 6 : 12);
    memset(words, 0, 8u * LD_CHUNK_WORDS);
    uint32_t window = 64u << tu_below(&rng, 11); /* runs crowded into one part of the chunk */
    uint32_t from = (uint32_t)tu_below(&rng, len);
    for (uint32_t i = 0; i < runs; i++) {
      uint32_t at = (from + (uint32_t)tu_below(&rng, window)) % len;
      uint32_t l = 1u + (uint32_t)tu_below(&rng, longest);
      set_span(words, at, l, len);
    }
    if (round % 3 == 1) { /* many single docs and a few runs over whole buckets */
      for (uint32_t i = (uint32_t)tu_below(&rng, 6000); i-- > 0;) {
        set_span(words, (uint32_t)tu_below(&rng, len), 1, len);
      }
      for (uint32_t i = 1u + (uint32_t)tu_below(&rng, 3); i-- > 0;) {
        uint32_t at = (uint32_t)tu_below(&rng, len), l = 30u + (uint32_t)tu_below(&rng, 600);
        set_span(words, at, l, len);
      }
    }
    if (round % 3 == 2) { /* short runs across bucket edges, near the scan bound */
      for (uint32_t i = 300u + (uint32_t)tu_below(&rng, 700); i-- > 0;) {
        set_span(words, (uint32_t)tu_below(&rng, len), 1, len);
      }
      for (uint32_t i = 5u + (uint32_t)tu_below(&rng, 16); i-- > 0;) {
        uint32_t edge = (((uint32_t)tu_below(&rng, len) >> 6) + 1u) << (6u + tu_below(&rng, 5));
        uint32_t at = edge - 1u - (uint32_t)tu_below(&rng, 35), l = 2u + (uint32_t)tu_below(&rng, 40);
        set_span(words, at, l, len);
      }
    }
    uint32_t nr = 0; /* the bitmap's maximal runs */
    assert_true(tern_ld_words_runs(words, nw, 0, first, last, &nr, 70000));
    ld_chunk want, got;
    size_t wb = tern_ld_chunk_choose(&want, words, len);
    size_t gb = tern_ld_chunk_choose_runs(&got, first, last, nr, len);
    assert_int_equal(got.form, want.form);
    assert_int_equal(got.shift, want.shift);
    assert_int_equal(got.len, want.len);
    assert_int_equal(got.n, want.n);
    assert_int_equal(gb, wb);
    seen[want.form & 7]++;
    if (want.form == LD_ARRAY) seen[5 + (want.shift > 8)]++;
  }
  printf("forms: %d array (%d of one-byte entries, %d of two), %d bitmap, %d runs, %d full\n",
         seen[LD_ARRAY], seen[5], seen[6], seen[LD_BITMAP], seen[LD_RUNS], seen[LD_FULL]);
  assert_true(seen[LD_ARRAY] && seen[LD_BITMAP] && seen[LD_RUNS] && seen[5] && seen[6]);
  free(words);
  free(first);
  free(last);
}

/* A set's shape is the one the cost rule picks, whichever way apply
 * took (a runs set's deletions merged as runs, livedocs_runs.c, or the
 * directory built and settled): a runs set the rule keeps, a directory
 * it would not turn into runs; and the docs are the reference's.  Sets
 * grown commit by commit from empty, a few deletions at a time —
 * scattered, clustered, across chunk boundaries, repeats and docs
 * deleted already — on segments of one to many chunks. */
static void test_shape_either_way(void **state) {
  (void)state;
  tu_rng rng;
  tu_rng_init(&rng, 0x72756e32);
  printf("seed %#x\n", 0x72756e32);
  int shapes[2] = {0}, flips = 0;
  for (int round = 0; round < 60; round++) {
    uint32_t max_doc = round % 3 ? 1u + (uint32_t)tu_below(&rng, 400000) : 65536u * (1u + round % 5);
    ref r;
    ref_init(&r, max_doc);
    tern_livedocs *ld;
    assert_int_equal(tern_livedocs_new(&ld, max_doc), TERN_OK);
    uint32_t d[64];
    for (int commit = 0; commit < 120; commit++) {
      size_t n = 1u + (size_t)tu_below(&rng, commit % 10 ? 3 : 64);
      uint32_t span = commit % 4 ? 1u : 1u + (uint32_t)tu_below(&rng, 300);
      for (size_t i = 0; i < n; i++) {
        d[i] = (uint32_t)tu_below(&rng, max_doc);
        if (i && commit % 5 == 0) d[i] = d[i - 1]; /* a repeat */
      }
      if (span > 1 && n < 60) { /* a range: up to 60 docs from one start */
        uint32_t at = d[0];
        for (n = 0; n < 60 && n < span && at + n < max_doc; n++) d[n] = at + (uint32_t)n;
      }
      for (size_t i = 0; i < n; i++) ref_del(&r, d[i]);
      int was_runs = ld->slots == NULL;
      tern_livedocs *next;
      assert_int_equal(tern_livedocs_apply(&next, ld, d, n), TERN_OK);
      tern_livedocs_free(ld);
      ld = next;
      check_counts(ld, &r);
      if (!ld->slots) { /* the rule keeps it a runs set */
        tern_livedocs *dir;
        assert_int_equal(tern_ld_expand(&dir, ld), TERN_OK);
        assert_true(tern_ld_runs_cheaper(dir));
        tern_livedocs_free(dir);
      } else {
        assert_false(tern_ld_runs_cheaper(ld));
      }
      shapes[ld->slots != NULL]++;
      flips += was_runs && ld->slots;
    }
    check_is_live(ld, &r, &rng);
    check_walk(ld, &r, 0);
    tern_livedocs_free(ld);
    free(r.bits);
  }
  printf("shapes: %d runs sets, %d directories, %d runs sets became directories\n", shapes[0],
         shapes[1], flips);
  assert_true(shapes[0] > 0 && shapes[1] > 0 && flips > 0);
}

int main(void) {
  tu_seed();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random),
      cmocka_unit_test(test_clustered),
      cmocka_unit_test(test_uniform),
      cmocka_unit_test(test_scattered),
      cmocka_unit_test(test_empty_and_all),
      cmocka_unit_test(test_large_mixed),
      cmocka_unit_test(test_apply_rejects_out_of_range),
      cmocka_unit_test(test_max_doc_limit),
      cmocka_unit_test(test_shared_chunks_across_threads),
      cmocka_unit_test(test_forms),
      cmocka_unit_test(test_runs_set),
      cmocka_unit_test(test_chunk_runs),
      cmocka_unit_test(test_chunk_rebuild_sparse),
      cmocka_unit_test(test_chunk_choose_runs),
      cmocka_unit_test(test_shape_either_way),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
