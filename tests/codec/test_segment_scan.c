/* SPDX-License-Identifier: MIT */
/*
 * test_segment_scan.c — backward walks of a field (codec/segment_scan.h)
 * against the fixture's sorted reference: last term then prev to the
 * first, seek_floor to present and near keys, and mixed prev/next walks,
 * over every term shape, restart intervals 1 to 255, both I/O modes; the
 * unique field's values, and its reverse scan by keyed windows
 * (tern_seg_prev_keyed, tern_seg_run_value).
 */
#include "codec/segment_scan.h"
#include "codec/segment_internal.h"
#include "tests/codec/segment_fixture.h"

static void expect_term(const fx_field *f, uint32_t i, const tern_term_entry *e) {
  if (e->len != f->terms[i].len || memcmp(e->term, f->terms[i].t, e->len))
    fail_msg("entry %u of %u: wrong term", i, f->n);
  assert_int_equal(e->ordinal, i);
  assert_int_equal(e->meta.df, f->terms[i].df);
  if (e->meta.pulsed) assert_int_equal(e->docs[0], f->terms[i].docs[0]);
}

static void same_value(const fx_field *f, uint32_t i, tern_slice v) {
  if (!(f->flags & TERN_FIELD_UNIQUE)) return;
  if (v.len != f->terms[i].vlen || (v.len && memcmp(v.data, f->terms[i].val, v.len)))
    fail_msg("entry %u of %u: wrong value (%zu bytes, %u wanted)", i, f->n, v.len,
             f->terms[i].vlen);
}

/* One step back as the engine's cursor takes it: from the keyed window
 * where it holds the entry (1), else by tern_seg_prev_term into e, its
 * status in *rc (0); *term / *len the entry's term either way. */
static int step_back(const tern_seg *s, tern_seg_cursor *c, tern_seg_run *run, tern_term_entry *e,
                     const uint8_t **term, size_t *len, int *rc) {
  *rc = TERN_OK;
  if (tern_seg_prev_keyed(s, c, run, term, len)) return 1;
  *rc = tern_seg_prev_term(s, c, run, e);
  *term = e->term;
  *len = e->len;
  return 0;
}

/* A reverse scan's cursor, run and entry, started on a field's last term. */
typedef struct back_walk {
  tern_seg_cursor c;
  tern_seg_run run;
  tern_term_entry e;
} back_walk;

static void back_walk_start(back_walk *w, const tern_seg *s, const tern_seg_field *sf) {
  tern_seg_cursor_init(&w->c);
  tern_seg_run_init(&w->run);
  assert_int_equal(tern_seg_last_term(s, sf, &w->c, &w->run, &w->e), TERN_OK);
}

static void back_walk_end(back_walk *w) {
  tern_seg_run_release(&w->run);
  tern_seg_cursor_release(&w->c);
}

/* A reverse scan as the engine's cursor takes it: tern_seg_prev_keyed
 * where it steps (term and value from the window, tern_seg_run_value),
 * tern_seg_prev_term where it does not; now and then a forward step and
 * back, which must continue from the keyed step's entry.  *keyed: the
 * keyed steps taken. */
static void keyed_walk(const tern_seg *s, const tern_seg_field *sf, const fx_field *f, tu_rng *r,
                       uint32_t *keyed) {
  back_walk w;
  back_walk_start(&w, s, sf);
  tern_seg_cursor *c = &w.c;
  tern_seg_run *run = &w.run;
  tern_term_entry *e = &w.e;
  uint32_t i = f->n - 1;
  const uint8_t *term = e->term;
  size_t len = e->len;
  int by_window = 0;
  for (;;) {
    if (len != f->terms[i].len || memcmp(term, f->terms[i].t, len))
      fail_msg("entry %u of %u: wrong term (%s)", i, f->n, by_window ? "keyed" : "entry");
    uint64_t ord;
    assert_true(tern_seg_cursor_ordinal(c, &ord));
    assert_int_equal(ord, i);
    tern_slice v;
    if (by_window)
      assert_int_equal(tern_seg_run_value(s, c, run, &v), TERN_OK);
    else
      assert_int_equal(tern_seg_value(s, e, c, &v), TERN_OK);
    same_value(f, i, v);
    if (i + 1 < f->n && tu_below(r, 50) == 0) { /* forwards from here, and back */
      assert_int_equal(tern_seg_next_term(s, c, e), TERN_OK);
      expect_term(f, i + 1, e);
      assert_int_equal(tern_seg_prev_term(s, c, run, e), TERN_OK);
      expect_term(f, i, e);
    }
    if (i == 0) break;
    int rc;
    by_window = step_back(s, c, run, e, &term, &len, &rc);
    assert_int_equal(rc, TERN_OK);
    *keyed += (uint32_t)by_window;
    i--;
  }
  assert_int_equal(tern_seg_prev_keyed(s, c, run, &term, &len), 0); /* before the first */
  assert_int_equal(tern_seg_prev_term(s, c, run, e), TERN_NOTFOUND);
  back_walk_end(&w);
}

static void check_field(const tern_seg *s, const fx_field *f, tu_rng *r) {
  const tern_seg_field *sf = tern_seg_find_field(s, f->name, strlen(f->name));
  assert_non_null(sf);
  tern_seg_cursor c;
  tern_seg_run run;
  tern_term_entry e;
  tern_seg_cursor_init(&c);
  tern_seg_run_init(&run);
  int rc = tern_seg_last_term(s, sf, &c, &run, &e);
  if (f->n == 0) {
    assert_int_equal(rc, TERN_NOTFOUND);
  } else {
    assert_int_equal(rc, TERN_OK);
    for (uint32_t i = f->n; i-- > 0;) {
      expect_term(f, i, &e);
      tern_slice v;
      if (f->flags & TERN_FIELD_UNIQUE) {
        assert_int_equal(tern_seg_value(s, &e, &c, &v), TERN_OK);
        same_value(f, i, v);
      }
      rc = tern_seg_prev_term(s, &c, &run, &e);
      assert_int_equal(rc, i ? TERN_OK : TERN_NOTFOUND);
    }
  }
  for (uint32_t q = 0; f->n && q < 300; q++) {
    uint8_t key[TERN_KEY_MAX + 1];
    uint32_t klen = fx_near_key(r, f, key);
    uint32_t lb = fx_lower_bound(f, key, klen);
    int exact = lb < f->n && !fx_cmp(f->terms[lb].t, f->terms[lb].len, key, klen);
    int64_t want = exact ? lb : (int64_t)lb - 1;
    rc = tern_seg_seek_floor(s, sf, key, klen, &c, &run, &e);
    if (want < 0) {
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    assert_int_equal(rc, TERN_OK);
    for (int k = 0; k < 40; k++) { /* a walk either way from there */
      expect_term(f, (uint32_t)want, &e);
      int back = (int)tu_below(r, 2);
      rc = back ? tern_seg_prev_term(s, &c, &run, &e) : tern_seg_next_term(s, &c, &e);
      int64_t next = want + (back ? -1 : 1);
      if (next < 0 || next >= f->n) {
        assert_int_equal(rc, TERN_NOTFOUND);
        break;
      }
      assert_int_equal(rc, TERN_OK);
      want = next;
    }
  }
  tern_seg_run_release(&run);
  tern_seg_cursor_release(&c);
}

static void test_backward_walks(void **state) {
  (void)state;
  static const struct {
    enum fx_shape shape;
    uint32_t restart, n;
  } cases[] = {{FX_BASE36, 32, 20000}, {FX_BINARY, 1, 3000}, {FX_LONG, 16, 400},
               {FX_MIXED, 64, 5000},   {FX_TINY, 255, 2000}, {FX_ALLBYTES, 7, 3000},
               {FX_BASE36, 32, 1},     {FX_MIXED, 32, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ (0x5ca4 + i));
    fx_seg x = {.max_doc = 100000};
    tern_segw_options_init(&x.o);
    x.o.restart_interval = cases[i].restart;
    fx_secondary(&r, &x.fields[0], "a", cases[i].shape, cases[i].n, 1, 50, x.max_doc);
    fx_unique(&r, &x.fields[1], "b", cases[i].shape, cases[i].n, 1, 1, 64, 1);
    x.nfields = 2;
    x.max_doc = cases[i].n > x.max_doc ? cases[i].n : x.max_doc;
    char *dir = tu_tmpdir("seg-scan");
    assert_int_equal(fx_write(&x, dir, "s1"), TERN_OK);
    for (int mode = 0; mode < 2; mode++) {
      tern_seg *s;
      assert_int_equal(tern_seg_open(&s, dir, "s1", mode ? TERN_IO_PREAD : TERN_IO_MMAP), TERN_OK);
      for (size_t fi = 0; fi < x.nfields; fi++)
        check_field(s, &x.fields[fi], &r);
      if (cases[i].n == 0) {
        tern_seg_close(s);
        continue;
      }
      uint32_t keyed = 0;
      keyed_walk(s, tern_seg_find_field(s, "b", 1), &x.fields[1], &r, &keyed);
      /* Keyed windows where a restart run fits a batch: short terms and
       * runs of at most TERN_TB_KEYS_MAX entries. */
      if (cases[i].restart <= TERN_TB_KEYS_MAX && cases[i].shape != FX_LONG && cases[i].n > 100)
        assert_true(keyed > x.fields[1].n / 2);
      tern_seg_close(s);
    }
    fx_free(&x);
    tu_rmtree(dir);
    free(dir);
  }
}

/* Keyed windows shrink where long terms fill a batch, and grow back to
 * whole windows once the terms are short again: a reverse scan of keys
 * whose highest LONG_TOP are long (166 bytes: a batch holds ~24 of them)
 * and the rest 16 characters, checked against the reference throughout. */
static void test_windows_grow_back(void **state) {
  (void)state;
  enum { N = 4000, LONG_TOP = 400, LONG_LEN = 166 };
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0x9a0b);
  fx_seg x = {.max_doc = N};
  tern_segw_options_init(&x.o);
  fx_unique(&r, &x.fields[0], "k", FX_BASE36, N, 1, 1, 16, 1);
  x.nfields = 1;
  fx_field *f = &x.fields[0];
  assert_int_equal(f->n, N);
  /* The same suffix after each of the highest terms keeps them in order
   * and above the others. */
  for (uint32_t i = N - LONG_TOP; i < N; i++) {
    fx_term *t = &f->terms[i];
    t->t = realloc(t->t, LONG_LEN);
    assert_non_null(t->t);
    memset(t->t + t->len, 'x', LONG_LEN - t->len);
    t->len = LONG_LEN;
  }
  char *dir = tu_tmpdir("seg-scan-grow");
  assert_int_equal(fx_write(&x, dir, "s1"), TERN_OK);
  tern_seg *s;
  assert_int_equal(tern_seg_open(&s, dir, "s1", TERN_IO_MMAP), TERN_OK);
  back_walk w;
  back_walk_start(&w, s, tern_seg_find_field(s, "k", 1));
  const uint8_t *term = w.e.term;
  size_t len = w.e.len;
  uint32_t least = TERN_TB_KEYS_MAX;
  for (uint32_t i = N - 1;; i--) {
    if (len != f->terms[i].len || memcmp(term, f->terms[i].t, len))
      fail_msg("entry %u of %u: wrong term", i, N);
    if (w.run.span && w.run.span < least) least = w.run.span;
    if (i == 0) break;
    int rc;
    (void)step_back(s, &w.c, &w.run, &w.e, &term, &len, &rc);
    assert_int_equal(rc, TERN_OK);
  }
  assert_true(least < TERN_TB_KEYS_MAX / 2); /* the long terms shrank the windows */
  assert_int_equal(w.run.span, TERN_TB_KEYS_MAX); /* and the short ones grew them back */
  back_walk_end(&w);
  tern_seg_close(s);
  fx_free(&x);
  tu_rmtree(dir);
  free(dir);
}

/* A reverse scan asks the kernel for the blocks below it ahead of its
 * steps (tern_seg_scan_behind): at each block it steps back into, on a
 * fresh open (no page checked yet), what it asked for reaches from that
 * block down at least half a window (or to the field's first block), and
 * no further than a window and a half; the last term alone (a
 * positioning) asks for nothing. */
static void test_reads_behind(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0xbe41d);
  fx_seg x = {.max_doc = 200000};
  tern_segw_options_init(&x.o);
  x.o.restart_interval = 8;
  fx_unique(&r, &x.fields[0], "b", FX_BASE36, 200000, 1, 1, 64, 1);
  x.nfields = 1;
  char *dir = tu_tmpdir("seg-behind");
  assert_int_equal(fx_write(&x, dir, "s1"), TERN_OK);
  tern_seg *s;
  assert_int_equal(tern_seg_open(&s, dir, "s1", TERN_IO_MMAP), TERN_OK);
  const tern_seg_field *sf = tern_seg_find_field(s, "b", 1);
  assert_true(sf->nblocks > 2 * TERN_SEG_SCAN_AHEAD);
  back_walk w;
  back_walk_start(&w, s, sf);
  tern_seg_cursor *c = &w.c;
  int rc = TERN_OK;
  assert_int_equal(c->ra_down, 0);
  uint32_t n = 0, blocks = 1;
  int64_t at = c->block_no;
  while (rc == TERN_OK) {
    if (c->block_no != at) { /* stepped back into a block */
      at = c->block_no;
      blocks++;
      uint64_t gb = sf->first_block + c->field_block, low = c->ra_down - 1;
      uint64_t below = c->field_block, half = TERN_SEG_SCAN_AHEAD / 2;
      assert_true(c->ra_down > 0 && low <= gb);
      assert_true(gb - low >= (below < half ? below : half));
      assert_true(gb - low <= TERN_SEG_SCAN_AHEAD + half);
    }
    n++;
    const uint8_t *term;
    size_t len;
    (void)step_back(s, c, &w.run, &w.e, &term, &len, &rc);
  }
  assert_int_equal(rc, TERN_NOTFOUND);
  assert_int_equal(n, x.fields[0].n);
  assert_int_equal(blocks, sf->nblocks);
  back_walk_end(&w);
  tern_seg_close(s);
  fx_free(&x);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_backward_walks),
                                     cmocka_unit_test(test_windows_grow_back),
                                     cmocka_unit_test(test_reads_behind)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
