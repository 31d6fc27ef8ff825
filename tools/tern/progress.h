/*
 * progress.h — the progress line of long commands (import), drawn on stderr
 * only when stderr is a terminal, redrawn at most a few times a second.
 *
 * An import goes through phases: "read" (parsing the input, measured in
 * bytes of a regular file, else counted), then the commit's phases as
 * tern_commit reports them (tern_txn_set_progress: sort, resolve, write,
 * terms, sync, commit, merge).  The line names the phase and, when the phase
 * has a known size, shows a bar, the rate and the time left (ETA) of that
 * phase; otherwise the time the phase has taken so far.
 */
#ifndef TERN_CLI_PROGRESS_H
#define TERN_CLI_PROGRESS_H

#include <stdint.h>

typedef struct progress {
  int on;               /* drawing (stderr is a terminal and not quiet) */
  uint64_t total_bytes; /* input size when known (a regular file), else 0 */
  double start, last;   /* seconds on the monotonic clock */
  const char *phase;    /* the phase drawn last (static string) */
  double phase_start;
} progress;

/* Starts timing; draws only when `enabled` and stderr is a terminal. */
void progress_start(progress *p, int enabled, uint64_t total_bytes);
/* The read phase: redraws if due, a bar when the input size is known. */
void progress_update(progress *p, uint64_t docs, uint64_t bytes);
/* A tern_progress_fn (tern.h) for tern_txn_set_progress, payload a progress. */
void progress_commit(void *payload, const char *phase, uint64_t done, uint64_t total);
/* Erases the line. */
void progress_end(progress *p);
/* Seconds since progress_start. */
double progress_elapsed(const progress *p);

#endif
