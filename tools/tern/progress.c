/*
 * progress.c — the progress line of progress.h.
 */
#include "progress.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { WIDTH = 24 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_start(progress *p, int enabled, uint64_t total_bytes) {
  p->on = enabled && isatty(2);
  p->total_bytes = total_bytes;
  p->start = p->last = p->phase_start = now();
  p->phase = "read";
}

double progress_elapsed(const progress *p) { return now() - p->start; }

/* Whether to draw now: on a phase change at once, else every 0.2 s.  Notes
 * when the phase started. */
static int due(progress *p, const char *phase, double t) {
  if (!p->on) return 0;
  if (strcmp(phase, p->phase) != 0) {
    p->phase = phase;
    p->phase_start = t;
  } else if (t - p->last < 0.2) {
    return 0;
  }
  p->last = t;
  return 1;
}

/* "PHASE [###   ]  45%  N/M UNIT  R UNIT/s  ETA S s", with `what` (already
 * formatted counts) in the middle. */
static void draw_bar(const progress *p, double frac, const char *what, double rate,
                     const char *unit, double eta) {
  if (frac > 1) frac = 1;
  int full = (int)(frac * WIDTH);
  char left[32] = "";
  if (eta >= 0) snprintf(left, sizeof left, "  ETA %.0f s", eta);
  fprintf(stderr, "\r%-7s [%.*s%*s] %3d%%  %s  %.0f %s/s%s\033[K", p->phase, full,
          "########################", WIDTH - full, "", (int)(frac * 100), what, rate, unit, left);
}

void progress_update(progress *p, uint64_t docs, uint64_t bytes) {
  double t = now();
  if (!due(p, "read", t)) return;
  double secs = t - p->phase_start, rate = secs > 0 ? (double)docs / secs : 0;
  char what[48];
  snprintf(what, sizeof what, "%llu docs", (unsigned long long)docs);
  if (p->total_bytes > 0) {
    double frac = (double)bytes / (double)p->total_bytes;
    double eta = frac > 0 ? secs * (1 - frac) / frac : -1;
    draw_bar(p, frac, what, rate, "docs", eta);
  } else {
    fprintf(stderr, "\r%-7s %s  %.0f docs/s\033[K", p->phase, what, rate);
  }
}

void progress_commit(void *payload, const char *phase, uint64_t done, uint64_t total) {
  progress *p = payload;
  double t = now();
  if (!due(p, phase, t)) return;
  double secs = t - p->phase_start;
  if (total > 1) {
    char what[48];
    snprintf(what, sizeof what, "%llu/%llu docs", (unsigned long long)done,
             (unsigned long long)total);
    double rate = secs > 0 ? (double)done / secs : 0;
    double eta = rate > 0 ? (double)(total - (done < total ? done : total)) / rate : -1;
    draw_bar(p, (double)done / (double)total, what, rate, "docs", eta);
  } else {
    fprintf(stderr, "\r%-7s %.1f s\033[K", phase, secs);
  }
}

void progress_end(progress *p) {
  if (p->on) fputs("\r\033[K", stderr);
}
