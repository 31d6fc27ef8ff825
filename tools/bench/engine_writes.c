/* SPDX-License-Identifier: MIT */
/*
 * engine_writes.c — the write phases of `tern-bench engine` (see
 * engine.c's list): commit (one-document commits vs a bare LMDB write
 * transaction), import (a bulk transaction), memory (peak RSS of one
 * transaction; the write buffer's view per document) and buffer (commits with a full write buffer); latency is
 * engine_latency.c's.
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

/* The process's anonymous memory in KiB (/proc/self/smaps_rollup), -1
 * when unknown. */
static long anon_kib(void) {
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "Anonymous:", 10)) kib = atol(line + 10);
  fclose(f);
  return kib;
}

/* Writes n documents (16-byte keys and values) into a fresh index in
 * transactions of 1,000, all left in its write buffer; then, reopened
 * read-only, the anonymous memory a snapshot and one get add: the buffer
 * view a reader builds.  In a child process; 0 on failure, -1 unknown. */
static long buffer_view_kib(const eopts *o, uint64_t n) {
  int fd[2];
  if (pipe(fd)) return 0;
  pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    close(fd[0]);
    char *dir = bench_mkdtemp(o->parent, "engine-buffer-memory");
    tern_options opt;
    tern_options_init(&opt);
    opt.write_buffer_bytes = 1ull << 34; /* never flushed here */
    tern_index *idx = NULL;
    if (!dir || engine_check(tern_open(&idx, dir, TERN_CREATE, &opt), "open")) _exit(1);
    uint8_t key[KEY_LEN], val[16];
    for (uint64_t i = 0; i < n;) {
      tern_txn *t;
      if (engine_check(tern_txn_begin(&t, idx, 0), "begin")) _exit(1);
      for (uint64_t end = i + 1000 < n ? i + 1000 : n; i < end; i++) {
        make_key(i, key);
        memcpy(val, key, 16);
        if (engine_check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put")) _exit(1);
      }
      if (engine_check(tern_commit(t), "commit")) _exit(1);
    }
    tern_close(idx);
    if (engine_check(tern_open(&idx, dir, TERN_RDONLY, NULL), "reopen")) _exit(1);
    long before = anon_kib();
    tern_snapshot *s;
    size_t vlen;
    make_key(0, key);
    if (engine_check(tern_snapshot_open(&s, idx), "snapshot") ||
        engine_check(tern_get(s, key, KEY_LEN, val, sizeof val, &vlen), "get"))
      _exit(1);
    long kib = before < 0 ? -1 : anon_kib() - before;
    tern_snapshot_close(s);
    tern_close(idx);
    bench_rmtree(dir);
    _exit(write(fd[1], &kib, sizeof kib) == (ssize_t)sizeof kib ? 0 : 1);
  }
  close(fd[1]);
  long kib = 0;
  if (read(fd[0], &kib, sizeof kib) != (ssize_t)sizeof kib) kib = 0;
  close(fd[0]);
  int status;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 0;
  return kib;
}

/* The buffer view's memory per document: 200,000 buffered against 1,000. */
static int buffer_memory(const eopts *o) {
  enum { SMALL = 1000, LARGE = 200000 };
  double *per = calloc(o->runs, sizeof *per);
  if (!per) return 1;
  for (uint64_t run = 0; run < o->runs; run++) {
    long small = buffer_view_kib(o, SMALL), large = buffer_view_kib(o, LARGE);
    if (!small || !large) return 1;
    if (small < 0 || large < 0) {
      printf("memory: the write buffer's view a reader builds: not measured (no "
             "/proc/self/smaps_rollup)\n\n");
      free(per);
      return 0;
    }
    per[run] = (double)(large - small) * 1024.0 / (LARGE - SMALL);
  }
  bench_summary bp = bench_summarize(per, o->runs);
  printf("memory: the write buffer's view a reader builds, %d documents of 16-byte keys and "
         "16-byte values\nwritten 1,000 a transaction, reopened read-only; anonymous memory of "
         "snapshot + get, less the same with %d\n",
         LARGE, SMALL);
  printf("| documents | bytes a document (median) | min | max | beyond the key and value |\n"
         "|---|---|---|---|---|\n");
  printf("| %d buffered | %.0f | %.0f | %.0f | %.0f |\n\n", LARGE, bp.median, bp.min, bp.max,
         bp.median - 32.0);
  free(per);
  return 0;
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
  return buffer_memory(o);
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
