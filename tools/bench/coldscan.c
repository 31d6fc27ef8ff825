/* SPDX-License-Identifier: MIT */
/*
 * coldscan.c — tern-bench cold-scan: a full scan through the public API
 * (a key cursor over every key, key and value read) in this process, cold
 * against warm against the sequential read of the files it covers, and
 * LMDB's cursor walk both ways, sides alternating, medians:
 *
 *   tern-cold   tern opened, every file evicted, then the scan timed
 *   tern-warm   the same with every file in the page cache (a fresh open:
 *               each page read once from the cache and checked, as cold)
 *   read-seq    the files the scan covers (every segment's .tim and .val),
 *               evicted, read in order with 1 MiB preads (the kernel's
 *               readahead on): the storage's sequential speed
 *   lmdb-cold   an LMDB cursor's MDB_FIRST/MDB_NEXT walk, data.mdb evicted
 *               (default readahead)
 *   lmdb-warm   the same, cached
 *
 * Each side reports its wall time, its CPU time (rusage, user + system:
 * where the wall time is CPU, the scan is CPU-bound and no read-ahead can
 * shorten it), and the MB it read from storage.  The stores: as
 * cold-batch's (--from, or built under --dir).  --reverse scans both
 * stores from the last key back (tern_cursor_last / prev, MDB_LAST /
 * MDB_PREV); the files are still read in order.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/coldbatch.h"
#include "tools/bench/harness.h"
#include "tools/bench/lmdb_common.h"
#include "tools/bench/opts.h"
#include "tools/bench/process.h"

#include "codec/io.h"
#include "tern.h"

#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int tern_bench_cold_scan(int argc, char **argv);
void tern_bench_cold_scan_usage(FILE *out);

#define CS_SIDES 5
#define CS_RUNS_MAX 50
static const char *const cs_name[CS_SIDES] = {"tern-cold", "tern-warm", "read-seq", "lmdb-cold",
                                              "lmdb-warm"};

typedef struct cs_opts {
  const char *from, *tern, *parent;
  bench_key_spec spec;
  uint64_t runs, docs, values, seed;
  int reverse;
} cs_opts;

#define CS_OPT(field) offsetof(cs_opts, field)
static const bench_opt k_cs_opts[] = {
    BENCH_STR("from", CS_OPT(from), "DIR", NULL,
              "stores kept by `tern-bench whole --keep` or built by cold-batch;\n"
              "without it they are built under --dir"),
    BENCH_U64("docs", CS_OPT(docs), "N", "2000000", 1, UINT32_MAX - 1, "keys of the stores built"),
    BENCH_CUSTOM("keys", CS_OPT(spec), bench_opt_key_spec, "SHAPE", "random",
                 "key shape of the stores built, as tern-bench pk"),
    BENCH_U64("values", CS_OPT(values), "BYTES", "4", 1, 1u << 20, "value size of the stores built"),
    BENCH_U64("seed", CS_OPT(seed), "S", "0x77686f6c65", 0, 0, "key seed of the stores built"),
    BENCH_STR("dir", CS_OPT(parent), "PATH", "/var/tmp",
              "where the stores are built: PATH/cold-batch-SHAPE-DOCS"),
    BENCH_U64("runs", CS_OPT(runs), "R", "3", 1, CS_RUNS_MAX, "runs, sides alternating; medians"),
    BENCH_STR("tern", CS_OPT(tern), "PATH", NULL, "the tern tool, to build (next to tern-bench)"),
    BENCH_FLAG("reverse", CS_OPT(reverse), 1, 0, "scan both stores from the last key back"),
};

static const bench_cmd k_cs_cmd =
    BENCH_CMD("cold-scan", "[--from DIR | --docs N --keys SHAPE --dir PATH] [options]",
              "a full scan cold vs warm vs reading its files", k_cs_opts, cs_opts, NULL);

void tern_bench_cold_scan_usage(FILE *out) { bench_opts_usage(&k_cs_cmd, out); }

typedef struct cs_run {
  char tdir[4200], ldir[4200];
  char files[16][4400]; /* the segments' .tim and .val */
  size_t nfiles;
  uint64_t keys;
  int reverse;
  double cpu[CS_SIDES][CS_RUNS_MAX], mb[CS_SIDES][CS_RUNS_MAX];
} cs_run;

static double cpu_now(double *inbytes) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  *inbytes = (double)ru.ru_inblock * 512.0;
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Every key and value through a cursor, backwards when `reverse`; the
 * keys seen, or -1. */
static int64_t tern_scan(tern_snapshot *s, int reverse) {
  tern_cursor *c;
  if (tern_cursor_open(&c, s, NULL) != TERN_OK) return -1;
  int64_t n = 0;
  uint64_t sum = 0;
  int rc;
  while ((rc = reverse ? tern_cursor_prev(c) : tern_cursor_next(c)) == TERN_OK) {
    tern_slice key, val;
    if (tern_cursor_key(c, &key) != TERN_OK || tern_cursor_value(c, &val) != TERN_OK) break;
    sum += key.len + val.len + (val.len ? ((const uint8_t *)val.data)[0] : 0);
    n++;
  }
  tern_cursor_close(c);
  if (rc != TERN_NOTFOUND) {
    fprintf(stderr, "cold-scan: %s\n", tern_errmsg());
    return -1;
  }
  return sum ? n : -1;
}

static int64_t lmdb_scan(bench_lmdb *l, int reverse) {
  MDB_cursor *c;
  if (mdb_cursor_open(l->txn, l->dbi, &c) != 0) return -1;
  MDB_val k, v;
  int64_t n = 0;
  uint64_t sum = 0;
  MDB_cursor_op start = reverse ? MDB_LAST : MDB_FIRST, step = reverse ? MDB_PREV : MDB_NEXT;
  for (int rc = mdb_cursor_get(c, &k, &v, start); rc == 0; rc = mdb_cursor_get(c, &k, &v, step)) {
    sum += k.mv_size + v.mv_size + ((const uint8_t *)v.mv_data)[0];
    n++;
  }
  mdb_cursor_close(c);
  return sum ? n : -1;
}

/* The files in order, 1 MiB at a time: the bytes read, or -1. */
static int64_t read_files(const cs_run *x) {
  static uint8_t buf[1u << 20];
  int64_t total = 0;
  for (size_t i = 0; i < x->nfiles; i++) {
    int fd = open(x->files[i], O_RDONLY);
    if (fd < 0) return -1;
    ssize_t got;
    while ((got = read(fd, buf, sizeof buf)) > 0) total += got;
    close(fd);
    if (got < 0) return -1;
  }
  return total;
}

/* One side's run: opened (not timed), evicted when cold, then timed. */
static double scan_side(void *ctx, size_t side, size_t m, size_t round) {
  cs_run *x = ctx;
  (void)m;
  tern_index *idx = NULL;
  tern_snapshot *s = NULL;
  bench_lmdb l;
  char msg[256];
  int rc = 0;
  if (side <= 1) rc = tern_open(&idx, x->tdir, TERN_RDONLY, NULL) || tern_snapshot_open(&s, idx);
  if (side >= 3) rc = bench_lmdb_open(&l, x->ldir, 0, msg, sizeof msg);
  if (rc) {
    fprintf(stderr, "cold-scan: %s: cannot open\n", cs_name[side]);
    return -1;
  }
  if (side == 0 || side == 2 || side == 3) {
    cb_evict_dir(x->tdir);
    cb_evict_dir(x->ldir);
  }
  double b0, b1, c0 = cpu_now(&b0), t0 = bench_now();
  int64_t got = side <= 1 ? tern_scan(s, x->reverse) : side == 2 ? read_files(x) : lmdb_scan(&l, x->reverse);
  double t = bench_now() - t0, c1 = cpu_now(&b1);
  if (s) tern_snapshot_close(s);
  if (idx) tern_close(idx);
  if (side >= 3) bench_lmdb_close(&l);
  if (got < 0 || (side != 2 && (uint64_t)got != x->keys)) {
    fprintf(stderr, "cold-scan: %s saw %lld keys, not %llu\n", cs_name[side], (long long)got,
            (unsigned long long)x->keys);
    return -1;
  }
  x->cpu[side][round] = c1 - c0;
  x->mb[side][round] = (b1 - b0) / 1e6;
  return t;
}

/* The segment files a scan reads, and the keys (a first, warming scan). */
static int cs_setup(cs_run *x, const char *from) {
  snprintf(x->tdir, sizeof x->tdir, "%s/tern", from);
  snprintf(x->ldir, sizeof x->ldir, "%s/lmdb", from);
  DIR *d = opendir(x->tdir);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL && x->nfiles < 16) {
    size_t l = strlen(e->d_name);
    if (l > 4 && (!strcmp(e->d_name + l - 4, ".tim") || !strcmp(e->d_name + l - 4, ".val")))
      snprintf(x->files[x->nfiles++], sizeof x->files[0], "%s/tern/%s", from, e->d_name);
  }
  if (d) closedir(d);
  tern_index *idx;
  tern_snapshot *s;
  if (tern_open(&idx, x->tdir, TERN_RDONLY, NULL) != TERN_OK) return -1;
  int64_t n = tern_snapshot_open(&s, idx) == TERN_OK ? tern_scan(s, 0) : -1;
  if (n >= 0) tern_snapshot_close(s);
  tern_close(idx);
  x->keys = (uint64_t)n;
  return n > 0 && x->nfiles ? 0 : -1;
}

static void print_scan(const cs_run *x, const bench_rounds *r, size_t runs) {
  printf("| side | wall s | CPU s (user + sys) | MB read |\n|---|---|---|---|\n");
  double med[CS_SIDES];
  for (size_t k = 0; k < CS_SIDES; k++) {
    double cpu[CS_RUNS_MAX], mb[CS_RUNS_MAX];
    memcpy(cpu, x->cpu[k], runs * sizeof *cpu);
    memcpy(mb, x->mb[k], runs * sizeof *mb);
    med[k] = bench_rounds_median(r, k, 0);
    printf("| %s | %.3f | %.3f | %.1f |\n", cs_name[k], med[k], bench_median(cpu, runs),
           bench_median(mb, runs));
  }
  printf("\ncold / warm %.2f; sequential read speed / cold scan speed (read-seq s / tern-cold s) "
         "%.2f; LMDB cold / tern cold %.2f\n",
         med[0] / med[1], med[2] / med[0], med[3] / med[0]);
}

int tern_bench_cold_scan(int argc, char **argv) {
  cs_opts o;
  int prc = bench_opts_parse(&k_cs_cmd, &o, argc, argv);
  if (prc) return bench_opts_exit(prc);
  static cs_run x;
  x.reverse = o.reverse;
  char from[4096], tern[4096];
  if (o.tern)
    snprintf(tern, sizeof tern, "%s", o.tern);
  else
    bench_default_tern(tern, sizeof tern);
  int rc = cb_store_dir(from, sizeof from, o.from, o.parent, &o.spec, o.docs, o.values, o.seed,
                        tern) != 0 || cs_setup(&x, from) != 0
               ? 1
               : 0;
  bench_rounds r = {.contenders = CS_SIDES, .measures = 1, .rounds = (size_t)o.runs};
  if (rc == 0) {
    bench_print_header(argc, argv);
    printf("# stores: %s, %llu keys; in this process, medians of %llu runs, sides alternating%s\n\n",
           from, (unsigned long long)x.keys, (unsigned long long)o.runs,
           x.reverse ? "; both scans backwards" : "");
    rc = bench_rounds_run(&r, scan_side, NULL, &x) != 0;
  }
  if (rc == 0) print_scan(&x, &r, (size_t)o.runs);
  bench_rounds_free(&r);
  bench_opts_free(&k_cs_cmd, &o);
  return rc;
}
