/* The file layer and framing: counted reads in both modes, atomic writes,
 * and every corruption of a framed file reported, never a crash. */
#include "codec/coding.h"
#include "codec/frame.h"
#include "codec/io.h"
#include "codec/status.h"
#include "tests/common/testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KIND TERN_FOURCC('T', 'S', 'T', ' ')

static char *write_framed(const char *dir, const uint8_t *segid, const uint8_t *body, size_t n) {
  char *path = tu_path(dir, "f.bin");
  tern_wfile *w;
  assert_int_equal(tern_wfile_create(&w, path), TERN_OK);
  assert_int_equal(tern_frame_write_header(w, KIND, 1, segid), TERN_OK);
  assert_int_equal(tern_wfile_append(w, body, n), TERN_OK);
  assert_int_equal(tern_frame_write_footer(w), TERN_OK);
  assert_int_equal(tern_wfile_commit(w), TERN_OK);
  return path;
}

static void test_reads_are_counted_in_both_modes(void **state) {
  (void)state;
  char *dir = tu_tmpdir("io");
  tu_rng r;
  tu_rng_init(&r, 2);
  size_t n = 300000; /* crosses the write buffer */
  uint8_t *body = malloc(n), seg[TERN_SEGID_SIZE];
  tu_fill(&r, body, n);
  assert_int_equal(tern_segid_generate(seg), TERN_OK);
  char *path = write_framed(dir, seg, body, n);
  for (int mode = TERN_IO_MMAP; mode <= TERN_IO_PREAD; mode++) {
    tern_rfile *f;
    assert_int_equal(tern_rfile_open(&f, path, (tern_io_mode)mode), TERN_OK);
    assert_int_equal(tern_rfile_size(f), n + TERN_FRAME_HEADER_SIZE + TERN_FRAME_FOOTER_SIZE);
    uint8_t scratch[4096];
    const uint8_t *p;
    for (int i = 0; i < 100; i++) {
      size_t off = tu_below(&r, n - sizeof scratch);
      assert_int_equal(tern_rfile_read(f, TERN_FRAME_HEADER_SIZE + off, sizeof scratch, scratch, &p),
                       TERN_OK);
      assert_memory_equal(p, body + off, sizeof scratch);
    }
    tern_io_stats st;
    tern_rfile_stats(f, &st);
    assert_int_equal(st.reads, 100);
    assert_int_equal(st.bytes, 100 * sizeof scratch);
    /* Past the end is corruption (a truncated file), and is not counted. */
    assert_int_equal(tern_rfile_read(f, tern_rfile_size(f) - 10, 11, scratch, &p), TERN_ECORRUPT);
    tern_rfile_stats(f, &st);
    assert_int_equal(st.reads, 100);
    tern_rfile_reset_stats(f);
    tern_rfile_stats(f, &st);
    assert_int_equal(st.reads, 0);
    assert_int_equal(tern_rfile_evict(f), TERN_OK);
    assert_int_equal(tern_frame_verify_file(f, KIND, 1, seg, NULL), TERN_OK);
    tern_rfile_close(f);
  }
  free(body);
  free(path);
  free(dir);
}

static void test_open_missing_reports_errno(void **state) {
  (void)state;
  tern_rfile *f;
  assert_int_equal(tern_rfile_open(&f, "/nonexistent/tern/x", TERN_IO_MMAP), -ENOENT);
  assert_non_null(strstr(tern_errmsg(), "/nonexistent/tern/x"));
  assert_string_equal(tern_strerror(-ENOENT), "No such file or directory");
  assert_string_equal(tern_strerror(TERN_ECORRUPT), "corrupt or truncated file");
}

static void test_abort_leaves_nothing(void **state) {
  (void)state;
  char *dir = tu_tmpdir("io");
  char *path = tu_path(dir, "x");
  char *tmp = tu_path(dir, "x.tmp");
  tern_wfile *w;
  assert_int_equal(tern_wfile_create(&w, path), TERN_OK);
  assert_int_equal(tern_wfile_append(w, "abc", 3), TERN_OK);
  assert_int_equal(tern_wfile_pad(w, 4096), TERN_OK);
  assert_int_equal(tern_wfile_offset(w), 4096);
  tern_wfile_abort(w);
  assert_int_equal(access(path, F_OK), -1);
  assert_int_equal(access(tmp, F_OK), -1);
  assert_int_equal(tern_write_file_atomic(path, "hello", 5), TERN_OK);
  size_t len;
  uint8_t *got = tu_read_file(path, &len);
  assert_int_equal(len, 5);
  assert_memory_equal(got, "hello", 5);
  free(got);
  free(path);
  free(tmp);
  free(dir);
}

/* Every single-byte change of a framed buffer is detected. */
static void test_every_byte_flip_detected(void **state) {
  (void)state;
  uint8_t seg[TERN_SEGID_SIZE], body[200];
  tu_rng r;
  tu_rng_init(&r, 3);
  tu_fill(&r, body, sizeof body);
  assert_int_equal(tern_segid_generate(seg), TERN_OK);
  uint8_t *buf;
  size_t len;
  assert_int_equal(tern_frame_wrap(&buf, &len, KIND, 1, seg, body, sizeof body), TERN_OK);
  const uint8_t *b;
  size_t bl;
  uint32_t v;
  assert_int_equal(tern_frame_open_buffer(buf, len, KIND, 1, seg, "buf", &v, &b, &bl), TERN_OK);
  assert_int_equal(v, 1);
  assert_int_equal(bl, sizeof body);
  assert_memory_equal(b, body, sizeof body);
  for (size_t i = 0; i < len; i++) {
    uint8_t *c = malloc(len);
    memcpy(c, buf, len);
    c[i] ^= (uint8_t)(1u << tu_below(&r, 8));
    int rc = tern_frame_open_buffer(c, len, KIND, 1, seg, "buf", &v, &b, &bl);
    if (i >= 8 && i < 12 && tern_load32(c + 8) > 1)
      assert_int_equal(rc, TERN_EVERSION);
    else
      assert_int_equal(rc, TERN_ECORRUPT);
    free(c);
  }
  /* Every truncation too. */
  for (size_t n = 0; n < len; n++)
    assert_int_equal(tern_frame_open_buffer(buf, n, KIND, 1, seg, "buf", &v, &b, &bl),
                     TERN_ECORRUPT);
  /* Another kind, another segment. */
  assert_int_equal(tern_frame_open_buffer(buf, len, TERN_KIND_TERMS, 1, seg, "buf", &v, &b, &bl),
                   TERN_ECORRUPT);
  uint8_t other[TERN_SEGID_SIZE];
  memcpy(other, seg, sizeof other);
  other[5] ^= 1;
  assert_int_equal(tern_frame_open_buffer(buf, len, KIND, 1, other, "buf", &v, &b, &bl),
                   TERN_ECORRUPT);
  free(buf);
}

static void test_verify_file_detects_truncation_and_flips(void **state) {
  (void)state;
  char *dir = tu_tmpdir("io");
  uint8_t seg[TERN_SEGID_SIZE], body[5000];
  tu_rng r;
  tu_rng_init(&r, 4);
  tu_fill(&r, body, sizeof body);
  assert_int_equal(tern_segid_generate(seg), TERN_OK);
  char *path = write_framed(dir, seg, body, sizeof body);
  size_t len;
  uint8_t *orig = tu_read_file(path, &len);
  for (int trial = 0; trial < 40; trial++) {
    uint8_t *c = malloc(len);
    memcpy(c, orig, len);
    size_t n = len;
    if (trial % 2)
      n = tu_below(&r, len);
    else
      c[tu_below(&r, len)] ^= 0x40;
    tu_write_file(path, c, n);
    tern_rfile *f;
    assert_int_equal(tern_rfile_open(&f, path, trial % 4 < 2 ? TERN_IO_MMAP : TERN_IO_PREAD), TERN_OK);
    int rc = tern_frame_verify_file(f, KIND, 1, seg, NULL);
    assert_true(rc == TERN_ECORRUPT || rc == TERN_EVERSION);
    tern_rfile_close(f);
    free(c);
  }
  free(orig);
  free(path);
  free(dir);
}

/* A mapped file with page checksums: the first read of a page is a pread
 * into the caller's buffer (checked), later ones point into the mapping; a
 * read without a buffer faults the page in; with the first touch by pread
 * turned off, every read is mapped.  The same bytes and counts each way, and
 * a damaged page fails each way. */
static void test_first_touch_by_pread(void **state) {
  (void)state;
  char *dir = tu_tmpdir("io");
  tu_rng r;
  tu_rng_init(&r, 7);
  enum { PAGES = 6 };
  size_t n = PAGES * 4096 - 1000; /* the last page short */
  uint8_t *bytes = malloc(n), *sums = malloc(4 * PAGES);
  tu_fill(&r, bytes, n);
  for (size_t p = 0; p < PAGES; p++) {
    size_t len = p + 1 < PAGES ? 4096 : n - p * 4096;
    tern_store32(sums + 4 * p, tern_io_page_sum(bytes + 4096 * p, len, 99, p));
  }
  char *path = tu_path(dir, "pages.bin");
  tu_write_file(path, bytes, n);
  for (int on = 1; on >= 0; on--) {
    tern_io_set_first_touch_pread(on);
    tern_rfile *f;
    assert_int_equal(tern_rfile_open(&f, path, TERN_IO_MMAP), TERN_OK);
    assert_int_equal(tern_rfile_set_page_sums(f, sums, 99), TERN_OK);
    const uint8_t *map = tern_rfile_map(f);
    assert_non_null(map);
    uint8_t scratch[8192];
    const uint8_t *p;
    /* a block-like read of page 1, then a range across pages 2 and 3 */
    assert_int_equal(tern_rfile_read(f, 4096, 4096, scratch, &p), TERN_OK);
    assert_true(on ? p == scratch : p == map + 4096);
    assert_memory_equal(p, bytes + 4096, 4096);
    assert_int_equal(tern_rfile_page_checked(f, 4096), 1);
    assert_int_equal(tern_rfile_read(f, 4096, 4096, scratch, &p), TERN_OK);
    assert_true(p == map + 4096); /* checked: mapped */
    assert_int_equal(tern_rfile_read(f, 3 * 4096 - 300, 700, scratch, &p), TERN_OK);
    assert_true(on ? p == scratch : p == map + 3 * 4096 - 300);
    assert_memory_equal(p, bytes + 3 * 4096 - 300, 700);
    assert_int_equal(tern_rfile_page_checked(f, 2 * 4096) & tern_rfile_page_checked(f, 3 * 4096), 1);
    /* no buffer: through the mapping (the last, short page) */
    assert_int_equal(tern_rfile_read(f, 5 * 4096, n - 5 * 4096, NULL, &p), TERN_OK);
    assert_true(p == map + 5 * 4096);
    tern_io_stats st;
    tern_rfile_stats(f, &st);
    assert_int_equal(st.reads, 4);
    /* page 0 damaged behind the checksums' back: refused either way */
    assert_int_equal(tern_rfile_page_checked(f, 0), 0);
    tern_store32(sums, tern_load32(sums) ^ 1);
    assert_int_equal(tern_rfile_read(f, 10, 20, scratch, &p), TERN_ECORRUPT);
    assert_non_null(strstr(tern_errmsg(), "pages.bin"));
    assert_int_equal(tern_rfile_page_checked(f, 0), 0);
    assert_int_equal(tern_rfile_check_cached(f, 0), TERN_ECORRUPT); /* cached: just written */
    tern_store32(sums, tern_load32(sums) ^ 1);
    assert_int_equal(tern_rfile_check_cached(f, 0), 1);
    assert_int_equal(tern_rfile_page_checked(f, 0), 1);
    tern_rfile_close(f);
  }
  tern_io_set_first_touch_pread(1);
  free(bytes);
  free(sums);
  free(path);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_touch_by_pread),
      cmocka_unit_test(test_reads_are_counted_in_both_modes),
      cmocka_unit_test(test_open_missing_reports_errno),
      cmocka_unit_test(test_abort_leaves_nothing),
      cmocka_unit_test(test_every_byte_flip_detected),
      cmocka_unit_test(test_verify_file_detects_truncation_and_flips),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
