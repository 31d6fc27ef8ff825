/* SPDX-License-Identifier: MIT */
/*
 * engine.c — `tern-bench engine`: what the engine adds on top of the codec.
 *
 *   get     tern_get through a snapshot on a one-segment index vs the bare
 *           codec lookup tern_seg_seek_exact on the same segment (warm cache)
 *   absent  absent keys on an index of 20 segments vs the same docs in one
 *   commit  one-document put + commit vs a bare LMDB write transaction doing
 *           the same put (both durable: fsync on the same file system)
 *   import  a TERN_TXN_BULK transaction of fresh keys, commit included
 *   batch   cold: tern_get_batch of --lookups random present keys vs the same
 *           keys one tern_get at a time, each after evicting the index; then
 *           warm: the same two on the index kept open, every file cached
 *   buffer  one-document commit + snapshot open + get of that key, with 100
 *           vs 100,000 documents already in the write buffer
 *   delete  tern_delete of a present key in a transaction vs tern_get of the
 *           same key through a snapshot (one-segment index of --docs, warm)
 *   latency each of --commits one-document put + commits timed alone: median,
 *           p99 and maximum vs a bare LMDB put + commit, with flushes and
 *           merges in the background worker and with TERN_FOREGROUND
 *           (inside tern_commit); --buffer sets write_buffer_bytes.  Wall
 *           clock and the committing thread's CPU time (which a shared
 *           machine's other processes do not inflate)
 *   memory  peak memory (RSS of a child process) of one transaction of
 *           --import puts, plain vs TERN_TXN_BULK
 *   incremental  warm present and absent gets on an index of --docs put in
 *           transactions of 1,000 (buffered commits, the merge policy's
 *           segments and the buffer left over) vs the same index compacted
 *
 * Every figure is the median of --runs runs, with the baseline measured in
 * the same run.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/seg_pk.h"

#include "codec/segment.h"
#include "tern.h"

#include <dirent.h>
#include <lmdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct eopts {
  uint64_t docs, lookups, commits, import, runs, buffer;
  const char *parent;
  char phases[128];
} eopts;

#define KEY_LEN 16

static void make_key(uint64_t i, uint8_t *out) {
  static const char hex[] = "0123456789abcdef";
  uint64_t x = bench_mix64(i);
  for (int b = 0; b < KEY_LEN; b++)
    out[b] = (uint8_t)hex[(x >> (60 - 4 * b)) & 0xf];
}

static int check(int rc, const char *what) {
  if (rc != TERN_OK)
    bench_log("engine bench: %s: %s: %s\n", what, tern_strerror(rc), tern_errmsg());
  return rc;
}

/* Bulk-loads keys [from, to) (values of 16 bytes) in one commit. */
static int load(tern_index *idx, uint64_t from, uint64_t to) {
  tern_txn *t;
  if (check(tern_txn_begin(&t, idx, TERN_TXN_BULK), "begin")) return -1;
  uint8_t key[KEY_LEN], val[16];
  for (uint64_t i = from; i < to; i++) {
    make_key(i, key);
    memcpy(val, key, 16);
    if (check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put")) {
      tern_abort(t);
      return -1;
    }
  }
  return check(tern_commit(t), "commit") ? -1 : 0;
}

static tern_index *fresh_index(const char *dir) {
  tern_options o;
  tern_options_init(&o);
  tern_index *idx = NULL;
  return check(tern_open(&idx, dir, TERN_CREATE, &o), "open") ? NULL : idx;
}

/* ns per lookup of `n` keys drawn from [0, space) (+ offset: absent keys). */
static double time_gets(tern_snapshot *s, uint64_t space, uint64_t n, uint64_t offset,
                        uint64_t seed, uint64_t *found) {
  bench_rng r;
  bench_rng_init(&r, seed);
  uint8_t key[KEY_LEN], buf[64];
  size_t vlen;
  *found = 0;
  double t0 = bench_now();
  for (uint64_t i = 0; i < n; i++) {
    make_key(offset + bench_rng_below(&r, space), key);
    *found += tern_get(s, key, KEY_LEN, buf, sizeof buf, &vlen) == TERN_OK;
  }
  return (bench_now() - t0) * 1e9 / (double)n;
}

static double time_seeks(tern_seg *seg, uint64_t space, uint64_t n, uint64_t seed,
                         uint64_t *found) {
  const tern_seg_field *f = tern_seg_unique_field(seg);
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  bench_rng r;
  bench_rng_init(&r, seed);
  uint8_t key[KEY_LEN];
  tern_term_entry e;
  *found = 0;
  double t0 = bench_now();
  for (uint64_t i = 0; i < n; i++) {
    make_key(bench_rng_below(&r, space), key);
    *found += tern_seg_seek_exact(seg, f, key, KEY_LEN, &c, &e) == TERN_OK;
  }
  double ns = (bench_now() - t0) * 1e9 / (double)n;
  tern_seg_cursor_release(&c);
  return ns;
}

/* The codec steps of one engine get, without the engine: filter, seek,
 * doc id, value. */
static double time_codec_path(tern_seg *seg, uint64_t space, uint64_t n, uint64_t seed,
                              uint64_t *found) {
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  bench_rng r;
  bench_rng_init(&r, seed);
  uint8_t key[KEY_LEN], buf[64];
  *found = 0;
  double t0 = bench_now();
  for (uint64_t i = 0; i < n; i++) {
    make_key(bench_rng_below(&r, space), key);
    uint32_t doc;
    tern_slice v;
    if (bench_seg_pk_get(seg, key, KEY_LEN, &c, &doc, &v) == TERN_OK) {
      memcpy(buf, v.data, v.len < sizeof buf ? v.len : sizeof buf);
      (*found)++;
    }
  }
  double ns = (bench_now() - t0) * 1e9 / (double)n;
  tern_seg_cursor_release(&c);
  return ns;
}

/* The name of the one segment in `dir`, found through the codec's file
 * naming, so the benchmark needs no engine internals. */
static int only_segment(const char *dir, char *name, size_t cap) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int found = 0;
  for (struct dirent *e; !found && (e = readdir(d)) != NULL;)
    found = tern_seg_file_segment(e->d_name, name, cap);
  closedir(d);
  if (!found) bench_log("engine bench: no segment in %s", dir);
  return found ? 0 : -1;
}

static int phase_get(const eopts *o) {
  char *dir = bench_mkdtemp(o->parent, "engine-get");
  tern_index *idx = dir ? fresh_index(dir) : NULL;
  if (!idx || load(idx, 0, o->docs) || check(tern_compact(idx), "compact")) return 1;
  tern_stats *st;
  if (check(tern_stats_get(&st, idx), "stats") || st->nsegments != 1) return 1;
  char name[256];
  if (only_segment(dir, name, sizeof name)) return 1;
  tern_stats_free(st);
  tern_seg *seg;
  tern_snapshot *s;
  if (check(tern_seg_open(&seg, dir, name, TERN_IO_MMAP), "seg open") ||
      check(tern_snapshot_open(&s, idx), "snapshot"))
    return 1;
  bench_warm_dir(dir);
  double *eng = calloc(o->runs, sizeof *eng), *bare = calloc(o->runs, sizeof *bare);
  double *ratio = calloc(o->runs, sizeof *ratio), *pk = calloc(o->runs, sizeof *pk);
  double *ratio_pk = calloc(o->runs, sizeof *ratio_pk);
  uint64_t f1 = 0, f2 = 0, f3 = 0;
  for (uint64_t run = 0; run < o->runs; run++) {
    bare[run] = time_seeks(seg, o->docs, o->lookups, run + 1, &f1);
    pk[run] = time_codec_path(seg, o->docs, o->lookups, run + 1, &f3);
    eng[run] = time_gets(s, o->docs, o->lookups, 0, run + 1, &f2);
    ratio[run] = eng[run] / bare[run];
    ratio_pk[run] = eng[run] / pk[run];
  }
  bench_summary be = bench_summarize(eng, o->runs), bb = bench_summarize(bare, o->runs),
                br = bench_summarize(ratio, o->runs), bp = bench_summarize(pk, o->runs),
                brp = bench_summarize(ratio_pk, o->runs);
  printf("get: %llu docs in 1 segment, %llu random present keys per run, %llu runs (warm)\n",
         (unsigned long long)o->docs, (unsigned long long)o->lookups, (unsigned long long)o->runs);
  printf("| path | ns/lookup (median) | min | max |\n|---|---|---|---|\n");
  printf("| tern_seg_seek_exact (bare codec) | %.0f | %.0f | %.0f |\n", bb.median, bb.min, bb.max);
  printf("| tern_seg_pk_find (codec: range, filter, seek, doc id; value) | %.0f | %.0f | %.0f |\n",
         bp.median, bp.min, bp.max);
  printf("| tern_get via snapshot | %.0f | %.0f | %.0f |\n", be.median, be.min, be.max);
  printf("| ratio tern_get / seek_exact | %.2fx | %.2fx | %.2fx |\n", br.median, br.min, br.max);
  printf("| ratio tern_get / tern_seg_pk_find | %.2fx | %.2fx | %.2fx |\n", brp.median, brp.min,
         brp.max);
  printf("(found %llu / %llu in the last run)\n\n", (unsigned long long)f2, (unsigned long long)f1);
  tern_snapshot_close(s);
  tern_seg_close(seg);
  tern_close(idx);
  bench_rmtree(dir);
  free(dir);
  free(eng);
  free(bare);
  free(ratio);
  free(pk);
  free(ratio_pk);
  return 0;
}

/* 20 segments whose sizes sit in three tiers of the merge policy (at most
 * nine per tier, so none merges): 9 x 0.5%, 9 x 5%, 2 x rest/2. */
static int load_twenty(tern_index *idx, uint64_t docs) {
  uint64_t at = 0, small = docs / 200, mid = docs / 20;
  for (int i = 0; i < 9; i++, at += small)
    if (load(idx, at, at + small)) return -1;
  for (int i = 0; i < 9; i++, at += mid)
    if (load(idx, at, at + mid)) return -1;
  uint64_t half = (docs - at) / 2;
  if (load(idx, at, at + half) || load(idx, at + half, docs)) return -1;
  return 0;
}

/* ns of present and absent gets on two indexes, runs alternating between
 * them so that both see the same machine; ratios (index 0 / index 1) per
 * run.  t[w][k]: w 0 present, 1 absent; k the index. */
static int time_pairs(tern_snapshot *s[2], const eopts *o, uint64_t seed, double *t[2][2],
                      double *ratio[2]) {
  for (uint64_t run = 0; run < o->runs; run++)
    for (int w = 0; w < 2; w++) {
      for (int k = 0; k < 2; k++) {
        uint64_t found;
        t[w][k][run] = time_gets(s[k], o->docs, o->lookups, w ? o->docs : 0, run + seed, &found);
        if (found != (w ? 0 : o->lookups)) {
          bench_log("engine bench: %llu of %llu %s keys found\n", (unsigned long long)found,
                    (unsigned long long)o->lookups, w ? "absent" : "present");
          return -1;
        }
      }
      ratio[w][run] = t[w][0][run] / t[w][1][run];
    }
  return 0;
}

static void print_pairs(const eopts *o, double *t[2][2], double *ratio[2]) {
  for (int w = 0; w < 2; w++) {
    bench_summary r = bench_summarize(ratio[w], o->runs);
    printf("| %s | %.0f | %.0f | %.2fx | %.2fx | %.2fx |\n", w ? "absent" : "present",
           bench_summarize(t[w][0], o->runs).median, bench_summarize(t[w][1], o->runs).median,
           r.median, r.min, r.max);
  }
  printf("\n");
}

typedef struct pair_bufs {
  double *t[2][2], *ratio[2];
} pair_bufs;

static void pair_bufs_init(pair_bufs *b, uint64_t runs) {
  for (int w = 0; w < 2; w++) {
    b->ratio[w] = calloc(runs, sizeof *b->ratio[w]);
    for (int k = 0; k < 2; k++)
      b->t[w][k] = calloc(runs, sizeof *b->t[w][k]);
  }
}

static void pair_bufs_free(pair_bufs *b) {
  for (int w = 0; w < 2; w++) {
    free(b->ratio[w]);
    for (int k = 0; k < 2; k++)
      free(b->t[w][k]);
  }
}

typedef struct bench_ix {
  char *dir;
  tern_index *idx;
  tern_snapshot *snap;
  size_t nseg;
  uint64_t buffered;
} bench_ix;

static void bench_ix_close(bench_ix *x) {
  if (x->snap) tern_snapshot_close(x->snap);
  if (x->idx) tern_close(x->idx);
  if (x->dir) bench_rmtree(x->dir);
  free(x->dir);
}

/* Segments and buffered documents of an index, as tern_stats sees them. */
static int index_shape(tern_index *idx, size_t *nseg, uint64_t *buffered) {
  tern_stats *st;
  if (check(tern_stats_get(&st, idx), "stats")) return -1;
  *nseg = st->nsegments;
  *buffered = st->buffered;
  tern_stats_free(st);
  return 0;
}

/* Opens the snapshot of a loaded index (compacted first when asked). */
static int bench_ix_ready(bench_ix *x, int compact) {
  if ((compact && check(tern_compact(x->idx), "compact")) ||
      index_shape(x->idx, &x->nseg, &x->buffered) ||
      check(tern_snapshot_open(&x->snap, x->idx), "snapshot"))
    return -1;
  bench_warm_dir(x->dir);
  return 0;
}

typedef int (*bench_load_fn)(tern_index *idx, const eopts *o);

/* Two indexes loaded alike (the second then compacted), with their
 * snapshots, timed in runs alternating between them. */
static int pair_measure(const eopts *o, const char *name, bench_load_fn loader, uint64_t seed,
                        bench_ix x[2], pair_bufs *b) {
  for (int k = 0; k < 2; k++) {
    x[k].dir = bench_mkdtemp(o->parent, name);
    x[k].idx = x[k].dir ? fresh_index(x[k].dir) : NULL;
    if (!x[k].idx || loader(x[k].idx, o) || bench_ix_ready(&x[k], k)) return -1;
  }
  pair_bufs_init(b, o->runs);
  tern_snapshot *s[2] = {x[0].snap, x[1].snap};
  return time_pairs(s, o, seed, b->t, b->ratio);
}

static void pair_close(bench_ix x[2], pair_bufs *b) {
  pair_bufs_free(b);
  for (int k = 0; k < 2; k++)
    bench_ix_close(&x[k]);
}

static int load_twenty_docs(tern_index *idx, const eopts *o) { return load_twenty(idx, o->docs); }

static int phase_absent(const eopts *o) {
  bench_ix x[2] = {{0}, {0}};
  pair_bufs b;
  if (pair_measure(o, "engine-absent", load_twenty_docs, 7, x, &b)) return 1;
  printf("absent: %llu docs in %zu segments vs the same compacted into %zu, %llu lookups per "
         "run, %llu runs alternating (warm)\n",
         (unsigned long long)o->docs, x[0].nseg, x[1].nseg, (unsigned long long)o->lookups,
         (unsigned long long)o->runs);
  printf("| keys | %zu segments ns/lookup | 1 segment ns/lookup | ratio (median of runs) | min | "
         "max |\n|---|---|---|---|---|---|\n",
         x[0].nseg);
  print_pairs(o, b.t, b.ratio);
  pair_close(x, &b);
  return 0;
}

/* Puts keys [0, docs) in transactions of `per` documents, as an application
 * writing as it goes would (buffered commits; flushes and merges as the
 * policy decides). */
static int load_incremental(tern_index *idx, uint64_t docs, uint64_t per) {
  uint8_t key[KEY_LEN], val[16];
  for (uint64_t at = 0; at < docs; at += per) {
    tern_txn *t;
    if (check(tern_txn_begin(&t, idx, 0), "begin")) return -1;
    for (uint64_t i = at; i < at + per && i < docs; i++) {
      make_key(i, key);
      memcpy(val, key, 16);
      if (check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put")) {
        tern_abort(t);
        return -1;
      }
    }
    int rc = tern_commit(t);
    if (rc != TERN_OK && rc != TERN_EPARTIAL) return check(rc, "commit");
  }
  return 0;
}

#define INCREMENTAL_TXN 1000u /* documents per transaction */

static int load_incremental_docs(tern_index *idx, const eopts *o) {
  return load_incremental(idx, o->docs, INCREMENTAL_TXN);
}

static int phase_incremental(const eopts *o) {
  bench_ix x[2] = {{0}, {0}};
  pair_bufs b;
  double t0 = bench_now();
  if (pair_measure(o, "engine-incremental", load_incremental_docs, 11, x, &b)) return 1;
  printf("incremental: %llu docs put in transactions of %u, twice, the second index then "
         "compacted; %llu lookups per run, %llu runs alternating (warm; %.1f s in all)\n",
         (unsigned long long)o->docs, INCREMENTAL_TXN, (unsigned long long)o->lookups,
         (unsigned long long)o->runs, bench_now() - t0);
  printf("| keys | incremental: %zu segments + %llu buffered, ns/lookup | compacted: %zu segment, "
         "ns/lookup | ratio (median of runs) | min | max |\n|---|---|---|---|---|---|\n",
         x[0].nseg, (unsigned long long)x[0].buffered, x[1].nseg);
  print_pairs(o, b.t, b.ratio);
  pair_close(x, &b);
  return 0;
}

static double lmdb_commits(const char *dir, uint64_t n) {
  char path[4096];
  bench_path(path, sizeof path, dir, "bare.mdb");
  MDB_env *env;
  MDB_txn *t;
  MDB_dbi dbi;
  if (mdb_env_create(&env) || mdb_env_set_mapsize(env, 1u << 30) ||
      mdb_env_open(env, path, MDB_NOSUBDIR, 0666))
    return -1;
  uint8_t key[KEY_LEN], val[16] = {0};
  double t0 = bench_now();
  for (uint64_t i = 0; i < n; i++) {
    make_key(i, key);
    if (mdb_txn_begin(env, NULL, 0, &t)) return -1;
    if (i == 0) mdb_dbi_open(t, NULL, 0, &dbi);
    MDB_val k = {KEY_LEN, key}, v = {sizeof val, val};
    if (mdb_put(t, dbi, &k, &v, 0) || mdb_txn_commit(t)) return -1;
  }
  double rate = (double)n / (bench_now() - t0);
  mdb_env_close(env);
  return rate;
}

static double tern_commits(const char *dir, uint64_t n) {
  tern_index *idx = fresh_index(dir);
  if (!idx) return -1;
  uint8_t key[KEY_LEN], val[16] = {0};
  double t0 = bench_now();
  for (uint64_t i = 0; i < n; i++) {
    tern_txn *t;
    make_key(i, key);
    if (check(tern_txn_begin(&t, idx, 0), "begin") ||
        check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put") ||
        check(tern_commit(t), "commit"))
      return -1;
  }
  double rate = (double)n / (bench_now() - t0);
  tern_close(idx);
  return rate;
}

static int phase_commit(const eopts *o) {
  double *tr = calloc(o->runs, sizeof *tr), *lr = calloc(o->runs, sizeof *lr);
  double *ratio = calloc(o->runs, sizeof *ratio);
  for (uint64_t run = 0; run < o->runs; run++) {
    char *d1 = bench_mkdtemp(o->parent, "engine-lmdb"),
         *d2 = bench_mkdtemp(o->parent, "engine-commit");
    if (!d1 || !d2) return 1;
    lr[run] = lmdb_commits(d1, o->commits);
    tr[run] = tern_commits(d2, o->commits);
    if (lr[run] <= 0 || tr[run] <= 0) return 1;
    ratio[run] = tr[run] / lr[run];
    bench_rmtree(d1);
    bench_rmtree(d2);
    free(d1);
    free(d2);
  }
  bench_summary bt = bench_summarize(tr, o->runs), bl = bench_summarize(lr, o->runs),
                br = bench_summarize(ratio, o->runs);
  printf("commit: %llu one-document commits per run on %s, %llu runs\n",
         (unsigned long long)o->commits, bench_fs_name(o->parent), (unsigned long long)o->runs);
  printf("| path | commits/s (median) | min | max |\n|---|---|---|---|\n");
  printf("| bare LMDB put + commit | %.0f | %.0f | %.0f |\n", bl.median, bl.min, bl.max);
  printf("| tern put + commit | %.0f | %.0f | %.0f |\n", bt.median, bt.min, bt.max);
  printf("| ratio tern / LMDB | %.2fx | %.2fx | %.2fx |\n\n", br.median, br.min, br.max);
  free(tr);
  free(lr);
  free(ratio);
  return 0;
}

static int phase_import(const eopts *o) {
  double *rate = calloc(o->runs, sizeof *rate), *commit_s = calloc(o->runs, sizeof *commit_s);
  for (uint64_t run = 0; run < o->runs; run++) {
    char *dir = bench_mkdtemp(o->parent, "engine-import");
    tern_index *idx = dir ? fresh_index(dir) : NULL;
    if (!idx) return 1;
    tern_txn *t;
    uint8_t key[KEY_LEN], val[16];
    double t0 = bench_now();
    if (check(tern_txn_begin(&t, idx, TERN_TXN_BULK), "begin")) return 1;
    for (uint64_t i = 0; i < o->import; i++) {
      make_key(i, key);
      memcpy(val, key, 16);
      if (check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put")) return 1;
    }
    double t1 = bench_now();
    if (check(tern_commit(t), "commit")) return 1;
    double t2 = bench_now();
    rate[run] = (double)o->import / (t2 - t0);
    commit_s[run] = t2 - t1;
    tern_close(idx);
    bench_rmtree(dir);
    free(dir);
  }
  bench_summary br = bench_summarize(rate, o->runs), bc = bench_summarize(commit_s, o->runs);
  printf(
      "import: %llu fresh random 16-byte keys, 16-byte values, one TERN_TXN_BULK commit, on %s\n",
      (unsigned long long)o->import, bench_fs_name(o->parent));
  printf("| docs/s end to end (median) | min | max | of which commit, s |\n|---|---|---|---|\n");
  printf("| %.0f | %.0f | %.0f | %.2f |\n\n", br.median, br.min, br.max, bc.median);
  free(rate);
  free(commit_s);
  return 0;
}

/* One transaction of o->import fresh puts in a child process: its peak
 * RSS in KiB (the parent's memory is not counted), 0 on failure. */
static long txn_peak_kib(const eopts *o, unsigned flags) {
  pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    char *dir = bench_mkdtemp(o->parent, "engine-memory");
    tern_index *idx = dir ? fresh_index(dir) : NULL;
    tern_txn *t;
    if (!idx || check(tern_txn_begin(&t, idx, flags), "begin")) _exit(1);
    uint8_t key[KEY_LEN], val[16];
    for (uint64_t i = 0; i < o->import; i++) {
      make_key(i, key);
      memcpy(val, key, 16);
      if (check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put")) _exit(1);
    }
    int rc = check(tern_commit(t), "commit");
    tern_close(idx);
    bench_rmtree(dir);
    _exit(rc ? 1 : 0);
  }
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return 0;
  return ru.ru_maxrss;
}

static int phase_memory(const eopts *o) {
  double *plain = calloc(o->runs, sizeof *plain), *bulk = calloc(o->runs, sizeof *bulk);
  for (uint64_t run = 0; run < o->runs; run++) {
    long p = txn_peak_kib(o, 0), b = txn_peak_kib(o, TERN_TXN_BULK);
    if (!p || !b) return 1;
    plain[run] = (double)p / 1024.0;
    bulk[run] = (double)b / 1024.0;
  }
  bench_summary bp = bench_summarize(plain, o->runs), bb = bench_summarize(bulk, o->runs);
  printf("memory: peak RSS of one transaction of %llu puts (16-byte keys and values), "
         "child processes\n",
         (unsigned long long)o->import);
  printf("| plain MiB | TERN_TXN_BULK MiB | ratio |\n|---|---|---|\n");
  printf("| %.1f | %.1f | %.2fx |\n\n", bp.median, bb.median, bp.median / bb.median);
  free(plain);
  free(bulk);
  return 0;
}

static int count_found(void *payload, size_t i, int status, const void *val, size_t vlen) {
  (void)i;
  (void)val;
  (void)vlen;
  *(uint64_t *)payload += status == TERN_OK;
  return 0;
}

/* One pass over `keys` on a snapshot, one by one or as one batch: seconds
 * per lookup.  Sets *found. */
static int pass(tern_snapshot *s, const tern_slice *keys, size_t n, int batch, double *sec,
                uint64_t *found) {
  uint8_t buf[64];
  size_t vlen;
  *found = 0;
  double t0 = bench_now();
  int rc = TERN_OK;
  if (batch)
    rc = tern_get_batch(s, keys, n, count_found, found);
  else
    for (size_t i = 0; i < n; i++)
      *found += tern_get(s, keys[i].data, keys[i].len, buf, sizeof buf, &vlen) == TERN_OK;
  *sec = (bench_now() - t0) / (double)n;
  return check(rc, "get_batch") ? -1 : 0;
}

/* One cold pass: evict the index, open it fresh, look the keys up.  Sets
 * µs per lookup and the I/O it caused. */
static int cold_pass(const char *dir, const tern_slice *keys, size_t n, int batch, double *us,
                     bench_io *io, uint64_t *found) {
  uint64_t resident;
  if (bench_evict_dir(dir, BENCH_EVICT_FADVISE, &resident) != 0) return -1;
  tern_index *idx;
  tern_snapshot *s;
  if (check(tern_open(&idx, dir, TERN_RDONLY, NULL), "open")) return -1;
  if (check(tern_snapshot_open(&s, idx), "snapshot")) {
    tern_close(idx);
    return -1;
  }
  bench_io a, b;
  bench_io_take(&a);
  int rc = pass(s, keys, n, batch, us, found);
  *us *= 1e6;
  bench_io_take(&b);
  bench_io_diff(&a, &b, io);
  tern_snapshot_close(s);
  tern_close(idx);
  return rc;
}

/* Issue 13: the batch path no slower than single gets when warm.  The
 * index stays open; after an untimed pass, runs alternate which mode goes
 * first.  Fills ns[mode][run]. */
static int batch_warm_runs(const char *dir, const tern_slice *keys, size_t n, uint64_t runs,
                           double *ns[2]) {
  tern_index *idx;
  tern_snapshot *s = NULL;
  if (bench_warm_dir(dir) != 0 || check(tern_open(&idx, dir, TERN_RDONLY, NULL), "open"))
    return -1;
  int rc = check(tern_snapshot_open(&s, idx), "snapshot") ? -1 : 0;
  uint64_t found;
  double scratch;
  if (!rc) rc = pass(s, keys, n, 0, &scratch, &found);
  for (uint64_t run = 0; run < runs && !rc; run++)
    for (int k = 0; k < 2 && !rc; k++) {
      int m = (int)((k + run) % 2);
      rc = pass(s, keys, n, m, &ns[m][run], &found);
      ns[m][run] *= 1e9;
      if (!rc && found != n) {
        bench_log("engine bench: batch (warm): found %llu of %zu keys", (unsigned long long)found,
                  n);
        rc = -1;
      }
    }
  if (s) tern_snapshot_close(s);
  tern_close(idx);
  return rc;
}

static void print_batch_warm(const eopts *o, size_t n, double *ns[2]) {
  printf("batch: %llu docs, %zu random present keys, warm (index open, every file cached), "
         "%llu runs\n",
         (unsigned long long)o->docs, n, (unsigned long long)o->runs);
  printf("| path | ns/lookup (median) | min | max | batch / one by one, per run (median) |\n"
         "|---|---|---|---|---|\n");
  double *ratio = calloc(o->runs, sizeof *ratio);
  for (uint64_t r = 0; ratio && r < o->runs; r++) ratio[r] = ns[1][r] / ns[0][r];
  bench_summary t0 = bench_summarize(ns[0], o->runs), t1 = bench_summarize(ns[1], o->runs);
  printf("| tern_get, one key at a time | %.1f | %.1f | %.1f | |\n", t0.median, t0.min, t0.max);
  if (ratio) {
    bench_summary q = bench_summarize(ratio, o->runs);
    printf("| tern_get_batch | %.1f | %.1f | %.1f | %.3f (%.3f .. %.3f) |\n\n", t1.median, t1.min,
           t1.max, q.median, q.min, q.max);
  }
  free(ratio);
}

static int phase_batch(const eopts *o) {
  char *dir = bench_mkdtemp(o->parent, "engine-batch");
  tern_index *idx = dir ? fresh_index(dir) : NULL;
  if (!idx || load(idx, 0, o->docs) || check(tern_close(idx), "close")) return 1;
  size_t n = (size_t)o->lookups;
  uint8_t *kb = malloc(n * KEY_LEN);
  tern_slice *keys = malloc(n * sizeof *keys);
  double *us[2], *reads[2], *kib[2];
  for (int m = 0; m < 2; m++) {
    us[m] = calloc(o->runs, sizeof(double));
    reads[m] = calloc(o->runs, sizeof(double));
    kib[m] = calloc(o->runs, sizeof(double));
  }
  bench_rng r;
  bench_rng_init(&r, 42);
  for (size_t i = 0; i < n; i++) {
    make_key(bench_rng_below(&r, o->docs), kb + i * KEY_LEN);
    keys[i] = (tern_slice){kb + i * KEY_LEN, KEY_LEN};
  }
  int rc = 0;
  for (uint64_t run = 0; run < o->runs && !rc; run++)
    for (int k = 0; k < 2 && !rc; k++) {
      int m = (int)((k + run) % 2); /* alternate which mode goes first */
      bench_io io;
      uint64_t found;
      rc = cold_pass(dir, keys, n, m, &us[m][run], &io, &found);
      if (!rc && found != n) {
        bench_log("engine bench: batch: found %llu of %zu keys", (unsigned long long)found, n);
        rc = 1;
      }
      reads[m][run] = (double)io.tern_reads / (double)n;
      kib[m][run] = (double)io.read_bytes / 1024.0 / (double)n;
    }
  if (!rc) {
    printf("batch: %llu docs, %zu random present keys, cold (evicted, fresh open), %llu runs\n",
           (unsigned long long)o->docs, n, (unsigned long long)o->runs);
    printf("| path | µs/lookup (median) | min | max | reads/lookup | KiB read/lookup |\n"
           "|---|---|---|---|---|---|\n");
    static const char *const names[2] = {"tern_get, one key at a time", "tern_get_batch"};
    for (int m = 0; m < 2; m++) {
      bench_summary t = bench_summarize(us[m], o->runs), rd = bench_summarize(reads[m], o->runs),
                    kb2 = bench_summarize(kib[m], o->runs);
      printf("| %s | %.1f | %.1f | %.1f | %.3f | %.2f |\n", names[m], t.median, t.min, t.max,
             rd.median, kb2.median);
    }
    printf("\n");
  }
  double *ns[2] = {calloc(o->runs, sizeof(double)), calloc(o->runs, sizeof(double))};
  if (!rc) rc = ns[0] && ns[1] ? batch_warm_runs(dir, keys, n, o->runs, ns) : 1;
  if (!rc) print_batch_warm(o, n, ns);
  free(ns[0]);
  free(ns[1]);
  for (int m = 0; m < 2; m++) {
    free(us[m]);
    free(reads[m]);
    free(kib[m]);
  }
  free(keys);
  free(kb);
  bench_rmtree(dir);
  free(dir);
  return rc;
}

/* Fills the write buffer of a fresh index with `n` docs (one plain commit). */
static tern_index *buffered_index(const char *dir, uint64_t n) {
  tern_options opt;
  tern_options_init(&opt);
  opt.write_buffer_bytes = 1ull << 34; /* never flushed here */
  tern_index *idx = NULL;
  if (check(tern_open(&idx, dir, TERN_CREATE, &opt), "open")) return NULL;
  tern_txn *t;
  uint8_t key[KEY_LEN], val[16] = {0};
  int rc = check(tern_txn_begin(&t, idx, 0), "begin");
  for (uint64_t i = 0; !rc && i < n; i++) {
    make_key(i, key);
    rc = check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put");
  }
  if (!rc) rc = check(tern_commit(t), "commit");
  else tern_abort(t);
  if (rc) {
    tern_close(idx);
    return NULL;
  }
  return idx;
}

/* µs per (put + commit of key i, snapshot open, get of key i, close). */
static double time_commit_snapshot(tern_index *idx, uint64_t from, uint64_t n) {
  uint8_t key[KEY_LEN], val[16] = {0}, out[16];
  double t0 = bench_now();
  for (uint64_t i = from; i < from + n; i++) {
    tern_txn *t;
    tern_snapshot *s;
    size_t vlen;
    make_key(i, key);
    if (check(tern_txn_begin(&t, idx, 0), "begin") ||
        check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put") ||
        check(tern_commit(t), "commit") || check(tern_snapshot_open(&s, idx), "snapshot") ||
        check(tern_get(s, key, KEY_LEN, out, sizeof out, &vlen), "get"))
      return -1;
    tern_snapshot_close(s);
  }
  return (bench_now() - t0) * 1e6 / (double)n;
}

static int phase_buffer(const eopts *o) {
  static const uint64_t sizes[2] = {100, 100000};
  double *us[2], *ratio = calloc(o->runs, sizeof *ratio);
  for (int k = 0; k < 2; k++)
    us[k] = calloc(o->runs, sizeof *us[k]);
  uint64_t n = o->commits;
  for (uint64_t run = 0; run < o->runs; run++) {
    for (int k = 0; k < 2; k++) {
      char *dir = bench_mkdtemp(o->parent, "engine-buffer");
      tern_index *idx = dir ? buffered_index(dir, sizes[k]) : NULL;
      if (!idx) return 1;
      time_commit_snapshot(idx, sizes[k], 10); /* the first snapshot reads the catalog */
      us[k][run] = time_commit_snapshot(idx, sizes[k] + 10, n);
      tern_close(idx);
      bench_rmtree(dir);
      free(dir);
      if (us[k][run] < 0) return 1;
    }
    ratio[run] = us[1][run] / us[0][run];
  }
  bench_summary b0 = bench_summarize(us[0], o->runs), b1 = bench_summarize(us[1], o->runs),
                br = bench_summarize(ratio, o->runs);
  printf("buffer: %llu x (put + commit + snapshot open + get + close) per run on %s, %llu runs\n",
         (unsigned long long)n, bench_fs_name(o->parent), (unsigned long long)o->runs);
  printf("| documents buffered | µs per round (median) | min | max |\n|---|---|---|---|\n");
  printf("| 100 | %.2f | %.2f | %.2f |\n", b0.median, b0.min, b0.max);
  printf("| 100,000 | %.2f | %.2f | %.2f |\n", b1.median, b1.min, b1.max);
  printf("| ratio 100,000 / 100 | %.2fx | %.2fx | %.2fx |\n\n", br.median, br.min, br.max);
  free(us[0]);
  free(us[1]);
  free(ratio);
  return 0;
}

/* ns per tern_delete of n present keys (from a random start), then aborted. */
static double time_deletes(tern_index *idx, uint64_t space, uint64_t n, uint64_t seed) {
  tern_txn *t;
  if (check(tern_txn_begin(&t, idx, 0), "begin")) return -1;
  uint8_t key[KEY_LEN];
  double t0 = bench_now();
  for (uint64_t i = 0; i < n; i++) {
    make_key((seed + i * 7919) % space, key);
    if (check(tern_delete(t, key, KEY_LEN), "delete")) {
      tern_abort(t);
      return -1;
    }
  }
  double ns = (bench_now() - t0) * 1e9 / (double)n;
  tern_abort(t);
  return ns;
}

/* ns per tern_get of the same keys time_deletes deletes. */
static double time_same_gets(tern_index *idx, uint64_t space, uint64_t n, uint64_t seed) {
  tern_snapshot *s;
  if (check(tern_snapshot_open(&s, idx), "snapshot")) return -1;
  uint8_t key[KEY_LEN], out[16];
  size_t vlen;
  double t0 = bench_now();
  for (uint64_t i = 0; i < n; i++) {
    make_key((seed + i * 7919) % space, key);
    if (check(tern_get(s, key, KEY_LEN, out, sizeof out, &vlen), "get")) {
      tern_snapshot_close(s);
      return -1;
    }
  }
  double ns = (bench_now() - t0) * 1e9 / (double)n;
  tern_snapshot_close(s);
  return ns;
}

static int phase_delete(const eopts *o) {
  char *dir = bench_mkdtemp(o->parent, "engine-delete");
  tern_index *idx = dir ? fresh_index(dir) : NULL;
  if (!idx || load(idx, 0, o->docs)) return 1;
  double *del = calloc(o->runs, sizeof *del), *get = calloc(o->runs, sizeof *get);
  double *ratio = calloc(o->runs, sizeof *ratio);
  uint64_t n = o->lookups < o->docs / 8 ? o->lookups : o->docs / 8; /* distinct keys */
  time_same_gets(idx, o->docs, n, 1); /* warm the cache */
  for (uint64_t run = 0; run < o->runs; run++) {
    get[run] = time_same_gets(idx, o->docs, n, run * 104729);
    del[run] = time_deletes(idx, o->docs, n, run * 104729);
    if (get[run] <= 0 || del[run] <= 0) return 1;
    ratio[run] = del[run] / get[run];
  }
  tern_close(idx);
  bench_rmtree(dir);
  free(dir);
  bench_summary bd = bench_summarize(del, o->runs), bg = bench_summarize(get, o->runs),
                br = bench_summarize(ratio, o->runs);
  printf("delete: %llu keys per run of a one-segment index of %llu docs (warm), %llu runs\n",
         (unsigned long long)n, (unsigned long long)o->docs, (unsigned long long)o->runs);
  printf("| operation | ns (median) | min | max |\n|---|---|---|---|\n");
  printf("| tern_get (snapshot) | %.0f | %.0f | %.0f |\n", bg.median, bg.min, bg.max);
  printf("| tern_delete (transaction) | %.0f | %.0f | %.0f |\n", bd.median, bd.min, bd.max);
  printf("| ratio delete / get | %.2fx | %.2fx | %.2fx |\n\n", br.median, br.min, br.max);
  free(del);
  free(get);
  free(ratio);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

enum lat_path { LAT_BARE, LAT_TERN, LAT_FOREGROUND, LAT_NPATHS };
static const char *const lat_name[LAT_NPATHS] = {
    "bare LMDB put + commit", "tern put + commit (background worker)",
    "tern put + commit (TERN_FOREGROUND)"};

/* The calling thread's CPU time in seconds: what a commit made this thread
 * do, without the time other processes of a shared machine took from it. */
static double thread_cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sorted µs of each of n one-document commits on one path: wall clock in
 * us[0..n), the committing thread's CPU time in us[n..2n); *segments: the
 * segments tern's index has at the end (flushes and merges happened). */
static double *commit_latencies(const char *dir, uint64_t n, enum lat_path path,
                                uint64_t buffer, size_t *segments) {
  double *us = malloc(2 * n * sizeof *us);
  MDB_env *env = NULL;
  MDB_dbi dbi = 0;
  tern_index *idx = NULL;
  char path_s[4096];
  bench_path(path_s, sizeof path_s, dir, "bare.mdb");
  tern_options to;
  tern_options_init(&to);
  if (buffer) to.write_buffer_bytes = buffer;
  int bare = path == LAT_BARE;
  unsigned flags = TERN_CREATE | (path == LAT_FOREGROUND ? TERN_FOREGROUND : 0);
  if (!us || (bare ? mdb_env_create(&env) || mdb_env_set_mapsize(env, 1u << 30) ||
                         mdb_env_open(env, path_s, MDB_NOSUBDIR, 0666)
                   : check(tern_open(&idx, dir, flags, &to), "open"))) {
    free(us);
    return NULL;
  }
  uint8_t key[KEY_LEN], val[16] = {0};
  int bad = 0;
  for (uint64_t i = 0; i < n && !bad; i++) {
    make_key(i, key);
    double t0 = bench_now(), c0 = thread_cpu_now();
    if (bare) {
      MDB_txn *t;
      bad = mdb_txn_begin(env, NULL, 0, &t) != 0;
      if (!bad && i == 0) mdb_dbi_open(t, NULL, 0, &dbi);
      MDB_val k = {KEY_LEN, key}, v = {sizeof val, val};
      bad = bad || mdb_put(t, dbi, &k, &v, 0) || mdb_txn_commit(t);
    } else {
      tern_txn *t;
      bad = check(tern_txn_begin(&t, idx, 0), "begin") ||
            check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put") ||
            check(tern_commit(t), "commit");
    }
    us[i] = (bench_now() - t0) * 1e6;
    us[n + i] = (thread_cpu_now() - c0) * 1e6;
  }
  *segments = 0;
  if (bare) {
    mdb_env_close(env);
  } else {
    tern_stats *st;
    bad = bad || check(tern_flush(idx), "flush") || check(tern_stats_get(&st, idx), "stats");
    if (!bad) {
      *segments = st->nsegments;
      tern_stats_free(st);
    }
    tern_close(idx);
  }
  if (bad) {
    free(us);
    return NULL;
  }
  qsort(us, n, sizeof *us, cmp_double);
  qsort(us + n, n, sizeof *us, cmp_double);
  return us;
}

/* Each run times the three paths in turn (same machine state, same run);
 * every figure is the median over runs, ratios the median of per-run ratios. */
static int phase_latency(const eopts *o) {
  uint64_t n = o->commits, runs = o->runs;
  /* [path][stat][run]; stats: wall median, p99, max, then CPU median, p99, max */
  double *fig = calloc(LAT_NPATHS * 6 * runs, sizeof *fig);
  double *ratio = calloc(LAT_NPATHS * 6 * runs, sizeof *ratio);
  size_t segments[LAT_NPATHS] = {0};
  if (!fig || !ratio) return 1;
  for (uint64_t run = 0; run < runs; run++)
    for (int p = 0; p < LAT_NPATHS; p++) {
      char *dir = bench_mkdtemp(o->parent, "engine-latency");
      double *us = dir ? commit_latencies(dir, n, (enum lat_path)p, o->buffer, &segments[p]) : NULL;
      if (!us) return 1;
      size_t at[3] = {n / 2, (size_t)((double)(n - 1) * 0.99), n - 1};
      for (int k = 0; k < 6; k++) {
        double v = us[(k >= 3 ? n : 0) + at[k % 3]];
        fig[(p * 6 + k) * runs + run] = v;
        ratio[(p * 6 + k) * runs + run] = v / fig[k * runs + run];
      }
      free(us);
      bench_rmtree(dir);
      free(dir);
    }
  printf("latency: %llu one-document commits on %s, each timed alone; write_buffer_bytes %llu; "
         "medians of %llu runs\n",
         (unsigned long long)n, bench_fs_name(o->parent),
         (unsigned long long)(o->buffer ? o->buffer : 8u << 20), (unsigned long long)runs);
  printf("| path | median µs | p99 µs | max µs | CPU median µs | CPU p99 µs | CPU max µs | "
         "segments at the end |\n|---|---|---|---|---|---|---|---|\n");
  for (int p = 0; p < LAT_NPATHS; p++) {
    double m[6];
    for (int k = 0; k < 6; k++)
      m[k] = bench_summarize(&fig[(p * 6 + k) * runs], runs).median;
    printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %zu |\n", lat_name[p], m[0], m[1],
           m[2], m[3], m[4], m[5], segments[p]);
  }
  for (int p = 1; p < LAT_NPATHS; p++) {
    double m[6];
    for (int k = 0; k < 6; k++)
      m[k] = bench_summarize(&ratio[(p * 6 + k) * runs], runs).median;
    printf("| ratio %s / LMDB | %.2fx | %.2fx | %.2fx | %.2fx | %.2fx | %.2fx | |\n",
           p == LAT_TERN ? "background" : "foreground", m[0], m[1], m[2], m[3], m[4], m[5]);
  }
  printf("\n");
  free(fig);
  free(ratio);
  return 0;
}

void tern_bench_engine_usage(FILE *out) {
  fprintf(out,
          "tern-bench engine [options]\n"
          "  --phases LIST   get,absent,commit,import,batch,buffer,delete,latency,memory,\n"
          "                  incremental\n"
          "                  (default get,absent,commit,import)\n"
          "  --docs N        docs of the get/absent indexes (default 1M)\n"
          "  --lookups N     lookups per run (default 200k)\n"
          "  --commits N     one-document commits per run (default 300)\n"
          "  --buffer BYTES  write_buffer_bytes of the latency phase's indexes (default 8 MiB)\n"
          "  --import N      keys of the bulk import and of the memory phase (default 2M)\n"
          "  --runs N        runs; figures are medians (default 5)\n"
          "  --dir PATH      where scratch indexes go (default /tmp; fsync cost depends on it)\n");
}

int tern_bench_engine(int argc, char **argv) {
  eopts o = {1000000, 200000, 300, 2000000, 5, 0, "/tmp", "get,absent,commit,import"};
  /* Options come in pairs: NAME VALUE. */
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      tern_bench_engine_usage(stdout);
      return 0;
    } else if (!v) {
      bad = 1;
    } else if (!strcmp(a, "--docs")) {
      bad = bench_parse_u64(v, &o.docs);
    } else if (!strcmp(a, "--lookups")) {
      bad = bench_parse_u64(v, &o.lookups);
    } else if (!strcmp(a, "--commits")) {
      bad = bench_parse_u64(v, &o.commits);
    } else if (!strcmp(a, "--import")) {
      bad = bench_parse_u64(v, &o.import);
    } else if (!strcmp(a, "--buffer")) {
      bad = bench_parse_u64(v, &o.buffer);
    } else if (!strcmp(a, "--runs")) {
      bad = bench_parse_u64(v, &o.runs);
    } else if (!strcmp(a, "--dir")) {
      o.parent = v;
    } else if (!strcmp(a, "--phases")) {
      snprintf(o.phases, sizeof o.phases, "%s", v);
    } else {
      bad = 1;
    }
    if (bad || o.runs == 0 || o.docs < 1000 || o.lookups == 0) {
      fprintf(stderr, "tern-bench engine: bad option %s\n", a);
      tern_bench_engine_usage(stderr);
      return 2;
    }
  }
  char machine[256];
  bench_machine(machine, sizeof machine);
  printf("tern-bench engine on %s; scratch in %s (%s)\n\n", machine, o.parent,
         bench_fs_name(o.parent));
  int rc = 0;
  if (!rc && strstr(o.phases, "get")) rc = phase_get(&o);
  if (!rc && strstr(o.phases, "absent")) rc = phase_absent(&o);
  if (!rc && strstr(o.phases, "commit")) rc = phase_commit(&o);
  if (!rc && strstr(o.phases, "import")) rc = phase_import(&o);
  if (!rc && strstr(o.phases, "batch")) rc = phase_batch(&o);
  if (!rc && strstr(o.phases, "buffer")) rc = phase_buffer(&o);
  if (!rc && strstr(o.phases, "delete")) rc = phase_delete(&o);
  if (!rc && strstr(o.phases, "latency")) rc = phase_latency(&o);
  if (!rc && strstr(o.phases, "memory")) rc = phase_memory(&o);
  if (!rc && strstr(o.phases, "incremental")) rc = phase_incremental(&o);
  return rc;
}
