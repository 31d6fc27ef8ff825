/* SPDX-License-Identifier: MIT */
/*
 * verify_built.c — `tern verify` on a built segment's directory (the OUT
 * of `tern build` or `tern export`): a directory with segment files and
 * no catalog is checked with tern_builder_verify instead of as an index.
 */
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "out.h"

int cli_is_built_segment(const char *dir) {
  size_t n = strlen(dir);
  char cat[4096];
  if (n + 16 > sizeof cat) return 0;
  memcpy(cat, dir, n);
  strcpy(cat + n, "/catalog.mdb");
  struct stat sb;
  if (stat(cat, &sb) == 0) return 0; /* an index */
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  int seg = 0;
  while (!seg && (e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    seg = l > 4 && !strcmp(e->d_name + l - 4, ".tix");
  }
  closedir(d);
  return seg;
}

int cli_verify_built(const char *dir) {
  tern_build_info info;
  int st = tern_builder_verify(dir, &info);
  if (st) {
    cli_fail(dir, st);
    return st == TERN_ECORRUPT ? CLI_CORRUPT : CLI_FAIL;
  }
  out_str(&g_out, dir);
  out_str(&g_out, ": ok, built segment of ");
  out_u64(&g_out, info.documents);
  out_str(&g_out, " documents\n");
  return CLI_OK;
}
