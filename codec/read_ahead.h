/* SPDX-License-Identifier: MIT */
/*
 * read_ahead.h — when a run of reads going through a file, forwards or
 * backwards, should ask the kernel for the bytes ahead of them, and how
 * many.
 *
 * Segment files are opened for random access (no read-ahead of the
 * kernel's own: a cold point lookup reads one page), so a reader that
 * goes through one in order — a scan reading values from NAME.val, which
 * holds them in key order, or a reverse scan reading them from the last —
 * asks for what lies ahead itself.  The plan ramps up as the kernel's
 * read-ahead does: nothing until TERN_AHEAD_AFTER reads in a row have
 * each followed the one before (within TERN_AHEAD_GAP bytes, all after it
 * or all before it), then TERN_AHEAD_MIN bytes past the last read (below
 * it, backwards), twice as many at each ask up to TERN_AHEAD_MAX, the
 * next ask once the reads pass the middle of the last.  Any other read
 * (a turn included) starts over, so a seek and a few steps ask for
 * little.  Pure: the caller makes the ask (a hint), and skips it where
 * the bytes are known to be cached.
 */
#ifndef TERN_READ_AHEAD_H
#define TERN_READ_AHEAD_H

#include <stdint.h>

#define TERN_AHEAD_AFTER 4u
#define TERN_AHEAD_GAP 4096u
#define TERN_AHEAD_MIN ((uint64_t)64 << 10)
#define TERN_AHEAD_MAX ((uint64_t)4 << 20)

/* One reader's plan; zeroed: no reads yet. */
typedef struct tern_ahead {
  uint64_t file;  /* the file the reads are in (any id; 0 with no reads) */
  uint64_t start; /* where the last read began */
  uint64_t next;  /* where it ended */
  uint64_t until; /* forwards: asked for below this */
  uint64_t above; /* backwards: asked for from this - 1 up (0: not yet) */
  uint64_t ask;   /* the next ask's bytes */
  uint32_t run;   /* reads in a row, each following the one before */
  int dir;        /* the run's way: 1 forwards, -1 backwards, 0 not known yet */
} tern_ahead;

/* The next ask of a run forwards, the read ending at end. */
static inline int tern_ahead_fwd(tern_ahead *a, uint64_t end, uint64_t *from, uint64_t *n) {
  if (end + a->ask / 2 < a->until) return 0;
  *from = a->until > end ? a->until : end;
  *n = a->ask;
  a->until = *from + a->ask;
  return 1;
}

/* The next ask of a run backwards, the read starting at off. */
static inline int tern_ahead_back(tern_ahead *a, uint64_t off, uint64_t *from, uint64_t *n) {
  uint64_t low = a->above - 1; /* the lowest byte asked for, when a->above */
  if (a->above && off > low && off - low > a->ask / 2) return 0;
  uint64_t top = a->above && low < off ? low : off; /* no gap unless the read went below */
  if (top == 0) return 0; /* nothing below */
  *from = top > a->ask ? top - a->ask : 0;
  *n = top - *from;
  a->above = *from + 1;
  return 1;
}

/* A read of [off, off + len) of file `file` (nonzero): 1 with [*from,
 * *from + *n) the bytes to ask for now, else 0. */
static inline int tern_ahead_read(tern_ahead *a, uint64_t file, uint64_t off, uint64_t len,
                                  uint64_t *from, uint64_t *n) {
  uint64_t end = off + len;
  int same = a->file == file;
  int fwd = same && a->dir >= 0 && off >= a->next && off - a->next <= TERN_AHEAD_GAP;
  int back = same && !fwd && a->dir <= 0 && end <= a->start && a->start - end <= TERN_AHEAD_GAP;
  if (!fwd && !back) {
    *a = (tern_ahead){.file = file, .ask = TERN_AHEAD_MIN};
  } else {
    a->dir = fwd ? 1 : -1;
  }
  a->start = off;
  a->next = end;
  if (++a->run < TERN_AHEAD_AFTER) return 0;
  if (!(a->dir > 0 ? tern_ahead_fwd(a, end, from, n) : tern_ahead_back(a, off, from, n))) return 0;
  if (a->ask < TERN_AHEAD_MAX) a->ask *= 2;
  return 1;
}

#endif
