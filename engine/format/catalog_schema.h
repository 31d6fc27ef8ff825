/* SPDX-License-Identifier: MIT */
/*
 * catalog_schema.h — the schema of what the engine keeps in its LMDB
 * catalog and in memory: the catalog format version, the options, the
 * commit state (commit counter, segment numbers, buffer totals), the health
 * record, one record per segment (its live-docs generation), the document
 * records of the write buffer and the buffer's LMDB keys within LMDB's key
 * limit (docs/FORMAT.md, "The catalog", byte by byte).
 *
 * This file says which fields each record holds and what they mean; the
 * bytes are made and read by the codec's generic record coder
 * (codec/record.h: varints, little-endian integers, byte strings, seals),
 * so the engine still never parses a byte itself, and the codec knows
 * nothing of commits.  Every decoder is bounded by the record's length,
 * rejects trailing bytes, and returns TERN_ECORRUPT naming the record when
 * the bytes are malformed.
 */
#ifndef TERN_CATALOG_SCHEMA_H
#define TERN_CATALOG_SCHEMA_H

#include "codec/frame.h"
#include "codec/record.h"
#include "tern.h"

#include <stddef.h>
#include <stdint.h>

/* Version of the catalog schema (DBIs, keys and the records below).
 * Version 2 seals every value (below); version 1 catalogs are refused
 * with TERN_EVERSION (none was deployed).  Version 3 (what a creation
 * writes) keeps the state record in LMDB's main database, beside the
 * tables' records, instead of in table "meta": every commit rewrites both
 * (the buffer table's root moves), so they share one page and a commit
 * dirties one page fewer.  Version 4 (what a creation writes) keeps the
 * buffered documents in the main database too, under a generation prefix
 * (tern_rec_mainbufkey), and writes the state record only when the
 * segments, the counters or the buffer's generation change: a commit of
 * buffered documents writes its documents and nothing else, and its
 * number is LMDB's transaction id plus the record's seq_base.  Version 2
 * and 3 catalogs are read and written as they are (their state record
 * stays where it was, rewritten by every commit). */
#define TERN_CATALOG_VERSION 4u
#define TERN_CATALOG_VERSION_MIN 2u
/* Whether a catalog of version v keeps its state record in the main
 * database (else in table "meta"). */
#define TERN_CATALOG_STATE_IN_MAIN(v) ((v) >= 3u)
/* Whether a catalog of version v keeps its buffered documents in the main
 * database (else in table "buffer") and numbers commits by LMDB's
 * transaction id. */
#define TERN_CATALOG_BUFFER_IN_MAIN(v) ((v) >= 4u)

/* Every value tern stores in LMDB ends with a seal bound to its LMDB key
 * (codec/record.h, tern_rec_seal): catalog.c seals on write and unseals
 * on read. */

/* ------------------------------------------------------------- format */

#define TERN_REC_FORMAT_SIZE 8u
/* "tern" then the version as u32 (the payload; the seal follows). */
void tern_rec_format_encode(uint8_t out[TERN_REC_FORMAT_SIZE]);
/* Decodes a stored (sealed) format value: TERN_ECORRUPT (not a tern
 * catalog, or a failed seal) or TERN_EVERSION (a schema outside
 * TERN_CATALOG_VERSION_MIN..TERN_CATALOG_VERSION: the version is read
 * before the seal, whose presence depends on it). */
int tern_rec_format_decode(const uint8_t *buf, size_t len, uint32_t *version);

/* ------------------------------------------------------------- options */

/* A decoded options record.  Field names point into the decoded bytes. */
typedef struct tern_rec_field {
  const uint8_t *name;
  size_t name_len;
  uint32_t threshold;
} tern_rec_field;

typedef struct tern_rec_options {
  uint32_t pulsing_threshold;
  uint32_t inline_value_max;
  uint32_t bloom_bits_per_key;
  uint64_t write_buffer_bytes;
  uint64_t map_size;
  size_t nfields;
  tern_rec_field *fields; /* malloc'd array (names not copied); free with tern_rec_options_free */
} tern_rec_options;

/* Encodes `o` into a malloc'd buffer. */
int tern_rec_options_encode(const tern_options *o, uint8_t **out, size_t *len);
int tern_rec_options_decode(tern_rec_options *out, const uint8_t *buf, size_t len);
void tern_rec_options_free(tern_rec_options *o);

/* ------------------------------------------------------------- state */

/* What one commit of the catalog is, besides its segments.  Version 2 and
 * 3 store the first six fields; version 4 stores seq_base, next_segment,
 * buffer_gen, old_docs, nsegments and seg_digest (tern_rec_state4_*), and
 * the buffered totals are counted when the catalog is read. */
typedef struct tern_rec_state {
  uint64_t seq;            /* commits made so far; every catalog write adds one (v4: at
                              least one: LMDB's transaction id + seq_base) */
  uint64_t next_segment;   /* number the next segment gets */
  uint64_t buffered_docs;  /* entries of the buffer */
  uint64_t buffered_bytes; /* sum of their LMDB key and value lengths */
  uint64_t nsegments;      /* records in the segments DBI */
  uint64_t seg_digest;     /* XOR of their seals: a lost or stale record shows */
  uint64_t seq_base;       /* v4: seq minus LMDB's transaction id (modulo 2^64) */
  uint64_t buffer_gen;     /* v4: the generation of the buffered documents */
  uint64_t old_docs;       /* v4: documents of older generations (a flush leaves them;
                              sweeps remove them) */
} tern_rec_state;

#define TERN_REC_STATE_MAX (5u * 10u + 8u) /* either version: five varints, the digest */
size_t tern_rec_state_encode(uint8_t out[TERN_REC_STATE_MAX], const tern_rec_state *s);
int tern_rec_state_decode(tern_rec_state *out, const uint8_t *buf, size_t len);
/* Version 4: varint seq_base | varint next_segment | varint buffer_gen |
 * varint old_docs | varint nsegments | u64 seg_digest.  Decoding leaves seq
 * and the buffered totals 0 (catalog.c sets them). */
size_t tern_rec_state4_encode(uint8_t out[TERN_REC_STATE_MAX], const tern_rec_state *s);
int tern_rec_state4_decode(tern_rec_state *out, const uint8_t *buf, size_t len);

/* ------------------------------------------------------------- health */

/* meta "health": the last failure of work run after a commit (flush,
 * merge), and the segments that failed verification as merge input (the
 * merge policy skips them instead of failing after every commit). */
#define TERN_REC_HEALTH_BAD_MAX 64u
#define TERN_REC_HEALTH_MSG_MAX 255u
typedef struct tern_rec_health {
  int status;   /* 0: none */
  uint64_t seq; /* the commit it followed */
  size_t nbad;
  uint64_t bad[TERN_REC_HEALTH_BAD_MAX];
  char msg[TERN_REC_HEALTH_MSG_MAX + 1];
} tern_rec_health;

#define TERN_REC_HEALTH_MAX (4u * 10u + TERN_REC_HEALTH_BAD_MAX * 10u + TERN_REC_HEALTH_MSG_MAX)
size_t tern_rec_health_encode(uint8_t out[TERN_REC_HEALTH_MAX], const tern_rec_health *h);
int tern_rec_health_decode(tern_rec_health *out, const uint8_t *buf, size_t len);

/* ------------------------------------------------------------- segments */

/* Segment records are keyed by their number, 8 bytes big-endian so that
 * LMDB's byte order is numeric order (oldest first). */
#define TERN_REC_SEGKEY_SIZE TERN_REC_BE64_SIZE
void tern_rec_segkey_encode(uint8_t out[TERN_REC_SEGKEY_SIZE], uint64_t number);
int tern_rec_segkey_decode(const uint8_t *buf, size_t len, uint64_t *number);

typedef struct tern_rec_segment {
  uint8_t segid[TERN_SEGID_SIZE]; /* the id in every file header of the segment */
  uint64_t max_doc;
  uint64_t deleted;      /* deleted docs in its live docs of generation `livedocs_gen` */
  uint64_t livedocs_gen; /* 0: no deletions, no live-docs value */
} tern_rec_segment;

#define TERN_REC_SEGMENT_MAX (TERN_SEGID_SIZE + 3u * 10u)
size_t tern_rec_segment_encode(uint8_t out[TERN_REC_SEGMENT_MAX], const tern_rec_segment *s);
int tern_rec_segment_decode(tern_rec_segment *out, const uint8_t *buf, size_t len);

/* ------------------------------------------------------------- documents */

/* A document record: the value and the secondary terms of one key (the
 * value of a buffer-DBI entry; the key is the LMDB key).
 *
 *   varint vlen | value | varint nterms | nterms x (u8 flen | field | varint tlen | term)
 */
size_t tern_rec_doc_size(size_t vlen, const tern_term *terms, size_t nterms);
/* Writes the record into out[tern_rec_doc_size(...)]; returns its length. */
size_t tern_rec_doc_encode(uint8_t *out, const void *val, size_t vlen, const tern_term *terms,
                           size_t nterms);

/* A decoded document record: the value, and the terms still encoded
 * (walk them with tern_rec_terms_next). */
typedef struct tern_rec_doc {
  const uint8_t *val;
  size_t vlen;
  uint64_t nterms;
  const uint8_t *terms, *end;
} tern_rec_doc;
/* Decodes and checks the whole record (every term's bounds and lengths). */
int tern_rec_doc_decode(tern_rec_doc *out, const uint8_t *buf, size_t len);
/* Decodes the value and the term count, not the terms (a record already
 * checked once by tern_rec_doc_decode). */
int tern_rec_doc_decode_checked(tern_rec_doc *out, const uint8_t *buf, size_t len);
/* Decodes only the value (records already checked once). */
int tern_rec_doc_value(const uint8_t *buf, size_t len, const uint8_t **val, size_t *vlen);

/* Iterates a checked record's terms. */
typedef struct tern_rec_term {
  const uint8_t *field;
  size_t flen;
  const uint8_t *term;
  size_t tlen;
} tern_rec_term;
typedef struct tern_rec_terms {
  const uint8_t *p, *end;
  uint64_t left;
} tern_rec_terms;
void tern_rec_terms_init(tern_rec_terms *it, const tern_rec_doc *d);
/* 1 and *t set; 0 after the last; TERN_ECORRUPT on malformed bytes. */
int tern_rec_terms_next(tern_rec_terms *it, tern_rec_term *t);

/* ------------------------------------------------------------- buffer entries */

/* LMDB keys are at most 511 bytes; primary keys up to TERN_KEY_MAX.  The
 * buffer's key of a primary key is the key itself when it has at most
 * TERN_REC_BUFKEY_PLAIN bytes; a longer key is stored under its first
 * TERN_REC_BUFKEY_PREFIX bytes, the XXH3-128 of the whole key and a 0x01
 * byte: TERN_REC_BUFKEY_MAX bytes, a length no plain key has.  The buffer
 * value then carries the rest of the key:
 *
 *   varint tail_len | tail (key bytes past the prefix; none for plain keys) | document record
 */
#define TERN_REC_BUFKEY_PLAIN 480u
#define TERN_REC_BUFKEY_PREFIX 464u
#define TERN_REC_BUFKEY_MAX 481u

size_t tern_rec_bufkey(uint8_t out[TERN_REC_BUFKEY_MAX], const void *key, size_t klen);
/* Version 4: the main database's key of a buffered document, a 0x00 byte
 * (no table name starts so), its generation (u64 big-endian) and the
 * bufkey above: a flush starts a new generation instead of emptying a
 * table, and sweeps remove the older ones a few hundred at a time. */
#define TERN_REC_GENKEY_PREFIX 9u
#define TERN_REC_MAINBUFKEY_MAX (TERN_REC_GENKEY_PREFIX + TERN_REC_BUFKEY_MAX)
size_t tern_rec_mainbufkey(uint8_t out[TERN_REC_MAINBUFKEY_MAX], uint64_t gen, const void *key,
                           size_t klen);
/* The generation prefix alone (the first key of a generation). */
void tern_rec_genkey(uint8_t out[TERN_REC_GENKEY_PREFIX], uint64_t gen);
/* Whether an LMDB key of the main database is a buffered document's, and
 * its generation. */
int tern_rec_genkey_decode(const uint8_t *k, size_t n, uint64_t *gen);
size_t tern_rec_bufval_size(size_t klen, size_t dlen);
void tern_rec_bufval_encode(uint8_t *out, const void *key, size_t klen, const uint8_t *doc,
                            size_t dlen);
/* Rebuilds the primary key into key[TERN_KEY_MAX] and finds the document
 * record; checks the long-key hash. */
int tern_rec_bufval_decode(const uint8_t *lkey, size_t lklen, const uint8_t *val, size_t vlen,
                           uint8_t *key, size_t *klen, const uint8_t **doc, size_t *dlen);

#endif
