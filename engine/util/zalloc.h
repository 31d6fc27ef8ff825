/* SPDX-License-Identifier: MIT */
/*
 * zalloc.h — a zeroed allocation of a small struct made on every commit.
 *
 * glibc's calloc (up to 2.40) does not take chunks from the per-thread
 * cache (tcache) that malloc and free use: each calloc went through
 * _int_malloc's bins, and the structs it made, once freed, filled the
 * cache that no calloc would take from again (callgrind of one-document
 * commits: 200-470 instructions per calloc, five on the commit path).
 * malloc + memset takes the cached chunk.  gcc and clang fold a malloc
 * followed by a memset of its size back into calloc, so the memset is
 * called through a volatile pointer, which they cannot see through.  For
 * structs of a few hundred bytes (tcache: up to 1,032) made and freed per
 * commit; calloc stays for arrays (its overflow check) and for large
 * zeroed blocks.
 */
#ifndef TERN_ENGINE_UTIL_ZALLOC_H
#define TERN_ENGINE_UTIL_ZALLOC_H

#include <stdlib.h>
#include <string.h>

static inline void *tern_zalloc(size_t n) {
  static void *(*const volatile zero)(void *, int, size_t) = memset;
  void *p = malloc(n);
  if (p) zero(p, 0, n);
  return p;
}

#endif
