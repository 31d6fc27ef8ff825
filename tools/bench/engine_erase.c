/* SPDX-License-Identifier: MIT */
/*
 * engine_erase.c — the erase phase of `tern-bench engine`: one-document
 * transactions that each delete one present key, or replace its value,
 * and commit, on tern and on LMDB holding the same --docs keys
 * (engine_stores.c), each commit timed alone; what a service that removes
 * or updates records one request at a time gets.  A tern delete or
 * replacement of a key in a segment is a new generation of that
 * segment's live docs, written to the catalog with the commit.
 *
 * Every run deletes --commits keys and replaces --commits others, none
 * touched before (a random order of distinct keys, the same for both
 * stores), the store order rotating by run; per run and kind the median
 * and p99 of the commits' times, then medians over the runs.  Commits fsync as each store does by default: put --dir
 * on tmpfs to time the stores, not the disk.
 */
#include "tools/bench/bench_common.h"
#include "tools/bench/engine.h"

#include <stdlib.h>
#include <string.h>

enum { STORES = 2, KINDS = 2, F_MEDIAN = 0, F_P99, F_FIRST, F_WHATS };
/* The first commits of a run, timed on their own: the first run's deletes
 * meet a segment with no deletions yet (a tern segment's live docs are a
 * short list of runs until they outgrow it); its replacements come after
 * those deletes. */
enum { FIRST_COMMITS = 100 };
static const char *const store_name[STORES] = {"tern", "LMDB"};
static const char *const kind_name[KINDS] = {"delete", "replace"};

/* The operation of kind (0 delete, 1 replace: a new 16-byte value) on
 * key; 0 or -1. */
static int tern_op(tern_txn *t, const uint8_t *key, int kind) {
  static const uint8_t val[KEY_LEN] = "replaced value!";
  return kind ? engine_check(tern_put(t, key, KEY_LEN, val, KEY_LEN, NULL, 0), "put")
              : engine_check(tern_delete(t, key, KEY_LEN), "delete");
}

static int lmdb_op(estore *s, MDB_txn *t, const uint8_t *key, int kind) {
  static const uint8_t val[KEY_LEN] = "replaced value!";
  MDB_val k = {KEY_LEN, (void *)key}, v = {KEY_LEN, (void *)val};
  int rc = kind ? mdb_put(t, s->dbi, &k, &v, 0) : mdb_del(t, s->dbi, &k, NULL);
  if (rc) bench_log("engine bench: erase: an LMDB %s failed\n", kind_name[kind]);
  return rc ? -1 : 0;
}

/* One transaction of kind on key number i, committed. */
static int erase_one(estore *s, uint64_t i, int kind) {
  uint8_t key[KEY_LEN];
  make_key(i, key);
  if (s->idx) {
    tern_txn *t;
    if (engine_check(tern_txn_begin(&t, s->idx, 0), "begin")) return -1;
    if (tern_op(t, key, kind)) {
      tern_abort(t);
      return -1;
    }
    return engine_check(tern_commit(t), "commit");
  }
  MDB_txn *t;
  if (mdb_txn_begin(s->env, NULL, 0, &t)) return -1;
  if (lmdb_op(s, t, key, kind)) {
    mdb_txn_abort(t);
    return -1;
  }
  return mdb_txn_commit(t) ? -1 : 0;
}

/* Deletes (kind 0) or replaces keys[0, n) of s, one commit each: the
 * median and p99 µs in out[F_MEDIAN], out[F_P99], the median of the first
 * FIRST_COMMITS in out[F_FIRST]; us: room for n times. */
static int erase_run(estore *s, const uint64_t *keys, uint64_t n, int kind, double *us,
                     double out[F_WHATS]) {
  for (uint64_t i = 0; i < n; i++) {
    double t0 = bench_now();
    if (erase_one(s, keys[i], kind)) return -1;
    us[i] = (bench_now() - t0) * 1e6;
  }
  double first[FIRST_COMMITS];
  uint64_t nf = n < FIRST_COMMITS ? n : FIRST_COMMITS;
  memcpy(first, us, nf * sizeof *first);
  out[F_FIRST] = bench_summarize(first, nf).median;
  out[F_MEDIAN] = bench_summarize(us, n).median; /* sorts us */
  out[F_P99] = us[n * 99 / 100];
  return 0;
}

/* KINDS * o->runs * o->commits distinct key numbers below o->docs, in
 * random order. */
static uint64_t *erase_order(const eopts *o) {
  uint64_t total = KINDS * o->runs * o->commits;
  if (total > o->docs) {
    bench_log("engine bench: erase: 2 x --runs x --commits (%llu) exceeds --docs\n",
              (unsigned long long)total);
    return NULL;
  }
  uint64_t *all = malloc(o->docs * sizeof *all);
  if (!all) return NULL;
  for (uint64_t i = 0; i < o->docs; i++) all[i] = i;
  bench_rng r;
  bench_rng_init(&r, 0xe7a5e);
  for (uint64_t i = 0; i < total; i++) { /* the first `total` of a Fisher-Yates shuffle */
    uint64_t j = i + bench_rng_below(&r, o->docs - i), t = all[i];
    all[i] = all[j];
    all[j] = t;
  }
  return all;
}

/* fig by [kind][store][what][run], ratio by [kind][run]. */
static void erase_print(const eopts *o, double *fig, double *ratio) {
  printf("erase: %llu docs (one segment / one B+tree), %llu one-document transactions a run "
         "of each kind (delete + commit, replace + commit), each timed alone; medians of "
         "%llu runs\n",
         (unsigned long long)o->docs, (unsigned long long)o->commits,
         (unsigned long long)o->runs);
  printf("| store, kind | median µs | p99 µs | first %d of run 1, median µs (deletes: none before) "
         "|\n|---|---|---|---|\n",
         FIRST_COMMITS);
  for (int q = 0; q < KINDS; q++)
    for (int k = 0; k < STORES; k++) {
      const double *f = fig + ((size_t)(q * STORES + k) * F_WHATS) * o->runs;
      bench_summary m = bench_summarize((double *)f + F_MEDIAN * o->runs, o->runs);
      bench_summary p = bench_summarize((double *)f + F_P99 * o->runs, o->runs);
      printf("| %s %s | %.1f | %.1f | %.1f |\n", store_name[k], kind_name[q], m.median, p.median,
             f[F_FIRST * o->runs]);
    }
  for (int q = 0; q < KINDS; q++) {
    bench_summary r = bench_summarize(ratio + (size_t)q * o->runs, o->runs);
    printf("| ratio tern / LMDB, %s median (< 1: tern faster) | %.2fx (min %.2fx, max %.2fx) | | |\n",
           kind_name[q], r.median, r.min, r.max);
  }
  printf("\n");
}

/* Run `run` of both kinds on both stores, the store order rotating. */
static int erase_round(estore *st, const eopts *o, const uint64_t *keys, uint64_t run, double *us,
                       double *fig, double *ratio) {
  for (int q = 0; q < KINDS; q++) {
    const uint64_t *mine = keys + (q * o->runs + run) * o->commits;
    for (int j = 0; j < STORES; j++) {
      int k = (int)((run + (uint64_t)j) % STORES);
      double got[F_WHATS];
      if (erase_run(&st[k], mine, o->commits, q, us, got)) return -1;
      for (int w = 0; w < F_WHATS; w++)
        fig[((size_t)(q * STORES + k) * F_WHATS + w) * o->runs + run] = got[w];
    }
    const double *tern = fig + (size_t)(q * STORES) * F_WHATS * o->runs;
    const double *lmdb = tern + F_WHATS * o->runs;
    ratio[q * o->runs + run] = tern[F_MEDIAN * o->runs + run] / lmdb[F_MEDIAN * o->runs + run];
  }
  return 0;
}

int phase_erase(const eopts *o) {
  estore st[STORES] = {0};
  uint64_t *keys = erase_order(o);
  double *us = malloc(o->commits * sizeof *us);
  double *fig = calloc(KINDS * STORES * F_WHATS * o->runs, sizeof *fig);
  double *ratio = calloc(KINDS * o->runs, sizeof *ratio);
  int bad = !keys || !us || !fig || !ratio;
  for (int k = 0; k < STORES && !bad; k++)
    bad = estore_open(&st[k], o, k == 1, "engine-erase");
  for (uint64_t run = 0; run < o->runs && !bad; run++)
    bad = erase_round(st, o, keys, run, us, fig, ratio);
  if (!bad) erase_print(o, fig, ratio);
  for (int k = 0; k < STORES; k++) estore_close(&st[k]);
  free(keys);
  free(us);
  free(fig);
  free(ratio);
  return bad;
}
