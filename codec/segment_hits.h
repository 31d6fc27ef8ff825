/* SPDX-License-Identifier: MIT */
/*
 * segment_hits.h — the primary keys of many docs of a segment, in doc
 * order (a term's hits, resolved to keys in key order).
 *
 * Doc ids of a segment whose unique field is doc-ordered are the ranks
 * of its keys, so ascending docs are entries of the field met walking it
 * forward.  tern_seg_hits_fill resolves the docs that fall in one terms
 * block in one call (terms_block.h, tern_tb_resolve): the entries between
 * are walked by their lengths alone, only the characters that survive into
 * a hit's key are decoded, and a hit's value is taken only when asked for,
 * while the cursor still holds the block.
 */
#ifndef TERN_SEGMENT_HITS_H
#define TERN_SEGMENT_HITS_H

#include "codec/segment.h"

/* The resolved keys of one block's hits, and where the walk stands in that
 * block.  Fields are private but n and the keys (tern_seg_hits_key). */
typedef struct tern_seg_hits {
  uint64_t seg_uid;  /* the block `it` walks: the cursor's, when these equal it */
  int64_t block_no;
  tern_tb_iter it;   /* after the last entry resolved (it.entry 0: none yet) */
  uint32_t n;        /* hits held */
  tern_tb_hits tb;
} tern_seg_hits;

void tern_seg_hits_init(tern_seg_hits *h);

/* Resolves the keys of docs[0..n) (ascending doc ids of s) that lie in
 * the terms block of docs[0], at most TERN_TB_HITS_MAX, into h, with c
 * (which then holds that block; c's own position is dropped).  *done:
 * how many (>= 1 when n > 0).  Each entry's doc is checked to be the doc
 * asked for; a doc past the field's keys, or any damage, is
 * TERN_ECORRUPT naming the file.  TERN_EINVAL: not a doc-ordered unique
 * field, or docs not ascending. */
int tern_seg_hits_fill(const tern_seg *s, tern_seg_cursor *c, tern_seg_hits *h,
                       const uint32_t *docs, size_t n, size_t *done);

/* Hit j's key (j < h->n): in h, until the next fill. */
static inline tern_slice tern_seg_hits_key(const tern_seg_hits *h, uint32_t j) {
  return (tern_slice){h->tb.bytes + h->tb.hit[j].off, h->tb.hit[j].len};
}

/* Hit j's value, while c holds the block of the fill (until c is used
 * otherwise): in the block, c or the values file, as tern_seg_value. */
int tern_seg_hits_value(const tern_seg *s, tern_seg_cursor *c, const tern_seg_hits *h, uint32_t j,
                        tern_slice *value);

#endif
