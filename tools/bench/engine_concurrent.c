/* SPDX-License-Identifier: MIT */
/*
 * engine_concurrent.c — the concurrent phase of `tern-bench engine`: warm
 * gets of present keys while another thread of the same process commits
 * one-document transactions of new keys as fast as it can, against the
 * same gets with no writer, on tern and on LMDB (what a service that
 * serves reads while it takes writes gets).
 *
 * Each store holds --docs keys of 16 bytes with 16-byte values (tern:
 * bulk-loaded and compacted to one segment; LMDB: one B+tree).  The
 * reader looks up --lookups keys held in its memory, in random order,
 * taking a fresh snapshot (LMDB: a read transaction) every 256 gets, as
 * a server takes one per request batch, so that it sees what the writer
 * committed.  Each round times, per store, the gets alone and then with
 * the writer running (started 20 ms before), the store order rotating by
 * round; figures are medians over the rounds.  The writer's commits fsync
 * as each store does by default: put --dir on tmpfs to time the stores,
 * not the disk.
 */
#include "tools/bench/bench_common.h"
#include "tools/bench/engine.h"

#include "tern.h"

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { GETS_PER_SNAPSHOT = 256, STORES = 2 };
static const char *const store_name[STORES] = {"tern", "LMDB"};

typedef struct cwriter {
  estore *s;
  uint64_t next; /* key number of the next commit: past the loaded ones */
  atomic_int stop;
  uint64_t commits;
  int failed;
  pthread_t thread;
} cwriter;

/* One put + commit of key number i, with its 16-byte value. */
static int store_commit(estore *s, uint64_t i) {
  uint8_t key[KEY_LEN];
  make_key(i, key);
  if (s->idx) {
    tern_txn *t;
    return engine_check(tern_txn_begin(&t, s->idx, 0), "begin") ||
           engine_check(tern_put(t, key, KEY_LEN, key, KEY_LEN, NULL, 0), "put") ||
           engine_check(tern_commit(t), "commit");
  }
  MDB_txn *t;
  MDB_val k = {KEY_LEN, key}, v = {KEY_LEN, key};
  if (mdb_txn_begin(s->env, NULL, 0, &t)) return -1;
  if (mdb_put(t, s->dbi, &k, &v, 0)) {
    mdb_txn_abort(t);
    return -1;
  }
  return mdb_txn_commit(t) ? -1 : 0;
}

static void *writer_main(void *arg) {
  cwriter *w = arg;
  while (!atomic_load_explicit(&w->stop, memory_order_relaxed) && !w->failed) {
    w->failed = store_commit(w->s, w->next++);
    w->commits += !w->failed;
  }
  return NULL;
}

/* Gets of keys[0, n) through snapshots renewed every GETS_PER_SNAPSHOT;
 * ns a get, or a negative number when one failed or missed. */
static double tern_gets(tern_index *idx, const uint8_t *keys, uint64_t n) {
  uint8_t buf[64];
  size_t vlen;
  tern_snapshot *s = NULL;
  int bad = 0;
  double t0 = bench_now();
  for (uint64_t i = 0; i < n && !bad; i++) {
    if (i % GETS_PER_SNAPSHOT == 0) {
      if (s) tern_snapshot_close(s);
      s = NULL;
      if (engine_check(tern_snapshot_open(&s, idx), "snapshot")) break;
    }
    bad = engine_check(tern_get(s, keys + i * KEY_LEN, KEY_LEN, buf, sizeof buf, &vlen), "get");
  }
  double ns = (bench_now() - t0) * 1e9 / (double)n;
  if (s) tern_snapshot_close(s);
  return bad || !s ? -1 : ns;
}

static double lmdb_gets(estore *st, const uint8_t *keys, uint64_t n) {
  uint8_t buf[64];
  MDB_txn *t = NULL;
  int bad = 0;
  double t0 = bench_now();
  for (uint64_t i = 0; i < n && !bad; i++) {
    if (i % GETS_PER_SNAPSHOT == 0) {
      if (t) mdb_txn_abort(t);
      t = NULL;
      if (mdb_txn_begin(st->env, NULL, MDB_RDONLY, &t)) break;
    }
    MDB_val k = {KEY_LEN, (void *)(keys + i * KEY_LEN)}, v;
    bad = mdb_get(t, st->dbi, &k, &v) != 0 || v.mv_size > sizeof buf;
    if (!bad) memcpy(buf, v.mv_data, v.mv_size); /* copied out, as tern_get does */
  }
  double ns = (bench_now() - t0) * 1e9 / (double)n;
  if (t) mdb_txn_abort(t);
  if (bad || !t) bench_log("engine bench: concurrent: an LMDB get failed\n");
  return bad || !t ? -1 : ns;
}

static double store_gets(estore *s, const uint8_t *keys, uint64_t n) {
  return s->idx ? tern_gets(s->idx, keys, n) : lmdb_gets(s, keys, n);
}

/* The gets with the writer running: *busy ns a get, *rate commits a
 * second meanwhile.  0, or -1 on a failure. */
static int gets_while_writing(estore *s, uint64_t *next, const uint8_t *keys, uint64_t n,
                              double *busy, double *rate) {
  cwriter w = {.s = s, .next = *next};
  atomic_init(&w.stop, 0);
  if (pthread_create(&w.thread, NULL, writer_main, &w)) return -1;
  struct timespec settle = {0, 20 * 1000 * 1000};
  nanosleep(&settle, NULL);
  uint64_t c0 = w.commits; /* a read of the writer's count: a figure, not a decision */
  double t0 = bench_now();
  *busy = store_gets(s, keys, n);
  double secs = bench_now() - t0;
  atomic_store(&w.stop, 1);
  pthread_join(w.thread, NULL);
  *rate = (double)(w.commits - c0) / secs;
  *next = w.next;
  return w.failed || *busy < 0 ? -1 : 0;
}

/* Figures by [store][what][run]: what 0 idle ns, 1 busy ns, 2 busy/idle,
 * 3 commits a second while reading. */
enum { F_IDLE, F_BUSY, F_SLOWDOWN, F_RATE, F_WHATS };

static void print_figures(const eopts *o, double *fig, double *ratio) {
  printf("concurrent: %llu docs (one segment / one B+tree), %llu gets of present keys a run "
         "(a snapshot every %d), alone and while another thread commits one-document "
         "transactions; medians of %llu runs\n",
         (unsigned long long)o->docs, (unsigned long long)o->lookups, GETS_PER_SNAPSHOT,
         (unsigned long long)o->runs);
  printf("| store | ns/get alone | ns/get while writing | slowdown | commits/s while reading |\n"
         "|---|---|---|---|---|\n");
  for (int k = 0; k < STORES; k++) {
    bench_summary f[F_WHATS];
    for (int w = 0; w < F_WHATS; w++)
      f[w] = bench_summarize(fig + (k * F_WHATS + w) * o->runs, o->runs);
    printf("| %s | %.0f | %.0f | %.2fx | %.0f |\n", store_name[k], f[F_IDLE].median,
           f[F_BUSY].median, f[F_SLOWDOWN].median, f[F_RATE].median);
  }
  bench_summary r = bench_summarize(ratio, o->runs);
  printf("| ratio LMDB / tern while writing (> 1: tern faster) | %.2fx (min %.2fx, max %.2fx) "
         "| | | |\n\n",
         r.median, r.min, r.max);
}

int phase_concurrent(const eopts *o) {
  estore st[STORES] = {0};
  uint64_t next[STORES] = {o->docs, o->docs};
  uint8_t *keys = malloc(o->lookups * KEY_LEN);
  double *fig = calloc(STORES * F_WHATS * o->runs, sizeof *fig);
  double *ratio = calloc(o->runs, sizeof *ratio);
  int bad = !keys || !fig || !ratio;
  for (int k = 0; k < STORES && !bad; k++)
    bad = estore_open(&st[k], o, k == 1, "engine-concurrent");
  bench_rng r;
  bench_rng_init(&r, 0xc0c0);
  for (uint64_t i = 0; i < o->lookups && !bad; i++) /* held by the caller */
    make_key(bench_rng_below(&r, o->docs), keys + i * KEY_LEN);
  for (uint64_t run = 0; run < o->runs && !bad; run++) {
    for (int j = 0; j < STORES && !bad; j++) {
      int k = (int)((run + (uint64_t)j) % STORES);
      double *f = fig + k * F_WHATS * o->runs;
      f[F_IDLE * o->runs + run] = store_gets(&st[k], keys, o->lookups);
      bad = f[F_IDLE * o->runs + run] < 0 ||
            gets_while_writing(&st[k], &next[k], keys, o->lookups, &f[F_BUSY * o->runs + run],
                               &f[F_RATE * o->runs + run]);
      if (!bad) f[F_SLOWDOWN * o->runs + run] = f[F_BUSY * o->runs + run] / f[F_IDLE * o->runs + run];
    }
    if (!bad) ratio[run] = fig[(F_WHATS + F_BUSY) * o->runs + run] / fig[F_BUSY * o->runs + run];
  }
  if (!bad) print_figures(o, fig, ratio);
  for (int k = 0; k < STORES; k++)
    estore_close(&st[k]);
  free(keys);
  free(fig);
  free(ratio);
  return bad;
}
