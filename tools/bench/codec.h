/* SPDX-License-Identifier: MIT */
/*
 * codec.h — what the two files of `tern-bench codec` share: the options,
 * the segment helpers (sizes, eviction, read counts) and part 2's results.
 * codec.c: options, part 1 (primary keys: build, warm and cold seeks vs
 * LMDB) and the run; codec_report.c: part 1's Markdown and CSV;
 * codec_zipf.c: part 2 (pulsing thresholds on a Zipf-distributed field).
 */
#ifndef TERN_BENCH_CODEC_H
#define TERN_BENCH_CODEC_H

#include "tools/bench/opts.h"

#include "codec/segment.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SEG_NAME "seg"
#define ZIPF_FIELD "tag"

typedef struct codec_opts {
  uint64_t docs, runs, warm, cold, seed, zipf_terms, zipf_docs, zipf_lookups;
  bench_opt_u64 zipf_docs_given; /* --zipf-docs, else zipf_docs = docs */
  double *zipf_s;
  size_t nzipf_s;
  uint64_t *thresholds;
  size_t nthresholds;
  const char *parent, *out;
  int keep, io_modes; /* bit 0: mmap, bit 1: pread */
  int checks_ab;      /* also warm present lookups without read-path checksums */
} codec_opts;

typedef struct seg_sizes {
  uint64_t tim, tix, doc, flt, val, all;
} seg_sizes;

/* The sizes of segment SEG_NAME's files in dir, and of the whole dir. */
seg_sizes sizes_of(const char *dir);
/* Drops the open segment's pages and confirms that none stayed resident;
 * 0 or -1 (logged). */
int evict_segment(tern_seg *s, const char *dir);
/* The codec's reads of the segment so far. */
uint64_t seg_reads(const tern_seg *s);
/* Logs a failed call: what, the status and tern_errmsg(). */
void log_tern(const char *what, int rc);

/* Part 1: one row of measurements, and all of them. */
typedef struct pk_result {
  const char *store; /* "tern-pulse1", ... */
  const char *io;
  int phase; /* 0 warm-present, 1 warm-absent, 2 cold-present, 3 cold-absent */
  int run;
  uint64_t n;
  double total_s;
  uint64_t reads, read_bytes, majflt, errors;
} pk_result;

typedef struct results {
  pk_result *v;
  size_t n, cap;
} results;
extern const char *const codec_pk_phases[4]; /* pk_result.phase's names */

/* Part 1: one tern store's segment as built. */
typedef struct pk_build {
  const char *store;
  char dir[4096];
  uint32_t threshold;
  double build_s;
  seg_sizes z;
  uint64_t pulsed, terms;
} pk_build;

/* Part 1's report (codec_report.c): the Markdown header and section, the
 * CSV file (0 or -errno). */
void codec_md_header(FILE *f, const codec_opts *o, const char *cmdline, const char *work);
void codec_md_pk(FILE *f, const codec_opts *o, pk_build *b, size_t nb, double lmdb_s,
                 uint64_t lmdb_bytes, const results *res);
int codec_pk_csv(const char *path, const results *res);

/* Part 2: the document frequency buckets of the cold term lookups. */
#define NBUCKETS 7

/* One (Zipf exponent, pulsing threshold) of part 2. */
typedef struct zipf_result {
  double s;
  uint32_t threshold;
  double build_s;
  seg_sizes z;
  uint64_t terms, pulsed;
  /* per run */
  double *us, *reads, *pages;
  uint64_t breads[NBUCKETS], bcount[NBUCKETS]; /* summed over runs */
  uint64_t errors;
} zipf_result;

/* Builds and measures every (s, threshold): *n results (free with
 * codec_zipf_free), or NULL on a failure (logged). */
zipf_result *codec_zipf_run(const codec_opts *o, const char *work, size_t *n);
void codec_zipf_free(zipf_result *zr);
/* The Markdown section and the CSV file (0 or -errno) of part 2. */
void codec_zipf_md(FILE *f, const codec_opts *o, zipf_result *zr, size_t nzr);
int codec_zipf_csv(const char *path, const codec_opts *o, zipf_result *zr, size_t nzr);

#endif
