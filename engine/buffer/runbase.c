/* SPDX-License-Identifier: MIT */
/*
 * runbase.c — the runs successive buffer views share, and the bit slices
 * of their sketches (runbase.h).
 */
#include "engine/buffer/runbase.h"

#include "engine/buffer/memseg.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Bases of more runs get no slices: a slice would outgrow a cache line
 * (and each new base copies them all), where the worker, which merges the
 * runs every 10 ms, leaves ~100. */
enum { SLICED_RUNS_MAX = 512 };

/* Sets run i's column from its sketch. */
static void column_set(uint64_t *slices, size_t words, size_t i, const uint64_t sketch[4]) {
  uint64_t bit = (uint64_t)1 << (i % 64);
  uint64_t *col = slices + i / 64;
  for (unsigned q = 0; q < 4; q++)
    for (uint64_t v = sketch[q]; v; v &= v - 1)
      col[(64 * q + (unsigned)__builtin_ctzll(v)) * words] |= bit;
}

/* Copies the columns of prev's runs [0, shared) into slices (zeroed). */
static void columns_copy(uint64_t *slices, size_t words, const tern_runbase *prev, size_t shared) {
  size_t whole = shared / 64, part = shared % 64;
  uint64_t mask = ((uint64_t)1 << part) - 1;
  for (size_t s = 0; s < 256; s++) {
    const uint64_t *from = prev->slices + s * prev->words;
    uint64_t *to = slices + s * words;
    memcpy(to, from, whole * sizeof *to);
    if (part) to[whole] = from[whole] & mask;
  }
}

/* b's slices, or none without memory (its gets then test run by run). */
static void slices_build(tern_runbase *b, const tern_runbase *prev, size_t shared) {
  b->words = 0;
  b->slices = NULL;
  if (b->n > SLICED_RUNS_MAX) return;
  size_t words = (b->n + 63) / 64;
  uint64_t *slices = calloc(256 * words, sizeof *slices);
  if (!slices) return;
  size_t from = 0;
  if (prev && prev->words && shared <= prev->n && shared <= b->n) {
    columns_copy(slices, words, prev, shared);
    from = shared;
  }
  for (size_t i = from; i < b->n; i++)
    column_set(slices, words, i, b->runs[i]->sketch);
  b->words = words;
  b->slices = slices;
}

tern_runbase *tern_runbase_new(tern_mrun *const *runs, size_t n, const tern_runbase *prev,
                               size_t shared) {
  tern_runbase *b = malloc(sizeof *b + n * sizeof *runs);
  if (!b) return NULL;
  atomic_init(&b->refs, 1);
  b->n = n;
  for (size_t i = 0; i < n; i++) {
    assert(i >= shared || !prev || runs[i] == prev->runs[i]);
    b->runs[i] = runs[i];
    atomic_fetch_add(&runs[i]->refs, 1);
  }
  slices_build(b, prev, shared);
  size_t nf = 0;
  for (size_t i = 0; i < TERN_RUNBASE_FILTERED; i++)
    b->filtered[i] = UINT32_MAX;
  for (size_t i = 0; i < n && nf < TERN_RUNBASE_FILTERED; i++)
    if (runs[i]->fview.blocks) b->filtered[nf++] = (uint32_t)i;
  return b;
}

void tern_runbase_put(tern_runbase *b) {
  if (!b || atomic_fetch_sub(&b->refs, 1) != 1) return;
  for (size_t i = 0; i < b->n; i++)
    tern_mrun_put(b->runs[i]);
  free(b->slices);
  free(b);
}
