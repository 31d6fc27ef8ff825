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
#include <string.h>

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

#define LD_SHIFTS (LD_MAX_SHIFT - LD_MIN_SHIFT + 1u)

/* The cheapest of the forms for n deletions in r runs of a chunk of len
 * docs: the bitmap, an array at each shift s that ok[s - LD_MIN_SHIFT]
 * allows (its fullest bucket within LD_SCAN_BYTES), runs; on a tie the
 * earlier (the smaller shift).  Both ways of choosing end here, so they
 * choose alike. */
static size_t choose_among(ld_chunk *k, const uint8_t ok[LD_SHIFTS], uint32_t n, uint32_t r,
                           uint32_t len) {
  uint32_t nw = words_of(len);
  k->form = LD_BITMAP;
  k->len = (uint16_t)nw;
  size_t best = tern_ld_payload_bytes(LD_BITMAP, 0, (uint16_t)nw, n);
  uint32_t buckets = nw;
  for (unsigned s = LD_MIN_SHIFT; s <= LD_MAX_SHIFT; s++) {
    if (s > LD_MIN_SHIFT) buckets = (buckets + 1u) / 2u;
    if (!ok[s - LD_MIN_SHIFT]) continue;
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

/* k's count and no payload yet; 1 when every doc is deleted (FULL). */
static int choose_full(ld_chunk *k, uint32_t n, uint32_t len) {
  k->n = n;
  k->shift = 0;
  k->p = NULL;
  if (n != len) return 0;
  k->form = LD_FULL;
  k->len = 0;
  return 1;
}

size_t tern_ld_chunk_choose_profile(ld_chunk *k, uint16_t *occ, uint32_t n, uint32_t r, uint32_t len) {
  if (choose_full(k, n, len)) return 0;
  uint8_t ok[LD_SHIFTS];
  uint32_t buckets = words_of(len);
  for (unsigned s = LD_MIN_SHIFT; s <= LD_MAX_SHIFT; s++) {
    if (s > LD_MIN_SHIFT) { /* merge bucket pairs: occupancy at shift s */
      uint32_t nb = (buckets + 1u) / 2u;
      for (uint32_t b = 0; b < nb; b++)
        occ[b] = (uint16_t)(occ[2 * b] + (2 * b + 1 < buckets ? occ[2 * b + 1] : 0));
      buckets = nb;
    }
    uint32_t most = 0;
    for (uint32_t b = 0; b < buckets; b++) most = occ[b] > most ? occ[b] : most;
    ok[s - LD_MIN_SHIFT] = most * ld_arr_width(s) <= LD_SCAN_BYTES;
  }
  return choose_among(k, ok, n, r, len);
}

/* The fullest bucket of shift s over the runs [first[i], last[i]]
 * (ascending, disjoint, chunk offsets): a bucket a run passes through
 * whole holds 1 << s. */
static uint32_t runs_fullest(const uint32_t *first, const uint32_t *last, uint32_t nr, unsigned s) {
  uint32_t most = 0, at = UINT32_MAX, cnt = 0; /* the bucket being summed, its count */
  for (uint32_t i = 0; i < nr; i++) {
    uint32_t a = first[i], b = last[i], ba = a >> s, bb = b >> s;
    if (ba != at) {
      at = ba;
      cnt = 0;
    }
    if (ba == bb) {
      cnt += b - a + 1u;
    } else {
      cnt += ((ba + 1u) << s) - a; /* the rest of a's bucket */
      most = cnt > most ? cnt : most;
      if (bb > ba + 1u) most = (1u << s) > most ? 1u << s : most;
      at = bb;
      cnt = b - (bb << s) + 1u;
    }
    most = cnt > most ? cnt : most;
  }
  return most;
}

size_t tern_ld_chunk_choose_runs(ld_chunk *k, const uint32_t *first, const uint32_t *last,
                                 uint32_t nr, uint32_t len) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < nr; i++) n += last[i] - first[i] + 1u;
  if (choose_full(k, n, len)) return 0;
  uint8_t ok[LD_SHIFTS];
  for (unsigned s = LD_MIN_SHIFT; s <= LD_MAX_SHIFT; s++)
    ok[s - LD_MIN_SHIFT] = runs_fullest(first, last, nr, s) * ld_arr_width(s) <= LD_SCAN_BYTES;
  return choose_among(k, ok, n, nr, len);
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

/* An array chunk's offsets, ascending, into out: k->n of them. */
static void array_offsets(const ld_chunk *k, uint16_t *out) {
  const uint8_t *e = ld_arr_entries(k);
  if (k->shift > 8) { /* entries are the offsets themselves */
    memcpy(out, e, 2u * (size_t)k->n);
    return;
  }
  const uint16_t *index = ld_arr_index(k);
  for (uint32_t b = 0; b < k->len; b++) {
    uint16_t hi = (uint16_t)((b << k->shift) & 0xff00u); /* as ld_arr_off */
    for (uint32_t i = index[b]; i < index[b + 1]; i++) out[i] = (uint16_t)(hi | e[i]);
  }
}

/* add[0..m) (ascending, repeats allowed; m <= LD_SPARSE_ADD_MAX) into the
 * n ascending distinct offsets of out (room for n + m), those out lacks,
 * each block between two insertions moved once: the new count. */
static uint32_t insert_offsets(uint16_t *out, uint32_t n, const uint16_t *add, uint32_t m) {
  uint16_t fresh[LD_SPARSE_ADD_MAX];
  uint32_t at[LD_SPARSE_ADD_MAX], f = 0;
  for (uint32_t j = 0; j < m; j++) {
    if (j && add[j] == add[j - 1]) continue;
    uint32_t lo = 0, hi = n; /* the first offset >= add[j] */
    while (lo < hi) {
      uint32_t mid = (lo + hi) / 2u;
      if (out[mid] < add[j]) lo = mid + 1u;
      else hi = mid;
    }
    if (lo < n && out[lo] == add[j]) continue;
    fresh[f] = add[j];
    at[f++] = lo;
  }
  /* From the back: the old offsets at or past at[q] move up by q + 1. */
  uint32_t end = n;
  for (uint32_t q = f; q-- > 0;) {
    memmove(out + at[q] + q + 1u, out + at[q], 2u * (size_t)(end - at[q]));
    out[at[q] + q] = fresh[q];
    end = at[q];
  }
  return n + f;
}

/* add[0..m) (ascending, repeats allowed) distinct into out: their count. */
static uint32_t distinct_offsets(const uint16_t *add, uint32_t m, uint16_t *out) {
  uint32_t n = 0;
  for (uint32_t j = 0; j < m; j++)
    if (!n || out[n - 1] != add[j]) out[n++] = add[j];
  return n;
}

/* The least of offs[i] ^ offs[i + t] (1 << 16 when there is no pair): two
 * sorted distinct offsets t apart share a bucket of shift s, so that the
 * bucket holds more than t, exactly when their xor is below 1 << s. */
static uint32_t least_xor(const uint16_t *offs, uint32_t n, uint32_t t) {
  uint32_t x = 1u << 16;
  for (uint32_t i = 0; i + t < n; i++) {
    uint32_t v = (uint32_t)(offs[i] ^ offs[i + t]);
    x = v < x ? v : x;
  }
  return x;
}

/* Which array shifts keep the fullest bucket within LD_SCAN_BYTES, from
 * sorted distinct offsets (what choose_profile finds by counting every
 * bucket at every shift), and the offsets' maximal runs. */
static uint32_t offsets_profile(const uint16_t *offs, uint32_t n, uint8_t ok[LD_SHIFTS]) {
  uint32_t x1 = least_xor(offs, n, LD_SCAN_BYTES / ld_arr_width(8)),
           x2 = least_xor(offs, n, LD_SCAN_BYTES / ld_arr_width(9));
  for (unsigned s = LD_MIN_SHIFT; s <= LD_MAX_SHIFT; s++)
    ok[s - LD_MIN_SHIFT] = ((ld_arr_width(s) == 1u ? x1 : x2) >> s) != 0;
  uint32_t r = n != 0;
  for (uint32_t i = 1; i < n; i++) r += offs[i] != (uint16_t)(offs[i - 1] + 1u);
  return r;
}

int tern_ld_chunk_rebuild_sparse(ld_chunk *k, const ld_chunk *old, const uint16_t *add,
                                 uint32_t m, uint32_t len, uint16_t *room) {
  assert(!old || old->form == LD_ARRAY);
  assert(m <= LD_SPARSE_ADD_MAX);
  uint32_t n;
  if (old) {
    array_offsets(old, room);
    n = insert_offsets(room, old->n, add, m);
    if (n == old->n) return 2;
  } else {
    n = distinct_offsets(add, m, room);
  }
  if (choose_full(k, n, len)) return 0;
  uint8_t ok[LD_SHIFTS];
  uint32_t r = offsets_profile(room, n, ok);
  choose_among(k, ok, n, r, len);
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
