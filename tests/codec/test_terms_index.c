/* SPDX-License-Identifier: MIT */
/*
 * test_terms_index.c — the resident terms index (codec/terms_index.c):
 * separators written and decoded, then find() of random keys checked
 * against a linear scan of the sorted separators, for key sets whose
 * separators tie on their first 8 and 16 bytes (paths, URLs), with
 * lengths on both sides of 8 and 16 and binary bytes, and keys that leave
 * the prefix all separators share (the index skips it), path-like
 * separators whose groups share longer prefixes of their own (each
 * group's search skips those), keys cut short or moved by one byte from
 * a separator; find_ordinal()
 * against the running sum of entries; one to many groups of records
 * (TERN_TI_GROUP blocks each), decoded only when used, by one thread or
 * by several at once; walks of sorted keys through undecoded and decoded
 * groups (tern_terms_index_walk_find) against the same scan, with their
 * ordinals; a directory that disagrees with its group, and a separator
 * of the last group outside the prefix all share.
 */
#include "tests/common/testutil.h"

#include "codec/coding.h"
#include "codec/terms_index.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct key {
  uint8_t b[80];
  size_t len;
} key;

static int key_cmp(const key *x, const key *y) {
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->b, y->b, n);
  return c ? c : (x->len > y->len) - (x->len < y->len);
}
static int key_qcmp(const void *x, const void *y) { return key_cmp(x, y); }

/* A key over a 3-byte alphabet, the first `fixed` bytes the same for all:
 * ties on the first heads. */
static size_t g_tie; /* then g_tie bytes mostly '/': ties past every head */

static int g_paths; /* keys like paths: ties inside groups, not across the index */

/* 2 to 5 levels "/word", each word one of 3 per level (3 to 12 bytes),
 * then 0 to 5 bytes of a 2-letter alphabet: neighbouring separators share
 * long prefixes that the whole index does not. */
static void path_key(tu_rng *r, key *k) {
  static const char *const words[] = {"usr", "share", "lib", "x86_64-linux", "doc", "python3",
                                      "site-packages", "include", "local", "bin", "man", "src"};
  size_t levels = 2 + (size_t)tu_below(r, 4);
  k->len = 0;
  for (size_t l = 0; l < levels; l++) {
    const char *w = words[(3 * l + tu_below(r, 3)) % (sizeof words / sizeof words[0])];
    size_t wl = strlen(w);
    k->b[k->len++] = '/';
    memcpy(k->b + k->len, w, wl);
    k->len += wl;
  }
  for (size_t tail = (size_t)tu_below(r, 6); tail > 0; tail--)
    k->b[k->len++] = (uint8_t)('a' + tu_below(r, 2));
}

static void random_key(tu_rng *r, key *k, size_t fixed) {
  if (g_paths) {
    path_key(r, k);
    return;
  }
  k->len = 1 + (size_t)tu_below(r, sizeof k->b);
  for (size_t i = 0; i < k->len; i++) {
    int tied = i < fixed || (i < fixed + g_tie && tu_below(r, 16) != 0);
    k->b[i] = tied ? (uint8_t)'/' : (uint8_t)(tu_below(r, 3) == 0 ? 0 : 'a' + tu_below(r, 2));
  }
}

/* The reference: m ascending separators (the first empty), their entries
 * and first ordinals, and the encoded section. */
typedef struct ref {
  key *sep;
  uint32_t *entries;
  uint64_t *ord, nterms;
  size_t m;
  tern_bytebuf out;
} ref;

static void ref_build(ref *x, tu_rng *r, size_t n, size_t fixed) {
  x->sep = calloc(n, sizeof *x->sep);
  x->entries = calloc(n, sizeof *x->entries);
  x->ord = calloc(n + 1, sizeof *x->ord);
  assert_true(x->sep && x->entries && x->ord);
  for (size_t i = 0; i < n; i++) random_key(r, &x->sep[i], fixed);
  qsort(x->sep, n, sizeof *x->sep, key_qcmp);
  size_t m = 0; /* unique, ascending; block 0's separator is empty */
  x->sep[m++].len = 0;
  for (size_t i = 1; i < n; i++)
    if (key_cmp(&x->sep[i], &x->sep[m - 1]) > 0) x->sep[m++] = x->sep[i];
  x->m = m;
  tern_terms_index_builder b = {0};
  memset(&x->out, 0, sizeof x->out);
  x->nterms = 0;
  for (size_t i = 0; i < m; i++) {
    x->entries[i] = 1 + (uint32_t)tu_below(r, 3);
    x->ord[i] = x->nterms;
    x->nterms += x->entries[i];
    assert_int_equal(tern_terms_index_builder_add(&b, x->sep[i].b, x->sep[i].len, x->entries[i]),
                     TERN_OK);
  }
  x->ord[m] = x->nterms;
  assert_int_equal(tern_terms_index_builder_finish(&b, &x->out), TERN_OK);
  tern_terms_index_builder_free(&b);
}

static void ref_free(ref *x) {
  free(x->sep);
  free(x->entries);
  free(x->ord);
  tern_bytebuf_free(&x->out);
}

static int ref_decode(const ref *x, tern_terms_index *ix) {
  const uint8_t *p = x->out.p;
  int rc = tern_terms_index_decode(ix, &p, x->out.p + x->out.len, x->m, x->nterms, 3, "test");
  if (rc == TERN_OK) assert_ptr_equal(p, x->out.p + x->out.len);
  return rc;
}

static size_t groups_decoded(const tern_terms_index *ix) {
  size_t n = 0;
  for (uint64_t g = 0; g < ix->ngroups; g++) n += atomic_load(&ix->groups[g]) != NULL;
  return n;
}

/* The last separator <= k. */
static uint64_t ref_find(const ref *x, const key *k) {
  uint64_t want = 0;
  for (size_t b = 0; b < x->m; b++)
    if (key_cmp(&x->sep[b], k) <= 0) want = b;
  return want;
}

static void probe_key(const ref *x, tu_rng *r, size_t fixed, int t, key *k) {
  random_key(r, k, fixed);
  if (t % 7 == 0) *k = x->sep[tu_below(r, x->m)]; /* exactly a separator */
  if (t % 5 == 1) { /* a separator cut short: inside or before a group's shared prefix */
    *k = x->sep[tu_below(r, x->m)];
    k->len = (size_t)tu_below(r, k->len + 1);
  }
  if (t % 5 == 3 && x->m > 1) { /* a separator with one byte moved by one, up or down */
    *k = x->sep[1 + tu_below(r, x->m - 1)];
    k->b[tu_below(r, k->len)] += tu_below(r, 2) ? 1 : 0xff;
  }
  /* off the prefix every separator shares: below or above them all */
  if (t % 11 == 0 && fixed) k->b[tu_below(r, fixed < k->len ? fixed : k->len)] = (uint8_t)tu_below(r, 256);
}

/* Walks of sorted probe keys (tern_terms_index_walk_find) against the
 * scan, block and ordinals, on a fresh index: no group decoded by them but
 * the ones a key off the index's prefix names (the first and the last);
 * halfway, every other group decoded (searched, not walked); then keys out
 * of order (a walk starts its group over). */
static int cmp_keys_idx(const void *a, const void *b) { return key_qcmp(a, b); }

static void check_walk(const ref *x, tern_terms_index *ix, tu_rng *r, size_t fixed) {
  enum { N = 400 };
  key *ks = malloc(N * sizeof *ks);
  for (int t = 0; t < N; t++) probe_key(x, r, fixed, t, &ks[t]);
  qsort(ks, N, sizeof *ks, cmp_keys_idx);
  tern_ti_walk *w = malloc(sizeof *w);
  tern_terms_index_walk_init(w);
  for (int pass = 0; pass < 2; pass++) {
    for (int t = 0; t < N; t++) {
      if (pass == 0 && t == N / 2)
        for (uint64_t g = 0; g < ix->ngroups; g += 2) {
          const tern_ti_group *gr;
          assert_int_equal(tern_terms_index_group_decode(ix, g, &gr), TERN_OK);
        }
      const key *k = pass == 0 ? &ks[t] : &ks[tu_below(r, N)]; /* out of order */
      uint64_t b, want = ref_find(x, k);
      tern_ti_block info = {0};
      uint64_t kh = tern_terms_index_key_head(ix, k->b, k->len);
      assert_int_equal(tern_terms_index_walk_find(ix, w, kh, k->b, k->len, &b, &info), TERN_OK);
      assert_int_equal(b, want);
      assert_int_equal(info.first_ord, x->ord[want]);
      assert_int_equal(info.entries, x->entries[want]);
      if (pass == 0 && t == N / 2 - 1) assert_true(groups_decoded(ix) <= 2);
    }
  }
  free(w);
  free(ks);
}

static void check_find(size_t fixed, size_t n) {
  tu_rng r;
  tu_rng_init(&r, 0x7E51 + fixed * 7919 + n);
  ref x;
  ref_build(&x, &r, n, fixed);
  tern_terms_index ix;
  assert_int_equal(ref_decode(&x, &ix), TERN_OK);
  assert_int_equal(ix.ngroups, (x.m + TERN_TI_GROUP - 1) / TERN_TI_GROUP);
  assert_int_equal(groups_decoded(&ix), 0); /* opening decodes no group */
  check_walk(&x, &ix, &r, fixed);
  tern_terms_index_free(&ix);
  assert_int_equal(ref_decode(&x, &ix), TERN_OK);
  for (int t = 0; t < 3000; t++) {
    key k;
    probe_key(&x, &r, fixed, t, &k);
    uint64_t got;
    assert_int_equal(tern_terms_index_find(&ix, k.b, k.len, &got), TERN_OK);
    assert_int_equal(got, ref_find(&x, &k));
    if (t == 0) assert_true(groups_decoded(&ix) <= 1); /* one lookup, at most one group */
    uint64_t ord = tu_below(&r, x.nterms), b;
    assert_int_equal(tern_terms_index_find_ordinal(&ix, ord, &b), TERN_OK);
    assert_true(x.ord[b] <= ord && ord < x.ord[b + 1]);
    tern_ti_block info = {0};
    assert_int_equal(tern_terms_index_block(&ix, b, &info), TERN_OK);
    assert_int_equal(info.first_ord, x.ord[b]);
    assert_int_equal(info.entries, x.entries[b]);
  }
  assert_int_equal(tern_terms_index_ensure_all(&ix), TERN_OK);
  assert_int_equal(groups_decoded(&ix), ix.ngroups);
  for (size_t b = 0; b < x.m; b++) {
    size_t len;
    const uint8_t *s;
    assert_int_equal(tern_terms_index_sep(&ix, b, &s, &len), TERN_OK);
    assert_int_equal(len, x.sep[b].len);
    if (len) assert_memory_equal(s, x.sep[b].b, len);
  }
  tern_terms_index_free(&ix);
  ref_free(&x);
}

static void test_find_against_scan(void **state) {
  (void)state;
  const size_t fixed[] = {0, 5, 8, 12, 16, 20, 30};
  /* one block, one group, a group and one block, several groups */
  const size_t sizes[] = {1, 2, TERN_TI_GROUP, TERN_TI_GROUP + 1, 1000};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) check_find(fixed[i], sizes[j]);
}

/* Separators that tie on every head (the first and TERN_TI_MORE more):
 * the search compares their bytes past the heads, on both sides of the
 * 8-byte words and of the keys' ends. */
static void test_deep_ties(void **state) {
  (void)state;
  const size_t fixed[] = {0, 8, 21};
  g_tie = 8 * (1 + TERN_TI_MORE) + 16;
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
    check_find(fixed[i], TERN_TI_GROUP + 1);
    check_find(fixed[i], 1000);
  }
  g_tie = 0;
}

/* Path-like separators: each group's search compares the heads after the
 * prefix its own separators share (longer than the whole index's), so
 * keys cut inside that prefix, leaving it below or above, or tying on the
 * heads after it are checked against the scan, over one to many groups. */
static void test_group_prefixes(void **state) {
  (void)state;
  const size_t sizes[] = {2, TERN_TI_GROUP, TERN_TI_GROUP + 1, 700, 3000};
  g_paths = 1;
  for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) check_find(0, sizes[j]);
  g_paths = 0;
}

/* Threads looking up in a fresh index decode its groups concurrently. */
typedef struct racer {
  const ref *x;
  const tern_terms_index *ix;
  uint64_t salt, wrong;
} racer;

static void *race(void *arg) {
  racer *a = arg;
  tu_rng r;
  tu_rng_init(&r, a->salt);
  for (int t = 0; t < 2000; t++) {
    key k;
    probe_key(a->x, &r, 5, t, &k);
    uint64_t got;
    if (tern_terms_index_find(a->ix, k.b, k.len, &got) != TERN_OK || got != ref_find(a->x, &k))
      a->wrong++;
  }
  return NULL;
}

static void test_concurrent_first_use(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xC0C0);
  ref x;
  ref_build(&x, &r, 3000, 5);
  for (int round = 0; round < 5; round++) {
    tern_terms_index ix;
    assert_int_equal(ref_decode(&x, &ix), TERN_OK);
    pthread_t th[4];
    racer a[4];
    for (int i = 0; i < 4; i++) {
      a[i] = (racer){.x = &x, .ix = &ix, .salt = 0xC0C1 + 4u * (unsigned)round + (unsigned)i};
      assert_int_equal(pthread_create(&th[i], NULL, race, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
      assert_int_equal(pthread_join(th[i], NULL), 0);
      assert_int_equal(a[i].wrong, 0);
    }
    tern_terms_index_free(&ix);
  }
  ref_free(&x);
}

/* A directory whose ordinals disagree with its group's records: the open
 * takes it (it reads no record past a group's first), and the first
 * lookup that needs the group fails with TERN_ECORRUPT, as does verify's
 * ensure_all; lookups in other groups still answer. */
static void test_damaged_group(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xDA3A);
  ref x;
  ref_build(&x, &r, 1000, 0);
  assert_true(x.m > 3 * TERN_TI_GROUP);
  uint64_t ng = (x.m + TERN_TI_GROUP - 1) / TERN_TI_GROUP;
  /* the section: varint length, records, directory (16 bytes a group), u32 */
  uint8_t *dir = x.out.p + x.out.len - 4 - TERN_TI_DIR_ENTRY * ng;
  uint8_t *ord2 = dir + TERN_TI_DIR_ENTRY * 2 + 8;
  tern_store64(ord2, tern_load64(ord2) + 1);
  tern_terms_index ix;
  assert_int_equal(ref_decode(&x, &ix), TERN_OK);
  uint64_t b;
  const key *in1 = &x.sep[TERN_TI_GROUP + 3], *in2 = &x.sep[2 * TERN_TI_GROUP + 3];
  assert_int_equal(tern_terms_index_find(&ix, in2->b, in2->len, &b), TERN_ECORRUPT);
  /* group 1 ends where the directory says group 2 starts: it fails too */
  assert_int_equal(tern_terms_index_find(&ix, in1->b, in1->len, &b), TERN_ECORRUPT);
  const key *in0 = &x.sep[3];
  assert_int_equal(tern_terms_index_find(&ix, in0->b, in0->len, &b), TERN_OK);
  assert_int_equal(b, 3);
  assert_int_equal(tern_terms_index_ensure_all(&ix), TERN_ECORRUPT);
  tern_terms_index_free(&ix);
  /* a walk entering either group fails the same way, wherever it stops */
  assert_int_equal(ref_decode(&x, &ix), TERN_OK);
  tern_ti_walk *w = malloc(sizeof *w);
  tern_ti_block info;
  const key *walked[] = {in0, in1, in2};
  for (int i = 0; i < 3; i++) {
    tern_terms_index_walk_init(w);
    const key *k = walked[i];
    int rc = tern_terms_index_walk_find(&ix, w, tern_terms_index_key_head(&ix, k->b, k->len), k->b,
                                        k->len, &b, &info);
    assert_int_equal(rc, i == 0 ? TERN_OK : TERN_ECORRUPT);
  }
  free(w);
  tern_terms_index_free(&ix);
  /* restored: every group decodes */
  tern_store64(ord2, tern_load64(ord2) - 1);
  assert_int_equal(ref_decode(&x, &ix), TERN_OK);
  assert_int_equal(tern_terms_index_ensure_all(&ix), TERN_OK);
  tern_terms_index_free(&ix);
  ref_free(&x);
}

/* One terms-index record's lengths at *p (its head byte: shared length
 * and suffix length, each 15 or more as 15 and a varint of the rest):
 * *p moved past the record, suffix at *suffix. */
static void record_at(const uint8_t **p, const uint8_t *end, uint64_t *shared, uint64_t *slen,
                      const uint8_t **suffix) {
  unsigned head = *(*p)++;
  uint64_t v[2] = {head >> 4, head & 15u}, more = 0, entries = 0;
  for (int i = 0; i < 2; i++)
    if (v[i] == 15u) {
      assert_int_equal(tern_get_varint(p, end, &more), 0);
      v[i] += more;
    }
  *shared = v[0];
  *slen = v[1];
  *suffix = *p;
  *p += v[1];
  assert_int_equal(tern_get_varint(p, end, &entries), 0);
}

/* A separator of the last group that leaves the prefix every separator of
 * blocks 1.. shares: its group fails with TERN_ECORRUPT.  The index's
 * prefix is what the first and the last separator share, so the damaged
 * record shortens it at open (the last separator is rebuilt through it,
 * which may fail there already), and the group then fails on its order
 * or its sums, a record or more later: decode_group needs no prefix check
 * of its own.  Made from a
 * record of the group past its first whose shared length (the prefix's
 * bytes or more, in the head byte) is cut to one byte less, its suffix
 * starting above the prefix's '/': it ascends itself. */
static void test_separator_outside_prefix(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x9EF1);
  ref x;
  ref_build(&x, &r, 300, 4); /* separators of blocks 1.. start with up to 4 '/' */
  uint64_t ng = (x.m + TERN_TI_GROUP - 1) / TERN_TI_GROUP, last = ng - 1;
  assert_true(ng >= 2);
  const uint8_t *end = x.out.p + x.out.len, *dir = end - 4 - TERN_TI_DIR_ENTRY * ng;
  const uint8_t *p = x.out.p; /* the records follow the section's varint length */
  uint64_t section, shared, slen;
  assert_int_equal(tern_get_varint(&p, end, &section), 0);
  p += tern_load32(dir + TERN_TI_DIR_ENTRY * last);
  tern_terms_index ix;
  assert_int_equal(ref_decode(&x, &ix), TERN_OK);
  uint64_t skip = ix.skip; /* the prefix, all '/' (shorter keys make it shorter) */
  tern_terms_index_free(&ix);
  assert_true(skip >= 1 && skip <= 4);
  uint8_t *rec = NULL;
  const uint8_t *suffix;
  uint64_t i = 0, blocks = x.m - last * TERN_TI_GROUP;
  for (; i < blocks && !rec; i++) {
    uint8_t *at = (uint8_t *)p;
    record_at(&p, end, &shared, &slen, &suffix);
    if (i && shared >= skip && shared < 15 && slen && suffix[0] > '/') rec = at;
  }
  assert_non_null(rec);
  uint8_t was = rec[0];
  rec[0] = (uint8_t)((skip - 1) << 4 | (was & 15u));
  /* the open rebuilds the last separator through the damaged record:
   * that may fail already; else the group's first use fails */
  int rc = ref_decode(&x, &ix);
  if (rc == TERN_OK) {
    const key *in = &x.sep[last * TERN_TI_GROUP + i - 1];
    uint64_t b;
    rc = tern_terms_index_find(&ix, in->b, in->len, &b);
    tern_terms_index_free(&ix);
  }
  assert_int_equal(rc, TERN_ECORRUPT);
  assert_non_null(strstr(tern_errmsg(), "terms index, block"));
  rec[0] = was; /* restored: it decodes */
  assert_int_equal(ref_decode(&x, &ix), TERN_OK);
  assert_int_equal(tern_terms_index_ensure_all(&ix), TERN_OK);
  tern_terms_index_free(&ix);
  ref_free(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_find_against_scan),
                                     cmocka_unit_test(test_deep_ties),
                                     cmocka_unit_test(test_group_prefixes),
                                     cmocka_unit_test(test_concurrent_first_use),
                                     cmocka_unit_test(test_damaged_group),
                                     cmocka_unit_test(test_separator_outside_prefix)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
