/* SPDX-License-Identifier: MIT */
/*
 * segment_filter.c — the membership filter of a segment's unique field,
 * probed where it lies in the mapping of NAME.flt and checked one 4 KiB page
 * at a time, so that opening a segment reads none of it.
 *
 * Cost model (docs/ARCHITECTURE.md, "Opening a segment"): a filter page
 * that is not in the page cache costs one random read, exactly what the
 * terms block costs.  Reading it first would make a cold present key two
 * reads and save nothing on a cold absent key (one read either way), so a
 * probe uses only pages this process has checked, and skips the others:
 * the block answers.  When the block then finds the key absent, the filter
 * would have saved that read, so the page is asked for in the background
 * (MADV_WILLNEED) and marked; a later probe of a marked page asks
 * mincore(2) whether it has arrived, and if so checks it (a 4 KiB hash, no
 * I/O) and uses it from then on.  A present key never makes a system call
 * for the filter; a process holds the filter pages its absent keys need,
 * and a present-key workload never reads the filter at all.
 */
#include "codec/frame.h"
#include "codec/segment_internal.h"
#include "codec/status.h"

#include <stdatomic.h>
#include <stdlib.h>

static int asked(const tern_seg *s, uint64_t page) {
  return (atomic_load_explicit(&s->flt_asked[page / 64], memory_order_relaxed) >> (page % 64)) & 1;
}

/* The file offset of the block a probe of `hash` reads. */
static uint64_t probe_offset(const tern_seg *s, uint64_t hash) {
  return TERN_FRAME_HEADER_SIZE + tern_filter_block_offset(s->filter, hash);
}

/* The filter page at `off`, not checked yet by this process: checked now
 * when it was asked for and has arrived (1), else TERN_SEG_FILTER_SKIPPED,
 * or the damage. */
static int check_unchecked(const tern_seg *s, uint64_t off) {
  if (!asked(s, off / TERN_IO_PAGE)) return TERN_SEG_FILTER_SKIPPED;
  int rc = tern_rfile_check_cached(s->flt, off);
  if (rc <= 0) return rc < 0 ? rc : TERN_SEG_FILTER_SKIPPED;
  atomic_fetch_add_explicit(&((tern_seg *)s)->flt_checked, 1, memory_order_relaxed);
  return 1;
}

int tern_seg_gate_filter(const tern_seg_gate *g, const tern_seg_probe *p) {
  const tern_seg *s = g->seg;
  if (!s->filter) return TERN_SEG_FILTER_MAYBE;
  uint64_t off = probe_offset(s, p->fk.hash);
  if (TERN_UNLIKELY(!tern_rfile_page_checked(s->flt, off))) {
    int rc = check_unchecked(s, off);
    if (rc != 1) return rc;
  }
  return tern_filter_view_may_contain(g->filter, &p->fk);
}

void tern_seg_filter_missed(const tern_seg *s, uint64_t hash) {
  if (!s->filter) return;
  uint64_t off = probe_offset(s, hash), page = off / TERN_IO_PAGE;
  /* Asked again when asked before: the page may have been dropped from the
   * cache (eviction, memory pressure) before a probe checked it. */
  if (!asked(s, page)) {
    atomic_fetch_or_explicit(&s->flt_asked[page / 64], 1ull << (page % 64), memory_order_relaxed);
    if (!atomic_load_explicit(&s->flt_asked_any, memory_order_relaxed)) /* s const: a hint */
      atomic_store_explicit(&((tern_seg *)s)->flt_asked_any, 1, memory_order_relaxed);
  }
  tern_rfile_will_need(s->flt, off);
}

void tern_seg_filter_forget(tern_seg *s) {
  if (!s->flt_asked) return;
  uint64_t words = (tern_io_npages(tern_rfile_size(s->flt)) + 63) / 64;
  for (uint64_t i = 0; i < words; i++) atomic_store(&s->flt_asked[i], 0);
}

/* The body's size as .tix records it, against what the field table says. */
static int check_body_size(const tern_seg *s, uint64_t body, uint32_t *nblocks) {
  const char *path = tern_rfile_path(s->flt);
  int want = s->unique && s->unique->nterms && s->bloom_bits;
  *nblocks = 0;
  if (!want && body == 0) return TERN_OK;
  if (!want || body == 0)
    return tern_fail(TERN_ECORRUPT, "%s: filter %s", path,
                     want ? "missing" : "present where none was written");
  *nblocks = body > SIZE_MAX ? 0 : tern_filter_nblocks_of((size_t)body);
  if (*nblocks == 0)
    return tern_fail(TERN_ECORRUPT, "%s: a filter body of %llu bytes", path,
                     (unsigned long long)body);
  return TERN_OK;
}

int tern_seg_filter_open(tern_seg *s, const char *dir, const char *name) {
  if (!s->flt) { /* not opened ahead (segment_open.c) */
    char *path = tern_seg_path(dir, name, SEG_FLT, 0);
    if (!path) return tern_fail(TERN_ENOMEM, "out of memory");
    int rc = tern_rfile_open(&s->flt, path, TERN_IO_MMAP);
    free(path);
    if (rc != TERN_OK) return rc;
  }
  uint64_t size = tern_rfile_size(s->flt);
  if (size != s->flt_size)
    return tern_fail(TERN_ECORRUPT, "%s: %llu bytes, %llu expected%s", tern_rfile_path(s->flt),
                     (unsigned long long)size, (unsigned long long)s->flt_size,
                     size < s->flt_size ? ": truncated" : "");
  TERN_TRY(tern_rfile_set_page_sums(s->flt, s->sums[2], tern_seg_page_seed(s->segid, SEG_FLT)));
  uint32_t nblocks;
  TERN_TRY(check_body_size(s, size - TERN_FRAME_HEADER_SIZE - TERN_FRAME_FOOTER_SIZE, &nblocks));
  if (nblocks == 0) return TERN_OK;
  if (!(s->flt_asked = calloc((tern_io_npages(size) + 63) / 64, sizeof *s->flt_asked)))
    return tern_fail(TERN_ENOMEM, "%s: out of memory", tern_rfile_path(s->flt));
  const uint8_t *body = tern_rfile_map(s->flt) + TERN_FRAME_HEADER_SIZE;
  if (!(s->filter = tern_filter_at(body + TERN_FILTER_HEADER_SIZE, nblocks)))
    return tern_fail(TERN_ENOMEM, "%s: out of memory", tern_rfile_path(s->flt));
  return TERN_OK;
}
