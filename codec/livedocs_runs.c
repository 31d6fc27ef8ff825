/* SPDX-License-Identifier: MIT */
/*
 * livedocs_runs.c — deletions applied to a runs set as runs.
 *
 * A set of a few runs (at most LD_SET_RUNS_MAX) stays one while that is
 * its cheaper shape.  Finding that out by building the chunk directory —
 * every chunk holding a deletion expanded to an 8 KiB bitmap, its form
 * chosen and built, then read back into runs — made each one-document
 * delete on a 1M-doc segment cost ~90 µs until the set outgrew the shape
 * (about 150 deletions there), and more on larger segments.  Here the new
 * docs are merged into the runs, each chunk the runs touch is priced from
 * its runs alone (tern_ld_chunk_choose_runs: the form tern_ld_chunk_choose
 * would pick), and the directory's bytes are compared as tern_ld_settle
 * compares them: the same rule, so the same set.  Only when the directory
 * wins does tern_livedocs_apply take its general way.
 */
#include "codec/livedocs_impl.h"

#include "codec/status.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* rs's runs and the ascending docs d[0..n) (repeats allowed), merged into
 * maximal runs in first/last (room for cap): their count, or cap + 1 when
 * there are more; *added: the docs rs did not hold. */
static uint32_t merge_runs(const tern_livedocs *rs, const uint32_t *d, size_t n, uint32_t *first,
                           uint32_t *last, uint32_t cap, uint32_t *added) {
  const uint32_t *of = rs->first, *ol = rs->first + rs->nruns;
  uint32_t nr = 0, i = 0, covered = 0; /* covered: docs below the last old run's end + 1 */
  size_t j = 0;
  *added = 0;
  while (i < rs->nruns || j < n) {
    uint32_t f, l;
    if (j == n || (i < rs->nruns && of[i] <= d[j])) {
      f = of[i];
      l = ol[i++];
      covered = l + 1u; /* l < max_doc <= UINT32_MAX */
    } else {
      f = l = d[j++];
      if ((j > 1 && d[j - 2] == f) || f < covered) continue; /* a repeat, or deleted already */
      (*added)++;
    }
    /* Old runs neither overlap nor touch; a doc left here is in none. */
    if (!ld_runs_append(first, last, &nr, cap, f, l)) return cap + 1u;
  }
  return nr;
}

/* The directory's bytes (dir_cost's) for the docs of these runs: the
 * slots, and each chunk a run touches priced from its runs clipped to it. */
static uint64_t runs_dir_cost(uint32_t max_doc, const uint32_t *first, const uint32_t *last,
                              uint32_t nr) {
  uint32_t cf[LD_SET_RUNS_MAX], cl[LD_SET_RUNS_MAX], nc = 0, cur = UINT32_MAX;
  uint64_t bytes = ld_dir_slots_bytes(ld_nchunks(max_doc));
  ld_chunk k;
  for (uint32_t i = 0; i < nr; i++) {
    for (uint32_t c = first[i] >> LD_CHUNK_BITS; c <= last[i] >> LD_CHUNK_BITS; c++) {
      uint32_t base = c << LD_CHUNK_BITS, len = ld_chunk_len(max_doc, c);
      if (c != cur) { /* the chunk before is whole: price it */
        if (nc) tern_ld_chunk_choose_runs(&k, cf, cl, nc, ld_chunk_len(max_doc, cur));
        if (nc) bytes += ld_chunk_dir_bytes(&k);
        cur = c;
        nc = 0;
      }
      cf[nc] = first[i] > base ? first[i] - base : 0;
      cl[nc++] = last[i] - base < len - 1u ? last[i] - base : len - 1u;
    }
  }
  if (nc) {
    tern_ld_chunk_choose_runs(&k, cf, cl, nc, ld_chunk_len(max_doc, cur));
    bytes += ld_chunk_dir_bytes(&k);
  }
  return bytes;
}

int tern_ld_runs_are_cheaper(uint32_t max_doc, const uint32_t *first, const uint32_t *last,
                             uint32_t nr) {
  return nr <= LD_SET_RUNS_MAX && 8u * (uint64_t)nr < runs_dir_cost(max_doc, first, last, nr);
}

int tern_ld_apply_runs(tern_livedocs **out, const tern_livedocs *rs, const uint32_t *docs,
                       size_t n) {
  assert(!rs->slots);
  uint32_t *d = malloc((n ? n : 1) * sizeof *d);
  if (!d) return tern_fail(TERN_ENOMEM, "livedocs: out of memory sorting %zu deletions", n);
  if (n) memcpy(d, docs, n * sizeof *d);
  qsort(d, n, sizeof *d, cmp_u32);
  uint32_t first[LD_SET_RUNS_MAX], last[LD_SET_RUNS_MAX], added;
  uint32_t nr = merge_runs(rs, d, n, first, last, LD_SET_RUNS_MAX, &added);
  free(d);
  if (!tern_ld_runs_are_cheaper(rs->max_doc, first, last, nr)) return 0;
  tern_livedocs *ns;
  TERN_TRY(tern_ld_alloc_runs(&ns, rs->max_doc, nr));
  uint32_t *nf = (uint32_t *)(uintptr_t)ns->first; /* the block's own runs */
  memcpy(nf, first, nr * sizeof *nf);
  memcpy(nf + nr, last, nr * sizeof *nf);
  ns->deleted = rs->deleted + added;
  *out = ns;
  return 1;
}
