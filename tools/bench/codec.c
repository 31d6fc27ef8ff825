/* SPDX-License-Identifier: MIT */
/*
 * codec.c — `tern-bench codec`: one segment written and read through the
 * codec directly (codec/segment.h), with no engine around it.
 *
 * Part 1, primary keys: N unique random base36 keys, doc id = input
 * position, one segment holding only the unique field, with pulsing
 * threshold 1 (the doc id sits in the dictionary entry) and 0 (it sits in
 * the postings file), and LMDB on the same keys.  Both get the keys already
 * sorted, so build times compare writers, not sorts.  Reported: build
 * seconds, bytes per key by file, warm seek ns (tern_seg_pk_find) for present
 * and absent keys in mmap and pread mode, and for cold lookups after
 * tern_seg_evict the codec's reads and the 4 KiB pages fetched per lookup.
 *
 * Part 2, the pulsing curve: a secondary field where each of N docs has one
 * term drawn from Zipf(s) over T ranks (term text = 16 hex digits of a
 * bijective hash of the rank, so text order is unrelated to frequency),
 * written with several pulsing thresholds.  Reported: .tim / .tix / .doc
 * sizes, the share of terms pulsed, and cold reads per term lookup (seek
 * the term, then iterate all its postings), overall and by document
 * frequency.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/keys_common.h"
#include "tools/bench/lmdb_common.h"
#include "tools/bench/seg_pk.h"

#include "codec/io.h"
#include "codec/postings.h"
#include "codec/segment.h"
#include "tern.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CODEC_SEED 0x636F646563ull /* "codec" */
#define SEG_NAME "seg"
#define ZIPF_FIELD "tag"

typedef struct codec_opts {
  uint64_t docs, runs, warm, cold, seed, zipf_terms, zipf_docs, zipf_lookups;
  double *zipf_s;
  size_t nzipf_s;
  uint64_t *thresholds;
  size_t nthresholds;
  const char *parent, *out;
  int keep, io_modes; /* bit 0: mmap, bit 1: pread */
  int checks_ab;      /* also warm present lookups without read-path checksums */
} codec_opts;

void tern_bench_codec_usage(FILE *out) {
  fprintf(out, "tern-bench codec [options]   one segment through the codec (issue #3)\n"
               "  --docs N              unique random base36 keys (10000000)\n"
               "  --runs R              repetitions; medians reported (3)\n"
               "  --warm N              warm lookups per run, present and absent each (1000000)\n"
               "  --cold N              cold lookups per run after eviction (1000)\n"
               "  --io MODE             mmap | pread | both (both)\n"
               "  --read-checks-ab      warm present lookups also without the read-path page\n"
               "                        checksums (io \"mmap-nocheck\"), alternating in each run\n"
               "  --zipf-docs N         docs of the Zipf field (= --docs; 0 skips part 2)\n"
               "  --zipf-terms T        ranks of the Zipf distribution (1000000)\n"
               "  --zipf-s LIST         Zipf exponents (1.0,1.2)\n"
               "  --thresholds LIST     pulsing thresholds of the Zipf field (0,1,2,4,8,16)\n"
               "  --zipf-lookups N      cold term lookups per run (1000)\n"
               "  --dir DIR             parent of the scratch directory (/var/tmp)\n"
               "  --out OUTDIR          codec-pk.csv, codec-zipf.csv, codec.md (./bench-out)\n"
               "  --seed S              generator seed (fixed default)\n"
               "  --keep                keep the scratch directory\n");
}

static int codec_parse(codec_opts *o, int argc, char **argv) {
  static const struct option longopts[] = {{"docs", required_argument, 0, 'n'},
                                           {"runs", required_argument, 0, 'r'},
                                           {"warm", required_argument, 0, 'w'},
                                           {"cold", required_argument, 0, 'c'},
                                           {"io", required_argument, 0, 'i'},
                                           {"zipf-docs", required_argument, 0, 'Z'},
                                           {"zipf-terms", required_argument, 0, 'T'},
                                           {"zipf-s", required_argument, 0, 'z'},
                                           {"thresholds", required_argument, 0, 't'},
                                           {"zipf-lookups", required_argument, 0, 'L'},
                                           {"dir", required_argument, 0, 'd'},
                                           {"out", required_argument, 0, 'o'},
                                           {"seed", required_argument, 0, 'S'},
                                           {"keep", no_argument, 0, 'K'},
                                           {"read-checks-ab", no_argument, 0, 'A'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  o->docs = 10000000;
  o->runs = 3;
  o->warm = 1000000;
  o->cold = 1000;
  o->seed = CODEC_SEED;
  o->zipf_terms = 1000000;
  o->zipf_docs = UINT64_MAX; /* = docs */
  o->zipf_lookups = 1000;
  o->parent = "/var/tmp";
  o->out = "bench-out";
  o->io_modes = 3;
  const char *zs = "1.0,1.2", *th = "0,1,2,4,8,16";
  optind = 1;
  int c, li = -1;
  while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
    int bad = 0;
    switch (c) {
    case 'n':
      bad = bench_parse_u64(optarg, &o->docs) || o->docs == 0 || o->docs >= UINT32_MAX;
      break;
    case 'r': bad = bench_parse_u64(optarg, &o->runs) || o->runs == 0 || o->runs > 1000; break;
    case 'w': bad = bench_parse_u64(optarg, &o->warm) || o->warm >= UINT32_MAX; break;
    case 'c':
      bad = bench_parse_u64(optarg, &o->cold) || o->cold == 0 || o->cold >= UINT32_MAX;
      break;
    case 'i':
      o->io_modes = !strcmp(optarg, "mmap")    ? 1
                    : !strcmp(optarg, "pread") ? 2
                    : !strcmp(optarg, "both")  ? 3
                                               : 0;
      bad = o->io_modes == 0;
      break;
    case 'Z': bad = bench_parse_u64(optarg, &o->zipf_docs) || o->zipf_docs >= UINT32_MAX; break;
    case 'T':
      bad = bench_parse_u64(optarg, &o->zipf_terms) || o->zipf_terms == 0 ||
            o->zipf_terms >= UINT32_MAX;
      break;
    case 'z': zs = optarg; break;
    case 't': th = optarg; break;
    case 'L': bad = bench_parse_u64(optarg, &o->zipf_lookups) || o->zipf_lookups == 0; break;
    case 'd': o->parent = optarg; break;
    case 'o': o->out = optarg; break;
    case 'S': bad = bench_parse_u64(optarg, &o->seed); break;
    case 'K': o->keep = 1; break;
    case 'A': o->checks_ab = 1; break;
    case 'h': tern_bench_codec_usage(stdout); return 1;
    default: tern_bench_codec_usage(stderr); return -1;
    }
    if (bad) {
      fprintf(stderr, "tern-bench codec: bad value for --%s: %s\n",
              li >= 0 ? longopts[li].name : "?", optarg ? optarg : "");
      return -1;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "tern-bench codec: unexpected argument '%s'\n", argv[optind]);
    return -1;
  }
  if (o->zipf_docs == UINT64_MAX) o->zipf_docs = o->docs;
  if (bench_parse_double_list(zs, &o->zipf_s, &o->nzipf_s) != 0) {
    fprintf(stderr, "tern-bench codec: bad --zipf-s list '%s'\n", zs);
    return -1;
  }
  for (size_t i = 0; i < o->nzipf_s; i++) {
    if (o->zipf_s[i] <= 0 || o->zipf_s[i] > 10) {
      fprintf(stderr, "tern-bench codec: Zipf exponents must be in (0, 10]\n");
      return -1;
    }
  }
  if (bench_parse_u64_list(th, &o->thresholds, &o->nthresholds) != 0) {
    fprintf(stderr, "tern-bench codec: bad --thresholds list '%s'\n", th);
    return -1;
  }
  for (size_t i = 0; i < o->nthresholds; i++) {
    if (o->thresholds[i] > TERN_PULSE_MAX) {
      fprintf(stderr, "tern-bench codec: thresholds must be 0..%u\n", TERN_PULSE_MAX);
      return -1;
    }
  }
  return 0;
}

static const char *io_name(tern_io_mode m) { return m == TERN_IO_MMAP ? "mmap" : "pread"; }
static const char *io_name_nocheck(tern_io_mode m) {
  return m == TERN_IO_MMAP ? "mmap-nocheck" : "pread-nocheck";
}

static void log_tern(const char *what, int rc) {
  bench_log("tern-bench codec: %s: %s (%s)", what, tern_strerror(rc), tern_errmsg());
}

static uint64_t seg_file_bytes(const char *dir, const char *ext) {
  char name[64], path[4096];
  snprintf(name, sizeof name, "%s.%s", SEG_NAME, ext);
  return bench_file_bytes(bench_path(path, sizeof path, dir, name));
}

typedef struct seg_sizes {
  uint64_t tim, tix, doc, flt, val, all;
} seg_sizes;

static seg_sizes sizes_of(const char *dir) {
  seg_sizes z = {seg_file_bytes(dir, "tim"), seg_file_bytes(dir, "tix"), seg_file_bytes(dir, "doc"),
                 seg_file_bytes(dir, "flt"), seg_file_bytes(dir, "val"), bench_dir_bytes(dir)};
  return z;
}

/* Drops the open segment's pages and confirms that none stayed resident;
 * falls back to evicting the directory when some did (and says so once). */
static int evict_segment(tern_seg *s, const char *dir) {
  int rc = tern_seg_evict(s);
  if (rc != TERN_OK) {
    log_tern("tern_seg_evict", rc);
    return -1;
  }
  uint64_t left = bench_resident_pages(dir);
  if (left > 0) {
    static int said;
    if (!said++) {
      bench_log("  note: %llu pages resident after tern_seg_evict; evicting the files directly",
                (unsigned long long)left);
      bench_log_resident(dir);
    }
    return bench_evict_dir(dir, BENCH_EVICT_FADVISE, NULL) == 0 ? 0 : -1;
  }
  return 0;
}

static uint64_t seg_reads(const tern_seg *s) {
  tern_seg_io io;
  tern_seg_io_stats(s, &io);
  return io.terms.reads + io.postings.reads + io.values.reads;
}

/* ================================================================ part 1 */

typedef struct pk_result {
  const char *store; /* "tern-pulse1", ... */
  const char *io;
  int phase; /* 0 warm-present, 1 warm-absent, 2 cold-present, 3 cold-absent */
  int run;
  uint64_t n;
  double total_s;
  uint64_t reads, read_bytes, majflt, errors;
} pk_result;

static const char *const k_pk_phases[4] = {"warm-present", "warm-absent", "cold-present",
                                           "cold-absent"};

typedef struct results {
  pk_result *v;
  size_t n, cap;
} results;

static pk_result *results_add(results *r) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 64;
    pk_result *v = realloc(r->v, cap * sizeof *v);
    if (!v) return NULL;
    r->v = v;
    r->cap = cap;
  }
  memset(&r->v[r->n], 0, sizeof r->v[0]);
  return &r->v[r->n++];
}

typedef struct pk_build {
  const char *store;
  char dir[4096];
  uint32_t threshold;
  double build_s;
  seg_sizes z;
  uint64_t pulsed, terms;
} pk_build;

static int build_pk_segment(pk_build *b, const bench_keys *k) {
  tern_segw_options so;
  tern_segw_options_init(&so);
  if (bench_mkdirs(b->dir) != 0) return -1;
  double t0 = bench_now();
  tern_segw *w = NULL;
  int rc = tern_segw_open(&w, b->dir, SEG_NAME, &so);
  if (rc == TERN_OK) rc = tern_segw_field(w, "id", 2, TERN_FIELD_UNIQUE, b->threshold);
  for (size_t j = 0; rc == TERN_OK && j < k->n; j++) {
    uint32_t doc = k->order[j];
    rc = tern_segw_term(w, bench_key_at(k, doc), bench_key_len(k, doc), &doc, 1, "", 0);
    if ((j & 0xFFFF) == 0) bench_progress(b->store, j, k->n);
  }
  bench_progress_done();
  if (rc == TERN_OK) {
    rc = tern_segw_finish(w, (uint32_t)k->n);
  } else {
    tern_segw_abort(w);
  }
  if (rc != TERN_OK) {
    log_tern("writing the pk segment", rc);
    return -1;
  }
  b->build_s = bench_now() - t0;
  b->z = sizes_of(b->dir);
  return 0;
}

/* One batch of pk lookups on an open segment; fills r. */
static void seg_batch(tern_seg *s, tern_seg_cursor *c, const bench_keys *k, const uint32_t *idx,
                      size_t n, int present, pk_result *r) {
  bench_io a, z;
  uint64_t reads0 = seg_reads(s), errors = 0;
  bench_io_take(&a);
  double t0 = bench_now();
  for (size_t i = 0; i < n; i++) {
    uint32_t doc = UINT32_MAX;
    tern_slice val;
    int rc = bench_seg_pk_get(s, bench_key_at(k, idx[i]), bench_key_len(k, idx[i]), c, &doc, &val);
    errors += present ? rc != TERN_OK || doc != idx[i] : rc != TERN_NOTFOUND;
  }
  r->total_s = bench_now() - t0;
  bench_io_take(&z);
  r->n = n;
  r->reads = seg_reads(s) - reads0;
  r->read_bytes = z.read_bytes - a.read_bytes;
  r->majflt = z.majflt - a.majflt;
  r->errors = errors;
}

static void lmdb_batch(bench_lmdb *l, const bench_keys *k, const uint32_t *idx, size_t n,
                       int present, pk_result *r) {
  bench_io a, z;
  uint64_t errors = 0;
  bench_io_take(&a);
  double t0 = bench_now();
  for (size_t i = 0; i < n; i++) {
    uint32_t doc = UINT32_MAX;
    int rc = bench_lmdb_get(l, bench_key_at(k, idx[i]), bench_key_len(k, idx[i]), &doc);
    errors += present ? rc != 0 || doc != idx[i] : rc != MDB_NOTFOUND;
  }
  r->total_s = bench_now() - t0;
  bench_io_take(&z);
  r->n = n;
  r->read_bytes = z.read_bytes - a.read_bytes;
  r->majflt = z.majflt - a.majflt;
  r->errors = errors;
}

typedef struct samples {
  uint32_t *wp, *wa, *cp, *ca; /* warm / cold, present / absent */
} samples;

static int draw_samples(samples *sm, const codec_opts *o, const bench_keys *present,
                        const bench_keys *absent, uint64_t run) {
  bench_rng r;
  bench_rng_init(&r, o->seed ^ bench_mix64(run + 77));
  return bench_sample(&r, present->n, o->warm, sm->wp) ||
         bench_sample(&r, absent->n, o->warm, sm->wa) ||
         bench_sample(&r, present->n, o->cold, sm->cp) ||
         bench_sample(&r, absent->n, o->cold, sm->ca);
}

static int measure_tern_pk(const pk_build *b, tern_io_mode mode, const codec_opts *o,
                           const bench_keys *present, const bench_keys *absent, samples *sm,
                           results *res) {
  tern_seg *s = NULL;
  int rc = tern_seg_open(&s, b->dir, SEG_NAME, mode);
  if (rc != TERN_OK) {
    log_tern("tern_seg_open", rc);
    return -1;
  }
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  int err = 0;
  for (uint64_t run = 1; !err && run <= o->runs; run++) {
    if (draw_samples(sm, o, present, absent, run)) {
      err = 1;
      break;
    }
    /* Cold first (evict, then lookups), then warm (read everything in). */
    for (int ph = 2; !err && ph <= 3; ph++) {
      if (evict_segment(s, b->dir) != 0) {
        err = 1;
        break;
      }
      pk_result *r = results_add(res);
      if (!r) {
        err = 1;
        break;
      }
      *r = (pk_result){.store = b->store, .io = io_name(mode), .phase = ph, .run = (int)run};
      seg_batch(s, &c, ph == 2 ? present : absent, ph == 2 ? sm->cp : sm->ca, o->cold, ph == 2, r);
    }
    if (err || bench_warm_dir(b->dir) != 0) {
      err = 1;
      break;
    }
    pk_result scratch;
    seg_batch(s, &c, present, sm->wp, o->warm, 1, &scratch); /* maps every page */
    for (int ph = 0; ph <= 1; ph++) {
      /* --read-checks-ab: present keys with and without the page checks, in
       * an order that alternates by run */
      for (int ab = 0; ab < (ph == 0 && o->checks_ab ? 2 : 1); ab++) {
        int off = o->checks_ab && ph == 0 && (ab ^ (int)(run & 1));
        pk_result *r = results_add(res);
        if (!r) {
          err = 1;
          break;
        }
        *r = (pk_result){.store = b->store, .io = off ? io_name_nocheck(mode) : io_name(mode),
                         .phase = ph, .run = (int)run};
        tern_io_set_read_checks(!off);
        seg_batch(s, &c, ph == 0 ? present : absent, ph == 0 ? sm->wp : sm->wa, o->warm, ph == 0,
                  r);
        tern_io_set_read_checks(1);
      }
    }
  }
  tern_seg_cursor_release(&c);
  tern_seg_close(s);
  return err ? -1 : 0;
}

static int measure_lmdb_pk(const char *dir, const codec_opts *o, const bench_keys *present,
                           const bench_keys *absent, samples *sm, results *res) {
  char msg[512];
  for (uint64_t run = 1; run <= o->runs; run++) {
    if (draw_samples(sm, o, present, absent, run)) return -1;
    for (int ph = 2; ph <= 3; ph++) {
      bench_lmdb l;
      if (bench_evict_dir(dir, BENCH_EVICT_FADVISE, NULL) != 0 ||
          bench_lmdb_open(&l, dir, 1, msg, sizeof msg) != 0)
        return -1;
      pk_result *r = results_add(res);
      if (!r) return -1;
      *r = (pk_result){.store = "lmdb-nordahead", .io = "mmap", .phase = ph, .run = (int)run};
      lmdb_batch(&l, ph == 2 ? present : absent, ph == 2 ? sm->cp : sm->ca, o->cold, ph == 2, r);
      bench_lmdb_close(&l);
    }
    bench_lmdb l;
    if (bench_warm_dir(dir) != 0 || bench_lmdb_open(&l, dir, 1, msg, sizeof msg) != 0) return -1;
    pk_result scratch;
    lmdb_batch(&l, present, sm->wp, o->warm, 1, &scratch);
    for (int ph = 0; ph <= 1; ph++) {
      pk_result *r = results_add(res);
      if (!r) {
        bench_lmdb_close(&l);
        return -1;
      }
      *r = (pk_result){.store = "lmdb-nordahead", .io = "mmap", .phase = ph, .run = (int)run};
      lmdb_batch(&l, ph == 0 ? present : absent, ph == 0 ? sm->wp : sm->wa, o->warm, ph == 0, r);
    }
    bench_lmdb_close(&l);
  }
  return 0;
}

/* Median over runs of `metric` for (store, io, phase). */
typedef double (*metric_fn)(const pk_result *);
static double m_ns(const pk_result *r) { return r->total_s * 1e9 / (double)r->n; }
static double m_reads(const pk_result *r) { return (double)r->reads / (double)r->n; }
static double m_pages(const pk_result *r) { return (double)r->read_bytes / 4096.0 / (double)r->n; }
static double m_majflt(const pk_result *r) { return (double)r->majflt / (double)r->n; }

static bench_summary med(const results *res, const char *store, const char *io, int phase,
                         metric_fn fn) {
  double *v = calloc(res->n + 1, sizeof *v);
  size_t k = 0;
  for (size_t i = 0; v && i < res->n; i++) {
    const pk_result *r = &res->v[i];
    if (!strcmp(r->store, store) && !strcmp(r->io, io) && r->phase == phase) v[k++] = fn(r);
  }
  bench_summary s = bench_summarize(v, k);
  free(v);
  return s;
}

/* ================================================================ part 2 */

typedef struct zipf_set {
  double s;
  uint32_t ndocs, nranks;
  uint32_t *count; /* per rank: docs having it */
  uint64_t *start; /* per rank: first of its docs in `docs` */
  uint32_t *docs;  /* every doc, grouped by rank, ascending within */
  uint32_t *terms; /* ranks with count > 0, in term text order */
  uint32_t nterms;
} zipf_set;

static void zipf_term(uint32_t rank, uint8_t out[16]) {
  static const char hex[] = "0123456789abcdef";
  uint64_t v = bench_mix64((uint64_t)rank ^ 0x7A697066ull);
  for (int i = 15; i >= 0; i--, v >>= 4)
    out[i] = (uint8_t)hex[v & 15];
}

static int cmp_term_rank(const void *a, const void *b) {
  uint64_t x = bench_mix64((uint64_t) * (const uint32_t *)a ^ 0x7A697066ull);
  uint64_t y = bench_mix64((uint64_t) * (const uint32_t *)b ^ 0x7A697066ull);
  return (x > y) - (x < y);
}

static void zipf_free(zipf_set *z) {
  free(z->count);
  free(z->start);
  free(z->docs);
  free(z->terms);
  memset(z, 0, sizeof *z);
}

/* Draws ndocs ranks from Zipf(s) over nranks (inverse CDF, binary search)
 * and groups the docs by rank. */
static int zipf_generate(zipf_set *z, double s, uint32_t ndocs, uint32_t nranks, uint64_t seed) {
  memset(z, 0, sizeof *z);
  z->s = s;
  z->ndocs = ndocs;
  z->nranks = nranks;
  double *cdf = malloc((size_t)nranks * sizeof *cdf);
  uint32_t *rank_of = malloc(((size_t)ndocs + 1) * sizeof *rank_of);
  z->count = calloc(nranks, sizeof *z->count);
  z->start = calloc((size_t)nranks + 1, sizeof *z->start);
  z->docs = malloc(((size_t)ndocs + 1) * sizeof *z->docs);
  z->terms = malloc((size_t)nranks * sizeof *z->terms);
  if (!cdf || !rank_of || !z->count || !z->start || !z->docs || !z->terms) {
    free(cdf);
    free(rank_of);
    zipf_free(z);
    return -1;
  }
  double acc = 0;
  for (uint32_t r = 0; r < nranks; r++)
    cdf[r] = acc += pow((double)r + 1, -s);
  for (uint32_t r = 0; r < nranks; r++)
    cdf[r] /= acc;
  bench_rng rng;
  bench_rng_init(&rng, seed ^ bench_mix64((uint64_t)(s * 1000)));
  for (uint32_t d = 0; d < ndocs; d++) {
    double u = bench_rng_unit(&rng);
    uint32_t lo = 0, hi = nranks - 1;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (cdf[mid] > u)
        hi = mid;
      else
        lo = mid + 1;
    }
    rank_of[d] = lo;
    z->count[lo]++;
  }
  for (uint32_t r = 0; r < nranks; r++)
    z->start[r + 1] = z->start[r] + z->count[r];
  uint64_t *fill = malloc(((size_t)nranks + 1) * sizeof *fill);
  if (!fill) {
    free(cdf);
    free(rank_of);
    zipf_free(z);
    return -1;
  }
  memcpy(fill, z->start, ((size_t)nranks + 1) * sizeof *fill);
  for (uint32_t d = 0; d < ndocs; d++)
    z->docs[fill[rank_of[d]]++] = d;
  for (uint32_t r = 0; r < nranks; r++)
    if (z->count[r]) z->terms[z->nterms++] = r;
  qsort(z->terms, z->nterms, sizeof *z->terms, cmp_term_rank);
  free(fill);
  free(cdf);
  free(rank_of);
  return 0;
}

#define NBUCKETS 7
static const char *const k_bucket_names[NBUCKETS] = {"1",    "2",     "3–4", "5–8",
                                                     "9–16", "17–64", ">64"};
static int bucket_of(uint32_t df) {
  return df <= 1 ? 0 : df <= 2 ? 1 : df <= 4 ? 2 : df <= 8 ? 3 : df <= 16 ? 4 : df <= 64 ? 5 : 6;
}

typedef struct zipf_result {
  double s;
  uint32_t threshold;
  double build_s;
  seg_sizes z;
  uint64_t terms, pulsed;
  /* per run */
  double *us, *reads, *pages;
  uint64_t breads[NBUCKETS], bcount[NBUCKETS]; /* summed over runs */
  uint64_t errors;
} zipf_result;

static int build_zipf_segment(const char *dir, const zipf_set *z, uint32_t threshold,
                              double *secs) {
  tern_segw_options so;
  tern_segw_options_init(&so);
  if (bench_mkdirs(dir) != 0) return -1;
  double t0 = bench_now();
  tern_segw *w = NULL;
  int rc = tern_segw_open(&w, dir, SEG_NAME, &so);
  if (rc == TERN_OK) rc = tern_segw_field(w, ZIPF_FIELD, strlen(ZIPF_FIELD), 0, threshold);
  for (uint32_t i = 0; rc == TERN_OK && i < z->nterms; i++) {
    uint32_t r = z->terms[i];
    uint8_t term[16];
    zipf_term(r, term);
    rc = tern_segw_term(w, term, sizeof term, z->docs + z->start[r], z->count[r], NULL, 0);
  }
  if (rc == TERN_OK)
    rc = tern_segw_finish(w, z->ndocs);
  else
    tern_segw_abort(w);
  if (rc != TERN_OK) {
    log_tern("writing the Zipf segment", rc);
    return -1;
  }
  *secs = bench_now() - t0;
  return 0;
}

/* Looks `rank`'s term up and iterates its postings, checking them. */
static int lookup_term(tern_seg *s, const tern_seg_field *f, tern_seg_cursor *c, const zipf_set *z,
                       uint32_t rank) {
  uint8_t term[16];
  zipf_term(rank, term);
  tern_term_entry e;
  int rc = tern_seg_seek_exact(s, f, term, sizeof term, c, &e);
  if (rc != TERN_OK) return 1;
  tern_postings_iter it;
  if (tern_seg_postings(s, &e, &it) != TERN_OK) return 1;
  const uint32_t *want = z->docs + z->start[rank];
  uint32_t n = 0, doc;
  int bad = 0;
  while ((rc = tern_postings_iter_next(&it, &doc)) == TERN_OK && doc != TERN_DOC_END) {
    if (n >= z->count[rank] || doc != want[n]) bad = 1;
    n++;
  }
  tern_postings_iter_release(&it);
  return rc != TERN_OK || bad || n != z->count[rank];
}

static int measure_zipf(const char *dir, const zipf_set *z, const codec_opts *o, zipf_result *zr) {
  tern_seg *s = NULL;
  int rc = tern_seg_open(&s, dir, SEG_NAME, TERN_IO_MMAP);
  if (rc != TERN_OK) {
    log_tern("tern_seg_open (Zipf)", rc);
    return -1;
  }
  tern_seg_summary sum;
  tern_seg_summarize(s, &sum);
  zr->terms = sum.terms;
  zr->pulsed = sum.pulsed_terms;
  const tern_seg_field *f = tern_seg_find_field(s, ZIPF_FIELD, strlen(ZIPF_FIELD));
  uint32_t *pick = malloc(o->zipf_lookups * sizeof *pick);
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  int err = !f || !pick;
  for (uint64_t run = 0; !err && run < o->runs; run++) {
    bench_rng rng;
    bench_rng_init(&rng, o->seed ^ bench_mix64(0x21BF + run));
    if (bench_sample(&rng, z->nterms, o->zipf_lookups, pick) || evict_segment(s, dir) != 0) {
      err = 1;
      break;
    }
    bench_io a, b;
    uint64_t r0 = seg_reads(s);
    bench_io_take(&a);
    double t0 = bench_now();
    for (uint64_t i = 0; i < o->zipf_lookups; i++) {
      uint32_t rank = z->terms[pick[i]];
      uint64_t before = seg_reads(s);
      zr->errors += (uint64_t)lookup_term(s, f, &c, z, rank);
      int bk = bucket_of(z->count[rank]);
      zr->breads[bk] += seg_reads(s) - before;
      zr->bcount[bk]++;
    }
    double t1 = bench_now();
    bench_io_take(&b);
    double n = (double)o->zipf_lookups;
    zr->us[run] = (t1 - t0) * 1e6 / n;
    zr->reads[run] = (double)(seg_reads(s) - r0) / n;
    zr->pages[run] = (double)(b.read_bytes - a.read_bytes) / 4096.0 / n;
  }
  tern_seg_cursor_release(&c);
  tern_seg_close(s);
  free(pick);
  return err ? -1 : 0;
}

/* ================================================================ report */

static void md_header(FILE *f, const codec_opts *o, const char *cmdline, const char *work) {
  char machine[256];
  bench_machine(machine, sizeof machine);
  fprintf(f, "# tern-bench codec\n\n- command: `%s`\n- machine: %s\n", cmdline, machine);
  fprintf(f, "- storage: %s (%s), device read-ahead %ld KiB\n", work, bench_fs_name(work),
          bench_readahead_kb(work));
  fprintf(f,
          "- %llu unique random base36 keys (16 bytes), doc id = input position; %s "
          "value = 4-byte doc id, tern value empty (the doc id is the posting)\n",
          (unsigned long long)o->docs, MDB_VERSION_STRING);
  fprintf(f,
          "- cold: tern_seg_evict (segment stays open: its terms index and filter are in "
          "memory) / LMDB closed, files evicted with fdatasync + POSIX_FADV_DONTNEED, reopened; "
          "%llu lookups per run; warm: files read once, one untimed pass, then %llu lookups; "
          "medians of %llu runs (min–max)\n\n",
          (unsigned long long)o->cold, (unsigned long long)o->warm, (unsigned long long)o->runs);
}

static void md_pk(FILE *f, const codec_opts *o, pk_build *b, size_t nb, double lmdb_s,
                  uint64_t lmdb_bytes, const results *res) {
  double d = (double)o->docs;
  fprintf(f, "## Primary keys: build and size\n\n");
  fprintf(f, "| store | build s | .tim+.tix B/key | .doc B/key | terms+postings B/key | .flt B/key "
             "| all files B/key |\n|---|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < nb; i++)
    fprintf(f, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", b[i].store, b[i].build_s,
            (double)(b[i].z.tim + b[i].z.tix) / d, (double)b[i].z.doc / d,
            (double)(b[i].z.tim + b[i].z.tix + b[i].z.doc) / d, (double)b[i].z.flt / d,
            (double)b[i].z.all / d);
  fprintf(f, "| lmdb (sorted MDB_APPEND) | %.2f | – | – | – | – | %.2f |\n\n", lmdb_s,
          (double)lmdb_bytes / d);

  fprintf(f, "## Primary keys: warm seek (ns per lookup)\n\n");
  fprintf(f, "| store | io | present ns | vs LMDB | absent ns | vs LMDB |\n"
             "|---|---|---:|---:|---:|---:|\n");
  bench_summary lp = med(res, "lmdb-nordahead", "mmap", 0, m_ns);
  bench_summary la = med(res, "lmdb-nordahead", "mmap", 1, m_ns);
  const char *stores[] = {"tern-pulse1", "tern-pulse0", "lmdb-nordahead"};
  const char *ios[] = {"mmap", "mmap-nocheck", "pread", "pread-nocheck"};
  for (size_t si = 0; si < 3; si++) {
    for (size_t ii = 0; ii < 4; ii++) {
      bench_summary p = med(res, stores[si], ios[ii], 0, m_ns);
      bench_summary a = med(res, stores[si], ios[ii], 1, m_ns);
      if (p.n == 0) continue;
      if (a.n == 0) { /* the -nocheck rows: present keys only */
        fprintf(f, "| %s | %s | %.0f (%.0f–%.0f) | %.2f× | – | – |\n", stores[si], ios[ii], p.median,
                p.min, p.max, lp.median / p.median);
        continue;
      }
      fprintf(f, "| %s | %s | %.0f (%.0f–%.0f) | %.2f× | %.0f (%.0f–%.0f) | %.2f× |\n", stores[si],
              ios[ii], p.median, p.min, p.max, lp.median / p.median, a.median, a.min, a.max,
              la.median / a.median);
    }
  }
  fprintf(f, "\n## Primary keys: cold lookups after eviction (per lookup, medians)\n\n");
  fprintf(f, "| store | io | present µs | reads | 4 KiB pages | majflt | absent µs | reads | 4 KiB "
             "pages |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t si = 0; si < 3; si++) {
    for (size_t ii = 0; ii < 4; ii++) {
      bench_summary p = med(res, stores[si], ios[ii], 2, m_ns);
      if (p.n == 0) continue;
      bench_summary a = med(res, stores[si], ios[ii], 3, m_ns);
      int tern = si < 2;
      char pr[32] = "–", ar[32] = "–";
      if (tern) {
        snprintf(pr, sizeof pr, "%.3f", med(res, stores[si], ios[ii], 2, m_reads).median);
        snprintf(ar, sizeof ar, "%.3f", med(res, stores[si], ios[ii], 3, m_reads).median);
      }
      fprintf(f, "| %s | %s | %.1f | %s | %.2f | %.2f | %.1f | %s | %.2f |\n", stores[si], ios[ii],
              p.median / 1e3, pr, med(res, stores[si], ios[ii], 2, m_pages).median,
              med(res, stores[si], ios[ii], 2, m_majflt).median, a.median / 1e3, ar,
              med(res, stores[si], ios[ii], 3, m_pages).median);
    }
  }
  fprintf(f, "\n");
}

static void md_zipf(FILE *f, const codec_opts *o, zipf_result *zr, size_t nzr) {
  fprintf(f, "## Pulsing threshold on a Zipf-distributed field\n\n");
  fprintf(f,
          "%llu docs, one term each drawn from Zipf(s) over %llu ranks; terms are 16 hex "
          "chars. Cold: %llu distinct terms sampled uniformly among the terms present, "
          "per run, after eviction; a lookup = seek the term + iterate all its postings "
          "(verified against the generator). Reads = codec reads; pages = /proc/self/io "
          "read_bytes / 4096. Medians of %llu runs.\n\n",
          (unsigned long long)o->zipf_docs, (unsigned long long)o->zipf_terms,
          (unsigned long long)o->zipf_lookups, (unsigned long long)o->runs);
  fprintf(f, "| s | threshold | terms | pulsed | .tim bytes | .tix bytes | .doc bytes | total | "
             "build s | reads/lookup | pages/lookup | µs/lookup | errors |\n"
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < nzr; i++) {
    zipf_result *z = &zr[i];
    bench_summary us = bench_summarize(z->us, o->runs), rd = bench_summarize(z->reads, o->runs);
    bench_summary pg = bench_summarize(z->pages, o->runs);
    fprintf(f,
            "| %.2f | %u | %llu | %.1f%% | %llu | %llu | %llu | %llu | %.2f | %.3f | %.2f | "
            "%.1f | %llu |\n",
            z->s, z->threshold, (unsigned long long)z->terms,
            z->terms ? 100.0 * (double)z->pulsed / (double)z->terms : 0.0,
            (unsigned long long)z->z.tim, (unsigned long long)z->z.tix,
            (unsigned long long)z->z.doc, (unsigned long long)z->z.all, z->build_s, rd.median,
            pg.median, us.median, (unsigned long long)z->errors);
  }
  fprintf(f, "\nCold codec reads per term lookup by document frequency (all runs):\n\n| s | "
             "threshold |");
  for (int b = 0; b < NBUCKETS; b++)
    fprintf(f, " df %s |", k_bucket_names[b]);
  fprintf(f, "\n|---:|---:|");
  for (int b = 0; b < NBUCKETS; b++)
    fprintf(f, "---:|");
  fprintf(f, "\n");
  for (size_t i = 0; i < nzr; i++) {
    fprintf(f, "| %.2f | %u |", zr[i].s, zr[i].threshold);
    for (int b = 0; b < NBUCKETS; b++) {
      if (zr[i].bcount[b])
        fprintf(f, " %.2f |", (double)zr[i].breads[b] / (double)zr[i].bcount[b]);
      else
        fprintf(f, " – |");
    }
    fprintf(f, "\n");
  }
  fprintf(f, "\nShare of sampled terms by df bucket:\n\n| s |");
  for (int b = 0; b < NBUCKETS; b++)
    fprintf(f, " df %s |", k_bucket_names[b]);
  fprintf(f, "\n|---:|");
  for (int b = 0; b < NBUCKETS; b++)
    fprintf(f, "---:|");
  fprintf(f, "\n");
  for (size_t i = 0; i < nzr; i++) {
    if (i > 0 && zr[i].s == zr[i - 1].s) continue;
    uint64_t tot = 0;
    for (int b = 0; b < NBUCKETS; b++)
      tot += zr[i].bcount[b];
    fprintf(f, "| %.2f |", zr[i].s);
    for (int b = 0; b < NBUCKETS; b++)
      fprintf(f, " %.1f%% |", tot ? 100.0 * (double)zr[i].bcount[b] / (double)tot : 0.0);
    fprintf(f, "\n");
  }
  fprintf(f, "\n");
}

static int write_pk_csv(const char *path, const results *res) {
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  fprintf(f, "store,io,phase,n,run,total_ms,ns_per_lookup,reads_per_lookup,pages_per_lookup,"
             "majflt_per_lookup,errors\n");
  for (size_t i = 0; i < res->n; i++) {
    const pk_result *r = &res->v[i];
    fprintf(f, "%s,%s,%s,%llu,%d,%.3f,%.1f,", r->store, r->io, k_pk_phases[r->phase],
            (unsigned long long)r->n, r->run, r->total_s * 1e3, m_ns(r));
    if (strncmp(r->store, "tern", 4) == 0)
      fprintf(f, "%.4f,", m_reads(r));
    else
      fprintf(f, "NA,");
    fprintf(f, "%.4f,%.4f,%llu\n", m_pages(r), m_majflt(r), (unsigned long long)r->errors);
  }
  return fclose(f) == 0 ? 0 : -errno;
}

static int write_zipf_csv(const char *path, const codec_opts *o, zipf_result *zr, size_t nzr) {
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  fprintf(f, "s,threshold,run,terms,pulsed_terms,tim_bytes,tix_bytes,doc_bytes,all_bytes,build_s,"
             "lookups,reads_per_lookup,pages_per_lookup,us_per_lookup,errors\n");
  for (size_t i = 0; i < nzr; i++) {
    for (uint64_t run = 0; run < o->runs; run++) {
      zipf_result *z = &zr[i];
      fprintf(f, "%.3f,%u,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.3f,%llu,%.4f,%.4f,%.2f,%llu\n", z->s,
              z->threshold, (unsigned long long)run + 1, (unsigned long long)z->terms,
              (unsigned long long)z->pulsed, (unsigned long long)z->z.tim,
              (unsigned long long)z->z.tix, (unsigned long long)z->z.doc,
              (unsigned long long)z->z.all, z->build_s, (unsigned long long)o->zipf_lookups,
              z->reads[run], z->pages[run], z->us[run], (unsigned long long)z->errors);
    }
  }
  return fclose(f) == 0 ? 0 : -errno;
}

/* ================================================================ main */

static int run_pk_part(const codec_opts *o, const char *work, pk_build *b, double *lmdb_s,
                       uint64_t *lmdb_bytes, results *res) {
  bench_keys present = {0}, absent = {0};
  samples sm = {0};
  int rc = -1;
  char ldir[4096];
  bench_path(ldir, sizeof ldir, work, "lmdb");
  double t0 = bench_now();
  size_t pool = o->warm > o->cold ? o->warm : o->cold;
  if (pool > o->docs) pool = o->docs;
  if (bench_keys_generate(&present, BENCH_KEYS_RANDOM, o->docs, o->seed) != 0 ||
      bench_keys_absent(&absent, &present, pool, o->seed ^ 0xAB5E47ull) != 0)
    goto out;
  bench_log("keys: %.2f s", bench_now() - t0);
  sm.wp = malloc((o->warm + 1) * sizeof(uint32_t));
  sm.wa = malloc((o->warm + 1) * sizeof(uint32_t));
  sm.cp = malloc(o->cold * sizeof(uint32_t));
  sm.ca = malloc(o->cold * sizeof(uint32_t));
  if (!sm.wp || !sm.wa || !sm.cp || !sm.ca) goto out;
  for (size_t i = 0; i < 2; i++) {
    bench_log("build: %s", b[i].store);
    if (build_pk_segment(&b[i], &present) != 0) goto out;
  }
  bench_log("build: lmdb");
  char msg[512];
  double t1 = bench_now();
  if (bench_lmdb_build(ldir, &present, msg, sizeof msg) != 0) {
    bench_log("tern-bench codec: %s", msg);
    goto out;
  }
  *lmdb_s = bench_now() - t1;
  *lmdb_bytes = bench_dir_bytes(ldir);
  for (size_t i = 0; i < 2; i++) {
    for (int m = 0; m < 2; m++) {
      if (!(o->io_modes & (1 << m))) continue;
      bench_log("measure: %s (%s)", b[i].store, io_name((tern_io_mode)m));
      if (measure_tern_pk(&b[i], (tern_io_mode)m, o, &present, &absent, &sm, res) != 0) goto out;
    }
  }
  bench_log("measure: lmdb-nordahead");
  if (measure_lmdb_pk(ldir, o, &present, &absent, &sm, res) != 0) goto out;
  rc = 0;
out:
  if (rc) bench_log("tern-bench codec: primary-key part failed");
  free(sm.wp);
  free(sm.wa);
  free(sm.cp);
  free(sm.ca);
  bench_keys_free(&present);
  bench_keys_free(&absent);
  for (size_t i = 0; i < 2; i++)
    bench_rmtree(b[i].dir);
  bench_rmtree(ldir);
  return rc;
}

static int run_zipf_part(const codec_opts *o, const char *work, zipf_result *zr) {
  size_t k = 0;
  for (size_t si = 0; si < o->nzipf_s; si++) {
    zipf_set z;
    double t0 = bench_now();
    if (zipf_generate(&z, o->zipf_s[si], (uint32_t)o->zipf_docs, (uint32_t)o->zipf_terms,
                      o->seed) != 0)
      return -1;
    bench_log("zipf s=%.2f: %u distinct terms of %u ranks (%.2f s)", z.s, z.nterms, z.nranks,
              bench_now() - t0);
    for (size_t ti = 0; ti < o->nthresholds; ti++, k++) {
      zipf_result *r = &zr[k];
      r->s = z.s;
      r->threshold = (uint32_t)o->thresholds[ti];
      char dir[4096], name[64];
      snprintf(name, sizeof name, "zipf-%zu-%u", si, r->threshold);
      bench_path(dir, sizeof dir, work, name);
      bench_log("zipf s=%.2f threshold %u", z.s, r->threshold);
      if (build_zipf_segment(dir, &z, r->threshold, &r->build_s) != 0) {
        zipf_free(&z);
        return -1;
      }
      r->z = sizes_of(dir);
      int rc = measure_zipf(dir, &z, o, r);
      bench_rmtree(dir);
      if (rc != 0) {
        zipf_free(&z);
        return -1;
      }
    }
    zipf_free(&z);
  }
  return 0;
}

int tern_bench_codec(int argc, char **argv) {
  codec_opts o;
  int prc = codec_parse(&o, argc, argv);
  if (prc) {
    free(o.zipf_s);
    free(o.thresholds);
    return prc > 0 ? 0 : 2;
  }
  char cmdline[2048];
  bench_cmdline(cmdline, sizeof cmdline, argc - 1, argv + 1, "tern-bench codec");
  if (bench_is_memory_fs(o.parent))
    bench_log("WARNING: %s is a memory file system: cold reads will not reach a disk", o.parent);
  char *work = bench_mkdtemp(o.parent, "tern-bench-codec");
  if (!work) {
    bench_log("tern-bench codec: cannot create a scratch directory in %s: %s", o.parent,
              strerror(errno));
    return 1;
  }
  size_t nzr = o.zipf_docs ? o.nzipf_s * o.nthresholds : 0;
  zipf_result *zr = calloc(nzr + 1, sizeof *zr);
  double *per_run = calloc((nzr + 1) * 3 * o.runs, sizeof(double));
  results res = {0};
  pk_build b[2];
  memset(b, 0, sizeof b);
  b[0].store = "tern-pulse1";
  b[0].threshold = 1;
  b[1].store = "tern-pulse0";
  b[1].threshold = 0;
  bench_path(b[0].dir, sizeof b[0].dir, work, "pk-pulse1");
  bench_path(b[1].dir, sizeof b[1].dir, work, "pk-pulse0");
  double lmdb_s = 0;
  uint64_t lmdb_bytes = 0, errors = 0;
  int rc = 1;
  if (!zr || !per_run) goto out;
  for (size_t i = 0; i < nzr; i++) {
    zr[i].us = per_run + (i * 3 + 0) * o.runs;
    zr[i].reads = per_run + (i * 3 + 1) * o.runs;
    zr[i].pages = per_run + (i * 3 + 2) * o.runs;
  }
  double t0 = bench_now();
  if (run_pk_part(&o, work, b, &lmdb_s, &lmdb_bytes, &res) != 0) goto out;
  if (nzr && run_zipf_part(&o, work, zr) != 0) goto out;
  char path[4096];
  if (bench_mkdirs(o.out) != 0 ||
      write_pk_csv(bench_path(path, sizeof path, o.out, "codec-pk.csv"), &res) != 0 ||
      (nzr &&
       write_zipf_csv(bench_path(path, sizeof path, o.out, "codec-zipf.csv"), &o, zr, nzr) != 0)) {
    bench_log("tern-bench codec: cannot write to %s", o.out);
    goto out;
  }
  FILE *f = fopen(bench_path(path, sizeof path, o.out, "codec.md"), "w");
  if (!f) goto out;
  md_header(f, &o, cmdline, work);
  md_pk(f, &o, b, 2, lmdb_s, lmdb_bytes, &res);
  if (nzr) md_zipf(f, &o, zr, nzr);
  fclose(f);
  for (size_t i = 0; i < res.n; i++)
    errors += res.v[i].errors;
  for (size_t i = 0; i < nzr; i++)
    errors += zr[i].errors;
  bench_log("wrote %s/codec.md, %s/codec-pk.csv%s in %.1f s", o.out, o.out,
            nzr ? ", codec-zipf.csv" : "", bench_now() - t0);
  if (errors) {
    bench_log("FAILED: %llu lookups answered wrongly", (unsigned long long)errors);
    goto out;
  }
  rc = 0;
out:
  if (o.keep)
    bench_log("kept %s", work);
  else
    bench_rmtree(work);
  free(work);
  free(res.v);
  free(zr);
  free(per_run);
  free(o.zipf_s);
  free(o.thresholds);
  return rc;
}
