/* SPDX-License-Identifier: MIT */
/*
 * test_cli_dump.c — a lossless dump: tern_docs_each and tern_doc_terms give
 * every live document with its value and all its terms, as a reference
 * model of the documents says (random binary keys, values and terms,
 * fields holding ':', spread over segments with deletions and the buffer;
 * printed seed); and `tern dump A | tern import B` makes B answer as A
 * does: the same documents with the same terms, the same terms
 * enumerations with the same counts, the same search results, and the
 * same dump, byte for byte (terms in one order, repeats put once).
 */
#include "tests/engine/enginetest.h"

#include "engine/state/index.h"

#include <sys/wait.h>

enum { NKEYS = 3000, MAXT = 4 };

static const char *const k_fields[] = {"color", "size", "a:b", "x\\y"};
enum { NFIELDS = 4 };

typedef struct mterm {
  int field;
  uint8_t t[6];
  size_t len;
} mterm;

typedef struct mdoc {
  uint8_t key[12];
  size_t klen;
  uint8_t val[40];
  size_t vlen;
  mterm terms[MAXT]; /* the set */
  size_t nterms;
  mterm put[MAXT]; /* as put: repeats and all, in random order */
  size_t nput;
  int live;
} mdoc;

static mdoc g_docs[NKEYS];
static const char *g_bin;

static int key_cmp(const void *a, size_t an, const void *b, size_t bn) {
  int c = memcmp(a, b, an < bn ? an : bn);
  return c ? c : (an > bn) - (an < bn);
}

static int doc_cmp(const void *a, const void *b) {
  const mdoc *x = a, *y = b;
  return key_cmp(x->key, x->klen, y->key, y->klen);
}

static int term_cmp(const void *a, const void *b) {
  const tern_term *x = a, *y = b;
  int c = strcmp(x->field, y->field);
  return c ? c : key_cmp(x->term, x->len, y->term, y->len);
}

static void random_doc(tu_rng *r, mdoc *d) {
  d->vlen = tu_below(r, sizeof d->val + 1);
  tu_fill(r, d->val, d->vlen);
  d->nterms = d->nput = 0;
  size_t want = tu_below(r, MAXT + 1);
  for (size_t i = 0; i < want; i++) {
    mterm t = {(int)tu_below(r, NFIELDS), {0}, 1 + tu_below(r, 2)};
    for (size_t j = 0; j < t.len; j++)
      t.t[j] = (uint8_t) "ab:\t\n\\\x00\xff"[tu_below(r, 8)];
    int dup = 0;
    for (size_t j = 0; j < d->nterms; j++)
      dup |= d->terms[j].field == t.field && d->terms[j].len == t.len &&
             !memcmp(d->terms[j].t, t.t, t.len);
    if (!dup) d->terms[d->nterms++] = t;
    d->put[d->nput++] = t; /* a repeat is put too: the document holds it once */
  }
}

static void put_doc(tern_txn *t, const mdoc *d) {
  tern_term tt[MAXT];
  for (size_t i = 0; i < d->nput; i++)
    tt[i] = (tern_term){k_fields[d->put[i].field], d->put[i].t, d->put[i].len};
  ET_OK(tern_put(t, d->key, d->klen, d->val, d->vlen, tt, d->nput));
}

/* Distinct random keys, sorted; documents put in batches (segments), some
 * replaced and some deleted after, the last batch left in the buffer. */
static void build(tern_index *idx, tu_rng *r) {
  for (size_t i = 0; i < NKEYS; i++) {
    mdoc *d = &g_docs[i];
    d->klen = 1 + tu_below(r, sizeof d->key);
    tu_fill(r, d->key, d->klen);
    d->key[0] = (uint8_t)(i & 0xff); /* mostly distinct; duplicates dropped below */
  }
  qsort(g_docs, NKEYS, sizeof *g_docs, doc_cmp);
  for (size_t i = 1, last = 0; i < NKEYS; i++) {
    if (!doc_cmp(&g_docs[last], &g_docs[i]))
      g_docs[i].klen = 0; /* a duplicate: unused */
    else
      last = i;
  }
  for (size_t b = 0; b < NKEYS + 40; b += 500) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, 0));
    size_t end = b < NKEYS ? b + 500 : b + 40; /* the last: 40 ops, left in the buffer */
    for (size_t i = b; i < end; i++) {
      mdoc *d = &g_docs[tu_below(r, NKEYS)];
      if (!d->klen) continue;
      if (d->live && tu_below(r, 4) == 0) {
        ET_OK(tern_delete(t, d->key, d->klen));
        d->live = 0;
        continue;
      }
      random_doc(r, d);
      put_doc(t, d);
      d->live = 1;
    }
    ET_OK(tern_commit(t));
  }
}

typedef struct visit {
  size_t at; /* next model doc expected */
  size_t seen;
} visit;

static size_t next_live(size_t i) {
  while (i < NKEYS && !g_docs[i].live)
    i++;
  return i;
}

/* The document's terms are the model's set, in the one order
 * (tern_doc_terms_fn): fields, then terms, ascending, in the buffer too. */
static void expect_terms(const mdoc *d, const tern_term *terms, size_t n) {
  assert_int_equal(n, d->nterms);
  tern_term got[MAXT], want[MAXT];
  if (n) memcpy(got, terms, n * sizeof *got); /* terms may be NULL when n is 0 */
  for (size_t i = 0; i < n; i++)
    want[i] = (tern_term){k_fields[d->terms[i].field], d->terms[i].t, d->terms[i].len};
  for (size_t i = 1; i < n; i++)
    assert_true(term_cmp(&got[i - 1], &got[i]) < 0);
  qsort(want, n, sizeof *want, term_cmp);
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(got[i].field, want[i].field);
    assert_int_equal(got[i].len, want[i].len);
    assert_memory_equal(got[i].term, want[i].term, want[i].len);
  }
}

static int check_doc(void *payload, tern_slice key, tern_slice val, const tern_term *terms,
                     size_t nterms) {
  visit *v = payload;
  v->at = next_live(v->at);
  assert_true(v->at < NKEYS);
  const mdoc *d = &g_docs[v->at];
  assert_int_equal(key.len, d->klen);
  assert_memory_equal(key.data, d->key, d->klen);
  assert_int_equal(val.len, d->vlen);
  if (d->vlen) assert_memory_equal(val.data, d->val, d->vlen);
  expect_terms(d, terms, nterms);
  v->at++;
  v->seen++;
  return 0;
}

/* Every live document of the model, in order, with its value and terms. */
static void expect_model(tern_index *idx) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  visit v = {0, 0};
  ET_OK(tern_docs_each(s, NULL, check_doc, &v));
  assert_int_equal(next_live(v.at), NKEYS);
  for (size_t i = 0; i < NKEYS; i += 97) {
    const mdoc *d = &g_docs[i];
    if (!d->klen) continue;
    visit one = {i, 0};
    int rc = tern_doc_terms(s, d->key, d->klen, check_doc, &one);
    assert_int_equal(rc, d->live ? TERN_OK : TERN_NOTFOUND);
    assert_int_equal(one.seen, d->live ? 1u : 0u);
  }
  ET_OK(tern_snapshot_close(s));
}

static int print_hit(void *payload, tern_slice key, tern_slice val) {
  FILE *f = payload;
  fwrite(key.data, 1, key.len, f);
  fputc('\t', f);
  fwrite(val.data, 1, val.len, f);
  fputc('\n', f);
  return 0;
}

/* "term\tdf\n" lines of every field's terms, and the keys of a search for
 * every term: what both indexes must answer alike. */
static char *answers(tern_index *idx, size_t *len) {
  char *buf = NULL;
  size_t cap = 0;
  FILE *f = open_memstream(&buf, &cap);
  assert_non_null(f);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  for (int fi = 0; fi < NFIELDS; fi++) {
    tern_terms *te;
    ET_OK(tern_terms_open(&te, s, k_fields[fi]));
    int rc;
    while ((rc = tern_terms_next(te)) == TERN_OK) {
      tern_slice t;
      uint64_t df;
      ET_OK(tern_terms_term(te, &t));
      ET_OK(tern_terms_docfreq(te, &df));
      fprintf(f, "%s:", k_fields[fi]);
      fwrite(t.data, 1, t.len, f);
      fprintf(f, "\t%llu\n", (unsigned long long)df);
      tern_postings *p; /* the hits in key order: doc ids differ between the two */
      ET_OK(tern_terms_postings(te, &p));
      ET_OK(tern_postings_each_by_key(p, 1, print_hit, f));
      ET_OK(tern_postings_close(p));
    }
    assert_int_equal(rc, TERN_NOTFOUND);
    ET_OK(tern_terms_close(te));
  }
  ET_OK(tern_snapshot_close(s));
  fclose(f);
  *len = cap;
  return buf;
}

static void test_dump_import_roundtrip(void **state) {
  (void)state;
  char *a = tu_tmpdir("dump-a"), *b = tu_tmpdir("dump-b");
  tern_options o;
  ET_OK(tern_options_init(&o));
  o.write_buffer_bytes = 32 << 10; /* several segments; the last commits stay buffered */
  tern_index *ia;
  ET_OK(tern_open(&ia, a, TERN_CREATE | TERN_FOREGROUND, &o));
  tu_rng r;
  tu_rng_init(&r, 0xd0u);
  build(ia, &r);
  tern_stats *st;
  ET_OK(tern_stats_get(&st, ia));
  print_message("[dump] %zu segments, %llu deleted, %llu buffered\n", st->nsegments,
                (unsigned long long)st->deleted, (unsigned long long)st->buffered);
  assert_true(st->nsegments >= 2 && st->deleted > 0 && st->buffered > 0);
  ET_OK(tern_stats_free(st));
  expect_model(ia);
  tern_docs_window_set(37); /* several windows per segment, none aligned */
  expect_model(ia);
  tern_docs_window_set(0);
  size_t la;
  char *ans_a = answers(ia, &la);
  ET_OK(tern_close(ia));

  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "'%s' dump '%s' > '%s/dump.tsv' && rm -rf '%s' && '%s' import -q '%s' '%s/dump.tsv'",
           g_bin, a, a, b, g_bin, b, a);
  assert_int_equal(system(cmd), 0);
  tern_index *ib;
  ET_OK(tern_open(&ib, b, 0, NULL));
  expect_model(ib);
  size_t lb;
  char *ans_b = answers(ib, &lb);
  assert_int_equal(la, lb);
  assert_memory_equal(ans_a, ans_b, la);
  ET_OK(tern_close(ib));
  /* The dump itself does not depend on where a document lives: B holds
   * in its segments what A held partly buffered. */
  snprintf(cmd, sizeof cmd, "'%s' dump '%s' | cmp -s - '%s/dump.tsv'", g_bin, b, a);
  assert_int_equal(system(cmd), 0);

  /* Bounds: --prefix of the first live key's first byte, as the model says. */
  size_t first = next_live(0), n = 0;
  for (size_t i = first; i < NKEYS; i++)
    n += g_docs[i].live && g_docs[i].key[0] == g_docs[first].key[0];
  snprintf(cmd, sizeof cmd, "test \"$('%s' dump '%s' --prefix '\\x%02x' | wc -l)\" -eq %zu", g_bin,
           b, g_docs[first].key[0], n);
  assert_int_equal(system(cmd), 0);
  /* --prefix '' is every key; with --from it is a usage error. */
  snprintf(cmd, sizeof cmd,
           "'%s' dump '%s' > '%s/all.tsv' && '%s' dump '%s' --prefix '' | cmp -s - '%s/all.tsv'",
           g_bin, b, a, g_bin, b, a);
  assert_int_equal(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "'%s' dump '%s' --prefix '' --from a 2>/dev/null", g_bin, b);
  int usage = system(cmd);
  assert_true(WIFEXITED(usage) && WEXITSTATUS(usage) == 2);
  free(ans_a);
  free(ans_b);
  tu_rmtree(a);
  tu_rmtree(b);
  free(a);
  free(b);
}

int main(void) {
  g_bin = getenv("TERN_BIN");
  if (!g_bin) {
    fprintf(stderr, "TERN_BIN not set (run through ctest)\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dump_import_roundtrip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
