/* SPDX-License-Identifier: MIT */
#include "engine/util/path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *tern_path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}
