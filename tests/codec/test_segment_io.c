/*
 * test_segment_io.c — the I/O count contract of a lookup, asserted with the
 * counted file layer (codec/io.h), in both I/O modes:
 *   - a present key, pulsed (threshold >= 1): exactly one read, of one
 *     4 KiB block of NAME.tim, and nothing else;
 *   - threshold 0: one more read, of the postings, when the doc is asked;
 *   - an external value: one read of NAME.val;
 *   - an absent key: no read at all in >= 98% of tries (range + filter);
 *   - a second lookup in the block the cursor holds: no read;
 *   - after tern_seg_evict: the block is read again.
 */
#include "tests/codec/segment_fixture.h"

static void stats(tern_seg *s, tern_seg_io *io) { tern_seg_io_stats(s, io); }

static void build(tu_rng *r, const char *dir, const char *name, uint32_t threshold, uint32_t n,
                  fx_seg *x) {
  memset(x, 0, sizeof *x);
  tern_segw_options_init(&x->o);
  x->o.inline_value_max = 16;
  fx_unique(r, &x->fields[0], "id", FX_BASE36, n, threshold, 0, 16, 1);
  fx_secondary(r, &x->fields[1], "tag", FX_MIXED, n / 4, threshold, 50, n);
  x->nfields = 2;
  x->max_doc = n;
  assert_int_equal(fx_write(x, dir, name), TERN_OK);
}

static void present_keys(tern_seg *s, const fx_seg *x, tu_rng *r, uint32_t threshold) {
  const fx_field *F = &x->fields[0];
  tern_seg_cursor *c = malloc(sizeof *c);
  tern_io_stats g;
  for (uint32_t k = 0; k < 300; k++) {
    const fx_term *t = &F->terms[tu_below(r, F->n)];
    tern_seg_cursor_init(c);
    tern_seg_reset_io_stats(s);
    tern_io_reset_global_stats();
    uint32_t doc;
    tern_slice v;
    assert_int_equal(tern_seg_pk_get(s, t->t, t->len, c, &doc, &v), TERN_OK);
    assert_int_equal(doc, t->docs[0]);
    tern_seg_io io;
    stats(s, &io);
    assert_int_equal(io.terms.reads, 1);
    assert_int_equal(io.terms.bytes, TERN_BLOCK_SIZE);
    assert_int_equal(io.postings.reads, threshold == 0 ? 1 : 0);
    assert_int_equal(io.values.reads, t->vlen > 16 ? 1 : 0);
    tern_io_global_stats(&g);
    assert_int_equal(g.reads, io.terms.reads + io.postings.reads + io.values.reads);
    /* seek_exact alone, fresh cursor: one block, no postings */
    tern_seg_cursor_release(c);
    tern_seg_cursor_init(c);
    tern_seg_reset_io_stats(s);
    tern_term_entry e;
    assert_int_equal(tern_seg_seek_exact(s, tern_seg_unique_field(s), t->t, t->len, c, &e),
                     TERN_OK);
    stats(s, &io);
    assert_int_equal(io.terms.reads, 1);
    assert_int_equal(io.postings.reads + io.values.reads, 0);
    /* the same cursor, the same block: no read */
    tern_seg_reset_io_stats(s);
    assert_int_equal(tern_seg_seek_exact(s, tern_seg_unique_field(s), t->t, t->len, c, &e),
                     TERN_OK);
    stats(s, &io);
    assert_int_equal(io.terms.reads, 0);
    tern_seg_cursor_release(c);
  }
  free(c);
}

static void absent_keys(tern_seg *s, const fx_seg *x, tu_rng *r) {
  const fx_field *F = &x->fields[0];
  tern_seg_cursor *c = malloc(sizeof *c);
  uint32_t tries = 10000, no_read = 0;
  for (uint32_t k = 0; k < tries; k++) {
    uint8_t key[16];
    uint32_t len;
    fx_make_term(r, FX_BASE36, key, &len);
    uint32_t lb = fx_lower_bound(F, key, len);
    if (lb < F->n && fx_cmp(F->terms[lb].t, F->terms[lb].len, key, len) == 0) {
      k--;
      continue;
    }
    tern_seg_cursor_init(c);
    tern_seg_reset_io_stats(s);
    assert_int_equal(tern_seg_pk_get(s, key, len, c, NULL, NULL), TERN_NOTFOUND);
    tern_seg_io io;
    stats(s, &io);
    assert_true(io.terms.reads <= 1);
    assert_int_equal(io.postings.reads + io.values.reads, 0);
    no_read += io.terms.reads == 0;
    tern_seg_cursor_release(c);
  }
  print_message("absent keys without a read: %u of %u\n", no_read, tries);
  assert_true(no_read * 100 >= tries * 98);
  free(c);
}

static void evicted(tern_seg *s, const fx_seg *x) {
  const fx_term *t = &x->fields[0].terms[0];
  tern_seg_cursor *c = malloc(sizeof *c);
  tern_seg_cursor_init(c);
  assert_int_equal(tern_seg_pk_get(s, t->t, t->len, c, NULL, NULL), TERN_OK);
  assert_int_equal(tern_seg_evict(s), TERN_OK);
  tern_seg_reset_io_stats(s);
  assert_int_equal(tern_seg_pk_get(s, t->t, t->len, c, NULL, NULL), TERN_OK);
  tern_seg_io io;
  stats(s, &io);
  assert_int_equal(io.terms.reads, 1);
  tern_seg_cursor_release(c);
  free(c);
}

/* Terms of a secondary field: one block read; postings only when iterated. */
static void secondary(tern_seg *s, const fx_seg *x, uint32_t threshold) {
  const fx_field *F = &x->fields[1];
  const tern_seg_field *f = tern_seg_find_field(s, F->name, strlen(F->name));
  tern_seg_cursor *c = malloc(sizeof *c);
  for (uint32_t i = 0; i < F->n; i += 1 + F->n / 50) {
    tern_seg_cursor_init(c);
    tern_seg_reset_io_stats(s);
    tern_term_entry e;
    assert_int_equal(tern_seg_seek_exact(s, f, F->terms[i].t, F->terms[i].len, c, &e), TERN_OK);
    tern_postings_iter it;
    assert_int_equal(tern_seg_postings(s, &e, &it), TERN_OK);
    tern_seg_io io;
    stats(s, &io);
    assert_int_equal(io.terms.reads, 1);
    assert_int_equal(io.postings.reads, F->terms[i].df <= threshold ? 0 : 1);
    tern_postings_iter_release(&it);
  }
  free(c);
}

static void run(uint32_t threshold) {
  tu_rng r;
  tu_rng_init(&r, 0x10c0 + threshold);
  char *dir = tu_tmpdir("seg-io");
  fx_seg x;
  build(&r, dir, "s", threshold, 20000, &x);
  for (int mode = 0; mode < 2; mode++) {
    tern_seg *s;
    assert_int_equal(tern_seg_open(&s, dir, "s", mode ? TERN_IO_PREAD : TERN_IO_MMAP), TERN_OK);
    present_keys(s, &x, &r, threshold);
    absent_keys(s, &x, &r);
    secondary(s, &x, threshold);
    evicted(s, &x);
    tern_seg_close(s);
  }
  fx_free(&x);
  free(dir);
}

static void test_pulsed(void **state) {
  (void)state;
  run(1);
}

static void test_not_pulsed(void **state) {
  (void)state;
  run(0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pulsed),
                                     cmocka_unit_test(test_not_pulsed)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
