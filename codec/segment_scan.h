/* SPDX-License-Identifier: MIT */
/*
 * segment_scan.h — walking a field's terms backwards.
 *
 * Forward stepping (tern_seg_next_term) decodes entries in order, since
 * entries are prefix-coded against the previous one (a batch of terms at
 * a time: terms_block.h, tern_tb_iter_keys).  Backwards, an entry
 * cannot be decoded from the one after it, so a step back decodes the
 * whole restart run (at most restart-interval entries) holding the entry
 * wanted into a tern_seg_run, from its restart forward, once (by the
 * batches a forward scan decodes: tern_tb_iter_keys); the steps back
 * through that run then cost a copy each.  Amortised, a step back
 * decodes one entry, and a block is read once, as forwards.
 */
#ifndef TERN_SEGMENT_SCAN_H
#define TERN_SEGMENT_SCAN_H

#include "codec/segment.h"

/* The decoded entries of one restart run.  Fields are private. */
typedef struct tern_seg_run_entry tern_seg_run_entry;
typedef struct tern_seg_run {
  uint64_t seg_uid;
  int64_t block_no; /* -1: holds nothing */
  uint32_t first, n;
  tern_seg_run_entry *ents;
  uint32_t cap;
  uint8_t *terms;
  size_t tcap;
  tern_tb_keys *keys; /* the batches a run is decoded by (allocated on first use) */
  uint32_t *docs;     /* the entries' pulsed doc ids */
  size_t dcap;
} tern_seg_run;
void tern_seg_run_init(tern_seg_run *r);
void tern_seg_run_release(tern_seg_run *r);

/* The field's last term; TERN_NOTFOUND when it has none. */
int tern_seg_last_term(const tern_seg *s, const tern_seg_field *f, tern_seg_cursor *c,
                       tern_seg_run *r, tern_term_entry *e);
/* The term before the cursor's last result (of seek, next, prev or last);
 * TERN_NOTFOUND before the first.  Afterwards tern_seg_next_term continues
 * forward from the term returned. */
int tern_seg_prev_term(const tern_seg *s, tern_seg_cursor *c, tern_seg_run *r,
                       tern_term_entry *e);
/* The last term <= `term`; TERN_NOTFOUND when there is none. */
int tern_seg_seek_floor(const tern_seg *s, const tern_seg_field *f, const void *term, size_t len,
                        tern_seg_cursor *c, tern_seg_run *r, tern_term_entry *e);

#endif
