/* SPDX-License-Identifier: MIT */
/*
 * harness.h — the one timing and reporting harness of tern-bench: rounds
 * in which every contender (tern, LMDB, another variant) runs every
 * measure once, the contenders' order rotating from round to round so that
 * the machine's load and the cache's state hit all of them alike; medians
 * over the rounds; ratios as the median of the per-round ratios (one
 * slow round moves neither); and the header lines every report starts
 * with.
 *
 *   bench_rounds r = {.contenders = 2, .measures = 5, .rounds = 7};
 *   bench_rounds_run(&r, time_one, ctx);      // round -> measure -> contender
 *   bench_rounds_median(&r, who, m);          // seconds (or what fn returned)
 *   bench_rounds_ratio(&r, m, lmdb, tern);    // median of lmdb/tern per round
 */
#ifndef TERN_BENCH_HARNESS_H
#define TERN_BENCH_HARNESS_H

#include "tools/bench/bench_common.h"

#include <stddef.h>

typedef struct bench_rounds {
  size_t contenders, measures, rounds; /* set by the caller */
  double *t; /* [(who * measures + m) * rounds + round], allocated by run */
} bench_rounds;

/* One timing: the figure (seconds, ns per item: the caller's unit) of
 * contender `who` on measure `m` in `round`, or < 0 on a failure (which
 * stops the rounds). */
typedef double (*bench_time_fn)(void *ctx, size_t who, size_t m, size_t round);
/* Called after each round (a progress line); may be NULL. */
typedef void (*bench_round_fn)(void *ctx, const bench_rounds *r, size_t round);

/* Runs the rounds: in round i, for each measure, the contenders in the
 * order i, i+1, ... (mod contenders).  0, -1 on a failure or no memory. */
int bench_rounds_run(bench_rounds *r, bench_time_fn fn, bench_round_fn done, void *ctx);
/* The figures of one contender and measure, one per round. */
double *bench_rounds_of(const bench_rounds *r, size_t who, size_t m);
double bench_rounds_median(const bench_rounds *r, size_t who, size_t m);
/* The median over the rounds of t[a] / t[b] on measure m; with min and
 * max, bench_rounds_ratios. */
double bench_rounds_ratio(const bench_rounds *r, size_t m, size_t a, size_t b);
bench_summary bench_rounds_ratios(const bench_rounds *r, size_t m, size_t a, size_t b);
void bench_rounds_free(bench_rounds *r);

/* Markdown rows "| label | median | min | max |": the figures of contender
 * `who` on measure m, each printed with fmt ("%.0f", "%.2f"); and the
 * per-round ratios a / b ("1.23x"). */
void bench_rounds_row(const bench_rounds *r, const char *label, size_t who, size_t m,
                      const char *fmt);
void bench_rounds_ratio_row(const bench_rounds *r, const char *label, size_t m, size_t a, size_t b);

/* The median of v[0..n) (v is reordered); 0 when n is 0. */
double bench_median(double *v, size_t n);

/* The report's first lines: "# tern-bench <argv...>" and "# <machine>". */
void bench_print_header(int argc, char **argv);

#endif
