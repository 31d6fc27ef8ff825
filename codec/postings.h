/* SPDX-License-Identifier: MIT */
/*
 * postings.h — a term's postings: the sorted doc ids of the documents that
 * have it, written through a writer interface and read through one
 * iterator, whether the ids were inlined in the terms dictionary (pulsed)
 * or stored in the postings file.
 *
 * Writers form a chain, as Lucene's PulsingPostingsFormat wrapped a delegate:
 * tern_pulsing_writer_new(threshold, tern_block_writer_new(file)) inlines
 * terms of df <= threshold and hands the others to the block writer, which
 * appends to the postings file a header, skip data (each block's last doc
 * and length), FOR-packed blocks of 128 doc-id gaps and a varint tail
 * (docs/FORMAT.md, ".doc").
 */
#ifndef TERN_POSTINGS_H
#define TERN_POSTINGS_H

#include "codec/io.h"

#include <stdint.h>

#define TERN_DOC_END UINT32_MAX  /* past the last doc of an iterator */
#define TERN_POSTINGS_BLOCK 128u /* doc ids per packed block */
#define TERN_PULSE_MAX 64u       /* largest pulsing threshold (TERN_THRESHOLD_MAX) */

/* What a term's dictionary entry records about its postings. */
typedef struct tern_term_meta {
  uint32_t df;          /* documents having the term, >= 1 */
  int pulsed;           /* 1: doc ids are in `docs`; 0: in the postings file */
  const uint32_t *docs; /* pulsed: the df doc ids (writer side: the caller's array) */
  uint64_t offset;      /* not pulsed: where the term's postings start in the file */
  uint64_t length;      /* not pulsed: their length in bytes */
} tern_term_meta;

/* A postings writer.  write_term receives a term's doc ids, strictly
 * ascending, and fills *meta; finish is called once after the last term. */
typedef struct tern_postings_writer tern_postings_writer;
struct tern_postings_writer {
  int (*write_term)(tern_postings_writer *self, const uint32_t *docs, uint32_t n,
                    tern_term_meta *meta);
  int (*finish)(tern_postings_writer *self);
  void (*destroy)(tern_postings_writer *self); /* also destroys a delegate */
};

/* Appends postings to `file` (which the caller created and frames).  */
int tern_block_writer_new(tern_postings_writer **out, tern_wfile *file);
/* Inlines terms of df <= threshold (0: none) and passes the others to
 * `delegate`, which it then owns (and destroys if this call fails). */
int tern_pulsing_writer_new(tern_postings_writer **out, uint32_t threshold,
                            tern_postings_writer *delegate);

/* A window of the postings file held by an iterator: bytes [off, off+len)
 * at `data`, which points into the mapping (mmap mode) or into `buf`. */
typedef struct tern_postings_window {
  uint64_t off;
  size_t len;
  const uint8_t *data;
  uint8_t *buf; /* pread mode: malloc'd, `cap` bytes */
  size_t cap;
} tern_postings_window;

/* One iterator for both kinds.  Transparent so it can live on the stack;
 * the fields are private (postings_reader.c explains them). */
typedef struct tern_postings_iter {
  uint32_t df, doc, index; /* doc frequency, current doc, docs returned */
  int pulsed;
  uint32_t inline_docs[TERN_PULSE_MAX];
  /* file postings: */
  tern_rfile *file;
  uint64_t offset, end;      /* the term's byte range [offset, end) */
  tern_postings_window head; /* header and skip data (the first read) */
  tern_postings_window body; /* blocks past the head window */
  size_t body_want;          /* size of the next body read (grows while sequential) */
  uint32_t nblocks;          /* packed blocks (= skip entries) */
  uint64_t skip_end;         /* file offset past the skip data = block 0 */
  /* skip cursor: entry skip_block describes block skip_block */
  uint32_t skip_block;
  uint64_t skip_off;       /* file offset of that entry */
  uint64_t skip_block_off; /* file offset of that block */
  uint32_t skip_prev_last; /* last doc of the block before it (UINT32_MAX: none) */
  /* block cursor: */
  uint32_t block;                    /* next block to decode; nblocks = the tail */
  uint64_t block_off;                /* its file offset */
  uint32_t prev_last;                /* last doc before it (UINT32_MAX: none) */
  uint32_t expect_last, expect_size; /* its last doc and length per its skip entry, */
                                     /* when expect_known */
  int expect_known;
  uint32_t block_len, block_pos; /* docs decoded in block_docs, next to return */
  uint32_t block_docs[TERN_POSTINGS_BLOCK];
} tern_postings_iter;

/* Starts an iterator over inlined doc ids (copied): 1 to TERN_PULSE_MAX,
 * strictly ascending, else TERN_ECORRUPT (they come from a decoded entry). */
int tern_postings_iter_inline(tern_postings_iter *it, const uint32_t *docs, uint32_t n);
/* Starts an iterator over a term's postings in `file`; costs one read of
 * the term's head (skip data and first block) — the whole term when small. */
int tern_postings_iter_file(tern_postings_iter *it, tern_rfile *file, const tern_term_meta *meta);
/* Next doc (TERN_DOC_END when done).  Errors: TERN_ECORRUPT, -errno.
 * tern_postings_iter_release() frees the iterator's buffers: call it after
 * a started iterator, also after an error (a failed start needs none). */
int tern_postings_iter_next(tern_postings_iter *it, uint32_t *doc);
/* The next docs at once: those of the decoded block left (a packed block
 * of TERN_POSTINGS_BLOCK, the tail, or the inlined ids), at *docs (in the
 * iterator, until its next call), *n of them (0 when done); afterwards the
 * iterator stands on the last of them, as that many tern_postings_iter_next
 * would leave it.  Errors as tern_postings_iter_next's. */
int tern_postings_iter_next_block(tern_postings_iter *it, const uint32_t **docs, uint32_t *n);
/* First doc >= target at or after the current one (which it keeps when it is
 * already >= target), skipping whole blocks by their skip entries. */
int tern_postings_iter_advance(tern_postings_iter *it, uint32_t target, uint32_t *doc);
static inline uint32_t tern_postings_iter_cost(const tern_postings_iter *it) { return it->df; }
void tern_postings_iter_release(tern_postings_iter *it);

/* Checks a term's postings whole: decodes every block, checks order and the
 * count against df.  For verify. */
int tern_postings_check(tern_rfile *file, const tern_term_meta *meta, uint32_t max_doc);

#endif
