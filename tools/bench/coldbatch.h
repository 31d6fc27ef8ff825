/* SPDX-License-Identifier: MIT */
/*
 * coldbatch.h — what tern-bench cold-batch's parts share: the in-process
 * sides (coldbatch_inproc.c) and the store builder (whole.c).
 */
#ifndef TERN_BENCH_COLDBATCH_H
#define TERN_BENCH_COLDBATCH_H

#include "tools/bench/keys_common.h"
#include "tern.h"

#include <stddef.h>
#include <stdint.h>

/* The first n lines of a key file (escaped as tern's TSV), unescaped. */
typedef struct cb_keys {
  tern_slice *k;
  char *buf;
  size_t n;
} cb_keys;
int cb_keys_read(cb_keys *k, const char *path, uint64_t n);
void cb_keys_free(cb_keys *k);

/* One cold run of a side: seconds, the process's CPU seconds meanwhile
 * (rusage, user + system, all threads), MB it read from storage (rusage
 * ru_inblock), and reads: the file layer's counted reads (tern, the device
 * sides; tern's include the lookups served from memory) or major page
 * faults (LMDB). */
typedef struct cb_sample {
  double s, cpu, mb, reads;
} cb_sample;

/* Every file of dir out of the page cache (fdatasync + DONTNEED). */
void cb_evict_dir(const char *dir);

/* tern_get_batch of every key, in this process: the index opened, then
 * both stores' files evicted, then the batch timed.  Every key must be
 * found.  0, or -1 with a message. */
int cb_inproc_tern(const char *tdir, const char *ldir, const cb_keys *k, cb_sample *out);
/* mdb_get of every key in this process, LMDB opened (readahead on, or
 * MDB_NORDAHEAD), then both stores evicted, then the gets timed. */
int cb_inproc_lmdb(const char *ldir, const char *tdir, const cb_keys *k, int nordahead,
                   cb_sample *out);
/* n random 4 KiB pages of `path`, read cold (evicted first) at `depth`
 * in flight (1: pread one at a time; more: the read queue on io_uring). */
int cb_device_reads(const char *path, uint64_t n, unsigned depth, uint64_t seed, cb_sample *out);

/* present.keys of the stores built: the largest batch. */
#define CB_KEYS_MAX 1000000u
/* The stores' directory into out: `from` when given, else
 * parent/cold-batch-SHAPE-DOCS, built (bench_whole_build_at; anything
 * there first removed) unless its present.keys is there.  0 or -1. */
int cb_store_dir(char *out, size_t cap, const char *from, const char *parent,
                 const bench_key_spec *spec, uint64_t docs, uint64_t values, uint64_t seed,
                 const char *tern);

/* Builds, under dir (created), what `tern-bench whole --keep` keeps:
 * tern/ (`tern import`, then `tern compact`: one
 * segment), lmdb/, present.keys (`lookups` random present
 * keys, repeats past the set).  tern: the tern tool.  0 or -1. */
int bench_whole_build_at(const char *dir, const bench_key_spec *spec, uint64_t docs,
                         uint64_t values, uint64_t lookups, uint64_t seed, const char *tern);

#endif
