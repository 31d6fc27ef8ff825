/* SPDX-License-Identifier: MIT */
/*
 * segment_verify.c — the full check of a segment: every file's checksum,
 * then every block decoded entry by entry and checked against the field
 * table and the terms index (counts, order, separators, range), every
 * postings list and external value against its file, every unique key
 * against the filter.  Reads everything; for tools and tests, not lookups.
 */
#include "codec/frame.h"
#include "codec/segment_internal.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

static int term_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return alen < blen ? -1 : alen > blen;
}

static int verify_path(const char *path, uint32_t kind, const uint8_t *segid) {
  tern_rfile *f;
  TERN_TRY(tern_rfile_open(&f, path, TERN_IO_PREAD));
  int rc = tern_frame_verify_file(f, kind, TERN_SEG_VERSION, segid, NULL);
  tern_rfile_close(f);
  return rc;
}

/* The filter's header, which lookups never read: what the body's size
 * says (open) must be what the header says. */
static int verify_filter_header(const tern_seg *s) {
  if (!s->filter) return TERN_OK;
  uint64_t len = tern_rfile_size(s->flt) - TERN_FRAME_HEADER_SIZE - TERN_FRAME_FOOTER_SIZE;
  tern_filter *f;
  TERN_TRY(tern_filter_open(&f, tern_rfile_map(s->flt) + TERN_FRAME_HEADER_SIZE, (size_t)len,
                            tern_rfile_path(s->flt)));
  tern_filter_free(f);
  return TERN_OK;
}

/* NAME.tim's page 0 is the frame header and zeros up to the page's
 * checksum (its trailer, checked with the page). */
static int verify_tim_head(const tern_seg *s, uint8_t *page) {
  const uint8_t *p;
  TERN_TRY(tern_rfile_read(s->tim, 0, TERN_BLOCK_SIZE, page, &p));
  for (size_t i = TERN_FRAME_HEADER_SIZE; i < TERN_TB_PAGE; i++)
    if (p[i])
      return tern_fail(TERN_ECORRUPT, "%s: page 0: padding not zero", tern_rfile_path(s->tim));
  return TERN_OK;
}

static int verify_checksums(const tern_seg *s) {
  TERN_TRY(tern_frame_verify_file(s->tim, TERN_KIND_TERMS, TERN_SEG_VERSION, s->segid, NULL));
  TERN_TRY(tern_frame_verify_file(s->doc, TERN_KIND_POSTINGS, TERN_SEG_VERSION, s->segid, NULL));
  TERN_TRY(tern_frame_verify_file(s->val, TERN_KIND_VALUES, TERN_SEG_VERSION, s->segid, NULL));
  /* Every page against its read-path checksum, checked before or not. */
  TERN_TRY(tern_rfile_check_pages(s->tim));
  TERN_TRY(tern_rfile_check_pages(s->doc));
  TERN_TRY(tern_rfile_check_pages(s->val));
  TERN_TRY(tern_frame_verify_file(s->flt, TERN_KIND_FILTER, TERN_SEG_VERSION, s->segid, NULL));
  TERN_TRY(tern_rfile_check_pages(s->flt));
  TERN_TRY(verify_filter_header(s));
  return verify_path(s->tix_path, TERN_KIND_INDEX, s->segid);
}

/* Keys whose filter block was prefetched and is tested FILTER_AHEAD keys
 * later: tested at once, every key waited for a cache miss (most of what
 * verifying a segment of random keys cost). */
enum { FILTER_AHEAD = 16 };

typedef struct field_check {
  const tern_seg *s;
  const tern_seg_field *f;
  const char *what;
  uint8_t prev[TERN_KEY_MAX];
  size_t prev_len;
  uint64_t ordinal, pulsed;
  struct {
    uint64_t hash, block;
  } ahead[FILTER_AHEAD]; /* a ring: the oldest at next - pending */
  uint64_t next, pending;
} field_check;

static int bad(const field_check *k, uint64_t b, const char *why) {
  return tern_fail(TERN_ECORRUPT, "%s: field '%.*s', block %llu: %s", k->what,
                   (int)k->f->name_len, (const char *)k->f->name,
                   (unsigned long long)(k->f->first_block + b), why);
}

/* Tests the oldest pending key against the filter. */
static int filter_test_oldest(field_check *k) {
  uint64_t i = (k->next - k->pending) % FILTER_AHEAD;
  k->pending--;
  if (!tern_filter_may_contain(k->s->filter, k->ahead[i].hash))
    return bad(k, k->ahead[i].block, "the filter rejects a key of the segment");
  return TERN_OK;
}

static int filter_check(field_check *k, uint64_t b, const uint8_t *term, size_t len) {
  if (k->pending == FILTER_AHEAD) TERN_TRY(filter_test_oldest(k));
  uint64_t h = tern_filter_hash(term, len);
  tern_filter_prefetch(k->s->filter, h);
  uint64_t i = k->next++ % FILTER_AHEAD;
  k->ahead[i].hash = h;
  k->ahead[i].block = b;
  k->pending++;
  return TERN_OK;
}

static int check_postings(field_check *k, uint64_t b, const tern_tb_tail *t) {
  const tern_seg *s = k->s;
  if (t->pulsed) {
    k->pulsed++;
  } else {
    uint64_t size = tern_rfile_size(s->doc);
    if (t->post_off < TERN_FRAME_HEADER_SIZE || t->post_off > size ||
        t->post_len > size - TERN_FRAME_FOOTER_SIZE - t->post_off)
      return bad(k, b, "postings outside the postings file");
    tern_term_meta meta = {.df = t->df, .pulsed = 0, .offset = t->post_off, .length = t->post_len};
    TERN_TRY(tern_postings_check(s->doc, &meta, s->max_doc));
  }
  if (!(k->f->flags & TERN_FIELD_UNIQUE)) return TERN_OK;
  if (t->df != 1) return bad(k, b, "unique term with several docs");
  if (k->f->flags & TERN_FIELD_DOC_ORDERED) {
    uint32_t doc = t->pulsed ? t->docs[0] : UINT32_MAX;
    if (!t->pulsed) {
      tern_term_meta meta = {.df = 1, .offset = t->post_off, .length = t->post_len};
      tern_postings_iter it;
      TERN_TRY(tern_postings_iter_file(&it, s->doc, &meta));
      int rc = tern_postings_iter_next(&it, &doc);
      tern_postings_iter_release(&it);
      TERN_TRY(rc);
    }
    if (doc != k->ordinal) return bad(k, b, "doc-ordered field with a doc out of order");
  }
  if (!t->vinline) {
    uint64_t size = tern_rfile_size(s->val);
    if (t->vlen <= s->inline_max || t->voff < TERN_FRAME_HEADER_SIZE || t->voff > size ||
        t->vlen > size - TERN_FRAME_FOOTER_SIZE - t->voff)
      return bad(k, b, "value outside the values file");
  }
  return TERN_OK;
}

static int check_term(field_check *k, uint64_t b, uint32_t i, const uint8_t *term, size_t len) {
  const tern_seg_field *f = k->f;
  if (k->ordinal && term_cmp(k->prev, k->prev_len, term, len) >= 0)
    return bad(k, b, "terms not ascending");
  if (i == 0) {
    size_t slen;
    const uint8_t *sep;
    TERN_TRY(tern_terms_index_sep(&f->index, b, &sep, &slen));
    if (term_cmp(sep, slen, term, len) > 0) return bad(k, b, "first term below its separator");
    if (b && term_cmp(k->prev, k->prev_len, sep, slen) >= 0)
      return bad(k, b, "separator not above the previous block");
  }
  if (k->ordinal == 0 && term_cmp(term, len, f->min, f->min_len) != 0)
    return bad(k, b, "first term differs from the field's minimum");
  if (k->ordinal + 1 == f->nterms && term_cmp(term, len, f->max, f->max_len) != 0)
    return bad(k, b, "last term differs from the field's maximum");
  if ((f->flags & TERN_FIELD_UNIQUE) && k->s->filter) TERN_TRY(filter_check(k, b, term, len));
  memcpy(k->prev, term, len);
  k->prev_len = len;
  return TERN_OK;
}

static int check_block(field_check *k, uint64_t b, uint8_t *page, uint8_t *term) {
  const tern_seg *s = k->s;
  const tern_seg_field *f = k->f;
  uint64_t gb = f->first_block + b;
  const uint8_t *p;
  TERN_TRY(tern_rfile_read(s->tim, (uint64_t)TERN_BLOCK_SIZE * (gb + 1), TERN_BLOCK_SIZE, page, &p));
  tern_tb_block blk;
  tern_ti_block info = {0};
  TERN_TRY(tern_terms_index_block(&f->index, b, &info));
  uint32_t n = info.entries;
  TERN_TRY(tern_tb_open(&blk, p, &f->tbf, n, k->what, gb));
  tern_tb_iter it;
  uint32_t docs[TERN_TB_DOCS_MAX];
  tern_tb_tail t = {.docs = docs};
  TERN_TRY(tern_tb_iter_restart(&blk, &it, 0, term));
  for (uint32_t i = 0; i < n; i++) {
    TERN_TRY(tern_tb_iter_next(&blk, &it, term, &t));
    TERN_TRY(check_term(k, b, i, term, it.len));
    TERN_TRY(check_postings(k, b, &t));
    k->ordinal++;
  }
  if (it.pos != blk.used_bits)
    return bad(k, b, "bits left over after the last entry");
  for (size_t i = (blk.used_bits + 7) / 8; i < TERN_TB_PAGE; i++) /* the checksum follows */
    if (p[i]) return bad(k, b, "padding not zero");
  return TERN_OK;
}

static int verify_field(const tern_seg *s, const tern_seg_field *f, uint8_t *page, uint8_t *term) {
  field_check *k = calloc(1, sizeof *k);
  if (!k) return tern_fail(TERN_ENOMEM, "verify: out of memory");
  k->s = s;
  k->f = f;
  k->what = tern_rfile_path(s->tim);
  int rc = tern_terms_index_ensure_all(&f->index); /* every group's records checked */
  for (uint64_t b = 0; b < f->nblocks && rc == TERN_OK; b++) rc = check_block(k, b, page, term);
  while (rc == TERN_OK && k->pending) rc = filter_test_oldest(k);
  if (rc == TERN_OK && k->ordinal != f->nterms) rc = bad(k, f->nblocks, "term count differs");
  if (rc == TERN_OK && k->pulsed != f->pulsed_terms)
    rc = bad(k, f->nblocks, "pulsed term count differs");
  free(k);
  return rc;
}

int tern_seg_verify(const tern_seg *s) {
  TERN_TRY(verify_checksums(s));
  uint8_t *page = malloc(TERN_BLOCK_SIZE + TERN_KEY_MAX);
  if (!page) return tern_fail(TERN_ENOMEM, "verify: out of memory");
  int rc = verify_tim_head(s, page);
  for (size_t i = 0; i < s->nfields && rc == TERN_OK; i++)
    rc = verify_field(s, &s->fields[i], page, page + TERN_BLOCK_SIZE);
  free(page);
  return rc;
}
