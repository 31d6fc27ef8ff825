/* SPDX-License-Identifier: MIT */
/*
 * scan.c — tern-bench scan: ordered access through the public API against
 * LMDB in the same run: a full scan reading every key and value (tern key
 * cursor vs an LMDB cursor's MDB_NEXT walk), short range scans (a seek and
 * 10 steps vs MDB_SET_RANGE and 10 MDB_NEXT), and resolving the keys of a
 * term's hits (tern_postings_doc per hit in doc order vs
 * tern_postings_each_by_key in key order).  Warm cache; medians of rounds.
 */
#include "tools/bench/bench.h"
#include "tools/bench/harness.h"
#include "tools/bench/keys_common.h"
#include "tools/bench/opts.h"
#include "tern.h"

#include <lmdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_ROUNDS_MAX 50u /* as before the harness */
#define SCAN_STEPS 10u
#define SCAN_HIT_EVERY 33u /* one doc in 33 has the term w:common */

typedef struct scan_opts {
  uint64_t keys, ranges, rounds, seed, vbytes;
  bench_key_shape shape;
  const char *parent;
} scan_opts;

#define SCAN_OPT(field) offsetof(scan_opts, field)
static const bench_opt k_scan_opts[] = {
    BENCH_U64("keys", SCAN_OPT(keys), "N", "1000000", 2, 0, "documents"),
    BENCH_CUSTOM("shape", SCAN_OPT(shape), bench_opt_key_shape, "S", "random",
                 "random | uuid4 | sequential | timeprefixed"),
    BENCH_U64("value-bytes", SCAN_OPT(vbytes), "B", "16", 0, 1024, "value of every document"),
    BENCH_U64("ranges", SCAN_OPT(ranges), "N", "200000", 0, 0,
              "short range scans per round, a seek and 10 steps"),
    BENCH_U64("rounds", SCAN_OPT(rounds), "R", "3", 1, SCAN_ROUNDS_MAX, "rounds; medians reported"),
    BENCH_U64("seed", SCAN_OPT(seed), "S", "1", 0, 0, "key seed"),
    BENCH_SCRATCH_DIR(SCAN_OPT(parent)),
};

static const bench_cmd k_scan_cmd =
    BENCH_CMD("scan", "[options]", "key cursors and hit resolution, tern vs LMDB (warm)",
              k_scan_opts, scan_opts, NULL);

void tern_bench_scan_usage(FILE *out) { bench_opts_usage(&k_scan_cmd, out); }

static void value_of(uint64_t i, uint8_t *v, size_t n) {
  for (size_t j = 0; j < n; j++)
    v[j] = (uint8_t)('a' + (bench_mix64(i * 131 + j) % 26));
}

static int build_tern(const char *dir, const bench_keys *k, size_t vbytes) {
  tern_index *idx;
  tern_txn *t;
  int rc = tern_open(&idx, dir, TERN_CREATE, NULL);
  if (rc) return rc;
  rc = tern_txn_begin(&t, idx, TERN_TXN_BULK);
  uint8_t v[1024];
  tern_term common = {"w", "common", 6};
  for (size_t i = 0; rc == 0 && i < k->n; i++) {
    value_of(i, v, vbytes);
    rc = tern_put(t, bench_key_at(k, i), k->width, v, vbytes, &common, i % SCAN_HIT_EVERY == 0);
  }
  if (rc == 0) rc = tern_commit(t);
  if (rc == 0) rc = tern_compact(idx);
  tern_close(idx);
  return rc;
}

static int build_lmdb(const char *dir, const bench_keys *k, size_t vbytes) {
  MDB_env *env;
  MDB_txn *t;
  MDB_dbi dbi;
  int rc = mdb_env_create(&env);
  if (!rc) rc = mdb_env_set_mapsize(env, (size_t)64 << 30);
  if (!rc) rc = mdb_env_open(env, dir, MDB_NOSYNC, 0644);
  if (!rc) rc = mdb_txn_begin(env, NULL, 0, &t);
  if (!rc) rc = mdb_dbi_open(t, NULL, 0, &dbi);
  uint8_t v[1024];
  for (size_t i = 0; !rc && i < k->n; i++) {
    const uint8_t *key = bench_key_at(k, k->order ? k->order[i] : i);
    value_of(k->order ? k->order[i] : i, v, vbytes);
    MDB_val mk = {k->width, (void *)key}, mv = {vbytes, v};
    rc = mdb_put(t, dbi, &mk, &mv, MDB_APPEND);
  }
  if (!rc) rc = mdb_txn_commit(t);
  if (!rc) rc = mdb_env_sync(env, 1);
  mdb_env_close(env);
  return rc;
}

/* ---------------------------------------------------------------- phases */

typedef struct sink {
  uint64_t n, bytes;
} sink;

static double tern_full(tern_snapshot *s, sink *out) {
  tern_cursor *c;
  sink k = {0, 0};
  double t0 = bench_now();
  if (tern_cursor_open(&c, s, NULL)) return -1;
  while (tern_cursor_next(c) == TERN_OK) {
    tern_slice key, val;
    tern_cursor_key(c, &key);
    tern_cursor_value(c, &val);
    k.n++;
    k.bytes += key.len + val.len + ((const uint8_t *)val.data)[0];
  }
  tern_cursor_close(c);
  *out = k;
  return bench_now() - t0;
}

static double lmdb_full(MDB_txn *t, MDB_dbi dbi, sink *out) {
  MDB_cursor *c;
  sink k = {0, 0};
  double t0 = bench_now();
  if (mdb_cursor_open(t, dbi, &c)) return -1;
  MDB_val mk, mv;
  int rc = mdb_cursor_get(c, &mk, &mv, MDB_FIRST);
  while (rc == 0) {
    k.n++;
    k.bytes += mk.mv_size + mv.mv_size + ((const uint8_t *)mv.mv_data)[0];
    rc = mdb_cursor_get(c, &mk, &mv, MDB_NEXT);
  }
  mdb_cursor_close(c);
  *out = k;
  return bench_now() - t0;
}

static double tern_ranges(tern_snapshot *s, const bench_keys *k, const uint32_t *starts, size_t q,
                          sink *out) {
  tern_cursor *c;
  sink r = {0, 0};
  if (tern_cursor_open(&c, s, NULL)) return -1;
  double t0 = bench_now();
  for (size_t i = 0; i < q; i++) {
    int rc = tern_cursor_seek(c, bench_key_at(k, starts[i]), k->width);
    for (unsigned j = 0; rc == TERN_OK && j <= SCAN_STEPS; j++) {
      tern_slice key, val;
      tern_cursor_key(c, &key);
      tern_cursor_value(c, &val);
      r.n++;
      r.bytes += key.len + val.len;
      if (j < SCAN_STEPS) rc = tern_cursor_next(c);
    }
  }
  double dt = bench_now() - t0;
  tern_cursor_close(c);
  *out = r;
  return dt;
}

static double lmdb_ranges(MDB_txn *t, MDB_dbi dbi, const bench_keys *k, const uint32_t *starts,
                          size_t q, sink *out) {
  MDB_cursor *c;
  sink r = {0, 0};
  if (mdb_cursor_open(t, dbi, &c)) return -1;
  double t0 = bench_now();
  for (size_t i = 0; i < q; i++) {
    MDB_val mk = {k->width, (void *)bench_key_at(k, starts[i])}, mv;
    int rc = mdb_cursor_get(c, &mk, &mv, MDB_SET_RANGE);
    for (unsigned j = 0; rc == 0 && j <= SCAN_STEPS; j++) {
      r.n++;
      r.bytes += mk.mv_size + mv.mv_size;
      if (j < SCAN_STEPS) rc = mdb_cursor_get(c, &mk, &mv, MDB_NEXT);
    }
  }
  double dt = bench_now() - t0;
  mdb_cursor_close(c);
  *out = r;
  return dt;
}

static int count_hit(void *payload, tern_slice key, tern_slice val) {
  sink *s = payload;
  (void)val;
  s->n++;
  s->bytes += key.len;
  return 0;
}

/* by_key 0: tern_postings_doc per hit (doc order); 1: each_by_key. */
static double tern_hits(tern_snapshot *s, int by_key, sink *out) {
  tern_term t = {"w", "common", 6};
  tern_postings *p;
  sink h = {0, 0};
  double t0 = bench_now();
  if (tern_postings_open(&p, s, &t, 1)) return -1;
  if (by_key) {
    tern_postings_each_by_key(p, 0, count_hit, &h);
  } else {
    uint64_t doc;
    while (tern_postings_next(p, &doc) == TERN_OK && doc != TERN_NO_MORE_DOCS) {
      tern_slice key, val;
      tern_postings_doc(p, &key, &val);
      count_hit(&h, key, val);
    }
  }
  tern_postings_close(p);
  *out = h;
  return bench_now() - t0;
}

/* ---------------------------------------------------------------- driver */

/* Measures of a round (each by two contenders, the harness alternating
 * them): the full scan and the range scans (0 tern, 1 LMDB), and the hits
 * of w:common (0 tern_postings_doc in doc order, 1 each_by_key). */
enum { M_FULL, M_RANGES, M_HITS, M_COUNT };

typedef struct results {
  tern_snapshot *s;
  MDB_txn *t;
  MDB_dbi dbi;
  const bench_keys *k;
  uint32_t *starts;
  size_t q;
  sink seen[M_COUNT][2]; /* what each saw in its last round */
  bench_rounds rounds;
} results;

static double time_scan(void *ctx, size_t who, size_t m, size_t round) {
  results *x = ctx;
  sink *out = &x->seen[m][who];
  (void)round;
  if (m == M_FULL) return who ? lmdb_full(x->t, x->dbi, out) : tern_full(x->s, out);
  if (m == M_RANGES)
    return who ? lmdb_ranges(x->t, x->dbi, x->k, x->starts, x->q, out)
               : tern_ranges(x->s, x->k, x->starts, x->q, out);
  return tern_hits(x->s, (int)who, out);
}

static int run_rounds(const scan_opts *o, const char *tdir, const char *ldir, const bench_keys *k,
                      results *r) {
  tern_index *idx;
  MDB_env *env;
  if (tern_open(&idx, tdir, TERN_RDONLY, NULL) || tern_snapshot_open(&r->s, idx)) return 1;
  if (mdb_env_create(&env) || mdb_env_set_mapsize(env, (size_t)64 << 30) ||
      mdb_env_open(env, ldir, MDB_RDONLY, 0644) || mdb_txn_begin(env, NULL, MDB_RDONLY, &r->t) ||
      mdb_dbi_open(r->t, NULL, 0, &r->dbi))
    return 1;
  r->k = k;
  r->q = (size_t)o->ranges;
  r->starts = malloc((r->q + 1) * sizeof *r->starts);
  if (!r->starts) return 1;
  bench_rng rng;
  bench_rng_init(&rng, o->seed ^ 0x5ca9);
  for (size_t i = 0; i < r->q; i++)
    r->starts[i] = (uint32_t)bench_rng_below(&rng, k->n);
  r->rounds = (bench_rounds){.contenders = 2, .measures = M_COUNT, .rounds = (size_t)o->rounds};
  int rc = bench_rounds_run(&r->rounds, time_scan, NULL, r);
  free(r->starts);
  mdb_txn_abort(r->t);
  mdb_env_close(env);
  tern_snapshot_close(r->s);
  tern_close(idx);
  return rc ? 1 : 0;
}

static void report(const scan_opts *o, results *r) {
  const bench_rounds *q = &r->rounds;
  const sink *full = r->seen[M_FULL], *ranges = r->seen[M_RANGES], *hits = r->seen[M_HITS];
  double tf = bench_rounds_median(q, 0, M_FULL), lf = bench_rounds_median(q, 1, M_FULL);
  double tr = bench_rounds_median(q, 0, M_RANGES), lr = bench_rounds_median(q, 1, M_RANGES);
  double hd = bench_rounds_median(q, 0, M_HITS), hk = bench_rounds_median(q, 1, M_HITS);
  printf("| phase | tern | LMDB | tern / LMDB |\n|---|---|---|---|\n");
  printf("| full scan, keys/s (%llu keys + values) | %.2fM | %.2fM | %.2f |\n",
         (unsigned long long)full[0].n, full[0].n / tf / 1e6, full[1].n / lf / 1e6,
         bench_rounds_ratio(q, M_FULL, 1, 0));
  printf("| range scans (seek + %u next), scans/s | %.0fk | %.0fk | %.2f |\n", SCAN_STEPS,
         o->ranges / tr / 1e3, o->ranges / lr / 1e3, bench_rounds_ratio(q, M_RANGES, 1, 0));
  printf("\n| hits of w:common (%llu) | ms | ns per hit |\n|---|---|---|\n",
         (unsigned long long)hits[0].n);
  printf("| tern_postings_doc per hit, doc order | %.2f | %.0f |\n", hd * 1e3,
         hd / (double)hits[0].n * 1e9);
  printf("| tern_postings_each_by_key, key order | %.2f | %.0f |\n", hk * 1e3,
         hk / (double)hits[0].n * 1e9);
  if (full[0].n != full[1].n || ranges[0].n != ranges[1].n || hits[0].n != hits[1].n)
    printf("\nWARNING: tern and LMDB saw different counts (%llu/%llu, %llu/%llu)\n",
           (unsigned long long)full[0].n, (unsigned long long)full[1].n,
           (unsigned long long)ranges[0].n, (unsigned long long)ranges[1].n);
}

int tern_bench_scan(int argc, char **argv) {
  scan_opts o;
  int prc = bench_opts_parse(&k_scan_cmd, &o, argc, argv);
  if (prc) return bench_opts_exit(prc);
  bench_print_header(argc, argv);
  printf("# %llu %s keys, %llu-byte values, %llu rounds (medians), warm\n",
         (unsigned long long)o.keys, bench_key_shape_name(o.shape), (unsigned long long)o.vbytes,
         (unsigned long long)o.rounds);
  bench_keys k = {0};
  char *dir = bench_mkdtemp(o.parent, "tern-scan");
  if (!dir || bench_keys_generate(&k, o.shape, (size_t)o.keys, o.seed) || bench_keys_sort(&k)) {
    fprintf(stderr, "scan: setup failed\n");
    return 1;
  }
  char tdir[4096], ldir[4096];
  bench_path(tdir, sizeof tdir, dir, "tern");
  bench_path(ldir, sizeof ldir, dir, "lmdb");
  int ret = 1;
  results *r = calloc(1, sizeof *r);
  if (r && bench_mkdirs(ldir) == 0 && build_tern(tdir, &k, (size_t)o.vbytes) == 0 &&
      build_lmdb(ldir, &k, (size_t)o.vbytes) == 0 && run_rounds(&o, tdir, ldir, &k, r) == 0) {
    report(&o, r);
    ret = 0;
    bench_rounds_free(&r->rounds);
  } else {
    fprintf(stderr, "scan: failed: %s\n", tern_errmsg());
  }
  free(r);
  bench_keys_free(&k);
  bench_rmtree(dir);
  free(dir);
  return ret;
}
