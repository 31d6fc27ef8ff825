/* SPDX-License-Identifier: MIT */
/*
 * cfilter_builder.c — a handle's thread that builds the combined filter
 * (state_cfilter.c) of a state made from the catalog with fewer slots
 * probed in turn than open builds one for (TERN_CFILTER_MIN_WORKER to
 * TERN_CFILTER_MIN - 1: an incremental index's 2 to 4 segments; issue 21
 * item 6), or with more keys than open builds one for
 * (TERN_CFILTER_TABLE_KEYS).  The build, about 135 ms per million keys,
 * would make the first get after every open (or reload) that much slower;
 * here it runs beside the gets, which are right without it meanwhile, and
 * is installed as the same state with the filter
 * (tern_state_install_cfilter).
 *
 * Started on the first kick (a read-only handle has no other thread); none
 * under TERN_FOREGROUND (a handle that asked for no threads).  Stopped at
 * close: the stop flag ends a build in progress within 4096 keys, then the
 * thread is joined.  A writing process's worker makes the same filter
 * after its own flushes and merges (engine/maint/combined.c); whichever
 * installs first wins, the other's is dropped.  The builder installs
 * nothing while this process writes (a transaction that spilled must
 * commit onto the state it began on): it tries again every 20 ms, for 5 s
 * at most (then the worker's next run makes the filter).
 */
#include "engine/state/edit.h"
#include "engine/state/index.h"

#include "codec/status.h"

#include <stdlib.h>
#include <time.h>

struct tern_cfbuilder {
  pthread_mutex_t mu;
  pthread_cond_t wake, idle;
  pthread_t thread;
  int started, kicked, busy, stopping; /* under mu */
  atomic_int stop;                     /* read by a build in progress */
  tern_index *idx;
};

enum { RETRY_MS = 20, RETRY_MAX = 250 };

/* Waits RETRY_MS unless the handle is closing; 0 when it is. */
static int pause_unless_stopped(tern_cfbuilder *b) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += RETRY_MS * 1000000L;
  until.tv_sec += until.tv_nsec / 1000000000L;
  until.tv_nsec %= 1000000000L;
  pthread_mutex_lock(&b->mu);
  if (!b->stopping) pthread_cond_timedwait(&b->wake, &b->mu, &until);
  int go = !b->stopping;
  pthread_mutex_unlock(&b->mu);
  return go;
}

/* Builds the current state's filter when it still wants one, and
 * installs it if the state is still the one built for (or covered). */
static void build_once(tern_cfbuilder *b) {
  tern_index *idx = b->idx;
  tern_mu_lock(idx);
  tern_state *st = idx->cur;
  if (st) st->refs++;
  tern_mu_unlock(idx);
  if (!st) return;
  tern_cfilter *cf = NULL;
  if (tern_state_cfilter_wanted(st) && tern_cfilter_make(st, &b->stop, &cf) != TERN_OK)
    tern_clear_error(); /* none: still right */
  tern_state_release(idx, st);
  if (!cf) return;
  /* Not under this process's write: tried again every RETRY_MS while
   * the writer holds the lock, RETRY_MAX times at most. */
  for (int tries = 0; cf && tries < RETRY_MAX; tries++) {
    tern_install_lock(idx);
    int writing = tern_state_install_cfilter(idx, &cf, 1);
    tern_install_unlock(idx);
    if (!writing || !pause_unless_stopped(b)) break;
  }
  tern_cfilter_discard(cf); /* not installed: the state moved on, or the writer stayed */
}

static void *builder_main(void *arg) {
  tern_cfbuilder *b = arg;
  pthread_mutex_lock(&b->mu);
  for (;;) {
    while (!b->kicked && !b->stopping)
      pthread_cond_wait(&b->wake, &b->mu);
    if (b->stopping) break;
    b->kicked = 0;
    b->busy = 1;
    pthread_mutex_unlock(&b->mu);
    build_once(b);
    pthread_mutex_lock(&b->mu);
    b->busy = 0;
    pthread_cond_broadcast(&b->idle);
  }
  b->busy = 0;
  pthread_cond_broadcast(&b->idle);
  pthread_mutex_unlock(&b->mu);
  return NULL;
}

void tern_cfbuilder_kick(tern_index *idx) {
  assert(tern_mu_held(idx));
  if (idx->flags & TERN_FOREGROUND) return;
  tern_cfbuilder *b = idx->cfbuilder;
  if (!b) {
    if (!(b = calloc(1, sizeof *b))) return; /* no filter: still right */
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->wake, NULL);
    pthread_cond_init(&b->idle, NULL);
    b->idx = idx;
    idx->cfbuilder = b;
  }
  pthread_mutex_lock(&b->mu);
  if (!b->started && !b->stopping)
    b->started = pthread_create(&b->thread, NULL, builder_main, b) == 0;
  if (b->started) {
    b->kicked = 1;
    pthread_cond_signal(&b->wake);
  }
  pthread_mutex_unlock(&b->mu);
}

void tern_cfbuilder_wait(tern_index *idx) {
  tern_mu_lock(idx);
  tern_cfbuilder *b = idx->cfbuilder;
  tern_mu_unlock(idx);
  if (!b) return;
  pthread_mutex_lock(&b->mu);
  while (b->started && (b->kicked || b->busy))
    pthread_cond_wait(&b->idle, &b->mu);
  pthread_mutex_unlock(&b->mu);
}

void tern_cfbuilder_free(tern_index *idx) {
  tern_cfbuilder *b = idx->cfbuilder;
  if (!b) return;
  pthread_mutex_lock(&b->mu);
  b->stopping = 1;
  atomic_store(&b->stop, 1);
  pthread_cond_signal(&b->wake);
  int started = b->started;
  pthread_mutex_unlock(&b->mu);
  if (started) pthread_join(b->thread, NULL);
  pthread_mutex_destroy(&b->mu);
  pthread_cond_destroy(&b->wake);
  pthread_cond_destroy(&b->idle);
  free(b);
  idx->cfbuilder = NULL;
}
