/* SPDX-License-Identifier: MIT */
/* The file layer and framing: counted reads in both modes, atomic writes,
 * and every corruption of a framed file reported, never a crash. */
#include "codec/coding.h"
#include "codec/frame.h"
#include "codec/io.h"
#include "codec/status.h"
#include "tests/common/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

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

/* A framed file of n random bytes (from r) in dir; *body: its body (the
 * caller frees it), seg: its segment id. */
static char *random_framed(const char *dir, tu_rng *r, size_t n, uint8_t **body, uint8_t *seg) {
  *body = malloc(n);
  tu_fill(r, *body, n);
  assert_int_equal(tern_segid_generate(seg), TERN_OK);
  return write_framed(dir, seg, *body, n);
}

static void test_reads_are_counted_in_both_modes(void **state) {
  (void)state;
  char *dir = tu_tmpdir("io");
  tu_rng r;
  tu_rng_init(&r, 2);
  size_t n = 300000; /* crosses the write buffer */
  uint8_t *body, seg[TERN_SEGID_SIZE];
  char *path = random_framed(dir, &r, n, &body, seg);
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

/* Descriptors this process holds open. */
static int open_fds(void) {
  int n = 0;
  for (int fd = 0; fd < 1024; fd++) n += fcntl(fd, F_GETFD) != -1;
  return n;
}

/* A file read whole through a mapping (a segment's index file): its bytes
 * in place, one read counted, no descriptor held; a file that is not
 * there gives its errno. */
static void test_open_whole_mapped(void **state) {
  (void)state;
  char *dir = tu_tmpdir("io");
  tu_rng r;
  tu_rng_init(&r, 3);
  size_t n = 200000;
  uint8_t *body, seg[TERN_SEGID_SIZE];
  char *path = random_framed(dir, &r, n, &body, seg);
  int fds = open_fds();
  tern_rfile *f;
  assert_int_equal(tern_rfile_open_whole_mapped(&f, path), TERN_OK);
  assert_int_equal(open_fds(), fds);
  assert_int_equal(tern_rfile_mode(f), TERN_IO_MMAP);
  uint64_t size = tern_rfile_size(f);
  const uint8_t *p;
  assert_int_equal(tern_rfile_read(f, 0, (size_t)size, NULL, &p), TERN_OK);
  assert_ptr_equal(p, tern_rfile_map(f));
  assert_memory_equal(p + TERN_FRAME_HEADER_SIZE, body, n);
  tern_io_stats st;
  tern_rfile_stats(f, &st);
  assert_int_equal(st.reads, 1);
  assert_int_equal(st.bytes, size);
  tern_rfile_close(f);
  assert_int_equal(open_fds(), fds);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(tern_rfile_open_whole_mapped(&f, path), -ENOENT);
  assert_non_null(strstr(tern_errmsg(), "f.bin"));
  free(body);
  free(path);
  tu_rmtree(dir);
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

/* Zero bytes appended until the offset is a multiple of align. */
static int wfile_pad(tern_wfile *w, uint64_t align) {
  static const uint8_t zeros[4096];
  int rc = TERN_OK;
  for (uint64_t want = (align - tern_wfile_offset(w) % align) % align; rc == TERN_OK && want;) {
    size_t n = want > sizeof zeros ? sizeof zeros : (size_t)want;
    rc = tern_wfile_append(w, zeros, n);
    want -= n;
  }
  return rc;
}

/* A whole file written as the library writes one: temporary file, fsync,
 * rename, then the directory's fsync. */
static int write_file_atomic(const char *dir, const char *path, const void *buf, size_t len) {
  tern_wfile *w;
  int rc = tern_wfile_create(&w, path);
  if (rc != TERN_OK) return rc;
  rc = tern_wfile_append(w, buf, len);
  if (rc != TERN_OK) {
    tern_wfile_abort(w);
    return rc;
  }
  rc = tern_wfile_commit(w);
  return rc == TERN_OK ? tern_fsync_dir(dir) : rc;
}

static void test_abort_leaves_nothing(void **state) {
  (void)state;
  char *dir = tu_tmpdir("io");
  char *path = tu_path(dir, "x");
  char *tmp = tu_path(dir, "x.tmp");
  tern_wfile *w;
  assert_int_equal(tern_wfile_create(&w, path), TERN_OK);
  assert_int_equal(tern_wfile_append(w, "abc", 3), TERN_OK);
  assert_int_equal(wfile_pad(w, 4096), TERN_OK);
  assert_int_equal(tern_wfile_offset(w), 4096);
  tern_wfile_abort(w);
  assert_int_equal(access(path, F_OK), -1);
  assert_int_equal(access(tmp, F_OK), -1);
  assert_int_equal(write_file_atomic(dir, path, "hello", 5), TERN_OK);
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

/* tern_rfile_read_mapped: served from the mapping, counted, only when
 * every page of the range is checked (or the file has no checksums); else
 * 1 with nothing counted, and the caller's tern_rfile_read then reads
 * (the first touch by pread); in pread mode always 1. */
static void test_read_mapped(void **state) {
  (void)state;
  char *dir = tu_tmpdir("io");
  tu_rng r;
  tu_rng_init(&r, 11);
  enum { PAGES = 4 };
  size_t n = PAGES * 4096 - 100;
  uint8_t *bytes = malloc(n), *sums = malloc(4 * PAGES);
  tu_fill(&r, bytes, n);
  for (size_t p = 0; p < PAGES; p++)
    tern_store32(sums + 4 * p,
                 tern_io_page_sum(bytes + 4096 * p, p + 1 < PAGES ? 4096 : n - p * 4096, 3, p));
  char *path = tu_path(dir, "mapped.bin");
  tu_write_file(path, bytes, n);
  tern_rfile *f;
  tern_io_stats st;
  uint8_t scratch[8192];
  const uint8_t *p;
  assert_int_equal(tern_rfile_open(&f, path, TERN_IO_MMAP), TERN_OK);
  const uint8_t *map = tern_rfile_map(f);
  /* no checksums: always mapped */
  assert_int_equal(tern_rfile_read_mapped(f, 4000, 200, &p), TERN_OK);
  assert_true(p == map + 4000);
  assert_int_equal(tern_rfile_set_page_sums(f, sums, 3), TERN_OK);
  tern_rfile_reset_stats(f);
  /* pages 1 and 2 not checked: 1, nothing counted */
  assert_int_equal(tern_rfile_read_mapped(f, 2 * 4096 - 50, 100, &p), 1);
  tern_rfile_stats(f, &st);
  assert_int_equal(st.reads, 0);
  assert_int_equal(tern_rfile_read(f, 2 * 4096 - 50, 100, scratch, &p), TERN_OK);
  assert_memory_equal(p, bytes + 2 * 4096 - 50, 100);
  assert_int_equal(tern_rfile_read_mapped(f, 2 * 4096 - 50, 100, &p), TERN_OK);
  assert_true(p == map + 2 * 4096 - 50);
  /* page 2 checked, page 3 not */
  assert_int_equal(tern_rfile_read_mapped(f, 3 * 4096 - 10, 20, &p), 1);
  tern_rfile_stats(f, &st);
  assert_int_equal(st.reads, 2);
  assert_int_equal(st.bytes, 200);
  /* past the end: corruption, not counted */
  assert_int_equal(tern_rfile_read_mapped(f, n - 10, 11, &p), TERN_ECORRUPT);
  assert_non_null(strstr(tern_errmsg(), "mapped.bin"));
  tern_rfile_stats(f, &st);
  assert_int_equal(st.reads, 2);
  tern_rfile_close(f);
  assert_int_equal(tern_rfile_open(&f, path, TERN_IO_PREAD), TERN_OK);
  assert_int_equal(tern_rfile_read(f, 0, 4096, scratch, &p), TERN_OK);
  assert_int_equal(tern_rfile_read_mapped(f, 0, 100, &p), 1);
  tern_rfile_stats(f, &st);
  assert_int_equal(st.reads, 1);
  tern_rfile_close(f);
  free(bytes);
  free(sums);
  free(path);
  free(dir);
}

/* Counted reads stay exact with threads: several threads read one shared
 * file and files of their own, opening and closing them, while another
 * asks for the totals; afterwards every file's count and the process
 * totals are exactly the reads made.  Closed files stay in the totals;
 * resetting one file's counters or the totals changes only what it says. */
enum { CT_THREADS = 4, CT_READS = 20000, CT_OWN = 5 };

typedef struct count_arg {
  tern_rfile *shared;
  const char *path;
  uint64_t seed, bytes; /* bytes: what this thread asked for */
} count_arg;

static void *count_main(void *p) {
  count_arg *a = p;
  tu_rng r;
  tu_rng_init(&r, a->seed);
  uint8_t scratch[512];
  const uint8_t *out;
  for (int k = 0; k < CT_OWN; k++) {
    tern_rfile *own;
    if (tern_rfile_open(&own, a->path, k % 2 ? TERN_IO_PREAD : TERN_IO_MMAP) != TERN_OK) return p;
    for (int i = 0; i < CT_READS / CT_OWN; i++) {
      size_t len = 1 + tu_below(&r, sizeof scratch), off = tu_below(&r, 4096);
      tern_rfile *f = i % 2 ? own : a->shared;
      int rc = i % 4 == 1 ? tern_rfile_read_mapped(f, off, len, &out) : 1;
      if (rc == 1) rc = tern_rfile_read(f, off, len, scratch, &out);
      if (rc != TERN_OK) return p;
      a->bytes += len;
    }
    tern_rfile_close(own);
  }
  return NULL;
}

static void test_counts_with_threads(void **state) {
  (void)state;
  char *dir = tu_tmpdir("io");
  tu_rng r;
  tu_rng_init(&r, 13);
  uint8_t bytes[8192];
  tu_fill(&r, bytes, sizeof bytes);
  char *path = tu_path(dir, "shared.bin");
  tu_write_file(path, bytes, sizeof bytes);
  tern_rfile *shared, *idle;
  assert_int_equal(tern_rfile_open(&shared, path, TERN_IO_MMAP), TERN_OK);
  assert_int_equal(tern_rfile_open(&idle, path, TERN_IO_PREAD), TERN_OK);
  uint8_t scratch[100];
  const uint8_t *out;
  assert_int_equal(tern_rfile_read(idle, 0, 100, scratch, &out), TERN_OK);
  tern_io_reset_global_stats(); /* idle's read is before the reset */
  tern_io_stats g, st;
  tern_io_global_stats(&g);
  assert_int_equal(g.reads, 0);
  pthread_t t[CT_THREADS];
  count_arg a[CT_THREADS];
  for (int i = 0; i < CT_THREADS; i++) {
    a[i] = (count_arg){shared, path, 100 + (uint64_t)i, 0};
    assert_int_equal(pthread_create(&t[i], NULL, count_main, &a[i]), 0);
  }
  uint64_t last = 0;
  for (int k = 0; k < 200; k++) { /* the totals only grow meanwhile */
    tern_io_global_stats(&g);
    assert_true(g.reads >= last);
    last = g.reads;
  }
  uint64_t want_bytes = 0;
  for (int i = 0; i < CT_THREADS; i++) {
    void *rc;
    assert_int_equal(pthread_join(t[i], &rc), 0);
    assert_null(rc);
    want_bytes += a[i].bytes;
  }
  tern_io_global_stats(&g);
  assert_int_equal(g.reads, (uint64_t)CT_THREADS * CT_READS);
  assert_int_equal(g.bytes, want_bytes);
  tern_rfile_stats(shared, &st);
  assert_int_equal(st.reads, (uint64_t)CT_THREADS * CT_READS / 2);
  tern_rfile_stats(idle, &st);
  assert_int_equal(st.reads, 1);
  /* a file's reset leaves the totals alone; so does closing it */
  tern_rfile_reset_stats(shared);
  tern_rfile_stats(shared, &st);
  assert_int_equal(st.reads, 0);
  assert_int_equal(tern_rfile_read(shared, 10, 10, scratch, &out), TERN_OK);
  tern_rfile_close(idle);
  tern_io_global_stats(&g);
  assert_int_equal(g.reads, (uint64_t)CT_THREADS * CT_READS + 1);
  assert_int_equal(g.bytes, want_bytes + 10);
  tern_io_reset_global_stats();
  tern_io_global_stats(&g);
  assert_int_equal(g.reads, 0);
  tern_rfile_stats(shared, &st);
  assert_int_equal(st.reads, 1);
  tern_rfile_close(shared);
  tern_io_global_stats(&g);
  assert_int_equal(g.reads, 0);
  free(path);
  free(dir);
}

/* Pages that carry their own checksum in their last 4 bytes. */
enum { TRAIL_PAGES = 5, TRAIL_SHORT = 100, TRAIL_SEED = 5 };

/* The three ways a read can first touch a page: mapped with the first
 * touch by pread, mapped and faulted in, pread. */
static tern_rfile *open_trailed(const char *path, int how, uint64_t seed) {
  tern_io_set_first_touch_pread(how == 0);
  tern_rfile *f;
  assert_int_equal(tern_rfile_open(&f, path, how == 2 ? TERN_IO_PREAD : TERN_IO_MMAP), TERN_OK);
  assert_int_equal(tern_rfile_set_page_trailers(f, seed), TERN_OK);
  return f;
}

/* Reads page `p` whole and a range inside it: both TERN_OK and right, or
 * both TERN_ECORRUPT naming the file and the page. */
static int read_trailed_page(tern_rfile *f, const uint8_t *want, uint64_t p) {
  uint8_t scratch[4096];
  const uint8_t *got;
  int rc = tern_rfile_read(f, 4096 * p + 1000, 50, scratch, &got);
  if (rc == TERN_OK) assert_memory_equal(got, want + 4096 * p + 1000, 50);
  int whole = tern_rfile_read(f, 4096 * p, 4096, scratch, &got);
  if (rc == TERN_ECORRUPT) {
    char at[32];
    snprintf(at, sizeof at, "offset %llu", (unsigned long long)(4096 * p));
    assert_non_null(strstr(tern_errmsg(), "trail.bin"));
    assert_non_null(strstr(tern_errmsg(), at));
    assert_int_equal(tern_rfile_page_checked(f, 4096 * p), 0);
  } else {
    assert_int_equal(rc, TERN_OK);
    assert_memory_equal(got, want + 4096 * p, 4096);
    assert_int_equal(tern_rfile_page_checked(f, 4096 * p), 1);
  }
  assert_int_equal(whole, rc);
  return rc;
}

/* Every page as the writer left it (page `bad` excepted: TERN_ECORRUPT),
 * in the three ways; the short last page is read as it is (no trailer:
 * the frame footer covers it); verify's pass refuses a bad page. */
static void check_trailed(const char *path, const uint8_t *want, int bad) {
  for (int how = 0; how < 3; how++) {
    tern_rfile *f = open_trailed(path, how, TRAIL_SEED);
    for (uint64_t p = 0; p < TRAIL_PAGES; p++)
      assert_int_equal(read_trailed_page(f, want, p), (int)p == bad ? TERN_ECORRUPT : TERN_OK);
    uint8_t scratch[TRAIL_SHORT];
    const uint8_t *got;
    assert_int_equal(tern_rfile_read(f, 4096 * TRAIL_PAGES, TRAIL_SHORT, scratch, &got), TERN_OK);
    assert_memory_equal(got, want + 4096 * TRAIL_PAGES, TRAIL_SHORT);
    assert_int_equal(tern_rfile_check_pages(f), bad >= 0 ? TERN_ECORRUPT : TERN_OK);
    tern_rfile_close(f);
  }
  tern_io_set_first_touch_pread(1);
}

/* tern_wfile_append_page and tern_rfile_set_page_trailers: each whole page
 * ends with the XXH3 (low 32 bits) of its first 4092 bytes seeded with the
 * seed plus its number; a flipped byte in a page's data or in its trailer,
 * a page copied to another place and another seed all fail on first use,
 * in every mode. */
static void test_page_trailers(void **state) {
  (void)state;
  char *dir = tu_tmpdir("io");
  tu_rng r;
  tu_rng_init(&r, 11);
  size_t n = 4096 * TRAIL_PAGES + TRAIL_SHORT;
  uint8_t *want = malloc(n), *bad = malloc(n), page[4096];
  char *path = tu_path(dir, "trail.bin");
  tern_wfile *w;
  assert_int_equal(tern_wfile_create(&w, path), TERN_OK);
  for (uint64_t p = 0; p < TRAIL_PAGES; p++) {
    tu_fill(&r, page, sizeof page);
    assert_int_equal(tern_wfile_append_page(w, page, TRAIL_SEED), TERN_OK);
    memcpy(want + 4096 * p, page, 4096);
    uint32_t sum = (uint32_t)XXH3_64bits_withSeed(page, 4092, TRAIL_SEED + p);
    assert_int_equal(tern_load32(page + 4092), sum);
  }
  tu_fill(&r, want + 4096 * TRAIL_PAGES, TRAIL_SHORT);
  assert_int_equal(tern_wfile_append(w, want + 4096 * TRAIL_PAGES, TRAIL_SHORT), TERN_OK);
  assert_int_equal(tern_wfile_append_page(w, page, TRAIL_SEED), TERN_EINVAL); /* not at a page */
  assert_int_equal(tern_wfile_commit(w), TERN_OK);
  size_t len;
  uint8_t *disk = tu_read_file(path, &len);
  assert_int_equal(len, n);
  assert_memory_equal(disk, want, n);
  free(disk);
  check_trailed(path, want, -1);
  /* a flip in page 2's data, then in its trailer */
  for (int k = 0; k < 2; k++) {
    memcpy(bad, want, n);
    size_t at = 2 * 4096 + (k ? 4092 + tu_below(&r, 4) : tu_below(&r, 4092));
    bad[at] ^= (uint8_t)(1 + tu_below(&r, 255));
    tu_write_file(path, bad, n);
    check_trailed(path, bad, 2);
  }
  /* page 1 copied over page 3: its trailer is right for page 1 only */
  memcpy(bad, want, n);
  memcpy(bad + 3 * 4096, want + 4096, 4096);
  tu_write_file(path, bad, n);
  check_trailed(path, bad, 3);
  /* another seed (another segment or kind): page 0 fails */
  tu_write_file(path, want, n);
  tern_rfile *f = open_trailed(path, 2, TRAIL_SEED + 1);
  assert_int_equal(read_trailed_page(f, want, 0), TERN_ECORRUPT);
  tern_rfile_close(f);
  tern_io_set_first_touch_pread(1);
  assert_int_equal(tern_rfile_open(&f, path, TERN_IO_PREAD), TERN_OK);
  assert_int_equal(tern_rfile_set_page_sums(f, NULL, 1), TERN_EINVAL);
  tern_rfile_close(f);
  free(want);
  free(bad);
  free(path);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_touch_by_pread),
      cmocka_unit_test(test_read_mapped),
      cmocka_unit_test(test_counts_with_threads),
      cmocka_unit_test(test_page_trailers),
      cmocka_unit_test(test_reads_are_counted_in_both_modes),
      cmocka_unit_test(test_open_missing_reports_errno),
      cmocka_unit_test(test_open_whole_mapped),
      cmocka_unit_test(test_abort_leaves_nothing),
      cmocka_unit_test(test_every_byte_flip_detected),
      cmocka_unit_test(test_verify_file_detects_truncation_and_flips),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
