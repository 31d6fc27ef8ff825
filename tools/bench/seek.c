/* SPDX-License-Identifier: MIT */
/*
 * seek.c — `tern-bench seek`: warm primary-key lookups in one segment,
 * through the codec alone, against LMDB's mdb_get on the same keys in the
 * same run (issue #3: tern at least 3x faster for present keys, 5x for
 * absent ones).
 *
 * N unique random base36 keys (16 chars), doc id = input position (random
 * in key order), written as one segment (unique field, pulsing threshold 1,
 * default options) and loaded into LMDB (sorted, MDB_APPEND).  Both live in
 * a scratch directory, read once so that every page is cached; the segment
 * is opened in mmap mode.  Each round times, one after the other,
 *   tern_seg_seek_exact (present), pk_get (present: the gate, then
 *   tern_seg_pk_find and the value, tools/bench/seg_pk.h),
 *   mdb_get (present), pk_get (absent), mdb_get (absent)
 * over the same random sample of keys, copied in lookup order into one
 * buffer that the loop reads as a stream (as `tern get DIR -` reads its
 * input: two scattered loads a key in the harness would be charged to
 * both sides alike), so the machine's load hits both sides alike; the report gives per-round ns per lookup and the medians of
 * the per-round ratios.  Absent keys are drawn inside the key range, so the
 * filter (not the range check) rejects them.
 *
 * --only tern|lmdb runs one side (for instruction counts under callgrind).
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/harness.h"
#include "tools/bench/opts.h"
#include "tools/bench/keys_common.h"
#include "tools/bench/lmdb_common.h"
#include "tools/bench/seg_pk.h"

#include "codec/segment.h"
#include "tern.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Declared in bench.h once the dispatcher lists the subcommand; repeated
 * here so this file compiles either way. */
int tern_bench_seek(int argc, char **argv);
void tern_bench_seek_usage(FILE *out);

#define SEEK_SEG "seg"
#define SEEK_ROUNDS_MAX 100u

typedef struct seek_opts {
  bench_key_spec spec;
  uint64_t keys, lookups, rounds, seed, restart, values;
  const char *parent;
  int keep, only; /* only: 0 both, 1 tern, 2 lmdb */
} seek_opts;

/* --keys: a shape, or (as before --docs existed) a number of keys. */
static int parse_keys(const char *text, void *field) {
  seek_opts *o = (seek_opts *)((char *)field - offsetof(seek_opts, spec));
  return bench_key_spec_parse(text, &o->spec) == 0 ? 0 : bench_parse_u64(text, &o->keys);
}

static const char *seek_check(void *opts) {
  const seek_opts *o = opts;
  return o->keys < 2 || o->keys >= UINT32_MAX || (o->values && o->values < 4)
             ? "need 2 <= keys < 2^32 and --values 0 or >= 4"
             : NULL;
}

#define SEEK_OPT(field) offsetof(seek_opts, field)
static const bench_opt k_seek_opts[] = {
    BENCH_U64("docs", SEEK_OPT(keys), "N", "10000000", 0, 0,
              "unique keys (a file's keys: at most N)"),
    BENCH_CUSTOM("keys", SEEK_OPT(spec), parse_keys, "SHAPE", "random",
                 "random | uuid4 | sequential | timeprefixed | decimal | paths |\n"
                 "packages | emails | varlen | file:PATH; a number: --docs"),
    BENCH_U64("values", SEEK_OPT(values), "BYTES", "0", 0, 1u << 20,
              "value size (0: none; 4+: doc id then filler)"),
    BENCH_U64("lookups", SEEK_OPT(lookups), "N", "1000000", 1, 0, "lookups per phase and round"),
    BENCH_U64("rounds", SEEK_OPT(rounds), "R", "5", 1, SEEK_ROUNDS_MAX, "rounds; medians reported"),
    BENCH_U64("seed", SEEK_OPT(seed), "S", "0x7365656b" /* "seek" */, 0, 0, "key seed"),
    BENCH_U64("restart", SEEK_OPT(restart), "R", NULL, 1, 255,
              "terms block restart interval (the writer's default)"),
    BENCH_SCRATCH_DIR(SEEK_OPT(parent)),
    BENCH_CHOICE("only", SEEK_OPT(only), "SIDE", "tern|lmdb", NULL,
                 "tern | lmdb: time one side only"),
    BENCH_FLAG("keep", SEEK_OPT(keep), 1, 0, "keep the scratch directory"),
};

static const bench_cmd k_seek_cmd =
    BENCH_CMD("seek", "[options]", "warm primary-key lookups: codec vs LMDB mdb_get", k_seek_opts,
              seek_opts, seek_check);

void tern_bench_seek_usage(FILE *out) { bench_opts_usage(&k_seek_cmd, out); }

static int build_segment(const char *dir, const bench_keys *k, uint64_t restart, size_t vbytes) {
  uint8_t *v = malloc(vbytes + 1);
  if (!v) return TERN_ENOMEM;
  tern_segw_options so;
  tern_segw_options_init(&so);
  if (restart) so.restart_interval = (uint32_t)restart;
  tern_segw *w;
  int rc = tern_segw_open(&w, dir, SEEK_SEG, &so);
  if (rc == TERN_OK) rc = tern_segw_field(w, "id", 2, TERN_FIELD_UNIQUE, 1);
  for (size_t i = 0; rc == TERN_OK && i < k->n; i++) {
    uint32_t doc = k->order[i];
    bench_value_fill(v, doc, vbytes);
    rc = tern_segw_term(w, bench_key_at(k, doc), bench_key_len(k, doc), &doc, 1, v, vbytes);
  }
  free(v);
  if (rc == TERN_OK) return tern_segw_finish(w, (uint32_t)k->n);
  tern_segw_abort(w);
  return rc;
}

/* The phases of a round, in the order they run. */
enum { P_SEEK, P_PK, P_LMDB, P_PK_ABSENT, P_LMDB_ABSENT, NPHASES };
static const char *const k_phase[NPHASES] = {"tern seek_exact present", "tern pk_get present",
                                             "lmdb mdb_get present", "tern pk_get absent",
                                             "lmdb mdb_get absent"};

typedef struct seek_ctx {
  bench_key_stream ps, as; /* the sampled keys, in lookup order */
  size_t m;
  tern_seg *seg;
  const tern_seg_field *field;
  tern_seg_cursor *cur;
  bench_lmdb *lmdb;
  size_t values;
  uint64_t sink, errors;
} seek_ctx;

/* ns per lookup of one phase. */
static double run_phase(seek_ctx *x, int phase) {
  const bench_key_stream *k = phase >= P_PK_ABSENT ? &x->as : &x->ps;
  const uint32_t *idx = k->idx;
  int want = phase >= P_PK_ABSENT ? 1 : 0; /* 1: expect not found */
  uint64_t sink = 0, errors = 0;
  double t0 = bench_now();
  for (size_t i = 0; i < x->m; i++) {
    const uint8_t *key = bench_stream_key(k, i);
    size_t len = bench_stream_len(k, i);
    uint32_t doc = 0;
    int found;
    if (phase == P_SEEK) {
      tern_term_entry e;
      found = tern_seg_seek_exact(x->seg, x->field, key, len, x->cur, &e) == TERN_OK;
      doc = found ? e.docs[0] : 0;
    } else if (phase == P_PK || phase == P_PK_ABSENT) {
      tern_slice v = {0};
      found = bench_seg_pk_get(x->seg, key, len, x->cur, &doc, x->values ? &v : NULL) == TERN_OK;
      /* Touch the value's ends, as a reader using it would. */
      const uint8_t *vb = v.data;
      if (found && x->values) sink += v.len != x->values ? 1u << 30 : vb[0] + vb[v.len - 1];
    } else {
      const uint8_t *v = NULL;
      size_t vlen = 0;
      found = bench_lmdb_get_value(x->lmdb, key, len, &doc, &v, &vlen) == 0;
      if (found && x->values) sink += vlen != x->values ? 1u << 30 : v[0] + v[vlen - 1];
    }
    errors += found == want || (found && doc != idx[i]);
    sink += doc;
  }
  double t = bench_now() - t0;
  x->sink += sink;
  x->errors += errors;
  return t * 1e9 / (double)x->m;
}

static int phase_runs(int only, int phase) {
  int lmdb = phase == P_LMDB || phase == P_LMDB_ABSENT;
  return only == 0 || (only == 1 && !lmdb) || (only == 2 && lmdb);
}

static void report(const seek_opts *o, double ns[NPHASES][SEEK_ROUNDS_MAX]) {
  size_t r = o->rounds;
  printf("\nns per lookup, median of %zu rounds (min .. max):\n", r);
  for (int p = 0; p < NPHASES; p++) {
    if (!phase_runs(o->only, p)) continue;
    double v[SEEK_ROUNDS_MAX];
    memcpy(v, ns[p], r * sizeof *v);
    bench_summary s = bench_summarize(v, r);
    printf("  %-26s %8.1f  (%.1f .. %.1f)\n", k_phase[p], s.median, s.min, s.max);
  }
  if (o->only) return;
  static const int pairs[3][2] = {{P_SEEK, P_LMDB}, {P_PK, P_LMDB}, {P_PK_ABSENT, P_LMDB_ABSENT}};
  static const char *const names[3] = {"seek_exact present", "pk_get present", "pk_get absent"};
  printf("LMDB ns / tern ns, per round, median (min .. max):\n");
  for (int q = 0; q < 3; q++) {
    double v[SEEK_ROUNDS_MAX];
    for (size_t i = 0; i < r; i++) v[i] = ns[pairs[q][1]][i] / ns[pairs[q][0]][i];
    bench_summary s = bench_summarize(v, r);
    printf("  %-26s %6.2fx  (%.2f .. %.2f)\n", names[q], s.median, s.min, s.max);
  }
}

static int measure(const seek_opts *o, const char *dir, const bench_keys *present,
                   const bench_keys *absent) {
  char tdir[4096], ldir[4096], msg[256];
  bench_path(tdir, sizeof tdir, dir, "tern");
  bench_path(ldir, sizeof ldir, dir, "lmdb");
  tern_seg *seg = NULL;
  bench_lmdb lmdb = {0};
  int rc = tern_seg_open(&seg, tdir, SEEK_SEG, TERN_IO_MMAP);
  if (rc != TERN_OK) {
    fprintf(stderr, "seek: open segment: %d\n", rc);
    return 1;
  }
  if (bench_lmdb_open(&lmdb, ldir, 0, msg, sizeof msg) != 0) {
    fprintf(stderr, "seek: open lmdb: %s\n", msg);
    tern_seg_close(seg);
    return 1;
  }
  bench_warm_dir(dir);
  uint32_t *pi = malloc(o->lookups * sizeof *pi), *ai = malloc(o->lookups * sizeof *ai);
  tern_seg_cursor *cur = malloc(sizeof *cur);
  seek_ctx x = {{0}, {0}, o->lookups, seg, tern_seg_unique_field(seg), cur, &lmdb,
                (size_t)o->values, 0, 0};
  int ret = 1;
  if (!pi || !ai || !cur) goto out;
  tern_seg_cursor_init(cur);
  bench_rng rng;
  bench_rng_init(&rng, o->seed ^ 0x5a5a);
  static double ns[NPHASES][SEEK_ROUNDS_MAX];
  for (size_t r = 0; r < o->rounds; r++) {
    bench_sample(&rng, present->n, o->lookups, pi);
    bench_sample(&rng, absent->n, o->lookups, ai);
    if (bench_key_stream_fill(&x.ps, present, pi, o->lookups) != 0 ||
        bench_key_stream_fill(&x.as, absent, ai, o->lookups) != 0) {
      fprintf(stderr, "seek: out of memory\n");
      goto out;
    }
    for (int p = 0; p < NPHASES; p++) {
      if (!phase_runs(o->only, p)) continue;
      ns[p][r] = run_phase(&x, p);
    }
    bench_log("round %zu: seek %.0f pk %.0f lmdb %.0f | absent pk %.0f lmdb %.0f ns", r + 1,
              ns[P_SEEK][r], ns[P_PK][r], ns[P_LMDB][r], ns[P_PK_ABSENT][r],
              ns[P_LMDB_ABSENT][r]);
  }
  if (x.errors) {
    fprintf(stderr, "seek: %llu wrong lookup results\n", (unsigned long long)x.errors);
    goto out;
  }
  tern_seg_summary sum;
  tern_seg_summarize(seg, &sum);
  printf("segment: %.3f bytes/key terms (.tim %.3f, .tix %.3f); filter %.2f bytes/key\n",
         (double)(sum.bytes_terms + sum.bytes_index) / (double)present->n,
         (double)sum.bytes_terms / (double)present->n, (double)sum.bytes_index / (double)present->n,
         (double)sum.bytes_filter / (double)present->n);
  double lbytes = (double)bench_dir_bytes(ldir);
  printf("bytes: tern %.2f B/key (whole segment; terms+postings %.2f), lmdb %.2f B/key: %.3fx\n",
         (double)sum.bytes / (double)present->n,
         (double)(sum.bytes_terms + sum.bytes_index + sum.bytes_postings) / (double)present->n,
         lbytes / (double)present->n, (double)sum.bytes / lbytes);
  report(o, ns);
  ret = 0;
out:
  bench_key_stream_free(&x.ps);
  bench_key_stream_free(&x.as);
  if (cur) tern_seg_cursor_release(cur);
  free(cur);
  free(pi);
  free(ai);
  bench_lmdb_close(&lmdb);
  tern_seg_close(seg);
  return ret;
}

int tern_bench_seek(int argc, char **argv) {
  seek_opts o;
  int prc = bench_opts_parse(&k_seek_cmd, &o, argc, argv);
  if (prc) return bench_opts_exit(prc);
  bench_print_header(argc, argv);
  printf("# %llu keys, %llu lookups per phase, %llu rounds, seed %llu\n",
         (unsigned long long)o.keys, (unsigned long long)o.lookups, (unsigned long long)o.rounds,
         (unsigned long long)o.seed);
  bench_keys present = {0}, absent = {0};
  char *dir = bench_mkdtemp(o.parent, "tern-seek");
  int ret = 1;
  if (!dir) {
    fprintf(stderr, "seek: cannot create a directory under %s\n", o.parent);
    return 1;
  }
  double t0 = bench_now();
  int krc = bench_keys_load(&present, &o.spec, o.keys, o.seed);
  if (krc == 0) {
    o.keys = present.n;
    krc = bench_keys_absent(&absent, &present, o.lookups < o.keys ? o.lookups : o.keys, o.seed);
  }
  if (krc) {
    fprintf(stderr, "seek: keys: %s\n", strerror(-krc));
    goto out;
  }
  printf("# keys: %s%s%s, %zu, mean %.1f bytes, longest %zu; values %llu bytes\n",
         bench_key_shape_name(o.spec.shape), o.spec.path ? ":" : "", o.spec.path ? o.spec.path : "",
         present.n, bench_keys_mean_len(&present), present.width, (unsigned long long)o.values);
  char tdir[4096], ldir[4096], msg[256];
  bench_path(tdir, sizeof tdir, dir, "tern");
  bench_path(ldir, sizeof ldir, dir, "lmdb");
  int rc = bench_mkdirs(tdir);
  if (rc == 0) rc = build_segment(tdir, &present, o.restart, (size_t)o.values);
  if (rc != 0) {
    fprintf(stderr, "seek: building the segment: %d\n", rc);
    goto out;
  }
  if (bench_lmdb_build_values(ldir, &present, o.values ? (size_t)o.values : 4, msg, sizeof msg) !=
      0) {
    fprintf(stderr, "seek: building LMDB: %s\n", msg);
    goto out;
  }
  bench_log("built in %.1f s (%s)", bench_now() - t0, dir);
  ret = measure(&o, dir, &present, &absent);
out:
  bench_keys_free(&present);
  bench_keys_free(&absent);
  if (!o.keep) bench_rmtree(dir);
  else printf("# kept %s\n", dir);
  free(dir);
  return ret;
}
