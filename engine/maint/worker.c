/* SPDX-License-Identifier: MIT */
/*
 * worker.c — the background worker (worker.h): its thread, when it runs,
 * its back-off after failures, and the record of what commits change
 * while a flush is in flight.
 */
#include "engine/maint/worker.h"
#include "engine/maint/combined.h"
#include "engine/util/counters.h"
#include "engine/state/edit.h"

#include "codec/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { BACKOFF_MAX_SHIFT = 10 };

/* After its work the thread lingers: it looks for more every
 * LINGER_POLL_NS, and once LINGER_POLLS polls in a row (50 ms) have seen
 * no commit it settles the buffer's runs and sleeps until signalled.  A
 * commit that gives a lingering (or busy) worker work only sets `kicked`:
 * waking a sleeping thread costs the committing thread a futex wake, 7-11
 * µs on a 2-vCPU VM whose idle CPU must be woken (about 1% of
 * one-document commits, exactly the p99 of their latency), while a poll
 * costs the worker's own CPU.  So the worker sleeps only after 50 ms
 * without commits, and only the first commit after such a pause wakes it
 * (`wake_sleeper`): it adds a run the settle must see.  Polls are 10 ms apart,
 * not 1: each is a timer wakeup of the other CPU, and a thousand a second
 * slowed the committing thread (each store alone, p99 1.34-1.90x bare
 * LMDB at 10 ms, median 1.66x, against 1.69-2.16x at 1 ms:
 * docs/BENCHMARKS.md, "latency").  Work waits at most one poll; a waiter
 * of the worker (back-pressure, a flush, a close) signals it at once. */
enum { LINGER_POLLS = 5 };
#define LINGER_POLL_NS 10000000L

typedef struct tern_worker {
  pthread_mutex_t mu;
  pthread_cond_t wake, idle;
  pthread_t thread;
  int started, stop;
  int kicked; /* work may be due; the worker holds the write lock while kicked or busy */
  int busy;
  int sleeping; /* in an untimed wait: a kick or a commit must signal it (else it polls) */
  uint64_t commits; /* commits seen: a lingering worker settles after polls that saw none */
  unsigned streak;  /* failures in a row */
  uint64_t skip;    /* kicks to ignore before trying again after a failure */
  int unreported;   /* status of a failure no commit has reported yet */
  tern_state *retired; /* a state the last install replaced, released at the next poll */
  /* Set by a kick and at close, cleared before a combined filter is made:
   * the build gives up within 4096 keys (tern_cfilter_refresh), so that
   * it never holds up a flush a commit waits for, nor a close (at 10M
   * keys it reads them all: about half a second). */
  atomic_int interrupt;
} tern_worker;

int tern_worker_new(tern_index *idx) {
  tern_worker *w = calloc(1, sizeof *w);
  if (!w) return tern_fail(TERN_ENOMEM, "worker: out of memory");
  pthread_mutex_init(&w->mu, NULL);
  pthread_condattr_t ca; /* polls timed on the monotonic clock: a clock set back delays no work */
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&w->wake, &ca);
  pthread_condattr_destroy(&ca);
  pthread_cond_init(&w->idle, NULL);
  idx->worker = w;
  return TERN_OK;
}

/* ------------------------------------------------------------ the work */

/* Whether the buffer of the newest state is past write_buffer_bytes. */
static int flush_due(tern_index *idx, int *due) {
  tern_state *st;
  TERN_TRY(tern_state_acquire(idx, 0, &st));
  *due = st->rec.buffered_bytes > idx->opts.write_buffer_bytes;
  tern_state_release(idx, st);
  return TERN_OK;
}

/* The newest buffer view's runs (0: none). */
static size_t buffer_runs(tern_index *idx) {
  tern_mu_lock(idx);
  size_t n = idx->cur && idx->cur->buffer ? idx->cur->buffer->nruns : 0;
  tern_mu_unlock(idx);
  return n;
}

/* Whether the newest buffer view holds more runs than lookups should
 * search (commits merge only small runs: memseg.h). */
static int runs_over(size_t runs) { return runs > TERN_WORKER_RUNS_MAX; }
static int runs_due(tern_index *idx) { return runs_over(buffer_runs(idx)); }

/* Whether the view cur still holds b's runs [0, to) where b had them:
 * no commit merged any of them since. */
static int runs_in_place(const tern_memseg *cur, const tern_memseg *b, size_t to) {
  if (!cur || cur->nruns < to) return 0;
  for (size_t i = 0; i < to; i++)
    if (cur->runs[i] != b->runs[i]) return 0;
  return 1;
}

/* Releases the state the worker's work began from one poll later, not now
 * (background): it holds what the install replaced (runs merged into one),
 * and the commit in flight still holds the state before the install; so
 * the last reference, and the free of those runs, is most likely the
 * worker's, outside every commit. */
static void retire(tern_index *idx, tern_state *st, int background) {
  tern_worker *w = idx->worker;
  if (!background) {
    tern_state_release(idx, st);
    return;
  }
  pthread_mutex_lock(&w->mu);
  tern_state *older = w->retired;
  w->retired = st;
  pthread_mutex_unlock(&w->mu);
  if (older) tern_state_release(idx, older);
}

/* REQUIRES: w->mu held; released meanwhile (LOCKS: idx->mu is below it,
 * but a commit's kick must not wait for a free). */
static void release_retired(tern_index *idx, tern_worker *w) {
  tern_state *st = w->retired;
  if (!st) return;
  w->retired = NULL;
  pthread_mutex_unlock(&w->mu);
  tern_state_release(idx, st);
  pthread_mutex_lock(&w->mu);
}

/* The runs of view b to merge: all of them (whole), or the group
 * tern_memseg_merge_window picks; 0 when none. */
static size_t runs_window(tern_index *idx, const tern_memseg *b, int whole, size_t *from) {
  if (!b) return 0;
  if (!whole) return tern_memseg_merge_window(b, tern_buffer_merge_max(idx), from);
  *from = 0;
  return b->nruns > 1 ? b->nruns : 0;
}

/* Merges a group of the newest buffer view's runs (runs_window) into
 * one, outside any lock, and installs the view with that run under
 * install_mu if no commit merged those runs meanwhile (else the next
 * commit asks again). */
static int merge_runs(tern_index *idx, int background, int whole) {
  tern_state *st;
  TERN_TRY(tern_state_acquire(idx, 1, &st));
  const tern_memseg *b = st->buffer;
  size_t from = 0, to = runs_window(idx, b, whole, &from);
  tern_mrun *merged = NULL;
  int rc = to ? tern_mruns_merge(b, from, to, &merged) : TERN_OK;
  if (merged) {
    tern_install_lock(idx);
    tern_state *cur = NULL;
    rc = tern_state_acquire(idx, 1, &cur);
    int same = rc == TERN_OK && runs_in_place(cur->buffer, b, to);
    tern_edit e;
    tern_edit_init(&e, cur);
    e.buf = TERN_EDIT_BUF_VIEW; /* the same documents: nothing for the catalog */
    if (same) rc = tern_memseg_remerged(cur->buffer, from, to, merged, &e.view);
    else tern_mrun_put(merged);
    if (e.view) (void)tern_log_and_apply(idx, &e);
    tern_edit_free(idx, &e);
    tern_install_unlock(idx);
    if (cur) tern_state_release(idx, cur); /* outside install_mu: commits wait on it */
  }
  retire(idx, st, background);
  return rc;
}

/* Whether a commit gave the worker more work since it woke (that work
 * first: the combined filter waits for the run after it). */
static int kicked_again(tern_index *idx) {
  tern_worker *w = idx->worker;
  pthread_mutex_lock(&w->mu);
  int kicked = w->kicked;
  pthread_mutex_unlock(&w->mu);
  return kicked;
}

/* One sweep of the buffer's older generations (*more: some are left).
 * In the background it then waits as long as the sweep held install_mu:
 * the mutex is not fair, and taking it again at once would starve the
 * commit that queued behind it for the whole of the sweeps (measured:
 * 2–5 ms stalls at each flush, against 0.3 ms for one sweep). */
static int sweep_step(tern_index *idx, int background, int *more) {
  tern_mu_lock(idx);
  *more = idx->cur && idx->cur->rec.old_docs; /* most rounds: nothing to sweep */
  tern_mu_unlock(idx);
  if (!*more) return TERN_OK;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = tern_sweep_once(idx, more);
  if (rc != TERN_OK || !*more || !background) return rc;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long ns = (long)(t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
  struct timespec pause = {0, ns < 1000000L ? ns : 1000000L};
  nanosleep(&pause, NULL);
  return rc;
}

/* Sweeps until none is left, or (background) until a commit gives the
 * worker more work: that work first, the sweeps after it. */
static int sweep_due(tern_index *idx, int background) {
  int more = 1, rc = TERN_OK;
  while (rc == TERN_OK && more && !(background && kicked_again(idx)))
    rc = sweep_step(idx, background, &more);
  return rc;
}

/* Flushes (first), merges buffer runs and merges segments until nothing
 * is due, one at a time; then, in the worker's thread (background), the
 * combined filter the last of them dropped (combined.h), and last the
 * sweeps of the buffer's older generations (which change no segment, so
 * the states they make keep that filter): never inside a commit. */
static int run_due_work(tern_index *idx, int background) {
  for (int round = 0; round < 256; round++) {
    int due = 0, merged = 0, rc = flush_due(idx, &due);
    if (rc == TERN_OK && due) {
      rc = tern_flush_locked(idx);
      if (rc == TERN_WORKER_RETRY) rc = TERN_OK; /* a commit changed the buffer its way */
      if (rc == TERN_OK) continue;
    }
    if (rc == TERN_OK && runs_due(idx)) rc = merge_runs(idx, background, 0);
    if (rc == TERN_OK) rc = tern_merge_once(idx, &merged);
    if (rc != TERN_OK) return rc;
    if (merged) continue;
    if (background) { /* cleared first: a kick after the test stops the build */
      atomic_store_explicit(&idx->worker->interrupt, 0, memory_order_relaxed);
      if (!kicked_again(idx)) TERN_TRY(tern_cfilter_refresh(idx, &idx->worker->interrupt));
    }
    return sweep_due(idx, background);
  }
  return TERN_OK;
}

/* One poll of a lingering worker: a timed wait on `wake` (which a stop or
 * a waiter of the worker still signals).  REQUIRES: w->mu held. */
static void linger_once(tern_worker *w) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_nsec += LINGER_POLL_NS;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  (void)pthread_cond_timedwait(&w->wake, &w->mu, &ts);
}

/* Before the worker sleeps, its linger over with no commit giving it
 * work: the buffer view's runs merged into one, as a reopen reads it, so
 * that a get tests one run's filter line, not one per run (13 and more
 * while commits go on; ~100 in a stream of one-document commits).  Writes happen in
 * bursts; this costs one merge of the buffer per burst, off every commit's
 * path.  It holds the write lock like kicked work (none if another
 * process holds it: nothing then), and is busy, so barriers wait for it
 * and a kick meanwhile keeps the hold for its own work.  A failure
 * (memory) is dropped: the view stays as it was, nothing is lost, and no
 * commit should report work it did not ask for.  REQUIRES: w->mu held
 * (released meanwhile). */
static void settle_runs(tern_index *idx, tern_worker *w) {
  if (buffer_runs(idx) <= 1 || !tern_write_lock_try_hold(idx)) return;
  w->busy = 1;
  pthread_mutex_unlock(&w->mu);
  if (merge_runs(idx, 0, 1) != TERN_OK) tern_clear_error();
  pthread_mutex_lock(&w->mu);
  w->busy = 0;
  if (!w->kicked) tern_write_lock_release(idx);
  pthread_cond_broadcast(&w->idle);
}

/* Lingers until LINGER_POLLS polls in a row have seen no commit: a
 * burst of commits is settled after its last, not in its middle.
 * REQUIRES: w->mu held. */
static void linger(tern_index *idx, tern_worker *w) {
  uint64_t seen = w->commits;
  int quiet = 0;
  while (quiet < LINGER_POLLS && !w->kicked && !w->stop) {
    linger_once(w);
    release_retired(idx, w);
    quiet = w->commits == seen ? quiet + 1 : 0;
    seen = w->commits;
  }
}

/* Waits for a kick or a stop: lingers, settles the buffer's runs, then
 * sleeps until a kick, a stop or a commit's wake (which lingers again:
 * the commit may begin a burst).  REQUIRES: w->mu held. */
static void wait_for_work(tern_index *idx, tern_worker *w) {
  while (!w->kicked && !w->stop) {
    linger(idx, w);
    if (w->kicked || w->stop) break;
    uint64_t seen = w->commits;
    settle_runs(idx, w);
    if (w->kicked || w->stop || w->commits != seen) continue; /* commits during the settle */
    w->sleeping = 1;
    while (w->sleeping && !w->kicked && !w->stop)
      pthread_cond_wait(&w->wake, &w->mu);
    w->sleeping = 0;
  }
}

static void *worker_main(void *arg) {
  tern_index *idx = arg;
  tern_worker *w = idx->worker;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    wait_for_work(idx, w);
    if (!w->kicked) break;
    w->kicked = 0;
    w->busy = 1;
    pthread_mutex_unlock(&w->mu);
    int rc = run_due_work(idx, 1);
    /* A failure is the next commit's to report by the time tern_stats_get
     * shows it: unreported is set between keeping its message (which the
     * commit's TERN_EPARTIAL quotes) and publishing its status. */
    if (rc != TERN_OK) tern_health_keep_msg(idx);
    pthread_mutex_lock(&w->mu);
    if (rc != TERN_OK) {
      w->unreported = rc;
      w->skip = (uint64_t)1 << (w->streak < BACKOFF_MAX_SHIFT ? w->streak : BACKOFF_MAX_SHIFT);
      w->streak++;
    } else {
      w->streak = 0;
    }
    if (rc != TERN_OK) {
      pthread_mutex_unlock(&w->mu);
      tern_health_publish(idx, rc, 0);
      pthread_mutex_lock(&w->mu);
    }
    w->busy = 0;
    if (!w->kicked) tern_write_lock_release(idx); /* kicked again: the hold stays for that work */
    pthread_cond_broadcast(&w->idle);
  }
  release_retired(idx, w);
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* ------------------------------------------------------------ scheduling */

/* Signals a sleeping worker; the signaller clears `sleeping`, so that
 * the thread is woken once however many signal it before it runs.
 * REQUIRES: w->mu held. */
static void wake_sleeper(tern_worker *w) {
  if (!w->sleeping) return;
  w->sleeping = 0;
  TERN_COUNT(worker_wakes);
  pthread_cond_signal(&w->wake);
}

/* Wakes the worker (write lock held by the caller); with no thread and
 * none to be had, runs the work here. */
static void kick(tern_index *idx) {
  tern_worker *w = idx->worker;
  pthread_mutex_lock(&w->mu);
  if (w->skip) {
    w->skip--;
    pthread_mutex_unlock(&w->mu);
    return;
  }
  if (!w->started && !w->stop && !(idx->flags & TERN_FOREGROUND))
    w->started = pthread_create(&w->thread, NULL, worker_main, idx) == 0;
  if (!w->started) {
    pthread_mutex_unlock(&w->mu);
    int rc = run_due_work(idx, 0);
    if (rc != TERN_OK) {
      tern_health_note(idx, rc, 0);
      pthread_mutex_lock(&w->mu);
      w->unreported = rc;
      pthread_mutex_unlock(&w->mu);
    }
    return;
  }
  if (!w->kicked && !w->busy) tern_write_lock_hold(idx);
  w->kicked = 1;
  atomic_store_explicit(&w->interrupt, 1, memory_order_relaxed);
  wake_sleeper(w);
  pthread_mutex_unlock(&w->mu);
}

void tern_worker_nudge(tern_index *idx) {
  if (!(idx->flags & TERN_FOREGROUND)) kick(idx);
}

/* REQUIRES: w->mu held. */
static void wait_idle(tern_worker *w) {
  if (w->kicked) pthread_cond_signal(&w->wake); /* a lingering worker: now, not at its next poll */
  while (w->kicked || w->busy)
    pthread_cond_wait(&w->idle, &w->mu);
}

/* The failure this commit reports (tern.h, tern_commit): one of work run
 * after an earlier commit, taken before this commit's kick, so that the
 * worker, fast enough, cannot make this commit report work it only just
 * started (the next call does); in the foreground, or when the commit
 * waited for the worker (back-pressure), the work it ran or waited for. */
static int take_unreported(tern_worker *w) {
  int failed = w->unreported;
  w->unreported = 0;
  return failed;
}

int tern_worker_after_commit(tern_index *idx, const tern_rec_state *rec, int segments_changed) {
  tern_worker *w = idx->worker;
  uint64_t limit = idx->opts.write_buffer_bytes;
  size_t runs = buffer_runs(idx);
  pthread_mutex_lock(&w->mu);
  int failed = take_unreported(w);
  w->commits++;
  if (runs > 1) wake_sleeper(w); /* its settle is over: this run needs another */
  pthread_mutex_unlock(&w->mu);
  /* No work due (most commits): nothing ran nor is waited for since the take. */
  if (rec->buffered_bytes <= limit && !segments_changed && !runs_over(runs)) return failed;
  kick(idx);
  pthread_mutex_lock(&w->mu);
  int waited = rec->buffered_bytes > TERN_WORKER_BUDGET * limit; /* past limit: kicked too */
  if (waited) wait_idle(w);
  if (!failed && (waited || !w->started)) failed = take_unreported(w);
  pthread_mutex_unlock(&w->mu);
  return failed;
}

void tern_worker_wait(tern_index *idx) {
  tern_worker *w = idx->worker;
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  wait_idle(w);
  release_retired(idx, w); /* a barrier: nothing of the work done is held after it */
  pthread_mutex_unlock(&w->mu);
}

int tern_worker_drain(tern_index *idx) {
  tern_worker *w = idx->worker;
  if (!w) return 0;
  pthread_mutex_lock(&w->mu);
  wait_idle(w);
  release_retired(idx, w);
  int pending = w->unreported;
  w->unreported = 0;
  w->skip = 0;
  pthread_mutex_unlock(&w->mu);
  return pending;
}

int tern_worker_report(tern_index *idx, int rc, int pending) {
  if (!pending || rc == TERN_EPARTIAL) return rc;
  if (rc != TERN_OK) { /* the caller's own error first; the next call reports this one */
    pthread_mutex_lock(&idx->worker->mu);
    if (!idx->worker->unreported) idx->worker->unreported = pending;
    pthread_mutex_unlock(&idx->worker->mu);
    return rc;
  }
  char msg[TERN_REC_HEALTH_MSG_MAX + 1];
  pthread_mutex_lock(&idx->mu);
  snprintf(msg, sizeof msg, "%s", idx->last_error_msg);
  pthread_mutex_unlock(&idx->mu);
  return tern_fail(TERN_EPARTIAL, "%s: done; a flush or merge after an earlier commit failed (%s): %s",
                   idx->dir, tern_strerror(pending), msg);
}

void tern_worker_free(tern_index *idx) {
  tern_worker *w = idx->worker;
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  atomic_store_explicit(&w->interrupt, 1, memory_order_relaxed); /* a filter no state will hold */
  wait_idle(w);
  w->stop = 1;
  pthread_cond_signal(&w->wake);
  int started = w->started;
  pthread_mutex_unlock(&w->mu);
  if (started) pthread_join(w->thread, NULL);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->wake);
  pthread_cond_destroy(&w->idle);
  free(w);
  idx->worker = NULL;
}
