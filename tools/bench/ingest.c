/* SPDX-License-Identifier: MIT */
/*
 * ingest.c — `tern-bench ingest`: a warm get after ingesting many
 * range-disjoint segments against the same keys after `tern_compact`
 * (issue 22's target: ≤ 1.15x).  Only tern.h.
 *
 * N random keys of 16 hex characters (or, --keys time, time-ordered
 * keys that all share their first 8 bytes, as a tenant's or a day's do)
 * are sorted once and cut into S
 * contiguous ranges, each built with tern_builder_* into its own segment
 * directory.  Three indexes ingest the S segments (hard links) in one
 * tern_ingest each: "held", whose ingesting process exits at once (the
 * ingest is durable; no merge has run: all S segments stay), "policy",
 * whose handle is closed normally (closing waits for the merge the
 * background worker started: S segments of one size make tiers of 10 that
 * merge), and "compacted" (tern_compact: one segment).  All three are
 * reopened read-only (no merges) and read once whole (warm); the segment
 * count the gets saw is printed.  Each round times tern_get of the same
 * random present keys and of random absent keys (random 16-hex keys,
 * checked absent; time keys: a present key with its last digit replaced
 * by ':', which sorts between it and the next) on one snapshot of each
 * index, rotating which goes
 * first; figures are medians over the rounds, each ratio (over compacted,
 * > 1: slower) the median of the per-round ratios.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/harness.h"
#include "tools/bench/hexgets.h"
#include "tools/bench/opts.h"
#include "tern.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>


typedef struct ing_opts {
  uint64_t docs, segments, lookups, rounds, seed;
  int keys; /* 1 hex, 2 time */
  const char *parent;
} ing_opts;

static const char *ing_check(void *opts) {
  const ing_opts *o = opts;
  return o->segments > o->docs ? "--segments must be <= --docs" : NULL;
}

#define ING_OPT(field) offsetof(ing_opts, field)
static const bench_opt k_ing_opts[] = {
    BENCH_U64("docs", ING_OPT(docs), "N", "4000000", 2, 0, "keys, 16 bytes each"),
    BENCH_CHOICE("keys", ING_OPT(keys), "SHAPE", "hex|time", "hex",
                 "random hex characters, or time-ordered: \"t\" and 15 digits, the first 8 "
                 "bytes shared"),
    BENCH_U64("segments", ING_OPT(segments), "S", "64", 1, 4096,
              "range-disjoint segments built and ingested"),
    BENCH_U64("lookups", ING_OPT(lookups), "N", "500000", 1, 0,
              "present and absent keys looked up per round, each"),
    BENCH_U64("rounds", ING_OPT(rounds), "R", "7", 1, 0, "rounds, rotating which index runs first"),
    BENCH_U64("seed", ING_OPT(seed), "S", "1", 0, 0, "key seed"),
    BENCH_SCRATCH_DIR(ING_OPT(parent)),
};

static const bench_cmd k_ing_cmd =
    BENCH_CMD("ingest", "[options]", "warm get after ingesting S disjoint segments vs compacted",
              k_ing_opts, ing_opts, ing_check);

void tern_bench_ingest_usage(FILE *out) { bench_opts_usage(&k_ing_cmd, out); }

static int build_segments(const char *dir, const uint8_t *k, size_t n, size_t segs, char **paths) {
  for (size_t s = 0; s < segs; s++) {
    char name[32];
    snprintf(name, sizeof name, "seg%04zu", s);
    paths[s] = strdup(bench_path((char[4096]){0}, 4096, dir, name));
    if (!paths[s]) return TERN_ENOMEM;
    tern_builder *b;
    int rc = tern_builder_open(&b, paths[s], NULL);
    if (rc) return rc;
    for (size_t i = s * n / segs; rc == 0 && i < (s + 1) * n / segs; i++)
      rc = tern_builder_add(b, k + i * BENCH_HEX_KEY, BENCH_HEX_KEY, &i, sizeof i, NULL, 0);
    if (rc) {
      tern_builder_abort(b);
      return rc;
    }
    if ((rc = tern_builder_finish(b, NULL))) return rc;
  }
  return 0;
}

/* How index is left after the ingest. */
typedef enum ing_mode {
  ING_HELD,     /* the ingesting handle never merges (merge_factor 0) and its process exits
                   at once: every segment stays */
  ING_POLICY,   /* the handle is closed: whatever the background merge policy did first */
  ING_COMPACTED /* tern_compact: one segment */
} ing_mode;

static int ingest_into(const char *dir, char **paths, size_t segs, ing_mode mode) {
  tern_index *w;
  tern_options o;
  tern_options_init(&o);
  o.merge_factor = 0; /* held: the worker merges nothing, however long the exit takes */
  int rc = tern_open(&w, dir, TERN_CREATE, mode == ING_HELD ? &o : NULL);
  if (rc) return rc;
  rc = tern_ingest(w, (const char *const *)paths, segs, 0);
  if (rc == 0 && mode == ING_HELD) _exit(0); /* durable: a crash now leaves it ingested */
  if (rc == 0 && mode == ING_COMPACTED) rc = tern_compact(w);
  int rc2 = tern_close(w);
  return rc ? rc : rc2;
}

/* An index of the segments left as `mode` says, opened read-only (no
 * merges) into *idx.  ING_HELD ingests in a child process. */
static int make_index(const char *dir, char **paths, size_t segs, ing_mode mode, tern_index **idx) {
  int rc;
  if (mode == ING_HELD) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -errno;
    if (pid == 0) _exit(ingest_into(dir, paths, segs, mode) ? 1 : 0);
    int status;
    if (waitpid(pid, &status, 0) < 0) return -errno;
    rc = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : TERN_EINVAL;
    if (rc) bench_log("the ingesting child failed");
  } else {
    rc = ingest_into(dir, paths, segs, mode);
  }
  return rc ? rc : tern_open(idx, dir, TERN_RDONLY, NULL);
}

static const char *const mode_names[3] = {"held", "policy", "compacted"};

/* What the rounds read: the three indexes and the keys they look up. */
typedef struct ing_run {
  tern_index *idx[3];
  size_t nseg[3];
  const uint8_t *present, *absent;
  size_t nl;
} ing_run;

/* ns per get of index `m`: measure 0 present keys, 1 absent ones. */
static double time_mode(void *ctx, size_t m, size_t measure, size_t round) {
  ing_run *x = ctx;
  (void)round;
  size_t found;
  int err = 0;
  double t = bench_hex_time_gets(x->idx[m], measure ? x->absent : x->present, x->nl, &found,
                                 &err);
  if (!err && found != (measure ? 0 : x->nl)) {
    bench_log("%s: %zu of %zu %s keys found", mode_names[m], found, x->nl,
              measure ? "absent" : "present");
    err = -1;
  }
  if (err)
    fprintf(stderr, "tern-bench ingest: %d (%s): %s\n", err, tern_strerror(err), tern_errmsg());
  return err ? -1 : t / (double)x->nl * 1e9;
}

static void log_round(void *ctx, const bench_rounds *r, size_t round) {
  (void)ctx;
  double v[2][3];
  for (size_t m = 0; m < 3; m++)
    for (size_t k = 0; k < 2; k++)
      v[k][m] = bench_rounds_of(r, m, k)[round];
  bench_log("round %zu: present %.0f / %.0f / %.0f ns, absent %.0f / %.0f / %.0f ns "
            "(held / policy / compacted)",
            round, v[0][0], v[0][1], v[0][2], v[1][0], v[1][1], v[1][2]);
}

static void report(const bench_rounds *r, const char *shape, size_t n, size_t segs,
                   const size_t nseg[3]) {
  printf("keys %zu (%s) in %zu range-disjoint segments, built and ingested in one call; medians "
         "of %zu rounds, ns per warm tern_get\n",
         n, shape, segs, r->rounds);
  printf("%-44s %9s %8s %9s %8s\n", "index (segments the gets saw)", "present", "ratio", "absent",
         "ratio");
  for (size_t m = 0; m < 3; m++) {
    char label[64];
    snprintf(label, sizeof label, "%s (%zu)",
             m == 0   ? "ingested, no merge yet"
             : m == 1 ? "ingested, after the merge policy"
                      : "compacted",
             nseg[m]);
    printf("%-44s %9.0f %7.2fx %9.0f %7.2fx\n", label, bench_rounds_median(r, m, 0),
           m < 2 ? bench_rounds_ratio(r, 0, m, 2) : 1.0, bench_rounds_median(r, m, 1),
           m < 2 ? bench_rounds_ratio(r, 1, m, 2) : 1.0);
  }
}

/* Random present keys and keys checked absent, nl of each: random ones
 * (hex), or present ones with their last digit made ':' (time: inside the
 * ranges). */
static void sample_keys(const ing_opts *o, const uint8_t *keys, size_t n, uint8_t *present,
                        uint8_t *absent, size_t nl) {
  bench_rng r;
  bench_rng_init(&r, o->seed ^ 0x5eed);
  for (size_t i = 0; i < nl; i++) {
    memcpy(present + i * BENCH_HEX_KEY, keys + bench_rng_below(&r, n) * BENCH_HEX_KEY, BENCH_HEX_KEY);
    uint8_t *a = absent + i * BENCH_HEX_KEY;
    do {
      if (o->keys == 2) {
        memcpy(a, keys + bench_rng_below(&r, n) * BENCH_HEX_KEY, BENCH_HEX_KEY);
        a[BENCH_HEX_KEY - 1] = ':';
      } else {
        bench_hex_key(&r, a);
      }
    } while (bsearch(a, keys, n, BENCH_HEX_KEY, bench_hex_key_cmp));
  }
}

/* The segments built, the three indexes made from them and warmed. */
static int make_indexes(const char *dir, const uint8_t *keys, size_t n, size_t segs, char **paths,
                        ing_run *x) {
  char segdir[4096];
  bench_path(segdir, sizeof segdir, dir, "segments");
  int rc = bench_mkdirs(segdir);
  if (rc) return rc;
  bench_log("building %zu segments of %zu keys in all", segs, n);
  double t0 = bench_now();
  rc = build_segments(segdir, keys, n, segs, paths);
  bench_log("built in %.2f s", bench_now() - t0);
  for (int m = 0; m < 3 && rc == 0; m++) {
    char d[4096];
    bench_path(d, sizeof d, dir, mode_names[m]);
    rc = make_index(d, paths, segs, (ing_mode)m, &x->idx[m]);
    if (rc == 0) rc = bench_warm_dir(d);
    if (rc == 0) x->nseg[m] = bench_nsegments(x->idx[m]);
  }
  for (int m = 0; m < 3 && rc == 0; m++) { /* warm the mappings */
    size_t f;
    bench_hex_time_gets(x->idx[m], x->present, x->nl, &f, &rc);
  }
  return rc;
}

static int run(const ing_opts *o, const char *dir) {
  size_t n = (size_t)o->docs, segs = (size_t)o->segments, nl = (size_t)o->lookups;
  uint8_t *keys =
      o->keys == 2 ? bench_time_keys_sorted(o->seed, &n) : bench_hex_keys_sorted(o->seed, &n);
  uint8_t *present = malloc(nl * BENCH_HEX_KEY), *absent = malloc(nl * BENCH_HEX_KEY);
  char **paths = calloc(segs, sizeof *paths);
  ing_run x = {{NULL, NULL, NULL}, {0, 0, 0}, present, absent, nl};
  bench_rounds r = {.contenders = 3, .measures = 2, .rounds = (size_t)o->rounds};
  int rc = keys && present && absent && paths ? 0 : TERN_ENOMEM;
  if (rc == 0) {
    sample_keys(o, keys, n, present, absent, nl);
    rc = make_indexes(dir, keys, n, segs, paths, &x);
    if (rc)
      fprintf(stderr, "tern-bench ingest: %d (%s): %s\n", rc, tern_strerror(rc), tern_errmsg());
  }
  if (rc == 0 && (rc = bench_rounds_run(&r, time_mode, log_round, &x)) == 0)
    report(&r, o->keys == 2 ? "time-ordered" : "random hex", n, segs, x.nseg);
  bench_rounds_free(&r);
  for (int m = 0; m < 3; m++)
    tern_close(x.idx[m]);
  for (size_t s = 0; paths && s < segs; s++)
    free(paths[s]);
  free(paths);
  free(keys);
  free(present);
  free(absent);
  return rc ? 1 : 0;
}

int tern_bench_ingest(int argc, char **argv) {
  ing_opts o;
  int p = bench_opts_parse(&k_ing_cmd, &o, argc, argv);
  if (p) return bench_opts_exit(p);
  char *dir = bench_scratch("ingest", o.parent);
  if (!dir) return 1;
  int rc = run(&o, dir);
  bench_rmtree(dir);
  free(dir);
  return rc;
}
