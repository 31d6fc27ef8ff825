/* SPDX-License-Identifier: MIT */
/*
 * range_heads.c — building the range map's search tree (range_heads.h).
 */
#include "engine/state/range_heads.h"

#include "codec/status.h"

#include <stdlib.h>

static size_t round_up_node(size_t n) {
  return (n + TERN_RANGE_FANOUT - 1) / TERN_RANGE_FANOUT * TERN_RANGE_FANOUT;
}

void tern_range_heads_free(tern_range_heads *t) {
  free(t->heads);
  *t = (tern_range_heads){0};
}

/* Level l (0: the top) from the level below it, which holds `ndown` heads. */
static void fill_level(tern_range_heads *t, unsigned l, size_t nup, size_t ndown) {
  uint64_t *up = t->heads + t->level[l];
  const uint64_t *down = t->heads + t->level[l + 1];
  for (size_t j = 0; j < nup; j++) {
    size_t last = j * TERN_RANGE_FANOUT + TERN_RANGE_FANOUT - 1;
    up[j] = last < ndown ? down[last] : UINT64_MAX;
  }
}

int tern_range_heads_build(tern_range_heads *t, const uint64_t *hi, size_t n) {
  *t = (tern_range_heads){0};
  size_t size[TERN_RANGE_LEVELS], total = 0, s = round_up_node(n);
  unsigned nl = 0;
  for (;;) { /* size[0]: the bottom, the heads themselves */
    size[nl++] = s;
    total += s;
    if (s <= TERN_RANGE_FANOUT) break;
    s = round_up_node(s / TERN_RANGE_FANOUT);
  }
  t->heads = aligned_alloc(TERN_RANGE_FANOUT * sizeof(uint64_t), total * sizeof(uint64_t));
  if (!t->heads) return TERN_ENOMEM;
  t->nlevels = nl;
  t->n = n;
  size_t off = 0;
  for (unsigned l = 0; l < nl; l++) { /* top first in memory */
    size_t below = l + 1 < nl ? size[nl - 2 - l] : 0;
    t->level[l] = off;
    t->last_node[l] = below ? below / TERN_RANGE_FANOUT - 1 : 0;
    off += size[nl - 1 - l];
  }
  uint64_t *bottom = t->heads + t->level[nl - 1];
  for (size_t k = 0; k < size[0]; k++)
    bottom[k] = k < n ? hi[k] : UINT64_MAX;
  for (unsigned l = nl - 1; l-- > 0;)
    fill_level(t, l, size[nl - 1 - l], size[nl - 2 - l]);
  return TERN_OK;
}
