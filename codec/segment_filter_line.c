/* SPDX-License-Identifier: MIT */
/*
 * segment_filter_line.c — what a get over many segments keeps of one
 * segment's filter beside its key range (codec/segment.h,
 * tern_seg_filter_line): the blocks in the .flt mapping, their count, and
 * the file's checked-pages bitmap, so that an absent key costs the
 * filter's line and one bitmap word, fetched together.
 */
#include "codec/frame.h"
#include "codec/segment_internal.h"

void tern_seg_filter_line_of(const tern_seg *s, tern_seg_filter_line *l) {
  *l = (tern_seg_filter_line){0};
  if (!s->filter) return; /* no filter: the gate says "maybe" */
  tern_filter_view v = tern_filter_view_of(s->filter);
  uint64_t npages = 0;
  const _Atomic uint64_t *bits = tern_rfile_checked_bits(s->flt, &npages);
  if (!v.blocks || !bits) return;
  l->blocks = v.blocks;
  l->nblocks = v.nblocks;
  l->checked = bits;
  l->asked = s->flt_asked;
  l->checked_any = tern_rfile_checked_any(s->flt);
  l->asked_any = &s->flt_asked_any;
  l->npages = npages;
  /* Block 0's file offset, as segment_filter.c's probe_offset computes it
   * (the frame's header, then the filter's). */
  l->base = TERN_FRAME_HEADER_SIZE + (uint32_t)tern_filter_block_offset(s->filter, 0);
}

/* 1 when page p's bit is set (an acquire load: the page's check happened
 * before). */
static int page_bit(const tern_seg_filter_line *l, uint64_t p) {
  uint64_t w = atomic_load_explicit(&l->checked[p / 64], memory_order_acquire);
  return (int)((w >> (p % 64)) & 1);
}

void tern_seg_filter_line_settle(const tern_seg *s, tern_seg_filter_line *l, int check_cached) {
  if (!l->blocks || !l->checked || l->settled || !l->nblocks) return;
  uint64_t first = l->base / TERN_IO_PAGE;
  uint64_t last = ((uint64_t)l->base + (uint64_t)l->nblocks * TERN_FILTER_BLOCK_SIZE - 1) / TERN_IO_PAGE;
  if (last >= l->npages) return; /* blocks past the bitmap: never settled */
  for (uint64_t p = first; p <= last; p++) {
    if (page_bit(l, p)) continue;
    if (!check_cached || tern_rfile_check_cached(s->flt, p * TERN_IO_PAGE) != 1) {
      tern_clear_error(); /* damage: met by the get that reads the page, as before */
      return;
    }
  }
  l->settled = 1;
}
