/* SPDX-License-Identifier: MIT */
/*
 * range_heads.h — the range map's search (state_ranges.c): given the
 * sorted 8-byte heads of the map's ranges' last keys, the first range
 * whose head is at or above a key's.
 *
 * Why not a binary search: over 64 ranges it is six loads, each waiting
 * for the one before (branch-free, as a random key mispredicts half the
 * branches), and on a get of an absent key that chain comes before the
 * filter line's cache miss can even start.  A static search tree of nodes
 * of 8 heads (one cache line each; a B+-tree with no pointers, after the
 * "S+ tree" of Algorithmica's "Static B-Trees") reads one node per level,
 * its 8 compares independent: 2 dependent loads for up to 64 ranges.
 */
#ifndef TERN_ENGINE_RANGE_HEADS_H
#define TERN_ENGINE_RANGE_HEADS_H

#include <stddef.h>
#include <stdint.h>

#define TERN_RANGE_FANOUT 8u  /* heads per node: one cache line */
#define TERN_RANGE_LEVELS 12u /* levels at most: 8^11 > 2^32 heads */

/* Level 0 (one node) first in heads[], the heads themselves last; each
 * level padded to whole nodes with UINT64_MAX; an upper level holds each
 * node of the level below's greatest (last) head. */
typedef struct tern_range_heads {
  uint64_t *heads;                     /* NULL: none built */
  size_t level[TERN_RANGE_LEVELS];     /* offset of each level in heads[] */
  size_t last_node[TERN_RANGE_LEVELS]; /* number of the level below's last node */
  unsigned nlevels;
  size_t n;
} tern_range_heads;

/* Builds t over hi[0..n), n >= 1, sorted ascending (equal heads allowed).
 * Errors: TERN_ENOMEM (t then holds none). */
int tern_range_heads_build(tern_range_heads *t, const uint64_t *hi, size_t n);
void tern_range_heads_free(tern_range_heads *t);

/* How many of a node's heads lie below `head`: eight independent
 * compares, summed as a tree, not a chain. */
static inline size_t tern_range_node_below(const uint64_t *node, uint64_t head) {
  size_t a = (size_t)(node[0] < head) + (size_t)(node[1] < head);
  size_t b = (size_t)(node[2] < head) + (size_t)(node[3] < head);
  size_t c = (size_t)(node[4] < head) + (size_t)(node[5] < head);
  size_t d = (size_t)(node[6] < head) + (size_t)(node[7] < head);
  return (a + b) + (c + d);
}

/* The first i with hi[i] >= head, n when none; no branch on the data.  A
 * head above every head would count past a level's last real node: the
 * count is bounded there (a conditional move), and that path ends at n. */
static inline size_t tern_range_heads_lower(const tern_range_heads *t, uint64_t head) {
  size_t at = 0;
  for (unsigned l = 0; l + 1 < t->nlevels; l++) {
    at = at * TERN_RANGE_FANOUT +
         tern_range_node_below(t->heads + t->level[l] + at * TERN_RANGE_FANOUT, head);
    at = at < t->last_node[l] ? at : t->last_node[l];
  }
  const uint64_t *bottom = t->heads + t->level[t->nlevels - 1];
  at = at * TERN_RANGE_FANOUT + tern_range_node_below(bottom + at * TERN_RANGE_FANOUT, head);
  return at < t->n ? at : t->n;
}

#endif
