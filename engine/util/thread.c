/* SPDX-License-Identifier: MIT */
#include "engine/util/thread.h"

static _Thread_local char t_self;

uintptr_t tern_lock_self(void) { return (uintptr_t)&t_self; }
