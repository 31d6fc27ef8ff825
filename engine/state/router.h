/* SPDX-License-Identifier: MIT */
/*
 * router.h — which of a few segments holds a key, from a structure small
 * enough to stay in a core's L2 cache (issue 21 item 6): a static
 * function from a key's filter hash (codec/filter.h) to a small value, as
 * the combined filter's router (state_cfilter.c).
 *
 * Why: a get over three overlapping segments cost 1.15-1.23x the same
 * keys compacted, and the same gets sent straight to the right segment,
 * each a one-segment index, 1.01-1.02x: what the overlap costs is finding
 * the segment, one round of filter lines (or the combined filter's table
 * line, 32 bits a key) that comes from L3 or memory before the block.  This
 * structure answers from three cells of 2, 4 or 8 bits, about 1.13 cells a
 * key at a million keys (more for fewer): 4.5 bits a key for four
 * segments (a million keys: 560 KB).  Measured, it beats the table's line
 * (20 segments: 1.43x compacted -> 1.23x) but not three segments' own
 * lines, so the combined filter builds it for four segments and more.
 *
 * It is an XOR retrieval structure (Botelho, Pagh and Ziviani's; Graf and
 * Lemire's binary fuse filter without the fingerprint): three cells in
 * three consecutive segments, picked by the key's mixed hash, whose XOR
 * is the value the key was built with.  For a key it was not built with
 * the answer is arbitrary: a router names where a key is if it is
 * anywhere it covers, never whether it is.  Keys built with several
 * values (a key in two segments; two keys of one 64-bit hash) get
 * TERN_ROUTER_ESCAPE: "ask something else".
 */
#ifndef TERN_ENGINE_ROUTER_H
#define TERN_ENGINE_ROUTER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tern_router {
  uint8_t *cells; /* ncells cells of `bits` bits, little-endian within a byte; NULL: none */
  uint32_t ncells;
  uint32_t seglen; /* cells a segment (a power of two) */
  uint32_t span;   /* segments a key's first cell may fall in, times seglen */
  uint32_t bits;   /* 2, 4 or 8 */
  uint64_t seed;   /* mixed into the hash: the build's attempt that peeled */
  size_t bytes;    /* of cells */
} tern_router;

/* The value meaning "several values, or none the router can name". */
static inline uint32_t tern_router_escape(const tern_router *r) { return (1u << r->bits) - 1; }
#define TERN_ROUTER_MAX_VALUES 255u /* values 0..254 (8 bits; 255 is the escape) */

/* The cell width for values 0..n-1 and the escape: the narrowest of 2, 4
 * and 8 bits whose values n fill at most a quarter of, else 8 (0: n too
 * large).  A key the router was not built with answers any value alike,
 * so at most a quarter of such keys is sent to a segment that lacks it
 * (a block read for nothing) while the other values say "none holds it":
 * up to 4 segments, 4 bits (4.9 bits a key). */
uint32_t tern_router_bits_for(size_t n);

/* Builds r over n pairs (hash[i], value[i]), value[i] < 2^bits - 1;
 * hashes may repeat (same value: kept; different: the escape).  The
 * arrays are the caller's and are reordered.  Gives up (TERN_ESTOPPED)
 * soon after *stop (NULL: none) is set.  Errors: TERN_ENOMEM; TERN_EINVAL
 * (bits not 2, 4 or 8; n too large for 32-bit cells; no seed in 16
 * peeled, which random hashes make vanishingly unlikely). */
int tern_router_build(tern_router *r, uint64_t *hash, uint8_t *value, size_t n, uint32_t bits,
                      const atomic_int *stop);
void tern_router_free(tern_router *r);

/* The hash as the router's cells are picked by it: a 64-bit finalizer
 * (MurmurHash3's) of hash + seed, so that another seed picks other cells. */
static inline uint64_t tern_router_mix(uint64_t h, uint64_t seed) {
  h += seed;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

/* The high 64 bits of m * x, x < 2^32 (a key's first segment). */
static inline uint32_t tern_router_mulhi(uint64_t m, uint32_t x) {
  return (uint32_t)(((m >> 32) * x + (((m & UINT32_MAX) * x) >> 32)) >> 32);
}

/* The three cells of mixed hash m, as a binary fuse filter places them
 * (Graf and Lemire, "Binary Fuse Filters", 2022): in three consecutive
 * segments, the first picked by m, each cell within its segment by other
 * bits of m.  Cells close together make the build's accesses local and a
 * get's three lines near one another. */
static inline void tern_router_cells(const tern_router *r, uint64_t m, uint32_t c[3]) {
  uint32_t mask = r->seglen - 1;
  c[0] = tern_router_mulhi(m, r->span);
  c[1] = (c[0] + r->seglen) ^ ((uint32_t)(m >> 18) & mask);
  c[2] = (c[0] + 2 * r->seglen) ^ ((uint32_t)m & mask);
}

static inline uint32_t tern_router_load(const tern_router *r, uint32_t cell) {
  uint32_t bit = cell * r->bits;
  return (uint32_t)(r->cells[bit >> 3] >> (bit & 7)) & ((1u << r->bits) - 1);
}

/* The value the key of filter hash h was built with (anything in
 * 0..2^bits - 1 for a key it was not built with). */
static inline uint32_t tern_router_get(const tern_router *r, uint64_t h) {
  uint32_t c[3];
  tern_router_cells(r, tern_router_mix(h, r->seed), c);
  return tern_router_load(r, c[0]) ^ tern_router_load(r, c[1]) ^ tern_router_load(r, c[2]);
}

/* Starts fetching the three cells' lines (a hint). */
static inline void tern_router_prefetch(const tern_router *r, uint64_t h) {
  uint32_t c[3];
  tern_router_cells(r, tern_router_mix(h, r->seed), c);
  for (unsigned j = 0; j < 3; j++)
    __builtin_prefetch(r->cells + ((size_t)c[j] * r->bits >> 3));
}

#endif
