/* SPDX-License-Identifier: MIT */
/*
 * engine.h — what the files of `tern-bench engine` share: the options, the
 * keys (KEY_LEN hex characters of a mixed integer), loading and opening an
 * index, timed gets, and the phases (engine.c: get and the dispatcher;
 * engine_reads.c: absent, incremental, batch, delete; engine_writes.c:
 * commit, import, memory, buffer; engine_latency.c: latency;
 * engine_concurrent.c: concurrent; engine_erase.c: erase; engine_stores.c:
 * the loaded stores of the last two).
 */
#ifndef TERN_BENCH_ENGINE_H
#define TERN_BENCH_ENGINE_H

#include "tern.h"

#include <lmdb.h>
#include <stdint.h>

typedef struct eopts {
  uint64_t docs, lookups, commits, import, runs, buffer;
  const char *parent;
  int phases; /* bit i: the i-th phase of engine.c's table */
} eopts;

#define KEY_LEN 16

/* Key i: KEY_LEN hex characters of bench_mix64(i). */
void make_key(uint64_t i, uint8_t *out);
/* rc, logged with `what` when it is not TERN_OK. */
int engine_check(int rc, const char *what);
/* Bulk-loads keys [from, to) (values of 16 bytes) in one commit; 0 or -1. */
int engine_load(tern_index *idx, uint64_t from, uint64_t to);
/* A new index in `dir` with the default options, or NULL (logged). */
tern_index *fresh_index(const char *dir);
/* ns per lookup of `n` keys drawn from [0, space) (+ offset: absent keys). */
double time_gets(tern_snapshot *s, uint64_t space, uint64_t n, uint64_t offset, uint64_t seed,
                 uint64_t *found);

/* Two contenders (0 and 1) timed by fn over o->runs rounds (the harness),
 * then a table: `title`, `head` (the header row), a row per contender
 * (labels[0], labels[1], numbers printed with fmt) and the ratio 1 / 0
 * (labels[2]).  0, or 1 on a failure. */
int engine_two_way(const eopts *o, double (*fn)(void *, size_t, size_t, size_t), void *ctx,
                   const char *title, const char *head, const char *const labels[3],
                   const char *fmt);

/* A store loaded with keys [0, o->docs), each its own value (engine_stores.c):
 * tern compacted to one segment, or LMDB one B+tree; its directory made
 * under o->parent, named after tag. */
typedef struct estore {
  char *dir;
  tern_index *idx; /* tern, or */
  MDB_env *env;    /* LMDB */
  MDB_dbi dbi;
} estore;
/* 0, or -1 (logged where tern failed); estore_close frees either way. */
int estore_open(estore *s, const eopts *o, int lmdb, const char *tag);
void estore_close(estore *s);

/* The phases: 0, or 1 after logging what failed. */
int phase_absent(const eopts *o);
int phase_incremental(const eopts *o);
int phase_batch(const eopts *o);
int phase_delete(const eopts *o);
int phase_commit(const eopts *o);
int phase_import(const eopts *o);
int phase_memory(const eopts *o);
int phase_buffer(const eopts *o);
int phase_latency(const eopts *o);
int phase_concurrent(const eopts *o);
int phase_erase(const eopts *o);

#endif
