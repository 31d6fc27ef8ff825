/* SPDX-License-Identifier: MIT */
/*
 * segment_hits.c — the primary keys of ascending docs of a segment, a
 * terms block at a time (segment_hits.h).
 */
#include "codec/segment_hits.h"
#include "codec/segment_internal.h"
#include "codec/status.h"

#include <assert.h>
#include <string.h>

void tern_seg_hits_init(tern_seg_hits *h) {
  h->seg_uid = 0;
  h->block_no = -1;
  h->it.entry = 0;
  h->n = 0;
  h->tb.n = 0;
}

/* Whether c holds the unique field's block of doc d. */
static inline int holds_doc(const tern_seg *s, const tern_seg_cursor *c, uint32_t d) {
  return c->seg_uid == s->uid && c->seg == s && c->field == s->unique && c->block_no >= 0 &&
         d >= c->block_ord && d - c->block_ord < c->blk.n;
}

/* In mmap mode, starts fetching the start of the block after the one
 * just loaded, which the next fill will most likely load: a walk forward
 * crosses a page boundary there, which the hardware prefetcher does not. */
static inline __attribute__((always_inline)) void prefetch_next_block(const tern_seg *s,
                                                                      const tern_seg_cursor *c) {
  uint64_t next = (uint64_t)c->block_no + 1;
  if (!s->tim_map || c->field_block + 1 >= c->field->nblocks) return;
  const uint8_t *p = s->tim_map + (uint64_t)TERN_BLOCK_SIZE * (next + 1);
  for (uint32_t line = 0; line < TERN_BLOCK_SIZE / 64; line++) __builtin_prefetch(p + 64 * line);
  tern_seg_prefetch_header(c->field, c->field_block + 1);
}

/* Makes the block of doc d the cursor's, and h's walk stand in it. */
static int hold(const tern_seg *s, tern_seg_cursor *c, tern_seg_hits *h, uint32_t d) {
  const tern_seg_field *f = s->unique;
  if (!holds_doc(s, c, d)) {
    if (d >= f->nterms)
      return tern_fail(TERN_ECORRUPT, "%s: doc %u of a term past the %llu keys",
                       tern_rfile_path(s->tim), d, (unsigned long long)f->nterms);
    uint64_t b;
    TERN_TRY(tern_terms_index_find_ordinal(&f->index, d, &b));
    TERN_TRY(tern_seg_load_block(s, f, b, c));
    if (!holds_doc(s, c, d))
      return tern_fail(TERN_ECORRUPT, "%s: block %llu does not hold key %u",
                       tern_rfile_path(s->tim), (unsigned long long)c->block_no, d);
    prefetch_next_block(s, c);
  }
  if (h->seg_uid != c->seg_uid || h->block_no != c->block_no) {
    h->seg_uid = c->seg_uid;
    h->block_no = c->block_no;
    h->it.entry = 0;
  }
  c->positioned = 0; /* the walk is h's: c's own position is not kept */
  return TERN_OK;
}

/* The doc of hit j whose entry has no single pulsed doc: its postings'
 * first (one read). */
static int postings_doc(const tern_seg *s, const tern_tb_hit *x, uint32_t *doc) {
  tern_term_entry e = {.meta = {.df = x->df, .pulsed = 0, .offset = x->post_off,
                                .length = x->post_len}};
  tern_postings_iter it;
  TERN_TRY(tern_seg_postings(s, &e, &it));
  int rc = tern_postings_iter_next(&it, doc);
  tern_postings_iter_release(&it);
  if (rc == TERN_OK && *doc == TERN_DOC_END)
    rc = tern_fail(TERN_ECORRUPT, "%s: unique term without a doc", tern_rfile_path(s->doc));
  return rc;
}

/* Every hit's entry has the doc asked for: when every doc is the block's
 * base plus the entry (h->tb.direct), as every doc asked for is the
 * cursor's first ordinal plus the entry, the first hit's says it for all. */
static int check_docs(const tern_seg *s, const tern_seg_hits *h, const uint32_t *docs) {
  for (uint32_t j = 0; j < (h->tb.direct && h->n ? 1 : h->n); j++) {
    const tern_tb_hit *x = &h->tb.hit[j];
    uint32_t d = x->doc;
    if (TERN_UNLIKELY(x->flags & TERN_TB_HIT_POSTINGS)) TERN_TRY(postings_doc(s, x, &d));
    if (TERN_UNLIKELY(d != docs[j]))
      return tern_fail(TERN_ECORRUPT, "%s: key of doc %u has doc %u", tern_rfile_path(s->tim),
                       docs[j], d);
  }
  return TERN_OK;
}

int tern_seg_hits_fill(const tern_seg *s, tern_seg_cursor *c, tern_seg_hits *h,
                       const uint32_t *docs, size_t n, size_t *done) {
  const tern_seg_field *f = s->unique;
  *done = 0;
  h->n = 0;
  if (!f || !(f->flags & TERN_FIELD_DOC_ORDERED))
    return tern_fail(TERN_EINVAL, "doc lookup: the segment's keys are not in doc order");
  if (n == 0) return TERN_OK;
  TERN_TRY(hold(s, c, h, docs[0]));
  uint32_t m = n < TERN_TB_HITS_MAX ? (uint32_t)n : TERN_TB_HITS_MAX, got;
  tern_seg_step_tables(c);
  tern_seg_use_pairs(c, m);
  int rc = tern_tb_resolve(&c->blk, &h->it, &h->tb, docs, m, c->block_ord, &got);
  h->n = h->tb.n;
  if (rc == TERN_OK) rc = check_docs(s, h, docs);
  if (rc != TERN_OK) {
    h->it.entry = 0; /* the next fill starts from a restart */
    h->n = 0;
    return rc;
  }
  if (TERN_UNLIKELY(got == 0)) /* hold made the block docs[0]'s: it was not before the walk */
    return tern_fail(TERN_EINVAL, "%s: docs to resolve not ascending", tern_rfile_path(s->tim));
  *done = got;
  return TERN_OK;
}

int tern_seg_hits_value(const tern_seg *s, tern_seg_cursor *c, const tern_seg_hits *h, uint32_t j,
                        tern_slice *value) {
  const tern_tb_hit *x = &h->tb.hit[j];
  assert(j < h->n && c->seg_uid == h->seg_uid && c->block_no == h->block_no);
  tern_term_entry e = {.value_len = x->vlen,
                       .value_inline = (x->flags & TERN_TB_HIT_VINLINE) != 0,
                       .value_off = x->voff};
  c->vbit = x->vbit;
  return tern_seg_value(s, &e, c, value);
}
