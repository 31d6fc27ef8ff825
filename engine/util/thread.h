/* SPDX-License-Identifier: MIT */
/*
 * thread.h — which thread is calling, for the lock-holder asserts of
 * debug builds (engine/state/index.h, LOCKS), and taking a mutex that is
 * held only briefly by spinning before sleeping.
 */
#ifndef TERN_ENGINE_THREAD_H
#define TERN_ENGINE_THREAD_H

#include <pthread.h>
#include <stdint.h>

/* A value unique to the calling thread (the address of a thread-local). */
uintptr_t tern_lock_self(void);

/* Locks m, trying for a few microseconds before it sleeps in the kernel.
 * For locks whose holders keep them a few µs (install_mu): a thread that
 * sleeps on one costs its holder a futex wake at the unlock, 7-11 µs on a
 * VM whose other CPU is idle, and itself as long to wake up. */
void tern_lock_spinning(pthread_mutex_t *m);

#endif
