/* SPDX-License-Identifier: MIT */
/*
 * livedocs_chunk.c — one chunk of 65,536 doc ids in each of its forms
 * (livedocs_impl.h describes them): choosing the form by its byte cost,
 * building it from a bitmap, and the bulk reads (membership, rank, filter)
 * that work on the form itself rather than bit by bit.
 *
 * Why these forms and this rule.  A fixed threshold over a whole segment
 * (Lucene's 1%) picks the wrong form whenever deletions are uneven or
 * clustered; pricing every chunk by its actual bytes picks the smallest
 * one, and since the bitmap is always a candidate no chunk ever costs more
 * than its slice of a dense bitset.  Arrays carry a bucket index so that a
 * membership test reads one bucket of at most LD_SCAN_BYTES: the shift is
 * the cheapest one whose fullest bucket stays under that bound, which keeps
 * is_live within a few ns of a dense bit test on every pattern.
 */
#include "codec/livedocs_impl.h"

#include "codec/status.h"

#include <assert.h>
#include <stdlib.h>

static uint32_t words_of(uint32_t len) { return (len + 63u) >> 6; }

size_t tern_ld_payload_bytes(uint8_t form, uint8_t shift, uint16_t len, uint32_t n) {
  switch (form) {
  case LD_ARRAY: {
    size_t index = 2u * ((size_t)len + 1u);
    return ld_arr_entry_bytes(n, shift) + index + (index < LD_SCAN_BYTES ? LD_SCAN_BYTES - index : 0);
  }
  case LD_BITMAP:
    return 8u * (size_t)len;
  case LD_RUNS:
    return 4u * (size_t)len;
  default:
    return 0;
  }
}

ld_payload *tern_ld_payload_new(size_t bytes) {
  size_t total = sizeof(ld_payload) + ((bytes + 7u) & ~(size_t)7u);
  ld_payload *p = malloc(total);
  if (!p) return NULL;
  atomic_init(&p->refs, 1);
  p->bytes = (uint32_t)total;
  return p;
}

void tern_ld_payload_release(ld_payload *p) {
  /* acq_rel: the last dropper must see every other holder's reads done. */
  if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1) free(p);
}

uint32_t tern_ld_count_runs(const uint64_t *words, uint32_t nw) {
  uint32_t r = 0;
  uint64_t carry = 0;
  for (uint32_t i = 0; i < nw; i++) {
    uint64_t w = words[i];
    r += ld_popcount(w & ~((w << 1) | carry));
    carry = w >> 63;
  }
  return r;
}

size_t tern_ld_chunk_choose_profile(ld_chunk *k, uint16_t *occ, uint32_t n, uint32_t r, uint32_t len) {
  uint32_t nw = words_of(len);
  k->n = n;
  k->shift = 0;
  k->p = NULL;
  if (n == len) {
    k->form = LD_FULL;
    k->len = 0;
    return 0;
  }
  k->form = LD_BITMAP;
  k->len = (uint16_t)nw;
  size_t best = tern_ld_payload_bytes(LD_BITMAP, 0, (uint16_t)nw, n);
  uint32_t buckets = nw;
  for (unsigned s = LD_MIN_SHIFT; s <= LD_MAX_SHIFT; s++) {
    if (s > LD_MIN_SHIFT) { /* merge bucket pairs: occupancy at shift s */
      uint32_t nb = (buckets + 1u) / 2u;
      for (uint32_t b = 0; b < nb; b++)
        occ[b] = (uint16_t)(occ[2 * b] + (2 * b + 1 < buckets ? occ[2 * b + 1] : 0));
      buckets = nb;
    }
    uint32_t most = 0;
    for (uint32_t b = 0; b < buckets; b++) most = occ[b] > most ? occ[b] : most;
    if (most * ld_arr_width(s) > LD_SCAN_BYTES) continue;
    size_t cost = tern_ld_payload_bytes(LD_ARRAY, (uint8_t)s, (uint16_t)buckets, n);
    if (cost < best) {
      best = cost;
      k->form = LD_ARRAY;
      k->shift = (uint8_t)s;
      k->len = (uint16_t)buckets;
    }
  }
  size_t runs = 4u * (size_t)r;
  if (runs < best) {
    best = runs;
    k->form = LD_RUNS;
    k->shift = 0;
    k->len = (uint16_t)r;
  }
  return best;
}

size_t tern_ld_chunk_choose(ld_chunk *k, const uint64_t *words, uint32_t len) {
  uint32_t nw = words_of(len);
  uint16_t occ[LD_CHUNK_WORDS];
  uint32_t n = 0;
  for (uint32_t i = 0; i < nw; i++) n += occ[i] = (uint16_t)ld_popcount(words[i]);
  return tern_ld_chunk_choose_profile(k, occ, n, tern_ld_count_runs(words, nw), len);
}

/* First set bit at or after `from` in words[0..nw), or nw*64. */
static uint32_t next_set(const uint64_t *words, uint32_t nw, uint32_t from) {
  uint32_t i = from >> 6;
  if (i >= nw) return nw * 64u;
  uint64_t w = words[i] & (~0ull << (from & 63u));
  while (!w) {
    if (++i >= nw) return nw * 64u;
    w = words[i];
  }
  return i * 64u + ld_ctz(w);
}
static uint32_t next_clear(const uint64_t *words, uint32_t nw, uint32_t from) {
  uint32_t i = from >> 6;
  if (i >= nw) return nw * 64u;
  uint64_t w = ~words[i] & (~0ull << (from & 63u));
  while (!w) {
    if (++i >= nw) return nw * 64u;
    w = ~words[i];
  }
  return i * 64u + ld_ctz(w);
}

/* Entry i of an array payload's entries e: offset off (one byte below
 * shift 9, else two). */
static void array_put(uint8_t *e, uint32_t i, uint32_t off, unsigned shift) {
  if (shift <= 8)
    e[i] = (uint8_t)off;
  else
    memcpy(e + 2u * i, &(uint16_t){(uint16_t)off}, 2);
}

/* The rest of an array payload after its k->n entries, bucket b the last
 * one started: the index's remaining buckets, then zeros to the end. */
static void array_finish(ld_chunk *k, uint8_t *e, uint16_t *index, uint32_t b) {
  while (b < k->len) index[++b] = (uint16_t)k->n;
  uint8_t *end = (uint8_t *)(index + k->len + 1u), *stop = (uint8_t *)k->p->data + tern_ld_payload_bytes(k->form, k->shift, k->len, k->n);
  if (k->n & 1u && k->shift <= 8) e[k->n] = 0;
  memset(end, 0, (size_t)(stop - end));
}

static void build_array(ld_chunk *k, const uint64_t *words, uint32_t nw) {
  uint8_t *e = (uint8_t *)k->p->data;
  uint16_t *index = (uint16_t *)(e + ld_arr_entry_bytes(k->n, k->shift));
  unsigned s = k->shift;
  uint32_t i = 0, b = 0;
  index[0] = 0;
  for (uint32_t wi = 0; wi < nw; wi++) {
    for (uint64_t w = words[wi]; w; w &= w - 1) {
      uint32_t off = wi * 64u + ld_ctz(w);
      while (b < (off >> s)) index[++b] = (uint16_t)i;
      array_put(e, i++, off, s);
    }
  }
  array_finish(k, e, index, b);
}

/* An array payload of k (chosen, payload allocated) from its sorted,
 * distinct offsets: the bytes build_array writes from their bitmap. */
static void build_array_offsets(ld_chunk *k, const uint16_t *offs) {
  uint8_t *e = (uint8_t *)k->p->data;
  uint16_t *index = (uint16_t *)(e + ld_arr_entry_bytes(k->n, k->shift));
  unsigned s = k->shift;
  uint32_t b = 0;
  index[0] = 0;
  for (uint32_t i = 0; i < k->n; i++) {
    while (b < ((uint32_t)offs[i] >> s)) index[++b] = (uint16_t)i;
    array_put(e, i, offs[i], s);
  }
  array_finish(k, e, index, b);
}

/* old's offsets (an array chunk's, ascending; none for NULL) merged with
 * add[0..m) (ascending, repeats allowed) into out, distinct: their count. */
static uint32_t merge_offsets(const ld_chunk *old, const uint16_t *add, uint32_t m, uint16_t *out) {
  uint32_t n = 0, j = 0;
  if (old) {
    const uint16_t *index = ld_arr_index(old);
    for (uint32_t b = 0; b < old->len; b++)
      for (uint32_t i = index[b]; i < index[b + 1]; i++) {
        uint32_t off = ld_arr_off(old, i, b);
        for (; j < m && add[j] < off; j++)
          if (!n || out[n - 1] != add[j]) out[n++] = add[j];
        if (!n || out[n - 1] != off) out[n++] = (uint16_t)off;
      }
  }
  for (; j < m; j++)
    if (!n || out[n - 1] != add[j]) out[n++] = add[j];
  return n;
}

int tern_ld_chunk_rebuild_sparse(ld_chunk *k, const ld_chunk *old, const uint16_t *add,
                                 uint32_t m, uint32_t len, uint16_t *room) {
  assert(!old || old->form == LD_ARRAY);
  uint32_t n = merge_offsets(old, add, m, room), r = 0, nw = words_of(len);
  if (old && n == old->n) return 2;
  uint16_t occ[LD_CHUNK_WORDS];
  memset(occ, 0, nw * sizeof *occ);
  for (uint32_t i = 0; i < n; i++) {
    occ[room[i] >> 6]++;
    r += !i || room[i] != room[i - 1] + 1u;
  }
  tern_ld_chunk_choose_profile(k, occ, n, r, len);
  if (k->form != LD_ARRAY) return 0;
  k->p = tern_ld_payload_new(tern_ld_payload_bytes(k->form, k->shift, k->len, k->n));
  if (!k->p) return tern_fail(TERN_ENOMEM, "livedocs: out of memory for a chunk");
  build_array_offsets(k, room);
  return 1;
}

static void build_runs(ld_chunk *k, const uint64_t *words, uint32_t nw) {
  uint32_t *runs = (uint32_t *)k->p->data;
  uint32_t at = 0;
  for (uint32_t i = 0; i < k->len; i++) {
    uint32_t first = next_set(words, nw, at);
    uint32_t end = next_clear(words, nw, first);
    runs[i] = first << 16 | (end - 1u);
    at = end;
  }
}

int tern_ld_words_runs(const uint64_t *words, uint32_t nw, uint32_t base, uint32_t *first,
                  uint32_t *last, uint32_t *nr, uint32_t cap) {
  for (uint32_t at = next_set(words, nw, 0); at < nw * 64u;) {
    uint32_t end = next_clear(words, nw, at);
    if (!ld_runs_append(first, last, nr, cap, base + at, base + end - 1u)) return 0;
    at = next_set(words, nw, end);
  }
  return 1;
}

int tern_ld_chunk_build(ld_chunk *k, const uint64_t *words, uint32_t len) {
  size_t bytes = tern_ld_payload_bytes(k->form, k->shift, k->len, k->n);
  if (k->form == LD_FULL) return TERN_OK;
  k->p = tern_ld_payload_new(bytes);
  if (!k->p) return tern_fail(TERN_ENOMEM, "livedocs: out of memory for a chunk of %zu bytes", bytes);
  uint32_t nw = words_of(len);
  if (k->form == LD_BITMAP)
    memcpy(k->p->data, words, 8u * (size_t)nw);
  else if (k->form == LD_RUNS)
    build_runs(k, words, nw);
  else
    build_array(k, words, nw);
  return TERN_OK;
}

void tern_ld_set_range(uint64_t *words, uint32_t first, uint32_t last) {
  uint32_t a = first >> 6, z = last >> 6;
  uint64_t lo = ~0ull << (first & 63u), hi = ~0ull >> (63u - (last & 63u));
  if (a == z) {
    words[a] |= lo & hi;
    return;
  }
  words[a] |= lo;
  for (uint32_t i = a + 1; i < z; i++) words[i] = ~0ull;
  words[z] |= hi;
}

void tern_ld_chunk_to_words(const ld_chunk *k, uint64_t *words) {
  switch (k->form) {
  case LD_FULL:
    tern_ld_set_range(words, 0, k->n - 1u);
    break;
  case LD_BITMAP:
    for (uint32_t i = 0; i < k->len; i++) words[i] |= k->p->data[i];
    break;
  case LD_RUNS: {
    const uint32_t *runs = (const uint32_t *)k->p->data;
    for (uint32_t i = 0; i < k->len; i++) tern_ld_set_range(words, runs[i] >> 16, runs[i] & 0xffffu);
    break;
  }
  case LD_ARRAY: {
    const uint16_t *index = ld_arr_index(k);
    for (uint32_t b = 0; b < k->len; b++)
      for (uint32_t i = index[b]; i < index[b + 1]; i++) {
        uint32_t off = ld_arr_off(k, i, b);
        words[off >> 6] |= 1ull << (off & 63u);
      }
    break;
  }
  }
}

/* An array chunk's runs: entries ascend across its buckets. */
static uint32_t array_runs(const ld_chunk *k, uint32_t len, int *first_set, int *last_set) {
  const uint16_t *index = ld_arr_index(k);
  uint32_t r = 0, prev = 0;
  int have = 0;
  *first_set = *last_set = 0;
  for (uint32_t b = 0; b < k->len; b++)
    for (uint32_t i = index[b]; i < index[b + 1]; i++) {
      uint32_t off = ld_arr_off(k, i, b);
      r += !have || off != prev + 1u;
      if (!have) *first_set = off == 0;
      prev = off;
      have = 1;
    }
  *last_set = have && prev == len - 1u;
  return r;
}

uint32_t tern_ld_chunk_runs(const ld_chunk *k, uint32_t len, int *first_set, int *last_set) {
  switch (k->form) {
  case LD_FULL:
    *first_set = *last_set = 1;
    return 1;
  case LD_RUNS: {
    const uint32_t *runs = (const uint32_t *)k->p->data;
    *first_set = (runs[0] >> 16) == 0;
    *last_set = (runs[k->len - 1u] & 0xffffu) == len - 1u;
    return k->len;
  }
  case LD_BITMAP: {
    const uint64_t *w = k->p->data;
    *first_set = (int)(w[0] & 1u);
    *last_set = (int)((w[(len - 1u) >> 6] >> ((len - 1u) & 63u)) & 1u);
    return tern_ld_count_runs(w, k->len);
  }
  case LD_ARRAY:
    return array_runs(k, len, first_set, last_set);
  default:
    *first_set = *last_set = 0;
    return 0;
  }
}

int tern_ld_runs_has(const uint32_t *runs, uint32_t nr, uint32_t off) {
  /* Branchless upper bound of (off << 16 | 0xffff): runs starting <= off. */
  uint32_t key = off << 16 | 0xffffu, lo = 0, len = nr;
  while (len > 1) {
    uint32_t half = len / 2;
    lo = runs[lo + half] <= key ? lo + half : lo;
    len -= half;
  }
  lo += (len == 1 && runs[lo] <= key);
  return lo > 0 && (runs[lo - 1] & 0xffffu) >= off;
}
