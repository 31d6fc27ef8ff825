/* SPDX-License-Identifier: MIT */
/*
 * pk.c — `tern-bench pk`: primary-key lookups on a cold and a warm page
 * cache, tern (pulsing threshold 1 and 0, through the public API) side by
 * side with LMDB (MDB_NORDAHEAD and default read-ahead), all built from
 * the same keys in the same run.
 *
 * A cold measurement is: close the store, evict every file of it from the
 * page cache, open it again, look up N keys sampled at random (present
 * keys, or keys known to be absent), verify every answer.  It records time,
 * the codec's logical reads (tern only), major faults and the bytes the
 * kernel fetched from the disk, per lookup, and separately what opening
 * cost.  Every (N, run) uses one sample for all stores, so the stores
 * answer the same questions.
 *
 * Outputs (OUTDIR): build.csv, results.csv (one row per store x phase x N x
 * run), results.md (medians with min-max, ratios, target checks) and, with
 * gnuplot, cold-lookups.png (from cold-lookups.dat / cold-lookups.gp).
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/keys_common.h"
#include "tools/bench/lmdb_common.h"
#include "tools/bench/opts.h"

#include "codec/io.h"
#include "tern.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ options */

typedef struct pk_opts {
  uint64_t docs;
  bench_key_spec spec;
  uint64_t values;   /* value bytes */
  bench_opt_u64 inl; /* --inline: tern's inline value limit */
  uint64_t map_size; /* tern's catalog map, 0: the default */
  uint64_t *lookups;
  size_t nlookups;
  uint64_t runs, segments, warm, seed;
  const char *parent, *out;
  int lmdb_readahead, keep;
  int evict;          /* bench_evict_method */
  const char *stores; /* comma-separated subset, NULL: all */
} pk_opts;

static const char *pk_check(void *opts) {
  const pk_opts *o = opts;
  return o->segments > o->docs ? "--segments must be <= --docs" : NULL;
}

#define PK_OPT(field) offsetof(pk_opts, field)
static const bench_opt k_pk_opts[] = {
    BENCH_U64("docs", PK_OPT(docs), "N", "10000000", 1, UINT32_MAX - 1,
              "documents (keys) to index (k/M suffixes)"),
    BENCH_CUSTOM("keys", PK_OPT(spec), bench_opt_key_spec, "SHAPE", "random",
                 "random (16 base36 chars) | uuid4 | sequential |\n"
                 "timeprefixed | decimal | paths | packages | emails |\n"
                 "varlen | file:PATH (one key a line)"),
    BENCH_U64("values", PK_OPT(values), "BYTES", "4", 4, 1u << 20, "value size, >= 4"),
    BENCH_U64_SET("inline", PK_OPT(inl), "BYTES", 0, TERN_INLINE_MAX,
                  "tern's inline value limit (the library's default)"),
    BENCH_U64("map-size", PK_OPT(map_size), "BYTES", NULL, 1u << 20, 0,
              "tern's catalog map size (the default; smaller under\n"
              "valgrind, which cannot map 64 GiB)"),
    BENCH_U64S("lookups", PK_OPT(lookups), PK_OPT(nlookups), "LIST",
               "100,1000,10000,100000,1000000", 1, UINT32_MAX - 1, "cold lookup counts"),
    BENCH_U64("runs", PK_OPT(runs), "R", "3", 1, 1000, "repetitions of every measurement"),
    BENCH_U64("segments", PK_OPT(segments), "S", "1", 1, 0, "tern: S bulk commits of docs/S each"),
    BENCH_U64("warm", PK_OPT(warm), "N", "1000000", 0, UINT32_MAX - 1,
              "warm lookups per run, present and absent each"),
    BENCH_STR("dir", PK_OPT(parent), "DIR", "/var/tmp", "parent of the scratch directory (not tmpfs)"),
    BENCH_STR("out", PK_OPT(out), "OUTDIR", "bench-out",
              "results.csv, build.csv, results.md, cold-lookups.png"),
    BENCH_FLAG("lmdb-readahead", PK_OPT(lmdb_readahead), 1, 1,
               "include LMDB with default flags (read-ahead)"),
    BENCH_FLAG("no-lmdb-readahead", PK_OPT(lmdb_readahead), 0, 0, "only LMDB with MDB_NORDAHEAD"),
    BENCH_FLAG("drop-caches", PK_OPT(evict), BENCH_EVICT_DROP_CACHES, 0,
               "evict with /proc/sys/vm/drop_caches (whole machine)\n"
               "instead of fdatasync + POSIX_FADV_DONTNEED per file"),
    BENCH_STR("stores", PK_OPT(stores), "LIST", NULL,
              "only these of tern-pulse1,tern-pulse0,tern-pulse1-pread,\n"
              "lmdb-nordahead,lmdb-readahead (all)"),
    BENCH_U64("seed", PK_OPT(seed), "S", "0x7465726E2D706B" /* "tern-pk" */, 0, 0,
              "key generator seed"),
    BENCH_FLAG("keep", PK_OPT(keep), 1, 0, "keep the scratch directory"),
};

static const bench_cmd k_pk_cmd = {.name = "pk",
                                   .synopsis = "[options]",
                                   .summary = "cold/warm primary-key lookups: tern vs LMDB",
                                   .opts = k_pk_opts,
                                   .nopts = BENCH_NOPTS(k_pk_opts),
                                   .struct_size = sizeof(pk_opts),
                                   .check = pk_check};

void tern_bench_pk_usage(FILE *out) { bench_opts_usage(&k_pk_cmd, out); }

/* ------------------------------------------------------------ stores */

enum { STORE_TERN, STORE_LMDB };
enum { PHASE_COLD_PRESENT, PHASE_COLD_ABSENT, PHASE_WARM_PRESENT, PHASE_WARM_ABSENT, NPHASES };
static const char *const k_phase_names[NPHASES] = {"cold-present", "cold-absent", "warm-present",
                                                   "warm-absent"};

typedef struct pk_store {
  const char *name;
  int kind;
  uint32_t threshold; /* tern */
  int pread;          /* tern: opened with TERN_PREAD (reads files built by tern-pulse1) */
  int nordahead;      /* lmdb */
  char dir[4096];
  /* open state */
  tern_index *idx;
  tern_snapshot *snap;
  bench_lmdb lmdb;
  /* build */
  double build_s, sort_s;
  uint64_t bytes, segments;
  uint64_t b_terms, b_index, b_postings, b_filter, b_values, b_segments;
  int built_here; /* 0: shares the files another store built */
} pk_store;

static int store_open(pk_store *s, char *msg, size_t cap) {
  if (s->kind == STORE_LMDB) return bench_lmdb_open(&s->lmdb, s->dir, s->nordahead, msg, cap);
  int rc = tern_open(&s->idx, s->dir, TERN_RDONLY | (s->pread ? TERN_PREAD : 0u), NULL);
  if (rc == TERN_OK) {
    rc = tern_snapshot_open(&s->snap, s->idx);
    if (rc != TERN_OK) {
      tern_close(s->idx);
      s->idx = NULL;
    }
  }
  if (rc != TERN_OK)
    snprintf(msg, cap, "%.300s: %s (%.150s)", s->dir, tern_strerror(rc), tern_errmsg());
  return rc;
}

static void store_close(pk_store *s) {
  if (s->kind == STORE_LMDB) {
    bench_lmdb_close(&s->lmdb);
    return;
  }
  if (s->snap) tern_snapshot_close(s->snap);
  if (s->idx) tern_close(s->idx);
  s->snap = NULL;
  s->idx = NULL;
}

/* The value size of this run (both stores copy the value out, as a
 * caller keeping it would). */
static size_t g_values = 4;
static uint8_t g_vbuf[1u << 20];

/* 0 found (*doc set), 1 absent, < 0 an error. */
static int store_get(pk_store *s, const uint8_t *key, size_t len, uint32_t *doc) {
  uint8_t *buf = g_vbuf;
  size_t vlen = 0;
  if (s->kind == STORE_LMDB) {
    const uint8_t *v;
    int rc = bench_lmdb_get_value(&s->lmdb, key, len, doc, &v, &vlen);
    if (rc == 0 && vlen == g_values) memcpy(buf, v, vlen);
    return rc == 0 ? (vlen == g_values ? 0 : -1) : rc == MDB_NOTFOUND ? 1 : -1;
  }
  int rc = tern_get(s->snap, key, len, buf, g_values, &vlen);
  if (rc == TERN_NOTFOUND) return 1;
  if (rc != TERN_OK || vlen != g_values) return -1;
  *doc = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 24;
  return 0;
}

/* ------------------------------------------------------------ building */

static int build_tern(pk_store *s, const bench_keys *k, const pk_opts *o) {
  uint64_t segments = o->segments;
  tern_options opts;
  tern_options_init(&opts);
  opts.pulsing_threshold = s->threshold;
  if (o->inl.set) opts.inline_value_max = (uint32_t)o->inl.v;
  if (o->map_size) opts.map_size = o->map_size;
  double t0 = bench_now();
  tern_index *idx = NULL;
  int rc = tern_open(&idx, s->dir, TERN_CREATE, &opts);
  if (rc != TERN_OK) goto fail;
  for (uint64_t seg = 0; seg < segments; seg++) {
    size_t from = (size_t)(k->n * seg / segments), to = (size_t)(k->n * (seg + 1) / segments);
    tern_txn *txn = NULL;
    if ((rc = tern_txn_begin(&txn, idx, TERN_TXN_BULK)) != TERN_OK) goto fail;
    for (size_t i = from; i < to; i++) {
      bench_value_fill(g_vbuf, (uint32_t)i, g_values);
      if ((rc = tern_put(txn, bench_key_at(k, i), bench_key_len(k, i), g_vbuf, g_values, NULL, 0)) !=
          TERN_OK) {
        tern_abort(txn);
        goto fail;
      }
      if ((i & 0xFFFF) == 0) bench_progress(s->name, i, k->n);
    }
    bench_progress_done();
    if ((rc = tern_commit(txn)) != TERN_OK) goto fail;
  }
  s->build_s = bench_now() - t0;
  tern_stats *st = NULL;
  if ((rc = tern_stats_get(&st, idx)) != TERN_OK) goto fail;
  s->segments = st->nsegments;
  for (size_t i = 0; i < st->nsegments; i++) {
    const tern_segment_stats *g = &st->segments[i];
    s->b_terms += g->bytes_terms;
    s->b_index += g->bytes_index;
    s->b_postings += g->bytes_postings;
    s->b_filter += g->bytes_filter;
    s->b_values += g->bytes_values;
    s->b_segments += g->bytes;
  }
  if (st->docs != k->n)
    bench_log("  WARNING: %s holds %llu live docs, expected %zu", s->name,
              (unsigned long long)st->docs, k->n);
  tern_stats_free(st);
  rc = tern_close(idx);
  idx = NULL;
  if (rc != TERN_OK) goto fail;
  s->bytes = bench_dir_bytes(s->dir);
  return 0;
fail:
  bench_log("tern-bench pk: building %s: %s (%s)", s->name, tern_strerror(rc), tern_errmsg());
  if (idx) tern_close(idx);
  return -1;
}

static int build_lmdb(pk_store *s, bench_keys *k) {
  char msg[512];
  /* The load needs the keys in order; time that sort as part of it. */
  double t0 = bench_now();
  if (bench_keys_sort(k) != 0) return -1;
  s->sort_s = bench_now() - t0;
  double t1 = bench_now();
  int rc = bench_lmdb_build_values(s->dir, k, g_values, msg, sizeof msg);
  if (rc) {
    bench_log("tern-bench pk: building LMDB: %s", msg);
    return -1;
  }
  s->build_s = bench_now() - t1 + s->sort_s;
  s->bytes = bench_dir_bytes(s->dir);
  s->segments = 1;
  return 0;
}

/* ------------------------------------------------------------ measuring */

typedef struct pk_row {
  size_t store;
  int phase, run;
  uint64_t n;
  double total_ms, open_ms;
  uint64_t reads, majflt, read_bytes, open_reads, open_read_bytes, resident;
  uint64_t verified, errors;
} pk_row;

typedef struct pk_rows {
  pk_row *v;
  size_t n, cap;
} pk_rows;

static pk_row *rows_add(pk_rows *r) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 64;
    pk_row *v = realloc(r->v, cap * sizeof *v);
    if (!v) return NULL;
    r->v = v;
    r->cap = cap;
  }
  pk_row *row = &r->v[r->n++];
  memset(row, 0, sizeof *row);
  return row;
}

/* A batch of lookups: indices into `keys`; present ones expect their index
 * as doc id, absent ones expect no answer. */
typedef struct pk_batch {
  const bench_keys *keys;
  const uint32_t *idx;
  size_t n;
  int present;
  /* The keys in lookup order (batch_stream): a lookup reads its key from
   * the next bytes, as a caller holding it would, not from a random place
   * of the key set (two cache misses that both stores paid and that
   * diluted their ratio). */
  bench_key_stream ks;
} pk_batch;

static int batch_stream(pk_batch *b) { return bench_key_stream_fill(&b->ks, b->keys, b->idx, b->n); }

static void batch_stream_free(pk_batch *b) { bench_key_stream_free(&b->ks); }

static int g_first_error_logged;

/* Runs the batch against an open store and fills the row's lookup part. */
static void run_batch(pk_store *s, const pk_batch *b, pk_row *row, const char *label) {
  bench_io a, z, d;
  uint64_t errors = 0;
  bench_io_take(&a);
  double t0 = bench_now();
  for (size_t i = 0; i < b->n; i++) {
    uint32_t want = b->idx[i], doc = 0;
    int rc = store_get(s, bench_stream_key(&b->ks, i), bench_stream_len(&b->ks, i), &doc);
    int ok = b->present ? rc == 0 && doc == want : rc == 1;
    if (!ok) {
      errors++;
      if (!g_first_error_logged) {
        g_first_error_logged = 1;
        bench_log("  ERROR: %s: %s key #%u: %s", s->name, b->present ? "present" : "absent", want,
                  rc < 0    ? (s->kind == STORE_TERN ? tern_errmsg() : "LMDB error")
                  : rc == 1 ? "not found"
                            : "wrong doc id");
      }
    }
    if ((i & 4095) == 4095) bench_progress(label, i + 1, b->n);
  }
  double t1 = bench_now();
  bench_io_take(&z);
  bench_progress_done();
  bench_io_diff(&a, &z, &d);
  row->n = b->n;
  row->total_ms = (t1 - t0) * 1e3;
  row->reads = d.tern_reads;
  row->majflt = d.majflt;
  row->read_bytes = d.read_bytes;
  row->verified = b->n - errors;
  row->errors = errors;
}

/* Evict, open, run, close: one cold measurement. */
static int cold_batch(pk_store *s, const pk_batch *b, bench_evict_method m, pk_row *row,
                      const char *label) {
  char msg[512];
  uint64_t resident = 0;
  int rc = bench_evict_dir(s->dir, m, &resident);
  if (rc) {
    bench_log("tern-bench pk: evicting %s: %s", s->dir, strerror(-rc));
    return -1;
  }
  bench_io a, z, d;
  bench_io_take(&a);
  double t0 = bench_now();
  if (store_open(s, msg, sizeof msg) != 0) {
    bench_log("tern-bench pk: opening %s: %s", s->name, msg);
    return -1;
  }
  double t1 = bench_now();
  bench_io_take(&z);
  bench_io_diff(&a, &z, &d);
  run_batch(s, b, row, label);
  store_close(s);
  row->open_ms = (t1 - t0) * 1e3;
  row->open_reads = d.tern_reads;
  row->open_read_bytes = d.read_bytes;
  row->resident = resident;
  return 0;
}

/* ------------------------------------------------------------ reporting */

typedef struct pk_stat {
  bench_summary us, reads, majflt, rbytes, open_ms, open_kib;
  uint64_t verified, errors;
  size_t runs;
} pk_stat;

/* Medians over the runs of (store, phase, n); runs == 0 when none. */
static pk_stat stat_of(const pk_rows *r, size_t store, int phase, uint64_t n) {
  pk_stat st;
  memset(&st, 0, sizeof st);
  double *us = calloc(r->n + 1, sizeof(double)), *rd = calloc(r->n + 1, sizeof(double));
  double *mf = calloc(r->n + 1, sizeof(double)), *rb = calloc(r->n + 1, sizeof(double));
  double *om = calloc(r->n + 1, sizeof(double)), *ok = calloc(r->n + 1, sizeof(double));
  size_t k = 0;
  for (size_t i = 0; us && rd && mf && rb && om && ok && i < r->n; i++) {
    const pk_row *w = &r->v[i];
    if (w->store != store || w->phase != phase || w->n != n) continue;
    us[k] = w->total_ms * 1e3 / (double)w->n;
    rd[k] = (double)w->reads / (double)w->n;
    mf[k] = (double)w->majflt / (double)w->n;
    rb[k] = (double)w->read_bytes / (double)w->n;
    om[k] = w->open_ms;
    ok[k] = (double)w->open_read_bytes / 1024;
    st.verified += w->verified;
    st.errors += w->errors;
    k++;
  }
  st.runs = k;
  st.us = bench_summarize(us, k);
  st.reads = bench_summarize(rd, k);
  st.majflt = bench_summarize(mf, k);
  st.rbytes = bench_summarize(rb, k);
  st.open_ms = bench_summarize(om, k);
  st.open_kib = bench_summarize(ok, k);
  free(ok);
  free(us);
  free(rd);
  free(mf);
  free(rb);
  free(om);
  return st;
}

static int write_results_csv(const char *path, const pk_rows *r, pk_store *stores,
                             const pk_opts *o) {
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  fprintf(f, "store,keys,phase,n,run,total_ms,us_per_lookup,reads_per_lookup,majflt_per_lookup,"
             "read_bytes_per_lookup,verified,errors,open_ms,open_reads,open_read_bytes,"
             "resident_pages_after_evict\n");
  for (size_t i = 0; i < r->n; i++) {
    const pk_row *w = &r->v[i];
    const pk_store *s = &stores[w->store];
    double n = (double)w->n;
    fprintf(f, "%s,%s,%s,%llu,%d,%.3f,%.4f,", s->name, bench_key_shape_name(o->spec.shape),
            k_phase_names[w->phase], (unsigned long long)w->n, w->run, w->total_ms,
            w->total_ms * 1e3 / n);
    if (s->kind == STORE_TERN)
      fprintf(f, "%.4f,", (double)w->reads / n);
    else
      fprintf(f, "NA,");
    fprintf(f, "%.4f,%.1f,%llu,%llu,%.3f,", (double)w->majflt / n, (double)w->read_bytes / n,
            (unsigned long long)w->verified, (unsigned long long)w->errors, w->open_ms);
    if (s->kind == STORE_TERN)
      fprintf(f, "%llu,", (unsigned long long)w->open_reads);
    else
      fprintf(f, "NA,");
    fprintf(f, "%llu,%llu\n", (unsigned long long)w->open_read_bytes,
            (unsigned long long)w->resident);
  }
  return fclose(f) == 0 ? 0 : -errno;
}

static int write_build_csv(const char *path, pk_store *stores, size_t nstores, const pk_opts *o) {
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  fprintf(f, "store,keys,docs,segments_requested,segments,build_s,sort_s,bytes,bytes_per_key,"
             "terms_bytes,index_bytes,postings_bytes,filter_bytes,values_bytes,segment_bytes\n");
  for (size_t i = 0; i < nstores; i++) {
    const pk_store *s = &stores[i];
    fprintf(f, "%s,%s,%llu,%llu,%llu,%.3f,%.3f,%llu,%.3f,%llu,%llu,%llu,%llu,%llu,%llu\n", s->name,
            bench_key_shape_name(o->spec.shape), (unsigned long long)o->docs,
            (unsigned long long)(s->kind == STORE_TERN ? o->segments : 1),
            (unsigned long long)s->segments, s->build_s, s->sort_s, (unsigned long long)s->bytes,
            (double)s->bytes / (double)o->docs, (unsigned long long)s->b_terms,
            (unsigned long long)s->b_index, (unsigned long long)s->b_postings,
            (unsigned long long)s->b_filter, (unsigned long long)s->b_values,
            (unsigned long long)s->b_segments);
  }
  return fclose(f) == 0 ? 0 : -errno;
}

static void fmt_range(char *buf, size_t cap, const bench_summary *s, const char *fmt) {
  char a[32], b[32], c[32];
  snprintf(a, sizeof a, fmt, s->median);
  snprintf(b, sizeof b, fmt, s->min);
  snprintf(c, sizeof c, fmt, s->max);
  if (s->n <= 1)
    snprintf(buf, cap, "%s", a);
  else
    snprintf(buf, cap, "%s (%s–%s)", a, b, c);
}

static const char *fmt_ratio(char *buf, size_t cap, double num, double den) {
  if (den <= 0 || num <= 0)
    snprintf(buf, cap, "–");
  else
    snprintf(buf, cap, "%.2f×", num / den);
  return buf;
}

static size_t find_store(pk_store *stores, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(stores[i].name, name)) return i;
  return n;
}

static void md_build(FILE *f, pk_store *stores, size_t ns, const pk_opts *o) {
  double d = (double)o->docs;
  fprintf(f, "## Build and size\n\n");
  fprintf(f,
          "| store | build s | segments | bytes on disk | B/key | terms (.tim) B/key | "
          "index (.tix) B/key | postings (.doc) B/key | terms+postings B/key | filter B/key |\n");
  fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < ns; i++) {
    pk_store *s = &stores[i];
    if (s->kind == STORE_LMDB && !s->built_here) continue;
    const char *name = s->kind == STORE_LMDB ? "lmdb (both flag sets, one file)" : s->name;
    if (s->kind == STORE_TERN) {
      fprintf(f, "| %s | %.2f | %llu | %llu | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", name,
              s->build_s, (unsigned long long)s->segments, (unsigned long long)s->bytes,
              (double)s->bytes / d, (double)s->b_terms / d, (double)s->b_index / d,
              (double)s->b_postings / d, (double)(s->b_terms + s->b_index + s->b_postings) / d,
              (double)s->b_filter / d);
    } else {
      fprintf(f, "| %s | %.2f (sort %.2f) | – | %llu | %.2f | – | – | – | – | – |\n", name,
              s->build_s, s->sort_s, (unsigned long long)s->bytes, (double)s->bytes / d);
    }
  }
  size_t l = find_store(stores, ns, "lmdb-nordahead"), t = find_store(stores, ns, "tern-pulse1");
  if (l < ns && t < ns)
    fprintf(f, "\ntern-pulse1 bytes on disk per key vs LMDB: %.2f× (target ≤ 0.5×).\n",
            (double)stores[t].bytes / (double)stores[l].bytes);
  for (size_t i = 0; i < ns; i++)
    if (stores[i].kind == STORE_TERN && stores[i].segments != o->segments)
      fprintf(f, "\nNote: %s: %llu bulk commits left %llu segments (the engine merged them).\n",
              stores[i].name, (unsigned long long)o->segments,
              (unsigned long long)stores[i].segments);
  fprintf(f, "\n");
}

static void md_cold(FILE *f, const pk_rows *r, const pk_rows *base, const char *raw,
                    pk_store *stores, size_t ns, const pk_opts *o, int phase) {
  size_t l = find_store(stores, ns, "lmdb-nordahead");
  int with_base = base && base->n;
  fprintf(f, "## %s: %s keys after eviction\n\n", k_phase_names[phase],
          phase == PHASE_COLD_PRESENT ? "present" : "absent");
  fprintf(f, "µs per lookup: median of %llu runs (min–max).", (unsigned long long)o->runs);
  if (with_base)
    fprintf(f,
            " Last column: one random 4 KiB pread per lookup from `%s` after eviction (the "
            "same disk, in the same run): the price of the one read a cold lookup needs at "
            "best.",
            strrchr(raw, '/') ? strrchr(raw, '/') + 1 : raw);
  fprintf(f, "\n\n| N |");
  for (size_t s = 0; s < ns; s++)
    fprintf(f, " %s |", stores[s].name);
  if (with_base) fprintf(f, " one 4 KiB pread |");
  fprintf(f, "\n|---:|");
  for (size_t s = 0; s < ns + (size_t)with_base; s++)
    fprintf(f, "---:|");
  fprintf(f, "\n");
  for (size_t i = 0; i < o->nlookups; i++) {
    fprintf(f, "| %llu |", (unsigned long long)o->lookups[i]);
    for (size_t s = 0; s <= ns; s++) {
      if (s == ns && !with_base) break;
      pk_stat st = s < ns ? stat_of(r, s, phase, o->lookups[i])
                          : stat_of(base, 0, PHASE_COLD_PRESENT, o->lookups[i]);
      char buf[128];
      fmt_range(buf, sizeof buf, &st.us, "%.1f");
      fprintf(f, " %s |", buf);
    }
    fprintf(f, "\n");
  }
  fprintf(f, "\nPer lookup (medians): codec reads (tern), major faults, KiB fetched from disk "
             "(/proc/self/io read_bytes); speedup = LMDB-NORDAHEAD µs / store µs.\n\n");
  fprintf(f, "| N | store | µs | speedup vs lmdb-nordahead | reads | majflt | KiB read | 4 KiB "
             "pages read | open ms | open KiB read | verified | errors |\n");
  fprintf(f, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < o->nlookups; i++) {
    pk_stat ref = l < ns ? stat_of(r, l, phase, o->lookups[i]) : (pk_stat){0};
    for (size_t s = 0; s < ns; s++) {
      pk_stat st = stat_of(r, s, phase, o->lookups[i]);
      char ratio[32], reads[32];
      if (stores[s].kind == STORE_TERN)
        snprintf(reads, sizeof reads, "%.3f", st.reads.median);
      else
        snprintf(reads, sizeof reads, "–");
      fprintf(f,
              "| %llu | %s | %.1f | %s | %s | %.3f | %.1f | %.2f | %.1f | %.0f | %llu | %llu |\n",
              (unsigned long long)o->lookups[i], stores[s].name, st.us.median,
              fmt_ratio(ratio, sizeof ratio, ref.us.median, st.us.median), reads, st.majflt.median,
              st.rbytes.median / 1024, st.rbytes.median / 4096, st.open_ms.median,
              st.open_kib.median, (unsigned long long)st.verified, (unsigned long long)st.errors);
    }
  }
  fprintf(f, "\n");
}

/* The ratios `base` time / `store` time of each run of a phase (the two
 * measured back to back, warm_phase), summarized. */
static bench_summary paired_ratio(const pk_rows *r, size_t store, size_t base, int phase,
                                  uint64_t n) {
  double *v = calloc(r->n + 1, sizeof(double));
  size_t k = 0;
  for (size_t i = 0; v && i < r->n; i++) {
    const pk_row *w = &r->v[i];
    if (w->store != store || w->phase != phase || w->n != n || w->total_ms <= 0) continue;
    for (size_t j = 0; j < r->n; j++) {
      const pk_row *x = &r->v[j];
      if (x->store == base && x->phase == phase && x->n == n && x->run == w->run)
        v[k++] = x->total_ms / w->total_ms;
    }
  }
  bench_summary s = bench_summarize(v, k);
  free(v);
  return s;
}

static void md_warm(FILE *f, const pk_rows *r, pk_store *stores, size_t ns, const pk_opts *o) {
  size_t l = find_store(stores, ns, "lmdb-nordahead");
  fprintf(f, "## Warm: every file in the page cache\n\n");
  fprintf(f,
          "%llu present and %llu absent lookups per run; ns per lookup, median of %llu runs "
          "(min–max); speedup = LMDB-NORDAHEAD ns / store ns of the medians; paired: the "
          "median (min–max) of each run's ratio, the stores measured back to back in each "
          "run (LMDB with read-ahead, which reads the other LMDB store's file, in a second "
          "pass).\n\n",
          (unsigned long long)o->warm, (unsigned long long)o->warm, (unsigned long long)o->runs);
  fprintf(f, "| store | present ns | speedup | paired | absent ns | speedup | paired | errors |\n");
  fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|\n");
  pk_stat bp = stat_of(r, l, PHASE_WARM_PRESENT, o->warm);
  pk_stat ba = stat_of(r, l, PHASE_WARM_ABSENT, o->warm);
  for (size_t s = 0; s < ns; s++) {
    pk_stat p = stat_of(r, s, PHASE_WARM_PRESENT, o->warm);
    pk_stat a = stat_of(r, s, PHASE_WARM_ABSENT, o->warm);
    bench_summary pn = p.us, an = a.us;
    pn.median *= 1e3, pn.min *= 1e3, pn.max *= 1e3;
    an.median *= 1e3, an.min *= 1e3, an.max *= 1e3;
    char pb[128], ab[128], r1[32], r2[32], q1[128] = "–", q2[128] = "–";
    fmt_range(pb, sizeof pb, &pn, "%.0f");
    fmt_range(ab, sizeof ab, &an, "%.0f");
    bench_summary pp = paired_ratio(r, s, l, PHASE_WARM_PRESENT, o->warm);
    bench_summary pa = paired_ratio(r, s, l, PHASE_WARM_ABSENT, o->warm);
    if (l < ns && pp.n) fmt_range(q1, sizeof q1, &pp, "%.2f×");
    if (l < ns && pa.n) fmt_range(q2, sizeof q2, &pa, "%.2f×");
    fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %llu |\n", stores[s].name, pb,
            fmt_ratio(r1, sizeof r1, bp.us.median, p.us.median), q1, ab,
            fmt_ratio(r2, sizeof r2, ba.us.median, a.us.median), q2,
            (unsigned long long)(p.errors + a.errors));
  }
  fprintf(f, "\n");
}

/* The project's targets, checked against this run's medians. */
static void md_targets(FILE *f, const pk_rows *r, const pk_rows *base, pk_store *stores, size_t ns,
                       const pk_opts *o) {
  size_t t1 = find_store(stores, ns, "tern-pulse1"), t0 = find_store(stores, ns, "tern-pulse0");
  size_t l = find_store(stores, ns, "lmdb-nordahead");
  if (t1 >= ns || t0 >= ns || l >= ns) return;
  fprintf(f, "## Targets (checked on this run's medians)\n\n");
  fprintf(f, "| N | pulse1 vs pulse0 speedup (≥1.8× at N≤10k) | reads pulse1 / pulse0 (1 / 2) | "
             "pulse1 vs LMDB-NORDAHEAD speedup (≥1.5× at N≤10k) | KiB read pulse1 / LMDB "
             "(fewer) | pulse1 µs / one 4 KiB pread µs (≤1.2× at N≤1k) |\n"
             "|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < o->nlookups; i++) {
    uint64_t n = o->lookups[i];
    pk_stat a = stat_of(r, t1, PHASE_COLD_PRESENT, n), b = stat_of(r, t0, PHASE_COLD_PRESENT, n);
    pk_stat c = stat_of(r, l, PHASE_COLD_PRESENT, n);
    pk_stat raw = base ? stat_of(base, 0, PHASE_COLD_PRESENT, n) : (pk_stat){0};
    char r1[32], r2[32], r3[32];
    fprintf(f, "| %llu | %s | %.3f / %.3f | %s | %.1f / %.1f | %s |\n", (unsigned long long)n,
            fmt_ratio(r1, sizeof r1, b.us.median, a.us.median), a.reads.median, b.reads.median,
            fmt_ratio(r2, sizeof r2, c.us.median, a.us.median), a.rbytes.median / 1024,
            c.rbytes.median / 1024, fmt_ratio(r3, sizeof r3, a.us.median, raw.us.median));
  }
  pk_stat wp1 = stat_of(r, t1, PHASE_WARM_PRESENT, o->warm),
          wpl = stat_of(r, l, PHASE_WARM_PRESENT, o->warm);
  pk_stat wa1 = stat_of(r, t1, PHASE_WARM_ABSENT, o->warm),
          wal = stat_of(r, l, PHASE_WARM_ABSENT, o->warm);
  char r1[32], r2[32];
  fprintf(f,
          "\nWarm, tern-pulse1 vs LMDB-NORDAHEAD: present %s (target ≥3×), absent %s (target "
          "≥5×).\n",
          fmt_ratio(r1, sizeof r1, wpl.us.median, wp1.us.median),
          fmt_ratio(r2, sizeof r2, wal.us.median, wa1.us.median));
  double d = (double)o->docs;
  fprintf(f,
          "Bytes on disk per key: tern-pulse1 %.2f, LMDB %.2f (ratio %.2f×, target ≤0.5×); "
          "tern-pulse1 terms+postings %.2f B/key (target < 14.19).\n\n",
          (double)stores[t1].bytes / d, (double)stores[l].bytes / d,
          (double)stores[t1].bytes / (double)stores[l].bytes,
          (double)(stores[t1].b_terms + stores[t1].b_index + stores[t1].b_postings) / d);
}

static int write_results_md(const char *path, const pk_rows *r, const pk_rows *base,
                            const char *raw, pk_store *stores, size_t ns, const pk_opts *o,
                            const char *cmdline, const char *workdir) {
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  char machine[256];
  bench_machine(machine, sizeof machine);
  long ra = bench_readahead_kb(workdir);
  fprintf(f, "# tern-bench pk: %s keys, %llu docs\n\n", bench_key_shape_name(o->spec.shape),
          (unsigned long long)o->docs);
  fprintf(f, "- command: `%s`\n", cmdline);
  fprintf(f, "- machine: %s\n", machine);
  fprintf(f, "- storage: %s (%s), device read-ahead %ld KiB\n", workdir, bench_fs_name(workdir),
          ra);
  fprintf(f,
          "- eviction before every cold measurement: %s, then a fresh open "
          "(tern_open TERN_RDONLY + snapshot; mdb_env_open MDB_RDONLY)\n",
          bench_evict_method_text(o->evict));
  fprintf(f,
          "- values: %llu bytes, the doc id (input position, 4 bytes LE) then filler; every "
          "answer verified\n",
          (unsigned long long)o->values);
  char inl[64] = "default";
  if (o->inl.set) snprintf(inl, sizeof inl, "%llu", (unsigned long long)o->inl.v);
  fprintf(f,
          "- tern %s (pulsing threshold 1 and 0, inline value limit %s, other options default), "
          "%s\n\n",
          tern_version(), inl, MDB_VERSION_STRING);
  md_build(f, stores, ns, o);
  md_cold(f, r, base, raw, stores, ns, o, PHASE_COLD_PRESENT);
  md_cold(f, r, NULL, NULL, stores, ns, o, PHASE_COLD_ABSENT);
  md_warm(f, r, stores, ns, o);
  md_targets(f, r, base, stores, ns, o);
  return fclose(f) == 0 ? 0 : -errno;
}

/* cold-lookups.dat / .gp / .png in `out`.  1 when the PNG was made. */
static int write_plot(const char *out, const pk_rows *r, const pk_rows *base, pk_store *stores,
                      size_t ns, const pk_opts *o) {
  char path[4096];
  FILE *f = fopen(bench_path(path, sizeof path, out, "cold-lookups.dat"), "w");
  if (!f) return 0;
  fprintf(f, "# N");
  for (size_t s = 0; s < ns; s++)
    fprintf(f, " %s", stores[s].name);
  if (base->n) fprintf(f, " one-4KiB-pread");
  fprintf(f, "   (median us per cold present lookup)\n");
  for (size_t i = 0; i < o->nlookups; i++) {
    fprintf(f, "%llu", (unsigned long long)o->lookups[i]);
    for (size_t s = 0; s < ns; s++)
      fprintf(f, " %.3f", stat_of(r, s, PHASE_COLD_PRESENT, o->lookups[i]).us.median);
    if (base->n) fprintf(f, " %.3f", stat_of(base, 0, PHASE_COLD_PRESENT, o->lookups[i]).us.median);
    fprintf(f, "\n");
  }
  fclose(f);
  f = fopen(bench_path(path, sizeof path, out, "cold-lookups.gp"), "w");
  if (!f) return 0;
  fprintf(f,
          "# Generated by tern-bench pk; run in the output directory: gnuplot cold-lookups.gp\n"
          "set terminal pngcairo size 960,600 enhanced font ',11'\n"
          "set output 'cold-lookups.png'\n"
          "set logscale xy\nset grid xtics ytics mxtics mytics\n"
          "set xlabel 'N random present lookups after eviction'\n"
          "set ylabel 'µs per lookup (median of %llu runs)'\n"
          "set title 'Cold primary-key lookups, %llu %s keys'\n"
          "set key top right\nset format x '10^{%%L}'\n"
          "plot ",
          (unsigned long long)o->runs, (unsigned long long)o->docs, bench_key_shape_name(o->spec.shape));
  for (size_t s = 0; s < ns; s++)
    fprintf(f, "%s'cold-lookups.dat' using 1:%zu with linespoints lw 2 title '%s'",
            s ? ", \\\n  " : "", s + 2, stores[s].name);
  if (base->n)
    fprintf(f,
            ", \\\n  'cold-lookups.dat' using 1:%zu with lines dt 2 lw 2 lc 'black' title 'one "
            "random 4 KiB pread'",
            ns + 2);
  fprintf(f, "\n");
  fclose(f);
  if (!bench_have_program("gnuplot")) return 0;
  pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    if (chdir(out) != 0) _exit(127);
    execlp("gnuplot", "gnuplot", "cold-lookups.gp", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 0;
  return access(bench_path(path, sizeof path, out, "cold-lookups.png"), R_OK) == 0;
}

/* ------------------------------------------------------------ phases */

/* One random 4 KiB pread per lookup from `raw` after eviction: the price
 * of the single read a cold lookup needs at best, on the same disk in the
 * same run. */
static int raw_reads(const char *raw, uint64_t n, uint64_t run, const pk_opts *o, pk_rows *base) {
  pk_row *row = rows_add(base);
  if (!row) return -1;
  double secs = 0;
  uint64_t rb = 0;
  int rc = bench_random_reads(raw, n, o->seed ^ bench_mix64(run * 7919u + n), &secs, &rb);
  if (rc) {
    bench_log("tern-bench pk: random reads of %s: %s", raw, strerror(-rc));
    return -1;
  }
  row->phase = PHASE_COLD_PRESENT;
  row->run = (int)run;
  row->n = n;
  row->total_ms = secs * 1e3;
  row->read_bytes = rb;
  row->verified = n;
  return 0;
}

static int cold_phase(pk_store *stores, size_t ns, const bench_keys *present,
                      const bench_keys *absent, const pk_opts *o, pk_rows *rows, const char *raw,
                      pk_rows *base) {
  size_t maxn = 0;
  for (size_t i = 0; i < o->nlookups; i++)
    if (o->lookups[i] > maxn) maxn = o->lookups[i];
  uint32_t *pidx = malloc(maxn * sizeof *pidx), *aidx = malloc(maxn * sizeof *aidx);
  int rc = pidx && aidx ? 0 : -1;
  for (uint64_t run = 1; rc == 0 && run <= o->runs; run++) {
    for (size_t i = 0; rc == 0 && i < o->nlookups; i++) {
      uint64_t n = o->lookups[i];
      bench_rng rng;
      bench_rng_init(&rng, o->seed ^ bench_mix64(run * 1000003u + n));
      if (bench_sample(&rng, present->n, n, pidx) || bench_sample(&rng, absent->n, n, aidx)) {
        rc = -1;
        break;
      }
      bench_log("cold run %llu/%llu, N=%llu", (unsigned long long)run, (unsigned long long)o->runs,
                (unsigned long long)n);
      for (size_t s = 0; rc == 0 && s < ns; s++) {
        for (int phase = PHASE_COLD_PRESENT; rc == 0 && phase <= PHASE_COLD_ABSENT; phase++) {
          pk_batch b = {.keys = phase == PHASE_COLD_PRESENT ? present : absent,
                        .idx = phase == PHASE_COLD_PRESENT ? pidx : aidx,
                        .n = n,
                        .present = phase == PHASE_COLD_PRESENT};
          pk_row *row = rows_add(rows);
          if (!row || batch_stream(&b) != 0) {
            batch_stream_free(&b);
            rc = -1;
            break;
          }
          row->store = s;
          row->phase = phase;
          row->run = (int)run;
          char label[96];
          snprintf(label, sizeof label, "%s %s N=%llu", stores[s].name, k_phase_names[phase],
                   (unsigned long long)n);
          rc = cold_batch(&stores[s], &b, o->evict, row, label);
          batch_stream_free(&b);
          if (rc == 0 && row->resident > 0)
            bench_log("  note: %s: %llu pages still resident after eviction", stores[s].name,
                      (unsigned long long)row->resident);
        }
      }
      if (rc == 0 && raw[0]) rc = raw_reads(raw, n, run, o, base);
    }
  }
  free(pidx);
  free(aidx);
  return rc;
}

/* The stores in `pick` open at once, each warmed by an untimed pass; then
 * run by run, each store in turn answers the same lookups, so that the
 * ratios of one run compare stores measured within seconds of each other
 * (the machine is shared: its speed drifts between runs). */
static int warm_group(pk_store *stores, size_t ns, const unsigned char *pick,
                      const bench_keys *present, const bench_keys *absent, const pk_opts *o,
                      pk_rows *rows) {
  size_t n = o->warm;
  uint32_t *pidx = malloc(n * sizeof *pidx), *aidx = malloc(n * sizeof *aidx);
  pk_batch b[2] = {{.keys = present, .idx = pidx, .n = n, .present = 1},
                   {.keys = absent, .idx = aidx, .n = n, .present = 0}};
  int rc = pidx && aidx ? 0 : -1;
  bench_rng rng;
  bench_rng_init(&rng, o->seed ^ 0x5741524Dull);
  if (rc == 0 && (bench_sample(&rng, present->n, n, pidx) || batch_stream(&b[0]) != 0)) rc = -1;
  for (size_t s = 0; rc == 0 && s < ns; s++) {
    if (!pick[s]) continue;
    char msg[512];
    bench_log("warm: %s", stores[s].name);
    if (bench_warm_dir(stores[s].dir) != 0 || store_open(&stores[s], msg, sizeof msg) != 0) {
      bench_log("tern-bench pk: warming %s failed %s", stores[s].name, msg);
      rc = -1;
      break;
    }
    /* One untimed pass maps every page this process will touch. */
    pk_row scratch;
    memset(&scratch, 0, sizeof scratch);
    run_batch(&stores[s], &b[0], &scratch, "warm-up");
  }
  for (uint64_t run = 1; rc == 0 && run <= o->runs; run++) {
    batch_stream_free(&b[0]);
    batch_stream_free(&b[1]);
    bench_rng_init(&rng, o->seed ^ bench_mix64(0x5741524Dull + run));
    if (bench_sample(&rng, present->n, n, pidx) || bench_sample(&rng, absent->n, n, aidx) ||
        batch_stream(&b[0]) != 0 || batch_stream(&b[1]) != 0) {
      rc = -1;
      break;
    }
    for (size_t s = 0; rc == 0 && s < ns; s++) {
      for (int phase = PHASE_WARM_PRESENT; pick[s] && phase <= PHASE_WARM_ABSENT; phase++) {
        pk_row *row = rows_add(rows);
        if (!row) {
          rc = -1;
          break;
        }
        row->store = s;
        row->phase = phase;
        row->run = (int)run;
        char label[96];
        snprintf(label, sizeof label, "%s %s run %llu", stores[s].name, k_phase_names[phase],
                 (unsigned long long)run);
        run_batch(&stores[s], &b[phase - PHASE_WARM_PRESENT], row, label);
      }
    }
  }
  for (size_t s = 0; s < ns; s++)
    if (pick[s]) store_close(&stores[s]);
  batch_stream_free(&b[0]);
  batch_stream_free(&b[1]);
  free(pidx);
  free(aidx);
  return rc;
}

/* LMDB must not have one environment open twice in a process (closing one
 * drops the other's locks): the LMDB stores reading a file another LMDB
 * store reads too run in a second group, after the first. */
/* Two LMDB stores on one file (they are never open at once).  Out of line:
 * inlined, gcc 12 -O3 doubts the bounds of the stores array. */
static __attribute__((noinline)) int same_lmdb_file(const pk_store *a, const pk_store *b) {
  return a->kind == STORE_LMDB && b->kind == STORE_LMDB && strcmp(a->dir, b->dir) == 0;
}

static int warm_phase(pk_store *stores, size_t ns, const bench_keys *present,
                      const bench_keys *absent, const pk_opts *o, pk_rows *rows) {
  if (o->warm == 0) return 0;
  unsigned char first[8] = {0}, second[8] = {0};
  int more = 0;
  for (size_t s = 0; s < ns && s < sizeof first; s++) {
    int shared = 0;
    for (size_t t = 0; t < s; t++)
      shared |= same_lmdb_file(&stores[s], &stores[t]);
    first[s] = !shared;
    second[s] = (unsigned char)shared;
    more |= shared;
  }
  int rc = warm_group(stores, ns, first, present, absent, o, rows);
  if (rc == 0 && more) rc = warm_group(stores, ns, second, present, absent, o, rows);
  return rc;
}

/* ------------------------------------------------------------ main */

static uint64_t total_errors(const pk_rows *r) {
  uint64_t e = 0;
  for (size_t i = 0; i < r->n; i++)
    e += r->v[i].errors;
  return e;
}

/* 1 when `name` is in the comma-separated list (NULL: every store). */
static int wanted(const char *list, const char *name) {
  if (!list) return 1;
  size_t n = strlen(name);
  for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == '\0')) return 1;
  return 0;
}

static size_t setup_stores(pk_store *st, const char *work, const pk_opts *o) {
  static const pk_store all[] = {
      {.name = "tern-pulse1", .kind = STORE_TERN, .threshold = 1},
      {.name = "tern-pulse0", .kind = STORE_TERN, .threshold = 0},
      {.name = "tern-pulse1-pread", .kind = STORE_TERN, .threshold = 1, .pread = 1},
      {.name = "lmdb-nordahead", .kind = STORE_LMDB, .nordahead = 1},
      {.name = "lmdb-readahead", .kind = STORE_LMDB, .nordahead = 0},
  };
  size_t n = 0;
  int lmdb_built = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    if (!wanted(o->stores, all[i].name)) continue;
    if (all[i].kind == STORE_LMDB && !all[i].nordahead && !o->lmdb_readahead) continue;
    st[n] = all[i];
    /* Both LMDB stores read one file, built once. */
    st[n].built_here = all[i].kind == STORE_TERN ? !all[i].pread || !wanted(o->stores, "tern-pulse1")
                                                 : !lmdb_built;
    if (all[i].kind == STORE_LMDB) lmdb_built = 1;
    /* The pread store reads the files tern-pulse1 built (it builds them itself when alone). */
    const char *sub = all[i].kind == STORE_LMDB ? "lmdb" : all[i].pread ? "tern-pulse1" : all[i].name;
    bench_path(st[n].dir, sizeof st[n].dir, work, sub);
    n++;
  }
  return n;
}

static int build_all(pk_store *st, size_t ns, bench_keys *keys, const pk_opts *o) {
  for (size_t i = 0; i < ns; i++) {
    pk_store *s = &st[i];
    if (!s->built_here) continue;
    bench_log("build: %s", s->name);
    int rc = s->kind == STORE_TERN ? build_tern(s, keys, o) : build_lmdb(s, keys);
    if (rc) return rc;
    bench_log("  %.2f s, %.2f bytes/key on disk, %llu segment(s)", s->build_s,
              (double)s->bytes / (double)o->docs, (unsigned long long)s->segments);
    if (s->kind == STORE_TERN && s->segments != o->segments)
      bench_log("  note: %llu bulk commits left %llu segments (the engine's merge policy merged "
                "them)",
                (unsigned long long)o->segments, (unsigned long long)s->segments);
  }
  /* Stores reading another's files report its build. */
  for (size_t i = 0; i < ns; i++) {
    if (st[i].built_here) continue;
    for (size_t j = 0; j < ns; j++) {
      if (!st[j].built_here || strcmp(st[j].dir, st[i].dir)) continue;
      st[i].build_s = st[j].build_s;
      st[i].sort_s = st[j].sort_s;
      st[i].bytes = st[j].bytes;
      st[i].segments = st[j].segments;
      st[i].b_terms = st[j].b_terms;
      st[i].b_index = st[j].b_index;
      st[i].b_postings = st[j].b_postings;
      st[i].b_filter = st[j].b_filter;
      st[i].b_values = st[j].b_values;
      st[i].b_segments = st[j].b_segments;
    }
  }
  return 0;
}

static int write_baseline_csv(const char *path, const pk_rows *base, const char *raw) {
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  fprintf(f, "file,n,run,total_ms,us_per_read,read_bytes_per_read\n");
  for (size_t i = 0; i < base->n; i++) {
    const pk_row *w = &base->v[i];
    fprintf(f, "%s,%llu,%d,%.3f,%.4f,%.1f\n", raw, (unsigned long long)w->n, w->run, w->total_ms,
            w->total_ms * 1e3 / (double)w->n, (double)w->read_bytes / (double)w->n);
  }
  return fclose(f) == 0 ? 0 : -errno;
}

static int write_outputs(const pk_opts *o, pk_store *st, size_t ns, const pk_rows *rows,
                         const pk_rows *base, const char *raw, const char *cmdline,
                         const char *work) {
  char path[4096];
  int rc = bench_mkdirs(o->out);
  if (rc == 0)
    rc = write_results_csv(bench_path(path, sizeof path, o->out, "results.csv"), rows, st, o);
  if (rc == 0) rc = write_build_csv(bench_path(path, sizeof path, o->out, "build.csv"), st, ns, o);
  if (rc == 0 && base->n)
    rc = write_baseline_csv(bench_path(path, sizeof path, o->out, "baseline.csv"), base, raw);
  if (rc == 0)
    rc = write_results_md(bench_path(path, sizeof path, o->out, "results.md"), rows, base, raw, st,
                          ns, o, cmdline, work);
  if (rc) {
    bench_log("tern-bench pk: writing %s: %s", o->out, strerror(-rc));
    return rc;
  }
  if (write_plot(o->out, rows, base, st, ns, o))
    bench_log("wrote %s/cold-lookups.png", o->out);
  else if (!bench_have_program("gnuplot"))
    bench_log("gnuplot is not on PATH: no cold-lookups.png (the CSV and %s/cold-lookups.gp are "
              "written)",
              o->out);
  else
    bench_log("gnuplot failed: no cold-lookups.png (see %s/cold-lookups.gp)", o->out);
  bench_log("wrote %s/results.csv, %s/build.csv, %s/results.md", o->out, o->out, o->out);
  return 0;
}

int tern_bench_pk(int argc, char **argv) {
  pk_opts o;
  int prc = bench_opts_parse(&k_pk_cmd, &o, argc, argv);
  if (prc) {
    free(o.lookups);
    return bench_opts_exit(prc);
  }
  char cmdline[2048];
  bench_cmdline(cmdline, sizeof cmdline, argc - 1, argv + 1, "tern-bench pk");
  if (bench_is_memory_fs(o.parent))
    bench_log("WARNING: %s is a memory file system (%s): 'cold' reads will not reach a disk; "
              "use --dir on a disk",
              o.parent, bench_fs_name(o.parent));
  if (!bench_proc_io_available())
    bench_log("note: /proc/self/io is unavailable: read_bytes will read 0");
  char *work = bench_mkdtemp(o.parent, "tern-bench-pk");
  if (!work) {
    bench_log("tern-bench pk: cannot create a scratch directory in %s: %s", o.parent,
              strerror(errno));
    free(o.lookups);
    return 1;
  }
  bench_log("tern-bench pk: %llu %s keys in %s (%s), eviction: %s", (unsigned long long)o.docs,
            bench_key_shape_name(o.spec.shape), work, bench_fs_name(work),
            bench_evict_method_text(o.evict));

  bench_keys present = {0}, absent = {0};
  pk_store stores[5];
  size_t ns = setup_stores(stores, work, &o);
  if (ns == 0) {
    bench_log("tern-bench pk: --stores selects no store");
    bench_rmtree(work);
    free(work);
    free(o.lookups);
    return 2;
  }
  pk_rows rows = {0}, base = {0};
  int rc = 1;
  double t0 = bench_now();
  size_t pool = o.warm;
  for (size_t i = 0; i < o.nlookups; i++)
    if (o.lookups[i] > pool) pool = o.lookups[i];
  if (pool > o.docs) pool = o.docs;
  g_values = (size_t)o.values;
  int krc = bench_keys_load(&present, &o.spec, o.docs, o.seed);
  if (krc == 0) {
    if (present.n < o.docs) o.docs = present.n; /* a file with fewer keys */
    if (pool > o.docs) pool = o.docs;
    krc = bench_keys_absent(&absent, &present, pool, o.seed ^ 0xAB5E47ull);
  }
  if (krc != 0) {
    bench_log("tern-bench pk: keys: %s", strerror(-krc));
    goto out;
  }
  bench_log("keys: %.2f s (%zu present, %zu absent)", bench_now() - t0, present.n, absent.n);
  if (build_all(stores, ns, &present, &o) != 0) goto out;
  char raw[4096] = "";
  if (bench_largest_file(stores[0].dir, raw, sizeof raw) != 0) raw[0] = '\0';
  if (cold_phase(stores, ns, &present, &absent, &o, &rows, raw, &base) != 0) goto out;
  if (warm_phase(stores, ns, &present, &absent, &o, &rows) != 0) goto out;
  if (write_outputs(&o, stores, ns, &rows, &base, raw, cmdline, work) != 0) goto out;
  uint64_t errors = total_errors(&rows);
  if (errors) {
    bench_log("FAILED: %llu lookups answered wrongly", (unsigned long long)errors);
    goto out;
  }
  bench_log("done in %.1f s; every lookup verified", bench_now() - t0);
  rc = 0;
out:
  for (size_t i = 0; i < ns; i++)
    store_close(&stores[i]);
  bench_keys_free(&present);
  bench_keys_free(&absent);
  free(rows.v);
  free(base.v);
  if (o.keep)
    bench_log("kept %s", work);
  else
    bench_rmtree(work);
  free(work);
  free(o.lookups);
  return rc;
}
