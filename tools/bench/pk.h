/* SPDX-License-Identifier: MIT */
/*
 * pk.h — what the files of `tern-bench pk` share: its options, the stores
 * and the rows of measurements.  pk.c: options, building, the run;
 * pk_measure.c: opening the stores, timed batches, the cold and warm
 * phases; pk_report.c: the CSV, Markdown and plot outputs.
 */
#ifndef TERN_BENCH_PK_H
#define TERN_BENCH_PK_H

#include "tools/bench/bench_common.h"
#include "tools/bench/keys_common.h"
#include "tools/bench/lmdb_common.h"
#include "tools/bench/opts.h"

#include "tern.h"

#include <stddef.h>
#include <stdint.h>

typedef struct pk_opts {
  uint64_t docs;
  bench_key_spec spec;
  uint64_t values;   /* value bytes */
  bench_opt_u64 inl; /* --inline: tern's inline value limit */
  uint64_t map_size; /* tern's catalog map, 0: the default */
  uint64_t *lookups;
  size_t nlookups;
  uint64_t runs, segments, warm, seed;
  const char *parent, *out;
  int lmdb_readahead, keep;
  int evict;          /* bench_evict_method */
  const char *stores; /* comma-separated subset, NULL: all */
} pk_opts;

enum { STORE_TERN, STORE_LMDB };
enum { PHASE_COLD_PRESENT, PHASE_COLD_ABSENT, PHASE_WARM_PRESENT, PHASE_WARM_ABSENT, NPHASES };

typedef struct pk_store {
  const char *name;
  int kind;
  uint32_t threshold; /* tern */
  int pread;          /* tern: opened with TERN_PREAD (reads files built by tern-pulse1) */
  int nordahead;      /* lmdb */
  char dir[4096];
  /* open state */
  tern_index *idx;
  tern_snapshot *snap;
  bench_lmdb lmdb;
  /* build */
  double build_s, sort_s;
  uint64_t bytes, segments;
  uint64_t b_terms, b_index, b_postings, b_filter, b_values, b_segments;
  int built_here; /* 0: shares the files another store built */
} pk_store;

extern const char *const pk_phase_names[NPHASES];

/* The value size of this run (both stores copy the value out, as a
 * caller keeping it would), and the buffer the values go through. */
extern size_t pk_values;
extern uint8_t pk_vbuf[1u << 20];

typedef struct pk_row {
  size_t store;
  int phase, run;
  uint64_t n;
  double total_ms, open_ms;
  uint64_t reads, majflt, read_bytes, open_reads, open_read_bytes, resident;
  uint64_t verified, errors;
} pk_row;

typedef struct pk_rows {
  pk_row *v;
  size_t n, cap;
} pk_rows;

/* pk_measure.c: the cold phase (every store evicted before each batch;
 * the raw reads of `raw` into base) and the warm phase; 0 or -1. */
int pk_cold_phase(pk_store *stores, size_t ns, const bench_keys *present, const bench_keys *absent,
                  const pk_opts *o, pk_rows *rows, const char *raw, pk_rows *base);
int pk_warm_phase(pk_store *stores, size_t ns, const bench_keys *present, const bench_keys *absent,
                  const pk_opts *o, pk_rows *rows);
void pk_store_close(pk_store *s);

/* pk_report.c: the outputs; 0 or -errno. */
int pk_write_build_csv(const char *path, pk_store *stores, size_t nstores, const pk_opts *o);
int pk_write_results_csv(const char *path, const pk_rows *r, pk_store *stores, const pk_opts *o);
int pk_write_results_md(const char *path, const pk_rows *r, const pk_rows *base, const char *raw,
                        pk_store *stores, size_t ns, const pk_opts *o, const char *cmdline,
                        const char *workdir);
/* The gnuplot data and script; 1 when cold-lookups.png was drawn. */
int pk_write_plot(const char *out, const pk_rows *r, const pk_rows *base, pk_store *stores,
                  size_t ns, const pk_opts *o);

#endif
