/*
 * keys_common.h — the primary keys the benchmarks index, in four shapes,
 * reproducible from a seed, unique, and fixed-width per shape (so a key
 * set is one flat array: key i is data[i * width .. +width)).
 *
 *   random        16 chars of [0-9a-z], each uniform: 82.7 random bits
 *   uuid4         36-char canonical lowercase UUID version 4 (122 random
 *                 bits, version nibble 4, variant bits 10)
 *   sequential    a 16-digit zero-padded decimal counter counting by two
 *                 (0, 2, 4, ...): absent keys are the odd numbers, so they
 *                 fall inside the key range instead of being rejected by
 *                 the range check alone
 *   timeprefixed  16 hex digits of a millisecond timestamp that starts at
 *                 1,700,000,000,000 and advances 0-2 ms per key, then 8
 *                 random chars of [0-9a-z] (24 chars; UUIDv7 / flake-like)
 *
 * Random shapes are drawn, then sorted; duplicates (astronomically rare
 * for random and uuid4, possible for timeprefixed) are redrawn until the
 * set is unique.  The sort also gives the key order that LMDB's append
 * load and the codec's writer need.
 */
#ifndef TERN_BENCH_KEYS_COMMON_H
#define TERN_BENCH_KEYS_COMMON_H

#include "tools/bench/bench_common.h"

#include <stddef.h>
#include <stdint.h>

typedef enum bench_key_shape {
  BENCH_KEYS_RANDOM = 0,
  BENCH_KEYS_UUID4 = 1,
  BENCH_KEYS_SEQUENTIAL = 2,
  BENCH_KEYS_TIMEPREFIXED = 3
} bench_key_shape;

/* "random", "uuid4", "sequential", "timeprefixed". */
const char *bench_key_shape_name(bench_key_shape s);
/* 0 and *out set when `name` is a shape's name, -1 otherwise. */
int bench_key_shape_parse(const char *name, bench_key_shape *out);
/* Bytes of every key of the shape. */
size_t bench_key_width(bench_key_shape s);

/* A stream of keys of one shape.  Stream 0 draws present keys, other
 * streams draw candidates for absent keys (sequential: odd numbers). */
typedef struct bench_keygen {
  bench_key_shape shape;
  bench_rng rng;
  uint64_t counter; /* keys drawn so far */
  uint64_t ts_ms;   /* timeprefixed: the current timestamp */
  int odd;          /* sequential: draw odd numbers */
} bench_keygen;
void bench_keygen_init(bench_keygen *g, bench_key_shape shape, uint64_t seed, int stream);
/* Writes the next key (bench_key_width bytes) to out. */
void bench_keygen_next(bench_keygen *g, uint8_t *out);

/* A unique set of n keys.  data[i] is the key of document i (input
 * order); order[] lists the indices in ascending byte order of the keys. */
typedef struct bench_keys {
  bench_key_shape shape;
  size_t n, width;
  uint8_t *data;
  uint32_t *order;
} bench_keys;

/* n unique keys of stream 0 of `seed` (n < 2^32).  0, or -ENOMEM. */
int bench_keys_generate(bench_keys *out, bench_key_shape shape, size_t n, uint64_t seed);
/* m unique keys of the same shape, none of which is in `present`, drawn
 * from another stream of `seed` (sequential: odd numbers spread over the
 * whole range).  Their order[] is sorted too. */
int bench_keys_absent(bench_keys *out, const bench_keys *present, size_t m, uint64_t seed);
/* (Re)computes order[] from data; 0 or -ENOMEM.  The generators call it;
 * benchmarks call it again to time the sort a sorted load needs. */
int bench_keys_sort(bench_keys *k);
void bench_keys_free(bench_keys *k);
static inline const uint8_t *bench_key_at(const bench_keys *k, size_t i) {
  return k->data + i * k->width;
}
/* 1 when `key` (k->width bytes) is in the set (binary search over order). */
int bench_keys_contains(const bench_keys *k, const uint8_t *key);
/* 1 when the set is unique and order[] is strictly ascending. */
int bench_keys_check_sorted_unique(const bench_keys *k);

/* `n` indices into [0, pool): distinct when n <= pool (a partial
 * Fisher-Yates shuffle), with replacement otherwise.  out holds n. */
int bench_sample(bench_rng *r, size_t pool, size_t n, uint32_t *out);

#endif
