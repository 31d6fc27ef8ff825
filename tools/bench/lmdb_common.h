/* SPDX-License-Identifier: MIT */
/*
 * lmdb_common.h — the LMDB baseline of the benchmarks: key -> 4-byte
 * little-endian doc id in one B+tree, loaded the fastest correct way
 * (keys in sorted order, MDB_APPEND into a fresh environment, one write
 * transaction, one fsync at the end), and read either with MDB_NORDAHEAD
 * (each page fault reads one page) or with default flags (each fault reads
 * the device's read-ahead window).
 */
#ifndef TERN_BENCH_LMDB_COMMON_H
#define TERN_BENCH_LMDB_COMMON_H

#include "tools/bench/keys_common.h"

#include <lmdb.h>
#include <stdint.h>

/* Loads `k` into a new environment in directory `dir` (created).  Doc id
 * of key i is i.  Returns 0, or an LMDB/errno code with msg[cap] set. */
int bench_lmdb_build(const char *dir, const bench_keys *k, char *msg, size_t cap);
/* The same with values of vbytes (>= 4) bytes: bench_value_fill(doc). */
int bench_lmdb_build_values(const char *dir, const bench_keys *k, size_t vbytes, char *msg,
                            size_t cap);
/* The same with values made by `value`. */
int bench_lmdb_build_fn(const char *dir, const bench_keys *k, size_t vbytes,
                        void (*value)(uint8_t *out, uint32_t doc, size_t vbytes), char *msg,
                        size_t cap);

typedef struct bench_lmdb {
  MDB_env *env;
  MDB_txn *txn; /* one read transaction for all lookups */
  MDB_dbi dbi;
} bench_lmdb;

/* Opens `dir` read-only; nordahead: MDB_NORDAHEAD. */
int bench_lmdb_open(bench_lmdb *l, const char *dir, int nordahead, char *msg, size_t cap);
/* 0 with *doc set, MDB_NOTFOUND, or another LMDB code; a value that is not
 * 4 bytes is MDB_CORRUPTED. */
int bench_lmdb_get(bench_lmdb *l, const uint8_t *key, size_t len, uint32_t *doc);
/* Any value size: *doc from its first 4 bytes, the value in the map. */
int bench_lmdb_get_value(bench_lmdb *l, const uint8_t *key, size_t len, uint32_t *doc,
                         const uint8_t **val, size_t *vlen);
void bench_lmdb_close(bench_lmdb *l);
/* Pages in use (B-tree and meta) and the page size, for the report. */
int bench_lmdb_pages(const char *dir, uint64_t *pages, uint32_t *psize, uint32_t *depth);

#endif
