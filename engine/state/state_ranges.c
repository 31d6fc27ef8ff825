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
 * everything) stay in the list probed in turn, newest first.  A state
 * with one slot, or no two disjoint, keeps no map; two disjoint slots
 * already cost a get less through the map than tested in turn.
 */
#include "engine/state/index.h"
#include "engine/util/counters.h"

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

/* The map alone (the lines stay). */
static void map_free(tern_state *st) {
  free(st->disjoint);
  tern_range_heads_free(&st->heads);
  free(st->overlap);
  free(st->in_map);
  st->disjoint = NULL;
  st->overlap = NULL;
  st->in_map = NULL;
  st->ndisjoint = st->noverlap = 0;
  st->map_prefix = NULL;
  st->map_cp = 0;
}

void tern_state_ranges_free(tern_state *st) {
  map_free(st);
  free(st->lines);
  st->lines = NULL;
}

/* Every slot's filter line; without memory, none (the gates decide). */
static void index_lines(tern_state *st) {
  if (!st->nslots) return;
  st->lines = malloc(st->nslots * sizeof *st->lines);
  for (size_t i = 0; st->lines && i < st->nslots; i++) {
    tern_seg_filter_line_of(st->slots[i].gate.seg, &st->lines[i]);
    tern_seg_filter_line_settle(st->slots[i].gate.seg, &st->lines[i], 0);
  }
}

/* The map's entries only: there the bitmap word is a line of its own per
 * segment (many segments), where one segment's few words stay cached; and
 * checking every slot's filter at open would move the first gets' page
 * checks into every open (about 1 ms per million keys). */
void tern_state_settle_filters(tern_state *st) {
  for (size_t k = 0; k < st->ndisjoint; k++)
    tern_seg_filter_line_settle(st->slots[st->disjoint[k].slot].gate.seg, &st->disjoint[k].filter,
                                1);
}

static void prefetch_line(const tern_seg_filter_line *l, uint64_t hash) {
  uint64_t page = 0;
  const uint8_t *line = tern_seg_filter_line_block(l, hash, &page);
  if (line) {
    __builtin_prefetch(line);
    if (!l->settled) __builtin_prefetch(&l->checked[page / 64]); /* settled: no bitmap read */
  }
}

size_t tern_state_prefetch(const tern_state *st, const tern_seg_probe *p) {
  size_t at = tern_state_ranges_at(st, p).at;
  tern_state_prefetch_at(st, p, at);
  return at;
}

void tern_state_prefetch_at(const tern_state *st, const tern_seg_probe *p, size_t at) {
  /* The map's candidate first: it is probed first, and its line's miss
   * then overlaps the write buffer's probe, as a single slot's does
   * (unless its block alone decides: tern_state_map_block_first). */
  if (at < st->ndisjoint && !tern_state_map_block_first(st))
    prefetch_line(&st->disjoint[at].filter, p->fk.hash);
  /* With a combined filter, an absent key ends at its line: the slots'
   * lines would only crowd the caches (probe_in_turn fetches them when the
   * filter lets the key through). */
  if (!st->lines || (tern_state_has_cfilter(st) && !tern_state_cf_lines_first(st))) return;
  const uint32_t *ids = st->ndisjoint ? st->overlap : NULL;
  size_t n = st->ndisjoint ? st->noverlap : st->nslots;
  for (size_t k = 0; k < n && k < TERN_PREFETCH_WAVE; k++) /* newest first */
    prefetch_line(&st->lines[ids ? ids[n - 1 - k] : n - 1 - k], p->fk.hash);
}

int tern_state_slot_filter(const tern_state *st, size_t i, const tern_seg_probe *p) {
  TERN_COUNT_GET(filter_checks, 1);
  int line = st->lines ? tern_seg_filter_line_gate(&st->lines[i], &p->fk) : -1;
  return line >= 0 ? line : tern_seg_gate_filter(&st->slots[i].gate, p);
}

/* Entry k of the map: slot `slot`, whose gate is g. */
static void map_add(tern_state *st, const tern_seg_gate *g, uint32_t slot) {
  size_t k = st->ndisjoint++;
  tern_range_entry *m = &st->disjoint[k];
  memset(m, 0, sizeof *m);
  tern_seg_filter_line_of(g->seg, &m->filter);
  tern_seg_filter_line_settle(g->seg, &m->filter, 0);
  m->lo = g->lo;
  m->hi = g->hi;
  m->slot = slot;
}

/* The map's prefix: the bytes its first range's first key and its last
 * range's last key share, which every key between starts with; each
 * entry's heads taken past them. */
static void map_prefix(tern_state *st) {
  const tern_seg_gate *first = &st->slots[st->disjoint[0].slot].gate;
  const tern_seg_gate *last = &st->slots[st->disjoint[st->ndisjoint - 1].slot].gate;
  size_t n = first->min_len < last->max_len ? first->min_len : last->max_len, cp = 0;
  while (cp < n && first->min[cp] == last->max[cp])
    cp++;
  st->map_prefix = first->min;
  st->map_cp = cp;
  for (size_t k = 0; cp && k < st->ndisjoint; k++) {
    tern_range_entry *m = &st->disjoint[k];
    const tern_seg_gate *g = &st->slots[m->slot].gate;
    m->lo = tern_terms_index_head_at(g->min, g->min_len, cp);
    m->hi = tern_terms_index_head_at(g->max, g->max_len, cp);
  }
}

/* The search over the map's max heads (range_heads.h). */
static int map_index_heads(tern_state *st) {
  uint64_t *hi = malloc(st->ndisjoint * sizeof *hi);
  int rc = hi ? TERN_OK : TERN_ENOMEM;
  for (size_t k = 0; hi && k < st->ndisjoint; k++)
    hi[k] = st->disjoint[k].hi;
  if (rc == TERN_OK) rc = tern_range_heads_build(&st->heads, hi, st->ndisjoint);
  free(hi);
  if (rc == TERN_OK) return TERN_OK;
  map_free(st); /* still right: every slot probed in turn */
  return tern_fail(TERN_ENOMEM, "state: out of memory");
}

int tern_state_index_ranges(tern_state *st) {
  /* A new state's (nothing to free: a commit makes one each time) */
  assert(!st->lines && !st->disjoint && !st->overlap && !st->in_map && !st->heads.heads);
  index_lines(st);
  size_t n = st->nslots;
  if (n < TERN_RANGE_MAP_MIN) return TERN_OK; /* no map: every slot in turn */
  by_max *v = malloc(n * sizeof *v);
  uint8_t *shared = calloc(n, 1); /* 1: probed in turn (overlapping the map's, or no range) */
  st->disjoint = aligned_alloc(_Alignof(tern_range_entry), n * sizeof *st->disjoint);
  st->overlap = malloc(n * sizeof *st->overlap);
  if (!v || !shared || !st->disjoint || !st->overlap) {
    free(v);
    free(shared);
    map_free(st);
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
    map_add(st, v[k].g, v[k].slot);
  }
  for (size_t i = 0; i < n; i++) {
    if (shared[i]) st->overlap[st->noverlap++] = (uint32_t)i;
    shared[i] = !shared[i]; /* now: in the map */
  }
  free(v);
  st->in_map = shared;
  if (st->ndisjoint < 2) {
    map_free(st); /* nothing to search */
    return TERN_OK;
  }
  map_prefix(st);
  return map_index_heads(st);
}

/* The entry whose range can hold the probe's key when the key's head ties
 * entry k's last head (pos.head == disjoint[k].hi), which later entries'
 * heads may tie too (their keys differing past the head: another tenant's
 * day, say): among k and the entries after it whose first head is the
 * same, the first whose last key is at or above the key, by whole keys —
 * two binary searches, since the ranges are sorted and disjoint; SIZE_MAX
 * when the key lies above all of them. */
static size_t tied_entry(const tern_state *st, const tern_seg_probe *p, uint64_t head, size_t k) {
  /* the tie's end, the first entry whose first head is above: galloping
   * from k + 1 (mostly the next entry already is), then halving */
  size_t a = k + 1, end = st->ndisjoint;
  for (size_t step = 1; a < end; step *= 2) {
    size_t at = a + step - 1 < end ? a + step - 1 : end - 1;
    TERN_COUNT_GET(map_entries, 1);
    if (st->disjoint[at].lo > head) {
      end = at;
      break;
    }
    a = at + 1;
  }
  while (a < end) {
    size_t mid = a + (end - a) / 2;
    TERN_COUNT_GET(map_entries, 1);
    if (st->disjoint[mid].lo > head)
      end = mid;
    else
      a = mid + 1;
  }
  size_t lo = k, hi = end;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const tern_seg_gate *g = &st->slots[st->disjoint[mid].slot].gate;
    TERN_COUNT_GET(map_entries, 1);
    if (tern_seg_term_cmp(g->max, g->max_len, p->key, p->len) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < end ? lo : SIZE_MAX;
}

int tern_state_ranges_find(const tern_state *st, const tern_seg_probe *p, tern_map_pos pos,
                           uint32_t *slot, int *maybe, int *inside) {
  *maybe = 0;
  *inside = 0;
  size_t k = pos.at;
  if (k >= st->ndisjoint) return 0;
  /* The candidate's entry, filter line and checked-pages word fetched at
   * once, not one after the other. */
  const tern_range_entry *m = &st->disjoint[k];
  int block_first = tern_state_map_block_first(st);
  if (!block_first) prefetch_line(&m->filter, p->fk.hash);
  /* The heads decide, from the map's own entries, unless the key's head is
   * a range's first or last key's: then whole keys do.  By disjointness
   * at most one range admits the key; every later range's first head is
   * at least this one's last, so a key's head below this range's first
   * ends the search, and one strictly inside it by heads is decided here.
   * A key strictly inside that the entry's filter line rules out never
   * reaches the slot at all. */
  TERN_COUNT_GET(map_entries, 1);
  if (m->lo > pos.head) return 0;
  if (m == tern_state_map_inside(st, pos)) {
    /* Its filter line decides here when it can (its "maybe" then stands
     * for the slot's filter: not asked twice), else the slot's filter in
     * turn; while gets mostly find their keys, the block alone. */
    *inside = 1;
    *slot = m->slot;
    int line = block_first                             ? 1
               : pos.line != TERN_MAP_LINE_UNTESTED ? pos.line
                                                      : tern_state_map_line(st, m, p);
    if (line == 0) return 0;
    *maybe = line > 0;
    return 1;
  }
  if ((k = tern_state_map_entry(st, p, pos)) == SIZE_MAX) return 0;
  *slot = st->disjoint[k].slot;
  return tern_seg_gate_start(&st->slots[*slot].gate, p);
}

uint32_t tern_state_map_slot(const tern_state *st, const void *key, size_t len) {
  tern_seg_probe p;
  if (!st->ndisjoint || tern_seg_probe_head(&p, key, len) != TERN_OK) return UINT32_MAX;
  size_t e = tern_state_map_entry(st, &p, tern_state_ranges_at(st, &p));
  return e == SIZE_MAX ? UINT32_MAX : st->disjoint[e].slot;
}

size_t tern_state_map_entry(const tern_state *st, const tern_seg_probe *p, tern_map_pos pos) {
  size_t k = pos.at;
  if (k >= st->ndisjoint || st->disjoint[k].lo > pos.head) return SIZE_MAX;
  return pos.head == st->disjoint[k].hi ? tied_entry(st, p, pos.head, k) : k;
}
