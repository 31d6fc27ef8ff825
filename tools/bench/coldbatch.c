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
#include "tools/bench/harness.h"
#include "tools/bench/opts.h"
#include "tools/bench/process.h"

#include "codec/io.h"
#include "tern.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int tern_bench_cold_batch(int argc, char **argv);
void tern_bench_cold_batch_usage(FILE *out);

#define CB_SIDES 5
#define CB_RUNS_MAX 50
#define CB_NS_MAX 16
#define CB_D1_MAX 10000u   /* 4k-d1 above this: minutes; not measured */
#define CB_D32_MAX 100000u
static const char *const side_name[CB_SIDES] = {"tern", "lmdb-ra", "lmdb-nora", "4k-d1", "4k-d32"};

typedef struct cb_opts {
  const char *from, *tern;
  uint64_t *ns;
  size_t nns;
  uint64_t runs;
} cb_opts;

static const char *cb_check(void *opts) {
  const cb_opts *o = opts;
  if (!o->from) return "--from DIR is required";
  return o->nns > CB_NS_MAX ? "at most 16 batch sizes" : NULL;
}

#define CB_OPT(field) offsetof(cb_opts, field)
static const bench_opt k_cb_opts[] = {
    BENCH_STR("from", CB_OPT(from), "DIR", NULL,
              "a directory kept by `tern-bench whole --keep` (tern/, lmdb/,\n"
              "present.keys)"),
    BENCH_U64S("lookups", CB_OPT(ns), CB_OPT(nns), "LIST", "100,1000,10000,100000,1000000", 1, 0,
               "batch sizes N"),
    BENCH_U64("runs", CB_OPT(runs), "R", "3", 1, CB_RUNS_MAX,
              "runs per N, sides alternating; medians"),
    BENCH_STR("tern", CB_OPT(tern), "PATH", NULL, "the tern tool (next to tern-bench)"),
};

static const bench_cmd k_cb_cmd =
    BENCH_CMD("cold-batch", "--from DIR [options]", "cold batches: tern vs LMDB vs the device",
              k_cb_opts, cb_opts, cb_check);

void tern_bench_cold_batch_usage(FILE *out) { bench_opts_usage(&k_cb_cmd, out); }

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
 * read from storage; 0 when it exited 0 or 1 (some keys absent). */
static int run_counted(char *const *argv, const char *in, double *s, double *bytes) {
  int st = bench_run_process_io(argv, in, "/dev/null", s, bytes);
  return st == 0 || st == 1 ? 0 : -1;
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

/* The tools, the store's paths and the key files. */
typedef struct cb_env {
  char tern[4096], self[4096], tdir[4096], ldir[4096], keys[4096], kn[4096], tim[8192];
  char *targv[5], *largv[4], *nargv[5];
  char *const *argvs[3]; /* tern get, lmdb-get, lmdb-get --nordahead */
} cb_env;

/* The paths under --from and the tools; 0, or -1 with a message. */
static int cb_env_init(cb_env *e, const cb_opts *o) {
  if (o->tern)
    snprintf(e->tern, sizeof e->tern, "%s", o->tern);
  else
    bench_default_tern(e->tern, sizeof e->tern);
  ssize_t sn = readlink("/proc/self/exe", e->self, sizeof e->self - 1);
  if (sn <= 0) return -1;
  e->self[sn] = 0;
  snprintf(e->tdir, sizeof e->tdir, "%s/tern", o->from);
  snprintf(e->ldir, sizeof e->ldir, "%s/lmdb", o->from);
  snprintf(e->keys, sizeof e->keys, "%s/present.keys", o->from);
  snprintf(e->kn, sizeof e->kn, "%s/cold-batch.keys", o->from);
  e->tim[0] = 0;
  DIR *d = opendir(e->tdir);
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    size_t l = strlen(de->d_name);
    if (l > 4 && !strcmp(de->d_name + l - 4, ".tim"))
      snprintf(e->tim, sizeof e->tim, "%s/%s", e->tdir, de->d_name);
  }
  if (d) closedir(d);
  if (!e->tim[0]) {
    fprintf(stderr, "cold-batch: no .tim in %s\n", e->tdir);
    return -1;
  }
  char *t[] = {e->tern, "get", e->tdir, "-", NULL}, *l[] = {e->self, "lmdb-get", e->ldir, NULL};
  char *n[] = {e->self, "lmdb-get", "--nordahead", e->ldir, NULL};
  memcpy(e->targv, t, sizeof t);
  memcpy(e->largv, l, sizeof l);
  memcpy(e->nargv, n, sizeof n);
  e->argvs[0] = e->targv, e->argvs[1] = e->largv, e->argvs[2] = e->nargv;
  return 0;
}

/* One batch size's rounds: the MB each side read, per round. */
typedef struct cb_run {
  const cb_env *e;
  uint64_t n;
  double mb[CB_SIDES][CB_RUNS_MAX];
} cb_run;

/* Seconds of one side's cold batch (0: too long to wait for, not
 * measured), every file evicted first. */
static double cold_side(void *ctx, size_t side, size_t m, size_t round) {
  cb_run *x = ctx;
  (void)m;
  evict_dir(x->e->tdir);
  evict_dir(x->e->ldir);
  double s = 0, b = 0;
  if ((side == 3 && x->n > CB_D1_MAX) || (side == 4 && x->n > CB_D32_MAX)) {
    x->mb[side][round] = 0;
    return 0;
  }
  int rc = side < 3 ? run_counted(x->e->argvs[side], x->e->kn, &s, &b)
                    : device_reads(x->e->tim, x->n, side == 3 ? 1 : 32, 0xc01dull + round, &s);
  if (side >= 3) b = (double)x->n * TERN_IO_PAGE;
  if (rc != 0) {
    fprintf(stderr, "cold-batch: %s failed at N=%llu\n", side_name[side], (unsigned long long)x->n);
    return -1;
  }
  x->mb[side][round] = b / 1e6;
  return s;
}

/* Seconds of one side's batch with every file cached. */
static double warm_side(void *ctx, size_t side, size_t m, size_t round) {
  cb_run *x = ctx;
  (void)m, (void)round;
  double s = 0, bytes = 0;
  if (run_counted(x->e->argvs[side], x->e->kn, &s, &bytes) != 0) {
    fprintf(stderr, "cold-batch: warm %s failed at N=%llu\n", side_name[side],
            (unsigned long long)x->n);
    return -1;
  }
  return s;
}

/* The cold row of batch size n, printed; the warm medians into warm[2]. */
static int batch_row(const cb_env *e, const cb_opts *o, uint64_t n, double warm[2]) {
  static cb_run x;
  x.e = e;
  x.n = n;
  bench_rounds c = {.contenders = CB_SIDES, .measures = 1, .rounds = (size_t)o->runs};
  bench_rounds w = {.contenders = 2, .measures = 1, .rounds = (size_t)o->runs};
  /* Warm: the same processes with every file cached (a first run of each
   * side warms them), alternating. */
  int rc = head_keys(e->keys, e->kn, n) != 0 || bench_rounds_run(&c, cold_side, NULL, &x) != 0 ||
                   warm_side(&x, 0, 0, 0) < 0 || warm_side(&x, 1, 0, 0) < 0 ||
                   bench_rounds_run(&w, warm_side, NULL, &x) != 0
               ? -1
               : 0;
  if (rc == 0) {
    double m[CB_SIDES], b[CB_SIDES];
    for (size_t k = 0; k < CB_SIDES; k++) {
      m[k] = bench_rounds_median(&c, k, 0);
      b[k] = bench_median(x.mb[k], (size_t)o->runs);
    }
    warm[0] = bench_rounds_median(&w, 0, 0);
    warm[1] = bench_rounds_median(&w, 1, 0);
    char d1[32] = "-", d32[32] = "-", r32[32] = "-";
    if (m[3] > 0) snprintf(d1, sizeof d1, "%.3f", m[3]);
    if (m[4] > 0) snprintf(d32, sizeof d32, "%.3f", m[4]), snprintf(r32, sizeof r32, "%.2f", m[0] / m[4]);
    printf("| %llu | %.3f (%.1f) | %.3f (%.1f) | %.3f (%.1f) | %s | %s | %s | %.2f | %.2f |\n",
           (unsigned long long)n, m[0], b[0], m[1], b[1], m[2], b[2], d1, d32, r32, m[0] / m[1],
           m[2] / m[0]);
    fflush(stdout);
  }
  bench_rounds_free(&c);
  bench_rounds_free(&w);
  return rc;
}

/* The cold table, a row per batch size, then the warm one; 0 or 1. */
static int print_tables(const cb_env *e, const cb_opts *o) {
  printf("# cold: files evicted before every run; medians of %llu runs, sides alternating\n\n",
         (unsigned long long)o->runs);
  printf("| N | tern s (MB read) | LMDB readahead s (MB) | LMDB NORDAHEAD s (MB) | 4 KiB reads "
         "depth 1 s | "
         "depth 32 s | tern / depth 32 | tern / LMDB readahead | NORDAHEAD / tern |\n"
         "|---|---|---|---|---|---|---|---|---|\n");
  static double warm[CB_NS_MAX][2];
  for (size_t ni = 0; ni < o->nns; ni++)
    if (batch_row(e, o, o->ns[ni], warm[ni]) != 0) return 1;
  printf(
      "\nwarm (every file cached), the same processes, medians of %llu runs after one to warm:\n\n"
      "| N | tern s | LMDB (mdb_get per key) s | LMDB / tern |\n|---|---|---|---|\n",
      (unsigned long long)o->runs);
  for (size_t ni = 0; ni < o->nns; ni++)
    printf("| %llu | %.3f | %.3f | %.2f |\n", (unsigned long long)o->ns[ni], warm[ni][0],
           warm[ni][1], warm[ni][1] / warm[ni][0]);
  return 0;
}

int tern_bench_cold_batch(int argc, char **argv) {
  cb_opts o;
  int prc = bench_opts_parse(&k_cb_cmd, &o, argc, argv);
  static cb_env e;
  int rc = prc ? bench_opts_exit(prc) : cb_env_init(&e, &o) != 0 ? 1 : 0;
  if (!prc && rc == 0) {
    bench_print_header(argc, argv);
    rc = print_tables(&e, &o);
    unlink(e.kn);
  }
  bench_opts_free(&k_cb_cmd, &o);
  return rc;
}
