/*
 * livedocs_iter.c — iterating the deleted or the live docs of a set.
 *
 * Docs are handed out from one of two small caches, so next() is a few
 * instructions in the common case and the chunk's form is consulted once
 * per refill:
 *   - a 64-doc window word of pending docs (live docs of every form; deleted
 *     docs of bitmaps, runs and full chunks): next() is a ctz, as over a
 *     dense bitset;
 *   - for deleted docs held in sorted arrays, up to TERN_LD_ITER_BUF decoded
 *     offsets, so sparse deletions cost a buffer read each, not a window.
 * Iterating deletions skips chunks without any (one slot test each) and
 * never looks at empty windows of arrays or runs: O(deleted).  Iterating
 * live docs checks `next_off` (the next deleted offset of an array or run
 * chunk) first, so a window without deletions costs what a dense word does;
 * windows inside a deleted run are skipped.
 */
#include "codec/livedocs_impl.h"

#include "codec/status.h"

#define NONE LD_CHUNK_DOCS /* next_off when the chunk has no further deletion */

static uint32_t finish(tern_ld_iter *it) {
  it->chunk = it->ld->nchunks;
  it->pos = it->nwin = 0;
  it->slot = NULL;
  it->word = 0;
  it->bi = it->bn = 0;
  return it->doc = TERN_LD_END;
}

/* (bkt, next_off) for the array entry idx. */
static inline void arr_sync(tern_ld_iter *it, const ld_chunk *k) {
  const uint16_t *index = ld_arr_index(k);
  while (it->bkt < k->len && it->idx >= index[it->bkt + 1]) it->bkt++;
  it->next_off = it->idx < k->n ? ld_arr_off(k, it->idx, it->bkt) : NONE;
}
static inline void runs_sync(tern_ld_iter *it, const ld_chunk *k) {
  it->next_off = it->idx < k->len ? ((const uint32_t *)k->p->data)[it->idx] >> 16 : NONE;
}

static void enter_chunk(tern_ld_iter *it, uint32_t c) {
  const tern_livedocs *ld = it->ld;
  it->chunk = c;
  it->cbase = c << LD_CHUNK_BITS;
  it->pos = it->idx = it->bkt = 0;
  it->next_off = NONE;
  it->slot = NULL;
  it->nwin = 0;
  if (c >= ld->nchunks) return;
  uint32_t len = ld_chunk_len(ld->max_doc, c);
  it->nwin = (len + 63u) >> 6;
  it->tail = ld_tail_mask(len);
  const ld_chunk *k = ld_slot(ld, c);
  it->slot = k;
  if (!k) return;
  if (k->form == LD_ARRAY)
    arr_sync(it, k);
  else if (k->form == LD_RUNS)
    runs_sync(it, k);
  else
    it->next_off = 0; /* bitmap, full: every window looks at the form */
}

/* The first chunk >= c holding deletions, or nchunks. */
static uint32_t next_present(const tern_livedocs *ld, uint32_t c) {
  while (c < ld->nchunks && ld->slots[c].form == LD_NONE) c++;
  return c < ld->nchunks ? c : ld->nchunks;
}

static void init(tern_ld_iter *it, const tern_livedocs *ld, int live) {
  it->ld = ld;
  it->live = live;
  it->doc = 0;
  it->word = 0;
  it->base = 0;
  it->bi = it->bn = 0;
  enter_chunk(it, live ? 0 : next_present(ld, 0));
}
void tern_livedocs_iter_deleted(tern_ld_iter *it, const tern_livedocs *ld) { init(it, ld, 0); }
void tern_livedocs_iter_live(tern_ld_iter *it, const tern_livedocs *ld) { init(it, ld, 1); }

uint64_t tern_ld_iter_cost(const tern_ld_iter *it) {
  return it->live ? tern_livedocs_live(it->ld) : tern_livedocs_deleted(it->ld);
}

static inline uint32_t pop_word(tern_ld_iter *it) {
  unsigned tz = ld_ctz(it->word);
  it->word &= it->word - 1u;
  return it->doc = it->base + tz;
}
static inline uint32_t pop_buf(tern_ld_iter *it) { return it->doc = it->cbase + it->buf[it->bi++]; }

/* Bits [lo, hi] of a word, 0 <= lo <= hi < 64. */
static inline uint64_t bits(uint32_t lo, uint32_t hi) {
  return (~0ull << lo) & (~0ull >> (63u - hi));
}

/* ORs the runs meeting window pos into a word, consuming those ending in it. */
static uint64_t runs_window(tern_ld_iter *it, const ld_chunk *k, uint32_t pos) {
  const uint32_t *runs = (const uint32_t *)k->p->data;
  uint32_t lo = pos * 64u, hi = lo + 63u;
  uint64_t w = 0;
  while (it->idx < k->len) {
    uint32_t first = runs[it->idx] >> 16, last = runs[it->idx] & 0xffffu;
    if (first > hi) break;
    w |= bits((first > lo ? first : lo) - lo, (last < hi ? last : hi) - lo);
    if (last > hi) break;
    it->idx++;
  }
  runs_sync(it, k);
  return w;
}

/* Decodes the next entries of an array chunk into buf. */
static void arr_decode(tern_ld_iter *it, const ld_chunk *k) {
  const uint8_t *e = ld_arr_entries(k);
  uint32_t i = it->idx, n = k->n, cnt = n - i < TERN_LD_ITER_BUF ? n - i : TERN_LD_ITER_BUF;
  if (k->shift > 8) {
    memcpy(it->buf, e + 2u * i, 2u * cnt);
  } else {
    const uint16_t *index = ld_arr_index(k);
    uint32_t b = it->bkt, end = index[b + 1], hi = (b << k->shift) & 0xff00u;
    for (uint32_t j = 0; j < cnt; j++, i++) {
      while (i >= end) {
        b++;
        end = index[b + 1];
        hi = (b << k->shift) & 0xff00u;
      }
      it->buf[j] = (uint16_t)(hi | e[i]);
    }
    it->bkt = b;
  }
  it->idx += cnt;
  it->bi = 0;
  it->bn = (uint8_t)cnt;
  arr_sync(it, k);
}

/* Out of line, so next()'s fast path stays a leaf that saves no registers. */
__attribute__((noinline)) static uint32_t refill_deleted(tern_ld_iter *it) {
  const tern_livedocs *ld = it->ld;
  for (;;) {
    if (it->chunk >= ld->nchunks) return finish(it);
    const ld_chunk *k = it->slot;
    if (!k || it->pos >= it->nwin || it->next_off == NONE) {
      enter_chunk(it, next_present(ld, it->chunk + 1u));
      continue;
    }
    switch (k->form) {
    case LD_ARRAY:
      arr_decode(it, k);
      return pop_buf(it);
    case LD_BITMAP:
      while (it->pos < it->nwin && !k->p->data[it->pos]) it->pos++;
      if (it->pos >= it->nwin) continue;
      it->word = k->p->data[it->pos];
      break;
    case LD_RUNS: {
      uint32_t first = it->next_off >> 6;
      if (first > it->pos) it->pos = first;
      it->word = runs_window(it, k, it->pos);
      break;
    }
    default: /* full */
      it->word = it->pos + 1u == it->nwin ? it->tail : ~0ull;
      break;
    }
    it->base = it->cbase + it->pos * 64u;
    it->pos++;
    if (it->word) return pop_word(it);
  }
}

/* The deleted docs of window pos of a chunk with deletions; may move pos
 * to the last window of a run that covers it. */
static uint64_t window_deletions(tern_ld_iter *it, const ld_chunk *k) {
  uint32_t lo = it->pos * 64u;
  switch (k->form) {
  case LD_ARRAY: {
    uint64_t w = 0;
    const uint16_t *index = ld_arr_index(k);
    while (it->next_off < lo + 64u) {
      w |= 1ull << (it->next_off & 63u);
      it->idx++;
      while (it->bkt < k->len && it->idx >= index[it->bkt + 1]) it->bkt++;
      it->next_off = it->idx < k->n ? ld_arr_off(k, it->idx, it->bkt) : NONE;
    }
    return w;
  }
  case LD_BITMAP:
    return k->p->data[it->pos];
  case LD_RUNS: {
    uint64_t w = runs_window(it, k, it->pos);
    if (w == ~0ull && it->next_off <= lo + 63u) { /* inside a run: go on at its last window */
      uint32_t last = ((const uint32_t *)k->p->data)[it->idx] & 0xffffu;
      if ((last >> 6) > it->pos) it->pos = (last >> 6) - 1u;
    }
    return w;
  }
  default:
    it->pos = it->nwin - 1u;
    return ~0ull;
  }
}

__attribute__((noinline)) static uint32_t refill_live(tern_ld_iter *it) {
  const tern_livedocs *ld = it->ld;
  for (;;) {
    if (it->pos >= it->nwin) {
      if (it->chunk + 1u >= ld->nchunks) return finish(it);
      enter_chunk(it, it->chunk + 1u);
      continue;
    }
    uint64_t all = it->pos + 1u == it->nwin ? it->tail : ~0ull;
    uint32_t base = it->cbase + it->pos * 64u;
    uint64_t w = it->next_off >= it->pos * 64u + 64u ? all : all & ~window_deletions(it, it->slot);
    it->pos++;
    if (w) {
      it->base = base;
      it->word = w;
      return pop_word(it);
    }
  }
}

uint32_t tern_ld_iter_next(tern_ld_iter *it) {
  if (TERN_LIKELY(it->word)) return pop_word(it);
  if (it->bi < it->bn) return pop_buf(it);
  return it->live ? refill_live(it) : refill_deleted(it);
}

/* Positions the cursors at the window holding target; nothing pending. */
static void seek(tern_ld_iter *it, uint32_t target) {
  enter_chunk(it, target >> LD_CHUNK_BITS);
  it->word = 0;
  it->bi = it->bn = 0;
  it->pos = (target & 0xffffu) >> 6;
  const ld_chunk *k = it->slot;
  if (!k) return;
  uint32_t o = it->pos * 64u;
  if (k->form == LD_ARRAY) {
    const uint16_t *index = ld_arr_index(k);
    it->bkt = o >> k->shift;
    it->idx = index[it->bkt];
    while (it->idx < index[it->bkt + 1] && ld_arr_off(k, it->idx, it->bkt) < o) it->idx++;
    arr_sync(it, k);
  } else if (k->form == LD_RUNS) {
    const uint32_t *runs = (const uint32_t *)k->p->data;
    uint32_t lo = 0, hi = k->len; /* first run ending at or after o */
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if ((runs[mid] & 0xffffu) < o)
        lo = mid + 1;
      else
        hi = mid;
    }
    it->idx = lo;
    runs_sync(it, k);
  }
}

uint32_t tern_ld_iter_advance(tern_ld_iter *it, uint32_t target) {
  if (target <= it->doc) return tern_ld_iter_next(it); /* also: done, or not started and 0 */
  if (target >= it->ld->max_doc) return finish(it);
  if (it->bi < it->bn && target <= it->cbase + it->buf[it->bn - 1u]) {
    while (it->cbase + it->buf[it->bi] < target) it->bi++;
    return pop_buf(it);
  }
  if (it->word && target < (uint64_t)it->base + 64u) {
    it->word &= ~0ull << (target > it->base ? target - it->base : 0);
    if (it->word) return pop_word(it);
  } else {
    seek(it, target);
  }
  uint32_t d;
  do d = tern_ld_iter_next(it);
  while (d < target);
  return d;
}
