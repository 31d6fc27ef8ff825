/* SPDX-License-Identifier: MIT */
/*
 * test_segment_corrupt.c — damaged segments are reported, never crash:
 *   - every single byte of NAME.tix flipped: open fails with TERN_ECORRUPT
 *     (TERN_EVERSION when the flip raised the version); of NAME.flt (read
 *     page by page on use, not at open): every lookup of a present key
 *     finds it or says TERN_ECORRUPT, and verify fails;
 *   - every file truncated at several points: open or verify fails with
 *     TERN_ECORRUPT;
 *   - a file of another segment swapped in: TERN_ECORRUPT at open (.tix)
 *     or from verify (the others: their pages' checksums are salted with
 *     the segment id);
 *   - a newer or older version in the .tix: TERN_EVERSION; in another
 *     file's header (the segment's version is its .tix's): TERN_ECORRUPT
 *     or TERN_EVERSION from verify;
 *   - random bytes flipped inside .tim blocks, .doc and .val: open works,
 *     every lookup gives the reference's answer or TERN_ECORRUPT (never
 *     "not found" for a present term, never another answer; under ASan:
 *     no invalid access), and verify reports TERN_ECORRUPT.
 *   - a doc id at or above max_doc: TERN_ECORRUPT from tern_seg_pk_find;
 *   - a damaged .tix named before a missing data file, a missing or
 *     non-regular data file named when .tix is sound.
 * Every page a lookup reads is checksummed; here: whatever the bytes, a
 * lookup is right or says so, and nothing reads outside its page.
 */
#include "tests/codec/segment_fixture.h"

#include "codec/frame.h"
#include "codec/segment_internal.h"
#include "codec/status.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#define exts tern_seg_ext

static void build(tu_rng *r, const char *dir, const char *name, fx_seg *x) {
  memset(x, 0, sizeof *x);
  tern_segw_options_init(&x->o);
  x->o.inline_value_max = 8;
  x->o.restart_interval = 8;
  fx_unique(r, &x->fields[0], "id", FX_BASE36, 150, 1, 1, 8, 1);
  fx_secondary(r, &x->fields[1], "t", FX_BINARY, 100, 0, 20, 1000);
  x->nfields = 2;
  x->max_doc = 1000;
  assert_int_equal(fx_write(x, dir, name), TERN_OK);
}

static int open_status(const char *dir, const char *name, int verify) {
  tern_seg *s;
  int rc = tern_seg_open(&s, dir, name, TERN_IO_MMAP);
  if (rc != TERN_OK) return rc;
  if (verify) rc = tern_seg_verify(s);
  tern_seg_close(s);
  return rc;
}

/* A damaged file's lookups give the reference's answer or TERN_ECORRUPT:
 * every page a lookup uses is checksummed, so "not found" for a present
 * term, or an answer that differs from the reference, is a failure. */
static void right_or_corrupt(int rc) {
  if (rc != TERN_OK && rc != TERN_ECORRUPT) fail_msg("status %d: neither the answer nor corrupt", rc);
}

/* The term's postings equal the reference's doc ids, or reading them says
 * TERN_ECORRUPT part way. */
static void postings_right_or_corrupt(tern_seg *s, const tern_term_entry *e, const fx_term *t) {
  assert_int_equal(e->meta.df, t->df);
  tern_postings_iter it;
  int rc = tern_seg_postings(s, e, &it);
  right_or_corrupt(rc);
  if (rc != TERN_OK) return;
  uint32_t doc, k = 0;
  while ((rc = tern_postings_iter_next(&it, &doc)) == TERN_OK && doc != TERN_DOC_END) {
    assert_true(k < t->df);
    assert_int_equal(doc, t->docs[k]);
    k++;
  }
  right_or_corrupt(rc);
  if (rc == TERN_OK) assert_int_equal(k, t->df);
  tern_postings_iter_release(&it);
}

static void unique_right_or_corrupt(tern_seg *s, const fx_term *t, tern_seg_cursor *c) {
  uint32_t doc;
  tern_slice v;
  int rc = tu_seg_pk_get(s, t->t, t->len, c, &doc, &v);
  right_or_corrupt(rc);
  if (rc == TERN_OK) {
    assert_int_equal(doc, t->docs[0]);
    assert_int_equal(v.len, t->vlen);
    if (t->vlen) assert_memory_equal(v.data, t->val, t->vlen);
  }
  tern_slice key;
  rc = tern_seg_doc(s, t->docs[0], c, &key, &v);
  assert_true(rc == TERN_OK || rc == TERN_ECORRUPT || rc == TERN_EINVAL);
  if (rc == TERN_OK) {
    assert_int_equal(key.len, t->len);
    assert_memory_equal(key.data, t->t, t->len);
  }
}

static void field_right_or_corrupt(tern_seg *s, const fx_field *F, const tern_seg_field *f,
                                   tern_seg_cursor *c) {
  tern_term_entry e;
  for (uint32_t k = 0; k < F->n; k++) {
    const fx_term *t = &F->terms[k];
    int rc = tern_seg_seek_exact(s, f, t->t, t->len, c, &e);
    right_or_corrupt(rc);
    if (rc == TERN_OK) {
      assert_int_equal(e.len, t->len);
      assert_memory_equal(e.term, t->t, t->len);
      postings_right_or_corrupt(s, &e, t);
    }
    rc = tern_seg_seek_ceil(s, f, t->t, t->len, c, &e);
    right_or_corrupt(rc);
    if (rc == TERN_OK) {
      assert_int_equal(e.len, t->len);
      assert_memory_equal(e.term, t->t, t->len);
    }
    if (F->flags & TERN_FIELD_UNIQUE) unique_right_or_corrupt(s, t, c);
  }
}

/* Enumeration from the first term gives the reference's terms in order
 * until it ends or says TERN_ECORRUPT. */
static void enum_right_or_corrupt(tern_seg *s, const fx_field *F, const tern_seg_field *f,
                                  tern_seg_cursor *c) {
  tern_term_entry e;
  uint32_t k = 0;
  int rc = tern_seg_first_term(s, f, c, &e);
  for (; rc == TERN_OK; rc = tern_seg_next_term(s, c, &e), k++) {
    assert_true(k < F->n);
    assert_int_equal(e.len, F->terms[k].len);
    assert_memory_equal(e.term, F->terms[k].t, e.len);
  }
  if (rc == TERN_NOTFOUND) assert_int_equal(k, F->n);
  else right_or_corrupt(rc);
}

static void exercise(tern_seg *s, const fx_seg *x) {
  tern_seg_cursor *c = malloc(sizeof *c);
  tern_seg_cursor_init(c);
  for (size_t i = 0; i < x->nfields; i++) {
    const fx_field *F = &x->fields[i];
    const tern_seg_field *f = tern_seg_find_field(s, F->name, strlen(F->name));
    assert_non_null(f); /* fields live in the .tix, intact here */
    enum_right_or_corrupt(s, F, f, c);
    field_right_or_corrupt(s, F, f, c);
  }
  tern_seg_cursor_release(c);
  free(c);
}

/* Every key of the unique field: found, or TERN_ECORRUPT; never "not found". */
static void present_keys_found_or_corrupt(const char *dir, const fx_seg *x) {
  tern_seg *s;
  assert_int_equal(tern_seg_open(&s, dir, "s", TERN_IO_MMAP), TERN_OK);
  tern_seg_cursor *c = malloc(sizeof *c);
  tern_seg_cursor_init(c);
  const fx_field *F = &x->fields[0];
  for (uint32_t k = 0; k < F->n; k++) {
    uint32_t doc;
    int rc = tu_seg_pk_get(s, F->terms[k].t, F->terms[k].len, c, &doc, NULL);
    assert_true(rc == TERN_OK || rc == TERN_ECORRUPT);
    if (rc == TERN_OK) assert_int_equal(doc, F->terms[k].docs[0]);
  }
  tern_seg_cursor_release(c);
  free(c);
  tern_seg_close(s);
}

static void test_small_files_every_byte(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xc0);
  char *dir = tu_tmpdir("seg-corrupt");
  fx_seg x;
  build(&r, dir, "s", &x);
  assert_int_equal(open_status(dir, "s", 1), TERN_OK);
  static const char *small[] = {".tix", ".flt"};
  for (int f = 0; f < 2; f++) {
    char *p = fx_file(dir, "s", small[f]);
    size_t len;
    uint8_t *orig = tu_read_file(p, &len);
    uint8_t *bad = malloc(len);
    for (size_t i = 0; i < len; i++) {
      memcpy(bad, orig, len);
      bad[i] ^= (uint8_t)(1 + tu_below(&r, 255));
      tu_write_file(p, bad, len);
      int rc = open_status(dir, "s", 0);
      if (f == 1) { /* the filter: lookups never wrong, verify fails */
        assert_int_equal(rc, TERN_OK);
        present_keys_found_or_corrupt(dir, &x);
        rc = open_status(dir, "s", 1);
      }
      if (rc != TERN_ECORRUPT && rc != TERN_EVERSION)
        fprintf(stderr, "%s byte %zu: %d %s\n", small[f], i, rc, tern_errmsg());
      assert_true(rc == TERN_ECORRUPT || rc == TERN_EVERSION);
    }
    tu_write_file(p, orig, len);
    free(bad);
    free(orig);
    free(p);
  }
  assert_int_equal(open_status(dir, "s", 1), TERN_OK);
  fx_free(&x);
  free(dir);
}

static void test_truncation(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xc1);
  char *dir = tu_tmpdir("seg-trunc");
  fx_seg x;
  build(&r, dir, "s", &x);
  for (int f = 0; f < 5; f++) {
    char *p = fx_file(dir, "s", exts[f]);
    size_t len;
    uint8_t *orig = tu_read_file(p, &len);
    size_t cuts[] = {0, 1, 16, 31, 32, 40, 47, len / 2, len - 17, len - 16, len - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
      if (cuts[k] >= len) continue;
      tu_write_file(p, orig, cuts[k]);
      int rc = open_status(dir, "s", 1);
      if (rc != TERN_ECORRUPT)
        fprintf(stderr, "%s cut at %zu: %d %s\n", exts[f], cuts[k], rc, tern_errmsg());
      assert_int_equal(rc, TERN_ECORRUPT);
    }
    tu_write_file(p, orig, len);
    free(orig);
    free(p);
  }
  assert_int_equal(open_status(dir, "s", 1), TERN_OK);
  fx_free(&x);
  free(dir);
}

/* The data files are opened before NAME.tix is read (segment_open.c,
 * open_ahead), but their failures are reported after .tix's: a damaged
 * .tix is named even when a data file is missing, and a data file that is
 * missing or not a regular file is named when .tix is sound. */
static void test_errors_in_order(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xc3);
  char *dir = tu_tmpdir("seg-order");
  fx_seg x;
  build(&r, dir, "s", &x);
  char *tix = fx_file(dir, "s", ".tix"), *tim = fx_file(dir, "s", ".tim");
  size_t tix_len, tim_len;
  uint8_t *tix_orig = tu_read_file(tix, &tix_len), *tim_orig = tu_read_file(tim, &tim_len);
  assert_int_equal(unlink(tim), 0);
  tern_seg *s = NULL;
  assert_int_equal(tern_seg_open(&s, dir, "s", TERN_IO_MMAP), -ENOENT);
  assert_non_null(strstr(tern_errmsg(), ".tim"));
  tu_write_file(tix, tix_orig, tix_len / 2);
  for (int mode = 0; mode < 2; mode++) {
    assert_int_equal(tern_seg_open(&s, dir, "s", mode ? TERN_IO_PREAD : TERN_IO_MMAP),
                     TERN_ECORRUPT);
    assert_non_null(strstr(tern_errmsg(), ".tix"));
  }
  tu_write_file(tix, tix_orig, tix_len);
  assert_int_equal(mkfifo(tim, 0600), 0);
  assert_int_equal(tern_seg_open(&s, dir, "s", TERN_IO_MMAP), TERN_ECORRUPT);
  assert_non_null(strstr(tern_errmsg(), ".tim"));
  assert_non_null(strstr(tern_errmsg(), "not a regular file"));
  assert_int_equal(unlink(tim), 0);
  tu_write_file(tim, tim_orig, tim_len);
  assert_int_equal(open_status(dir, "s", 1), TERN_OK);
  free(tix_orig);
  free(tim_orig);
  free(tix);
  free(tim);
  fx_free(&x);
  free(dir);
}

static void test_foreign_and_newer(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xc2);
  char *dir = tu_tmpdir("seg-foreign");
  fx_seg x, y;
  build(&r, dir, "a", &x);
  build(&r, dir, "b", &y);
  for (int f = 0; f < 5; f++) {
    char *pa = fx_file(dir, "a", exts[f]), *pb = fx_file(dir, "b", exts[f]);
    size_t la, lb;
    uint8_t *a = tu_read_file(pa, &la), *b = tu_read_file(pb, &lb);
    tu_write_file(pa, b, lb); /* b's file in a: another segment id */
    int rc = open_status(dir, "a", 0);
    /* .tix carries the id the others are checked against; their pages are
     * checked when read, and all of them by verify */
    if (rc == TERN_OK) rc = open_status(dir, "a", 1);
    assert_int_equal(rc, TERN_ECORRUPT);
    tu_write_file(pa, a, la);
    /* a newer version, and an older one */
    for (uint8_t v = TERN_SEG_VERSION - 1; v <= TERN_SEG_VERSION + 1; v += 2) {
      a[8] = v;
      tu_write_file(pa, a, la);
      rc = open_status(dir, "a", 1);
      if (f == 1)
        assert_int_equal(rc, TERN_EVERSION);
      else /* another version under a current .tix: damage (page 0's checksum) */
        assert_true(rc == TERN_EVERSION || rc == TERN_ECORRUPT);
    }
    a[8] = TERN_SEG_VERSION;
    tu_write_file(pa, a, la);
    free(a);
    free(b);
    free(pa);
    free(pb);
  }
  assert_int_equal(open_status(dir, "a", 1), TERN_OK);
  fx_free(&x);
  fx_free(&y);
  free(dir);
}

/* Flips inside the large files: lookups survive, verify notices. */
static void flip_file(tu_rng *r, const char *dir, const fx_seg *x, int file, size_t from) {
  char *p = fx_file(dir, "s", exts[file]);
  size_t len;
  uint8_t *orig = tu_read_file(p, &len);
  uint8_t *bad = malloc(len);
  uint32_t rounds = 60 * tu_scale();
  for (uint32_t k = 0; k < rounds; k++) {
    if (len <= from + TERN_FRAME_FOOTER_SIZE) break;
    memcpy(bad, orig, len);
    uint32_t flips = 1 + (uint32_t)tu_below(r, 4);
    for (uint32_t q = 0; q < flips; q++) {
      /* mostly the used front of a block, where headers and entries are */
      size_t span = len - from - TERN_FRAME_FOOTER_SIZE, at = from + tu_below(r, span);
      if (file == 0 && tu_below(r, 2)) at = from + 4096 * tu_below(r, span / 4096) + tu_below(r, 256);
      bad[at] ^= (uint8_t)(1 + tu_below(r, 255));
    }
    tu_write_file(p, bad, len);
    for (int mode = 0; mode < 2; mode++) {
      tern_seg *s;
      int rc = tern_seg_open(&s, dir, "s", mode ? TERN_IO_PREAD : TERN_IO_MMAP);
      assert_int_equal(rc, TERN_OK);
      exercise(s, x);
      assert_int_equal(tern_seg_verify(s), TERN_ECORRUPT);
      tern_seg_close(s);
    }
  }
  tu_write_file(p, orig, len);
  free(bad);
  free(orig);
  free(p);
}

static void test_flips_in_data(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xc3);
  char *dir = tu_tmpdir("seg-flips");
  fx_seg x;
  build(&r, dir, "s", &x);
  flip_file(&r, dir, &x, 0, TERN_BLOCK_SIZE);        /* .tim blocks */
  flip_file(&r, dir, &x, 2, TERN_FRAME_HEADER_SIZE); /* .doc */
  flip_file(&r, dir, &x, 4, TERN_FRAME_HEADER_SIZE); /* .val */
  tern_seg *s;
  assert_int_equal(tern_seg_open(&s, dir, "s", TERN_IO_MMAP), TERN_OK);
  assert_int_equal(tern_seg_verify(s), TERN_OK);
  tern_seg_close(s);
  fx_free(&x);
  free(dir);
}

/* Blocks decoded from random pages (valid header bytes around random
 * bodies) never make a lookup misbehave. */
static void test_random_blocks(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xc4);
  char *dir = tu_tmpdir("seg-random");
  fx_seg x;
  build(&r, dir, "s", &x);
  char *p = fx_file(dir, "s", ".tim");
  size_t len;
  uint8_t *orig = tu_read_file(p, &len);
  uint8_t *bad = malloc(len);
  for (uint32_t k = 0; k < 20 * tu_scale(); k++) {
    memcpy(bad, orig, len);
    size_t b = 1 + tu_below(&r, (len - TERN_FRAME_FOOTER_SIZE) / 4096 - 1);
    size_t keep = tu_below(&r, 64);
    tu_fill(&r, bad + 4096 * b + keep, 4096 - keep);
    tu_write_file(p, bad, len);
    tern_seg *s;
    assert_int_equal(tern_seg_open(&s, dir, "s", TERN_IO_PREAD), TERN_OK);
    exercise(s, &x);
    assert_int_equal(tern_seg_verify(s), TERN_ECORRUPT);
    tern_seg_close(s);
  }
  tu_write_file(p, orig, len);
  free(bad);
  free(orig);
  free(p);
  fx_free(&x);
  free(dir);
}

/* A doc id at or above the segment's max_doc (a .tix whose max_doc does
 * not match its terms, though every checksum passed: here set in memory,
 * white box) is TERN_ECORRUPT naming the terms file, never a doc id the
 * caller would index its live docs with; ids below it are found as ever.
 * With the doc in the entry (pulsed) and in .doc. */
static void test_doc_beyond_max_doc(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xc5);
  char *dir = tu_tmpdir("seg-maxdoc");
  for (uint32_t threshold = 0; threshold <= 1; threshold++) {
    fx_seg x;
    memset(&x, 0, sizeof x);
    tern_segw_options_init(&x.o);
    fx_unique(&r, &x.fields[0], "id", FX_BASE36, 300, threshold, 0, 8, 1);
    x.nfields = 1;
    x.max_doc = 300;
    assert_int_equal(fx_write(&x, dir, "m"), TERN_OK);
    tern_seg *s;
    assert_int_equal(tern_seg_open(&s, dir, "m", TERN_IO_MMAP), TERN_OK);
    uint32_t cut = 1 + (uint32_t)tu_below(&r, 299);
    s->max_doc = cut;
    tern_seg_cursor *c = malloc(sizeof *c);
    tern_seg_cursor_init(c);
    const fx_field *F = &x.fields[0];
    for (uint32_t k = 0; k < F->n; k++) {
      uint32_t doc = UINT32_MAX;
      int rc = tu_seg_pk_get(s, F->terms[k].t, F->terms[k].len, c, &doc, NULL);
      if (F->terms[k].docs[0] < cut) {
        assert_int_equal(rc, TERN_OK);
        assert_int_equal(doc, F->terms[k].docs[0]);
        continue;
      }
      assert_int_equal(rc, TERN_ECORRUPT);
      assert_non_null(strstr(tern_errmsg(), "m.tim"));
      assert_non_null(strstr(tern_errmsg(), "key with doc"));
    }
    tern_seg_cursor_release(c);
    free(c);
    tern_seg_close(s);
    assert_int_equal(tern_seg_remove(dir, "m"), TERN_OK);
    fx_free(&x);
  }
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_small_files_every_byte), cmocka_unit_test(test_truncation),
      cmocka_unit_test(test_errors_in_order),
      cmocka_unit_test(test_foreign_and_newer),      cmocka_unit_test(test_flips_in_data),
      cmocka_unit_test(test_random_blocks),          cmocka_unit_test(test_doc_beyond_max_doc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
