/* SPDX-License-Identifier: MIT */
/*
 * bench_common.c — clock, generator, I/O counters, eviction and the other
 * plumbing of tern-bench (see bench_common.h).
 *
 * Eviction is per file: fdatasync (dirty pages cannot be dropped) then
 * posix_fadvise(POSIX_FADV_DONTNEED).  It only drops pages nobody maps, so
 * the stores are closed before it runs; mincore(2) then confirms that no
 * page of the file is left resident, and the benchmark prints the count.
 */
#include "tools/bench/bench_common.h"

#include "codec/io.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------ generator */

uint64_t bench_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void bench_rng_init(bench_rng *r, uint64_t seed) { r->s = seed; }

uint64_t bench_rng_next(bench_rng *r) { return bench_mix64(r->s += 0x9E3779B97F4A7C15ull); }

uint64_t bench_rng_below(bench_rng *r, uint64_t n) {
  /* Reject the top partial copy of [0, n) so every value is equally likely. */
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do
    x = bench_rng_next(r);
  while (x >= limit);
  return x % n;
}

double bench_rng_unit(bench_rng *r) { return (double)(bench_rng_next(r) >> 11) * 0x1.0p-53; }

/* ------------------------------------------------------------ counters */

static uint64_t proc_read_bytes(void) {
  FILE *f = fopen("/proc/self/io", "r");
  if (!f) return 0;
  char line[128];
  uint64_t v = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "read_bytes:", 11) == 0) {
      v = strtoull(line + 11, NULL, 10);
      break;
    }
  }
  fclose(f);
  return v;
}

int bench_proc_io_available(void) { return access("/proc/self/io", R_OK) == 0; }

void bench_io_take(bench_io *out) {
  tern_io_stats s;
  tern_io_global_stats(&s);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  out->tern_reads = s.reads;
  out->tern_bytes = s.bytes;
  out->majflt = (uint64_t)ru.ru_majflt;
  out->read_bytes = proc_read_bytes();
}

void bench_io_diff(const bench_io *a, const bench_io *b, bench_io *out) {
  out->tern_reads = b->tern_reads - a->tern_reads;
  out->tern_bytes = b->tern_bytes - a->tern_bytes;
  out->majflt = b->majflt - a->majflt;
  out->read_bytes = b->read_bytes - a->read_bytes;
}

/* ------------------------------------------------------------ directories */

char *bench_path(char *buf, size_t cap, const char *dir, const char *name) {
  int n = snprintf(buf, cap, "%s/%s", dir, name);
  return n < 0 || (size_t)n >= cap ? NULL : buf;
}

typedef int (*file_visitor)(const char *path, const struct stat *st, void *arg);

/* Calls `fn` on every regular file under `dir`; stops at the first error. */
static int walk_files(const char *dir, file_visitor fn, void *arg) {
  DIR *d = opendir(dir);
  if (!d) return -errno;
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char path[4096];
    if (!bench_path(path, sizeof path, dir, e->d_name)) {
      rc = -ENAMETOOLONG;
      break;
    }
    struct stat st;
    if (lstat(path, &st) != 0) {
      if (errno == ENOENT) continue; /* removed meanwhile */
      rc = -errno;
    } else if (S_ISDIR(st.st_mode)) {
      rc = walk_files(path, fn, arg);
    } else if (S_ISREG(st.st_mode)) {
      rc = fn(path, &st, arg);
    }
  }
  closedir(d);
  return rc;
}

static uint64_t resident_pages_of(int fd, uint64_t size) {
  if (size == 0) return 0;
  void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return 0;
  long psz = sysconf(_SC_PAGESIZE);
  size_t pages = (size_t)((size + (uint64_t)psz - 1) / (uint64_t)psz);
  unsigned char *vec = malloc(pages);
  uint64_t resident = 0;
  if (vec && mincore(m, (size_t)size, vec) == 0)
    for (size_t i = 0; i < pages; i++)
      resident += vec[i] & 1u;
  free(vec);
  munmap(m, (size_t)size);
  return resident;
}

typedef struct evict_arg {
  bench_evict_method method;
  uint64_t resident;
} evict_arg;

static int evict_file(const char *path, const struct stat *st, void *arg) {
  evict_arg *ea = arg;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : -errno;
  int rc = 0;
  if (ea->method == BENCH_EVICT_FADVISE) {
    if (fdatasync(fd) != 0 && errno != EINVAL && errno != EROFS) rc = -errno;
    int e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (rc == 0 && e != 0) rc = -e;
  }
  ea->resident += resident_pages_of(fd, (uint64_t)st->st_size);
  close(fd);
  return rc;
}

static int drop_caches(void) {
  sync();
  int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n = write(fd, "1\n", 2);
  int rc = n == 2 ? 0 : -errno;
  close(fd);
  return rc;
}

const char *bench_evict_method_text(bench_evict_method m) {
  return m == BENCH_EVICT_DROP_CACHES
             ? "sync + `echo 1 > /proc/sys/vm/drop_caches` (the whole page cache)"
             : "fdatasync + posix_fadvise(POSIX_FADV_DONTNEED) on every file of the store";
}

int bench_evict_dir(const char *dir, bench_evict_method m, uint64_t *resident_pages) {
  if (m == BENCH_EVICT_DROP_CACHES) {
    int rc = drop_caches();
    if (rc) return rc;
  }
  evict_arg ea = {m, 0};
  int rc = walk_files(dir, evict_file, &ea);
  if (resident_pages) *resident_pages = ea.resident;
  return rc;
}

static int count_resident(const char *path, const struct stat *st, void *arg) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  *(uint64_t *)arg += resident_pages_of(fd, (uint64_t)st->st_size);
  close(fd);
  return 0;
}

uint64_t bench_resident_pages(const char *dir) {
  uint64_t n = 0;
  (void)walk_files(dir, count_resident, &n);
  return n;
}

static int log_resident(const char *path, const struct stat *st, void *arg) {
  (void)arg;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  uint64_t n = resident_pages_of(fd, (uint64_t)st->st_size);
  close(fd);
  if (n)
    bench_log("    %s: %llu of %llu pages resident", path, (unsigned long long)n,
              (unsigned long long)(((uint64_t)st->st_size + 4095) / 4096));
  return 0;
}

void bench_log_resident(const char *dir) { (void)walk_files(dir, log_resident, NULL); }

static int warm_file(const char *path, const struct stat *st, void *arg) {
  (void)st;
  (void)arg;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : -errno;
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  static char buf[1 << 20];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
  }
  int rc = n < 0 ? -errno : 0;
  close(fd);
  return rc;
}

int bench_warm_dir(const char *dir) { return walk_files(dir, warm_file, NULL); }

static int add_size(const char *path, const struct stat *st, void *arg) {
  (void)path;
  *(uint64_t *)arg += (uint64_t)st->st_size;
  return 0;
}

uint64_t bench_dir_bytes(const char *dir) {
  uint64_t total = 0;
  (void)walk_files(dir, add_size, &total);
  return total;
}

typedef struct largest_arg {
  char *out;
  size_t cap;
  uint64_t size;
  int found;
} largest_arg;

static int keep_largest(const char *path, const struct stat *st, void *arg) {
  largest_arg *a = arg;
  if (a->found && (uint64_t)st->st_size <= a->size) return 0;
  if (snprintf(a->out, a->cap, "%s", path) >= (int)a->cap) return -ENAMETOOLONG;
  a->size = (uint64_t)st->st_size;
  a->found = 1;
  return 0;
}

int bench_largest_file(const char *dir, char *out, size_t cap) {
  largest_arg a = {out, cap, 0, 0};
  int rc = walk_files(dir, keep_largest, &a);
  return rc ? rc : a.found ? 0 : -ENOENT;
}

int bench_random_reads(const char *path, size_t n, uint64_t seed, double *secs,
                       uint64_t *read_bytes) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct stat st;
  int rc = fstat(fd, &st) == 0 ? 0 : -errno;
  uint64_t pages = rc == 0 ? (uint64_t)st.st_size / 4096 : 0;
  if (rc == 0 && pages == 0) rc = -EINVAL;
  if (rc == 0 && fdatasync(fd) != 0 && errno != EINVAL) rc = -errno;
  if (rc == 0) {
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  }
  bench_rng r;
  bench_rng_init(&r, seed);
  static char buf[4096];
  uint64_t rb0 = proc_read_bytes();
  double t0 = bench_now();
  for (size_t i = 0; rc == 0 && i < n; i++) {
    off_t off = (off_t)(bench_rng_below(&r, pages) * 4096);
    if (pread(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf) rc = errno ? -errno : -EIO;
  }
  *secs = bench_now() - t0;
  *read_bytes = proc_read_bytes() - rb0;
  close(fd);
  return rc;
}

uint64_t bench_file_bytes(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

char *bench_mkdtemp(const char *parent, const char *tag) {
  if (bench_mkdirs(parent) != 0) return NULL;
  size_t n = strlen(parent) + strlen(tag) + 16;
  char *p = malloc(n);
  if (!p) return NULL;
  snprintf(p, n, "%s/%s-XXXXXX", parent, tag);
  if (!mkdtemp(p)) {
    free(p);
    return NULL;
  }
  return p;
}

char *bench_scratch(const char *cmd, const char *parent) {
  char tag[64];
  snprintf(tag, sizeof tag, "tern-bench-%s", cmd);
  char *dir = bench_mkdtemp(parent, tag);
  if (!dir) {
    bench_log("tern-bench %s: cannot create a scratch directory in %s: %s", cmd, parent,
              strerror(errno));
    return NULL;
  }
  char machine[256];
  bench_machine(machine, sizeof machine);
  bench_log("%s; scratch %s (%s)", machine, dir, bench_fs_name(dir));
  return dir;
}

int bench_rmtree(const char *path) {
  DIR *d = opendir(path);
  if (!d) return errno == ENOENT ? 0 : -errno;
  int rc = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char child[4096];
    if (!bench_path(child, sizeof child, path, e->d_name)) {
      rc = -ENAMETOOLONG;
      continue;
    }
    struct stat st;
    if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode)) {
      int r = bench_rmtree(child);
      if (r && !rc) rc = r;
    } else if (unlink(child) != 0 && errno != ENOENT && !rc) {
      rc = -errno;
    }
  }
  closedir(d);
  if (rmdir(path) != 0 && errno != ENOENT && !rc) rc = -errno;
  return rc;
}

int bench_mkdirs(const char *path) {
  char buf[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) return -EINVAL;
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char c = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -errno;
    buf[i] = c;
  }
  return 0;
}

#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif

int bench_is_memory_fs(const char *path) {
  struct statfs sf;
  if (statfs(path, &sf) != 0) return 0;
  unsigned long t = (unsigned long)sf.f_type;
  return t == TMPFS_MAGIC || t == RAMFS_MAGIC;
}

const char *bench_fs_name(const char *path) {
  struct statfs sf;
  if (statfs(path, &sf) != 0) return "unknown";
  switch ((unsigned long)sf.f_type) {
  case TMPFS_MAGIC: return "tmpfs";
  case EXT4_SUPER_MAGIC: return "ext2/3/4";
  case XFS_SUPER_MAGIC: return "xfs";
  case BTRFS_SUPER_MAGIC: return "btrfs";
  case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
  case RAMFS_MAGIC: return "ramfs";
  default: return "other";
  }
}

long bench_readahead_kb(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  char sys[256];
  /* A partition's queue lives in its parent disk's directory. */
  const char *fmts[] = {"/sys/dev/block/%u:%u/queue/read_ahead_kb",
                        "/sys/dev/block/%u:%u/../queue/read_ahead_kb"};
  for (size_t i = 0; i < 2; i++) {
    snprintf(sys, sizeof sys, fmts[i], major(st.st_dev), minor(st.st_dev));
    FILE *f = fopen(sys, "r");
    if (!f) continue;
    long v = -1;
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
    if (v >= 0) return v;
  }
  return -1;
}

/* ------------------------------------------------------------ parsing */

int bench_parse_u64(const char *s, uint64_t *out) {
  if (!s || !isdigit((unsigned char)*s)) return -1;
  errno = 0;
  char *end;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) { /* hexadecimal, no suffix */
    if (!isxdigit((unsigned char)s[2])) return -1;
    unsigned long long h = strtoull(s + 2, &end, 16);
    if (errno || *end != '\0') return -1;
    *out = (uint64_t)h;
    return 0;
  }
  unsigned long long v = strtoull(s, &end, 10);
  if (errno) return -1;
  uint64_t mult = 1;
  if (*end == 'k' || *end == 'K')
    mult = 1000, end++;
  else if (*end == 'm' || *end == 'M')
    mult = 1000000, end++;
  else if (*end == 'g' || *end == 'G')
    mult = 1000000000, end++;
  if (*end != '\0') return -1;
  if (v > UINT64_MAX / mult) return -1;
  *out = (uint64_t)v * mult;
  return 0;
}

int bench_parse_double(const char *s, double *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end != '\0' || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

/* Splits `s` at commas and parses each piece with `one` into elements of
 * `size` bytes. */
static int parse_list(const char *s, void **out, size_t *n, size_t size,
                      int (*one)(const char *, void *)) {
  *out = NULL;
  *n = 0;
  /* strtok_r would skip an empty element ("1,,2"): refuse it instead. */
  if (!s || !*s || *s == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,")) return -1;
  size_t cap = 1;
  for (const char *p = s; *p; p++)
    cap += *p == ',';
  unsigned char *arr = calloc(cap, size);
  char *copy = strdup(s);
  if (!arr || !copy) {
    free(arr);
    free(copy);
    return -1;
  }
  size_t k = 0;
  char *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (one(tok, arr + k * size) != 0) {
      free(arr);
      free(copy);
      return -1;
    }
    k++;
  }
  free(copy);
  if (k == 0) {
    free(arr);
    return -1;
  }
  *out = arr;
  *n = k;
  return 0;
}

static int one_u64(const char *s, void *out) { return bench_parse_u64(s, out); }
static int one_double(const char *s, void *out) { return bench_parse_double(s, out); }

int bench_parse_u64_list(const char *s, uint64_t **out, size_t *n) {
  void *p;
  int rc = parse_list(s, &p, n, sizeof(uint64_t), one_u64);
  *out = p;
  return rc;
}

int bench_parse_double_list(const char *s, double **out, size_t *n) {
  void *p;
  int rc = parse_list(s, &p, n, sizeof(double), one_double);
  *out = p;
  return rc;
}

/* ------------------------------------------------------------ output */

static double g_progress_last;
static int g_progress_open;

void bench_progress(const char *what, uint64_t done, uint64_t total) {
  static int tty = -1;
  if (tty < 0) tty = isatty(STDERR_FILENO);
  if (!tty) return;
  double now = bench_now();
  if (done < total && now - g_progress_last < 0.25) return;
  g_progress_last = now;
  fprintf(stderr, "\r  %s: %llu/%llu (%.0f%%)   ", what, (unsigned long long)done,
          (unsigned long long)total, total ? 100.0 * (double)done / (double)total : 100.0);
  fflush(stderr);
  g_progress_open = 1;
}

void bench_progress_done(void) {
  if (g_progress_open) {
    fputs("\r\033[K", stderr);
    g_progress_open = 0;
  }
}

void bench_log(const char *fmt, ...) {
  bench_progress_done();
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

bench_summary bench_summarize(double *v, size_t n) {
  bench_summary s = {0, 0, 0, n};
  if (n == 0) return s;
  qsort(v, n, sizeof *v, cmp_double);
  s.min = v[0];
  s.max = v[n - 1];
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return s;
}

void bench_machine(char *buf, size_t cap) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  struct utsname u;
  if (uname(&u) != 0) memset(&u, 0, sizeof u);
  snprintf(buf, cap, "%ld CPUs (nproc), %.1f GiB RAM, %s %s %s", cpus, mem / (1u << 30), u.sysname,
           u.release, u.machine);
}

void bench_cmdline(char *buf, size_t cap, int argc, char **argv, const char *prefix) {
  size_t used = 0;
  buf[0] = '\0';
  int n = snprintf(buf, cap, "%s", prefix);
  if (n > 0) used = (size_t)n < cap ? (size_t)n : cap - 1;
  for (int i = 0; i < argc && used + 1 < cap; i++) {
    n = snprintf(buf + used, cap - used, " %s", argv[i]);
    if (n < 0) break;
    used += (size_t)n < cap - used ? (size_t)n : cap - used - 1;
  }
}

int bench_have_program(const char *name) {
  const char *path = getenv("PATH");
  if (!path) return 0;
  char *copy = strdup(path), *save = NULL;
  int found = 0;
  for (char *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
    char full[4096];
    if (bench_path(full, sizeof full, *dir ? dir : ".", name) && access(full, X_OK) == 0) found = 1;
  }
  free(copy);
  return found;
}
