/* SPDX-License-Identifier: MIT */
/*
 * sort.c — radix sort of keys by 8-byte chunks, most significant first (sort.h).
 */
#include "engine/util/sort.h"

#include "engine/util/bigmem.h"

#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

typedef struct srec {
  uint64_t pfx; /* 8 bytes of the key from the current depth, big-endian, zero padded */
  uint32_t idx;
  uint32_t pad;
} srec;

typedef struct sctx {
  const uint8_t *base;
  size_t stride;
  int dups; /* two keys were found equal */
} sctx;

enum { SMALL = 24 };

static inline const tern_keyref *key_of(const sctx *c, uint32_t i) {
  return (const tern_keyref *)(const void *)(c->base + (size_t)i * c->stride);
}

static inline uint64_t chunk_at(const tern_keyref *k, uint32_t d) {
  if (k->len >= d + 8) {
    uint64_t v;
    memcpy(&v, k->p + d, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
  }
  uint64_t v = 0;
  for (uint32_t i = d; i < k->len; i++)
    v |= (uint64_t)k->p[i] << (56 - 8 * (i - d));
  return v;
}

/* Byte order of two keys that agree on their first d bytes. */
static inline int cmp_from(const tern_keyref *a, const tern_keyref *b, uint32_t d) {
  uint32_t la = a->len > d ? a->len - d : 0, lb = b->len > d ? b->len - d : 0;
  uint32_t n = la < lb ? la : lb;
  int c = n ? memcmp(a->p + d, b->p + d, n) : 0;
  if (c) return c;
  return (la > lb) - (la < lb);
}

static void insertion_sort(sctx *c, srec *a, size_t n, uint32_t d) {
  for (size_t i = 1; i < n; i++) {
    srec x = a[i];
    const tern_keyref *kx = key_of(c, x.idx);
    size_t j = i;
    while (j > 0 && cmp_from(key_of(c, a[j - 1].idx), kx, d) > 0) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = x;
  }
  for (size_t i = 1; i < n && !c->dups; i++)
    c->dups = cmp_from(key_of(c, a[i - 1].idx), key_of(c, a[i].idx), d) == 0;
}

/* Stable sort of a[0..n) by the low `bits` bits of pfx (the higher bits
 * are equal in the range): most significant digit first, 16-bit digits
 * (8-bit for short ranges), skipping digits where all agree; a random
 * 10M-key input needs about two scatter passes. */
static int sort_pfx(srec *a, srec *tmp, size_t n, unsigned bits) {
  if (n <= SMALL) {
    for (size_t i = 1; i < n; i++) {
      srec x = a[i];
      size_t j = i;
      while (j > 0 && a[j - 1].pfx > x.pfx) {
        a[j] = a[j - 1];
        j--;
      }
      a[j] = x;
    }
    return TERN_OK;
  }
  uint64_t mask = bits >= 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1), diff = 0;
  for (size_t i = 1; i < n; i++)
    diff |= (a[i].pfx ^ a[0].pfx) & mask;
  if (!diff) return TERN_OK;
  unsigned top = 63u - (unsigned)__builtin_clzll(diff);
  unsigned width = n > 4096 ? 16 : 8;
  unsigned shift = top + 1 >= width ? top + 1 - width : 0;
  size_t nb = (size_t)1 << (top + 1 - shift);
  size_t *cnt = calloc(nb + 1, sizeof *cnt);
  if (!cnt) return tern_fail(TERN_ENOMEM, "sort: out of memory");
  uint64_t dmask = nb - 1;
  for (size_t i = 0; i < n; i++)
    cnt[((a[i].pfx >> shift) & dmask) + 1]++;
  for (size_t k = 0; k < nb; k++)
    cnt[k + 1] += cnt[k];
  for (size_t i = 0; i < n; i++)
    tmp[cnt[(a[i].pfx >> shift) & dmask]++] = a[i];
  memcpy(a, tmp, n * sizeof *a);
  /* cnt[k] is now the end of bucket k */
  int rc = TERN_OK;
  size_t start = 0;
  for (size_t k = 0; rc == TERN_OK && k < nb; k++) {
    size_t end = cnt[k];
    if (end - start > 1 && shift > 0) rc = sort_pfx(a + start, tmp, end - start, shift);
    start = end;
  }
  free(cnt);
  return rc;
}

static int sort_level(sctx *c, srec *a, srec *tmp, size_t n, uint32_t d) {
  if (n < 2) return TERN_OK;
  if (n <= SMALL) {
    insertion_sort(c, a, n, d);
    return TERN_OK;
  }
  for (size_t i = 0; i < n; i++)
    a[i].pfx = chunk_at(key_of(c, a[i].idx), d);
  TERN_TRY(sort_pfx(a, tmp, n, 64));
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && a[j].pfx == a[i].pfx)
      j++;
    if (j - i > 1) {
      /* Keys that end within this chunk are prefixes of the others: first,
       * by length (stable), then the rest on the next chunk. */
      size_t ended = 0, m = j - i;
      for (size_t k = i; k < j; k++)
        if (key_of(c, a[k].idx)->len <= d + 8) tmp[ended++] = a[k];
      if (ended) {
        size_t r = ended;
        for (size_t k = i; k < j; k++)
          if (key_of(c, a[k].idx)->len > d + 8) tmp[r++] = a[k];
        memcpy(a + i, tmp, m * sizeof *a);
        insertion_sort(c, a + i, ended, d); /* equal chunks: compares lengths */
      }
      TERN_TRY(sort_level(c, a + i + ended, tmp, m - ended, d + 8));
    }
    i = j;
  }
  return TERN_OK;
}

int tern_sort_by_key(uint32_t *perm, const void *base, size_t stride, size_t n, int *dups) {
  sctx c = {base, stride, 0};
  size_t i = 1;
  int cmp = -1;
  while (i < n &&
         (cmp = cmp_from(key_of(&c, (uint32_t)(i - 1)), key_of(&c, (uint32_t)i), 0)) <= 0) {
    c.dups |= cmp == 0;
    i++;
  }
  if (i >= n) {
    for (size_t k = 0; k < n; k++)
      perm[k] = (uint32_t)k;
    if (dups) *dups = c.dups;
    return TERN_OK;
  }
  c.dups = 0;
  size_t bytes = n * sizeof(srec);
  srec *a = tern_big_alloc(bytes), *tmp = tern_big_alloc(bytes);
  int rc = a && tmp ? TERN_OK : tern_fail(TERN_ENOMEM, "sorting %zu keys: out of memory", n);
  for (size_t k = 0; rc == TERN_OK && k < n; k++)
    a[k].idx = (uint32_t)k;
  if (rc == TERN_OK) rc = sort_level(&c, a, tmp, n, 0);
  for (size_t k = 0; rc == TERN_OK && k < n; k++)
    perm[k] = a[k].idx;
  if (dups) *dups = c.dups;
  tern_big_free(a, bytes);
  tern_big_free(tmp, bytes);
  return rc;
}

int tern_sort_u32(uint32_t *v, size_t n) {
  if (n <= SMALL) {
    for (size_t i = 1; i < n; i++) {
      uint32_t x = v[i];
      size_t j = i;
      while (j > 0 && v[j - 1] > x) {
        v[j] = v[j - 1];
        j--;
      }
      v[j] = x;
    }
    return TERN_OK;
  }
  uint32_t *tmp = malloc(n * sizeof *tmp);
  if (!tmp) return tern_fail(TERN_ENOMEM, "sorting %zu doc ids: out of memory", n);
  uint32_t *src = v, *dst = tmp;
  for (unsigned b = 0; b < 4; b++) {
    size_t h[256] = {0};
    for (size_t i = 0; i < n; i++)
      h[(src[i] >> (8 * b)) & 0xff]++;
    if (h[(src[0] >> (8 * b)) & 0xff] == n) continue;
    size_t sum = 0;
    for (unsigned k = 0; k < 256; k++) {
      size_t t = h[k];
      h[k] = sum;
      sum += t;
    }
    for (size_t i = 0; i < n; i++)
      dst[h[(src[i] >> (8 * b)) & 0xff]++] = src[i];
    uint32_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != v) memcpy(v, src, n * sizeof *v);
  free(tmp);
  return TERN_OK;
}
