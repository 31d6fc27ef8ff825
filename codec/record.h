/* SPDX-License-Identifier: MIT */
/*
 * record.h — a generic coder of small sealed records (tuples of fields):
 * the bytes every record is made of, and the seal that checks it.  It
 * knows no record: which fields a record holds, in what order, and what
 * they mean is its user's schema (the engine's catalog,
 * engine/format/catalog_schema.h; docs/FORMAT.md gives the bytes).
 *
 * Fields are LEB128 varints, little-endian integers and raw byte strings;
 * numeric keys are big-endian so that byte order is numeric order.  A
 * writer appends through a cursor (the caller sizes the buffer with the
 * _size helpers); a reader is bounded by the record's length, defines its
 * outputs on failure too (0 or NULL), and fails with TERN_ECORRUPT naming
 * the record ("WHAT record: truncated ...") on a short or malformed field
 * and, at tern_rec_get_done, on trailing bytes.
 */
#ifndef TERN_RECORD_H
#define TERN_RECORD_H

#include "codec/coding.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------- seals */

/* A seal is the XXH3-64 of a value's payload seeded with the XXH3-64 of
 * the key it is stored under, 8 bytes little-endian after the payload:
 * binding the key means a value filed under another key fails as surely
 * as a damaged one. */
#define TERN_REC_SEAL_SIZE 8u
uint64_t tern_rec_seal_of(const void *key, size_t klen, const uint8_t *payload, size_t plen);
/* Writes the seal of payload[0..plen) at payload + plen. */
void tern_rec_seal(const void *key, size_t klen, uint8_t *payload, size_t plen);
/* The seal a stored value ends with, unchecked (0 when too short for one). */
uint64_t tern_rec_stored_seal(const uint8_t *val, size_t vlen);
/* Checks the seal of a stored value; *plen = its payload's length.
 * TERN_ECORRUPT ("WHAT record: checksum mismatch") when it fails. */
int tern_rec_unseal(const void *key, size_t klen, const uint8_t *val, size_t vlen, size_t *plen,
                    const char *what);

/* ------------------------------------------------------------- writing */

typedef struct tern_rec_writer {
  uint8_t *p; /* the next byte */
} tern_rec_writer;

static inline void tern_rec_put_varint(tern_rec_writer *w, uint64_t v) {
  w->p += tern_put_varint(w->p, v);
}
static inline void tern_rec_put_u8(tern_rec_writer *w, uint8_t v) { *w->p++ = v; }
static inline void tern_rec_put_u32(tern_rec_writer *w, uint32_t v) {
  tern_store32(w->p, v);
  w->p += 4;
}
static inline void tern_rec_put_u64(tern_rec_writer *w, uint64_t v) {
  tern_store64(w->p, v);
  w->p += 8;
}
static inline void tern_rec_put_bytes(tern_rec_writer *w, const void *b, size_t n) {
  if (n) memcpy(w->p, b, n);
  w->p += n;
}
/* Bytes a varint of v takes; the most any takes. */
static inline size_t tern_rec_varint_size(uint64_t v) { return tern_varint_len(v); }
#define TERN_REC_VARINT_MAX TERN_VARINT64_MAX

/* ------------------------------------------------------------- reading */

typedef struct tern_rec_reader {
  const uint8_t *p, *end;
  const char *what; /* names the record in messages */
} tern_rec_reader;

static inline tern_rec_reader tern_rec_reader_of(const uint8_t *buf, size_t len, const char *what) {
  return (tern_rec_reader){buf, buf + len, what};
}
int tern_rec_get_varint(tern_rec_reader *r, uint64_t *v);
/* A varint that must fit 32 bits. */
int tern_rec_get_varint32(tern_rec_reader *r, uint32_t *v);
int tern_rec_get_u32(tern_rec_reader *r, uint32_t *v);
int tern_rec_get_u64(tern_rec_reader *r, uint64_t *v);
/* The next n bytes, in place. */
int tern_rec_get_bytes(tern_rec_reader *r, size_t n, const uint8_t **out);
/* Bytes not yet read. */
static inline size_t tern_rec_left(const tern_rec_reader *r) { return (size_t)(r->end - r->p); }
/* TERN_ECORRUPT when bytes are left. */
int tern_rec_get_done(const tern_rec_reader *r);

/* ------------------------------------------------------------- keys and hashes */

/* A number as an 8-byte big-endian key (byte order = numeric order). */
#define TERN_REC_BE64_SIZE 8u
void tern_rec_be64_encode(uint8_t out[TERN_REC_BE64_SIZE], uint64_t v);
/* TERN_ECORRUPT ("WHAT: N bytes, not 8") unless len is 8. */
int tern_rec_be64_decode(const uint8_t *buf, size_t len, uint64_t *v, const char *what);
/* The XXH3-128 of data, canonical (big-endian) bytes: stands for bytes a
 * record cannot hold whole. */
void tern_rec_hash128(uint8_t out[16], const void *data, size_t len);

#endif
