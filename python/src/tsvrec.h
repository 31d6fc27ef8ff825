/* SPDX-License-Identifier: MIT */
/*
 * tsvrec.h — the records tern.dask's C path moves between its tasks.
 *
 * A TSV block is parsed once (tsvsplit.c, with the rules of `tern import`:
 * tools/tern/tsv.c) and each document appended, decoded, to the bytes
 * object of its key range; a range task (tsvbuild.c) sorts the records of
 * all its blobs and builds one segment.  A record, every number a
 * little-endian u32:
 *
 *     klen vlen nterms  key  value  { flen tlen field NUL term }*nterms
 *
 * flen counts the NUL, so a term's field is a C string inside the blob
 * (tern_term.field points at it).  No per-record Python object exists.
 */
#ifndef PT_TSVREC_H
#define PT_TSVREC_H

#include <stddef.h>
#include <stdint.h>

#define TSVREC_HEAD 12u     /* klen, vlen, nterms */
#define TSVREC_TERM_HEAD 8u /* flen, tlen */

static inline void tsvrec_put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t tsvrec_get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
