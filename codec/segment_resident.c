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

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define RESIDENT_NUM 15u /* resident: at least 15/16 of the pages */
#define RESIDENT_DEN 16u

int tern_seg_terms_resident(const tern_seg *s, uint64_t max_pages) {
  if (!s->tim_map) return 0; /* pread mode: sorting saves reads even when cached */
  long psz = sysconf(_SC_PAGESIZE);
  if (psz <= 0) return 0;
  uint64_t size = tern_rfile_size(s->tim);
  size_t pages = (size_t)((size + (uint64_t)psz - 1) / (uint64_t)psz);
  if (pages > max_pages) return 0; /* the check would cost more than the sort it may save */
  unsigned char *vec = malloc(pages ? pages : 1);
  if (!vec) return 0;
  int res = 0;
  if (mincore((void *)s->tim_map, (size_t)size, vec) == 0) {
    size_t in = 0;
    for (size_t i = 0; i < pages; i++) in += vec[i] & 1;
    res = (uint64_t)in * RESIDENT_DEN >= (uint64_t)pages * RESIDENT_NUM;
  }
  free(vec);
  return res;
}
