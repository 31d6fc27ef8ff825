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
  l->npages = npages;
  /* Block 0's file offset, as segment_filter.c's probe_offset computes it
   * (the frame's header, then the filter's). */
  l->base = TERN_FRAME_HEADER_SIZE + (uint32_t)tern_filter_block_offset(s->filter, 0);
}
