/* SPDX-License-Identifier: MIT */
/*
 * harness.c — rotating rounds, medians and ratios, the report header (see
 * harness.h).
 */
#include "tools/bench/harness.h"

#include "tools/bench/bench_common.h"

#include <stdlib.h>
#include <string.h>

int bench_rounds_run(bench_rounds *r, bench_time_fn fn, bench_round_fn done, void *ctx) {
  size_t k = r->contenders;
  r->t = calloc(k * r->measures * r->rounds + 1, sizeof *r->t);
  if (!r->t) return -1;
  for (size_t round = 0; round < r->rounds; round++) {
    for (size_t m = 0; m < r->measures; m++)
      for (size_t j = 0; j < k; j++) {
        size_t who = (round + j) % k; /* rotate which goes first */
        double v = fn(ctx, who, m, round);
        if (v < 0) return -1;
        bench_rounds_of(r, who, m)[round] = v;
      }
    if (done) done(ctx, r, round);
  }
  return 0;
}

double *bench_rounds_of(const bench_rounds *r, size_t who, size_t m) {
  return r->t + (who * r->measures + m) * r->rounds;
}

double bench_rounds_median(const bench_rounds *r, size_t who, size_t m) {
  double *v = malloc((r->rounds + 1) * sizeof *v);
  if (!v) return 0;
  memcpy(v, bench_rounds_of(r, who, m), r->rounds * sizeof *v);
  double med = bench_median(v, r->rounds);
  free(v);
  return med;
}

bench_summary bench_rounds_ratios(const bench_rounds *r, size_t m, size_t a, size_t b) {
  bench_summary none = {0, 0, 0, 0};
  double *v = malloc((r->rounds + 1) * sizeof *v);
  if (!v) return none;
  const double *x = bench_rounds_of(r, a, m), *y = bench_rounds_of(r, b, m);
  for (size_t i = 0; i < r->rounds; i++)
    v[i] = x[i] / y[i];
  bench_summary q = bench_summarize(v, r->rounds);
  free(v);
  return q;
}

double bench_rounds_ratio(const bench_rounds *r, size_t m, size_t a, size_t b) {
  return bench_rounds_ratios(r, m, a, b).median;
}

static void print_row(const char *label, bench_summary q, const char *fmt) {
  printf("| %s | ", label);
  printf(fmt, q.median);
  printf(" | ");
  printf(fmt, q.min);
  printf(" | ");
  printf(fmt, q.max);
  printf(" |\n");
}

void bench_rounds_row(const bench_rounds *r, const char *label, size_t who, size_t m,
                      const char *fmt) {
  double *v = malloc((r->rounds + 1) * sizeof *v);
  if (!v) return;
  memcpy(v, bench_rounds_of(r, who, m), r->rounds * sizeof *v);
  print_row(label, bench_summarize(v, r->rounds), fmt);
  free(v);
}

void bench_rounds_ratio_row(const bench_rounds *r, const char *label, size_t m, size_t a,
                            size_t b) {
  print_row(label, bench_rounds_ratios(r, m, a, b), "%.2fx");
}

void bench_rounds_free(bench_rounds *r) {
  free(r->t);
  r->t = NULL;
}

double bench_median(double *v, size_t n) { return bench_summarize(v, n).median; }

void bench_print_header(int argc, char **argv) {
  char machine[256], cmd[1024];
  bench_machine(machine, sizeof machine);
  bench_cmdline(cmd, sizeof cmd, argc, argv, "tern-bench");
  printf("# %s\n# %s\n", cmd, machine);
}
