/* SPDX-License-Identifier: MIT */
/*
 * segment_headers.c — each terms block's header decoded once.
 *
 * A lookup opens one block, and opening it (tern_tb_open_lookup: flags,
 * widths, alphabet, varint bases, section bounds, all checked) was about
 * 420 instructions of a warm get's 2,900.  The segment keeps, per block,
 * the header as it was decoded the first time the block was read
 * (tern_tb_saved, about 250 bytes), published once with a compare-and-swap
 * like the terms index's groups; later opens copy it and point it at the
 * page (tern_tb_open_saved).  Memory: an 8-byte slot per block of every
 * field from the open, and a saved header per block read, so at most about
 * 6.5% of the terms file, freed at close.
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

#include <stdlib.h>

void tern_seg_headers_init(tern_seg *s) {
  for (size_t i = 0; i < s->nfields; i++) {
    tern_seg_field *f = &s->fields[i];
    f->saved = f->nblocks ? calloc(f->nblocks, sizeof *f->saved) : NULL;
  }
}

void tern_seg_headers_free(tern_seg *s) {
  for (size_t i = 0; s->fields && i < s->nfields; i++) {
    tern_seg_field *f = &s->fields[i];
    if (!f->saved) continue;
    for (uint64_t b = 0; b < f->nblocks; b++)
      free(atomic_load_explicit(&f->saved[b], memory_order_relaxed));
    free((void *)f->saved);
    f->saved = NULL;
  }
}

/* Publishes blk's header as block b's unless another thread did (the
 * same bytes) or there is no memory for it (each open then decodes). */
static void save_header(const tern_seg_field *f, uint64_t b, const tern_tb_block *blk) {
  tern_tb_saved *sv = malloc(sizeof *sv), *none = NULL;
  if (!sv) return;
  tern_tb_save(blk, sv);
  if (!atomic_compare_exchange_strong_explicit(&f->saved[b], &none, sv, memory_order_acq_rel,
                                               memory_order_acquire))
    free(sv);
}

int tern_seg_open_block(const tern_seg *s, const tern_seg_field *f, uint64_t b,
                        const uint8_t *page, uint32_t entries, tern_tb_block *blk) {
  uint64_t gb = f->first_block + b;
  const char *what = tern_rfile_path(s->tim);
  if (TERN_LIKELY(f->saved != NULL && b < f->nblocks)) {
    const tern_tb_saved *sv = atomic_load_explicit(&f->saved[b], memory_order_acquire);
    if (TERN_LIKELY(sv != NULL)) {
      tern_tb_open_saved(blk, sv, page, what, gb);
      return TERN_OK;
    }
  }
  TERN_TRY(tern_tb_open_lookup(blk, page, &f->tbf, entries, what, gb));
  if (f->saved && b < f->nblocks) save_header(f, b, blk);
  return TERN_OK;
}
