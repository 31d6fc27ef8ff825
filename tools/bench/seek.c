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
#include "tools/bench/keys_common.h"
#include "tools/bench/lmdb_common.h"
#include "tools/bench/seg_pk.h"

#include "codec/segment.h"
#include "tern.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* Declared in bench.h once the dispatcher lists the subcommand; repeated
 * here so this file compiles either way. */
int tern_bench_seek(int argc, char **argv);
void tern_bench_seek_usage(FILE *out);

#define SEEK_SEED 0x7365656bull /* "seek" */
#define SEEK_SEG "seg"
#define SEEK_ROUNDS_MAX 100u

typedef struct seek_opts {
  bench_key_spec spec;
  uint64_t keys, lookups, rounds, seed, restart, values;
  const char *parent;
  int keep, only; /* only: 0 both, 1 tern, 2 lmdb */
} seek_opts;

void tern_bench_seek_usage(FILE *out) {
  fprintf(out,
          "tern-bench seek [options]   warm primary-key lookups: codec vs LMDB mdb_get\n"
          "  --docs N        unique keys (10000000; a file's keys: at most N)\n"
          "  --keys SHAPE    random | uuid4 | sequential | timeprefixed | decimal | paths |\n"
          "                  packages | emails | varlen | file:PATH (random); a number:\n"
          "                  --docs\n"
          "  --values BYTES  value size (0: none; 4+: doc id then filler) (0)\n"
          "  --lookups N     lookups per phase and round (1000000)\n"
          "  --rounds R      rounds; medians reported (5)\n"
          "  --seed S        key seed (0x7365656b)\n"
          "  --restart R     terms block restart interval (the writer's default)\n"
          "  --dir PATH      parent of the scratch directory (/var/tmp)\n"
          "  --only SIDE     tern | lmdb: time one side only\n"
          "  --keep          keep the scratch directory\n");
}

static int parse_opts(int argc, char **argv, seek_opts *o) {
  static const struct option lo[] = {{"keys", 1, 0, 'n'},   {"lookups", 1, 0, 'l'},
                                     {"rounds", 1, 0, 'r'}, {"seed", 1, 0, 's'},
                                     {"dir", 1, 0, 'd'},    {"only", 1, 0, 'o'},
                                     {"keep", 0, 0, 'k'},   {"help", 0, 0, 'h'},
                                     {"restart", 1, 0, 'R'}, {"docs", 1, 0, 'N'},
                                     {"values", 1, 0, 'V'},
                                     {0, 0, 0, 0}};
  *o = (seek_opts){.spec = {BENCH_KEYS_RANDOM, NULL}, .keys = 10000000, .lookups = 1000000, .rounds = 5, .seed = SEEK_SEED,
                   .parent = "/var/tmp"};
  optind = 1;
  int ch;
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    int bad = 0;
    switch (ch) {
    case 'n':
      if (bench_key_spec_parse(optarg, &o->spec) != 0) bad = bench_parse_u64(optarg, &o->keys);
      break;
    case 'N': bad = bench_parse_u64(optarg, &o->keys); break;
    case 'V': bad = bench_parse_u64(optarg, &o->values) || (o->values && o->values < 4) ||
                    o->values > (1u << 20);
      break;
    case 'l': bad = bench_parse_u64(optarg, &o->lookups); break;
    case 'r': bad = bench_parse_u64(optarg, &o->rounds); break;
    case 's': bad = bench_parse_u64(optarg, &o->seed); break;
    case 'd': o->parent = optarg; break;
    case 'R': bad = bench_parse_u64(optarg, &o->restart) || o->restart < 1 || o->restart > 255; break;
    case 'k': o->keep = 1; break;
    case 'o':
      if (!strcmp(optarg, "tern")) o->only = 1;
      else if (!strcmp(optarg, "lmdb")) o->only = 2;
      else bad = 1;
      break;
    case 'h': tern_bench_seek_usage(stdout); return 1;
    default: bad = 1;
    }
    if (bad) {
      tern_bench_seek_usage(stderr);
      return -1;
    }
  }
  if (o->keys < 2 || o->keys >= UINT32_MAX || o->lookups < 1 || o->rounds < 1 ||
      o->rounds > SEEK_ROUNDS_MAX) {
    fprintf(stderr, "seek: need 2 <= keys < 2^32, lookups >= 1, 1 <= rounds <= %u\n",
            SEEK_ROUNDS_MAX);
    return -1;
  }
  return 0;
}

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
  int prc = parse_opts(argc, argv, &o);
  if (prc) return prc < 0 ? 2 : 0;
  char machine[256], cmd[1024];
  bench_machine(machine, sizeof machine);
  bench_cmdline(cmd, sizeof cmd, argc, argv, "tern-bench");
  printf("# %s\n# %s\n# %llu keys, %llu lookups per phase, %llu rounds, seed %llu\n", cmd, machine,
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
