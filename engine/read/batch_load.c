/* SPDX-License-Identifier: MIT */
/*
 * batch_load.c — sequential when cheaper, for a whole batch: a cold batch
 * with at least one key per block of its segments' terms needs most of
 * them (n random keys over B blocks touch B(1 - e^(-n/B)) of them: 63% at
 * n = B, 86% at 2B), and then reading the files whole, in order, in
 * 512 KiB reads with a few in flight, costs about what reading those
 * blocks would, while the batch saves the sort and the scattered
 * bookkeeping of the cold path (batch.c): every key is answered in the
 * order given, from the page cache, as a warm batch is.  1,000,000 random
 * keys of 2M, in-process: 1.83 s sorted (CPU-bound: its reads took 0.05 s
 * of it), 0.76 s loaded then in order (docs/benchmarks/HISTORY.md).
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

/* What loading every segment would read, summed: terms blocks, value
 * pages, bytes; 0 when a segment is not mapped (not loaded). */
typedef struct load_size {
  uint64_t blocks, val_pages, bytes;
} load_size;

static int load_size_of(const tern_state *st, load_size *z) {
  *z = (load_size){0, 0, 0};
  for (size_t i = 0; i < st->nslots; i++) {
    const tern_seg *seg = st->slots[i].ref->seg;
    tern_rfile *tim = tern_seg_terms_file(seg), *val = tern_seg_values_file(seg);
    if (!tern_rfile_map(tim)) return 0;
    z->blocks += tern_seg_nblocks(seg);
    z->bytes += tern_rfile_size(tim);
    if (val) {
      z->val_pages += tern_io_npages(tern_rfile_size(val));
      z->bytes += tern_rfile_size(val);
    }
  }
  return 1;
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
  /* A key per block of all the segments together, not of each: keys
   * spread over range-disjoint segments (an ingest's) fall a share in
   * each, and a batch of n keys needs at most n blocks in all. */
  load_size z;
  if (!load_size_of(st, &z) || (uint64_t)n < z.blocks || (uint64_t)n < z.val_pages ||
      z.bytes > memory_share())
    return 0;
  if (depth > LOAD_DEPTH) depth = LOAD_DEPTH;
  for (size_t i = st->nslots; i-- > 0;) {
    const tern_seg *seg = st->slots[i].ref->seg;
    tern_rfile *val = tern_seg_values_file(seg);
    TERN_TRY(tern_rfile_load(tern_seg_terms_file(seg), depth));
    if (val) TERN_TRY(tern_rfile_load(val, depth));
  }
  return 1;
}
