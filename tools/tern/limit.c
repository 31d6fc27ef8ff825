/* SPDX-License-Identifier: MIT */
/*
 * limit.c — the --limit N option of scan and terms.
 */
#include <errno.h>
#include <stdlib.h>

#include "cli.h"

int cli_parse_limit(const char *cmd, const char *arg, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(arg, &end, 10);
  if (!*arg || *end || errno || arg[0] < '0' || arg[0] > '9') {
    cli_usage_error(cmd, "--limit: '%s' is not a number", arg);
    return -1;
  }
  *out = v;
  return 0;
}
