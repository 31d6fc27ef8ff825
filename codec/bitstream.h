/* SPDX-License-Identifier: MIT */
/*
 * bitstream.h — little-endian bit fields inside one terms block page.
 *
 * Bit order matches bitpack.h: bit 0 is the lowest bit of byte 0, and a
 * field of width w at position pos holds bits [pos, pos+w).  Reads are
 * bounded by the block, not by the caller: a position past it reads zero
 * bits, so a corrupt length can never make a reader touch memory outside
 * the TERN_BITS_PAGE bytes it was given — nor the page's checksum, in the
 * 4 bytes of the 4 KiB page after them, which is no block data.  Callers
 * check positions against the block's used length to report corruption;
 * memory safety never depends on them doing so.
 */
#ifndef TERN_BITSTREAM_H
#define TERN_BITSTREAM_H

#include "codec/status.h"

#include <stdint.h>
#include <string.h>

#define TERN_BITS_PAGE 4092u /* bytes a reader may touch: a 4 KiB page less its checksum */
#define TERN_BITS_MAXW 56u   /* widest field one read returns */

static inline uint64_t tern_bits_le64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

/* The block's last 7 bytes cannot be loaded 8 at a time: assemble them. */
static inline uint64_t tern_bits_tail64(const uint8_t *page, uint32_t byte) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < 8; i++)
    if (byte + i < TERN_BITS_PAGE) v |= (uint64_t)page[byte + i] << (8 * i);
  return v;
}

/* w (0..56) bits at bit position pos of page[TERN_BITS_PAGE]. */
static inline uint64_t tern_bits_get(const uint8_t *page, uint32_t pos, unsigned w) {
  uint32_t byte = pos >> 3;
  uint64_t v = TERN_LIKELY(byte <= TERN_BITS_PAGE - 8) ? tern_bits_le64(page + byte)
                                                       : tern_bits_tail64(page, byte);
  return (v >> (pos & 7)) & (((uint64_t)1 << w) - 1);
}

/* A writer into a zeroed buffer of TERN_BITS_PAGE + 8 bytes. */
typedef struct tern_bitw {
  uint8_t *buf;
  uint32_t pos;
} tern_bitw;

/* One 8-byte read-or-write (the buffer's 8 spare bytes make it safe at the
 * end): a byte at a time was most of what encoding a block cost. */
static inline void tern_bits_put(tern_bitw *w, uint64_t v, unsigned width) {
  uint32_t byte = w->pos >> 3, shift = w->pos & 7;
  v &= ((uint64_t)1 << width) - 1;
  /* width <= 56 and shift <= 7: the field fits the 64 bits. */
  uint64_t word = tern_bits_le64(w->buf + byte) | v << shift;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  word = __builtin_bswap64(word);
#endif
  memcpy(w->buf + byte, &word, sizeof word);
  w->pos += width;
}

#endif
