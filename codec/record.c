/* SPDX-License-Identifier: MIT */
/*
 * record.c — the generic record coder (record.h): seals, the bounded
 * reader, big-endian keys.  Readers trust nothing; writers trust their
 * caller to have sized the buffer.
 */
#include "codec/record.h"

#include "codec/status.h"

#include <xxhash.h>

/* ------------------------------------------------------------- seals */

uint64_t tern_rec_seal_of(const void *key, size_t klen, const uint8_t *payload, size_t plen) {
  return XXH3_64bits_withSeed(payload, plen, XXH3_64bits(key, klen));
}

void tern_rec_seal(const void *key, size_t klen, uint8_t *payload, size_t plen) {
  tern_store64(payload + plen, tern_rec_seal_of(key, klen, payload, plen));
}

uint64_t tern_rec_stored_seal(const uint8_t *val, size_t vlen) {
  return vlen >= TERN_REC_SEAL_SIZE ? tern_load64(val + vlen - TERN_REC_SEAL_SIZE) : 0;
}

int tern_rec_unseal(const void *key, size_t klen, const uint8_t *val, size_t vlen, size_t *plen,
                    const char *what) {
  *plen = 0;
  if (vlen < TERN_REC_SEAL_SIZE)
    return tern_fail(TERN_ECORRUPT, "%s record: %zu bytes, no room for its checksum", what, vlen);
  size_t n = vlen - TERN_REC_SEAL_SIZE;
  if (tern_load64(val + n) != tern_rec_seal_of(key, klen, val, n))
    return tern_fail(TERN_ECORRUPT, "%s record: checksum mismatch", what);
  *plen = n;
  return TERN_OK;
}

/* ------------------------------------------------------------- reading */

int tern_rec_get_varint(tern_rec_reader *r, uint64_t *v) {
  *v = 0;
  if (tern_get_varint(&r->p, r->end, v) < 0)
    return tern_fail(TERN_ECORRUPT, "%s record: truncated or bad varint", r->what);
  return TERN_OK;
}

int tern_rec_get_varint32(tern_rec_reader *r, uint32_t *v) {
  uint64_t x;
  *v = 0;
  TERN_TRY(tern_rec_get_varint(r, &x));
  if (x > UINT32_MAX)
    return tern_fail(TERN_ECORRUPT, "%s record: value %llu too large", r->what,
                     (unsigned long long)x);
  *v = (uint32_t)x;
  return TERN_OK;
}

int tern_rec_get_bytes(tern_rec_reader *r, size_t n, const uint8_t **out) {
  *out = NULL;
  if (tern_rec_left(r) < n)
    return tern_fail(TERN_ECORRUPT, "%s record: truncated (%zu bytes wanted)", r->what, n);
  *out = r->p;
  r->p += n;
  return TERN_OK;
}

int tern_rec_get_u32(tern_rec_reader *r, uint32_t *v) {
  const uint8_t *b;
  *v = 0;
  TERN_TRY(tern_rec_get_bytes(r, 4, &b));
  *v = tern_load32(b);
  return TERN_OK;
}

int tern_rec_get_u64(tern_rec_reader *r, uint64_t *v) {
  const uint8_t *b;
  *v = 0;
  TERN_TRY(tern_rec_get_bytes(r, 8, &b));
  *v = tern_load64(b);
  return TERN_OK;
}

int tern_rec_get_done(const tern_rec_reader *r) {
  if (r->p != r->end)
    return tern_fail(TERN_ECORRUPT, "%s record: %zu trailing bytes", r->what, tern_rec_left(r));
  return TERN_OK;
}

/* ------------------------------------------------------------- keys and hashes */

void tern_rec_be64_encode(uint8_t out[TERN_REC_BE64_SIZE], uint64_t v) {
  for (int i = 0; i < 8; i++)
    out[i] = (uint8_t)(v >> (56 - 8 * i));
}

int tern_rec_be64_decode(const uint8_t *buf, size_t len, uint64_t *v, const char *what) {
  *v = 0;
  if (len != TERN_REC_BE64_SIZE)
    return tern_fail(TERN_ECORRUPT, "%s: %zu bytes, not 8", what, len);
  uint64_t x = 0;
  for (int i = 0; i < 8; i++)
    x = x << 8 | buf[i];
  *v = x;
  return TERN_OK;
}

void tern_rec_hash128(uint8_t out[16], const void *data, size_t len) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(data, len));
  memcpy(out, c.digest, 16);
}
