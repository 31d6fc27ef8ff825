/* SPDX-License-Identifier: MIT */
/*
 * postings_reader.c — the postings iterator (postings.h) over inlined doc
 * ids or a term's postings in the postings file (docs/FORMAT.md).
 *
 * I/O.  A term is read through two windows of the file, each one counted
 * tern_rfile_read: `head` is the first read — the whole term when it is at
 * most 4 KiB, else up to the end of the page after the next 4 KiB — and
 * holds the header, the skip data and, for most terms, every block; later
 * skip data is refilled into `head` 4 KiB at a time.  Blocks beyond it are
 * read into `body`, a window that starts at 4 KiB and doubles while the
 * iterator reads on sequentially, up to 64 KiB, and falls back to 4 KiB when
 * advance() jumps.  In mmap mode a window is a pointer into the mapping; in
 * pread mode a malloc'd buffer (freed by release), so an iterator holds at
 * most ~72 KiB whatever the term's size.
 *
 * Cursors.  The block cursor (block, block_off, prev_last) is the next block
 * to decode; block == nblocks means the varint tail, nblocks + 1 past it.
 * The skip cursor (skip_block, skip_off, skip_block_off, skip_prev_last)
 * walks the skip entries only when advance() needs them; it may lag behind
 * the block cursor after next() calls and catches up entry by entry.  When
 * both describe the same block they must agree, and a block decoded after a
 * skip must end on the last doc and length its skip entry announced.
 *
 * Trust.  Every length and offset comes from the file and is checked before
 * use: the term must lie inside the framed body, every read inside the
 * term, every varint inside its region, widths <= 32, doc ids strictly
 * increasing (by construction: gaps are stored minus one) and below
 * TERN_DOC_END, the docs counted must be df and the tail must end exactly
 * at the term's end.  A failed check is TERN_ECORRUPT naming the file and
 * the term's offset.
 */
#include "codec/bitpack.h"
#include "codec/coding.h"
#include "codec/frame.h"
#include "codec/postings.h"
#include "codec/status.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  HEAD_READ = 4096,                         /* the first read, and skip data refills */
  BODY_READ_MIN = 4096,                     /* a block window after a jump */
  BODY_READ_MAX = 64 * 1024,                /* a block window while reading on */
  BLOCK_MAX = 1 + 4 * TERN_POSTINGS_BLOCK,  /* width byte + 128 values of 32 bits */
  SKIP_ENTRY_MAX = 7,                       /* varints: 5 + 2 bytes */
  TAIL_MAX = (TERN_POSTINGS_BLOCK - 1) * 5, /* 127 varints of 5 bytes */
  TERM_MIN = 3                              /* df, nblocks, one tail gap */
};

#define NO_DOC UINT32_MAX /* "no previous doc": the first gap is then the doc id */

static int corrupt(const tern_postings_iter *it, const char *fmt, ...) TERN_PRINTF(2, 3);
static int corrupt(const tern_postings_iter *it, const char *fmt, ...) {
  char msg[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tern_fail(TERN_ECORRUPT, "%s: postings at offset %" PRIu64 ": %s",
                   tern_rfile_path(it->file), it->offset, msg);
}

/* The smallest doc id that may follow `prev`. */
static inline uint64_t doc_after(uint32_t prev) { return (uint64_t)(uint32_t)(prev + 1); }

/* ---------------------------------------------------------------- windows */

static int window_has(const tern_postings_window *w, uint64_t off, size_t need) {
  return w->data && off >= w->off && off - w->off <= w->len && need <= w->len - (off - w->off);
}

/* The bytes [off, off+need) when a window holds them, else NULL. */
static const uint8_t *held(const tern_postings_iter *it, uint64_t off, size_t need) {
  if (window_has(&it->head, off, need)) return it->head.data + (off - it->head.off);
  if (window_has(&it->body, off, need)) return it->body.data + (off - it->body.off);
  return NULL;
}

/* Reads [off, off+len) of the term into window w: one counted read. */
static int window_fill(tern_postings_iter *it, tern_postings_window *w, uint64_t off, size_t len) {
  void *scratch = NULL;
  if (tern_rfile_mode(it->file) == TERN_IO_PREAD) {
    if (w->cap < len) {
      uint8_t *buf = realloc(w->buf, len);
      if (!buf) return tern_fail(TERN_ENOMEM, "postings iterator: %zu-byte window", len);
      w->buf = buf;
      w->cap = len;
    }
    scratch = w->buf;
  }
  w->data = NULL;
  const uint8_t *p;
  TERN_TRY(tern_rfile_read(it->file, off, len, scratch, &p));
  w->off = off;
  w->len = len;
  w->data = p;
  return TERN_OK;
}

static size_t min_size(uint64_t a, uint64_t b) { return (size_t)(a < b ? a : b); }

/* Block bytes [off, off+need) (need <= end - off), refilling `body` when no
 * window holds them. */
static int fetch_blocks(tern_postings_iter *it, uint64_t off, size_t need, int sequential,
                        const uint8_t **out) {
  const uint8_t *p = held(it, off, need);
  if (!p) {
    if (!sequential) it->body_want = BODY_READ_MIN;
    size_t len = min_size(it->end - off, it->body_want);
    if (len < need) len = need;
    TERN_TRY(window_fill(it, &it->body, off, len));
    if (sequential && it->body_want < BODY_READ_MAX) it->body_want *= 2;
    p = it->body.data;
  }
  *out = p;
  return TERN_OK;
}

/* ---------------------------------------------------------------- decoding */

/* Parses the skip entry at the skip cursor: the last doc and byte length of
 * block skip_block.  Does not move the cursor. */
static int read_skip_entry(tern_postings_iter *it, uint32_t *last, uint32_t *size,
                           uint64_t *entry_end) {
  const uint64_t off = it->skip_off;
  if (off >= it->skip_end) return corrupt(it, "skip data ends before entry %u", it->skip_block);
  const size_t need = min_size(it->skip_end - off, SKIP_ENTRY_MAX);
  const uint8_t *p = held(it, off, need);
  if (!p) {
    TERN_TRY(window_fill(it, &it->head, off, min_size(it->end - off, HEAD_READ)));
    p = it->head.data;
  }
  const uint8_t *start = p, *end = p + need;
  uint64_t delta, len;
  if (tern_get_varint(&p, end, &delta) < 0 || tern_get_varint(&p, end, &len) < 0)
    return corrupt(it, "skip entry %u: bad varint", it->skip_block);
  const uint64_t l = doc_after(it->skip_prev_last) + (TERN_POSTINGS_BLOCK - 1) + delta;
  if (delta > UINT32_MAX || l >= TERN_DOC_END)
    return corrupt(it, "skip entry %u: last doc out of range", it->skip_block);
  if (len < 1 || (len - 1) % 16 != 0 || (len - 1) / 16 > 32)
    return corrupt(it, "skip entry %u: block length %" PRIu64, it->skip_block, len);
  *last = (uint32_t)l;
  *size = (uint32_t)len;
  *entry_end = off + (uint64_t)(p - start);
  return TERN_OK;
}

/* Moves the skip cursor past the entry just read. */
static void consume_skip_entry(tern_postings_iter *it, uint32_t last, uint32_t size,
                               uint64_t entry_end) {
  it->skip_prev_last = last;
  it->skip_block_off += size;
  it->skip_off = entry_end;
  it->skip_block++;
}

/* The skip cursor has caught up with the block cursor: they must agree on
 * where the block starts and on the doc before it. */
static int check_in_step(tern_postings_iter *it) {
  if (it->skip_block_off != it->block_off || it->skip_prev_last != it->prev_last)
    return corrupt(it, "skip entry %u disagrees with the blocks before it", it->skip_block);
  return TERN_OK;
}

/* Decodes full block `block` into block_docs. */
static int load_block(tern_postings_iter *it, int sequential) {
  const uint64_t off = it->block_off;
  if (off >= it->end) return corrupt(it, "block %u starts past the term", it->block);
  const uint8_t *p = held(it, off, 1);
  size_t need = p ? 1 + tern_packed_size(TERN_POSTINGS_BLOCK, p[0] <= 32 ? p[0] : 0)
                  : min_size(it->end - off, BLOCK_MAX);
  if (need > it->end - off) return corrupt(it, "block %u runs past the term", it->block);
  TERN_TRY(fetch_blocks(it, off, need, sequential, &p));
  const unsigned width = p[0];
  const size_t size = 1 + tern_packed_size(TERN_POSTINGS_BLOCK, width);
  if (width > 32) return corrupt(it, "block %u: width %u", it->block, width);
  if (size > it->end - off) return corrupt(it, "block %u runs past the term", it->block);

  uint32_t *docs = it->block_docs;
  tern_unpack(docs, p + 1, TERN_POSTINGS_BLOCK, width);
  uint64_t d = doc_after(it->prev_last);
  for (unsigned i = 0; i < TERN_POSTINGS_BLOCK; i++) {
    d += docs[i];
    docs[i] = (uint32_t)d;
    d++;
  }
  const uint64_t last = d - 1; /* gaps are positive, so only the last can overflow */
  if (last >= TERN_DOC_END) return corrupt(it, "block %u: doc id overflow", it->block);
  if (it->expect_known && (last != it->expect_last || size != it->expect_size))
    return corrupt(it, "block %u does not match its skip entry", it->block);
  it->expect_known = 0;
  it->prev_last = (uint32_t)last;
  it->block_off = off + size;
  it->block++;
  it->block_len = TERN_POSTINGS_BLOCK;
  it->block_pos = 0;
  return TERN_OK;
}

/* Decodes the varint tail, which must end exactly at the term's end. */
static int load_tail(tern_postings_iter *it, int sequential) {
  const uint32_t rest = it->df - it->nblocks * TERN_POSTINGS_BLOCK;
  const uint64_t off = it->block_off;
  it->block = it->nblocks + 1;
  it->block_len = it->block_pos = 0;
  if (off > it->end || it->end - off > (rest ? TAIL_MAX : 0))
    return corrupt(it, "tail of %u docs spans %" PRId64 " bytes", rest, (int64_t)(it->end - off));
  if (rest == 0) return TERN_OK;
  const uint8_t *p;
  TERN_TRY(fetch_blocks(it, off, (size_t)(it->end - off), sequential, &p));
  const uint8_t *end = p + (it->end - off);
  uint64_t d = doc_after(it->prev_last);
  for (uint32_t i = 0; i < rest; i++) {
    uint64_t gap;
    if (tern_get_varint(&p, end, &gap) < 0 || gap > UINT32_MAX)
      return corrupt(it, "tail doc %u: bad varint", i);
    d += gap;
    if (d >= TERN_DOC_END) return corrupt(it, "tail doc %u: doc id overflow", i);
    it->block_docs[i] = (uint32_t)d;
    d++;
  }
  if (p != end) return corrupt(it, "%td bytes after the last doc", end - p);
  it->prev_last = (uint32_t)(d - 1);
  it->block_len = rest;
  return TERN_OK;
}

/* Decodes the next block or the tail; block_len stays 0 past the end. */
static int load_next(tern_postings_iter *it, int sequential) {
  if (it->block < it->nblocks) return load_block(it, sequential);
  if (it->block == it->nblocks) return load_tail(it, sequential);
  it->block_len = it->block_pos = 0;
  return TERN_OK;
}

/* Moves the block cursor past the full blocks whose last doc is below
 * `target`, reading only their skip entries.  The entry of the block it
 * stops at is left unconsumed, its figures kept to check the block. */
static int skip_to(tern_postings_iter *it, uint32_t target) {
  while (it->skip_block < it->nblocks && it->skip_block <= it->block) {
    uint32_t last, size;
    uint64_t entry_end;
    TERN_TRY(read_skip_entry(it, &last, &size, &entry_end));
    if (it->skip_block == it->block) {
      if (last >= target) {
        it->expect_known = 1;
        it->expect_last = last;
        it->expect_size = size;
        return TERN_OK;
      }
      it->block++;
      it->block_off += size;
      it->prev_last = last;
    }
    consume_skip_entry(it, last, size, entry_end);
    if (it->skip_block == it->block) TERN_TRY(check_in_step(it));
  }
  return TERN_OK;
}

/* ---------------------------------------------------------------- iterator */

static void iter_clear(tern_postings_iter *it) {
  memset(it, 0, offsetof(tern_postings_iter, block_docs));
  it->block_len = it->block_pos = 0;
}

int tern_postings_iter_inline(tern_postings_iter *it, const uint32_t *docs, uint32_t n) {
  iter_clear(it);
  it->pulsed = 1;
  if (n == 0 || n > TERN_PULSE_MAX)
    return tern_fail(TERN_ECORRUPT, "pulsed postings: df %u outside 1..%u", n, TERN_PULSE_MAX);
  for (uint32_t i = 0; i < n; i++) {
    if (docs[i] == TERN_DOC_END || (i > 0 && docs[i] <= docs[i - 1]))
      return tern_fail(TERN_ECORRUPT, "pulsed postings: doc %u not ascending", i);
    it->inline_docs[i] = docs[i];
  }
  it->df = n;
  return TERN_OK;
}

/* Parses the term header in the head window and sets up both cursors. */
static int parse_header(tern_postings_iter *it, uint32_t meta_df) {
  const uint8_t *p = it->head.data, *start = p, *end = p + it->head.len;
  uint64_t df, nblocks, skip_len = 0;
  if (tern_get_varint(&p, end, &df) < 0 || tern_get_varint(&p, end, &nblocks) < 0 ||
      (nblocks && tern_get_varint(&p, end, &skip_len) < 0))
    return corrupt(it, "bad header");
  if (df != meta_df) return corrupt(it, "df %" PRIu64 ", dictionary says %u", df, meta_df);
  if (nblocks != df / TERN_POSTINGS_BLOCK)
    return corrupt(it, "%" PRIu64 " blocks for df %" PRIu64, nblocks, df);
  const uint64_t rest = df % TERN_POSTINGS_BLOCK, skip_start = it->offset + (uint64_t)(p - start);
  if (skip_len < 2 * nblocks || skip_len > SKIP_ENTRY_MAX * nblocks ||
      it->end - skip_start < skip_len + nblocks + rest)
    return corrupt(it, "skip data of %" PRIu64 " bytes does not fit", skip_len);
  it->df = (uint32_t)df;
  it->nblocks = (uint32_t)nblocks;
  it->skip_end = skip_start + skip_len;
  it->skip_off = skip_start;
  it->skip_block_off = it->block_off = it->skip_end;
  it->skip_prev_last = it->prev_last = NO_DOC;
  return TERN_OK;
}

/* The term's range must lie inside the file's framed body. */
static int check_range(tern_postings_iter *it, const tern_term_meta *meta) {
  const uint64_t size = tern_rfile_size(it->file);
  const uint64_t lo = TERN_FRAME_HEADER_SIZE;
  const uint64_t hi = size > TERN_FRAME_FOOTER_SIZE ? size - TERN_FRAME_FOOTER_SIZE : 0;
  if (meta->offset < lo || meta->offset > hi || meta->length > hi - meta->offset ||
      meta->length < TERM_MIN)
    return corrupt(it, "range of %" PRIu64 " bytes outside the file's %" PRIu64, meta->length,
                   size);
  if (meta->df == 0) return corrupt(it, "df 0");
  return TERN_OK;
}

int tern_postings_iter_file(tern_postings_iter *it, tern_rfile *file, const tern_term_meta *meta) {
  iter_clear(it);
  it->file = file;
  it->offset = meta->offset;
  if (meta->pulsed) return tern_fail(TERN_EINVAL, "postings iterator: term is pulsed");
  int rc = check_range(it, meta);
  if (rc < 0) return rc;
  it->end = meta->offset + meta->length;
  it->body_want = BODY_READ_MIN;
  /* up to the end of the page after the next 4 KiB: as many pages as 4 KiB
   * from an unaligned offset would touch, and more bytes */
  const uint64_t page_end = (meta->offset + HEAD_READ + HEAD_READ - 1) / HEAD_READ * HEAD_READ;
  rc = window_fill(it, &it->head, meta->offset, min_size(meta->length, page_end - meta->offset));
  if (rc == 0) rc = parse_header(it, meta->df);
  if (rc < 0) tern_postings_iter_release(it);
  return rc;
}

/* Position of the first doc >= target in docs[from, len), or len: a few
 * steps of linear scan (advance() usually lands close by), then a binary
 * search of the rest. */
static uint32_t block_search(const uint32_t *docs, uint32_t from, uint32_t len, uint32_t target) {
  uint32_t lo = from;
  for (uint32_t stop = from + 8 < len ? from + 8 : len; lo < stop; lo++)
    if (docs[lo] >= target) return lo;
  uint32_t n = len - lo;
  while (n > 1) {
    uint32_t half = n / 2;
    lo = docs[lo + half - 1] < target ? lo + half : lo;
    n -= half;
  }
  return (n == 1 && docs[lo] < target) ? lo + 1 : lo;
}

static uint32_t finish(tern_postings_iter *it) {
  it->doc = TERN_DOC_END;
  it->index = it->df;
  return TERN_DOC_END;
}

/* Returns block_docs[pos] as the current doc. */
static uint32_t take(tern_postings_iter *it, uint32_t pos) {
  it->block_pos = pos + 1;
  it->index = (it->block - 1) * TERN_POSTINGS_BLOCK + pos + 1;
  return it->doc = it->block_docs[pos];
}

int tern_postings_iter_next(tern_postings_iter *it, uint32_t *doc) {
  if (it->pulsed) {
    *doc = it->index < it->df ? (it->doc = it->inline_docs[it->index++]) : finish(it);
    return TERN_OK;
  }
  if (it->block_pos == it->block_len) {
    int rc = load_next(it, 1);
    if (rc < 0) return rc;
    if (it->block_len == 0) {
      *doc = finish(it);
      return TERN_OK;
    }
  }
  *doc = take(it, it->block_pos);
  return TERN_OK;
}

int tern_postings_iter_next_block(tern_postings_iter *it, const uint32_t **docs, uint32_t *n) {
  *n = 0;
  *docs = it->block_docs;
  if (it->pulsed) {
    if (it->index >= it->df) {
      finish(it);
      return TERN_OK;
    }
    *docs = it->inline_docs + it->index;
    *n = it->df - it->index;
    it->index = it->df;
    it->doc = it->inline_docs[it->df - 1];
    return TERN_OK;
  }
  if (it->block_pos == it->block_len) {
    int rc = load_next(it, 1);
    if (rc < 0) return rc;
    if (it->block_len == 0) {
      finish(it);
      return TERN_OK;
    }
  }
  *docs = it->block_docs + it->block_pos;
  *n = it->block_len - it->block_pos;
  take(it, it->block_len - 1);
  return TERN_OK;
}

static uint32_t advance_inline(tern_postings_iter *it, uint32_t target) {
  uint32_t i = block_search(it->inline_docs, it->index, it->df, target);
  if (i == it->df) return finish(it);
  it->index = i + 1;
  return it->doc = it->inline_docs[i];
}

int tern_postings_iter_advance(tern_postings_iter *it, uint32_t target, uint32_t *doc) {
  if (it->index > 0 && it->doc >= target) { /* already there (or exhausted) */
    *doc = it->doc;
    return TERN_OK;
  }
  if (it->pulsed) {
    *doc = advance_inline(it, target);
    return TERN_OK;
  }
  for (;;) {
    if (it->block_pos < it->block_len && it->block_docs[it->block_len - 1] >= target) {
      *doc = take(it, block_search(it->block_docs, it->block_pos, it->block_len, target));
      return TERN_OK;
    }
    it->block_pos = it->block_len; /* nothing >= target left in this block */
    int rc = it->block < it->nblocks ? skip_to(it, target) : TERN_OK;
    if (rc == 0) rc = load_next(it, 0);
    if (rc < 0) return rc;
    if (it->block_len == 0) {
      *doc = finish(it);
      return TERN_OK;
    }
  }
}

void tern_postings_iter_release(tern_postings_iter *it) {
  if (!it) return;
  free(it->head.buf);
  free(it->body.buf);
  memset(&it->head, 0, sizeof it->head);
  memset(&it->body, 0, sizeof it->body);
}

/* ---------------------------------------------------------------- check */

static int check_pulsed(const tern_term_meta *meta, uint32_t max_doc) {
  if (meta->df == 0 || meta->df > TERN_PULSE_MAX || !meta->docs)
    return tern_fail(TERN_ECORRUPT, "pulsed postings: df %u", meta->df);
  for (uint32_t i = 0; i < meta->df; i++) {
    if (meta->docs[i] >= max_doc || (i > 0 && meta->docs[i] <= meta->docs[i - 1]))
      return tern_fail(TERN_ECORRUPT, "pulsed postings: doc %u (%u) not ascending below %u", i,
                       meta->docs[i], max_doc);
  }
  return TERN_OK;
}

/* Decodes every block, each checked against its skip entry, then the tail. */
static int check_file(tern_postings_iter *it, uint32_t max_doc) {
  while (it->block < it->nblocks) {
    uint32_t last, size;
    uint64_t entry_end;
    TERN_TRY(read_skip_entry(it, &last, &size, &entry_end));
    TERN_TRY(check_in_step(it));
    it->expect_known = 1;
    it->expect_last = last;
    it->expect_size = size;
    TERN_TRY(load_block(it, 1));
    consume_skip_entry(it, last, size, entry_end);
  }
  if (it->skip_off != it->skip_end) return corrupt(it, "bytes after the last skip entry");
  TERN_TRY(load_tail(it, 1));
  if (it->prev_last >= max_doc)
    return corrupt(it, "doc %u not below max_doc %u", it->prev_last, max_doc);
  return TERN_OK;
}

int tern_postings_check(tern_rfile *file, const tern_term_meta *meta, uint32_t max_doc) {
  if (meta->pulsed) return check_pulsed(meta, max_doc);
  tern_postings_iter *it = malloc(sizeof *it);
  if (!it) return tern_fail(TERN_ENOMEM, "postings check");
  int rc = tern_postings_iter_file(it, file, meta);
  if (rc == 0) rc = check_file(it, max_doc);
  tern_postings_iter_release(it);
  free(it);
  return rc;
}
