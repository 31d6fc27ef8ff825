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
 *
 * tern_calloc_written: a large calloc is a fresh mapping, and the first
 * read of each of its pages maps the kernel's shared zero page; the write
 * that follows (a hash table probed before its slot is set, a counter
 * incremented) replaces that page, and a page replaced under a mapping
 * flushes the TLB of every CPU running another thread of the process: an
 * interrupt that stalls that thread for microseconds, one per 4 KiB.  The
 * worker's key map of a merged buffer run did that to the committing
 * thread 250-390 times in 30,000 one-document commits, about 1% of them:
 * the p99 of their latency (docs/BENCHMARKS.md, "latency").  Writing each
 * page first gives it directly, with no flush.
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

/* calloc(n, size) with every page already written (above): for zeroed
 * arrays filled by read-modify-write while other threads run. */
static inline void *tern_calloc_written(size_t n, size_t size) {
  unsigned char *p = calloc(n, size);
  if (!p) return NULL;
  volatile unsigned char *w = p; /* stores the compiler may not drop */
  for (size_t at = 0, bytes = n * size; at < bytes; at += 4096) w[at] = 0;
  return p;
}

#endif
