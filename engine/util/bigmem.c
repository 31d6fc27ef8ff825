/* SPDX-License-Identifier: MIT */
/*
 * bigmem.c — mmap + MADV_HUGEPAGE from 2 MiB up, malloc below (bigmem.h).
 */
#include "engine/util/bigmem.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BIG_MIN ((size_t)2 << 20)

void *tern_big_alloc(size_t n) {
  if (n < BIG_MIN) return malloc(n ? n : 1);
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, n, MADV_HUGEPAGE);
#endif
  return p;
}

void tern_big_free(void *p, size_t n) {
  if (!p) return;
  if (n < BIG_MIN)
    free(p);
  else
    munmap(p, n);
}

void *tern_big_realloc(void *p, size_t old_n, size_t n) {
  if (!p) return tern_big_alloc(n);
  if (old_n < BIG_MIN && n < BIG_MIN) return realloc(p, n ? n : 1);
  if (old_n >= BIG_MIN && n >= BIG_MIN) {
    void *q = mremap(p, old_n, n, MREMAP_MAYMOVE);
    return q == MAP_FAILED ? NULL : q;
  }
  void *q = tern_big_alloc(n);
  if (!q) return NULL;
  memcpy(q, p, old_n < n ? old_n : n);
  tern_big_free(p, old_n);
  return q;
}
