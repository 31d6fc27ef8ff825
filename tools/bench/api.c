/* SPDX-License-Identifier: MIT */
/*
 * api.c — `tern-bench api`: what a user gets through tern.h, operation by
 * operation, against LMDB on the same keys in the same process (issue 24's
 * table).  The caller holds the keys in memory; tern holds them in one
 * compacted segment, LMDB in one B+tree ("pk") plus, for the search, the
 * keys of the term's documents stored under the term ("term": what an LMDB
 * application keeps to answer "keys having term t in key order").
 *
 *   get      tern_get per key            vs mdb_get (value copied out)
 *   batch    tern_get_batch, --batch keys a call vs the same mdb_get loop
 *   scan     tern_cursor_next + key + value over every key vs MDB_NEXT
 *   range    tern_cursor_seek + 10 next  vs MDB_SET_RANGE + 10 MDB_NEXT
 *   search   tern_postings_each_by_key (keys in key order) of the term
 *            w:common vs MDB_SET_RANGE + MDB_NEXT over the term's keys
 *
 * Rounds alternate which store runs first; each figure is the median of
 * the rounds, each ratio (LMDB time / tern time, > 1: tern faster) the
 * median of the per-round ratios.  Warm: both stores are read once first.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/harness.h"
#include "tools/bench/keys_common.h"
#include "tools/bench/opts.h"
#include "tern.h"

#include <lmdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API_SHAPES_MAX 16u
#define API_STEPS 10u
#define API_NOPS 6u
#define API_TERM_PREFIX "w:common" /* LMDB's key prefix of the term's entries */

typedef struct api_shapes {
  bench_key_spec v[API_SHAPES_MAX];
  size_t n;
} api_shapes;

typedef struct api_opts {
  uint64_t docs, lookups, ranges, rounds, seed, vbytes, vary, batch, hit_every, map_size;
  api_shapes shapes;
  const char *parent;
  int ops; /* bit i: op_names[i] is timed */
} api_opts;

static const char *const op_names[API_NOPS] = {"get", "batch", "scan", "range", "search", "rscan"};

static int parse_shapes(const char *s, void *field) {
  api_shapes *o = field;
  if (!strcmp(s, "all")) {
    for (int i = 0; i < BENCH_KEYS_NSHAPES; i++)
      o->v[i] = (bench_key_spec){(bench_key_shape)i, NULL};
    o->n = BENCH_KEYS_NSHAPES;
    return 0;
  }
  o->n = 0;
  for (const char *p = s; *p;) {
    /* "file:PATH" takes the rest of the text, whose path then points into
     * argv; a shape's name is copied out. */
    const char *comma = p[0] == 'f' && !strncmp(p, "file:", 5) ? NULL : strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char name[32];
    if (comma && len >= sizeof name) return -1;
    if (comma) memcpy(name, p, len), name[len] = '\0';
    if (o->n == API_SHAPES_MAX || bench_key_spec_parse(comma ? name : p, &o->v[o->n])) return -1;
    o->n++;
    p += len + (comma != NULL);
  }
  return o->n ? 0 : -1;
}

#define API_OPT(field) offsetof(api_opts, field)
static const bench_opt k_api_opts[] = {
    BENCH_U64("docs", API_OPT(docs), "N", "1000000", 2, 0,
              "keys per shape; a file's keys are capped at N"),
    BENCH_CUSTOM("shape", API_OPT(shapes), parse_shapes, "S[,S..]", "random",
                 "random | uuid4 | sequential | timeprefixed | decimal | paths |\n"
                 "packages | emails | varlen | file:PATH | all"),
    BENCH_U64("lookups", API_OPT(lookups), "N", "500000", 1, 0,
              "present keys looked up per round, get and batch"),
    BENCH_U64("batch", API_OPT(batch), "N", "1024", 1, 0, "keys per tern_get_batch call"),
    BENCH_U64("ranges", API_OPT(ranges), "N", "100000", 1, 0, "seeks (+ 10 next) per round"),
    BENCH_U64("hit-every", API_OPT(hit_every), "N", "10", 1, 0,
              "one document in N has the term w:common"),
    BENCH_U64("value-bytes", API_OPT(vbytes), "B", "4", 4, 1024, "value of every document, >= 4"),
    BENCH_U64("value-vary", API_OPT(vary), "V", "0", 0, 64,
              "values of B to B + V bytes, the length drawn by document (0: all B)"),
    BENCH_U64("rounds", API_OPT(rounds), "R", "5", 1, 0,
              "rounds, alternating which store runs first"),
    BENCH_U64("seed", API_OPT(seed), "S", "1", 0, 0, "key and sample seed"),
    BENCH_SET("ops", API_OPT(ops), "LIST", "get|batch|scan|range|search|rscan",
              "get,batch,scan,range,search,rscan", "operations timed (the others print \"–\")"),
    BENCH_U64("map-size", API_OPT(map_size), "BYTES", NULL, 1u << 20, 0,
              "both stores' map size (the defaults; smaller under valgrind, which\n"
              "cannot map 64 GiB)"),
    BENCH_SCRATCH_DIR(API_OPT(parent)),
};

static const bench_cmd k_api_cmd =
    BENCH_CMD("api", "[options]", "the public API vs LMDB, operation by operation (warm)",
              k_api_opts, api_opts, NULL);

void tern_bench_api_usage(FILE *out) { bench_opts_usage(&k_api_cmd, out); }

/* ---------------------------------------------------------------- build */

/* Document doc's value length: --value-bytes, plus 0 .. --value-vary by a
 * hash of doc (the same in both stores). */
static size_t api_vlen(const api_opts *o, uint32_t doc) {
  uint32_t h = doc * 2654435761u;
  return (size_t)(o->vbytes + (o->vary ? (h >> 16) % (o->vary + 1) : 0));
}

static int build_tern(const char *dir, const bench_keys *k, const api_opts *o) {
  tern_index *idx;
  tern_txn *t;
  tern_options opts;
  tern_options_init(&opts);
  if (o->map_size) opts.map_size = o->map_size;
  int rc = tern_open(&idx, dir, TERN_CREATE, &opts);
  if (rc) return rc;
  rc = tern_txn_begin(&t, idx, TERN_TXN_BULK);
  uint8_t v[1024 + 64];
  tern_term common = {"w", "common", 6};
  for (size_t i = 0; rc == 0 && i < k->n; i++) {
    size_t vlen = api_vlen(o, (uint32_t)i);
    bench_value_fill(v, (uint32_t)i, vlen);
    rc = tern_put(t, bench_key_at(k, i), bench_key_len(k, i), v, vlen, &common,
                  i % o->hit_every == 0);
  }
  if (rc == 0) rc = tern_commit(t);
  if (rc == 0) rc = tern_compact(idx);
  tern_close(idx);
  return rc;
}

static int lmdb_put_sorted(MDB_txn *t, MDB_dbi pk, MDB_dbi term, const bench_keys *k,
                           const api_opts *o) {
  uint8_t v[1024 + 64], tk[sizeof API_TERM_PREFIX + BENCH_FILE_KEY_MAX];
  memcpy(tk, API_TERM_PREFIX, sizeof API_TERM_PREFIX); /* the NUL separates term and key */
  int rc = 0;
  for (size_t j = 0; !rc && j < k->n; j++) {
    uint32_t i = k->order[j];
    size_t len = bench_key_len(k, i);
    size_t vlen = api_vlen(o, i);
    bench_value_fill(v, i, vlen);
    MDB_val mk = {len, (void *)bench_key_at(k, i)}, mv = {vlen, v};
    rc = mdb_put(t, pk, &mk, &mv, MDB_APPEND);
    if (rc || i % o->hit_every) continue;
    memcpy(tk + sizeof API_TERM_PREFIX, bench_key_at(k, i), len);
    MDB_val tkv = {sizeof API_TERM_PREFIX + len, tk}, tv = {4, v};
    rc = mdb_put(t, term, &tkv, &tv, MDB_APPEND);
  }
  return rc;
}

static int build_lmdb(const char *dir, const bench_keys *k, const api_opts *o) {
  MDB_env *env;
  MDB_txn *t;
  MDB_dbi pk, term;
  int rc = mdb_env_create(&env);
  if (!rc) rc = mdb_env_set_mapsize(env, o->map_size ? (size_t)o->map_size : (size_t)64 << 30);
  if (!rc) rc = mdb_env_set_maxdbs(env, 2);
  if (!rc) rc = mdb_env_open(env, dir, MDB_NOSYNC, 0644);
  if (!rc) rc = mdb_txn_begin(env, NULL, 0, &t);
  if (!rc) rc = mdb_dbi_open(t, "pk", MDB_CREATE, &pk);
  if (!rc) rc = mdb_dbi_open(t, "term", MDB_CREATE, &term);
  if (!rc) rc = lmdb_put_sorted(t, pk, term, k, o);
  if (!rc) rc = mdb_txn_commit(t);
  if (!rc) rc = mdb_env_sync(env, 1);
  mdb_env_close(env);
  return rc;
}

/* ---------------------------------------------------------------- stores */

typedef struct stores {
  tern_index *idx;
  tern_snapshot *snap;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi pk, term;
} stores;

static int stores_open(stores *s, const char *tdir, const char *ldir, uint64_t map_size) {
  memset(s, 0, sizeof *s);
  tern_options opts;
  tern_options_init(&opts);
  if (map_size) opts.map_size = map_size;
  if (tern_open(&s->idx, tdir, TERN_RDONLY, &opts) || tern_snapshot_open(&s->snap, s->idx))
    return -1;
  if (mdb_env_create(&s->env) || mdb_env_set_maxdbs(s->env, 2) ||
      mdb_env_set_mapsize(s->env, map_size ? (size_t)map_size : (size_t)64 << 30) ||
      mdb_env_open(s->env, ldir, MDB_RDONLY, 0644) ||
      mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->txn) || mdb_dbi_open(s->txn, "pk", 0, &s->pk) ||
      mdb_dbi_open(s->txn, "term", 0, &s->term))
    return -1;
  return 0;
}

static void stores_close(stores *s) {
  if (s->txn) mdb_txn_abort(s->txn);
  if (s->env) mdb_env_close(s->env);
  if (s->snap) tern_snapshot_close(s->snap);
  if (s->idx) tern_close(s->idx);
}

/* ---------------------------------------------------------------- timed operations */

/* What each operation saw: items and a checksum of the bytes, compared
 * between the stores so that neither can skip work. */
typedef struct sink {
  uint64_t n, sum;
  uint8_t buf[1024];
} sink;

static void sink_add(sink *k, const void *key, size_t klen, const void *val, size_t vlen) {
  k->n++;
  k->sum += klen + vlen;
  if (vlen) k->sum += ((const uint8_t *)val)[0];
  if (klen) k->sum += ((const uint8_t *)key)[klen - 1];
}

typedef struct workload {
  const bench_keys *k;
  bench_key_stream gets;  /* present keys in random order */
  tern_slice *slices;     /* the same keys as slices, for tern_get_batch */
  bench_key_stream seeks; /* range starts */
  size_t batch;
} workload;

static NOIPA double tern_op_get(stores *s, const workload *w, sink *out) {
  double t0 = bench_now();
  for (size_t i = 0; i < w->gets.n; i++) {
    size_t vlen;
    if (tern_get(s->snap, bench_stream_key(&w->gets, i), bench_stream_len(&w->gets, i), out->buf,
                 sizeof out->buf, &vlen) == TERN_OK)
      sink_add(out, NULL, 0, out->buf, vlen);
  }
  return bench_now() - t0;
}

static NOIPA double lmdb_op_get(stores *s, const workload *w, sink *out) {
  double t0 = bench_now();
  for (size_t i = 0; i < w->gets.n; i++) {
    MDB_val mk = {bench_stream_len(&w->gets, i), (void *)bench_stream_key(&w->gets, i)}, mv;
    if (mdb_get(s->txn, s->pk, &mk, &mv) == 0 && mv.mv_size <= sizeof out->buf) {
      memcpy(out->buf, mv.mv_data, mv.mv_size);
      sink_add(out, NULL, 0, out->buf, mv.mv_size);
    }
  }
  return bench_now() - t0;
}

static int batch_hit(void *payload, size_t i, int status, const void *val, size_t vlen) {
  sink *out = payload;
  (void)i;
  if (status == TERN_OK && vlen <= sizeof out->buf) {
    memcpy(out->buf, val, vlen);
    sink_add(out, NULL, 0, out->buf, vlen);
  }
  return 0;
}

static NOIPA double tern_op_batch(stores *s, const workload *w, sink *out) {
  double t0 = bench_now();
  for (size_t at = 0; at < w->gets.n; at += w->batch) {
    size_t n = w->gets.n - at < w->batch ? w->gets.n - at : w->batch;
    if (tern_get_batch(s->snap, w->slices + at, n, batch_hit, out)) return -1;
  }
  return bench_now() - t0;
}

/* A full scan, forwards (first + next: MDB_FIRST + MDB_NEXT) or
 * backwards (last + prev: MDB_LAST + MDB_PREV), each key and value read;
 * inline, so that each op below is a loop of its own direction. */
static inline double tern_full_scan(stores *s, sink *out, int backwards) {
  tern_cursor *c;
  double t0 = bench_now();
  if (tern_cursor_open(&c, s->snap, NULL)) return -1;
  for (int rc = backwards ? tern_cursor_last(c) : tern_cursor_next(c); rc == TERN_OK;
       rc = backwards ? tern_cursor_prev(c) : tern_cursor_next(c)) {
    tern_slice key, val;
    tern_cursor_key(c, &key);
    tern_cursor_value(c, &val);
    sink_add(out, key.data, key.len, val.data, val.len);
  }
  tern_cursor_close(c);
  return bench_now() - t0;
}

static inline double lmdb_full_scan(stores *s, sink *out, int backwards) {
  MDB_cursor *c;
  double t0 = bench_now();
  if (mdb_cursor_open(s->txn, s->pk, &c)) return -1;
  MDB_val mk, mv;
  for (int rc = mdb_cursor_get(c, &mk, &mv, backwards ? MDB_LAST : MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(c, &mk, &mv, backwards ? MDB_PREV : MDB_NEXT))
    sink_add(out, mk.mv_data, mk.mv_size, mv.mv_data, mv.mv_size);
  mdb_cursor_close(c);
  return bench_now() - t0;
}

static NOIPA double tern_op_scan(stores *s, const workload *w, sink *out) {
  (void)w;
  return tern_full_scan(s, out, 0);
}

static NOIPA double lmdb_op_scan(stores *s, const workload *w, sink *out) {
  (void)w;
  return lmdb_full_scan(s, out, 0);
}

static NOIPA double tern_op_range(stores *s, const workload *w, sink *out) {
  tern_cursor *c;
  if (tern_cursor_open(&c, s->snap, NULL)) return -1;
  double t0 = bench_now();
  for (size_t i = 0; i < w->seeks.n; i++) {
    int rc = tern_cursor_seek(c, bench_stream_key(&w->seeks, i), bench_stream_len(&w->seeks, i));
    for (unsigned j = 0; rc == TERN_OK && j <= API_STEPS; j++) {
      tern_slice key, val;
      tern_cursor_key(c, &key);
      tern_cursor_value(c, &val);
      sink_add(out, key.data, key.len, val.data, val.len);
      if (j < API_STEPS) rc = tern_cursor_next(c);
    }
  }
  double dt = bench_now() - t0;
  tern_cursor_close(c);
  return dt;
}

static NOIPA double lmdb_op_range(stores *s, const workload *w, sink *out) {
  MDB_cursor *c;
  if (mdb_cursor_open(s->txn, s->pk, &c)) return -1;
  double t0 = bench_now();
  for (size_t i = 0; i < w->seeks.n; i++) {
    MDB_val mk = {bench_stream_len(&w->seeks, i), (void *)bench_stream_key(&w->seeks, i)}, mv;
    int rc = mdb_cursor_get(c, &mk, &mv, MDB_SET_RANGE);
    for (unsigned j = 0; rc == 0 && j <= API_STEPS; j++) {
      sink_add(out, mk.mv_data, mk.mv_size, mv.mv_data, mv.mv_size);
      if (j < API_STEPS) rc = mdb_cursor_get(c, &mk, &mv, MDB_NEXT);
    }
  }
  double dt = bench_now() - t0;
  mdb_cursor_close(c);
  return dt;
}

static int search_hit(void *payload, tern_slice key, tern_slice val) {
  (void)val;
  sink_add(payload, key.data, key.len, NULL, 0);
  return 0;
}

static NOIPA double tern_op_search(stores *s, const workload *w, sink *out) {
  (void)w;
  tern_term t = {"w", "common", 6};
  tern_postings *p;
  double t0 = bench_now();
  if (tern_postings_open(&p, s->snap, &t, 1) || tern_postings_each_by_key(p, 0, search_hit, out))
    return -1;
  tern_postings_close(p);
  return bench_now() - t0;
}

static NOIPA double lmdb_op_search(stores *s, const workload *w, sink *out) {
  (void)w;
  MDB_cursor *c;
  const size_t plen = sizeof API_TERM_PREFIX;
  double t0 = bench_now();
  if (mdb_cursor_open(s->txn, s->term, &c)) return -1;
  MDB_val mk = {plen, (void *)API_TERM_PREFIX}, mv;
  for (int rc = mdb_cursor_get(c, &mk, &mv, MDB_SET_RANGE);
       rc == 0 && mk.mv_size >= plen && !memcmp(mk.mv_data, API_TERM_PREFIX, plen);
       rc = mdb_cursor_get(c, &mk, &mv, MDB_NEXT))
    sink_add(out, (const uint8_t *)mk.mv_data + plen, mk.mv_size - plen, NULL, 0);
  mdb_cursor_close(c);
  return bench_now() - t0;
}

static NOIPA double tern_op_rscan(stores *s, const workload *w, sink *out) {
  (void)w;
  return tern_full_scan(s, out, 1);
}

static NOIPA double lmdb_op_rscan(stores *s, const workload *w, sink *out) {
  (void)w;
  return lmdb_full_scan(s, out, 1);
}

typedef double (*op_fn)(stores *s, const workload *w, sink *out);
static const op_fn tern_ops[API_NOPS] = {tern_op_get,    tern_op_batch,  tern_op_scan,
                                         tern_op_range,  tern_op_search, tern_op_rscan};
static const op_fn lmdb_ops[API_NOPS] = {lmdb_op_get,    lmdb_op_get,    lmdb_op_scan,
                                         lmdb_op_range,  lmdb_op_search, lmdb_op_rscan};

/* ---------------------------------------------------------------- driver */

/* Rounds of the two stores (0 tern, 1 LMDB) over the API_NOPS operations;
 * what each saw, compared so that neither can skip work. */
typedef struct results {
  stores *s;
  const workload *w;
  int ops; /* api_opts.ops */
  bench_rounds rounds;
  sink out[API_NOPS][2];
  int mismatch[API_NOPS];
} results;

static int workload_init(workload *w, const bench_keys *k, const api_opts *o) {
  memset(w, 0, sizeof *w);
  w->k = k;
  w->batch = (size_t)o->batch;
  bench_rng r;
  bench_rng_init(&r, o->seed ^ 0xa91);
  size_t ng = (size_t)o->lookups, nq = (size_t)o->ranges;
  uint32_t *idx = malloc((ng > nq ? ng : nq) * sizeof *idx);
  if (!idx || bench_sample(&r, k->n, ng, idx) || bench_key_stream_fill(&w->gets, k, idx, ng) ||
      bench_sample(&r, k->n, nq, idx) || bench_key_stream_fill(&w->seeks, k, idx, nq)) {
    free(idx);
    return -1;
  }
  free(idx);
  w->slices = malloc(ng * sizeof *w->slices);
  if (!w->slices) return -1;
  for (size_t i = 0; i < ng; i++)
    w->slices[i] = (tern_slice){bench_stream_key(&w->gets, i), bench_stream_len(&w->gets, i)};
  return 0;
}

static void workload_free(workload *w) {
  bench_key_stream_free(&w->gets);
  bench_key_stream_free(&w->seeks);
  free(w->slices);
}

static double time_op(void *ctx, size_t who, size_t op, size_t round) {
  results *r = ctx;
  sink *out = &r->out[op][who];
  *out = (sink){0};
  if (!(r->ops & (1 << op))) return 1; /* not timed: any positive time */
  double t = (who ? lmdb_ops : tern_ops)[op](r->s, r->w, out);
  if (t < 0) fprintf(stderr, "api: %s failed: %s\n", op_names[op], tern_errmsg());
  if (who == (round + 1) % 2) /* the round's second store: both have run */
    r->mismatch[op] |= r->out[op][0].n != r->out[op][1].n || r->out[op][0].sum != r->out[op][1].sum;
  return t;
}

static int run_rounds(const api_opts *o, results *r) {
  sink warm = {0};
  tern_op_scan(r->s, r->w, &warm);
  lmdb_op_scan(r->s, r->w, &warm);
  r->rounds = (bench_rounds){.contenders = 2, .measures = API_NOPS, .rounds = (size_t)o->rounds};
  return bench_rounds_run(&r->rounds, time_op, NULL, r);
}

static void report_row(const char *shape, size_t n, results *r) {
  printf("| %s (%zu) ", shape, n);
  for (unsigned op = 0; op < API_NOPS; op++) {
    if (!(r->ops & (1 << op))) {
      printf("| – ");
      continue;
    }
    double items = (double)(r->out[op][0].n ? r->out[op][0].n : 1);
    double tn = bench_rounds_median(&r->rounds, 0, op) * 1e9 / items;
    double ln = bench_rounds_median(&r->rounds, 1, op) * 1e9 / items;
    if (op == 3) { /* per seek, not per key read */
      tn *= API_STEPS + 1;
      ln *= API_STEPS + 1;
    }
    printf("| %.2f× (%.0f vs %.1f ns)%s ", bench_rounds_ratio(&r->rounds, op, 1, 0), ln, tn,
           r->mismatch[op] ? " MISMATCH" : "");
  }
  printf("|\n");
  fflush(stdout);
}

static int run_shape(const api_opts *o, const bench_key_spec *spec) {
  bench_keys k = {0};
  char *dir = bench_mkdtemp(o->parent, "tern-api");
  char tdir[4096], ldir[4096];
  const char *name = spec->path ? spec->path : bench_key_shape_name(spec->shape);
  if (!dir || bench_keys_load(&k, spec, (size_t)o->docs, o->seed)) {
    fprintf(stderr, "api: %s: no keys\n", name);
    return 1;
  }
  bench_path(tdir, sizeof tdir, dir, "tern");
  bench_path(ldir, sizeof ldir, dir, "lmdb");
  int ret = 1, rc;
  stores s;
  workload w;
  results *r = calloc(1, sizeof *r);
  bench_log("api: %s: %zu keys, building\n", name, k.n);
  if (!r || bench_mkdirs(ldir) || (rc = build_tern(tdir, &k, o)) != 0 ||
      (rc = build_lmdb(ldir, &k, o)) != 0) {
    fprintf(stderr, "api: %s: build failed: %s\n", name, tern_errmsg());
  } else if (stores_open(&s, tdir, ldir, o->map_size) || workload_init(&w, &k, o)) {
    fprintf(stderr, "api: %s: open failed: %s\n", name, tern_errmsg());
  } else {
    bench_log("api: %s: tern %.1f MB, LMDB %.1f MB\n", name, bench_dir_bytes(tdir) / 1e6,
              bench_dir_bytes(ldir) / 1e6);
    r->s = &s;
    r->w = &w;
    r->ops = o->ops;
    if (run_rounds(o, r) == 0) {
      report_row(spec->path ? "file" : name, k.n, r);
      ret = 0;
    }
    bench_rounds_free(&r->rounds);
    workload_free(&w);
    stores_close(&s);
  }
  free(r);
  bench_keys_free(&k);
  bench_rmtree(dir);
  free(dir);
  return ret;
}

int tern_bench_api(int argc, char **argv) {
  api_opts o;
  int prc = bench_opts_parse(&k_api_cmd, &o, argc, argv);
  if (prc) return bench_opts_exit(prc);
  bench_print_header(argc, argv);
  char values[64];
  if (o.vary)
    snprintf(values, sizeof values, "%llu- to %llu-byte", (unsigned long long)o.vbytes,
             (unsigned long long)(o.vbytes + o.vary));
  else
    snprintf(values, sizeof values, "%llu-byte", (unsigned long long)o.vbytes);
  printf("# %llu lookups (batches of %llu), %llu seeks + %u next, term in 1 doc of "
         "%llu, %s values, %llu rounds alternating; LMDB ns / tern ns per key "
         "(per seek for range), median of per-round ratios (> 1: tern faster)\n",
         (unsigned long long)o.lookups, (unsigned long long)o.batch, (unsigned long long)o.ranges,
         API_STEPS, (unsigned long long)o.hit_every, values, (unsigned long long)o.rounds);
  printf("| keys | get | batch (vs mdb_get loop) | full scan | seek + %u next | search by term, "
         "per hit | full scan backwards |\n|---|---|---|---|---|---|---|\n",
         API_STEPS);
  int ret = 0;
  for (size_t i = 0; i < o.shapes.n; i++)
    ret |= run_shape(&o, &o.shapes.v[i]);
  return ret;
}
