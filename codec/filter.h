/* SPDX-License-Identifier: MIT */
/*
 * filter.h — the membership filter of a segment's unique field: a
 * split-block Bloom filter (Putze et al., "Cache-, hash- and space-efficient
 * Bloom filters"; the form Impala and Parquet use).  Each key sets 8 bits,
 * one in each 64-bit word of a single 512-bit block that its hash picks, so
 * a probe reads one 64-byte cache line and tests 8 words without branches.
 * At 10 bits per key the false-positive rate is about 1.05%
 * (docs/FORMAT.md).
 *
 * The writer hashes each key with tern_filter_hash, sizes a body with
 * tern_filter_body_size and builds it; the body is self-describing (a 32-byte
 * header: algorithm, block count, bits per key, zeros) and the segment
 * writer frames it as NAME.flt, where the 32-byte frame header puts block j
 * at file offset 64 + 64 j: every block inside one 4 KiB page.  A reader
 * probes the body where it lies (tern_filter_open: the segment's mapping,
 * whose pages are checked on first use) or a validated copy
 * (tern_filter_load).  Words are little-endian in both.
 */
#ifndef TERN_FILTER_H
#define TERN_FILTER_H

#include "codec/coding.h"

#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define TERN_FILTER_BITS_PER_KEY 10u /* default: about 1% false positives */
#define TERN_FILTER_MAX_BITS_PER_KEY 64u
#define TERN_FILTER_HEADER_SIZE 32u /* format 3; 2 had 16 (blocks across pages) */
#define TERN_FILTER_BLOCK_SIZE 64u /* bytes of one block: a cache line */

/* XXH3-64 of the key: what the filter is built from and probed with. */
uint64_t tern_filter_hash(const void *key, size_t len);
/* Bytes of the serialized body for nkeys keys at bits_per_key (1 to
 * TERN_FILTER_MAX_BITS_PER_KEY); 0 when bits_per_key is outside that range
 * or the filter would exceed 2^32 - 1 blocks. */
size_t tern_filter_body_size(size_t nkeys, uint32_t bits_per_key);
/* Writes the body of the filter of hashes[0..n) into body[body_len], which
 * must be tern_filter_body_size(n, bits_per_key) bytes (else TERN_EINVAL).
 * Duplicate hashes are fine. */
int tern_filter_build(uint8_t *body, size_t body_len, const uint64_t *hashes, size_t n,
                      uint32_t bits_per_key);
/* The same in steps, for keys that come a few at a time: an empty filter
 * sized for nkeys (body_len as above, else TERN_EINVAL), then hashes added
 * to it (any number of calls; more keys than nkeys only raise the false
 * positive rate). */
int tern_filter_init(uint8_t *body, size_t body_len, size_t nkeys, uint32_t bits_per_key);
void tern_filter_add(uint8_t *body, const uint64_t *hashes, size_t n);

typedef struct tern_filter tern_filter;

/* Validates a body (TERN_ECORRUPT naming `what` when its header or size is
 * wrong) and copies it into aligned memory. */
int tern_filter_load(tern_filter **out, const uint8_t *body, size_t len, const char *what);
/* Validates a body and probes it in place: the caller keeps body[len]
 * alive and unchanged until tern_filter_free. */
int tern_filter_open(tern_filter **out, const uint8_t *body, size_t len, const char *what);
/* A filter of `nblocks` blocks at `blocks` (the body past its header), not
 * validated: for a reader whose blocks are checked page by page when first
 * probed (the header then by tern_filter_open in verify).  NULL: no memory. */
tern_filter *tern_filter_at(const uint8_t *blocks, uint32_t nblocks);
/* Blocks of a body of `len` bytes, from its size alone (0: not a body size). */
uint32_t tern_filter_nblocks_of(size_t len);
/* Offset in the body of the block a probe of `hash` reads (64 bytes). */
size_t tern_filter_block_offset(const tern_filter *f, uint64_t hash);
/* Starts fetching the line a probe of `hash` reads (a hint, no effect
 * on results): segment verification overlaps it with the next keys. */
void tern_filter_prefetch(const tern_filter *f, uint64_t hash);
/* 1: the key may be present; 0: it is certainly absent. */
int tern_filter_may_contain(const tern_filter *f, uint64_t hash);
/* One hash's probe, computed once to test many filters (a get over many
 * segments): the bit each word must have depends on the hash alone. */
typedef struct tern_filter_key {
  uint64_t hash;
  uint64_t mask[8];
} tern_filter_key;
void tern_filter_key_init(tern_filter_key *k, uint64_t hash);

/* A loaded filter's blocks, for a caller testing many filters in one tight
 * loop (a get over many segments, codec/segment.h's tern_seg_gate): the
 * test is inline, from a copy of this view kept beside the caller's other
 * per-segment data.  Valid while the filter is; blocks NULL: no filter
 * (everything may be present).  A filter probed in place (tern_filter_at)
 * may only be tested where its caller has checked the page (segment_filter.c). */
typedef struct tern_filter_view {
  const uint8_t *blocks; /* NULL: no filter */
  uint32_t nblocks;
} tern_filter_view;
tern_filter_view tern_filter_view_of(const tern_filter *f);

/* The block (8 words) a hash picks: ((hash >> 32) * nblocks) >> 32, a
 * multiply instead of a modulo (docs/FORMAT.md). */
static inline const uint8_t *tern_filter_view_block(tern_filter_view v, uint64_t hash) {
  return v.blocks + (size_t)(((hash >> 32) * v.nblocks) >> 32) * TERN_FILTER_BLOCK_SIZE;
}
/* 1 when block b (64 bytes) has every bit of k's masks.  SSE2: four
 * 16-byte and-nots, not eight 8-byte ones (a get over many segments tests
 * one block per segment; issue 21 item 6). */
static inline int tern_filter_block_has(const uint8_t *b, const tern_filter_key *k) {
#if defined(__SSE2__) && (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
  __m128i missing = _mm_setzero_si128();
  for (unsigned i = 0; i < 4u; i++) {
    __m128i m = _mm_loadu_si128((const __m128i *)(const void *)&k->mask[2 * i]);
    __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(b + 16 * i));
    missing = _mm_or_si128(missing, _mm_andnot_si128(w, m));
  }
  return _mm_movemask_epi8(_mm_cmpeq_epi8(missing, _mm_setzero_si128())) == 0xffff;
#else
  uint64_t missing = 0;
  for (unsigned i = 0; i < 8u; i++)
    missing |= k->mask[i] & ~tern_load64(b + 8 * i);
  return missing == 0;
#endif
}
static inline int tern_filter_view_may_contain(tern_filter_view v, const tern_filter_key *k) {
  if (!v.blocks) return 1;
  return tern_filter_block_has(tern_filter_view_block(v, k->hash), k);
}
static inline void tern_filter_view_prefetch(tern_filter_view v, uint64_t hash) {
  if (v.blocks) __builtin_prefetch(tern_filter_view_block(v, hash));
}
/* Bytes the filter holds in memory (a copy: its body; in place: none). */
size_t tern_filter_memory(const tern_filter *f);
void tern_filter_free(tern_filter *f);

#endif
