/* SPDX-License-Identifier: MIT */
/*
 * runbase.h — the runs successive buffer views share (tern_runbase), and
 * the bit slices of those runs' sketches, which name the runs of a base
 * that may hold a key in three loads.
 *
 * A stream of one-document commits leaves up to ~100 small runs between
 * the worker's polls, each with a 256-bit sketch of its keys (three bits
 * a key, memseg.h).  A get that tests the sketches one run at a time
 * reads a line per run: a present get while another thread commits took
 * 1.7-1.9x as long as alone, most of it there.  The base transposes its
 * runs' sketches: slice s holds bit i when run i's sketch has bit s, so
 * the runs that may hold a key are the AND of its three slices (a
 * bit-sliced signature file).  The slices are built when the base is
 * made (a commit makes one every few runs), the columns of the runs it
 * shares with the base before it copied, not rebuilt.
 */
#ifndef TERN_ENGINE_RUNBASE_H
#define TERN_ENGINE_RUNBASE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct tern_mrun;

/* The i-th (0..2) of a key's three sketch bits, from its filter hash's
 * top bytes (the filters use its lower bits). */
static inline unsigned tern_mrun_sketch_bit(uint64_t hash, int i) {
  return (unsigned)(hash >> (40 + 8 * i)) & 255;
}

/* Runs shared by the views that commits layer one on another
 * (tern_memseg_layer): the base holds a reference on each of its runs,
 * a view one on the base.  Without it every commit took and dropped a
 * reference on every run of the buffer (two atomic operations on a line
 * apart, per run, per commit: 0.5 µs of a one-document commit's ~5 µs
 * with the ~100 runs a stream of them leaves, measured by profile).
 * Immutable; freed with its last view. */
#define TERN_RUNBASE_FILTERED 4

typedef struct tern_runbase {
  atomic_uint refs;
  size_t n;
  size_t words;      /* of a slice: (n + 63) / 64; 0: no slices (memory, or too many runs) */
  uint64_t *slices;  /* slice s (0..255) at slices + s * words: bit i set when runs[i]'s
                        sketch has bit s */
  /* The runs with a filter (their sketches are all ones: every key is
   * theirs to rule out), whose lines a get fetches early; UINT32_MAX past
   * the first TERN_RUNBASE_FILTERED. */
  uint32_t filtered[TERN_RUNBASE_FILTERED];
  struct tern_mrun *runs[];
} tern_runbase;

/* A base holding runs[0, n), a reference taken on each, with the slices
 * of their sketches; prev (NULL: none) a base whose runs[0, shared) are
 * runs[0, shared): their columns are copied from it.  NULL when out of
 * memory (the caller then references the runs one by one); without
 * memory for the slices, a base without them. */
tern_runbase *tern_runbase_new(struct tern_mrun *const *runs, size_t n, const tern_runbase *prev,
                               size_t shared);
void tern_runbase_put(tern_runbase *b);

/* The runs [0, nbase) of a base with slices that may hold a key, newest
 * first (tern_base_cands_next). */
typedef struct tern_base_cands {
  const uint64_t *s0, *s1, *s2; /* the key's three slices */
  size_t w;                     /* words still to read: [0, w) */
  uint64_t top;                 /* the mask of the first word read (runs below nbase) */
  uint64_t bits;                /* candidates of word w not yet returned */
} tern_base_cands;

static inline void tern_base_cands_init(tern_base_cands *c, const tern_runbase *b, size_t nbase,
                                        uint64_t hash) {
  size_t words = b->words;
  c->s0 = b->slices + tern_mrun_sketch_bit(hash, 0) * words;
  c->s1 = b->slices + tern_mrun_sketch_bit(hash, 1) * words;
  c->s2 = b->slices + tern_mrun_sketch_bit(hash, 2) * words;
  c->w = (nbase + 63) / 64;
  c->top = nbase % 64 ? ((uint64_t)1 << (nbase % 64)) - 1 : ~(uint64_t)0;
  c->bits = 0;
}

/* Starts fetching the lines the listing reads first. */
static inline void tern_base_cands_prefetch(const tern_base_cands *c) {
  if (!c->w) return;
  __builtin_prefetch(c->s0 + c->w - 1);
  __builtin_prefetch(c->s1 + c->w - 1);
  __builtin_prefetch(c->s2 + c->w - 1);
}

/* The next run that may hold the key, or -1 when none is left. */
static inline ptrdiff_t tern_base_cands_next(tern_base_cands *c) {
  while (!c->bits) {
    if (!c->w) return -1;
    c->w--;
    c->bits = c->s0[c->w] & c->s1[c->w] & c->s2[c->w] & c->top;
    c->top = ~(uint64_t)0;
  }
  unsigned i = 63u - (unsigned)__builtin_clzll(c->bits);
  c->bits &= ~((uint64_t)1 << i);
  return (ptrdiff_t)(c->w * 64 + i);
}

#endif
