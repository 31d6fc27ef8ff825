/* SPDX-License-Identifier: MIT */
/*
 * status.c — status codes to text, and the thread-local message that says
 * which file, line or check a failure came from.
 */
#include "codec/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define TERN_ERRMSG_MAX 512

static _Thread_local char errmsg[TERN_ERRMSG_MAX];
/* errmsg holds text (status.h, tern_clear_error). */
TERN_TLS_IE _Thread_local unsigned char tern_errmsg_set;

const char *tern_version(void) { return TERN_VERSION_STRING; }

const char *tern_strerror(int status) {
  switch (status) {
  case TERN_OK: return "success";
  case TERN_NOTFOUND: return "not found";
  case TERN_EINVAL: return "invalid argument";
  case TERN_ECORRUPT: return "corrupt or truncated file";
  case TERN_EVERSION: return "file of a format version this tern does not read";
  case TERN_EBUSY: return "another write transaction is open";
  case TERN_ENOMEM: return "out of memory";
  case TERN_ERANGE: return "buffer too small";
  case TERN_ENOTINDEX: return "not a tern index";
  case TERN_EFULL: return "catalog map full";
  case TERN_EPARTIAL: return "committed, but the work after the commit failed";
  case TERN_ESTOPPED: return "stopped by the callback";
  case TERN_EEXIST: return "key exists";
  default: break;
  }
  if (status < 0 && status > -4096) return strerror(-status);
  return "unknown status";
}

const char *tern_errmsg(void) { return errmsg; }

void tern_clear_error_now(void) {
  errmsg[0] = '\0';
  tern_errmsg_set = 0;
}

int tern_fail_at(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(errmsg, sizeof errmsg, fmt, ap);
  tern_errmsg_set = 1;
  va_end(ap);
  return status;
}

int tern_fail_errno_at(const char *what) {
  int e = errno ? errno : EIO;
  snprintf(errmsg, sizeof errmsg, "%s: %s", what, strerror(e));
  tern_errmsg_set = 1;
  return -e;
}
