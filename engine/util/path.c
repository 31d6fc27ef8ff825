/* SPDX-License-Identifier: MIT */
#include "engine/util/path.h"

#include "codec/status.h"

#include <dirent.h>
#include <errno.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *tern_path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

int tern_dir_absent_or_empty(const char *path, const char *why, int *exists) {
  struct stat st;
  *exists = 0;
  if (stat(path, &st) < 0) return errno == ENOENT ? TERN_OK : tern_fail_errno(path);
  if (!S_ISDIR(st.st_mode))
    return tern_fail(TERN_EINVAL, "%s: exists and is not a directory%s", path, why);
  DIR *d = opendir(path);
  if (!d) return tern_fail_errno(path);
  struct dirent *e;
  int empty = 1;
  while (empty && (e = readdir(d)) != NULL)
    empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
  closedir(d);
  if (!empty) return tern_fail(TERN_EINVAL, "%s: exists and is not empty%s", path, why);
  *exists = 1;
  return TERN_OK;
}
