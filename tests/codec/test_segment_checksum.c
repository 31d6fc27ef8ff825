/* SPDX-License-Identifier: MIT */
/*
 * test_segment_checksum.c — the read-path checksums: a damaged byte
 * anywhere a lookup reads gives TERN_ECORRUPT naming the file and the
 * offset, never a wrong value, a wrong doc or a false "not found".
 *
 *   - random byte flips in .tim, .doc and .val (anywhere, header and footer
 *     pages included), both I/O modes: every present key of the unique
 *     field reads its doc and value or fails with TERN_ECORRUPT; every term
 *     of the secondary field reads its exact doc list or TERN_ECORRUPT;
 *   - two terms blocks swapped, and a block of another segment put in the
 *     place of one: lookups in them fail (the checksums are salted with the
 *     segment id and the page number);
 *   - .tim pages carry their checksum in their last 4 bytes: a flip in a
 *     block's data or checksum, or a block copied over another, fails
 *     exactly the keys of that block in both modes; page 0 and the footer
 *     are verify's; with the checks off the checksums change no answer;
 *   - a warm read of a checked page is not checked again (the bitmap), and
 *     tern_seg_evict forgets what was checked;
 *   - random flips in .flt, and a damaged filter page: present keys never
 *     need the filter; once an absent key has asked for the page and it is
 *     cached, a probe that needs it is TERN_ECORRUPT naming .flt and the
 *     offset (never "not found"); with the page not cached the probe is
 *     skipped and the block answers, right;
 *   - a truncated .doc or .val is refused at open;
 *   - a FIFO or a directory where a segment file should be is TERN_ECORRUPT
 *     naming the file, never a hang; a FIFO in a writer's way an error.
 */
#include "tests/codec/segment_fixture.h"

#include "codec/frame.h"
#include "codec/segment_internal.h"
#include "codec/io.h"
#include "codec/status.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define exts tern_seg_ext

static void build(tu_rng *r, const char *dir, const char *name, fx_seg *x) {
  memset(x, 0, sizeof *x);
  tern_segw_options_init(&x->o);
  x->o.inline_value_max = 8;
  fx_unique(r, &x->fields[0], "id", FX_BASE36, 3000, 0, 1, 8, 1);
  fx_secondary(r, &x->fields[1], "t", FX_BINARY, 300, 2, 1500, 3000);
  x->nfields = 2;
  x->max_doc = 3000;
  assert_int_equal(fx_write(x, dir, name), TERN_OK);
}

/* A scratch directory holding segment "s" of fixture x (seeded by salt). */
static char *setup(uint64_t salt, const char *tag, fx_seg *x) {
  tu_rng r;
  tu_rng_init(&r, salt);
  char *dir = tu_tmpdir(tag);
  build(&r, dir, "s", x);
  return dir;
}

static void teardown(char *dir, fx_seg *x) {
  fx_free(x);
  tu_rmtree(dir);
  free(dir);
}

typedef struct tally {
  uint64_t right, corrupt;
} tally;

/* A TERN_ECORRUPT must say which file and where. */
static void check_corrupt_message(const char *ext) {
  const char *m = tern_errmsg();
  if (!strstr(m, ext) || !strstr(m, "offset")) fprintf(stderr, "message: %s\n", m);
  assert_non_null(strstr(m, ext));
  assert_non_null(strstr(m, "offset"));
}

static void check_unique(tern_seg *s, const fx_field *F, tern_seg_cursor *c, const char *ext,
                         tally *t) {
  for (uint32_t k = 0; k < F->n; k++) {
    const fx_term *ref = &F->terms[k];
    uint32_t doc;
    tern_slice v;
    int rc = tu_seg_pk_get(s, ref->t, ref->len, c, &doc, &v);
    if (rc == TERN_ECORRUPT) {
      check_corrupt_message(ext);
      t->corrupt++;
      continue;
    }
    if (rc != TERN_OK) fprintf(stderr, "key %u: %d %s\n", k, rc, tern_errmsg());
    assert_int_equal(rc, TERN_OK);
    assert_int_equal(doc, ref->docs[0]);
    assert_int_equal(v.len, ref->vlen);
    assert_true(v.len == 0 || memcmp(v.data, ref->val, v.len) == 0);
    t->right++;
  }
}

/* The term's docs, all of them, against the reference; or TERN_ECORRUPT. */
static int read_docs(tern_seg *s, const tern_seg_field *f, const fx_term *ref, tern_seg_cursor *c) {
  tern_term_entry e;
  int rc = tern_seg_seek_exact(s, f, ref->t, ref->len, c, &e);
  if (rc != TERN_OK) return rc;
  tern_postings_iter it;
  TERN_TRY(tern_seg_postings(s, &e, &it));
  uint32_t n = 0, doc;
  while ((rc = tern_postings_iter_next(&it, &doc)) == TERN_OK && doc != TERN_DOC_END) {
    assert_true(n < ref->df);
    assert_int_equal(doc, ref->docs[n]);
    n++;
  }
  tern_postings_iter_release(&it);
  if (rc == TERN_OK) assert_int_equal(n, ref->df);
  return rc;
}

static void check_secondary(tern_seg *s, const fx_field *F, tern_seg_cursor *c, const char *ext,
                            tally *t) {
  const tern_seg_field *f = tern_seg_find_field(s, F->name, strlen(F->name));
  assert_non_null(f);
  for (uint32_t k = 0; k < F->n; k++) {
    int rc = read_docs(s, f, &F->terms[k], c);
    if (rc == TERN_ECORRUPT) {
      check_corrupt_message(ext);
      t->corrupt++;
      continue;
    }
    assert_int_equal(rc, TERN_OK);
    t->right++;
  }
}

/* Opens the segment in both modes and checks every answer; returns the
 * number of TERN_ECORRUPT answers. */
static uint64_t check_all(const char *dir, const fx_seg *x, const char *ext, tally *t) {
  uint64_t before = t->corrupt;
  for (int mode = 0; mode < 2; mode++) {
    tern_seg *s;
    int rc = tern_seg_open(&s, dir, "s", mode ? TERN_IO_PREAD : TERN_IO_MMAP);
    if (rc != TERN_OK) { /* a flip in a header the open checks */
      assert_int_equal(rc, TERN_ECORRUPT);
      t->corrupt++;
      continue;
    }
    tern_seg_cursor *c = malloc(sizeof *c);
    tern_seg_cursor_init(c);
    check_unique(s, &x->fields[0], c, ext, t);
    check_secondary(s, &x->fields[1], c, ext, t);
    tern_seg_cursor_release(c);
    free(c);
    tern_seg_close(s);
  }
  return t->corrupt - before;
}

static void flip_rounds(tu_rng *r, const char *dir, const fx_seg *x, int file, tally *t) {
  char *p = fx_file(dir, "s", exts[file]);
  size_t len;
  uint8_t *orig = tu_read_file(p, &len);
  uint8_t *bad = malloc(len);
  uint32_t rounds = 12 * tu_scale(), noticed = 0;
  for (uint32_t k = 0; k < rounds; k++) {
    memcpy(bad, orig, len);
    size_t at = tu_below(r, len);
    if (file == 0 && k % 2) at = 4096 * (1 + tu_below(r, len / 4096 - 1)) + tu_below(r, 512);
    bad[at] ^= (uint8_t)(1 + tu_below(r, 255));
    tu_write_file(p, bad, len);
    noticed += check_all(dir, x, exts[file], t) > 0;
  }
  print_message("%s: %u of %u flips noticed by lookups\n", exts[file], noticed, rounds);
  tu_write_file(p, orig, len);
  free(bad);
  free(orig);
  free(p);
}

static void test_flips(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xc5);
  char *dir = tu_tmpdir("seg-sum");
  fx_seg x;
  build(&r, dir, "s", &x);
  tally t = {0, 0};
  assert_int_equal(check_all(dir, &x, ".tim", &t), 0);
  flip_rounds(&r, dir, &x, 0, &t);
  flip_rounds(&r, dir, &x, 2, &t);
  flip_rounds(&r, dir, &x, 4, &t);
  flip_rounds(&r, dir, &x, 3, &t);
  print_message("answers: %llu right, %llu TERN_ECORRUPT, 0 wrong\n", (unsigned long long)t.right,
                (unsigned long long)t.corrupt);
  assert_true(t.corrupt > 0);
  tally u = {0, 0};
  assert_int_equal(check_all(dir, &x, ".tim", &u), 0);
  fx_free(&x);
  tu_rmtree(dir);
  free(dir);
}

/* 1 when no page of `path` is in the page cache. */
static int not_cached(const char *path) {
  size_t len;
  uint8_t *b = tu_read_file(path, &len); /* only for the length */
  free(b);
  assert_int_equal(tern_io_evict_path(path), TERN_OK);
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
  assert_true(m != MAP_FAILED);
  unsigned char vec[64] = {0};
  size_t pages = (len + 4095) / 4096;
  assert_true(pages <= sizeof vec);
  assert_int_equal(mincore(m, len, vec), 0);
  int cached = 0;
  for (size_t i = 0; i < pages; i++) cached |= vec[i] & 1;
  munmap(m, len);
  close(fd);
  return !cached;
}


/* Every seventh key of F found, with its doc: their count. */
static uint32_t every_seventh_right(const tern_seg *s, const fx_field *F, tern_seg_cursor *c) {
  uint32_t n = 0;
  for (uint32_t k = 0; k < F->n; k += 7, n++) {
    uint32_t doc;
    assert_int_equal(tu_seg_pk_get(s, F->terms[k].t, F->terms[k].len, c, &doc, NULL), TERN_OK);
    assert_int_equal(doc, F->terms[k].docs[0]);
  }
  return n;
}
static void test_damaged_filter_page(void **state) {
  (void)state;
  fx_seg x;
  char *dir = setup(0xf17, "seg-flt", &x);
  char *p = fx_file(dir, "s", ".flt");
  size_t len;
  uint8_t *orig = tu_read_file(p, &len);
  assert_true(len < 4096 + 64); /* 3,000 keys: the blocks are in page 0 */
  uint8_t *bad = malloc(len);
  memcpy(bad, orig, len);
  bad[32 + TERN_FILTER_HEADER_SIZE + 100] ^= 0x5a;
  tu_write_file(p, bad, len);
  const fx_field *F = &x.fields[0];
  for (int mode = 0; mode < 2; mode++) {
    tern_seg *s;
    free(tu_read_file(p, &len)); /* into the page cache */
    assert_int_equal(tern_seg_open(&s, dir, "s", mode ? TERN_IO_PREAD : TERN_IO_MMAP), TERN_OK);
    tern_seg_cursor *c = malloc(sizeof *c);
    tern_seg_cursor_init(c);
    /* present keys never need the filter: right answers */
    every_seventh_right(s, F, c);
    /* an absent key found by a block asks for the filter's page; once the
     * page is cached (it is: just read) the next probe checks it */
    tu_rng r;
    tu_rng_init(&r, 0xab5);
    uint32_t tries = 0;
    int rc = TERN_NOTFOUND;
    while (rc == TERN_NOTFOUND && tries++ < 100) {
      uint8_t key[16];
      uint32_t klen;
      fx_make_term(&r, FX_BASE36, key, &klen);
      rc = tu_seg_pk_get(s, key, klen, c, NULL, NULL);
      assert_true(rc == TERN_NOTFOUND || rc == TERN_ECORRUPT || rc == TERN_OK);
      if (rc == TERN_OK) rc = TERN_NOTFOUND; /* a random key that is present */
    }
    print_message("damaged filter page: TERN_ECORRUPT after %u absent keys\n", tries);
    assert_int_equal(rc, TERN_ECORRUPT);
    check_corrupt_message(".flt");
    /* from then on every probe needs that page: TERN_ECORRUPT, never "not found" */
    for (uint32_t k = 0; k < F->n; k += 7) {
      uint32_t doc;
      assert_int_equal(tu_seg_pk_get(s, F->terms[k].t, F->terms[k].len, c, &doc, NULL),
                       TERN_ECORRUPT);
      check_corrupt_message(".flt");
      assert_int_equal(
          tu_seg_may_contain(s, tern_seg_unique_field(s), F->terms[k].t, F->terms[k].len), 1);
    }
    assert_int_equal(tern_seg_verify(s), TERN_ECORRUPT);
    tern_seg_close(s);
    /* not cached: the probe is skipped, the blocks answer (rightly) */
    if (not_cached(p)) {
      assert_int_equal(tern_seg_open(&s, dir, "s", mode ? TERN_IO_PREAD : TERN_IO_MMAP), TERN_OK);
      tally t = {0, 0};
      tern_seg_cursor_release(c);
      tern_seg_cursor_init(c);
      t.right = every_seventh_right(s, F, c);
      tern_seg_io io;
      tern_seg_io_stats(s, &io);
      assert_int_equal(io.filter.reads, 0);
      print_message("filter not cached: %llu keys right without it\n",
                    (unsigned long long)t.right);
      tern_seg_close(s);
    } else {
      print_message("eviction does not work here (memory file system?): not-cached case skipped\n");
    }
    tern_seg_cursor_release(c);
    free(c);
  }
  tu_write_file(p, orig, len);
  free(bad);
  free(orig);
  free(p);
  teardown(dir, &x);
}

static void put_block(const char *path, const uint8_t *src, size_t to) {
  size_t len;
  uint8_t *buf = tu_read_file(path, &len);
  memcpy(buf + 4096 * to, src, 4096);
  tu_write_file(path, buf, len);
  free(buf);
}

static void test_misplaced_blocks(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xc6);
  char *dir = tu_tmpdir("seg-misplaced");
  fx_seg x, y;
  build(&r, dir, "s", &x);
  build(&r, dir, "o", &y);
  char *p = fx_file(dir, "s", ".tim"), *q = fx_file(dir, "o", ".tim");
  size_t len, olen;
  uint8_t *orig = tu_read_file(p, &len), *other = tu_read_file(q, &olen);
  assert_true(len >= 4 * 4096 && olen >= 3 * 4096);
  /* blocks 0 and 1 (pages 1 and 2) swapped */
  put_block(p, orig + 2 * 4096, 1);
  put_block(p, orig + 1 * 4096, 2);
  tally t = {0, 0};
  assert_true(check_all(dir, &x, ".tim", &t) > 0);
  /* block 1 of the other segment in the place of block 1 */
  tu_write_file(p, orig, len);
  put_block(p, other + 2 * 4096, 2);
  assert_true(check_all(dir, &x, ".tim", &t) > 0);
  tu_write_file(p, orig, len);
  assert_int_equal(check_all(dir, &x, ".tim", &t), 0);
  free(orig);
  free(other);
  free(p);
  free(q);
  fx_free(&x);
  fx_free(&y);
  tu_rmtree(dir);
  free(dir);
}

/* The .tim page each key of the unique field is read from, as a lookup in
 * the undamaged segment finds it (the cursor's block, page block + 1). */
static uint32_t *key_pages(const char *dir, const fx_field *F) {
  tern_seg *s;
  assert_int_equal(tern_seg_open(&s, dir, "s", TERN_IO_PREAD), TERN_OK);
  uint32_t *pages = malloc(F->n * sizeof *pages);
  tern_seg_cursor *c = malloc(sizeof *c);
  for (uint32_t k = 0; k < F->n; k++) {
    tern_seg_cursor_init(c);
    assert_int_equal(tu_seg_pk_get(s, F->terms[k].t, F->terms[k].len, c, NULL, NULL), TERN_OK);
    pages[k] = (uint32_t)c->block_no + 1;
    tern_seg_cursor_release(c);
  }
  free(c);
  tern_seg_close(s);
  return pages;
}

/* With page `bad` of .tim damaged (0: none a lookup reads), in both modes:
 * every key of the unique field read from another page reads its doc and
 * value, every key read from it is TERN_ECORRUPT naming .tim and the
 * page's offset; verify refuses the segment.  Returns the keys refused. */
static uint32_t check_damaged_page(const char *dir, const fx_seg *x, const uint32_t *pages,
                                   uint32_t bad) {
  const fx_field *F = &x->fields[0];
  char at[32];
  snprintf(at, sizeof at, "offset %llu", (unsigned long long)bad * 4096);
  uint32_t refused = 0;
  for (int mode = 0; mode < 2; mode++) {
    tern_seg *s;
    assert_int_equal(tern_seg_open(&s, dir, "s", mode ? TERN_IO_PREAD : TERN_IO_MMAP), TERN_OK);
    tern_seg_cursor *c = malloc(sizeof *c);
    for (uint32_t k = 0; k < F->n; k++) {
      const fx_term *ref = &F->terms[k];
      uint32_t doc;
      tern_slice v;
      tern_seg_cursor_init(c);
      int rc = tu_seg_pk_get(s, ref->t, ref->len, c, &doc, &v);
      if (pages[k] == bad) {
        assert_int_equal(rc, TERN_ECORRUPT);
        check_corrupt_message(".tim");
        assert_non_null(strstr(tern_errmsg(), at));
        refused++;
      } else {
        assert_int_equal(rc, TERN_OK);
        assert_int_equal(doc, ref->docs[0]);
        assert_int_equal(v.len, ref->vlen);
        assert_true(v.len == 0 || memcmp(v.data, ref->val, v.len) == 0);
      }
      tern_seg_cursor_release(c);
    }
    free(c);
    assert_int_equal(tern_seg_verify(s), TERN_ECORRUPT);
    assert_non_null(strstr(tern_errmsg(), ".tim"));
    tern_seg_close(s);
  }
  return refused;
}

/* Format 4 keeps each .tim page's checksum in its last 4 bytes.  A flipped
 * byte in a block's data or in its checksum fails exactly the keys of that
 * block, in both modes; so does a valid block copied over another (the
 * page number is in the seed); page 0 and the footer page are read by
 * verify only, which refuses them damaged; and the checksum is no block
 * data: with the read checks off, every page's last 4 bytes overwritten
 * change no answer. */
static void test_block_checksum_in_page(void **state) {
  (void)state;
  fx_seg x;
  char *dir = setup(0xc4, "seg-trailer", &x);
  tu_rng r;
  tu_rng_init(&r, 0xc40);
  char *p = fx_file(dir, "s", ".tim");
  size_t len;
  uint8_t *orig = tu_read_file(p, &len), *bad = malloc(len);
  uint64_t pages = len / 4096; /* whole pages: 0 and the blocks */
  uint32_t *kp = key_pages(dir, &x.fields[0]);
  uint32_t first = kp[0], last = kp[x.fields[0].n - 1];
  assert_true(last >= first + 3);
  for (uint32_t page = first; page <= last; page++) {
    for (int trailer = 0; trailer < 2; trailer++) {
      memcpy(bad, orig, len);
      size_t at = trailer ? 4092 + tu_below(&r, 4) : tu_below(&r, 4092);
      bad[4096 * page + at] ^= (uint8_t)(1 + tu_below(&r, 255));
      tu_write_file(p, bad, len);
      assert_true(check_damaged_page(dir, &x, kp, page) > 0);
    }
  }
  /* a valid block copied over the next but one */
  memcpy(bad, orig, len);
  memcpy(bad + 4096 * (first + 2), orig + 4096 * first, 4096);
  tu_write_file(p, bad, len);
  assert_true(check_damaged_page(dir, &x, kp, first + 2) > 0);
  /* page 0's padding, page 0's checksum, the footer: no lookup reads them */
  size_t places[] = {32 + tu_below(&r, 4060), 4092 + tu_below(&r, 4), len - 1 - tu_below(&r, 16)};
  for (int i = 0; i < 3; i++) {
    memcpy(bad, orig, len);
    bad[places[i]] ^= 0x40;
    tu_write_file(p, bad, len);
    assert_int_equal(check_damaged_page(dir, &x, kp, 0), 0);
  }
  /* every checksum garbage, the checks off: every answer right */
  memcpy(bad, orig, len);
  for (uint64_t pg = 0; pg < pages; pg++)
    tu_fill(&r, bad + 4096 * pg + 4092, 4);
  tu_write_file(p, bad, len);
  tally t = {0, 0};
  tern_io_set_read_checks(0);
  uint64_t corrupt = check_all(dir, &x, ".tim", &t);
  tern_io_set_read_checks(1);
  assert_int_equal(corrupt, 0);
  assert_int_equal(t.right, 2 * (x.fields[0].n + x.fields[1].n));
  /* and on: every block read is refused */
  t.right = t.corrupt = 0;
  check_all(dir, &x, ".tim", &t);
  assert_int_equal(t.right, 0);
  print_message(
      ".tim blocks of the unique field: pages %u..%u, each flipped in its data and in its "
      "checksum: refused exactly for their keys\n",
      first, last);
  tu_write_file(p, orig, len);
  free(kp);
  free(bad);
  free(orig);
  free(p);
  teardown(dir, &x);
}

/* A page is checked once: damage after its first read goes unnoticed by a
 * warm read (mmap: the damaged bytes are in the mapping), until evict. */
static void test_checked_once(void **state) {
  (void)state;
  fx_seg x;
  char *dir = setup(0xc7, "seg-once", &x);
  tern_seg *s;
  assert_int_equal(tern_seg_open(&s, dir, "s", TERN_IO_MMAP), TERN_OK);
  tern_seg_cursor *c = malloc(sizeof *c);
  tern_seg_cursor_init(c);
  const fx_term *k0 = &x.fields[0].terms[0];
  assert_int_equal(tu_seg_pk_get(s, k0->t, k0->len, c, NULL, NULL), TERN_OK);
  /* damage the first block's last byte in the file (seen through MAP_SHARED) */
  char *p = fx_file(dir, "s", ".tim");
  size_t len;
  uint8_t *buf = tu_read_file(p, &len);
  buf[2 * 4096 - 1] ^= 0x55;
  FILE *fp = fopen(p, "r+b");
  assert_non_null(fp);
  assert_int_equal(fseek(fp, 2 * 4096 - 1, SEEK_SET), 0);
  assert_int_equal(fputc(buf[2 * 4096 - 1], fp), buf[2 * 4096 - 1]);
  fclose(fp);
  tern_seg_cursor_release(c);
  tern_seg_cursor_init(c);
  assert_int_equal(tu_seg_pk_get(s, k0->t, k0->len, c, NULL, NULL), TERN_OK); /* warm: a bit */
  assert_int_equal(tern_seg_evict(s), TERN_OK);
  assert_int_equal(tu_seg_pk_get(s, k0->t, k0->len, c, NULL, NULL), TERN_ECORRUPT);
  check_corrupt_message(".tim");
  assert_non_null(strstr(tern_errmsg(), "offset 4096"));
  /* the checks off: the damaged block is decoded (the benchmark's baseline) */
  tern_io_set_read_checks(0);
  int rc = tu_seg_pk_get(s, k0->t, k0->len, c, NULL, NULL);
  tern_io_set_read_checks(1);
  assert_true(rc == TERN_OK || rc == TERN_NOTFOUND || rc == TERN_ECORRUPT);
  assert_int_equal(tern_seg_verify(s), TERN_ECORRUPT);
  tern_seg_cursor_release(c);
  free(c);
  tern_seg_close(s);
  free(buf);
  free(p);
  teardown(dir, &x);
}

static void test_truncated_at_open(void **state) {
  (void)state;
  fx_seg x;
  char *dir = setup(0xc8, "seg-short", &x);
  static const int files[] = {0, 2, 4};
  for (int i = 0; i < 3; i++) {
    char *p = fx_file(dir, "s", exts[files[i]]);
    size_t len;
    uint8_t *orig = tu_read_file(p, &len);
    size_t cuts[] = {len - 1, len - 16, len / 2, 48};
    for (size_t k = 0; k < 4; k++) {
      tu_write_file(p, orig, cuts[k]);
      tern_seg *s;
      assert_int_equal(tern_seg_open(&s, dir, "s", TERN_IO_MMAP), TERN_ECORRUPT);
      assert_non_null(strstr(tern_errmsg(), exts[files[i]]));
    }
    /* a longer file too */
    uint8_t *longer = calloc(1, len + 1);
    memcpy(longer, orig, len);
    tu_write_file(p, longer, len + 1);
    tern_seg *s;
    assert_int_equal(tern_seg_open(&s, dir, "s", TERN_IO_PREAD), TERN_ECORRUPT);
    tu_write_file(p, orig, len);
    free(longer);
    free(orig);
    free(p);
  }
  teardown(dir, &x);
}

static void test_not_regular(void **state) {
  (void)state;
  fx_seg x;
  char *dir = setup(0xc9, "seg-fifo", &x);
  for (int f = 0; f < 5; f++) {
    char *p = fx_file(dir, "s", exts[f]);
    size_t len;
    uint8_t *orig = tu_read_file(p, &len);
    assert_int_equal(unlink(p), 0);
    for (int kind = 0; kind < 2; kind++) {
      assert_int_equal(kind ? mkdir(p, 0755) : mkfifo(p, 0644), 0);
      for (int mode = 0; mode < 2; mode++) {
        tern_seg *s;
        assert_int_equal(tern_seg_open(&s, dir, "s", mode ? TERN_IO_PREAD : TERN_IO_MMAP),
                         TERN_ECORRUPT);
        assert_non_null(strstr(tern_errmsg(), exts[f]));
        assert_non_null(strstr(tern_errmsg(), "not a regular file"));
      }
      assert_int_equal(kind ? rmdir(p) : unlink(p), 0);
    }
    tu_write_file(p, orig, len);
    free(orig);
    free(p);
  }
  /* a FIFO where a writer puts its temporary file */
  char *t = fx_file(dir, "w", ".tim.tmp");
  assert_int_equal(mkfifo(t, 0644), 0);
  tern_segw *w;
  assert_true(tern_segw_open(&w, dir, "w", &x.o) < 0);
  free(t);
  teardown(dir, &x);
}

int main(void) {
  tu_seed();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flips),
      cmocka_unit_test(test_damaged_filter_page),
      cmocka_unit_test(test_misplaced_blocks),
      cmocka_unit_test(test_block_checksum_in_page),
      cmocka_unit_test(test_checked_once),
      cmocka_unit_test(test_truncated_at_open),
      cmocka_unit_test(test_not_regular),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
