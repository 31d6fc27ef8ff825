/*
 * progress.h — the progress line of long commands (import), drawn on stderr
 * only when stderr is a terminal, redrawn at most a few times a second.
 */
#ifndef TERN_CLI_PROGRESS_H
#define TERN_CLI_PROGRESS_H

#include <stdint.h>

typedef struct progress {
  int on;               /* drawing (stderr is a terminal and not quiet) */
  uint64_t total_bytes; /* input size when known (a regular file), else 0 */
  double start, last;   /* seconds on the monotonic clock */
} progress;

/* Starts timing; draws only when `enabled` and stderr is a terminal. */
void progress_start(progress *p, int enabled, uint64_t total_bytes);
/* Redraws if due: a bar when the input size is known, counts and rate. */
void progress_update(progress *p, uint64_t docs, uint64_t bytes);
/* Replaces the line with a phase name, e.g. "committing". */
void progress_phase(progress *p, uint64_t docs, const char *phase);
/* Erases the line. */
void progress_end(progress *p);
/* Seconds since progress_start. */
double progress_elapsed(const progress *p);

#endif
