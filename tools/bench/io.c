/* SPDX-License-Identifier: MIT */
/*
 * tern-bench io — why the file layer reads through a mapping: random 4 KiB
 * reads of one file, warm (all pages cached) and cold (evicted with
 * posix_fadvise DONTNEED before each run), through tern_rfile in mmap mode
 * and in pread mode, alternating the modes run by run.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/harness.h"
#include "tools/bench/opts.h"

#include "codec/io.h"
#include "codec/status.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IO_RUNS_MAX 99

typedef struct io_opts {
  uint64_t mb, cold, warm, runs;
  const char *dir;
} io_opts;

#define IO_OPT(field) offsetof(io_opts, field)
static const bench_opt k_io_opts[] = {
    BENCH_U64("mb", IO_OPT(mb), "N", "200", 1, 0, "MiB of the file read"),
    BENCH_U64("cold", IO_OPT(cold), "N", "3000", 1, 0, "cold reads per run"),
    BENCH_U64("warm", IO_OPT(warm), "N", "2000000", 1, 0, "warm reads per run"),
    BENCH_U64("runs", IO_OPT(runs), "R", "3", 1, IO_RUNS_MAX, "runs, modes alternating; medians"),
    BENCH_STR("dir", IO_OPT(dir), "DIR", "/var/tmp", "where the file is written"),
};

static const bench_cmd k_io_cmd = BENCH_CMD(
    "io", "[options]", "random 4 KiB reads through the file layer, mmap vs pread, warm and cold",
    k_io_opts, io_opts, NULL);

void tern_bench_io_usage(FILE *out) { bench_opts_usage(&k_io_cmd, out); }

static uint64_t xorshift(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

static int make_file(const char *path, size_t mb) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  uint8_t buf[1 << 16];
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < mb * 16; i++) {
    for (size_t j = 0; j < sizeof buf; j += 8) {
      uint64_t v = xorshift(&x);
      memcpy(buf + j, &v, 8);
    }
    if (fwrite(buf, 1, sizeof buf, f) != sizeof buf) {
      fclose(f);
      return -1;
    }
  }
  return fclose(f);
}

/* One timed pass; returns ns per read and sets bytes read from storage per read. */
static double pass(const char *path, tern_io_mode mode, uint64_t n, int cold, uint64_t seed,
                   double *bytes_per_read, uint64_t *sink) {
  if (cold) tern_io_evict_path(path);
  tern_rfile *f;
  if (tern_rfile_open(&f, path, mode) != TERN_OK) return -1;
  uint64_t pages = tern_rfile_size(f) / 4096;
  static uint8_t scratch[4096];
  const uint8_t *p;
  if (!cold)
    for (uint64_t i = 0; i < pages; i++)
      if (tern_rfile_read(f, i * 4096, 4096, scratch, &p) == TERN_OK) *sink += p[0];
  bench_io io0, io1;
  bench_io_take(&io0);
  double t0 = bench_now();
  uint64_t x = seed | 1;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = xorshift(&x);
    if (tern_rfile_read(f, (r % pages) * 4096, 4096, scratch, &p) == TERN_OK)
      *sink += p[(r >> 20) % 4096];
  }
  double el = bench_now() - t0;
  bench_io_take(&io1);
  *bytes_per_read = (double)(io1.read_bytes - io0.read_bytes) / (double)n;
  tern_rfile_close(f);
  return el * 1e9 / (double)n;
}

typedef struct io_run {
  const io_opts *o;
  const char *path;
  double cold_bytes[2][IO_RUNS_MAX];
  uint64_t sink;
} io_run;

/* ns per read of mode `m` (0 mmap, 1 pread); measure 0 cold, 1 warm. */
static double time_mode(void *ctx, size_t m, size_t warm, size_t round) {
  io_run *x = ctx;
  double b;
  if (warm)
    return pass(x->path, (tern_io_mode)m, x->o->warm, 0, 11 + (uint64_t)round, &b, &x->sink);
  return pass(x->path, (tern_io_mode)m, x->o->cold, 1, 7 + (uint64_t)round,
              &x->cold_bytes[m][round], &x->sink);
}

int tern_bench_io(int argc, char **argv) {
  io_opts o;
  int prc = bench_opts_parse(&k_io_cmd, &o, argc, argv);
  if (prc) return bench_opts_exit(prc);
  char path[4096];
  snprintf(path, sizeof path, "%s/tern-bench-io.%ld", o.dir, (long)getpid());
  if (make_file(path, (size_t)o.mb) != 0) {
    fprintf(stderr, "tern-bench io: %s: cannot write\n", path);
    return 2;
  }
  static io_run x;
  x.o = &o;
  x.path = path;
  bench_rounds r = {.contenders = 2, .measures = 2, .rounds = (size_t)o.runs};
  int rc = bench_rounds_run(&r, time_mode, NULL, &x);
  unlink(path);
  if (rc) {
    fprintf(stderr, "tern-bench io: %s: cannot read\n", path);
    bench_rounds_free(&r);
    return 1;
  }
  printf("random 4 KiB reads of a %llu MiB file, medians of %llu runs (checksum %llu)\n\n",
         (unsigned long long)o.mb, (unsigned long long)o.runs, (unsigned long long)(x.sink & 0xff));
  printf("| mode | cold µs/read | storage bytes/read (cold) | warm ns/read |\n|---|---|---|---|\n");
  const char *names[2] = {"mmap (MADV_RANDOM)", "pread (FADV_RANDOM)"};
  double cm[2], wm[2];
  for (size_t m = 0; m < 2; m++) {
    cm[m] = bench_rounds_median(&r, m, 0);
    wm[m] = bench_rounds_median(&r, m, 1);
    printf("| %s | %.1f | %.0f | %.0f |\n", names[m], cm[m] / 1000,
           bench_median(x.cold_bytes[m], (size_t)o.runs), wm[m]);
  }
  printf("\nratio mmap/pread: cold %.2f, warm %.3f\n", cm[0] / cm[1], wm[0] / wm[1]);
  bench_rounds_free(&r);
  return 0;
}
