/* SPDX-License-Identifier: MIT */
/*
 * state_ranges.c — a state's range map: the most slots whose key ranges
 * are pairwise disjoint, sorted by range, so that a get finds the one of them
 * that may hold its key by a binary search instead of testing every
 * slot's range in turn (issue 22: many range-disjoint segments, as a
 * partitioned ingest leaves them, must cost about what one does).
 *
 * Why any order of probing is right: at most one live document per key
 * exists across all sources (docs/ARCHITECTURE.md, invariant 3), so the
 * first live hit is the answer whichever slot gives it; newest first only
 * saves probes.  The other slots (a flushed segment of random keys spans
 * everything) stay in the list probed in turn, newest first.  A state with few slots keeps no map:
 * testing them in turn costs less than the search.
 */
#include "engine/state/index.h"

#include "codec/segment.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

static int gate_max_cmp(const tern_seg_gate *a, const tern_seg_gate *b) {
  if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
  return tern_seg_term_cmp(a->max, a->max_len, b->max, b->max_len);
}

/* a's max against b's min: < 0 when every key of a sorts below b's. */
static int max_min_cmp(const tern_seg_gate *a, const tern_seg_gate *b) {
  if (a->hi != b->lo) return a->hi < b->lo ? -1 : 1;
  return tern_seg_term_cmp(a->max, a->max_len, b->min, b->min_len);
}

static int has_range(const tern_seg_gate *g) { return g->lo <= g->hi && g->min && g->max; }

typedef struct by_max {
  const tern_seg_gate *g;
  uint32_t slot;
} by_max;

static int by_max_cmp(const void *x, const void *y) {
  const by_max *a = x, *b = y;
  int c = gate_max_cmp(a->g, b->g);
  return c ? c : (a->slot > b->slot) - (a->slot < b->slot);
}

void tern_state_ranges_free(tern_state *st) {
  free(st->disjoint);
  free(st->disjoint_hi);
  free(st->disjoint_lo);
  free(st->disjoint_filter);
  free(st->overlap);
  st->disjoint = st->overlap = NULL;
  st->disjoint_hi = st->disjoint_lo = NULL;
  st->disjoint_filter = NULL;
  st->ndisjoint = st->noverlap = 0;
}

int tern_state_index_ranges(tern_state *st) {
  tern_state_ranges_free(st);
  size_t n = st->nslots;
  if (n < TERN_RANGE_MAP_MIN) return TERN_OK; /* no map: every slot in turn */
  by_max *v = malloc(n * sizeof *v);
  uint8_t *shared = calloc(n, 1); /* 1: probed in turn (overlapping the map's, or no range) */
  st->disjoint = malloc(n * sizeof *st->disjoint);
  st->disjoint_hi = malloc(n * sizeof *st->disjoint_hi);
  st->disjoint_lo = malloc(n * sizeof *st->disjoint_lo);
  st->disjoint_filter = malloc(n * sizeof *st->disjoint_filter);
  st->overlap = malloc(n * sizeof *st->overlap);
  if (!v || !shared || !st->disjoint || !st->disjoint_hi || !st->disjoint_lo || !st->disjoint_filter || !st->overlap) {
    free(v);
    free(shared);
    tern_state_ranges_free(st);
    return tern_fail(TERN_ENOMEM, "state: out of memory");
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (has_range(&st->slots[i].gate))
      v[m++] = (by_max){&st->slots[i].gate, (uint32_t)i};
    else
      shared[i] = 1;
  }
  /* The most slots with pairwise disjoint ranges: by max ascending, take
   * each whose min lies above the last taken's max (interval scheduling:
   * a wide flushed segment goes to the overlap list, the narrow ones it
   * spans stay searchable). */
  qsort(v, m, sizeof *v, by_max_cmp);
  const tern_seg_gate *last = NULL;
  for (size_t k = 0; k < m; k++) {
    if (last && max_min_cmp(last, v[k].g) >= 0) {
      shared[v[k].slot] = 1;
      continue;
    }
    last = v[k].g;
    st->disjoint[st->ndisjoint] = v[k].slot;
    st->disjoint_filter[st->ndisjoint] = v[k].g->filter;
    st->disjoint_lo[st->ndisjoint] = v[k].g->lo;
    st->disjoint_hi[st->ndisjoint++] = v[k].g->hi;
  }
  for (size_t i = 0; i < n; i++)
    if (shared[i]) st->overlap[st->noverlap++] = (uint32_t)i;
  free(v);
  free(shared);
  if (st->ndisjoint < 2) tern_state_ranges_free(st); /* nothing to search */
  return TERN_OK;
}

size_t tern_state_ranges_find(const tern_state *st, const tern_seg_probe *p, uint32_t *cand,
                              size_t cap) {
  /* The first range whose max's head is at or above the key's, without
   * branches: a random key would mispredict half of them. */
  const uint64_t *base = st->disjoint_hi;
  size_t len = st->ndisjoint;
  while (len > 1) {
    size_t half = len / 2;
    base = base[half - 1] < p->head ? base + half : base;
    len -= half;
  }
  size_t lo = (size_t)(base - st->disjoint_hi) + (*base < p->head);
  /* The candidate's filter line and gate fetched at once, not one after
   * the other (the gate is a cache miss of its own among many slots). */
  if (lo < st->ndisjoint) {
    tern_filter_view_prefetch(st->disjoint_filter[lo], p->fk.hash);
    __builtin_prefetch(&st->slots[st->disjoint[lo]].gate);
  } else {
    return 0;
  }
  /* The heads decide, from the map's own arrays, unless the key's head is
   * a range's first or last key's: then its gate compares whole keys.  By
   * disjointness at most one range admits the key, and the search stops at
   * the first whose min's head lies above the key's, without touching its
   * gate. */
  size_t n = 0;
  for (size_t k = lo; k < st->ndisjoint && n < cap; k++) {
    if (st->disjoint_lo[k] > p->head) break;
    cand[n] = st->disjoint[k];
    if (p->head != st->disjoint_lo[k] && p->head != st->disjoint_hi[k]) {
      n++; /* strictly inside by heads; its filter line is on its way */
      continue;
    }
    n += (size_t)tern_seg_gate_start(&st->slots[st->disjoint[k]].gate, p);
  }
  return n;
}
