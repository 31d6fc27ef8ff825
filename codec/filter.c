/* SPDX-License-Identifier: MIT */
/*
 * filter.c — the split-block Bloom filter (filter.h, docs/FORMAT.md).
 *
 * A 64-bit hash h picks block ((h >> 32) * nblocks) >> 32 — a multiply
 * instead of a modulo, uniform over any block count, so the filter is sized
 * exactly to bits_per_key, not rounded to a power of two — and its low 32
 * bits x pick, for each word i of the block's 8, bit (x * SALT[i]) >> 26
 * (odd multipliers, Parquet's constants).  One bit per word instead of k
 * anywhere in the block keeps the probe to 8 independent loads and ands of
 * one cache line, which compilers vectorise, and costs little: ~1.05% false
 * positives at 10 bits per key against a classic Bloom filter's ~0.82%.
 *
 * Words are little-endian on disk and in memory (a probe loads them with
 * tern_load64, a plain load on little-endian machines), so a filter can be
 * probed where it lies in a mapping.
 */
#include "codec/filter.h"

#include "codec/coding.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>
/* Inlined from the Debian package's header: a probe hashes a short key,
 * where the library call's dispatch costs as much as the hash itself. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#define FILTER_ALGORITHM 1u /* split block, 8 x 64-bit words, XXH3-64, these salts */
#define WORDS 8u
#define BLOCK_BITS (TERN_FILTER_BLOCK_SIZE * 8u)
_Static_assert(WORDS == sizeof ((tern_filter_key *)0)->mask / sizeof(uint64_t),
               "filter.h's inline probe tests one mask per word");

static const uint32_t SALT[WORDS] = {0x47b6137bu, 0x44974d91u, 0x8824ad5bu, 0xa2b7289du,
                                     0x705495c7u, 0x2df1424bu, 0x9efc4947u, 0x5c6bfb31u};

struct tern_filter {
  const uint8_t *blocks; /* nblocks * 64 bytes, little-endian words */
  uint8_t *owned;        /* tern_filter_load's aligned copy, else NULL */
  uint32_t nblocks;
};

uint64_t tern_filter_hash(const void *key, size_t len) { return XXH3_64bits(key, len); }

static inline size_t block_of(uint64_t hash, uint32_t nblocks) {
  return (size_t)(((hash >> 32) * nblocks) >> 32);
}

static inline uint64_t bit_in_word(uint32_t x, unsigned i) {
  return (uint64_t)1 << ((uint32_t)(x * SALT[i]) >> 26);
}

static uint64_t block_count(size_t nkeys, uint32_t bits_per_key) {
  if (bits_per_key == 0 || bits_per_key > TERN_FILTER_MAX_BITS_PER_KEY) return 0;
  if ((uint64_t)nkeys > (uint64_t)UINT32_MAX * BLOCK_BITS / bits_per_key) return 0;
  uint64_t bits = (uint64_t)nkeys * bits_per_key;
  uint64_t n = (bits + BLOCK_BITS - 1) / BLOCK_BITS;
  if (n == 0) n = 1;
  return n > UINT32_MAX ? 0 : n;
}

size_t tern_filter_body_size(size_t nkeys, uint32_t bits_per_key) {
  uint64_t n = block_count(nkeys, bits_per_key);
  if (n == 0 || n > (SIZE_MAX - TERN_FILTER_HEADER_SIZE) / TERN_FILTER_BLOCK_SIZE) return 0;
  return TERN_FILTER_HEADER_SIZE + (size_t)n * TERN_FILTER_BLOCK_SIZE;
}

int tern_filter_init(uint8_t *body, size_t body_len, size_t nkeys, uint32_t bits_per_key) {
  size_t want = tern_filter_body_size(nkeys, bits_per_key);
  if (want == 0 || body_len != want)
    return tern_fail(TERN_EINVAL, "filter: %zu-byte body for %zu keys at %u bits per key", body_len,
                     nkeys, bits_per_key);
  memset(body, 0, body_len);
  tern_store32(body, FILTER_ALGORITHM);
  tern_store32(body + 4, (uint32_t)block_count(nkeys, bits_per_key));
  tern_store32(body + 8, bits_per_key); /* bytes 12..31: zero */
  return TERN_OK;
}

void tern_filter_add(uint8_t *body, const uint64_t *hashes, size_t n) {
  const uint32_t nblocks = tern_load32(body + 4);
  uint8_t *blocks = body + TERN_FILTER_HEADER_SIZE;
  for (size_t k = 0; k < n; k++) {
    uint8_t *b = blocks + block_of(hashes[k], nblocks) * TERN_FILTER_BLOCK_SIZE;
    for (unsigned i = 0; i < WORDS; i++)
      tern_store64(b + 8 * i, tern_load64(b + 8 * i) | bit_in_word((uint32_t)hashes[k], i));
  }
}

int tern_filter_build(uint8_t *body, size_t body_len, const uint64_t *hashes, size_t n,
                      uint32_t bits_per_key) {
  TERN_TRY(tern_filter_init(body, body_len, n, bits_per_key));
  tern_filter_add(body, hashes, n);
  return TERN_OK;
}

/* The header's block count, or TERN_ECORRUPT naming `what`. */
static int check_header(const uint8_t *body, size_t len, const char *what, uint32_t *nblocks) {
  if (len < TERN_FILTER_HEADER_SIZE)
    return tern_fail(TERN_ECORRUPT, "%s: filter of %zu bytes has no header", what, len);
  const uint32_t algorithm = tern_load32(body), n = tern_load32(body + 4);
  const uint32_t bits_per_key = tern_load32(body + 8);
  uint8_t reserved = 0;
  for (size_t i = 12; i < TERN_FILTER_HEADER_SIZE; i++) reserved |= body[i];
  if (algorithm != FILTER_ALGORITHM || reserved != 0)
    return tern_fail(TERN_ECORRUPT, "%s: unknown filter algorithm %u (reserved bytes %s)", what,
                     algorithm, reserved ? "set" : "zero");
  if (n == 0 || bits_per_key == 0 || bits_per_key > TERN_FILTER_MAX_BITS_PER_KEY ||
      tern_filter_nblocks_of(len) != n)
    return tern_fail(TERN_ECORRUPT, "%s: filter of %zu bytes, header says %u blocks (%u bits/key)",
                     what, len, n, bits_per_key);
  *nblocks = n;
  return TERN_OK;
}

uint32_t tern_filter_nblocks_of(size_t len) {
  if (len < TERN_FILTER_HEADER_SIZE || (len - TERN_FILTER_HEADER_SIZE) % TERN_FILTER_BLOCK_SIZE)
    return 0;
  size_t n = (len - TERN_FILTER_HEADER_SIZE) / TERN_FILTER_BLOCK_SIZE;
  return n > UINT32_MAX ? 0 : (uint32_t)n;
}

tern_filter *tern_filter_at(const uint8_t *blocks, uint32_t nblocks) {
  tern_filter *f = calloc(1, sizeof *f);
  if (f) {
    f->blocks = blocks;
    f->nblocks = nblocks;
  }
  return f;
}

int tern_filter_open(tern_filter **out, const uint8_t *body, size_t len, const char *what) {
  *out = NULL;
  uint32_t nblocks;
  TERN_TRY(check_header(body, len, what, &nblocks));
  if (!(*out = tern_filter_at(body + TERN_FILTER_HEADER_SIZE, nblocks)))
    return tern_fail(TERN_ENOMEM, "%s: out of memory", what);
  return TERN_OK;
}

int tern_filter_load(tern_filter **out, const uint8_t *body, size_t len, const char *what) {
  *out = NULL;
  uint32_t nblocks;
  TERN_TRY(check_header(body, len, what, &nblocks));
  const size_t bytes = (size_t)nblocks * TERN_FILTER_BLOCK_SIZE;
  uint8_t *copy = aligned_alloc(TERN_FILTER_BLOCK_SIZE, bytes);
  tern_filter *f = copy ? tern_filter_at(copy, nblocks) : NULL;
  if (!f) {
    free(copy);
    return tern_fail(TERN_ENOMEM, "%s: filter of %u blocks", what, nblocks);
  }
  memcpy(copy, body + TERN_FILTER_HEADER_SIZE, bytes);
  f->owned = copy;
  *out = f;
  return TERN_OK;
}

size_t tern_filter_block_offset(const tern_filter *f, uint64_t hash) {
  return TERN_FILTER_HEADER_SIZE + block_of(hash, f->nblocks) * TERN_FILTER_BLOCK_SIZE;
}

void tern_filter_prefetch(const tern_filter *f, uint64_t hash) {
  tern_filter_view_prefetch(tern_filter_view_of(f), hash);
}

/* The masks are made as they are tested, not stored first, and the block
 * is tested in two halves: an absent key usually misses a bit of the
 * first four words (each about half set), and skips the other four. */
int tern_filter_may_contain(const tern_filter *f, uint64_t hash) {
  if (!f || !f->blocks) return 1;
  const uint8_t *b = f->blocks + block_of(hash, f->nblocks) * TERN_FILTER_BLOCK_SIZE;
  uint32_t x = (uint32_t)hash;
  uint64_t missing = 0;
  for (unsigned i = 0; i < WORDS / 2; i++) missing |= bit_in_word(x, i) & ~tern_load64(b + 8 * i);
  if (missing) return 0;
  for (unsigned i = WORDS / 2; i < WORDS; i++) missing |= bit_in_word(x, i) & ~tern_load64(b + 8 * i);
  return missing == 0;
}

void tern_filter_key_init(tern_filter_key *k, uint64_t hash) {
  uint32_t x = (uint32_t)hash;
  k->hash = hash;
  /* Written out (every primary-key lookup computes them): a loop's counter
   * and table loads cost as many instructions as the masks themselves. */
  k->mask[0] = bit_in_word(x, 0);
  k->mask[1] = bit_in_word(x, 1);
  k->mask[2] = bit_in_word(x, 2);
  k->mask[3] = bit_in_word(x, 3);
  k->mask[4] = bit_in_word(x, 4);
  k->mask[5] = bit_in_word(x, 5);
  k->mask[6] = bit_in_word(x, 6);
  k->mask[7] = bit_in_word(x, 7);
}

tern_filter_view tern_filter_view_of(const tern_filter *f) {
  return f ? (tern_filter_view){f->blocks, f->nblocks} : (tern_filter_view){NULL, 0};
}

size_t tern_filter_memory(const tern_filter *f) {
  if (!f) return 0;
  return sizeof *f + (f->owned ? (size_t)f->nblocks * TERN_FILTER_BLOCK_SIZE : 0);
}

void tern_filter_free(tern_filter *f) {
  if (!f) return;
  free(f->owned);
  free(f);
}
