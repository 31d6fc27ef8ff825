/* SPDX-License-Identifier: MIT */
/*
 * hexgets.h — what the engine-shape benchmarks (`ingest`, `segments`)
 * share: sets of unique 16-byte keys (random hex, or time-ordered), and
 * warm tern_get loops over
 * them through tern.h with the keys held by the caller.
 */
#ifndef TERN_BENCH_HEXGETS_H
#define TERN_BENCH_HEXGETS_H

#include "tern.h"
#include "tools/bench/bench_common.h"

#include <stddef.h>
#include <stdint.h>

#define BENCH_HEX_KEY 16 /* bytes of every key */

/* A random key of BENCH_HEX_KEY hex digits from r into out. */
void bench_hex_key(bench_rng *r, uint8_t *out);
/* memcmp of two keys (qsort, bsearch). */
int bench_hex_key_cmp(const void *a, const void *b);
/* Up to *n unique keys from seed, sorted, flat (key i at i * BENCH_HEX_KEY);
 * *n becomes how many (duplicates drawn are dropped).  NULL: no memory. */
uint8_t *bench_hex_keys_sorted(uint64_t seed, size_t *n);
/* *n unique time-ordered keys, sorted, flat as bench_hex_keys_sorted's:
 * "t" and 15 decimal digits, key i's number i * 37 plus a random 0 to 36
 * from seed, so that keys of up to 2.7M share their first 8 bytes (the
 * common prefix of a tenant's or a day's keys).  NULL: no memory. */
uint8_t *bench_time_keys_sorted(uint64_t seed, size_t *n);
/* Shuffles keys[0..n) with r (Fisher-Yates). */
void bench_hex_keys_shuffle(uint8_t *keys, size_t n, bench_rng *r);
/* Seconds for a tern_get of every key in keys[0..n) through one snapshot;
 * *found counts the hits, *err the last failure (0: none). */
double bench_hex_time_gets(tern_index *idx, const uint8_t *keys, size_t n, size_t *found, int *err);
/* Segments a snapshot of idx sees now (0 when none can be opened). */
size_t bench_nsegments(tern_index *idx);

#endif
