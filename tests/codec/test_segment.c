/* SPDX-License-Identifier: MIT */
/*
 * test_segment.c — segments written and read back against the reference
 * model of segment_fixture.h: several fields of several term shapes and
 * thresholds 0, 1 and 8; iteration, seek_exact of every present term and of
 * absent ones, seek_ceil, postings (next and advance), values inline and
 * external, pk_get, tern_seg_doc, verify; in both I/O modes.  Plus the
 * writer's argument checks and the file-name helpers.
 */
#include "tests/codec/segment_fixture.h"

#include <sys/stat.h>
#include <unistd.h>


static void check_postings(const tern_seg *s, const fx_term *t, const tern_term_entry *e,
                           tu_rng *r) {
  tern_postings_iter it;
  assert_int_equal(tern_seg_postings(s, e, &it), TERN_OK);
  uint32_t doc;
  for (uint32_t k = 0; k < t->df; k++) {
    assert_int_equal(tern_postings_iter_next(&it, &doc), TERN_OK);
    assert_int_equal(doc, t->docs[k]);
  }
  assert_int_equal(tern_postings_iter_next(&it, &doc), TERN_OK);
  assert_int_equal(doc, TERN_DOC_END);
  tern_postings_iter_release(&it);
  if (t->df < 3) return;
  /* advance to random targets, ascending */
  assert_int_equal(tern_seg_postings(s, e, &it), TERN_OK);
  uint32_t target = 0, k = 0;
  for (int step = 0; step < 8; step++) {
    target += (uint32_t)tu_below(r, t->docs[t->df - 1] / 4 + 2);
    while (k < t->df && t->docs[k] < target) k++;
    assert_int_equal(tern_postings_iter_advance(&it, target, &doc), TERN_OK);
    assert_int_equal(doc, k < t->df ? t->docs[k] : TERN_DOC_END);
    if (doc == TERN_DOC_END) break;
    target = doc + 1;
    k++;
  }
  tern_postings_iter_release(&it);
}

static void check_entry(const tern_seg *s, const fx_field *F, uint32_t i, tern_seg_cursor *c,
                        const tern_term_entry *e, tu_rng *r, int deep) {
  const fx_term *t = &F->terms[i];
  assert_int_equal(e->len, t->len);
  assert_memory_equal(e->term, t->t, t->len);
  assert_int_equal(e->ordinal, i);
  assert_int_equal(e->meta.df, t->df);
  assert_int_equal(e->meta.pulsed, t->df <= F->threshold);
  if (e->meta.pulsed) assert_memory_equal(e->meta.docs, t->docs, t->df * sizeof(uint32_t));
  if (deep) check_postings(s, t, e, r);
  if (F->flags & TERN_FIELD_UNIQUE) {
    tern_slice v;
    assert_int_equal(tern_seg_value(s, e, c, &v), TERN_OK);
    assert_int_equal(v.len, t->vlen);
    if (t->vlen) assert_memory_equal(v.data, t->val, t->vlen);
  }
}

static void check_field(const tern_seg *s, const fx_field *F, tu_rng *r) {
  const tern_seg_field *f = tern_seg_find_field(s, F->name, strlen(F->name));
  assert_non_null(f);
  tern_field_info info;
  tern_seg_field_info(f, &info);
  assert_int_equal(info.nterms, F->n);
  assert_int_equal(info.flags, F->flags);
  assert_int_equal(info.threshold, F->threshold);
  uint64_t pulsed = 0;
  for (uint32_t i = 0; i < F->n; i++) pulsed += F->terms[i].df <= F->threshold;
  assert_int_equal(info.pulsed_terms, pulsed);
  tern_seg_cursor *c = malloc(sizeof *c);
  tern_seg_cursor_init(c);
  tern_term_entry e;
  /* iteration */
  int rc = tern_seg_first_term(s, f, c, &e);
  for (uint32_t i = 0; i < F->n; i++) {
    assert_int_equal(rc, TERN_OK);
    check_entry(s, F, i, c, &e, r, i % 5 == 0 || F->terms[i].df > 1000);
    rc = tern_seg_next_term(s, c, &e);
  }
  assert_int_equal(rc, TERN_NOTFOUND);
  if (F->n == 0) {
    tern_seg_cursor_release(c);
    free(c);
    return;
  }
  assert_memory_equal(info.min_term, F->terms[0].t, F->terms[0].len);
  assert_memory_equal(info.max_term, F->terms[F->n - 1].t, F->terms[F->n - 1].len);
  /* every present term, in random order, and the term after it */
  for (uint32_t k = 0; k < F->n; k++) {
    uint32_t i = (uint32_t)tu_below(r, F->n);
    const fx_term *t = &F->terms[i];
    assert_true(tu_seg_may_contain(s, f, t->t, t->len));
    assert_int_equal(tern_seg_seek_exact(s, f, t->t, t->len, c, &e), TERN_OK);
    check_entry(s, F, i, c, &e, r, 0);
    rc = tern_seg_next_term(s, c, &e);
    if (i + 1 < F->n) {
      assert_int_equal(rc, TERN_OK);
      check_entry(s, F, i + 1, c, &e, r, 0);
    } else {
      assert_int_equal(rc, TERN_NOTFOUND);
    }
    if (F->flags & TERN_FIELD_UNIQUE) {
      uint32_t doc;
      tern_slice v;
      assert_int_equal(tu_seg_pk_get(s, t->t, t->len, c, &doc, &v), TERN_OK);
      assert_int_equal(doc, t->docs[0]);
      assert_int_equal(v.len, t->vlen);
      if (t->vlen) assert_memory_equal(v.data, t->val, t->vlen);
    }
  }
  /* absent keys: exact is NOTFOUND, ceil is the lower bound */
  uint8_t key[TERN_KEY_MAX];
  for (uint32_t k = 0; k < 2 * F->n + 50; k++) {
    uint32_t klen = fx_near_key(r, F, key);
    uint32_t lb = fx_lower_bound(F, key, klen);
    int present = lb < F->n && fx_cmp(F->terms[lb].t, F->terms[lb].len, key, klen) == 0;
    rc = tern_seg_seek_exact(s, f, key, klen, c, &e);
    assert_int_equal(rc, present ? TERN_OK : TERN_NOTFOUND);
    if (present) assert_true(tu_seg_may_contain(s, f, key, klen));
    rc = tern_seg_seek_ceil(s, f, key, klen, c, &e);
    if (lb == F->n) {
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    assert_int_equal(rc, TERN_OK);
    check_entry(s, F, lb, c, &e, r, 0);
    rc = tern_seg_next_term(s, c, &e);
    assert_int_equal(rc, lb + 1 < F->n ? TERN_OK : TERN_NOTFOUND);
    if (rc == TERN_OK) check_entry(s, F, lb + 1, c, &e, r, 0);
    if (F->flags & TERN_FIELD_UNIQUE)
      assert_int_equal(tu_seg_pk_get(s, key, klen, c, NULL, NULL),
                       present ? TERN_OK : TERN_NOTFOUND);
  }
  /* keys below and above the range */
  uint8_t lo[1] = {0};
  rc = tern_seg_seek_ceil(s, f, lo, 1, c, &e);
  assert_int_equal(rc, TERN_OK);
  check_entry(s, F, 0, c, &e, r, 0);
  memset(key, 0xff, sizeof key);
  rc = tern_seg_seek_ceil(s, f, key, TERN_KEY_MAX, c, &e);
  const fx_term *last = &F->terms[F->n - 1];
  if (fx_cmp(last->t, last->len, key, TERN_KEY_MAX) == 0)
    assert_int_equal(rc, TERN_OK);
  else
    assert_int_equal(rc, TERN_NOTFOUND);
  /* tern_seg_doc on doc-ordered unique fields */
  if ((F->flags & TERN_FIELD_UNIQUE)) {
    int ordered = 1;
    for (uint32_t i = 0; i < F->n; i++) ordered &= F->terms[i].docs[0] == i;
    tern_slice k, v;
    if (!ordered) {
      assert_int_equal(tern_seg_doc(s, 0, c, &k, &v), TERN_EINVAL);
    } else {
      for (uint32_t q = 0; q < F->n; q++) {
        uint32_t i = q % 2 ? q : (uint32_t)tu_below(r, F->n);
        assert_int_equal(tern_seg_doc(s, i, c, &k, &v), TERN_OK);
        assert_int_equal(k.len, F->terms[i].len);
        assert_memory_equal(k.data, F->terms[i].t, k.len);
        assert_int_equal(v.len, F->terms[i].vlen);
        if (v.len) assert_memory_equal(v.data, F->terms[i].val, v.len);
      }
      assert_int_equal(tern_seg_doc(s, F->n, c, &k, &v), TERN_NOTFOUND);
    }
  }
  tern_seg_cursor_release(c);
  free(c);
}

static void check_segment(const fx_seg *x, const char *dir, const char *name, tu_rng *r) {
  for (int mode = 0; mode < 2; mode++) {
    tern_seg *s;
    assert_int_equal(tern_seg_open(&s, dir, name, mode ? TERN_IO_PREAD : TERN_IO_MMAP), TERN_OK);
    assert_int_equal(tern_seg_max_doc(s), x->max_doc);
    assert_int_equal(tern_seg_nfields(s), x->nfields);
    const tern_seg_field *u = tern_seg_unique_field(s);
    int has_unique = 0;
    for (size_t i = 0; i < x->nfields; i++) {
      check_field(s, &x->fields[i], r);
      has_unique |= (x->fields[i].flags & TERN_FIELD_UNIQUE) != 0;
    }
    assert_int_equal(u != NULL, has_unique);
    assert_int_equal(tern_seg_verify(s), TERN_OK);
    tern_seg_summary sum;
    tern_seg_summarize(s, &sum);
    uint64_t terms = 0;
    for (size_t i = 0; i < x->nfields; i++) terms += x->fields[i].n;
    assert_int_equal(sum.terms, terms);
    tern_seg_close(s);
  }
}

static void roundtrip(fx_seg *x, const char *tag, tu_rng *r) {
  char *dir = tu_tmpdir(tag);
  int rc = fx_write(x, dir, "s1");
  if (rc) fprintf(stderr, "write: %s\n", tern_errmsg());
  assert_int_equal(rc, TERN_OK);
  check_segment(x, dir, "s1", r);
  fx_free(x);
  free(dir);
}

static void test_fields_thresholds(void **state) {
  (void)state;
  static const uint32_t thresholds[] = {0, 1, 8};
  for (size_t ti = 0; ti < 3; ti++) {
    tu_rng r;
    tu_rng_init(&r, 0x5e61 + ti);
    fx_seg x = {.max_doc = 200000};
    tern_segw_options_init(&x.o);
    uint32_t th = thresholds[ti], n = 3000 * tu_scale();
    fx_secondary(&r, &x.fields[0], "a.binary", FX_BINARY, n, th, 2000, x.max_doc);
    fx_secondary(&r, &x.fields[1], "b.long", FX_LONG, 200, th, 100, x.max_doc);
    fx_secondary(&r, &x.fields[2], "c.mixed", FX_MIXED, n, th, 100000, x.max_doc);
    fx_secondary(&r, &x.fields[3], "d.empty", FX_MIXED, 0, th, 1, x.max_doc);
    fx_unique(&r, &x.fields[4], "id", FX_BASE36, n, th, 1, 64, 1);
    fx_secondary(&r, &x.fields[5], "z.tiny", FX_TINY, 2000, th, 40, x.max_doc);
    fx_secondary(&r, &x.fields[6], "zz.bytes", FX_ALLBYTES, 3000, th, 5, x.max_doc);
    x.nfields = 7;
    roundtrip(&x, "seg-fields", &r);
  }
}

static void test_unique_shapes(void **state) {
  (void)state;
  /* permuted doc ids, external values, binary keys, no filter, restarts */
  static const struct {
    enum fx_shape shape;
    int ordered;
    uint32_t inline_max, bloom, restart, threshold;
  } cases[] = {
      {FX_BASE36, 0, 64, 10, 32, 1}, {FX_BINARY, 1, 0, 0, 1, 1},   {FX_LONG, 1, 1024, 10, 16, 1},
      {FX_MIXED, 0, 16, 4, 64, 0},   {FX_ALLBYTES, 1, 8, 10, 255, 8},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tu_rng r;
    tu_rng_init(&r, 0xa11 + i);
    fx_seg x = {.max_doc = 0};
    tern_segw_options_init(&x.o);
    x.o.inline_value_max = cases[i].inline_max;
    x.o.bloom_bits_per_key = cases[i].bloom;
    x.o.restart_interval = cases[i].restart;
    uint32_t n = cases[i].shape == FX_LONG ? 300 : 4000;
    fx_unique(&r, &x.fields[0], "pk", cases[i].shape, n, cases[i].threshold, cases[i].ordered,
              cases[i].inline_max, 1);
    x.max_doc = x.fields[0].n + (uint32_t)tu_below(&r, 3);
    x.nfields = 1;
    roundtrip(&x, "seg-unique", &r);
  }
}

static void test_large_postings(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xb16);
  uint32_t big = TU_ASAN ? 200000 : 1000000;
  fx_seg x = {.max_doc = big + 10};
  tern_segw_options_init(&x.o);
  fx_secondary(&r, &x.fields[0], "f", FX_MIXED, 50, 8, 100000, x.max_doc);
  /* one term with every doc but a few */
  fx_term *t = &x.fields[0].terms[x.fields[0].n / 2];
  free(t->docs);
  t->df = big;
  t->docs = fx_docs(&r, big, x.max_doc);
  x.nfields = 1;
  roundtrip(&x, "seg-big", &r);
}

static void test_edges(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xed9e);
  /* no fields at all */
  {
    fx_seg x = {.max_doc = 0};
    tern_segw_options_init(&x.o);
    roundtrip(&x, "seg-empty", &r);
  }
  /* one field, one term; the empty field name; a 1024-byte key and value */
  {
    fx_seg x = {.max_doc = 1};
    tern_segw_options_init(&x.o);
    x.o.inline_value_max = 1024;
    fx_field *f = &x.fields[0];
    memset(f, 0, sizeof *f);
    f->flags = TERN_FIELD_UNIQUE;
    f->threshold = 64;
    f->n = 1;
    f->terms = calloc(1, sizeof *f->terms);
    f->terms[0].len = TERN_KEY_MAX;
    f->terms[0].t = malloc(TERN_KEY_MAX);
    tu_fill(&r, f->terms[0].t, TERN_KEY_MAX);
    f->terms[0].df = 1;
    f->terms[0].docs = calloc(1, sizeof(uint32_t));
    f->terms[0].vlen = 1024;
    f->terms[0].val = malloc(1024);
    tu_fill(&r, f->terms[0].val, 1024);
    x.nfields = 1;
    roundtrip(&x, "seg-one", &r);
  }
  /* every term pulsed at the largest threshold, 64 docs each */
  {
    fx_seg x = {.max_doc = 1u << 20};
    tern_segw_options_init(&x.o);
    fx_secondary(&r, &x.fields[0], "p", FX_BINARY, 500, 64, 64, x.max_doc);
    for (uint32_t i = 0; i < x.fields[0].n; i += 2) {
      fx_term *t = &x.fields[0].terms[i];
      free(t->docs);
      t->df = 64;
      t->docs = fx_docs(&r, 64, x.max_doc);
    }
    x.nfields = 1;
    roundtrip(&x, "seg-p64", &r);
  }
}

static int file_exists(const char *dir, const char *name) {
  char *p = tu_path(dir, name);
  struct stat st;
  int ok = stat(p, &st) == 0;
  free(p);
  return ok;
}

static void test_writer_rejects(void **state) {
  (void)state;
  char *dir = tu_tmpdir("seg-rejects");
  tern_segw *w;
  assert_int_equal(tern_segw_open(&w, dir, "s", NULL), TERN_OK);
  uint32_t d0 = 0, d5 = 5, two[2] = {3, 3};
  assert_int_equal(tern_segw_term(w, "a", 1, &d0, 1, NULL, 0), TERN_EINVAL); /* no field */
  assert_int_equal(tern_segw_field(w, "f", 1, 0, 65), TERN_EINVAL);          /* threshold */
  assert_int_equal(tern_segw_field(w, "f", 1, 0x8, 1), TERN_EINVAL);         /* flags */
  assert_int_equal(tern_segw_field(w, "f", 1, 0, 1), TERN_OK);
  assert_int_equal(tern_segw_term(w, "", 0, &d0, 1, NULL, 0), TERN_EINVAL);
  uint8_t big[TERN_KEY_MAX + 1] = {0};
  assert_int_equal(tern_segw_term(w, big, sizeof big, &d0, 1, NULL, 0), TERN_EINVAL);
  assert_int_equal(tern_segw_term(w, "b", 1, &d0, 0, NULL, 0), TERN_EINVAL);
  assert_int_equal(tern_segw_term(w, "b", 1, two, 2, NULL, 0), TERN_EINVAL);
  assert_int_equal(tern_segw_term(w, "b", 1, &d0, 1, "v", 1), TERN_EINVAL); /* value */
  assert_int_equal(tern_segw_term(w, "b", 1, &d0, 1, NULL, 0), TERN_OK);
  assert_int_equal(tern_segw_term(w, "b", 1, &d0, 1, NULL, 0), TERN_EINVAL); /* not ascending */
  assert_int_equal(tern_segw_term(w, "a", 1, &d0, 1, NULL, 0), TERN_EINVAL);
  assert_int_equal(tern_segw_field(w, "f", 1, 0, 1), TERN_EINVAL); /* field order */
  assert_int_equal(tern_segw_field(w, "e", 1, 0, 1), TERN_EINVAL);
  assert_int_equal(tern_segw_field(w, "g", 1, TERN_FIELD_UNIQUE, 1), TERN_OK);
  assert_int_equal(tern_segw_term(w, "k", 1, two, 2, "v", 1), TERN_EINVAL); /* 2 docs */
  assert_int_equal(tern_segw_term(w, "k", 1, &d5, 1, "v", 1), TERN_OK);
  assert_int_equal(tern_segw_field(w, "h", 1, TERN_FIELD_UNIQUE, 1), TERN_EINVAL);
  assert_true(file_exists(dir, "s.tim.tmp"));
  /* doc 5 is not below max_doc 5: finish fails and leaves nothing */
  assert_int_equal(tern_segw_finish(w, 5), TERN_EINVAL);
  for (int f = 0; f < 5; f++) {
    static const char *names[] = {"s.tim", "s.tix", "s.doc", "s.flt", "s.val"};
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%s.tmp", names[f]);
    assert_false(file_exists(dir, names[f]));
    assert_false(file_exists(dir, tmp));
  }
  /* abort removes the temporary files */
  assert_int_equal(tern_segw_open(&w, dir, "t", NULL), TERN_OK);
  assert_int_equal(tern_segw_field(w, "f", 1, 0, 1), TERN_OK);
  assert_int_equal(tern_segw_term(w, "x", 1, &d0, 1, NULL, 0), TERN_OK);
  tern_segw_abort(w);
  assert_false(file_exists(dir, "t.tim.tmp"));
  assert_false(file_exists(dir, "t.doc.tmp"));
  tern_segw_abort(NULL);
  free(dir);
}

static void test_file_names(void **state) {
  (void)state;
  char name[64];
  assert_int_equal(tern_seg_file_segment("seg_12.tim", name, sizeof name), 1);
  assert_string_equal(name, "seg_12");
  assert_int_equal(tern_seg_file_segment("x.y.val.tmp", name, sizeof name), 1);
  assert_string_equal(name, "x.y");
  assert_int_equal(tern_seg_file_segment("data.mdb", name, sizeof name), 0);
  assert_int_equal(tern_seg_file_segment(".tix", name, sizeof name), 0);
  assert_int_equal(tern_seg_file_segment("abcdef.flt", name, 4), 0);
  char *dir = tu_tmpdir("seg-names");
  fx_seg x = {.max_doc = 10};
  tern_segw_options_init(&x.o);
  tu_rng r;
  tu_rng_init(&r, 7);
  fx_secondary(&r, &x.fields[0], "f", FX_MIXED, 10, 1, 3, x.max_doc);
  x.nfields = 1;
  assert_int_equal(fx_write(&x, dir, "n"), TERN_OK);
  assert_true(file_exists(dir, "n.tix"));
  char *stray = tu_path(dir, "n.doc.tmp");
  tu_write_file(stray, "x", 1);
  free(stray);
  assert_int_equal(tern_seg_remove(dir, "n"), TERN_OK);
  assert_false(file_exists(dir, "n.tix"));
  assert_false(file_exists(dir, "n.doc.tmp"));
  assert_int_equal(tern_seg_remove(dir, "n"), TERN_OK);
  fx_free(&x);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fields_thresholds), cmocka_unit_test(test_unique_shapes),
      cmocka_unit_test(test_large_postings),    cmocka_unit_test(test_edges),
      cmocka_unit_test(test_writer_rejects),    cmocka_unit_test(test_file_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
