/* SPDX-License-Identifier: MIT */
/*
 * pick.c — the cheaper of two ways, by their measured costs (pick.h).
 */
#include "engine/util/pick.h"

#include <assert.h>
#include <time.h>

#define SMOOTH 8 /* past the start, a run moves the average 1/SMOOTH of the way */

static int started(const tern_pick2 *p) {
  return atomic_load_explicit(&p->seen[0], memory_order_relaxed) >= TERN_PICK_START &&
         atomic_load_explicit(&p->seen[1], memory_order_relaxed) >= TERN_PICK_START;
}

unsigned tern_pick2_best(const tern_pick2 *p) {
  if (!started(p)) return 0;
  return atomic_load_explicit(&p->cost[1], memory_order_relaxed) <
         atomic_load_explicit(&p->cost[0], memory_order_relaxed);
}

unsigned tern_pick2_choose(tern_pick2 *p) {
  if (!started(p)) /* in turn: the way measured fewer times */
    return atomic_load_explicit(&p->seen[1], memory_order_relaxed) <
           atomic_load_explicit(&p->seen[0], memory_order_relaxed);
  uint32_t c0 = atomic_load_explicit(&p->cost[0], memory_order_relaxed);
  uint32_t c1 = atomic_load_explicit(&p->cost[1], memory_order_relaxed);
  unsigned best = c1 < c0;
  uint32_t lo = best ? c1 : c0, hi = best ? c0 : c1;
  /* a way far costlier is tried again less often: what its runs cost is
   * what exploring costs (10M keys: one batch in 16 at 560 ns a key
   * instead of 400 made batches 2.5% slower) */
  uint32_t every = hi - lo > lo / 8 ? TERN_PICK_EXPLORE_FAR : TERN_PICK_EXPLORE;
  uint32_t run = atomic_fetch_add_explicit(&p->runs, 1, memory_order_relaxed);
  return run % every == every - 1 ? !best : best;
}

uint64_t tern_pick2_clock(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void tern_pick2_learn(tern_pick2 *p, unsigned way, uint64_t ns, uint64_t units) {
  assert(way < 2 && units > 0);
  const uint64_t most = UINT32_MAX / 2;
  /* a unit's cost, x 16: sub-ns steps count */
  uint64_t c = ns > most * units / 16 ? most : ns * 16 / units;
  if (c == 0) c = 1; /* 0 means "not measured" */
  uint32_t n = atomic_load_explicit(&p->seen[way], memory_order_relaxed);
  if (n < TERN_PICK_START) atomic_store_explicit(&p->seen[way], n + 1, memory_order_relaxed);
  /* the least of the first runs (a fresh process's page faults, a cold
   * cache and interruptions only add time: the first run of a `tern get`
   * cost 615 ns a key where the way's later runs cost 380), then 1/SMOOTH
   * a run */
  uint32_t old = atomic_load_explicit(&p->cost[way], memory_order_relaxed);
  int64_t next = n == 0 ? (int64_t)c
                 : n < TERN_PICK_START ? (int64_t)(c < old ? c : old)
                                       : (int64_t)old + ((int64_t)c - (int64_t)old) / SMOOTH;
  atomic_store_explicit(&p->cost[way], (uint32_t)(next > 0 ? next : 1), memory_order_relaxed);
}
