/* SPDX-License-Identifier: MIT */
/*
 * segment_resident.c — whether a segment's terms file is in the page cache.
 *
 * A batch of lookups sorts its keys so that a cold index reads each block
 * once and in file order; on a warm one the sort and the scattered
 * bookkeeping it needs cost more than the lookups they reorder (measured:
 * docs/BENCHMARKS.md, "Batch gets").  One mincore(2) of the terms file's
 * mapping tells which case this is.  Files the process may not write are
 * reported only as far as this process has mapped them (Linux >= 5.2), so
 * the answer errs towards "not resident": the sorted path, never a wrong one.
 */
#include "codec/segment_internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define RESIDENT_NUM 15u /* resident: at least 15/16 of the pages */
#define RESIDENT_DEN 16u

/* A few pages spread over the file, each asked on its own: a cold file
 * shows absent ones at once, where the whole file's vector costs a byte
 * and a page-cache lookup per page (10M keys: 33K pages, ~1 ms, 7% of a
 * cold batch of 1,000 keys).  SAMPLE_ABSENT absent of SAMPLES put the
 * file's absent share well above 1/16: not resident.  Errs only towards
 * "not resident" (the sorted path), like the whole check. */
#define SAMPLES 32u
#define SAMPLE_ABSENT 3u

static int samples_resident(const uint8_t *map, size_t pages, size_t psz) {
  unsigned absent = 0;
  for (size_t i = 0; pages && i < SAMPLES && absent < SAMPLE_ABSENT; i++) {
    size_t p = (size_t)((uint64_t)pages * (2 * i + 1) / (2 * SAMPLES));
    unsigned char v = 0;
    if (mincore((void *)(map + p * psz), 1, &v) != 0) return 0; /* unknown: as if not */
    absent += !(v & 1);
  }
  return absent < SAMPLE_ABSENT;
}

/* The kept answer (bit 0) and the keys it still serves (the rest): takes
 * `keys` from it if it still serves that many. */
static int take_kept(const tern_seg *s, uint64_t keys, int *ans) {
  _Atomic uint64_t *kept = &((tern_seg *)s)->resident_kept;
  uint64_t v = atomic_load_explicit(kept, memory_order_relaxed);
  while ((v >> 1) >= keys && (v >> 1) > 0)
    if (atomic_compare_exchange_weak_explicit(kept, &v, v - (keys << 1), memory_order_relaxed,
                                              memory_order_relaxed)) {
      *ans = (int)(v & 1);
      return 1;
    }
  return 0;
}

/* Whether keys (with those of the callers not asked for since the last
 * whole check) may pay a whole check of `pages` pages at pages_per_key
 * pages a key; the keys are counted for the next caller when not. */
static int may_ask(const tern_seg *s, uint64_t pages, uint64_t keys, uint64_t pages_per_key) {
  if (pages_per_key >= pages) return 1;
  _Atomic uint64_t *unasked = &((tern_seg *)s)->resident_unasked;
  uint64_t saved = atomic_fetch_add_explicit(unasked, keys, memory_order_relaxed) + keys;
  if (saved < pages / pages_per_key + 1) return 0;
  atomic_store_explicit(unasked, 0, memory_order_relaxed);
  return 1;
}

int tern_seg_terms_resident(const tern_seg *s, uint64_t keys, uint64_t pages_per_key) {
  if (!s->tim_map) return 0; /* pread mode: sorting saves reads even when cached */
  int res = 0;
  if (take_kept(s, keys, &res)) return res;
  long psz = sysconf(_SC_PAGESIZE);
  if (psz <= 0) return 0;
  uint64_t size = tern_rfile_size(s->tim);
  size_t pages = (size_t)((size + (uint64_t)psz - 1) / (uint64_t)psz);
  if (!may_ask(s, pages, keys, pages_per_key)) return 0;
  if (!samples_resident(s->tim_map, pages, (size_t)psz)) return 0;
  unsigned char *vec = malloc(pages ? pages : 1);
  if (!vec) return 0;
  if (mincore((void *)s->tim_map, (size_t)size, vec) == 0) {
    size_t in = 0;
    for (size_t i = 0; i < pages; i++) in += vec[i] & 1;
    res = (uint64_t)in * RESIDENT_DEN >= (uint64_t)pages * RESIDENT_NUM;
    /* The answer is kept for TERN_SEG_RESIDENT_KEPT keys a page of the file,
     * these included: the check's cost (32 sampled pages' calls and a
     * page-table walk, ~77 µs at 10M keys: 12% of a warm batch of 1,024
     * keys) is then at most a sixteenth of a page's worth a key, however
     * large the file (kept a key a page, it was 3% of a warm batch on 1M
     * sequential keys).  Pages evicted or read meanwhile only send those
     * lookups down the slower path: never a wrong answer. */
    uint64_t keep = (uint64_t)pages * TERN_SEG_RESIDENT_KEPT;
    uint64_t left = keep > keys ? keep - keys : 0;
    atomic_store_explicit(&((tern_seg *)s)->resident_kept, left << 1 | (uint64_t)res,
                          memory_order_relaxed);
  }
  free(vec);
  return res;
}
