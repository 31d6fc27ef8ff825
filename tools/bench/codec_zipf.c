/* SPDX-License-Identifier: MIT */
/*
 * codec_zipf.c — part 2 of `tern-bench codec`: one field whose terms are
 * drawn from Zipf(s), written as one segment per pulsing threshold; cold
 * term lookups after eviction, the codec's reads and the pages fetched per
 * lookup by document-frequency bucket, and the sizes of the files.
 */
#include "tools/bench/bench_common.h"
#include "tools/bench/codec.h"
#include "tools/bench/keys_common.h"

#include "codec/io.h"
#include "tern.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static const char *const k_bucket_names[NBUCKETS] = {"1",    "2",     "3–4", "5–8",
                                                     "9–16", "17–64", ">64"};
static int bucket_of(uint32_t df) {
  return df <= 1 ? 0 : df <= 2 ? 1 : df <= 4 ? 2 : df <= 8 ? 3 : df <= 16 ? 4 : df <= 64 ? 5 : 6;
}

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

void codec_zipf_md(FILE *f, const codec_opts *o, zipf_result *zr, size_t nzr) {
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

int codec_zipf_csv(const char *path, const codec_opts *o, zipf_result *zr, size_t nzr) {
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

static int run_zipf_parts(const codec_opts *o, const char *work, zipf_result *zr) {
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

zipf_result *codec_zipf_run(const codec_opts *o, const char *work, size_t *n) {
  size_t nzr = o->nzipf_s * o->nthresholds;
  zipf_result *zr = calloc(nzr + 1, sizeof *zr);
  double *per_run = calloc((nzr + 1) * 3 * o->runs, sizeof(double));
  if (!zr || !per_run) {
    free(zr);
    free(per_run);
    return NULL;
  }
  for (size_t i = 0; i < nzr; i++) {
    zr[i].us = per_run + (i * 3 + 0) * o->runs;
    zr[i].reads = per_run + (i * 3 + 1) * o->runs;
    zr[i].pages = per_run + (i * 3 + 2) * o->runs;
  }
  if (run_zipf_parts(o, work, zr) != 0) {
    codec_zipf_free(zr);
    return NULL;
  }
  *n = nzr;
  return zr;
}

void codec_zipf_free(zipf_result *zr) {
  if (zr) free(zr[0].us);
  free(zr);
}
