/* SPDX-License-Identifier: MIT */
/*
 * busy_wait.c — taking the write lock with a busy timeout
 * (tern_options.busy_timeout_ms), as SQLite's busy_timeout and LMDB users'
 * retry loops do: the lock (write.lock's owner word, or this process's writer
 * flag) is tried without blocking, and tried again after a sleep that
 * doubles from 1 ms to 50 ms, until it is taken or the deadline passes.
 * Polling rather than blocking: the lock has two layers (the
 * in-process flag and the owner word), neither can be waited on, and a
 * thread of this process waiting must not hold the process's mutex.
 */
#include "engine/util/errwrap.h"
#include "engine/state/index.h"

#include "codec/status.h"

#include <time.h>

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(uint64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int tern_writer_lock(tern_index *idx) {
  int rc = tern_writer_try_lock(idx);
  if (rc != TERN_EBUSY || idx->busy_timeout_ms == 0) return rc;
  uint64_t deadline = now_ms() + idx->busy_timeout_ms, pause = 1;
  for (;;) {
    uint64_t now = now_ms();
    if (now >= deadline) break;
    sleep_ms(pause < deadline - now ? pause : deadline - now);
    rc = tern_writer_try_lock(idx);
    if (rc != TERN_EBUSY) return rc;
    pause = pause * 2 > 50 ? 50 : pause * 2;
  }
  return tern_fail_wrap(rc, "waited %u ms (busy_timeout_ms)", idx->busy_timeout_ms);
}
