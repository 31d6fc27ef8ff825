/* SPDX-License-Identifier: MIT */
/*
 * engine_erase.c — the erase phase of `tern-bench engine`: one-document
 * transactions that each delete one present key and commit, on tern and
 * on LMDB holding the same --docs keys (engine_stores.c), each commit
 * timed alone; what a service that removes records one request at a time
 * gets.  A tern delete of a key in a segment is a new generation of that
 * segment's live docs, written to the catalog with the commit.
 *
 * Every run deletes --commits keys not deleted before (a random order of
 * distinct keys, the same for both stores), the store order rotating by
 * run; per run the median and p99 of the commits' times, then medians
 * over the runs.  Commits fsync as each store does by default: put --dir
 * on tmpfs to time the stores, not the disk.
 */
#include "tools/bench/bench_common.h"
#include "tools/bench/engine.h"

#include <stdlib.h>
#include <string.h>

enum { STORES = 2, F_MEDIAN = 0, F_P99, F_WHATS };
static const char *const store_name[STORES] = {"tern", "LMDB"};

/* One transaction deleting key number i, committed. */
static int erase_one(estore *s, uint64_t i) {
  uint8_t key[KEY_LEN];
  make_key(i, key);
  if (s->idx) {
    tern_txn *t;
    if (engine_check(tern_txn_begin(&t, s->idx, 0), "begin")) return -1;
    if (engine_check(tern_delete(t, key, KEY_LEN), "delete")) {
      tern_abort(t);
      return -1;
    }
    return engine_check(tern_commit(t), "commit");
  }
  MDB_txn *t;
  MDB_val k = {KEY_LEN, key};
  if (mdb_txn_begin(s->env, NULL, 0, &t)) return -1;
  if (mdb_del(t, s->dbi, &k, NULL)) {
    mdb_txn_abort(t);
    bench_log("engine bench: erase: an LMDB delete failed\n");
    return -1;
  }
  return mdb_txn_commit(t) ? -1 : 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Deletes keys[0, n) from s, one commit each: the median and p99 µs in
 * out[F_MEDIAN], out[F_P99]; us: room for n times. */
static int erase_run(estore *s, const uint64_t *keys, uint64_t n, double *us, double out[F_WHATS]) {
  for (uint64_t i = 0; i < n; i++) {
    double t0 = bench_now();
    if (erase_one(s, keys[i])) return -1;
    us[i] = (bench_now() - t0) * 1e6;
  }
  qsort(us, n, sizeof *us, cmp_double);
  out[F_MEDIAN] = us[n / 2];
  out[F_P99] = us[n * 99 / 100];
  return 0;
}

/* o->runs * o->commits distinct key numbers below o->docs, in random order. */
static uint64_t *erase_order(const eopts *o) {
  uint64_t total = o->runs * o->commits;
  if (total > o->docs) {
    bench_log("engine bench: erase: --runs x --commits (%llu) exceeds --docs\n",
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

static void erase_print(const eopts *o, double *fig, double *ratio) {
  printf("erase: %llu docs (one segment / one B+tree), %llu one-document delete + commit "
         "transactions a run, each timed alone; medians of %llu runs\n",
         (unsigned long long)o->docs, (unsigned long long)o->commits,
         (unsigned long long)o->runs);
  printf("| store | median µs | p99 µs |\n|---|---|---|\n");
  for (int k = 0; k < STORES; k++) {
    bench_summary m = bench_summarize(fig + (k * F_WHATS + F_MEDIAN) * o->runs, o->runs);
    bench_summary p = bench_summarize(fig + (k * F_WHATS + F_P99) * o->runs, o->runs);
    printf("| %s | %.1f | %.1f |\n", store_name[k], m.median, p.median);
  }
  bench_summary r = bench_summarize(ratio, o->runs);
  printf("| ratio tern / LMDB, median (< 1: tern faster) | %.2fx (min %.2fx, max %.2fx) | |\n\n",
         r.median, r.min, r.max);
}

int phase_erase(const eopts *o) {
  estore st[STORES] = {0};
  uint64_t *keys = erase_order(o);
  double *us = malloc(o->commits * sizeof *us);
  double *fig = calloc(STORES * F_WHATS * o->runs, sizeof *fig);
  double *ratio = calloc(o->runs, sizeof *ratio);
  int bad = !keys || !us || !fig || !ratio;
  for (int k = 0; k < STORES && !bad; k++)
    bad = estore_open(&st[k], o, k == 1, "engine-erase");
  for (uint64_t run = 0; run < o->runs && !bad; run++) {
    for (int j = 0; j < STORES && !bad; j++) {
      int k = (int)((run + (uint64_t)j) % STORES);
      double got[F_WHATS];
      bad = erase_run(&st[k], keys + run * o->commits, o->commits, us, got);
      for (int w = 0; w < F_WHATS && !bad; w++) fig[(k * F_WHATS + w) * o->runs + run] = got[w];
    }
    if (!bad) ratio[run] = fig[F_MEDIAN * o->runs + run] / fig[(F_WHATS + F_MEDIAN) * o->runs + run];
  }
  if (!bad) erase_print(o, fig, ratio);
  for (int k = 0; k < STORES; k++) estore_close(&st[k]);
  free(keys);
  free(us);
  free(fig);
  free(ratio);
  return bad;
}
