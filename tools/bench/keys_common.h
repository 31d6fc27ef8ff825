/* SPDX-License-Identifier: MIT */
/*
 * keys_common.h — the primary keys the benchmarks index, in several
 * shapes, reproducible from a seed and unique.  Keys have any length from
 * 1 to BENCH_KEY_MAX bytes; a key set is one flat byte array with offsets
 * (key i is data[off[i] .. off[i + 1])).
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
 *                 random chars of [0-9a-z] (24 chars; UUIDv7 / ULID-like)
 *   decimal       unpadded decimal ids drawn uniformly from [1000, 10^12):
 *                 4 to 12 digits, mostly 12 ("order 48213977450")
 *   paths         URLs with deep shared prefixes: one of 4 hosts, 2 to 8
 *                 directory levels drawn from small per-level vocabularies
 *                 (so thousands of keys share 40-100 leading bytes), a leaf
 *                 word, a 6-char base36 token and an extension; 30 to 200
 *                 bytes
 *   packages      package-registry names: scoped (@scope/name-word), dotted
 *                 (org.vendor.module.sub) and dashed (libword-word2-dev),
 *                 words from a Zipf-distributed vocabulary of 4,096
 *                 pseudo-words, a version-like digit tail on some; 4 to 80
 *                 bytes
 *   emails        first.last, firstNN or f.last at one of 64 domains (a few
 *                 big ones hold most addresses); 10 to 50 bytes
 *   varlen        random base36 strings whose length is log-uniform in
 *                 [4, 200]
 *   file:PATH     the lines of a file (a real list, e.g. `find /usr -type
 *                 f`), empty and over-long lines dropped, duplicates kept
 *                 once; absent keys are present keys with ".~" and 3
 *                 random chars appended (near neighbours, same blocks)
 *
 * Random shapes are drawn, then sorted; duplicates are redrawn until the
 * set is unique.  The sort also gives the key order that LMDB's append
 * load and the codec's writer need.
 */
#ifndef TERN_BENCH_KEYS_COMMON_H
#define TERN_BENCH_KEYS_COMMON_H

#include "tools/bench/bench_common.h"

#include <stddef.h>
#include <stdint.h>

#define BENCH_KEY_MAX 200u /* longest generated key; file keys up to 1024 */
#define BENCH_FILE_KEY_MAX 1024u

typedef enum bench_key_shape {
  BENCH_KEYS_RANDOM = 0,
  BENCH_KEYS_UUID4,
  BENCH_KEYS_SEQUENTIAL,
  BENCH_KEYS_TIMEPREFIXED,
  BENCH_KEYS_DECIMAL,
  BENCH_KEYS_PATHS,
  BENCH_KEYS_PACKAGES,
  BENCH_KEYS_EMAILS,
  BENCH_KEYS_VARLEN,
  BENCH_KEYS_NSHAPES, /* the generated shapes end here */
  BENCH_KEYS_FILE = BENCH_KEYS_NSHAPES
} bench_key_shape;

/* A shape as named on the command line: a generated shape, or a file. */
typedef struct bench_key_spec {
  bench_key_shape shape;
  const char *path; /* BENCH_KEYS_FILE */
} bench_key_spec;

/* "random", "uuid4", ...; "file" for BENCH_KEYS_FILE. */
const char *bench_key_shape_name(bench_key_shape s);
/* 0 and *out set when `name` is a shape's name, -1 otherwise. */
int bench_key_shape_parse(const char *name, bench_key_shape *out);
/* The same, accepting "file:PATH" too. */
int bench_key_spec_parse(const char *name, bench_key_spec *out);
/* The two as option parsers (opts.h's BENCH_OPT_CUSTOM): `field` is a
 * bench_key_shape, a bench_key_spec. */
int bench_opt_key_shape(const char *text, void *field);
int bench_opt_key_spec(const char *text, void *field);
/* Bytes of every key of a fixed-width shape; 0 for variable-length ones. */
size_t bench_key_width(bench_key_shape s);

/* A stream of keys of one generated shape.  Stream 0 draws present keys,
 * other streams draw candidates for absent keys (sequential: odd numbers). */
typedef struct bench_keygen {
  bench_key_shape shape;
  bench_rng rng;
  uint64_t counter; /* keys drawn so far */
  uint64_t ts_ms;   /* timeprefixed: the current timestamp */
  int odd;          /* sequential: draw odd numbers */
} bench_keygen;
void bench_keygen_init(bench_keygen *g, bench_key_shape shape, uint64_t seed, int stream);
/* Writes the next key to out (room for BENCH_KEY_MAX bytes); its length. */
size_t bench_keygen_next(bench_keygen *g, uint8_t *out);

/* A unique set of n keys.  Key i is the key of document i (input order);
 * order[] lists the indices in ascending byte order of the keys. */
typedef struct bench_keys {
  bench_key_shape shape;
  size_t n;
  size_t width; /* the longest key */
  uint8_t *data;
  uint64_t *off; /* n + 1 offsets into data */
  uint32_t *order;
} bench_keys;

/* n unique keys of stream 0 of `seed` (n < 2^32).  0, or -ENOMEM. */
int bench_keys_generate(bench_keys *out, bench_key_shape shape, size_t n, uint64_t seed);
/* The unique lines of spec's file (or n generated keys): 0, -errno, or
 * -EINVAL when the file holds no key.  A file's keys keep their first
 * occurrence's input position; n caps how many are read (0: all). */
int bench_keys_load(bench_keys *out, const bench_key_spec *spec, size_t n, uint64_t seed);
/* m unique keys of the same shape, none of which is in `present`, drawn
 * from another stream of `seed` (sequential: odd numbers spread over the
 * whole range).  Their order[] is sorted too. */
int bench_keys_absent(bench_keys *out, const bench_keys *present, size_t m, uint64_t seed);
/* (Re)computes order[] from data; 0 or -ENOMEM.  The generators call it;
 * benchmarks call it again to time the sort a sorted load needs. */
int bench_keys_sort(bench_keys *k);
void bench_keys_free(bench_keys *k);
static inline const uint8_t *bench_key_at(const bench_keys *k, size_t i) {
  return k->data + k->off[i];
}
static inline size_t bench_key_len(const bench_keys *k, size_t i) {
  return (size_t)(k->off[i + 1] - k->off[i]);
}
/* Keys copied out of a set in lookup order, one after the other: a
 * timed loop reads them as a stream, as `tern get DIR -` reads its input,
 * instead of two scattered loads a key (its offset, then its bytes) that
 * would be charged to both stores alike and shrink their ratio. */
typedef struct bench_key_stream {
  size_t n;
  uint8_t *data;
  uint64_t *off; /* n + 1 offsets into data */
  const uint32_t *idx; /* key i is the set's key idx[i] */
} bench_key_stream;
/* s (zeroed, or filled before) = the keys idx[0..n) of k; 0 or -ENOMEM
 * (s is then empty). */
int bench_key_stream_fill(bench_key_stream *s, const bench_keys *k, const uint32_t *idx, size_t n);
void bench_key_stream_free(bench_key_stream *s);
static inline const uint8_t *bench_stream_key(const bench_key_stream *s, size_t i) {
  return s->data + s->off[i];
}
static inline size_t bench_stream_len(const bench_key_stream *s, size_t i) {
  return (size_t)(s->off[i + 1] - s->off[i]);
}
/* Total key bytes and mean length. */
double bench_keys_mean_len(const bench_keys *k);
/* memcmp order, a proper prefix first. */
int bench_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);
/* 1 when `key` is in the set (binary search over order). */
int bench_keys_contains(const bench_keys *k, const uint8_t *key, size_t len);
/* 1 when the set is unique and order[] is strictly ascending. */
int bench_keys_check_sorted_unique(const bench_keys *k);

/* The value of document `doc` in the benchmarks' stores: its id in 4
 * little-endian bytes (fewer when vbytes < 4), then filler bytes. */
void bench_value_fill(uint8_t *out, uint32_t doc, size_t vbytes);

/* `n` indices into [0, pool): distinct when n <= pool (a partial
 * Fisher-Yates shuffle), with replacement otherwise.  out holds n. */
int bench_sample(bench_rng *r, size_t pool, size_t n, uint32_t *out);

#endif
