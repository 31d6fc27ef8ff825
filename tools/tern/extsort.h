/* SPDX-License-Identifier: MIT */
/*
 * extsort.h — sorting documents by key in bounded memory, for `tern build`.
 *
 * Documents (key, value, terms, and the input line they came from) are
 * appended to an in-memory run; when the run's bytes reach the budget it
 * is sorted and spilled to a temporary file (created in a directory the
 * caller names and unlinked at once, so that nothing is left behind
 * whatever happens to the process).  At the end the runs are merged (a
 * heap over them, each read through a buffer of its own) and the
 * documents come out in key order; a run that never spilled is handed out
 * from memory.  Sorting a run is an LSD radix sort of each record's first
 * eight key bytes, then the same on the next eight bytes within each group
 * of equal ones, so that keys sharing long prefixes cost a pass per eight
 * shared bytes and nothing per comparison.
 */
#ifndef TERN_CLI_EXTSORT_H
#define TERN_CLI_EXTSORT_H

#include <stddef.h>
#include <stdint.h>

#include "tern.h"

typedef struct extsort extsort;

/* One document as it comes out: pointers valid until the next call. */
typedef struct ext_doc {
  const uint8_t *key, *val;
  size_t klen, vlen;
  const tern_term *terms;
  size_t nterms;
  uint64_t line; /* input line */
} ext_doc;

/* A sorter that keeps at most about `budget` bytes of documents in memory
 * and spills to files in `tmpdir`.  Returns 0 or -errno. */
int extsort_new(extsort **out, size_t budget, const char *tmpdir);
void extsort_free(extsort *s);
/* Adds a document (copied).  Returns 0 or -errno (a failed spill). */
int extsort_add(extsort *s, const void *key, size_t klen, const void *val, size_t vlen,
                const tern_term *terms, size_t nterms, uint64_t line);
/* Runs spilled so far. */
size_t extsort_runs(const extsort *s);
/* Documents added. */
uint64_t extsort_count(const extsort *s);
/* Ends input: sorts what is in memory (and spills it when there are runs
 * already), then prepares the merge.  Returns 0 or -errno. */
int extsort_finish(extsort *s);
/* The next document in key order (ties: input order): 1 and *d set, 0 at
 * the end, -errno on a read error (-EBADMSG: a run file read back wrong). */
int extsort_next(extsort *s, ext_doc *d);

#endif
