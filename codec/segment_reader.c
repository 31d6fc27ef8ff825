/* SPDX-License-Identifier: MIT */
/*
 * segment_reader.c — lookups in an open segment.
 *
 * A lookup is: the field's [min, max] range (no I/O), a binary search of
 * the resident terms index for the one block that can hold the key, one
 * read of that block (skipped when the cursor holds it already — batch gets
 * in key order read each block once), and a search inside the block that
 * decodes only the characters it compares (terms_block.c).  The entry's
 * metadata is decoded only for the entry found.  In mmap mode the block is
 * used in place, so a warm lookup makes no system call and no allocation.
 */
#include "codec/segment_internal.h"
#include "codec/status.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static int term_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return alen < blen ? -1 : alen > blen;
}

/* Entries the first batch of terms decoded ahead after a positioning
 * holds without a hint (tern_seg_cursor_expect), and the fewest it holds
 * with one: each batch doubles, so a seek and ten steps decode 12 terms
 * ahead (4 + 8) without a hint, 10 in one batch with one, and a long scan
 * mostly 64 at once. */
#define SCAN_KEYS_FIRST 4u

void tern_seg_cursor_init(tern_seg_cursor *c) {
  memset(c, 0, offsetof(tern_seg_cursor, page));
  c->block_no = -1;
  c->value = NULL;
  c->value_cap = 0;
  c->entry = 0;
  c->bitpos = 0;
  c->seg_uid = 0;
  c->positioned = 0;
  c->keyed_n = 0;
  c->keys_first = SCAN_KEYS_FIRST;
}

void tern_seg_cursor_release(tern_seg_cursor *c) {
  /* Every tern_get releases a cursor that mostly holds nothing: no calls
   * to free then. */
  if (c->pairs) free(c->pairs);
  c->pairs = NULL;
  if (c->keys) free(c->keys);
  c->keys = NULL;
  c->keys_on = 0;
  c->keyed_n = 0;
  if (c->value) free(c->value);
  c->value = NULL;
  c->value_cap = 0;
  c->block_no = -1;
  c->positioned = 0;
  c->keyed_n = 0;
}

/* Makes block b of field f, whose bytes are at p, the cursor's block
 * (save: its decoded header kept, tern_seg_open_block; else not). */
static int hold_block(const tern_seg *s, const tern_seg_field *f, uint64_t b, const uint8_t *p,
                      const tern_ti_block *info, tern_seg_cursor *c, int save) {
  uint64_t gb = f->first_block + b;
  TERN_TRY(save ? tern_seg_open_block(s, f, b, p, info->entries, &c->blk)
                : tern_seg_open_block_unsaved(s, f, b, p, info->entries, &c->blk));
  c->block_steps = 0;
  c->keys_on = 0;
  c->keyed_n = 0;
  c->seg = s;
  c->field = f;
  c->seg_uid = s->uid;
  c->block = p;
  c->block_no = (int64_t)gb;
  c->field_block = b;
  c->block_ord = info->first_ord;
  return TERN_OK;
}

/* Makes block b of field f the cursor's block, reading it unless held. */
static int load_block(const tern_seg *s, const tern_seg_field *f, uint64_t b, tern_seg_cursor *c) {
  uint64_t gb = f->first_block + b;
  if (c->seg_uid == s->uid && c->field == f && c->block_no == (int64_t)gb) return TERN_OK;
  c->block_no = -1;
  c->positioned = 0;
  c->keyed_n = 0;
  tern_ti_block info = {0};
  TERN_TRY(tern_terms_index_block(&f->index, b, &info));
  const uint8_t *p;
  TERN_TRY(tern_rfile_read(s->tim, tern_seg_block_offset(gb), TERN_BLOCK_SIZE, c->page, &p));
  return hold_block(s, f, b, p, &info, c, 1);
}

/* Global block gb as block *b of the unique field *f, or TERN_EINVAL. */
static int unique_block(const tern_seg *s, uint64_t gb, const tern_seg_field **f, uint64_t *b) {
  *f = s->unique;
  if (!*f || gb < (*f)->first_block || gb - (*f)->first_block >= (*f)->nblocks)
    return tern_fail(TERN_EINVAL, "%s: block %llu is not the unique field's", tern_rfile_path(s->tim),
                     (unsigned long long)gb);
  *b = gb - (*f)->first_block;
  return TERN_OK;
}

int tern_seg_cursor_adopt(const tern_seg *s, uint64_t gb, const tern_ti_block *info,
                          const uint8_t *page, tern_seg_cursor *c) {
  const tern_seg_field *f = NULL;
  uint64_t b = 0; /* set unless TERN_EINVAL (gcc cannot tell) */
  TERN_TRY(unique_block(s, gb, &f, &b));
  c->block_no = -1;
  c->positioned = 0;
  c->keyed_n = 0;
  memcpy(c->page, page, TERN_BLOCK_SIZE);
  return hold_block(s, f, b, c->page, info, c, 0); /* a cold batch's block */
}

tern_rfile *tern_seg_terms_file(const tern_seg *s) { return s->tim; }
uint64_t tern_seg_nblocks(const tern_seg *s) { return s->nblocks; }

/* Fills *e with the cursor's current entry, its term at `term`. */
static inline void fill_from(tern_seg_cursor *c, uint32_t index, const uint8_t *term,
                             uint32_t len, const tern_tb_tail *t, tern_term_entry *e) {
  c->entry = index;
  c->positioned = 1;
  e->term = term;
  e->len = len;
  e->ordinal = c->block_ord + index;
  e->meta.df = t->df;
  e->meta.pulsed = t->pulsed;
  e->meta.docs = t->pulsed ? e->docs : NULL;
  e->meta.offset = t->post_off;
  e->meta.length = t->post_len;
  e->value_len = t->vlen;
  e->value_inline = t->vinline;
  e->value_off = t->voff;
  c->vbit = t->vbit; /* the value is taken when asked for (tern_seg_value) */
}

/* Fills *e with the cursor's current entry (term in c->term, c->it.len). */
static void fill_entry(tern_seg_cursor *c, uint32_t index, const tern_tb_tail *t,
                       tern_term_entry *e) {
  c->keys_on = 0; /* `it` and `term` follow this entry: a scan from it starts small */
  c->keyed_n = 0;
  c->keys_want = 0; /* the first batch from here: keys_first (keys_ready) */
  fill_from(c, index, c->term, c->it.len, t, e);
}

static int check_key(const void *term, size_t len) {
  if (!term || len < 1 || len > TERN_KEY_MAX)
    return tern_fail(TERN_EINVAL, "lookup: term of %zu bytes (1 to %u)", len, TERN_KEY_MAX);
  return TERN_OK;
}

/* tern_terms_index_head, inline for keys of 8 bytes or more. */
static inline uint64_t head_of(const uint8_t *k, size_t len) {
  return tern_terms_index_head_at(k, len, 0);
}

/* term within [min, max], kh its head: the heads decide unless equal. */
static inline int in_range(const tern_seg_field *f, const uint8_t *term, size_t len, uint64_t kh) {
  if (!f->nterms) return 0;
  uint64_t lo = head_of(f->min, f->min_len), hi = head_of(f->max, f->max_len);
  if (kh < lo || kh > hi) return 0;
  if (kh == lo && term_cmp(term, len, f->min, f->min_len) < 0) return 0;
  if (kh == hi && term_cmp(term, len, f->max, f->max_len) > 0) return 0;
  return 1;
}

/* The block's address in the mapping when a lookup will read it (mmap
 * mode, not the cursor's block), else NULL. */
static const uint8_t *mapped_block(const tern_seg *s, const tern_seg_field *f, uint64_t b,
                                   const tern_seg_cursor *c) {
  uint64_t gb = f->first_block + b;
  if (!s->tim_map || (c->seg_uid == s->uid && c->field == f && c->block_no == (int64_t)gb))
    return NULL;
  return s->tim_map + (uint64_t)TERN_BLOCK_SIZE * (gb + 1);
}

/* In mmap mode, starts fetching the block's first lines (its header and
 * restart keys) before the block is read, so that their misses overlap
 * the saved header's instead of following it.  (The lines of the run
 * where the key should fall were fetched too, placed from the block the
 * cursor held before: a reused cursor's in-order batch paid 5% for them
 * in cache and gained nothing measurable from memory; docs/benchmarks/
 * HISTORY.md.) */
#define PREFETCH_HDR_LINES 8u /* header and restart keys, typically */
/* These only prefetch, and are inlined always: GCC finds such a static
 * function "const" and drops the calls to it (a prefetch_block out of
 * line lost its prefetches so: single gets at 10M keys 10% slower). */
static inline __attribute__((always_inline)) void prefetch_block_header(const uint8_t *blk) {
  if (!blk) return;
  for (uint32_t line = 0; line < PREFETCH_HDR_LINES; line++) __builtin_prefetch(blk + 64 * line);
}

static inline __attribute__((always_inline)) void prefetch_block(const tern_seg_field *f,
                                                                uint64_t b, const uint8_t *blk) {
  tern_seg_prefetch_header(f, b); /* the block's saved header, if any */
  prefetch_block_header(blk);
}

/* seek_exact in block b, the one the index names for term. */
static int seek_exact_in(const tern_seg *s, const tern_seg_field *f, uint64_t b, const void *term,
                         size_t len, tern_seg_cursor *c, tern_term_entry *e) {
  TERN_TRY(load_block(s, f, b, c));
  uint32_t index;
  tern_tb_tail t = {.docs = e->docs};
  int rc = tern_tb_lower_bound(&c->blk, term, (uint32_t)len, &index, &c->it, &t);
  if (rc <= 0) {
    c->positioned = 0;
    c->keyed_n = 0;
    return rc < 0 ? rc : TERN_NOTFOUND;
  }
  memcpy(c->term, term, len);
  fill_entry(c, index, &t, e);
  return TERN_OK;
}

int tern_seg_seek_exact(const tern_seg *s, const tern_seg_field *f, const void *term, size_t len,
                        tern_seg_cursor *c, tern_term_entry *e) {
  TERN_TRY(check_key(term, len));
  uint64_t kh = head_of(term, len);
  if (!in_range(f, term, len, kh)) return TERN_NOTFOUND;
  uint64_t ih = tern_terms_index_key_head(&f->index, term, len), b;
  TERN_TRY(tern_terms_index_find_head(&f->index, ih, term, len, &b));
  prefetch_block(f, b, mapped_block(s, f, b, c));
  return seek_exact_in(s, f, b, term, len, c, e);
}

/* A step decodes a whole suffix: with the pair table when the block's
 * alphabet suits it.  The table is the cursor's; it serves every block
 * with the alphabet it was built for (a scan of uniform keys builds it
 * once), and is rebuilt for another alphabet only after the cursor has
 * decoded K^2 / 8 entries without it (a rebuild costs about what that
 * many table lookups save), so that short range scans over blocks of
 * varied alphabets pay for few rebuilds.  Without memory, decoding goes on
 * without it.  steps: the entries about to be decoded (a batch's). */
static void use_pairs(tern_seg_cursor *c, uint32_t steps) {
  if (c->blk.pair) return;
  if (c->block_steps++ == 0 && c->pairs) { /* once per block: the table as it is */
    tern_tb_use_pairs(&c->blk, c->pairs, 0);
    if (c->blk.pair) return;
  }
  uint32_t k = c->blk.nsym, build_at = k * k / 8;
  if (k > TERN_TB_PAIR_K || c->blk.group < 2 || (c->plain_steps += steps) < build_at) return;
  c->plain_steps = 0;
  if (!c->pairs) {
    c->pairs = malloc(sizeof *c->pairs);
    if (!c->pairs) return;
    c->pairs->nsym = 0;
  }
  tern_tb_use_pairs(&c->blk, c->pairs, 1);
}

void tern_seg_use_pairs(tern_seg_cursor *c, uint32_t steps) { use_pairs(c, steps); }

/* The block's decode tables before its first step: from the cursor's pair
 * table when that was built for the block's alphabet (a seek's new block,
 * mostly), else filled. */
static void step_tables(tern_seg_cursor *c) {
  if (c->pairs && tern_tb_tables_from_pairs(&c->blk, c->pairs)) return;
  tern_tb_tables(&c->blk);
}

void tern_seg_step_tables(tern_seg_cursor *c) { step_tables(c); }

void tern_seg_cursor_expect(tern_seg_cursor *c, uint64_t steps) {
  c->keys_first = steps < SCAN_KEYS_FIRST    ? SCAN_KEYS_FIRST
                  : steps > TERN_TB_KEYS_MAX ? TERN_TB_KEYS_MAX
                                             : (uint32_t)steps;
}

/* Brings the key side of c->it and c->term back from the end of the
 * terms decoded ahead to the entry before c->it.entry, as tern_tb_iter_next
 * would have left them. */
static void keys_settle(tern_seg_cursor *c) {
  const tern_tb_keys *k = c->keys;
  /* The entry whose tail was decoded last (c->entry may have been moved
   * by a seek back that found nothing). */
  uint32_t j = c->it.entry - 1 - k->first;
  assert(c->keys_on && c->it.entry > k->first && j < k->n);
  memcpy(c->term, k->bytes + k->off[j], k->len[j]);
  c->it.kpos = k->kend[j];
  c->it.len = k->len[j];
  c->keys_on = 0;
  c->keyed_n = 0;
}

/* Decodes entry `index` of the cursor's block (0 <= index <= n: n means the
 * first entry of the next block). */
static int entry_at(const tern_seg *s, tern_seg_cursor *c, uint32_t index, tern_term_entry *e) {
  const tern_seg_field *f = c->field;
  int here = c->positioned; /* c->it follows the entry in c->term, in this block */
  if (here && c->keys_on) keys_settle(c);
  if (index >= c->blk.n) {
    here = 0;
    if (c->field_block + 1 >= f->nblocks) {
      c->positioned = 0;
      c->keyed_n = 0;
      return TERN_NOTFOUND;
    }
    TERN_TRY(load_block(s, f, c->field_block + 1, c));
    index = 0;
  }
  c->positioned = 0;
  c->keyed_n = 0;
  step_tables(c);
  use_pairs(c, 1);
  if (here)
    TERN_TRY(tern_tb_iter_seek_from(&c->blk, &c->it, index, c->term));
  else
    TERN_TRY(tern_tb_iter_seek(&c->blk, &c->it, index, c->term));
  tern_tb_tail t = {.docs = e->docs};
  TERN_TRY(tern_tb_iter_next(&c->blk, &c->it, c->term, &t));
  fill_entry(c, index, &t, e);
  return TERN_OK;
}

int tern_seg_first_term(const tern_seg *s, const tern_seg_field *f, tern_seg_cursor *c,
                        tern_term_entry *e) {
  if (f->nterms == 0) return TERN_NOTFOUND;
  TERN_TRY(load_block(s, f, 0, c));
  return entry_at(s, c, 0, e);
}

/* term_cmp, kh being a's head (head_of): the heads decide unless equal. */
static inline int head_cmp(const uint8_t *a, size_t alen, uint64_t kh, const uint8_t *b,
                           size_t blen) {
  uint64_t bh = head_of(b, blen);
  if (kh != bh) return kh < bh ? -1 : 1;
  return term_cmp(a, alen, b, blen);
}

int tern_seg_seek_ceil(const tern_seg *s, const tern_seg_field *f, const void *term, size_t len,
                       tern_seg_cursor *c, tern_term_entry *e) {
  TERN_TRY(check_key(term, len));
  if (f->nterms == 0) return TERN_NOTFOUND;
  uint64_t kh = head_of(term, len);
  if (head_cmp(term, len, kh, f->max, f->max_len) > 0) return TERN_NOTFOUND;
  if (head_cmp(term, len, kh, f->min, f->min_len) <= 0) return tern_seg_first_term(s, f, c, e);
  uint32_t index;
  int rc = tern_seg_block_lower_bound(s, f, term, len, c, e, &index);
  if (rc != 0) return rc < 0 ? rc : TERN_OK;
  return entry_at(s, c, index, e);
}

/* A scan stepping into block b of f (the field's number): when that block
 * is cold (not checked by this process), the kernel is asked to read the
 * next SCAN_AHEAD blocks in the background, and again each time the scan
 * passes the middle of what it asked for, so a cold scan's reads find
 * their pages in the page cache, read in large requests, instead of
 * waiting for the device block by block.  A warm scan pays one bit test
 * per block.  Hints only: each block is still one counted, checked read. */
#define SCAN_AHEAD TERN_SEG_SCAN_AHEAD
static void scan_ahead(const tern_seg *s, const tern_seg_field *f, uint64_t b, tern_seg_cursor *c) {
  uint64_t gb = f->first_block + b, end = f->first_block + f->nblocks;
  if (c->seg_uid != s->uid || gb + 2 * SCAN_AHEAD < c->ra_until) c->ra_until = 0; /* elsewhere */
  if (gb + SCAN_AHEAD / 2 < c->ra_until || c->ra_until >= end) return;
  if (tern_rfile_page_checked(s->tim, tern_seg_block_offset(gb))) return;
  uint64_t from = c->ra_until > gb ? c->ra_until : gb;
  uint64_t to = from + SCAN_AHEAD < end ? from + SCAN_AHEAD : end;
  tern_rfile_prefetch(s->tim, tern_seg_block_offset(from), (to - from) * TERN_BLOCK_SIZE);
  c->ra_until = to;
}

/* A reverse scan stepping back into block b of f: scan_ahead's twin,
 * asking for the SCAN_AHEAD blocks below the lowest it asked for (or
 * from b down), again each time the scan comes within half of that of
 * its bottom: a cold scan backwards reads in large requests too, instead
 * of a block a read (the mapping reads no more than the page it faults:
 * MADV_RANDOM). */
void tern_seg_scan_behind(const tern_seg *s, const tern_seg_field *f, uint64_t b,
                          tern_seg_cursor *c) {
  uint64_t gb = f->first_block + b, first = f->first_block, low = c->ra_down;
  /* low - 1: the lowest block asked for; elsewhere (another segment, below
   * it, far above it): as if asked down to gb + 1 */
  if (c->seg_uid != s->uid || low == 0 || low - 1 > gb + 1 || gb > low - 1 + 2 * SCAN_AHEAD)
    low = gb + 2;
  c->ra_down = low;
  if (low - 1 + SCAN_AHEAD / 2 <= gb || low - 1 <= first) return;
  if (tern_rfile_page_checked(s->tim, tern_seg_block_offset(gb))) return;
  uint64_t to = low - 1, from = to > first + SCAN_AHEAD ? to - SCAN_AHEAD : first;
  tern_rfile_prefetch(s->tim, tern_seg_block_offset(from), (to - from) * TERN_BLOCK_SIZE);
  c->ra_down = from + 1;
}

/* The batch of terms decoded ahead (c->keys, allocated on a cursor's
 * first step: most cursors only look up), filled with the next
 * c->keys_want entries when the one at c->it.entry is not in it.  0 when
 * no memory: the step then decodes its own term (tern_tb_iter_next). */
static int keys_ready(tern_seg_cursor *c) {
  if (TERN_UNLIKELY(!c->keys)) {
    c->keys = calloc(1, sizeof *c->keys); /* zeroed: a batch may read past its terms */
    c->keys_on = 0;
    c->keyed_n = 0;
    if (!c->keys) return 0;
  }
  tern_tb_keys *k = c->keys;
  uint32_t index = c->it.entry;
  if (c->keys_on && index - k->first < k->n) return 1;
  /* After a positioning (keys_want 0) the hinted size, the second batch
   * as large when the hint raised it, else each batch twice the last. */
  uint32_t want = c->keys_want, next = 2 * want;
  if (want == 0) {
    want = c->keys_first; /* SCAN_KEYS_FIRST .. TERN_TB_KEYS_MAX: init and expect clamp it */
    assert(want >= SCAN_KEYS_FIRST && want <= TERN_TB_KEYS_MAX);
    next = want > SCAN_KEYS_FIRST ? want : 2 * want;
  }
  c->keyed_n = 0; /* k is refilled: a failure leaves it empty */
  use_pairs(c, want);
  int rc = tern_tb_iter_keys(&c->blk, &c->it, c->term, k, want);
  if (rc != TERN_OK) return rc < 0 ? rc : TERN_ECORRUPT; /* entry < n: never TERN_NOTFOUND */
  c->keys_on = 1;
  c->keys_want = next > TERN_TB_KEYS_MAX ? TERN_TB_KEYS_MAX : next;
  return 1;
}

/* One step from the batch: the entry's term was decoded ahead, and its
 * tail too when the batch has them (k->tails), else it is decoded now. */
static inline __attribute__((always_inline)) int next_keyed(tern_seg_cursor *c,
                                                            tern_term_entry *e) {
  const tern_tb_keys *k = c->keys;
  uint32_t index = c->it.entry, j = index - k->first;
  if (TERN_LIKELY(k->tails)) { /* one doc, an inline value: decoded with the terms */
    tern_tb_keys_skip_tail(k, j, &c->it);
    c->entry = index;
    c->positioned = 1;
    e->term = k->bytes + k->off[j];
    e->len = k->len[j];
    e->ordinal = c->block_ord + index;
    e->docs[0] = tern_tb_keys_doc(k, j);
    e->meta.df = 1;
    e->meta.pulsed = 1;
    e->meta.docs = e->docs;
    e->meta.offset = 0;
    e->meta.length = 0;
    e->value_len = tern_tb_keys_vlen(k, j);
    int has = c->blk.f.has_values != 0, inl = has && tern_tb_keys_vbit(k, j) != 0;
    e->value_inline = inl;
    e->value_off = has && !inl ? tern_tb_keys_voff(k, j) : 0;
    c->vbit = tern_tb_keys_vbit(k, j);
    c->keyed_first = k->first; /* keys_on: the caller's test, or keys_ready's */
    c->keyed_n = k->n;
    c->keyed_values = c->blk.f.has_values != 0;
    c->keyed_vlen = e->value_len;
    return TERN_OK;
  }
  tern_tb_tail t;
  t.docs = e->docs;
  c->positioned = 0; /* until the tail is decoded */
  c->keyed_n = 0;
  TERN_TRY(tern_tb_iter_tail(&c->blk, &c->it, &t));
  fill_from(c, index, k->bytes + k->off[j], k->len[j], &t, e);
  return TERN_OK;
}

/* tern_seg_next_term but for a step inside its batch; out of line, so
 * that such a step saves no registers. */
static __attribute__((noinline)) int next_term_slow(const tern_seg *s, tern_seg_cursor *c,
                                                    tern_term_entry *e) {
  if (!c->positioned || c->seg_uid != s->uid || c->seg != s)
    return tern_fail(TERN_EINVAL, "next_term: the cursor holds no position in this segment");
  const tern_seg_field *f = c->field;
  if (c->it.entry >= c->blk.n) {
    if (c->field_block + 1 >= f->nblocks) return TERN_NOTFOUND;
    scan_ahead(s, f, c->field_block + 1, c);
    TERN_TRY(load_block(s, f, c->field_block + 1, c));
    TERN_TRY(tern_tb_iter_restart(&c->blk, &c->it, 0, c->term));
  }
  uint32_t index = c->it.entry;
  c->positioned = 0;
  c->keyed_n = 0;
  if (TERN_UNLIKELY(!c->blk.tables)) step_tables(c); /* once a block: tested inline */
  int ready = keys_ready(c);
  if (TERN_LIKELY(ready == 1)) return next_keyed(c, e);
  if (ready < 0) return ready;
  use_pairs(c, 1);
  tern_tb_tail t = {.docs = e->docs};
  TERN_TRY(tern_tb_iter_next(&c->blk, &c->it, c->term, &t));
  fill_entry(c, index, &t, e);
  return TERN_OK;
}

int tern_seg_next_term(const tern_seg *s, tern_seg_cursor *c, tern_term_entry *e) {
  /* Most steps of a scan: the entry was decoded with its batch. */
  if (TERN_LIKELY(c->it.entry - c->keyed_first < c->keyed_n && c->seg == s &&
                  c->seg_uid == s->uid))
    return next_keyed(c, e);
  return next_term_slow(s, c, e);
}

/* tern_seg_value's read into the cursor's value buffer. */
static int read_value_copy(const tern_seg *s, uint64_t off, uint32_t len, tern_seg_cursor *c,
                           const uint8_t **p) {
  if (c->value_cap < len) {
    uint8_t *v = realloc(c->value, len);
    if (!v) return tern_fail(TERN_ENOMEM, "value of %u bytes: out of memory", len);
    c->value = v;
    c->value_cap = len;
  }
  return tern_rfile_read(s->val, off, len, c->value, p);
}

/* A value of len bytes at byte off of NAME.val lies inside its body. */
static int value_in_file(const tern_seg *s, uint64_t off, uint32_t len) {
  uint64_t size = tern_rfile_size(s->val);
  if (off < TERN_FRAME_HEADER_SIZE || off > size || len > size - TERN_FRAME_FOOTER_SIZE - off)
    return tern_fail(TERN_ECORRUPT, "%s: value of %u bytes at %llu outside the file",
                     tern_rfile_path(s->val), len, (unsigned long long)off);
  return TERN_OK;
}

int tern_seg_value_span(const tern_seg *s, const tern_term_entry *e, uint64_t *off, uint32_t *len) {
  if (e->value_inline || e->value_len == 0) return 0;
  TERN_TRY(value_in_file(s, e->value_off, e->value_len));
  uint64_t last = e->value_off + e->value_len - 1;
  for (uint64_t p = e->value_off / TERN_IO_PAGE; p <= last / TERN_IO_PAGE; p++)
    if (!tern_rfile_page_checked(s->val, p * TERN_IO_PAGE)) {
      *off = e->value_off;
      *len = e->value_len;
      return 1;
    }
  return 0;
}

tern_rfile *tern_seg_values_file(const tern_seg *s) { return s->val; }

/* A value read from NAME.val: its segment holds values in key order, so
 * a scan reads them forwards and asks for the bytes ahead
 * (read_ahead.h), except where they are cached (checked pages). */
static void val_ahead(const tern_seg *s, uint64_t off, uint32_t len, tern_seg_cursor *c) {
  uint64_t from, n;
  if (tern_ahead_read(&c->val_ahead, s->uid, off, len, &from, &n) &&
      !tern_rfile_page_checked(s->val, from))
    tern_rfile_prefetch(s->val, from, n);
}

/* tern_seg_value of a value of len bytes at byte off of NAME.val; out of
 * line, so that the inline case, once a key in a scan, is a leaf that
 * saves no registers. */
static __attribute__((noinline)) int value_from_file(const tern_seg *s, uint64_t off, uint32_t len,
                                                     tern_seg_cursor *c, tern_slice *value) {
  TERN_TRY(value_in_file(s, off, len));
  val_ahead(s, off, len, c);
  /* Warm, in the mapping: one counted read, no buffer.  A buffer is for
   * pread mode and for a mapped page's first touch, read into it (io.h);
   * either way a value costs one read, whatever pages it spans. */
  const uint8_t *p;
  int rc = tern_rfile_read_mapped(s->val, off, len, &p);
  if (rc == 1) rc = read_value_copy(s, off, len, c, &p);
  if (rc != TERN_OK) return rc;
  value->data = p;
  value->len = len;
  return TERN_OK;
}

/* An inline value of vlen bytes at bit c->vbit of c's block. */
static inline int inline_value(tern_seg_cursor *c, uint32_t vlen, tern_slice *value) {
  value->len = vlen;
  value->data = c->vbuf;
  if ((c->vbit & 7) == 0) /* whole bytes of the block, checked when it was read */
    value->data = c->blk.page + (c->vbit >> 3);
  else if (vlen)
    tern_tb_copy_value(&c->blk, &(tern_tb_tail){.vbit = c->vbit, .vlen = vlen}, c->vbuf);
  return TERN_OK;
}

int tern_seg_value(const tern_seg *s, const tern_term_entry *e, tern_seg_cursor *c,
                   tern_slice *value) {
  if (!e->value_inline) return value_from_file(s, e->value_off, e->value_len, c, value);
  return inline_value(c, e->value_len, value);
}

int tern_seg_keyed_value_copy(const tern_seg *s, tern_seg_cursor *c, tern_slice *value) {
  const tern_tb_keys *k = c->keys;
  uint32_t j = c->entry - k->first;
  assert(c->keys_on && c->positioned && k->tails && j < k->n);
  if (c->blk.f.has_values && c->vbit != 0) return inline_value(c, c->keyed_vlen, value);
  /* In NAME.val, or a field without values: what next_keyed's entry gives. */
  if (!c->blk.f.has_values) return value_from_file(s, 0, 0, c, value);
  return value_from_file(s, tern_tb_keys_voff(k, j), c->keyed_vlen, c, value);
}

int tern_seg_postings(const tern_seg *s, const tern_term_entry *e, tern_postings_iter *it) {
  if (e->meta.pulsed) return tern_postings_iter_inline(it, e->docs, e->meta.df);
  return tern_postings_iter_file(it, s->doc, &e->meta);
}

/* The first doc of an entry's postings in NAME.doc (one read). */
static int postings_first_doc(const tern_seg *s, const tern_term_entry *e, uint32_t *doc) {
  tern_postings_iter it;
  TERN_TRY(tern_seg_postings(s, e, &it));
  int rc = tern_postings_iter_next(&it, doc);
  tern_postings_iter_release(&it);
  if (rc == TERN_OK && *doc == TERN_DOC_END)
    rc = tern_fail(TERN_ECORRUPT, "%s: unique term without a doc", tern_rfile_path(s->doc));
  return rc;
}

/* The doc of a unique-field entry: in the entry when pulsed (inline: every
 * get takes it), else the first of its postings. */
static inline int first_doc(const tern_seg *s, const tern_term_entry *e, uint32_t *doc) {
  if (!e->meta.pulsed) return postings_first_doc(s, e, doc);
  *doc = e->docs[0];
  return TERN_OK;
}

int tern_seg_probe_head(tern_seg_probe *p, const void *key, size_t len) {
  TERN_TRY(check_key(key, len));
  p->key = key;
  p->len = len;
  p->head = head_of(key, len);
  return TERN_OK;
}

void tern_seg_probe_hash(tern_seg_probe *p) {
  tern_filter_key_init(&p->fk, tern_filter_hash(p->key, p->len));
}

int tern_seg_probe_init(tern_seg_probe *p, const void *key, size_t len) {
  TERN_TRY(tern_seg_probe_head(p, key, len));
  tern_seg_probe_hash(p);
  return TERN_OK;
}

void tern_seg_gate_of(const tern_seg *s, tern_seg_gate *g) {
  const tern_seg_field *f = s->unique;
  g->filter = tern_filter_view_of(s->filter);
  g->seg = s;
  if (!f || !f->nterms) {
    *g = (tern_seg_gate){.lo = UINT64_MAX, .filter = g->filter, .seg = s};
    return;
  }
  g->lo = head_of(f->min, f->min_len);
  g->hi = head_of(f->max, f->max_len);
  g->min = f->min;
  g->max = f->max;
  g->min_len = (uint32_t)f->min_len;
  g->max_len = (uint32_t)f->max_len;
}

/* The unique field's block that can hold the probe's key (its number in
 * the field), by the resident terms index. */
static int pk_block_of(const tern_seg_field *f, const tern_seg_probe *p, uint64_t *b) {
  uint64_t ih = tern_terms_index_key_head(&f->index, p->key, p->len);
  return tern_terms_index_find_head(&f->index, ih, p->key, p->len, b);
}

int tern_seg_pk_block(const tern_seg *s, const tern_seg_probe *p, tern_ti_walk *walk,
                      uint64_t *gb, tern_ti_block *info) {
  const tern_seg_field *f = s->unique;
  if (!f || !f->nterms) return TERN_NOTFOUND;
  uint64_t b, ih = tern_terms_index_key_head(&f->index, p->key, p->len);
  TERN_TRY(tern_terms_index_walk_find(&f->index, walk, ih, p->key, p->len, &b, info));
  *gb = f->first_block + b;
  return TERN_OK;
}

/* The key's entry and doc id in block b of the unique field, the one the
 * terms index names for it. */
static int pk_find_in(const tern_seg *s, const tern_seg_field *f, uint64_t b,
                      const tern_seg_probe *p, int filter, tern_seg_cursor *c, tern_term_entry *e,
                      uint32_t *doc) {
  int rc = seek_exact_in(s, f, b, p->key, p->len, c, e);
  if (rc == TERN_NOTFOUND && filter == TERN_SEG_FILTER_SKIPPED)
    tern_seg_filter_missed(s, p->fk.hash);
  if (rc != TERN_OK) return rc;
  TERN_TRY(first_doc(s, e, doc));
  if (*doc >= s->max_doc)
    return tern_fail(TERN_ECORRUPT, "%s: key with doc %u of %u", tern_rfile_path(s->tim), *doc,
                     s->max_doc);
  return TERN_OK;
}

int tern_seg_pk_find(const tern_seg *s, const tern_seg_probe *p, int filter, tern_seg_cursor *c,
                     tern_term_entry *e, uint32_t *doc) {
  const tern_seg_field *f = s->unique;
  if (!f || !f->nterms) return TERN_NOTFOUND;
  uint64_t b;
  TERN_TRY(pk_block_of(f, p, &b));
  prefetch_block(f, b, mapped_block(s, f, b, c));
  return pk_find_in(s, f, b, p, filter, c, e, doc);
}

int tern_seg_pk_find_in(const tern_seg *s, const tern_seg_probe *p, int filter, uint64_t gb,
                        tern_seg_cursor *c, tern_term_entry *e, uint32_t *doc) {
  const tern_seg_field *f = NULL;
  uint64_t b = 0; /* set unless TERN_EINVAL (gcc cannot tell) */
  TERN_TRY(unique_block(s, gb, &f, &b));
  return pk_find_in(s, f, b, p, filter, c, e, doc);
}

int tern_seg_doc(const tern_seg *s, uint32_t doc, tern_seg_cursor *c, tern_slice *key,
                 tern_slice *value) {
  const tern_seg_field *f = s->unique;
  if (!f || !(f->flags & TERN_FIELD_DOC_ORDERED))
    return tern_fail(TERN_EINVAL, "doc lookup: the segment's keys are not in doc order");
  if (doc >= f->nterms) return TERN_NOTFOUND;
  /* A doc in the block the cursor stands in (the next hits of a term, in
   * key order) needs neither the index nor the block's header again. */
  if (!(c->positioned && c->seg_uid == s->uid && c->seg == s && c->field == f &&
        doc >= c->block_ord && doc - c->block_ord < c->blk.n)) {
    uint64_t b;
    TERN_TRY(tern_terms_index_find_ordinal(&f->index, doc, &b));
    TERN_TRY(load_block(s, f, b, c));
  }
  tern_term_entry e;
  TERN_TRY(entry_at(s, c, (uint32_t)(doc - c->block_ord), &e));
  if (!e.meta.pulsed || e.meta.df != 1 || e.docs[0] != doc) {
    uint32_t d;
    TERN_TRY(first_doc(s, &e, &d));
    if (d != doc)
      return tern_fail(TERN_ECORRUPT, "%s: key of doc %u has doc %u", tern_rfile_path(s->tim),
                       doc, d);
  }
  if (key) {
    key->data = e.term;
    key->len = e.len;
  }
  if (value) TERN_TRY(tern_seg_value(s, &e, c, value));
  return TERN_OK;
}

int tern_seg_block_lower_bound(const tern_seg *s, const tern_seg_field *f, const void *term,
                               size_t len, tern_seg_cursor *c, tern_term_entry *e,
                               uint32_t *index) {
  /* A cursor's seek: the block's lines fetched as seek_exact's are. */
  uint64_t ih = tern_terms_index_key_head(&f->index, term, len), b;
  TERN_TRY(tern_terms_index_find_head(&f->index, ih, term, len, &b));
  prefetch_block(f, b, mapped_block(s, f, b, c));
  TERN_TRY(load_block(s, f, b, c));
  tern_tb_tail t = {.docs = e->docs};
  int rc = tern_tb_lower_bound(&c->blk, term, (uint32_t)len, index, &c->it, &t);
  if (rc == 1) {
    memcpy(c->term, term, len);
    fill_entry(c, *index, &t, e);
  }
  return rc;
}

/* For segment_scan.c: reverse stepping decodes runs of the cursor's block. */
int tern_seg_load_block(const tern_seg *s, const tern_seg_field *f, uint64_t b,
                        tern_seg_cursor *c) {
  return load_block(s, f, b, c);
}

void tern_seg_fill_entry(tern_seg_cursor *c, uint32_t index, const tern_tb_tail *t,
                         tern_term_entry *e) {
  fill_entry(c, index, t, e);
}
