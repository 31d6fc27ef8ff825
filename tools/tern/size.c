/* SPDX-License-Identifier: MIT */
/*
 * size.c — byte sizes given as options ("512M", "1G", "300000000").
 */
#include <errno.h>
#include <stdlib.h>

#include "cli.h"

int cli_parse_size(const char *arg, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(arg, &end, 10);
  if (errno || end == arg || arg[0] < '0' || arg[0] > '9') return -1;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10;
  else if (*end == 'M' || *end == 'm')
    shift = 20;
  else if (*end == 'G' || *end == 'g')
    shift = 30;
  if (shift) end++;
  if (*end || v > (UINT64_MAX >> shift)) return -1;
  *out = (uint64_t)v << shift;
  return 0;
}
