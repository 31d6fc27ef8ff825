/* SPDX-License-Identifier: MIT */
/*
 * router.c — building the XOR retrieval structure of router.h by peeling
 * (Graf and Lemire, "Xor Filters", 2020, section 3, and "Binary Fuse
 * Filters", 2022, for the sizes): each key adds itself to its three
 * cells; a cell that one key alone reaches gives that key its cell, and
 * the key leaves its other two, which may free others; keys are then
 * assigned in the reverse order, each cell's value made so that the key's
 * three cells XOR to its value.  With 1.125 cells a key at a million keys
 * (more for fewer) a seed peels all keys with high probability; the next
 * seed tries other cells.  Keys are added in the order of their first
 * segment, so that the adds, and the peeling that follows them, touch a
 * window of the cells at a time rather than all of them at random.
 *
 * Repeated hashes never peel (their cells count them twice): when a seed
 * leaves keys unpeeled, those keys are sorted by hash, repeats merged (the
 * escape where their values differ) and the same seed tried again.  So a
 * build costs one peel for keys without repeats, in O(n) time and about
 * 45 bytes a key at its peak (the cells while peeling, 16 bytes each; the
 * keys in peeled order, 13; the sort's copy, 9).
 */
#include "engine/state/router.h"

#include "codec/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SEEDS = 16, SEGLEN_MAX_LOG = 18 };

uint32_t tern_router_bits_for(size_t n) {
  if (n > TERN_ROUTER_MAX_VALUES) return 0;
  for (uint32_t bits = 2; bits < 8; bits *= 2)
    if (4 * n <= (1u << bits)) return bits;
  return 8;
}

void tern_router_free(tern_router *r) {
  free(r->cells);
  memset(r, 0, sizeof *r);
}

/* A cell while peeling: how many keys reach it, the XOR of their mixed
 * hashes and of their values, in one 16-byte record (one cache line a
 * cell touched, not three: the build is random access). */
typedef struct peel_cell {
  uint64_t hx;
  uint32_t count;
  uint32_t vx;
} peel_cell;

typedef struct peel {
  peel_cell *cell;
  uint32_t *queue;
  /* the keys in peeled order: mixed hash, value, the cell each got */
  uint64_t *order_m;
  uint8_t *order_v;
  uint32_t *order_cell;
  size_t ncells;
} peel;

static void peel_free(peel *p) {
  free(p->cell);
  free(p->queue);
  free(p->order_m);
  free(p->order_v);
  free(p->order_cell);
}

static int peel_alloc(peel *p, size_t ncells, size_t n) {
  memset(p, 0, sizeof *p);
  p->ncells = ncells;
  p->cell = malloc(ncells * sizeof *p->cell);
  p->queue = malloc(ncells * sizeof *p->queue);
  p->order_m = malloc((n ? n : 1) * sizeof *p->order_m);
  p->order_v = malloc(n ? n : 1);
  p->order_cell = malloc((n ? n : 1) * sizeof *p->order_cell);
  if (p->cell && p->queue && p->order_m && p->order_v && p->order_cell) return TERN_OK;
  peel_free(p);
  return tern_fail(TERN_ENOMEM, "router: out of memory");
}

/* Adds every key to its cells. */
static void peel_add(peel *p, const tern_router *r, const uint64_t *hash, const uint8_t *value,
                     size_t n, uint64_t seed) {
  memset(p->cell, 0, p->ncells * sizeof *p->cell);
  uint32_t cells[3];
  for (size_t i = 0; i < n; i++) {
    uint64_t m = tern_router_mix(hash[i], seed);
    tern_router_cells(r, m, cells);
    for (unsigned j = 0; j < 3; j++) {
      peel_cell *c = &p->cell[cells[j]];
      c->count++;
      c->hx ^= m;
      c->vx ^= value[i];
    }
  }
}

/* Peels what it can; the number of keys peeled (n: all). */
static size_t peel_run(peel *p, const tern_router *r) {
  size_t qn = 0, done = 0;
  for (size_t c = 0; c < p->ncells; c++)
    if (p->cell[c].count == 1) p->queue[qn++] = (uint32_t)c;
  while (qn) {
    uint32_t c = p->queue[--qn];
    if (p->cell[c].count != 1) continue; /* emptied since it was queued */
    uint64_t m = p->cell[c].hx;
    uint32_t v = p->cell[c].vx;
    p->order_m[done] = m;
    p->order_v[done] = (uint8_t)v;
    p->order_cell[done++] = c;
    uint32_t cells[3];
    tern_router_cells(r, m, cells);
    for (unsigned j = 0; j < 3; j++) {
      uint32_t d = cells[j];
      peel_cell *e = &p->cell[d];
      e->hx ^= m;
      e->vx ^= v;
      if (--e->count == 1) p->queue[qn++] = d;
    }
  }
  return done;
}

/* The cells' values, keys in the reverse of their peeled order. */
static void assign(tern_router *r, const peel *p, size_t n) {
  for (size_t i = n; i-- > 0;) {
    uint64_t m = p->order_m[i];
    uint32_t c = p->order_cell[i], x = p->order_v[i], cells[3];
    tern_router_cells(r, m, cells);
    for (unsigned j = 0; j < 3; j++)
      if (cells[j] != c) x ^= tern_router_load(r, cells[j]);
    uint32_t bit = c * r->bits;
    uint8_t mask = (uint8_t)(((1u << r->bits) - 1) << (bit & 7));
    r->cells[bit >> 3] = (uint8_t)((r->cells[bit >> 3] & ~mask) | (uint8_t)(x << (bit & 7)));
  }
}

static int cmp_u64_pair(const void *a, const void *b) {
  uint64_t x, y;
  memcpy(&x, a, sizeof x);
  memcpy(&y, b, sizeof y);
  return (x > y) - (x < y);
}

/* Whether key i (of mixed hash m) is left in the cells after a peel. */
static int unpeeled(const peel *p, const tern_router *r, uint64_t m) {
  uint32_t cells[3];
  tern_router_cells(r, m, cells);
  for (unsigned j = 0; j < 3; j++)
    if (p->cell[cells[j]].count) return 1;
  return 0;
}

static int cmp_size(const void *a, const void *b) {
  size_t x, y;
  memcpy(&x, a, sizeof x);
  memcpy(&y, b, sizeof y);
  return (x > y) - (x < y);
}

/* Merges the repeated hashes among the keys a peel left: each hash once,
 * its value the escape where its keys' values differ.  *n shrinks by the
 * repeats, *merged says how many (0: the seed is to blame, not them). */
static int merge_repeats(const peel *p, const tern_router *r, uint64_t seed, uint64_t *hash,
                         uint8_t *value, size_t *n, uint8_t escape, size_t *merged) {
  *merged = 0;
  size_t k = 0;
  for (size_t i = 0; i < *n; i++)
    k += (size_t)unpeeled(p, r, tern_router_mix(hash[i], seed));
  uint64_t(*left)[2] = malloc((k ? k : 1) * sizeof *left);
  size_t *drop = malloc((k ? k : 1) * sizeof *drop);
  if (!left || !drop) {
    free(left);
    free(drop);
    return tern_fail(TERN_ENOMEM, "router: out of memory");
  }
  k = 0;
  for (size_t i = 0; i < *n; i++)
    if (unpeeled(p, r, tern_router_mix(hash[i], seed))) {
      left[k][0] = hash[i];
      left[k++][1] = i;
    }
  qsort(left, k, sizeof *left, cmp_u64_pair);
  size_t ndrop = 0;
  for (size_t a = 0, b; a < k; a = b) {
    size_t first = (size_t)left[a][1];
    for (b = a + 1; b < k && left[b][0] == left[a][0]; b++) {
      size_t i = (size_t)left[b][1];
      if (value[i] != value[first]) value[first] = escape;
      drop[ndrop++] = i;
    }
  }
  free(left);
  qsort(drop, ndrop, sizeof *drop, cmp_size);
  size_t w = 0, d = 0;
  for (size_t i = 0; i < *n; i++) {
    if (d < ndrop && drop[d] == i) {
      d++;
      continue;
    }
    hash[w] = hash[i];
    value[w++] = value[i];
  }
  free(drop);
  *n = w;
  *merged = ndrop;
  return TERN_OK;
}

/* The binary fuse filter's sizes for n keys (Graf and Lemire's
 * reference code; the constants are theirs, measured for 3-wise
 * filters): segments of 2^floor(log(n) / log(3.33) + 2.25) cells, at most
 * 2^18, and max(1.125, 0.875 + 0.25 log(10^6) / log(n)) cells a key,
 * rounded up to whole segments plus the two a key's last cells may reach
 * past its first's. */
static void size_for(tern_router *r, size_t n) {
  int e = n ? (int)floor(log((double)n) / log(3.33) + 2.25) : 2;
  if (e > SEGLEN_MAX_LOG) e = SEGLEN_MAX_LOG;
  if (e < 2) e = 2;
  r->seglen = 1u << e;
  double factor = n <= 1 ? 1.0 : fmax(1.125, 0.875 + 0.25 * log(1e6) / log((double)n));
  size_t capacity = (size_t)ceil((double)n * factor);
  size_t segs = (capacity + r->seglen - 1) / r->seglen;
  size_t first = segs > 2 ? segs - 2 : 1; /* segments a first cell may fall in */
  r->span = (uint32_t)(first * r->seglen);
  r->ncells = (uint32_t)((first + 2) * r->seglen);
}

/* The keys reordered by their first cell's segment (a counting sort):
 * hash[] and value[] permuted in place through the scratch arrays. */
static int sort_by_segment(const tern_router *r, uint64_t *hash, uint8_t *value, size_t n,
                           uint64_t seed) {
  size_t nseg = r->span / r->seglen;
  size_t *at = calloc(nseg + 1, sizeof *at);
  uint64_t *h2 = malloc((n ? n : 1) * sizeof *h2);
  uint8_t *v2 = malloc(n ? n : 1);
  if (!at || !h2 || !v2) {
    free(at);
    free(h2);
    free(v2);
    return tern_fail(TERN_ENOMEM, "router: out of memory");
  }
  uint32_t c[3];
  for (size_t i = 0; i < n; i++) {
    tern_router_cells(r, tern_router_mix(hash[i], seed), c);
    at[c[0] / r->seglen + 1]++;
  }
  for (size_t g = 0; g < nseg; g++)
    at[g + 1] += at[g];
  for (size_t i = 0; i < n; i++) {
    tern_router_cells(r, tern_router_mix(hash[i], seed), c);
    size_t to = at[c[0] / r->seglen]++;
    h2[to] = hash[i];
    v2[to] = value[i];
  }
  memcpy(hash, h2, n * sizeof *hash);
  memcpy(value, v2, n);
  free(at);
  free(h2);
  free(v2);
  return TERN_OK;
}

int tern_router_build(tern_router *r, uint64_t *hash, uint8_t *value, size_t n, uint32_t bits,
                      const atomic_int *stop) {
  memset(r, 0, sizeof *r);
  if (bits != 2 && bits != 4 && bits != 8)
    return tern_fail(TERN_EINVAL, "router: %u-bit cells", bits);
  if (n > UINT32_MAX / 4) return tern_fail(TERN_EINVAL, "router: %zu keys", n);
  size_for(r, n);
  peel p;
  TERN_TRY(peel_alloc(&p, r->ncells, n));
  r->bits = bits;
  r->bytes = ((size_t)r->ncells * bits + 7) / 8;
  r->cells = calloc(r->bytes, 1);
  int rc = r->cells ? TERN_OK : tern_fail(TERN_ENOMEM, "router: out of memory");
  uint8_t escape = (uint8_t)tern_router_escape(r);
  uint64_t seed = 0;
  while (rc == TERN_OK) {
    if (seed == SEEDS) {
      rc = tern_fail(TERN_EINVAL, "router: %zu keys peeled with no seed", n);
      break;
    }
    rc = sort_by_segment(r, hash, value, n, seed);
    if (rc != TERN_OK) break;
    peel_add(&p, r, hash, value, n, seed);
    if (stop && atomic_load_explicit(stop, memory_order_relaxed)) { /* between the passes */
      rc = TERN_ESTOPPED;
      break;
    }
    if (peel_run(&p, r) == n) {
      r->seed = seed;
      assign(r, &p, n);
      break;
    }
    size_t merged = 0;
    rc = merge_repeats(&p, r, seed, hash, value, &n, escape, &merged);
    if (!merged) seed++; /* else the same seed again, without the repeats */
  }
  peel_free(&p);
  if (rc != TERN_OK) tern_router_free(r);
  return rc;
}
