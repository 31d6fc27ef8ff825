/* SPDX-License-Identifier: MIT */
/*
 * coding.h — integers to bytes and back: fixed-width little-endian and
 * LEB128 varints.  Every load goes through memcpy, so any alignment is fine,
 * and every varint decoder is bounded by an end pointer, so hostile bytes
 * cannot make it read past its buffer.
 */
#ifndef TERN_CODING_H
#define TERN_CODING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TERN_VARINT64_MAX 10 /* bytes of the longest 64-bit varint */

static inline uint16_t tern_load16(const void *p) {
  const uint8_t *b = p;
  return (uint16_t)(b[0] | (uint16_t)b[1] << 8);
}
static inline uint32_t tern_load32(const void *p) {
  const uint8_t *b = p;
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static inline uint64_t tern_load64(const void *p) {
  return (uint64_t)tern_load32(p) | (uint64_t)tern_load32((const uint8_t *)p + 4) << 32;
}
static inline void tern_store16(void *p, uint16_t v) {
  uint8_t *b = p;
  b[0] = (uint8_t)v;
  b[1] = (uint8_t)(v >> 8);
}
static inline void tern_store32(void *p, uint32_t v) {
  uint8_t *b = p;
  for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
}
static inline void tern_store64(void *p, uint64_t v) {
  tern_store32(p, (uint32_t)v);
  tern_store32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

/* n values of src little-endian at p: one copy on a little-endian host
 * (a live-docs record's index and payload, written every commit that
 * deletes). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TERN_HOST_LE 1
#else
#define TERN_HOST_LE 0
#endif
static inline void tern_store16s(void *p, const uint16_t *src, size_t n) {
  if (TERN_HOST_LE) {
    memcpy(p, src, 2 * n);
    return;
  }
  for (size_t i = 0; i < n; i++) tern_store16((uint8_t *)p + 2 * i, src[i]);
}
static inline void tern_store32s(void *p, const uint32_t *src, size_t n) {
  if (TERN_HOST_LE) {
    memcpy(p, src, 4 * n);
    return;
  }
  for (size_t i = 0; i < n; i++) tern_store32((uint8_t *)p + 4 * i, src[i]);
}
static inline void tern_store64s(void *p, const uint64_t *src, size_t n) {
  if (TERN_HOST_LE) {
    memcpy(p, src, 8 * n);
    return;
  }
  for (size_t i = 0; i < n; i++) tern_store64((uint8_t *)p + 8 * i, src[i]);
}

/* Writes v as a varint at p (room for TERN_VARINT64_MAX bytes); returns the length. */
static inline size_t tern_put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}
static inline size_t tern_varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

/* Reads a varint from *pp, not past end.  Returns 0 and advances *pp, or -1
 * when the bytes end first or the value overflows 64 bits. */
static inline int tern_get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
  const uint8_t *p = *pp;
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (p >= end) return -1;
    uint8_t b = *p++;
    if (shift == 63 && b > 1) return -1;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (b < 0x80) {
      *pp = p;
      *out = v;
      return 0;
    }
  }
  return -1;
}

/* Zig-zag maps signed to unsigned so small magnitudes stay short.  The
 * sign is taken from the unsigned bits: C11 leaves a right shift of a
 * negative number implementation-defined. */
static inline uint64_t tern_zigzag(int64_t v) {
  uint64_t u = (uint64_t)v;
  return (u << 1) ^ (0 - (u >> 63));
}
static inline int64_t tern_unzigzag(uint64_t v) {
  return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Bits needed to hold v (0 for v == 0). */
static inline unsigned tern_bitwidth(uint64_t v) {
  return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

#endif
