/* SPDX-License-Identifier: MIT */
/*
 * fuzz_terms_block.c — one terms block (codec/terms_block.c), as a lookup,
 * a scan and a seek to an entry see it.  Input: 10 bytes of context, then
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
