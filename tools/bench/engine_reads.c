/* SPDX-License-Identifier: MIT */
/*
 * engine_reads.c — the read phases of `tern-bench engine` (see engine.c's
 * list): absent and incremental (two indexes timed alternately by the
 * harness), batch (cold and warm tern_get_batch vs single gets) and delete
 * (tern_delete vs tern_get of the same keys).
 */
#include "tools/bench/bench_common.h"
#include "tools/bench/engine.h"
#include "tools/bench/harness.h"

#include "tern.h"

#include <stdlib.h>
#include <string.h>

/* 20 segments whose sizes sit in three tiers of the merge policy (at most
 * nine per tier, so none merges): 9 x 0.5%, 9 x 5%, 2 x rest/2. */
static int load_twenty(tern_index *idx, uint64_t docs) {
  uint64_t at = 0, small = docs / 200, mid = docs / 20;
  for (int i = 0; i < 9; i++, at += small)
    if (engine_load(idx, at, at + small)) return -1;
  for (int i = 0; i < 9; i++, at += mid)
    if (engine_load(idx, at, at + mid)) return -1;
  uint64_t half = (docs - at) / 2;
  if (engine_load(idx, at, at + half) || engine_load(idx, at + half, docs)) return -1;
  return 0;
}

/* Present (measure 0) and absent (1) gets on two indexes, the rounds
 * alternating between them (the harness) so that both see the same
 * machine. */
typedef struct pair_run {
  tern_snapshot *s[2];
  const eopts *o;
  uint64_t seed;
} pair_run;

static double time_pair(void *ctx, size_t k, size_t w, size_t run) {
  const pair_run *x = ctx;
  const eopts *o = x->o;
  uint64_t found;
  double t = time_gets(x->s[k], o->docs, o->lookups, w ? o->docs : 0, run + x->seed, &found);
  if (found != (w ? 0 : o->lookups)) {
    bench_log("engine bench: %llu of %llu %s keys found\n", (unsigned long long)found,
              (unsigned long long)o->lookups, w ? "absent" : "present");
    return -1;
  }
  return t;
}

/* Medians of each index and of the per-run ratios index 0 / index 1. */
static void print_pairs(const bench_rounds *r) {
  for (size_t w = 0; w < 2; w++) {
    bench_summary q = bench_rounds_ratios(r, w, 0, 1);
    printf("| %s | %.0f | %.0f | %.2fx | %.2fx | %.2fx |\n", w ? "absent" : "present",
           bench_rounds_median(r, 0, w), bench_rounds_median(r, 1, w), q.median, q.min, q.max);
  }
  printf("\n");
}

typedef struct bench_ix {
  char *dir;
  tern_index *idx;
  tern_snapshot *snap;
  size_t nseg;
  uint64_t buffered;
} bench_ix;

static void bench_ix_close(bench_ix *x) {
  if (x->snap) tern_snapshot_close(x->snap);
  if (x->idx) tern_close(x->idx);
  if (x->dir) bench_rmtree(x->dir);
  free(x->dir);
}

/* Segments and buffered documents of an index, as tern_stats sees them. */
static int index_shape(tern_index *idx, size_t *nseg, uint64_t *buffered) {
  tern_stats *st;
  if (engine_check(tern_stats_get(&st, idx), "stats")) return -1;
  *nseg = st->nsegments;
  *buffered = st->buffered;
  tern_stats_free(st);
  return 0;
}

/* Opens the snapshot of a loaded index (compacted first when asked). */
static int bench_ix_ready(bench_ix *x, int compact) {
  if ((compact && engine_check(tern_compact(x->idx), "compact")) ||
      index_shape(x->idx, &x->nseg, &x->buffered) ||
      engine_check(tern_snapshot_open(&x->snap, x->idx), "snapshot"))
    return -1;
  bench_warm_dir(x->dir);
  return 0;
}

typedef int (*bench_load_fn)(tern_index *idx, const eopts *o);

/* Two indexes loaded alike (the second then compacted), with their
 * snapshots, timed in runs alternating between them. */
static int pair_measure(const eopts *o, const char *name, bench_load_fn loader, uint64_t seed,
                        bench_ix x[2], bench_rounds *r) {
  *r = (bench_rounds){.contenders = 2, .measures = 2, .rounds = (size_t)o->runs};
  for (int k = 0; k < 2; k++) {
    x[k].dir = bench_mkdtemp(o->parent, name);
    x[k].idx = x[k].dir ? fresh_index(x[k].dir) : NULL;
    if (!x[k].idx || loader(x[k].idx, o) || bench_ix_ready(&x[k], k)) return -1;
  }
  pair_run p = {{x[0].snap, x[1].snap}, o, seed};
  return bench_rounds_run(r, time_pair, NULL, &p);
}

static void pair_close(bench_ix x[2], bench_rounds *r) {
  bench_rounds_free(r);
  for (int k = 0; k < 2; k++)
    bench_ix_close(&x[k]);
}

static int load_twenty_docs(tern_index *idx, const eopts *o) { return load_twenty(idx, o->docs); }

int phase_absent(const eopts *o) {
  bench_ix x[2] = {{0}, {0}};
  bench_rounds b;
  if (pair_measure(o, "engine-absent", load_twenty_docs, 7, x, &b)) return 1;
  printf("absent: %llu docs in %zu segments vs the same compacted into %zu, %llu lookups per "
         "run, %llu runs alternating (warm)\n",
         (unsigned long long)o->docs, x[0].nseg, x[1].nseg, (unsigned long long)o->lookups,
         (unsigned long long)o->runs);
  printf("| keys | %zu segments ns/lookup | 1 segment ns/lookup | ratio (median of runs) | min | "
         "max |\n|---|---|---|---|---|---|\n",
         x[0].nseg);
  print_pairs(&b);
  pair_close(x, &b);
  return 0;
}

/* Puts keys [0, docs) in transactions of `per` documents, as an application
 * writing as it goes would (buffered commits; flushes and merges as the
 * policy decides). */
static int load_incremental(tern_index *idx, uint64_t docs, uint64_t per) {
  uint8_t key[KEY_LEN], val[16];
  for (uint64_t at = 0; at < docs; at += per) {
    tern_txn *t;
    if (engine_check(tern_txn_begin(&t, idx, 0), "begin")) return -1;
    for (uint64_t i = at; i < at + per && i < docs; i++) {
      make_key(i, key);
      memcpy(val, key, 16);
      if (engine_check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put")) {
        tern_abort(t);
        return -1;
      }
    }
    int rc = tern_commit(t);
    if (rc != TERN_OK && rc != TERN_EPARTIAL) return engine_check(rc, "commit");
  }
  return 0;
}

#define INCREMENTAL_TXN 1000u /* documents per transaction */

static int load_incremental_docs(tern_index *idx, const eopts *o) {
  return load_incremental(idx, o->docs, INCREMENTAL_TXN);
}

int phase_incremental(const eopts *o) {
  bench_ix x[2] = {{0}, {0}};
  bench_rounds b;
  double t0 = bench_now();
  if (pair_measure(o, "engine-incremental", load_incremental_docs, 11, x, &b)) return 1;
  printf("incremental: %llu docs put in transactions of %u, twice, the second index then "
         "compacted; %llu lookups per run, %llu runs alternating (warm; %.1f s in all)\n",
         (unsigned long long)o->docs, INCREMENTAL_TXN, (unsigned long long)o->lookups,
         (unsigned long long)o->runs, bench_now() - t0);
  printf("| keys | incremental: %zu segments + %llu buffered, ns/lookup | compacted: %zu segment, "
         "ns/lookup | ratio (median of runs) | min | max |\n|---|---|---|---|---|---|\n",
         x[0].nseg, (unsigned long long)x[0].buffered, x[1].nseg);
  print_pairs(&b);
  pair_close(x, &b);
  return 0;
}

static int count_found(void *payload, size_t i, int status, const void *val, size_t vlen) {
  (void)i;
  (void)val;
  (void)vlen;
  *(uint64_t *)payload += status == TERN_OK;
  return 0;
}

/* One pass over `keys` on a snapshot, one by one or as one batch: seconds
 * per lookup.  Sets *found. */
static int pass(tern_snapshot *s, const tern_slice *keys, size_t n, int batch, double *sec,
                uint64_t *found) {
  uint8_t buf[64];
  size_t vlen;
  *found = 0;
  double t0 = bench_now();
  int rc = TERN_OK;
  if (batch)
    rc = tern_get_batch(s, keys, n, count_found, found);
  else
    for (size_t i = 0; i < n; i++)
      *found += tern_get(s, keys[i].data, keys[i].len, buf, sizeof buf, &vlen) == TERN_OK;
  *sec = (bench_now() - t0) / (double)n;
  return engine_check(rc, "get_batch") ? -1 : 0;
}

/* One cold pass: evict the index, open it fresh, look the keys up.  Sets
 * µs per lookup and the I/O it caused. */
static int cold_pass(const char *dir, const tern_slice *keys, size_t n, int batch, double *us,
                     bench_io *io, uint64_t *found) {
  uint64_t resident;
  if (bench_evict_dir(dir, BENCH_EVICT_FADVISE, &resident) != 0) return -1;
  tern_index *idx;
  tern_snapshot *s;
  if (engine_check(tern_open(&idx, dir, TERN_RDONLY, NULL), "open")) return -1;
  if (engine_check(tern_snapshot_open(&s, idx), "snapshot")) {
    tern_close(idx);
    return -1;
  }
  bench_io a, b;
  bench_io_take(&a);
  int rc = pass(s, keys, n, batch, us, found);
  *us *= 1e6;
  bench_io_take(&b);
  bench_io_diff(&a, &b, io);
  tern_snapshot_close(s);
  tern_close(idx);
  return rc;
}

/* Issue 13: the batch path no slower than single gets when warm.  The
 * index stays open; after an untimed pass, runs alternate which mode goes
 * first.  Fills ns[mode][run]. */
static int batch_warm_runs(const char *dir, const tern_slice *keys, size_t n, uint64_t runs,
                           double *ns[2]) {
  tern_index *idx;
  tern_snapshot *s = NULL;
  if (bench_warm_dir(dir) != 0 || engine_check(tern_open(&idx, dir, TERN_RDONLY, NULL), "open"))
    return -1;
  int rc = engine_check(tern_snapshot_open(&s, idx), "snapshot") ? -1 : 0;
  uint64_t found;
  double scratch;
  if (!rc) rc = pass(s, keys, n, 0, &scratch, &found);
  for (uint64_t run = 0; run < runs && !rc; run++)
    for (int k = 0; k < 2 && !rc; k++) {
      int m = (int)((k + run) % 2);
      rc = pass(s, keys, n, m, &ns[m][run], &found);
      ns[m][run] *= 1e9;
      if (!rc && found != n) {
        bench_log("engine bench: batch (warm): found %llu of %zu keys", (unsigned long long)found,
                  n);
        rc = -1;
      }
    }
  if (s) tern_snapshot_close(s);
  tern_close(idx);
  return rc;
}

static void print_batch_warm(const eopts *o, size_t n, double *ns[2]) {
  printf("batch: %llu docs, %zu random present keys, warm (index open, every file cached), "
         "%llu runs\n",
         (unsigned long long)o->docs, n, (unsigned long long)o->runs);
  printf("| path | ns/lookup (median) | min | max | batch / one by one, per run (median) |\n"
         "|---|---|---|---|---|\n");
  double *ratio = calloc(o->runs, sizeof *ratio);
  for (uint64_t r = 0; ratio && r < o->runs; r++)
    ratio[r] = ns[1][r] / ns[0][r];
  bench_summary t0 = bench_summarize(ns[0], o->runs), t1 = bench_summarize(ns[1], o->runs);
  printf("| tern_get, one key at a time | %.1f | %.1f | %.1f | |\n", t0.median, t0.min, t0.max);
  if (ratio) {
    bench_summary q = bench_summarize(ratio, o->runs);
    printf("| tern_get_batch | %.1f | %.1f | %.1f | %.3f (%.3f .. %.3f) |\n\n", t1.median, t1.min,
           t1.max, q.median, q.min, q.max);
  }
  free(ratio);
}

int phase_batch(const eopts *o) {
  char *dir = bench_mkdtemp(o->parent, "engine-batch");
  tern_index *idx = dir ? fresh_index(dir) : NULL;
  if (!idx || engine_load(idx, 0, o->docs) || engine_check(tern_close(idx), "close")) return 1;
  size_t n = (size_t)o->lookups;
  uint8_t *kb = malloc(n * KEY_LEN);
  tern_slice *keys = malloc(n * sizeof *keys);
  double *us[2], *reads[2], *kib[2];
  for (int m = 0; m < 2; m++) {
    us[m] = calloc(o->runs, sizeof(double));
    reads[m] = calloc(o->runs, sizeof(double));
    kib[m] = calloc(o->runs, sizeof(double));
  }
  bench_rng r;
  bench_rng_init(&r, 42);
  for (size_t i = 0; i < n; i++) {
    make_key(bench_rng_below(&r, o->docs), kb + i * KEY_LEN);
    keys[i] = (tern_slice){kb + i * KEY_LEN, KEY_LEN};
  }
  int rc = 0;
  for (uint64_t run = 0; run < o->runs && !rc; run++)
    for (int k = 0; k < 2 && !rc; k++) {
      int m = (int)((k + run) % 2); /* alternate which mode goes first */
      bench_io io;
      uint64_t found;
      rc = cold_pass(dir, keys, n, m, &us[m][run], &io, &found);
      if (!rc && found != n) {
        bench_log("engine bench: batch: found %llu of %zu keys", (unsigned long long)found, n);
        rc = 1;
      }
      reads[m][run] = (double)io.tern_reads / (double)n;
      kib[m][run] = (double)io.read_bytes / 1024.0 / (double)n;
    }
  if (!rc) {
    printf("batch: %llu docs, %zu random present keys, cold (evicted, fresh open), %llu runs\n",
           (unsigned long long)o->docs, n, (unsigned long long)o->runs);
    printf("| path | µs/lookup (median) | min | max | reads/lookup | KiB read/lookup |\n"
           "|---|---|---|---|---|---|\n");
    static const char *const names[2] = {"tern_get, one key at a time", "tern_get_batch"};
    for (int m = 0; m < 2; m++) {
      bench_summary t = bench_summarize(us[m], o->runs), rd = bench_summarize(reads[m], o->runs),
                    kb2 = bench_summarize(kib[m], o->runs);
      printf("| %s | %.1f | %.1f | %.1f | %.3f | %.2f |\n", names[m], t.median, t.min, t.max,
             rd.median, kb2.median);
    }
    printf("\n");
  }
  double *ns[2] = {calloc(o->runs, sizeof(double)), calloc(o->runs, sizeof(double))};
  if (!rc) rc = ns[0] && ns[1] ? batch_warm_runs(dir, keys, n, o->runs, ns) : 1;
  if (!rc) print_batch_warm(o, n, ns);
  free(ns[0]);
  free(ns[1]);
  for (int m = 0; m < 2; m++) {
    free(us[m]);
    free(reads[m]);
    free(kib[m]);
  }
  free(keys);
  free(kb);
  bench_rmtree(dir);
  free(dir);
  return rc;
}

/* ns per tern_delete of n present keys (from a random start), then aborted. */
static double time_deletes(tern_index *idx, uint64_t space, uint64_t n, uint64_t seed) {
  tern_txn *t;
  if (engine_check(tern_txn_begin(&t, idx, 0), "begin")) return -1;
  uint8_t key[KEY_LEN];
  double t0 = bench_now();
  for (uint64_t i = 0; i < n; i++) {
    make_key((seed + i * 7919) % space, key);
    if (engine_check(tern_delete(t, key, KEY_LEN), "delete")) {
      tern_abort(t);
      return -1;
    }
  }
  double ns = (bench_now() - t0) * 1e9 / (double)n;
  tern_abort(t);
  return ns;
}

/* ns per tern_get of the same keys time_deletes deletes. */
static double time_same_gets(tern_index *idx, uint64_t space, uint64_t n, uint64_t seed) {
  tern_snapshot *s;
  if (engine_check(tern_snapshot_open(&s, idx), "snapshot")) return -1;
  uint8_t key[KEY_LEN], out[16];
  size_t vlen;
  double t0 = bench_now();
  for (uint64_t i = 0; i < n; i++) {
    make_key((seed + i * 7919) % space, key);
    if (engine_check(tern_get(s, key, KEY_LEN, out, sizeof out, &vlen), "get")) {
      tern_snapshot_close(s);
      return -1;
    }
  }
  double ns = (bench_now() - t0) * 1e9 / (double)n;
  tern_snapshot_close(s);
  return ns;
}

typedef struct delete_run {
  tern_index *idx;
  uint64_t docs, n;
} delete_run;

/* ns per get (0) or delete (1) of the run's keys. */
static double time_delete_or_get(void *ctx, size_t who, size_t m, size_t run) {
  const delete_run *x = ctx;
  (void)m;
  double ns = who ? time_deletes(x->idx, x->docs, x->n, run * 104729)
                  : time_same_gets(x->idx, x->docs, x->n, run * 104729);
  return ns > 0 ? ns : -1;
}

int phase_delete(const eopts *o) {
  static const char *const labels[3] = {"tern_get (snapshot)", "tern_delete (transaction)",
                                        "ratio delete / get"};
  char *dir = bench_mkdtemp(o->parent, "engine-delete");
  tern_index *idx = dir ? fresh_index(dir) : NULL;
  if (!idx || engine_load(idx, 0, o->docs)) return 1;
  delete_run x = {idx, o->docs, o->lookups < o->docs / 8 ? o->lookups : o->docs / 8};
  char title[256];
  snprintf(title, sizeof title,
           "delete: %llu keys per run of a one-segment index of %llu docs (warm), %llu runs",
           (unsigned long long)x.n, (unsigned long long)o->docs, (unsigned long long)o->runs);
  time_same_gets(idx, o->docs, x.n, 1); /* warm the cache */
  int rc =
      engine_two_way(o, time_delete_or_get, &x, title,
                     "| operation | ns (median) | min | max |\n|---|---|---|---|", labels, "%.0f");
  tern_close(idx);
  bench_rmtree(dir);
  free(dir);
  return rc;
}
