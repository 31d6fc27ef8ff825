/*
 * errwrap.h — adding context to a failure already recorded.
 *
 * tern_errmsg() is the very buffer tern_fail() formats into, so passing it
 * as an argument of tern_fail() reads the buffer while writing it
 * (undefined behaviour, a garbled cause).  tern_fail_wrap() saves the
 * recorded cause first, then formats "<prefix>: <cause>".
 */
#ifndef TERN_ENGINE_ERRWRAP_H
#define TERN_ENGINE_ERRWRAP_H

#include "codec/status.h"

/* Records "<fmt...>: <previous message>" and returns `status`. */
int tern_fail_wrap(int status, const char *fmt, ...) TERN_PRINTF(2, 3);

#endif
