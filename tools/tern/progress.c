/*
 * progress.c — the progress line of progress.h.
 */
#include "progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_start(progress *p, int enabled, uint64_t total_bytes) {
  p->on = enabled && isatty(2);
  p->total_bytes = total_bytes;
  p->start = p->last = now();
}

double progress_elapsed(const progress *p) { return now() - p->start; }

void progress_update(progress *p, uint64_t docs, uint64_t bytes) {
  if (!p->on) return;
  double t = now();
  if (t - p->last < 0.2) return;
  p->last = t;
  double rate = (double)docs / (t - p->start);
  if (p->total_bytes > 0) {
    enum { WIDTH = 30 };
    double frac = (double)bytes / (double)p->total_bytes;
    if (frac > 1) frac = 1;
    int full = (int)(frac * WIDTH);
    fprintf(stderr, "\r[%.*s%*s] %3d%%  %llu docs  %.0f docs/s\033[K", full,
            "##############################", WIDTH - full, "", (int)(frac * 100),
            (unsigned long long)docs, rate);
  } else {
    fprintf(stderr, "\r%llu docs  %.0f docs/s\033[K", (unsigned long long)docs, rate);
  }
}

void progress_phase(progress *p, uint64_t docs, const char *phase) {
  if (!p->on) return;
  fprintf(stderr, "\r%llu docs, %s...\033[K", (unsigned long long)docs, phase);
}

void progress_end(progress *p) {
  if (p->on) fputs("\r\033[K", stderr);
}
