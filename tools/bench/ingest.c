/* SPDX-License-Identifier: MIT */
/*
 * ingest.c — `tern-bench ingest`: a warm get after ingesting many
 * range-disjoint segments against the same keys after `tern_compact`
 * (issue 22's target: ≤ 1.15x).  Only tern.h.
 *
 * N random keys of 16 hex characters are sorted once and cut into S
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
 * checked absent) on one snapshot of each index, rotating which goes
 * first; figures are medians over the rounds, each ratio (over compacted,
 * > 1: slower) the median of the per-round ratios.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tern.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#define ING_KEY 16
#define ING_ROUNDS_MAX 50u

typedef struct ing_opts {
  uint64_t docs, segments, lookups, rounds, seed;
  const char *parent;
} ing_opts;

void tern_bench_ingest_usage(FILE *out) {
  fprintf(
      out,
      "tern-bench ingest [options]   warm get after ingesting S disjoint segments vs compacted\n"
      "  --docs N       keys (4000000), 16 random hex characters each\n"
      "  --segments S   range-disjoint segments built and ingested (64)\n"
      "  --lookups N    present and absent keys looked up per round, each (500000)\n"
      "  --rounds R     rounds, rotating which index runs first (7)\n"
      "  --seed S       key seed (1)\n"
      "  --dir PATH     parent of the scratch directory (/var/tmp)\n");
}

static int parse_opts(int argc, char **argv, ing_opts *o) {
  static const struct option lo[] = {
      {"docs", 1, 0, 'n'}, {"segments", 1, 0, 'S'}, {"lookups", 1, 0, 'l'}, {"rounds", 1, 0, 'r'},
      {"seed", 1, 0, 's'}, {"dir", 1, 0, 'd'},      {"help", 0, 0, 'h'},    {0, 0, 0, 0}};
  *o = (ing_opts){.docs = 4000000,
                  .segments = 64,
                  .lookups = 500000,
                  .rounds = 7,
                  .seed = 1,
                  .parent = "/var/tmp"};
  optind = 1;
  int ch;
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    int bad = 0;
    switch (ch) {
    case 'n': bad = bench_parse_u64(optarg, &o->docs) || o->docs < 2; break;
    case 'S':
      bad = bench_parse_u64(optarg, &o->segments) || !o->segments || o->segments > 4096;
      break;
    case 'l': bad = bench_parse_u64(optarg, &o->lookups) || !o->lookups; break;
    case 'r':
      bad = bench_parse_u64(optarg, &o->rounds) || !o->rounds || o->rounds > ING_ROUNDS_MAX;
      break;
    case 's': bad = bench_parse_u64(optarg, &o->seed); break;
    case 'd': o->parent = optarg; break;
    case 'h': tern_bench_ingest_usage(stdout); return 1;
    default: bad = 1;
    }
    if (bad || o->segments > o->docs) {
      tern_bench_ingest_usage(stderr);
      return -1;
    }
  }
  return 0;
}

static void hex_key(bench_rng *r, uint8_t *out) {
  static const char hex[] = "0123456789abcdef";
  uint64_t a = bench_rng_next(r);
  for (int i = 0; i < ING_KEY; i++, a >>= 4)
    out[i] = (uint8_t)hex[a & 15];
}

static int cmp_key(const void *a, const void *b) { return memcmp(a, b, ING_KEY); }

/* Sorted unique random keys, *n updated. */
static uint8_t *make_keys(uint64_t seed, size_t *n) {
  uint8_t *k = malloc(*n * ING_KEY);
  if (!k) return NULL;
  bench_rng r;
  bench_rng_init(&r, seed);
  for (size_t i = 0; i < *n; i++)
    hex_key(&r, k + i * ING_KEY);
  qsort(k, *n, ING_KEY, cmp_key);
  size_t u = 0;
  for (size_t i = 0; i < *n; i++)
    if (!u || memcmp(k + (u - 1) * ING_KEY, k + i * ING_KEY, ING_KEY))
      memmove(k + u++ * ING_KEY, k + i * ING_KEY, ING_KEY);
  *n = u;
  return k;
}

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
      rc = tern_builder_add(b, k + i * ING_KEY, ING_KEY, &i, sizeof i, NULL, 0);
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
  ING_HELD,     /* the ingesting process exits at once: no merge ran, every segment stays */
  ING_POLICY,   /* the handle is closed: whatever the background merge policy did first */
  ING_COMPACTED /* tern_compact: one segment */
} ing_mode;

static int ingest_into(const char *dir, char **paths, size_t segs, ing_mode mode) {
  tern_index *w;
  int rc = tern_open(&w, dir, TERN_CREATE, NULL);
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

/* Seconds for tern_get of every key in keys[0..n); *found counts hits. */
static NOIPA double time_gets(tern_index *idx, const uint8_t *keys, size_t n, size_t *found,
                              int *err) {
  tern_snapshot *s;
  *err = tern_snapshot_open(&s, idx);
  if (*err) return 0;
  uint64_t v;
  size_t vlen, hits = 0;
  double t0 = bench_now();
  for (size_t i = 0; i < n; i++) {
    int rc = tern_get(s, keys + i * ING_KEY, ING_KEY, &v, sizeof v, &vlen);
    if (rc == TERN_OK)
      hits++;
    else if (rc != TERN_NOTFOUND)
      *err = rc;
  }
  double t = bench_now() - t0;
  tern_snapshot_close(s);
  *found = hits;
  return t;
}

static size_t nsegments(tern_index *idx) {
  tern_snapshot *s;
  if (tern_snapshot_open(&s, idx)) return 0;
  size_t n = tern_snapshot_nsegments(s);
  tern_snapshot_close(s);
  return n;
}

static double median_of(double *v, size_t n) { return bench_summarize(v, n).median; }

static const char *const mode_names[3] = {"held", "policy", "compacted"};

static int run(const ing_opts *o, const char *dir) {
  size_t n = (size_t)o->docs, segs = (size_t)o->segments, nl = (size_t)o->lookups;
  uint8_t *keys = make_keys(o->seed, &n);
  uint8_t *present = malloc(nl * ING_KEY), *absent = malloc(nl * ING_KEY);
  char **paths = calloc(segs, sizeof *paths);
  char segdir[4096];
  bench_path(segdir, sizeof segdir, dir, "segments");
  tern_index *idx[3] = {NULL, NULL, NULL};
  size_t nseg[3] = {0, 0, 0};
  int rc = keys && present && absent && paths ? bench_mkdirs(segdir) : TERN_ENOMEM;
  if (rc == 0) {
    bench_rng r;
    bench_rng_init(&r, o->seed ^ 0x5eed);
    for (size_t i = 0; i < nl; i++) {
      memcpy(present + i * ING_KEY, keys + bench_rng_below(&r, n) * ING_KEY, ING_KEY);
      do
        hex_key(&r, absent + i * ING_KEY);
      while (bsearch(absent + i * ING_KEY, keys, n, ING_KEY, cmp_key));
    }
    bench_log("building %zu segments of %zu keys in all", segs, n);
    double t0 = bench_now();
    rc = build_segments(segdir, keys, n, segs, paths);
    bench_log("built in %.2f s", bench_now() - t0);
  }
  for (int m = 0; m < 3 && rc == 0; m++) {
    char d[4096];
    bench_path(d, sizeof d, dir, mode_names[m]);
    rc = make_index(d, paths, segs, (ing_mode)m, &idx[m]);
    if (rc == 0) rc = bench_warm_dir(d);
    if (rc == 0) nseg[m] = nsegments(idx[m]);
  }
  /* per mode, per round: ns per present and per absent get */
  double tp[3][ING_ROUNDS_MAX], ta[3][ING_ROUNDS_MAX];
  double rp[2][ING_ROUNDS_MAX], ra[2][ING_ROUNDS_MAX];
  for (int m = 0; m < 3 && rc == 0; m++) { /* warm the mappings */
    size_t f;
    int err = 0;
    time_gets(idx[m], present, nl, &f, &err);
    rc = err;
  }
  for (size_t round = 0; rc == 0 && round < o->rounds; round++) {
    for (int j = 0; j < 3 && rc == 0; j++) {
      int m = (int)((round + (size_t)j) % 3); /* rotate which goes first */
      size_t fp, fa;
      int err = 0;
      tp[m][round] = time_gets(idx[m], present, nl, &fp, &err) / (double)nl * 1e9;
      if (!err) ta[m][round] = time_gets(idx[m], absent, nl, &fa, &err) / (double)nl * 1e9;
      if (!err && (fp != nl || fa != 0)) {
        bench_log("%s: %zu of %zu present keys found, %zu absent ones", mode_names[m], fp, nl, fa);
        err = -1;
      }
      rc = err;
    }
    if (rc) break;
    for (int m = 0; m < 2; m++) {
      rp[m][round] = tp[m][round] / tp[2][round];
      ra[m][round] = ta[m][round] / ta[2][round];
    }
    bench_log("round %zu: present %.0f / %.0f / %.0f ns, absent %.0f / %.0f / %.0f ns "
              "(held / policy / compacted)",
              round, tp[0][round], tp[1][round], tp[2][round], ta[0][round], ta[1][round],
              ta[2][round]);
  }
  if (rc == 0) {
    size_t R = (size_t)o->rounds;
    printf("keys %zu in %zu range-disjoint segments, built and ingested in one call; medians of "
           "%zu rounds, ns per warm tern_get\n",
           n, segs, R);
    printf("%-44s %9s %8s %9s %8s\n", "index (segments the gets saw)", "present", "ratio", "absent",
           "ratio");
    for (int m = 0; m < 3; m++) {
      char label[64];
      snprintf(label, sizeof label, "%s (%zu)",
               m == 0   ? "ingested, no merge yet"
               : m == 1 ? "ingested, after the merge policy"
                        : "compacted",
               nseg[m]);
      printf("%-44s %9.0f %7.2fx %9.0f %7.2fx\n", label, median_of(tp[m], R),
             m < 2 ? median_of(rp[m], R) : 1.0, median_of(ta[m], R),
             m < 2 ? median_of(ra[m], R) : 1.0);
    }
  } else {
    fprintf(stderr, "tern-bench ingest: %d (%s): %s\n", rc, tern_strerror(rc), tern_errmsg());
  }
  for (int m = 0; m < 3; m++)
    tern_close(idx[m]);
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
  int p = parse_opts(argc, argv, &o);
  if (p) return p > 0 ? 0 : 2;
  char *dir = bench_mkdtemp(o.parent, "tern-bench-ingest");
  if (!dir) {
    perror("tern-bench ingest: scratch directory");
    return 1;
  }
  char machine[256];
  bench_machine(machine, sizeof machine);
  bench_log("%s; scratch %s (%s)", machine, dir, bench_fs_name(dir));
  int rc = run(&o, dir);
  bench_rmtree(dir);
  free(dir);
  return rc;
}
