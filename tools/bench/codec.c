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
#include "tools/bench/codec.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/opts.h"
#include "tools/bench/keys_common.h"
#include "tools/bench/lmdb_common.h"
#include "tools/bench/seg_pk.h"

#include "codec/io.h"
#include "codec/postings.h"
#include "codec/segment.h"
#include "tern.h"

#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --zipf-docs defaults to --docs. */
static const char *codec_check(void *opts) {
  codec_opts *o = opts;
  o->zipf_docs = o->zipf_docs_given.set ? o->zipf_docs_given.v : o->docs;
  return NULL;
}

#define CODEC_OPT(field) offsetof(codec_opts, field)
static const bench_opt k_codec_opts[] = {
    BENCH_U64("docs", CODEC_OPT(docs), "N", "10000000", 1, UINT32_MAX - 1,
              "unique random base36 keys"),
    BENCH_U64("runs", CODEC_OPT(runs), "R", "3", 1, 1000, "repetitions; medians reported"),
    BENCH_U64("warm", CODEC_OPT(warm), "N", "1000000", 0, UINT32_MAX - 1,
              "warm lookups per run, present and absent each"),
    BENCH_U64("cold", CODEC_OPT(cold), "N", "1000", 1, UINT32_MAX - 1,
              "cold lookups per run after eviction"),
    BENCH_CHOICE("io", CODEC_OPT(io_modes), "MODE", "mmap|pread|both", "both",
                 "mmap | pread | both"),
    BENCH_FLAG("read-checks-ab", CODEC_OPT(checks_ab), 1, 0,
               "warm present lookups also without the read-path page\n"
               "checksums (io \"mmap-nocheck\"), alternating in each run"),
    BENCH_U64_SET("zipf-docs", CODEC_OPT(zipf_docs_given), "N", 0, UINT32_MAX - 1,
                  "docs of the Zipf field (= --docs; 0 skips part 2)"),
    BENCH_U64("zipf-terms", CODEC_OPT(zipf_terms), "T", "1000000", 1, UINT32_MAX - 1,
              "ranks of the Zipf distribution"),
    BENCH_DBLS("zipf-s", CODEC_OPT(zipf_s), CODEC_OPT(nzipf_s), "LIST", "1.0,1.2", 1e-300, 10,
               "Zipf exponents, each in (0, 10]"),
    BENCH_U64S("thresholds", CODEC_OPT(thresholds), CODEC_OPT(nthresholds), "LIST", "0,1,2,4,8,16",
               0, TERN_PULSE_MAX, "pulsing thresholds of the Zipf field"),
    BENCH_U64("zipf-lookups", CODEC_OPT(zipf_lookups), "N", "1000", 1, 0,
              "cold term lookups per run"),
    BENCH_SCRATCH_DIR(CODEC_OPT(parent)),
    BENCH_STR("out", CODEC_OPT(out), "OUTDIR", "bench-out",
              "codec-pk.csv, codec-zipf.csv, codec.md"),
    BENCH_U64("seed", CODEC_OPT(seed), "S", "0x636F646563" /* "codec" */, 0, 0, "generator seed"),
    BENCH_FLAG("keep", CODEC_OPT(keep), 1, 0, "keep the scratch directory"),
};

static const bench_cmd k_codec_cmd =
    BENCH_CMD("codec", "[options]", "one segment through the codec (issue #3)", k_codec_opts,
              codec_opts, codec_check);

void tern_bench_codec_usage(FILE *out) { bench_opts_usage(&k_codec_cmd, out); }

static const char *io_name(tern_io_mode m) { return m == TERN_IO_MMAP ? "mmap" : "pread"; }
static const char *io_name_nocheck(tern_io_mode m) {
  return m == TERN_IO_MMAP ? "mmap-nocheck" : "pread-nocheck";
}

void log_tern(const char *what, int rc) {
  bench_log("tern-bench codec: %s: %s (%s)", what, tern_strerror(rc), tern_errmsg());
}

static uint64_t seg_file_bytes(const char *dir, const char *ext) {
  char name[64], path[4096];
  snprintf(name, sizeof name, "%s.%s", SEG_NAME, ext);
  return bench_file_bytes(bench_path(path, sizeof path, dir, name));
}

seg_sizes sizes_of(const char *dir) {
  seg_sizes z = {seg_file_bytes(dir, "tim"), seg_file_bytes(dir, "tix"), seg_file_bytes(dir, "doc"),
                 seg_file_bytes(dir, "flt"), seg_file_bytes(dir, "val"), bench_dir_bytes(dir)};
  return z;
}

/* Drops the open segment's pages and confirms that none stayed resident;
 * falls back to evicting the directory when some did (and says so once). */
int evict_segment(tern_seg *s, const char *dir) {
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

uint64_t seg_reads(const tern_seg *s) {
  tern_seg_io io;
  tern_seg_io_stats(s, &io);
  return io.terms.reads + io.postings.reads + io.values.reads;
}

/* ================================================================ part 1 */

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

/* The outputs of both parts into --out; 0 or -1. */
static int write_outputs(const codec_opts *o, pk_build *b, double lmdb_s, uint64_t lmdb_bytes,
                         const results *res, zipf_result *zr, size_t nzr, const char *cmdline,
                         const char *work) {
  char path[4096];
  if (bench_mkdirs(o->out) != 0 ||
      codec_pk_csv(bench_path(path, sizeof path, o->out, "codec-pk.csv"), res) != 0 ||
      (nzr &&
       codec_zipf_csv(bench_path(path, sizeof path, o->out, "codec-zipf.csv"), o, zr, nzr) != 0)) {
    bench_log("tern-bench codec: cannot write to %s", o->out);
    return -1;
  }
  FILE *f = fopen(bench_path(path, sizeof path, o->out, "codec.md"), "w");
  if (!f) return -1;
  codec_md_header(f, o, cmdline, work);
  codec_md_pk(f, o, b, 2, lmdb_s, lmdb_bytes, res);
  if (nzr) codec_zipf_md(f, o, zr, nzr);
  return fclose(f) == 0 ? 0 : -1;
}

/* Both parts in the scratch directory `work`; 0 when every lookup was right. */
static int run_parts(const codec_opts *o, const char *work, const char *cmdline) {
  results res = {0};
  pk_build b[2];
  memset(b, 0, sizeof b);
  b[0].store = "tern-pulse1";
  b[0].threshold = 1;
  b[1].store = "tern-pulse0";
  b[1].threshold = 0;
  bench_path(b[0].dir, sizeof b[0].dir, work, "pk-pulse1");
  bench_path(b[1].dir, sizeof b[1].dir, work, "pk-pulse0");
  double lmdb_s = 0, t0 = bench_now();
  uint64_t lmdb_bytes = 0, errors = 0;
  zipf_result *zr = NULL;
  size_t nzr = 0;
  int rc = run_pk_part(o, work, b, &lmdb_s, &lmdb_bytes, &res);
  if (rc == 0 && o->zipf_docs && !(zr = codec_zipf_run(o, work, &nzr))) rc = -1;
  if (rc == 0) rc = write_outputs(o, b, lmdb_s, lmdb_bytes, &res, zr, nzr, cmdline, work);
  if (rc == 0) {
    for (size_t i = 0; i < res.n; i++)
      errors += res.v[i].errors;
    for (size_t i = 0; i < nzr; i++)
      errors += zr[i].errors;
    bench_log("wrote %s/codec.md, %s/codec-pk.csv%s in %.1f s", o->out, o->out,
              nzr ? ", codec-zipf.csv" : "", bench_now() - t0);
    if (errors) bench_log("FAILED: %llu lookups answered wrongly", (unsigned long long)errors);
  }
  free(res.v);
  codec_zipf_free(zr);
  return rc || errors ? -1 : 0;
}

int tern_bench_codec(int argc, char **argv) {
  codec_opts o;
  int prc = bench_opts_parse(&k_codec_cmd, &o, argc, argv);
  char *work = NULL;
  int rc = prc ? bench_opts_exit(prc) : 1;
  if (prc == 0) {
    char cmdline[2048];
    bench_cmdline(cmdline, sizeof cmdline, argc - 1, argv + 1, "tern-bench codec");
    if (bench_is_memory_fs(o.parent))
      bench_log("WARNING: %s is a memory file system: cold reads will not reach a disk", o.parent);
    work = bench_mkdtemp(o.parent, "tern-bench-codec");
    if (!work)
      bench_log("tern-bench codec: cannot create a scratch directory in %s: %s", o.parent,
                strerror(errno));
    else
      rc = run_parts(&o, work, cmdline) ? 1 : 0;
  }
  if (work && o.keep)
    bench_log("kept %s", work);
  else if (work)
    bench_rmtree(work);
  free(work);
  bench_opts_free(&k_codec_cmd, &o);
  return rc;
}
