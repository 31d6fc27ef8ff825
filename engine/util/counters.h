/* SPDX-License-Identifier: MIT */
/*
 * counters.h — what the engine does per operation, counted (like the file
 * layer's read counts) so that tests can assert it: segment opens, reads
 * of the catalog, whole states and buffers loaded from it (process-wide,
 * relaxed atomics), and the probes of lookups (per thread).  Internal (not
 * part of tern.h).
 */
#ifndef TERN_ENGINE_COUNTERS_H
#define TERN_ENGINE_COUNTERS_H

#include "codec/status.h"

#include <stdatomic.h>

typedef struct tern_engine_counts {
  atomic_ulong seg_opens;      /* tern_seg_open of a segment the catalog lists */
  atomic_ulong catalog_reads;  /* LMDB read transactions on the catalog (state.c) */
  atomic_ulong state_loads;    /* states built from the catalog's segment records */
  atomic_ulong state_record_reads; /* state records an edit's write transaction read
                                      (not taken from its base: edit_log.c) */
  atomic_ulong buffer_loads;   /* buffer views read from the catalog's buffer */
  atomic_ulong ingest_probes;  /* keys an ingest looked up in the index (overlapping ranges) */
  atomic_ulong map_grows;      /* catalog maps doubled by this process's writer */
  atomic_ulong map_adopts;     /* map sizes adopted after another process grew it */
  atomic_ulong commits;        /* tern_commit calls that committed (tern_stats counters) */
  atomic_ulong flushes;        /* buffers installed as segments */
  atomic_ulong merges;         /* merges installed */
  atomic_ulong worker_wakes;   /* worker threads a commit woke from sleep (not lingering) */
} tern_engine_counts;

extern tern_engine_counts tern_engine_count;

/* The work of lookups, counted per thread (a shared atomic would bounce a
 * cache line between reading threads on every get): keys hashed, segments
 * whose key range was checked, filters tested, terms blocks searched,
 * range-map entries compared. */
typedef struct tern_get_counts {
  unsigned long key_hashes, range_checks, filter_checks, block_probes;
  unsigned long map_entries; /* range-map entries whose range a get compared the key with */
} tern_get_counts;

/* Initial-exec (TERN_TLS_IE, 40 bytes): no __tls_get_addr call a count. */
extern _Thread_local tern_get_counts tern_get_count TERN_TLS_IE;

#define TERN_COUNT_GET(field, n) (tern_get_count.field += (n))

#define TERN_COUNT(field) atomic_fetch_add_explicit(&tern_engine_count.field, 1, memory_order_relaxed)

/* Keys looked up (tern_get, tern_get_batch, tern_txn_get), process-wide:
 * striped as the file layer's read counts are (each thread adds to its own
 * cache line), summed when asked (tern_stats_get). */
void tern_count_gets(unsigned long n);
uint64_t tern_gets_total(void);

#endif
