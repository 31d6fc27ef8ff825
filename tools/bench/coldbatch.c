/* SPDX-License-Identifier: MIT */
/*
 * coldbatch.c — tern-bench cold-batch: cold batches of N random present
 * keys, the page cache evicted (fdatasync + POSIX_FADV_DONTNEED of every
 * file of both stores) before each run.  In this process (each store
 * opened first, then evicted, then only the lookups timed:
 * coldbatch_inproc.c):
 *
 *   tern       tern_get_batch of the N keys (one batch)
 *   lmdb-ra    mdb_get per key, LMDB's default readahead
 *   lmdb-nora  the same with MDB_NORDAHEAD
 *   4k-d1      N random 4 KiB reads of the terms file (.tim), one at a time
 *              (pread): the device's own random-read time
 *   4k-d32     the same N reads with 32 in flight (the read queue, io_uring)
 *
 * and, unless --process 0, as a user runs them, fresh processes (exec,
 * loading, open included):
 *
 *   tern-proc       `tern get DIR/tern -` (chunks of 100,000 keys)
 *   lmdb-ra-proc    `tern-bench lmdb-get DIR/lmdb`
 *   lmdb-nora-proc  the same with --nordahead
 *
 * (4k-d1 only up to N = 10,000 and 4k-d32 up to 100,000: "-" above.)
 * Then, unless --warm 0, the same N warm (files cached): `tern get` vs
 * `lmdb-get`, whole processes.  Sides alternate within each run; figures
 * are medians over the runs, with what each read: MB from storage (rusage
 * ru_inblock) and the file layer's counted reads (tern, 4k-*) or major
 * faults (LMDB).  The stores: --from DIR kept by `tern-bench whole --keep`
 * (tern/, lmdb/, present.keys), or built here under --dir from --docs and
 * --keys (reused when there already).  The N keys are the first N lines of
 * present.keys (random, repeats past the set).
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/coldbatch.h"
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
#include <sys/stat.h>
#include <unistd.h>

int tern_bench_cold_batch(int argc, char **argv);
void tern_bench_cold_batch_usage(FILE *out);

#define CB_SIDES 8
#define CB_INPROC 5 /* sides 0..4 run in this process */
#define CB_RUNS_MAX 50
#define CB_NS_MAX 16
#define CB_D1_MAX 10000u /* 4k-d1 above this: minutes; not measured */
#define CB_D32_MAX 100000u
static const char *const side_name[CB_SIDES] = {"tern",      "lmdb-ra",      "lmdb-nora",
                                                "4k-d1",     "4k-d32",       "tern-proc",
                                                "lmdb-ra-proc", "lmdb-nora-proc"};

typedef struct cb_opts {
  const char *from, *tern, *parent;
  bench_key_spec spec;
  uint64_t *ns;
  size_t nns;
  uint64_t runs, docs, values, seed, process, warm;
} cb_opts;

static const char *cb_check(void *opts) {
  const cb_opts *o = opts;
  return o->nns > CB_NS_MAX ? "at most 16 batch sizes" : NULL;
}

#define CB_OPT(field) offsetof(cb_opts, field)
static const bench_opt k_cb_opts[] = {
    BENCH_STR("from", CB_OPT(from), "DIR", NULL,
              "a directory kept by `tern-bench whole --keep` (tern/, lmdb/,\n"
              "present.keys); without it the stores are built under --dir"),
    BENCH_U64("docs", CB_OPT(docs), "N", "2000000", 1, UINT32_MAX - 1,
              "keys of the stores built (without --from)"),
    BENCH_CUSTOM("keys", CB_OPT(spec), bench_opt_key_spec, "SHAPE", "random",
                 "key shape of the stores built, as tern-bench pk"),
    BENCH_U64("values", CB_OPT(values), "BYTES", "4", 1, 1u << 20, "value size of the stores built"),
    BENCH_U64("seed", CB_OPT(seed), "S", "0x77686f6c65", 0, 0, "key seed of the stores built"),
    BENCH_STR("dir", CB_OPT(parent), "PATH", "/var/tmp",
              "where the stores are built: PATH/cold-batch-SHAPE-DOCS"),
    BENCH_U64S("lookups", CB_OPT(ns), CB_OPT(nns), "LIST", "100,1000,10000,100000,1000000", 1,
               CB_KEYS_MAX, "batch sizes N"),
    BENCH_U64("runs", CB_OPT(runs), "R", "3", 1, CB_RUNS_MAX,
              "runs per N, sides alternating; medians"),
    BENCH_U64("process", CB_OPT(process), "0|1", "1", 0, 1,
              "also time whole processes (tern get, lmdb-get)"),
    BENCH_U64("warm", CB_OPT(warm), "0|1", "1", 0, 1, "also the warm whole-process table"),
    BENCH_STR("tern", CB_OPT(tern), "PATH", NULL, "the tern tool (next to tern-bench)"),
};

static const bench_cmd k_cb_cmd =
    BENCH_CMD("cold-batch", "[--from DIR | --docs N --keys SHAPE --dir PATH] [options]",
              "cold batches: tern vs LMDB vs the device", k_cb_opts, cb_opts, cb_check);

void tern_bench_cold_batch_usage(FILE *out) { bench_opts_usage(&k_cb_cmd, out); }

/* argv with stdin from `in`, output discarded: seconds, and the bytes it
 * read from storage; 0 when it exited 0 or 1 (some keys absent). */
static int run_counted(char *const *argv, const char *in, double *s, double *bytes) {
  int st = bench_run_process_io(argv, in, "/dev/null", s, bytes);
  return st == 0 || st == 1 ? 0 : -1;
}

/* The first n lines of src into dst. */
static int head_keys(const char *src, const char *dst, uint64_t n) {
  FILE *in = fopen(src, "r"), *out = fopen(dst, "w");
  int rc = in && out ? 0 : -1;
  char line[8192];
  for (uint64_t i = 0; !rc && i < n && fgets(line, sizeof line, in); i++) fputs(line, out);
  if (in) fclose(in);
  if (out && fclose(out) != 0) rc = -1;
  return rc;
}

/* The tools, the store's paths and the key files. */
typedef struct cb_env {
  char from[4096], tern[4096], self[4096], tdir[4200], ldir[4200], keys[4200], kn[4200],
      tim[8192];
  char *targv[5], *largv[4], *nargv[5];
  char *const *argvs[3]; /* tern get, lmdb-get, lmdb-get --nordahead */
} cb_env;

/* The largest .tim of the tern store: the device sides read it. */
static int find_tim(cb_env *e) {
  e->tim[0] = 0;
  DIR *d = opendir(e->tdir);
  struct dirent *de;
  uint64_t best = 0;
  while (d && (de = readdir(d)) != NULL) {
    size_t l = strlen(de->d_name);
    char p[8192];
    snprintf(p, sizeof p, "%s/%s", e->tdir, de->d_name);
    if (l > 4 && !strcmp(de->d_name + l - 4, ".tim") && bench_file_bytes(p) >= best) {
      best = bench_file_bytes(p);
      snprintf(e->tim, sizeof e->tim, "%s", p);
    }
  }
  if (d) closedir(d);
  if (e->tim[0]) return 0;
  fprintf(stderr, "cold-batch: no .tim in %s\n", e->tdir);
  return -1;
}

/* The paths under the stores' directory and the tools; 0, or -1. */
static int cb_env_init(cb_env *e, const cb_opts *o) {
  if (o->tern)
    snprintf(e->tern, sizeof e->tern, "%s", o->tern);
  else
    bench_default_tern(e->tern, sizeof e->tern);
  if (bench_self_exe(e->self, sizeof e->self) != 0 ||
      cb_store_dir(e->from, sizeof e->from, o->from, o->parent, &o->spec, o->docs, o->values,
                   o->seed, e->tern) != 0)
    return -1;
  snprintf(e->tdir, sizeof e->tdir, "%s/tern", e->from);
  snprintf(e->ldir, sizeof e->ldir, "%s/lmdb", e->from);
  snprintf(e->keys, sizeof e->keys, "%s/present.keys", e->from);
  snprintf(e->kn, sizeof e->kn, "%s/cold-batch.keys", e->from);
  if (find_tim(e) != 0) return -1;
  char *t[] = {e->tern, "get", e->tdir, "-", NULL}, *l[] = {e->self, "lmdb-get", e->ldir, NULL};
  char *n[] = {e->self, "lmdb-get", "--nordahead", e->ldir, NULL};
  memcpy(e->targv, t, sizeof t);
  memcpy(e->largv, l, sizeof l);
  memcpy(e->nargv, n, sizeof n);
  e->argvs[0] = e->targv, e->argvs[1] = e->largv, e->argvs[2] = e->nargv;
  return 0;
}

/* One batch size's rounds: what each side read, per round. */
typedef struct cb_run {
  const cb_env *e;
  const cb_opts *o;
  uint64_t n;
  cb_keys keys;
  double mb[CB_SIDES][CB_RUNS_MAX], reads[CB_SIDES][CB_RUNS_MAX], cpu[CB_SIDES][CB_RUNS_MAX];
} cb_run;

static int side_skipped(const cb_run *x, size_t side) {
  return (side == 3 && x->n > CB_D1_MAX) || (side == 4 && x->n > CB_D32_MAX) ||
         (side >= CB_INPROC && !x->o->process);
}

/* One in-process side's cold run. */
static int inproc_side(cb_run *x, size_t side, size_t round, cb_sample *s) {
  const cb_env *e = x->e;
  switch (side) {
  case 0: return cb_inproc_tern(e->tdir, e->ldir, &x->keys, s);
  case 1:
  case 2: return cb_inproc_lmdb(e->ldir, e->tdir, &x->keys, side == 2, s);
  default:
    cb_evict_dir(e->tdir);
    cb_evict_dir(e->ldir);
    return cb_device_reads(e->tim, x->n, side == 3 ? 1 : 32, 0xc01dull + round, s);
  }
}

/* Seconds of one side's cold batch (0: not measured), every file evicted
 * first. */
static double cold_side(void *ctx, size_t side, size_t m, size_t round) {
  cb_run *x = ctx;
  (void)m;
  cb_sample s = {0, 0, 0, 0};
  x->mb[side][round] = x->reads[side][round] = x->cpu[side][round] = 0;
  if (side_skipped(x, side)) return 0;
  int rc;
  if (side < CB_INPROC) {
    rc = inproc_side(x, side, round, &s);
  } else {
    cb_evict_dir(x->e->tdir);
    cb_evict_dir(x->e->ldir);
    double bytes = 0;
    rc = run_counted(x->e->argvs[side - CB_INPROC], x->e->kn, &s.s, &bytes);
    s.mb = bytes / 1e6;
  }
  if (rc != 0) {
    fprintf(stderr, "cold-batch: %s failed at N=%llu\n", side_name[side], (unsigned long long)x->n);
    return -1;
  }
  x->mb[side][round] = s.mb;
  x->reads[side][round] = s.reads;
  x->cpu[side][round] = s.cpu;
  return s.s;
}

/* Seconds of one whole-process side's batch with every file cached. */
static double warm_side(void *ctx, size_t side, size_t m, size_t round) {
  cb_run *x = ctx;
  (void)m, (void)round;
  double s = 0, bytes = 0;
  if (run_counted(x->e->argvs[side], x->e->kn, &s, &bytes) != 0) {
    fprintf(stderr, "cold-batch: warm %s failed at N=%llu\n", side_name[side + CB_INPROC],
            (unsigned long long)x->n);
    return -1;
  }
  return s;
}

/* Medians of one batch size, for the tables. */
typedef struct cb_row {
  uint64_t n;
  double s[CB_SIDES], mb[CB_SIDES], reads[CB_SIDES], cpu[CB_SIDES], warm[2];
} cb_row;

static void fmt_or_dash(char *buf, size_t cap, const char *fmt, double v) {
  if (v > 0)
    snprintf(buf, cap, fmt, v);
  else
    snprintf(buf, cap, "-");
}

static void print_inproc_row(const cb_row *w) {
  char d1[32], d32[64], r32[32];
  fmt_or_dash(d1, sizeof d1, "%.4f", w->s[3]);
  if (w->s[4] > 0)
    snprintf(d32, sizeof d32, "%.4f (CPU %.4f)", w->s[4], w->cpu[4]);
  else
    snprintf(d32, sizeof d32, "-");
  fmt_or_dash(r32, sizeof r32, "%.2f", w->s[4] > 0 ? w->s[0] / w->s[4] : 0);
  printf("| %llu | %.4f (%.0f reads, %.1f MB, CPU %.4f) | %.4f (%.0f faults, %.1f MB, CPU %.4f) | "
         "%.4f (%.0f faults, %.1f MB) | %s | %s | %s | %.2f | %.2f |\n",
         (unsigned long long)w->n, w->s[0], w->reads[0], w->mb[0], w->cpu[0], w->s[1], w->reads[1],
         w->mb[1], w->cpu[1], w->s[2], w->reads[2], w->mb[2], d1, d32, r32, w->s[0] / w->s[1],
         w->s[2] / w->s[0]);
  fflush(stdout);
}

/* The rows of batch size n: cold (and warm) runs, medians into *w. */
static int batch_row(const cb_env *e, const cb_opts *o, uint64_t n, cb_row *w) {
  static cb_run x;
  x.e = e, x.o = o, x.n = n;
  bench_rounds c = {.contenders = CB_SIDES, .measures = 1, .rounds = (size_t)o->runs};
  bench_rounds wr = {.contenders = 2, .measures = 1, .rounds = (size_t)o->runs};
  int rc = head_keys(e->keys, e->kn, n) != 0 || cb_keys_read(&x.keys, e->kn, n) != 0 ||
                   bench_rounds_run(&c, cold_side, NULL, &x) != 0
               ? -1
               : 0;
  /* Warm: the same processes with every file cached (a first run of each
   * side warms them), alternating. */
  if (rc == 0 && o->warm &&
      (warm_side(&x, 0, 0, 0) < 0 || warm_side(&x, 1, 0, 0) < 0 ||
       bench_rounds_run(&wr, warm_side, NULL, &x) != 0))
    rc = -1;
  if (rc == 0) {
    w->n = n;
    for (size_t k = 0; k < CB_SIDES; k++) {
      w->s[k] = bench_rounds_median(&c, k, 0);
      w->mb[k] = bench_median(x.mb[k], (size_t)o->runs);
      w->reads[k] = bench_median(x.reads[k], (size_t)o->runs);
      w->cpu[k] = bench_median(x.cpu[k], (size_t)o->runs);
    }
    w->warm[0] = o->warm ? bench_rounds_median(&wr, 0, 0) : 0;
    w->warm[1] = o->warm ? bench_rounds_median(&wr, 1, 0) : 0;
    print_inproc_row(w);
  }
  cb_keys_free(&x.keys);
  bench_rounds_free(&c);
  bench_rounds_free(&wr);
  return rc;
}

static void print_process_table(const cb_opts *o, const cb_row *rows) {
  printf("\nwhole processes (exec, loading, open included), cold, the same runs:\n\n"
         "| N | tern s (MB read) | LMDB readahead s (MB) | LMDB NORDAHEAD s (MB) | tern / depth 32 "
         "| tern / LMDB readahead | NORDAHEAD / tern |\n|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < o->nns; i++) {
    const cb_row *w = &rows[i];
    const double *s = w->s + CB_INPROC, *mb = w->mb + CB_INPROC;
    char r32[32];
    fmt_or_dash(r32, sizeof r32, "%.2f", w->s[4] > 0 ? s[0] / w->s[4] : 0);
    printf("| %llu | %.3f (%.1f) | %.3f (%.1f) | %.3f (%.1f) | %s | %.2f | %.2f |\n",
           (unsigned long long)w->n, s[0], mb[0], s[1], mb[1], s[2], mb[2], r32, s[0] / s[1],
           s[2] / s[0]);
  }
}

/* The tables, a row per batch size; 0 or 1. */
static int print_tables(const cb_env *e, const cb_opts *o) {
  printf("# stores: %s\n# in this process, cold: each store opened, every file evicted, then "
         "the lookups timed; medians of %llu runs, sides alternating\n\n",
         e->from, (unsigned long long)o->runs);
  printf("| N | tern s (reads, MB read, CPU s) | LMDB readahead s (major faults, MB, CPU s) | LMDB "
         "NORDAHEAD s (faults, MB) | 4 KiB reads depth 1 s | depth 32 s | tern / depth 32 | tern / LMDB "
         "readahead | NORDAHEAD / tern |\n|---|---|---|---|---|---|---|---|---|\n");
  static cb_row rows[CB_NS_MAX];
  for (size_t ni = 0; ni < o->nns; ni++)
    if (batch_row(e, o, o->ns[ni], &rows[ni]) != 0) return 1;
  if (o->process) print_process_table(o, rows);
  if (!o->warm) return 0;
  printf(
      "\nwarm (every file cached), whole processes, medians of %llu runs after one to warm:\n\n"
      "| N | tern s | LMDB (mdb_get per key) s | LMDB / tern |\n|---|---|---|---|\n",
      (unsigned long long)o->runs);
  for (size_t ni = 0; ni < o->nns; ni++)
    printf("| %llu | %.3f | %.3f | %.2f |\n", (unsigned long long)rows[ni].n, rows[ni].warm[0],
           rows[ni].warm[1], rows[ni].warm[1] / rows[ni].warm[0]);
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
