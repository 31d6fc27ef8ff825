/*
 * cmd_backup.c — `tern backup`: a verified copy of the current commit,
 * taken while writers go on (tern_backup).
 */
#include "cli.h"
#include "out.h"

static int backup(const char *dir, const char *dest) {
  tern_index *idx;
  if (cli_open(&idx, dir, TERN_RDONLY)) return CLI_FAIL;
  tern_snapshot *snap;
  uint64_t docs = 0;
  int st = tern_snapshot_open(&snap, idx);
  if (!st) {
    st = tern_snapshot_count(snap, &docs);
    if (!st) st = tern_backup(snap, dest);
    tern_snapshot_close(snap);
  }
  if (!st) {
    out_str(&g_out, dest);
    out_str(&g_out, ": ok, ");
    out_u64(&g_out, docs);
    out_str(&g_out, " documents\n");
  }
  return cli_close(idx, dir, st ? cli_fail(st == TERN_EINVAL ? dest : dir, st) : CLI_OK);
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
