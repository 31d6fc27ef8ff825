/* SPDX-License-Identifier: MIT */
/*
 * livedocs_iter.c — iterating the deleted or the live docs of a set.
 *
 * One cursor fills docs in bulk, form by form, so the form is consulted
 * once per stretch and not once per doc:
 *   - deletions held as arrays are widened straight out of the entries
 *     (16 byte-entries or 8 u16-entries per SSE2 step), a 256-doc page of
 *     byte entries at a time;
 *   - bitmaps are walked a word at a time with ctz (an all-live word of a
 *     live walk is emitted as a range);
 *   - runs, full chunks, chunks without deletions and the gaps between
 *     deletions of a live walk are emitted as ranges (4 docs per store).
 * Iterating deletions skips chunks without any (one slot test each) and
 * never looks at empty windows of arrays or runs: O(deleted).
 *
 * The cursor is `at` (every doc below it was emitted or skipped) plus
 * hints valid for the chunk `chunk`: `idx`, the first array entry or run
 * at or after `at`, and `page`.  next_batch() fills the caller's buffer;
 * next() (inline, livedocs.h) hands out the iterator's own buffer and
 * refills it through the same cursor; advance() moves `at` and drops the
 * hints.  Bulk stores may run past the docs they emit, never past `cap`.
 */
#include "codec/livedocs_impl.h"

#include "codec/status.h"

extern inline uint32_t tern_ld_iter_next(tern_ld_iter *it);

#define NO_HINTS UINT32_MAX

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* --- bulk stores: out[0..n), and maybe out[n..room) --- */

static inline void emit_range(uint32_t *out, uint32_t from, size_t n, size_t room) {
  size_t i = 0;
#if defined(__SSE2__)
  size_t vec = room >= ((n + 7u) & ~(size_t)7u) ? n : n & ~(size_t)7u;
  __m128i v = _mm_add_epi32(_mm_set1_epi32((int)from), _mm_setr_epi32(0, 1, 2, 3));
  const __m128i four = _mm_set1_epi32(4), eight = _mm_set1_epi32(8);
  for (; i < vec; i += 8) { /* two independent stores a step */
    _mm_storeu_si128((__m128i *)(void *)(out + i), v);
    _mm_storeu_si128((__m128i *)(void *)(out + i + 4), _mm_add_epi32(v, four));
    v = _mm_add_epi32(v, eight);
  }
#else
  (void)room;
#endif
  for (; i < n; i++) out[i] = from + (uint32_t)i;
}

/* out[0..32) = from, from+1, ...: a fixed-size store, so emitting a gap of
 * up to 32 docs costs no branch on its length. */
static inline void emit_32(uint32_t *out, uint32_t from) {
#if defined(__SSE2__)
  __m128i v = _mm_add_epi32(_mm_set1_epi32((int)from), _mm_setr_epi32(0, 1, 2, 3));
  for (int i = 0; i < 32; i += 4)
    _mm_storeu_si128((__m128i *)(void *)(out + i), _mm_add_epi32(v, _mm_set1_epi32(i)));
#else
  for (uint32_t i = 0; i < 32; i++) out[i] = from + i;
#endif
}

/* out[i] = base + e[i]; reads whole 16-byte blocks from entries < n (the
 * array payload keeps LD_SCAN_BYTES readable past any entry). */
static inline void emit_u16(uint32_t *out, const uint16_t *e, size_t n, uint32_t base, size_t room) {
  size_t i = 0;
#if defined(__SSE2__)
  size_t vec = room >= ((n + 7u) & ~(size_t)7u) ? n : n & ~(size_t)7u;
  const __m128i b = _mm_set1_epi32((int)base), z = _mm_setzero_si128();
  for (; i < vec; i += 8) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(e + i));
    _mm_storeu_si128((__m128i *)(void *)(out + i), _mm_add_epi32(_mm_unpacklo_epi16(x, z), b));
    _mm_storeu_si128((__m128i *)(void *)(out + i + 4), _mm_add_epi32(_mm_unpackhi_epi16(x, z), b));
  }
#else
  (void)room;
#endif
  for (; i < n; i++) out[i] = base + e[i];
}

static inline void emit_u8(uint32_t *out, const uint8_t *e, size_t n, uint32_t base, size_t room) {
  size_t i = 0;
#if defined(__SSE2__)
  size_t vec = room >= ((n + 15u) & ~(size_t)15u) ? n : n & ~(size_t)15u;
  const __m128i b = _mm_set1_epi32((int)base), z = _mm_setzero_si128();
  for (; i < vec; i += 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(e + i));
    __m128i lo = _mm_unpacklo_epi8(x, z), hi = _mm_unpackhi_epi8(x, z);
    uint32_t *o = out + i;
    _mm_storeu_si128((__m128i *)(void *)o, _mm_add_epi32(_mm_unpacklo_epi16(lo, z), b));
    _mm_storeu_si128((__m128i *)(void *)(o + 4), _mm_add_epi32(_mm_unpackhi_epi16(lo, z), b));
    _mm_storeu_si128((__m128i *)(void *)(o + 8), _mm_add_epi32(_mm_unpacklo_epi16(hi, z), b));
    _mm_storeu_si128((__m128i *)(void *)(o + 12), _mm_add_epi32(_mm_unpackhi_epi16(hi, z), b));
  }
#else
  (void)room;
#endif
  for (; i < n; i++) out[i] = base + e[i];
}

/* Set bits of word as docs base + bit, while room lasts; returns how many. */
static inline size_t emit_bits(uint32_t *out, uint64_t *word, uint32_t base, size_t room) {
  size_t j = 0;
  uint64_t w = *word;
  while (w && j < room) {
    out[j++] = base + ld_ctz(w);
    w &= w - 1u;
  }
  *word = w;
  return j;
}

/* --- the cursor within one chunk: [base, base + len) --- */

/* Last array entry of 256-doc page p of a byte-entry array (exclusive). */
static inline uint32_t page_end(const ld_chunk *k, const uint16_t *index, uint32_t p) {
  uint32_t b = (p + 1u) << (8u - k->shift);
  return index[b < k->len ? b : k->len];
}

/* Offset of array entry i; moves *page up to entry i's page. */
static inline uint32_t entry_off(const ld_chunk *k, uint32_t i, uint32_t *page) {
  if (k->shift > 8) return ((const uint16_t *)(const void *)ld_arr_entries(k))[i];
  const uint16_t *index = ld_arr_index(k);
  while (page_end(k, index, *page) <= i) ++*page;
  return *page << 8 | ld_arr_entries(k)[i];
}

/* Hints for `at` in chunk c. */
static void enter(tern_ld_iter *it, const ld_chunk *k, uint32_t c) {
  uint32_t off = it->at & 0xffffu;
  it->chunk = c;
  it->idx = 0;
  it->page = off >> 8;
  if (k->form == LD_ARRAY) {
    const uint16_t *index = ld_arr_index(k);
    uint32_t b = off >> k->shift, i = index[b], page = it->page;
    while (i < index[b + 1] && entry_off(k, i, &page) < off) i++;
    it->idx = i;
  } else if (k->form == LD_RUNS) {
    const uint32_t *runs = (const uint32_t *)k->p->data;
    uint32_t lo = 0, hi = k->len; /* first run ending at or after off */
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if ((runs[mid] & 0xffffu) < off)
        lo = mid + 1;
      else
        hi = mid;
    }
    it->idx = lo;
  }
}

static size_t deleted_array(tern_ld_iter *it, const ld_chunk *k, uint32_t base, uint32_t *out,
                            size_t cap) {
  uint32_t i = it->idx, n = k->n;
  size_t j = 0;
  if (k->shift > 8) {
    j = min_sz(n - i, cap);
    emit_u16(out, (const uint16_t *)(const void *)ld_arr_entries(k) + i, j, base, cap);
    i += (uint32_t)j;
  } else {
    const uint16_t *index = ld_arr_index(k);
    const uint8_t *e = ld_arr_entries(k);
    uint32_t p = it->page;
    /* Payloads are walked once, cold: run ahead of the stream, once per
     * call rather than per page (addresses as integers: a prefetch past the
     * payload is harmless, the pointer arithmetic would not be). */
    for (uintptr_t ahead = 512u; ahead < 512u + 4u * 64u; ahead += 64u) {
      __builtin_prefetch((const void *)((uintptr_t)(e + i) + ahead));
      if (ahead < 512u + 2u * 64u)
        __builtin_prefetch((const void *)((uintptr_t)(index + (p << (8u - k->shift))) + ahead));
    }
    while (i < n && j < cap) {
      uint32_t end = page_end(k, index, p);
      if (i >= end) {
        p++;
        continue;
      }
      size_t m = min_sz(end - i, cap - j);
      emit_u8(out + j, e + i, m, base + (p << 8), cap - j);
      i += (uint32_t)m;
      j += m;
    }
    it->page = p;
  }
  it->idx = i;
  return j;
}

static size_t deleted_bitmap(tern_ld_iter *it, const ld_chunk *k, uint32_t base, uint32_t len,
                             uint32_t *out, size_t cap) {
  const uint64_t *w = k->p->data;
  uint32_t off = it->at - base, wi = off >> 6, nw = (len + 63u) >> 6;
  uint64_t word = w[wi] & (~0ull << (off & 63u));
  size_t j = 0;
  for (;;) {
    j += emit_bits(out + j, &word, base + wi * 64u, cap - j);
    if (j == cap) {
      if (!word && wi + 1u >= nw) break;
      it->at = out[j - 1u] + 1u;
      return j;
    }
    if (++wi >= nw) break;
    word = w[wi];
  }
  it->at = base + len;
  return j;
}

static size_t deleted_runs(tern_ld_iter *it, const ld_chunk *k, uint32_t base, uint32_t *out,
                           size_t cap) {
  const uint32_t *runs = (const uint32_t *)k->p->data;
  uint32_t i = it->idx, off = it->at - base;
  size_t j = 0;
  while (i < k->len && j < cap) {
    uint32_t f = runs[i] >> 16, l = runs[i] & 0xffffu;
    if (f < off) f = off;
    size_t m = min_sz(l - f + 1u, cap - j);
    emit_range(out + j, base + f, m, cap - j);
    j += m;
    if (f + m <= l) break; /* cap reached inside the run */
    i++;
  }
  it->idx = i;
  return j;
}

/* Live docs [off, end) of the chunk not yet emitted, as a range; returns
 * how many and moves *off. */
static inline size_t live_range(uint32_t *out, uint32_t base, uint32_t *off, uint32_t end, size_t room) {
  if (*off >= end) return 0;
  size_t m = min_sz(end - *off, room);
  emit_range(out, base + *off, m, room);
  *off += (uint32_t)m;
  return m;
}

/* The gaps between an array's deletions.  Gaps are short and of random
 * length at a few percent of deletions, so a gap of up to 32 docs is one
 * fixed 32-doc store (when there is room) rather than a loop on its length. */
static size_t live_array(tern_ld_iter *it, const ld_chunk *k, uint32_t base, uint32_t len,
                         uint32_t *out, size_t cap) {
  uint32_t i = it->idx, off = it->at - base, page = it->page, n = k->n;
  size_t j = 0;
  while (j < cap) {
    uint32_t del = i < n ? entry_off(k, i, &page) : len;
    if (del - off <= 32u && cap - j >= 32u) {
      emit_32(out + j, base + off);
      j += del - off;
      off = del;
    } else {
      j += live_range(out + j, base, &off, del, cap - j);
      if (off < del) break;
    }
    if (i >= n) break;
    off = del + 1u;
    i++;
  }
  it->idx = i;
  it->page = page;
  it->at = base + off;
  return j;
}

static size_t live_runs(tern_ld_iter *it, const ld_chunk *k, uint32_t base, uint32_t len,
                        uint32_t *out, size_t cap) {
  const uint32_t *runs = (const uint32_t *)k->p->data;
  uint32_t i = it->idx, off = it->at - base;
  size_t j = 0;
  while (j < cap) {
    uint32_t del = i < k->len ? runs[i] >> 16 : len;
    j += live_range(out + j, base, &off, del, cap - j);
    if (off < del || i >= k->len) break;
    off = (runs[i] & 0xffffu) + 1u;
    i++;
  }
  it->idx = i;
  it->at = base + off;
  return j;
}

static size_t live_bitmap(tern_ld_iter *it, const ld_chunk *k, uint32_t base, uint32_t len,
                          uint32_t *out, size_t cap) {
  const uint64_t *w = k->p->data;
  uint32_t off = it->at - base, wi = off >> 6, nw = (len + 63u) >> 6;
  uint64_t tail = ld_tail_mask(len);
  uint64_t word = ~w[wi] & (~0ull << (off & 63u)) & (wi + 1u == nw ? tail : ~0ull);
  size_t j = 0;
  for (;;) {
    if (word == ~0ull && cap - j >= 64u) {
      emit_range(out + j, base + wi * 64u, 64u, cap - j);
      j += 64u;
      word = 0;
    } else {
      j += emit_bits(out + j, &word, base + wi * 64u, cap - j);
    }
    if (j == cap) {
      if (!word && wi + 1u >= nw) break;
      it->at = out[j - 1u] + 1u;
      return j;
    }
    if (++wi >= nw) break;
    word = ~w[wi] & (wi + 1u == nw ? tail : ~0ull);
  }
  it->at = base + len;
  return j;
}

/* Docs of the chunk from `at`; leaves `at` at the chunk's end when it is done. */
static size_t chunk_fill(tern_ld_iter *it, const ld_chunk *k, uint32_t c, uint32_t *out, size_t cap) {
  uint32_t base = c << LD_CHUNK_BITS, len = ld_chunk_len(it->ld->max_doc, c), off = it->at - base;
  size_t j = 0;
  if (c != it->chunk) enter(it, k, c);
  switch (k->form) {
  case LD_NONE:
  case LD_FULL:
    if ((k->form == LD_NONE) == (it->live != 0)) j = live_range(out, base, &off, len, cap);
    it->at = base + (j ? off : len);
    return j;
  case LD_ARRAY:
    if (it->live) return live_array(it, k, base, len, out, cap);
    j = deleted_array(it, k, base, out, cap);
    break;
  case LD_BITMAP:
    return it->live ? live_bitmap(it, k, base, len, out, cap) : deleted_bitmap(it, k, base, len, out, cap);
  default:
    if (it->live) return live_runs(it, k, base, len, out, cap);
    j = deleted_runs(it, k, base, out, cap);
    break;
  }
  /* array and runs deletions: done when no entry or run is left */
  it->at = (k->form == LD_ARRAY ? it->idx >= k->n : it->idx >= k->len) ? base + len : out[j - 1u] + 1u;
  return j;
}

/* --- the cursor over a runs set --- */

static size_t runs_set_fill(tern_ld_iter *it, uint32_t *out, size_t cap) {
  const tern_livedocs *ld = it->ld;
  const uint32_t *first = ld->first, *last = first + ld->nruns;
  if (it->chunk != 0) {
    it->idx = tern_ld_set_runs_from(ld, it->at);
    it->chunk = 0;
  }
  uint32_t i = it->idx, at = it->at, nr = ld->nruns;
  size_t j = 0;
  if (it->live) {
    while (j < cap) {
      uint32_t del = i < nr ? first[i] : ld->max_doc;
      j += live_range(out + j, 0, &at, del, cap - j);
      if (at < del || i >= nr) break;
      at = last[i] + 1u;
      i++;
    }
  } else {
    while (i < nr && j < cap) {
      uint32_t f = first[i] > at ? first[i] : at;
      size_t m = min_sz(last[i] - f + 1u, cap - j);
      emit_range(out + j, f, m, cap - j);
      j += m;
      at = f + (uint32_t)m;
      if (at <= last[i]) break;
      i++;
    }
    if (i >= nr) at = ld->max_doc;
  }
  it->idx = i;
  it->at = at;
  return j;
}

/* Up to cap (>= 1) docs from the cursor. */
static size_t fill(tern_ld_iter *it, uint32_t *out, size_t cap) {
  const tern_livedocs *ld = it->ld;
  if (!ld->slots) return runs_set_fill(it, out, cap);
  size_t j = 0;
  while (j < cap && it->at < ld->max_doc) {
    uint32_t c = it->at >> LD_CHUNK_BITS;
    const ld_chunk *k = &ld->slots[c];
    if (!it->live && k->form == LD_NONE) { /* skip: nothing to emit */
      it->at = c + 1u < ld->nchunks ? (c + 1u) << LD_CHUNK_BITS : ld->max_doc;
      continue;
    }
    j += chunk_fill(it, k, c, out + j, cap - j);
  }
  return j;
}

/* --- the public iterator --- */

static uint32_t finish(tern_ld_iter *it) {
  it->bi = it->bn = 0;
  it->at = it->ld->max_doc;
  it->chunk = NO_HINTS;
  return it->doc = TERN_LD_END;
}

static void init(tern_ld_iter *it, const tern_livedocs *ld, int live) {
  it->ld = ld;
  it->live = live;
  it->doc = 0;
  it->bi = it->bn = 0;
  it->at = 0;
  it->chunk = NO_HINTS;
  it->idx = it->page = 0;
}
void tern_livedocs_iter_deleted(tern_ld_iter *it, const tern_livedocs *ld) { init(it, ld, 0); }
void tern_livedocs_iter_live(tern_ld_iter *it, const tern_livedocs *ld) { init(it, ld, 1); }

uint64_t tern_ld_iter_cost(const tern_ld_iter *it) {
  return it->live ? tern_livedocs_live(it->ld) : tern_livedocs_deleted(it->ld);
}

uint32_t tern_ld_iter_refill(tern_ld_iter *it) {
  uint32_t n = (uint32_t)fill(it, it->buf, TERN_LD_ITER_BUF);
  if (!n) return finish(it);
  it->bn = n;
  it->bi = 1;
  return it->doc = it->buf[0];
}

size_t tern_ld_iter_next_batch(tern_ld_iter *it, uint32_t *out, size_t cap) {
  if (!cap) return 0;
  size_t j = 0;
  if (it->bi < it->bn) {
    j = min_sz(it->bn - it->bi, cap);
    memcpy(out, it->buf + it->bi, j * sizeof *out);
    it->bi += (uint32_t)j;
  }
  if (j < cap) j += fill(it, out + j, cap - j);
  if (!j) {
    finish(it);
    return 0;
  }
  it->doc = out[j - 1u];
  return j;
}

uint32_t tern_ld_iter_advance(tern_ld_iter *it, uint32_t target) {
  if (target <= it->doc) return tern_ld_iter_next(it); /* also: done, or not started and 0 */
  if (target >= it->ld->max_doc) return finish(it);
  if (it->bi < it->bn && target <= it->buf[it->bn - 1u]) {
    while (it->buf[it->bi] < target) it->bi++;
    return it->doc = it->buf[it->bi++];
  }
  it->bi = it->bn = 0;
  if (target > it->at) {
    it->at = target;
    it->chunk = NO_HINTS;
  }
  return tern_ld_iter_refill(it);
}
