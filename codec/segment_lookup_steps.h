/* SPDX-License-Identifier: MIT */
/*
 * segment_lookup_steps.h — one primary-key lookup in one segment cut into
 * steps, for a caller that keeps many lookups in flight and interleaves
 * them (asynchronous memory-access chaining, Kocberber et al., VLDB 2015):
 * each step uses what the previous one started fetching, then starts
 * fetching what the next needs, and returns, so that the caller can step
 * another lookup while the lines arrive.  Nothing is searched twice: the
 * state between steps is carried in tern_seg_lookup.
 *
 *   start   the key's hash and head, the segment's range; fetch the
 *           filter's line (and, given the segment's filter line, its
 *           page's word of the checked bitmap).
 *   filter  the filter; the resident terms index's directory names the
 *           group of blocks; fetch the group's heads.
 *   index   the group's heads name the block; fetch the block's header
 *           and restart keys.
 *   block   the block's header, the restart search; fetch the run that
 *           holds the key (keys and tails).
 *   run     the run's scan, the entry's tail (doc id, value); fetch an
 *           external value.
 *
 * It answers exactly as tern_seg_gate_pass + tern_seg_pk_find, for warm
 * mapped segments: a step that would need I/O or a buffer (a block or
 * value page this process has not checked, a segment read with pread, a
 * doc id in NAME.doc) answers TERN_SEG_LOOKUP_SLOW instead, and the
 * caller looks that key up the ordinary way.  Each block is read (and
 * counted) once per run of lookups that share it (tern_seg_block_memo).  Valid while the segment is
 * open.  Pure: no engine, no clock.
 */
#ifndef TERN_SEGMENT_LOOKUP_STEPS_H
#define TERN_SEGMENT_LOOKUP_STEPS_H

#include "codec/segment.h"
#include "codec/terms_block.h"
#include "codec/terms_index.h"

#include <stddef.h>
#include <stdint.h>

/* What a step returns besides TERN_OK (found), TERN_NOTFOUND and errors. */
#define TERN_SEG_LOOKUP_MORE 1 /* step again: the lines it needs are on their way */
#define TERN_SEG_LOOKUP_SLOW 2 /* this key needs tern_seg_pk_find (I/O, a buffer) */

typedef struct tern_seg_lookup {
  const tern_seg_gate *gate;
  const tern_seg_filter_line *line; /* NULL: the gate's filter */
  const uint8_t *fblock;            /* the line's block for the key (NULL: none) */
  uint64_t fpage;                   /* and its page */
  tern_seg_probe p;                 /* p.fk's masks made only when a filter block is tested */
  int hashed;                       /* 0: p.fk.hash not made (the line idle: every probe skipped) */
  int step, filter;
  uint64_t ih, group;         /* the key's index head; its group of blocks */
  uint64_t gb;                /* the block (global number) */
  tern_tb_pending pd;         /* the run to scan */
  tern_tb_iter it;
  tern_tb_tail t;             /* the entry found: doc id, value */
  uint32_t index;
  uint32_t docs[TERN_TB_DOCS_MAX];
  tern_tb_block blk;          /* the block's header (lookup tables only) */
} tern_seg_lookup;

/* The blocks the last lookups of one segment read, so that lookups of
 * neighbouring keys (a sorted batch) read a shared block once, as one
 * cursor would: a read is counted per block, not per key (io.h).  Zeroed
 * by the caller for each segment. */
#define TERN_SEG_MEMO 4u
typedef struct tern_seg_block_memo {
  uint64_t gb[TERN_SEG_MEMO]; /* + 1: 0 is empty */
  const uint8_t *page[TERN_SEG_MEMO];
  unsigned next;
} tern_seg_block_memo;

/* Whether segment s can be looked up in steps at all (mapped terms). */
int tern_seg_lookup_usable(const tern_seg *s);
/* Starts looking up key (1 to TERN_KEY_MAX bytes: TERN_EINVAL else) in
 * the segment of gate g: TERN_SEG_LOOKUP_MORE, or TERN_NOTFOUND (outside
 * its range).  line (NULL: none) is the segment's filter line
 * (tern_seg_filter_line_of): the filter step then asks it first
 * (tern_seg_filter_line_gate: a present key whose filter page was never
 * needed costs two bitmap words, not the gate), the key's bit masks are
 * made only when a filter block is tested, and its hash not at all while
 * the line is idle (tern_seg_filter_line_idle) but for a miss. */
int tern_seg_lookup_start(tern_seg_lookup *l, const tern_seg_gate *g,
                          const tern_seg_filter_line *line, const void *key, size_t len);
/* The next step: TERN_SEG_LOOKUP_MORE, TERN_OK (found: tern_seg_lookup_doc,
 * tern_seg_lookup_value), TERN_NOTFOUND, TERN_SEG_LOOKUP_SLOW, or
 * TERN_ECORRUPT naming the file. */
int tern_seg_lookup_step(tern_seg_lookup *l, tern_seg_block_memo *memo);
/* The doc id of the key found (< the segment's max_doc). */
static inline uint32_t tern_seg_lookup_doc(const tern_seg_lookup *l) { return l->t.docs[0]; }
/* The length of the found key's value, and whether it is in the block. */
static inline uint32_t tern_seg_lookup_vlen(const tern_seg_lookup *l) { return l->t.vlen; }
static inline int tern_seg_lookup_inline(const tern_seg_lookup *l) { return l->t.vinline; }
/* The value of the key found.  Inline (in the block): copied into out
 * (room for tern_seg_lookup_vlen bytes), *v its bytes there.  In NAME.val:
 * *v points into the mapping, valid while the segment is open (out
 * unused).  TERN_OK, TERN_SEG_LOOKUP_SLOW (a value page not checked yet:
 * tern_seg_value reads it), TERN_ECORRUPT naming NAME.val. */
int tern_seg_lookup_value(const tern_seg_lookup *l, uint8_t *out, tern_slice *v);
/* The found key's value in place when it is in the block as whole bytes
 * (a primary key's values are): 1 with *v pointing into the segment's
 * mapping, valid while the segment is open; else 0 (nothing done:
 * tern_seg_lookup_value). */
static inline int tern_seg_lookup_value_inplace(const tern_seg_lookup *l, tern_slice *v) {
  if (!l->t.vinline || (l->t.vbit & 7) != 0) return 0;
  v->data = l->blk.page + (l->t.vbit >> 3);
  v->len = l->t.vlen;
  return 1;
}

#endif
