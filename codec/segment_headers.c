/* SPDX-License-Identifier: MIT */
/*
 * segment_headers.c — each terms block's header decoded once.
 *
 * A lookup opens one block, and opening it (tern_tb_open_lookup: flags,
 * widths, alphabet, varint bases, section bounds, all checked) was about
 * 420 instructions of a warm get's 2,900.  The segment keeps, per block,
 * the header as it was decoded the first time the block was read
 * (tern_tb_saved, 246 bytes) in a flat array of line-aligned 256-byte
 * slots, one per block, so that a lookup starts fetching it together with
 * the block's page (tern_seg_prefetch_header) rather than after a pointer;
 * a slot is claimed with a compare-and-swap and published with a release
 * store.  Later opens copy it and point it at the page
 * (tern_tb_open_saved).  Memory: the array is a fresh zero mapping made at
 * open (slots_alloc), so only the pages of slots of blocks read become
 * resident: at most 1/16 of the terms file, freed at close.
 *
 * Every byte used is still checked: a saved header is only used after the
 * block's page was read and checked again by the caller (the page's
 * checksum), and the segment's files never change, so the header decoded
 * from those bytes would be the saved one.  It is saved only after every
 * check of tern_tb_open_lookup passed: a damaged header saves nothing, and
 * each read of it fails as before.
 */
#include "codec/segment_internal.h"
#include "codec/status.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* Slot arrays this large get a mapping of their own rather than calloc:
 * once a process has freed a block as large (a closed segment's slots),
 * malloc's mmap threshold rises past it and calloc takes the next array
 * from the heap and clears every byte: for a 10M-key segment 8.5 MB
 * written and resident at every reopen (~0.3 ms, two thirds of a warm
 * open), where a fresh mapping is zero and backs only the pages touched. */
#define SLOTS_MAPPED_MIN (64u << 10)

static void *slots_alloc(size_t bytes, size_t *mapped) {
  *mapped = 0;
  if (bytes < SLOTS_MAPPED_MIN) return calloc(1, bytes);
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  *mapped = bytes;
  return m;
}

void tern_seg_headers_init(tern_seg *s) {
  for (size_t i = 0; i < s->nfields; i++) {
    tern_seg_field *f = &s->fields[i];
    f->saved = NULL;
    f->saved_mem = NULL;
    f->saved_bytes = 0;
    if (!f->nblocks || f->nblocks > SIZE_MAX / TERN_SEG_HEADER_STRIDE - 1) continue;
    /* zeroed, and the pages of blocks never read are never touched */
    uint8_t *m = slots_alloc(((size_t)f->nblocks + 1) * TERN_SEG_HEADER_STRIDE, &f->saved_bytes);
    if (!m) continue; /* no saved headers: every open decodes its block's */
    f->saved_mem = m;
    f->saved = (tern_seg_header *)(void *)(m + (64 - (uintptr_t)m % 64) % 64);
  }
}

void tern_seg_headers_free(tern_seg *s) {
  for (size_t i = 0; s->fields && i < s->nfields; i++) {
    tern_seg_field *f = &s->fields[i];
    if (f->saved_bytes) munmap(f->saved_mem, f->saved_bytes);
    else free(f->saved_mem);
    f->saved_mem = NULL;
    f->saved_bytes = 0;
    f->saved = NULL;
  }
}

/* Saves blk's header as block b's unless another thread is at it or did
 * (the same bytes). */
static void save_header(tern_seg_header *h, const tern_tb_block *blk) {
  uint32_t empty = 0;
  if (!atomic_compare_exchange_strong_explicit(&h->state, &empty, 1, memory_order_acquire,
                                               memory_order_relaxed))
    return;
  tern_tb_save(blk, &h->sv);
  atomic_store_explicit(&h->state, 2, memory_order_release);
}

/* save 0: the saved headers are not looked at either (a look at a slot
 * never used faults its page in, as a save would). */
static int open_block(const tern_seg *s, const tern_seg_field *f, uint64_t b, const uint8_t *page,
                      uint32_t entries, tern_tb_block *blk, int save) {
  uint64_t gb = f->first_block + b;
  const char *what = tern_rfile_path(s->tim);
  tern_seg_header *h = save && f->saved && b < f->nblocks ? tern_seg_header_at(f, b) : NULL;
  if (TERN_LIKELY(h != NULL) && atomic_load_explicit(&h->state, memory_order_acquire) == 2) {
    tern_tb_open_saved(blk, &h->sv, page, what, gb);
    return TERN_OK;
  }
  TERN_TRY(tern_tb_open_lookup(blk, page, &f->tbf, entries, what, gb));
  if (h) save_header(h, blk);
  return TERN_OK;
}

int tern_seg_open_block(const tern_seg *s, const tern_seg_field *f, uint64_t b,
                        const uint8_t *page, uint32_t entries, tern_tb_block *blk) {
  return open_block(s, f, b, page, entries, blk, 1);
}

int tern_seg_open_block_unsaved(const tern_seg *s, const tern_seg_field *f, uint64_t b,
                                const uint8_t *page, uint32_t entries, tern_tb_block *blk) {
  return open_block(s, f, b, page, entries, blk, 0);
}
