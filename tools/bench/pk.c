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
#include "tools/bench/pk.h"

#include "codec/io.h"
#include "tern.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ options */

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
    BENCH_STR("dir", PK_OPT(parent), "DIR", "/var/tmp",
              "parent of the scratch directory (not tmpfs)"),
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

static const bench_cmd k_pk_cmd = BENCH_CMD(
    "pk", "[options]", "cold/warm primary-key lookups: tern vs LMDB", k_pk_opts, pk_opts, pk_check);

void tern_bench_pk_usage(FILE *out) { bench_opts_usage(&k_pk_cmd, out); }

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
      bench_value_fill(pk_vbuf, (uint32_t)i, pk_values);
      if ((rc = tern_put(txn, bench_key_at(k, i), bench_key_len(k, i), pk_vbuf, pk_values, NULL,
                         0)) != TERN_OK) {
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
  int rc = bench_lmdb_build_values(s->dir, k, pk_values, msg, sizeof msg);
  if (rc) {
    bench_log("tern-bench pk: building LMDB: %s", msg);
    return -1;
  }
  s->build_s = bench_now() - t1 + s->sort_s;
  s->bytes = bench_dir_bytes(s->dir);
  s->segments = 1;
  return 0;
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
    rc = pk_write_results_csv(bench_path(path, sizeof path, o->out, "results.csv"), rows, st, o);
  if (rc == 0)
    rc = pk_write_build_csv(bench_path(path, sizeof path, o->out, "build.csv"), st, ns, o);
  if (rc == 0 && base->n)
    rc = write_baseline_csv(bench_path(path, sizeof path, o->out, "baseline.csv"), base, raw);
  if (rc == 0)
    rc = pk_write_results_md(bench_path(path, sizeof path, o->out, "results.md"), rows, base, raw,
                             st, ns, o, cmdline, work);
  if (rc) {
    bench_log("tern-bench pk: writing %s: %s", o->out, strerror(-rc));
    return rc;
  }
  if (pk_write_plot(o->out, rows, base, st, ns, o))
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

/* The scratch directory under --dir (malloc'd), announced; NULL on failure. */
static char *make_workdir(const pk_opts *o) {
  if (bench_is_memory_fs(o->parent))
    bench_log("WARNING: %s is a memory file system (%s): 'cold' reads will not reach a disk; "
              "use --dir on a disk",
              o->parent, bench_fs_name(o->parent));
  if (!bench_proc_io_available())
    bench_log("note: /proc/self/io is unavailable: read_bytes will read 0");
  char *work = bench_mkdtemp(o->parent, "tern-bench-pk");
  if (!work) {
    bench_log("tern-bench pk: cannot create a scratch directory in %s: %s", o->parent,
              strerror(errno));
    return NULL;
  }
  bench_log("tern-bench pk: %llu %s keys in %s (%s), eviction: %s", (unsigned long long)o->docs,
            bench_key_shape_name(o->spec.shape), work, bench_fs_name(work),
            bench_evict_method_text(o->evict));
  return work;
}

/* The present keys (o->docs shrinks to a key file's count) and as many
 * absent ones as the largest lookup count; 0 or -1. */
static int load_keys(pk_opts *o, bench_keys *present, bench_keys *absent) {
  double t0 = bench_now();
  size_t pool = o->warm;
  for (size_t i = 0; i < o->nlookups; i++)
    if (o->lookups[i] > pool) pool = o->lookups[i];
  int krc = bench_keys_load(present, &o->spec, o->docs, o->seed);
  if (krc == 0) {
    if (present->n < o->docs) o->docs = present->n; /* a file with fewer keys */
    if (pool > o->docs) pool = o->docs;
    krc = bench_keys_absent(absent, present, pool, o->seed ^ 0xAB5E47ull);
  }
  if (krc != 0) {
    bench_log("tern-bench pk: keys: %s", strerror(-krc));
    return -1;
  }
  bench_log("keys: %.2f s (%zu present, %zu absent)", bench_now() - t0, present->n, absent->n);
  return 0;
}

/* Builds, measures, writes the outputs; 0 when every lookup was right. */
static int run_stores(pk_opts *o, pk_store *stores, size_t ns, const char *cmdline,
                      const char *work) {
  bench_keys present = {0}, absent = {0};
  pk_rows rows = {0}, base = {0};
  char raw[4096] = "";
  double t0 = bench_now();
  int rc = -1;
  if (load_keys(o, &present, &absent) == 0 && build_all(stores, ns, &present, o) == 0) {
    if (bench_largest_file(stores[0].dir, raw, sizeof raw) != 0) raw[0] = '\0';
    if (pk_cold_phase(stores, ns, &present, &absent, o, &rows, raw, &base) == 0 &&
        pk_warm_phase(stores, ns, &present, &absent, o, &rows) == 0 &&
        write_outputs(o, stores, ns, &rows, &base, raw, cmdline, work) == 0)
      rc = 0;
  }
  uint64_t errors = total_errors(&rows);
  if (rc == 0 && errors) {
    bench_log("FAILED: %llu lookups answered wrongly", (unsigned long long)errors);
    rc = -1;
  } else if (rc == 0) {
    bench_log("done in %.1f s; every lookup verified", bench_now() - t0);
  }
  for (size_t i = 0; i < ns; i++)
    pk_store_close(&stores[i]);
  bench_keys_free(&present);
  bench_keys_free(&absent);
  free(rows.v);
  free(base.v);
  return rc;
}

int tern_bench_pk(int argc, char **argv) {
  pk_opts o;
  int prc = bench_opts_parse(&k_pk_cmd, &o, argc, argv);
  if (prc) {
    bench_opts_free(&k_pk_cmd, &o);
    return bench_opts_exit(prc);
  }
  char cmdline[2048];
  bench_cmdline(cmdline, sizeof cmdline, argc - 1, argv + 1, "tern-bench pk");
  char *work = make_workdir(&o);
  pk_store stores[5];
  size_t ns = work ? setup_stores(stores, work, &o) : 0;
  int rc = !work ? 1 : ns == 0 ? 2 : 0;
  if (work && ns == 0) bench_log("tern-bench pk: --stores selects no store");
  pk_values = (size_t)o.values;
  if (rc == 0) rc = run_stores(&o, stores, ns, cmdline, work) ? 1 : 0;
  if (work && o.keep && ns)
    bench_log("kept %s", work);
  else if (work)
    bench_rmtree(work);
  free(work);
  bench_opts_free(&k_pk_cmd, &o);
  return rc;
}
