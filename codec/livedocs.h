/*
 * livedocs.h — which documents of a segment are deleted.
 *
 * An immutable set over doc ids [0, max_doc).  Applying deletions makes a
 * new set (a new generation); holders of the old one see no change.  The
 * representation is chosen per chunk of 65,536 doc ids by its actual cost
 * (see livedocs.c for the forms and the rule), so memory never exceeds the
 * dense bitset's by more than 1% and iterating the deleted docs costs
 * O(deleted).
 */
#ifndef TERN_LIVEDOCS_H
#define TERN_LIVEDOCS_H

#include <stddef.h>
#include <stdint.h>

#define TERN_LD_END UINT32_MAX /* past the last doc of an iterator */
#define TERN_LIVEDOCS_VERSION 1

typedef struct tern_livedocs tern_livedocs;

/* A set with no deletions.  max_doc <= UINT32_MAX - 1. */
int tern_livedocs_new(tern_livedocs **out, uint32_t max_doc);
/* A new generation: `base` plus the deletion of docs[0..n) (any order,
 * duplicates and already-deleted docs are no-ops).  A doc >= max_doc is
 * TERN_EINVAL and nothing is made.  `base` is unchanged. */
int tern_livedocs_apply(tern_livedocs **out, const tern_livedocs *base, const uint32_t *docs,
                        size_t n);
void tern_livedocs_free(tern_livedocs *ld);

uint32_t tern_livedocs_max_doc(const tern_livedocs *ld);
uint32_t tern_livedocs_deleted(const tern_livedocs *ld);
uint32_t tern_livedocs_live(const tern_livedocs *ld);
int tern_livedocs_is_live(const tern_livedocs *ld, uint32_t doc);
/* Deleted docs in [from, to). */
uint32_t tern_livedocs_count_deleted(const tern_livedocs *ld, uint32_t from, uint32_t to);
/* Removes the deleted docs from a sorted array in place; returns how many
 * remain.  The bulk path of intersecting postings with the live set. */
size_t tern_livedocs_filter(const tern_livedocs *ld, uint32_t *docs, size_t n);
/* Bytes the set holds in memory. */
size_t tern_livedocs_memory(const tern_livedocs *ld);
/* "none", "sparse", "dense", "runs" or "mixed": the forms its chunks use. */
const char *tern_livedocs_form(const tern_livedocs *ld);

/* Iterators over the deleted or the live docs; on the stack, fields private. */
typedef struct tern_ld_iter {
  const tern_livedocs *ld;
  int live;        /* 1: live docs, 0: deleted docs */
  uint32_t doc;    /* current, TERN_LD_END when done */
  uint32_t chunk;  /* private */
  uint32_t pos;    /* private */
  uint64_t word;   /* private */
} tern_ld_iter;
void tern_livedocs_iter_deleted(tern_ld_iter *it, const tern_livedocs *ld);
void tern_livedocs_iter_live(tern_ld_iter *it, const tern_livedocs *ld);
/* Next doc, or TERN_LD_END. */
uint32_t tern_ld_iter_next(tern_ld_iter *it);
/* First doc >= target not yet returned, or TERN_LD_END. */
uint32_t tern_ld_iter_advance(tern_ld_iter *it, uint32_t target);
/* How many docs the iterator returns in all. */
uint64_t tern_ld_iter_cost(const tern_ld_iter *it);

/* The framed bytes of a .liv generation (docs/FORMAT.md), in a malloc'd buffer:
 * natively sparse when that is smaller, dense otherwise. */
int tern_livedocs_write(const tern_livedocs *ld, const uint8_t *segid, uint8_t **out,
                        size_t *len);
/* Builds the set from .liv bytes, checking the frame, the segment id, max_doc
 * and the deleted count the catalog recorded.  TERN_ECORRUPT / TERN_EVERSION. */
int tern_livedocs_read(tern_livedocs **out, const uint8_t *buf, size_t len, const uint8_t *segid,
                       uint32_t max_doc, uint32_t expected_deleted);

#endif
