/* SPDX-License-Identifier: MIT */
/*
 * read_ahead.h — when a run of reads going forwards through a file should
 * ask the kernel for the bytes after them, and how many.
 *
 * Segment files are opened for random access (no read-ahead of the
 * kernel's own: a cold point lookup reads one page), so a reader that
 * goes forwards through one — a scan reading values from NAME.val, which
 * holds them in key order — asks for what lies ahead itself.  The plan
 * ramps up as the kernel's read-ahead does: nothing until TERN_AHEAD_AFTER
 * reads in a row have each followed the one before (within
 * TERN_AHEAD_GAP bytes), then TERN_AHEAD_MIN bytes past the last read,
 * twice as many at each ask up to TERN_AHEAD_MAX, the next ask once the
 * reads pass the middle of the last.  Any other read starts over, so a
 * seek and a few steps ask for little.  Pure: the caller makes the ask
 * (a hint), and skips it where the bytes are known to be cached.
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
  uint64_t next;  /* where the last read ended */
  uint64_t until; /* asked for below this */
  uint64_t ask;   /* the next ask's bytes */
  uint32_t run;   /* reads in a row, each following the one before */
} tern_ahead;

/* A read of [off, off + len) of file `file` (nonzero): 1 with [*from,
 * *from + *n) the bytes to ask for now, else 0. */
static inline int tern_ahead_read(tern_ahead *a, uint64_t file, uint64_t off, uint64_t len,
                                  uint64_t *from, uint64_t *n) {
  int follows = a->file == file && off >= a->next && off - a->next <= TERN_AHEAD_GAP;
  if (!follows) {
    a->file = file;
    a->run = 0;
    a->until = 0;
    a->ask = TERN_AHEAD_MIN;
  }
  uint64_t end = off + len;
  a->next = end;
  if (++a->run < TERN_AHEAD_AFTER || end + a->ask / 2 < a->until) return 0;
  *from = a->until > end ? a->until : end;
  *n = a->ask;
  a->until = *from + a->ask;
  if (a->ask < TERN_AHEAD_MAX) a->ask *= 2;
  return 1;
}

#endif
