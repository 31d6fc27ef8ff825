/* SPDX-License-Identifier: MIT */
/*
 * test_segment_values.c — values read from NAME.val, against the fixture's
 * reference values, in both I/O modes:
 *   - sizes 0 .. 9,000 bytes around the inline limit and the page size,
 *     many of them across one or two 4 KiB page boundaries of .val;
 *   - every lookup of a value longer than the limit is exactly one counted
 *     read of .val of its length (and one of its block), whether its pages
 *     are read for the first time (checked, by pread) or again (mapped);
 *     a value within the limit reads no .val;
 *   - warm, in mmap mode, the value is served from the mapping (no copy);
 *   - the same counts, exactly, with several threads reading at once;
 *   - a damaged .val page: every value touching it is TERN_ECORRUPT naming
 *     .val and the page's offset, every other value right.
 */
#include "tests/codec/segment_fixture.h"

#include "codec/io.h"
#include "codec/segment_internal.h"
#include "codec/status.h"

#include <pthread.h>

enum { INLINE = 64, NKEYS = 3000 };

static uint32_t pick_len(tu_rng *r) {
  static const uint32_t edge[] = {0,    1,    INLINE - 1, INLINE, INLINE + 1, 100, 300,
                                  4095, 4096, 4097,       8191, 8192, 9000};
  if (tu_below(r, 3)) return edge[tu_below(r, sizeof edge / sizeof *edge)];
  return (uint32_t)tu_below(r, tu_below(r, 4) ? 600 : 9001);
}

static void build(tu_rng *r, const char *dir, fx_seg *x) {
  memset(x, 0, sizeof *x);
  tern_segw_options_init(&x->o);
  x->o.inline_value_max = INLINE;
  fx_unique(r, &x->fields[0], "id", FX_BINARY, NKEYS, 1, 0, INLINE, 0);
  fx_field *F = &x->fields[0];
  for (uint32_t i = 0; i < F->n; i++) {
    fx_term *t = &F->terms[i];
    t->vlen = pick_len(r);
    t->val = malloc(t->vlen + 1);
    tu_fill(r, t->val, t->vlen);
  }
  x->nfields = 1;
  x->max_doc = F->n;
  assert_int_equal(fx_write(x, dir, "s"), TERN_OK);
}

/* A scratch directory holding segment "s" of a fixture built from salt. */
static char *setup(uint64_t salt, tu_rng *r, fx_seg *x) {
  tu_rng_init(r, salt);
  char *dir = tu_tmpdir("seg-val");
  build(r, dir, x);
  return dir;
}

static void teardown(char *dir, fx_seg *x) {
  fx_free(x);
  tu_rmtree(dir);
  free(dir);
}

/* Looks up term k with a fresh cursor and checks its doc, its value and
 * what it read; 1 when its value lies across a page boundary of .val. */
static int check_key(tern_seg *s, const fx_term *t, tern_seg_cursor *c, int warm_mapped) {
  tern_seg_cursor_init(c);
  tern_seg_reset_io_stats(s);
  tern_term_entry e;
  uint32_t doc;
  assert_int_equal(tu_seg_pk_entry(s, t->t, t->len, c, &e, &doc), TERN_OK);
  assert_int_equal(doc, t->docs[0]);
  assert_int_equal(e.value_len, t->vlen);
  tern_slice v;
  assert_int_equal(tern_seg_value(s, &e, c, &v), TERN_OK);
  assert_int_equal(v.len, t->vlen);
  assert_true(v.len == 0 || memcmp(v.data, t->val, v.len) == 0);
  tern_seg_io io;
  tern_seg_io_stats(s, &io);
  int external = t->vlen > INLINE;
  assert_int_equal(io.terms.reads, 1);
  assert_int_equal(io.values.reads, external);
  assert_int_equal(io.values.bytes, external ? t->vlen : 0);
  const uint8_t *map = tern_rfile_map(s->val);
  if (external && warm_mapped) assert_true(v.data == map + e.value_off);
  tern_seg_cursor_release(c);
  return external && e.value_off / TERN_IO_PAGE != (e.value_off + e.value_len - 1) / TERN_IO_PAGE;
}

/* Every key in a random order, twice: first touches, then warm reads. */
static void check_all(const char *dir, const fx_seg *x, tu_rng *r, tern_io_mode mode) {
  const fx_field *F = &x->fields[0];
  tern_seg *s;
  assert_int_equal(tern_seg_open(&s, dir, "s", mode), TERN_OK);
  tern_seg_cursor *c = malloc(sizeof *c);
  uint32_t *order = malloc(F->n * sizeof *order);
  for (uint32_t i = 0; i < F->n; i++) order[i] = i;
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t i = F->n; i > 1; i--) {
      uint32_t j = (uint32_t)tu_below(r, i), tmp = order[i - 1];
      order[i - 1] = order[j];
      order[j] = tmp;
    }
    uint32_t across = 0;
    for (uint32_t i = 0; i < F->n; i++)
      across += check_key(s, &F->terms[order[i]], c, pass == 1 && mode == TERN_IO_MMAP);
    if (pass == 0) print_message("%s: %u values across a page boundary\n",
                                 mode == TERN_IO_MMAP ? "mmap" : "pread", across);
    assert_true(across >= 100);
  }
  free(order);
  free(c);
  tern_seg_close(s);
}

static void test_sizes_and_reads(void **state) {
  (void)state;
  tu_rng r;
  fx_seg x;
  char *dir = setup(0x7a15, &r, &x);
  check_all(dir, &x, &r, TERN_IO_MMAP);
  check_all(dir, &x, &r, TERN_IO_PREAD);
  teardown(dir, &x);
}

/* ------------------------------------------------------------ threads */

enum { THREADS = 4, LOOKUPS = 3000 };

typedef struct reader {
  tern_seg *s;
  const fx_field *F;
  uint64_t seed, external, wrong;
} reader;

static void *reader_main(void *p) {
  reader *a = p;
  tu_rng r;
  tu_rng_init(&r, a->seed);
  tern_seg_cursor *c = malloc(sizeof *c);
  for (uint32_t k = 0; c && k < LOOKUPS; k++) {
    const fx_term *t = &a->F->terms[tu_below(&r, a->F->n)];
    tern_seg_cursor_init(c);
    uint32_t doc;
    tern_slice v;
    int rc = tu_seg_pk_get(a->s, t->t, t->len, c, &doc, &v);
    a->wrong += rc != TERN_OK || doc != t->docs[0] || v.len != t->vlen ||
                (v.len && memcmp(v.data, t->val, v.len) != 0);
    a->external += t->vlen > INLINE;
    tern_seg_cursor_release(c);
  }
  free(c);
  return NULL;
}

static void test_counts_with_threads(void **state) {
  (void)state;
  uint64_t seed = 0x7a16;
  tu_rng r;
  fx_seg x;
  char *dir = setup(seed, &r, &x);
  for (int mode = 0; mode < 2; mode++) {
    tern_seg *s;
    assert_int_equal(tern_seg_open(&s, dir, "s", mode ? TERN_IO_PREAD : TERN_IO_MMAP), TERN_OK);
    tern_seg_reset_io_stats(s);
    pthread_t t[THREADS];
    reader a[THREADS];
    for (int i = 0; i < THREADS; i++) {
      a[i] = (reader){s, &x.fields[0], seed + 1 + (uint64_t)i, 0, 0};
      assert_int_equal(pthread_create(&t[i], NULL, reader_main, &a[i]), 0);
    }
    uint64_t external = 0;
    for (int i = 0; i < THREADS; i++) {
      assert_int_equal(pthread_join(t[i], NULL), 0);
      assert_int_equal(a[i].wrong, 0);
      external += a[i].external;
    }
    tern_seg_io io;
    tern_seg_io_stats(s, &io);
    assert_int_equal(io.terms.reads, (uint64_t)THREADS * LOOKUPS);
    assert_int_equal(io.values.reads, external);
    tern_seg_close(s);
  }
  teardown(dir, &x);
}

/* ------------------------------------------------------------ damage */

/* Flips one byte of .val's body (a random one), opens the segment afresh
 * and looks up every key: the values touching that byte's page are
 * TERN_ECORRUPT naming .val and the page, the others right. */
static void check_damaged_page(const char *dir, const fx_seg *x, tu_rng *r, tern_io_mode mode) {
  char *path = fx_file(dir, "s", ".val");
  size_t len;
  uint8_t *orig = tu_read_file(path, &len);
  uint8_t *bad = malloc(len);
  memcpy(bad, orig, len);
  size_t at_byte = TERN_FRAME_HEADER_SIZE +
                   tu_below(r, len - TERN_FRAME_HEADER_SIZE - TERN_FRAME_FOOTER_SIZE);
  uint64_t page = at_byte / TERN_IO_PAGE;
  bad[at_byte] ^= (uint8_t)(1 + tu_below(r, 255));
  tu_write_file(path, bad, len);
  tern_seg *s;
  assert_int_equal(tern_seg_open(&s, dir, "s", mode), TERN_OK);
  const fx_field *F = &x->fields[0];
  tern_seg_cursor *c = malloc(sizeof *c);
  char at[48];
  snprintf(at, sizeof at, "offset %llu", (unsigned long long)(page * TERN_IO_PAGE));
  uint32_t corrupt = 0;
  for (uint32_t k = 0; k < F->n; k++) {
    const fx_term *t = &F->terms[k];
    tern_seg_cursor_init(c);
    tern_term_entry e;
    uint32_t doc;
    assert_int_equal(tu_seg_pk_entry(s, t->t, t->len, c, &e, &doc), TERN_OK);
    tern_slice v;
    int rc = tern_seg_value(s, &e, c, &v);
    int touches = !e.value_inline && e.value_len &&
                  e.value_off / TERN_IO_PAGE <= page &&
                  (e.value_off + e.value_len - 1) / TERN_IO_PAGE >= page;
    if (touches) {
      assert_int_equal(rc, TERN_ECORRUPT);
      assert_non_null(strstr(tern_errmsg(), ".val"));
      assert_non_null(strstr(tern_errmsg(), at));
      corrupt++;
    } else {
      assert_int_equal(rc, TERN_OK);
      assert_int_equal(v.len, t->vlen);
      assert_true(v.len == 0 || memcmp(v.data, t->val, v.len) == 0);
    }
    tern_seg_cursor_release(c);
  }
  print_message("%s: byte %zu of .val damaged: %u values TERN_ECORRUPT\n",
                mode == TERN_IO_MMAP ? "mmap" : "pread", at_byte, corrupt);
  assert_true(corrupt >= 1);
  free(c);
  tern_seg_close(s);
  tu_write_file(path, orig, len);
  free(bad);
  free(orig);
  free(path);
}

static void test_damaged_pages(void **state) {
  (void)state;
  tu_rng r;
  fx_seg x;
  char *dir = setup(0x7a17, &r, &x);
  for (int k = 0; k < 6; k++) check_damaged_page(dir, &x, &r, k % 2 ? TERN_IO_PREAD : TERN_IO_MMAP);
  teardown(dir, &x);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_sizes_and_reads),
                                     cmocka_unit_test(test_counts_with_threads),
                                     cmocka_unit_test(test_damaged_pages)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
