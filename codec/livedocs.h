/*
 * livedocs.h — which documents of a segment are deleted.
 *
 * An immutable set over doc ids [0, max_doc).  Applying deletions makes a
 * new set (a new generation); holders of the old one see no change.  The
 * representation is chosen per chunk of 65,536 doc ids by its actual cost
 * (livedocs_impl.h has the forms, livedocs_chunk.c the rule), so memory never exceeds the
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
/* 0 for a deleted doc and for doc >= max_doc. */
int tern_livedocs_is_live(const tern_livedocs *ld, uint32_t doc);
/* Deleted docs in [from, to). */
uint32_t tern_livedocs_count_deleted(const tern_livedocs *ld, uint32_t from, uint32_t to);
/* Removes the deleted docs (and any >= max_doc) from a sorted array in
 * place; returns how many remain.  The bulk path of intersecting postings
 * with the live set: one dispatch per chunk, not per doc. */
size_t tern_livedocs_filter(const tern_livedocs *ld, uint32_t *docs, size_t n);
/* Bytes the set holds in memory. */
size_t tern_livedocs_memory(const tern_livedocs *ld);
/* "none", "sparse", "dense", "runs" or "mixed": the forms its chunks use. */
const char *tern_livedocs_form(const tern_livedocs *ld);

/* Iterators over the deleted or the live docs; on the stack, fields private.
 * They hand out docs from a 64-doc window word (next() is then a ctz, as
 * over a dense bitset) or, for deletions held as sorted arrays, from a small
 * buffer of decoded offsets; the chunk's form is consulted once per window
 * or per buffer. */
#define TERN_LD_ITER_BUF 32
typedef struct tern_ld_iter {
  const tern_livedocs *ld;
  int live;          /* 1: live docs, 0: deleted docs */
  uint32_t doc;      /* current, TERN_LD_END when done */
  uint32_t chunk;    /* private: chunk being walked */
  uint32_t pos;      /* private: next window of the chunk to look at */
  uint64_t word;     /* private: docs of the current window not yet returned */
  uint64_t tail;     /* private: docs of the chunk's last window */
  uint32_t base;     /* private: first doc of the current window */
  uint32_t cbase;    /* private: first doc of the chunk */
  uint32_t nwin;     /* private: windows in the chunk */
  uint32_t idx;      /* private: next entry or run of the chunk */
  uint32_t bkt;      /* private: bucket of entry idx */
  uint32_t next_off; /* private: offset of entry / first of run idx; 65536: none */
  const void *slot;  /* private: the chunk's form, NULL when it has no deletions */
  uint8_t bi, bn;    /* private: buf[bi..bn) not yet returned */
  uint16_t buf[TERN_LD_ITER_BUF]; /* private: decoded deleted offsets */
} tern_ld_iter;
void tern_livedocs_iter_deleted(tern_ld_iter *it, const tern_livedocs *ld);
void tern_livedocs_iter_live(tern_ld_iter *it, const tern_livedocs *ld);
/* Next doc, or TERN_LD_END. */
uint32_t tern_ld_iter_next(tern_ld_iter *it);
/* First doc >= target not yet returned, or TERN_LD_END. */
uint32_t tern_ld_iter_advance(tern_ld_iter *it, uint32_t target);
/* How many docs the iterator returns in all. */
uint64_t tern_ld_iter_cost(const tern_ld_iter *it);

/* The framed bytes of a .liv generation (docs/format/livedocs.md), malloc'd:
 * natively sparse when that is smaller, dense otherwise. */
int tern_livedocs_write(const tern_livedocs *ld, const uint8_t *segid, uint8_t **out,
                        size_t *len);
/* Builds the set from .liv bytes, checking the frame, the segment id, max_doc
 * and the deleted count the catalog recorded.  TERN_ECORRUPT / TERN_EVERSION. */
int tern_livedocs_read(tern_livedocs **out, const uint8_t *buf, size_t len, const uint8_t *segid,
                       uint32_t max_doc, uint32_t expected_deleted);

#endif
