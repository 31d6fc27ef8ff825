/* SPDX-License-Identifier: MIT */
/*
 * engine_writes.c — the write phases of `tern-bench engine` (see
 * engine.c's list): commit and latency (one-document commits vs a bare
 * LMDB write transaction), import (a bulk transaction), memory (peak RSS
 * of one transaction) and buffer (commits with a full write buffer).
 */
#include "tools/bench/bench_common.h"
#include "tools/bench/engine.h"

#include "tern.h"

#include <lmdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double lmdb_commits(const char *dir, uint64_t n) {
  char path[4096];
  bench_path(path, sizeof path, dir, "bare.mdb");
  MDB_env *env;
  MDB_txn *t;
  MDB_dbi dbi;
  if (mdb_env_create(&env) || mdb_env_set_mapsize(env, 1u << 30) ||
      mdb_env_open(env, path, MDB_NOSUBDIR, 0666))
    return -1;
  uint8_t key[KEY_LEN], val[16] = {0};
  double t0 = bench_now();
  for (uint64_t i = 0; i < n; i++) {
    make_key(i, key);
    if (mdb_txn_begin(env, NULL, 0, &t)) return -1;
    if (i == 0) mdb_dbi_open(t, NULL, 0, &dbi);
    MDB_val k = {KEY_LEN, key}, v = {sizeof val, val};
    if (mdb_put(t, dbi, &k, &v, 0) || mdb_txn_commit(t)) return -1;
  }
  double rate = (double)n / (bench_now() - t0);
  mdb_env_close(env);
  return rate;
}

static double tern_commits(const char *dir, uint64_t n) {
  tern_index *idx = fresh_index(dir);
  if (!idx) return -1;
  uint8_t key[KEY_LEN], val[16] = {0};
  double t0 = bench_now();
  for (uint64_t i = 0; i < n; i++) {
    tern_txn *t;
    make_key(i, key);
    if (engine_check(tern_txn_begin(&t, idx, 0), "begin") ||
        engine_check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put") ||
        engine_check(tern_commit(t), "commit"))
      return -1;
  }
  double rate = (double)n / (bench_now() - t0);
  tern_close(idx);
  return rate;
}

/* Commits per second of one path (0 bare LMDB, 1 tern) in a fresh
 * directory. */
static double time_commits(void *ctx, size_t who, size_t m, size_t run) {
  const eopts *o = ctx;
  (void)m, (void)run;
  char *dir = bench_mkdtemp(o->parent, who ? "engine-commit" : "engine-lmdb");
  if (!dir) return -1;
  double rate = who ? tern_commits(dir, o->commits) : lmdb_commits(dir, o->commits);
  bench_rmtree(dir);
  free(dir);
  return rate > 0 ? rate : -1;
}

int phase_commit(const eopts *o) {
  static const char *const labels[3] = {"bare LMDB put + commit", "tern put + commit",
                                        "ratio tern / LMDB"};
  char title[256];
  snprintf(title, sizeof title, "commit: %llu one-document commits per run on %s, %llu runs",
           (unsigned long long)o->commits, bench_fs_name(o->parent), (unsigned long long)o->runs);
  return engine_two_way(o, time_commits, (void *)o, title,
                        "| path | commits/s (median) | min | max |\n|---|---|---|---|", labels,
                        "%.0f");
}

int phase_import(const eopts *o) {
  double *rate = calloc(o->runs, sizeof *rate), *commit_s = calloc(o->runs, sizeof *commit_s);
  for (uint64_t run = 0; run < o->runs; run++) {
    char *dir = bench_mkdtemp(o->parent, "engine-import");
    tern_index *idx = dir ? fresh_index(dir) : NULL;
    if (!idx) return 1;
    tern_txn *t;
    uint8_t key[KEY_LEN], val[16];
    double t0 = bench_now();
    if (engine_check(tern_txn_begin(&t, idx, TERN_TXN_BULK), "begin")) return 1;
    for (uint64_t i = 0; i < o->import; i++) {
      make_key(i, key);
      memcpy(val, key, 16);
      if (engine_check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put")) return 1;
    }
    double t1 = bench_now();
    if (engine_check(tern_commit(t), "commit")) return 1;
    double t2 = bench_now();
    rate[run] = (double)o->import / (t2 - t0);
    commit_s[run] = t2 - t1;
    tern_close(idx);
    bench_rmtree(dir);
    free(dir);
  }
  bench_summary br = bench_summarize(rate, o->runs), bc = bench_summarize(commit_s, o->runs);
  printf(
      "import: %llu fresh random 16-byte keys, 16-byte values, one TERN_TXN_BULK commit, on %s\n",
      (unsigned long long)o->import, bench_fs_name(o->parent));
  printf("| docs/s end to end (median) | min | max | of which commit, s |\n|---|---|---|---|\n");
  printf("| %.0f | %.0f | %.0f | %.2f |\n\n", br.median, br.min, br.max, bc.median);
  free(rate);
  free(commit_s);
  return 0;
}

/* One transaction of o->import fresh puts in a child process: its peak
 * RSS in KiB (the parent's memory is not counted), 0 on failure. */
static long txn_peak_kib(const eopts *o, unsigned flags) {
  pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    char *dir = bench_mkdtemp(o->parent, "engine-memory");
    tern_index *idx = dir ? fresh_index(dir) : NULL;
    tern_txn *t;
    if (!idx || engine_check(tern_txn_begin(&t, idx, flags), "begin")) _exit(1);
    uint8_t key[KEY_LEN], val[16];
    for (uint64_t i = 0; i < o->import; i++) {
      make_key(i, key);
      memcpy(val, key, 16);
      if (engine_check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put")) _exit(1);
    }
    int rc = engine_check(tern_commit(t), "commit");
    tern_close(idx);
    bench_rmtree(dir);
    _exit(rc ? 1 : 0);
  }
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return 0;
  return ru.ru_maxrss;
}

int phase_memory(const eopts *o) {
  double *plain = calloc(o->runs, sizeof *plain), *bulk = calloc(o->runs, sizeof *bulk);
  for (uint64_t run = 0; run < o->runs; run++) {
    long p = txn_peak_kib(o, 0), b = txn_peak_kib(o, TERN_TXN_BULK);
    if (!p || !b) return 1;
    plain[run] = (double)p / 1024.0;
    bulk[run] = (double)b / 1024.0;
  }
  bench_summary bp = bench_summarize(plain, o->runs), bb = bench_summarize(bulk, o->runs);
  printf("memory: peak RSS of one transaction of %llu puts (16-byte keys and values), "
         "child processes\n",
         (unsigned long long)o->import);
  printf("| plain MiB | TERN_TXN_BULK MiB | ratio |\n|---|---|---|\n");
  printf("| %.1f | %.1f | %.2fx |\n\n", bp.median, bb.median, bp.median / bb.median);
  free(plain);
  free(bulk);
  return 0;
}

/* Fills the write buffer of a fresh index with `n` docs (one plain commit). */
static tern_index *buffered_index(const char *dir, uint64_t n) {
  tern_options opt;
  tern_options_init(&opt);
  opt.write_buffer_bytes = 1ull << 34; /* never flushed here */
  tern_index *idx = NULL;
  if (engine_check(tern_open(&idx, dir, TERN_CREATE, &opt), "open")) return NULL;
  tern_txn *t;
  uint8_t key[KEY_LEN], val[16] = {0};
  int rc = engine_check(tern_txn_begin(&t, idx, 0), "begin");
  for (uint64_t i = 0; !rc && i < n; i++) {
    make_key(i, key);
    rc = engine_check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put");
  }
  if (!rc)
    rc = engine_check(tern_commit(t), "commit");
  else
    tern_abort(t);
  if (rc) {
    tern_close(idx);
    return NULL;
  }
  return idx;
}

/* µs per (put + commit of key i, snapshot open, get of key i, close). */
static double time_commit_snapshot(tern_index *idx, uint64_t from, uint64_t n) {
  uint8_t key[KEY_LEN], val[16] = {0}, out[16];
  double t0 = bench_now();
  for (uint64_t i = from; i < from + n; i++) {
    tern_txn *t;
    tern_snapshot *s;
    size_t vlen;
    make_key(i, key);
    if (engine_check(tern_txn_begin(&t, idx, 0), "begin") ||
        engine_check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put") ||
        engine_check(tern_commit(t), "commit") ||
        engine_check(tern_snapshot_open(&s, idx), "snapshot") ||
        engine_check(tern_get(s, key, KEY_LEN, out, sizeof out, &vlen), "get"))
      return -1;
    tern_snapshot_close(s);
  }
  return (bench_now() - t0) * 1e6 / (double)n;
}

static const uint64_t k_buffered[2] = {100, 100000};

/* µs per round of a fresh index with k_buffered[k] documents buffered. */
static double time_buffered(void *ctx, size_t k, size_t m, size_t run) {
  const eopts *o = ctx;
  (void)m, (void)run;
  char *dir = bench_mkdtemp(o->parent, "engine-buffer");
  tern_index *idx = dir ? buffered_index(dir, k_buffered[k]) : NULL;
  double us = -1;
  if (idx) {
    time_commit_snapshot(idx, k_buffered[k], 10); /* the first snapshot reads the catalog */
    us = time_commit_snapshot(idx, k_buffered[k] + 10, o->commits);
    tern_close(idx);
  }
  if (dir) bench_rmtree(dir);
  free(dir);
  return us;
}

int phase_buffer(const eopts *o) {
  static const char *const labels[3] = {"100", "100,000", "ratio 100,000 / 100"};
  char title[256];
  snprintf(title, sizeof title,
           "buffer: %llu x (put + commit + snapshot open + get + close) per run on %s, %llu runs",
           (unsigned long long)o->commits, bench_fs_name(o->parent), (unsigned long long)o->runs);
  return engine_two_way(
      o, time_buffered, (void *)o, title,
      "| documents buffered | µs per round (median) | min | max |\n|---|---|---|---|", labels,
      "%.2f");
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* LAT_CATALOG: LMDB alone doing the writes of tern's commit (the document
 * into a named table, a state record into the main one): LMDB's share of
 * tern's commit, apart from tern's own work. */
enum lat_path { LAT_BARE, LAT_TERN, LAT_FOREGROUND, LAT_CATALOG, LAT_NPATHS };
static const char *const lat_name[LAT_NPATHS] = {
    "bare LMDB put + commit", "tern put + commit (background worker)",
    "tern put + commit (TERN_FOREGROUND)", "LMDB doing tern's catalog writes"};
static const char *const lat_short[LAT_NPATHS] = {"", "background", "foreground", "catalog writes"};

/* The calling thread's CPU time in seconds: what a commit made this thread
 * do, without the time other processes of a shared machine took from it. */
static double thread_cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One path's store for the latency phase: a bare LMDB environment or a
 * tern index, open for the whole run. */
typedef struct lat_store {
  enum lat_path path;
  char *dir;
  MDB_env *env;
  MDB_dbi dbi, buf; /* the main table; LAT_CATALOG: the named one */
  tern_index *idx;
  double *us; /* wall µs of commit i in us[i], the thread's CPU µs in us[n + i] */
} lat_store;

static int lat_open(lat_store *s, const eopts *o, enum lat_path path) {
  memset(s, 0, sizeof *s);
  s->path = path;
  s->dir = bench_mkdtemp(o->parent, "engine-latency");
  s->us = malloc(2 * o->commits * sizeof *s->us);
  if (!s->dir || !s->us) return -1;
  if (path != LAT_BARE && path != LAT_CATALOG) {
    tern_options to;
    tern_options_init(&to);
    if (o->buffer) to.write_buffer_bytes = o->buffer;
    unsigned flags = TERN_CREATE | (path == LAT_FOREGROUND ? TERN_FOREGROUND : 0);
    return engine_check(tern_open(&s->idx, s->dir, flags, &to), "open");
  }
  char file[4096];
  bench_path(file, sizeof file, s->dir, "bare.mdb");
  MDB_txn *t;
  if (mdb_env_create(&s->env) || mdb_env_set_maxdbs(s->env, 2) ||
      mdb_env_set_mapsize(s->env, 1u << 30) || mdb_env_open(s->env, file, MDB_NOSUBDIR, 0666) ||
      mdb_txn_begin(s->env, NULL, 0, &t))
    return -1;
  int bad = mdb_dbi_open(t, NULL, 0, &s->dbi) ||
            (path == LAT_CATALOG && mdb_dbi_open(t, "buffer", MDB_CREATE, &s->buf));
  return bad || mdb_txn_commit(t) ? -1 : 0;
}

/* One commit's LMDB writes on s's path: bare, or tern's catalog writes
 * (record sizes as tern's: the key with its document and seal, the state
 * record's ~60 bytes). */
static int lat_lmdb_commit(lat_store *s, uint8_t *key, uint64_t i) {
  MDB_txn *t;
  uint8_t rec[KEY_LEN + 32] = {0}, state[60] = {0};
  memcpy(state, &i, sizeof i);
  MDB_val k = {KEY_LEN, key}, v = {16, rec}, sk = {5, "state"}, sv = {sizeof state, state};
  if (mdb_txn_begin(s->env, NULL, 0, &t) != 0) return -1;
  int bad;
  if (s->path == LAT_CATALOG) {
    v.mv_size = sizeof rec;
    bad = mdb_put(t, s->buf, &k, &v, 0) || mdb_put(t, s->dbi, &sk, &sv, 0);
  } else {
    bad = mdb_put(t, s->dbi, &k, &v, 0);
  }
  if (bad) {
    mdb_txn_abort(t);
    return -1;
  }
  return mdb_txn_commit(t) ? -1 : 0;
}

/* Commits document i on s's path, timed alone; nonzero on failure. */
static int lat_commit(lat_store *s, uint64_t i, uint64_t n) {
  uint8_t key[KEY_LEN], val[16] = {0};
  make_key(i, key);
  double t0 = bench_now(), c0 = thread_cpu_now();
  int bad;
  if (s->env) {
    bad = lat_lmdb_commit(s, key, i);
  } else {
    tern_txn *t;
    bad = engine_check(tern_txn_begin(&t, s->idx, 0), "begin") ||
          engine_check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put") ||
          engine_check(tern_commit(t), "commit");
  }
  s->us[i] = (bench_now() - t0) * 1e6;
  s->us[n + i] = (thread_cpu_now() - c0) * 1e6;
  return bad;
}

/* Closes s (a tern index flushed first, its segment count in *segments),
 * sorts its times and removes its directory. */
static int lat_close(lat_store *s, uint64_t n, size_t *segments) {
  int bad = 0;
  if (s->env) mdb_env_close(s->env);
  if (s->idx) {
    tern_stats *st;
    bad = engine_check(tern_flush(s->idx), "flush") || engine_check(tern_stats_get(&st, s->idx), "stats");
    if (!bad) {
      *segments = st->nsegments;
      tern_stats_free(st);
    }
    tern_close(s->idx);
  }
  if (s->us) {
    qsort(s->us, n, sizeof *s->us, cmp_double);
    qsort(s->us + n, n, sizeof *s->us, cmp_double);
  }
  if (s->dir) bench_rmtree(s->dir);
  free(s->dir);
  return bad;
}

/* Commits alternate between the paths in blocks of LAT_BLOCK: long enough
 * that each path runs with warm caches as in a loop of its own, short
 * enough that the machine's slow moments (the tail of a shared machine
 * drifts over seconds) fall on every path alike.  The block order rotates. */
#define LAT_BLOCK 500u

static int lat_run(const eopts *o, lat_store *st) {
  uint64_t n = o->commits;
  for (uint64_t b = 0; b * LAT_BLOCK < n; b++)
    for (int j = 0; j < LAT_NPATHS; j++) {
      lat_store *s = &st[(b + (uint64_t)j) % LAT_NPATHS];
      for (uint64_t i = b * LAT_BLOCK; i < n && i < (b + 1) * LAT_BLOCK; i++)
        if (lat_commit(s, i, n)) return -1;
    }
  return 0;
}

/* Each run times the paths interleaved (lat_run); every figure is the
 * median over runs, ratios the median of per-run ratios. */
int phase_latency(const eopts *o) {
  uint64_t n = o->commits, runs = o->runs;
  /* [path][stat][run]; stats: wall median, p99, max, then CPU median, p99, max */
  double *fig = calloc(LAT_NPATHS * 6 * runs, sizeof *fig);
  double *ratio = calloc(LAT_NPATHS * 6 * runs, sizeof *ratio);
  size_t segments[LAT_NPATHS] = {0};
  if (!fig || !ratio || n == 0) return 1;
  for (uint64_t run = 0; run < runs; run++) {
    lat_store st[LAT_NPATHS];
    int bad = 0;
    for (int p = 0; p < LAT_NPATHS; p++)
      if (lat_open(&st[p], o, (enum lat_path)p)) bad = 1;
    if (!bad) bad = lat_run(o, st);
    for (int p = 0; p < LAT_NPATHS; p++)
      if (lat_close(&st[p], n, &segments[p])) bad = 1;
    size_t at[3] = {n / 2, (size_t)((double)(n - 1) * 0.99), n - 1};
    for (int p = 0; p < LAT_NPATHS && !bad; p++)
      for (int k = 0; k < 6; k++) {
        fig[(p * 6 + k) * runs + run] = st[p].us[(k >= 3 ? n : 0) + at[k % 3]];
        ratio[(p * 6 + k) * runs + run] = fig[(p * 6 + k) * runs + run] / fig[k * runs + run];
      }
    for (int p = 0; p < LAT_NPATHS; p++) free(st[p].us);
    if (bad) return 1;
  }
  printf("latency: %llu one-document commits a path on %s, each timed alone, the paths "
         "alternating in blocks of %u; write_buffer_bytes %llu; medians of %llu runs\n",
         (unsigned long long)n, bench_fs_name(o->parent), LAT_BLOCK,
         (unsigned long long)(o->buffer ? o->buffer : 8u << 20), (unsigned long long)runs);
  printf("| path | median µs | p99 µs | max µs | CPU median µs | CPU p99 µs | CPU max µs | "
         "segments at the end |\n|---|---|---|---|---|---|---|---|\n");
  for (int p = 0; p < LAT_NPATHS; p++) {
    double m[6];
    for (int k = 0; k < 6; k++)
      m[k] = bench_summarize(&fig[(p * 6 + k) * runs], runs).median;
    printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %zu |\n", lat_name[p], m[0], m[1],
           m[2], m[3], m[4], m[5], segments[p]);
  }
  for (int p = 1; p < LAT_NPATHS; p++) {
    double m[6];
    for (int k = 0; k < 6; k++)
      m[k] = bench_summarize(&ratio[(p * 6 + k) * runs], runs).median;
    printf("| ratio %s / LMDB | %.2fx | %.2fx | %.2fx | %.2fx | %.2fx | %.2fx | |\n",
           lat_short[p], m[0], m[1], m[2], m[3], m[4], m[5]);
  }
  printf("\n");
  free(fig);
  free(ratio);
  return 0;
}
