/* SPDX-License-Identifier: MIT */
/*
 * bulkwrite.h — writing a bulk transaction's documents as one segment.
 *
 * The documents are the transaction's operations in key order, reached
 * through an index array: each one's key and record sit at a random place
 * of the transaction's memory, so gathering them is a stream of cache and
 * TLB misses.  A helper thread gathers chunks of (key, value) pairs ahead
 * while the caller's thread hands them to the codec, so the misses of one
 * overlap the encoding of the other on a second core.
 */
#ifndef TERN_ENGINE_BULKWRITE_H
#define TERN_ENGINE_BULKWRITE_H

#include "engine/buffer/memseg.h"
#include "tern.h"

#include <stddef.h>
#include <stdint.h>

/* Writes segment `name` in `dir` from ops[order[0..n)] (key order, unique
 * keys; ops whose doc is NULL are deletions and skipped).  *ndocs: docs
 * written; 0 means no segment was written.  segid: the segment's id.  Tells
 * `fn` (may be NULL) the phases "write" (documents written of the live
 * ones, every chunk), "terms" and "sync" (0 of 1, then 1 of 1), as
 * tern_progress_fn of tern.h. */
int tern_bulk_write(const char *dir, const char *name, const tern_options *o, const tern_mdoc *ops,
                    const uint32_t *order, size_t n, int has_terms, uint32_t *ndocs,
                    tern_progress_fn fn, void *payload, uint8_t *segid);

struct tern_segw;
/* Writes the secondary terms of ops[order[0..n)] (the live ones numbered
 * 0, 1, ... in that order) into w, one field at a time (bulk_terms.c): the
 * memory of one field's (term, doc) tuples at a time, read where the
 * transaction holds the documents. */
int tern_bulk_write_terms(struct tern_segw *w, const tern_options *o, const tern_mdoc *ops,
                          const uint32_t *order, size_t n);

#endif
