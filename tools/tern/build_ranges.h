/* SPDX-License-Identifier: MIT */
/*
 * build_ranges.h — the key ranges of `tern build`: --from/--to (keep only
 * the keys of one half-open range, dropping the others as soon as their
 * key is read) and --split-at (cut what is kept into consecutive parts,
 * one segment each), so that a process reads its input once however many
 * segments it builds.
 *
 * Part i holds the keys k with cut[i-1] <= k < cut[i] (part 0 from --from
 * or the smallest key, the last part to --to or the largest).  The cuts
 * ascend strictly and lie strictly inside (--from, --to): no part is
 * empty by construction, though one may get no keys from the input.
 */
#ifndef TERN_CLI_BUILD_RANGES_H
#define TERN_CLI_BUILD_RANGES_H

#include <stddef.h>
#include <stdint.h>

#include "tern.h"

typedef struct build_ranges {
  char *from, *to; /* decoded keys, NULL: unbounded */
  size_t from_len, to_len;
  tern_slice *cuts; /* ascending, inside (from, to) */
  size_t ncuts;
  int bounded; /* from or to given: lines are filtered */
} build_ranges;

/* --from K / --to K (escaped as keys; decoded in place, kept by pointer). */
int ranges_set_from(build_ranges *r, char *arg);
int ranges_set_to(build_ranges *r, char *arg);
/* Reads the cut keys of --split-at from `file` (escaped, one a line, as
 * `tern split` prints them; blank lines skipped) and checks them and the
 * bounds: each an error naming the file and line, or the options.
 * Returns 0, or -1 after reporting. */
int ranges_load(build_ranges *r, const char *file);
void ranges_free(build_ranges *r);

/* Whether from <= key < to. */
int ranges_keeps(const build_ranges *r, const void *key, size_t klen);
/* Whether the raw (escaped) key column of a TSV line is outside the
 * bounds: 1 drop the line, 0 keep it (or the key is malformed: the
 * line's parse reports it).  Decodes a copy, never the line itself. */
int ranges_drops_column(const build_ranges *r, const char *col, size_t len);
/* The part a key belongs in, at or after `part` (keys come in order). */
size_t ranges_part_of(const build_ranges *r, size_t part, const void *key, size_t klen);

#endif
