/* SPDX-License-Identifier: MIT */
/*
 * postings_writer.c — the block writer: appends each term's postings to the
 * postings file (docs/FORMAT.md):
 *
 *   varint df | varint nblocks (= df / 128) | [varint skip_len, when nblocks > 0]
 *   skip data: per block, varint (last - previous block's last - 128), varint byte length
 *   blocks:    per block, width byte w, then 128 doc gaps packed in w bits (bitpack.h)
 *   tail:      df % 128 doc gaps as varints
 *
 * A gap is doc - previous doc - 1 (the first doc's previous being -1), so a
 * run of consecutive ids packs in width 0: one byte per 128 docs.  The skip
 * data precedes the blocks so that the reader's first read of a term holds
 * it; the writer therefore measures every block (its width) in a first pass
 * and packs it in a second, keeping only the skip data in memory.
 *
 * The writer only appends: the caller frames the file and commits it.
 */
#include "codec/bitpack.h"
#include "codec/coding.h"
#include "codec/postings.h"
#include "codec/status.h"

#include <stdlib.h>

typedef struct block_writer {
  tern_postings_writer base;
  tern_wfile *file;
  uint8_t *skip; /* one term's skip data */
  size_t skip_cap;
} block_writer;

/* A skip entry is at most a 5-byte varint and a 2-byte one; the header three varints. */
enum { SKIP_ENTRY_MAX = 7, HEADER_MAX = 3 * 5, TAIL_MAX = (TERN_POSTINGS_BLOCK - 1) * 5 };

/* Gaps of docs[0..n) after `prev` (UINT32_MAX: none), as the format stores them. */
static void doc_gaps(uint32_t *gaps, const uint32_t *docs, uint32_t n, uint32_t prev) {
  for (uint32_t i = 0; i < n; i++) {
    gaps[i] = docs[i] - prev - 1; /* wraps to docs[0] when prev is UINT32_MAX */
    prev = docs[i];
  }
}

static int check_docs(const uint32_t *docs, uint32_t n) {
  if (n == 0) return tern_fail(TERN_EINVAL, "postings writer: a term needs at least one doc");
  for (uint32_t i = 0; i < n; i++) {
    if (docs[i] == TERN_DOC_END)
      return tern_fail(TERN_EINVAL, "postings writer: doc id %u is reserved", docs[i]);
    if (i > 0 && docs[i] <= docs[i - 1])
      return tern_fail(TERN_EINVAL, "postings writer: doc ids not ascending at %u (%u after %u)", i,
                       docs[i], docs[i - 1]);
  }
  return TERN_OK;
}

static int reserve_skip(block_writer *w, size_t need) {
  if (need <= w->skip_cap) return TERN_OK;
  size_t cap = w->skip_cap ? w->skip_cap : 256;
  while (cap < need)
    cap *= 2;
  uint8_t *p = realloc(w->skip, cap);
  if (!p) return tern_fail(TERN_ENOMEM, "postings writer: %zu bytes of skip data", cap);
  w->skip = p;
  w->skip_cap = cap;
  return TERN_OK;
}

/* Pass 1: the skip entries of the full blocks, into w->skip; returns their length. */
static int encode_skip(block_writer *w, const uint32_t *docs, uint32_t nblocks, size_t *len) {
  TERN_TRY(reserve_skip(w, (size_t)nblocks * SKIP_ENTRY_MAX));
  uint32_t gaps[TERN_POSTINGS_BLOCK], prev = UINT32_MAX;
  size_t n = 0;
  for (uint32_t b = 0; b < nblocks; b++) {
    const uint32_t *block = docs + (size_t)b * TERN_POSTINGS_BLOCK;
    doc_gaps(gaps, block, TERN_POSTINGS_BLOCK, prev);
    unsigned width = tern_pack_width(gaps, TERN_POSTINGS_BLOCK);
    uint32_t last = block[TERN_POSTINGS_BLOCK - 1];
    n += tern_put_varint(w->skip + n, (uint32_t)(last - prev - TERN_POSTINGS_BLOCK));
    n += tern_put_varint(w->skip + n, 1 + tern_packed_size(TERN_POSTINGS_BLOCK, width));
    prev = last;
  }
  *len = n;
  return TERN_OK;
}

/* Pass 2: the packed blocks, then the varint tail. */
static int append_blocks(block_writer *w, const uint32_t *docs, uint32_t n, uint32_t nblocks) {
  uint32_t gaps[TERN_POSTINGS_BLOCK], prev = UINT32_MAX;
  uint8_t out[1 + 4 * TERN_POSTINGS_BLOCK + TAIL_MAX];
  for (uint32_t b = 0; b < nblocks; b++) {
    const uint32_t *block = docs + (size_t)b * TERN_POSTINGS_BLOCK;
    doc_gaps(gaps, block, TERN_POSTINGS_BLOCK, prev);
    unsigned width = tern_pack_width(gaps, TERN_POSTINGS_BLOCK);
    out[0] = (uint8_t)width;
    tern_pack(out + 1, gaps, TERN_POSTINGS_BLOCK, width);
    TERN_TRY(tern_wfile_append(w->file, out, 1 + tern_packed_size(TERN_POSTINGS_BLOCK, width)));
    prev = block[TERN_POSTINGS_BLOCK - 1];
  }
  uint32_t rest = n - nblocks * TERN_POSTINGS_BLOCK;
  doc_gaps(gaps, docs + (size_t)nblocks * TERN_POSTINGS_BLOCK, rest, prev);
  size_t len = 0;
  for (uint32_t i = 0; i < rest; i++)
    len += tern_put_varint(out + len, gaps[i]);
  return len ? tern_wfile_append(w->file, out, len) : TERN_OK;
}

static int block_write_term(tern_postings_writer *self, const uint32_t *docs, uint32_t n,
                            tern_term_meta *meta) {
  block_writer *w = (block_writer *)self;
  TERN_TRY(check_docs(docs, n));
  const uint32_t nblocks = n / TERN_POSTINGS_BLOCK;
  size_t skip_len = 0;
  TERN_TRY(encode_skip(w, docs, nblocks, &skip_len));

  const uint64_t start = tern_wfile_offset(w->file);
  uint8_t head[HEADER_MAX];
  size_t hlen = tern_put_varint(head, n);
  hlen += tern_put_varint(head + hlen, nblocks);
  if (nblocks) hlen += tern_put_varint(head + hlen, skip_len);
  TERN_TRY(tern_wfile_append(w->file, head, hlen));
  if (skip_len) TERN_TRY(tern_wfile_append(w->file, w->skip, skip_len));
  TERN_TRY(append_blocks(w, docs, n, nblocks));

  meta->df = n;
  meta->pulsed = 0;
  meta->docs = NULL;
  meta->offset = start;
  meta->length = tern_wfile_offset(w->file) - start;
  return TERN_OK;
}

static int block_finish(tern_postings_writer *self) {
  (void)self;
  return TERN_OK;
}

static void block_destroy(tern_postings_writer *self) {
  block_writer *w = (block_writer *)self;
  if (!w) return;
  free(w->skip);
  free(w);
}

int tern_block_writer_new(tern_postings_writer **out, tern_wfile *file) {
  *out = NULL;
  if (!file) return tern_fail(TERN_EINVAL, "postings writer: no file");
  block_writer *w = calloc(1, sizeof *w);
  if (!w) return tern_fail(TERN_ENOMEM, "postings writer");
  w->base.write_term = block_write_term;
  w->base.finish = block_finish;
  w->base.destroy = block_destroy;
  w->file = file;
  *out = &w->base;
  return TERN_OK;
}
