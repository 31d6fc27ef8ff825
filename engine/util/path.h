/* SPDX-License-Identifier: MIT */
/*
 * path.h — file names under an index or segment directory.
 */
#ifndef TERN_ENGINE_PATH_H
#define TERN_ENGINE_PATH_H

/* "dir/name" in a malloc'd string, NULL when out of memory. */
char *tern_path_join(const char *dir, const char *name);

#endif
