/* SPDX-License-Identifier: MIT */
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

/* Records "<fmt...>: <previous message>" and returns `status` (< 0;
 * tern_failed, codec/status.h). */
int tern_fail_wrap_at(int status, const char *fmt, ...) TERN_PRINTF(2, 3);
#define tern_fail_wrap(...) tern_failed(tern_fail_wrap_at(__VA_ARGS__))

/* A callback's non-zero return `cb` as TERN_ESTOPPED (tern.h): the
 * callback's value is named in the message, never returned. */
int tern_fail_stopped_at(int cb);
#define tern_fail_stopped(cb) tern_failed(tern_fail_stopped_at(cb))

/* A recorded failure kept across cleanup calls that clear the message
 * (every tern.h call does): saved before them, put back after. */
typedef struct tern_errsave {
  char msg[512];
} tern_errsave;
void tern_err_save(tern_errsave *e);
/* Records the saved message again (when status is a failure); returns status. */
int tern_err_restore(const tern_errsave *e, int status);

#endif
