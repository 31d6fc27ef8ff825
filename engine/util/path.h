/* SPDX-License-Identifier: MIT */
/*
 * path.h — file names under an index or segment directory, and the
 * directories a backup or a build goes into.
 */
#ifndef TERN_ENGINE_PATH_H
#define TERN_ENGINE_PATH_H

/* "dir/name" in a malloc'd string, NULL when out of memory. */
char *tern_path_join(const char *dir, const char *name);

/* TERN_OK when path is absent (*exists 0) or an empty directory (*exists
 * 1); TERN_EINVAL naming it otherwise, its message ending in `why` (""
 * for none). */
int tern_dir_absent_or_empty(const char *path, const char *why, int *exists);

#endif
