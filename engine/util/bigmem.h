/* SPDX-License-Identifier: MIT */
/*
 * bigmem.h — large arrays (sort buffers, a bulk transaction's documents)
 * in their own mappings advised MADV_HUGEPAGE.
 *
 * Why: a bulk import of 10M documents touches about a gigabyte of fresh
 * memory, and every first touch of a page is a page fault; on the
 * reference VM a 4 KiB fault costs ~21 us (512 MiB memset: 2.7 s) and a
 * transparent huge page halves the cost per byte.  Small sizes fall back
 * to malloc.  Sizes must be passed back to free and resize.
 */
#ifndef TERN_ENGINE_BIGMEM_H
#define TERN_ENGINE_BIGMEM_H

#include <stddef.h>

void *tern_big_alloc(size_t n);
void *tern_big_realloc(void *p, size_t old_n, size_t n);
void tern_big_free(void *p, size_t n);

#endif
