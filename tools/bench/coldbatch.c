/* SPDX-License-Identifier: MIT */
/*
 * coldbatch.c — tern-bench cold-batch: cold batches of N random present
 * keys as a user runs them, fresh processes with the page cache evicted
 * (fdatasync + POSIX_FADV_DONTNEED of every file of both stores) before
 * each run:
 *
 *   tern       `tern get DIR/tern -` (tern_get_batch, chunks of 100,000 keys)
 *   lmdb-ra    `tern-bench lmdb-get DIR/lmdb` (mdb_get per key, LMDB's default
 *              readahead)
 *   lmdb-nora  the same with MDB_NORDAHEAD
 *   4k-d1      N random 4 KiB reads of the terms file (.tim), one at a time
 *              (pread), in this process: the device's own random-read time
 *   4k-d32     the same N reads with 32 in flight (the read queue, io_uring)
 *
 * (4k-d1 only up to N = 10,000 and 4k-d32 up to 100,000: "-" above.)
 * Then the same N warm (files cached): `tern get` vs `lmdb-get`, the
 * whole-process batch against an mdb_get loop per key.
 * Sides alternate within each run; figures are medians over the runs, with
 * the bytes the process read from storage (rusage's ru_inblock, 512-byte
 * units; 4k-d*: the bytes asked).  The stores come from
 * `tern-bench whole --keep` (its tern/, lmdb/ and present.keys): the N keys
 * are the first N lines of present.keys (random, repeats past the set).
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/process.h"

#include "codec/io.h"
#include "tern.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int tern_bench_cold_batch(int argc, char **argv);
void tern_bench_cold_batch_usage(FILE *out);

#define CB_SIDES 5
#define CB_RUNS_MAX 50
#define CB_NS_MAX 16
#define CB_D1_MAX 10000u   /* 4k-d1 above this: minutes; not measured */
#define CB_D32_MAX 100000u
static const char *const side_name[CB_SIDES] = {"tern", "lmdb-ra", "lmdb-nora", "4k-d1", "4k-d32"};

void tern_bench_cold_batch_usage(FILE *out) {
  fprintf(out,
          "tern-bench cold-batch --from DIR [options]   cold batches: tern vs LMDB vs the device\n"
          "  --from DIR       a directory kept by `tern-bench whole --keep` (tern/, lmdb/,\n"
          "                   present.keys)\n"
          "  --lookups LIST   batch sizes N (100,1000,10000,100000,1000000)\n"
          "  --runs R         runs per N, sides alternating; medians (3)\n"
          "  --tern PATH      the tern tool (next to tern-bench)\n");
}

typedef struct cb_opts {
  const char *from, *tern;
  uint64_t ns[CB_NS_MAX];
  size_t nns;
  uint64_t runs;
} cb_opts;

static int parse_list(const char *s, cb_opts *o) {
  o->nns = 0;
  while (*s && o->nns < CB_NS_MAX) {
    char *end;
    uint64_t v = strtoull(s, &end, 10);
    if (end == s || v == 0) return -1;
    o->ns[o->nns++] = v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return -1;
  }
  return o->nns ? 0 : -1;
}

static int cb_parse(cb_opts *o, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  o->runs = 3;
  parse_list("100,1000,10000,100000,1000000", o);
  static const struct option lo[] = {{"from", 1, 0, 'f'}, {"lookups", 1, 0, 'l'}, {"runs", 1, 0, 'r'},
                                     {"tern", 1, 0, 't'}, {"help", 0, 0, 'h'},    {0, 0, 0, 0}};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (c) {
    case 'f': o->from = optarg; break;
    case 'l':
      if (parse_list(optarg, o)) return -1;
      break;
    case 'r': o->runs = strtoull(optarg, NULL, 10); break;
    case 't': o->tern = optarg; break;
    case 'h': tern_bench_cold_batch_usage(stdout); return 1;
    default: return -1;
    }
  }
  if (!o->from || o->runs < 1 || o->runs > CB_RUNS_MAX) {
    tern_bench_cold_batch_usage(stderr);
    return -1;
  }
  return 0;
}

/* Every file of dir out of the page cache. */
static void evict_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[4096];
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    int n = snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (n < 0 || (size_t)n >= sizeof p) continue; /* a path too long to be ours */
    (void)tern_io_evict_path(p);
  }
  closedir(d);
}

/* argv with stdin from `in`, output discarded: seconds, and the bytes it
 * read from storage. */
static int run_counted(char *const *argv, const char *in, double *s, double *bytes) {
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa) != 0) return -1;
  int rc = posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0) ||
           posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) ||
           posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  double t0 = bench_now();
  pid_t pid;
  if (rc == 0) rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int st;
  struct rusage ru;
  if (wait4(pid, &st, 0, &ru) < 0) return -1;
  *s = bench_now() - t0;
  *bytes = (double)ru.ru_inblock * 512.0;
  return WIFEXITED(st) && WEXITSTATUS(st) <= 1 ? 0 : -1;
}

/* n random 4 KiB pages of the file, read cold at `depth` in flight. */
static int device_reads(const char *path, uint64_t n, unsigned depth, uint64_t seed, double *s) {
  tern_rfile *f;
  if (tern_rfile_open(&f, path, TERN_IO_PREAD) != TERN_OK) return -1;
  uint64_t pages = tern_rfile_size(f) / TERN_IO_PAGE;
  bench_rng r;
  bench_rng_init(&r, seed);
  uint8_t *buf = malloc((size_t)depth * TERN_IO_PAGE);
  tern_rqueue *q = NULL;
  int rc = buf && pages ? 0 : -1;
  if (!rc && depth > 1) {
    tern_io_set_queue_kind(TERN_RQ_URING);
    rc = tern_rqueue_open(&q, depth) == TERN_OK ? 0 : -1;
  }
  double t0 = bench_now();
  for (uint64_t i = 0, done = 0; !rc && done < n;) {
    uint64_t off = (bench_rng_next(&r) % pages) * TERN_IO_PAGE;
    if (!q) {
      const uint8_t *p;
      rc = tern_rfile_read(f, off, TERN_IO_PAGE, buf, &p) == TERN_OK ? 0 : -1;
      i++, done++;
      continue;
    }
    if (i < n && tern_rqueue_inflight(q) < depth) {
      unsigned slot = (unsigned)(i % depth); /* free: the queue runs FIFO-ish, tags checked below */
      rc = tern_rqueue_submit(q, f, off, TERN_IO_PAGE, buf + (size_t)slot * TERN_IO_PAGE, slot) == TERN_OK ? 0 : -1;
      i++;
      if (i < n && tern_rqueue_inflight(q) < depth) continue;
    }
    uint64_t tag;
    if (tern_rqueue_wait(q, &tag) == TERN_OK) done++;
    else rc = -1;
  }
  *s = bench_now() - t0;
  tern_rqueue_close(q);
  tern_io_set_queue_kind(TERN_RQ_AUTO);
  free(buf);
  tern_rfile_close(f);
  return rc;
}

/* The first n lines of src into dst. */
static int head_keys(const char *src, const char *dst, uint64_t n) {
  FILE *in = fopen(src, "r"), *out = fopen(dst, "w");
  int rc = in && out ? 0 : -1;
  char line[4096];
  for (uint64_t i = 0; !rc && i < n && fgets(line, sizeof line, in); i++) fputs(line, out);
  if (in) fclose(in);
  if (out && fclose(out) != 0) rc = -1;
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int tern_bench_cold_batch(int argc, char **argv) {
  cb_opts o;
  int prc = cb_parse(&o, argc, argv);
  if (prc) return prc < 0 ? 2 : 0;
  char tern[4096], self[4096], tdir[4096], ldir[4096], keys[4096], kn[4096], tim[8192];
  if (o.tern) snprintf(tern, sizeof tern, "%s", o.tern);
  else bench_default_tern(tern, sizeof tern);
  ssize_t sn = readlink("/proc/self/exe", self, sizeof self - 1);
  if (sn <= 0) return 1;
  self[sn] = 0;
  snprintf(tdir, sizeof tdir, "%s/tern", o.from);
  snprintf(ldir, sizeof ldir, "%s/lmdb", o.from);
  snprintf(keys, sizeof keys, "%s/present.keys", o.from);
  snprintf(kn, sizeof kn, "%s/cold-batch.keys", o.from);
  tim[0] = 0;
  DIR *d = opendir(tdir);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l > 4 && !strcmp(e->d_name + l - 4, ".tim")) snprintf(tim, sizeof tim, "%s/%s", tdir, e->d_name);
  }
  if (d) closedir(d);
  if (!tim[0]) {
    fprintf(stderr, "cold-batch: no .tim in %s\n", tdir);
    return 1;
  }
  char cmd[1024], machine[256];
  bench_cmdline(cmd, sizeof cmd, argc, argv, "tern-bench");
  bench_machine(machine, sizeof machine);
  printf("# %s\n# %s\n# cold: files evicted before every run; medians of %llu runs, sides alternating\n\n",
         cmd, machine, (unsigned long long)o.runs);
  printf("| N | tern s (MB read) | LMDB readahead s (MB) | LMDB NORDAHEAD s (MB) | 4 KiB reads depth 1 s | "
         "depth 32 s | tern / depth 32 | tern / LMDB readahead | NORDAHEAD / tern |\n"
         "|---|---|---|---|---|---|---|---|---|\n");
  char *targv[] = {tern, "get", tdir, "-", NULL};
  char *largv[] = {self, "lmdb-get", ldir, NULL};
  char *nargv[] = {self, "lmdb-get", "--nordahead", ldir, NULL};
  char *const *argvs[3] = {targv, largv, nargv};
  static double warm[CB_NS_MAX][2];
  for (size_t ni = 0; ni < o.nns; ni++) {
    uint64_t n = o.ns[ni];
    if (head_keys(keys, kn, n) != 0) return 1;
    static double t[CB_SIDES][CB_RUNS_MAX], mb[CB_SIDES][CB_RUNS_MAX];
    for (uint64_t r = 0; r < o.runs; r++)
      for (int k = 0; k < CB_SIDES; k++) {
        int side = (int)((k + r) % CB_SIDES); /* alternate which goes first */
        evict_dir(tdir);
        evict_dir(ldir);
        double s = 0, b = 0;
        if ((side == 3 && n > CB_D1_MAX) || (side == 4 && n > CB_D32_MAX)) {
          t[side][r] = mb[side][r] = 0; /* too long to wait for: not measured */
          continue;
        }
        int rc = side < 3 ? run_counted(argvs[side], kn, &s, &b)
                          : device_reads(tim, n, side == 3 ? 1 : 32, 0xc01dull + r, &s);
        if (side >= 3) b = (double)n * TERN_IO_PAGE;
        if (rc != 0) {
          fprintf(stderr, "cold-batch: %s failed at N=%llu\n", side_name[side], (unsigned long long)n);
          return 1;
        }
        t[side][r] = s;
        mb[side][r] = b / 1e6;
      }
    double m[CB_SIDES], b[CB_SIDES];
    for (int k = 0; k < CB_SIDES; k++) {
      m[k] = median(t[k], (size_t)o.runs);
      b[k] = median(mb[k], (size_t)o.runs);
    }
    /* Warm: the same processes with every file cached (a first run of
     * each side warms them), alternating. */
    static double w[2][CB_RUNS_MAX];
    for (uint64_t r = 0; r <= o.runs; r++)
      for (int k = 0; k < 2; k++) {
        int side = (int)((k + r) % 2);
        double s = 0, bytes = 0;
        if (run_counted(argvs[side], kn, &s, &bytes) != 0) {
          fprintf(stderr, "cold-batch: warm %s failed at N=%llu\n", side_name[side], (unsigned long long)n);
          return 1;
        }
        if (r > 0) w[side][r - 1] = s;
      }
    warm[ni][0] = median(w[0], (size_t)o.runs);
    warm[ni][1] = median(w[1], (size_t)o.runs);
    char d1[32] = "-", d32[32] = "-", r32[32] = "-";
    if (m[3] > 0) snprintf(d1, sizeof d1, "%.3f", m[3]);
    if (m[4] > 0) snprintf(d32, sizeof d32, "%.3f", m[4]), snprintf(r32, sizeof r32, "%.2f", m[0] / m[4]);
    printf("| %llu | %.3f (%.1f) | %.3f (%.1f) | %.3f (%.1f) | %s | %s | %s | %.2f | %.2f |\n",
           (unsigned long long)n, m[0], b[0], m[1], b[1], m[2], b[2], d1, d32, r32, m[0] / m[1],
           m[2] / m[0]);
    fflush(stdout);
  }
  printf("\nwarm (every file cached), the same processes, medians of %llu runs after one to warm:\n\n"
         "| N | tern s | LMDB (mdb_get per key) s | LMDB / tern |\n|---|---|---|---|\n",
         (unsigned long long)o.runs);
  for (size_t ni = 0; ni < o.nns; ni++)
    printf("| %llu | %.3f | %.3f | %.2f |\n", (unsigned long long)o.ns[ni], warm[ni][0], warm[ni][1],
           warm[ni][1] / warm[ni][0]);
  unlink(kn);
  return 0;
}
