/* SPDX-License-Identifier: MIT */
/*
 * thread.h — which thread is calling, for the lock-holder asserts of
 * debug builds (engine/state/index.h, LOCKS).
 */
#ifndef TERN_ENGINE_THREAD_H
#define TERN_ENGINE_THREAD_H

#include <stdint.h>

/* A value unique to the calling thread (the address of a thread-local). */
uintptr_t tern_lock_self(void);

#endif
