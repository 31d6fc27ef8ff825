/* SPDX-License-Identifier: MIT */
/*
 * progress.h — the progress line of long commands (import), drawn on stderr
 * only when stderr is a terminal, redrawn at most a few times a second.
 *
 * An import goes through phases: "read" (parsing the input, measured in
 * bytes of a regular file, else counted), then the commit's phases as
 * tern_commit reports them (tern_txn_set_progress: sort, resolve, write,
 * terms, sync, commit, merge).  The line names the phase and, when the phase
 * has a known size, shows a bar, the rate and the time left (ETA) of that
 * phase; otherwise the time the phase has taken so far, kept current by a
 * ticker thread (the engine reports such a phase only at its start and
 * end).  Every phase's time is kept, drawn or not, for the summary.
 */
#ifndef TERN_CLI_PROGRESS_H
#define TERN_CLI_PROGRESS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

enum { PROGRESS_PHASES = 8 };

typedef struct progress {
  int on;               /* drawing (stderr is a terminal and not quiet) */
  uint64_t total_bytes; /* input size when known (a regular file), else 0 */
  double start, last;   /* seconds on the monotonic clock */
  const char *phase;    /* the current phase (static string) */
  double phase_start;
  int sized;            /* the current phase reported a known size (a bar) */
  /* time per phase, in the order first seen */
  const char *names[PROGRESS_PHASES];
  double secs[PROGRESS_PHASES];
  size_t nphases;
  pthread_mutex_t mu;   /* the above, between the caller and the ticker */
  pthread_cond_t stop_cv;
  pthread_t ticker;
  int ticking, stop;
} progress;

/* Starts timing; draws only when `enabled` and stderr is a terminal. */
void progress_start(progress *p, int enabled, uint64_t total_bytes);
/* The read phase: redraws if due, a bar when the input size is known. */
void progress_update(progress *p, uint64_t docs, uint64_t bytes);
/* A tern_progress_fn (tern.h) for tern_txn_set_progress, payload a progress. */
void progress_commit(void *payload, const char *phase, uint64_t done, uint64_t total);
/* Ends the current phase, stops the ticker and erases the line. */
void progress_end(progress *p);
/* Seconds since progress_start. */
double progress_elapsed(const progress *p);
/* "read 1.20 s, sort 0.10 s, ..." into buf: every phase seen, its time. */
void progress_phases(const progress *p, char *buf, size_t cap);

#endif
