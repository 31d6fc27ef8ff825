/* SPDX-License-Identifier: MIT */
/*
 * test_segment_headers.c — the terms blocks' headers saved once read
 * (codec/segment_headers.c): lookups that open a block from its saved
 * header answer exactly as the first (against the fixture's reference),
 *
 *   - two segments of different key shapes looked up in turn with one
 *     cursor, three passes in random orders, present and near-absent keys,
 *     both I/O modes: every block of the unique field has its header saved
 *     after the first pass, and every answer (doc, value, not found) is
 *     the reference's in every pass;
 *   - a block damaged in its header after its header was saved, the
 *     segment's pages then evicted: every key of that block is
 *     TERN_ECORRUPT naming .tim (the page's checksum is checked before
 *     the saved header is used), every other key still right.
 */
#include "tests/codec/segment_fixture.h"

#include "codec/segment_internal.h"
#include "codec/status.h"

static void build(uint64_t seed, const char *dir, enum fx_shape shape, uint32_t n, fx_seg *x) {
  tu_rng r;
  tu_rng_init(&r, seed);
  memset(x, 0, sizeof *x);
  tern_segw_options_init(&x->o);
  x->o.inline_value_max = 8;
  fx_unique(&r, &x->fields[0], "id", shape, n, 1, 0, 8, 1);
  x->nfields = 1;
  x->max_doc = n;
  assert_int_equal(fx_write(x, dir, "s"), TERN_OK);
}

/* Key k of F (or a key near it when `near`) looked up in s: the
 * reference's answer. */
static void check_one(const tern_seg *s, const fx_field *F, tern_seg_cursor *c, tu_rng *r,
                      int near) {
  uint8_t key[TERN_KEY_MAX + 1];
  uint32_t klen, k;
  if (near) {
    klen = fx_near_key(r, F, key);
    k = fx_lower_bound(F, key, klen);
    if (k == F->n || fx_cmp(F->terms[k].t, F->terms[k].len, key, klen) != 0) k = UINT32_MAX;
  } else {
    k = (uint32_t)tu_below(r, F->n);
    klen = F->terms[k].len;
    memcpy(key, F->terms[k].t, klen);
  }
  uint32_t doc = UINT32_MAX;
  tern_slice v = {0};
  int rc = tu_seg_pk_get(s, key, klen, c, &doc, &v);
  if (k == UINT32_MAX) {
    assert_int_equal(rc, TERN_NOTFOUND);
    return;
  }
  assert_int_equal(rc, TERN_OK);
  assert_int_equal(doc, F->terms[k].docs[0]);
  assert_int_equal(v.len, F->terms[k].vlen);
  if (v.len) assert_memory_equal(v.data, F->terms[k].val, v.len);
}

static uint64_t saved_count(const tern_seg *s) {
  const tern_seg_field *f = tern_seg_unique_field(s);
  uint64_t n = 0;
  for (uint64_t b = 0; f->saved && b < f->nblocks; b++)
    n += atomic_load(&tern_seg_header_at(f, b)->state) == 2;
  return n;
}

static void test_reuse_across_blocks_and_segments(void **state) {
  (void)state;
  uint64_t seed = tu_seed() ^ 0x5a7edu;
  char *dir[2] = {tu_tmpdir("hdr-a"), tu_tmpdir("hdr-b")};
  fx_seg x[2];
  build(seed, dir[0], FX_BASE36, 4000, &x[0]);
  build(seed + 1, dir[1], FX_LONG, 1500, &x[1]);
  for (int mode = 0; mode < 2; mode++) {
    tern_seg *s[2];
    for (int i = 0; i < 2; i++)
      assert_int_equal(tern_seg_open(&s[i], dir[i], "s", mode ? TERN_IO_PREAD : TERN_IO_MMAP),
                       TERN_OK);
    assert_true(tern_seg_unique_field(s[0])->nblocks > 2);
    assert_true(tern_seg_unique_field(s[1])->nblocks > 2);
    assert_int_equal(saved_count(s[0]), 0);
    tern_seg_cursor *c = malloc(sizeof *c);
    tern_seg_cursor_init(c);
    tu_rng r;
    tu_rng_init(&r, seed ^ (uint64_t)mode);
    for (int pass = 0; pass < 3; pass++) {
      /* every key once (so every block), then random ones, both segments in turn */
      for (int i = 0; i < 2; i++)
        for (uint32_t k = 0; k < x[i].fields[0].n; k++) {
          uint32_t doc;
          const fx_term *t = &x[i].fields[0].terms[k];
          assert_int_equal(tu_seg_pk_get(s[i], t->t, t->len, c, &doc, NULL), TERN_OK);
          assert_int_equal(doc, t->docs[0]);
        }
      for (int q = 0; q < 4000; q++) {
        int i = (int)tu_below(&r, 2);
        if (q % 2) { /* a fresh cursor: no block held */
          tern_seg_cursor_release(c);
          tern_seg_cursor_init(c);
        }
        check_one(s[i], &x[i].fields[0], c, &r, (int)tu_below(&r, 3) == 0);
      }
      for (int i = 0; i < 2; i++)
        assert_int_equal(saved_count(s[i]), tern_seg_unique_field(s[i])->nblocks);
    }
    tern_seg_cursor_release(c);
    free(c);
    for (int i = 0; i < 2; i++) tern_seg_close(s[i]);
  }
  for (int i = 0; i < 2; i++) {
    fx_free(&x[i]);
    tu_rmtree(dir[i]);
    free(dir[i]);
  }
}

/* Overwrites `n` bytes of the file at `off`. */
static void patch_file(const char *path, long off, const uint8_t *bytes, size_t n) {
  FILE *fp = fopen(path, "r+b");
  assert_non_null(fp);
  assert_int_equal(fseek(fp, off, SEEK_SET), 0);
  assert_int_equal(fwrite(bytes, 1, n, fp), n);
  fclose(fp);
}

static void test_damaged_after_saved(void **state) {
  (void)state;
  uint64_t seed = tu_seed() ^ 0xda3a6eu;
  char *dir = tu_tmpdir("hdr-bad");
  fx_seg x;
  build(seed, dir, FX_BASE36, 4000, &x);
  const fx_field *F = &x.fields[0];
  char *p = fx_file(dir, "s", ".tim");
  for (int mode = 0; mode < 2; mode++) {
    tern_seg *s;
    assert_int_equal(tern_seg_open(&s, dir, "s", mode ? TERN_IO_PREAD : TERN_IO_MMAP), TERN_OK);
    tern_seg_cursor *c = malloc(sizeof *c);
    tern_seg_cursor_init(c);
    uint32_t *page = malloc(F->n * sizeof *page);
    for (uint32_t k = 0; k < F->n; k++) {
      tern_seg_cursor_release(c);
      tern_seg_cursor_init(c);
      assert_int_equal(tu_seg_pk_get(s, F->terms[k].t, F->terms[k].len, c, NULL, NULL), TERN_OK);
      page[k] = (uint32_t)c->block_no + 1;
    }
    assert_int_equal(saved_count(s), tern_seg_unique_field(s)->nblocks);
    /* the second block's restart interval byte, then evict */
    uint32_t bad = page[0] + 1;
    size_t len;
    uint8_t *orig = tu_read_file(p, &len);
    uint8_t byte = (uint8_t)(orig[4096 * bad + 1] ^ 0x21);
    patch_file(p, 4096L * bad + 1, &byte, 1);
    assert_int_equal(tern_seg_evict(s), TERN_OK);
    uint32_t refused = 0;
    for (uint32_t k = 0; k < F->n; k++) {
      tern_seg_cursor_release(c);
      tern_seg_cursor_init(c);
      uint32_t doc;
      int rc = tu_seg_pk_get(s, F->terms[k].t, F->terms[k].len, c, &doc, NULL);
      if (page[k] == bad) {
        assert_int_equal(rc, TERN_ECORRUPT);
        assert_non_null(strstr(tern_errmsg(), ".tim"));
        refused++;
      } else {
        assert_int_equal(rc, TERN_OK);
        assert_int_equal(doc, F->terms[k].docs[0]);
      }
    }
    assert_true(refused > 0);
    patch_file(p, 4096L * bad + 1, &orig[4096 * bad + 1], 1);
    free(orig);
    free(page);
    tern_seg_cursor_release(c);
    free(c);
    tern_seg_close(s);
  }
  free(p);
  fx_free(&x);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reuse_across_blocks_and_segments),
      cmocka_unit_test(test_damaged_after_saved),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
