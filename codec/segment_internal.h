/* SPDX-License-Identifier: MIT */
/*
 * segment_internal.h — what the segment reader, writer and verifier share:
 * file names and versions, the field table's layout, the open segment.
 * Not for use outside codec/segment_*.c.
 */
#ifndef TERN_SEGMENT_INTERNAL_H
#define TERN_SEGMENT_INTERNAL_H

#include "codec/filter.h"
#include "codec/frame.h"
#include "codec/segment.h"
#include "codec/terms_block.h"
#include "codec/terms_index.h"

#include <stdatomic.h>

/* Of every segment file (.tim .tix .doc .flt .val).  2: page checksums of
 * .tim, .doc and .val in .tix, and their sizes.  3: the filter probed in
 * place, its pages checksummed in .tix like the others, its size there, its
 * blocks page-aligned; terms blocks with whole restart keys and their
 * tails in a stream of their own.  4: every whole page of .tim carries its
 * own checksum in its last 4 bytes (io.h, tern_rfile_set_page_trailers), so
 * .tix no longer holds them (a block has TERN_TB_PAGE = 4092 bytes).  The terms index in
 * groups of 64 blocks with a directory, decoded per group on first use.
 * Older ones: TERN_EVERSION. */
#define TERN_SEG_VERSION 4u
#define TERN_SEG_NFILES 5

/* Field flags on disk: TERN_FIELD_UNIQUE and */
#define TERN_FIELD_DOC_ORDERED 0x2u /* unique field: term ordinal i has doc i */
#define TERN_FIELD_FLAGS_KNOWN (TERN_FIELD_UNIQUE | TERN_FIELD_DOC_ORDERED)

enum { SEG_TIM, SEG_TIX, SEG_DOC, SEG_FLT, SEG_VAL };
extern const char *const tern_seg_ext[TERN_SEG_NFILES]; /* ".tim", ... */
extern const uint32_t tern_seg_kind[TERN_SEG_NFILES];

/* "dir/name.ext" (+ ".tmp" when tmp) into a malloc'd string, or NULL. */
char *tern_seg_path(const char *dir, const char *name, int file, int tmp);

typedef struct tern_seg_header tern_seg_header; /* below */

struct tern_seg_field {
  const tern_seg *seg;
  const uint8_t *name;
  size_t name_len;
  uint32_t flags, threshold;
  uint64_t nterms, pulsed_terms;
  uint64_t first_block, nblocks;
  const uint8_t *min, *max;
  size_t min_len, max_len;
  tern_terms_index index;
  tern_tb_field tbf;
  /* Block b's header as decoded the first time it was read, published
   * once (segment_headers.c).  NULL when it could not be allocated: every
   * read then decodes its header. */
  tern_seg_header *saved;
  void *saved_mem;    /* what saved is carved from (aligned to a line) */
  size_t saved_bytes; /* saved_mem's size when it is a mapping of its own, else 0 */
};

/* A block's saved header, in a flat array (one address per block, so
 * that a lookup can fetch it with the block's page), a line-aligned slot
 * each: state 0 empty, 1 being saved (by the thread that set it), 2
 * saved (sv then never changes). */
#define TERN_SEG_HEADER_LINES 4u
struct tern_seg_header {
  _Atomic uint32_t state;
  tern_tb_saved sv;
};
#define TERN_SEG_HEADER_STRIDE (64u * TERN_SEG_HEADER_LINES)
_Static_assert(sizeof(tern_seg_header) <= TERN_SEG_HEADER_STRIDE, "a saved header is 4 lines");
static inline tern_seg_header *tern_seg_header_at(const tern_seg_field *f, uint64_t b) {
  return (tern_seg_header *)(void *)((uint8_t *)f->saved + (size_t)b * TERN_SEG_HEADER_STRIDE);
}
/* Starts fetching block b's saved header (a hint; nothing when none). */
static inline __attribute__((always_inline)) void tern_seg_prefetch_header(const tern_seg_field *f,
                                                                           uint64_t b) {
  if (!f->saved || b >= f->nblocks) return;
  const uint8_t *h = (const uint8_t *)tern_seg_header_at(f, b);
  for (uint32_t line = 0; line < TERN_SEG_HEADER_LINES; line++) __builtin_prefetch(h + 64 * line);
}

/* Opens block b of field f, whose bytes (read and checked) are at page,
 * into *blk: from the header saved the first time the block was read, or
 * decoded (tern_tb_open_lookup) and then saved.  entries: the block's
 * entry count as the terms index records it. */
int tern_seg_open_block(const tern_seg *s, const tern_seg_field *f, uint64_t b,
                        const uint8_t *page, uint32_t entries, tern_tb_block *blk);
/* The same without saving a decoded header: for a block a cold batch read
 * (tern_seg_cursor_adopt), which may never be read again — its header's
 * slot is saved by the block's next warm open instead, so that a one-off
 * batch neither waits on nor keeps the cache's pages (a first touch of
 * each: a page fault, 15% of a cold batch of 1,000 keys of 10M). */
int tern_seg_open_block_unsaved(const tern_seg *s, const tern_seg_field *f, uint64_t b,
                                const uint8_t *page, uint32_t entries, tern_tb_block *blk);
/* The fields' saved-header arrays, allocated (open), freed (close). */
void tern_seg_headers_init(tern_seg *s);
void tern_seg_headers_free(tern_seg *s);

struct tern_seg {
  uint64_t uid; /* distinguishes this open (and eviction epoch) in cursors */
  uint8_t segid[TERN_SEGID_SIZE];
  uint32_t max_doc, inline_max, bloom_bits;
  size_t nfields;
  tern_seg_field *fields;
  const tern_seg_field *unique;
  uint64_t nblocks;
  tern_rfile *tim, *doc, *val;
  tern_rfile *flt;        /* always mapped: probed in place (segment_filter.c) */
  const uint8_t *tim_map; /* mmap mode: the terms file's mapping, for prefetching */
  uint64_t tix_size;
  uint64_t doc_size, val_size, flt_size; /* as NAME.tix records them */
  const uint8_t *sums[3]; /* page checksums of .doc, .val, .flt (in NAME.tix; .tim's are its pages') */
  tern_filter *filter;    /* over the .flt mapping; NULL: none */
  _Atomic uint64_t resident_kept; /* tern_seg_terms_resident's last whole answer (bit 0) and
                                     the keys it still serves (the rest) */
  _Atomic uint64_t resident_unasked; /* keys of callers it did not ask for since */
  _Atomic uint64_t flt_checked; /* filter pages checked by probes (cached: no I/O) */
  _Atomic uint64_t *flt_asked;  /* bit p: page p of .flt asked for (segment_filter.c) */
  _Atomic uint64_t flt_asked_any; /* nonzero once a page was asked for */
  /* NAME.tix's bytes (field names, min and max terms, terms indexes, page
   * checksums): mapped in mmap mode, else read into arena */
  tern_rfile *tix;
  uint8_t *arena;
  char *tix_path, *flt_path;
};

/* The seed of a data file's page checksums: the segment id and the file
 * kind, so a page moved to another place, file or segment fails. */
uint64_t tern_seg_page_seed(const uint8_t *segid, int file);

/* Decodes and checks a .tix body into s (calloc'd; tern_seg_close frees
 * what it filled, whatever the result).  The body stays referenced. */
int tern_seg_parse_index(tern_seg *s, const uint8_t *body, size_t len, const char *what);

/* segment_filter.c.  Opens NAME.flt unless s->flt was opened ahead, and
 * checks it (size against .tix, page checksums;
 * nothing read) and the filter over its mapping. */
int tern_seg_filter_open(tern_seg *s, const char *dir, const char *name);
/* tern_seg_gate_filter's answers: TERN_SEG_FILTER_NO and the others
 * (codec/segment.h). */
/* tern_seg_filter_missed: codec/segment.h. */

/* Forgets which filter pages were asked for (tern_seg_evict). */
void tern_seg_filter_forget(tern_seg *s);

/* A fresh value for tern_seg.uid. */
uint64_t tern_seg_next_uid(void);

/* segment_reader.c, for segment_scan.c: makes block b (of field f) the
 * cursor's block; makes entry `index` of it, decoded into *t with its term
 * in c->term and c->it after it, the cursor's current result. */
int tern_seg_load_block(const tern_seg *s, const tern_seg_field *f, uint64_t b,
                        tern_seg_cursor *c);
/* The block's decode tables before its first step: taken from the
 * cursor's pair table when that was built for the block's alphabet, else
 * filled (tern_tb_tables). */
void tern_seg_step_tables(tern_seg_cursor *c);
/* Blocks a scan asks the kernel for ahead of it, either way (256 KiB). */
#define TERN_SEG_SCAN_AHEAD 64u
/* For segment_scan.c: a reverse scan stepping back into block b of f asks
 * the kernel for the blocks below ahead of it (segment_reader.c), from
 * c->ra_down - 1 up. */
void tern_seg_scan_behind(const tern_seg *s, const tern_seg_field *f, uint64_t b,
                          tern_seg_cursor *c);
void tern_seg_fill_entry(tern_seg_cursor *c, uint32_t index, const tern_tb_tail *t,
                         tern_term_entry *e);
/* Points the cursor's block at its pair decode table (tern_tb_use_pairs),
 * built once `steps` decodes in all have gone without it (segment_reader.c,
 * use_pairs: a table pays for itself only over many decodes). */
void tern_seg_use_pairs(tern_seg_cursor *c, uint32_t steps);
/* The block the terms index names for `term`, searched: 1 with the exact
 * entry the cursor's result in *e, 0 with *index the first entry above
 * `term` (== the block's count when none), < 0 on error. */
int tern_seg_block_lower_bound(const tern_seg *s, const tern_seg_field *f, const void *term,
                               size_t len, tern_seg_cursor *c, tern_term_entry *e,
                               uint32_t *index);

#endif
