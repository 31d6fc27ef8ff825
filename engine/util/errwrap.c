/* SPDX-License-Identifier: MIT */
/*
 * errwrap.c — tern_fail_wrap (errwrap.h).
 */
#include "engine/util/errwrap.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { WRAP_MAX = 512 };

int tern_fail_wrap_at(int status, const char *fmt, ...) {
  char cause[WRAP_MAX], prefix[WRAP_MAX];
  snprintf(cause, sizeof cause, "%s", tern_errmsg()); /* saved before anything formats */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  if (!cause[0]) return tern_fail(status, "%s", prefix);
  return tern_fail(status, "%s: %s", prefix, cause);
}

int tern_fail_stopped_at(int cb) {
  return tern_fail(TERN_ESTOPPED, "stopped by the callback, which returned %d", cb);
}

void tern_err_save(tern_errsave *e) { snprintf(e->msg, sizeof e->msg, "%s", tern_errmsg()); }

int tern_err_restore(const tern_errsave *e, int status) {
  if (status == TERN_OK || status == TERN_NOTFOUND) return status;
  return tern_fail(status, "%s", e->msg);
}
