/* SPDX-License-Identifier: MIT */
/*
 * cmd_maint.c — the maintenance subcommands that take just DIR: compact,
 * flush, and create (which also takes the creation options).
 */
#include <string.h>

#include "cli.h"

/* Parses `tern CMD [-h] DIR`; returns -1 with *dir set to go on, else the
 * exit status. */
static int parse_dir_only(int argc, char **argv, const char **dir) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = cli_getopt(argc, argv, ":h", longopts)) != -1) {
    if (c == 'h') return cli_help(argv[0]);
    return CLI_FAIL;
  }
  if (argc - optind < 1) return cli_usage_error(argv[0], "missing DIR");
  if (argc - optind > 1) return cli_usage_error(argv[0], "too many arguments");
  *dir = argv[optind];
  return -1;
}

static int run_maintenance(int argc, char **argv, int (*op)(tern_index *)) {
  const char *dir = NULL;
  int rc = parse_dir_only(argc, argv, &dir);
  if (rc >= 0) return rc;
  tern_index *idx;
  if (cli_open(&idx, dir, 0)) return CLI_FAIL;
  int st = op(idx);
  return cli_close(idx, dir, st ? cli_fail(dir, st) : CLI_OK);
}

int cmd_compact(int argc, char **argv) { return run_maintenance(argc, argv, tern_compact); }

int cmd_flush(int argc, char **argv) { return run_maintenance(argc, argv, tern_flush); }

int cmd_create(int argc, char **argv) {
  static const struct option longopts[] = {
      CLI_CREATE_LONGOPTS,
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  cli_create_opts co;
  cli_create_opts_init(&co);
  int c;
  while ((c = cli_getopt(argc, argv, ":h", longopts)) != -1) {
    if (c == 'h') return cli_help("create");
    if (c == '?' || cli_create_option(&co, "create", c, optarg)) return CLI_FAIL;
  }
  if (argc - optind < 1) return cli_usage_error("create", "missing DIR");
  if (argc - optind > 1) return cli_usage_error("create", "too many arguments");
  const char *dir = argv[optind];
  tern_index *idx;
  if (cli_open_create(&idx, dir, &co)) return CLI_FAIL;
  return cli_close(idx, dir, CLI_OK);
}
