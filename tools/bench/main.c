/* SPDX-License-Identifier: MIT */
/*
 * main.c — tern-bench: one binary, one subcommand per benchmark.
 *
 *   tern-bench <subcommand> [options]     run it
 *   tern-bench <subcommand> --help        its options
 *   tern-bench --help                     every subcommand and its options
 *
 * Subcommands from optional files are weak symbols (bench.h): the table
 * below lists them all and says which are not built in.
 */
#include "tools/bench/bench.h"
#include "tern.h"

#include <stdio.h>
#include <string.h>

typedef struct subcommand {
  const char *name;
  const char *summary;
  int (*run)(int, char **);
  void (*usage)(FILE *);
} subcommand;

/* Built at run time: the address of a weak function is only known then. */
static size_t subcommands(subcommand *out) {
  subcommand all[] = {
      {"pk", "cold and warm primary-key lookups, tern vs LMDB, with plots", tern_bench_pk,
       tern_bench_pk_usage},
      {"codec", "one segment through the codec: sizes, seeks, pulsing thresholds (Zipf)",
       tern_bench_codec, tern_bench_codec_usage},
      {"livedocs", "live-docs representations", tern_bench_livedocs, tern_bench_livedocs_usage},
      {"engine", "engine writes, commits and merges", tern_bench_engine, tern_bench_engine_usage},
      {"postings", "postings iteration and conjunctions", tern_bench_postings,
       tern_bench_postings_usage},
      {"io", "random 4 KiB reads through the file layer, mmap vs pread", tern_bench_io,
       tern_bench_io_usage},
      {"seek", "warm primary-key seeks in one segment (codec alone) vs LMDB", tern_bench_seek,
       tern_bench_seek_usage},
      {"scan", "key cursors, range scans, hits in key order vs LMDB cursors", tern_bench_scan, tern_bench_scan_usage},
      {"whole", "warm whole-process lookups: `tern get DIR -` vs an LMDB reader", tern_bench_whole,
       tern_bench_whole_usage},
      {"open", "cold open + get in fresh processes; cold and warm lookups by read mode",
       tern_bench_open, tern_bench_open_usage},
      {"api", "the public API per operation (get, batch, scan, seek, search) vs LMDB",
       tern_bench_api, tern_bench_api_usage},
      {"cold-batch", "cold batches of N keys: tern vs LMDB (readahead on, off) vs 4 KiB reads",
       tern_bench_cold_batch, tern_bench_cold_batch_usage},
      {"cold-scan", "a full scan cold vs warm vs reading its files sequentially",
       tern_bench_cold_scan, tern_bench_cold_scan_usage},
      {"lmdb-get", "the LMDB reader of `whole` (keys on stdin)", tern_bench_lmdb_get,
       tern_bench_lmdb_get_usage},
      {"latency-path", "one path of `engine --phases latency` in a process of its own",
       tern_bench_latency_path, tern_bench_latency_path_usage},
      {"ingest", "warm get after ingesting many disjoint segments vs compacted",
       tern_bench_ingest, tern_bench_ingest_usage},
      {"segments", "warm get: many small commits, many overlapping segments, vs compacted",
       tern_bench_segments, tern_bench_segments_usage},
  };
  memcpy(out, all, sizeof all);
  return sizeof all / sizeof all[0];
}

static void usage(FILE *out, int full) {
  subcommand cmds[24];
  size_t n = subcommands(cmds);
  fprintf(out, "usage: tern-bench <subcommand> [options]   (tern %s)\n\n", tern_version());
  fprintf(out, "subcommands:\n");
  for (size_t i = 0; i < n; i++)
    fprintf(out, "  %-12s %s%s\n", cmds[i].name, cmds[i].summary,
            cmds[i].run ? "" : " (not built in)");
  if (!full) {
    fprintf(out,
            "\n`tern-bench --help` lists every option; `tern-bench <subcommand> --help` one.\n");
    return;
  }
  for (size_t i = 0; i < n; i++) {
    if (!cmds[i].run) continue;
    fprintf(out, "\n");
    if (cmds[i].usage)
      cmds[i].usage(out);
    else
      fprintf(out, "tern-bench %s (no usage text)\n", cmds[i].name);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr, 0);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout, 1);
    return 0;
  }
  subcommand cmds[24];
  size_t n = subcommands(cmds);
  for (size_t i = 0; i < n; i++) {
    if (strcmp(argv[1], cmds[i].name) != 0) continue;
    if (!cmds[i].run) {
      fprintf(stderr, "tern-bench: subcommand '%s' is not built into this binary\n", argv[1]);
      return 2;
    }
    return cmds[i].run(argc - 1, argv + 1);
  }
  fprintf(stderr, "tern-bench: unknown subcommand '%s'\n\n", argv[1]);
  usage(stderr, 0);
  return 2;
}
