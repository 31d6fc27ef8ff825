/* SPDX-License-Identifier: MIT */
/*
 * segments.c — `tern-bench segments`: a warm get on an index written the
 * ordinary way, in many small transactions, and on one of many overlapping
 * segments, against the same keys compacted (issue 21 item 6: within 1.2x
 * of compacted; absent keys on 20 segments at most 2x one segment).  Only
 * tern.h.
 *
 * N random keys of 16 hex characters, in random order, each with an
 * 8-byte value.  Five indexes of the same keys and values:
 *   "incremental": written in transactions of T documents (tern_put +
 *     tern_commit), default options: the write buffer flushes as segments
 *     of random keys and the background worker merges them by its tiered
 *     policy; the handle is then closed (closing waits for the flush or
 *     merge in flight) and the index is read as it was left, buffer and all;
 *   "overlapping": the keys cut into S parts in their random order, each
 *     part sorted and built with tern_builder_* into a segment of its own,
 *     the S segments ingested in one tern_ingest by a process that exits at
 *     once (no merge ran): S segments whose key ranges all overlap, so a
 *     get tests every one's filter;
 *   "incremental-live", "overlapping-live": the same written (ingested)
 *     again into an index of their own whose writing handle stays open:
 *     read through it, as a long-running process reads what it wrote (its
 *     own states, made by its edits; its worker's merges and combined
 *     filter done first: tern_verify waits for them).  The overlapping
 *     parts are then merged as the tiered policy says (20 segments of one
 *     tier: 2); the label gives the count the gets saw;
 *   "compacted": the S segments ingested, then tern_compact: one segment.
 * The others are reopened read-only (no merges), all read once whole
 * (warm).  Each round times tern_get of the same random present keys and
 * of random absent keys (checked absent) on one snapshot of each,
 * rotating which goes first; figures are medians over the rounds, each
 * ratio (over compacted, > 1: slower) the median of the per-round ratios.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tern.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SG_KEY 16
#define SG_ROUNDS_MAX 50u
#define SG_KINDS 5

typedef struct sg_opts {
  uint64_t docs, txn, segments, lookups, rounds, seed;
  const char *parent;
} sg_opts;

enum { SG_INCREMENTAL, SG_INCREMENTAL_LIVE, SG_OVERLAPPING, SG_OVERLAPPING_LIVE, SG_COMPACTED };
static const char *const kind_names[SG_KINDS] = {"incremental", "incremental-live", "overlapping",
                                                 "overlapping-live", "compacted"};
/* The "-live" indexes are read through the handle of the process that
 * wrote them (its own states, made by its edits), the others reopened. */
static int kind_live(int k) { return k == SG_INCREMENTAL_LIVE || k == SG_OVERLAPPING_LIVE; }

void tern_bench_segments_usage(FILE *out) {
  fprintf(out,
          "tern-bench segments [options]   warm get: many small commits, S overlapping\n"
          "                                segments, and the same keys compacted\n"
          "  --docs N       keys (1000000), 16 random hex characters each\n"
          "  --txn T        documents per transaction of the incremental index (1000)\n"
          "  --segments S   overlapping segments of the second index (20)\n"
          "  --lookups N    present and absent keys looked up per round, each (200000)\n"
          "  --rounds R     rounds, rotating which index runs first (7)\n"
          "  --seed S       key seed (1)\n"
          "  --dir PATH     parent of the scratch directory (/var/tmp)\n");
}

static int parse_opts(int argc, char **argv, sg_opts *o) {
  static const struct option lo[] = {
      {"docs", 1, 0, 'n'},   {"txn", 1, 0, 't'},  {"segments", 1, 0, 'S'}, {"lookups", 1, 0, 'l'},
      {"rounds", 1, 0, 'r'}, {"seed", 1, 0, 's'}, {"dir", 1, 0, 'd'},      {"help", 0, 0, 'h'},
      {0, 0, 0, 0}};
  *o = (sg_opts){.docs = 1000000,
                 .txn = 1000,
                 .segments = 20,
                 .lookups = 200000,
                 .rounds = 7,
                 .seed = 1,
                 .parent = "/var/tmp"};
  optind = 1;
  int ch;
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    int bad = 0;
    switch (ch) {
    case 'n': bad = bench_parse_u64(optarg, &o->docs) || o->docs < 2; break;
    case 't': bad = bench_parse_u64(optarg, &o->txn) || !o->txn; break;
    case 'S':
      bad = bench_parse_u64(optarg, &o->segments) || !o->segments || o->segments > 4096;
      break;
    case 'l': bad = bench_parse_u64(optarg, &o->lookups) || !o->lookups; break;
    case 'r':
      bad = bench_parse_u64(optarg, &o->rounds) || !o->rounds || o->rounds > SG_ROUNDS_MAX;
      break;
    case 's': bad = bench_parse_u64(optarg, &o->seed); break;
    case 'd': o->parent = optarg; break;
    case 'h': tern_bench_segments_usage(stdout); return 1;
    default: bad = 1;
    }
    if (bad || o->segments > o->docs) {
      tern_bench_segments_usage(stderr);
      return -1;
    }
  }
  return 0;
}

static void hex_key(bench_rng *r, uint8_t *out) {
  static const char hex[] = "0123456789abcdef";
  uint64_t a = bench_rng_next(r);
  for (int i = 0; i < SG_KEY; i++, a >>= 4)
    out[i] = (uint8_t)hex[a & 15];
}

static int cmp_key(const void *a, const void *b) { return memcmp(a, b, SG_KEY); }

/* n unique random keys: *sorted in order, the same in random order as the
 * return value. */
static uint8_t *make_keys(uint64_t seed, size_t *n, uint8_t **sorted) {
  uint8_t *k = malloc(*n * SG_KEY), *s = malloc(*n * SG_KEY);
  if (!k || !s) {
    free(k);
    free(s);
    return NULL;
  }
  bench_rng r;
  bench_rng_init(&r, seed);
  for (size_t i = 0; i < *n; i++)
    hex_key(&r, s + i * SG_KEY);
  qsort(s, *n, SG_KEY, cmp_key);
  size_t u = 0;
  for (size_t i = 0; i < *n; i++)
    if (!u || memcmp(s + (u - 1) * SG_KEY, s + i * SG_KEY, SG_KEY))
      memmove(s + u++ * SG_KEY, s + i * SG_KEY, SG_KEY);
  *n = u;
  memcpy(k, s, u * SG_KEY);
  for (size_t i = u; i > 1; i--) { /* Fisher-Yates */
    size_t j = (size_t)bench_rng_below(&r, i);
    uint8_t t[SG_KEY];
    memcpy(t, k + (i - 1) * SG_KEY, SG_KEY);
    memmove(k + (i - 1) * SG_KEY, k + j * SG_KEY, SG_KEY);
    memcpy(k + j * SG_KEY, t, SG_KEY);
  }
  *sorted = s;
  return k;
}

/* The incremental index: keys[0..n) (value: the position) in transactions
 * of txn documents, then closed, or kept open in *live (live non-NULL). */
static int write_incremental(const char *dir, const uint8_t *keys, size_t n, size_t txn,
                             tern_index **live) {
  tern_index *w;
  int rc = tern_open(&w, dir, TERN_CREATE, NULL);
  if (rc) return rc;
  double t0 = bench_now();
  for (size_t i = 0; rc == 0 && i < n;) {
    tern_txn *t;
    if ((rc = tern_txn_begin(&t, w, 0))) break;
    for (size_t end = i + txn < n ? i + txn : n; rc == 0 && i < end; i++) {
      uint64_t v = i;
      rc = tern_put(t, keys + i * SG_KEY, SG_KEY, &v, sizeof v, NULL, 0);
    }
    if (rc)
      tern_abort(t);
    else
      rc = tern_commit(t);
  }
  if (live && rc == 0) {
    *live = w;
    return 0;
  }
  int rc2 = tern_close(w);
  bench_log("incremental: %zu documents in transactions of %zu, %.2f s (close included)", n, txn,
            bench_now() - t0);
  return rc ? rc : rc2;
}

/* Part p of segs of the random order, sorted, built into a segment at
 * path (value: the position in the random order, as the incremental
 * index has it). */
#define SG_ENTRY (SG_KEY + sizeof(uint64_t))
static int build_part(const char *path, const uint8_t *keys, size_t n, size_t p, size_t segs) {
  size_t lo = p * n / segs, m = (p + 1) * n / segs - lo;
  uint8_t *part = malloc(m * SG_ENTRY); /* key, then its position */
  if (!part) return TERN_ENOMEM;
  for (size_t i = 0; i < m; i++) {
    uint64_t pos = lo + i;
    memcpy(part + i * SG_ENTRY, keys + (lo + i) * SG_KEY, SG_KEY);
    memcpy(part + i * SG_ENTRY + SG_KEY, &pos, sizeof pos);
  }
  qsort(part, m, SG_ENTRY, cmp_key);
  tern_builder *b;
  int rc = tern_builder_open(&b, path, NULL);
  for (size_t i = 0; rc == 0 && i < m; i++)
    rc = tern_builder_add(b, part + i * SG_ENTRY, SG_KEY, part + i * SG_ENTRY + SG_KEY,
                          sizeof(uint64_t), NULL, 0);
  free(part);
  if (rc) {
    tern_builder_abort(b);
    return rc;
  }
  return tern_builder_finish(b, NULL);
}

static int build_parts(const char *dir, const uint8_t *keys, size_t n, size_t segs, char **paths) {
  for (size_t s = 0; s < segs; s++) {
    char name[32], buf[4096];
    snprintf(name, sizeof name, "part%04zu", s);
    paths[s] = strdup(bench_path(buf, sizeof buf, dir, name));
    if (!paths[s]) return TERN_ENOMEM;
    int rc = build_part(paths[s], keys, n, s, segs);
    if (rc) return rc;
  }
  return 0;
}

/* Ingests the parts into dir: in a child that exits at once (no merge
 * runs: every part stays a segment), or compacted, or (live non-NULL) by
 * this process, whose handle is kept in *live (its worker merges as its
 * policy says). */
static int ingest_parts(const char *dir, char **paths, size_t segs, int compact,
                        tern_index **live) {
  if (live) {
    int rc = tern_open(live, dir, TERN_CREATE, NULL);
    if (rc == 0) rc = tern_ingest(*live, (const char *const *)paths, segs, 0);
    return rc;
  }
  fflush(NULL);
  pid_t pid = compact ? 0 : fork();
  if (pid < 0) return -errno;
  if (pid > 0) {
    int status;
    if (waitpid(pid, &status, 0) < 0) return -errno;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : TERN_EINVAL;
  }
  tern_index *w;
  int rc = tern_open(&w, dir, TERN_CREATE, NULL);
  if (rc == 0) rc = tern_ingest(w, (const char *const *)paths, segs, 0);
  if (!compact) _exit(rc ? 1 : 0); /* durable: the segments stay as ingested */
  if (rc == 0) rc = tern_compact(w);
  int rc2 = w ? tern_close(w) : 0;
  return rc ? rc : rc2;
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
    int rc = tern_get(s, keys + i * SG_KEY, SG_KEY, &v, sizeof v, &vlen);
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

/* The lookups: nl present keys drawn from sorted[0..n), nl absent ones. */
static void pick_lookups(const sg_opts *o, const uint8_t *sorted, size_t n, uint8_t *present,
                         uint8_t *absent) {
  bench_rng r;
  bench_rng_init(&r, o->seed ^ 0x5eed);
  for (size_t i = 0; i < (size_t)o->lookups; i++) {
    memcpy(present + i * SG_KEY, sorted + bench_rng_below(&r, n) * SG_KEY, SG_KEY);
    do
      hex_key(&r, absent + i * SG_KEY);
    while (bsearch(absent + i * SG_KEY, sorted, n, SG_KEY, cmp_key));
  }
}

/* The three indexes under dir, opened read-only and warm. */
static int make_indexes(const sg_opts *o, const char *dir, const uint8_t *keys, size_t n,
                        tern_index **idx, size_t *nseg) {
  size_t segs = (size_t)o->segments;
  char **paths = calloc(segs, sizeof *paths);
  char d[SG_KINDS][4096], parts[4096];
  for (int k = 0; k < SG_KINDS; k++)
    bench_path(d[k], sizeof d[k], dir, kind_names[k]);
  bench_path(parts, sizeof parts, dir, "parts");
  int rc = paths ? bench_mkdirs(parts) : TERN_ENOMEM;
  if (rc == 0) rc = write_incremental(d[SG_INCREMENTAL], keys, n, (size_t)o->txn, NULL);
  if (rc == 0)
    rc = write_incremental(d[SG_INCREMENTAL_LIVE], keys, n, (size_t)o->txn,
                           &idx[SG_INCREMENTAL_LIVE]);
  if (rc == 0) rc = build_parts(parts, keys, n, segs, paths);
  if (rc == 0) rc = ingest_parts(d[SG_OVERLAPPING], paths, segs, 0, NULL);
  if (rc == 0) rc = ingest_parts(d[SG_OVERLAPPING_LIVE], paths, segs, 0, &idx[SG_OVERLAPPING_LIVE]);
  if (rc == 0) rc = ingest_parts(d[SG_COMPACTED], paths, segs, 1, NULL);
  for (int k = 0; k < SG_KINDS && rc == 0; k++) {
    /* A live handle: tern_verify waits for its worker (the flushes,
     * merges and combined filter its writes left) and reads it whole. */
    rc = kind_live(k) ? tern_verify(idx[k]) : tern_open(&idx[k], d[k], TERN_RDONLY, NULL);
    if (rc == 0) rc = bench_warm_dir(d[k]);
    if (rc == 0) nseg[k] = nsegments(idx[k]);
  }
  for (size_t s = 0; paths && s < segs; s++)
    free(paths[s]);
  free(paths);
  return rc;
}

typedef struct sg_times {
  double tp[SG_KINDS][SG_ROUNDS_MAX], ta[SG_KINDS][SG_ROUNDS_MAX]; /* ns per get */
  double rp[SG_KINDS][SG_ROUNDS_MAX], ra[SG_KINDS][SG_ROUNDS_MAX]; /* over compacted */
} sg_times;

/* One index's present and absent gets in round r. */
static int time_kind(tern_index *idx, const uint8_t *present, const uint8_t *absent, size_t nl,
                     double *tp, double *ta, const char *name) {
  size_t fp = 0, fa = 0;
  int err = 0;
  *tp = time_gets(idx, present, nl, &fp, &err) / (double)nl * 1e9;
  if (!err) *ta = time_gets(idx, absent, nl, &fa, &err) / (double)nl * 1e9;
  if (!err && (fp != nl || fa != 0)) {
    bench_log("%s: %zu of %zu present keys found, %zu absent ones", name, fp, nl, fa);
    err = -1;
  }
  return err;
}

static int time_rounds(const sg_opts *o, tern_index **idx, const uint8_t *present,
                       const uint8_t *absent, sg_times *t) {
  size_t nl = (size_t)o->lookups;
  for (int k = 0; k < SG_KINDS; k++) { /* warm the mappings and filter pages */
    size_t f;
    int err = 0;
    time_gets(idx[k], present, nl, &f, &err);
    if (!err) time_gets(idx[k], absent, nl, &f, &err);
    if (err) return err;
  }
  for (size_t r = 0; r < o->rounds; r++) {
    for (int j = 0; j < SG_KINDS; j++) {
      int k = (int)((r + (size_t)j) % SG_KINDS); /* rotate which goes first */
      int rc = time_kind(idx[k], present, absent, nl, &t->tp[k][r], &t->ta[k][r], kind_names[k]);
      if (rc) return rc;
    }
    for (int k = 0; k < SG_KINDS; k++) {
      t->rp[k][r] = t->tp[k][r] / t->tp[SG_COMPACTED][r];
      t->ra[k][r] = t->ta[k][r] / t->ta[SG_COMPACTED][r];
    }
    bench_log("round %zu: present %.0f / %.0f / %.0f / %.0f / %.0f ns, absent %.0f / %.0f / "
              "%.0f / %.0f / %.0f ns (incremental, -live / overlapping, -live / compacted)",
              r, t->tp[0][r], t->tp[1][r], t->tp[2][r], t->tp[3][r], t->tp[4][r], t->ta[0][r],
              t->ta[1][r], t->ta[2][r], t->ta[3][r], t->ta[4][r]);
  }
  return 0;
}

static double median_of(const double *v, size_t n) {
  double c[SG_ROUNDS_MAX];
  memcpy(c, v, n * sizeof *c);
  return bench_summarize(c, n).median;
}

static void report(const sg_opts *o, size_t n, const size_t *nseg, const sg_times *t) {
  size_t R = (size_t)o->rounds;
  printf("keys %zu; incremental: transactions of %llu documents, default flush and merge "
         "policy; overlapping: %llu segments of random keys; medians of %zu rounds, ns per warm "
         "tern_get\n",
         n, (unsigned long long)o->txn, (unsigned long long)o->segments, R);
  printf("%-36s %9s %8s %9s %8s\n", "index (segments the gets saw)", "present", "ratio", "absent",
         "ratio");
  for (int k = 0; k < SG_KINDS; k++) {
    char label[64];
    snprintf(label, sizeof label, "%s (%zu)", kind_names[k], nseg[k]);
    printf("%-36s %9.0f %7.2fx %9.0f %7.2fx\n", label, median_of(t->tp[k], R),
           median_of(t->rp[k], R), median_of(t->ta[k], R), median_of(t->ra[k], R));
  }
}

static int run(const sg_opts *o, const char *dir) {
  size_t n = (size_t)o->docs, nl = (size_t)o->lookups;
  uint8_t *sorted = NULL, *keys = make_keys(o->seed, &n, &sorted);
  uint8_t *present = malloc(nl * SG_KEY), *absent = malloc(nl * SG_KEY);
  sg_times *t = malloc(sizeof *t);
  tern_index *idx[SG_KINDS] = {NULL};
  size_t nseg[SG_KINDS] = {0};
  int rc = keys && present && absent && t ? 0 : TERN_ENOMEM;
  if (rc == 0) {
    pick_lookups(o, sorted, n, present, absent);
    rc = make_indexes(o, dir, keys, n, idx, nseg);
  }
  if (rc == 0) rc = time_rounds(o, idx, present, absent, t);
  if (rc == 0)
    report(o, n, nseg, t);
  else
    fprintf(stderr, "tern-bench segments: %d (%s): %s\n", rc, tern_strerror(rc), tern_errmsg());
  for (int k = 0; k < SG_KINDS; k++)
    tern_close(idx[k]);
  free(keys);
  free(sorted);
  free(present);
  free(absent);
  free(t);
  return rc ? 1 : 0;
}

int tern_bench_segments(int argc, char **argv) {
  sg_opts o;
  int p = parse_opts(argc, argv, &o);
  if (p) return p > 0 ? 0 : 2;
  char *dir = bench_mkdtemp(o.parent, "tern-bench-segments");
  if (!dir) {
    perror("tern-bench segments: scratch directory");
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
