/* SPDX-License-Identifier: MIT */
/*
 * status.h — how codec and engine report failures.
 *
 * Every failing path records why in a thread-local message (tern_errmsg())
 * and returns the status, in one expression:
 *
 *     if (n > max) return tern_fail(TERN_ECORRUPT, "%s: block %u: %u entries", path, b, n);
 *     TERN_TRY(tern_rfile_read(...));
 *
 * I/O failures are reported as -errno, with the path in the message.
 */
#ifndef TERN_STATUS_H
#define TERN_STATUS_H

#include "tern.h"

#include <assert.h>
#include <errno.h>

#if defined(__GNUC__)
#define TERN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define TERN_LIKELY(x) __builtin_expect(!!(x), 1)
#define TERN_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* Thread-locals of the hot paths: reached at a fixed offset from the
 * thread pointer, without a __tls_get_addr call from the shared library.
 * Only for small ones: they take glibc's static TLS surplus, which a
 * library loaded by dlopen draws on. */
#define TERN_TLS_IE __attribute__((tls_model("initial-exec")))
#else
#define TERN_PRINTF(a, b)
#define TERN_LIKELY(x) (x)
#define TERN_UNLIKELY(x) (x)
#define TERN_TLS_IE
#endif

/* Records the message for `status` (< 0) and returns `status`. */
int tern_fail_at(int status, const char *fmt, ...) TERN_PRINTF(2, 3);
/* Records "what: strerror(errno)" and returns -errno (never 0). */
int tern_fail_errno_at(const char *what);
/* A failure's status, negative: asserted where the callers can see it,
 * so that a path through TERN_TRY after a failure is one the compiler
 * and the static analyzer know is not taken (a status >= 0 passed to
 * tern_fail is a bug of its caller). */
static inline int tern_failed(int status) {
  assert(status < 0);
  return status;
}
#define tern_fail(...) tern_failed(tern_fail_at(__VA_ARGS__))
#define tern_fail_errno(what) tern_failed(tern_fail_errno_at(what))
/* Clears the thread's message.  Every function of tern.h calls it first, so
 * that after a call that succeeds (or returns TERN_NOTFOUND) tern_errmsg()
 * is "", never an older call's message.  Inline, and a load and a branch
 * when there is nothing to clear (the usual case), because the per-key
 * calls (tern_cursor_next, _key, _value) pay it on every key: only a
 * failure sets the flag, so only the call after one writes. */
extern TERN_TLS_IE _Thread_local unsigned char tern_errmsg_set;
void tern_clear_error_now(void);
static inline void tern_clear_error(void) {
  if (TERN_UNLIKELY(tern_errmsg_set)) tern_clear_error_now();
}

/* Propagates a failure; the callee has recorded its message. */
#define TERN_TRY(expr)                                                                             \
  do {                                                                                             \
    int tern_try_rc_ = (expr);                                                                     \
    if (TERN_UNLIKELY(tern_try_rc_ < 0)) return tern_try_rc_;                                      \
  } while (0)

#endif
