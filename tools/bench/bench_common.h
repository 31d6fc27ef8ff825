/* SPDX-License-Identifier: MIT */
/*
 * bench_common.h — what every tern-bench subcommand shares: a clock, a
 * seeded generator, the process's I/O counters (codec reads, major faults,
 * bytes fetched from storage), page-cache eviction and warming of a whole
 * directory, scratch directories, argument parsing, progress lines and
 * small statistics.
 *
 * Why these counters: a cold lookup's cost is the number of random reads
 * the device serves.  The codec counts its own logical reads
 * (tern_io_global_stats); the kernel reports what was actually fetched
 * (/proc/self/io read_bytes, which sees pread and page faults alike) and how
 * many faults waited for the disk (getrusage ru_majflt), which is the only
 * measure available for a memory-mapped store such as LMDB.
 */
#ifndef TERN_BENCH_COMMON_H
#define TERN_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Keeps a timed function from being inlined or specialised into its
 * timing loop (clang has no noipa; noinline is its nearest). */
#if defined(__clang__)
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

/* Seconds on the monotonic clock. */
double bench_now(void);

/* splitmix64: small, fast, and every seed gives a full-period stream. */
typedef struct bench_rng {
  uint64_t s;
} bench_rng;
void bench_rng_init(bench_rng *r, uint64_t seed);
uint64_t bench_rng_next(bench_rng *r);
/* Uniform in [0, n), n > 0, without modulo bias. */
uint64_t bench_rng_below(bench_rng *r, uint64_t n);
/* Uniform in [0, 1). */
double bench_rng_unit(bench_rng *r);
/* A bijection of 64-bit integers (the splitmix64 finalizer). */
uint64_t bench_mix64(uint64_t x);

/* A point in time of the I/O counters; differences are what a phase cost. */
typedef struct bench_io {
  uint64_t tern_reads; /* codec tern_rfile_read() calls */
  uint64_t tern_bytes; /* bytes those calls asked for */
  uint64_t majflt;     /* major page faults of the process */
  uint64_t read_bytes; /* /proc/self/io read_bytes */
} bench_io;
void bench_io_take(bench_io *out);
/* b - a, field by field. */
void bench_io_diff(const bench_io *a, const bench_io *b, bench_io *out);
/* 1 when /proc/self/io exists (task I/O accounting compiled in). */
int bench_proc_io_available(void);

/* How a directory's files are dropped from the page cache. */
typedef enum bench_evict_method {
  BENCH_EVICT_FADVISE = 0,    /* fdatasync + posix_fadvise(DONTNEED) on each file */
  BENCH_EVICT_DROP_CACHES = 1 /* sync + echo 1 > /proc/sys/vm/drop_caches (whole machine) */
} bench_evict_method;
const char *bench_evict_method_text(bench_evict_method m);
/* Evicts every regular file under `dir` (recursively).  *resident_pages is
 * what mincore(2) still sees resident afterwards (0 when eviction worked).
 * Returns 0 or -errno. */
int bench_evict_dir(const char *dir, bench_evict_method m, uint64_t *resident_pages);
/* Pages of the files under `dir` that mincore(2) sees resident. */
uint64_t bench_resident_pages(const char *dir);
/* Logs each file under `dir` that has resident pages, with the count. */
void bench_log_resident(const char *dir);
/* Reads every regular file under `dir` once, so the page cache holds it. */
int bench_warm_dir(const char *dir);
/* Sum of st_size of the regular files under `dir`. */
uint64_t bench_dir_bytes(const char *dir);
/* The path of the largest regular file under `dir` into out[cap]; 0, or
 * -ENOENT when there is none. */
int bench_largest_file(const char *dir, char *out, size_t cap);
/* st_size of a file, 0 when absent. */
uint64_t bench_file_bytes(const char *path);

/* The device's price of one random read: evicts `path`, then preads n
 * random 4 KiB-aligned pages of it (POSIX_FADV_RANDOM, so no read-ahead).
 * Sets *secs and *read_bytes; 0 or -errno. */
int bench_random_reads(const char *path, size_t n, uint64_t seed, double *secs,
                       uint64_t *read_bytes);

/* A fresh directory "<parent>/<tag>-XXXXXX" (malloc'd path), or NULL. */
char *bench_mkdtemp(const char *parent, const char *tag);
/* A fresh scratch directory "<parent>/tern-bench-<cmd>-XXXXXX" (malloc'd),
 * announced with the machine it runs on; NULL (the reason printed) when it
 * cannot be made. */
char *bench_scratch(const char *cmd, const char *parent);
/* Removes a directory tree; 0 or -errno. */
int bench_rmtree(const char *path);
/* mkdir -p; 0 or -errno. */
int bench_mkdirs(const char *path);
/* 1 when `path` lives on a memory file system (tmpfs, ramfs), where a
 * "cold" read never reaches a disk. */
int bench_is_memory_fs(const char *path);
/* The file system type of `path` as text ("ext4", "tmpfs", "xfs", ...). */
const char *bench_fs_name(const char *path);
/* The read-ahead of the block device holding `path` in KiB, or -1. */
long bench_readahead_kb(const char *path);
/* "path/name" into buf; returns buf, or NULL when it does not fit. */
char *bench_path(char *buf, size_t cap, const char *dir, const char *name);

/* Parsing of option values: plain integers with an optional k/M/G suffix
 * (powers of 1000), or 0x-prefixed hexadecimal ones (seeds).  0 on
 * success, -1 on a malformed value. */
int bench_parse_u64(const char *s, uint64_t *out);
int bench_parse_double(const char *s, double *out);
/* A comma-separated list of integers into a malloc'd array. */
int bench_parse_u64_list(const char *s, uint64_t **out, size_t *n);
int bench_parse_double_list(const char *s, double **out, size_t *n);

/* Progress of a long phase on stderr, only when stderr is a terminal, at
 * most a few times a second.  bench_progress_done() ends the line. */
void bench_progress(const char *what, uint64_t done, uint64_t total);
void bench_progress_done(void);
/* Prints to stderr (the log of what the benchmark is doing). */
void bench_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Median, minimum and maximum of v[0..n) (v is reordered). */
typedef struct bench_summary {
  double median, min, max;
  size_t n;
} bench_summary;
bench_summary bench_summarize(double *v, size_t n);

/* The machine, for the report: "2 CPUs, 23.4 GiB RAM, Linux 6.1.0". */
void bench_machine(char *buf, size_t cap);
/* The command line joined by spaces. */
void bench_cmdline(char *buf, size_t cap, int argc, char **argv, const char *prefix);

/* Running gnuplot: 1 when it is on PATH. */
int bench_have_program(const char *name);

#endif
