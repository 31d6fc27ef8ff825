/* SPDX-License-Identifier: MIT */
/*
 * batch_load.c — sequential when cheaper, for a whole batch: a cold batch
 * with at least one key per block of a segment's terms needs most of them
 * (n random keys over B blocks touch B(1 - e^(-n/B)) of them: 63% at n = B,
 * 86% at 2B), and then reading the file whole, in order, in 512 KiB reads
 * with a few in flight, costs about what reading those blocks would, while
 * the batch saves the sort and the scattered bookkeeping of the cold path
 * (batch.c): every key is answered in the order given, from the page
 * cache, as a warm batch is.  At 1,000,000 random keys of 2M this was the
 * difference between 1.8 s (sorted, CPU-bound) and (docs/ARCHITECTURE.md,
 * "Cold batches") the warm path's time plus one sequential read.
 *
 * Only for mapped segments (in pread mode each in-order lookup would pay
 * a pread even from the cache: the sorted path reads each block once),
 * with a read queue (read_depth > 0), and when the files fit in a quarter
 * of the machine's memory: the in-order lookups find the pages in the page
 * cache only if it kept them (evicted, each would be a synchronous fault;
 * the sorted path answers from its own buffers).
 */
#include "engine/read/batch_load.h"

#include "codec/io.h"
#include "codec/status.h"

#include <unistd.h>

/* Reads in flight while loading: a few large sequential reads keep a disk
 * streaming; more only hold memory (TERN_RQ_LOAD_MAX each). */
#define LOAD_DEPTH 4u

/* 1 when slot sl's files are worth loading for n keys. */
static int load_pays(const tern_slot *sl, size_t n) {
  const tern_seg *seg = sl->ref->seg;
  tern_rfile *tim = tern_seg_terms_file(seg), *val = tern_seg_values_file(seg);
  if (!tern_rfile_map(tim)) return 0;
  if ((uint64_t)n < tern_seg_nblocks(seg)) return 0;
  return !val || (uint64_t)n >= tern_io_npages(tern_rfile_size(val));
}

/* A quarter of the machine's memory, in bytes (0: unknown). */
static uint64_t memory_share(void) {
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 4 : 0;
}

int tern_batch_load(tern_snapshot *s, size_t n) {
  const tern_state *st = s->st;
  unsigned depth = s->idx->opts.read_depth;
  if (depth == 0 || st->nslots == 0) return 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < st->nslots; i++) {
    const tern_seg *seg = st->slots[i].ref->seg;
    tern_rfile *val = tern_seg_values_file(seg);
    if (!load_pays(&st->slots[i], n)) return 0;
    bytes += tern_rfile_size(tern_seg_terms_file(seg)) + (val ? tern_rfile_size(val) : 0);
  }
  if (bytes > memory_share()) return 0;
  if (depth > LOAD_DEPTH) depth = LOAD_DEPTH;
  for (size_t i = st->nslots; i-- > 0;) {
    const tern_seg *seg = st->slots[i].ref->seg;
    tern_rfile *val = tern_seg_values_file(seg);
    TERN_TRY(tern_rfile_load(tern_seg_terms_file(seg), depth));
    if (val) TERN_TRY(tern_rfile_load(val, depth));
  }
  return 1;
}
