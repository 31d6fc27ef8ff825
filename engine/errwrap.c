/*
 * errwrap.c — tern_fail_wrap (errwrap.h).
 */
#include "engine/errwrap.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { WRAP_MAX = 512 };

int tern_fail_wrap(int status, const char *fmt, ...) {
  char cause[WRAP_MAX], prefix[WRAP_MAX];
  snprintf(cause, sizeof cause, "%s", tern_errmsg()); /* saved before anything formats */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  if (!cause[0]) return tern_fail(status, "%s", prefix);
  return tern_fail(status, "%s: %s", prefix, cause);
}
