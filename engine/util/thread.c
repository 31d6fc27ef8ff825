/* SPDX-License-Identifier: MIT */
#include "engine/util/thread.h"

#include <time.h>

static _Thread_local char t_self;

uintptr_t tern_lock_self(void) { return (uintptr_t)&t_self; }

/* How long a thread spins: longer than a commit holds install_mu (about
 * 7 µs), far shorter than a time slice. */
#define SPIN_NS 30000L

static long elapsed_ns(const struct timespec *from) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (long)(now.tv_sec - from->tv_sec) * 1000000000L + (now.tv_nsec - from->tv_nsec);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

void tern_lock_spinning(pthread_mutex_t *m) {
  if (pthread_mutex_trylock(m) == 0) return;
  struct timespec from;
  clock_gettime(CLOCK_MONOTONIC, &from);
  for (unsigned i = 1;; i++) {
    cpu_relax();
    if (pthread_mutex_trylock(m) == 0) return;
    if (i % 32 == 0 && elapsed_ns(&from) > SPIN_NS) break;
  }
  pthread_mutex_lock(m);
}
