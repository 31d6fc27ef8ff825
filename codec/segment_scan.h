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
 *
 * A primary key's block (every entry one doc and an inline value: the
 * batch decodes the tails too) is decoded a window of runs at a time —
 * as many whole restart runs ending at the entry wanted as one batch
 * holds (up to TERN_TB_KEYS_MAX entries) — and its entries are read from
 * the batch in place, nothing copied per entry; tern_seg_prev_keyed then
 * steps back through it inline, as tern_seg_next_keyed steps forward.
 */
#ifndef TERN_SEGMENT_SCAN_H
#define TERN_SEGMENT_SCAN_H

#include "codec/segment.h"

#include <string.h>

_Static_assert(TERN_KEY_MAX % 16 == 0 && TERN_TB_KEYS_ROOM >= TERN_TB_KEYS_FILL + TERN_TB_TERM_MAX + 16,
               "a keyed step copies its term 16 bytes at a time");

/* The decoded entries of one restart run.  Fields are private. */
typedef struct tern_seg_run_entry tern_seg_run_entry;
typedef struct tern_seg_run {
  uint64_t seg_uid;
  int64_t block_no; /* -1: holds nothing */
  uint32_t first, n;
  /* n when the entries are a keyed window, read in place from `keys`
   * (entry first + j is batch entry j, its tail decoded), else 0 and
   * they are copies in ents / terms / docs; what tern_seg_prev_keyed
   * tests, in one comparison */
  uint32_t keyed_n;
  uint32_t span; /* entries a keyed window tries to hold (fewer where long terms fill the batch) */
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

/* Private: moves c onto entry `index` of its block, in r's keyed window,
 * as tern_seg_prev_term leaves it (`it` and `term` after the entry, its
 * value's place), but for the entry it fills. */
static inline void tern_seg_run_move(tern_seg_cursor *c, const tern_seg_run *r, uint32_t index,
                                     const uint8_t **term, size_t *len) {
  const tern_tb_keys *k = r->keys;
  uint32_t j = index - r->first, n = k->len[j];
  const uint8_t *t = k->bytes + k->off[j];
  c->entry = index;
  c->positioned = 1;
  c->it = (tern_tb_iter){index + 1, k->tends[j], k->kend[j], n};
  /* 16 bytes a copy, no call: the batch holds 32 bytes past its last
   * term, and c->term's TERN_KEY_MAX bytes are whole 16-byte chunks. */
  for (uint32_t i = 0; i < n; i += 16) memcpy(c->term + i, t + i, 16);
  c->keys_on = 0;
  c->keyed_n = 0;
  c->keys_want = 0;
  c->keyed_values = c->blk.f.has_values != 0;
  c->vbit = tern_tb_keys_vbit(k, j);
  c->keyed_vlen = tern_tb_keys_vlen(k, j);
  *term = t;
  *len = n;
}
/* The step back most of a reverse scan takes, for a caller that needs the
 * term at each step and the value only when it asks (tern_seg_next_keyed
 * backwards): when the entry before c's last result is in r's keyed
 * window of c's block, moves c onto it (as tern_seg_prev_term would: a
 * forward step continues from it), points *term / *len at its term (in r,
 * valid until r's next decode) and returns 1; else returns 0 having moved
 * nothing, and the caller calls tern_seg_prev_term.  No tern_term_entry
 * is filled: the entry's value is tern_seg_run_value's.  c must be
 * stepping in s, which the caller keeps open; inline, so that the step is
 * no call. */
static inline int tern_seg_prev_keyed(const tern_seg *s, tern_seg_cursor *c, const tern_seg_run *r,
                                      const uint8_t **term, size_t *len) {
  uint32_t index = c->entry - 1; /* entry 0: wraps, past the window */
  if (index - r->first >= r->keyed_n || r->block_no != c->block_no || r->seg_uid != c->seg_uid ||
      c->seg != s || !c->positioned)
    return 0;
  tern_seg_run_move(c, r, index, term, len);
  return 1;
}
/* The value of the entry tern_seg_prev_keyed stepped to (r's, c's last
 * result), as tern_seg_value gives it for the entry tern_seg_prev_term
 * fills; inline when it is whole bytes of the block or short
 * (tern_seg_keyed_value_fast), else a copy or a read of NAME.val. */
int tern_seg_run_value_copy(const tern_seg *s, tern_seg_cursor *c, const tern_seg_run *r,
                            tern_slice *value);
static inline int tern_seg_run_value(const tern_seg *s, tern_seg_cursor *c, const tern_seg_run *r,
                                     tern_slice *value) {
  if (tern_seg_keyed_value_fast(c, value)) return TERN_OK;
  return tern_seg_run_value_copy(s, c, r, value);
}

#endif
