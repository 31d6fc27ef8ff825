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
 *           (inside tern_commit), and LMDB alone doing tern's catalog
 *           writes (its share), the four alternating in blocks of 500
 *           commits; --buffer sets write_buffer_bytes.  Wall
 *           clock and the committing thread's CPU time (which a shared
 *           machine's other processes do not inflate)
 *   memory  peak memory (RSS of a child process) of one transaction of
 *           --import puts, plain vs TERN_TXN_BULK; and the memory a reader's
 *           view of a write buffer of 200,000 documents takes a document
 *   incremental  warm present and absent gets on an index of --docs put in
 *           transactions of 1,000 (buffered commits, the merge policy's
 *           segments and the buffer left over) vs the same index compacted
 *
 * Every figure is the median of --runs runs, with the baseline measured in
 * the same run.
 */
#include "tools/bench/bench.h"
#include "tools/bench/engine.h"
#include "tools/bench/harness.h"
#include "tools/bench/opts.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/seg_pk.h"

#include "codec/segment.h"
#include "tern.h"

#include <dirent.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void make_key(uint64_t i, uint8_t *out) {
  static const char hex[] = "0123456789abcdef";
  uint64_t x = bench_mix64(i);
  for (int b = 0; b < KEY_LEN; b++)
    out[b] = (uint8_t)hex[(x >> (60 - 4 * b)) & 0xf];
}

int engine_check(int rc, const char *what) {
  if (rc != TERN_OK)
    bench_log("engine bench: %s: %s: %s\n", what, tern_strerror(rc), tern_errmsg());
  return rc;
}

/* Bulk-loads keys [from, to) (values of 16 bytes) in one commit. */
int engine_load(tern_index *idx, uint64_t from, uint64_t to) {
  tern_txn *t;
  if (engine_check(tern_txn_begin(&t, idx, TERN_TXN_BULK), "begin")) return -1;
  uint8_t key[KEY_LEN], val[16];
  for (uint64_t i = from; i < to; i++) {
    make_key(i, key);
    memcpy(val, key, 16);
    if (engine_check(tern_put(t, key, KEY_LEN, val, sizeof val, NULL, 0), "put")) {
      tern_abort(t);
      return -1;
    }
  }
  return engine_check(tern_commit(t), "commit") ? -1 : 0;
}

tern_index *fresh_index(const char *dir) {
  tern_options o;
  tern_options_init(&o);
  tern_index *idx = NULL;
  return engine_check(tern_open(&idx, dir, TERN_CREATE, &o), "open") ? NULL : idx;
}

/* ns per lookup of `n` keys drawn from [0, space) (+ offset: absent keys). */
double time_gets(tern_snapshot *s, uint64_t space, uint64_t n, uint64_t offset, uint64_t seed,
                 uint64_t *found) {
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

int engine_two_way(const eopts *o, double (*fn)(void *, size_t, size_t, size_t), void *ctx,
                   const char *title, const char *head, const char *const labels[3],
                   const char *fmt) {
  bench_rounds r = {.contenders = 2, .measures = 1, .rounds = (size_t)o->runs};
  int rc = bench_rounds_run(&r, fn, NULL, ctx);
  if (rc == 0) {
    printf("%s\n%s\n", title, head);
    bench_rounds_row(&r, labels[0], 0, 0, fmt);
    bench_rounds_row(&r, labels[1], 1, 0, fmt);
    bench_rounds_ratio_row(&r, labels[2], 0, 1, 0);
    printf("\n");
  }
  bench_rounds_free(&r);
  return rc ? 1 : 0;
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
  if (!idx || engine_load(idx, 0, o->docs) || engine_check(tern_compact(idx), "compact")) return 1;
  tern_stats *st;
  if (engine_check(tern_stats_get(&st, idx), "stats") || st->nsegments != 1) return 1;
  char name[256];
  if (only_segment(dir, name, sizeof name)) return 1;
  tern_stats_free(st);
  tern_seg *seg;
  tern_snapshot *s;
  if (engine_check(tern_seg_open(&seg, dir, name, TERN_IO_MMAP), "seg open") ||
      engine_check(tern_snapshot_open(&s, idx), "snapshot"))
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

/* The phases in the order they run; --phases selects them by name. */
#define PHASE_WORDS                                                                                \
  "get|absent|commit|import|batch|buffer|delete|latency|memory|incremental|concurrent|erase"
static int (*const k_phases[])(const eopts *) = {
    phase_get,    phase_absent, phase_commit,  phase_import, phase_batch,
    phase_buffer, phase_delete, phase_latency, phase_memory, phase_incremental, phase_concurrent,
    phase_erase};

#define ENGINE_OPT(field) offsetof(eopts, field)
static const bench_opt k_engine_opts[] = {
    BENCH_SET("phases", ENGINE_OPT(phases), "LIST", PHASE_WORDS, "get,absent,commit,import",
              "get,absent,commit,import,batch,buffer,delete,latency,memory,\n"
              "incremental,concurrent,erase"),
    BENCH_U64("docs", ENGINE_OPT(docs), "N", "1M", 1000, 0, "docs of the get/absent indexes"),
    BENCH_U64("lookups", ENGINE_OPT(lookups), "N", "200k", 1, 0, "lookups per run"),
    BENCH_U64("commits", ENGINE_OPT(commits), "N", "300", 1, 0, "one-document commits per run"),
    BENCH_U64("buffer", ENGINE_OPT(buffer), "BYTES", NULL, 0, 0,
              "write_buffer_bytes of the latency phase's indexes (default 8 MiB)"),
    BENCH_U64("import", ENGINE_OPT(import), "N", "2M", 0, 0,
              "keys of the bulk import and of the memory phase"),
    BENCH_U64("runs", ENGINE_OPT(runs), "N", "5", 1, 0, "runs; figures are medians"),
    BENCH_STR("dir", ENGINE_OPT(parent), "PATH", "/tmp",
              "where scratch indexes go (fsync cost depends on it)"),
};

static const bench_cmd k_engine_cmd = BENCH_CMD(
    "engine", "[options]", "engine writes, commits and merges", k_engine_opts, eopts, NULL);

void tern_bench_engine_usage(FILE *out) { bench_opts_usage(&k_engine_cmd, out); }

int tern_bench_engine(int argc, char **argv) {
  eopts o;
  int prc = bench_opts_parse(&k_engine_cmd, &o, argc, argv);
  if (prc) return bench_opts_exit(prc);
  char machine[256];
  bench_machine(machine, sizeof machine);
  printf("tern-bench engine on %s; scratch in %s (%s)\n\n", machine, o.parent,
         bench_fs_name(o.parent));
  int rc = 0;
  for (size_t i = 0; !rc && i < sizeof k_phases / sizeof k_phases[0]; i++)
    if (o.phases & (1 << i)) rc = k_phases[i](&o);
  return rc;
}
