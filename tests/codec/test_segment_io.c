/* SPDX-License-Identifier: MIT */
/*
 * test_segment_io.c — the I/O count contract of a lookup, asserted with the
 * counted file layer (codec/io.h), in both I/O modes:
 *   - a present key, pulsed (threshold >= 1): exactly one read, of one
 *     4 KiB block of NAME.tim, and nothing else;
 *   - threshold 0: one more read, of the postings, when the doc is asked;
 *   - an external value: one read of NAME.val;
 *   - an absent key: no read at all in >= 98% of tries (range + filter);
 *   - a second lookup in the block the cursor holds: no read;
 *   - after tern_seg_evict: the block is read again;
 *   - a cold open (every file evicted) reads NAME.tix only, in one read;
 *     then, with the filter not cached, a present key is exactly 1 read of
 *     its block (the probe is skipped, no filter page is read), an absent
 *     key at most 1; once the filter's pages are cached, absent keys read
 *     nothing again (>= 98%), each filter page checked once;
 *   - whether the terms file is resident: asked once the keys pay for it,
 *     the answer kept for a file's pages' worth of keys, asked again;
 *   - NAME.tix has exactly the size docs/FORMAT.md gives it, with the page
 *     checksums of .doc, .val and .flt and none of .tim (format 4: they are
 *     in its pages), so what an open reads does not grow by 4 bytes per
 *     block.
 */
#include "tests/codec/segment_fixture.h"

#include "codec/segment_internal.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

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
    assert_int_equal(tu_seg_pk_get(s, t->t, t->len, c, &doc, &v), TERN_OK);
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
    assert_int_equal(tu_seg_pk_get(s, key, len, c, NULL, NULL), TERN_NOTFOUND);
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
  assert_int_equal(tu_seg_pk_get(s, t->t, t->len, c, NULL, NULL), TERN_OK);
  assert_int_equal(tern_seg_evict(s), TERN_OK);
  tern_seg_reset_io_stats(s);
  assert_int_equal(tu_seg_pk_get(s, t->t, t->len, c, NULL, NULL), TERN_OK);
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

/* Pages of `path` in the page cache. */
static size_t cached_pages(const char *path) {
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  off_t len = lseek(fd, 0, SEEK_END);
  size_t pages = ((size_t)len + 4095) / 4096, n = 0;
  void *m = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, 0);
  assert_true(m != MAP_FAILED);
  unsigned char *vec = calloc(pages, 1);
  assert_int_equal(mincore(m, (size_t)len, vec), 0);
  for (size_t i = 0; i < pages; i++) n += vec[i] & 1;
  free(vec);
  munmap(m, (size_t)len);
  close(fd);
  return n;
}

/* Evicts every file of segment "s"; 0 when the file system keeps them
 * (a memory file system): the cold checks are then skipped. */
static int evict_all(const char *dir) {
  size_t left = 0;
  for (int f = 0; f < TERN_SEG_NFILES; f++) {
    char *p = tern_seg_path(dir, "s", f, 0);
    assert_int_equal(tern_io_evict_path(p), TERN_OK);
    left += cached_pages(p);
    free(p);
  }
  return left == 0;
}

static void cold_open(const char *dir, const fx_seg *x, tu_rng *r, tern_io_mode mode) {
  if (!evict_all(dir)) {
    print_message("eviction does not work here (memory file system?): cold open skipped\n");
    return;
  }
  char *tix = tern_seg_path(dir, "s", SEG_TIX, 0), *flt = tern_seg_path(dir, "s", SEG_FLT, 0);
  size_t tix_len;
  free(tu_read_file(tix, &tix_len)); /* (reading it caches it: evict again) */
  assert_int_equal(tern_io_evict_path(tix), TERN_OK);
  tern_io_stats g;
  tern_io_reset_global_stats();
  tern_seg *s;
  assert_int_equal(tern_seg_open(&s, dir, "s", mode), TERN_OK);
  tern_io_global_stats(&g);
  assert_int_equal(g.reads, 1); /* the .tix, whole */
  assert_int_equal(g.bytes, tix_len);
  assert_int_equal(cached_pages(flt), 0); /* the filter: nothing read */
  const fx_field *F = &x->fields[0];
  tern_seg_cursor *c = malloc(sizeof *c);
  for (uint32_t k = 0; k < 100; k++) {
    const fx_term *t = &F->terms[tu_below(r, F->n)];
    tern_seg_cursor_init(c);
    tern_io_reset_global_stats();
    uint32_t doc;
    assert_int_equal(tu_seg_pk_get(s, t->t, t->len, c, &doc, NULL), TERN_OK);
    assert_int_equal(doc, t->docs[0]);
    tern_io_global_stats(&g);
    assert_int_equal(g.reads, 1 + (x->fields[0].threshold == 0)); /* the block (+ postings) */
    tern_seg_cursor_release(c);
  }
  tern_seg_io io;
  tern_seg_io_stats(s, &io);
  assert_int_equal(io.filter.reads, 0);
  assert_int_equal(cached_pages(flt), 0); /* present keys never need the filter */
  uint32_t absent = 0;
  while (absent < 200) {
    uint8_t key[16];
    uint32_t len;
    fx_make_term(r, FX_BASE36, key, &len);
    uint32_t lb = fx_lower_bound(F, key, len);
    if (lb < F->n && fx_cmp(F->terms[lb].t, F->terms[lb].len, key, len) == 0) continue;
    absent++;
    tern_seg_cursor_init(c);
    tern_io_reset_global_stats();
    assert_int_equal(tu_seg_pk_get(s, key, len, c, NULL, NULL), TERN_NOTFOUND);
    tern_io_global_stats(&g);
    assert_true(g.reads <= 1);
    tern_seg_cursor_release(c);
  }
  /* the filter cached (by the absent keys' background fetches, or here):
   * absent keys read nothing again, each page checked once */
  size_t flt_len;
  free(tu_read_file(flt, &flt_len));
  uint32_t no_read = 0;
  for (uint32_t k = 0; k < 2000; k++) {
    uint8_t key[16];
    uint32_t len;
    fx_make_term(r, FX_BASE36, key, &len);
    tern_seg_cursor_init(c);
    tern_io_reset_global_stats();
    int rc = tu_seg_pk_get(s, key, len, c, NULL, NULL);
    assert_true(rc == TERN_OK || rc == TERN_NOTFOUND);
    tern_io_global_stats(&g);
    no_read += rc == TERN_NOTFOUND && g.reads == 0;
    tern_seg_cursor_release(c);
  }
  tern_seg_io_stats(s, &io);
  print_message("cold open: .tix %zu bytes in 1 read; then %u of 2000 absent keys without a read, "
                "%llu filter pages checked\n",
                tix_len, no_read, (unsigned long long)io.filter.reads);
  assert_true(no_read * 100 >= 2000 * 97);
  assert_true(io.filter.reads >= 1 && io.filter.reads <= (flt_len + 4095) / 4096);
  free(c);
  tern_seg_close(s);
  free(tix);
  free(flt);
}

static uint64_t varint_len(uint64_t v) {
  uint64_t n = 1;
  while (v >= 128) {
    v >>= 7;
    n++;
  }
  return n;
}

static uint64_t bytes_len(uint64_t n) { return varint_len(n) + n; }

/* A field's terms index section, re-encoded by the writer's own code
 * from what the open decoded (this test is about what follows it). */
static uint64_t index_len(const tern_seg_field *f) {
  tern_terms_index_builder w = {0};
  for (uint64_t i = 0; i < f->nblocks; i++) {
    size_t len;
    const uint8_t *sep;
    tern_ti_block info = {0};
    assert_int_equal(tern_terms_index_sep(&f->index, i, &sep, &len), TERN_OK);
    assert_int_equal(tern_terms_index_block(&f->index, i, &info), TERN_OK);
    assert_int_equal(tern_terms_index_builder_add(&w, sep, len, info.entries), TERN_OK);
  }
  tern_bytebuf b = {0};
  assert_int_equal(tern_terms_index_builder_finish(&w, &b), TERN_OK);
  uint64_t n = b.len;
  tern_bytebuf_free(&b);
  tern_terms_index_builder_free(&w);
  return n;
}

/* NAME.tix as docs/FORMAT.md lays it out ("NAME.tix body"): frame, head
 * varints, field records with their terms indexes, then 4 bytes per page
 * of .doc, .val and .flt and nothing for .tim. */
static uint64_t expected_tix_size(const tern_seg *s) {
  uint64_t n = TERN_FRAME_HEADER_SIZE + TERN_FRAME_FOOTER_SIZE;
  const uint64_t head[] = {s->max_doc, s->inline_max, s->bloom_bits, s->nfields,
                           s->nblocks, s->doc_size,   s->val_size,   s->flt_size};
  for (size_t i = 0; i < sizeof head / sizeof *head; i++)
    n += varint_len(head[i]);
  for (size_t i = 0; i < s->nfields; i++) {
    const tern_seg_field *f = &s->fields[i];
    n += bytes_len(f->name_len) + varint_len(f->flags) + varint_len(f->threshold) +
         varint_len(f->nterms) + varint_len(f->pulsed_terms) + varint_len(f->nblocks);
    if (f->nterms) n += bytes_len(f->min_len) + bytes_len(f->max_len);
    n += index_len(f);
  }
  return n + 4 * (tern_io_npages(s->doc_size) + tern_io_npages(s->val_size) +
                  tern_io_npages(s->flt_size));
}

/* The page checksums at the end of the .tix body: those of .doc, .val and
 * .flt, computed here from the files; and every whole page of .tim ends
 * with its own. */
static void check_tix_size(const char *dir, tern_seg *s) {
  char *tix = tern_seg_path(dir, "s", SEG_TIX, 0);
  size_t len;
  uint8_t *t = tu_read_file(tix, &len);
  uint64_t want = expected_tix_size(s), tim_pages = tern_io_npages(tern_rfile_size(s->tim));
  assert_int_equal(len, want);
  const uint8_t *sum = t + len - TERN_FRAME_FOOTER_SIZE;
  static const int files[] = {SEG_FLT, SEG_VAL, SEG_DOC}; /* backwards from the end */
  for (int i = 0; i < 3; i++) {
    char *path = tern_seg_path(dir, "s", files[i], 0);
    size_t flen;
    uint8_t *b = tu_read_file(path, &flen);
    uint64_t seed = tern_seg_page_seed(s->segid, files[i]), np = tern_io_npages(flen);
    sum -= 4 * np;
    for (uint64_t p = 0; p < np; p++) {
      size_t plen = p + 1 < np ? 4096 : flen - 4096 * p;
      assert_int_equal(tern_load32(sum + 4 * p),
                       (uint32_t)XXH3_64bits_withSeed(b + 4096 * p, plen, seed + p));
    }
    free(b);
    free(path);
  }
  char *tim = tern_seg_path(dir, "s", SEG_TIM, 0);
  size_t tlen;
  uint8_t *b = tu_read_file(tim, &tlen);
  uint64_t seed = tern_seg_page_seed(s->segid, SEG_TIM);
  assert_int_equal(tlen, 4096 * (s->nblocks + 1) + TERN_FRAME_FOOTER_SIZE);
  for (uint64_t p = 0; p + 1 < tim_pages; p++)
    assert_int_equal(tern_load32(b + 4096 * p + 4092),
                     (uint32_t)XXH3_64bits_withSeed(b + 4096 * p, 4092, seed + p));
  print_message(".tix: %zu bytes for %llu blocks (format 3: %llu, with 4 bytes per .tim page)\n",
                len, (unsigned long long)s->nblocks, (unsigned long long)(want + 4 * tim_pages));
  assert_true(s->nblocks >= 100);
  free(b);
  free(tim);
  free(t);
  free(tix);
}

/* Drops pages [from, to) of path from the page cache. */
static void evict_pages(const char *path, uint64_t from, uint64_t to) {
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  assert_int_equal(posix_fadvise(fd, (off_t)(from * 4096), (off_t)((to - from) * 4096),
                                 POSIX_FADV_DONTNEED), 0);
  close(fd);
}

/* tern_seg_terms_resident: not asked until the callers' keys pay for a
 * whole check; a whole check's answer kept for TERN_SEG_RESIDENT_KEPT keys
 * a page of the terms file, then asked again (a "yes" once evicted, a "no" once read
 * back); a cold file's "no" from the sampled pages not kept; pread mode
 * never resident. */
static void resident(const char *dir) {
  const uint64_t all = UINT64_MAX;
  char *tim = tern_seg_path(dir, "s", SEG_TIM, 0);
  size_t len;
  free(tu_read_file(tim, &len)); /* cached */
  uint64_t pages = (len + 4095) / 4096;
  assert_true(pages >= 64);
  tern_seg *s;
  assert_int_equal(tern_seg_open(&s, dir, "s", TERN_IO_MMAP), TERN_OK);
  for (uint64_t k = 0; k < pages; k++) /* a page a key: not paid for yet */
    assert_int_equal(tern_seg_terms_resident(s, 1, 1), 0);
  const uint64_t kept = pages * TERN_SEG_RESIDENT_KEPT; /* keys an answer serves */
  assert_int_equal(tern_seg_terms_resident(s, 1, 1), 1); /* paid: asked, kept for kept - 1 */
  for (uint64_t k = 1; k < kept; k++) assert_int_equal(tern_seg_terms_resident(s, 1, all), 1);
  assert_int_equal(tern_io_evict_path(tim), TERN_OK);
  if (cached_pages(tim) != 0) {
    print_message("eviction does not work here (memory file system?): residency skipped\n");
  } else {
    assert_int_equal(tern_seg_terms_resident(s, 1, all), 0); /* asked again: evicted */
    assert_int_equal(tern_seg_terms_resident(s, 1, all), 0); /* (the samples' no: not kept) */
    free(tu_read_file(tim, &len));
    assert_int_equal(tern_seg_terms_resident(s, kept + 1, all), 1); /* asked: cached */
    assert_int_equal(tern_seg_terms_resident(s, 1, all), 1);         /* asked again */
    assert_int_equal(tern_seg_terms_resident(s, kept - 1, all), 1);  /* kept: the last keys */
    /* an eighth of the pages gone between the sampled ones: the samples
     * pass, the whole check says no, and the no is kept */
    uint64_t gone = 0;
    for (uint64_t i = 0; gone * 8 < pages; i++) {
      uint64_t a = pages * (2 * i + 1) / 64 + 1, z = pages * (2 * i + 3) / 64;
      if (z > a) evict_pages(tim, a, z), gone += z - a;
    }
    assert_int_equal(tern_seg_terms_resident(s, 1, all), 0);
    free(tu_read_file(tim, &len));
    for (uint64_t k = 1; k < kept; k++) assert_int_equal(tern_seg_terms_resident(s, 1, all), 0);
    assert_int_equal(tern_seg_terms_resident(s, 1, all), 1); /* asked again: read back */
  }
  tern_seg_close(s);
  assert_int_equal(tern_seg_open(&s, dir, "s", TERN_IO_PREAD), TERN_OK);
  assert_int_equal(tern_seg_terms_resident(s, 1, all), 0);
  tern_seg_close(s);
  free(tim);
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
    if (mode == 0) check_tix_size(dir, s);
    present_keys(s, &x, &r, threshold);
    absent_keys(s, &x, &r);
    secondary(s, &x, threshold);
    evicted(s, &x);
    tern_seg_close(s);
    cold_open(dir, &x, &r, mode ? TERN_IO_PREAD : TERN_IO_MMAP);
  }
  resident(dir);
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
