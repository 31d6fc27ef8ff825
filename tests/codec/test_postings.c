/* SPDX-License-Identifier: MIT */
/*
 * test_postings.c — the postings writers and iterator against reference
 * sorted arrays.  Terms are written through the pulsing and block writers
 * into a real framed .doc file (header, postings, footer, commit) and read
 * back in both I/O modes: next() over every doc, advance() to random
 * targets against a lower-bound reference, the read counts of small terms,
 * and corrupt or truncated files, which must fail with TERN_ECORRUPT (or
 * still yield df strictly ascending docs), never crash (run under ASan).
 */
#include "codec/frame.h"
#include "codec/postings.h"
#include "codec/status.h"
#include "tests/common/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DOC (UINT32_MAX - 1) /* the largest doc id */

typedef struct term {
  uint32_t *docs;
  uint32_t n;
  tern_term_meta meta;
} term;

static const tern_io_mode modes[] = {TERN_IO_MMAP, TERN_IO_PREAD};

/* ---------------------------------------------------------------- inputs */

enum profile { DENSE, MIXED, SPARSE, NPROFILES };

/* n strictly ascending doc ids: consecutive runs, small, medium and large
 * gaps; `at_end` shifts them so the last is MAX_DOC. */
static uint32_t *gen_docs(tu_rng *r, uint32_t n, enum profile p, int at_end) {
  uint32_t *d = malloc((size_t)n * sizeof *d);
  assert_non_null(d);
  const uint64_t room = (uint64_t)MAX_DOC / (n ? n : 1); /* largest gap keeping them in range */
  uint64_t doc = tu_below(r, p == DENSE ? 1000 : room);
  uint32_t run = 0;
  uint64_t span = 1;
  for (uint32_t i = 0; i < n; i++) {
    if (run == 0) {
      run = 1 + (uint32_t)tu_below(r, 300);
      static const uint64_t spans[] = {1, 16, 4096, 1u << 20};
      span = p == DENSE ? 1 : p == SPARSE ? room : spans[tu_below(r, 4)];
      if (span > room) span = room;
    }
    run--;
    if (i > 0) doc += 1 + tu_below(r, span);
    d[i] = (uint32_t)doc;
  }
  if (at_end && n) {
    uint32_t shift = MAX_DOC - d[n - 1];
    for (uint32_t i = 0; i < n; i++)
      d[i] += shift;
  }
  return d;
}

/* ---------------------------------------------------------------- files */

/* Writes the terms into a framed postings file at `path` through a pulsing
 * writer of `threshold`, filling each term's meta. */
static void write_terms(const char *path, term *t, size_t nterms, uint32_t threshold) {
  tern_wfile *w;
  tern_postings_writer *blocks, *pw;
  uint8_t segid[TERN_SEGID_SIZE] = {0};
  assert_int_equal(tern_wfile_create(&w, path), 0);
  assert_int_equal(tern_frame_write_header(w, TERN_KIND_POSTINGS, 1, segid), 0);
  assert_int_equal(tern_block_writer_new(&blocks, w), 0);
  assert_int_equal(tern_pulsing_writer_new(&pw, threshold, blocks), 0);
  for (size_t i = 0; i < nterms; i++) {
    uint64_t before = tern_wfile_offset(w);
    assert_int_equal(pw->write_term(pw, t[i].docs, t[i].n, &t[i].meta), 0);
    assert_int_equal(t[i].meta.df, t[i].n);
    if (t[i].n <= threshold) {
      assert_int_equal(t[i].meta.pulsed, 1);
      assert_ptr_equal(t[i].meta.docs, t[i].docs);
      assert_int_equal(tern_wfile_offset(w), before);
    } else {
      assert_int_equal(t[i].meta.pulsed, 0);
      assert_int_equal(t[i].meta.offset, before);
      assert_int_equal(t[i].meta.length, tern_wfile_offset(w) - before);
    }
  }
  assert_int_equal(pw->finish(pw), 0);
  pw->destroy(pw);
  assert_int_equal(tern_frame_write_footer(w), 0);
  assert_int_equal(tern_wfile_commit(w), 0);
}

static int start(tern_postings_iter *it, tern_rfile *f, const tern_term_meta *m) {
  return m->pulsed ? tern_postings_iter_inline(it, m->docs, m->df)
                   : tern_postings_iter_file(it, f, m);
}

/* ---------------------------------------------------------------- checks */

static void check_next(tern_rfile *f, const term *t) {
  tern_postings_iter it;
  assert_int_equal(start(&it, f, &t->meta), 0);
  assert_int_equal(tern_postings_iter_cost(&it), t->n);
  uint32_t doc;
  for (uint32_t i = 0; i < t->n; i++) {
    assert_int_equal(tern_postings_iter_next(&it, &doc), 0);
    if (doc != t->docs[i]) fail_msg("doc %u of %u: got %u, want %u", i, t->n, doc, t->docs[i]);
  }
  assert_int_equal(tern_postings_iter_next(&it, &doc), 0);
  assert_int_equal(doc, TERN_DOC_END);
  assert_int_equal(tern_postings_iter_next(&it, &doc), 0);
  assert_int_equal(doc, TERN_DOC_END);
  tern_postings_iter_release(&it);
}

/* Index of the first doc >= target in docs[from, n). */
static uint32_t lower_bound(const uint32_t *docs, uint32_t from, uint32_t n, uint32_t target) {
  uint32_t lo = from, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (docs[mid] < target)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* A target near the current doc, a doc ahead, or anywhere. */
static uint32_t pick_target(tu_rng *r, const term *t, int64_t pos) {
  uint32_t cur = pos < 0 ? 0 : t->docs[pos];
  switch (tu_below(r, 6)) {
  case 0: return cur;                             /* not moving */
  case 1: return cur + (uint32_t)tu_below(r, 64); /* within a block */
  case 2: {                                       /* exactly a later doc */
    uint64_t i = (uint64_t)(pos + 1) + tu_below(r, 3 * TERN_POSTINGS_BLOCK);
    return i < t->n ? t->docs[i] : MAX_DOC;
  }
  case 3: { /* just after a later doc */
    uint64_t i = (uint64_t)(pos + 1) + tu_below(r, 1000);
    return i < t->n ? t->docs[i] + 1 : UINT32_MAX;
  }
  case 4: return (uint32_t)tu_below(r, (uint64_t)UINT32_MAX + 1); /* anywhere */
  default: {                                                      /* a skip of many blocks */
    uint64_t i = (uint64_t)(pos + 1) + tu_below(r, (t->n / 4) + 1);
    return i < t->n ? t->docs[i] - (uint32_t)tu_below(r, 2) : MAX_DOC;
  }
  }
}

/* Random next() and advance() calls against the reference position. */
static void check_advance(tu_rng *r, tern_rfile *f, const term *t, unsigned steps) {
  tern_postings_iter it;
  assert_int_equal(start(&it, f, &t->meta), 0);
  int64_t pos = -1; /* reference: index of the current doc */
  for (unsigned s = 0; s < steps && pos < (int64_t)t->n; s++) {
    uint32_t doc, want;
    if (tu_below(r, 4) == 0) {
      assert_int_equal(tern_postings_iter_next(&it, &doc), 0);
      pos++;
    } else {
      uint32_t target = pick_target(r, t, pos);
      assert_int_equal(tern_postings_iter_advance(&it, target, &doc), 0);
      if (pos < 0 || t->docs[pos] < target)
        pos = lower_bound(t->docs, (uint32_t)(pos + 1), t->n, target);
    }
    want = pos < (int64_t)t->n ? t->docs[pos] : TERN_DOC_END;
    if (doc != want) fail_msg("step %u: got %u, want %u (df %u)", s, doc, want, t->n);
  }
  tern_postings_iter_release(&it);
}

static void check_advance_past_end(tern_rfile *f, const term *t) {
  tern_postings_iter it;
  uint32_t doc;
  assert_int_equal(start(&it, f, &t->meta), 0);
  assert_int_equal(tern_postings_iter_advance(&it, t->docs[t->n - 1], &doc), 0);
  assert_int_equal(doc, t->docs[t->n - 1]);
  assert_int_equal(tern_postings_iter_next(&it, &doc), 0);
  assert_int_equal(doc, TERN_DOC_END);
  tern_postings_iter_release(&it);

  assert_int_equal(start(&it, f, &t->meta), 0);
  if (t->docs[t->n - 1] < MAX_DOC) {
    assert_int_equal(tern_postings_iter_advance(&it, t->docs[t->n - 1] + 1, &doc), 0);
    assert_int_equal(doc, TERN_DOC_END);
  }
  assert_int_equal(tern_postings_iter_advance(&it, TERN_DOC_END, &doc), 0);
  assert_int_equal(doc, TERN_DOC_END);
  assert_int_equal(tern_postings_iter_next(&it, &doc), 0);
  assert_int_equal(doc, TERN_DOC_END);
  tern_postings_iter_release(&it);
}

/* A term that fits the first read costs exactly one read, whatever is asked. */
static void check_reads(tern_rfile *f, const term *t) {
  if (t->meta.pulsed) return;
  tern_io_stats st;
  tern_postings_iter it;
  uint32_t doc;
  tern_rfile_reset_stats(f);
  assert_int_equal(tern_postings_iter_file(&it, f, &t->meta), 0);
  do
    assert_int_equal(tern_postings_iter_next(&it, &doc), 0);
  while (doc != TERN_DOC_END);
  tern_postings_iter_release(&it);
  tern_rfile_stats(f, &st);
  if (t->meta.length <= 4096) {
    assert_int_equal(st.reads, 1);
  } else { /* windows double up to 64 KiB: a bounded number of reads */
    assert_true(st.reads <= 4 + t->meta.length / 16384);
    assert_true(st.bytes <= t->meta.length + 8192);
  }
}

static void check_terms(tu_rng *r, const char *path, const term *t, size_t nterms) {
  for (size_t m = 0; m < 2; m++) {
    tern_rfile *f;
    assert_int_equal(tern_rfile_open(&f, path, modes[m]), 0);
    for (size_t i = 0; i < nterms; i++) {
      check_next(f, &t[i]);
      check_advance(r, f, &t[i], t[i].n < 2000 ? 400 : 3000);
      check_advance_past_end(f, &t[i]);
      check_reads(f, &t[i]);
      assert_int_equal(tern_postings_check(f, &t[i].meta, t[i].docs[t[i].n - 1] + 1), 0);
      if (!t[i].meta.pulsed)
        assert_int_equal(tern_postings_check(f, &t[i].meta, t[i].docs[t[i].n - 1]), TERN_ECORRUPT);
    }
    tern_rfile_close(f);
  }
}

static void free_terms(term *t, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(t[i].docs);
}

/* ---------------------------------------------------------------- tests */

static const uint32_t sizes[] = {1, 2, 127, 128, 129, 255, 256, 257, 1000, 100000};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void test_round_trip_sizes(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 10);
  char *dir = tu_tmpdir("postings");
  char *path = tu_path(dir, "a.doc");
  for (unsigned rep = 0; rep < tu_scale(); rep++) {
    for (int p = 0; p < NPROFILES; p++) {
      term t[2 * NSIZES];
      for (size_t i = 0; i < 2 * NSIZES; i++) {
        t[i].n = sizes[i % NSIZES];
        t[i].docs = gen_docs(&r, t[i].n, (enum profile)p, i >= NSIZES);
      }
      write_terms(path, t, 2 * NSIZES, 0);
      check_terms(&r, path, t, 2 * NSIZES);
      free_terms(t, 2 * NSIZES);
    }
  }
  free(path);
  free(dir);
}

/* A random mix of sizes in one file, each term at its own offset. */
static void test_round_trip_random(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 11);
  char *dir = tu_tmpdir("postings");
  char *path = tu_path(dir, "b.doc");
  enum { N = 60 };
  term t[N];
  for (size_t i = 0; i < N; i++) {
    t[i].n = 1 + (uint32_t)tu_below(&r, tu_below(&r, 3) ? 600 : 5000);
    t[i].docs = gen_docs(&r, t[i].n, (enum profile)tu_below(&r, NPROFILES), (int)tu_below(&r, 2));
  }
  write_terms(path, t, N, (uint32_t)tu_below(&r, TERN_PULSE_MAX + 1));
  check_terms(&r, path, t, N);
  free_terms(t, N);
  free(path);
  free(dir);
}

static void test_million(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 12);
  char *dir = tu_tmpdir("postings");
  char *path = tu_path(dir, "m.doc");
  term t[2];
  t[0].n = 1000000;
  t[0].docs = gen_docs(&r, t[0].n, MIXED, 0);
  t[1].n = 1000000;
  t[1].docs = gen_docs(&r, t[1].n, DENSE, 1);
  write_terms(path, t, 2, 8);
  check_terms(&r, path, t, 2);
  free_terms(t, 2);
  free(path);
  free(dir);
}

/* Ids at the extremes: 0, MAX_DOC, a gap of 2^32 - 2 (width 32). */
static void test_extremes(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 13);
  char *dir = tu_tmpdir("postings");
  char *path = tu_path(dir, "x.doc");
  term t[5];
  uint32_t two[] = {0, MAX_DOC};
  uint32_t one[] = {MAX_DOC};
  t[0].n = 2;
  t[1].n = 1;
  t[2].n = 128;
  t[3].n = 300;
  t[4].n = 1;
  for (int i = 0; i < 5; i++)
    t[i].docs = malloc(300 * sizeof(uint32_t));
  memcpy(t[0].docs, two, sizeof two);
  memcpy(t[1].docs, one, sizeof one);
  for (uint32_t i = 0; i < 127; i++)
    t[2].docs[i] = i;
  t[2].docs[127] = MAX_DOC;
  for (uint32_t i = 0; i < 300; i++)
    t[3].docs[i] = i < 129 ? i : MAX_DOC - 299 + i;
  t[4].docs[0] = 0;
  write_terms(path, t, 5, 0);
  check_terms(&r, path, t, 5);
  free_terms(t, 5);
  free(path);
  free(dir);
}

static void test_pulsing_thresholds(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 14);
  char *dir = tu_tmpdir("postings");
  char *path = tu_path(dir, "p.doc");
  static const uint32_t thresholds[] = {0, 1, 8, TERN_PULSE_MAX};
  static const uint32_t dfs[] = {1, 2, 7, 8, 9, 64, 65, 200};
  for (size_t k = 0; k < 4; k++) {
    term t[8];
    for (size_t i = 0; i < 8; i++) {
      t[i].n = dfs[i];
      t[i].docs = gen_docs(&r, t[i].n, MIXED, 0);
    }
    write_terms(path, t, 8, thresholds[k]); /* asserts pulsed iff df <= threshold */
    check_terms(&r, path, t, 8);
    free_terms(t, 8);
  }
  tern_postings_writer *blocks, *pw;
  assert_int_equal(tern_block_writer_new(&blocks, (tern_wfile *)1), 0);
  assert_int_equal(tern_pulsing_writer_new(&pw, TERN_PULSE_MAX + 1, blocks), TERN_EINVAL);
  free(path);
  free(dir);
}

static void test_writer_rejects(void **state) {
  (void)state;
  char *dir = tu_tmpdir("postings");
  char *path = tu_path(dir, "r.doc");
  tern_wfile *w;
  tern_postings_writer *blocks, *pw;
  tern_term_meta m;
  assert_int_equal(tern_wfile_create(&w, path), 0);
  assert_int_equal(tern_block_writer_new(&blocks, w), 0);
  assert_int_equal(tern_pulsing_writer_new(&pw, 4, blocks), 0);
  uint32_t dup[] = {1, 5, 5}, down[300], reserved[] = {3, UINT32_MAX};
  for (uint32_t i = 0; i < 300; i++)
    down[i] = 1000 - i;
  assert_int_equal(pw->write_term(pw, dup, 3, &m), TERN_EINVAL);    /* pulsed path */
  assert_int_equal(pw->write_term(pw, down, 300, &m), TERN_EINVAL); /* block path */
  assert_int_equal(pw->write_term(pw, reserved, 2, &m), TERN_EINVAL);
  assert_int_equal(blocks->write_term(blocks, reserved, 2, &m), TERN_EINVAL);
  assert_int_equal(blocks->write_term(blocks, dup, 0, &m), TERN_EINVAL);
  assert_int_equal(tern_wfile_offset(w), 0);
  pw->destroy(pw);
  tern_wfile_abort(w);

  tern_postings_iter it;
  uint32_t many[TERN_PULSE_MAX + 1] = {0};
  assert_int_equal(tern_postings_iter_inline(&it, many, TERN_PULSE_MAX + 1), TERN_ECORRUPT);
  assert_int_equal(tern_postings_iter_inline(&it, dup, 3), TERN_ECORRUPT);
  assert_int_equal(tern_postings_iter_inline(&it, many, 0), TERN_ECORRUPT);
  free(path);
  free(dir);
}

/* ---------------------------------------------------------------- corruption */

/* Iterates whatever the file says: an error must be TERN_ECORRUPT; success
 * must mean df strictly ascending docs. */
static void iterate_hostile(tu_rng *r, tern_rfile *f, const tern_term_meta *m) {
  tern_postings_iter it;
  int rc = tern_postings_iter_file(&it, f, m);
  if (rc != 0) {
    assert_int_equal(rc, TERN_ECORRUPT);
    assert_true(strlen(tern_errmsg()) > 0);
    return;
  }
  uint32_t doc, count = 0;
  int64_t prev = -1;
  for (;;) {
    rc = tu_below(r, 3) ? tern_postings_iter_next(&it, &doc)
                        : tern_postings_iter_advance(
                              &it, (uint32_t)(prev + 1 + (int64_t)tu_below(r, 5000)), &doc);
    if (rc != 0) {
      assert_int_equal(rc, TERN_ECORRUPT);
      assert_non_null(strstr(tern_errmsg(), tern_rfile_path(f)));
      break;
    }
    if (doc == TERN_DOC_END) {
      assert_true(count <= m->df);
      break;
    }
    assert_true((int64_t)doc > prev);
    prev = doc;
    count++;
  }
  tern_postings_iter_release(&it);
  rc = tern_postings_check(f, m, TERN_DOC_END);
  assert_true(rc == 0 || rc == TERN_ECORRUPT);
}

/* Flips bytes inside terms' postings (and their metas), and truncates. */
static void test_corruption(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 15);
  char *dir = tu_tmpdir("postings");
  char *path = tu_path(dir, "c.doc"), *bad = tu_path(dir, "bad.doc");
  enum { N = 6 };
  term t[N];
  static const uint32_t dfs[N] = {3, 127, 129, 300, 1000, 20000};
  for (size_t i = 0; i < N; i++) {
    t[i].n = dfs[i];
    t[i].docs = gen_docs(&r, t[i].n, (enum profile)(i % NPROFILES), 0);
  }
  write_terms(path, t, N, 0);
  size_t len;
  uint8_t *orig = tu_read_file(path, &len);
  uint8_t *copy = malloc(len);
  for (unsigned trial = 0; trial < 300 * tu_scale(); trial++) {
    const term *victim = &t[tu_below(&r, N)];
    tern_term_meta m = victim->meta;
    memcpy(copy, orig, len);
    size_t flips = 1 + tu_below(&r, 3);
    for (size_t k = 0; k < flips; k++) {
      /* mostly the head (header, skip data, first blocks), sometimes anywhere */
      uint64_t span = tu_below(&r, 2) ? (m.length < 64 ? m.length : 64) : m.length;
      copy[m.offset + tu_below(&r, span)] ^= (uint8_t)(1 + tu_below(&r, 255));
    }
    size_t newlen = len;
    if (tu_below(&r, 8) == 0) newlen = tu_below(&r, len);            /* truncated */
    if (tu_below(&r, 8) == 0) m.df += (uint32_t)tu_below(&r, 3) - 1; /* dictionary lies */
    if (tu_below(&r, 16) == 0) m.length += tu_below(&r, 3) - 1;
    if (tu_below(&r, 16) == 0) m.offset = tu_below(&r, len + 10);
    tu_write_file(bad, copy, newlen);
    for (size_t mo = 0; mo < 2; mo++) {
      tern_rfile *f;
      assert_int_equal(tern_rfile_open(&f, bad, modes[mo]), 0);
      iterate_hostile(&r, f, &m);
      tern_rfile_close(f);
    }
  }
  free(copy);
  free(orig);
  free_terms(t, N);
  free(bad);
  free(path);
  free(dir);
}

/* Hand-made terms, each wrong in one way the iterator must name. */
static void test_crafted(void **state) {
  (void)state;
  char *dir = tu_tmpdir("postings");
  char *path = tu_path(dir, "h.doc");
  /* {df, nblocks, skip_len?, ...}; body offsets start after the 32-byte header */
  static const struct {
    const char *why;
    uint8_t bytes[24];
    size_t len;
    uint32_t df;
    int both; /* also fails when the skip entries are only read to catch up */
  } cases[] = {
      {"valid tail", {2, 0, 5, 3}, 4, 2, 0},
      {"df mismatch", {3, 0, 5, 3}, 4, 2, 1},
      {"trailing byte", {2, 0, 5, 3, 0}, 5, 2, 1},
      {"tail overflow", {2, 0, 0xfe, 0xff, 0xff, 0xff, 0x0f, 1}, 8, 2, 1},
      {"bad varint", {2, 0, 0x80, 0x80}, 4, 2, 1},
      {"nblocks wrong", {2, 1, 5, 3}, 4, 2, 1},
      {"width 33", {0x80, 1, 1, 2, 0, 17, 33}, 7, 128, 1},
      {"skip len 0", {0x80, 1, 1, 0, 0, 0}, 6, 128, 1},
      {"block len lies", {0x80, 1, 1, 2, 0, 17, 0}, 7, 128, 0},
      {"last doc lies", {0x80, 1, 1, 2, 5, 1, 0}, 7, 128, 0},
      {"skip len odd", {0x80, 1, 1, 2, 0, 16, 0}, 7, 128, 0},
      {"valid block", {0x80, 1, 1, 2, 0, 1, 0}, 7, 128, 0},
      {"skip lags, lies", {0x80, 2, 2, 4, 0, 17, 0, 1, 0, 0}, 10, 256, 1},
      {"valid 2 blocks", {0x80, 2, 2, 4, 0, 1, 0, 1, 0, 0}, 10, 256, 0},
      {"valid block+tail", {0x81, 1, 1, 2, 0, 1, 0, 9}, 8, 129, 0},
  };
  const size_t ncases = sizeof cases / sizeof cases[0];
  tern_wfile *w;
  tern_term_meta m[16];
  assert_int_equal(tern_wfile_create(&w, path), 0);
  assert_int_equal(tern_frame_write_header(w, TERN_KIND_POSTINGS, 1, NULL), 0);
  for (size_t i = 0; i < ncases; i++) {
    m[i] =
        (tern_term_meta){.df = cases[i].df, .offset = tern_wfile_offset(w), .length = cases[i].len};
    assert_int_equal(tern_wfile_append(w, cases[i].bytes, cases[i].len), 0);
  }
  assert_int_equal(tern_frame_write_footer(w), 0);
  assert_int_equal(tern_wfile_commit(w), 0);
  for (size_t mo = 0; mo < 2; mo++) {
    tern_rfile *f;
    assert_int_equal(tern_rfile_open(&f, path, modes[mo]), 0);
    for (size_t i = 0; i < ncases; i++) {
      int want = strncmp(cases[i].why, "valid", 5) ? TERN_ECORRUPT : 0;
      int rc = tern_postings_check(f, &m[i], TERN_DOC_END);
      if (rc != want) fail_msg("%s: check %d, want %d", cases[i].why, rc, want);
      if (rc) assert_non_null(strstr(tern_errmsg(), "h.doc"));
      /* the iterator must fail too, in one of two ways through the term:
       * advance first (checks the first skip entry against its block), or
       * next first (the skip cursor then lags and must agree on catching up) */
      int fails = 0;
      for (int how = 0; how < 2; how++) {
        tern_postings_iter it;
        uint32_t doc = 0;
        rc = tern_postings_iter_file(&it, f, &m[i]);
        if (rc == 0) {
          rc = how ? tern_postings_iter_next(&it, &doc) : tern_postings_iter_advance(&it, 1, &doc);
          if (rc == 0 && doc != TERN_DOC_END) rc = tern_postings_iter_advance(&it, 200, &doc);
          while (rc == 0 && doc != TERN_DOC_END)
            rc = tern_postings_iter_next(&it, &doc);
          tern_postings_iter_release(&it);
        }
        assert_true(rc == 0 || rc == TERN_ECORRUPT);
        fails += rc != 0;
      }
      if (fails != (want ? 1 + cases[i].both : 0))
        fail_msg("%s: iterator failed %d times", cases[i].why, fails);
    }
    /* ranges outside the body */
    tern_term_meta out = m[0];
    out.offset = 10;
    assert_int_equal(tern_postings_check(f, &out, TERN_DOC_END), TERN_ECORRUPT);
    out.offset = tern_rfile_size(f) - 17;
    assert_int_equal(tern_postings_check(f, &out, TERN_DOC_END), TERN_ECORRUPT);
    out = m[0];
    out.length = UINT64_MAX;
    tern_postings_iter it;
    assert_int_equal(tern_postings_iter_file(&it, f, &out), TERN_ECORRUPT);
    out = m[0];
    out.pulsed = 1;
    assert_int_equal(tern_postings_iter_file(&it, f, &out), TERN_EINVAL);
    tern_rfile_close(f);
  }
  free(path);
  free(dir);
}

/* The bytes of docs/FORMAT.md's examples. */
static void test_format_bytes(void **state) {
  (void)state;
  char *dir = tu_tmpdir("postings");
  char *path = tu_path(dir, "f.doc");
  term t[3];
  uint32_t small[] = {5, 9, 10}, run[130], wide[128];
  for (uint32_t i = 0; i < 130; i++)
    run[i] = i;
  for (uint32_t i = 0; i < 128; i++)
    wide[i] = 1000 + 3 * i;
  t[0] = (term){.docs = small, .n = 3};
  t[1] = (term){.docs = run, .n = 130};
  t[2] = (term){.docs = wide, .n = 128};
  write_terms(path, t, 3, 0);
  size_t len;
  uint8_t *file = tu_read_file(path, &len);
  static const uint8_t want0[] = {0x03, 0x00, 0x05, 0x03, 0x00};
  static const uint8_t want1[] = {0x82, 0x01, 0x01, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00};
  /* last doc 1381 = -1 + 128 + 1254 (0xe6 0x09); gaps 1000, then 2s: width 10, 161 bytes */
  static const uint8_t want2[] = {0x80, 0x01, 0x01, 0x04, 0xe6, 0x09,
                                  0xa1, 0x01, 0x0a, 0xe8, 0x0b, 0x20};
  assert_int_equal(t[0].meta.offset, 32);
  assert_int_equal(t[0].meta.length, sizeof want0);
  assert_memory_equal(file + t[0].meta.offset, want0, sizeof want0);
  assert_int_equal(t[1].meta.length, sizeof want1);
  assert_memory_equal(file + t[1].meta.offset, want1, sizeof want1);
  assert_int_equal(t[2].meta.length, 4 + 4 + 161);
  assert_memory_equal(file + t[2].meta.offset, want2, sizeof want2);
  free(file);
  free(path);
  free(dir);
}

int main(void) {
  tu_seed();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_sizes),
      cmocka_unit_test(test_round_trip_random),
      cmocka_unit_test(test_million),
      cmocka_unit_test(test_extremes),
      cmocka_unit_test(test_pulsing_thresholds),
      cmocka_unit_test(test_writer_rejects),
      cmocka_unit_test(test_corruption),
      cmocka_unit_test(test_crafted),
      cmocka_unit_test(test_format_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
