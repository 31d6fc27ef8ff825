/* SPDX-License-Identifier: MIT */
/*
 * bitpack.c — frame-of-reference bit packing (bitpack.h).
 *
 * Packing is not on any read path, so it is one generic loop: a 64-bit
 * accumulator that takes each value at its bit offset and spills 32 bits at
 * a time.  Unpacking decodes every postings block, so a full block of 128
 * values has a specialised path per width: 128 values of w bits are exactly
 * 2*w little-endian 64-bit words, and each value is a shift (and, when it
 * straddles two words, an or of the next word's low bits) of one word.  The
 * unpack_full() body is inlined once per width with w a constant and its
 * inner loop unrolled over 64 values (one period of the bit pattern), so
 * every shift and word index is a constant; the words are loaded with
 * tern_load64 (byte loads the compiler fuses), never by pointer cast, and
 * never beyond the 16*w bytes of the block.  Other counts (the test's
 * partial blocks) take the generic bit reader, bounded by the packed size.
 */
#include "codec/bitpack.h"

#include "codec/coding.h"

static inline uint64_t width_mask(unsigned w) { return ((uint64_t)1 << w) - 1; }

unsigned tern_pack_width(const uint32_t *v, uint32_t n) {
  uint32_t all = 0;
  for (uint32_t i = 0; i < n; i++)
    all |= v[i];
  return tern_bitwidth(all);
}

void tern_pack(uint8_t *out, const uint32_t *v, uint32_t n, unsigned w) {
  if (w == 0 || w > 32) return;
  const uint64_t mask = width_mask(w);
  uint64_t acc = 0;
  unsigned fill = 0; /* bits held in acc, < 32 between values */
  for (uint32_t i = 0; i < n; i++) {
    acc |= ((uint64_t)v[i] & mask) << fill;
    fill += w;
    if (fill >= 32) {
      tern_store32(out, (uint32_t)acc);
      out += 4;
      acc >>= 32;
      fill -= 32;
    }
  }
  for (; fill > 0; fill = fill > 8 ? fill - 8 : 0) {
    *out++ = (uint8_t)acc;
    acc >>= 8;
  }
}

/* Any n: value i is read from the at most 5 bytes holding its bits. */
static void unpack_generic(uint32_t *v, const uint8_t *in, uint32_t n, unsigned w) {
  const size_t size = tern_packed_size(n, w);
  const uint64_t mask = width_mask(w);
  for (uint32_t i = 0; i < n; i++) {
    size_t bit = (size_t)i * w, byte = bit >> 3;
    uint64_t x = 0;
    for (size_t k = 0; k < 8 && byte + k < size; k++)
      x |= (uint64_t)in[byte + k] << (8 * k);
    v[i] = (uint32_t)((x >> (bit & 7)) & mask);
  }
}

/* 64 values of width w from the w words at `in` (w constant after inlining). */
static inline __attribute__((always_inline)) void unpack64(uint32_t *v, const uint8_t *in,
                                                           unsigned w) {
  const uint64_t mask = width_mask(w);
#pragma GCC unroll 64
  for (unsigned i = 0; i < 64; i++) {
    const unsigned bit = i * w, word = bit >> 6, shift = bit & 63;
    uint64_t x = tern_load64(in + 8 * word) >> shift;
    if (shift + w > 64) x |= tern_load64(in + 8 * (word + 1)) << (64 - shift);
    v[i] = (uint32_t)(x & mask);
  }
}

static inline __attribute__((always_inline)) void unpack_full(uint32_t *v, const uint8_t *in,
                                                              unsigned w) {
  /* the bit pattern repeats every 64 values: one unrolled copy, run twice */
  for (unsigned half = 0; half < 2; half++)
    unpack64(v + 64 * half, in + 8 * w * half, w);
}

/* clang-format off */
#define TERN_UNPACK_CASE(w) case w: unpack_full(v, in, w); return;

static void unpack_block(uint32_t *v, const uint8_t *in, unsigned w) {
  switch (w) {
  case 0:
    for (unsigned i = 0; i < TERN_PACK_N; i++) v[i] = 0;
    return;
  TERN_UNPACK_CASE(1)  TERN_UNPACK_CASE(2)  TERN_UNPACK_CASE(3)  TERN_UNPACK_CASE(4)
  TERN_UNPACK_CASE(5)  TERN_UNPACK_CASE(6)  TERN_UNPACK_CASE(7)  TERN_UNPACK_CASE(8)
  TERN_UNPACK_CASE(9)  TERN_UNPACK_CASE(10) TERN_UNPACK_CASE(11) TERN_UNPACK_CASE(12)
  TERN_UNPACK_CASE(13) TERN_UNPACK_CASE(14) TERN_UNPACK_CASE(15) TERN_UNPACK_CASE(16)
  TERN_UNPACK_CASE(17) TERN_UNPACK_CASE(18) TERN_UNPACK_CASE(19) TERN_UNPACK_CASE(20)
  TERN_UNPACK_CASE(21) TERN_UNPACK_CASE(22) TERN_UNPACK_CASE(23) TERN_UNPACK_CASE(24)
  TERN_UNPACK_CASE(25) TERN_UNPACK_CASE(26) TERN_UNPACK_CASE(27) TERN_UNPACK_CASE(28)
  TERN_UNPACK_CASE(29) TERN_UNPACK_CASE(30) TERN_UNPACK_CASE(31) TERN_UNPACK_CASE(32)
  default:
    return; /* widths above 32 are rejected by callers */
  }
}
/* clang-format on */

void tern_unpack(uint32_t *v, const uint8_t *in, uint32_t n, unsigned w) {
  if (w > 32) return;
  if (n == TERN_PACK_N)
    unpack_block(v, in, w);
  else if (w == 0)
    for (uint32_t i = 0; i < n; i++)
      v[i] = 0;
  else
    unpack_generic(v, in, n, w);
}
