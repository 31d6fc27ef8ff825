/* SPDX-License-Identifier: MIT */
/*
 * cmd_ingest.c — `tern ingest`: segments built elsewhere added in one
 * commit; `tern delete-range`: every document of a key range deleted in
 * one commit (whole segments dropped, no per-key write).
 */
#include "cli.h"
#include "out.h"


int cmd_ingest(int argc, char **argv) {
  static const struct option longopts[] = {
      {"behind", no_argument, NULL, 'b'},
      {"later-wins", no_argument, NULL, 'l'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  unsigned flags = 0;
  int c;
  while ((c = cli_getopt(argc, argv, ":h", longopts)) != -1) {
    switch (c) {
    case 'h': return cli_help("ingest");
    case 'b': flags |= TERN_INGEST_BEHIND; break;
    case 'l': flags |= TERN_INGEST_LATER_WINS; break;
    default: return CLI_FAIL;
    }
  }
  if (argc - optind < 1) return cli_usage_error("ingest", "missing DIR");
  if (argc - optind < 2) return cli_usage_error("ingest", "missing SEG (a segment's directory)");
  const char *dir = argv[optind];
  tern_index *idx;
  if (cli_open(&idx, dir, 0) != 0) return CLI_FAIL;
  size_t n = (size_t)(argc - optind - 1);
  int st = tern_ingest(idx, (const char *const *)(argv + optind + 1), n, flags);
  return cli_close(idx, dir, st ? cli_fail(dir, st) : CLI_OK);
}

int cmd_delete_range(int argc, char **argv) {
  cli_range r;
  int status;
  if (!cli_range_options("delete-range", argc, argv, 0, &r, &status)) return status;
  int nargs = argc - optind;
  if (nargs < 1) return cli_usage_error("delete-range", "missing DIR");
  if (nargs > 1)
    return cli_usage_error("delete-range", "unexpected argument '%s'", argv[optind + 1]);
  uint8_t succ[TERN_KEY_MAX];
  tern_slice from, to;
  cli_range_bounds(&r, succ, &from, &to);
  const char *dir = argv[optind];
  tern_index *idx;
  int rc = CLI_FAIL;
  if (cli_open(&idx, dir, 0) == 0) {
    tern_txn *txn;
    int st = tern_txn_begin(&txn, idx, 0);
    if (!st) {
      st = tern_delete_range(txn, from.data ? &from : NULL, to.data ? &to : NULL);
      if (st) tern_abort(txn);
      else st = tern_commit(txn);
    }
    rc = cli_close(idx, dir, st ? cli_fail(dir, st) : CLI_OK);
  }
  return rc;
}
