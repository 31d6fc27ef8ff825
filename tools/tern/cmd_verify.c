/* SPDX-License-Identifier: MIT */
/*
 * cmd_verify.c — `tern verify`: is the index sound?
 *
 * Corruption gets its own exit status (3), whether opening the index already
 * found it or tern_verify() did, so scripts can tell "damaged" from "could
 * not check" (2).
 */
#include "cli.h"
#include "out.h"

int cmd_verify(int argc, char **argv) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = cli_getopt(argc, argv, ":h", longopts)) != -1) {
    if (c == 'h') return cli_help("verify");
    return CLI_FAIL;
  }
  if (argc - optind < 1) return cli_usage_error("verify", "missing DIR");
  if (argc - optind > 1) return cli_usage_error("verify", "too many arguments");
  const char *dir = argv[optind];
  if (cli_is_built_segment(dir)) return cli_verify_built(dir);
  tern_index *idx;
  int st = cli_open(&idx, dir, TERN_RDONLY);
  if (st) return st == TERN_ECORRUPT ? CLI_CORRUPT : CLI_FAIL;
  st = tern_verify(idx);
  int rc = CLI_OK;
  if (st) {
    cli_fail(dir, st);
    rc = st == TERN_ECORRUPT ? CLI_CORRUPT : CLI_FAIL;
  } else {
    out_str(&g_out, dir);
    out_str(&g_out, ": ok\n");
  }
  return cli_close(idx, dir, rc);
}
