/* SPDX-License-Identifier: MIT */
/*
 * livedocs.c — `tern-bench livedocs`: tern's adaptive live docs against a
 * plain dense bitset measured side by side in the same run, on the rows of
 * Lucene PR #15413 (10M docs; random, clustered and uniform deletions at
 * 0.1%, 1%, 5%; one deletion per 64-doc word at 100K..100M docs).
 *
 * The dense baseline lives in this file: uint64 words, a bit test for
 * is_live, and for iteration its best word-at-a-time batch loop (ctz over
 * each word; an all-ones word of a live walk stored as a range, with the
 * same SSE2 range store tern uses) into the same kind of buffer tern's
 * next_batch() fills.  Its is_live and batch functions are noipa so each
 * call costs what a call into a library costs, as tern's do (tern's are in
 * libtern, never inlined here).  Per-doc next() is also timed for both,
 * inline on both sides (tern's is inline in livedocs.h).  Every result is
 * folded into a sink so no loop can be dropped, and each row first checks
 * that both sides iterate the same docs.  Lucene's published sparse bytes
 * and CRoaring's bytes (measured elsewhere) are reference columns.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/harness.h"
#include "tools/bench/opts.h"

#include "codec/livedocs.h"
#include "tern.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define BATCH 256 /* docs per next_batch call, both sides */

/* --- the dense baseline --- */

typedef struct dense {
  uint64_t *w;
  uint32_t nw, max_doc;
} dense;

typedef struct dense_iter {
  const dense *d;
  uint32_t wi;
  int live;
  uint64_t word;
} dense_iter;

static uint64_t dense_word(const dense *d, uint32_t wi, int live) {
  uint64_t w = live ? ~d->w[wi] : d->w[wi];
  if (live && wi + 1 == d->nw && (d->max_doc & 63)) w &= (1ull << (d->max_doc & 63)) - 1;
  return w;
}
NOIPA static int dense_is_live(const dense *d, uint32_t doc) {
  return !((d->w[doc >> 6] >> (doc & 63)) & 1);
}
static void dense_iter_init(dense_iter *it, const dense *d, int live) {
  it->d = d;
  it->live = live;
  it->wi = 0;
  it->word = d->nw ? dense_word(d, 0, live) : 0;
}
static inline uint32_t dense_next(dense_iter *it) {
  while (!it->word) {
    if (++it->wi >= it->d->nw) return TERN_LD_END;
    it->word = dense_word(it->d, it->wi, it->live);
  }
  unsigned tz = (unsigned)__builtin_ctzll(it->word);
  it->word &= it->word - 1;
  return it->wi * 64u + tz;
}
/* 64 consecutive docs from `from`. */
static inline void dense_range64(uint32_t *out, uint32_t from) {
#if defined(__SSE2__)
  __m128i v = _mm_add_epi32(_mm_set1_epi32((int)from), _mm_setr_epi32(0, 1, 2, 3));
  const __m128i four = _mm_set1_epi32(4);
  for (int i = 0; i < 64; i += 4) {
    _mm_storeu_si128((__m128i *)(void *)(out + i), v);
    v = _mm_add_epi32(v, four);
  }
#else
  for (uint32_t i = 0; i < 64; i++) out[i] = from + i;
#endif
}
NOIPA static size_t dense_next_batch(dense_iter *it, uint32_t *out, size_t cap) {
  const dense *d = it->d;
  uint32_t wi = it->wi;
  uint64_t word = it->word;
  size_t j = 0;
  while (wi < d->nw) {
    if (word == ~0ull && cap - j >= 64) {
      dense_range64(out + j, wi * 64u);
      j += 64;
      word = 0;
    } else {
      for (uint32_t base = wi * 64u; word && j < cap; word &= word - 1)
        out[j++] = base + (uint32_t)__builtin_ctzll(word);
    }
    if (j == cap) break;
    if (++wi < d->nw) word = dense_word(d, wi, it->live);
  }
  it->wi = wi;
  it->word = word;
  return j;
}

/* --- rows --- */

enum { P_RANDOM, P_CLUSTERED, P_UNIFORM, P_SCATTERED };
static const char *const PATTERN[] = {"random", "clustered", "uniform", "scattered"};

typedef struct row {
  int pattern;
  double rate;     /* 0 for scattered (1/64) */
  uint64_t docs;
  double lucene;   /* Lucene's sparse bytes; 0: none published */
  double croaring; /* CRoaring bytes; 0: none */
  int croaring_scaled;
} row;

/* Lucene PR #15413 (10M docs) and CRoaring (measured elsewhere, 10M docs). */
static void references(row *r) {
  static const double lucene[3][3] = {{163776, 804008, 1318440},
                                      {30760, 42376, 93856},
                                      {185624, 1318368, 1318552}};
  static const double roaring[3][3] = {{21232, 201232, 1001232}, {117, 117, 117}, {0, 0, 0}};
  r->lucene = r->croaring = 0;
  r->croaring_scaled = 0;
  if (r->pattern == P_SCATTERED) {
    r->lucene = 1.055 * (double)((r->docs + 63) / 64 * 8); /* +5.5% over dense at every size */
    r->croaring = 313732.0 * (double)r->docs / 1e7;
    r->croaring_scaled = r->docs != 10000000;
    return;
  }
  if (r->docs != 10000000) return;
  int i = r->rate < 0.005 ? 0 : r->rate < 0.03 ? 1 : 2;
  r->lucene = lucene[r->pattern][i];
  r->croaring = roaring[r->pattern][i];
}

/* The deleted docs of a row, sorted, distinct. */
static uint32_t *row_docs(const row *r, bench_rng *rng, size_t *n) {
  uint32_t max_doc = (uint32_t)r->docs;
  size_t cap = r->pattern == P_SCATTERED ? max_doc / 64 + 1 : (size_t)(r->rate * max_doc * 1.2) + 64;
  uint32_t *d = malloc(cap * sizeof *d);
  size_t k = 0;
  if (!d) return NULL;
  switch (r->pattern) {
  case P_RANDOM: {
    uint64_t thresh = (uint64_t)(r->rate * 18446744073709551616.0);
    for (uint32_t i = 0; i < max_doc && k < cap; i++)
      if (bench_rng_next(rng) < thresh) d[k++] = i;
    break;
  }
  case P_CLUSTERED: { /* four runs, one in each quarter of the segment */
    uint32_t len = (uint32_t)(r->rate * max_doc / 4), quarter = max_doc / 4;
    for (int q = 0; q < 4; q++) {
      uint32_t at = q * quarter + (uint32_t)bench_rng_below(rng, quarter - len + 1);
      for (uint32_t i = 0; i < len; i++) d[k++] = at + i;
    }
    break;
  }
  case P_UNIFORM: {
    uint32_t every = (uint32_t)(1.0 / r->rate + 0.5);
    for (uint32_t i = (uint32_t)bench_rng_below(rng, every); i < max_doc; i += every) d[k++] = i;
    break;
  }
  default:
    for (uint64_t w = 0; w * 64 < max_doc; w++) {
      uint64_t i = w * 64 + bench_rng_below(rng, 64);
      if (i < max_doc) d[k++] = (uint32_t)i;
    }
  }
  *n = k;
  return d;
}

/* --- measurements --- */

static uint64_t g_sink;
static uint32_t g_buf[BATCH];

static void tern_iter_init(tern_ld_iter *it, const tern_livedocs *ld, int live) {
  if (live)
    tern_livedocs_iter_live(it, ld);
  else
    tern_livedocs_iter_deleted(it, ld);
}

/* The caller's best use: whole batches; the sink takes each batch's size
 * and last doc (what a consumer does with the docs is the same for both). */
static NOIPA uint64_t walk_tern_batch(const tern_livedocs *ld, int live) {
  tern_ld_iter it;
  uint64_t s = 0;
  tern_iter_init(&it, ld, live);
  for (size_t m; (m = tern_ld_iter_next_batch(&it, g_buf, BATCH)) != 0;) s += m + g_buf[m - 1];
  return s;
}
static NOIPA uint64_t walk_dense_batch(const dense *dn, int live) {
  dense_iter it;
  uint64_t s = 0;
  dense_iter_init(&it, dn, live);
  for (size_t m; (m = dense_next_batch(&it, g_buf, BATCH)) != 0;) s += m + g_buf[m - 1];
  return s;
}
static NOIPA uint64_t walk_tern_next(const tern_livedocs *ld, int live) {
  tern_ld_iter it;
  uint64_t s = 0;
  tern_iter_init(&it, ld, live);
  for (uint32_t d; (d = tern_ld_iter_next(&it)) != TERN_LD_END;) s += d;
  return s;
}
static NOIPA uint64_t walk_dense_next(const dense *dn, int live) {
  dense_iter it;
  uint64_t s = 0;
  dense_iter_init(&it, dn, live);
  for (uint32_t d; (d = dense_next(&it)) != TERN_LD_END;) s += d;
  return s;
}

static NOIPA uint64_t probe_tern(const tern_livedocs *ld, const uint32_t *p, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; i++) s += (uint64_t)tern_livedocs_is_live(ld, p[i]);
  return s;
}
static NOIPA uint64_t probe_dense(const dense *dn, const uint32_t *p, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; i++) s += (uint64_t)dense_is_live(dn, p[i]);
  return s;
}

/* An order-sensitive digest of what each side iterates, untimed. */
static uint64_t digest_tern(const tern_livedocs *ld, int live) {
  tern_ld_iter it;
  uint64_t h = 0;
  tern_iter_init(&it, ld, live);
  for (size_t m; (m = tern_ld_iter_next_batch(&it, g_buf, BATCH)) != 0;)
    for (size_t i = 0; i < m; i++) h = h * 0x100000001b3ull + g_buf[i] + 1;
  return h;
}
static uint64_t digest_dense(const dense *dn, int live) {
  dense_iter it;
  uint64_t h = 0;
  dense_iter_init(&it, dn, live);
  for (size_t m; (m = dense_next_batch(&it, g_buf, BATCH)) != 0;)
    for (size_t i = 0; i < m; i++) h = h * 0x100000001b3ull + g_buf[i] + 1;
  return h;
}

typedef struct result {
  row r;
  uint64_t deleted;
  const char *form;
  size_t mem, dense_mem, liv;
  double del_t, del_d, live_t, live_d, probe_t, probe_d; /* medians: ms, ms, ms, ms, ns, ns */
  double ndel_t, ndel_d, nlive_t, nlive_d;               /* medians of per-doc next(): ms */
  char misses[160];
} result;

static void add_miss(result *res, const char *what) {
  size_t l = strlen(res->misses);
  snprintf(res->misses + l, sizeof res->misses - l, "%s%s", l ? ", " : "", what);
}

/* Which of the targets the row misses. */
static void judge(result *res) {
  double dn = (double)res->r.docs / 8.0, mem = (double)res->mem;
  if (mem > dn * 1.01) add_miss(res, "mem > dense+1%");
  if (res->r.lucene > 0 && res->r.lucene < dn && mem > 0.5 * res->r.lucene)
    add_miss(res, "mem > 0.5x Lucene");
  if (res->r.croaring > 0 && res->r.croaring < dn && mem > 1.5 * res->r.croaring)
    add_miss(res, "mem > 1.5x CRoaring");
  if (res->del_t > res->del_d) add_miss(res, "del-iter slower than dense");
  if (res->r.rate > 0 && res->r.rate < 0.005 && res->del_t > 0.1 * res->del_d)
    add_miss(res, "del-iter > 0.1x dense");
  if (res->live_t > 1.1 * res->live_d) add_miss(res, "live-iter > dense+10%");
  if (res->probe_t > 5 * res->probe_d) add_miss(res, "is_live > 5x dense");
}

/* One row's deleted docs as tern's live docs and as a dense bitset, and
 * the docs that is_live probes. */
typedef struct fixture {
  uint32_t *docs, *probes;
  size_t n;
  uint64_t nprobes;
  dense dn;
  tern_livedocs *empty, *ld;
  uint8_t *liv;
  size_t liv_len;
} fixture;

static void fixture_free(fixture *f) {
  free(f->liv);
  tern_livedocs_free(f->ld);
  tern_livedocs_free(f->empty);
  free(f->probes);
  free(f->dn.w);
  free(f->docs);
}

/* 0, or 1 with a message. */
static int fixture_make(fixture *f, const row *r, uint64_t nprobes, uint64_t seed) {
  bench_rng rng;
  bench_rng_init(&rng, seed ^ (r->docs * 31 + (uint64_t)(r->rate * 1e6)) ^ (uint64_t)r->pattern << 56);
  memset(f, 0, sizeof *f);
  f->docs = row_docs(r, &rng, &f->n);
  f->dn = (dense){.max_doc = (uint32_t)r->docs, .nw = (uint32_t)((r->docs + 63) / 64)};
  f->dn.w = calloc(f->dn.nw ? f->dn.nw : 1, 8);
  f->probes = malloc(nprobes * sizeof *f->probes);
  f->nprobes = nprobes;
  if (!f->docs || !f->dn.w || !f->probes) {
    fprintf(stderr, "tern-bench livedocs: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < f->n; i++)
    f->dn.w[f->docs[i] >> 6] |= 1ull << (f->docs[i] & 63);
  for (uint64_t i = 0; i < nprobes; i++)
    f->probes[i] = (uint32_t)bench_rng_below(&rng, r->docs);
  static const uint8_t segid[16] = "bench-livedocs!";
  if (tern_livedocs_new(&f->empty, (uint32_t)r->docs) != TERN_OK ||
      tern_livedocs_apply(&f->ld, f->empty, f->docs, f->n) != TERN_OK ||
      tern_livedocs_write(f->ld, segid, &f->liv, &f->liv_len) != TERN_OK) {
    fprintf(stderr, "tern-bench livedocs: %s\n", tern_errmsg());
    return 1;
  }
  for (int live = 0; live < 2; live++)
    if (digest_tern(f->ld, live) != digest_dense(&f->dn, live)) {
      fprintf(stderr, "tern-bench livedocs: tern and dense iterate different %s docs\n",
              live ? "live" : "deleted");
      return 1;
    }
  return 0;
}

/* The measures of a round, each by tern (contender 0) and dense (1). */
enum { M_DEL, M_LIVE, M_PROBE, M_NEXT_DEL, M_NEXT_LIVE, M_COUNT };

/* Seconds of one measure by tern (who 0) or dense (1); the sink takes what
 * the walk saw, so that no side can skip it. */
static double time_side(void *ctx, size_t who, size_t m, size_t round) {
  const fixture *f = ctx;
  (void)round;
  int live = m == M_LIVE || m == M_NEXT_LIVE;
  uint64_t s;
  double t0 = bench_now();
  if (m == M_DEL || m == M_LIVE)
    s = who ? walk_dense_batch(&f->dn, live) : walk_tern_batch(f->ld, live);
  else if (m == M_PROBE)
    s = who ? probe_dense(&f->dn, f->probes, f->nprobes) : probe_tern(f->ld, f->probes, f->nprobes);
  else
    s = who ? walk_dense_next(&f->dn, live) : walk_tern_next(f->ld, live);
  double t = bench_now() - t0;
  g_sink += s;
  return t;
}

static int run_row(const row *r, uint64_t runs, uint64_t nprobes, uint64_t seed, result *res) {
  fixture f;
  bench_rounds rd = {.contenders = 2, .measures = M_COUNT, .rounds = (size_t)runs};
  int rc = fixture_make(&f, r, nprobes, seed);
  if (rc == 0) rc = bench_rounds_run(&rd, time_side, NULL, &f) ? 1 : 0;
  if (rc == 0) {
    memset(res, 0, sizeof *res);
    res->r = *r;
    res->deleted = tern_livedocs_deleted(f.ld);
    res->form = tern_livedocs_form(f.ld);
    res->mem = tern_livedocs_memory(f.ld);
    res->dense_mem = (size_t)f.dn.nw * 8;
    res->liv = f.liv_len;
    res->del_t = 1e3 * bench_rounds_median(&rd, 0, M_DEL);
    res->del_d = 1e3 * bench_rounds_median(&rd, 1, M_DEL);
    res->live_t = 1e3 * bench_rounds_median(&rd, 0, M_LIVE);
    res->live_d = 1e3 * bench_rounds_median(&rd, 1, M_LIVE);
    res->probe_t = 1e9 * bench_rounds_median(&rd, 0, M_PROBE) / (double)nprobes;
    res->probe_d = 1e9 * bench_rounds_median(&rd, 1, M_PROBE) / (double)nprobes;
    res->ndel_t = 1e3 * bench_rounds_median(&rd, 0, M_NEXT_DEL);
    res->ndel_d = 1e3 * bench_rounds_median(&rd, 1, M_NEXT_DEL);
    res->nlive_t = 1e3 * bench_rounds_median(&rd, 0, M_NEXT_LIVE);
    res->nlive_d = 1e3 * bench_rounds_median(&rd, 1, M_NEXT_LIVE);
    judge(res);
  }
  bench_rounds_free(&rd);
  fixture_free(&f);
  return rc;
}

/* --- output --- */

static const char *row_name(const row *r, char *buf, size_t cap) {
  if (r->pattern == P_SCATTERED)
    snprintf(buf, cap, "scattered 1/64");
  else
    snprintf(buf, cap, "%s %g%%", PATTERN[r->pattern], r->rate * 100);
  return buf;
}

static void ref_cell(char *buf, size_t cap, double ref, double mem, int scaled) {
  if (ref <= 0)
    snprintf(buf, cap, "—");
  else
    snprintf(buf, cap, "%.0f%s (%.2fx)", ref, scaled ? "*" : "", mem / ref);
}

static void print_tables(const result *res, size_t n) {
  char name[48], luc[48], roar[48];
  printf("### Memory\n\n");
  printf("| pattern | docs | deleted | tern form | tern bytes | dense bytes | tern/dense | .liv bytes "
         "| Lucene sparse (tern/Lucene) | CRoaring (tern/CRoaring) |\n");
  printf("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < n; i++) {
    const result *x = &res[i];
    ref_cell(luc, sizeof luc, x->r.lucene, (double)x->mem, 0);
    ref_cell(roar, sizeof roar, x->r.croaring, (double)x->mem, x->r.croaring_scaled);
    printf("| %s | %llu | %llu | %s | %zu | %zu | %.4f | %zu | %s | %s |\n",
           row_name(&x->r, name, sizeof name), (unsigned long long)x->r.docs,
           (unsigned long long)x->deleted, x->form, x->mem, x->dense_mem,
           (double)x->mem / (double)x->dense_mem, x->liv, luc, roar);
  }
  printf("\n### Time (medians)\n\n");
  printf("Iteration is in batches of %d docs on both sides (tern_ld_iter_next_batch; dense: its own "
         "word-at-a-time batch loop); the per-doc next() columns are the same walks one doc per call.\n\n",
         BATCH);
  printf("| pattern | docs | deleted iter ms: tern / dense (ratio) | live iter ms: tern / dense (ratio) "
         "| is_live ns: tern / dense (ratio) | per-doc next() deleted ms (ratio) | per-doc next() live ms "
         "(ratio) | targets missed |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---|\n");
  for (size_t i = 0; i < n; i++) {
    const result *x = &res[i];
    printf("| %s | %llu | %.3f / %.3f (%.3f) | %.2f / %.2f (%.3f) | %.2f / %.2f (%.2f) "
           "| %.3f / %.3f (%.2f) | %.2f / %.2f (%.2f) | %s |\n",
           row_name(&x->r, name, sizeof name), (unsigned long long)x->r.docs, x->del_t, x->del_d,
           x->del_t / x->del_d, x->live_t, x->live_d, x->live_t / x->live_d, x->probe_t, x->probe_d,
           x->probe_t / x->probe_d, x->ndel_t, x->ndel_d, x->ndel_t / x->ndel_d, x->nlive_t, x->nlive_d,
           x->nlive_t / x->nlive_d, x->misses[0] ? x->misses : "none");
  }
}

static int write_csv(const char *path, const result *res, size_t n) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    return 1;
  }
  fprintf(f, "pattern,rate,docs,deleted,form,tern_bytes,dense_bytes,liv_bytes,lucene_bytes,"
             "croaring_bytes,del_iter_ms_tern,del_iter_ms_dense,live_iter_ms_tern,live_iter_ms_dense,"
             "is_live_ns_tern,is_live_ns_dense,next_del_ms_tern,next_del_ms_dense,next_live_ms_tern,"
             "next_live_ms_dense,misses\n");
  for (size_t i = 0; i < n; i++) {
    const result *x = &res[i];
    fprintf(f, "%s,%g,%llu,%llu,%s,%zu,%zu,%zu,%.0f,%.0f,%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.4f,%.4f,%.4f,%.4f,"
               "\"%s\"\n",
            PATTERN[x->r.pattern], x->r.rate, (unsigned long long)x->r.docs,
            (unsigned long long)x->deleted, x->form, x->mem, x->dense_mem, x->liv, x->r.lucene,
            x->r.croaring, x->del_t, x->del_d, x->live_t, x->live_d, x->probe_t, x->probe_d, x->ndel_t,
            x->ndel_d, x->nlive_t, x->nlive_d, x->misses);
  }
  return fclose(f) ? 1 : 0;
}

typedef struct ld_opts {
  uint64_t runs, docs, probes, seed;
  const char *csv;
} ld_opts;

static const char *ld_check(void *opts) {
  const ld_opts *o = opts;
  return o->docs && o->docs < 64 ? "--docs must be 0 or 64..2^32-2" : NULL;
}

#define LD_OPT(field) offsetof(ld_opts, field)
static const bench_opt k_ld_opts[] = {
    BENCH_U64("runs", LD_OPT(runs), "N", "5", 1, 64, "repetitions; medians reported"),
    BENCH_U64("docs", LD_OPT(docs), "N", NULL, 0, UINT32_MAX - 1,
              "docs of the pattern rows, and the only scattered size\n"
              "(default 10000000; scattered at 100K..100M)"),
    BENCH_U64("probes", LD_OPT(probes), "N", "10000000", 1, 0, "random is_live probes per run"),
    BENCH_STR("csv", LD_OPT(csv), "FILE", NULL, "also write every row as CSV"),
    BENCH_U64("seed", LD_OPT(seed), "S", "0x6C69766564" /* "lived" */, 0, 0, "generator seed"),
};

static const bench_cmd k_ld_cmd =
    BENCH_CMD("livedocs", "[options]", "adaptive live docs vs a dense bitset (issue #4)", k_ld_opts,
              ld_opts, ld_check);

void tern_bench_livedocs_usage(FILE *out) { bench_opts_usage(&k_ld_cmd, out); }

int tern_bench_livedocs(int argc, char **argv) {
  ld_opts o;
  int prc = bench_opts_parse(&k_ld_cmd, &o, argc, argv);
  if (prc) return bench_opts_exit(prc);
  uint64_t runs = o.runs, docs = o.docs, probes = o.probes, seed = o.seed;
  const char *csv = o.csv;
  row rows[32];
  size_t nrows = 0;
  const double rates[] = {0.001, 0.01, 0.05};
  uint64_t base = docs ? docs : 10000000;
  for (int p = P_RANDOM; p <= P_UNIFORM; p++)
    for (int i = 0; i < 3; i++) rows[nrows++] = (row){.pattern = p, .rate = rates[i], .docs = base};
  const uint64_t scattered[] = {100000, 500000, 1000000, 5000000, 10000000, 50000000, 100000000};
  for (int i = 0; i < 7; i++)
    if (!docs || scattered[i] == docs) rows[nrows++] = (row){.pattern = P_SCATTERED, .docs = scattered[i]};
  if (docs && rows[nrows - 1].pattern != P_SCATTERED)
    rows[nrows++] = (row){.pattern = P_SCATTERED, .docs = docs};
  result res[32];
  char machine[256], cmd[512];
  bench_machine(machine, sizeof machine);
  bench_cmdline(cmd, sizeof cmd, argc - 1, argv + 1, "tern-bench livedocs");
  for (size_t i = 0; i < nrows; i++) {
    references(&rows[i]);
    char name[48];
    bench_log("livedocs: %s at %llu docs\n", row_name(&rows[i], name, sizeof name),
              (unsigned long long)rows[i].docs);
    if (run_row(&rows[i], runs, probes, seed, &res[i]) != 0) return 1;
  }
  printf("## tern-bench livedocs\n\n`%s` on %s; medians of %llu runs; %llu random is_live probes per run.\n\n",
         cmd, machine, (unsigned long long)runs, (unsigned long long)probes);
  print_tables(res, nrows);
  printf("\nReference columns: Lucene PR #15413's sparse bytes (10M docs; scattered: +5.5%% over dense), "
         "CRoaring bytes measured elsewhere at 10M (* scaled by docs/10M).  (sink %llu)\n",
         (unsigned long long)(g_sink & 0xff));
  return csv ? write_csv(csv, res, nrows) : 0;
}
