/* SPDX-License-Identifier: MIT */
/*
 * tern-bench io — why the file layer reads through a mapping: random 4 KiB
 * reads of one file, warm (all pages cached) and cold (evicted with
 * posix_fadvise DONTNEED before each run), through tern_rfile in mmap mode
 * and in pread mode, alternating the modes run by run.
 */
#include "codec/io.h"
#include "codec/status.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void tern_bench_io_usage(FILE *out);
int tern_bench_io(int argc, char **argv);

void tern_bench_io_usage(FILE *out) {
  fprintf(out, "  io [--mb N] [--cold N] [--warm N] [--runs R] [--dir DIR]\n"
               "      random 4 KiB reads through the file layer, mmap vs pread, warm and cold\n"
               "      (defaults: 200 MiB file, 3000 cold reads, 2000000 warm reads, 3 runs, /var/tmp)\n");
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static unsigned long long proc_read_bytes(void) {
  FILE *f = fopen("/proc/self/io", "r");
  char line[256];
  unsigned long long v = 0;
  if (!f) return 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "read_bytes:", 11)) v = strtoull(line + 11, NULL, 10);
  fclose(f);
  return v;
}

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
static double pass(const char *path, tern_io_mode mode, long n, int cold, uint64_t seed,
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
  unsigned long long b0 = proc_read_bytes();
  double t0 = now_s();
  uint64_t x = seed | 1;
  for (long i = 0; i < n; i++) {
    uint64_t r = xorshift(&x);
    if (tern_rfile_read(f, (r % pages) * 4096, 4096, scratch, &p) == TERN_OK)
      *sink += p[(r >> 20) % 4096];
  }
  double el = now_s() - t0;
  *bytes_per_read = (double)(proc_read_bytes() - b0) / (double)n;
  tern_rfile_close(f);
  return el * 1e9 / (double)n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int tern_bench_io(int argc, char **argv) {
  size_t mb = 200;
  long cold_n = 3000, warm_n = 2000000;
  int runs = 3;
  const char *dir = "/var/tmp";
  /* Options come in pairs: NAME VALUE. */
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      printf("usage: tern-bench\n");
      tern_bench_io_usage(stdout);
      return 0;
    }
    if (!v) goto usage;
    if (!strcmp(a, "--mb")) mb = strtoul(v, NULL, 10);
    else if (!strcmp(a, "--cold")) cold_n = strtol(v, NULL, 10);
    else if (!strcmp(a, "--warm")) warm_n = strtol(v, NULL, 10);
    else if (!strcmp(a, "--runs")) runs = atoi(v);
    else if (!strcmp(a, "--dir")) dir = v;
    else goto usage;
  }
  if (mb < 1 || cold_n < 1 || warm_n < 1 || runs < 1 || runs > 99) goto usage;
  char path[4096];
  snprintf(path, sizeof path, "%s/tern-bench-io.%ld", dir, (long)getpid());
  if (make_file(path, mb) != 0) {
    fprintf(stderr, "tern-bench io: %s: cannot write\n", path);
    return 2;
  }
  double cold[2][99], warm[2][99], cold_bytes[2][99];
  uint64_t sink = 0;
  for (int r = 0; r < runs; r++)
    for (int k = 0; k < 2; k++) {
      int m = (k + r) % 2; /* alternate which mode goes first */
      double b;
      cold[m][r] = pass(path, (tern_io_mode)m, cold_n, 1, 7 + (uint64_t)r, &cold_bytes[m][r], &sink);
      warm[m][r] = pass(path, (tern_io_mode)m, warm_n, 0, 11 + (uint64_t)r, &b, &sink);
    }
  unlink(path);
  printf("random 4 KiB reads of a %zu MiB file, medians of %d runs (checksum %llu)\n\n", mb, runs,
         (unsigned long long)(sink & 0xff));
  printf("| mode | cold µs/read | storage bytes/read (cold) | warm ns/read |\n|---|---|---|---|\n");
  const char *names[2] = {"mmap (MADV_RANDOM)", "pread (FADV_RANDOM)"};
  double cm[2], wm[2];
  for (int m = 0; m < 2; m++) {
    cm[m] = median(cold[m], runs);
    wm[m] = median(warm[m], runs);
    printf("| %s | %.1f | %.0f | %.0f |\n", names[m], cm[m] / 1000, median(cold_bytes[m], runs), wm[m]);
  }
  printf("\nratio mmap/pread: cold %.2f, warm %.3f\n", cm[0] / cm[1], wm[0] / wm[1]);
  return 0;
usage:
  fprintf(stderr, "usage: tern-bench\n");
  tern_bench_io_usage(stderr);
  return 2;
}
