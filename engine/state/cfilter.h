/* SPDX-License-Identifier: MIT */
/*
 * cfilter.h — the combined filter's table as a get reads it: for a key,
 * the slots that may hold it, from one cache line (issue 21 item 6).
 * Built and shared by engine/state/state_cfilter.c.
 *
 * The table is an array of 64-byte buckets; a key's hash picks one,
 * ((hash >> 32) * nbuckets) >> 32 (a multiply, as codec/filter.h picks a
 * block).  A bucket is 32 little-endian 16-bit words:
 *   word 0      0, or TERN_CFILTER_OVERFLOWED: a key that hashed here
 *               found the bucket full and is not in it, so the bucket
 *               names nothing (the get probes every slot in turn);
 *   words 1-31  entries, filled from word 1, 0 = empty; an entry is
 *               fp << slot_bits | k for one key of covered segment k
 *               (k < 2^slot_bits), fp its fingerprint, 1 to
 *               2^(16 - slot_bits) - 2 from the hash's low 32 bits.
 * A key held by several covered segments (an overwrite, a delete) has an
 * entry for each.  So the slots a bucket names for a key, the entries
 * whose fingerprint matches, are a superset of the covered slots holding
 * it; a wrong one (another key's fingerprint: about 16 / 2^fp_bits of
 * the absent keys that reach the table) costs one block probe that finds
 * nothing.
 *
 * Neither the header nor an empty word can match: an empty word's
 * fingerprint is 0, TERN_CFILTER_OVERFLOWED's is all ones, a key's is
 * neither.  The buckets hold TERN_CFILTER_LOAD entries on average: at
 * 16 (of 31) about 0.06% of keys land in an overflowed bucket (Poisson
 * tail); memory 32 bits per key.
 */
#ifndef TERN_ENGINE_CFILTER_H
#define TERN_ENGINE_CFILTER_H

#include "codec/coding.h"
#include "codec/filter.h"
#include "engine/state/router.h"

#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define TERN_CFILTER_BUCKET 64u  /* bytes: a cache line */
#define TERN_CFILTER_ENTRIES 31u /* entries a bucket holds (word 0: its header) */
#define TERN_CFILTER_LOAD 16u    /* entries per bucket on average */
#define TERN_CFILTER_OVERFLOWED 0xffffu
#define TERN_CFILTER_MAX_SLOTS 256u /* covered segments: fingerprints keep 8 bits at least */
#define TERN_CFILTER_NONE UINT32_MAX /* tern_cfilter_view.slot_of: not a slot of the state */
#define TERN_CFILTER_ALL ((size_t)-1) /* tern_cfilter_candidates: the bucket overflowed */

/* The table as one state reads it, with the split-block Bloom filter
 * over the same keys (codec/filter.h, 10 bits a key) that a get asks
 * first while its keys are mostly absent: an absent key is answered from
 * its one line, and that filter, a third of the table's size, stays in a
 * core's L2 cache where the table would not
 * (docs/benchmarks/HISTORY.md, "2026-12-02, afternoon").  While they are mostly present the
 * get skips it (engine/state/index.h, cf_order): the table alone
 * answers right. */
typedef struct tern_cfilter_view {
  tern_filter_view bloom;
  const uint8_t *buckets; /* NULL: no table (the Bloom filter alone, or, bloom.blocks
                           * NULL too, no combined filter) */
  uint32_t nbuckets;
  uint32_t slot_bits;
  const uint32_t *slot_of; /* covered segment k -> the state's slot (TERN_CFILTER_NONE) */
  /* The covered segment of a key that one covered segment holds, from
   * three cells in L2 (router.h): the get's way to its segment, ahead
   * of the table, which is asked only for the router's escape (a key in
   * several covered segments).  NULL: none. */
  const tern_router *router;
  uint32_t ncovered;
} tern_cfilter_view;

/* The bucket of `hash`. */
static inline const uint8_t *tern_cfilter_bucket(const tern_cfilter_view *v, uint64_t hash) {
  return v->buckets + (size_t)(((hash >> 32) * v->nbuckets) >> 32) * TERN_CFILTER_BUCKET;
}

/* The fingerprint of `hash` at fp_bits (9 to 16): 1 to 2^fp_bits - 2. */
static inline uint32_t tern_cfilter_fp(uint64_t hash, uint32_t fp_bits) {
  uint64_t range = ((uint64_t)1 << fp_bits) - 2;
  return 1u + (uint32_t)(((hash & UINT32_MAX) * range) >> 32);
}

/* Bit i set: word i of bucket b has fingerprint fp (never word 0). */
static inline uint32_t tern_cfilter_matches(const uint8_t *b, uint32_t fp, uint32_t slot_bits) {
#if defined(__SSE2__) && (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
  __m128i want = _mm_set1_epi16((short)fp), shift = _mm_cvtsi32_si128((int)slot_bits);
  uint32_t m = 0;
  for (unsigned h = 0; h < 2u; h++) {
    __m128i lo = _mm_loadu_si128((const __m128i *)(const void *)(b + 32 * h));
    __m128i hi = _mm_loadu_si128((const __m128i *)(const void *)(b + 32 * h + 16));
    lo = _mm_cmpeq_epi16(_mm_srl_epi16(lo, shift), want);
    hi = _mm_cmpeq_epi16(_mm_srl_epi16(hi, shift), want);
    m |= (uint32_t)_mm_movemask_epi8(_mm_packs_epi16(lo, hi)) << (16 * h);
  }
  return m;
#else
  uint32_t m = 0;
  for (unsigned i = 1; i <= TERN_CFILTER_ENTRIES; i++)
    m |= (uint32_t)((tern_load16(b + 2 * i) >> slot_bits) == fp) << i;
  return m;
#endif
}

/* The state's slots the table names for `hash`, newest (highest) first,
 * each once, into cand[0..TERN_CFILTER_ENTRIES); how many (0: no covered
 * slot holds the key).  TERN_CFILTER_ALL when the bucket overflowed: the
 * table cannot tell, every covered slot must be probed. */
static inline size_t tern_cfilter_candidates(const tern_cfilter_view *v, uint64_t hash,
                                             uint32_t *cand) {
  const uint8_t *b = tern_cfilter_bucket(v, hash);
  if (tern_load16(b) == TERN_CFILTER_OVERFLOWED) return TERN_CFILTER_ALL;
  uint32_t m = tern_cfilter_matches(b, tern_cfilter_fp(hash, 16 - v->slot_bits), v->slot_bits);
  size_t n = 0;
  for (; m; m &= m - 1) {
    uint32_t e = tern_load16(b + 2 * (unsigned)__builtin_ctz(m));
    uint32_t s = v->slot_of[e & ((1u << v->slot_bits) - 1)];
    if (s == TERN_CFILTER_NONE) continue;
    size_t i = n; /* insertion, newest first; a slot named twice kept once */
    while (i > 0 && cand[i - 1] < s)
      i--;
    if (i > 0 && cand[i - 1] == s) continue;
    for (size_t j = n; j > i; j--)
      cand[j] = cand[j - 1];
    cand[i] = s;
    n++;
  }
  return n;
}

/* Starts fetching the Bloom filter's line, when the get asks it first
 * (the table's is fetched once that says "maybe": an absent key leaves
 * the table's lines out of the caches). */
static inline void tern_cfilter_prefetch(const tern_cfilter_view *v, uint64_t hash) {
  tern_filter_view_prefetch(v->bloom, hash);
}

#endif
