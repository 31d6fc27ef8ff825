/* SPDX-License-Identifier: MIT */
/*
 * open.c — opening and closing an index for a subcommand, with the checks
 * and messages the command line wants: a missing directory is "not a tern
 * index", and creation options given for an existing index must match it
 * (tern_open silently keeps the stored ones).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* A command makes one commit and exits: flushes and merges run inside it
 * (TERN_FOREGROUND), so that their failure is the command's warning. */
int cli_open(tern_index **out, const char *dir, unsigned flags) {
  int st = tern_open(out, dir, (flags & ~TERN_CREATE) | TERN_FOREGROUND, NULL);
  struct stat sb;
  if (st == -ENOENT && stat(dir, &sb) != 0 && errno == ENOENT) st = TERN_ENOTINDEX;
  if (st) cli_fail(dir, st);
  return st;
}

/* Reports the first creation option the user gave that differs from the
 * index's; returns 1 if one did. */
static int options_conflict(const char *dir, const cli_create_opts *co, const tern_options *have) {
  const char *name = NULL;
  uint32_t want = 0, got = 0;
  if (co->given_threshold && co->opts.pulsing_threshold != have->pulsing_threshold) {
    name = "--threshold", want = co->opts.pulsing_threshold, got = have->pulsing_threshold;
  } else if (co->given_inline && co->opts.inline_value_max != have->inline_value_max) {
    name = "--inline-max", want = co->opts.inline_value_max, got = have->inline_value_max;
  } else if (co->given_bloom && co->opts.bloom_bits_per_key != have->bloom_bits_per_key) {
    name = "--bloom-bits", want = co->opts.bloom_bits_per_key, got = have->bloom_bits_per_key;
  }
  if (!name) return 0;
  cli_error("%s: index exists with %s %u, not %u (options apply only when creating)", dir, name,
            got, want);
  return 1;
}

int cli_open_create(tern_index **out, const char *dir, const cli_create_opts *co) {
  int st = tern_open(out, dir, TERN_CREATE | TERN_FOREGROUND | co->open_flags, &co->opts);
  if (st) return cli_fail(dir, st), st;
  tern_options have;
  st = tern_get_options(*out, &have);
  if (st) {
    cli_fail(dir, st);
  } else if (options_conflict(dir, co, &have)) {
    st = TERN_EINVAL;
  }
  if (st) {
    tern_close(*out);
    *out = NULL;
  }
  return st;
}

int cli_close(tern_index *idx, const char *dir, int rc) {
  int st = tern_close(idx);
  return st ? cli_fail(dir, st) : rc;
}

int cli_on_snapshot(const char *dir, cli_snapshot_fn fn, void *ctx) {
  tern_index *idx;
  if (cli_open(&idx, dir, TERN_RDONLY)) return CLI_FAIL;
  tern_snapshot *snap;
  int st = tern_snapshot_open(&snap, idx);
  if (st) {
    cli_fail(dir, st);
  } else {
    st = fn(snap, dir, ctx);
    tern_snapshot_close(snap);
  }
  return cli_close(idx, dir, st ? CLI_FAIL : CLI_OK);
}

int cli_dir_is_new(const char *dir, int *absent) {
  struct stat sb;
  *absent = stat(dir, &sb) != 0 && errno == ENOENT;
  if (*absent) return 1;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  int empty = 1;
  while (empty && (e = readdir(d)) != NULL)
    empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
  closedir(d);
  return empty;
}

/* Only for a directory that held nothing before this command: every file
 * in it is one this command's index created. */
void cli_remove_new_index(const char *dir, int absent) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    size_t n = strlen(dir) + strlen(e->d_name) + 2;
    char *p = malloc(n);
    if (!p) break;
    snprintf(p, n, "%s/%s", dir, e->d_name);
    unlink(p);
    free(p);
  }
  closedir(d);
  if (absent) rmdir(dir);
}
