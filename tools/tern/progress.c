/* SPDX-License-Identifier: MIT */
/*
 * progress.c — the progress line of progress.h.
 */
#include "progress.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { WIDTH = 24 };
#define REDRAW_SECS 0.2

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Adds the current phase's time, up to t, to its total (mu held). */
static void account(progress *p, double t) {
  size_t i = 0;
  while (i < p->nphases && strcmp(p->names[i], p->phase) != 0) i++;
  if (i == p->nphases) {
    if (i == PROGRESS_PHASES) return;
    p->names[p->nphases++] = p->phase;
    p->secs[i] = 0;
  }
  p->secs[i] += t - p->phase_start;
  p->phase_start = t;
}

/* Enters `phase` at t (mu held); 1 when it is a new one. */
static int enter(progress *p, const char *phase, double t) {
  if (strcmp(phase, p->phase) == 0) return 0;
  account(p, t);
  p->phase = phase;
  p->phase_start = t;
  p->sized = 0;
  return 1;
}

/* The line of a phase without a known size: the time it has taken. */
static void draw_time(const progress *p, double t) {
  fprintf(stderr, "\r%-7s %.1f s\033[K", p->phase, t - p->phase_start);
}

/* Redraws a phase without a known size while the engine is silent in it. */
static void *tick(void *arg) {
  progress *p = arg;
  pthread_mutex_lock(&p->mu);
  while (!p->stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)(REDRAW_SECS * 1e9);
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&p->stop_cv, &p->mu, &until);
    double t = now();
    if (!p->stop && !p->sized && strcmp(p->phase, "read") != 0 && t - p->last >= REDRAW_SECS) {
      draw_time(p, t);
      p->last = t;
    }
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

void progress_start(progress *p, int enabled, uint64_t total_bytes) {
  p->on = enabled && isatty(2);
  p->total_bytes = total_bytes;
  p->start = p->last = p->phase_start = now();
  p->phase = "read";
  p->sized = 0;
  p->nphases = 0;
  p->stop = 0;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->stop_cv, NULL);
  p->ticking = p->on && pthread_create(&p->ticker, NULL, tick, p) == 0;
}

double progress_elapsed(const progress *p) { return now() - p->start; }

/* Whether to draw now (mu held): on a phase change at once, else every
 * REDRAW_SECS. */
static int due(progress *p, const char *phase, double t) {
  int changed = enter(p, phase, t);
  if (!p->on) return 0;
  if (!changed && t - p->last < REDRAW_SECS) return 0;
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
  pthread_mutex_lock(&p->mu);
  if (due(p, "read", t)) {
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
  pthread_mutex_unlock(&p->mu);
}

void progress_commit(void *payload, const char *phase, uint64_t done, uint64_t total) {
  progress *p = payload;
  double t = now();
  pthread_mutex_lock(&p->mu);
  if (due(p, phase, t)) {
    if (total > 1) {
      p->sized = 1;
      double secs = t - p->phase_start;
      char what[48];
      snprintf(what, sizeof what, "%llu/%llu docs", (unsigned long long)done,
               (unsigned long long)total);
      double rate = secs > 0 ? (double)done / secs : 0;
      double eta = rate > 0 ? (double)(total - (done < total ? done : total)) / rate : -1;
      draw_bar(p, (double)done / (double)total, what, rate, "docs", eta);
    } else {
      draw_time(p, t);
    }
  } else if (total > 1) {
    p->sized = 1;
  }
  pthread_mutex_unlock(&p->mu);
}

void progress_end(progress *p) {
  pthread_mutex_lock(&p->mu);
  account(p, now());
  p->stop = 1;
  pthread_cond_signal(&p->stop_cv);
  pthread_mutex_unlock(&p->mu);
  if (p->ticking) pthread_join(p->ticker, NULL);
  p->ticking = 0;
  if (p->on) fputs("\r\033[K", stderr);
}

void progress_phases(const progress *p, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < p->nphases && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%s %.2f s", i ? ", " : "", p->names[i],
                            p->secs[i]);
}
