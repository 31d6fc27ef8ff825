/* SPDX-License-Identifier: MIT */
/*
 * bench.h — the subcommands of tern-bench.  Each is a main-like function
 * (argv[0] is the subcommand's name) and a usage printer that lists its
 * options; main.c dispatches to them and `tern-bench --help` prints every
 * usage.
 *
 * Subcommands written by other parts of the project are declared weak, so
 * tern-bench links whether or not their file is in the tree; a missing one
 * is reported as "not built in".
 */
#ifndef TERN_BENCH_H
#define TERN_BENCH_H

#include <stdio.h>

/* Primary-key lookups through the public API, cold and warm, vs LMDB. */
int tern_bench_pk(int argc, char **argv);
void tern_bench_pk_usage(FILE *out);

/* The codec alone: one segment's sizes and seeks, and the pulsing curve of
 * a Zipf-distributed field. */
int tern_bench_codec(int argc, char **argv);
void tern_bench_codec_usage(FILE *out);

/* Live-docs representations (tools/bench/livedocs.c). */
int tern_bench_livedocs(int argc, char **argv) __attribute__((weak));
void tern_bench_livedocs_usage(FILE *out) __attribute__((weak));

/* The engine's write and merge paths (tools/bench/engine.c, optional). */
int tern_bench_engine(int argc, char **argv) __attribute__((weak));
void tern_bench_engine_usage(FILE *out) __attribute__((weak));

/* One path of the engine's latency phase, run by that phase in a fresh
 * process (tools/bench/engine_latency.c). */
int tern_bench_latency_path(int argc, char **argv) __attribute__((weak));
void tern_bench_latency_path_usage(FILE *out) __attribute__((weak));

/* Postings iteration and conjunctions (tools/bench/postings.c, optional). */
int tern_bench_postings(int argc, char **argv) __attribute__((weak));
void tern_bench_postings_usage(FILE *out) __attribute__((weak));

/* Random reads through the file layer, mmap vs pread (tools/bench/io.c,
 * optional). */
int tern_bench_io(int argc, char **argv) __attribute__((weak));
void tern_bench_io_usage(FILE *out) __attribute__((weak));

/* Warm and cold seeks inside one segment's terms blocks (tools/bench/seek.c,
 * optional). */
int tern_bench_whole(int argc, char **argv) __attribute__((weak));
void tern_bench_whole_usage(FILE *out) __attribute__((weak));
int tern_bench_lmdb_get(int argc, char **argv) __attribute__((weak));
void tern_bench_lmdb_get_usage(FILE *out) __attribute__((weak));
int tern_bench_seek(int argc, char **argv) __attribute__((weak));
void tern_bench_seek_usage(FILE *out) __attribute__((weak));

/* Cold opens in fresh processes, cold and warm lookups by read mode
 * (tools/bench/open.c, optional). */
int tern_bench_open(int argc, char **argv) __attribute__((weak));
void tern_bench_open_usage(FILE *out) __attribute__((weak));

/* Cold batches of N keys in fresh processes: tern vs LMDB (readahead on
 * and off) vs the device's random 4 KiB reads (tools/bench/coldbatch.c). */
int tern_bench_cold_batch(int argc, char **argv) __attribute__((weak));
void tern_bench_cold_batch_usage(FILE *out) __attribute__((weak));
/* A full scan cold vs warm vs the sequential read of its files
 * (tools/bench/coldscan.c). */
int tern_bench_cold_scan(int argc, char **argv) __attribute__((weak));
void tern_bench_cold_scan_usage(FILE *out) __attribute__((weak));

/* Key cursors, range scans and hit resolution vs LMDB cursors
 * (tools/bench/scan.c, optional). */
int tern_bench_scan(int argc, char **argv) __attribute__((weak));
void tern_bench_scan_usage(FILE *out) __attribute__((weak));

/* Issue 24's table: tern.h's get, batch, cursor scans and search by term vs
 * LMDB, per key shape (tools/bench/api.c, optional). */
int tern_bench_api(int argc, char **argv) __attribute__((weak));
void tern_bench_api_usage(FILE *out) __attribute__((weak));

/* A warm get after ingesting many range-disjoint segments vs compacted
 * (tools/bench/ingest.c, optional). */
int tern_bench_ingest(int argc, char **argv) __attribute__((weak));
void tern_bench_ingest_usage(FILE *out) __attribute__((weak));

/* A warm get on an index of many small commits and on many overlapping
 * segments vs compacted (tools/bench/segments.c, optional). */
int tern_bench_segments(int argc, char **argv) __attribute__((weak));
void tern_bench_segments_usage(FILE *out) __attribute__((weak));

#endif
