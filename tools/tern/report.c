/* SPDX-License-Identifier: MIT */
/*
 * report.c — one-line error reports built from tern statuses.
 *
 * The line is "tern: WHAT: cause".  The cause is tern_strerror(status), plus
 * tern_errmsg() when that adds something (which file, which check).  The
 * library's message often repeats WHAT as its head or the strerror text as
 * its tail ("/ix/data.mdb: Permission denied"); those are dropped rather than
 * said twice: "tern: /ix: Permission denied (/ix/data.mdb)".
 * TERN_EPARTIAL (committed; the work after the commit failed) is a
 * one-line warning and success: what was asked for is durable.
 */
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "out.h"

/* The part of the library's message that says more than "WHAT: cause". */
static const char *detail(const char *what, const char *cause, size_t *len) {
  const char *msg = tern_errmsg();
  size_t w = strlen(what), c = strlen(cause);
  if (!strncmp(msg, what, w) && !strncmp(msg + w, ": ", 2)) msg += w + 2;
  size_t n = strlen(msg);
  if (n > c + 2 && !strcmp(msg + n - c, cause) && !strncmp(msg + n - c - 2, ": ", 2)) n -= c + 2;
  if (n == c && !strncmp(msg, cause, c)) n = 0;
  *len = n;
  return msg;
}

int cli_fail(const char *what, int status) {
  out_flush(&g_err); /* keep earlier "not found" lines before this one */
  if (status == TERN_EPARTIAL) { /* durable: a warning, not a failure */
    size_t n;
    const char *more = detail(what, tern_strerror(status), &n);
    fprintf(stderr, "tern: %s: warning: %.*s\n", what, (int)n, more);
    return CLI_OK;
  }
  const char *cause = tern_strerror(status);
  size_t n;
  const char *more = detail(what, cause, &n);
  struct stat sb;
  if (status == TERN_ENOTINDEX && stat(what, &sb) != 0) n = 0; /* nothing there: nothing to add */
  if (n == 0)
    fprintf(stderr, "tern: %s: %s\n", what, cause);
  else if (!strncmp(more, cause, strlen(cause))) /* the detail restates the cause, extended */
    fprintf(stderr, "tern: %s: %.*s\n", what, (int)n, more);
  else if (status < 0 && status > -4096) /* errno: the detail is the path that failed */
    fprintf(stderr, "tern: %s: %s (%.*s)\n", what, cause, (int)n, more);
  else
    fprintf(stderr, "tern: %s: %s: %.*s\n", what, cause, (int)n, more);
  return CLI_FAIL;
}

int cli_error(const char *fmt, ...) {
  va_list ap;
  out_flush(&g_err);
  va_start(ap, fmt);
  fputs("tern: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return CLI_FAIL;
}

int cli_line_error(const char *file, uint64_t line, const char *reason) {
  out_flush(&g_err);
  if (file)
    fprintf(stderr, "%s:%llu: %s\n", file, (unsigned long long)line, reason);
  else
    fprintf(stderr, "%llu: %s\n", (unsigned long long)line, reason);
  return CLI_FAIL;
}

const char *cli_quote(const char *s, size_t len, char out[CLI_QUOTE_MAX]) {
  if (len <= CLI_QUOTE_KEEP)
    snprintf(out, CLI_QUOTE_MAX, "%.*s", (int)len, s);
  else
    snprintf(out, CLI_QUOTE_MAX, "%.*s\xe2\x80\xa6(%zu bytes)", CLI_QUOTE_KEEP, s, len);
  return out;
}

const char *cli_plural(uint64_t n, const char *one, const char *many) { return n == 1 ? one : many; }
