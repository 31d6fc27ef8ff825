/* SPDX-License-Identifier: MIT */
/*
 * test_terms_block_fprint.c — format 5's fingerprints (a byte per entry at
 * the block's end): tern_tb_lower_bound against a sorted array where the
 * fingerprints could mislead it.
 *
 *   - the lookup goes through them: with every other run's restart key
 *     overwritten (the restart search then lands elsewhere), a format-5
 *     block still finds every key of the intact run, a format-4 block
 *     does not (so the check can fail);
 *   - collisions: blocks whose entries all have one fingerprint, or half
 *     of them, and absent keys with that fingerprint (before, between,
 *     after, sharing a prefix): every answer the reference's;
 *   - a block of one entry, of two, and of the most entries a block takes
 *     (2-byte terms), every restart interval class;
 *   - damaged fingerprints (one, all random, all equal to the key's, all
 *     copied from other entries): every answer still the reference's;
 *   - damaged bytes anywhere else: never a read outside the block (ASan),
 *     and an entry found decodes to the key, or the format-4 search over
 *     the same bytes finds that entry too.
 * Seeds are printed (TERN_SEED to replay).
 */
#include "codec/coding.h"
#include "codec/status.h"
#include "codec/terms_block.h"
#include "tests/common/testutil.h"
#include "tern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct term {
  uint8_t t[40];
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

static uint32_t sort_unique(term *v, uint32_t n) {
  qsort(v, n, sizeof *v, term_qcmp);
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!m || term_qcmp(&v[m - 1], &v[i]) != 0) v[m++] = v[i];
  return m;
}

static tern_tb_field g_field = {.threshold = 1, .inline_max = 64, .max_doc = UINT32_MAX,
                                .fprints = 1};

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

/* The block's lookup of key against the reference v[0..n): the same
 * answer, and for a key found its doc (its index) and the iterator after
 * it.  The key sits at the end of a buffer of its own length (ASan). */
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
    fprintf(stderr, "rc %d idx %u, want %d %u (n %u, key", rc, idx, exact, want, n);
    for (uint32_t z = 0; z < klen; z++) fprintf(stderr, " %02x", key[z]);
    fprintf(stderr, ")\n");
  }
  assert_int_equal(rc, exact);
  assert_int_equal(idx, want);
  if (exact) {
    assert_int_equal(docs[0], want);
    assert_int_equal(it.entry, want + 1);
    assert_int_equal(it.len, klen);
  }
  free(k);
}

/* Keys around v[e]: itself, one byte short and one more, its last byte one
 * up and down, and a byte of it past the first one up. */
static void check_around(const tern_tb_block *b, const term *v, uint32_t n, uint32_t e) {
  uint8_t k[48];
  const term *s = &v[e];
  memcpy(k, s->t, s->len);
  check_key(b, v, n, k, s->len);
  if (s->len > 1) check_key(b, v, n, k, s->len - 1);
  k[s->len] = 0;
  check_key(b, v, n, k, s->len + 1);
  k[s->len] = 0xff;
  check_key(b, v, n, k, s->len + 1);
  for (int d = -1; d <= 1; d += 2) {
    k[s->len - 1] = (uint8_t)(s->t[s->len - 1] + d);
    check_key(b, v, n, k, s->len);
    k[s->len - 1] = s->t[s->len - 1];
    uint32_t at = s->len / 2;
    k[at] = (uint8_t)(s->t[at] + d);
    check_key(b, v, n, k, s->len);
    k[at] = s->t[at];
  }
}

/* Fills one block from v[0..n) (all of it that fits); returns the count. */
static uint32_t build_block(const term *v, uint32_t n, uint32_t restart, uint8_t *page) {
  tern_tb_builder *bld;
  assert_int_equal(tern_tb_builder_new(&bld, restart), TERN_OK);
  tern_tb_builder_start(bld, &g_field);
  uint32_t i = 0;
  for (; i < n; i++) {
    uint32_t doc = i;
    tern_tb_input in = {.term = v[i].t, .len = v[i].len, .df = 1, .docs = &doc};
    int rc = tern_tb_add(bld, &in);
    assert_true(rc == 0 || rc == 1);
    if (rc) break;
  }
  assert_true(i > 0);
  assert_int_equal(tern_tb_finish(bld, page), TERN_OK);
  tern_tb_builder_free(bld);
  return i;
}

static void open_block(tern_tb_block *b, const uint8_t *page, uint32_t n) {
  assert_int_equal(tern_tb_open_lookup(b, page, &g_field, n, "test", 0), TERN_OK);
  assert_int_equal(b->fprints, g_field.fprints != 0);
}

/* Every entry and the keys around it, plus absent keys of the same shape. */
static void check_block(tu_rng *r, const tern_tb_block *b, const term *v, uint32_t n,
                        void (*gen)(tu_rng *, term *)) {
  for (uint32_t e = 0; e < n; e++) check_around(b, v, n, e);
  for (int k = 0; k < 300; k++) {
    term g;
    gen(r, &g);
    check_key(b, v, n, g.t, g.len);
  }
  static const uint8_t lo[1] = {0}, hi[2] = {0xff, 0xff};
  check_key(b, v, n, lo, 1);
  check_key(b, v, n, hi, 2);
}

static void gen_base36(tu_rng *r, term *out) {
  static const char a[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  out->len = 16;
  for (uint32_t i = 0; i < 16; i++) out->t[i] = (uint8_t)a[tu_below(r, 36)];
}

static void gen_paths(tu_rng *r, term *out) {
  static const char *heads[] = {"/usr/lib/x86_64/", "/usr/share/doc/", "/home/u/src/"};
  const char *h = heads[tu_below(r, 3)];
  uint32_t hl = (uint32_t)strlen(h), tl = 2 + (uint32_t)tu_below(r, 14);
  memcpy(out->t, h, hl);
  for (uint32_t i = 0; i < tl; i++) out->t[hl + i] = (uint8_t)('a' + tu_below(r, 4));
  out->len = hl + tl;
}

static void gen_binary(tu_rng *r, term *out) {
  out->len = 1 + (uint32_t)tu_below(r, 12);
  for (uint32_t i = 0; i < out->len; i++) out->t[i] = (uint8_t)tu_below(r, 256);
}

static void gen_decimal(tu_rng *r, term *out) {
  out->len = (uint32_t)snprintf((char *)out->t, sizeof out->t, "%llu",
                                (unsigned long long)tu_below(r, 100000000));
}

/* Keys whose fingerprint is g_fp (found by drawing; 1 in 256 draws). */
static uint8_t g_fp;
static void gen_fp(tu_rng *r, term *out) {
  do gen_base36(r, out);
  while (tern_tb_fprint(out->t, out->len) != g_fp);
}

/* v: n sorted unique terms of shape gen. */
static uint32_t make_terms(tu_rng *r, term *v, uint32_t n, void (*gen)(tu_rng *, term *)) {
  for (uint32_t i = 0; i < n; i++) gen(r, &v[i]);
  return sort_unique(v, n);
}

static void test_shapes(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xf5a1);
  void (*gens[])(tu_rng *, term *) = {gen_base36, gen_paths, gen_binary, gen_decimal};
  static const uint32_t restarts[] = {1, 3, 16, 255};
  uint8_t *page = malloc(TERN_TB_PAGE);
  term *v = malloc(4096 * sizeof *v);
  for (size_t gi = 0; gi < 4; gi++)
    for (size_t ri = 0; ri < 4; ri++) {
      uint32_t n = make_terms(&r, v, 1500, gens[gi]);
      uint32_t cnt = build_block(v, n, restarts[ri], page);
      tern_tb_block b;
      open_block(&b, page, cnt);
      check_block(&r, &b, v, cnt, gens[gi]);
    }
  free(v);
  free(page);
}

/* Every other run's restart key overwritten with 0xff bytes: the restart
 * search would land on the wrong run; the fingerprints find each entry of
 * the intact run r through its own restart alone. */
static void test_fingerprints_decide(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xf5a2);
  uint8_t *page = malloc(TERN_TB_PAGE);
  term *v = malloc(2000 * sizeof *v);
  uint32_t n = make_terms(&r, v, 2000, gen_base36);
  for (int format = 4; format <= 5; format++) {
    g_field.fprints = format == 5;
    uint32_t cnt = build_block(v, n, TERN_TB_RESTART, page);
    tern_tb_block b;
    open_block(&b, page, cnt);
    assert_true(b.nrestarts >= 4);
    /* Past the middle: the format-4 search's first probe (the middle
     * restart, now above every key) sends it below, away from run keep. */
    uint32_t mid = b.nrestarts / 2;
    uint32_t keep = mid + 1 + (uint32_t)tu_below(&r, b.nrestarts - mid - 1);
    for (uint32_t q = 0; q < b.nrestarts; q++) {
      if (q == keep) continue;
      uint32_t from = tern_load16(b.rkey + 2 * q), to = tern_load16(b.rkey + 2 * q + 2);
      memset(page + from, 0xff, to - from);
    }
    uint32_t found = 0, e0 = keep * b.restart, e1 = e0 + b.restart < cnt ? e0 + b.restart : cnt;
    for (uint32_t e = e0; e < e1; e++) {
      uint32_t docs[TERN_TB_DOCS_MAX], idx;
      tern_tb_tail t = {.docs = docs};
      tern_tb_iter it;
      int rc = tern_tb_lower_bound(&b, v[e].t, v[e].len, &idx, &it, &t);
      if (rc == 1) {
        assert_int_equal(idx, e);
        assert_int_equal(docs[0], e);
        found++;
      }
    }
    if (format == 5) assert_int_equal(found, e1 - e0);
    else assert_true(found < e1 - e0);
  }
  g_field.fprints = 1;
  free(v);
  free(page);
}

/* Blocks whose entries all share one fingerprint, or half of them, and
 * absent keys with it. */
static void test_collisions(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xf5a3);
  uint8_t *page = malloc(TERN_TB_PAGE);
  term *v = malloc(800 * sizeof *v);
  for (int half = 0; half < 2; half++)
    for (uint32_t restart = 1; restart <= 16; restart *= 4) {
      g_fp = (uint8_t)tu_below(&r, 256);
      uint32_t n = 0;
      for (; n < 400; n++) (half && n % 2 ? gen_base36 : gen_fp)(&r, &v[n]);
      n = sort_unique(v, n);
      uint32_t cnt = build_block(v, n, restart, page);
      tern_tb_block b;
      open_block(&b, page, cnt);
      uint32_t same = 0;
      for (uint32_t e = 0; e < cnt; e++) same += page[TERN_TB_PAGE - cnt + e] == g_fp;
      assert_true(same >= (half ? cnt / 3 : cnt));
      check_block(&r, &b, v, cnt, gen_fp);
    }
  free(v);
  free(page);
}

/* One entry, two, and as many as a block takes. */
static void test_tiny_and_huge(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xf5a4);
  uint8_t *page = malloc(TERN_TB_PAGE);
  term *v = malloc(65536 * sizeof *v);
  for (uint32_t n = 1; n <= 2; n++) {
    uint32_t m = make_terms(&r, v, n, gen_base36);
    uint32_t cnt = build_block(v, m, TERN_TB_RESTART, page);
    assert_int_equal(cnt, m);
    tern_tb_block b;
    open_block(&b, page, cnt);
    check_block(&r, &b, v, cnt, gen_base36);
  }
  for (uint32_t i = 0; i < 65536; i++) {
    v[i].t[0] = (uint8_t)(i >> 8);
    v[i].t[1] = (uint8_t)i;
    v[i].len = 2;
  }
  static const uint32_t restarts[] = {1, 16, 255};
  for (size_t ri = 0; ri < 3; ri++) {
    uint32_t from = (uint32_t)tu_below(&r, 60000);
    uint32_t cnt = build_block(v + from, 65536 - from, restarts[ri], page);
    tern_tb_block b;
    open_block(&b, page, cnt);
    print_message("2-byte terms, restart %u: %u entries in a block\n", restarts[ri], cnt);
    assert_true(cnt > (restarts[ri] == 1 ? 400u : 1000u));
    check_block(&r, &b, v + from, cnt, gen_binary);
  }
  free(v);
  free(page);
}

/* Fingerprints damaged four ways, nothing else: every answer right. */
static void test_damaged_fingerprints(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xf5a5);
  uint8_t *page = malloc(TERN_TB_PAGE);
  term *v = malloc(1500 * sizeof *v);
  void (*gens[])(tu_rng *, term *) = {gen_base36, gen_paths, gen_binary};
  for (size_t gi = 0; gi < 3; gi++)
    for (int how = 0; how < 4; how++) {
      uint32_t n = make_terms(&r, v, 1500, gens[gi]);
      uint32_t cnt = build_block(v, n, TERN_TB_RESTART, page);
      uint8_t *fp = page + TERN_TB_PAGE - cnt;
      switch (how) {
      case 0: fp[tu_below(&r, cnt)] ^= (uint8_t)(1 + tu_below(&r, 255)); break;
      case 1: tu_fill(&r, fp, cnt); break;
      case 2: memset(fp, tern_tb_fprint(v[0].t, v[0].len), cnt); break;
      default:
        for (uint32_t e = 0; e < cnt; e++) fp[e] = fp[tu_below(&r, cnt)];
        break;
      }
      tern_tb_block b;
      open_block(&b, page, cnt);
      check_block(&r, &b, v, cnt, gens[gi]);
    }
  free(v);
  free(page);
}

/* Bytes flipped anywhere in a format-5 block: whatever the lookup answers,
 * it reads inside the block, and an entry it finds decodes to the key. */
static void test_damaged_anywhere(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xf5a6);
  uint8_t *good = malloc(TERN_TB_PAGE), *page = malloc(TERN_TB_PAGE);
  term *v = malloc(1500 * sizeof *v);
  uint8_t term_buf[TERN_TB_TERM_MAX];
  uint32_t opened = 0, found = 0, same_as_format4 = 0;
  for (int round = 0; round < 300; round++) {
    uint32_t n = make_terms(&r, v, 1500, round % 2 ? gen_paths : gen_base36);
    uint32_t cnt = build_block(v, n, 1 + (uint32_t)tu_below(&r, 20), good);
    memcpy(page, good, TERN_TB_PAGE);
    for (int f = 1 + (int)tu_below(&r, 4); f > 0; f--)
      page[tu_below(&r, TERN_TB_PAGE)] ^= (uint8_t)(1 + tu_below(&r, 255));
    tern_tb_block b;
    if (tern_tb_open_lookup(&b, page, &g_field, cnt, "test", 0) != TERN_OK) continue;
    opened++;
    for (uint32_t e = 0; e < cnt; e += 1 + (uint32_t)tu_below(&r, 4)) {
      uint32_t docs[TERN_TB_DOCS_MAX], idx;
      tern_tb_tail t = {.docs = docs};
      tern_tb_iter it;
      int rc = tern_tb_lower_bound(&b, v[e].t, v[e].len, &idx, &it, &t);
      assert_true(rc == 0 || rc == 1 || rc == TERN_ECORRUPT);
      if (rc != 1) continue;
      found++;
      tern_tb_block d = b;
      tern_tb_tables(&d);
      tern_tb_iter di;
      if (tern_tb_iter_seek(&d, &di, idx, term_buf) != TERN_OK) continue;
      if (tern_tb_iter_next(&d, &di, term_buf, &t) != TERN_OK) continue;
      if (di.len == v[e].len && memcmp(term_buf, v[e].t, v[e].len) == 0) continue;
      /* Found, decoding to another term: only where the format-4 search
       * over the same bytes says the same (damage to a restart key that
       * the run's entries share can do that, without fingerprints as
       * with them): the fingerprints never answer worse. */
      tern_tb_block nf = b;
      nf.fprints = 0;
      uint32_t idx4 = UINT32_MAX;
      int rc4 = tern_tb_lower_bound(&nf, v[e].t, v[e].len, &idx4, &it, &t);
      assert_int_equal(rc4, 1);
      assert_int_equal(idx4, idx);
      same_as_format4++;
    }
  }
  print_message("%u damaged blocks opened, %u keys found in them (%u decoding to another term, "
                "as the format-4 search finds them)\n",
                opened, found, same_as_format4);
  assert_true(opened > 0 && found > 0);
  free(v);
  free(good);
  free(page);
}

/* A format-4 field refuses the flag: in a version-4 segment it is damage. */
static void test_flag_format4(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xf5a7);
  uint8_t *page = malloc(TERN_TB_PAGE);
  term v[50];
  uint32_t n = make_terms(&r, v, 50, gen_base36);
  uint32_t cnt = build_block(v, n, TERN_TB_RESTART, page);
  tern_tb_field f4 = g_field;
  f4.fprints = 0;
  tern_tb_block b;
  assert_int_equal(tern_tb_open_lookup(&b, page, &f4, cnt, "test", 0), TERN_ECORRUPT);
  /* fingerprints overlapping the block's bits */
  tern_store16(page + 8, (uint16_t)(8 * (TERN_TB_PAGE - cnt) + 1));
  assert_int_equal(tern_tb_open_lookup(&b, page, &g_field, cnt, "test", 0), TERN_ECORRUPT);
  free(page);
}

/* Format 5 for every test, whatever one that failed left. */
static int format5(void **state) {
  (void)state;
  g_field.fprints = 1;
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_shapes, format5),
      cmocka_unit_test_setup(test_fingerprints_decide, format5),
      cmocka_unit_test_setup(test_collisions, format5),
      cmocka_unit_test_setup(test_tiny_and_huge, format5),
      cmocka_unit_test_setup(test_damaged_fingerprints, format5),
      cmocka_unit_test_setup(test_damaged_anywhere, format5),
      cmocka_unit_test_setup(test_flag_format4, format5),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
