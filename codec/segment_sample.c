/* SPDX-License-Identifier: MIT */
/*
 * segment_sample.c — a field's blocks as its resident terms index sees
 * them (segment.h): a sample of the key space that costs no I/O.
 */
#include "codec/segment_internal.h"

#include "codec/status.h"

uint64_t tern_seg_field_nblocks(const tern_seg_field *f) { return f->index.nblocks; }

int tern_seg_field_block(const tern_seg_field *f, uint64_t b, const uint8_t **sep, size_t *len,
                         uint32_t *entries) {
  tern_ti_block blk = {0};
  TERN_TRY(tern_terms_index_block(&f->index, b, &blk));
  *entries = blk.entries;
  return tern_terms_index_sep(&f->index, b, sep, len);
}
