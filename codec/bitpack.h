/* SPDX-License-Identifier: MIT */
/*
 * bitpack.h — frame-of-reference bit packing of blocks of 128 integers:
 * every value is stored in the same number of bits, the fewest that hold
 * the largest.  Little-endian bit order: value i occupies bits
 * [i*w, (i+1)*w) of the block, bit 0 being the lowest bit of byte 0.
 */
#ifndef TERN_BITPACK_H
#define TERN_BITPACK_H

#include <stddef.h>
#include <stdint.h>

#define TERN_PACK_N 128u

/* Bytes that n values of width w take: ceil(n*w/8). */
static inline size_t tern_packed_size(uint32_t n, unsigned w) { return ((size_t)n * w + 7) / 8; }
/* The width that holds every value of v[0..n). */
unsigned tern_pack_width(const uint32_t *v, uint32_t n);
/* Packs n values of width w (0..32) into out[tern_packed_size(n, w)]. */
void tern_pack(uint8_t *out, const uint32_t *v, uint32_t n, unsigned w);
/* Unpacks n values of width w from in[tern_packed_size(n, w)]. */
void tern_unpack(uint32_t *v, const uint8_t *in, uint32_t n, unsigned w);

#endif
