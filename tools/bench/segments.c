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
 * of random absent keys (checked absent) on one snapshot of each, and a
 * full scan of each (every key once, key and value read: the merge of its
 * segments and buffer), rotating which goes first; figures are medians over the rounds, each
 * ratio (over compacted, > 1: slower) the median of the per-round ratios.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/harness.h"
#include "tools/bench/hexgets.h"
#include "tools/bench/opts.h"
#include "tern.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SG_KEY BENCH_HEX_KEY
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

static const char *sg_check(void *opts) {
  const sg_opts *o = opts;
  return o->segments > o->docs ? "--segments must be <= --docs" : NULL;
}

#define SG_OPT(field) offsetof(sg_opts, field)
static const bench_opt k_sg_opts[] = {
    BENCH_U64("docs", SG_OPT(docs), "N", "1000000", 2, 0, "keys, 16 random hex characters each"),
    BENCH_U64("txn", SG_OPT(txn), "T", "1000", 1, 0,
              "documents per transaction of the incremental index"),
    BENCH_U64("segments", SG_OPT(segments), "S", "20", 1, 4096,
              "overlapping segments of the second index"),
    BENCH_U64("lookups", SG_OPT(lookups), "N", "200000", 1, 0,
              "present and absent keys looked up per round, each"),
    BENCH_U64("rounds", SG_OPT(rounds), "R", "7", 1, 0, "rounds, rotating which index runs first"),
    BENCH_U64("seed", SG_OPT(seed), "S", "1", 0, 0, "key seed"),
    BENCH_SCRATCH_DIR(SG_OPT(parent)),
};

static const bench_cmd k_sg_cmd =
    BENCH_CMD("segments", "[options]",
              "warm get: many small commits, S overlapping segments, and the same keys compacted",
              k_sg_opts, sg_opts, sg_check);

void tern_bench_segments_usage(FILE *out) { bench_opts_usage(&k_sg_cmd, out); }

/* n unique random keys: *sorted in order, the same in random order as the
 * return value. */
static uint8_t *make_keys(uint64_t seed, size_t *n, uint8_t **sorted) {
  uint8_t *s = bench_hex_keys_sorted(seed, n), *k = s ? malloc(*n * SG_KEY + 1) : NULL;
  if (!k) {
    free(s);
    return NULL;
  }
  memcpy(k, s, *n * SG_KEY);
  bench_rng r;
  bench_rng_init(&r, seed ^ 0x5eed);
  bench_hex_keys_shuffle(k, *n, &r);
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
  qsort(part, m, SG_ENTRY, bench_hex_key_cmp);
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

/* Ingests the parts into dir: in a child whose handle never merges in
 * the background (merge_factor 0: every part stays a segment, however
 * long its exit takes), or compacted, or (live non-NULL) by this
 * process, whose handle is kept in *live (its worker merges as its
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
  tern_options o;
  tern_options_init(&o);
  o.merge_factor = 0; /* the worker merges nothing: not a race with _exit below */
  int rc = tern_open(&w, dir, TERN_CREATE, compact ? NULL : &o);
  if (rc == 0) rc = tern_ingest(w, (const char *const *)paths, segs, 0);
  if (!compact) _exit(rc ? 1 : 0); /* durable: the segments stay as ingested */
  if (rc == 0) rc = tern_compact(w);
  int rc2 = w ? tern_close(w) : 0;
  return rc ? rc : rc2;
}

/* The lookups: nl present keys drawn from sorted[0..n), nl absent ones. */
static void pick_lookups(const sg_opts *o, const uint8_t *sorted, size_t n, uint8_t *present,
                         uint8_t *absent) {
  bench_rng r;
  bench_rng_init(&r, o->seed ^ 0x5eed);
  for (size_t i = 0; i < (size_t)o->lookups; i++) {
    memcpy(present + i * SG_KEY, sorted + bench_rng_below(&r, n) * SG_KEY, SG_KEY);
    do
      bench_hex_key(&r, absent + i * SG_KEY);
    while (bsearch(absent + i * SG_KEY, sorted, n, SG_KEY, bench_hex_key_cmp));
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
  /* The child that ingests the overlapping index is forked first, while
   * no handle of this process has a thread: a child of a process whose
   * other thread (a live index's worker) held a lock of the allocator at
   * the fork waits for it forever (seen under ASan). */
  if (rc == 0) rc = build_parts(parts, keys, n, segs, paths);
  if (rc == 0) rc = ingest_parts(d[SG_OVERLAPPING], paths, segs, 0, NULL);
  if (rc == 0) rc = write_incremental(d[SG_INCREMENTAL], keys, n, (size_t)o->txn, NULL);
  if (rc == 0)
    rc = write_incremental(d[SG_INCREMENTAL_LIVE], keys, n, (size_t)o->txn,
                           &idx[SG_INCREMENTAL_LIVE]);
  if (rc == 0) rc = ingest_parts(d[SG_OVERLAPPING_LIVE], paths, segs, 0, &idx[SG_OVERLAPPING_LIVE]);
  if (rc == 0) rc = ingest_parts(d[SG_COMPACTED], paths, segs, 1, NULL);
  for (int k = 0; k < SG_KINDS && rc == 0; k++) {
    /* A live handle: tern_verify waits for its worker (the flushes,
     * merges and combined filter its writes left) and reads it whole. */
    rc = kind_live(k) ? tern_verify(idx[k]) : tern_open(&idx[k], d[k], TERN_RDONLY, NULL);
    if (rc == 0) rc = bench_warm_dir(d[k]);
    if (rc == 0) nseg[k] = bench_nsegments(idx[k]);
  }
  for (size_t s = 0; paths && s < segs; s++)
    free(paths[s]);
  free(paths);
  return rc;
}

/* What the rounds read: the indexes and the keys they look up. */
typedef struct sg_run {
  tern_index **idx;
  const uint8_t *present, *absent;
  size_t nl, nkeys;
} sg_run;

static volatile uint64_t scan_sink; /* what the scans read, kept */

/* A full scan of idx (tern_cursor_next, key and value read): seconds,
 * with the keys seen in *n; negative on failure. */
static double time_scan(tern_index *idx, size_t *n) {
  tern_snapshot *snap;
  tern_cursor *c;
  uint64_t sum = 0;
  *n = 0;
  if (tern_snapshot_open(&snap, idx)) return -1;
  double t0 = bench_now();
  int rc = tern_cursor_open(&c, snap, NULL);
  while (rc == TERN_OK && (rc = tern_cursor_next(c)) == TERN_OK) {
    tern_slice key, val;
    tern_cursor_key(c, &key);
    tern_cursor_value(c, &val);
    sum += key.len + val.len + ((const uint8_t *)key.data)[key.len - 1];
    (*n)++;
  }
  double t = bench_now() - t0;
  if (rc == TERN_NOTFOUND) rc = TERN_OK;
  tern_cursor_close(c);
  tern_snapshot_close(snap);
  scan_sink += sum;
  return rc ? -1 : t;
}

/* ns a key of index `k`: measure 0 gets of present keys, 1 of absent
 * ones, 2 a full scan (every key once). */
static double time_kind(void *ctx, size_t k, size_t measure, size_t round) {
  const sg_run *x = ctx;
  (void)round;
  size_t found;
  int err = 0;
  if (measure == 2) {
    double t = time_scan(x->idx[k], &found);
    if (t >= 0 && found != x->nkeys) {
      bench_log("%s: scan saw %zu keys of %zu", kind_names[k], found, x->nkeys);
      t = -1;
    }
    if (t < 0) fprintf(stderr, "tern-bench segments: scan: %s\n", tern_errmsg());
    return t < 0 ? -1 : t / (double)x->nkeys * 1e9;
  }
  double t = bench_hex_time_gets(x->idx[k], measure ? x->absent : x->present, x->nl, &found,
                                 &err);
  if (!err && found != (measure ? 0 : x->nl)) {
    bench_log("%s: %zu of %zu %s keys found", kind_names[k], found, x->nl,
              measure ? "absent" : "present");
    err = -1;
  }
  if (err)
    fprintf(stderr, "tern-bench segments: %d (%s): %s\n", err, tern_strerror(err), tern_errmsg());
  return err ? -1 : t / (double)x->nl * 1e9;
}

static void log_round(void *ctx, const bench_rounds *r, size_t round) {
  (void)ctx;
  double v[3][SG_KINDS];
  for (size_t k = 0; k < SG_KINDS; k++)
    for (size_t m = 0; m < 3; m++)
      v[m][k] = bench_rounds_of(r, k, m)[round];
  bench_log("round %zu: present %.0f / %.0f / %.0f / %.0f / %.0f ns, absent %.0f / %.0f / "
            "%.0f / %.0f / %.0f ns, scan %.0f / %.0f / %.0f / %.0f / %.0f ns "
            "(incremental, -live / overlapping, -live / compacted)",
            round, v[0][0], v[0][1], v[0][2], v[0][3], v[0][4], v[1][0], v[1][1], v[1][2],
            v[1][3], v[1][4], v[2][0], v[2][1], v[2][2], v[2][3], v[2][4]);
}

/* Warms the mappings and filter pages: every key once in every index. */
static int warm_gets(const sg_run *x) {
  for (int k = 0; k < SG_KINDS; k++) {
    size_t f;
    int err = 0;
    bench_hex_time_gets(x->idx[k], x->present, x->nl, &f, &err);
    if (!err) bench_hex_time_gets(x->idx[k], x->absent, x->nl, &f, &err);
    if (err) return err;
  }
  return 0;
}

static void report(const sg_opts *o, size_t n, const size_t *nseg, const bench_rounds *r) {
  printf("keys %zu; incremental: transactions of %llu documents, default flush and merge "
         "policy; overlapping: %llu segments of random keys; medians of %zu rounds, ns per warm "
         "tern_get, and per key of a full scan (tern_cursor_next + key + value)\n",
         n, (unsigned long long)o->txn, (unsigned long long)o->segments, r->rounds);
  printf("%-36s %9s %8s %9s %8s %9s %8s\n", "index (segments the gets saw)", "present", "ratio",
         "absent", "ratio", "scan", "ratio");
  for (size_t k = 0; k < SG_KINDS; k++) {
    char label[64];
    snprintf(label, sizeof label, "%s (%zu)", kind_names[k], nseg[k]);
    printf("%-36s %9.0f %7.2fx %9.0f %7.2fx %9.1f %7.2fx\n", label, bench_rounds_median(r, k, 0),
           bench_rounds_ratio(r, 0, k, SG_COMPACTED), bench_rounds_median(r, k, 1),
           bench_rounds_ratio(r, 1, k, SG_COMPACTED), bench_rounds_median(r, k, 2),
           bench_rounds_ratio(r, 2, k, SG_COMPACTED));
  }
}

static int run(const sg_opts *o, const char *dir) {
  size_t n = (size_t)o->docs, nl = (size_t)o->lookups;
  uint8_t *sorted = NULL, *keys = make_keys(o->seed, &n, &sorted);
  uint8_t *present = malloc(nl * SG_KEY), *absent = malloc(nl * SG_KEY);
  tern_index *idx[SG_KINDS] = {NULL};
  size_t nseg[SG_KINDS] = {0};
  sg_run x = {idx, present, absent, nl, n};
  bench_rounds r = {.contenders = SG_KINDS, .measures = 3, .rounds = (size_t)o->rounds};
  int rc = keys && present && absent ? 0 : TERN_ENOMEM;
  if (rc == 0) {
    pick_lookups(o, sorted, n, present, absent);
    rc = make_indexes(o, dir, keys, n, idx, nseg);
  }
  if (rc == 0) rc = warm_gets(&x);
  if (rc)
    fprintf(stderr, "tern-bench segments: %d (%s): %s\n", rc, tern_strerror(rc), tern_errmsg());
  if (rc == 0 && (rc = bench_rounds_run(&r, time_kind, log_round, &x)) == 0)
    report(o, n, nseg, &r);
  bench_rounds_free(&r);
  for (int k = 0; k < SG_KINDS; k++)
    tern_close(idx[k]);
  free(keys);
  free(sorted);
  free(present);
  free(absent);
  return rc ? 1 : 0;
}

int tern_bench_segments(int argc, char **argv) {
  sg_opts o;
  int p = bench_opts_parse(&k_sg_cmd, &o, argc, argv);
  if (p) return bench_opts_exit(p);
  char *dir = bench_scratch("segments", o.parent);
  if (!dir) return 1;
  int rc = run(&o, dir);
  bench_rmtree(dir);
  free(dir);
  return rc;
}
