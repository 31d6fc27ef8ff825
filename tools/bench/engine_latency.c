/* SPDX-License-Identifier: MIT */
/*
 * engine_latency.c — the latency phase of `tern-bench engine`: one-document
 * put + commits timed one by one (median, p99, maximum; wall and the
 * thread's CPU) on four paths — a bare LMDB write transaction, tern with
 * its background worker, tern in TERN_FOREGROUND, and LMDB alone doing
 * tern's catalog writes — measured two ways:
 *
 *   alone        each path in a process of its own (`tern-bench
 *                latency-path`, a fresh program), one after the other,
 *                the order rotating by run: what an application that
 *                runs one store gets.  The figure the target is
 *                judged by (docs/BENCHMARKS.md, "latency").
 *   interleaved  the four paths in one process, taking turns in blocks of
 *                LAT_BLOCK commits, so that a shared machine's slow
 *                moments fall on every path alike.  The stores then share
 *                the process's caches and CPUs with each other (tern's
 *                worker threads included), which slows the bare LMDB path
 *                more than tern's: kept to show that.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/engine.h"
#include "tools/bench/opts.h"
#include "tools/bench/process.h"

#include "tern.h"

#include <errno.h>
#include <lmdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* LAT_CATALOG: LMDB alone doing the writes of tern's commit (catalog
 * version 4: the document into the main table under the buffer's
 * generation prefix, nothing else): LMDB's share of tern's commit, apart
 * from tern's own work. */
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
  MDB_dbi dbi; /* the main table */
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
  return mdb_dbi_open(t, NULL, 0, &s->dbi) || mdb_txn_commit(t) ? -1 : 0;
}

/* One commit's LMDB writes on s's path: bare, or tern's catalog writes
 * (sizes as tern's: a 9-byte generation prefix before the key; the
 * document with the key's tail length and a seal). */
static int lat_lmdb_commit(lat_store *s, uint8_t *key) {
  MDB_txn *t;
  uint8_t rec[KEY_LEN + 32] = {0}, gkey[9 + KEY_LEN] = {0};
  MDB_val k = {KEY_LEN, key}, v = {16, rec};
  if (s->path == LAT_CATALOG) {
    memcpy(gkey + 9, key, KEY_LEN);
    k = (MDB_val){sizeof gkey, gkey};
    v.mv_size = 1 + (1 + 16 + 1) + 8; /* tail length, document record, seal */
  }
  if (mdb_txn_begin(s->env, NULL, 0, &t) != 0) return -1;
  if (mdb_put(t, s->dbi, &k, &v, 0)) {
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
    bad = lat_lmdb_commit(s, key);
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
    bad = engine_check(tern_flush(s->idx), "flush") ||
          engine_check(tern_stats_get(&st, s->idx), "stats");
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

/* Each run's figures: [path][stat][run], stats wall median, p99, max, then
 * CPU median, p99, max; ratio the same to the bare path of that run. */
typedef struct lat_figs {
  double *fig, *ratio;
  size_t segments[LAT_NPATHS];
} lat_figs;

#define LAT_STATS 6

/* The six figures of a closed store (its n times sorted). */
static void lat_stats(const lat_store *s, uint64_t n, double out[LAT_STATS]) {
  size_t at[3] = {n / 2, (size_t)((double)(n - 1) * 0.99), n - 1};
  for (int k = 0; k < LAT_STATS; k++)
    out[k] = s->us[(k >= 3 ? n : 0) + at[k % 3]];
}

/* Path p's figures as run `run` of fg. */
static void lat_keep(lat_figs *fg, enum lat_path p, const double st[LAT_STATS], uint64_t runs,
                     uint64_t run) {
  for (int k = 0; k < LAT_STATS; k++)
    fg->fig[(p * LAT_STATS + k) * runs + run] = st[k];
}

/* The ratios of run `run`, once every path's figures are in. */
static void lat_ratios(lat_figs *fg, uint64_t runs, uint64_t run) {
  for (int p = 0; p < LAT_NPATHS; p++)
    for (int k = 0; k < LAT_STATS; k++) {
      size_t at = (p * LAT_STATS + k) * runs + run;
      fg->ratio[at] = fg->fig[at] / fg->fig[k * runs + run];
    }
}

/* One interleaved run (lat_run): every path's store in this process. */
static int lat_interleaved(const eopts *o, lat_figs *fg, uint64_t run) {
  uint64_t n = o->commits;
  lat_store st[LAT_NPATHS];
  int bad = 0;
  for (int p = 0; p < LAT_NPATHS; p++)
    if (lat_open(&st[p], o, (enum lat_path)p)) bad = 1;
  if (!bad) bad = lat_run(o, st);
  for (int p = 0; p < LAT_NPATHS; p++)
    if (lat_close(&st[p], n, &fg->segments[p])) bad = 1;
  for (int p = 0; p < LAT_NPATHS && !bad; p++) {
    double figs[LAT_STATS];
    lat_stats(&st[p], n, figs);
    lat_keep(fg, (enum lat_path)p, figs, o->runs, run);
  }
  for (int p = 0; p < LAT_NPATHS; p++)
    free(st[p].us);
  return bad;
}

/* One path's o->commits commits in this process; its figures and segment
 * count in out[0..LAT_STATS].  0, or nonzero after logging a failure. */
static int lat_path_run(const eopts *o, enum lat_path p, double out[LAT_STATS + 1]) {
  uint64_t n = o->commits;
  lat_store s;
  size_t segments = 0;
  int bad = lat_open(&s, o, p);
  for (uint64_t i = 0; i < n && !bad; i++)
    bad = lat_commit(&s, i, n);
  if (lat_close(&s, n, &segments)) bad = 1;
  if (!bad) lat_stats(&s, n, out);
  out[LAT_STATS] = (double)segments;
  free(s.us);
  return bad;
}

/* `tern-bench latency-path`: the process lat_alone runs for one path.  A
 * fresh program, not a bare fork: a child forked from this benchmark
 * would take over its heap, used by the runs before it, and every first
 * write to one of those pages copies it (a page fault in a commit). */
typedef struct latpath_opts {
  uint64_t path, commits, buffer;
  const char *parent;
} latpath_opts;

static const bench_opt k_latpath_opts[] = {
    BENCH_U64("path", offsetof(latpath_opts, path), "P", "0", 0, LAT_NPATHS - 1,
              "0 bare LMDB, 1 tern, 2 tern TERN_FOREGROUND, 3 LMDB doing tern's catalog writes"),
    BENCH_U64("commits", offsetof(latpath_opts, commits), "N", "30000", 1, 0,
              "one-document commits"),
    BENCH_U64("buffer", offsetof(latpath_opts, buffer), "BYTES", NULL, 0, 0,
              "write_buffer_bytes of a tern index (default 8 MiB)"),
    BENCH_SCRATCH_DIR(offsetof(latpath_opts, parent)),
};

static const bench_cmd k_latpath_cmd =
    BENCH_CMD("latency-path", "[options]",
              "one path of `engine --phases latency`, timed in a process of its own: "
              "median, p99, max (wall, then CPU) µs and segments, on one line",
              k_latpath_opts, latpath_opts, NULL);

void tern_bench_latency_path_usage(FILE *out) { bench_opts_usage(&k_latpath_cmd, out); }

int tern_bench_latency_path(int argc, char **argv) {
  latpath_opts lo;
  int prc = bench_opts_parse(&k_latpath_cmd, &lo, argc, argv);
  if (prc) return bench_opts_exit(prc);
  eopts o = {.commits = lo.commits, .buffer = lo.buffer, .parent = lo.parent};
  double out[LAT_STATS + 1];
  if (lat_path_run(&o, (enum lat_path)lo.path, out)) return 1;
  for (int k = 0; k <= LAT_STATS; k++)
    printf("%.6f%c", out[k], k == LAT_STATS ? '\n' : ' ');
  return 0;
}

/* Runs `tern-bench latency-path` for path p with out as its stdout. */
static void lat_exec_child(const eopts *o, enum lat_path p, int out) {
  char self[4096], path[32], commits[32], buffer[32];
  if (bench_self_exe(self, sizeof self) != 0 || dup2(out, STDOUT_FILENO) < 0) _exit(126);
  snprintf(path, sizeof path, "%d", (int)p);
  snprintf(commits, sizeof commits, "%llu", (unsigned long long)o->commits);
  snprintf(buffer, sizeof buffer, "%llu", (unsigned long long)o->buffer);
  execl(self, "tern-bench", "latency-path", "--path", path, "--commits", commits, "--buffer",
        buffer, "--dir", o->parent, (char *)NULL);
  _exit(127);
}

/* Path p alone in a process of its own, as run `run` of fg; 0 or -1. */
static int lat_alone(const eopts *o, lat_figs *fg, enum lat_path p, uint64_t run) {
  int fds[2];
  if (pipe(fds) != 0) {
    bench_log("latency: pipe: %s", strerror(errno));
    return -1;
  }
  fflush(NULL); /* nothing buffered is written twice */
  pid_t pid = fork();
  if (pid < 0) {
    bench_log("latency: fork: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    lat_exec_child(o, p, fds[1]);
  }
  close(fds[1]);
  char line[512];
  size_t got = 0;
  ssize_t r;
  while (got < sizeof line - 1 && (r = read(fds[0], line + got, sizeof line - 1 - got)) > 0)
    got += (size_t)r;
  line[got] = 0;
  close(fds[0]);
  double in[LAT_STATS + 1];
  int fields = sscanf(line, "%lf %lf %lf %lf %lf %lf %lf", &in[0], &in[1], &in[2], &in[3], &in[4],
                      &in[5], &in[6]);
  int status;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      fields != LAT_STATS + 1) {
    bench_log("latency: the process timing \"%s\" failed (wait status %d)", lat_name[p], status);
    return -1;
  }
  lat_keep(fg, p, in, o->runs, run);
  fg->segments[p] = (size_t)in[LAT_STATS];
  return 0;
}

/* One run of every path alone, the first path rotating by run. */
static int lat_alone_run(const eopts *o, lat_figs *fg, uint64_t run) {
  for (int j = 0; j < LAT_NPATHS; j++)
    if (lat_alone(o, fg, (enum lat_path)((run + (uint64_t)j) % LAT_NPATHS), run)) return -1;
  return 0;
}

/* fg's table under `title`: medians over runs, ratios the median of the
 * per-run ratios. */
static void lat_print(const lat_figs *fg, uint64_t runs, const char *title) {
  printf("%s\n| path | median µs | p99 µs | max µs | CPU median µs | CPU p99 µs | CPU max µs | "
         "segments at the end |\n|---|---|---|---|---|---|---|---|\n",
         title);
  for (int p = 0; p < LAT_NPATHS; p++) {
    double m[LAT_STATS];
    for (int k = 0; k < LAT_STATS; k++)
      m[k] = bench_summarize(&fg->fig[(p * LAT_STATS + k) * runs], runs).median;
    printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %zu |\n", lat_name[p], m[0], m[1],
           m[2], m[3], m[4], m[5], fg->segments[p]);
  }
  for (int p = 1; p < LAT_NPATHS; p++) {
    double m[LAT_STATS];
    for (int k = 0; k < LAT_STATS; k++)
      m[k] = bench_summarize(&fg->ratio[(p * LAT_STATS + k) * runs], runs).median;
    printf("| ratio %s / LMDB | %.2fx | %.2fx | %.2fx | %.2fx | %.2fx | %.2fx | |\n", lat_short[p],
           m[0], m[1], m[2], m[3], m[4], m[5]);
  }
  printf("\n");
}

static int lat_figs_alloc(lat_figs *fg, uint64_t runs) {
  memset(fg, 0, sizeof *fg);
  fg->fig = calloc(LAT_NPATHS * LAT_STATS * runs, sizeof *fg->fig);
  fg->ratio = calloc(LAT_NPATHS * LAT_STATS * runs, sizeof *fg->ratio);
  return fg->fig && fg->ratio ? 0 : -1;
}

static void lat_figs_free(lat_figs *fg) {
  free(fg->fig);
  free(fg->ratio);
}

/* Each run times the paths alone, then interleaved; every figure is the
 * median over runs. */
int phase_latency(const eopts *o) {
  uint64_t n = o->commits, runs = o->runs;
  lat_figs alone, mixed;
  int bad = lat_figs_alloc(&alone, runs) | lat_figs_alloc(&mixed, runs) | (n == 0);
  for (uint64_t run = 0; run < runs && !bad; run++) {
    bad = lat_alone_run(o, &alone, run) || lat_interleaved(o, &mixed, run);
    if (!bad) {
      lat_ratios(&alone, runs, run);
      lat_ratios(&mixed, runs, run);
    }
  }
  if (!bad) {
    char title[512];
    snprintf(title, sizeof title,
             "latency: %llu one-document commits a path on %s, each timed alone; "
             "write_buffer_bytes %llu; medians of %llu runs",
             (unsigned long long)n, bench_fs_name(o->parent),
             (unsigned long long)(o->buffer ? o->buffer : 8u << 20), (unsigned long long)runs);
    printf("%s\n\n", title);
    lat_print(&alone, runs, "each path alone, in a process of its own (what an application gets):");
    snprintf(title, sizeof title,
             "the four paths in one process, taking turns in blocks of %u commits:", LAT_BLOCK);
    lat_print(&mixed, runs, title);
  }
  lat_figs_free(&alone);
  lat_figs_free(&mixed);
  return bad;
}
