/* SPDX-License-Identifier: MIT */
/*
 * open.c — tern-bench open: what a cold open costs, and cold lookups by
 * the way segments are read, tern against LMDB in the same run.
 *
 *   fresh   For each sampled key, every file of both stores evicted, then a
 *           forked child opens the store, gets the key and reports the open
 *           and get times, the codec's counted reads, the bytes the kernel
 *           fetched (/proc/self/io) and its major faults; then the same key
 *           through a fresh exec'd process each (`tern get DIR -` and
 *           `tern-bench lmdb-get DIR`, one key on stdin).  Present and
 *           absent keys, medians.  tern and LMDB `MDB_NORDAHEAD` take turns
 *           in a pass of their own, before the runs that read ahead
 *           (fresh_one).
 *   cold    N lookups of distinct present keys in one process after
 *           eviction (opened before evicting), per way of reading: mapped
 *           with the first touch of a page by pread (the default), mapped
 *           with every page faulted in, pread; LMDB without read-ahead; and
 *           one random 4 KiB pread of the terms file per lookup (the floor).
 *   warm    the same stores with every file cached: ns per lookup.
 *
 * Every answer is checked against the key's document.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/keys_common.h"
#include "tools/bench/lmdb_common.h"
#include "tools/bench/opts.h"
#include "tools/bench/process.h"

#include "codec/io.h"
#include "tern.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int tern_bench_open(int argc, char **argv);
void tern_bench_open_usage(FILE *out);

#define OPEN_SAMPLES_MAX 4096u

typedef struct open_opts {
  bench_key_spec spec;
  uint64_t docs, values, keys, runs, warm, seed;
  bench_opt_u64 inl; /* --inline */
  uint64_t *cold;
  size_t ncold;
  const char *parent, *tern, *at;
  int keep, phases; /* bit 0 fresh, 1 cold, 2 warm, 3 reopen */
} open_opts;

static const char *open_check(void *opts) {
  const open_opts *o = opts;
  return o->keys * o->runs > OPEN_SAMPLES_MAX ? "--samples x --runs must be <= 4096" : NULL;
}

#define OPEN_OPT(field) offsetof(open_opts, field)
static const bench_opt k_open_opts[] = {
    BENCH_U64("docs", OPEN_OPT(docs), "N", "10M", 2, UINT32_MAX - 1, "keys in each store"),
    BENCH_CUSTOM("keys", OPEN_OPT(spec), bench_opt_key_spec, "SHAPE", "random", "as tern-bench pk"),
    BENCH_U64("values", OPEN_OPT(values), "BYTES", "4", 4, 65536, "value size"),
    BENCH_U64_SET("inline", OPEN_OPT(inl), "BYTES", 0, TERN_INLINE_MAX,
                  "tern's inline value limit (the library's default)"),
    BENCH_U64("samples", OPEN_OPT(keys), "K", "15", 1, 0,
              "fresh processes per side, key kind and run"),
    BENCH_U64("runs", OPEN_OPT(runs), "R", "3", 1, 0, "rounds; medians over all samples"),
    BENCH_U64S("cold", OPEN_OPT(cold), OPEN_OPT(ncold), "LIST", "100,1000", 0, 0,
               "cold lookups per process, comma-separated"),
    BENCH_U64("warm", OPEN_OPT(warm), "M", "300000", 0, 0,
              "warm lookups per store and run (0: none)"),
    BENCH_STR("tern", OPEN_OPT(tern), "PATH", NULL, "the tern tool (next to tern-bench)"),
    BENCH_SCRATCH_DIR(OPEN_OPT(parent)),
    BENCH_U64("seed", OPEN_OPT(seed), "S", "0x6f70656e" /* "open" */, 0, 0, "key seed"),
    BENCH_FLAG("keep", OPEN_OPT(keep), 1, 0, "keep the scratch directory"),
    BENCH_STR("at", OPEN_OPT(at), "DIR", NULL, "build into DIR once and reuse it (same options!)"),
    BENCH_SET("phases", OPEN_OPT(phases), "LIST", "fresh|cold|warm|reopen",
              "fresh,cold,warm,reopen", "of fresh,cold,warm,reopen"),
};

static const bench_cmd k_open_cmd =
    BENCH_CMD("open", "[options]",
              "cold open + get in fresh processes, and cold/warm\n"
              "                            lookups by read mode, tern vs LMDB",
              k_open_opts, open_opts, open_check);

void tern_bench_open_usage(FILE *out) { bench_opts_usage(&k_open_cmd, out); }

/* ------------------------------------------------------------ the stores */

typedef struct open_env {
  const open_opts *o;
  bench_keys present, absent;
  char root[4096], tdir[4096], ldir[4096], tern[4096], self[4096], keyfile[4096];
  uint8_t *vbuf;
} open_env;

static int build_tern(open_env *e) {
  tern_options opts;
  tern_options_init(&opts);
  if (e->o->inl.set) opts.inline_value_max = (uint32_t)e->o->inl.v;
  tern_index *idx;
  int rc = tern_open(&idx, e->tdir, TERN_CREATE, &opts);
  if (rc != TERN_OK) return rc;
  tern_txn *txn;
  if ((rc = tern_txn_begin(&txn, idx, TERN_TXN_BULK)) == TERN_OK) {
    for (size_t i = 0; rc == TERN_OK && i < e->present.n; i++) {
      bench_value_fill(e->vbuf, (uint32_t)i, e->o->values);
      rc = tern_put(txn, bench_key_at(&e->present, i), bench_key_len(&e->present, i), e->vbuf,
                    e->o->values, NULL, 0);
      if ((i & 0xFFFF) == 0) bench_progress("tern", i, e->present.n);
    }
    bench_progress_done();
    if (rc == TERN_OK)
      rc = tern_commit(txn);
    else
      tern_abort(txn);
  }
  if (rc == TERN_OK) rc = tern_compact(idx);
  int crc = tern_close(idx);
  return rc != TERN_OK ? rc : crc;
}

static int open_build(open_env *e) {
  bench_log("building tern (%llu keys, %llu-byte values) in %s", (unsigned long long)e->present.n,
            (unsigned long long)e->o->values, e->tdir);
  int rc = build_tern(e);
  if (rc != TERN_OK) {
    bench_log("tern build: %s", tern_errmsg());
    return -1;
  }
  char msg[256];
  bench_log("building LMDB in %s", e->ldir);
  if (bench_keys_sort(&e->present) != 0 ||
      bench_lmdb_build_values(e->ldir, &e->present, e->o->values, msg, sizeof msg) != 0) {
    bench_log("LMDB build: %s", msg);
    return -1;
  }
  bench_log("bytes: tern %llu, LMDB %llu", (unsigned long long)bench_dir_bytes(e->tdir),
            (unsigned long long)bench_dir_bytes(e->ldir));
  return 0;
}

static int evict_both(const open_env *e) {
  uint64_t left = 0, l2 = 0;
  if (bench_evict_dir(e->tdir, BENCH_EVICT_FADVISE, &left) != 0 ||
      bench_evict_dir(e->ldir, BENCH_EVICT_FADVISE, &l2) != 0)
    return -1;
  if (left + l2) bench_log("  note: %llu pages still resident after eviction",
                           (unsigned long long)(left + l2));
  return 0;
}

/* ---------------------------------------------------- fresh processes */

enum { SIDE_TERN, SIDE_LMDB, SIDE_LMDB_RA, NSIDES };
static const char *const side_name[NSIDES] = {"tern", "lmdb-nordahead", "lmdb"};

typedef struct open_sample {
  double open_us, get_us;
  uint64_t reads, read_bytes, majflt;
  int status; /* 0 found, 1 not found, 2 error, 3 wrong value */
} open_sample;

static int check_doc(const open_env *e, const uint8_t *v, size_t len, uint32_t doc) {
  bench_value_fill(e->vbuf, doc, e->o->values);
  return len == e->o->values && memcmp(v, e->vbuf, len) == 0;
}

/* In the child: open `side`'s store, get the key, fill *s. */
static void child_measure(const open_env *e, int side, const uint8_t *key, size_t len,
                          uint32_t doc, open_sample *s) {
  bench_io a, b;
  bench_io_take(&a);
  double t0 = bench_now(), t1, t2;
  if (side == SIDE_TERN) {
    tern_index *idx = NULL;
    tern_snapshot *snap = NULL;
    size_t vlen = 0;
    int rc = tern_open(&idx, e->tdir, TERN_RDONLY, NULL);
    if (rc == TERN_OK) rc = tern_snapshot_open(&snap, idx);
    t1 = bench_now();
    if (rc == TERN_OK) rc = tern_get(snap, key, len, e->vbuf + 65536, 65536, &vlen);
    t2 = bench_now();
    s->status = rc == TERN_OK ? (check_doc(e, e->vbuf + 65536, vlen, doc) ? 0 : 3)
                : rc == TERN_NOTFOUND ? 1 : 2;
    tern_snapshot_close(snap);
    tern_close(idx);
  } else {
    bench_lmdb l;
    char msg[256];
    int rc = bench_lmdb_open(&l, e->ldir, side == SIDE_LMDB, msg, sizeof msg);
    t1 = bench_now();
    uint32_t got = 0;
    const uint8_t *v = NULL;
    size_t vlen = 0;
    int opened = rc == 0;
    if (opened) rc = bench_lmdb_get_value(&l, key, len, &got, &v, &vlen);
    t2 = bench_now();
    s->status = rc == 0 ? (check_doc(e, v, vlen, doc) ? 0 : 3) : rc == MDB_NOTFOUND ? 1 : 2;
    if (opened) bench_lmdb_close(&l);
  }
  bench_io_take(&b);
  bench_io_diff(&a, &b, &a);
  s->open_us = (t1 - t0) * 1e6;
  s->get_us = (t2 - t1) * 1e6;
  s->reads = a.tern_reads;
  s->read_bytes = a.read_bytes;
  s->majflt = a.majflt;
}

static int fork_measure(const open_env *e, int side, const uint8_t *key, size_t len, uint32_t doc,
                        open_sample *s) {
  int fd[2];
  if (pipe(fd) != 0) return -errno;
  pid_t pid = fork();
  if (pid < 0) return -errno;
  if (pid == 0) {
    close(fd[0]);
    open_sample r = {0};
    child_measure(e, side, key, len, doc, &r);
    _exit(write(fd[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
  }
  close(fd[1]);
  ssize_t n = read(fd[0], s, sizeof *s);
  close(fd[0]);
  int st;
  if (waitpid(pid, &st, 0) < 0 || n != (ssize_t)sizeof *s || !WIFEXITED(st) || WEXITSTATUS(st))
    return -EIO;
  return 0;
}

/* The whole tool, fresh: `tern get DIR -` or `tern-bench lmdb-get DIR`. */
static int exec_measure(open_env *e, int side, const uint8_t *key, size_t len, double *us) {
  FILE *f = fopen(e->keyfile, "w");
  if (!f) return -errno;
  fwrite(key, 1, len, f); /* the shapes' keys are printable, without TABs */
  putc('\n', f);
  if (fclose(f) != 0) return -errno;
  char *targv[] = {e->tern, "get", e->tdir, "-", NULL};
  char *largv[] = {e->self, "lmdb-get", e->ldir, NULL};
  double s = 0;
  int st = bench_run_process(side == SIDE_TERN ? targv : largv, e->keyfile, "/dev/null", &s);
  *us = s * 1e6;
  return st;
}

typedef struct fresh_tally {
  double open_us[NSIDES][OPEN_SAMPLES_MAX], get_us[NSIDES][OPEN_SAMPLES_MAX];
  double total_us[NSIDES][OPEN_SAMPLES_MAX], exec_us[NSIDES][OPEN_SAMPLES_MAX];
  double reads[NSIDES][OPEN_SAMPLES_MAX], kib[NSIDES][OPEN_SAMPLES_MAX];
  double majflt[NSIDES][OPEN_SAMPLES_MAX];
  size_t n, errors;
} fresh_tally;

/* One side's forked measurement into sample i of t. */
static int fresh_fork(open_env *e, fresh_tally *t, size_t i, int side, const uint8_t *key,
                      size_t len, uint32_t doc, int want) {
  open_sample s;
  if (evict_both(e) != 0 || fork_measure(e, side, key, len, doc, &s) != 0) return -1;
  if (s.status != want) t->errors++;
  t->open_us[side][i] = s.open_us;
  t->get_us[side][i] = s.get_us;
  t->total_us[side][i] = s.open_us + s.get_us;
  t->reads[side][i] = (double)s.reads;
  t->kib[side][i] = (double)s.read_bytes / 1024.0;
  t->majflt[side][i] = (double)s.majflt;
  return 0;
}

/* One side's whole-process measurement into sample i of t. */
static int fresh_exec(open_env *e, fresh_tally *t, size_t i, int side, const uint8_t *key,
                      size_t len, int want) {
  double us = 0;
  if (evict_both(e) != 0) return -1;
  int st = exec_measure(e, side, key, len, &us);
  if (st != want) t->errors++;
  t->exec_us[side][i] = us;
  return 0;
}

/* Sample i of one key, in two passes.  A process that follows LMDB's
 * read-ahead (16-25 MB read per get) opens slower, whichever store it
 * opens, for a second and more, its CPU time too (measured: the paired
 * ratio moved from 1.08-1.17x to 1.36-1.57x when each tern sample came
 * right after one, and LMDB's own open + get slowed alike when it came
 * first), while eviction and an idle device change nothing.  So pass 0
 * times the pair compared, tern and lmdb-nordahead, alone and in turns
 * (who goes first alternates); pass 1, run after every pass 0, the
 * read-ahead side and the whole processes (the two execs in turns). */
static int fresh_one(open_env *e, fresh_tally *t, int pass, size_t i, const uint8_t *key,
                     size_t len, uint32_t doc, int want) {
  int odd = (int)(i & 1);
  if (pass == 0)
    return fresh_fork(e, t, i, odd ? SIDE_LMDB : SIDE_TERN, key, len, doc, want) ||
           fresh_fork(e, t, i, odd ? SIDE_TERN : SIDE_LMDB, key, len, doc, want);
  /* the lmdb-get tool reads ahead (default flags): no exec of lmdb-nordahead */
  return fresh_fork(e, t, i, SIDE_LMDB_RA, key, len, doc, want) ||
         fresh_exec(e, t, i, odd ? SIDE_LMDB_RA : SIDE_TERN, key, len, want) ||
         fresh_exec(e, t, i, odd ? SIDE_TERN : SIDE_LMDB_RA, key, len, want);
}

static double med(double *v, size_t n) { return bench_summarize(v, n).median; }

/* The median over samples of side's open + get over lmdb-nordahead's for
 * the same key, measured one after the other: a machine whose load
 * drifts moves both, where the ratio of two medians can take them from
 * different moments. */
static double paired_ratio(const fresh_tally *t, int side) {
  double r[OPEN_SAMPLES_MAX];
  for (size_t i = 0; i < t->n; i++)
    r[i] = t->total_us[SIDE_LMDB][i] > 0 ? t->total_us[side][i] / t->total_us[SIDE_LMDB][i] : 0;
  return med(r, t->n);
}

static void fresh_report(const char *what, fresh_tally *t) {
  printf("\n### fresh process, cold, %s keys (%zu samples, medians; %zu errors)\n\n", what, t->n,
         t->errors);
  /* the pairs first: summarizing may sort the samples */
  double pt = paired_ratio(t, SIDE_TERN), pl = paired_ratio(t, SIDE_LMDB_RA);
  double mt = bench_summarize(t->total_us[SIDE_TERN], t->n).min;
  double ml = bench_summarize(t->total_us[SIDE_LMDB], t->n).min;
  printf("paired (median of per-key ratios to lmdb-nordahead's open + get): tern %.2f×, "
         "lmdb %.2f×; fastest open + get µs: tern %.1f, lmdb-nordahead %.1f\n\n",
         pt, pl, mt, ml);
  printf("| store | open µs | get µs | open + get µs | vs lmdb-nordahead | counted reads | KiB "
         "from storage | major faults | whole process µs | vs lmdb (exec) |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  double ref = med(t->total_us[SIDE_LMDB], t->n);
  double ref_exec = med(t->exec_us[SIDE_LMDB_RA], t->n);
  for (int side = 0; side < NSIDES; side++) {
    double tot = med(t->total_us[side], t->n);
    printf("| %s | %.1f | %.1f | %.1f | %.2f× | %.1f | %.1f | %.1f |", side_name[side],
           med(t->open_us[side], t->n), med(t->get_us[side], t->n), tot, tot / ref,
           med(t->reads[side], t->n), med(t->kib[side], t->n), med(t->majflt[side], t->n));
    if (side == SIDE_LMDB)
      printf(" – | – |\n");
    else {
      double ex = med(t->exec_us[side], t->n);
      printf(" %.0f | %.2f× |\n", ex, ex / ref_exec);
    }
  }
}

static int phase_fresh(open_env *e, bench_rng *r) {
  static fresh_tally tp, ta;
  size_t n = (size_t)(e->o->runs * e->o->keys);
  uint32_t *idx = malloc(n * sizeof *idx);
  if (!idx) return -1;
  for (uint64_t run = 0; run < e->o->runs; run++)
    if (bench_sample(r, e->present.n, e->o->keys, idx + run * e->o->keys) != 0) {
      free(idx);
      bench_log("fresh: sampling %llu of %zu keys failed", (unsigned long long)e->o->keys,
                e->present.n);
      return -1;
    }
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < n; i++) {
      uint32_t d = idx[i];
      size_t a = i % e->absent.n;
      if (fresh_one(e, &tp, pass, i, bench_key_at(&e->present, d), bench_key_len(&e->present, d), d,
                    0) ||
          fresh_one(e, &ta, pass, i, bench_key_at(&e->absent, a), bench_key_len(&e->absent, a), 0,
                    1)) {
        free(idx);
        bench_log("fresh: a measurement failed");
        return -1;
      }
      bench_progress("fresh", pass * n + i + 1, 2 * n);
    }
  tp.n = ta.n = n;
  bench_progress_done();
  free(idx);
  fresh_report("present", &tp);
  fresh_report("absent", &ta);
  return 0;
}

/* --------------------------------------------------- cold and warm lookups */

enum { MODE_MAP, MODE_MAP_FAULT, MODE_PREAD, MODE_LMDB, MODE_FLOOR, NMODES };
static const char *const mode_name[NMODES] = {
    "tern mapped, first touch by pread (default)", "tern mapped, pages faulted in",
    "tern TERN_PREAD", "lmdb-nordahead", "one random 4 KiB pread of .tim"};

typedef struct lookup_store {
  tern_index *idx;
  tern_snapshot *snap;
  bench_lmdb l;
} lookup_store;

static int store_open(open_env *e, int mode, lookup_store *s) {
  memset(s, 0, sizeof *s);
  if (mode == MODE_LMDB) {
    char msg[256];
    return bench_lmdb_open(&s->l, e->ldir, 1, msg, sizeof msg) ? -1 : 0;
  }
  tern_io_set_first_touch_pread(mode != MODE_MAP_FAULT);
  unsigned flags = TERN_RDONLY | (mode == MODE_PREAD ? TERN_PREAD : 0u);
  if (tern_open(&s->idx, e->tdir, flags, NULL) != TERN_OK ||
      tern_snapshot_open(&s->snap, s->idx) != TERN_OK)
    return -1;
  return 0;
}

static void store_close(int mode, lookup_store *s) {
  if (mode == MODE_LMDB) {
    bench_lmdb_close(&s->l);
    return;
  }
  tern_snapshot_close(s->snap);
  tern_close(s->idx);
  tern_io_set_first_touch_pread(1);
}

/* n lookups of keys idx[0..n): errors counted; the time in seconds. */
static double lookups(open_env *e, int mode, lookup_store *s, const uint32_t *idx, size_t n,
                      size_t *errors) {
  double t0 = bench_now();
  for (size_t i = 0; i < n; i++) {
    const uint8_t *key = bench_key_at(&e->present, idx[i]);
    size_t len = bench_key_len(&e->present, idx[i]), vlen = 0;
    const uint8_t *v = e->vbuf + 65536;
    int ok;
    if (mode == MODE_LMDB) {
      uint32_t doc;
      ok = bench_lmdb_get_value(&s->l, key, len, &doc, &v, &vlen) == 0;
    } else {
      ok = tern_get(s->snap, key, len, e->vbuf + 65536, 65536, &vlen) == TERN_OK;
    }
    if (!ok || !check_doc(e, v, vlen, idx[i])) (*errors)++;
  }
  return bench_now() - t0;
}

/* One cold round: µs per lookup and counted reads per lookup. */
static int cold_round(open_env *e, int mode, const uint32_t *idx, size_t n, double *us,
                      double *reads, double *kib, size_t *errors) {
  if (mode == MODE_FLOOR) {
    char path[4096];
    double s;
    uint64_t rb;
    if (bench_largest_file(e->tdir, path, sizeof path) != 0 || /* the .tim */
        bench_random_reads(path, n, bench_mix64(idx[0]), &s, &rb) != 0)
      return -1;
    *us = s * 1e6 / (double)n;
    *reads = 1;
    *kib = (double)rb / 1024.0 / (double)n;
    return 0;
  }
  lookup_store s;
  if (store_open(e, mode, &s) != 0) return -1;
  int rc = evict_both(e);
  bench_io a, b;
  bench_io_take(&a);
  if (rc == 0) *us = lookups(e, mode, &s, idx, n, errors) * 1e6 / (double)n;
  bench_io_take(&b);
  bench_io_diff(&a, &b, &a);
  *reads = (double)a.tern_reads / (double)n;
  if (mode == MODE_LMDB) *reads = (double)a.majflt / (double)n; /* its reads: page faults */
  *kib = (double)a.read_bytes / 1024.0 / (double)n;
  store_close(mode, &s);
  return rc;
}

static int warm_round(open_env *e, int mode, const uint32_t *idx, size_t n, double *ns,
                      size_t *errors) {
  lookup_store s;
  if (store_open(e, mode, &s) != 0) return -1;
  lookups(e, mode, &s, idx, n, errors); /* every page touched once */
  *ns = lookups(e, mode, &s, idx, n, errors) * 1e9 / (double)n;
  store_close(mode, &s);
  return 0;
}

static int phase_cold(open_env *e, bench_rng *r) {
  enum { RMAX = 64 };
  uint64_t runs = e->o->runs < RMAX ? e->o->runs : RMAX;
  printf("\n### cold lookups in one process after eviction (µs per lookup, median of %llu runs; "
         "counted reads per lookup (LMDB: major faults), KiB from storage per lookup)\n\n| N | ",
         (unsigned long long)runs);
  for (int m = 0; m < NMODES; m++) printf("%s | ", mode_name[m]);
  printf("default / floor | default / lmdb |\n|---:|");
  for (int m = 0; m < NMODES + 2; m++) printf("---:|");
  printf("\n");
  size_t errors = 0;
  for (size_t c = 0; c < e->o->ncold; c++) {
    size_t n = (size_t)e->o->cold[c];
    uint32_t *idx = malloc(n * sizeof *idx);
    double us[NMODES][RMAX], rd[NMODES][RMAX], kb[NMODES][RMAX];
    if (!idx) return -1;
    for (uint64_t run = 0; run < runs; run++) {
      if (bench_sample(r, e->present.n, n, idx) != 0) break;
      for (int m = 0; m < NMODES; m++)
        if (cold_round(e, m, idx, n, &us[m][run], &rd[m][run], &kb[m][run], &errors) != 0) {
          free(idx);
          bench_log("cold: %s failed: %s", mode_name[m], tern_errmsg());
          return -1;
        }
    }
    free(idx);
    printf("| %zu |", n);
    double medians[NMODES];
    for (int m = 0; m < NMODES; m++) {
      medians[m] = med(us[m], runs);
      printf(" %.1f (%.3f, %.1f KiB) |", medians[m], med(rd[m], runs), med(kb[m], runs));
    }
    printf(" %.2f× | %.2f× |\n", medians[MODE_MAP] / medians[MODE_FLOOR],
           medians[MODE_MAP] / medians[MODE_LMDB]);
  }
  printf("\n%zu wrong or missing answers\n", errors);
  return 0;
}

static int phase_warm(open_env *e, bench_rng *r) {
  enum { RMAX = 64 };
  uint64_t runs = e->o->runs < RMAX ? e->o->runs : RMAX;
  size_t n = (size_t)e->o->warm, errors = 0;
  uint32_t *idx = malloc(n * sizeof *idx);
  double ns[NMODES][RMAX];
  if (!idx || bench_warm_dir(e->tdir) != 0 || bench_warm_dir(e->ldir) != 0) {
    free(idx);
    return -1;
  }
  for (uint64_t run = 0; run < runs; run++) {
    if (bench_sample(r, e->present.n, n, idx) != 0) break;
    for (int m = 0; m < MODE_FLOOR; m++)
      if (warm_round(e, m, idx, n, &ns[m][run], &errors) != 0) {
        free(idx);
        return -1;
      }
  }
  free(idx);
  printf("\n### warm present lookups (%zu per run, ns per lookup, median of %llu runs; %zu "
         "errors)\n\n| store | ns | lmdb / store |\n|---|---:|---:|\n",
         n, (unsigned long long)runs, errors);
  double ref = med(ns[MODE_LMDB], runs);
  for (int m = 0; m < MODE_FLOOR; m++) {
    double v = med(ns[m], runs);
    printf("| %s | %.0f | %.2f× |\n", mode_name[m], v, ref / v);
  }
  return 0;
}

/* Open + one present get + close, again and again in one process, files
 * cached: what a long-running application that reopens stores pays (and
 * what memory allocators make of what an open allocates and a close
 * frees), default mapping vs LMDB, alternating. */
static int phase_reopen(open_env *e, bench_rng *r) {
  enum { RMAX = 64, PER_RUN = 200 };
  uint64_t runs = e->o->runs < RMAX ? e->o->runs : RMAX;
  static const int modes[2] = {MODE_MAP, MODE_LMDB};
  double us[2][RMAX];
  size_t errors = 0;
  uint32_t idx[PER_RUN];
  if (bench_warm_dir(e->tdir) != 0 || bench_warm_dir(e->ldir) != 0) return -1;
  for (uint64_t run = 0; run < runs; run++) {
    if (bench_sample(r, e->present.n, PER_RUN, idx) != 0) return -1;
    double t[2] = {0, 0};
    for (size_t i = 0; i < PER_RUN; i++)
      for (int k = 0; k < 2; k++) {
        int m = modes[(i + (size_t)k) % 2]; /* alternating which goes first */
        lookup_store s;
        double t0 = bench_now();
        if (store_open(e, m, &s) != 0) {
          bench_log("reopen: %s failed: %s", mode_name[m], tern_errmsg());
          return -1;
        }
        (void)lookups(e, m, &s, &idx[i], 1, &errors);
        store_close(m, &s);
        t[m == MODE_LMDB] += bench_now() - t0;
      }
    for (int k = 0; k < 2; k++) us[k][run] = t[k] * 1e6 / PER_RUN;
  }
  double tern = med(us[0], runs), lmdb = med(us[1], runs);
  printf("\n### reopen: open + 1 present get + close in one process, files cached (µs, %d per "
         "run, median of %llu runs; %zu errors)\n\n| %s | %s | tern / lmdb |\n|---:|---:|---:|\n"
         "| %.0f | %.0f | %.2f× |\n",
         PER_RUN, (unsigned long long)runs, errors, mode_name[MODE_MAP], mode_name[MODE_LMDB],
         tern, lmdb, tern / lmdb);
  return errors ? -1 : 0; /* a wrong answer fails the run */
}

/* ------------------------------------------------------------------ main */

static int open_setup(open_env *e) {
  if (e->o->at) {
    if (bench_mkdirs(e->o->at) != 0) return -1;
    snprintf(e->root, sizeof e->root, "%s", e->o->at);
  } else {
    char *root = bench_mkdtemp(e->o->parent, "tern-open");
    if (!root) return -1;
    snprintf(e->root, sizeof e->root, "%s", root);
    free(root);
  }
  if (!bench_path(e->tdir, sizeof e->tdir, e->root, "tern") ||
      !bench_path(e->ldir, sizeof e->ldir, e->root, "lmdb") ||
      !bench_path(e->keyfile, sizeof e->keyfile, e->root, "key.txt") ||
      bench_mkdirs(e->ldir) != 0 || bench_mkdirs(e->tdir) != 0)
    return -1;
  if (bench_self_exe(e->self, sizeof e->self) != 0) return -1;
  if (e->o->tern)
    snprintf(e->tern, sizeof e->tern, "%s", e->o->tern);
  else
    bench_default_tern(e->tern, sizeof e->tern);
  return 0;
}

int tern_bench_open(int argc, char **argv) {
  open_opts o;
  int prc = bench_opts_parse(&k_open_cmd, &o, argc, argv);
  if (prc) {
    bench_opts_free(&k_open_cmd, &o);
    return bench_opts_exit(prc);
  }
  static open_env e;
  e.o = &o;
  e.vbuf = malloc(2 * 65536);
  char cmd[1024], machine[256];
  bench_cmdline(cmd, sizeof cmd, argc, argv, "tern-bench");
  bench_machine(machine, sizeof machine);
  int rc = e.vbuf && open_setup(&e) == 0 ? 0 : -1;
  if (rc == 0 && bench_keys_load(&e.present, &o.spec, o.docs, o.seed) != 0) rc = -1;
  if (rc == 0 && bench_keys_absent(&e.absent, &e.present, 4096, o.seed ^ 0xAB5E47ull) != 0) rc = -1;
  char built[4096];
  int reuse = o.at && bench_path(built, sizeof built, e.root, "built") && bench_file_bytes(built) > 0;
  if (rc == 0 && !reuse) rc = open_build(&e);
  if (rc == 0 && o.at && !reuse) {
    FILE *f = fopen(built, "w");
    if (f) fprintf(f, "%s\n", cmd);
    if (!f || fclose(f) != 0) rc = -1;
  }
  if (rc == 0) {
    printf("## tern-bench open\n\n`%s`\n\n%s; %s on %s; %zu keys, %llu-byte values\n", cmd,
           machine, e.root, bench_fs_name(e.root), e.present.n, (unsigned long long)o.values);
    bench_rng r;
    bench_rng_init(&r, o.seed);
    if (o.phases & 1) rc = phase_fresh(&e, &r);
    if (rc == 0 && (o.phases & 2)) rc = phase_cold(&e, &r);
    if (rc == 0 && (o.phases & 4) && o.warm) rc = phase_warm(&e, &r);
    if (rc == 0 && (o.phases & 8)) rc = phase_reopen(&e, &r);
  }
  if (!o.keep && !o.at && e.root[0]) bench_rmtree(e.root);
  bench_keys_free(&e.present);
  bench_keys_free(&e.absent);
  free(e.vbuf);
  bench_opts_free(&k_open_cmd, &o);
  return rc == 0 ? 0 : 1;
}
