/* SPDX-License-Identifier: MIT */
/*
 * fuzz_terms_block.c — one terms block (codec/terms_block.c), as a lookup,
 * a scan (entry by entry, and by batches as a cursor's), a reverse scan's
 * windows (a batch from a restart) and a seek to an entry see it.  Input: 10 bytes of context, then
 * the block (TERN_TB_PAGE bytes at most, zero-filled):
 *   [0] threshold (mod 65)  [1..2] inline_max (LE, mod 1025)  [3] bit 0: has values
 *   [4..7] max_doc (LE)     [8..9] entries the terms index records (0: unknown)
 * The page checksum lives after the block (the page's last 4 bytes) and is
 * not given: the bytes reach the decoder as they are, in a buffer of
 * exactly TERN_TB_PAGE bytes, so a read of the checksum's place would be
 * a read past the buffer (ASan).
 */
#include "codec/coding.h"
#include "codec/terms_block.h"
#include "tern.h"
#include "tests/fuzz/fuzz.h"

#include <string.h>

enum { CTX = 10 };

static int scan(tern_tb_block *b, uint8_t *first, uint32_t *first_len) {
  uint8_t term[TERN_TB_TERM_MAX], val[1024];
  uint32_t docs[TERN_TB_DOCS_MAX];
  tern_tb_tail t = {.docs = docs};
  tern_tb_iter it;
  tern_tb_tables(b);
  int rc = tern_tb_iter_restart(b, &it, 0, term);
  for (uint32_t i = 0; rc == TERN_OK && i < b->n; i++) {
    rc = tern_tb_iter_next(b, &it, term, &t);
    if (rc != TERN_OK) break;
    FUZZ_ASSERT(it.len <= TERN_TB_TERM_MAX);
    if (t.vinline && t.vlen) {
      FUZZ_ASSERT(t.vlen <= sizeof val);
      tern_tb_copy_value(b, &t, val);
    }
    if (i == 0) {
      memcpy(first, term, it.len);
      *first_len = it.len;
    }
  }
  return rc;
}

/* Entry j of batch k against the entry-by-entry walk's tail t: a tail
 * decoded with the batch is t's doc, value position and length. */
static void same_tail(const tern_tb_block *b, const tern_tb_keys *k, uint32_t j,
                      const tern_tb_tail *t) {
  FUZZ_ASSERT(t->df == 1 && t->pulsed && t->docs[0] == tern_tb_keys_doc(k, j));
  tern_tb_tail kt = {.docs = NULL};
  uint32_t doc;
  kt.docs = &doc;
  tern_tb_keys_tail(b, k, j, &kt);
  FUZZ_ASSERT(t->vlen == kt.vlen && t->vinline == kt.vinline && t->vbit == kt.vbit &&
              t->voff == kt.voff && t->docs[0] == doc);
}

/* Batch k, just decoded from `it`, against the entry-by-entry walk ref
 * standing where it stood: the same terms, tails and positions, `it` and
 * ref moved past it.  TERN_OK, or the walk's failure (the batch took a
 * term whose tail the walk refused: it must not have taken the tail). */
static int same_batch(const tern_tb_block *b, const tern_tb_keys *k, tern_tb_iter *it,
                      tern_tb_iter *ref, uint8_t *rterm) {
  uint32_t docs[TERN_TB_DOCS_MAX], rdocs[TERN_TB_DOCS_MAX];
  tern_tb_tail t = {.docs = docs}, rt = {.docs = rdocs};
  FUZZ_ASSERT(k->first == ref->entry);
  for (uint32_t j = 0; j < k->n; j++) {
    if (tern_tb_iter_next(b, ref, rterm, &rt) != TERN_OK) {
      FUZZ_ASSERT(!k->tails);
      int rc = tern_tb_iter_tail(b, it, &t);
      FUZZ_ASSERT(rc != TERN_OK);
      return rc;
    }
    FUZZ_ASSERT(k->len[j] == ref->len && memcmp(k->bytes + k->off[j], rterm, ref->len) == 0);
    if (k->tails) {
      same_tail(b, k, j, &rt);
      tern_tb_keys_skip_tail(k, j, it);
    } else {
      FUZZ_ASSERT(tern_tb_iter_tail(b, it, &t) == TERN_OK);
      FUZZ_ASSERT(t.df == rt.df && t.vlen == rt.vlen && t.vbit == rt.vbit);
    }
    FUZZ_ASSERT(it->entry == ref->entry && it->pos == ref->pos);
  }
  return TERN_OK;
}

/* The scan a cursor makes, by batches of terms (tern_tb_iter_keys, their
 * tails with them when the block allows) of growing size: the same terms,
 * tails and positions as the entry-by-entry walk (ref), and an answer
 * only when that walk gives one — TERN_OK after the last entry, else the
 * walk's failure. */
static int scan_batches(const tern_tb_block *b, int walked) {
  static tern_tb_keys k;
  uint8_t term[TERN_TB_TERM_MAX], rterm[TERN_TB_TERM_MAX];
  tern_tb_iter it, ref;
  int rc = tern_tb_iter_restart(b, &it, 0, term);
  if (rc != TERN_OK) return rc;
  ref = it;
  memcpy(rterm, term, it.len);
  uint32_t want = 1;
  while ((rc = tern_tb_iter_keys(b, &it, term, &k, want)) == TERN_OK) {
    FUZZ_ASSERT(k.n >= 1 && k.n <= want);
    TERN_TRY(same_batch(b, &k, &it, &ref, rterm));
    want = want * 2 > TERN_TB_KEYS_MAX ? TERN_TB_KEYS_MAX : want * 2;
  }
  if (rc == TERN_NOTFOUND) {
    FUZZ_ASSERT(walked == TERN_OK && ref.entry == b->n);
    return TERN_OK;
  }
  return rc;
}

/* A reverse scan's keyed window (codec/segment_scan.c): one batch of up
 * to TERN_TB_KEYS_MAX entries from restart r, as the walk from r gives
 * them. */
static void window_at(const tern_tb_block *b, uint32_t r) {
  static tern_tb_keys k;
  uint8_t term[TERN_TB_TERM_MAX], rterm[TERN_TB_TERM_MAX];
  tern_tb_iter it, ref;
  if (tern_tb_iter_restart(b, &it, r, term) != TERN_OK) return;
  ref = it;
  memcpy(rterm, term, it.len);
  uint32_t left = b->n - r * b->restart;
  if (tern_tb_iter_keys(b, &it, term, &k, left < TERN_TB_KEYS_MAX ? left : TERN_TB_KEYS_MAX) ==
      TERN_OK)
    (void)same_batch(b, &k, &it, &ref, rterm);
}

int fuzz_terms_block(const uint8_t *data, size_t size) {
  if (size < CTX) return TERN_EINVAL;
  tern_tb_field f = {.threshold = data[0] % 65,
                     .inline_max = tern_load16(data + 1) % 1025,
                     .has_values = data[3] & 1,
                     .max_doc = tern_load32(data + 4)};
  uint32_t expect_n = tern_load16(data + 8);
  static uint8_t page[TERN_TB_PAGE];
  memset(page, 0, sizeof page);
  memcpy(page, data + CTX, size - CTX < sizeof page ? size - CTX : sizeof page);
  tern_tb_block b;
  int rc = tern_tb_open(&b, page, &f, expect_n, "fuzz.tim", 0);
  if (rc != TERN_OK) return rc;
  uint8_t first[TERN_TB_TERM_MAX];
  uint32_t first_len = 0;
  int src = scan(&b, first, &first_len);
  int bsrc = scan_batches(&b, src);
  FUZZ_ASSERT((bsrc == TERN_OK) == (src == TERN_OK));
  uint32_t runs = b.restart ? (b.n + b.restart - 1) / b.restart : 0;
  for (uint32_t r = 0; r < runs; r += 1 + runs / 4) window_at(&b, r);
  /* lookups: the first term, and keys made of the input's tail */
  tern_tb_block lb;
  FUZZ_ASSERT(tern_tb_open_lookup(&lb, page, &f, expect_n, "fuzz.tim", 0) == TERN_OK);
  uint32_t docs[TERN_TB_DOCS_MAX], index;
  tern_tb_tail t = {.docs = docs};
  tern_tb_iter it;
  if (first_len) {
    int r = tern_tb_lower_bound(&lb, first, first_len, &index, &it, &t);
    FUZZ_ASSERT(r < 0 || (r == 1 && index == 0) || src != TERN_OK);
  }
  /* seeks to entries, each followed by the decode of that entry: the
   * first lands on the scan's first term when the block scans whole */
  uint8_t term[TERN_TB_TERM_MAX];
  tern_tb_tables(&lb);
  for (uint32_t i = 0; i < b.n; i += 1 + b.n / 5) {
    int r = tern_tb_iter_seek(&lb, &it, i, term);
    if (r == TERN_OK) r = tern_tb_iter_next(&lb, &it, term, &t);
    FUZZ_ASSERT(r == TERN_OK || r == TERN_ECORRUPT);
    if (r == TERN_OK) FUZZ_ASSERT(it.len <= TERN_TB_TERM_MAX && it.entry == i + 1);
    if (r == TERN_OK && i == 0 && src == TERN_OK)
      FUZZ_ASSERT(it.len == first_len && memcmp(term, first, first_len) == 0);
  }
  size_t klen = size - CTX > 24 ? 24 : size - CTX;
  for (size_t k = 1; k <= klen; k += 7) {
    int r = tern_tb_lower_bound(&lb, data + size - k, (uint32_t)k, &index, &it, &t);
    FUZZ_ASSERT(r < 0 || index <= b.n);
  }
  return src;
}

FUZZ_DEFINE_ENTRY(fuzz_terms_block)
