/* SPDX-License-Identifier: MIT */
/*
 * test_terms_block_search.c — tern_tb_lower_bound against a sorted array:
 * the restart search (8-byte big-endian words, each probe starting past
 * the prefix both bounds share with the key) and the scan, on keys chosen
 * where they could go wrong: equal to a restart key, one byte short of or
 * past one, differing from one at every byte near an 8-byte boundary,
 * zero bytes where a zero-padded word would hide a length ("ab" against
 * "ab\0"), below and above every term, inside the block prefix, 1024
 * bytes, and keys ending where their memory does (so a read past them
 * faults under ASan).
 */
#include "codec/status.h"
#include "codec/terms_block.h"
#include "tests/common/testutil.h"
#include "tern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct term {
  uint8_t *t;
  uint32_t len;
} term;

static int bytes_cmp(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen) {
  uint32_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  return c ? c : (alen > blen) - (alen < blen);
}

static int term_qcmp(const void *x, const void *y) {
  const term *a = x, *b = y;
  return bytes_cmp(a->t, a->len, b->t, b->len);
}

/* Sorts v and drops duplicates; returns the count left. */
static uint32_t sort_unique(term *v, uint32_t n) {
  qsort(v, n, sizeof *v, term_qcmp);
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (m && term_qcmp(&v[m - 1], &v[i]) == 0) {
      free(v[i].t);
      continue;
    }
    v[m++] = v[i];
  }
  return m;
}

static const tern_tb_field k_field = {.threshold = 1, .inline_max = 64, .has_values = 0,
                                      .max_doc = UINT32_MAX};

/* The reference: the first of v[0..n) >= key, and whether it equals it. */
static uint32_t ref_lower_bound(const term *v, uint32_t n, const uint8_t *key, uint32_t klen,
                                int *exact) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (bytes_cmp(v[mid].t, v[mid].len, key, klen) < 0) lo = mid + 1;
    else hi = mid;
  }
  *exact = lo < n && bytes_cmp(v[lo].t, v[lo].len, key, klen) == 0;
  return lo;
}

/* Looks key up in the block of v[0..n), the key copied to the end of a
 * buffer of its own length (ASan: no read past it). */
static void check_key(const tern_tb_block *b, const term *v, uint32_t n, const uint8_t *key,
                      uint32_t klen) {
  uint8_t *k = malloc(klen ? klen : 1);
  assert_non_null(k);
  if (klen) memcpy(k, key, klen);
  int exact;
  uint32_t want = ref_lower_bound(v, n, key, klen, &exact), idx = UINT32_MAX;
  uint32_t docs[TERN_TB_DOCS_MAX];
  tern_tb_tail t = {.docs = docs};
  tern_tb_iter it;
  int rc = tern_tb_lower_bound(b, k, klen, &idx, &it, &t);
  if (rc != exact || idx != want) {
    fprintf(stderr, "rc %d idx %u, want %d %u (n %u, key of %u bytes:", rc, idx, exact, want, n,
            klen);
    for (uint32_t z = 0; z < klen; z++) fprintf(stderr, " %02x", key[z]);
    fprintf(stderr, ")\n");
  }
  assert_int_equal(rc, exact);
  assert_int_equal(idx, want);
  if (exact) {
    assert_int_equal(t.df, 1);
    assert_int_equal(docs[0], want);
    assert_int_equal(it.entry, want + 1);
  }
  free(k);
}

/* Keys around term v[i]: itself, one byte short, one byte more (0x00,
 * 0xff), its last byte and each of its first 40 bytes one up and down. */
static void check_around(const tern_tb_block *b, const term *v, uint32_t n, const term *s) {
  uint8_t k[TERN_TB_TERM_MAX + 1];
  memcpy(k, s->t, s->len);
  check_key(b, v, n, k, s->len);
  if (s->len > 1) check_key(b, v, n, k, s->len - 1);
  if (s->len < TERN_TB_TERM_MAX) {
    k[s->len] = 0;
    check_key(b, v, n, k, s->len + 1);
    k[s->len] = 0xff;
    check_key(b, v, n, k, s->len + 1);
  }
  for (uint32_t at = 0; at < s->len && at < 40; at++) {
    uint8_t was = k[at];
    for (int d = -1; d <= 1; d += 2) {
      k[at] = (uint8_t)(was + d);
      check_key(b, v, n, k, s->len);
      check_key(b, v, n, k, at + 1);
    }
    k[at] = was;
  }
}

/* Packs v[0..n) into blocks (restart interval `restart`) and checks the
 * keys around every restart key and a sample of the others, random keys
 * of the same shape (gen), and keys below and above the whole block. */
static void check_blocks(tu_rng *r, const term *v, uint32_t n, uint32_t restart,
                         void (*gen)(tu_rng *, term *)) {
  tern_tb_builder *bld;
  assert_int_equal(tern_tb_builder_new(&bld, restart), TERN_OK);
  tern_tb_builder_start(bld, &k_field);
  uint8_t *page = malloc(TERN_TB_PAGE);
  uint32_t *docs = malloc(n * sizeof *docs);
  for (uint32_t i = 0; i < n; i++) docs[i] = 0;
  uint32_t first = 0, blocks = 0;
  for (uint32_t i = 0; i <= n; i++) {
    int full = 1;
    if (i < n) {
      tern_tb_input in = {.term = v[i].t, .len = v[i].len, .df = 1, .docs = &docs[i]};
      docs[i] = i - first;
      full = tern_tb_add(bld, &in);
      assert_true(full == 0 || full == 1);
    }
    if (!full) continue;
    uint32_t cnt = tern_tb_count(bld);
    assert_int_equal(tern_tb_finish(bld, page), TERN_OK);
    tern_tb_block b;
    assert_int_equal(tern_tb_open_lookup(&b, page, &k_field, cnt, "test", blocks), TERN_OK);
    /* The same header saved and opened again over a copy of the page (the
     * first page then scribbled over): every lookup of the odd blocks
     * goes through it, and random keys through both. */
    tern_tb_saved *sv = malloc(sizeof *sv);
    uint8_t *copy = malloc(TERN_TB_PAGE);
    assert_non_null(sv);
    assert_non_null(copy);
    tern_tb_save(&b, sv);
    memcpy(copy, page, TERN_TB_PAGE);
    tern_tb_block b2;
    memset(&b2, 0xa5, sizeof b2);
    tern_tb_open_saved(&b2, sv, copy, "test", blocks);
    assert_int_equal(b2.n, b.n);
    assert_int_equal(b2.nrestarts, b.nrestarts);
    assert_int_equal(b2.keys_start, b.keys_start);
    assert_int_equal(b2.tables, 0);
    assert_null(b2.pair);
    assert_true(b2.rkey == copy + (b.rkey - page));
    assert_true((b2.rtpos == NULL) == (b.rtpos == NULL));
    const tern_tb_block *bs = blocks % 2 ? &b2 : &b;
    const term *bv = v + first;
    for (uint32_t e = 0; e < cnt; e++)
      if (e % b.restart == 0 || e % b.restart == b.restart - 1 || tu_below(r, 8) == 0)
        check_around(bs, bv, cnt, &bv[e]);
    for (int k = 0; k < 200; k++) {
      term g;
      gen(r, &g);
      check_key(&b, bv, cnt, g.t, g.len);
      check_key(&b2, bv, cnt, g.t, g.len);
      free(g.t);
    }
    static const uint8_t lo[1] = {0}, hi[3] = {0xff, 0xff, 0xff};
    check_key(bs, bv, cnt, lo, 1);
    check_key(bs, bv, cnt, hi, 3);
    memset(page, 0x5a, TERN_TB_PAGE); /* b2 reads its own copy only */
    for (uint32_t e = 0; e < cnt; e += 7) check_key(&b2, bv, cnt, bv[e].t, bv[e].len);
    free(copy);
    free(sv);
    blocks++;
    if (i < n) {
      first = i;
      docs[i] = 0;
      tern_tb_input in = {.term = v[i].t, .len = v[i].len, .df = 1, .docs = &docs[i]};
      assert_int_equal(tern_tb_add(bld, &in), 0);
    }
  }
  assert_true(blocks > 0);
  free(docs);
  free(page);
  tern_tb_builder_free(bld);
}

/* Shapes: a shared head of g_shared bytes, then bytes from g_sym symbols
 * starting at g_base, g_min..g_max bytes long. */
static uint32_t g_shared, g_sym, g_min, g_max;
static uint8_t g_base;

static void gen_shape(tu_rng *r, term *out) {
  uint32_t len = g_min + (uint32_t)tu_below(r, g_max - g_min + 1);
  out->t = malloc(len);
  assert_non_null(out->t);
  for (uint32_t k = 0; k < len; k++)
    out->t[k] = k < g_shared ? (uint8_t)('a' + k % 7) : (uint8_t)(g_base + tu_below(r, g_sym));
  out->len = len;
}

static void run_shape(uint32_t shared, uint32_t nsym, uint8_t base, uint32_t min_len,
                      uint32_t max_len, uint32_t nterms, uint32_t restart) {
  tu_rng r;
  tu_rng_init(&r, 0x5ea7c4 + shared * 131 + nsym * 17 + max_len + restart);
  g_shared = shared;
  g_sym = nsym;
  g_base = base;
  g_min = min_len;
  g_max = max_len;
  term *v = calloc(nterms, sizeof *v);
  assert_non_null(v);
  for (uint32_t i = 0; i < nterms; i++) gen_shape(&r, &v[i]);
  uint32_t n = sort_unique(v, nterms);
  check_blocks(&r, v, n, restart, gen_shape);
  for (uint32_t i = 0; i < n; i++) free(v[i].t);
  free(v);
}

/* Restart keys sharing 0 to 40 bytes past the block prefix, so the
 * probes start at every offset around the 8-byte words. */
static void test_shared_heads(void **state) {
  (void)state;
  static const uint32_t shared[] = {0, 1, 7, 8, 9, 15, 16, 17, 24, 31, 33, 40};
  for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++) {
    run_shape(shared[i], 2, '0', shared[i] + 1, shared[i] + 24, 1500, TERN_TB_RESTART);
    run_shape(shared[i], 36, 'a', shared[i] + 1, shared[i] + 12, 1500, 5);
  }
}

/* Bytes 0x00, 0x01 and 0xff: zero bytes that a zero-padded word cannot
 * tell from the end of a key. */
static void test_zero_bytes(void **state) {
  (void)state;
  run_shape(0, 2, 0, 1, 20, 3000, TERN_TB_RESTART);
  run_shape(3, 3, 0xfe, 1, 12, 3000, 3); /* 0xfe, 0xff, 0x00 */
  run_shape(9, 256, 0, 9, 30, 3000, 1);
  /* "ab", "ab\0", "ab\0\0", ...: every length of one zero-padded word. */
  term v[40];
  uint32_t n = 0;
  for (uint32_t len = 2; len < 22; len++)
    for (uint8_t last = 0; last < 2; last++) {
      v[n].t = calloc(len, 1);
      v[n].t[0] = 'a';
      v[n].t[1] = 'b';
      if (len > 2) v[n].t[len - 1] = last;
      v[n].len = len;
      n++;
    }
  n = sort_unique(v, n);
  tu_rng r;
  tu_rng_init(&r, 0x2e70);
  g_shared = 0;
  g_sym = 2;
  g_base = 0;
  g_min = 1;
  g_max = 22;
  for (uint32_t restart = 1; restart <= 4; restart++) check_blocks(&r, v, n, restart, gen_shape);
  for (uint32_t i = 0; i < n; i++) free(v[i].t);
}

/* Terms and keys of up to 1024 bytes (the longest), and a longer key. */
static void test_longest(void **state) {
  (void)state;
  run_shape(1000, 4, 'w', 1001, TERN_TB_TERM_MAX, 40, 2);
  run_shape(0, 26, 'a', 900, TERN_TB_TERM_MAX, 20, 1);
  tern_tb_builder *bld;
  assert_int_equal(tern_tb_builder_new(&bld, TERN_TB_RESTART), TERN_OK);
  tern_tb_builder_start(bld, &k_field);
  uint8_t key[TERN_TB_TERM_MAX + 1];
  memset(key, 'k', sizeof key);
  uint32_t doc = 0;
  tern_tb_input in = {.term = key, .len = 4, .df = 1, .docs = &doc};
  assert_int_equal(tern_tb_add(bld, &in), 0);
  uint8_t *page = malloc(TERN_TB_PAGE);
  assert_int_equal(tern_tb_finish(bld, page), TERN_OK);
  tern_tb_block b;
  assert_int_equal(tern_tb_open_lookup(&b, page, &k_field, 1, "test", 0), TERN_OK);
  uint32_t idx;
  uint32_t docs[TERN_TB_DOCS_MAX];
  tern_tb_tail t = {.docs = docs};
  tern_tb_iter it;
  assert_int_equal(tern_tb_lower_bound(&b, key, TERN_TB_TERM_MAX + 1, &idx, &it, &t), TERN_EINVAL);
  assert_int_equal(tern_tb_lower_bound(&b, key, 4, &idx, &it, &t), 1);
  free(page);
  tern_tb_builder_free(bld);
}

/* Random keys of the benchmark shapes' kind: decimal ids, base-36, mixed
 * case with punctuation, against every restart interval class. */
static void test_random_shapes(void **state) {
  (void)state;
  run_shape(0, 10, '0', 6, 9, 20000, TERN_TB_RESTART);
  run_shape(0, 36, '0', 16, 16, 20000, TERN_TB_RESTART);
  run_shape(2, 60, ' ', 4, 60, 20000, TERN_TB_RESTART);
  run_shape(0, 200, 20, 1, 10, 20000, 7);
  run_shape(5, 36, 'a', 6, 40, 8000, 255);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shared_heads),
      cmocka_unit_test(test_zero_bytes),
      cmocka_unit_test(test_longest),
      cmocka_unit_test(test_random_shapes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
