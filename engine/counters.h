/*
 * counters.h — what the engine does per operation, counted (like the file
 * layer's read counts) so that tests can assert it: segment opens, reads
 * of the catalog, whole states and buffers loaded from it.  Process-wide,
 * relaxed atomics; internal (not part of tern.h).
 */
#ifndef TERN_ENGINE_COUNTERS_H
#define TERN_ENGINE_COUNTERS_H

#include <stdatomic.h>

typedef struct tern_engine_counts {
  atomic_ulong seg_opens;      /* tern_seg_open of a segment the catalog lists */
  atomic_ulong catalog_reads;  /* LMDB read transactions on the catalog (state.c) */
  atomic_ulong state_loads;    /* states built from the catalog's segment records */
  atomic_ulong buffer_loads;   /* buffer views read from the catalog's buffer DBI */
} tern_engine_counts;

extern tern_engine_counts tern_engine_count;

#define TERN_COUNT(field) atomic_fetch_add_explicit(&tern_engine_count.field, 1, memory_order_relaxed)

#endif
