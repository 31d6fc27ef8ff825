/* SPDX-License-Identifier: MIT */
/*
 * livedocs_impl.h — the inside of a live-docs set, shared by livedocs*.c only.
 *
 * A set takes one of two shapes, whichever costs fewer bytes (tern_ld_settle):
 *
 *   RUNS SET   the deleted docs as one sorted list of maximal runs, first[]
 *              then last[] (u32 doc ids), when there are at most
 *              LD_SET_RUNS_MAX of them: a few runs cost 8 bytes each and
 *              nothing per chunk, and is_live is a short branchless binary
 *              search.  An empty set is a runs set with no runs.
 *   DIRECTORY  one 16-byte slot per chunk of 65,536 doc ids (0.2% of the
 *              chunk's dense bytes), indexed by doc >> 16: is_live reaches
 *              its chunk with one load and no rank arithmetic.  (A
 *              present-bitmap plus rank directory costs less for mostly
 *              empty segments but adds a popcount and two dependent loads to
 *              every probe, about 2 ns, measured.)  A chunk without
 *              deletions has form LD_NONE and no payload.
 *
 * Each stored chunk of a directory takes the form that costs the fewest
 * bytes for its actual contents (tern_ld_chunk_choose), among:
 *
 *   ARRAY   sorted in-chunk offsets, split into B = ceil(len / 2^shift)
 *           buckets of 2^shift docs; u16 index[B+1] gives each bucket's first
 *           entry.  Entries are one byte (the offset's low byte; the bucket
 *           supplies the rest) when shift <= 8, else the whole u16 offset.
 *           The index is what makes is_live cheap: one bucket, at most
 *           LD_SCAN_BYTES of entries, compared 8 at a time (SWAR).
 *   BITMAP  ceil(len/64) u64 words, bit i = offset i deleted.
 *   RUNS    sorted u32 (first << 16 | last) of maximal deleted runs.
 *   FULL    every doc of the chunk deleted; no payload.
 *
 * Payloads are immutable once built and may be shared between generations:
 * `refs` is atomic because sets are read and dropped by many threads.
 */
#ifndef TERN_LIVEDOCS_IMPL_H
#define TERN_LIVEDOCS_IMPL_H

#include "codec/livedocs.h"

#include "codec/status.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define LD_CHUNK_BITS 16u
#define LD_CHUNK_DOCS (1u << LD_CHUNK_BITS)
#define LD_CHUNK_WORDS (LD_CHUNK_DOCS / 64u)
#define LD_MIN_SHIFT 6u   /* a bucket covers at least one 64-doc word */
#define LD_MAX_SHIFT 16u  /* one bucket: a plain sorted array */
#define LD_SCAN_BYTES 32u /* most entry bytes one bucket may hold */
#define LD_SPARSE_ADD_MAX 64u /* most new deletions a chunk takes without a bitmap */
#define LD_SET_RUNS_MAX 256u /* most runs of a runs set: bounds is_live's search to 8 steps */


enum { LD_NONE = 0, LD_ARRAY = 1, LD_BITMAP = 2, LD_RUNS = 3, LD_FULL = 4 };

typedef struct ld_payload {
  _Atomic uint32_t refs;
  uint32_t bytes; /* allocation size, for tern_livedocs_memory */
  uint64_t data[];
} ld_payload;

typedef struct ld_chunk {
  uint8_t form;
  uint8_t shift;  /* ARRAY: log2 of the bucket width */
  uint16_t len;   /* ARRAY: buckets B; BITMAP: words; RUNS: runs; FULL: 0 */
  uint32_t n;     /* deleted docs in the chunk */
  ld_payload *p;  /* NULL for FULL */
} ld_chunk;

struct tern_livedocs {
  uint32_t max_doc;
  uint32_t deleted;
  uint32_t nchunks;
  uint32_t nused;        /* directory: chunks holding deletions */
  ld_chunk *slots;       /* directory: nchunks slots; NULL for a runs set */
  const uint32_t *first; /* runs set: first[nruns] then last[nruns] */
  uint32_t nruns;
  size_t bytes; /* this block: struct + slots or runs */
};

static inline unsigned ld_popcount(uint64_t x) {
#if defined(__POPCNT__)
  return (unsigned)__builtin_popcountll(x);
#else
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (unsigned)((x * 0x0101010101010101ull) >> 56);
#endif
}
static inline unsigned ld_ctz(uint64_t x) { return (unsigned)__builtin_ctzll(x); }

/* Docs in chunk c of a set of max_doc docs. */
static inline uint32_t ld_chunk_len(uint32_t max_doc, uint32_t c) {
  uint32_t left = max_doc - (c << LD_CHUNK_BITS);
  return left < LD_CHUNK_DOCS ? left : LD_CHUNK_DOCS;
}
/* Bits of the last word of a chunk of len docs that are docs. */
static inline uint64_t ld_tail_mask(uint32_t len) {
  return (len & 63u) ? (1ull << (len & 63u)) - 1 : ~0ull;
}

/* The slot of chunk c, or NULL when it has no deletions. */
static inline const ld_chunk *ld_slot(const tern_livedocs *ld, uint32_t c) {
  const ld_chunk *k = &ld->slots[c];
  return k->form == LD_NONE ? NULL : k;
}

/* Array payload layout: entries (n * width bytes, rounded up to even), then
 * u16 index[B+1], then padding so that a 32-byte load from any entry stays
 * inside the payload (the index serves as most of that slack). */
static inline unsigned ld_arr_width(unsigned shift) { return shift <= 8 ? 1u : 2u; }
static inline size_t ld_arr_entry_bytes(uint32_t n, unsigned shift) {
  return ((size_t)n * ld_arr_width(shift) + 1u) & ~(size_t)1u;
}
static inline const uint8_t *ld_arr_entries(const ld_chunk *k) {
  return (const uint8_t *)k->p->data;
}
static inline const uint16_t *ld_arr_index(const ld_chunk *k) {
  return (const uint16_t *)((const uint8_t *)k->p->data + ld_arr_entry_bytes(k->n, k->shift));
}
/* Offset of entry i, which lies in bucket b. */
static inline uint32_t ld_arr_off(const ld_chunk *k, uint32_t i, uint32_t b) {
  const uint8_t *e = ld_arr_entries(k);
  if (k->shift <= 8) return ((b << k->shift) & 0xff00u) | e[i];
  uint16_t v;
  memcpy(&v, e + 2u * i, 2);
  return v;
}

/* --- chunk forms (livedocs_chunk.c) --- */

/* 1 when a run of runs[0..nr) holds off. */
int tern_ld_runs_has(const uint32_t *runs, uint32_t nr, uint32_t off);

/* The cheapest form for a chunk of len docs whose deletions are the bitmap
 * words[0..ceil(len/64)) (bits past len zero, at least one set).  Fills
 * *k (form, shift, len, n) and returns the payload bytes it needs. */
size_t tern_ld_chunk_choose(ld_chunk *k, const uint64_t *words, uint32_t len);
/* The same from a profile: n deletions in r maximal runs, occ[i] of them in
 * 64-doc word i (occ[0..1024) is overwritten). */
size_t tern_ld_chunk_choose_profile(ld_chunk *k, uint16_t *occ, uint32_t n, uint32_t r, uint32_t len);
/* The same from the chunk's deletions as nr maximal runs [first[i],
 * last[i]] (chunk offsets, ascending; nr >= 1): no bitmap, O(nr) for each
 * shift. */
size_t tern_ld_chunk_choose_runs(ld_chunk *k, const uint32_t *first, const uint32_t *last,
                                 uint32_t nr, uint32_t len);
/* Builds k's payload from the words tern_ld_chunk_choose saw.  TERN_ENOMEM. */
int tern_ld_chunk_build(ld_chunk *k, const uint64_t *words, uint32_t len);
/* Chunk k as old (an array, or NULL: none) plus the offsets add[0..m)
 * (ascending, repeats and old ones allowed, m <= LD_SPARSE_ADD_MAX),
 * without a bitmap, in O(old's offsets + m log them): 1 with k
 * built when the cost rules keep it an array (the same chunk
 * tern_ld_chunk_choose and tern_ld_chunk_build would make), 0 when they
 * choose another form (nothing built: the caller takes the bitmap's
 * way), 2 when add holds nothing old lacks; TERN_ENOMEM.  room: for
 * old->n + m offsets. */
int tern_ld_chunk_rebuild_sparse(ld_chunk *k, const ld_chunk *old, const uint16_t *add,
                                 uint32_t m, uint32_t len, uint16_t *room);
/* ORs the chunk's deletions into words[0..1024) (zeroed by the caller). */
void tern_ld_chunk_to_words(const ld_chunk *k, uint64_t *words);
/* The maximal runs of a chunk of len docs, from its own form (no words:
 * O(its payload), an array's entries or a bitmap's words); *first_set and
 * *last_set: whether its first and its last doc are deleted. */
uint32_t tern_ld_chunk_runs(const ld_chunk *k, uint32_t len, int *first_set, int *last_set);
/* Payload bytes a chunk of this shape needs. */
size_t tern_ld_payload_bytes(uint8_t form, uint8_t shift, uint16_t len, uint32_t n);
ld_payload *tern_ld_payload_new(size_t bytes);
void tern_ld_payload_release(ld_payload *p);
static inline void ld_payload_retain(ld_payload *p) {
  if (p) atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
}

/* 1 when one of the cnt entries (cnt * width <= LD_SCAN_BYTES) at e equals
 * off.  Reads LD_SCAN_BYTES bytes whatever cnt is: no branch depends on the
 * data, which is what keeps random probes fast. */
static inline int ld_scan(const uint8_t *e, uint32_t cnt, unsigned width, uint32_t off) {
  uint64_t valid = (1ull << (cnt * width)) - 1u; /* one bit per entry byte */
#if defined(__SSE2__)
  __m128i a = _mm_loadu_si128((const __m128i *)(const void *)e);
  __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(e + 16));
  __m128i x = width == 1 ? _mm_set1_epi8((char)(uint8_t)off) : _mm_set1_epi16((short)(uint16_t)off);
  if (width == 1) {
    a = _mm_cmpeq_epi8(a, x);
    b = _mm_cmpeq_epi8(b, x);
  } else {
    a = _mm_cmpeq_epi16(a, x);
    b = _mm_cmpeq_epi16(b, x);
  }
  uint64_t m = (uint64_t)(uint32_t)_mm_movemask_epi8(a) | (uint64_t)(uint32_t)_mm_movemask_epi8(b) << 16;
  return (m & valid) != 0;
#else
  (void)valid;
  int hit = 0;
  for (uint32_t i = 0; i < cnt; i++) {
    uint16_t v16;
    memcpy(&v16, e + 2u * i, 2);
    uint32_t v = width == 1 ? e[i] : v16;
    hit |= v == (width == 1 ? (off & 0xffu) : off);
  }
  return hit;
#endif
}

/* 1 when offset `off` of the chunk is deleted (any form, LD_NONE too). */
static inline int ld_chunk_has(const ld_chunk *k, uint32_t off) {
  if (TERN_LIKELY(k->form == LD_ARRAY)) {
    const uint16_t *index = ld_arr_index(k);
    uint32_t b = off >> k->shift, lo = index[b];
    unsigned w = ld_arr_width(k->shift);
    return ld_scan(ld_arr_entries(k) + (size_t)lo * w, index[b + 1] - lo, w, off);
  }
  if (k->form == LD_BITMAP) return (int)((k->p->data[off >> 6] >> (off & 63u)) & 1u);
  if (k->form == LD_RUNS) return tern_ld_runs_has((const uint32_t *)k->p->data, k->len, off);
  return k->form == LD_FULL;
}

/* 1 when a run of the runs set holds doc (< max_doc).  Branchless: the
 * last run starting at or before doc, then its end. */
static inline int ld_set_runs_has(const tern_livedocs *ld, uint32_t doc) {
  const uint32_t *first = ld->first;
  uint32_t n = ld->nruns, lo = 0;
  if (n == 0) return 0;
  while (n > 1) {
    uint32_t half = n / 2;
    lo = first[lo + half] <= doc ? lo + half : lo;
    n -= half;
  }
  return (first[lo] <= doc) & (first[ld->nruns + lo] >= doc); /* no branch on the probe */
}

/* The first run of a runs set ending at or after doc (nruns: none). */
uint32_t tern_ld_set_runs_from(const tern_livedocs *ld, uint32_t doc);

/* Appends run [f, l] to first[]/last[] (*nr used), merging it into the
 * run before when they touch; 0 when that would need more than cap. */
static inline int ld_runs_append(uint32_t *first, uint32_t *last, uint32_t *nr, uint32_t cap,
                                 uint32_t f, uint32_t l) {
  if (*nr && last[*nr - 1] + 1u == f) {
    last[*nr - 1] = l;
    return 1;
  }
  if (*nr >= cap) return 0;
  first[*nr] = f;
  last[(*nr)++] = l;
  return 1;
}

/* Maximal runs of set bits in words[0..nw), as absolute doc ids base + bit:
 * appended to first[]/last[] from *nr, merging with the run before when it
 * touches; stops (returns 0) once more than `cap` runs are needed. */
int tern_ld_words_runs(const uint64_t *words, uint32_t nw, uint32_t base, uint32_t *first,
                  uint32_t *last, uint32_t *nr, uint32_t cap);
/* Sets bits [first, last] of words. */
void tern_ld_set_range(uint64_t *words, uint32_t first, uint32_t last);
/* Maximal runs of set bits in words[0..nw). */
uint32_t tern_ld_count_runs(const uint64_t *words, uint32_t nw);

/* --- set assembly (livedocs.c) --- */

/* An empty directory for max_doc docs. */
int tern_ld_alloc(tern_livedocs **out, uint32_t max_doc);
/* A runs set of max_doc docs with room for nruns runs (nruns, deleted set;
 * the caller fills first[]/last[]). */
int tern_ld_alloc_runs(tern_livedocs **out, uint32_t max_doc, uint32_t nruns);
/* What a directory costs beyond the struct both shapes have, in fixed
 * sizes (on LP64 exactly what it holds: 16-byte slots plus one, payloads
 * behind an 8-byte header, rounded to 8), so that the shape a set takes —
 * and so its one encoding — does not depend on the platform: the slots,
 * then each chunk's share. */
static inline uint64_t ld_dir_slots_bytes(uint32_t nchunks) { return 16u * ((uint64_t)nchunks + 1u); }
static inline uint64_t ld_chunk_dir_bytes(const ld_chunk *k) {
  if (k->form == LD_NONE || k->form == LD_FULL) return 0;
  return 8u + ((tern_ld_payload_bytes(k->form, k->shift, k->len, k->n) + 7u) & ~(uint64_t)7u);
}
/* Whether a runs set of these nr runs (maximal, ascending) is the shape
 * the cost rule picks for its docs (tern_ld_settle's rule, decided from
 * the runs without building the directory). */
int tern_ld_runs_are_cheaper(uint32_t max_doc, const uint32_t *first, const uint32_t *last,
                             uint32_t nr);
/* rs (a runs set) plus docs[0..n) (each < max_doc, any order): 1 with
 * *out the new runs set when it stays one (the set tern_livedocs_apply's
 * general way makes), 0 when it becomes a directory (nothing made), or
 * TERN_ENOMEM. */
int tern_ld_apply_runs(tern_livedocs **out, const tern_livedocs *rs, const uint32_t *docs,
                       size_t n);
/* The directory of a runs set's docs. */
int tern_ld_expand(tern_livedocs **out, const tern_livedocs *rs);
/* 1 when the directory `ld` would cost fewer bytes as a runs set. */
int tern_ld_runs_cheaper(const tern_livedocs *ld);
/* Replaces the directory *ld by its runs set when that is cheaper. */
int tern_ld_settle(tern_livedocs **ld);
/* Sets chunk c's slot (empty before); takes k->p. */
void tern_ld_push(tern_livedocs *ld, uint32_t c, const ld_chunk *k);
static inline uint32_t ld_nchunks(uint32_t max_doc) {
  return max_doc ? ((max_doc - 1u) >> LD_CHUNK_BITS) + 1u : 0u;
}

#endif
