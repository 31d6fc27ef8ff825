/* SPDX-License-Identifier: MIT */
/*
 * cmd_backup.c — `tern backup`: a verified copy of the current commit,
 * taken while writers go on (tern_backup).
 */
#include <string.h>

#include "cli.h"
#include "out.h"

/* A failure about DEST (its message starts with DEST's name) is reported
 * as DEST's, any other as DIR's. */
static void report(const char *dir, const char *dest, int st) {
  size_t n = strlen(dest);
  int about_dest = !strncmp(tern_errmsg(), dest, n) &&
                   (tern_errmsg()[n] == ':' || !strncmp(tern_errmsg() + n, ".tmp", 4));
  cli_fail(about_dest ? dest : dir, st);
}

static int backup(const char *dir, const char *dest) {
  tern_index *idx;
  if (cli_open(&idx, dir, TERN_RDONLY)) return CLI_FAIL;
  tern_snapshot *snap;
  uint64_t docs = 0;
  int st = tern_snapshot_open(&snap, idx);
  if (!st) {
    st = tern_snapshot_count(snap, &docs);
    if (!st) st = tern_backup(snap, dest);
    if (st) report(dir, dest, st); /* before the close clears tern_errmsg() */
    tern_snapshot_close(snap);
  } else {
    report(dir, dest, st);
  }
  if (!st) {
    out_str(&g_out, dest);
    out_str(&g_out, ": ok, ");
    out_u64(&g_out, docs);
    out_str(&g_out, " documents\n");
  }
  return cli_close(idx, dir, st ? CLI_FAIL : CLI_OK);
}

int cmd_backup(int argc, char **argv) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = cli_getopt(argc, argv, ":h", longopts)) != -1) {
    if (c == 'h') return cli_help("backup");
    return CLI_FAIL;
  }
  int nargs = argc - optind;
  if (nargs < 1) return cli_usage_error("backup", "missing DIR");
  if (nargs < 2) return cli_usage_error("backup", "missing DEST");
  if (nargs > 2) return cli_usage_error("backup", "unexpected argument '%s'", argv[optind + 2]);
  return backup(argv[optind], argv[optind + 1]);
}
