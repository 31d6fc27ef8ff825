/* SPDX-License-Identifier: MIT */
/*
 * livedocs.h — which documents of a segment are deleted.
 *
 * An immutable set over doc ids [0, max_doc).  Applying deletions makes a
 * new set (a new generation); holders of the old one see no change.  The
 * representation is chosen by its actual cost: a whole set of a few runs is
 * one sorted list of runs; otherwise each chunk of 65,536 doc ids takes its
 * cheapest form (livedocs_impl.h has the forms, livedocs_chunk.c and
 * livedocs.c the rule), so memory never exceeds the dense bitset's by more
 * than 1% and iterating the deleted docs costs O(deleted).
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
/* Bytes the set holds in memory. */
size_t tern_livedocs_memory(const tern_livedocs *ld);
/* "none", "sparse", "dense", "runs" or "mixed": the forms its chunks use
 * ("runs" also for a set held as one list of runs). */
const char *tern_livedocs_form(const tern_livedocs *ld);

/* Iterators over the deleted or the live docs; on the stack, fields private.
 * The cursor fills docs in bulk (next_batch: arrays are widened, bitmaps
 * walked a word at a time, runs and empty stretches emitted as ranges);
 * next() hands them out one by one from a small buffer the cursor refills,
 * so it is inline and a load and a compare per doc.  next(), next_batch()
 * and advance() may be mixed freely. */
#define TERN_LD_ITER_BUF 64
typedef struct tern_ld_iter {
  const tern_livedocs *ld;
  int live;        /* 1: live docs, 0: deleted docs */
  uint32_t bi, bn; /* private: buf[bi..bn) not yet returned */
  uint32_t at;     /* private: first doc the cursor has not looked at */
  uint32_t chunk;  /* private: chunk (set of runs: 0) the hints below are for; UINT32_MAX: none */
  uint32_t idx;    /* private: next array entry or run at or after `at` */
  uint32_t page;   /* private: byte-entry arrays: a 256-doc page <= that of entry idx */
  /* Not next to bi: next() stores both, and one merged 8-byte store that
   * the next call reloads 4 bytes of defeats store forwarding (11 ns/doc). */
  uint32_t doc; /* current (last returned), TERN_LD_END when done */
  uint32_t buf[TERN_LD_ITER_BUF]; /* private */
} tern_ld_iter;
void tern_livedocs_iter_deleted(tern_ld_iter *it, const tern_livedocs *ld);
void tern_livedocs_iter_live(tern_ld_iter *it, const tern_livedocs *ld);
/* Private: next() when its buffer is empty. */
uint32_t tern_ld_iter_refill(tern_ld_iter *it);
/* Next doc, or TERN_LD_END. */
inline uint32_t tern_ld_iter_next(tern_ld_iter *it) {
  if (it->bi < it->bn) return it->doc = it->buf[it->bi++];
  return tern_ld_iter_refill(it);
}
/* The next docs, in order, into out[0..cap); returns how many (0: done,
 * and then always 0).  out[returned..cap) may be overwritten. */
size_t tern_ld_iter_next_batch(tern_ld_iter *it, uint32_t *out, size_t cap);
/* First doc >= target not yet returned, or TERN_LD_END. */
uint32_t tern_ld_iter_advance(tern_ld_iter *it, uint32_t target);
/* How many docs the iterator returns in all. */
uint64_t tern_ld_iter_cost(const tern_ld_iter *it);

/* The framed bytes of a .liv generation (docs/FORMAT.md), malloc'd:
 * natively sparse when that is smaller, dense otherwise. */
int tern_livedocs_write(const tern_livedocs *ld, const uint8_t *segid, uint8_t **out,
                        size_t *len);
/* The same bytes written into dst, which holds exactly
 * tern_livedocs_encoded_len(ld) of them (len, checked: TERN_EINVAL), so
 * that a caller can write them where they are kept (the catalog's value,
 * reserved in LMDB) without a copy.  TERN_ENOMEM (a dense body's one
 * chunk of scratch). */
size_t tern_livedocs_encoded_len(const tern_livedocs *ld);
int tern_livedocs_encode(const tern_livedocs *ld, const uint8_t *segid, uint8_t *dst, size_t len);
/* Builds the set from .liv bytes, checking the frame, the segment id, max_doc
 * and the deleted count the catalog recorded.  TERN_ECORRUPT / TERN_EVERSION. */
int tern_livedocs_read(tern_livedocs **out, const uint8_t *buf, size_t len, const uint8_t *segid,
                       uint32_t max_doc, uint32_t expected_deleted);

#endif
