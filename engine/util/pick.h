/* SPDX-License-Identifier: MIT */
/*
 * pick.h — the cheaper of two ways to do the same work, chosen by what
 * each cost lately ("micro adaptivity": Răducanu, Boncz and Zukowski,
 * SIGMOD 2013, where Vectorwise picks among flavours of a primitive by
 * their measured cost).  Both ways must give the same answers: the
 * choice only moves time.
 *
 * The first TERN_PICK_START runs of each way alternate, so that both are
 * measured over the same start, and each way's cost a unit is the least
 * of them (a fresh process's first runs pay its page faults and a cold
 * cache: a mean of them would make the way that went first look dearer
 * for long); past that it is smoothed (an exponential average, 1/8 a
 * run).  A run then takes the way that
 * costs less, except one in TERN_PICK_EXPLORE (TERN_PICK_EXPLORE_FAR when
 * the other costs 1/8 more or worse), which takes the other so that its
 * cost follows what changed (the data, the cache, the machine).  Shared
 * by threads without locks: the fields are relaxed atomics, and a lost
 * update only delays the average.
 */
#ifndef TERN_ENGINE_PICK_H
#define TERN_ENGINE_PICK_H

#include <stdatomic.h>
#include <stdint.h>

#define TERN_PICK_START 4u         /* runs of each way taken in turn first */
#define TERN_PICK_EXPLORE 16u      /* then one run in this many takes the costlier way, */
#define TERN_PICK_EXPLORE_FAR 128u /* or in this many when it costs 1/8 more or worse */

typedef struct tern_pick2 {
  _Atomic uint32_t cost[2]; /* ns a unit x 16; 0: not measured */
  _Atomic uint32_t seen[2]; /* runs measured, up to TERN_PICK_START */
  _Atomic uint32_t runs;    /* runs chosen past the start (wraps) */
} tern_pick2;

/* The way (0 or 1) the next run takes.  p zeroed is a valid start. */
unsigned tern_pick2_choose(tern_pick2 *p);
/* The way that costs less now (0 until both are past the start), for a
 * run too small to time: no exploring. */
unsigned tern_pick2_best(const tern_pick2 *p);
/* A monotonic clock in ns, for timing a run. */
uint64_t tern_pick2_clock(void);
/* A run of `way` took ns for `units` units of work (units > 0). */
void tern_pick2_learn(tern_pick2 *p, unsigned way, uint64_t ns, uint64_t units);

#endif
