/* SPDX-License-Identifier: MIT */
/*
 * test_search_by_key.c — tern_postings_each_by_key against an independent
 * reference: the sorted array of the keys expected (and their values).
 * Several segments (each flushed, keys of earlier ones updated or deleted
 * in later ones) and the buffer; terms on every document (a hit at every
 * block boundary and restart, the first and last entries), on about half
 * and on few; want_values on and off; callbacks stopping every few
 * documents then resumed.  A damaged primary-key block: TERN_ECORRUPT
 * naming the file.  Random, with a printed seed (TERN_SEED repeats it).
 */
#include "tests/engine/enginetest.h"

#include <glob.h>

#define NKEYS 5000u
#define NROUNDS 5u
#define VMAX 24u

typedef struct ref_key {
  uint8_t k[48];
  uint32_t len;
  int present;
  uint8_t v[VMAX];
  uint32_t vlen;
  uint8_t terms; /* bit 0 "all", 1 "half", 2 "rare" */
} ref_key;

static const char *const term_names[3] = {"all", "half", "rare"};

static int key_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return c ? c : (al > bl) - (al < bl);
}

static int ref_cmp(const void *x, const void *y) {
  const ref_key *a = x, *b = y;
  return key_cmp(a->k, a->len, b->k, b->len);
}

/* Keys of three shapes (random base36, paths, binary), unique, sorted. */
static ref_key *gen_keys(tu_rng *r, size_t *n) {
  ref_key *v = calloc(NKEYS, sizeof *v);
  assert_non_null(v);
  for (uint32_t i = 0; i < NKEYS; i++) {
    ref_key *k = &v[i];
    switch (tu_below(r, 3)) {
    case 0:
      k->len = 6 + (uint32_t)tu_below(r, 20);
      for (uint32_t j = 0; j < k->len; j++)
        k->k[j] = (uint8_t)"0123456789abcdefghijklmnopqrstuvwxyz"[tu_below(r, 36)];
      break;
    case 1:
      k->len = (uint32_t)snprintf((char *)k->k, sizeof k->k, "src/%02u/mod%u/file%05u.c",
                                  (unsigned)tu_below(r, 12), (unsigned)tu_below(r, 40),
                                  (unsigned)tu_below(r, 100000));
      break;
    default:
      k->len = 1 + (uint32_t)tu_below(r, 12);
      tu_fill(r, k->k, k->len);
      break;
    }
  }
  qsort(v, NKEYS, sizeof *v, ref_cmp);
  size_t m = 0;
  for (size_t i = 0; i < NKEYS; i++)
    if (!m || ref_cmp(&v[m - 1], &v[i]) != 0) v[m++] = v[i];
  *n = m;
  return v;
}

/* Puts key k with a fresh value and terms (the reference too). */
static void put_key(tu_rng *r, tern_txn *t, ref_key *k) {
  k->vlen = (uint32_t)tu_below(r, VMAX + 1); /* over inline_value_max sometimes: NAME.val */
  tu_fill(r, k->v, k->vlen);
  k->terms = 1 | (tu_below(r, 2) ? 2 : 0) | (tu_below(r, 50) == 0 ? 4 : 0);
  tern_term terms[3];
  size_t nt = 0;
  for (int i = 0; i < 3; i++)
    if (k->terms & (1 << i)) terms[nt++] = (tern_term){"t", term_names[i], strlen(term_names[i])};
  ET_OK(tern_put(t, k->k, k->len, k->v, k->vlen, terms, nt));
  k->present = 1;
}

/* NROUNDS segments, each flushed, then the buffer: keys put, put again
 * (updated) and deleted at random. */
static tern_index *build(tu_rng *r, const char *dir, ref_key *v, size_t n) {
  tern_options o;
  tern_options_init(&o);
  o.inline_value_max = 12;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o));
  for (uint32_t round = 0; round <= NROUNDS; round++) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, 0));
    for (size_t i = 0; i < n; i++) {
      uint64_t x = tu_below(r, 100);
      if (round == 0 ? x < 60 : x < 8)
        put_key(r, t, &v[i]);
      else if (round > 0 && x < 12 && v[i].present) {
        ET_OK(tern_delete(t, v[i].k, v[i].len));
        v[i].present = 0;
      }
    }
    ET_OK(tern_commit(t));
    if (round < NROUNDS) ET_OK(tern_flush(idx));
  }
  return idx;
}

typedef struct seen {
  const ref_key *v;
  const size_t *want; /* indexes into v, in key order */
  size_t nwant, n;
  int values;      /* check values */
  uint32_t every;  /* stop after every this many (0: never) */
  uint32_t since;
} seen;

static int on_doc(void *payload, tern_slice key, tern_slice val) {
  seen *s = payload;
  assert_true(s->n < s->nwant);
  const ref_key *k = &s->v[s->want[s->n]];
  if (key_cmp(key.data, key.len, k->k, k->len) != 0)
    fail_msg("hit %zu of %zu: key differs from the reference", s->n, s->nwant);
  if (s->values) {
    assert_int_equal(val.len, k->vlen);
    if (k->vlen) assert_memory_equal(val.data, k->v, k->vlen);
  } else {
    assert_int_equal(val.len, 0);
  }
  s->n++;
  return s->every && ++s->since % s->every == 0;
}

/* One search of term `which`, stopped every `every` hits (0: never), with
 * want_values alternating per call when `alt`. */
static void search(tern_snapshot *snap, const ref_key *v, const size_t *want, size_t nwant,
                   int which, int values, uint32_t every, int alt) {
  /* which 3: "half" and "all" together (an intersection: drained doc by doc) */
  tern_term terms[2] = {{"t", term_names[which % 3], strlen(term_names[which % 3])},
                        {"t", "all", 3}};
  if (which == 3) terms[0] = (tern_term){"t", "half", 4};
  tern_postings *p;
  ET_OK(tern_postings_open(&p, snap, terms, which == 3 ? 2 : 1));
  seen s = {v, want, nwant, 0, values, every, 0};
  int rc, calls = 0;
  while ((rc = tern_postings_each_by_key(p, s.values, on_doc, &s)) == TERN_ESTOPPED) {
    calls++;
    if (alt) s.values = !s.values;
  }
  ET_OK(rc);
  assert_int_equal(s.n, nwant);
  if (every) assert_true(calls >= (int)(nwant / every) - 1);
  ET_OK(tern_postings_each_by_key(p, 1, on_doc, &s)); /* ended: visits nothing */
  assert_int_equal(s.n, nwant);
  ET_OK(tern_postings_close(p));
}

static void test_against_reference(void **state) {
  (void)state;
  et_prefer_tmpfs();
  tu_rng r;
  tu_rng_init(&r, 0x5ea2c4);
  size_t n;
  ref_key *v = gen_keys(&r, &n);
  char *dir = tu_tmpdir("search-by-key");
  tern_index *idx = build(&r, dir, v, n);
  tern_snapshot *snap;
  ET_OK(tern_snapshot_open(&snap, idx));
  print_message("%zu segments and the buffer\n", tern_snapshot_nsegments(snap));
  assert_true(tern_snapshot_nsegments(snap) >= 2);
  size_t *want = malloc(n * sizeof *want);
  assert_non_null(want);
  for (int which = 0; which < 4; which++) {
    size_t nwant = 0;
    for (size_t i = 0; i < n; i++)
      if (v[i].present && (v[i].terms & (1 << (which == 3 ? 1 : which)))) want[nwant++] = i;
    print_message("term %s: %zu hits of %zu keys\n", which == 3 ? "half+all" : term_names[which],
                  nwant, n);
    search(snap, v, want, nwant, which, 0, 0, 0);
    search(snap, v, want, nwant, which, 1, 0, 0);
    for (int k = 0; k < 4; k++)
      search(snap, v, want, nwant, which, k & 1, 1 + (uint32_t)tu_below(&r, 70), 1);
    search(snap, v, want, nwant, which, 0, 1, 1);
  }
  ET_OK(tern_snapshot_close(snap));
  ET_OK(tern_compact(idx)); /* one segment, nothing deleted: the one-source path */
  ET_OK(tern_snapshot_open(&snap, idx));
  size_t nwant = 0;
  for (size_t i = 0; i < n; i++)
    if (v[i].present) want[nwant++] = i;
  search(snap, v, want, nwant, 0, 1, 0, 0);
  search(snap, v, want, nwant, 0, 0, 1 + (uint32_t)tu_below(&r, 70), 1);
  ET_OK(tern_snapshot_close(snap));
  ET_OK(tern_close(idx));
  free(want);
  free(v);
  tu_rmtree(dir);
  free(dir);
}

static int count_doc(void *payload, tern_slice key, tern_slice val) {
  (void)key, (void)val;
  ++*(size_t *)payload;
  return 0;
}

/* A damaged primary-key block (its checksum no longer matches): the
 * search's walk says TERN_ECORRUPT and names the terms file. */
static void test_damaged_block(void **state) {
  (void)state;
  et_prefer_tmpfs();
  char *dir = tu_tmpdir("search-by-key-damage");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, NULL));
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  for (uint32_t i = 0; i < 4000; i++) {
    char k[32];
    int kl = snprintf(k, sizeof k, "key%08u", i * 7919u % 100003u);
    tern_term term = {"t", "all", 3};
    ET_OK(tern_put(t, k, (size_t)kl, "v", 1, &term, 1));
  }
  ET_OK(tern_commit(t));
  ET_OK(tern_compact(idx));
  ET_OK(tern_close(idx));
  char *pat = tu_path(dir, "*.tim");
  glob_t g;
  assert_int_equal(glob(pat, 0, NULL, &g), 0);
  assert_int_equal(g.gl_pathc, 1);
  size_t len;
  uint8_t *bytes = tu_read_file(g.gl_pathv[0], &len);
  assert_true(len > 4 * 4096); /* the primary keys' blocks come first: block 1 is one */
  bytes[2 * 4096 + 1000] ^= 0x5a;
  tu_write_file(g.gl_pathv[0], bytes, len);
  free(bytes);
  ET_OK(tern_open(&idx, dir, 0, NULL));
  tern_snapshot *snap;
  ET_OK(tern_snapshot_open(&snap, idx));
  tern_term term = {"t", "all", 3};
  tern_postings *p;
  ET_OK(tern_postings_open(&p, snap, &term, 1));
  size_t hits = 0;
  int rc = tern_postings_each_by_key(p, 0, count_doc, &hits);
  assert_int_equal(rc, TERN_ECORRUPT);
  assert_non_null(strstr(tern_errmsg(), ".tim"));
  assert_true(hits < 4000);
  ET_OK(tern_postings_close(p));
  ET_OK(tern_snapshot_close(snap));
  ET_OK(tern_close(idx));
  globfree(&g);
  free(pat);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_against_reference),
      cmocka_unit_test(test_damaged_block),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
